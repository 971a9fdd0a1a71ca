"""The round-trip check: the extracted LM reproduces the VLM's language path on a text-only probe."""

from __future__ import annotations

import gc
from pathlib import Path

import torch
from transformers import AutoModelForCausalLM, AutoModelForImageTextToText

from sinkbench.extract.tokenizer import PROBE_TEXT, load_tokenizer

TOLERANCE = 1e-4


def compare_logits(source_dir: Path, extracted_dir: Path, tolerance: float = TOLERANCE) -> dict:
    """Run the probe through the VLM (its class's forward, ``input_ids`` only) and the extracted LM.

    Both run in float32, one after the other (so peak memory is the larger of the two models).

    Args:
        source_dir: the VLM checkpoint.
        extracted_dir: the extracted causal LM (with its tokenizer).
        tolerance: the largest acceptable absolute logit difference.

    Returns:
        ``{"passed", "max_abs_logit_diff", "tolerance", "dtype", "probe_tokens"}``.
    """
    input_ids = load_tokenizer(extracted_dir)(PROBE_TEXT, return_tensors="pt").input_ids
    reference = _logits(AutoModelForImageTextToText, source_dir, input_ids)
    extracted = _logits(AutoModelForCausalLM, extracted_dir, input_ids)
    difference = (reference - extracted).abs().max().item()
    return {
        "passed": difference <= tolerance,
        "max_abs_logit_diff": difference,
        "tolerance": tolerance,
        "dtype": "float32",
        "probe_tokens": int(input_ids.shape[1]),
    }


def _logits(auto_class: type, directory: Path, input_ids: torch.Tensor) -> torch.Tensor:
    """float32 logits of ``input_ids`` from the model in ``directory``, freeing the model afterwards."""
    model = auto_class.from_pretrained(directory, dtype=torch.float32).eval()
    with torch.inference_mode():
        logits = model(input_ids=input_ids).logits.float()
    del model
    gc.collect()
    return logits
