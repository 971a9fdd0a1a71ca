"""Rank correlations of S against the observed deltas, one (S, delta) pair per VLM, with estimators chosen for
small n: Spearman's rho with a percentile bootstrap interval over pairs, Kendall's tau-b, and the permutation test
of rho (exact up to :data:`EXACT_PERMUTATION_MAX_N` pairs). Undefined values (too few pairs, a constant input) are
NaN, never raised."""

from __future__ import annotations

import math
import warnings

import numpy as np
from numpy.typing import ArrayLike

from sinkbench.stats.resampling import bootstrap, default_resamples, paired_arrays, percentile_interval

#: Up to this many pairs the permutation test enumerates all n! pairings (8! = 40,320).
EXACT_PERMUTATION_MAX_N = 8
#: Fewest pairs for which correlations and fits are reported.
MIN_PAIRS = 3


def _pearson_rows(a: np.ndarray, b: np.ndarray, axis: int = -1) -> np.ndarray:
    """Pearson r of rank arrays along ``axis`` (broadcasting), NaN where a row is constant (ranks are exact, so
    that is exactly 0/0); vectorised, without the p-value per row that ``scipy.stats.pearsonr`` would compute."""
    a = a - a.mean(axis=axis, keepdims=True)
    b = b - b.mean(axis=axis, keepdims=True)
    with np.errstate(invalid="ignore", divide="ignore"):
        return (a * b).sum(axis=axis) / np.sqrt((a * a).sum(axis=axis) * (b * b).sum(axis=axis))


def resample_ranks(codes: np.ndarray, distinct: int) -> np.ndarray:
    """Mid-ranks along the last axis of rows of value codes (indices among ``distinct`` sorted values), as
    ``stats.rankdata`` ranks the values, by counting instead of sorting: O(rows x n), not O(rows x n log n)."""
    rows = np.asarray(codes).reshape(-1, np.shape(codes)[-1]).astype(np.intp)
    flat = rows + distinct * np.arange(rows.shape[0])[:, None]
    counts = np.bincount(flat.ravel(), minlength=rows.shape[0] * distinct).reshape(rows.shape[0], distinct)
    mid = np.cumsum(counts, axis=1) - (counts - 1) / 2
    return np.take_along_axis(mid, rows, axis=1).reshape(np.shape(codes))


def spearman(x: ArrayLike, y: ArrayLike) -> float:
    """Spearman's rank correlation (mid-ranks for ties); NaN for fewer than 3 pairs or a constant input."""
    from scipy import stats

    x, y = paired_arrays(x, y)
    return float(_pearson_rows(stats.rankdata(x), stats.rankdata(y))) if len(x) >= MIN_PAIRS else math.nan


def kendall(x: ArrayLike, y: ArrayLike) -> float:
    """Kendall's tau-b (corrects for ties, which S has when two VLMs share a reference LLM)."""
    from scipy import stats

    x, y = paired_arrays(x, y)
    if len(x) < MIN_PAIRS:
        return math.nan
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        return float(stats.kendalltau(x, y).statistic)


def spearman_bootstrap_ci(
    x: ArrayLike, y: ArrayLike, *, seed: int, confidence: float = 0.95, n_resamples: int | None = None
) -> tuple[float, float]:
    """Percentile bootstrap interval of Spearman's rho, resampling whole (exchangeable) pairs, seeded, with
    :func:`default_resamples` resamples unless told; resamples where rho is undefined are dropped. With n this
    small the interval is wide and its coverage approximate."""
    x, y = paired_arrays(x, y)
    if len(x) < MIN_PAIRS:
        return math.nan, math.nan
    # Resampled as value codes (the resampling draws the same pairs whatever they hold), ranked by counting.
    (distinct_x, codes_x), (distinct_y, codes_y) = (np.unique(v, return_inverse=True) for v in (x, y))

    def spearman_rows(a: np.ndarray, b: np.ndarray, axis: int = -1) -> np.ndarray:
        ranks_a, ranks_b = resample_ranks(a, distinct_x.size), resample_ranks(b, distinct_y.size)
        return _pearson_rows(ranks_a, ranks_b, axis=axis)

    resamples = n_resamples or default_resamples(len(x))
    return percentile_interval(
        bootstrap(spearman_rows, codes_x, codes_y, resamples=resamples, seed=seed), confidence
    )


def permutation_p_value(x: ArrayLike, y: ArrayLike, *, seed: int, n_resamples: int | None = None) -> float:
    """Two-sided permutation p-value (twice the smaller one-sided, capped at 1) of Spearman's rho under H0: S and
    delta are unrelated. ``scipy.stats.permutation_test`` of the pairings: exact for n <=
    :data:`EXACT_PERMUTATION_MAX_N`, else seeded Monte-Carlo with ``n_resamples`` (default
    :func:`default_resamples`) pairings, counting the observed one too."""
    from scipy import stats

    x, y = paired_arrays(x, y)
    if len(x) < MIN_PAIRS or np.ptp(x) == 0 or np.ptp(y) == 0:
        return math.nan
    rank_x, rank_y = stats.rankdata(x), stats.rankdata(y)
    result = stats.permutation_test(
        (rank_x,),
        lambda ranks, axis=-1: _pearson_rows(ranks, rank_y, axis=axis),
        permutation_type="pairings",
        vectorized=True,
        n_resamples=np.inf if len(x) <= EXACT_PERMUTATION_MAX_N else n_resamples or default_resamples(len(x)),
        alternative="two-sided",
        rng=np.random.default_rng(seed),
    )
    return float(result.pvalue)
