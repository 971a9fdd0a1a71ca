"""Charts of the VL fine-tuning testbed (the Training dynamics page) that show every run, not only averages.

* :class:`PairedChart`: one outcome per arm, each seed a line joining its arms (the pairing the statistics use);
* :class:`LengthChart`: the answer lengths of every run group, every answer shown in the box;
* :class:`TrajectoryChart`: S against training step, per arm, every seed.

Built like the other charts of :mod:`sinkbench.leaderboard.plots` (its style, margins and SVG writer), each
with its interactive figure too (:mod:`sinkbench.leaderboard.charts`).
"""

from __future__ import annotations

import textwrap
from dataclasses import dataclass
from html import escape

import matplotlib
from matplotlib.ticker import MaxNLocator

from sinkbench.leaderboard import charts
from sinkbench.leaderboard.plots import _STYLE, _new_axes, _plain, _to_svg

#: Colours of the arms of a training experiment, in order (Okabe-Ito).
ARM_COLOURS = ("#D55E00", "#0072B2", "#009E73", "#CC79A7", "#E69F00")


@dataclass(frozen=True)
class PairedChart:
    """``outcome`` per arm for every seed; each seed's values joined by a line across the arms.

    ``seeds`` holds ``(seed, values)`` with one value per arm (None where the run is missing); ``reference`` is
    the base model's value, drawn as a dashed line.
    """

    outcome: str
    arms: tuple[str, ...]
    seeds: tuple[tuple[int, tuple[float | None, ...]], ...]
    reference: float | None
    reference_label: str

    @property
    def alt(self) -> str:
        """One-paragraph description for ``alt`` and ``<desc>``."""
        rows = "; ".join(
            f"seed {seed}: " + ", ".join(f"{arm} {_fmt(v)}" for arm, v in zip(self.arms, values, strict=True))
            for seed, values in self.seeds
        )
        base = f" {self.reference_label}: {_fmt(self.reference)}." if self.reference is not None else ""
        return f"Dot-and-line chart of {self.outcome} per arm, one line per seed. {rows}.{base}"

    def svg(self) -> str:
        """Draw the chart."""
        with matplotlib.rc_context(_STYLE):
            figure, axes = _new_axes(6.4, 3.6, left=0.75)
            for index, (seed, values) in enumerate(self.seeds):
                points = [(x, v) for x, v in enumerate(values) if v is not None]
                if not points:  # a seed with no run of the arms shown
                    continue
                xs = [x + 0.03 * (index - len(self.seeds) / 2) for x, _ in points]
                axes.plot(xs, [v for _, v in points], color="#9e9e9e", linewidth=0.8, zorder=2)
                for x, (arm_index, v) in zip(xs, points, strict=True):
                    colour = ARM_COLOURS[arm_index % len(ARM_COLOURS)]
                    axes.plot([x], [v], marker="o", markersize=4, color=colour, zorder=3)
                axes.annotate(
                    str(seed),
                    (xs[-1], points[-1][1]),
                    xytext=(4, 0),
                    textcoords="offset points",
                    fontsize=6.5,
                )
            if self.reference is not None:
                axes.axhline(self.reference, color="#616161", linestyle="--", linewidth=0.9, zorder=1)
                axes.annotate(
                    _plain(self.reference_label),
                    (0, self.reference),
                    xytext=(0, 3),
                    textcoords="offset points",
                    fontsize=7,
                    color="#616161",
                )
            axes.set_xticks(range(len(self.arms)), [textwrap.fill(_plain(arm), 22) for arm in self.arms])
            axes.set_xlim(-0.4, len(self.arms) - 0.6)
            axes.set_ylabel(_plain(self.outcome))
            axes.set_title(
                _plain(f"{self.outcome}: every seed (numbers) in every arm"), loc="left", fontsize=10
            )
        return _to_svg(figure, f"{self.outcome} per arm and seed", self.alt)

    def figure(self) -> dict:
        """The interactive figure: one series per seed (toggled from the legend), its points coloured by arm."""
        data = [
            {
                "type": "scatter",
                "mode": "lines+markers",
                "name": f"seed {seed}",
                "x": [escape(arm) for arm, value in zip(self.arms, values, strict=True) if value is not None],
                "y": [value for value in values if value is not None],
                "line": {"color": "#9e9e9e", "width": 1},
                "marker": {
                    "size": 9,
                    "color": [
                        ARM_COLOURS[i % len(ARM_COLOURS)] for i, v in enumerate(values) if v is not None
                    ],
                },
                "hovertemplate": f"seed {seed}, %{{x}}: %{{y:.2f}}<extra></extra>",
            }
            for seed, values in self.seeds
        ]
        shapes = [] if self.reference is None else [charts.horizontal_line(self.reference, "#616161", "dash")]
        return {
            "data": data,
            "layout": charts.layout(
                "", self.outcome, shapes=shapes, xaxis={"type": "category", "automargin": True}
            ),
        }


