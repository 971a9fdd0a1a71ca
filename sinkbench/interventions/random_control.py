"""The random-dW control (arXiv 2609.00746, Appendix D.4): the reference LLM with Gaussian noise added to every
attention and MLP projection, scaled so that each one's relative Frobenius norm matches the real VLM-LM's.

For each projection weight W of the reference (:func:`~sinkbench.interventions.modules.projections`) with the
VLM-LM's relative change r = ||W_vlm - W||_F / ||W||_F (:mod:`.displacement`): draw G with i.i.d. standard normal
entries and set ``W <- W + G * r ||W||_F / ||G||_F``, so ||dW||_F / ||W||_F is exactly r before the result is
cast back to the model's dtype (the report gives the realised ratio after the cast, read back from the weights).
Norm scales (RMSNorm gamma), biases, embeddings and the LM head are left untouched, as in the paper. The noise is
drawn on the CPU from one generator seeded with ``seed``, projection by projection in model order, so a seed
gives the same control on any device.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import torch
from tqdm.auto import tqdm

from sinkbench.interventions.checkpoint import (
    StrengthProbe,
    check_out,
    checkpoint_record,
    measured,
    publishing_checkpoints,
    save_checkpoint,
)
from sinkbench.interventions.displacement import displacement_rows
from sinkbench.interventions.modules import projections
from sinkbench.models import LoadedModel, ModelLike, load_all


@dataclass(frozen=True)
class ControlRow:
    """One projection of the control: its target and realised relative Frobenius norms of dW."""

    layer: int
    name: str
    target_relative_frobenius: float
    realised_relative_frobenius: float


def matched_targets(reference: torch.nn.Module, vlm_lm: torch.nn.Module) -> dict[str, float]:
    """Each projection's relative Frobenius change from ``reference`` to ``vlm_lm``, by qualified name."""
    prefix = {(item.layer, item.name): item.qualified for item, _ in projections(reference)}
    return {
        prefix[(row.layer, row.name)]: row.relative_frobenius
        for row in displacement_rows(reference, vlm_lm)
        if row.operator_norm is not None
    }


def add_matched_noise(
    model: torch.nn.Module, targets: Mapping[str, float], *, seed: int, progress: bool = False
) -> list[ControlRow]:
    """Add the control's noise to ``model`` in place (module docstring); every projection must have a target.

    Returns:
        Per projection, the target and the realised relative Frobenius norm (after the cast to its dtype).
    """
    generator = torch.Generator().manual_seed(seed)
    rows = []
    with torch.no_grad():
        for item, weight in tqdm(projections(model), desc="random dW", unit="tensor", disable=not progress):
            target = targets[item.qualified]
            original = weight.detach().float().cpu().clone()
            noise = torch.randn(original.shape, generator=generator)
            scale = target * torch.linalg.vector_norm(original) / torch.linalg.vector_norm(noise)
            weight.copy_((original + noise * scale).to(weight.device, weight.dtype))
            realised = torch.linalg.vector_norm(weight.detach().float().cpu() - original)
            rows.append(
                ControlRow(
                    item.layer, item.name, target, float(realised / torch.linalg.vector_norm(original))
                )
            )
    return rows


def random_control(
    reference: ModelLike, vlm_lm: ModelLike, *, seed: int = 0, progress: bool = False, **load_options: Any
) -> tuple[LoadedModel, list[ControlRow]]:
    """The control model and its per-projection norms (module docstring).

    Args:
        reference: the reference LLM; a :class:`~sinkbench.models.LoadedModel` is changed in place (pass a spec
            or folder to keep it).
        vlm_lm: its VLM-LM, whose relative changes the noise matches (same architecture and size).
        seed: the noise's seed.
        progress: show a progress bar.
        load_options: how specs are loaded (:func:`sinkbench.models.load_model`).
    """
    loaded = load_all({"reference": reference, "vlm_lm": vlm_lm}, **load_options)
    control, vlm = loaded["reference"], loaded["vlm_lm"]
    targets = matched_targets(control.model, vlm.model)
    return control, add_matched_noise(control.model, targets, seed=seed, progress=progress)


def write_random_control(
    reference: ModelLike,
    vlm_lm: ModelLike,
    out: str | Path,
    *,
    seed: int = 0,
    probe: StrengthProbe | None = None,
    overwrite: bool = False,
    progress: bool = True,
    **load_options: Any,
) -> dict[str, Any]:
    """Write the random-dW control of (``reference``, ``vlm_lm``) as a checkpoint folder ``out``.

    Args:
        reference, vlm_lm, seed, progress, load_options: as for :func:`random_control`.
        out: the checkpoint folder (published atomically).
        probe: also measure S of the reference, the VLM-LM and the control (None: do not).
        overwrite: replace an earlier ``out``.

    Returns:
        The report written beside the weights (``intervention.json``).
    """
    started = time.perf_counter()
    check_out(out, overwrite)
    loaded = load_all({"reference": reference, "vlm_lm": vlm_lm}, **load_options)
    loaded_reference, vlm = loaded["reference"], loaded["vlm_lm"]
    with publishing_checkpoints(out, overwrite=overwrite, inputs=(loaded_reference, vlm)) as staging:
        strengths = {
            "reference": measured(probe, loaded_reference, progress),
            "vlm_lm": measured(probe, vlm, progress),
        }
        control, rows = random_control(loaded_reference, vlm, seed=seed, progress=progress)
        strengths["control"] = measured(probe, control, progress)
        errors = [
            abs(row.realised_relative_frobenius / row.target_relative_frobenius - 1)
            for row in rows
            if row.target_relative_frobenius > 0
        ]
        record = checkpoint_record(
            "random_control",
            {"reference": loaded_reference, "vlm_lm": vlm},
            seed=seed,
            method="Gaussian dW per projection, ||dW||_F / ||W||_F matched to the VLM-LM's; norm scales, biases, "
            "embeddings and LM head untouched",
            max_relative_error=max(errors, default=0.0),
            projections=[asdict(row) for row in rows],
            sink_strength=strengths if probe is not None else None,
            seconds=round(time.perf_counter() - started, 3),
        )
        save_checkpoint(control, staging, record)
    return record
