"""Which layers of a model the probe can measure, found by the model itself: a census forward.

One forward of a few tokens runs with the probe's attention function in *census* mode: every layer that calls
transformers' ``AttentionInterface`` is a softmax-attention layer the probe reproduces, in call order, which covers
hybrid stacks (Jamba, Qwen3-Next, Nemotron-H, ...) and per-layer head counts without a per-architecture list. A
model is refused, in one line naming its model type and the reason, when no layer calls the interface (no softmax
attention, or attention code of its own), its attention is bidirectional, passes an argument the probe does not
reproduce, attends to keys other than the input tokens or combines several softmax calls per layer, or its
text-only forward fails. Layers are labelled by their attention module's ``layer_idx``; when that is missing or
repeated (shared blocks), by call position.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass

import torch

from sinkbench.errors import ModelNotSupported, UserError, described
from sinkbench.sink.attention import (
    AttentionCall,
    AttentionCensus,
    attention_implementation,
    probe_mode,
    recording,
)
from sinkbench.sink.options import band_layers

#: Tokens of the census forward: enough for a causal mask to show.
CENSUS_TOKENS = 4


@dataclass(frozen=True)
class AttentionLayout:
    """The softmax-attention layers of a model, in call order: each one's label (decoder-layer index, or call
    position when ``by_call``: layers without an index, or run more than once) and query heads, the variants the
    probe reproduces (``softcap``, ``s_aux``, ...), and the decoder's layer count."""

    labels: list[int]
    heads: list[int]
    variants: tuple[str, ...]
    num_hidden_layers: int
    by_call: bool = False

    def probed(self, num_layers: int, band: str | None = None) -> list[int]:
        """Labels of the last ``num_layers`` attention layers (all when there are fewer), or of those inside a layer
        ``band`` (:func:`~sinkbench.sink.options.band_layers`; UserError if it is malformed, too deep or empty)."""
        if band is None:
            return self.labels[max(0, len(self.labels) - num_layers) :]
        if self.by_call:
            raise UserError(
                f"layer band {band!r}: this model's attention layers are labelled by call, not by decoder "
                "layer, so a band of layers cannot be chosen; use num_layers instead"
            )
        inside = band_layers(band, self.num_hidden_layers)
        chosen = [label for label in self.labels if label in inside]
        if not chosen:
            raise UserError(
                f"layer band {band!r} (layers {inside.start}-{inside.stop - 1}) holds none of the model's "
                f"attention layers ({self.describe()}); choose another band"
            )
        return chosen

    @property
    def hybrid(self) -> bool:
        """Whether some decoder layers are not softmax attention."""
        return not self.by_call and len(self.labels) < self.num_hidden_layers

    def describe(self) -> str:
        """The layout in a few words, e.g. ``12 of 48 layers are softmax attention``."""
        if self.by_call:
            return (
                f"{len(self.labels)} attention calls over {self.num_hidden_layers} layers (labelled by call)"
            )
        if self.hybrid:
            return f"{len(self.labels)} of {self.num_hidden_layers} layers are softmax attention"
        return f"{len(self.labels)} attention layers"


def decoder_of(model: torch.nn.Module) -> torch.nn.Module:
    """The module that runs the decoder stack without the LM head: ``get_decoder()`` where that is a model (a
    VLM's language model), else the base model (some heads name their output projection ``decoder``)."""
    from transformers import PreTrainedModel

    getter = getattr(model, "get_decoder", None)
    decoder = getter() if callable(getter) else None
    if isinstance(decoder, PreTrainedModel) and decoder is not model:
        return decoder
    base = getattr(model, getattr(model, "base_model_prefix", ""), None)
    return base if isinstance(base, torch.nn.Module) else model


def input_device(model: torch.nn.Module) -> torch.device:
    """Where a model's input ids go: its embeddings' device, or, when accelerate has offloaded them (their
    weights are on ``meta``), the device its dispatch hook runs them on."""
    embeddings = model.get_input_embeddings()
    device = getattr(getattr(embeddings, "_hf_hook", None), "execution_device", None)
    return torch.device(device) if device is not None else embeddings.weight.device


