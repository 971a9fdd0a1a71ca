"""Per-head QK-RMSNorm injection (arXiv 2609.00746, Appendix F.3): a backbone without QK-norm gets an RMSNorm
over each head's query and key, after the projections and before RoPE, with unit scales, and nothing else changes.

The paper ran its injected Qwen2.5 as remote code; sinkbench writes a checkpoint of a *native* architecture that
has exactly these norms and otherwise computes the source's function, so ``from_pretrained``, lm-eval and the probe
load it without remote code. For the sources in :data:`NATIVE_TARGETS` that is Qwen3 (Llama's attention, decoder
layer, SwiGLU MLP and RMSNorms, plus ``q_norm`` and ``k_norm``), mapped field by field: Llama's ``attention_bias``
carries over (``mlp_bias`` is refused: Qwen3's MLP has none); Mistral has no bias and its sliding window, if set,
applies to every layer; Qwen2 has q, k, v biases and none on o (so ``attention_bias`` and a zero o bias).

Every injection is checked before anything is written: with the new norms taken out, the target's float32 logits on
a text probe must equal the source's within ``tolerance``. Other sources, or ones with QK-norm, are refused.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import torch

from sinkbench.errors import ModelNotSupported, UserError
from sinkbench.interventions.checkpoint import Intervention, Output, Report, Run
from sinkbench.models import LoadedModel, ModelLike, as_loaded, module_info

#: The per-head norms injected, by their name in the target's attention.
QK_NORMS = ("q_norm", "k_norm")
TARGET_TYPE = "qwen3"
#: Largest max |logit difference| (float32) between the source and the target with its new norms taken out.
TOLERANCE = 1e-4


def _llama(config: Any) -> dict[str, Any]:
    if getattr(config, "mlp_bias", False):
        raise ModelNotSupported(
            "model type 'llama' with mlp_bias: no native transformers class has per-head QK-norm and an MLP with "
            "biases, so the injection cannot be written without remote code"
        )
    return {"attention_bias": bool(config.attention_bias), "use_sliding_window": False, "layer_types": None}


def _mistral(config: Any) -> dict[str, Any]:
    window = getattr(config, "sliding_window", None)
    sliding = window is not None
    layers = ["sliding_attention"] * config.num_hidden_layers if sliding else None
    return {
        "attention_bias": False,
        "use_sliding_window": sliding,
        "sliding_window": window,
        "layer_types": layers,
    }


#: Source model type -> the target fields that make the native target compute the source's function.
NATIVE_TARGETS: dict[str, Callable[[Any], dict[str, Any]]] = {
    "llama": _llama,
    "mistral": _mistral,
    "qwen2": lambda config: {"attention_bias": True},
}


def target_config(source: Any) -> Any:
    """The Qwen3 config that runs ``source``'s layers with per-head QK-norm (module docstring); ModelNotSupported
    when no native class fits (another model type, an MLP with biases)."""
    from transformers import AutoConfig

    from sinkbench.extract.config import SOURCE_KEYS

    kind = source.model_type
    if kind not in NATIVE_TARGETS:
        raise ModelNotSupported(
            f"model type {kind!r}: no native transformers class has per-head QK-norm and otherwise computes its "
            f"function, so the injection cannot be written without remote code; supported: {', '.join(NATIVE_TARGETS)}"
        )
    allowed = set(AutoConfig.for_model(TARGET_TYPE).to_dict()) - SOURCE_KEYS
    fields = {key: value for key, value in source.to_dict().items() if key in allowed}
    fields["head_dim"] = getattr(source, "head_dim", None) or source.hidden_size // source.num_attention_heads
    fields.update(NATIVE_TARGETS[kind](source))
    fields["architectures"] = ["Qwen3ForCausalLM"]
    return AutoConfig.for_model(TARGET_TYPE, **fields)


def inject_qk_norm(
    model: ModelLike, *, tolerance: float = TOLERANCE, **load_options: Any
) -> tuple[LoadedModel, dict[str, Any]]:
    """The injected model (a new Qwen3 causal LM with unit QK-norm scales) and the equivalence check's record.

    Raises ModelNotSupported when no native class fits or the source has QK-norm already, UserError when the target
    does not reproduce the source with its new norms taken out.
    """
    from transformers import AutoModelForCausalLM

    source = as_loaded(model, **load_options)
    names = {name.rsplit(".", 1)[-1] for name, _ in source.model.named_modules()}
    existing = [norm for norm in QK_NORMS if norm in names]
    if existing:
        raise ModelNotSupported(
            f"model type {source.model.config.model_type!r} has QK-norm already ({', '.join(existing)}); "
            "there is nothing to inject"
        )
    config = target_config(source.model.config)
    dtype = next(source.model.parameters()).dtype
    target = AutoModelForCausalLM.from_config(config, dtype=dtype).to(next(source.model.parameters()).device)
    _load_source_weights(target, source.model)
    difference = _max_logit_difference(source, target)
    if not difference <= tolerance:
        raise UserError(
            f"model type {source.model.config.model_type!r}: the {type(target).__name__} built for it does not "
            f"compute its function with the new norms taken out (max |logit diff| {difference:.3g} > {tolerance:g}); "
            "nothing was written"
        )
    injected = LoadedModel(target.eval(), source.tokenizer, module_info(target, f"{source.info.id}+qk-norm"))
    record = {
        "source_model_type": source.model.config.model_type,
        "target_architecture": type(target).__name__,
        "norms": list(QK_NORMS),
        "gamma": 1.0,
        "equivalence": {"max_abs_logit_diff_without_new_norms": difference, "tolerance": tolerance},
    }
    return injected, record


def _load_source_weights(target: torch.nn.Module, source: torch.nn.Module) -> None:
    """Copy every source tensor into ``target``; its new norms get unit scales and a bias the source lacks is 0
    (ModelNotSupported when a source tensor has no place or another target tensor is left without a value)."""
    missing, unexpected = target.load_state_dict(source.state_dict(), strict=False)
    new = [name for name in missing if name.endswith((".q_norm.weight", ".k_norm.weight", ".o_proj.bias"))]
    if unexpected or set(missing) - set(new):
        raise ModelNotSupported(
            f"model type {source.config.model_type!r}: its weights do not map onto {type(target).__name__} "
            f"(no place for {unexpected[:3]}; left without a value {sorted(set(missing) - set(new))[:3]})"
        )
    with torch.no_grad():
        for name in new:
            target.get_parameter(name).fill_(1.0 if name.endswith("norm.weight") else 0.0)


@contextlib.contextmanager
def without_qk_norms(model: torch.nn.Module) -> Iterator[None]:
    """For the block, every ``q_norm`` and ``k_norm`` of ``model`` is the identity."""
    swapped = []
    for module in list(model.modules()):
        for norm in QK_NORMS:
            if isinstance(getattr(module, norm, None), torch.nn.Module):
                swapped.append((module, norm, getattr(module, norm)))
                setattr(module, norm, torch.nn.Identity())
    try:
        yield
    finally:
        for module, norm, original in swapped:
            setattr(module, norm, original)


def _max_logit_difference(source: LoadedModel, target: torch.nn.Module) -> float:
    """max |logit difference| on the text probe between the source and the target without its QK-norms (float32)."""
    from sinkbench.extract.tokenizer import PROBE_TEXT

    device = next(source.model.parameters()).device
    ids = source.tokenizer(PROBE_TEXT, return_tensors="pt").input_ids.to(device)
    with torch.inference_mode(), without_qk_norms(target):
        expected = source.model(input_ids=ids).logits.float()
        found = target.eval()(input_ids=ids).logits.float()
    return float((expected - found).abs().max())


@dataclass(frozen=True)
class QkNormParameters:
    """The injection's parameters: the equivalence check's ``tolerance`` (max |logit difference|, float32)."""

    tolerance: float = TOLERANCE


@dataclass(frozen=True)
class QkNormReport(Report):
    """The injection's report: source and target, the norms added and their scale, the equivalence check, and S
    of the source and the injected model (None: not measured)."""

    source_model_type: str
    target_architecture: str
    norms: list[str]
    gamma: float
    equivalence: dict[str, float]
    sink_strength: dict[str, Any] | None

    @classmethod
    def of(cls, run: Run[QkNormParameters]) -> QkNormReport:
        record = dict(run.records[""])
        injected = record.pop("sink_strength")
        strength = None if run.inputs is None else {**run.inputs, "injected": injected}
        return cls(**record, sink_strength=strength)

    def text(self) -> str:
        check = self.equivalence["max_abs_logit_diff_without_new_norms"]
        head = (
            f"{self.source_model_type} -> {self.target_architecture} with unit q_norm/k_norm "
            f"(without them: max |logit diff| {check:.3g})"
        )
        return "\n".join([head, *self.strength_lines(self.sink_strength)])


def _inject(run: Run[QkNormParameters]) -> Iterator[Output]:
    yield "", *inject_qk_norm(run.loaded["source"], tolerance=run.parameters.tolerance)


#: Per-head QK-RMSNorm injected into ``source``: one checkpoint of the native target (no training).
QK_NORM_INJECTION = Intervention("qk_norm_injection", ("source",), QkNormParameters, _inject, QkNormReport)
