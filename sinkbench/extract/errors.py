"""Errors of the extraction: bad input (ExtractError) and a failed logit check (VerificationError)."""

from __future__ import annotations


class ExtractError(Exception):
    """The source cannot be extracted: unsupported family, missing or corrupt files."""


class VerificationError(Exception):
    """The extracted LM's logits differ from the VLM's language path beyond the tolerance."""
