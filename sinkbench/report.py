"""The Sink Strength report: one JSON document per screened model, and its text rendering."""

from __future__ import annotations

import math
from datetime import datetime, timezone
from typing import Any

from sinkbench import __version__
from sinkbench.measure import ProbeOptions
from sinkbench.models import ModelInfo
from sinkbench.strength import SinkStrengthSummary


def build_report(
    info: ModelInfo, options: ProbeOptions, prompts: list[str], summary: SinkStrengthSummary, seconds: float
) -> dict[str, Any]:
    """Assemble the report (schema documented in ``submissions/README.md``)."""
    return {
        "sinkbench_version": __version__,
        "created": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "model": info.to_dict(),
        "options": options.to_dict(),
        "layers_probed": summary.layers,
        "calibration_prompts": list(prompts),
        "sink_strength": summary.sink_strength,
        "metrics": {k: v for k, v in summary.scalar_metrics().items() if k != "sink_strength"},
        "profile": {
            "layers": summary.layers,
            "median_g": [[_finite_or_none(v) for v in row] for row in summary.median_g],
            "layer_median_g": [_finite_or_none(v) for v in summary.layer_median_g],
        },
        "sink_position_histogram": summary.to_dict()["sink_position_histogram"],
        "probe_seconds": round(seconds, 3),
    }


def _finite_or_none(value: float) -> float | None:
    """JSON has no NaN: a head or layer without observations is ``null``."""
    return value if math.isfinite(value) else None


def format_profile(summary: SinkStrengthSummary) -> str:
    """A compact text table: S, then the median G of each probed layer with a bar."""
    lines = [
        f"Sink Strength S = {summary.sink_strength:+.3f} nats  ({summary.observations} observations)",
        f"share G>2 = {summary.share_g_above_2:.3f}   position-0 mass = {summary.position0_mass:.3f}"
        f"   Sink_1^0.3 = {summary.sink_rate:.3f}",
        "layer  median G",
    ]
    for layer, value in zip(summary.layers, summary.layer_median_g, strict=True):
        bar = "#" * max(0, min(40, round(abs(value) * 4)))
        lines.append(f"{layer:>5}  {value:+7.3f}  {'-' if value < 0 else ''}{bar}")
    return "\n".join(lines)
