"""Did stage 2 move the sink? Each head's attention on the first token, before and after, on text and with an image.

:func:`first_token_attention` keeps, per prompt, each language-model head's attention on the first token averaged
over the last :data:`~sinkbench.sink.metrics.LAST_QUERIES` queries (the paper's C.3 probe, per head), one prompt at
a time with eager attention; :func:`sink_shift` pairs two such measurements prompt by prompt (before and after stage
2) and gives the change over every head and over the sink heads, with bootstrap intervals over prompts.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import torch

from experiments.vl_testbed.scenes import QuestionItem
from experiments.vl_testbed.verdicts import HEAD_SHIFT
from experiments.vl_testbed.vlm import encode, pixel_values
from sinkbench.sink.metrics import LAST_QUERIES
from sinkbench.stats.resampling import N_RESAMPLES, bootstrap, percentile_interval

#: Resamples of the per-head intervals (every head at once: a (resamples, prompts, layers, heads) array).
HEAD_RESAMPLES = 999

Prompt = tuple[list[int], "np.ndarray | None"]


def text_prompts(tokenizer: Any) -> list[Prompt]:
    """The probe's default calibration prompts as user turns in the chat template, without an image."""
    from sinkbench.sink.observe import encode_prompts
    from sinkbench.sink.prompts import load_prompts

    return [(ids, None) for ids in encode_prompts(tokenizer, load_prompts(), "auto")]


def image_prompts(tokenizer: Any, items: Sequence[QuestionItem], image_tokens: int) -> list[Prompt]:
    """Held-out scene questions with their image, as the generation prompt of a user turn."""
    return [
        (
            encode(tokenizer, [{"role": "user", "content": item.question}], image_tokens, generation=True)[0],
            item.image,
        )
        for item in items
    ]


def first_token_attention(vlm: torch.nn.Module, prompts: Sequence[Prompt]) -> np.ndarray:
    """``(prompts, layers, heads)`` attention on the first token, averaged over each prompt's last queries."""
    previous = vlm.config._attn_implementation
    vlm.set_attn_implementation("eager")
    device = next(vlm.parameters()).device
    rows = []
    try:
        with torch.inference_mode():
            for ids, image in prompts:
                inputs: dict[str, torch.Tensor] = {"input_ids": torch.tensor([ids], device=device)}
                if image is not None:
                    inputs["pixel_values"] = pixel_values([image]).to(device)
                attentions = vlm(**inputs, output_attentions=True).attentions
                rows.append(
                    torch.stack([a[0, :, -LAST_QUERIES:, 0].float().mean(-1) for a in attentions])
                    .cpu()
                    .numpy()
                )
    finally:
        vlm.set_attn_implementation(previous)
    return np.stack(rows)


def _mean_and_interval(values: np.ndarray, seed: int) -> dict[str, Any]:
    replicates = bootstrap(np.mean, values, resamples=N_RESAMPLES, seed=seed)
    low, high = percentile_interval(replicates, 0.95)
    return {"mean": round(float(values.mean()), 5), "ci": [round(low, 5), round(high, 5)]}


def sink_shift(
    before: np.ndarray, after: np.ndarray, sink_heads: Sequence[Sequence[int]], *, seed: int = 0
) -> dict[str, Any]:
    """How the first-token attention changed from ``before`` to ``after`` (both ``(prompts, layers, heads)``,
    paired by prompt): the level before and after and the change, over every head and over ``sink_heads``
    (``[layer, head]`` pairs), with 95% percentile bootstrap intervals over prompts; the heads whose change
    reaches :data:`HEAD_SHIFT` with an interval that excludes zero; and each head's mean change.

    Raises:
        ValueError: the two measurements differ in shape.
    """
    if before.shape != after.shape:
        raise ValueError(f"before {before.shape} and after {after.shape} must be paired measurements")
    delta = after - before
    layers, heads = np.asarray(sink_heads, dtype=int).reshape(-1, 2).T
    rows = np.random.default_rng(seed).integers(0, len(delta), size=(HEAD_RESAMPLES, len(delta)))
    per_head = delta.mean(0)
    replicates = delta[rows].mean(1)  # (resamples, layers, heads)
    low, high = np.percentile(replicates, [2.5, 97.5], axis=0)
    moved = (np.abs(per_head) >= HEAD_SHIFT) & ((low > 0) | (high < 0))
    return {
        "prompts": len(delta),
        "every_head": {
            "before": round(float(before.mean()), 5),
            "after": round(float(after.mean()), 5),
            "change": _mean_and_interval(delta.mean((1, 2)), seed),
        },
        "sink_heads": {
            "before": round(float(before[:, layers, heads].mean()), 5),
            "after": round(float(after[:, layers, heads].mean()), 5),
            "change": _mean_and_interval(delta[:, layers, heads].mean(1), seed),
        },
        "heads_moved": int(moved.sum()),
        "heads": int(per_head.size),
        "largest_change": round(float(per_head.flat[np.abs(per_head).argmax()]), 5),
        "per_head_change": np.round(per_head, 4).tolist(),
    }
