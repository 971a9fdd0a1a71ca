"""Statistics of S against the observed degradation: pure functions on arrays, built on scipy.stats.

The data are a handful of (S, delta) pairs, one per VLM, so every estimator here is chosen for small n:
rank correlations, a percentile bootstrap over pairs, an exact permutation test, and a leave-one-pair-out
1-D least-squares fit compared with a constant-mean baseline (the protocol of arXiv 2609.00746, Tables 4
and 10). Undefined values (too few pairs, constant S) are returned as NaN, never raised.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike
from scipy import stats

#: Up to this many pairs the permutation test enumerates all n! pairings (8! = 40,320).
EXACT_PERMUTATION_MAX_N = 8
#: Resamples of the bootstrap and of the Monte-Carlo permutation test.
N_RESAMPLES = 9999
#: Above this many pairs both draw :data:`N_RESAMPLES_LARGE` resamples instead: each resample costs O(n)
#: or more, and with that many pairs the interval is narrow and the p-value either tiny or not.
LARGE_N = 200
N_RESAMPLES_LARGE = 999
#: Fewest pairs for which correlations and fits are reported.
MIN_PAIRS = 3


def default_resamples(n: int) -> int:
    """Monte-Carlo resamples for n pairs: :data:`N_RESAMPLES`, or :data:`N_RESAMPLES_LARGE` above :data:`LARGE_N`."""
    return N_RESAMPLES if n <= LARGE_N else N_RESAMPLES_LARGE


def _arrays(x: ArrayLike, y: ArrayLike) -> tuple[np.ndarray, np.ndarray]:
    x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    if x.shape != y.shape or x.ndim != 1:
        raise ValueError(f"x and y must be 1-D arrays of one length, got shapes {x.shape} and {y.shape}")
    return x, y


def _pearson_rows(a: np.ndarray, b: np.ndarray, axis: int = -1) -> np.ndarray:
    """Pearson r of rank arrays along ``axis`` (broadcasting), NaN where a row is constant.

    Vectorised over thousands of resamples; ``scipy.stats.pearsonr`` would also compute a p-value per
    row, which costs more than the statistic. Ranks are exact in floating point, so a constant row
    gives exactly 0/0.
    """
    a = a - a.mean(axis=axis, keepdims=True)
    b = b - b.mean(axis=axis, keepdims=True)
    with np.errstate(invalid="ignore", divide="ignore"):
        return (a * b).sum(axis=axis) / np.sqrt((a * a).sum(axis=axis) * (b * b).sum(axis=axis))


def _spearman_rows(x: np.ndarray, y: np.ndarray, axis: int = -1) -> np.ndarray:
    """Spearman's rho along ``axis``: Pearson r of mid-ranks (ties get their average rank)."""
    return _pearson_rows(stats.rankdata(x, axis=axis), stats.rankdata(y, axis=axis), axis=axis)


def resample_ranks(codes: np.ndarray, distinct: int) -> np.ndarray:
    """Mid-ranks along the last axis of rows of value codes (each value's index among the ``distinct`` sorted
    distinct values it was drawn from), as ``stats.rankdata`` ranks the values themselves, without sorting a row: a
    value's rank is the count of the row's values below it plus half its ties (O(rows x n), not O(rows x n log n))."""
    rows = np.asarray(codes).reshape(-1, np.shape(codes)[-1]).astype(np.intp)
    flat = rows + distinct * np.arange(rows.shape[0])[:, None]
    counts = np.bincount(flat.ravel(), minlength=rows.shape[0] * distinct).reshape(rows.shape[0], distinct)
    mid = np.cumsum(counts, axis=1) - (counts - 1) / 2
    return np.take_along_axis(mid, rows, axis=1).reshape(np.shape(codes))


def spearman(x: ArrayLike, y: ArrayLike) -> float:
    """Spearman's rank correlation (mid-ranks for ties); NaN for fewer than 3 pairs or a constant input."""
    x, y = _arrays(x, y)
    return float(_spearman_rows(x, y)) if len(x) >= MIN_PAIRS else math.nan


def kendall(x: ArrayLike, y: ArrayLike) -> float:
    """Kendall's tau-b (corrects for ties, which S has when two VLMs share a reference LLM)."""
    x, y = _arrays(x, y)
    if len(x) < MIN_PAIRS:
        return math.nan
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        return float(stats.kendalltau(x, y).statistic)


