"""Did the VLM learn its visual task? Accuracy on held-out scenes against chance: each question's answer is the
candidate word of its kind whose first token the VLM rates highest as its reply's first token.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import torch

from experiments.vl_testbed.scenes import ANSWERS, QuestionItem
from experiments.vl_testbed.vlm import encode, pixel_values


def first_tokens(tokenizer: Any) -> dict[str, dict[str, int]]:
    """Per kind, each candidate answer's first token id.

    Raises:
        ValueError: two candidates of one kind share their first token (their choice could not be read).
    """
    found = {}
    for kind, words in ANSWERS.items():
        ids = {word: tokenizer(word, add_special_tokens=False).input_ids[0] for word in words}
        if len(set(ids.values())) != len(ids):
            raise ValueError(f"Answers of kind {kind!r} share a first token in this tokenizer: {ids}.")
        found[kind] = ids
    return found


def visual_accuracy(
    vlm: torch.nn.Module,
    tokenizer: Any,
    items: Sequence[QuestionItem],
    image_tokens: int,
    batch_size: int = 24,
    dtype: torch.dtype = torch.bfloat16,
) -> dict[str, Any]:
    """Accuracy per question kind and overall, with chance, on ``items`` (right-padded batches, no grad; bfloat16
    autocast unless ``dtype`` is float32)."""
    candidates = first_tokens(tokenizer)
    correct: dict[str, list[bool]] = {kind: [] for kind in ANSWERS}
    vlm.eval()
    for start in range(0, len(items), batch_size):
        batch = items[start : start + batch_size]
        encoded = [
            encode(tokenizer, [{"role": "user", "content": item.question}], image_tokens, generation=True)[0]
            for item in batch
        ]
        width = max(map(len, encoded))
        ids = torch.tensor([row + [tokenizer.pad_token_id] * (width - len(row)) for row in encoded])
        mask = torch.tensor([[1] * len(row) + [0] * (width - len(row)) for row in encoded])
        device = next(vlm.parameters()).device
        with torch.inference_mode(), torch.autocast(device.type, dtype=dtype, enabled=dtype != torch.float32):
            logits = vlm(
                input_ids=ids.to(device),
                attention_mask=mask.to(device),
                pixel_values=pixel_values([i.image for i in batch]).to(device),
            ).logits.cpu()
        last = logits[torch.arange(len(batch)), mask.sum(1) - 1]
        for item, row in zip(batch, last, strict=True):
            words = list(candidates[item.kind])
            scores = row[[candidates[item.kind][w] for w in words]]
            correct[item.kind].append(words[int(scores.argmax())] == item.answer)
    per_kind = {
        kind: {"accuracy": float(np.mean(hits)), "chance": 1 / len(ANSWERS[kind]), "n": len(hits)}
        for kind, hits in correct.items()
    }
    every = [hit for hits in correct.values() for hit in hits]
    chance = float(np.mean([per_kind[item.kind]["chance"] for item in items]))
    return {"accuracy": float(np.mean(every)), "chance": chance, "n": len(every), "by_kind": per_kind}
