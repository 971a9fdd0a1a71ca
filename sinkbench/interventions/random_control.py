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

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import torch
from tqdm.auto import tqdm

from sinkbench.interventions.checkpoint import Intervention, Output, Report, Run
from sinkbench.interventions.displacement import displacement_rows
from sinkbench.interventions.modules import projections
from sinkbench.interventions.settings import RandomControlParameters
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


@dataclass(frozen=True)
class RandomControlReport(Report):
    """The control's report: its seed and method, how close each projection came to its target, and S of the
    reference, the VLM-LM and the control (None: not measured)."""

    seed: int
    method: str
    max_relative_error: float
    projections: list[ControlRow]
    sink_strength: dict[str, Any] | None

    @classmethod
    def of(cls, run: Run[RandomControlParameters]) -> RandomControlReport:
        rows, strength = run.records[""]["projections"], run.records[""]["sink_strength"]
        errors = [
            abs(row.realised_relative_frobenius / row.target_relative_frobenius - 1)
            for row in rows
            if row.target_relative_frobenius > 0
        ]
        return cls(
            run.parameters.seed,
            "Gaussian dW per projection, ||dW||_F / ||W||_F matched to the VLM-LM's; norm scales, biases, "
            "embeddings and LM head untouched",
            max(errors, default=0.0),
            rows,
            None if run.inputs is None else {**run.inputs, "control": strength},
        )

    def text(self) -> str:
        return "\n".join(
            [
                f"random control of {len(self.projections)} projections, seed {self.seed}: realised relative "
                f"norms within {self.max_relative_error:.2%} of their targets",
                *self.strength_lines(self.sink_strength),
            ]
        )


def _control(run: Run[RandomControlParameters]) -> Iterator[Output]:
    reference, vlm_lm = run.loaded["reference"], run.loaded["vlm_lm"]
    control, rows = random_control(reference, vlm_lm, seed=run.parameters.seed, progress=run.progress)
    yield "", control, {"projections": rows}


#: The random-dW control of (``reference``, ``vlm_lm``): one checkpoint, the reference with matched noise.
RANDOM_CONTROL = Intervention(
    "random_control", ("reference", "vlm_lm"), RandomControlParameters, _control, RandomControlReport
)
