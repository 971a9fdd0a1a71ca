"""The Sink Strength report: one JSON document per screened model, and its text rendering."""

from __future__ import annotations

from typing import Any

from sinkbench.models import ModelInfo
from sinkbench.numbers import finite_or_none
from sinkbench.provenance import report_header
from sinkbench.sink.metrics import G_THRESHOLD, SINK_RATE_THRESHOLD, SINK_STRENGTH
from sinkbench.sink.options import ProbeOptions
from sinkbench.sink.strength import SinkStrengthSummary


def build_report(
    info: ModelInfo, options: ProbeOptions, prompts: list[str], summary: SinkStrengthSummary, seconds: float
) -> dict[str, Any]:
    """Assemble the report (schema documented in ``submissions/README.md``)."""
    return {
        **report_header(),
        "model": info.to_dict(),
        "options": options.to_dict(),
        "layers_probed": summary.layers,
        "calibration_prompts": list(prompts),
        "sink_strength": summary.sink_strength,
        "metrics": {k: v for k, v in summary.scalar_metrics().items() if k != SINK_STRENGTH.name},
        "profile": {
            "layers": summary.layers,
            "median_g": [[finite_or_none(v) for v in row] for row in summary.median_g],
            "layer_median_g": [finite_or_none(v) for v in summary.layer_median_g],
        },
        "sink_position_histogram": summary.to_dict()["sink_position_histogram"],
        "probe_seconds": round(seconds, 3),
    }


def format_profile(summary: SinkStrengthSummary) -> str:
    """A compact text table: S, then the median G of each probed layer with a bar."""
    lines = [
        f"Sink Strength S = {summary.sink_strength:+.3f} nats  ({summary.observations} observations)",
        f"share G>{G_THRESHOLD:g} = {summary.share_g_above:.3f}   position-0 mass = {summary.position0_mass:.3f}"
        f"   Sink_1^{SINK_RATE_THRESHOLD:g} = {summary.sink_rate:.3f}",
        "layer  median G",
    ]
    for layer, value in zip(summary.layers, summary.layer_median_g, strict=True):
        bar = "#" * max(0, min(40, round(abs(value) * 4)))
        lines.append(f"{layer:>5}  {value:+7.3f}  {'-' if value < 0 else ''}{bar}")
    return "\n".join(lines)
