"""Probe one model end to end: load, probe, summarise, bootstrap the interval over prompts, report (what
``sinkbench screen`` measures; :mod:`sinkbench.screen` then places the model on the board)."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from sinkbench.models import load_model
from sinkbench.safe_io import write_json_atomic
from sinkbench.sink.observe import measure
from sinkbench.sink.options import IntervalOptions, ProbeOptions
from sinkbench.sink.prompts import load_calibration
from sinkbench.sink.report import build_report, format_profile
from sinkbench.sink.uncertainty import sink_strength_interval


def probe_model(
    model_spec: str | None,
    options: ProbeOptions | None = None,
    *,
    prompts: str | None = None,
    interval: IntervalOptions | None = None,
    dtype: str = "float32",
    device: str | None = None,
    device_map: str | None = None,
    revision: str | None = None,
    output: Path | None = None,
    progress: bool = True,
) -> tuple[dict[str, Any], str]:
    """Measure S of ``model_spec`` (None: the embedded default); return its report and a printable profile.

    Args:
        model_spec: hub id, local dir, ``.gguf`` file or embedded name.
        options: probe options (defaults of :class:`ProbeOptions`).
        prompts: a packaged calibration set (``v1``, ``v2``) or a prompts file; the default set when None.
        interval: the bootstrap over prompts behind ``sink_strength_ci`` (``resamples=0``: none).
        dtype, device, device_map, revision: how the model is loaded (:func:`sinkbench.models.load_model`).
        output: also write the report here as JSON (atomically).
        progress: show a progress bar.
    """
    options = options or ProbeOptions()
    interval = interval or IntervalOptions()
    calibration = load_calibration(prompts)
    loaded = load_model(model_spec, dtype=dtype, device=device, device_map=device_map, revision=revision)
    started = time.perf_counter()
    summary, observations = measure(
        loaded.model, loaded.tokenizer, calibration.prompts, options, progress=progress
    )
    ci = sink_strength_interval(observations, interval)
    seconds = time.perf_counter() - started
    report = build_report(
        loaded.info, options, calibration, summary, seconds=seconds, interval=(interval, ci)
    )
    if output is not None:
        write_json_atomic(report, output)
    info, requested = loaded.info, options.num_layers if options.layer_band is None else None
    profile = format_profile(summary, ci, confidence=interval.confidence, requested_layers=requested)
    return report, f"{info.id} ({info.architecture}, {info.dtype}, {info.num_layers} layers)\n{profile}"
