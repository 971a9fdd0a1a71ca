"""The verdicts of the conformance sweeps (torch-free: the leaderboard reads them)."""

from __future__ import annotations

from dataclasses import dataclass

EQUAL = "equal"
EQUAL_LOGITS_ONLY = "equal (logits only)"
REFUSED = "refused"
UNTESTED = "untested"
FAILED = "sweep failed"


@dataclass(frozen=True)
class Verdict:
    """One model type's row in the architecture table.

    Attributes:
        model_type: the registered model type.
        verdict: ``equal``, ``equal (logits only)``, ``refused``, ``untested`` (no tiny model can be built from
            the type's defaults) or ``sweep failed``.
        reason: the refusal or failure in one line; for a measured type, its attention layout.
        s_difference: |S(probe) - S(naive)|, for measured types.
        profile_difference: largest |median G| difference over (layer, head), for measured types.
        logits_difference: largest |logit| difference of the full model, for measured types.
        seconds: time of the check.
    """

    model_type: str
    verdict: str
    reason: str
    s_difference: float | None = None
    profile_difference: float | None = None
    logits_difference: float | None = None
    seconds: float = 0.0
