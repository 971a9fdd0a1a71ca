"""The leaderboard's charts, each one Vega-Lite declaration (:mod:`sinkbench.charts`): S against the observed delta
per pair and a pair's IFEval regressions per category (a probed model's sink profile is
:class:`sinkbench.charts.HeatmapChart`).

Labels may be user-supplied: Vega draws them as text, never as markup.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import Any

from sinkbench import charts
from sinkbench.charts import Chart, nominal, quantitative

#: Most point labels drawn on a scatter; beyond this the chart relies on its hover labels and the table below it.
MAX_POINT_LABELS = 30


@dataclass(frozen=True)
class ScatterPoint:
    """One pair on an S-versus-delta scatter: what its point shows, and what its hover label adds (provenance, the
    interval of the observed delta, the held-out prediction with its interval and kind)."""

    label: str
    sink_strength: float
    delta: float
    qk_norm: str
    provenance: str = ""
    delta_interval: tuple[float, float] | None = None
    predicted: float | None = None
    predicted_interval: tuple[float, float] | None = None
    interval_kind: str = ""

    def row(self) -> dict[str, Any]:
        """The point as a data row: its position, class and the lines of its hover label."""
        delta = f"{self.delta:+.1f} points"
        if self.delta_interval is not None:
            delta += f" (95% CI [{self.delta_interval[0]:+.1f}, {self.delta_interval[1]:+.1f}])"
        prediction = ""
        if self.predicted is not None:
            prediction = f"{self.predicted:+.1f}"
            if self.predicted_interval is not None:
                low, high = self.predicted_interval
                prediction += f" [{low:+.1f}, {high:+.1f}] {self.interval_kind}"
        return {
            "label": self.label,
            "S": self.sink_strength,
            "delta": self.delta,
            "qk": f"QK-norm: {self.qk_norm}",
            "delta_text": delta,
            "prediction": prediction,
            "provenance": self.provenance,
        }


@dataclass(frozen=True)
class ScatterChart(Chart):
    """Sink Strength S (x) against the observed delta in points (y) per pair, with the fit line.

    ``fit`` is ``(slope, intercept)`` of the least-squares line the aggregation computed, or None.
    """

    points: tuple[ScatterPoint, ...]
    task_label: str
    fit: tuple[float, float] | None = None

    TITLE = "{self.task_label}: S vs observed Δ"

    @property
    def alt(self) -> str:
        """One-paragraph description for ``alt`` and ``<desc>``."""
        text = f"Scatter plot of Sink Strength S against the observed {self.task_label} delta for "
        text += f"{len(self.points)} pairs."
        if self.fit is not None:
            text += f" Least-squares fit: delta = {self.fit[1]:+.2f} {self.fit[0]:+.2f} × S points."
        return text

    def body(self) -> dict[str, Any]:
        """Zero line, fit line, one point per pair (colour and shape by QK-norm class, toggled from the legend),
        and the pairs' names while there are few enough to read; the view pans and zooms."""
        classes = sorted({p.qk_norm for p in self.points})
        styles = [charts.QK_STYLES.get(qk, charts.OTHER_STYLE) for qk in classes]
        domain = [f"QK-norm: {qk}" for qk in classes]
        frame = self.frame
        x = quantitative("S", "Sink Strength S of the reference LLM (nats)", scale=frame.scale("x"))
        y = quantitative("delta", f"{self.task_label} Δ, VLM-LM − reference (points)", scale=frame.scale("y"))
        toggle = {"name": "shown", "select": {"type": "point", "fields": ["qk"]}, "bind": "legend"}
        points = {
            "mark": {"type": "point", "filled": True, "size": 80, "stroke": "white", "strokeWidth": 1},
            "params": [toggle, {"name": "zoom", "select": "interval", "bind": "scales"}],
            "encoding": {
                "x": x,
                "y": y,
                "color": nominal("qk", None, scale={"domain": domain, "range": [s[0] for s in styles]}),
                "shape": nominal("qk", None, scale={"domain": domain, "range": [s[1] for s in styles]}),
                "opacity": {"condition": {"param": "shown", "value": 1}, "value": 0.15},
                "tooltip": [
                    {"field": "label", "title": "pair"},
                    {"field": "S", "title": "S (nats)", "format": "+.2f"},
                    {"field": "qk", "title": "class"},
                    {"field": "delta_text", "title": "Δ"},
                    {"field": "prediction", "title": "held-out prediction"},
                    {"field": "provenance", "title": "source"},
                ],
            },
        }
        layers: list[dict[str, Any]] = [charts.rule("y", 0.0, colour="#bdbdbd")]
        line = self.fit_line
        if line is not None:
            slope, intercept = self.fit or (0.0, 0.0)
            layers.append(
                {
                    "data": {"values": [{"S": s, "delta": d} for s, d in line]},
                    "mark": {"type": "line", "color": "#3f51b5", "strokeDash": [6, 4], "strokeWidth": 1.5},
                    "encoding": {
                        "x": x,
                        "y": y,
                        "tooltip": {"value": f"least-squares fit: Δ = {intercept:+.2f} {slope:+.2f} × S"},
                    },
                }
            )
        layers.append(points)
        if len(self.points) <= MAX_POINT_LABELS:
            layers.append(charts.label_layer(self.labels(), x, y))
        return {
            "data": {"values": [p.row() for p in self.points]},
            "height": charts.SCATTER_HEIGHT,
            "layer": layers,
        }

    @cached_property
    def fit_line(self) -> tuple[tuple[float, float], tuple[float, float]] | None:
        """The fit line's two ends over the points' range of S, or None without a fit or points."""
        if self.fit is None or not self.points:
            return None
        slope, intercept = self.fit
        ends = (min(p.sink_strength for p in self.points), max(p.sink_strength for p in self.points))
        return (ends[0], intercept + slope * ends[0]), (ends[1], intercept + slope * ends[1])

    @cached_property
    def frame(self) -> charts.Frame:
        """The axes' domains: the points, zero and the fit line, with room around them for the labels."""
        xs = [p.sink_strength for p in self.points]
        ys = [p.delta for p in self.points] + [0.0] + [d for _, d in self.fit_line or ()]
        return charts.Frame.around(xs, ys)

    def labels(self) -> list[dict[str, Any]]:
        """Where each pair's name goes (:func:`sinkbench.charts.place_labels`), clear of the fit line."""
        points = [(p.label, p.sink_strength, p.delta) for p in self.points]
        return charts.place_labels(points, self.frame, self.fit_line)


