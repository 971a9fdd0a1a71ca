"""The Sink Strength report: one JSON document per screened model, and its text rendering."""

from __future__ import annotations

import math
from typing import Any

from sinkbench.models import ModelInfo
from sinkbench.numbers import finite_or_none
from sinkbench.provenance import report_header
from sinkbench.sink.attention import VARIANTS
from sinkbench.sink.metrics import G_THRESHOLD, SINK_RATE_THRESHOLD, SINK_STRENGTH
from sinkbench.sink.options import IntervalOptions, ProbeOptions
from sinkbench.sink.prompts import CalibrationSet
from sinkbench.sink.strength import SinkStrengthSummary

#: What S's sign and size mean, for people reading a report.
DIRECTION = "higher S = a stronger attention sink, which the paper links to keeping strict-format skills"


def build_report(
    info: ModelInfo,
    options: ProbeOptions,
    calibration: CalibrationSet,
    summary: SinkStrengthSummary,
    *,
    seconds: float,
    interval: tuple[IntervalOptions, tuple[float, float] | None],
) -> dict[str, Any]:
    """Assemble the report (schema documented in ``submissions/README.md``).

    ``interval`` is the bootstrap's options and its interval (None when turned off); both are recorded.
    """
    bootstrap, ci = interval
    return {
        **report_header(),
        "model": info.to_dict(),
        "options": {
            **options.to_dict(),
            "attention_kernel": summary.attention.get("kernel"),
            **{f"bootstrap_{key}": value for key, value in bootstrap.to_dict().items()},
        },
        "calibration": calibration.to_dict(),
        "layers_probed": summary.layers,
        "attention": summary.attention,
        "calibration_prompts": list(calibration.prompts),
        "sink_strength": summary.sink_strength,
        "sink_strength_ci": list(ci) if ci is not None else None,
        "metrics": {k: v for k, v in summary.scalar_metrics().items() if k != SINK_STRENGTH.name},
        "profile": {
            "layers": summary.layers,
            "median_g": [[finite_or_none(v) for v in row] for row in summary.median_g],
            "layer_median_g": [finite_or_none(v) for v in summary.layer_median_g],
        },
        "sink_position_histogram": summary.to_dict()["sink_position_histogram"],
        "probe_seconds": round(seconds, 3),
    }


def _layers_line(summary: SinkStrengthSummary, requested: int | None) -> str:
    """Which layers were probed, naming them when they are not consecutive (hybrid stacks), and saying so when
    the model has fewer attention layers than were asked for."""
    layers = summary.layers
    consecutive = layers == list(range(layers[0], layers[0] + len(layers)))
    named = f"{layers[0]}-{layers[-1]}" if consecutive else ", ".join(map(str, layers))
    text = f"probed layers {named} ({len(layers)} layers)"
    attention, decoder = summary.attention.get("attention_layers"), summary.attention.get("decoder_layers")
    if attention and decoder and attention < decoder:
        text += f"; {attention} of the {decoder} decoder layers are softmax attention"
    if requested is not None and requested > len(layers):
        text += f"; --num-layers {requested} asked for more than the model has, so all of them were probed"
    variants = summary.attention.get("variants")
    if variants:
        text += "\nattention reproduced with " + "; ".join(VARIANTS.get(name, name) for name in variants)
    return text


def format_profile(
    summary: SinkStrengthSummary,
    ci: tuple[float, float] | None = None,
    *,
    confidence: float = 0.95,
    requested_layers: int | None = None,
) -> str:
    """A compact text table: S with its interval, the secondary metrics, then each probed layer's median G."""
    interval = f"  {confidence:.0%} CI [{ci[0]:+.3f}, {ci[1]:+.3f}] over prompts" if ci is not None else ""
    lines = [
        f"Sink Strength S = {summary.sink_strength:+.3f} nats{interval}  ({summary.observations} observations)",
        f"  ({DIRECTION})",
        f"share G>{G_THRESHOLD:g} = {summary.share_g_above:.3f}   position-0 mass = {summary.position0_mass:.3f}"
        f"   Sink_1^{SINK_RATE_THRESHOLD:g} = {summary.sink_rate:.3f}",
        _layers_line(summary, requested_layers),
        "layer  median G",
    ]
    for layer, value in zip(summary.layers, summary.layer_median_g, strict=True):
        bar = "#" * max(0, min(40, round(abs(value) * 4))) if math.isfinite(value) else ""
        lines.append(f"{layer:>5}  {value:+7.3f}  {'-' if value < 0 else ''}{bar}")
    return "\n".join(lines)