@dataclass(frozen=True)
class LengthChart:
    """The distribution of answer lengths (tokens) per run group: every answer of every seed, as a box over the
    points, with the token cap drawn; ``groups`` holds ``(label, lengths, stopped share)``."""

    groups: tuple[tuple[str, tuple[int, ...], float], ...]
    cap: int

    @property
    def alt(self) -> str:
        """One-paragraph description for ``alt`` and ``<desc>``."""
        parts = "; ".join(
            f"{label}: median {_median(lengths):.0f} tokens over {len(lengths)} answers, {100 * stopped:.0f}% "
            "stopped before the cap"
            for label, lengths, stopped in self.groups
        )
        return f"Box plot of answer lengths in tokens per run group (cap {self.cap}). {parts}."

    def svg(self) -> str:
        """Draw the chart."""
        labels = [label for label, _, _ in self.groups]
        with matplotlib.rc_context(_STYLE):
            figure, axes = _new_axes(6.4, max(2.2, 0.42 * len(labels) + 1.1), left=2.3)
            axes.grid(axis="y", visible=False)
            axes.boxplot(
                [list(lengths) for _, lengths, _ in self.groups],
                orientation="horizontal",
                widths=0.55,
                showfliers=False,
                medianprops={"color": "#D55E00", "linewidth": 1.6},
            )
            for index, (_, _, stopped) in enumerate(self.groups, start=1):
                axes.annotate(
                    f"{100 * stopped:.0f}% stop",
                    (self.cap, index),
                    xytext=(4, -3),
                    textcoords="offset points",
                    fontsize=7,
                    color="#616161",
                )
            axes.axvline(self.cap, color="#616161", linestyle="--", linewidth=0.9)
            axes.set_yticks(range(1, len(labels) + 1), [textwrap.fill(_plain(label), 34) for label in labels])
            axes.invert_yaxis()
            axes.set_xlim(0, self.cap * 1.18)
            axes.set_xlabel(f"answer length (tokens; dashed: the cap of {self.cap})")
            axes.set_title("How long the answers are: every answer of every seed", loc="left", fontsize=10)
        return _to_svg(figure, "Answer lengths per run group", self.alt)

    def figure(self) -> dict:
        """The interactive figure: a box per run group over all its answers (every answer a point), the cap drawn."""
        data = [
            {
                "type": "box",
                "name": escape(label),
                "y": list(lengths),
                "boxpoints": "all",
                "jitter": 0.4,
                "pointpos": 0,
                "marker": {"size": 3, "color": ARM_COLOURS[index % len(ARM_COLOURS)], "opacity": 0.5},
                "line": {"color": ARM_COLOURS[index % len(ARM_COLOURS)]},
                "hovertemplate": f"{escape(label)}: %{{y}} tokens ({100 * stopped:.0f}% stopped before the cap)<extra></extra>",
            }
            for index, (label, lengths, stopped) in enumerate(self.groups)
        ]
        return {
            "data": data,
            "layout": charts.layout(
                "",
                "answer length (tokens)",
                shapes=[charts.horizontal_line(self.cap, "#616161", "dash")],
                showlegend=False,
            ),
        }


def _median(values: tuple[int, ...]) -> float:
    ordered = sorted(values)
    middle = len(ordered) // 2
    return float(ordered[middle]) if len(ordered) % 2 else (ordered[middle - 1] + ordered[middle]) / 2


def _fmt(value: float | None) -> str:
    return "missing" if value is None else f"{value:.2f}"