@dataclass(frozen=True)
class CategoryChart(Chart):
    """IFEval prompts lost by the VLM-LM per violated instruction category (horizontal bars)."""

    counts: tuple[tuple[str, int], ...]
    pair_label: str

    TITLE = "IFEval prompts lost per category: {self.pair_label}"

    @property
    def alt(self) -> str:
        """One-paragraph description for ``alt`` and ``<desc>``."""
        listing = ", ".join(f"{name} {count}" for name, count in self.counts)
        return (
            f"Bar chart of IFEval prompts that {self.pair_label} lost, per instruction category: {listing}."
        )

    def body(self) -> dict[str, Any]:
        """One bar per category in the given order, its count at its end (which makes an x axis redundant: one
        per entry page, the charts are kept to few texts, which is what rendering one costs)."""
        return {
            "data": {"values": [{"category": name, "lost": count} for name, count in self.counts]},
            "height": 22 * max(len(self.counts), 1),
            "encoding": {
                "y": nominal("category", None),
                "x": quantitative("lost", None, axis=None),
                "tooltip": [{"field": "category"}, {"field": "lost", "title": "prompts lost"}],
            },
            "layer": [
                {"mark": {"type": "bar", "color": "#3f51b5"}},
                {
                    "mark": {"type": "text", "align": "left", "dx": 4, "fontSize": 11},
                    "encoding": {"text": {"field": "lost"}},
                },
            ],
        }
