"""The verdict words of the testbed, written once: what a paired comparison on one outcome may conclude.

Every comparison has a "yes" direction (the damage, or the protection, it asks about) and a **margin**: the smallest
effect on that outcome worth the word, fixed before the runs (:data:`experiments.vl_testbed.analysis.OUTCOMES`),
never taken from the arm being judged. With the 95% percentile bootstrap interval of the mean difference over
seeds, the verdict is an equivalence test (two one-sided tests, each at 2.5%) by :data:`RULES`: a tiny consistent
effect is "no" when its interval stays inside the margin, and "yes" is never given to an effect below the margin.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

#: S of the VLM-LM must move this far from the base's (nats), with one sign, on every seed, for the sink to have
#: moved: twice the range of S over the six no-protection seeds of the first committed experiment (1.426 to 1.590,
#: a regime in which nothing happened to the sink, so its spread is the seed noise of S after training). Fixed
#: before the mechanism pilot (:mod:`experiments.vl_testbed.pilot`) ran.
S_SHIFT = 0.33


#: A head's first-token attention "moved" when its mean change over prompts is at least this, with a 95% interval
#: that excludes zero (:func:`experiments.vl_testbed.mechanism.sink_shift`).
HEAD_SHIFT = 0.1

#: Held-out visual accuracy must beat the same seed's VLM after stage 1 (its LM untouched) by this much for the visual
#: task to count as learned: 3 binomial standard errors at 192 questions and 30% accuracy (the realistic null of the
#: first committed experiment was 29-36%).
VISUAL_GAIN = 0.10


def sink_moved(shifts: Sequence[float]) -> bool:
    """Whether the sink moved: every seed's change of S (VLM-LM minus base) reaches :data:`S_SHIFT`, all with one
    sign."""
    return bool(shifts) and (all(s >= S_SHIFT for s in shifts) or all(s <= -S_SHIFT for s in shifts))


def compare_backbones(first: Sequence[float], second: Sequence[float], margin: float) -> str:
    """Whether an outcome is larger on a second backbone than on the first, over seeds that cannot be paired (the
    models differ): "more" when every value of ``second`` exceeds every value of ``first`` by at least ``margin``,
    "less" the reverse, otherwise "cannot tell". Two backbones give a direction, never a correlation."""
    if not first or not second:
        return "cannot tell"
    if min(second) - max(first) >= margin:
        return "more"
    if min(first) - max(second) >= margin:
        return "less"
    return "cannot tell"


#: The rules above, as the page states them.
RULES = (
    "A question about protecting the sink is judged only where the no-protection arm's sink moved beyond its "
    "noise (S of the VLM-LM changed by at least 0.33 nats, with one sign, on every seed); elsewhere it is 'not "
    "posed'.",
    "A protection question then needs the positive control: where freezing the whole LM does not reach 'yes' on "
    "an outcome, the design cannot see a protection there, and the verdict is 'cannot tell'.",
    "'yes' when the 95% interval of the mean difference excludes zero on the side the question asks about and the "
    "mean reaches the outcome's margin (fixed before the runs, never from the judged arm); 'reverse' the same on "
    "the other side.",
    "'no' when the whole 95% interval lies inside plus or minus the margin (two one-sided tests).",
    "Otherwise 'cannot tell'. Answer length and the share of answers that stop are descriptive: shown, never "
    "judged.",
)


def verdict(
    mean: float,
    ci95: tuple[float | None, float | None],
    margin: float | None,
    *,
    yes_sign: int,
    protection: bool = False,
    positive_control_separated: bool | None = None,
    sink_moved: bool | None = None,
) -> str:
    """The verdict of one paired comparison by :data:`RULES`.

    Args:
        mean: mean difference (treated - control).
        ci95: 95% interval of the mean difference.
        margin: the outcome's margin (None: none fixed, so only "cannot tell" or "descriptive").
        yes_sign: +1 or -1, the sign of a difference that answers "yes"; 0 for a descriptive outcome.
        protection: whether the question asks if an arm protects (rule 2 applies).
        positive_control_separated: whether the positive control reached "yes" on this outcome (protection only).
        sink_moved: for a question about protecting the sink, whether the no-protection arm's sink moved; None
            for any other question (rule 1 does not apply).
    """
    if yes_sign == 0:
        return "descriptive"
    if sink_moved is False:
        return "not posed"
    if protection and not positive_control_separated:
        return "cannot tell"
    low, high = ci95
    if margin is None or low is None or high is None or math.isnan(low) or math.isnan(high):
        return "cannot tell"
    if (low > 0 or high < 0) and abs(mean) >= margin:
        return "yes" if math.copysign(1, mean) == yes_sign else "reverse"
    if -margin < low and high < margin:
        return "no"
    return "cannot tell"
