"""How the weights behind a measured number are named, a GGUF file's quantisation or plain transformers weights:
one definition for the screen report, the submission facts and the placement of a new model (torch-free)."""

from __future__ import annotations

import re

_QUANTISATION = re.compile(r"(?i)(?:^|[._-])(i?q\d(?:_[a-z0-9]+)*|bf16|f16|f32)(?=[._-]|$)")
TRANSFORMERS_WEIGHTS = "transformers weights"


def weights_label(gguf_file: str | None) -> str:
    """``GGUF <quantisation>`` for a GGUF file (read from its name, e.g. ``GGUF Q4_K_M``), else
    ``transformers weights``."""
    if not gguf_file:
        return TRANSFORMERS_WEIGHTS
    found = _QUANTISATION.search(str(gguf_file).rsplit("/", 1)[-1].removesuffix(".gguf"))
    return f"GGUF {found.group(1).upper()}" if found else "GGUF"
