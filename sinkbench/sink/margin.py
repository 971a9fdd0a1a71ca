"""The pair margin analysis: G_base, B_gap and median(G_base) - median(B_gap) (arXiv 2609.00746 sections 3-4, Table 5).

The paper's B_gap = sup_{p != p_sink} |delta_p - delta_{p_sink}| (delta_p: the change of attention logit p between
the reference LLM and the VLM-LM) is "rebuilt from the change in attention-probability ratios ... at the reference's
p_sink" and "includes hidden-state and other parameter drift"; its margin proxy is median(G_base) - median(B_gap).
Here, per observation o = (prompt, layer, head, query), both models run on the same token ids (the reference
tokenizer's) with p = the reference's per-head p_sink:

* ``G_base(o) = l_p - log sum_{k != p} exp(l_k)`` with the reference's logits l, ``G_vlm(o)`` the same in the VLM-LM;
* ``B_gap(o) = |G_vlm(o) - G_base(o)|``, the realised change of the sink's log-odds. Since ``G_vlm - G_base =
  delta_p - log sum_{k != p} w_k exp(delta_k)`` (w: the reference's non-sink attention), ``B_gap(o) <=
  sup_{k != p} |delta_k - delta_p|``: the part of the paper's worst case the sink felt, from the probe's two
  log-sum-exps alone.

Observations are the probe's (degenerate ones dropped) that are finite in both models; medians are numpy's, per
layer and pooled.
"""

from __future__ import annotations

import gc
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch

from sinkbench.errors import UserError
from sinkbench.models import ModelInfo, load_model
from sinkbench.provenance import report_header
from sinkbench.safe_io import write_json_atomic
from sinkbench.sink.observe import observe
from sinkbench.sink.options import PER_HEAD_SINK_MODES, ProbeOptions
from sinkbench.sink.prompts import load_calibration
from sinkbench.sink.strength import PromptObservations


@dataclass(frozen=True)
class MarginRow:
    """Medians over one layer's paired (prompt, head, query) observations, or all of them: G_base (the reference
    at its p_sink), B_gap, ``margin = g_base - b_gap`` (the paper's proxy G-B), and G of the VLM-LM at that p_sink."""

    paired_observations: int
    g_base: float
    b_gap: float
    margin: float
    g_vlm: float


