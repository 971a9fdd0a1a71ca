"""Charts of the Interventions page, drawn like the other charts of :mod:`sinkbench.leaderboard.plots` (its style,
margins and SVG writer), each with its interactive figure (:mod:`sinkbench.leaderboard.charts`).

* :class:`LayerRatioChart`: per decoder layer, how much further the VL endpoint moved than the text-only one;
* :class:`MergeChart`: each merge's text loss against its visual accuracy (the trade-off a merge makes).
"""

from __future__ import annotations

from dataclasses import dataclass
from html import escape
from typing import Any

import matplotlib

from experiments.vl_testbed.charts import ARM_COLOURS
from sinkbench.leaderboard import charts
from sinkbench.leaderboard.plots import _STYLE, _new_axes, _plain, _to_svg

#: The projections the displacement chart draws, with their labels.
RATIO_KINDS = (("q_proj", "W_q"), ("k_proj", "W_k"), ("v_proj", "W_v"), ("o_proj", "W_o"))


@dataclass(frozen=True)
class LayerRatioChart:
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

    def svg(self) -> str:
        """Draw the chart."""
        with matplotlib.rc_context(_STYLE):
            figure, axes = _new_axes(6.4, 3.4, left=0.7)
            for index, (label, points) in enumerate(self.series):
                axes.plot(
                    [layer for layer, _ in points],
                    [ratio for _, ratio in points],
                    marker="o",
                    markersize=3,
                    linewidth=1.2,
                    color=ARM_COLOURS[index % len(ARM_COLOURS)],
                    label=label,
                )
            axes.axhline(1.0, color="#616161", linestyle="--", linewidth=0.9)
            if self.window:
                axes.axvspan(min(self.window) - 0.5, max(self.window) + 0.5, color="#eeeeee", zorder=0)
            axes.set_xlabel("decoder layer (shaded: the last-10 window the medians cover)")
            axes.set_ylabel("VL / text-only ‖ΔW‖₂")
            axes.legend(loc="upper left", fontsize=7, ncols=len(self.series), frameon=False)
            axes.set_title(
                _plain("How much further the VL endpoint moved, per layer"), loc="left", fontsize=10
            )
        return _to_svg(figure, "Weight displacement ratio per layer", self.alt)

    def figure(self) -> dict:
        """The interactive figure: one series per projection kind (toggled from the legend)."""
        data = [
            {
                "type": "scatter",
                "mode": "lines+markers",
                "name": label,
                "x": [layer for layer, _ in points],
                "y": [ratio for _, ratio in points],
                "line": {"color": ARM_COLOURS[index % len(ARM_COLOURS)]},
                "hovertemplate": f"{label}, layer %{{x}}: %{{y:.2f}}×<extra></extra>",
            }
            for index, (label, points) in enumerate(self.series)
        ]
        return {
            "data": data,
            "layout": charts.layout(
                "decoder layer",
                "VL / text-only ‖ΔW‖₂",
                shapes=[charts.horizontal_line(1.0, "#616161", "dash")],
            ),
        }


@dataclass(frozen=True)
class MergeChart:
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

    def svg(self) -> str:
        """Draw the chart (the base LLM, which has no vision, as a vertical line)."""
        with matplotlib.rc_context(_STYLE):
            figure, axes = _new_axes(6.4, 3.8, left=0.7)
            for index, (label, nll, visual, kind) in enumerate(self.points):
                if visual is None:
                    axes.axvline(nll, color="#616161", linestyle="--", linewidth=0.9)
                    axes.annotate(
                        _plain(label),
                        (nll, self.chance),
                        xytext=(3, 3),
                        textcoords="offset points",
                        fontsize=7,
                    )
                    continue
                colour = "#000000" if kind == "vlm_lm" else ARM_COLOURS[index % len(ARM_COLOURS)]
                axes.plot(
                    [nll], [visual], marker="D" if kind == "vlm_lm" else "o", markersize=5, color=colour
                )
                axes.annotate(
                    _plain(label.split(",")[0]),
                    (nll, visual),
                    xytext=(4, 2 + 7 * (index % 3) - 7),
                    textcoords="offset points",
                    fontsize=6.5,
                )
            axes.axhline(self.chance, color="#9e9e9e", linestyle=":", linewidth=0.9)
            axes.set_xlabel("NLL of the base model's answers (nats; lower: closer to the base)")
            axes.set_ylabel("visual accuracy (%; dotted: chance)")
            axes.set_title("What each merge trades: text against vision", loc="left", fontsize=10)
        return _to_svg(figure, "Merges: text loss against visual accuracy", self.alt)

    def figure(self) -> dict:
        """The interactive figure: one point per model, the base LLM as a vertical line, chance as a dotted one."""
        shown = [p for p in self.points if p[2] is not None]
        base = [p for p in self.points if p[2] is None]
        data = [
            {
                "type": "scatter",
                "mode": "markers",
                "name": escape(label),
                "x": [nll],
                "y": [visual],
                "marker": {
                    "size": 11,
                    "symbol": "diamond" if kind == "vlm_lm" else "circle",
                    "color": "#000000" if kind == "vlm_lm" else ARM_COLOURS[index % len(ARM_COLOURS)],
                },
                "hovertemplate": charts.hover_text(label, "NLL %{x:.3f} nats", "visual %{y:.1f}%")
                + "<extra></extra>",
            }
            for index, (label, nll, visual, kind) in enumerate(shown)
        ]
        shapes = [charts.horizontal_line(self.chance, "#9e9e9e", "dot")]
        shapes += [
            {
                "type": "line",
                "yref": "paper",
                "y0": 0,
                "y1": 1,
                "x0": nll,
                "x1": nll,
                "line": {"color": "#616161", "width": 1, "dash": "dash"},
            }
            for _, nll, _, _ in base
        ]
        return {
            "data": data,
            "layout": charts.layout(
                "NLL of the base model's answers (nats)", "visual accuracy (%)", shapes=shapes
            ),
        }
