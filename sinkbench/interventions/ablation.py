"""Channel ablation of the norm scales (arXiv 2609.00746, Appendix D.3): in every decoder layer, the top-K
channels by |gamma| of each chosen norm are set to that norm's channel mean (over all its channels in that layer,
before any is replaced; ties go to the lower channel); the residual stream and projections are untouched.

gamma is the norm's effective scale (:func:`~sinkbench.interventions.modules.scale_offset`). The paper's norms
(:data:`~sinkbench.interventions.settings.PAPER_NORMS`) are ablated each alone (*single*) and all together
(*joint*): on Qwen3-VL-8B the joint kill cost 44.4 IFEval points against 20.0 for the three singles added up.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Sequence
from dataclasses import asdict, dataclass
from typing import Any

import torch

from sinkbench.errors import UserError
from sinkbench.interventions.checkpoint import Intervention, Output, Report, Run
from sinkbench.interventions.modules import norm_scales, scale_offset
from sinkbench.interventions.settings import ABLATION_SETTINGS, DEFAULT_TOP_K, PAPER_NORMS, AblationParameters


@dataclass(frozen=True)
class AblatedNorm:
    """One norm (weight ``name`` in decoder ``layer``, of ``kind`` ``q_norm``, say) after the ablation: the
    ``channels`` set to the channel ``mean`` of gamma, largest |gamma| first, and ``offset`` (1.0 where gamma is
    ``1 + weight``, else 0.0)."""

    layer: int
    name: str
    kind: str
    channels: list[int]
    mean: float
    offset: float


def top_channels(gamma: torch.Tensor, k: int) -> list[int]:
    """The ``k`` channels of largest |gamma|, largest first (ties: lower index first)."""
    order = sorted(range(gamma.numel()), key=lambda channel: (-abs(float(gamma[channel])), channel))
    return order[:k]


def present_kinds(model: torch.nn.Module) -> list[str]:
    """The norm kinds the model's decoder layers have, in model order."""
    return list(dict.fromkeys(item.kind for item, _ in norm_scales(model)))


def choose_kinds(model: torch.nn.Module, kinds: Sequence[str] | None) -> tuple[list[str], list[str]]:
    """The kinds to ablate and the paper's kinds the model lacks: ``kinds`` as given, or by default the paper's
    kinds the model has (UserError: a kind is not a norm of this model, or it has none of the paper's)."""
    present = present_kinds(model)
    if kinds is None:
        chosen = [kind for kind in PAPER_NORMS if kind in present]
        if not chosen:
            raise UserError(
                f"the model has none of the paper's norms {list(PAPER_NORMS)}; pass --norms with some of {present}"
            )
        return chosen, [kind for kind in PAPER_NORMS if kind not in present]
    unknown = [kind for kind in kinds if kind not in present]
    if unknown:
        raise UserError(f"--norms {', '.join(unknown)}: not a norm of this model; its norms are {present}")
    return list(dict.fromkeys(kinds)), []


@contextlib.contextmanager
def ablated(
    model: torch.nn.Module, kinds: Sequence[str], top_k: int = DEFAULT_TOP_K
) -> Iterator[list[AblatedNorm]]:
    """Ablate the ``kinds`` in every layer of ``model`` (module docstring) for the block, then restore them.
    UserError when ``top_k`` is below 1 or above a norm's width."""
    chosen = [(item, module) for item, module in norm_scales(model) if item.kind in kinds]
    widest = min((module.weight.numel() for _, module in chosen), default=0)
    if not 1 <= top_k <= widest:
        raise UserError(f"--top-k {top_k}: choose 1 to {widest} (the narrowest chosen norm's width)")
    saved, records = [], []
    with torch.no_grad():
        for item, module in chosen:
            offset = scale_offset(module)
            gamma = module.weight.detach().float() + offset
            channels, mean = top_channels(gamma, top_k), float(gamma.mean())
            saved.append((module, module.weight.detach().clone()))
            module.weight[channels] = torch.tensor(mean - offset, dtype=module.weight.dtype)
            records.append(AblatedNorm(item.layer, item.name, item.kind, channels, mean, offset))
    try:
        yield records
    finally:
        with torch.no_grad():
            for module, weight in saved:
                module.weight.copy_(weight)


def ablation_settings(
    kinds: Sequence[str], settings: Sequence[str] = ABLATION_SETTINGS
) -> dict[str, tuple[str, ...]]:
    """Setting name -> the kinds it ablates: each kind alone (``single``) and, with two kinds or more, all of
    them (``joint``; with one kind it would repeat the single). The settings are known ones
    (:class:`~sinkbench.interventions.settings.AblationParameters` checks them)."""
    chosen: dict[str, tuple[str, ...]] = {}
    if "single" in settings:
        chosen.update({kind: (kind,) for kind in kinds})
    if "joint" in settings and len(kinds) > 1:
        chosen["joint"] = tuple(kinds)
    return chosen


@dataclass(frozen=True)
class AblationReport(Report):
    """The ablation's report: the norms ablated (and the paper's the model lacks), K, S of the unablated model
    (None: not measured), and per setting the kinds, the norms changed and S."""

    kinds: list[str]
    paper_kinds_absent: list[str]
    top_k: int
    sink_strength: dict[str, Any] | None
    settings: dict[str, dict[str, Any]]

    @classmethod
    def of(cls, run: Run[AblationParameters]) -> AblationReport:
        kinds, absent = choose_kinds(run.loaded["model"].model, run.parameters.kinds)
        settings = {
            name: {"kinds": r["kinds"], "norms_changed": len(r["norms"]), "sink_strength": r["sink_strength"]}
            for name, r in run.records.items()
        }
        return cls(kinds, absent, run.parameters.top_k, run.inputs and run.inputs["model"], settings)

    def text(self) -> str:
        lines = [f"top-{self.top_k} channel ablation of {', '.join(self.kinds)}"]
        if self.paper_kinds_absent:
            lines.append(f"  (the model has no {', '.join(self.paper_kinds_absent)})")
        lines += self.strength_lines({"the unablated model": self.sink_strength})
        for name, item in self.settings.items():
            lines.append(
                self.with_strength(f"  {name}: {item['norms_changed']} norms changed", item["sink_strength"])
            )
        return "\n".join(lines)


def _ablate(run: Run[AblationParameters]) -> Iterator[Output]:
    model, top_k = run.loaded["model"], run.parameters.top_k
    chosen, _ = choose_kinds(model.model, run.parameters.kinds)
    for name, kinds in ablation_settings(chosen, run.parameters.settings).items():
        with ablated(model.model, kinds, top_k) as records:
            norms = [asdict(item) for item in records]
            yield name, model, {"setting": name, "kinds": list(kinds), "top_k": top_k, "norms": norms}


#: Channel ablation of ``model``: one checkpoint per setting (``OUT/<setting>/``), the report beside them.
CHANNEL_ABLATION = Intervention(
    "channel_ablation", ("model",), AblationParameters, _ablate, AblationReport, sweep=lambda parameters: True
)