def model_type(model: torch.nn.Module) -> str:
    """The model type a message should name (the text config's, for a multimodal model)."""
    config = getattr(model, "config", None)
    if config is None:
        return type(model).__name__
    return str(getattr(config.get_text_config(), "model_type", None) or config.model_type)


def attention_layout(model: torch.nn.Module, token_ids: Sequence[int]) -> AttentionLayout:
    """Run the census forward on (the first few of) ``token_ids`` and describe the attention layers
    (ModelNotSupported, in one line, when the model cannot be measured: module docstring)."""
    kind = model_type(model)
    ids = torch.tensor([list(token_ids)[:CENSUS_TOKENS]], device=input_device(model))
    census = AttentionCensus(length=ids.shape[1])
    try:
        with probe_mode(model), recording(census), torch.inference_mode():
            decoder_of(model)(input_ids=ids, attention_mask=torch.ones_like(ids), use_cache=False)
    except ModelNotSupported:
        raise
    except Exception as error:  # any failure of the model's own code on a text-only input
        raise ModelNotSupported(
            f"model type {kind!r}: its text-only forward failed ({described(error)})"
        ) from error
    return _layout(kind, census.calls, model, ids)


def _layout(
    kind: str, calls: list[AttentionCall], model: torch.nn.Module, ids: torch.Tensor
) -> AttentionLayout:
    """The layout of the census's calls, or the reason the model is refused."""
    if not calls:
        raise ModelNotSupported(f"model type {kind!r}: {_why_no_calls(model, ids)}")
    if not all(call.causal for call in calls):
        raise ModelNotSupported(
            f"model type {kind!r}: its attention is bidirectional (an encoder); Sink Strength is defined for "
            "causal decoders"
        )
    if any(call.extra_keys for call in calls):
        raise ModelNotSupported(
            f"model type {kind!r}: its attention keys are not the input tokens (compressed or memory keys), so "
            "there is no sink token to locate"
        )
    unknown = sorted({name for call in calls for name in call.unknown})
    if unknown:
        raise ModelNotSupported(
            f"model type {kind!r}: its attention passes {', '.join(unknown)} to the attention function, which "
            "the probe does not reproduce"
        )
    repeated = [a.layer_idx for a, b in itertools.pairwise(calls) if a.module == b.module]
    if repeated:
        raise ModelNotSupported(
            f"model type {kind!r}: each attention layer combines several softmax calls (e.g. differential "
            "attention), so no single attention distribution per layer exists to measure"
        )
    indices = [call.layer_idx for call in calls]
    by_call = None in indices or len(set(indices)) < len(indices)
    labels = list(range(len(calls))) if by_call else indices
    return AttentionLayout(
        labels=[int(label) for label in labels],
        heads=[call.num_heads for call in calls],
        variants=tuple(sorted({name for call in calls for name in call.variants})),
        num_hidden_layers=_decoder_depth(model, len(calls)),
        by_call=by_call,
    )


def _decoder_depth(model: torch.nn.Module, default: int) -> int:
    """The number of decoder layers: the decoder's ``layers`` list where it has one, else its config's count."""
    layers = getattr(decoder_of(model), "layers", None)
    if isinstance(layers, torch.nn.ModuleList):
        return len(layers)
    return int(getattr(model.config.get_text_config(), "num_hidden_layers", None) or default)


def _why_no_calls(model: torch.nn.Module, ids: torch.Tensor) -> str:
    """Tell a model without softmax attention from one whose attention bypasses ``AttentionInterface``."""
    try:
        with attention_implementation([model.config.get_text_config()], "eager"), torch.inference_mode():
            attentions = decoder_of(model)(input_ids=ids, use_cache=False, output_attentions=True).attentions
    except Exception:  # an eager forward that fails tells nothing more
        attentions = None
    if any(isinstance(a, torch.Tensor) and a.dim() == 4 for a in attentions or ()):
        return (
            "its attention does not go through transformers' AttentionInterface (the model runs attention code "
            "of its own), so the probe cannot see it"
        )
    return "it has no softmax attention layers (a recurrent or state-space model); Sink Strength is defined on attention"
