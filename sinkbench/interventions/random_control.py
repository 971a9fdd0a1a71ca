"""The random-dW control (arXiv 2609.00746, Appendix D.4): the reference LLM with Gaussian noise added to the tensors
the VLM-LM changed, each scaled so that its change has the size of the VLM-LM's.

For each in-scope tensor W of the reference and the VLM-LM's W', with dW = W' - W: draw G with i.i.d. standard
normal entries and set ``W <- W + G * ||dW|| / ||G||`` in the chosen norm (:data:`~.settings.CONTROL_MATCHES`): the
Frobenius norm, as the paper does, or the operator norm (for a fused expert tensor the largest over experts; for a
vector its length). A Gaussian dW of equal Frobenius norm has an operator norm several times smaller than a trained
change's: matching the operator norm equates the quantity F.1 reports, at a larger Frobenius norm. The scope
(:data:`~.settings.CONTROL_SCOPES`) is every attention and MLP projection (the paper's), or every tensor the VLM-LM
changed (tied weights once; of a grown embedding, the reference's rows). The report gives each tensor's target and
realised norm, read back after the cast to the model's dtype. The noise is drawn on the CPU from one generator
seeded with ``seed``, tensor by tensor in model order, so a seed gives the same control on any device.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping
from dataclasses import asdict, dataclass
from typing import Any

import torch
from tqdm.auto import tqdm

from sinkbench.errors import UserError
from sinkbench.interventions.checkpoint import Intervention, Output, Report, Run
from sinkbench.interventions.modules import projections, require_same_structure
from sinkbench.interventions.settings import CONTROL_MATCHES, CONTROL_SCOPES, RandomControlParameters
from sinkbench.models import LoadedModel, ModelLike, load_all


@dataclass(frozen=True)
class Change:
    """The size of a change of one tensor: its Frobenius and operator norms (:func:`change_norm`)."""

    frobenius: float
    operator: float

    @classmethod
    def of(cls, delta: torch.Tensor) -> Change:
        return cls(change_norm(delta, "frobenius"), change_norm(delta, "operator"))

    def norm(self, match: str) -> float:
        """The norm called ``match`` (:data:`~.settings.CONTROL_MATCHES`)."""
        return self.frobenius if match == "frobenius" else self.operator


@dataclass(frozen=True)
class ControlRow:
    """One tensor of the control: the VLM-LM's change in the matched norm (target), the noise's after the cast
    (realised), the real change's ||dW||_F / ||W||_F, and the noise's norms over the real change's in each norm."""

    tensor: str
    target: float
    realised: float
    relative_frobenius: float
    frobenius_ratio: float
    operator_ratio: float


def change_norm(delta: torch.Tensor, match: str) -> float:
    """The ``match`` norm (:data:`~.settings.CONTROL_MATCHES`) of ``delta``, in float32."""
    delta = delta.detach().float()
    if match == "operator" and delta.dim() >= 2:
        return float(torch.linalg.svdvals(delta)[..., 0].max())
    return float(torch.linalg.vector_norm(delta))


def real_changes(
    reference: torch.nn.Module, vlm_lm: torch.nn.Module, scope: str = "projections"
) -> dict[str, Change]:
    """Each in-scope tensor's change from ``reference`` to ``vlm_lm``, by qualified name, in model order (scope
    ``changed``: the tensors whose values differ)."""
    require_same_structure(reference, vlm_lm, "the VLM-LM")
    theirs = dict(vlm_lm.named_parameters())
    if scope == "projections":
        tensors = [(item.qualified, weight) for item, weight in projections(reference)]
    else:
        tensors = list(reference.named_parameters())  # tied weights once
    changes = {}
    for name, weight in tensors:
        other = theirs.get(name)
        if other is not None and other.shape[1:] == weight.shape[1:] and other.shape[0] > weight.shape[0]:
            # a vocabulary the VLM grew (its image token): the change of the reference's rows
            other = other[: weight.shape[0]]
        if other is None or other.shape != weight.shape:
            raise UserError(
                f"the VLM-LM: {name} is {'missing' if other is None else f'shape {tuple(other.shape)}'}, the "
                f"reference's is {tuple(weight.shape)}; scope 'changed' needs every tensor of the reference in it"
            )
        delta = other.detach().float().cpu() - weight.detach().float().cpu()
        if scope == "projections" or bool(delta.any()):
            changes[name] = Change.of(delta)
    return changes