def spearman_bootstrap_ci(
    x: ArrayLike, y: ArrayLike, *, seed: int, confidence: float = 0.95, n_resamples: int | None = None
) -> tuple[float, float]:
    """Percentile bootstrap confidence interval of Spearman's rho, resampling whole pairs.

    Assumes the pairs are exchangeable draws; with n this small the interval is wide and its coverage
    only approximate. Resamples in which S or delta is constant (rho undefined) are dropped before the
    percentiles are taken. Draws :func:`default_resamples` resamples unless told. Seeded, so the same
    data give the same interval.
    """
    x, y = _arrays(x, y)
    if len(x) < MIN_PAIRS:
        return math.nan, math.nan
    # Resampled as value codes (the resampling draws the same pairs whatever they hold), ranked by counting.
    (distinct_x, codes_x), (distinct_y, codes_y) = (np.unique(v, return_inverse=True) for v in (x, y))

    def spearman_rows(a: np.ndarray, b: np.ndarray, axis: int = -1) -> np.ndarray:
        ranks_a, ranks_b = resample_ranks(a, distinct_x.size), resample_ranks(b, distinct_y.size)
        return _pearson_rows(ranks_a, ranks_b, axis=axis)

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", stats.DegenerateDataWarning)
        result = stats.bootstrap(
            (codes_x.astype(float), codes_y.astype(float)),
            spearman_rows,
            paired=True,
            vectorized=True,
            n_resamples=n_resamples or default_resamples(len(x)),
            method="percentile",
            rng=np.random.default_rng(seed),
        )
    distribution = result.bootstrap_distribution
    finite = distribution[np.isfinite(distribution)]
    if finite.size == 0:
        return math.nan, math.nan
    tail = 100 * (1 - confidence) / 2
    low, high = np.percentile(finite, [tail, 100 - tail])
    return float(low), float(high)


def permutation_p_value(x: ArrayLike, y: ArrayLike, *, seed: int, n_resamples: int | None = None) -> float:
    """Two-sided permutation p-value of Spearman's rho under H0: S and delta are unrelated.

    Permutes the pairing of S with delta. Exact (all n! pairings enumerated by
    ``scipy.stats.permutation_test``) for n <= :data:`EXACT_PERMUTATION_MAX_N`; above that a seeded
    Monte-Carlo test with ``n_resamples`` (default :func:`default_resamples`) random pairings, whose
    p-value counts the observed pairing too (so it is never below 1/(resamples + 1)).
    Two-sided means twice the smaller one-sided p-value, capped at 1.
    """
    x, y = _arrays(x, y)
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


def t_quantile(confidence: float, dof: int) -> float:
    """The two-sided ``confidence`` quantile of Student's t with ``dof`` degrees of freedom."""
    return float(stats.t.ppf(0.5 + confidence / 2, dof))


@dataclass(frozen=True)
class LinearFit:
    """Ordinary least squares fit ``y = intercept + slope * x`` with what prediction intervals need."""

    slope: float
    intercept: float
    n: int
    residual_sd: float
    x_mean: float
    x_sum_squares: float

    def predict(self, x: ArrayLike) -> np.ndarray:
        """Point predictions at ``x``."""
        return self.intercept + self.slope * np.asarray(x, dtype=float)

    def prediction_interval(self, x: ArrayLike, confidence: float = 0.95) -> tuple[np.ndarray, np.ndarray]:
        """Interval for a NEW observation at ``x``: prediction +- t(n-2) * s * sqrt(1 + 1/n + (x-mean)^2/Sxx).

        Assumes a linear relation with independent, normal, equal-variance residuals; with a handful of
        pairs treat it as a rough band. NaN for n < 3.
        """
        x = np.asarray(x, dtype=float)
        if self.n < MIN_PAIRS:
            nan = np.full_like(x, np.nan)
            return nan, nan
        half = (
            t_quantile(confidence, self.n - 2)
            * self.residual_sd
            * np.sqrt(1 + 1 / self.n + (x - self.x_mean) ** 2 / self.x_sum_squares)
        )
        centre = self.predict(x)
        return centre - half, centre + half


