"""The verdict words of the testbed, written once: what a paired comparison on one outcome may conclude.

Every comparison has a "yes" direction (the damage, or the protection, it asks about). With ``p`` the exact
two-sided sign-flip p-value over seeds, ``alpha`` 0.05, and ``MDD`` the smallest mean difference the design
detects with 80% power (simulated from the no-protection arm's between-seed spread, never the judged arm's):

1. A **protection** question (an arm against no protection) first needs the positive control: if the LM-frozen
   arm does not separate from no protection on this outcome (``p <= alpha`` in the protective direction), the
   design cannot see a protection there, and the verdict is **cannot tell**, whatever the arm did.
2. ``p <= alpha``: **yes** when the mean difference points the "yes" way, **reverse** when it points the other.
3. Otherwise, for a protection question only: **no** when the 95% interval of the mean difference lies inside
   ``(-MDD, +MDD)`` (an effect as large as the design can detect is excluded).
4. Otherwise: **cannot tell**.

Outcomes without a better direction (answer length, the share of answers that stop) are **descriptive**: their
differences and tests are shown, with no verdict. So "all paired differences zero" is **no** only where the
positive control separated (rule 1) and the detectable difference is known; else **cannot tell**.
"""

from __future__ import annotations

import math

ALPHA = 0.05
#: The rules above, as the page states them.
RULES = (
    "A protection question needs the positive control first: where freezing the whole LM does not separate from "
    "no protection on an outcome (exact sign-flip p <= 0.05 in the protective direction), the design cannot see a "
    "protection there, and the verdict is 'cannot tell' whatever the arm did.",
    "p <= 0.05: 'yes' when the mean difference points the way the question asks about, 'reverse' when it points "
    "the other way.",
    "Otherwise, for a protection question only: 'no' when the 95% interval of the mean difference lies inside "
    "plus or minus the smallest detectable difference (80% power, simulated from the no-protection arm's "
    "between-seed spread, never the judged arm's).",
    "Otherwise: 'cannot tell'. Answer length and the share of answers that stop are descriptive: tested, never "
    "judged.",
)


def verdict(
    mean: float,
    p_value: float | None,
    ci95: tuple[float | None, float | None],
    minimum_detectable: float | None,
    *,
    yes_sign: int,
    protection: bool,
    positive_control_separated: bool | None,
) -> str:
    """The verdict of one paired comparison by :data:`RULES`.

    Args:
        mean: mean difference (treated - control).
        p_value: exact two-sided sign-flip p-value (None: not computable).
        ci95: 95% interval of the mean difference.
        minimum_detectable: the design's smallest detectable difference (None: unknown).
        yes_sign: +1 or -1, the sign of a difference that answers "yes"; 0 for a descriptive outcome.
        protection: whether the question asks if an arm protects (rules 1 and 3 apply).
        positive_control_separated: whether the positive control separated on this outcome (protection only).
    """
    if yes_sign == 0:
        return "descriptive"
    if protection and not positive_control_separated:
        return "cannot tell"
    if p_value is not None and p_value <= ALPHA and mean != 0:
        return "yes" if math.copysign(1, mean) == yes_sign else "reverse"
    low, high = ci95
    if (
        protection
        and minimum_detectable is not None
        and low is not None
        and high is not None
        and -minimum_detectable < low
        and high < minimum_detectable
    ):
        return "no"
    return "cannot tell"