def add_matched_noise(
    model: torch.nn.Module,
    changes: Mapping[str, Change],
    *,
    seed: int,
    match: str = "frobenius",
    progress: bool = False,
) -> list[ControlRow]:
    """Add the control's noise to the tensors of ``model`` named in ``changes``, in place (module docstring);
    returns each tensor's row."""
    generator = torch.Generator().manual_seed(seed)
    rows = []
    with torch.no_grad():
        for name, real in tqdm(changes.items(), desc="random dW", unit="tensor", disable=not progress):
            weight = model.get_parameter(name)
            original = weight.detach().float().cpu().clone()
            noise = torch.randn(original.shape, generator=generator)
            target = real.norm(match)
            weight.copy_(
                (original + noise * (target / change_norm(noise, match))).to(weight.device, weight.dtype)
            )
            added = Change.of(weight.detach().float().cpu() - original)
            size = float(torch.linalg.vector_norm(original))
            relative = real.frobenius / size if size > 0 else math.inf
            ratios = _ratio(added.frobenius, real.frobenius), _ratio(added.operator, real.operator)
            rows.append(ControlRow(name, target, added.norm(match), relative, *ratios))
    return rows


def _ratio(added: float, real: float) -> float:
    return added / real if real > 0 else (1.0 if added == 0 else math.inf)


def random_control(
    reference: ModelLike,
    vlm_lm: ModelLike,
    *,
    seed: int = 0,
    match: str = "frobenius",
    scope: str = "projections",
    progress: bool = False,
    **load_options: Any,
) -> tuple[LoadedModel, list[ControlRow]]:
    """The control model and its per-tensor norms (module docstring).

    Args:
        reference: the reference LLM; a :class:`~sinkbench.models.LoadedModel` is changed in place.
        vlm_lm: its VLM-LM, whose changes the noise matches (same architecture and size).
        seed, match, scope: the noise's seed, the norm matched (:data:`~.settings.CONTROL_MATCHES`) and the
            tensors changed (:data:`~.settings.CONTROL_SCOPES`).
        progress: show a progress bar.
        load_options: how specs are loaded (:func:`sinkbench.models.load_model`).
    """
    RandomControlParameters(seed, match, scope)  # checks the choices
    loaded = load_all({"reference": reference, "vlm_lm": vlm_lm}, **load_options)
    control = loaded["reference"]
    changes = real_changes(control.model, loaded["vlm_lm"].model, scope)
    return control, add_matched_noise(control.model, changes, seed=seed, match=match, progress=progress)


@dataclass(frozen=True)
class RandomControlReport(Report):
    """The control's report: its seed, what it matched and where, how close each tensor came to its target, and S
    of the reference, the VLM-LM and the control (None: not measured)."""

    seed: int
    match: str
    scope: str
    method: str
    max_relative_error: float
    tensors: list[ControlRow]
    sink_strength: dict[str, Any] | None

    @classmethod
    def of(cls, run: Run[RandomControlParameters]) -> RandomControlReport:
        rows, strength = run.records[""]["tensors"], run.records[""]["sink_strength"]
        seed, match, scope = run.parameters.seed, run.parameters.match, run.parameters.scope
        errors = [abs(row.realised / row.target - 1) for row in rows if row.target > 0]
        method = f"Gaussian dW matched in {CONTROL_MATCHES[match]}, on {CONTROL_SCOPES[scope]}"
        strength = None if run.inputs is None else {**run.inputs, "control": strength}
        return cls(seed, match, scope, method, max(errors, default=0.0), rows, strength)

    def text(self) -> str:
        head = (
            f"random control of {len(self.tensors)} tensors ({self.match} norm, {self.scope}), seed "
            f"{self.seed}: realised norms within {self.max_relative_error:.2%} of their targets"
        )
        return "\n".join([head, *self.strength_lines(self.sink_strength)])


def _control(run: Run[RandomControlParameters]) -> Iterator[Output]:
    control, rows = random_control(
        run.loaded["reference"], run.loaded["vlm_lm"], **asdict(run.parameters), progress=run.progress
    )
    yield "", control, {"tensors": rows}


#: The random-dW control of (``reference``, ``vlm_lm``): one checkpoint, the reference with matched noise.
RANDOM_CONTROL = Intervention(
    "random_control", ("reference", "vlm_lm"), RandomControlParameters, _control, RandomControlReport
)
