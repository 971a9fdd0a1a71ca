"""A VLM's language backbone as a standalone causal LM (the paper's VLM-LM, arXiv 2609.00746 Appendix B.2).

``extract_lm(source, out)`` streams the backbone's tensors into a transformers causal-LM directory (with tokenizer,
chat template and ``provenance.json``), optionally checking its logits against the VLM; ``implant_lm(vlm, lm, out)``
is the inverse. transformers and torch load on first use, so importing this stays cheap for ``sinkbench --help``.
"""

from __future__ import annotations

import importlib
from typing import Any

from sinkbench.extract.errors import ExtractError, VerificationError
from sinkbench.extract.families import vlm_model_types

_LAZY = {
    "extract_lm": "pipeline",
    "ExtractionResult": "pipeline",
    "PROVENANCE_FILE": "pipeline",
    "implant_lm": "implant",
    "ImplantResult": "implant",
}

__all__ = ["ExtractError", "VerificationError", "vlm_model_types", *_LAZY]


def __getattr__(name: str) -> Any:
    """Load the pipeline's exports on first access."""
    if name not in _LAZY:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{_LAZY[name]}"), name)
