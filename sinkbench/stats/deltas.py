"""Intervals of a delta of two pass rates, in points: paired over prompts by the bootstrap, from both sides'
outcomes (:func:`paired_bootstrap_delta`) or from the four outcome counts (:func:`paired_counts_delta`), and
unpaired from two scores and their prompt counts (:func:`unpaired_delta_interval`, Newcombe's hybrid score interval
from two :func:`wilson_interval`)."""

from __future__ import annotations

import functools
import math

import numpy as np
from numpy.typing import ArrayLike

from sinkbench.stats.resampling import (
    N_RESAMPLES,
    bootstrap_interval,
    drawn_below,
    paired_arrays,
    scipy_percentile_interval,
)


def paired_bootstrap_delta(
    reference: ArrayLike,
    vlm: ArrayLike,
    *,
    seed: int,
    confidence: float = 0.95,
    n_resamples: int = N_RESAMPLES,
) -> tuple[float, float]:
    """Percentile bootstrap interval of ``mean(vlm) - mean(reference)`` in points, resampling (exchangeable)
    prompts in pairs: ``reference`` and ``vlm`` hold one outcome per prompt (pass 1, fail 0), aligned by prompt, so
    the interval reflects the two models' prompt-to-prompt correlation. Seeded."""
    x, y = paired_arrays(reference, vlm)
    if len(x) < 2:
        return math.nan, math.nan

    def points(a: np.ndarray, b: np.ndarray, axis: int = -1) -> np.ndarray:
        return 100.0 * (b.mean(axis=axis) - a.mean(axis=axis))

    return bootstrap_interval(points, x, y, resamples=n_resamples, seed=seed, confidence=confidence)


def paired_counts_delta(
    both_pass: int,
    lost: int,
    gained: int,
    both_fail: int,
    *,
    seed: int,
    confidence: float = 0.95,
    n_resamples: int = N_RESAMPLES,
) -> tuple[float, float]:
    """:func:`paired_bootstrap_delta`, to the last bit, over the prompts that outcome counts describe, ordered
    ``both_pass`` (passed by both models), ``lost`` (the reference only), ``gained`` (the VLM only), ``both_fail``.
    NaN for fewer than 2 prompts.

    A resample's pass counts are differences of its cumulative histogram (:func:`~.resampling.drawn_below`, shared
    by every pair of the same prompt count and seed), so each interval costs O(resamples)."""
    n = both_pass + lost + gained + both_fail
    if n < 2:
        return math.nan, math.nan
    below = drawn_below(n, seed, n_resamples)
    reference = below[both_pass + lost]
    vlm = below[both_pass] + below[both_pass + lost + gained] - reference
    return scipy_percentile_interval(100.0 * (vlm / n - reference / n), confidence)


@functools.lru_cache(maxsize=8)
def _normal_quantile(probability: float) -> float:
    """The standard normal distribution's ``probability`` quantile (cached: the tables ask for a few, many times)."""
    from scipy import stats

    return float(stats.norm.ppf(probability))


def wilson_interval(share: float, n: int, confidence: float = 0.95) -> tuple[float, float]:
    """Wilson's score interval of a proportion ``share`` (0-1) observed on ``n`` independent trials."""
    z = _normal_quantile(0.5 + confidence / 2)
    scale = 1 + z * z / n
    centre = (share + z * z / (2 * n)) / scale
    half = z / scale * math.sqrt(share * (1 - share) / n + z * z / (4 * n * n))
    return centre - half, centre + half


def unpaired_delta_interval(
    reference: float, n_reference: int, vlm: float, n_vlm: int, confidence: float = 0.95
) -> tuple[float, float]:
    """Interval of ``vlm - reference`` in points for two scores (0-100) on ``n_reference`` and ``n_vlm`` prompts
    taken as independent: Newcombe's hybrid score interval (*Statistics in Medicine* 17:873, 1998, method 10) from
    the two :func:`wilson_interval`, wider than the paired one when outcomes agree more often than chance. NaN when a
    count is below 1 or a score outside 0-100."""
    p1, p2 = reference / 100.0, vlm / 100.0
    if n_reference < 1 or n_vlm < 1 or not (0 <= p1 <= 1 and 0 <= p2 <= 1):
        return math.nan, math.nan
    low1, high1 = wilson_interval(p1, n_reference, confidence)
    low2, high2 = wilson_interval(p2, n_vlm, confidence)
    delta = p2 - p1
    low = delta - math.sqrt((p2 - low2) ** 2 + (high1 - p1) ** 2)
    high = delta + math.sqrt((high2 - p2) ** 2 + (p1 - low1) ** 2)
    return 100.0 * low, 100.0 * high