@dataclass(frozen=True)
class TrajectoryChart:
    """Sink Strength S against training step: per arm, each seed a faint line and the mean over seeds a bold one.

    ``arms`` holds, per arm, its label and one trajectory of ``(step, S)`` points per seed.
    """

    arms: tuple[tuple[str, tuple[tuple[tuple[int, float], ...], ...]], ...]
    model_label: str

    @property
    def alt(self) -> str:
        """One-paragraph description for ``alt`` and ``<desc>``."""
        parts = [
            f"{label}: mean S {mean[-1][1]:+.2f} at step {mean[-1][0]} over {len(runs)} seeds"
            for label, runs in self.arms
            if (mean := self._mean(runs))
        ]
        return (
            f"Line chart of Sink Strength S of {self.model_label} against training step, per arm. "
            + "; ".join(parts)
            + "."
        )

    @staticmethod
    def _mean(runs: tuple[tuple[tuple[int, float], ...], ...]) -> list[tuple[int, float]]:
        """The mean over seeds at each step that every seed measured."""
        steps = sorted(set.intersection(*(set(step for step, _ in run) for run in runs))) if runs else []
        values = [dict(run) for run in runs]
        return [(step, sum(run[step] for run in values) / len(values)) for step in steps]

    def svg(self) -> str:
        """Draw the chart."""
        with matplotlib.rc_context(_STYLE):
            figure, axes = _new_axes(6.4, 4.0, left=0.75)
            for index, (label, runs) in enumerate(self.arms):
                colour = ARM_COLOURS[index % len(ARM_COLOURS)]
                for run in runs:
                    axes.plot(*zip(*run, strict=True), color=colour, linewidth=0.8, alpha=0.35, zorder=2)
                mean = self._mean(runs)
                if mean:
                    axes.plot(
                        *zip(*mean, strict=True),
                        color=colour,
                        linewidth=2.0,
                        marker="o",
                        markersize=3.5,
                        label=_plain(f"{label} (mean of {len(runs)})"),
                        zorder=3,
                    )
            axes.axhline(0.0, color="#9e9e9e", linewidth=0.8, zorder=1)
            axes.xaxis.set_major_locator(MaxNLocator(integer=True))
            axes.set_xlabel("optimizer step")
            axes.set_ylabel("Sink Strength S (nats)")
            axes.set_title(_plain(f"S during fine-tuning: {self.model_label}"), loc="left", fontsize=10)
            if self.arms:
                axes.legend(frameon=False, fontsize=7.5, loc="best")
        return _to_svg(figure, f"Sink Strength during fine-tuning: {self.model_label}", self.alt)

    def figure(self) -> dict:
        """The interactive figure: per arm, one legend entry toggling its seeds (faint) and their mean (bold)."""
        data = []
        for index, (label, runs) in enumerate(self.arms):
            colour = ARM_COLOURS[index % len(ARM_COLOURS)]
            name = escape(label)
            for number, run in enumerate(runs):
                steps, values = zip(*run, strict=True) if run else ((), ())
                data.append(
                    {
                        "type": "scatter",
                        "mode": "lines",
                        "x": list(steps),
                        "y": list(values),
                        "name": f"{name}, run {number + 1}",
                        "legendgroup": name,
                        "showlegend": False,
                        "opacity": 0.35,
                        "line": {"color": colour, "width": 1},
                        "hovertemplate": f"{name}, run {number + 1}: step %{{x}}, S %{{y:+.2f}}<extra></extra>",
                    }
                )
            mean = self._mean(runs)
            if mean:
                steps, values = zip(*mean, strict=True)
                data.append(
                    {
                        "type": "scatter",
                        "mode": "lines+markers",
                        "x": list(steps),
                        "y": list(values),
                        "name": f"{name} (mean of {len(runs)})",
                        "legendgroup": name,
                        "line": {"color": colour, "width": 2.5},
                        "hovertemplate": f"{name}, mean: step %{{x}}, S %{{y:+.2f}}<extra></extra>",
                    }
                )
        return {
            "data": data,
            "layout": charts.layout(
                "optimizer step", "Sink Strength S (nats)", shapes=[charts.horizontal_line(0.0)]
            ),
        }
