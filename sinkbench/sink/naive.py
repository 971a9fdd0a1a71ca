"""The naive route: S from eager attention probabilities (``output_attentions=True``), every layer's full
``(H, T, T)`` attention materialised one prompt at a time: the independent reference the probe is tested against
and the baseline ``benchmarks/bench_sink.py`` times. Not for production use.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch

from sinkbench.sink.attention import LEARNED_SINKS, attention_implementation
from sinkbench.sink.layers import AttentionLayout, attention_layout, decoder_of, input_device
from sinkbench.sink.observe import encode_prompts
from sinkbench.sink.options import ProbeOptions
from sinkbench.sink.strength import PromptObservations, stack_heads


class EagerHidesLearnedSink(ValueError):
    """The model has a learned sink, but its eager attention returns probabilities normalised without it, so
    they cannot give G with the sink in the normaliser."""


def naive_observations(
    model: torch.nn.Module, tokenizer: Any, prompts: Sequence[str], options: ProbeOptions | None = None
) -> list[PromptObservations]:
    """Per-prompt observations computed from materialised eager attention (batch size 1)."""
    options = options or ProbeOptions()
    return naive_observations_tokens(
        model, encode_prompts(tokenizer, prompts, options.chat_template), options
    )


def naive_observations_tokens(
    model: torch.nn.Module,
    token_ids: Sequence[Sequence[int]],
    options: ProbeOptions,
    *,
    sink_positions: Sequence[torch.Tensor] | None = None,
) -> list[PromptObservations]:
    """``naive_observations`` on already tokenized prompts; ``sink_positions``: optional per-prompt ``(K, H)``
    sink positions to measure G at (as ``observe_tokens`` takes them) instead of each head's argmax."""
    layout = attention_layout(model, token_ids[0])
    learned_sink = any(name in layout.variants for name in LEARNED_SINKS)
    forced = sink_positions or [None] * len(token_ids)
    with attention_implementation([model.config.get_text_config()], "eager"), torch.inference_mode():
        return [
            _one_prompt(model, list(ids), options, layout, learned_sink, sinks)
            for ids, sinks in zip(token_ids, forced, strict=True)
        ]


def _one_prompt(
    model: torch.nn.Module,
    ids: list[int],
    options: ProbeOptions,
    layout: AttentionLayout,
    learned_sink: bool,
    forced: torch.Tensor | None,
) -> PromptObservations:
    ids_tensor = torch.tensor([ids], device=input_device(model))
    out = decoder_of(model)(input_ids=ids_tensor, output_attentions=True, use_cache=False)
    attentions = [a[0].cpu().double() for a in out.attentions if a is not None]  # (H, T, T) per layer
    if learned_sink and all(
        bool(torch.allclose(a.sum(-1), torch.ones(()).double(), atol=1e-6)) for a in attentions
    ):
        raise EagerHidesLearnedSink(
            "eager attention returns probabilities without the learned sink's share; compare logits instead"
        )
    by_label = {label: attentions[_row(layout, label, len(attentions))] for label in layout.labels}
    probed = layout.probed(options.num_layers, options.layer_band)
    per_layer = []
    for k, label in enumerate(probed):
        sinks = None if forced is None else forced[k][: by_label[label].shape[0]]
        per_layer.append(_layer_logodds(by_label[label], options, learned_sink, sinks))
    return PromptObservations(
        layers=probed,
        g=stack_heads([g for g, _ in per_layer], float("nan")).float(),
        sink_position=stack_heads([p for _, p in per_layer], -1),
        first_token_attention=stack_heads([a[:, :, 0] for a in by_label.values()], float("nan")).float(),
        attention_layers=list(layout.labels),
    )


def _row(layout: AttentionLayout, label: int, returned: int) -> int:
    """Which of the eager attentions belongs to layer ``label``: eager output has one per attention layer, or,
    in some hybrid models, one per decoder layer."""
    if returned == len(layout.labels):
        return layout.labels.index(label)
    if returned == layout.num_hidden_layers:
        return label
    raise ValueError(f"eager attention returned {returned} layers; the census found {len(layout.labels)}")


def _layer_logodds(
    attention: torch.Tensor, options: ProbeOptions, learned_sink: bool, forced: torch.Tensor | None = None
) -> tuple[torch.Tensor, torch.Tensor]:
    """G per (head, query) from probabilities, with the same exclusions as the probe; with a learned sink a row
    sums to less than one, and the missing mass (the sink's share) counts against the token sink."""
    heads, length, _ = attention.shape
    if forced is not None:
        sink = forced.long()
    elif options.sink_position == "query":
        sink = attention.argmax(dim=-1)  # (H, T)
    elif options.sink_position == "head":
        sink = attention.sum(dim=1).argmax(dim=-1)
    else:
        sink = torch.zeros(heads).long()
    index = sink.unsqueeze(-1) if sink.dim() == 2 else sink[:, None, None].expand(heads, length, 1)
    on_sink = attention.gather(-1, index).squeeze(-1)
    off_sink = attention.scatter(-1, index, 0.0).sum(-1)
    if learned_sink:
        off_sink = off_sink + (1.0 - attention.sum(-1)).clamp(min=0.0)
    g = torch.log(on_sink) - torch.log(off_sink)
    g = g.masked_fill(on_sink == 0, float("nan"))  # masked out (causal or sliding window): not visible
    degenerate = (on_sink > 0) & (off_sink == 0)  # the sink is the only key the query sees: a = 1
    g = g.masked_fill(degenerate, float("inf") if options.keep_degenerate else float("nan"))
    return g, sink
