"""Tiny random-init models and an offline tokenizer for fast tests (no network)."""

from __future__ import annotations

from pathlib import Path

import torch
from transformers import (
    Gemma3TextConfig,
    LlamaConfig,
    MistralConfig,
    Olmo2Config,
    Qwen2Config,
    Qwen3Config,
)

from sinkbench.conformance.tiny import CHAT_TEMPLATE, CORPUS, tiny_tokenizer

__all__ = ["CHAT_TEMPLATE", "CONFIGS", "CORPUS", "save_tiny_model", "tiny_causal_lm", "tiny_tokenizer"]

SMALL = {
    "hidden_size": 32,
    "intermediate_size": 64,
    "num_hidden_layers": 4,
    "num_attention_heads": 4,
    "pad_token_id": 0,
    "bos_token_id": 1,
    "eos_token_id": 2,
}
CONFIGS = {
    "llama": lambda v: LlamaConfig(vocab_size=v, num_key_value_heads=2, **SMALL),
    "mistral": lambda v: MistralConfig(vocab_size=v, num_key_value_heads=2, sliding_window=None, **SMALL),
    "qwen2": lambda v: Qwen2Config(vocab_size=v, num_key_value_heads=2, **SMALL),
    "qwen3": lambda v: Qwen3Config(vocab_size=v, num_key_value_heads=2, head_dim=8, **SMALL),
    "gemma3_text": lambda v: Gemma3TextConfig(
        vocab_size=v, num_key_value_heads=1, head_dim=8, sliding_window=6, layer_types=None, **SMALL
    ),
    "olmo2": lambda v: Olmo2Config(vocab_size=v, num_key_value_heads=2, **SMALL),
}


def tiny_causal_lm(model_type: str, seed: int = 0) -> torch.nn.Module:
    """A 4-layer random-init causal LM of the given architecture, float32, eval mode."""
    from transformers import AutoModelForCausalLM

    torch.manual_seed(seed)
    config = CONFIGS[model_type](len(tiny_tokenizer()))
    return AutoModelForCausalLM.from_config(config, dtype=torch.float32).eval()


def save_tiny_model(directory: Path, model_type: str = "llama", seed: int = 0) -> Path:
    """Save a tiny model and its tokenizer as a transformers directory; returns it."""
    tiny_causal_lm(model_type, seed).save_pretrained(directory)
    tiny_tokenizer().save_pretrained(directory)
    return directory
