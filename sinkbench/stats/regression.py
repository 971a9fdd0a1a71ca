"""The straight line of delta on S over the pairs: the least-squares fit with its t prediction interval
(:func:`fit_line`, :class:`LinearFit`), its leave-one-pair-out lines, predictions and error against the constant-mean
baseline (:func:`loo_lines`, :func:`loo_mae`, :func:`baseline_mae`: the protocol of arXiv 2609.00746, Tables 4 and
10), and the bootstrap of the difference in expected delta between points (:func:`line_differences`). Undefined
values are NaN (or None for no line), never raised."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike

from sinkbench.stats.correlation import MIN_PAIRS
from sinkbench.stats.resampling import bootstrap, default_resamples, paired_arrays


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
        """Interval for a NEW observation at ``x`` (:func:`t_half_width`), assuming independent, normal,
        equal-variance residuals (with a handful of pairs, a rough band). NaN for n < 3."""
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

    x, y = paired_arrays(x, y)
    if len(x) < 2 or np.ptp(x) == 0:
        return None
    fit = stats.linregress(x, y)
    residuals = y - (fit.intercept + fit.slope * x)
    dof = len(x) - 2
    residual_sd = math.sqrt(float(residuals @ residuals) / dof) if dof > 0 else math.nan
    sum_squares = float(((x - x.mean()) ** 2).sum())
    return LinearFit(
        float(fit.slope), float(fit.intercept), len(x), residual_sd, float(x.mean()), sum_squares
    )


def loo_lines(x: ArrayLike, y: ArrayLike) -> tuple[np.ndarray, np.ndarray]:
    """Slope and intercept of the least-squares line through all pairs but pair i, for every i (refitting
    ``scipy.stats.linregress`` n times, vectorised: the totals of centred data minus pair i's terms). NaN where the
    other pairs share one S value (no line) or fewer than two remain."""
    x, y = paired_arrays(x, y)
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
    x, y = paired_arrays(x, y)
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
    """The difference in expected y of the least-squares line of y on x between points ``at``, each against the
    next (``at[i] - at[i + 1]``) and the first against each (``at[0] - at[i]``), as ``slope * (difference of at)``,
    with percentile bootstrap intervals and the share of draws above 0.

    Each draw takes a slope from :func:`bootstrap` over the (x, y) pairs (:func:`default_resamples` draws unless
    told; resamples of one x dropped) and each point from a normal of mean ``at`` and standard deviation ``at_sd``,
    so the points' own uncertainty enters. Assumes exchangeable pairs and x without error. Seeded; points are drawn
    in blocks, in order, so time and memory are O(points).
    """
    x, y = paired_arrays(x, y)
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