@dataclass(frozen=True)
class MarginSummary:
    """The pair's margin quantities, overall and per probed layer."""

    layers: list[int]
    overall: MarginRow
    per_layer: list[MarginRow]

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dictionary; per-layer rows carry their layer index."""
        rows = [
            {"layer": layer, **asdict(row)} for layer, row in zip(self.layers, self.per_layer, strict=True)
        ]
        return {"layers": self.layers, "overall": asdict(self.overall), "per_layer": rows}


def paired_g(
    reference: Sequence[PromptObservations], vlm: Sequence[PromptObservations]
) -> tuple[torch.Tensor, torch.Tensor]:
    """``(K, N)`` G_base and G_vlm, observations pooled over prompts; NaN where either is not finite. ValueError
    when the two runs do not cover the same prompts, layers and tokens."""
    if not reference or len(reference) != len(vlm):
        raise ValueError(f"need one VLM-LM run per reference prompt; got {len(reference)} and {len(vlm)}")
    for number, (ref, other) in enumerate(zip(reference, vlm, strict=True)):
        if ref.layers != other.layers or ref.g.shape != other.g.shape:
            raise ValueError(
                f"prompt {number}: reference layers {ref.layers} x (heads, tokens) {tuple(ref.g.shape[1:])} "
                f"but VLM-LM {other.layers} x {tuple(other.g.shape[1:])}; the pair must share its architecture"
            )
    g_base = torch.cat([obs.g.double().flatten(1) for obs in reference], dim=1)
    g_vlm = torch.cat([obs.g.double().flatten(1) for obs in vlm], dim=1)
    paired = torch.isfinite(g_base) & torch.isfinite(g_vlm)
    return g_base.masked_fill(~paired, float("nan")), g_vlm.masked_fill(~paired, float("nan"))


def margin_summary(
    reference: Sequence[PromptObservations], vlm: Sequence[PromptObservations]
) -> MarginSummary:
    """G_base, B_gap and the margin proxy from paired probe runs (see the module docstring)."""
    g_base, g_vlm = paired_g(reference, vlm)
    rows = [_row(g_base[layer], g_vlm[layer]) for layer in range(g_base.shape[0])]
    return MarginSummary(list(reference[0].layers), _row(g_base.flatten(), g_vlm.flatten()), rows)


def _row(g_base: torch.Tensor, g_vlm: torch.Tensor) -> MarginRow:
    """Medians of one set of paired observations (NaN entries are not observations); UserError without one."""
    kept = ~torch.isnan(g_base)
    base, other = g_base[kept].numpy(), g_vlm[kept].numpy()
    if base.size == 0:
        raise UserError(
            "no paired observation in a probed layer: every query was excluded (prompts too short?)"
        )
    g_median, b_median = float(np.median(base)), float(np.median(np.abs(other - base)))
    return MarginRow(int(base.size), g_median, b_median, g_median - b_median, float(np.median(other)))


def pair_margin(
    reference: str,
    vlm_lm: str,
    *,
    prompts: str | None = None,
    options: ProbeOptions | None = None,
    dtype: str = "float32",
    device: str | None = None,
    device_map: str | None = None,
    revisions: tuple[str | None, str | None] = (None, None),
    output: Path | None = None,
    progress: bool = True,
) -> dict[str, Any]:
    """Measure the margin quantities of a (reference LLM, VLM-LM) pair and build the report; UserError for
    unsupported options or a pair whose vocabularies or shapes do not match.

    Args:
        reference: reference LLM (hub id, dir, GGUF file or embedded name).
        vlm_lm: the extracted VLM-LM (``sinkbench extract-lm``): hub id or dir.
        prompts: a packaged calibration set (``v1``, ``v2``) or a prompts file; the default set when None.
        options: probe options; ``sink_position`` must be ``head`` or ``first``.
        dtype, device, device_map, revisions: how the reference and the VLM-LM load (:func:`~sinkbench.models.load_model`).
        output: write the report here as JSON (atomically).
        progress: show progress bars.
    """
    options = options or ProbeOptions()
    if options.sink_position not in PER_HEAD_SINK_MODES:
        raise UserError(
            f"margin needs one p_sink per head: sink_position must be one of {PER_HEAD_SINK_MODES}"
        )
    calibration = load_calibration(prompts)
    load = {"dtype": dtype, "device": device, "device_map": device_map}
    infos, reference_obs, vlm_obs = _probe_pair(
        (reference, revisions[0]), (vlm_lm, revisions[1]), list(calibration.prompts), options, load, progress
    )
    report = {
        **report_header(),
        "reference": infos[0].to_dict(),
        "vlm_lm": infos[1].to_dict(),
        "options": options.to_dict(),
        "tokenization": "reference tokenizer for both models (identical token ids)",
        "calibration": calibration.to_dict(),
        "calibration_prompts": list(calibration.prompts),
        **margin_summary(reference_obs, vlm_obs).to_dict(),
    }
    if output is not None:
        write_json_atomic(report, output)
    return report


def _probe_pair(
    reference: tuple[str, str | None],
    vlm_lm: tuple[str, str | None],
    prompts: list[str],
    options: ProbeOptions,
    load: dict[str, Any],
    progress: bool,
) -> tuple[tuple[ModelInfo, ModelInfo], list[PromptObservations], list[PromptObservations]]:
    """Probe the reference (model, revision), free it, then the VLM-LM on the same token ids at the reference's
    p_sink; ``load`` holds ``load_model``'s keyword arguments."""
    loaded = load_model(reference[0], revision=reference[1], **load)
    reference_obs = observe(loaded.model, loaded.tokenizer, prompts, options, progress=progress)
    reference_info, tokenizer = loaded.info, loaded.tokenizer
    del loaded
    gc.collect()
    other = load_model(vlm_lm[0], revision=vlm_lm[1], **load)
    _check_vocabulary(tokenizer, other.model)
    sinks = [obs.sink_position for obs in reference_obs]
    vlm_obs = observe(other.model, tokenizer, prompts, options, sink_positions=sinks, progress=progress)
    return (reference_info, other.info), reference_obs, vlm_obs


def _check_vocabulary(tokenizer: Any, model: torch.nn.Module) -> None:
    """Raise unless every reference token id is a row of the VLM-LM's embeddings."""
    rows = model.get_input_embeddings().weight.shape[0]
    if len(tokenizer) > rows:
        raise UserError(
            f"the reference tokenizer has {len(tokenizer)} tokens but the VLM-LM embeds only {rows}; "
            "the pair must share a vocabulary"
        )


def format_margin(report: dict[str, Any]) -> str:
    """A compact table: the overall margin quantities, then one line per probed layer."""
    overall = report["overall"]
    lines = [
        f"{report['reference']['id']} -> {report['vlm_lm']['id']}",
        f"G_base {overall['g_base']:+.3f}  B_gap {overall['b_gap']:.3f}  "
        f"G-B {overall['margin']:+.3f} nats  ({overall['paired_observations']} paired observations)",
        "layer   G_base   B_gap      G-B",
    ]
    lines += [
        f"{row['layer']:>5} {row['g_base']:+8.3f} {row['b_gap']:7.3f} {row['margin']:+8.3f}"
        for row in report["per_layer"]
    ]
    return "\n".join(lines)
