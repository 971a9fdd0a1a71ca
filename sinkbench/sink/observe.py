"""Run the Sink Strength probe over calibration prompts: tokenise, batch, pad, record observations.

The options and the reasoning behind each default are in :mod:`sinkbench.sink.options`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch

from sinkbench.sink.attention import SinkRecorder, probe_mode, recording
from sinkbench.sink.layers import AttentionLayout, attention_layout, decoder_of, input_device
from sinkbench.sink.options import ProbeOptions
from sinkbench.sink.strength import PromptObservations, SinkStrengthSummary, stack_heads, summarize


def encode_prompts(tokenizer: Any, prompts: Sequence[str], chat_template: str = "auto") -> list[list[int]]:
    """Token ids per prompt, wrapped as a user turn when the chat template is used."""
    has_template = bool(getattr(tokenizer, "chat_template", None))
    if chat_template == "on" and not has_template:
        raise ValueError("chat_template='on' but the tokenizer has no chat template; use 'auto' or 'off'.")
    if chat_template == "off" or not has_template:
        return [tokenizer(prompt).input_ids for prompt in prompts]
    texts = [
        tokenizer.apply_chat_template(
            [{"role": "user", "content": p}], tokenize=False, add_generation_prompt=True
        )
        for p in prompts
    ]
    return [tokenizer(text, add_special_tokens=False).input_ids for text in texts]


def observe(
    model: torch.nn.Module,
    tokenizer: Any,
    prompts: Sequence[str],
    options: ProbeOptions | None = None,
    *,
    sink_positions: Sequence[torch.Tensor] | None = None,
    progress: bool = False,
) -> list[PromptObservations]:
    """Probe every prompt; one ``PromptObservations`` per prompt, in order. ``sink_positions``: optional
    per-prompt ``(K, H)`` sink positions (e.g. another model's) to measure G at instead of detecting p_sink."""
    options = options or ProbeOptions()
    encoded = encode_prompts(tokenizer, prompts, options.chat_template)
    return observe_tokens(model, encoded, options, sink_positions=sink_positions, progress=progress)


def observe_tokens(
    model: torch.nn.Module,
    token_ids: Sequence[Sequence[int]],
    options: ProbeOptions,
    *,
    sink_positions: Sequence[torch.Tensor] | None = None,
    progress: bool = False,
    layout: AttentionLayout | None = None,
) -> list[PromptObservations]:
    """``observe`` on already tokenized prompts; ``layout``: the model's
    :func:`~sinkbench.sink.layers.attention_layout` if the caller has it (else a census of the first prompt).
    ModelNotSupported, naming the model type and the reason, when the model cannot be measured."""
    if not token_ids:
        raise ValueError("No prompts to observe.")
    too_long = [i for i, ids in enumerate(token_ids) if len(ids) > options.max_tokens]
    if too_long:
        raise ValueError(
            f"Prompts {too_long} exceed max_tokens={options.max_tokens}; shorten them or raise it."
        )
    if sink_positions is not None and len(sink_positions) != len(token_ids):
        raise ValueError(f"sink_positions has {len(sink_positions)} entries for {len(token_ids)} prompts.")
    layout = layout or attention_layout(model, token_ids[0])
    layers = layout.probed(options.num_layers, options.layer_band)
    from tqdm.auto import tqdm

    results: list[PromptObservations] = []
    starts = range(0, len(token_ids), options.batch_size)
    with probe_mode(model), torch.inference_mode():
        for start in tqdm(starts, desc="Sink Strength", unit="batch", disable=not progress):
            stop = start + options.batch_size
            forced = None if sink_positions is None else sink_positions[start:stop]
            batch = [list(t) for t in token_ids[start:stop]]
            results.extend(_observe_batch(model, batch, layout, layers, options, forced))
    return results


def _observe_batch(
    model: torch.nn.Module,
    batch: list[list[int]],
    layout: AttentionLayout,
    layers: list[int],
    options: ProbeOptions,
    forced: Sequence[torch.Tensor] | None,
) -> list[PromptObservations]:
    device = input_device(model)
    ids, valid, offsets = _pad(batch, options.padding_side, device)
    recorder = SinkRecorder(
        probed_layers=frozenset(layers),
        sink_mode=options.sink_position,
        query_valid=valid,
        labels=layout.labels,
        keep_degenerate=options.keep_degenerate,
        forced_sinks=_forced_by_layer(forced, layers, offsets, device),
        use_flash_kernel=options.use_flash_kernel,
    )
    with recording(recorder):
        decoder_of(model)(
            input_ids=ids, attention_mask=valid.long(), use_cache=False, **_positions(valid, options)
        )
    return [_split(recorder, layout, layers, b, offsets[b], len(tokens)) for b, tokens in enumerate(batch)]


def _positions(valid: torch.Tensor, options: ProbeOptions) -> dict[str, torch.Tensor]:
    """Explicit position ids for left padding (each real token keeps its unpadded position); right padding leaves
    them to the model (RoBERTa-style models number positions after the pad id)."""
    if options.padding_side == "right":
        return {}
    return {"position_ids": (valid.long().cumsum(-1) - 1).clamp(min=0)}


def _pad(
    batch: list[list[int]], side: str, device: torch.device
) -> tuple[torch.Tensor, torch.Tensor, list[int]]:
    """Pad token lists to one length; returns ids, validity mask and each sequence's offset."""
    width = max(len(tokens) for tokens in batch)
    ids = torch.zeros((len(batch), width), dtype=torch.long)
    valid = torch.zeros((len(batch), width), dtype=torch.bool)
    offsets = [0 if side == "right" else width - len(tokens) for tokens in batch]
    for row, (tokens, offset) in enumerate(zip(batch, offsets, strict=True)):
        ids[row, offset : offset + len(tokens)] = torch.tensor(tokens)
        valid[row, offset : offset + len(tokens)] = True
    return ids.to(device), valid.to(device), offsets


def _forced_by_layer(
    forced: Sequence[torch.Tensor] | None, layers: list[int], offsets: list[int], device: torch.device
) -> dict[int, torch.Tensor] | None:
    if forced is None:
        return None
    shifted = [f.long() + offset for f, offset in zip(forced, offsets, strict=True)]
    stacked = torch.stack(shifted).to(device)  # (B, K, H)
    if stacked.shape[1] != len(layers):
        raise ValueError(f"sink_positions cover {stacked.shape[1]} layers; this probe covers {len(layers)}.")
    return {layer: stacked[:, i] for i, layer in enumerate(layers)}


def _split(
    recorder: SinkRecorder, layout: AttentionLayout, layers: list[int], row: int, offset: int, length: int
) -> PromptObservations:
    """One prompt's observations, cut back to its own tokens and positions (heads padded to the widest layer)."""
    window = slice(offset, offset + length)
    sinks = [recorder.layers[layer].sink_position[row] - offset for layer in layers]
    return PromptObservations(
        layers=list(layers),
        g=stack_heads([recorder.layers[layer].g[row, :, window] for layer in layers], float("nan")),
        sink_position=stack_heads([s[..., window] if s.dim() == 2 else s for s in sinks], -1),
        first_token_attention=stack_heads(
            [recorder.first_token_attention[label][row, :, window] for label in layout.labels], float("nan")
        ),
        attention_layers=list(layout.labels),
        context={
            "attention_layers": len(layout.labels),
            "decoder_layers": layout.num_hidden_layers,
            "variants": list(layout.variants),
            "kernel": ", ".join(sorted(recorder.kernels)),
        },
    )


def measure(
    model: torch.nn.Module,
    tokenizer: Any,
    prompts: Sequence[str],
    options: ProbeOptions | None = None,
    *,
    progress: bool = False,
) -> tuple[SinkStrengthSummary, list[PromptObservations]]:
    """Probe the prompts and summarise: S, the K x H profile and the secondary metrics."""
    observations = observe(model, tokenizer, prompts, options, progress=progress)
    return summarize(observations), observations
