"""Tiny random-init VLMs of every family the board uses, saved with the tiny tokenizer (no network)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from tiny_models import tiny_tokenizer

if TYPE_CHECKING:
    import torch
    from transformers import PretrainedConfig

VOCAB = 320  # the tiny tokenizer's 300 tokens, then image/video placeholder ids
TEXT = {"vocab_size": VOCAB, "hidden_size": 32, "intermediate_size": 64, "num_hidden_layers": 3}
HEADS = {"num_attention_heads": 4, "num_key_value_heads": 2}
MROPE = {"rope_type": "default", "rope_theta": 10000.0, "mrope_section": [2, 1, 1]}
SPECIAL_IDS = {"bos_token_id": 1, "eos_token_id": 2}
QWEN_VL_TOKENS = {
    "image_token_id": 316,
    "video_token_id": 317,
    "vision_start_token_id": 318,
    "vision_end_token_id": 319,
}
SMALL_VISION = {"hidden_size": 16, "intermediate_size": 32, "num_hidden_layers": 1, "num_attention_heads": 2}
CLIP = {"model_type": "clip_vision_model", "image_size": 28, "patch_size": 14, **SMALL_VISION}
SIGLIP = {"model_type": "siglip_vision_model", "image_size": 28, "patch_size": 14, **SMALL_VISION}
QWEN_VISION = {"depth": 1, "hidden_size": 16, "intermediate_size": 32, "num_heads": 2, "out_hidden_size": 32}


def _text(model_type: str | None = None, **extra) -> dict:
    """A tiny text config; ``model_type`` only for families whose text config is the LLM's own."""
    config = {**TEXT, **HEADS, **extra}
    return {"model_type": model_type, **config} if model_type else config


def vlm_config(model_type: str, tie: bool = False) -> PretrainedConfig:
    """A tiny config of each supported family (text backbones as the real checkpoints use)."""
    from transformers import (
        Idefics3Config,
        InternVLConfig,
        LlavaConfig,
        LlavaNextConfig,
        LlavaOnevisionConfig,
        Qwen2_5_VLConfig,
        Qwen2VLConfig,
        Qwen3VLConfig,
    )

    builders = {
        "llava": lambda: LlavaConfig(text_config=_text("llama"), vision_config=CLIP, image_token_index=319),
        "llava_next": lambda: LlavaNextConfig(
            text_config=_text("mistral"), vision_config=CLIP, image_token_index=319
        ),
        "llava_onevision": lambda: LlavaOnevisionConfig(
            text_config=_text("qwen2"), vision_config=SIGLIP, image_token_index=318, video_token_index=319
        ),
        "qwen2_vl": lambda: Qwen2VLConfig(
            text_config=_text(rope_parameters=MROPE, **SPECIAL_IDS),
            vision_config={"depth": 1, "embed_dim": 16, "hidden_size": 32, "num_heads": 2},
            **QWEN_VL_TOKENS,
        ),
        "qwen2_5_vl": lambda: Qwen2_5_VLConfig(
            text_config=_text(rope_parameters=MROPE, **SPECIAL_IDS),
            vision_config={**QWEN_VISION, "fullatt_block_indexes": [0]},
            **QWEN_VL_TOKENS,
        ),
        "qwen3_vl": lambda: Qwen3VLConfig(
            text_config=_text(head_dim=8, rope_parameters={**MROPE, "mrope_interleaved": True}),
            vision_config={**QWEN_VISION, "deepstack_visual_indexes": [0], "num_position_embeddings": 16},
            **QWEN_VL_TOKENS,
        ),
        "internvl": lambda: InternVLConfig(
            text_config=_text("qwen3", head_dim=8),
            vision_config={"image_size": 28, "patch_size": 14, **SMALL_VISION},
            image_token_id=319,
        ),
        "idefics3": lambda: Idefics3Config(
            text_config=_text("llama"),
            vision_config={"image_size": 28, "patch_size": 14, **SMALL_VISION},
            image_token_id=319,
        ),
    }
    config = builders[model_type]()
    config.tie_word_embeddings = tie
    return config


def randomize(model: torch.nn.Module, seed: int) -> None:
    """Give every weight O(1) spread so that a wrong tensor or wrong RoPE moves logits far above 1e-4."""
    import torch

    generator = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, parameter in model.named_parameters():
            noise = torch.randn(parameter.shape, generator=generator)
            is_norm = "norm" in name and parameter.dim() == 1
            parameter.copy_(1.0 + 0.2 * noise if is_norm else 0.3 * noise)


def save_tiny_vlm(path: Path, model_type: str, *, tie: bool = False, seed: int = 0, **save_kwargs) -> Path:
    """Build, randomise and save a tiny VLM with the tiny tokenizer; return its directory."""
    from transformers import AutoModelForImageTextToText

    model = AutoModelForImageTextToText.from_config(vlm_config(model_type, tie))
    randomize(model, seed)
    model.save_pretrained(path, **save_kwargs)
    tiny_tokenizer().save_pretrained(path)
    return path


#: The families the board's pairs and the paper use, each with a hand-made tiny config below (the registry-wide
#: sweep in tests/conformance/test_conformance.py covers the rest).
FAMILY_TYPES = [
    "llava",
    "llava_next",
    "llava_onevision",
    "qwen2_vl",
    "qwen2_5_vl",
    "qwen3_vl",
    "internvl",
    "idefics3",
]
