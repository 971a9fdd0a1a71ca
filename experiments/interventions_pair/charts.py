"""Charts of the Interventions page, each one Vega-Lite declaration (:mod:`sinkbench.charts`):

* :class:`LayerRatioChart`: per decoder layer, how much further the VL endpoint moved than the text-only one;
* :class:`MergeChart`: each merge's text loss against its visual accuracy (the trade-off a merge makes).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sinkbench import charts
from sinkbench.charts import Chart, nominal, quantitative

#: The projections the displacement chart draws, with their labels.
RATIO_KINDS = (("q_proj", "W_q"), ("k_proj", "W_k"), ("v_proj", "W_v"), ("o_proj", "W_o"))


@dataclass(frozen=True)
class LayerRatioChart(Chart):
    """``‖ΔW‖₂`` of the VL endpoint over the text-only endpoint's, per layer, one line per projection kind;
    ``series`` holds ``(label, ((layer, ratio), ...))`` and ``window`` the layers the page's median covers."""

    series: tuple[tuple[str, tuple[tuple[int, float], ...]], ...]
    window: tuple[int, ...]

    @classmethod
    def of(cls, report: dict[str, Any]) -> LayerRatioChart:
        """The chart of a displacement report with a second endpoint (``rows`` and ``versus_rows``)."""
        theirs = {(row["layer"], row["name"]): row for row in report["versus_rows"]}
        series = []
        for kind, label in RATIO_KINDS:
            points = []
            for row in report["rows"]:
                other = theirs.get((row["layer"], row["name"]))
                if row["kind"] == kind and other and other["operator_norm"]:
                    points.append((row["layer"], row["operator_norm"] / other["operator_norm"]))
            if points:
                series.append((label, tuple(sorted(points))))
        return cls(tuple(series), tuple(report["window"]["layers"]))

    @property
    def alt(self) -> str:
        """One-paragraph description for ``alt`` and ``<desc>``."""
        parts = "; ".join(
            f"{label}: from {min(r for _, r in points):.2f} to {max(r for _, r in points):.2f}"
            for label, points in self.series
        )
        return (
            "Line chart of the ratio of the VL endpoint's to the text-only endpoint's operator norm of the weight "
            f"change, per decoder layer (1: they moved as far). {parts}."
        )

    TITLE = "How much further the VL endpoint moved, per layer"

    def body(self) -> dict[str, Any]:
        """One line per projection kind (toggled from the legend), the ratio 1 dashed, the window shaded."""
        rows = [
            {"kind": label, "layer": layer, "ratio": ratio}
            for label, points in self.series
            for layer, ratio in points
        ]
        kinds = [label for label, _ in self.series]
        x = quantitative(
            "layer", "decoder layer (shaded: the last-10 window the medians cover)", axis={"tickMinStep": 1}
        )
        y = quantitative("ratio", "VL / text-only ‖ΔW‖₂", scale={"zero": False})
        toggle = {"name": "shown", "select": {"type": "point", "fields": ["kind"]}, "bind": "legend"}
        layers: list[dict[str, Any]] = []
        if self.window:
            layers.append(
                {
                    "data": {"values": [{"start": min(self.window) - 0.5, "end": max(self.window) + 0.5}]},
                    "mark": {"type": "rect", "color": "#9e9e9e", "opacity": 0.15},
                    "encoding": {"x": {"field": "start", "type": "quantitative"}, "x2": {"field": "end"}},
                }
            )
        layers += [
            charts.rule("y", 1.0, dash=(5, 3)),
            {
                "params": [toggle],
                "mark": {"type": "line", "point": True, "strokeWidth": 1.5},
                "encoding": {
                    "x": x,
                    "y": y,
                    "color": nominal("kind", "projection", scale=charts.series_scale(kinds)),
                    "opacity": {"condition": {"param": "shown", "value": 1}, "value": 0.15},
                    "tooltip": [{"field": "kind"}, {"field": "layer"}, {"field": "ratio", "format": ".2f"}],
                },
            },
        ]
        return {"data": {"values": rows}, "height": 280, "layer": layers}


