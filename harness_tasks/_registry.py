"""sinkbench's additions to lm-eval's registry.

Importing this module registers them; the family hooks that need them import it, so the
names resolve before lm-eval builds the task. Everything else the strict tasks use (the
``regex``, ``multi_choice_regex`` and ``take_first`` filters, ``exact_match``, ``mean``) is
already in lm-eval's registry and is reused by name.
"""

from __future__ import annotations

from collections.abc import Sequence

from lm_eval.api.registry import register_aggregation

#: Registered name of :func:`flat_mean`.
FLAT_MEAN = "flat_mean"


@register_aggregation(FLAT_MEAN)
def flat_mean(items: Sequence[Sequence[bool | float]]) -> float:
    """Mean over every element of per-document lists.

    IFEval's instruction-level accuracy: each document contributes one value per
    instruction, and every instruction weighs the same, whatever prompt it belongs to.

    Raises:
        ValueError: no document carried any element.
    """
    flat = [float(value) for values in items for value in values]
    if not flat:
        raise ValueError(f"{FLAT_MEAN}: no per-instruction values to aggregate")
    return sum(flat) / len(flat)