def fit_line(x: ArrayLike, y: ArrayLike) -> LinearFit | None:
    """Least-squares line of y on x (``scipy.stats.linregress``); None for < 2 points or constant x."""
    x, y = _arrays(x, y)
    if len(x) < 2 or np.ptp(x) == 0:
        return None
    fit = stats.linregress(x, y)
    residuals = y - (fit.intercept + fit.slope * x)
    dof = len(x) - 2
    residual_sd = math.sqrt(float(residuals @ residuals) / dof) if dof > 0 else math.nan
    return LinearFit(
        float(fit.slope),
        float(fit.intercept),
        len(x),
        residual_sd,
        float(x.mean()),
        float(((x - x.mean()) ** 2).sum()),
    )


def loo_lines(x: ArrayLike, y: ArrayLike) -> tuple[np.ndarray, np.ndarray]:
    """Slope and intercept of the least-squares line through all pairs but pair i, for every i.

    Exact leave-one-out ordinary least squares, vectorised: the sums of the other pairs are the totals minus pair
    i's terms (on data centred first, for accuracy). Equals refitting ``scipy.stats.linregress`` n times. NaN
    where the other pairs share one S value (no line) or fewer than two remain.
    """
    x, y = _arrays(x, y)
    others = len(x) - 1
    if others < 2:
        return np.full(len(x), np.nan), np.full(len(x), np.nan)
    x_mean, y_mean = x.mean(), y.mean()
    xc, yc = x - x_mean, y - y_mean
    sum_x, sum_y = xc.sum() - xc, yc.sum() - yc
    var = (xc @ xc - xc**2) - sum_x**2 / others
    cov = (xc @ yc - xc * yc) - sum_x * sum_y / others
    with np.errstate(invalid="ignore", divide="ignore"):  # no line: NaN, set below
        slope = cov / var
        intercept = y_mean + (sum_y - slope * sum_x) / others - slope * x_mean
    degenerate = var <= 1e-12 * max(1.0, float(xc @ xc))
    return np.where(degenerate, np.nan, slope), np.where(degenerate, np.nan, intercept)


def loo_predictions(x: ArrayLike, y: ArrayLike) -> np.ndarray:
    """Held-out predictions: pair i predicted by the least-squares line through all other pairs
    (:func:`loo_lines`). NaN where that line does not exist."""
    slope, intercept = loo_lines(x, y)
    return intercept + slope * np.asarray(x, dtype=float)


def loo_mae(x: ArrayLike, y: ArrayLike) -> float:
    """Leave-one-pair-out mean absolute error of the 1-D linear fit of delta on S (Table 4)."""
    x, y = _arrays(x, y)
    if len(x) < MIN_PAIRS:
        return math.nan
    errors = np.abs(loo_predictions(x, y) - y)
    return float(errors.mean()) if np.isfinite(errors).all() else math.nan


def baseline_mae(y: ArrayLike) -> float:
    """Leave-one-pair-out MAE of the constant baseline: pair i predicted by the mean of the others."""
    y = np.asarray(y, dtype=float)
    n = len(y)
    if n < MIN_PAIRS:
        return math.nan
    others_mean = (y.sum() - y) / (n - 1)
    return float(np.abs(others_mean - y).mean())


def paired_bootstrap_delta(
    reference: ArrayLike,
    vlm: ArrayLike,
    *,
    seed: int,
    confidence: float = 0.95,
    n_resamples: int = N_RESAMPLES,
) -> tuple[float, float]:
    """Percentile bootstrap interval of ``mean(vlm) - mean(reference)`` in points, resampling prompts in pairs.

    ``reference`` and ``vlm`` hold one outcome per prompt (pass 1, fail 0), aligned by prompt: each resample
    draws prompts with replacement and keeps both sides of every drawn prompt, so the interval reflects the
    prompt-to-prompt correlation of the two models. Assumes prompts are exchangeable; seeded.
    """
    x, y = _arrays(reference, vlm)
    if len(x) < 2:
        return math.nan, math.nan
    result = stats.bootstrap(
        (x, y),
        lambda a, b, axis=-1: 100.0 * (b.mean(axis=axis) - a.mean(axis=axis)),
        paired=True,
        vectorized=True,
        n_resamples=n_resamples,
        method="percentile",
        confidence_level=confidence,
        rng=np.random.default_rng(seed),
    )
    return float(result.confidence_interval.low), float(result.confidence_interval.high)
