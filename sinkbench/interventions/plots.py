"""The chart of a weight-displacement report (``sinkbench interventions displacement --plot``), one Vega-Lite
declaration (:mod:`sinkbench.charts`; drawing it needs ``sinkbench[site]``)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sinkbench import charts
from sinkbench.charts import Chart, nominal, quantitative


@dataclass(frozen=True)
class DisplacementChart(Chart):
    """One panel per projection: ``‖ΔW‖₂`` per decoder layer (log scale) for each endpoint, the summarised window
    shaded; ``rows`` holds ``(projection, endpoint, layer, norm)``, positive norms only (for the log scale)."""

    rows: tuple[tuple[str, str, int, float], ...]
    endpoints: tuple[str, ...]
    window: tuple[int, int]

    @classmethod
    def of(cls, report: dict[str, Any]) -> DisplacementChart:
        """The chart of a displacement report (``rows``, and ``versus_rows`` when it has a second endpoint)."""
        rows, endpoints = [], []
        for role, key in (("endpoint", "rows"), ("versus", "versus_rows")):
            name = report["models"][role]["id"] if role in report["models"] else role
            points = [
                (row["name"].removesuffix(".weight"), name, row["layer"], row["operator_norm"])
                for row in report[key] or []
                if row["operator_norm"] is not None and row["operator_norm"] > 0
            ]
            if points:
                endpoints.append(name)
                rows += points
        layers = report["window"]["layers"]
        return cls(tuple(rows), tuple(endpoints), (layers[0], layers[-1]))

    TITLE = "Operator norm of each projection's change, per decoder layer"

    @property
    def alt(self) -> str:
        """One-paragraph description for ``alt`` and ``<desc>``."""
        panels = sorted({row[0] for row in self.rows})
        return (
            f"Line charts, one per projection ({', '.join(panels)}), of the operator norm of the weight change per "
            f"decoder layer on a log scale, for {' and '.join(self.endpoints)}; layers {self.window[0]} to "
            f"{self.window[1]} shaded (the summarised window)."
        )

    def body(self) -> dict[str, Any]:
        """A faceted chart: per projection, a line per endpoint and the window shaded."""
        start, end = self.window
        keys = ("projection", "endpoint", "layer", "norm")
        data = [
            {**dict(zip(keys, row, strict=True)), "start": start - 0.5, "end": end + 0.5} for row in self.rows
        ]
        bounds = [{"op": "min", "field": "start", "as": "start"}, {"op": "max", "field": "end", "as": "end"}]
        shaded = {
            "transform": [{"aggregate": bounds}],
            "mark": {"type": "rect", "color": "#9e9e9e", "opacity": 0.15},
            "encoding": {"x": {"field": "start", "type": "quantitative"}, "x2": {"field": "end"}},
        }
        lines = {
            "mark": {"type": "line", "point": {"size": 12}, "strokeWidth": 1},
            "encoding": {
                "x": quantitative("layer", "decoder layer", axis={"tickMinStep": 1}),
                "y": quantitative("norm", "‖ΔW‖₂", scale={"type": "log"}),
                "color": nominal("endpoint", None, scale=charts.series_scale(self.endpoints)),
                "tooltip": [
                    {"field": "endpoint"},
                    {"field": "layer"},
                    {"field": "norm", "title": "‖ΔW‖₂", "format": ".3g"},
                ],
            },
        }
        return {
            "data": {"values": data},
            "facet": {"field": "projection", "type": "nominal", "title": None, "sort": None},
            "columns": 4,
            "resolve": {"scale": {"y": "independent"}},
            "spec": {"width": 170, "height": 130, "layer": [shaded, lines]},
        }


def displacement_svg(report: dict[str, Any]) -> str:
    """The static SVG of :class:`DisplacementChart` of ``report``."""
    return DisplacementChart.of(report).svg()
