"""The nonparametric bootstrap and its percentile intervals: the bootstrap over units (:func:`bootstrap`, the draw
``scipy.stats.bootstrap`` makes, to the last bit; as cumulative counts, :func:`drawn_below`), the cluster bootstrap
of a pooled median (:func:`bootstrap_pooled_median`, S over prompts), and the percentile interval of replicates, by
numpy's percentiles without undefined replicates (:func:`percentile_interval`) or scipy's quantiles
(:func:`scipy_percentile_interval`, :func:`bootstrap_interval`, :func:`mean_interval`). Each published interval
keeps the rule it was first published with: the two differ in the last digit.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Sequence

import numpy as np
from numpy.typing import ArrayLike

#: Resamples of the bootstrap and of the Monte-Carlo permutation test.
N_RESAMPLES = 9999
#: Above this many pairs both draw :data:`N_RESAMPLES_LARGE` resamples instead: each resample costs O(n)
#: or more, and with that many pairs the interval is narrow and the p-value either tiny or not.
LARGE_N = 200
N_RESAMPLES_LARGE = 999


def default_resamples(n: int) -> int:
    """Monte-Carlo resamples for n pairs: :data:`N_RESAMPLES`, or :data:`N_RESAMPLES_LARGE` above :data:`LARGE_N`."""
    return N_RESAMPLES if n <= LARGE_N else N_RESAMPLES_LARGE


def paired_arrays(x: ArrayLike, y: ArrayLike) -> tuple[np.ndarray, np.ndarray]:
    """``x`` and ``y`` as float arrays, checked to be paired: 1-D and of one length (ValueError otherwise)."""
    x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    if x.shape != y.shape or x.ndim != 1:
        raise ValueError(f"x and y must be 1-D arrays of one length, got shapes {x.shape} and {y.shape}")
    return x, y


def bootstrap(
    statistic: Callable[..., np.ndarray], *samples: ArrayLike, resamples: int, seed: int
) -> np.ndarray:
    """Replicates of ``statistic`` under the nonparametric bootstrap over (exchangeable) units.

    Each resample draws n units with replacement, ``numpy.random.default_rng(seed).integers(0, n, (resamples, n))``
    (``scipy.stats.bootstrap``'s draw), keeping the samples (1-D, aligned by unit) paired;
    ``statistic(*resampled, axis=-1)`` reduces the last axis.
    """
    arrays = [np.asarray(sample) for sample in samples]
    n = len(arrays[0])
    rows = np.random.default_rng(seed).integers(0, n, size=(resamples, n))
    return np.asarray(statistic(*(array[rows] for array in arrays), axis=-1))


def percentile_interval(replicates: ArrayLike, confidence: float) -> tuple[float, float]:
    """The percentile bootstrap interval: numpy's 50(1 - confidence) and 100 - 50(1 - confidence) percentiles of the
    replicates, NaN replicates (statistic undefined) left out; NaN when none is left. Coverage is approximate."""
    replicates = np.asarray(replicates, dtype=float)
    replicates = replicates[~np.isnan(replicates)]
    if replicates.size == 0:
        return math.nan, math.nan
    tail = 50.0 * (1.0 - confidence)
    low, high = np.percentile(replicates, [tail, 100.0 - tail])
    return float(low), float(high)


def bootstrap_interval(
    statistic: Callable[..., np.ndarray], *samples: ArrayLike, resamples: int, seed: int, confidence: float
) -> tuple[float, float]:
    """The percentile interval of ``statistic`` under :func:`bootstrap` with :func:`scipy_percentile_interval`'s
    quantiles: ``scipy.stats.bootstrap(..., paired=True, method="percentile")`` to the last bit, for a statistic
    defined on every resample (the experiments' results and the board's paired deltas)."""
    return scipy_percentile_interval(
        bootstrap(statistic, *samples, resamples=resamples, seed=seed), confidence
    )


def scipy_percentile_interval(replicates: np.ndarray, confidence: float) -> tuple[float, float]:
    """The percentile interval ``scipy.stats.bootstrap`` takes of its (defined) replicates, to the last bit:
    ``scipy.stats.quantile``'s default (Hyndman and Fan's method 7) at (1 - confidence)/2 and its complement, from
    the four order statistics it reads (a partition, not a sort)."""
    tail = (1 - confidence) / 2
    p = np.array([tail, 1 - tail])
    count = replicates.size
    position = p * count + (1 - p)
    upper = position // 1
    fraction = position % 1
    lower = np.clip(upper - 1, 0.0, count - 1).astype(np.int64)
    upper = np.clip(upper, 0.0, count - 1).astype(np.int64)
    ordered = np.partition(replicates, np.unique(np.concatenate([lower, upper])))
    low, high = (1 - fraction) * ordered[lower] + fraction * ordered[upper]
    return float(low), float(high)


def mean_interval(values: ArrayLike, confidence: float = 0.95, *, seed: int = 0) -> tuple[float, float]:
    """Percentile bootstrap interval of the mean of ``values`` (:func:`bootstrap_interval`, :data:`N_RESAMPLES`
    resamples, seeded). Values without spread give a zero-width interval at their mean; none give NaN."""
    values = np.asarray(values, dtype=float)
    if len(values) < 2 or np.ptp(values) == 0:
        return (float(values.mean()), float(values.mean())) if len(values) else (math.nan, math.nan)
    return bootstrap_interval(np.mean, values, resamples=N_RESAMPLES, seed=seed, confidence=confidence)


def _element(positions: list[np.ndarray], counts: np.ndarray, rank: np.ndarray, size: int) -> np.ndarray:
    """Per resample r, the sorted position of its ``rank[r]``-th value (0-based, group p counted ``counts[r, p]``
    times), by a vectorised binary search."""
    low, high = np.zeros(len(rank), dtype=np.int64), np.full(len(rank), size, dtype=np.int64)
    while np.any(high - low > 1):
        middle = (low + high) // 2
        above = sum(counts[:, p] * np.searchsorted(found, middle) for p, found in enumerate(positions)) > rank
        high, low = np.where(above, middle, high), np.where(above, low, middle)
    return high - 1


def bootstrap_pooled_median(groups: Sequence[np.ndarray], *, resamples: int, seed: int) -> np.ndarray:
    """Replicates of the median of all groups' values pooled, under the cluster bootstrap over (exchangeable)
    groups: each resample draws as many groups with replacement (multinomial counts from
    ``numpy.random.default_rng(seed)``) and pools their values, a group drawn twice counting twice; NaN for a
    resample without values. The pool is sorted once and each resample's two middle values (numpy's median) found
    by a binary search over it, weighted by the group multiplicities.
    """
    values = np.concatenate(groups)
    members = np.repeat(np.arange(len(groups)), [group.size for group in groups])
    order = np.argsort(values, kind="stable")
    ranked = np.argsort(members[order], kind="stable")  # grouped by group, ascending within each
    bounds = np.cumsum([0, *(group.size for group in groups)])
    values, positions = values[order], [ranked[bounds[i] : bounds[i + 1]] for i in range(len(groups))]
    count = len(groups)
    draws = np.random.default_rng(seed).multinomial(count, np.full(count, 1.0 / count), size=resamples)
    total = draws @ np.array([found.size for found in positions])
    if values.size == 0:
        return np.full(resamples, np.nan)
    lower = _element(positions, draws, (total - 1) // 2, values.size)
    upper = _element(positions, draws, total // 2, values.size)
    return np.where(total > 0, (values[lower] + values[upper]) / 2, np.nan)


@functools.lru_cache(maxsize=4)
def drawn_below(n: int, seed: int, resamples: int) -> np.ndarray:
    """Per resample of :func:`bootstrap`'s draw over n units, how many drawn units fall below each position:
    ``result[k, r]`` counts the draws of resample r below unit k (k from 0 to n). Read-only; cached."""
    rows = np.random.default_rng(seed).integers(0, n, size=(resamples, n))
    offsets = (np.arange(resamples) * (n + 1))[:, None]
    counts = np.bincount((rows + offsets).ravel(), minlength=resamples * (n + 1)).astype(np.int32)
    below = np.zeros((n + 1, resamples), dtype=np.int32)
    np.cumsum(counts.reshape(resamples, n + 1)[:, :-1].T, axis=0, out=below[1:])
    below.setflags(write=False)
    return below
