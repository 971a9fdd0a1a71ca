"""The project's statistics, in one place: pure functions on arrays, built on numpy and scipy.stats, imported by
the probe (S's interval, :mod:`sinkbench.sink.uncertainty`), the tables and the experiments.

- Resampling: the nonparametric bootstrap over units (:func:`bootstrap`, the draw ``scipy.stats.bootstrap``
  makes) and the cluster bootstrap of a pooled median (:func:`bootstrap_pooled_median`, S over prompts), with the
  percentile interval of their replicates (:func:`percentile_interval`, :func:`bootstrap_interval`).
- Observed deltas of pass/fail scores: the paired bootstrap over prompts, from both sides' outcomes
  (:func:`paired_bootstrap_delta`) or from the four outcome counts (:func:`paired_counts_delta`), and Newcombe's
  unpaired interval from two scores and their prompt counts (:func:`unpaired_delta_interval`).
- Tests: the exact sign-flip test of paired differences (:func:`sign_flip_p`) and its power
  (:func:`minimum_detectable_difference`), and the permutation test of a rank correlation
  (:func:`permutation_p_value`).
- S against the observed degradation, a handful of (S, delta) pairs, one per VLM, so every estimator is chosen for
  small n: rank correlations with a percentile bootstrap over pairs, and a leave-one-pair-out 1-D least-squares
  fit compared with a constant-mean baseline (the protocol of arXiv 2609.00746, Tables 4 and 10).

Undefined values (too few pairs, constant S) are returned as NaN, never raised. ``scipy.stats`` is imported inside
the functions that use it: the probe's path (S's interval) needs none of it.
"""

from __future__ import annotations

import functools
import math
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike

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


def bootstrap(
    statistic: Callable[..., np.ndarray], *samples: ArrayLike, resamples: int, seed: int
) -> np.ndarray:
    """Replicates of ``statistic`` under the nonparametric bootstrap over units.

    Each resample draws n units with replacement, ``numpy.random.default_rng(seed).integers(0, n, (resamples, n))``
    (the draw of ``scipy.stats.bootstrap``, so its distribution to the last bit), and keeps every sample's value of
    each drawn unit: samples (1-D, aligned by unit) given together stay paired. ``statistic(*resampled, axis=-1)``
    reduces the last axis. Assumes the units are exchangeable.
    """
    arrays = [np.asarray(sample) for sample in samples]
    n = len(arrays[0])
    rows = np.random.default_rng(seed).integers(0, n, size=(resamples, n))
    return np.asarray(statistic(*(array[rows] for array in arrays), axis=-1))


