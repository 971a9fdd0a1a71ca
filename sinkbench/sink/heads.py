"""The sink-head map: per (layer, head) sink statistics over every layer, and the selected sink heads.

For each (layer, head), pooled over the calibration prompts and their queries: the median G (NaN where the head has
no observation), the dominant sink position (counted from each prompt's first token) with its share of the head's
sink choices, and the share of observations with G above :data:`~sinkbench.sink.metrics.G_THRESHOLD`. Sink heads
are the top fraction by median G (``top_frac``) or every head whose median G reaches ``min_g``; heads without
observations are never selected. Torch loads on first use, so that ``sinkbench --help`` stays instant.
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from sinkbench.errors import UserError
from sinkbench.numbers import finite_or_none
from sinkbench.provenance import report_header
from sinkbench.safe_io import write_json_atomic, write_text_atomic
from sinkbench.sink.metrics import G_THRESHOLD, SHARE_G_ABOVE
from sinkbench.sink.options import ALL_LAYERS, DEFAULT_TOP_FRAC, ProbeOptions
from sinkbench.sink.prompts import CalibrationSet, load_calibration

if TYPE_CHECKING:
    from sinkbench.models import ModelInfo
    from sinkbench.sink.strength import PromptObservations

#: The selection rules (the default's value: :data:`~sinkbench.sink.options.DEFAULT_TOP_FRAC`).
SELECTION_RULES = ("top_frac", "min_g")


@dataclass(frozen=True)
class HeadMap:
    """Per (layer, head) sink statistics: every array is ``(K, H)`` over the probed layers.

    Attributes:
        layers: probed layer indices, ascending.
        median_g: median G (NaN where the head has no observation).
        sink_position: the dominant sink key position (-1 where none was recorded).
        sink_position_share: the share of the head's sink choices that fall on ``sink_position``.
        share_g_above: the share of observations with ``G > G_THRESHOLD`` (NaN where none).
    """

    layers: list[int]
    median_g: np.ndarray
    sink_position: np.ndarray
    sink_position_share: np.ndarray
    share_g_above: np.ndarray


def head_map(observations: Sequence[PromptObservations], g_threshold: float = G_THRESHOLD) -> HeadMap:
    """Summarise per-prompt observations into a :class:`HeadMap` (pure)."""
    import torch

    from sinkbench.sink.strength import layer_head_medians

    pooled = torch.cat([obs.g.double() for obs in observations], dim=-1).numpy()  # (K, H, sum T)
    counts = (~np.isnan(pooled)).sum(-1)
    with np.errstate(invalid="ignore", divide="ignore"):
        share = np.where(counts > 0, (pooled > g_threshold).sum(-1) / counts, np.nan)
    position, position_share = _dominant_positions(observations)
    return HeadMap(
        layers=list(observations[0].layers),
        median_g=layer_head_medians(observations),
        sink_position=position,
        sink_position_share=position_share,
        share_g_above=share,
    )


def _dominant_positions(observations: Sequence[PromptObservations]) -> tuple[np.ndarray, np.ndarray]:
    """``(K, H)`` most frequent sink position and its share, over prompts (or observed queries)."""
    pooled = np.concatenate([_sink_choices(obs) for obs in observations], axis=-1)  # (K, H, n)
    position = np.full(pooled.shape[:2], -1, dtype=np.int64)
    share = np.full(pooled.shape[:2], np.nan)
    for index in np.ndindex(*pooled.shape[:2]):
        values = pooled[index][pooled[index] >= 0]
        if values.size:
            counts = np.bincount(values)
            position[index] = int(counts.argmax())
            share[index] = counts.max() / values.size
    return position, share


def _sink_choices(obs: PromptObservations) -> np.ndarray:
    """``(K, H, n)`` sink positions of one prompt; per-query mode keeps observed queries only (-1 elsewhere)."""
    import torch

    positions = obs.sink_position.long()
    if positions.dim() == 2:
        return positions.unsqueeze(-1).numpy()
    return positions.masked_fill(torch.isnan(obs.g), -1).numpy()


def selection_rule(top_frac: float | None = None, min_g: float | None = None) -> dict[str, Any]:
    """The selection rule as recorded in the report: ``{"rule": "top_frac" | "min_g", "value": ...}``.

    ``top_frac`` keeps the ``ceil(top_frac * heads)`` heads of highest median G, ``min_g`` every head whose median G
    reaches it; with neither, ``top_frac`` is :data:`DEFAULT_TOP_FRAC`. UserError: both given, or ``top_frac``
    outside (0, 1].
    """
    if top_frac is not None and min_g is not None:
        raise UserError("Choose one sink-head selection rule: top_frac or min_g, not both.")
    if min_g is not None:
        return {"rule": SELECTION_RULES[1], "value": float(min_g)}
    value = DEFAULT_TOP_FRAC if top_frac is None else top_frac
    if not 0 < value <= 1:
        raise UserError(f"top_frac must be in (0, 1]; got {value}.")
    return {"rule": SELECTION_RULES[0], "value": float(value)}


def select_heads(heads: HeadMap, rule: dict[str, Any]) -> list[list[int]]:
    """The heads that ``rule`` (:func:`selection_rule`) selects, as ``[layer, head]`` pairs, strongest first: by
    median G, then the higher share of G above the threshold, then the lower layer and head."""
    cells = sorted(
        zip(*np.nonzero(~np.isnan(heads.median_g)), strict=True),
        key=lambda kh: (-heads.median_g[kh], -np.nan_to_num(heads.share_g_above[kh]), kh),
    )
    if rule["rule"] == SELECTION_RULES[1]:
        cells = [kh for kh in cells if heads.median_g[kh] >= rule["value"]]
    else:
        cells = cells[: math.ceil(rule["value"] * heads.median_g.size)]
    return [[heads.layers[int(k)], int(h)] for k, h in cells]


def build_heads_report(
    info: ModelInfo,
    options: ProbeOptions,
    calibration: CalibrationSet,
    heads: HeadMap,
    rule: dict[str, Any],
    seconds: float,
) -> dict[str, Any]:
    """The head-map JSON document: provenance, the ``(K, H)`` matrices and the selected heads."""

    def matrix(values: np.ndarray) -> list[list[Any]]:
        return [[finite_or_none(float(v)) for v in row] for row in values]

    selected = select_heads(heads, rule)
    return {
        **report_header(),
        "model": info.to_dict(),
        "options": options.to_dict(),
        "calibration": calibration.to_dict(),
        "calibration_prompts": list(calibration.prompts),
        "layers": heads.layers,
        "num_heads": int(heads.median_g.shape[1]),
        "g_threshold": G_THRESHOLD,
        "median_g": matrix(heads.median_g),
        "sink_position": heads.sink_position.tolist(),
        "sink_position_share": matrix(heads.sink_position_share),
        SHARE_G_ABOVE.name: matrix(heads.share_g_above),
        "selection": {**rule, "count": len(selected), "heads": selected},
        "probe_seconds": round(seconds, 3),
    }


def heads_svg(report: dict[str, Any]) -> str:
    """A layer x head heatmap of the median G in ``report``, its selected sink heads named in the title (needs
    vl-convert-python: ``sinkbench[site]``)."""
    from sinkbench.charts import HeatmapChart

    selection = report["selection"]
    note = f"{selection['count']} sink heads ({selection['rule']} = {selection['value']:g})"
    matrix = tuple(tuple(row) for row in report["median_g"])
    return HeatmapChart(tuple(report["layers"]), matrix, report["model"]["id"], note).svg()


def map_heads(
    model_spec: str | None,
    options: ProbeOptions | None = None,
    *,
    prompts: str | None = None,
    top_frac: float | None = None,
    min_g: float | None = None,
    dtype: str = "float32",
    device: str | None = None,
    device_map: str | None = None,
    revision: str | None = None,
    output: Path | None = None,
    plot: Path | None = None,
    progress: bool = True,
) -> dict[str, Any]:
    """Load a model as :func:`~sinkbench.sink.probe_model.probe_model` does, map its sink heads, and write the report (and plot) when asked.

    Args:
        model_spec: hub id, local dir, ``.gguf`` file or embedded name (None: the embedded default).
        options: probe options; default: :class:`ProbeOptions` over every layer (:data:`ALL_LAYERS`).
        prompts: a packaged calibration set or a prompts file; the default set when None.
        top_frac, min_g: the selection rule (:func:`selection_rule`).
        dtype, device, device_map, revision: how the model is loaded (:func:`sinkbench.models.load_model`).
        output, plot: write the JSON report (atomically) and a layer x head SVG heatmap of the median G here.
        progress: show a progress bar.
    """
    from sinkbench.models import load_model
    from sinkbench.sink.observe import observe

    options = options or replace(ProbeOptions(), num_layers=ALL_LAYERS)
    rule = selection_rule(top_frac, min_g)
    calibration = load_calibration(prompts)
    loaded = load_model(model_spec, dtype=dtype, device=device, device_map=device_map, revision=revision)
    started = time.perf_counter()
    observations = observe(loaded.model, loaded.tokenizer, calibration.prompts, options, progress=progress)
    report = build_heads_report(
        loaded.info, options, calibration, head_map(observations), rule, time.perf_counter() - started
    )
    if output is not None:
        write_json_atomic(report, output)
    if plot is not None:
        write_text_atomic(plot, heads_svg(report))
    return report
