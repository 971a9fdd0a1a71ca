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
    """One model type's row in the architecture table: its verdict (one of the constants above; ``untested``: no
    tiny model can be built from its defaults), the reason in one line (for a measured type, its attention layout),
    and for a measured type the differences of S, of the median G (largest over layer x head) and of the logits."""

    model_type: str
    verdict: str
    reason: str
    s_difference: float | None = None
    profile_difference: float | None = None
    logits_difference: float | None = None
    seconds: float = 0.0
