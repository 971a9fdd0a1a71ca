"""The board's judgement rules, in one place: each is one function, declared with the one sentence that states it
(:func:`rule`), so that the tables compute it, the pages show its outcome and the methodology page prints its
statement (:data:`RULES`) from this one declaration.

A rule judges numbers the statistics (:mod:`sinkbench.stats`) made; it computes none of them."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Literal, TypeVar

import numpy as np
from numpy.typing import ArrayLike

F = TypeVar("F", bound=Callable[..., Any])


@dataclass(frozen=True)
class Rule:
    """A judgement rule: its name, the sentence that states it, and the function that applies it."""

    name: str
    statement: str
    function: Callable[..., Any]


#: Every rule of the board, by name, in the order declared (the methodology page lists them so).
RULES: dict[str, Rule] = {}


def rule(name: str, statement: str) -> Callable[[F], F]:
    """Declare the decorated function as the rule ``name``, stated by ``statement`` (one sentence)."""

    def declare(function: F) -> F:
        if name in RULES:
            raise ValueError(f"rule {name!r} is declared twice ({RULES[name].function.__name__})")
        RULES[name] = Rule(name, statement, function)
        return function

    return declare


@rule(
    "uninformative",
    "A prediction interval is uninformative when it is wider than the range of the deltas the task's pairs showed "
    "(largest minus smallest): it is then labelled uninformative instead of read as a number.",
)
def informative(width: ArrayLike, observed: ArrayLike) -> np.ndarray:
    """Whether each prediction interval of ``width`` is no wider than ``observed`` (the task's max - min delta);
    a NaN width is not informative."""
    width, observed = np.asarray(width, dtype=float), np.asarray(observed, dtype=float)
    return np.isfinite(width) & (width <= observed)


#: The sign of an interval that excludes zero.
Sign = Literal["negative", "positive"]


@rule(
    "sign shown",
    "An interval that excludes zero shows its sign (negative: wholly below zero; positive: wholly above), "
    "whatever label its estimate carries, so an uninformative prediction still says which way it points.",
)
def interval_sign(low: float | None, high: float | None) -> Sign | None:
    """``negative`` when the interval lies wholly below zero, ``positive`` wholly above, else (it holds zero, or
    is missing) None."""
    if low is None or high is None or math.isnan(low) or math.isnan(high):
        return None
    if high < 0:
        return "negative"
    return "positive" if low > 0 else None


#: A held-out fit whose error is below the constant mean's by less than this share of the mean's error is no
#: real improvement.
MARGINAL = 0.05
#: The outcomes of :func:`beats_mean`.
Beats = Literal["yes", "marginal", "no"]


@rule(
    "beats the mean",
    "A task's leave-one-pair-out fit of Δ on S beats the mean when its mean absolute error is below that of "
    "predicting each pair by the mean of the others by at least "
    f"{MARGINAL:.0%} of the latter (yes); below it by less, the improvement is marginal; otherwise no.",
)
def beats_mean(loo_mae: float, baseline_mae: float) -> Beats | None:
    """``yes``, ``marginal`` or ``no`` for the held-out fit's error against the constant-mean baseline's; None
    when either is undefined (NaN: too few pairs)."""
    if math.isnan(loo_mae) or math.isnan(baseline_mae):
        return None
    if loo_mae >= baseline_mae:
        return "no"
    return "marginal" if baseline_mae - loo_mae < MARGINAL * baseline_mae else "yes"


@rule(
    "control flagged",
    "A knowledge control is flagged when its |ρ| with S is at least that of a format-sensitive task: S then "
    "tracks a change that has nothing to do with strict formats as closely as it tracks that target.",
)
def control_as_strong_as(control_rho: float, targets: Mapping[str, float]) -> list[str]:
    """The format-sensitive ``targets`` (task: rho) whose |rho| is at most the control's |``control_rho``|, in
    the order given; none when the control's rho is undefined."""
    if math.isnan(control_rho):
        return []
    return [task for task, rho in targets.items() if not math.isnan(rho) and abs(rho) <= abs(control_rho)]


#: The kinds of an observed delta's interval, best first (:func:`delta_interval_kind`).
DeltaIntervalKind = Literal["paired-samples", "paired-counts", "unpaired", "none"]


@rule(
    "observed Δ interval",
    "An observed Δ carries a 95% interval paired over prompts where per-prompt outcomes exist (the samples of both "
    "sides, else published pass/lost/gained/fail counts), else an unpaired one from the two scores and the prompt "
    "count, marked unpaired; where the metric is not a share of prompts passed, or a score or the prompt count "
    "is missing, the page says so instead.",
)
def delta_interval_kind(
    *, samples: bool, counts: bool, proportion: bool, scores: bool, prompts: bool
) -> DeltaIntervalKind:
    """The interval an observed delta carries, from what is known of it: both sides' per-prompt ``samples``,
    published outcome ``counts``, whether its metric is a ``proportion`` of prompts, both ``scores``, the
    ``prompts`` count."""
    if samples:
        return "paired-samples"
    if counts:
        return "paired-counts"
    return "unpaired" if proportion and scores and prompts else "none"


@rule(
    "tiers",
    "Backbones in order of S (highest first): the first not yet placed leads a new tier, which takes each following "
    "backbone, in order, as long as its S interval overlaps the leader's; the next backbone whose interval does "
    "not leads the next tier.",
)
def tiers(lows: ArrayLike, highs: ArrayLike) -> np.ndarray:
    """The tier (1, 2, ...) of each S interval ``[lows[i], highs[i]]``, given in order of S, highest first; a NaN
    bound reads as the other (an S without an interval is its own point)."""
    lows, highs = np.asarray(lows, dtype=float), np.asarray(highs, dtype=float)
    lows, highs = np.where(np.isnan(lows), highs, lows), np.where(np.isnan(highs), lows, highs)
    found = np.zeros(len(lows), dtype=int)
    tier, leader = 0, (math.inf, -math.inf)
    for index, (low, high) in enumerate(zip(lows, highs, strict=True)):
        if not (high >= leader[0] and low <= leader[1]):
            tier, leader = tier + 1, (low, high)
        found[index] = tier
    return found


#: Monte-Carlo standard errors by which the share of draws must clear its threshold for a difference to be told apart.
MONTE_CARLO_MARGIN = 3.0


@rule(
    "told apart",
    "Two backbones inside what the pairs cover are told apart on a task whose fit beats the mean (yes) when the 95% "
    "interval of the difference in their expected Δ excludes zero and the share of draws in which the first is "
    "expected to lose less clears 97.5% (or 2.5%) by more than three Monte-Carlo standard errors (nearer, another "
    "seed could flip it: too close to call); the difference is the fit's slope times the difference of their S, "
    "bootstrapped over the pairs with each S drawn from a normal centred on it whose standard deviation is its "
    "interval's width divided by 3.92.",
)
def told_apart(low: ArrayLike, high: ArrayLike, share: ArrayLike, draws: int) -> np.ndarray:
    """Whether each difference interval ``[low, high]`` excludes zero with its ``share`` of positive draws (of
    ``draws``) beyond 97.5% or 2.5% by :data:`MONTE_CARLO_MARGIN` standard errors (NaN: not told apart)."""
    low, high, share = (np.asarray(value, dtype=float) for value in (low, high, share))
    margin = MONTE_CARLO_MARGIN * math.sqrt(0.975 * 0.025 / max(draws, 1))
    decided = (share >= 0.975 + margin) | (share <= 0.025 - margin)
    return ((low > 0) | (high < 0)) & decided
