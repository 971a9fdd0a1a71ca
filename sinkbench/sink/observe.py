"""Run the Sink Strength probe over calibration prompts: tokenise, batch, pad, record observations.

The options and the reasoning behind each default are in :mod:`sinkbench.sink.options`.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import torch

from sinkbench.sink.attention import SinkRecorder, register_probe_attention
from sinkbench.sink.options import ProbeOptions
from sinkbench.sink.strength import PromptObservations, SinkStrengthSummary, summarize

SUPPORTED_MODEL_TYPES = {
    "llama": "Llama",
    "mistral": "Mistral",
    "qwen2": "Qwen2 / Qwen2.5",
    "qwen3": "Qwen3",
    "gemma3_text": "Gemma 3",
    "olmo2": "OLMo 2",
}


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


def check_supported(model: torch.nn.Module) -> None:
    """Raise a clear error unless the model is a supported decoder-only architecture."""
    model_type = getattr(getattr(model, "config", None), "model_type", None)
    if model_type not in SUPPORTED_MODEL_TYPES:
        names = ", ".join(f"{v} ({k})" for k, v in SUPPORTED_MODEL_TYPES.items())
        raise ValueError(f"Sink Strength does not support model type {model_type!r}. Supported: {names}.")


def probed_layers(num_hidden_layers: int, num_layers: int) -> list[int]:
    """The last ``num_layers`` decoder layers (all of them when the model is shallower)."""
    return list(range(max(0, num_hidden_layers - num_layers), num_hidden_layers))


@contextmanager
def probe_mode(model: torch.nn.Module) -> Iterator[None]:
    """Route the model's attention through the probe for the duration of the block."""
    name = register_probe_attention()
    configs = {id(c): c for c in (model.config, model.config.get_text_config())}.values()
    saved = [(config, config._attn_implementation) for config in configs]
    try:
        for config, _ in saved:
            config._attn_implementation = name
        yield
    finally:
        for config, previous in saved:
            config._attn_implementation = previous


def observe(
    model: torch.nn.Module,
    tokenizer: Any,
    prompts: Sequence[str],
    options: ProbeOptions | None = None,
    *,
    sink_positions: Sequence[torch.Tensor] | None = None,
    progress: bool = False,
) -> list[PromptObservations]:
    """Probe every prompt; one ``PromptObservations`` per prompt, in order.

    Args:
        sink_positions: optional per-prompt ``(K, H)`` sink positions (e.g. another model's
            ``obs.sink_position``) to measure G at instead of detecting p_sink.
        progress: show a tqdm progress bar.
    """
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
) -> list[PromptObservations]:
    """``observe`` on already tokenized prompts."""
    check_supported(model)
    too_long = [i for i, ids in enumerate(token_ids) if len(ids) > options.max_tokens]
    if too_long:
        raise ValueError(
            f"Prompts {too_long} exceed max_tokens={options.max_tokens}; shorten them or raise it."
        )
    if sink_positions is not None and len(sink_positions) != len(token_ids):
        raise ValueError(f"sink_positions has {len(sink_positions)} entries for {len(token_ids)} prompts.")
    layers = probed_layers(model.config.get_text_config().num_hidden_layers, options.num_layers)
    from tqdm.auto import tqdm

    results: list[PromptObservations] = []
    starts = range(0, len(token_ids), options.batch_size)
    with probe_mode(model), torch.inference_mode():
        for start in tqdm(starts, desc="Sink Strength", unit="batch", disable=not progress):
            stop = start + options.batch_size
            forced = None if sink_positions is None else sink_positions[start:stop]
            results.extend(
                _observe_batch(model, [list(t) for t in token_ids[start:stop]], layers, options, forced)
            )
    return results


def _observe_batch(
    model: torch.nn.Module,
    batch: list[list[int]],
    layers: list[int],
    options: ProbeOptions,
    forced: Sequence[torch.Tensor] | None,
) -> list[PromptObservations]:
    device = model.get_input_embeddings().weight.device
    ids, valid, offsets = _pad(batch, options.padding_side, device)
    positions = (valid.long().cumsum(-1) - 1).clamp(min=0)
    recorder = SinkRecorder(
        probed_layers=frozenset(layers),
        sink_mode=options.sink_position,
        query_valid=valid,
        keep_degenerate=options.keep_degenerate,
        forced_sinks=_forced_by_layer(forced, layers, offsets, device),
        use_flash_kernel=options.use_flash_kernel,
    )
    backbone = getattr(model, model.base_model_prefix)
    backbone(
        input_ids=ids,
        attention_mask=valid.long(),
        position_ids=positions,
        use_cache=False,
        sink_recorder=recorder,
    )
    return [_split(recorder, layers, b, offsets[b], len(tokens)) for b, tokens in enumerate(batch)]


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
    stacked = torch.stack([f.long() + offset for f, offset in zip(forced, offsets, strict=True)]).to(
        device
    )  # (B, K, H)
    if stacked.shape[1] != len(layers):
        raise ValueError(f"sink_positions cover {stacked.shape[1]} layers; this probe covers {len(layers)}.")
    return {layer: stacked[:, i] for i, layer in enumerate(layers)}


def _split(
    recorder: SinkRecorder, layers: list[int], row: int, offset: int, length: int
) -> PromptObservations:
    """One prompt's observations, cut back to its own tokens and positions."""
    window = slice(offset, offset + length)
    sinks = torch.stack([recorder.layers[layer].sink_position[row] for layer in layers]) - offset
    if sinks.dim() == 3:
        sinks = sinks[..., window]
    first = torch.stack(
        [
            recorder.first_token_attention[layer][row, :, window]
            for layer in sorted(recorder.first_token_attention)
        ]
    )
    return PromptObservations(
        layers=list(layers),
        g=torch.stack([recorder.layers[layer].g[row, :, window] for layer in layers]),
        sink_position=sinks,
        first_token_attention=first,
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
