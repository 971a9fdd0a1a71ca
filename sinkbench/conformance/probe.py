"""The probe against the eager route for every causal-LM model type of the installed transformers.

Each type's tiny random model (:mod:`sinkbench.conformance.tiny`) is refused by the probe in one line
(``ModelNotSupported``) or checked two ways: the logits with the probe's attention function recording equal the
model's own eager attention's (so the probe reproduces each variant: soft-capping, learned sinks, masks, position
bias), and S and the median G of every probed (layer, head) equal those of the materialised eager probabilities
(:mod:`sinkbench.sink.naive`), unless the eager code applies a learned sink after normalising (logits only, and the
verdict says so). Anything else is a failure of the sweep, recorded with its error.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import replace

import numpy as np
import torch
from transformers import AutoModelForCausalLM
from transformers.models.auto.modeling_auto import MODEL_FOR_CAUSAL_LM_MAPPING_NAMES

from sinkbench.conformance.tiny import NoTinyModel, checked, tiny_config
from sinkbench.conformance.verdicts import EQUAL, EQUAL_LOGITS_ONLY, FAILED, Verdict
from sinkbench.errors import ModelNotSupported

TOLERANCE = 1e-4
#: The largest G that float32 eager probabilities resolve: ``log((1 - 2**-24) / 2**-24)``.
RESOLVABLE_G = 16.6
#: Largest tiny model built (parameters); larger defaults are reported, not built.
MAX_PARAMETERS = 20_000_000
#: Prompt lengths (tokens) of the sweep: two share a batch, so padding is exercised.
PROMPT_LENGTHS = (12, 9, 15)


def causal_lm_types() -> list[str]:
    """Every causal-LM model type registered by the installed transformers, sorted."""
    return sorted(MODEL_FOR_CAUSAL_LM_MAPPING_NAMES)


def sweep(types: Iterable[str] | None = None) -> list[Verdict]:
    """Check each model type (default: :func:`causal_lm_types`)."""
    return [check(model_type) for model_type in (causal_lm_types() if types is None else types)]


def check(model_type: str) -> Verdict:
    """Build a tiny ``model_type`` and check the probe on it (see the module docstring)."""
    return checked(
        model_type,
        lambda: _check(model_type),
        (ModelNotSupported,),
        lambda message: re.sub(r"^model type '[^']+': ", "", message),
    )


def _check(model_type: str) -> Verdict:
    from sinkbench.sink.layers import attention_layout
    from sinkbench.sink.naive import EagerHidesLearnedSink, naive_observations_tokens
    from sinkbench.sink.observe import observe_tokens
    from sinkbench.sink.options import ProbeOptions

    model = build_tiny(AutoModelForCausalLM, tiny_config(model_type))
    tokens = _prompts(model.config.get_text_config().vocab_size)
    layout = attention_layout(model, tokens[0])
    logits = _logits_difference(model, tokens[0], layout.labels)
    options = ProbeOptions(batch_size=2, keep_degenerate=True)
    probe = observe_tokens(model, tokens, options)
    try:
        free = naive_observations_tokens(model, tokens, options)
    except EagerHidesLearnedSink:
        verdict = EQUAL_LOGITS_ONLY if logits <= TOLERANCE else FAILED
        return Verdict(model_type, verdict, _describe(layout), logits_difference=logits)
    at_probe_sinks = naive_observations_tokens(
        model, tokens, options, sink_positions=[obs.sink_position for obs in probe]
    )
    s_diff, profile = _statistics_difference(probe, at_probe_sinks)
    shortfall = max(_sink_shortfall(p, n, f) for p, n, f in zip(probe, at_probe_sinks, free, strict=True))
    differences = {
        "S or the median G disagree with the eager route": max(s_diff, profile),
        "the logits disagree with the model's eager attention": logits,
        "the probe's sink receives less attention than the eager route's": shortfall,
    }
    problems = [text for text, difference in differences.items() if difference > TOLERANCE]
    reason = "; ".join([_describe(layout), *problems])
    return Verdict(model_type, FAILED if problems else EQUAL, reason, s_diff, profile, logits)


def _statistics_difference(probe: list, naive: list) -> tuple[float, float]:
    """The relative differences (:func:`_difference`) of S and of the median G of every (layer, head), G clipped at
    :data:`RESOLVABLE_G` first (beyond it float32 eager probabilities give noise or ``+inf``, the probe the value)."""
    from sinkbench.sink.strength import layer_head_medians, pooled_g, sink_strength

    clipped = [[replace(obs, g=obs.g.clamp(max=RESOLVABLE_G)) for obs in route] for route in (probe, naive)]
    s_values = [np.array(sink_strength(pooled_g(observations))) for observations in clipped]
    a, b = (layer_head_medians(observations) for observations in clipped)
    if not np.array_equal(np.isnan(a), np.isnan(b)):
        return _difference(*s_values), float("inf")
    return _difference(*s_values), _difference(a, b)


def _difference(a: np.ndarray, b: np.ndarray) -> float:
    """The largest ``|a - b| / max(1, |b|)`` (absolute up to 1, relative beyond: float32 logits of magnitude
    50 carry rounding of 1e-5 relative), with NaN against NaN counting 0."""
    same = (a == b) | (np.isnan(a) & np.isnan(b))
    relative = np.abs(a - b) / np.maximum(1.0, np.abs(b))
    return float(np.max(np.where(same, 0.0, relative), initial=0.0))


def _sink_shortfall(probe, at_probe_sinks, free) -> float:
    """How much less attention the probe's sink key receives than the eager route's own choice, at most: where the
    two choose different keys (ties are common in random models), the sum over queries of ``sigmoid(G)`` at each,
    read from the eager route; a probe choice within the tolerance of the maximum is a tie, not an error."""
    received_probe = torch.sigmoid(at_probe_sinks.g.double()).nan_to_num(0.0).sum(-1)
    received_free = torch.sigmoid(free.g.double()).nan_to_num(0.0).sum(-1)
    differs = probe.sink_position != free.sink_position
    return float((received_free - received_probe)[differs].max()) if differs.any() else 0.0


def build_tiny(auto_class: type, config) -> torch.nn.Module:
    """A random model of ``config`` (seed 0, float32, eval mode); NoTinyModel when transformers cannot build it or
    it is larger than :data:`MAX_PARAMETERS` (checked on the meta device first)."""
    try:
        with torch.device("meta"):
            size = sum(p.numel() for p in auto_class.from_config(config).parameters())
    except Exception as error:  # incomplete defaults fail in the model's constructor in many forms
        raise NoTinyModel.of(error) from error
    if size > MAX_PARAMETERS:
        raise NoTinyModel(f"still {size / 1e6:.0f}M parameters once shrunk")
    torch.manual_seed(0)
    return auto_class.from_config(config, dtype=torch.float32).eval()


def _prompts(vocab_size: int) -> list[list[int]]:
    generator = torch.Generator().manual_seed(1)
    high = min(vocab_size, 500)
    return [torch.randint(3, high, (length,), generator=generator).tolist() for length in PROMPT_LENGTHS]


def _logits_difference(model: torch.nn.Module, tokens: list[int], labels: list[int]) -> float:
    """Largest |logit| difference between the model's eager attention and the probe's (recording)."""
    from sinkbench.sink.attention import SinkRecorder, attention_implementation, probe_mode, recording

    ids = torch.tensor([tokens])
    with torch.inference_mode():
        with attention_implementation([model.config.get_text_config()], "eager"):
            eager = model(input_ids=ids, use_cache=False).logits
        recorder = SinkRecorder(
            probed_layers=frozenset(labels), sink_mode="head", query_valid=torch.ones_like(ids, dtype=torch.bool),
            labels=labels,
        )  # fmt: skip
        with probe_mode(model), recording(recorder):
            probed = model(input_ids=ids, use_cache=False).logits
    return float((eager.float() - probed.float()).abs().max())


def _describe(layout) -> str:
    """The attention layout and the variants the probe reproduces in it."""
    return layout.describe() + (f"; {', '.join(layout.variants)}" if layout.variants else "")
