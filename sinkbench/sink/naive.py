"""The naive route: S from eager attention probabilities (``output_attentions=True``).

It materialises every layer's full ``(H, T, T)`` attention, one prompt at a time, and reads
G straight off the probabilities. It is the independent reference the probe is tested
against and the baseline ``benchmarks/bench_sink.py`` times. Not for production use.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch

from sinkbench.sink.observe import encode_prompts, probed_layers
from sinkbench.sink.options import ProbeOptions
from sinkbench.sink.strength import PromptObservations


def naive_observations(
    model: torch.nn.Module, tokenizer: Any, prompts: Sequence[str], options: ProbeOptions | None = None
) -> list[PromptObservations]:
    """Per-prompt observations computed from materialised eager attention (batch size 1)."""
    options = options or ProbeOptions()
    return naive_observations_tokens(
        model, encode_prompts(tokenizer, prompts, options.chat_template), options
    )


def naive_observations_tokens(
    model: torch.nn.Module, token_ids: Sequence[Sequence[int]], options: ProbeOptions
) -> list[PromptObservations]:
    """``naive_observations`` on already tokenized prompts."""
    previous = model.config._attn_implementation
    model.config._attn_implementation = "eager"
    try:
        with torch.inference_mode():
            return [_one_prompt(model, list(ids), options) for ids in token_ids]
    finally:
        model.config._attn_implementation = previous


def _one_prompt(model: torch.nn.Module, ids: list[int], options: ProbeOptions) -> PromptObservations:
    backbone = getattr(model, model.base_model_prefix)
    out = backbone(input_ids=torch.tensor([ids]), output_attentions=True, use_cache=False)
    attentions = [a[0].double() for a in out.attentions]  # each (H, T, T)
    layers = probed_layers(len(attentions), options.num_layers)
    per_layer = [_layer_logodds(attentions[layer], options) for layer in layers]
    return PromptObservations(
        layers=layers,
        g=torch.stack([g for g, _ in per_layer]).float(),
        sink_position=torch.stack([p for _, p in per_layer]),
        first_token_attention=torch.stack([a[:, :, 0] for a in attentions]).float(),
    )


def _layer_logodds(attention: torch.Tensor, options: ProbeOptions) -> tuple[torch.Tensor, torch.Tensor]:
    """G per (head, query) from probabilities, with the same exclusions as the probe."""
    heads, length, _ = attention.shape
    queries = torch.arange(length)
    if options.sink_position == "query":
        sink = attention.argmax(dim=-1)  # (H, T)
        index = sink.unsqueeze(-1)
    else:
        sink = (
            attention.sum(dim=1).argmax(dim=-1)
            if options.sink_position == "head"
            else torch.zeros(heads).long()
        )
        index = sink[:, None, None].expand(heads, length, 1)
    on_sink = attention.gather(-1, index).squeeze(-1)
    off_sink = attention.scatter(-1, index, 0.0).sum(-1)
    g = torch.log(on_sink) - torch.log(off_sink)
    g = g.masked_fill(on_sink == 0, float("nan"))  # masked out (causal or sliding window): not visible
    degenerate = queries[None, :].expand(heads, length) == 0
    g = g.masked_fill(degenerate, float("inf") if options.keep_degenerate else float("nan"))
    return g, sink
