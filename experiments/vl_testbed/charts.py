"""Charts of the Training dynamics page that show every run, not only averages (Vega-Lite, :mod:`sinkbench.charts`):
:class:`PairedChart` (each seed a line across the arms), :class:`LengthChart` (every answer's length per run group)
and :class:`TrajectoryChart` (S against training step, every seed).
"""

from __future__ import annotations

from dataclasses import dataclass
from statistics import median
from typing import Any

from sinkbench import charts
from sinkbench.charts import Chart, nominal, quantitative


@dataclass(frozen=True)
class PairedChart(Chart):
    """``outcome`` per arm for every seed; each seed's values joined by a line across the arms.

    ``seeds`` holds ``(seed, values)`` with one value per arm (None where the run is missing); ``reference`` is
    the base model's value, drawn as a dashed line.
    """

    outcome: str
    arms: tuple[str, ...]
    seeds: tuple[tuple[int, tuple[float | None, ...]], ...]
    reference: float | None
    reference_label: str

    TITLE = "{self.outcome}: every seed (numbers) in every arm"

    @property
    def alt(self) -> str:
        """One-paragraph description for ``alt`` and ``<desc>``."""
        rows = "; ".join(
            f"seed {seed}: " + ", ".join(f"{arm} {_fmt(v)}" for arm, v in zip(self.arms, values, strict=True))
            for seed, values in self.seeds
        )
        base = f" {self.reference_label}: {_fmt(self.reference)}." if self.reference is not None else ""
        return f"Dot-and-line chart of {self.outcome} per arm, one line per seed. {rows}.{base}"

    def body(self) -> dict[str, Any]:
        """Per seed a grey line through its arms; a point per run coloured by its arm (the legend names the arms);
        the seed's number beside its last run (numbers: seeds); the reference as a dashed line."""
        rows = [
            {"seed": f"seed {seed}", "number": str(seed), "arm": arm, "value": value}
            for seed, values in self.seeds
            for arm, value in zip(self.arms, values, strict=True)
            if value is not None
        ]
        last = {row["seed"]: row for row in rows}
        width = max(12, 72 // max(len(self.arms), 1))
        x = nominal(
            "arm",
            None,
            scale={"type": "band", "domain": list(self.arms)},
            axis=charts.wrapped_labels(self.arms, width),
        )
        offset = {"field": "seed", "type": "nominal", "sort": None, "scale": {"paddingOuter": 2}}
        y = quantitative("value", charts.wrap(self.outcome, 44), scale={"zero": False})
        layers: list[dict[str, Any]] = [
            {
                "mark": {"type": "line", "color": "#9e9e9e", "strokeWidth": 1},
                "encoding": {"x": x, "xOffset": offset, "y": y, "detail": {"field": "seed"}},
            },
            {
                "mark": {"type": "point", "filled": True, "size": 50},
                "encoding": {
                    "x": x,
                    "xOffset": offset,
                    "y": y,
                    "color": nominal("arm", "arm", scale=charts.series_scale(self.arms)),
                    "tooltip": [{"field": "seed"}, {"field": "arm"}, {"field": "value", "format": ".3f"}],
                },
            },
            {
                "data": {"values": list(last.values())},
                "mark": {"type": "text", "align": "left", "dx": 5, "fontSize": 8},
                "encoding": {"x": x, "xOffset": offset, "y": y, "text": {"field": "number"}},
            },
        ]
        if self.reference is not None:
            layers.append(charts.rule("y", self.reference, dash=(5, 3)))
            layers.append(
                {
                    "data": {"values": [{"at": self.reference, "text": self.reference_label}]},
                    "mark": {
                        "type": "text",
                        "align": "left",
                        "baseline": "bottom",
                        "x": 2,
                        "dy": -2,
                        "fontSize": 9,
                    },
                    "encoding": {"y": {"field": "at", "type": "quantitative"}, "text": {"field": "text"}},
                }
            )
        return {"data": {"values": rows}, "height": 300, "layer": layers}


@dataclass(frozen=True)
class LengthChart(Chart):
    """The distribution of answer lengths (tokens) per run group: every answer of every seed, as a box over the
    points, with the token cap drawn; ``groups`` holds ``(label, lengths, stopped share)``."""

    groups: tuple[tuple[str, tuple[int, ...], float], ...]
    cap: int

    TITLE = "How long the answers are: every answer of every seed"

    @property
    def alt(self) -> str:
        """One-paragraph description for ``alt`` and ``<desc>``."""
        parts = "; ".join(
            f"{label}: median {median(lengths):.0f} tokens over {len(lengths)} answers, {100 * stopped:.0f}% "
            "stopped before the cap"
            for label, lengths, stopped in self.groups
        )
        return f"Box plot of answer lengths in tokens per run group (cap {self.cap}). {parts}."

    def body(self) -> dict[str, Any]:
        """A box (whiskers to the extremes) per group over its answers, each answer a faint point; the cap as a
        dashed line, with each group's share that stopped before it."""
        labels = [label for label, _, _ in self.groups]
        y = nominal("group", None, scale={"domain": labels})
        x = quantitative(
            "tokens",
            f"answer length (tokens; dashed: the cap of {self.cap})",
            scale={"domain": [0, self.cap * 1.2]},
        )
        colour = nominal("group", None, scale=charts.series_scale(labels), legend=None)
        answers = [{"group": label, "tokens": n} for label, lengths, _ in self.groups for n in lengths]
        stops = [
            {"group": label, "tokens": self.cap, "text": f"{100 * stopped:.0f}% stop"}
            for label, _, stopped in self.groups
        ]
        return {
            "data": {"values": answers},
            "height": 34 * max(len(self.groups), 1),
            "layer": [
                {
                    "mark": {"type": "tick", "opacity": 0.35, "thickness": 1},
                    "encoding": {
                        "x": x,
                        "y": y,
                        "color": colour,
                        "tooltip": [{"field": "group"}, {"field": "tokens"}],
                    },
                },
                {
                    "mark": {
                        "type": "boxplot",
                        "extent": "min-max",
                        "size": 18,
                        "opacity": 0.5,
                        "median": {"color": "black", "strokeWidth": 2},
                    },
                    "encoding": {"x": x, "y": y, "color": colour},
                },
                charts.rule("x", self.cap, dash=(5, 3)),
                {
                    "data": {"values": stops},
                    "mark": {"type": "text", "align": "left", "dx": 4, "fontSize": 9},
                    "encoding": {"x": x, "y": y, "text": {"field": "text"}},
                },
            ],
        }


def _fmt(value: float | None) -> str:
    return "missing" if value is None else f"{value:.2f}"


@dataclass(frozen=True)
class TrajectoryChart(Chart):
    """Sink Strength S against training step: per arm, each seed a faint line and the mean over seeds a bold one.

    ``arms`` holds, per arm, its label and one trajectory of ``(step, S)`` points per seed.
    """

    arms: tuple[tuple[str, tuple[tuple[tuple[int, float], ...], ...]], ...]
    model_label: str

    TITLE = "S during fine-tuning: {self.model_label}"

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

    def body(self) -> dict[str, Any]:
        """Per arm (one legend entry, which toggles it): each seed a faint line, the mean over seeds a bold one."""
        names = [f"{label} (mean of {len(runs)})" for label, runs in self.arms]
        runs_rows = [
            {"arm": name, "run": f"{name}, run {number + 1}", "step": step, "S": value}
            for name, (_, runs) in zip(names, self.arms, strict=True)
            for number, run in enumerate(runs)
            for step, value in run
        ]
        mean_rows = [
            {"arm": name, "step": step, "S": value}
            for name, (_, runs) in zip(names, self.arms, strict=True)
            for step, value in self._mean(runs)
        ]
        x = quantitative("step", "optimizer step", axis={"tickMinStep": 1})
        y = quantitative("S", "Sink Strength S (nats)", scale={"zero": False})
        colour = nominal("arm", None, scale=charts.series_scale(names))
        toggle = {"name": "shown", "select": {"type": "point", "fields": ["arm"]}, "bind": "legend"}
        shown = {"condition": {"param": "shown", "value": 1}, "value": 0.1}
        return {
            "height": 320,
            "layer": [
                {
                    "data": {"values": runs_rows},
                    "mark": {"type": "line", "strokeWidth": 1},
                    "encoding": {
                        "x": x,
                        "y": y,
                        "color": colour,
                        "detail": {"field": "run"},
                        "opacity": {"condition": {"param": "shown", "value": 0.35}, "value": 0.05},
                        "tooltip": [{"field": "run"}, {"field": "step"}, {"field": "S", "format": "+.2f"}],
                    },
                },
                {
                    "data": {"values": mean_rows},
                    "params": [toggle],
                    "mark": {"type": "line", "strokeWidth": 2.5, "point": True},
                    "encoding": {
                        "x": x,
                        "y": y,
                        "color": colour,
                        "opacity": shown,
                        "tooltip": [{"field": "arm"}, {"field": "step"}, {"field": "S", "format": "+.2f"}],
                    },
                },
            ],
        }