def percentile_interval(replicates: ArrayLike, confidence: float) -> tuple[float, float]:
    """The percentile bootstrap interval: the 50(1 - confidence) and 100 - 50(1 - confidence) percentiles of the
    replicates (numpy's), NaN replicates (the statistic undefined on that resample) left out; NaN when none is
    left. Its coverage is only approximate, the poorer the fewer the units and the more skewed the statistic."""
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
    """The percentile interval of ``statistic`` under the bootstrap of :func:`bootstrap` (the same draws, samples
    paired by unit), as ``scipy.stats.bootstrap`` computes it, for a statistic defined on every resample.

    Its quantiles are ``scipy.stats.quantile``'s, which can differ from :func:`percentile_interval`'s numpy
    percentiles in the last digit; the results files of the experiments and the board's paired deltas carry these.
    """
    from scipy import stats

    result = stats.bootstrap(
        samples,
        statistic,
        paired=True,
        vectorized=True,
        n_resamples=resamples,
        method="percentile",
        confidence_level=confidence,
        rng=np.random.default_rng(seed),
    )
    return float(result.confidence_interval.low), float(result.confidence_interval.high)


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
    """Replicates of the median of all groups' values pooled, under the cluster bootstrap over groups.

    Each resample draws as many groups as given, with replacement (multinomial counts from
    ``numpy.random.default_rng(seed)``), and pools every value of each drawn group (a group drawn twice counts
    twice). Groups are the unit because values within a group are not independent; assumes the groups are
    exchangeable. A resample whose groups hold no value gives NaN.

    Computed without concatenating: the pooled values are sorted once, a resample is a vector of group
    multiplicities, and its two middle values are found by a binary search over the sorted pool (numpy's median:
    the mean of the two middle values when the count is even).
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


def sign_flip_p(differences: ArrayLike) -> float:
    """Exact two-sided sign-flip p-value of H0: the paired differences are symmetric about 0.

    Estimator: ``scipy.stats.permutation_test`` of the mean with ``permutation_type="samples"`` against zeros,
    all 2^n sign patterns enumerated. Assumes independent differences; its smallest value is 2^(1-n) (2/256 with
    8). NaN below 2 differences.
    """
    from scipy import stats

    differences = np.asarray(differences, dtype=float)
    if len(differences) < 2:
        return math.nan
    result = stats.permutation_test(
        (differences, np.zeros_like(differences)),
        lambda x, y, axis=-1: np.mean(x - y, axis=axis),
        permutation_type="samples",
        vectorized=True,
        n_resamples=np.inf,
        alternative="two-sided",
    )
    return float(result.pvalue)


def _sign_flip_p_rows(samples: np.ndarray) -> np.ndarray:
    """:func:`sign_flip_p` of each row of the 2-D ``samples``, vectorised over rows for the power simulation.

    Ties count within an absolute 1e-12, where scipy's tolerance is relative to the observed mean: the two differ
    only when that mean is 0 up to rounding (scipy can then give less than 1).
    """
    n = samples.shape[1]
    signs = np.array(np.meshgrid(*[[1.0, -1.0]] * n)).reshape(n, -1)  # (n, 2^n)
    null = np.abs(samples @ signs) / n
    observed = np.abs(samples.mean(axis=1, keepdims=True))
    return (null >= observed - 1e-12).mean(axis=1)


def minimum_detectable_difference(
    sd: float, n: int, resolution: float = 0.0, *, alpha: float = 0.05, power: float = 0.8, seed: int = 0
) -> float:
    """Smallest mean difference the exact sign-flip test (two-sided, level ``alpha``) detects with ``power``.

    Simulated with 4,000 samples of ``n`` normal differences of standard deviation ``sd`` (seeded), each
    rounded to a multiple of ``resolution`` when it is positive (a run's score moves in whole prompts), on a grid
    of 0.05 sd (or of ``resolution`` / 20 when finer). Infinity when 2^(1-n) > alpha (too few differences: nothing
    is detectable); NaN when ``sd`` is not positive (no spread to simulate from).
    """
    if 2.0 ** (1 - n) > alpha:
        return math.inf
    if not sd > 0:
        return math.nan
    noise = np.random.default_rng(seed).standard_normal((4000, n)) * sd
    step = min(0.05 * sd, resolution / 20) if resolution > 0 else 0.05 * sd
    for mean in np.arange(step, 10 * sd + 10 * resolution, step):
        samples = mean + noise
        if resolution > 0:
            samples = resolution * np.round(samples / resolution)
        if (_sign_flip_p_rows(samples) <= alpha).mean() >= power:
            return float(mean)
    return math.inf


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
    from scipy import stats

    x, y = _arrays(x, y)
    return float(_pearson_rows(stats.rankdata(x), stats.rankdata(y))) if len(x) >= MIN_PAIRS else math.nan


def kendall(x: ArrayLike, y: ArrayLike) -> float:
    """Kendall's tau-b (corrects for ties, which S has when two VLMs share a reference LLM)."""
    from scipy import stats

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

    resamples = n_resamples or default_resamples(len(x))
    return percentile_interval(
        bootstrap(spearman_rows, codes_x, codes_y, resamples=resamples, seed=seed), confidence
    )


def permutation_p_value(x: ArrayLike, y: ArrayLike, *, seed: int, n_resamples: int | None = None) -> float:
    """Two-sided permutation p-value of Spearman's rho under H0: S and delta are unrelated.

    Permutes the pairing of S with delta. Exact (all n! pairings enumerated by
    ``scipy.stats.permutation_test``) for n <= :data:`EXACT_PERMUTATION_MAX_N`; above that a seeded
    Monte-Carlo test with ``n_resamples`` (default :func:`default_resamples`) random pairings, whose
    p-value counts the observed pairing too (so it is never below 1/(resamples + 1)).
    Two-sided means twice the smaller one-sided p-value, capped at 1.
    """
    from scipy import stats

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


def t_half_width(
    x: np.ndarray,
    n: int,
    residual_sd: ArrayLike,
    x_mean: ArrayLike,
    x_sum_squares: ArrayLike,
    confidence: float,
) -> np.ndarray:
    """Half-width of the t interval for a new observation at ``x`` of a least-squares line through ``n`` points:
    t(n-2) * s * sqrt(1 + 1/n + (x - mean)^2 / Sxx), t the two-sided ``confidence`` quantile of Student's t."""
    from scipy import stats

    t = float(stats.t.ppf(0.5 + confidence / 2, n - 2))
    return t * residual_sd * np.sqrt(1 + 1 / n + (x - x_mean) ** 2 / x_sum_squares)


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
        half = t_half_width(x, self.n, self.residual_sd, self.x_mean, self.x_sum_squares, confidence)
        centre = self.predict(x)
        return centre - half, centre + half


def fit_line(x: ArrayLike, y: ArrayLike) -> LinearFit | None:
    """Least-squares line of y on x (``scipy.stats.linregress``); None for < 2 points or constant x."""
    from scipy import stats

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
    """:func:`paired_bootstrap_delta` over the prompts that per-prompt outcome counts describe: ``both_pass``
    prompts passed by both models, ``lost`` by the reference only, ``gained`` by the VLM only, ``both_fail`` by
    neither. The four counts are all the paired bootstrap of a pass/fail delta needs: its replicates have the same
    distribution as over the prompts themselves (a seeded draw of them in another order may differ in the last
    digit). NaN for fewer than 2 prompts.

    Computed from the counts, not the prompts: over the prompts ordered both pass, lost, gained, both fail (the
    order :func:`paired_bootstrap_delta` would be given them in), a resample's pass counts are differences of its
    cumulative histogram (:func:`_drawn_below`, one per prompt count and seed), so each interval costs
    O(resamples) and the draw is shared by every pair of the same prompt count. The replicates are those of
    :func:`paired_bootstrap_delta` on those prompts to the last bit (sums of 0/1 are exact), and so is their
    interval (:func:`_bootstrap_percentile_ends`)."""
    n = both_pass + lost + gained + both_fail
    if n < 2:
        return math.nan, math.nan
    below = _drawn_below(n, seed, n_resamples)
    reference = below[both_pass + lost]
    vlm = below[both_pass] + below[both_pass + lost + gained] - reference
    return _bootstrap_percentile_ends(100.0 * (vlm / n - reference / n), confidence)


def _bootstrap_percentile_ends(replicates: np.ndarray, confidence: float) -> tuple[float, float]:
    """The percentile interval ``scipy.stats.bootstrap`` takes of its replicates (``scipy.stats.quantile``'s
    default, Hyndman and Fan's method 7, at (1 - confidence)/2 and its complement), to the last bit, from the
    four order statistics it reads (a partition, not a sort)."""
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


@functools.lru_cache(maxsize=4)
def _drawn_below(n: int, seed: int, resamples: int) -> np.ndarray:
    """Per resample of :func:`bootstrap`'s draw over n units, how many drawn units fall below each position:
    ``result[k, r]`` counts the draws of resample r below unit k (k from 0 to n). Read-only; cached."""
    rows = np.random.default_rng(seed).integers(0, n, size=(resamples, n))
    offsets = (np.arange(resamples) * (n + 1))[:, None]
    counts = np.bincount((rows + offsets).ravel(), minlength=resamples * (n + 1)).astype(np.int32)
    below = np.zeros((n + 1, resamples), dtype=np.int32)
    np.cumsum(counts.reshape(resamples, n + 1)[:, :-1].T, axis=0, out=below[1:])
    below.setflags(write=False)
    return below


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
    """Interval of ``vlm - reference`` in points for two shares of prompts passed (scores in points, 0-100) on
    ``n_reference`` and ``n_vlm`` prompts, taken as independent: Newcombe's hybrid score interval (Newcombe 1998,
    *Statistics in Medicine* 17:873, method 10), from the two :func:`wilson_interval`.

    Ignoring that the two models answered the same prompts, it is wider than the paired interval whenever their
    outcomes agree more often than chance. NaN when a count is below 1 or a score outside 0-100."""
    p1, p2 = reference / 100.0, vlm / 100.0
    if n_reference < 1 or n_vlm < 1 or not (0 <= p1 <= 1 and 0 <= p2 <= 1):
        return math.nan, math.nan
    (low1, high1), (low2, high2) = (
        wilson_interval(p1, n_reference, confidence),
        wilson_interval(p2, n_vlm, confidence),
    )
    delta = p2 - p1
    low = delta - math.sqrt((p2 - low2) ** 2 + (high1 - p1) ** 2)
    high = delta + math.sqrt((high2 - p2) ** 2 + (p1 - low1) ** 2)
    return 100.0 * low, 100.0 * high


@dataclass(frozen=True)
class LineDifferences:
    """Differences of a fitted line's expected value between ordered points, each against the next point and the
    first: point estimates, percentile interval bounds, and the share of draws above zero (NaN where undefined)."""

    next: np.ndarray
    next_low: np.ndarray
    next_high: np.ndarray
    next_share: np.ndarray
    first: np.ndarray
    first_low: np.ndarray
    first_high: np.ndarray
    first_share: np.ndarray


def _slope_rows(x: np.ndarray, y: np.ndarray, axis: int = -1) -> np.ndarray:
    """Least-squares slope of y on x along ``axis``; NaN where x is constant."""
    xc = x - x.mean(axis=axis, keepdims=True)
    with np.errstate(invalid="ignore", divide="ignore"):
        return (xc * y).sum(axis=axis) / (xc * xc).sum(axis=axis)


#: Points per block of :func:`line_differences` (bounds its memory: draws x block floats at a time).
_BLOCK = 256


def line_differences(
    x: ArrayLike,
    y: ArrayLike,
    at: ArrayLike,
    at_sd: ArrayLike,
    *,
    seed: int,
    confidence: float = 0.95,
    resamples: int | None = None,
) -> LineDifferences:
    """The difference in expected y of the least-squares line of y on x between points ``at`` (in the order
    given), each against the next (``at[i]`` minus ``at[i + 1]``) and the first against each (``at[0]`` minus
    ``at[i]``), as ``slope * (difference of at)``, with percentile bootstrap intervals.

    Each draw takes a slope from the bootstrap over the (x, y) pairs (:func:`bootstrap`, :func:`default_resamples`
    draws unless told; resamples of one x dropped) and every point from a normal distribution centred on ``at``
    with standard deviation ``at_sd``, independently, so the points' own uncertainty enters the difference.
    Assumes exchangeable pairs and x measured without error. Seeded; vectorised over draws, and O(points) in time
    and memory (points are drawn in blocks, in order). ``share``: the share of draws whose difference is above 0.
    """
    x, y = _arrays(x, y)
    at, at_sd = np.asarray(at, dtype=float), np.asarray(at_sd, dtype=float)
    nan = np.full(len(at), np.nan)
    fit = fit_line(x, y)
    if fit is None or len(x) < MIN_PAIRS or len(at) == 0:
        return LineDifferences(*[nan] * 8)
    slopes = bootstrap(_slope_rows, x, y, resamples=resamples or default_resamples(len(x)), seed=seed)
    slopes = slopes[np.isfinite(slopes)]
    rng = np.random.default_rng([seed, 1])
    tail = 50.0 * (1.0 - confidence)
    found = {f"{kind}_{part}": nan.copy() for kind in ("next", "first") for part in ("low", "high", "share")}

    def summarise(kind: str, where: slice, gaps: np.ndarray) -> None:
        draws = slopes * gaps  # (points, draws)
        found[f"{kind}_low"][where], found[f"{kind}_high"][where] = np.percentile(
            draws, [tail, 100 - tail], axis=1
        )
        found[f"{kind}_share"][where] = (draws > 0).mean(axis=1)

    first = previous = None
    for start in range(0, len(at), _BLOCK):
        stop = min(start + _BLOCK, len(at))
        block = at[start:stop, None] + at_sd[start:stop, None] * rng.standard_normal(
            (stop - start, slopes.size)
        )
        first = block[:1] if first is None else first
        summarise("first", slice(start, stop), first - block)
        chain = block if previous is None else np.vstack([previous, block])
        summarise("next", slice(stop - len(chain), stop - 1), chain[:-1] - chain[1:])
        previous = block[-1:]
    found["next"] = fit.slope * np.append(at[:-1] - at[1:], np.nan)
    found["first"] = fit.slope * (at[0] - at)
    return LineDifferences(**found)
