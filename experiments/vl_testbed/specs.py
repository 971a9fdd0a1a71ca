"""The testbed recipe's plain settings: one training stage and the shape of the vision encoder. No torch here, so
the results schema (:mod:`experiments.vl_testbed.schema`) and the site that reads it load without it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class StageSpec:
    """One training stage.

    Attributes:
        steps: optimizer steps (each example is seen once: the stage has ``steps * batch_size`` examples).
        batch_size: chats per step.
        lr: peak learning rate (AdamW, no weight decay, gradients clipped at norm 1).
        warmup: fraction of the steps with linear warmup; then a cosine decay to zero.
        train_lm: whether the language model trains (stage 2) or stays frozen (stage 1).
        bf16: bfloat16 mixed precision (float32 master weights), as LLaVA trains.
    """

    steps: int
    batch_size: int
    lr: float
    warmup: float
    train_lm: bool
    bf16: bool = True


@dataclass(frozen=True)
class VisionSpec:
    """The vision encoder: a CLIP vision transformer small enough to train from scratch in minutes. The default
    cuts a 32-pixel image into 2 x 2 patches of 16 pixels, one per cell of the scenes' grid: four image tokens.

    Attributes:
        image_size, patch_size: sides of the square input image and of a patch, in pixels.
        hidden_size, intermediate_size, layers, heads: the transformer's shape.
        projector_scale: multiplies the projector's output layer at initialisation, so the image tokens enter the
            LM this many times larger (real CLIP features projected into an LM carry far larger norms than its text
            embeddings); 1 leaves it as transformers initialises it.
    """

    image_size: int = 32
    patch_size: int = 16
    hidden_size: int = 128
    intermediate_size: int = 512
    layers: int = 2
    heads: int = 4
    projector_scale: float = 1.0

    @property
    def image_tokens(self) -> int:
        """Image tokens per image (CLIP's class token is dropped, LLaVA's ``default`` strategy)."""
        return (self.image_size // self.patch_size) ** 2

    def config(self) -> Any:
        """The ``CLIPVisionConfig``."""
        from transformers import CLIPVisionConfig

        return CLIPVisionConfig(
            hidden_size=self.hidden_size,
            intermediate_size=self.intermediate_size,
            num_hidden_layers=self.layers,
            num_attention_heads=self.heads,
            image_size=self.image_size,
            patch_size=self.patch_size,
        )
