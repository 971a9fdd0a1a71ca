"""Screen one model end to end: load, probe, summarise, report."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from sinkbench.models import load_model
from sinkbench.safe_io import write_json_atomic
from sinkbench.sink.observe import measure
from sinkbench.sink.options import ProbeOptions
from sinkbench.sink.prompts import load_prompts
from sinkbench.sink.report import build_report, format_profile


def screen(
    model_spec: str | None,
    options: ProbeOptions | None = None,
    *,
    prompts_path: str | None = None,
    dtype: str = "float32",
    device: str | None = None,
    device_map: str | None = None,
    revision: str | None = None,
    output: Path | None = None,
    progress: bool = True,
) -> tuple[dict[str, Any], str]:
    """Measure S of ``model_spec`` (None: the embedded default) and build its report.

    Returns:
        The report dictionary and a printable profile; the report is also written to
        ``output`` (atomically) when given.
    """
    options = options or ProbeOptions()
    prompts = load_prompts(prompts_path)
    loaded = load_model(model_spec, dtype=dtype, device=device, device_map=device_map, revision=revision)
    started = time.perf_counter()
    summary, _ = measure(loaded.model, loaded.tokenizer, prompts, options, progress=progress)
    report = build_report(loaded.info, options, prompts, summary, time.perf_counter() - started)
    if output is not None:
        write_json_atomic(report, output)
    return report, f"{loaded.info.id} ({loaded.info.architecture}, {loaded.info.dtype})\n" + format_profile(
        summary
    )