@dataclass(frozen=True)
class MergeChart(Chart):
    """Each model's NLL of the base answers (x, lower is closer to the base's text behaviour) against its visual
    accuracy (y, %); ``points`` holds ``(label, nll, visual, kind)`` with kind ``merge``, ``base`` or ``vlm_lm``."""

    points: tuple[tuple[str, float, float | None, str], ...]
    chance: float

    @classmethod
    def of(cls, merges: list[tuple[str, Any]], base: Any, vlm_lm: Any) -> MergeChart:
        """From ``(title, Measured)`` of each merge, the base's and the VLM-LM's :class:`Measured`."""
        points = [
            ("VLM-LM (no merge)", vlm_lm.text.nll_continue_mean, 100 * vlm_lm.visual.accuracy, "vlm_lm")
        ]
        points += [(title, m.text.nll_continue_mean, 100 * m.visual.accuracy, "merge") for title, m in merges]
        points.append(("base LLM (no vision)", base.text.nll_continue_mean, None, "base"))
        return cls(tuple(points), 100 * vlm_lm.visual.chance)

    @property
    def alt(self) -> str:
        """One-paragraph description for ``alt`` and ``<desc>``."""
        parts = "; ".join(
            f"{label}: NLL {nll:.2f}" + ("" if visual is None else f", visual {visual:.1f}%")
            for label, nll, visual, _ in self.points
        )
        return (
            "Scatter of each merge's NLL of the base model's answers (lower: closer to the base) against the visual "
            f"accuracy of its VLM (chance {self.chance:.1f}%). {parts}."
        )

    TITLE = "What each merge trades: text against vision"

    def body(self) -> dict[str, Any]:
        """One point per model (the VLM-LM a black diamond), its name beside it (placed clear of the others); the
        base LLM, which has no vision, as a dashed vertical line; chance as a dotted horizontal one."""
        shown = [
            {"model": label, "short": label.split(",")[0], "nll": nll, "visual": visual, "kind": kind}
            for label, nll, visual, kind in self.points
            if visual is not None
        ]
        bases = [(label, nll) for label, nll, visual, _ in self.points if visual is None]
        names = [row["model"] for row in shown]
        colours = [
            "#000000" if row["kind"] == "vlm_lm" else charts.SERIES_COLOURS[i % len(charts.SERIES_COLOURS)]
            for i, row in enumerate(shown)
        ]
        frame = charts.Frame.around(
            [row["nll"] for row in shown] + [nll for _, nll in bases],
            [row["visual"] for row in shown] + [self.chance],
        )
        x = quantitative(
            "nll", "NLL of the base model's answers (nats; lower: closer to the base)", scale=frame.scale("x")
        )
        y = quantitative("visual", "visual accuracy (%; dotted: chance)", scale=frame.scale("y"))
        layers: list[dict[str, Any]] = [charts.rule("y", self.chance, dash=(2, 2))]
        for label, nll in bases:
            layers.append(charts.rule("x", nll, dash=(5, 3)))
            layers.append(
                {
                    "data": {"values": [{"nll": nll, "text": label}]},
                    "mark": {"type": "text", "align": "left", "dx": 3, "y": 8, "fontSize": 9},
                    "encoding": {"x": {"field": "nll", "type": "quantitative"}, "text": {"field": "text"}},
                }
            )
        layers.append(
            {
                "mark": {"type": "point", "filled": True, "size": 70},
                "encoding": {
                    "x": x,
                    "y": y,
                    "color": nominal("model", None, scale={"domain": names, "range": colours}, legend=None),
                    "shape": {
                        "field": "kind",
                        "type": "nominal",
                        "scale": {"domain": ["vlm_lm", "merge"], "range": ["diamond", "circle"]},
                        "legend": None,
                    },
                    "tooltip": [
                        {"field": "model"},
                        {"field": "nll", "title": "NLL (nats)", "format": ".3f"},
                        {"field": "visual", "title": "visual (%)", "format": ".1f"},
                    ],
                },
            }
        )
        labels = charts.place_labels([(row["short"], row["nll"], row["visual"]) for row in shown], frame)
        layers.append(charts.label_layer(labels, x, y))
        return {"data": {"values": shown}, "height": charts.SCATTER_HEIGHT, "layer": layers}
