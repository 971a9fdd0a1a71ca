"""The Sink Strength report: one JSON document per screened model, written atomically."""

from __future__ import annotations

import json
import os
import tempfile
from datetime import datetime, timezone
from pathlib import Path
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
            "median_g": summary.median_g,
            "layer_median_g": summary.layer_median_g,
        },
        "sink_position_histogram": summary.to_dict()["sink_position_histogram"],
        "probe_seconds": round(seconds, 3),
    }


def write_json_atomic(data: dict[str, Any], path: Path) -> None:
    """Write JSON to ``path`` via a temporary file in the same folder, then rename."""
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, temporary = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as stream:
            json.dump(data, stream, indent=2, allow_nan=False)
            stream.write("\n")
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


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
