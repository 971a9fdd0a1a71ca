"""``extract-lm`` on a tiny random VLM of every image-text-to-text model type of the installed transformers.

Each tiny VLM (weights spread to O(0.1), so a wrong tensor or RoPE moves the logits far beyond the tolerance) is
extracted with ``verify=True``: ``equal`` (text-only logits within 1e-4 in float32) or ``refused`` with
``extract-lm``'s one-line reason; a logit difference or any other exception fails the sweep, recorded with its error.
"""

from __future__ import annotations

import tempfile
from collections.abc import Iterable
from pathlib import Path

import torch
from transformers import AutoModelForImageTextToText

from sinkbench.conformance.probe import build_tiny
from sinkbench.conformance.tiny import NoTinyModel, checked, tiny_config, tiny_tokenizer
from sinkbench.conformance.verdicts import EQUAL, FAILED, Verdict
from sinkbench.errors import ModelNotSupported, one_line
from sinkbench.extract import ExtractError, VerificationError, extract_lm, vlm_model_types
from sinkbench.extract.pipeline import LOADED
from sinkbench.extract.verify import TOLERANCE, VLM_FORWARD

#: Spread of the tiny VLM's weights (norm weights around 1).
WEIGHT_SPREAD = 0.1


def sweep(types: Iterable[str] | None = None) -> list[Verdict]:
    """Extract each VLM model type (default: :func:`sinkbench.extract.vlm_model_types`)."""
    return [check(model_type) for model_type in (vlm_model_types() if types is None else types)]


def check(model_type: str) -> Verdict:
    """Build, save and extract a tiny ``model_type`` VLM (see the module docstring)."""
    return checked(model_type, lambda: _check(model_type), (ExtractError, ModelNotSupported), _reason)


def _check(model_type: str) -> Verdict:
    with tempfile.TemporaryDirectory(prefix="sinkbench-vlm-") as folder:
        source = _save_tiny_vlm(model_type, Path(folder) / "vlm")
        try:
            result = extract_lm(str(source), Path(folder) / "lm", verify=True, tolerance=TOLERANCE)
        except VerificationError as error:
            return Verdict(model_type, FAILED, str(error))
    provenance = result.provenance
    difference = provenance["verification"]["max_abs_logit_diff"]
    lm = provenance["causal_lm"]
    reason = f"{provenance['family']} -> {lm['architecture']}" + (
        ", tied head" if lm["tied_embeddings"] else ""
    )
    if lm["method"] == LOADED:
        reason += "; loaded whole (tensors converted on load)"
    if provenance["verification"]["reference"] != VLM_FORWARD:
        reason += "; verified against its language model and LM head (its own text-only forward fails)"
    return Verdict(model_type, EQUAL, reason, logits_difference=difference)


def _save_tiny_vlm(model_type: str, folder: Path) -> Path:
    model = build_tiny(AutoModelForImageTextToText, tiny_config(model_type))
    generator = torch.Generator().manual_seed(0)
    with torch.no_grad():
        for name, parameter in model.named_parameters():
            noise = torch.randn(parameter.shape, generator=generator) * WEIGHT_SPREAD
            parameter.copy_(1.0 + noise if "norm" in name and parameter.dim() == 1 else noise)
    try:
        model.save_pretrained(folder)
    except Exception as error:  # transformers' own save of the shrunk defaults
        raise NoTinyModel(f"{type(error).__name__} on save: {one_line(error, 120)}") from error
    tiny_tokenizer().save_pretrained(folder)
    return folder


def _reason(message: str) -> str:
    """An extraction error without the temporary folder it names."""
    return message.split(": ", 1)[1] if message.startswith("/") else message
