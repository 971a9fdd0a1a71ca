"""A miniature LLaVA: a causal LM, a small CLIP vision encoder trained from scratch and LLaVA's projector.

:func:`build_vlm` wraps a causal LM (weights copied unchanged) into a standard ``LlavaForConditionalGeneration``
with an ``<image>`` token added to its tokenizer, so ``sinkbench extract-lm``, the monitor and ``from_pretrained``
treat it as any LLaVA; :func:`save_vlm` writes it with a ``LlavaProcessor`` whose output :func:`encode` and
:func:`pixel_values` reproduce (tested). :func:`encode` labels the assistant turns only (text and end-of-turn token).
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import torch

from experiments.vl_testbed.scenes import IMAGE_TOKEN
from experiments.vl_testbed.specs import VisionSpec

#: Label of positions that do not enter the loss (PyTorch's cross-entropy ``ignore_index``).
IGNORE = -100


def add_image_token(tokenizer: Any) -> int:
    """Add :data:`IMAGE_TOKEN` as a special token (once) and return its id."""
    from tokenizers import AddedToken

    if IMAGE_TOKEN not in tokenizer.get_vocab():
        tokenizer.add_tokens([AddedToken(IMAGE_TOKEN, special=True, normalized=False)])
    return tokenizer.convert_tokens_to_ids(IMAGE_TOKEN)


def build_vlm(lm: torch.nn.Module, tokenizer: Any, vision: VisionSpec, *, seed: int = 0) -> torch.nn.Module:
    """A LLaVA around ``lm`` (weights copied; ``tokenizer`` gains the image token); vision and projector random.

    ``seed`` initialises the vision encoder and the projector (its output layer scaled by
    ``vision.projector_scale``). The result computes the same text-only logits as ``lm`` (tested).
    """
    from transformers import LlavaConfig, LlavaForConditionalGeneration

    image_token = add_image_token(tokenizer)
    text_config = copy.deepcopy(lm.config)
    text_config.vocab_size = len(tokenizer)
    tie = bool(lm.config.tie_word_embeddings)
    config = LlavaConfig(
        vision_config=vision.config(),
        text_config=text_config,
        image_token_index=image_token,
        image_seq_length=vision.image_tokens,
        vision_feature_layer=-1,
        vision_feature_select_strategy="default",
        tie_word_embeddings=tie,
    )
    torch.manual_seed(seed)
    vlm = LlavaForConditionalGeneration(config).to(next(lm.parameters()).dtype)
    if vision.projector_scale != 1.0:
        with torch.no_grad():
            for tensor in vlm.model.multi_modal_projector.linear_2.parameters():
                tensor.mul_(vision.projector_scale)
    state = lm.model.state_dict()
    added = len(tokenizer) - state["embed_tokens.weight"].shape[0]
    state["embed_tokens.weight"] = _grow(state["embed_tokens.weight"], added)
    vlm.model.language_model.load_state_dict(state)
    if tie:
        vlm.tie_weights()
    else:
        with torch.no_grad():
            vlm.lm_head.weight.copy_(_grow(lm.lm_head.weight.detach(), added))
    return vlm.eval()


def _grow(weight: torch.Tensor, rows: int) -> torch.Tensor:
    """``weight`` with ``rows`` more rows, each the mean of the existing ones."""
    return torch.cat([weight, weight.mean(0, keepdim=True).expand(rows, -1)]) if rows else weight


def _template(tokenizer: Any, messages: Sequence[dict[str, str]], generation: bool = False) -> str:
    return tokenizer.apply_chat_template(list(messages), tokenize=False, add_generation_prompt=generation)


def encode(
    tokenizer: Any, messages: Sequence[dict[str, str]], image_tokens: int, *, generation: bool = False
) -> tuple[list[int], list[int]]:
    """Token ids of a chat (image token repeated ``image_tokens`` times) and labels of its assistant turns.

    With ``generation``, the chat ends with a user turn and the ids end with the assistant's header.

    Raises:
        ValueError: the chat template renders a shorter chat as something other than a prefix of a longer one
            (the assistant spans could not be found).
    """
    text = _template(tokenizer, messages, generation)
    spans = []
    for index, message in enumerate(messages):
        if message["role"] != "assistant":
            continue
        start = _template(tokenizer, messages[:index], True)
        end = _template(tokenizer, messages[: index + 1])
        if not (text.startswith(end) and end.startswith(start)):
            raise ValueError("The chat template does not render conversations prefix by prefix.")
        spans.append((len(start), len(end)))
    encoded = tokenizer(text, add_special_tokens=False, return_offsets_mapping=True)
    image_token = tokenizer.convert_tokens_to_ids(IMAGE_TOKEN)
    ids, labels = [], []
    for token, (first, _) in zip(encoded.input_ids, encoded.offset_mapping, strict=True):
        if token == image_token:
            ids += [token] * image_tokens
            labels += [IGNORE] * image_tokens
            continue
        ids.append(token)
        labels.append(token if any(a <= first < b for a, b in spans) else IGNORE)
    return ids, labels


def pixel_values(images: np.ndarray | Sequence[np.ndarray]) -> torch.Tensor:
    """``(N, 3, H, W)`` model input from ``(H, W, 3)`` images in [0, 1]: 8-bit quantised, scaled to [-1, 1].

    This is what the saved CLIP image processor (mean = std = 0.5) does to the 8-bit image.
    """
    quantised = np.round(np.stack(list(images)) * 255.0) / 255.0
    return torch.from_numpy(((quantised - 0.5) / 0.5).transpose(0, 3, 1, 2).astype(np.float32))


def processor_for(tokenizer: Any, vision: VisionSpec) -> Any:
    """The ``LlavaProcessor`` a user loads with the checkpoint (CLIP image processor, mean = std = 0.5)."""
    from transformers import CLIPImageProcessorPil, LlavaProcessor

    image_processor = CLIPImageProcessorPil(
        size={"shortest_edge": vision.image_size},
        crop_size={"height": vision.image_size, "width": vision.image_size},
        image_mean=[0.5, 0.5, 0.5],
        image_std=[0.5, 0.5, 0.5],
    )
    return LlavaProcessor(
        image_processor=image_processor,
        tokenizer=tokenizer,
        patch_size=vision.patch_size,
        vision_feature_select_strategy="default",
        num_additional_image_tokens=1,
        chat_template=tokenizer.chat_template,
        image_token=IMAGE_TOKEN,
    )


def save_vlm(vlm: torch.nn.Module, tokenizer: Any, vision: VisionSpec, out: Path) -> Path:
    """Write the VLM, its tokenizer and its processor as one transformers directory; returns ``out``."""
    out.mkdir(parents=True, exist_ok=True)
    vlm.save_pretrained(out)
    tokenizer.save_pretrained(out)
    processor_for(tokenizer, vision).save_pretrained(out)
    return out
