"""Errors of the extraction: bad input (ExtractError) and a failed logit check (VerificationError)."""

from __future__ import annotations

from sinkbench.errors import UserError


class ExtractError(UserError):
    """The source cannot be extracted: unsupported family, missing or corrupt files."""


class VerificationError(UserError):
    """The extracted LM's logits differ from the VLM's language path beyond the tolerance."""


def listed(problems: dict[str, list[str]]) -> str:
    """``kind: a, b; kind: c`` of the kinds of problem found (at most five names each); '' when none is."""
    return "; ".join(f"{kind}: {', '.join(names[:5])}" for kind, names in problems.items() if names)
