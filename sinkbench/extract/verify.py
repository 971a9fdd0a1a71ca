"""The round-trip check: the extracted LM reproduces the VLM's language path on a text-only probe."""

from __future__ import annotations

import gc
import json
from pathlib import Path

import torch
from transformers import AutoModelForCausalLM, AutoModelForImageTextToText

from sinkbench.errors import described
from sinkbench.extract.errors import VerificationError
from sinkbench.extract.families import language_model, quiet_load
from sinkbench.extract.tokenizer import PROBE_TEXT, load_tokenizer

TOLERANCE = 1e-4
#: What the extracted LM is compared with (provenance ``verification.reference``).
VLM_FORWARD, LANGUAGE_MODEL_AND_HEAD = "vlm_forward", "language_model_and_head"


def compare_logits(source_dir: Path, extracted_dir: Path, tolerance: float = TOLERANCE) -> dict:
    """Run the probe through the VLM (its own forward, ``input_ids`` only) and the extracted causal LM, in float32,
    one after the other. Where the VLM's forward fails on text alone (a bug of that class, e.g. Llama 4 in transformers
    5.24), the reference is its language model and LM head: ``reference`` says which, ``forward_error`` why.

    Returns:
        ``{"passed", "max_abs_logit_diff", "tolerance", "dtype", "probe_tokens", "reference", "forward_error"}``.

    Raises:
        VerificationError: transformers cannot load the VLM or run it on text alone, or its logits are not finite.
    """
    input_ids = load_tokenizer(extracted_dir)(PROBE_TEXT, return_tensors="pt").input_ids
    reference, forward_error = _vlm_logits(source_dir, input_ids)
    gc.collect()  # the VLM, local to _vlm_logits, goes before the extracted LM loads
    if not torch.isfinite(reference).all():
        raise VerificationError(
            f"{source_dir}: the VLM's own text-only logits are not finite; nothing to compare"
        )
    extracted = _logits(AutoModelForCausalLM.from_pretrained(extracted_dir, dtype=torch.float32), input_ids)
    difference = (reference - extracted).abs().max().item()
    return {
        "passed": difference <= tolerance,
        "max_abs_logit_diff": difference,
        "tolerance": tolerance,
        "dtype": "float32",
        "probe_tokens": int(input_ids.shape[1]),
        "reference": VLM_FORWARD if forward_error is None else LANGUAGE_MODEL_AND_HEAD,
        "forward_error": forward_error,
    }


def _vlm_logits(source_dir: Path, input_ids: torch.Tensor) -> tuple[torch.Tensor, str | None]:
    """The VLM's text-only logits, and why its own forward failed where its language model and head gave them
    (VerificationError, with the reasons, when neither route runs)."""
    vlm = _load_vlm(source_dir)
    try:
        return _logits(vlm, input_ids), None
    except Exception as error:
        # The class's own text-only forward fails: a transformers bug, not the extraction's.
        forward_error = error
    try:
        with torch.inference_mode():
            hidden = language_model(vlm)(input_ids=input_ids).last_hidden_state
            logits = vlm.get_output_embeddings()(hidden).float()
    except Exception as error:
        # Each reason once: the two routes often fail in the same layer.
        reasons = dict.fromkeys(described(failed, 200) for failed in (forward_error, error))
        raise VerificationError(
            f"{source_dir}: transformers cannot run this {vlm.config.model_type} VLM on text alone, neither through "
            f"its own forward nor through its language model ({'; '.join(reasons)}), so there is nothing to verify "
            "against; fix its config.json, or extract without --verify"
        ) from error
    return logits, described(forward_error, 120)


def _load_vlm(source_dir: Path) -> torch.nn.Module:
    """The VLM in float32; VerificationError when transformers cannot load it (or its saved tensor sizes disagree
    with config.json)."""
    cannot = f"{source_dir}: transformers cannot load this {_model_type(source_dir)} VLM to verify against"
    fix = "fix the checkpoint or its config.json, or extract without --verify"
    try:
        vlm, info = quiet_load(AutoModelForImageTextToText, source_dir, dtype=torch.float32)
    except Exception as error:
        raise VerificationError(f"{cannot} ({described(error, 200)}); {fix}") from error
    mismatched = [
        f"{key} {tuple(saved)} != {tuple(expected)}" for key, saved, expected in info["mismatched_keys"]
    ]
    if mismatched:
        raise VerificationError(
            f"{cannot}: its saved tensor sizes disagree with config.json ({', '.join(sorted(mismatched)[:3])}); {fix}"
        )
    return vlm


def _model_type(source_dir: Path) -> str:
    """The model type config.json names, for messages (``unknown`` when it cannot be read)."""
    try:
        return str(json.loads((Path(source_dir) / "config.json").read_text(encoding="utf-8"))["model_type"])
    except (OSError, ValueError, KeyError, TypeError):
        return "unknown"


def _logits(model: torch.nn.Module, input_ids: torch.Tensor) -> torch.Tensor:
    """float32 logits of ``input_ids`` from ``model``."""
    with torch.inference_mode():
        return model.eval()(input_ids=input_ids).logits.float()
