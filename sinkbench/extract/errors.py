"""Errors of the extraction: bad input (ExtractError) and a failed logit check (VerificationError)."""

from __future__ import annotations

from sinkbench.errors import UserError


class ExtractError(UserError):
    """The source cannot be extracted: unsupported family, missing or corrupt files."""


class VerificationError(UserError):
    """The extracted LM's logits differ from the VLM's language path beyond the tolerance."""
