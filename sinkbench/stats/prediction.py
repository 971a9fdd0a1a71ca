"""Prediction intervals for the delta of a new pair from the straight-line fit of delta on S, and how often they
have held on the pairs themselves (leave-one-pair-out coverage). Two methods, in :data:`METHODS`:

- ``t``: the classical interval for a new observation of an ordinary least-squares line,
  prediction ± t(n-2) · s · sqrt(1 + 1/n + (x - mean)² / Sxx); exact only for independent, normal, equal-variance
  errors (heavy tails make it too short).
- ``jackknife+`` (Barber, Candès, Ramdas & Tibshirani, Annals of Statistics 49(1), 2021): from the n leave-one-out
  lines and their held-out residuals R_i, the interval at x runs from the (n+1-k)-th smallest of line_-i(x) - R_i
  to the k-th smallest of line_-i(x) + R_i. For exchangeable pairs and ANY error distribution it covers at least
  1 - 2α, with 1 - α = k/(n+1) its nominal level (in practice close to 1 - α). Only k/(n+1), k <= n, are attainable
  (17 pairs: at most 94.4%; 6 pairs: 85.7%): :func:`jackknife_plus_rank` picks the smallest k reaching the level
  asked for, else k = n (the level is then stated as what it is).

Predictions use :data:`PREDICTION_METHOD` (jackknife+): the board's deltas have heavy tails, and when it was chosen
(2026-12-01, issue 25) the t interval held 14 of the 17 IFEval pairs left out at a nominal 95%, jackknife+ 16 of 17
at 16/17. Split-conformal would set aside pairs that 6 to 17 pairs cannot spare.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike

from sinkbench.stats.correlation import MIN_PAIRS
from sinkbench.stats.regression import fit_line, loo_lines, t_half_width

#: The level asked for; jackknife+ states the level it can attain (see :func:`jackknife_plus_rank`).
CONFIDENCE = 0.95
#: The method whose interval the board's and ``sinkbench screen``'s predictions carry.
PREDICTION_METHOD = "jackknife+"

#: Most cells (held-out pairs x pairs) :func:`jackknife_plus_held_out` computes at once: its arrays stay in the
#: processor's cache.
_HELD_OUT_CELLS = 1 << 17
#: (low, high) arrays at the new S values.
Bounds = tuple[np.ndarray, np.ndarray]


def t_interval(x: ArrayLike, y: ArrayLike, x_new: ArrayLike, confidence: float = CONFIDENCE) -> Bounds:
    """The t prediction interval of :meth:`~.regression.LinearFit.prediction_interval` at ``x_new``; NaN without a
    line or with fewer than 3 pairs."""
    fit = fit_line(x, y)
    if fit is None:
        nan = np.full(np.shape(np.asarray(x_new, dtype=float)), np.nan)
        return nan, nan.copy()
    return fit.prediction_interval(x_new, confidence)


def t_held_out(x: ArrayLike, y: ArrayLike, confidence: float = CONFIDENCE) -> Bounds:
    """For each pair i, the t interval at x_i of the line through all other pairs, vectorised: the line of
    :func:`~.regression.loo_lines`, residual sum of squares SSE - e_i² / (1 - h_i) (e_i the full fit's residual, h_i
    its leverage). NaN below 4 pairs or where the other pairs share one S."""
    x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    n = len(x)
    if n <= MIN_PAIRS or np.ptp(x) == 0:
        return np.full(n, np.nan), np.full(n, np.nan)
    slope, intercept = loo_lines(x, y)
    x_mean, deviation = x.mean(), x - x.mean()
    sxx = float(deviation @ deviation)
    fit = fit_line(x, y)
    residuals = y - fit.predict(x)
    with np.errstate(invalid="ignore", divide="ignore"):
        sse = float(residuals @ residuals) - residuals**2 / (1 - (1 / n + deviation**2 / sxx))
        others_mean = (n * x_mean - x) / (n - 1)
        others_sxx = sxx - n / (n - 1) * deviation**2
        sd = np.sqrt(np.maximum(sse, 0.0) / (n - 3))
        half = t_half_width(x, n - 1, sd, others_mean, others_sxx, confidence)
    centre = intercept + slope * x
    return centre - half, centre + half


def t_level(n: int, confidence: float = CONFIDENCE) -> float:
    """The t interval's nominal level with ``n`` pairs: ``confidence``; NaN below 3 pairs."""
    return confidence if n >= MIN_PAIRS else math.nan


def jackknife_plus_rank(n: int, confidence: float = CONFIDENCE) -> int:
    """k of the jackknife+ interval with ``n`` pairs: the smallest k with k/(n+1) >= ``confidence``, at most n
    (the widest finite interval)."""
    return min(n, math.ceil(round(confidence * (n + 1), 9)))


def jackknife_plus_level(n: int, confidence: float = CONFIDENCE) -> float:
    """The nominal level k/(n+1) jackknife+ attains with ``n`` pairs (k: :func:`jackknife_plus_rank`); NaN below
    3 pairs."""
    return jackknife_plus_rank(n, confidence) / (n + 1) if n >= MIN_PAIRS else math.nan


def jackknife_plus_held_out(x: ArrayLike, y: ArrayLike, confidence: float = CONFIDENCE) -> Bounds:
    """For each pair i, :func:`jackknife_plus_interval` at x_i from the n - 1 other pairs (nested leave-one-out
    lines through all pairs but i and j), a block of held-out pairs at a time, each line from the centred totals
    minus the two pairs' terms. NaN where the others are fewer than 3 or some line among them does not exist."""
    x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    n = len(x)
    lows, highs = np.full(n, np.nan), np.full(n, np.nan)
    if n - 1 < MIN_PAIRS:
        return lows, highs
    k, kept = jackknife_plus_rank(n - 1, confidence), n - 2  # pairs in each inner line
    xc, yc = x - x.mean(), y - y.mean()
    sum_x, sum_y, sum_xx, sum_xy = xc.sum(), yc.sum(), xc @ xc, xc @ yc
    square_x, product, x_mean, y_mean = xc**2, xc * yc, x.mean(), y.mean()
    block = max(1, _HELD_OUT_CELLS // n)
    for start in range(0, n, block):
        held = np.arange(start, min(start + block, n))
        i, diagonal = held[:, None], (np.arange(len(held)), held)  # held out; j = i: no inner line
        rest_x, rest_y = (sum_x - xc[i]) - xc, (sum_y - yc[i]) - yc
        var = ((sum_xx - xc[i] ** 2) - square_x) - rest_x**2 / kept
        cov = ((sum_xy - xc[i] * yc[i]) - product) - rest_x * rest_y / kept
        with np.errstate(invalid="ignore", divide="ignore"):  # no line: NaN or inf, masked below
            slope = cov / var
            rest_x /= kept
            rest_x += x_mean
            rest_x *= slope
            rest_y /= kept
            rest_y += y_mean
            intercept = np.subtract(rest_y, rest_x, out=rest_y)
            residuals = np.multiply(slope, x, out=rest_x)
            residuals += intercept
            np.subtract(y, residuals, out=residuals)
            np.abs(residuals, out=residuals)  # pair j against the line without i and j
            at_held_out = np.multiply(slope, x[i], out=cov)
            at_held_out += intercept
            exists = np.isfinite(slope)
            # loo_lines' no-line rule, on the scale of all the data: the two pairs' terms taken off the totals
            # leave rounding noise of that scale where the others share one S
            exists &= var > 1e-12 * max(1.0, sum_xx)
            exists[diagonal] = True
            every_line = exists.all(axis=1)
            values = np.subtract(at_held_out, residuals, out=var)
            values[diagonal] = np.inf
            low = np.partition(values, n - 1 - k, axis=1)[:, n - 1 - k]
            values = np.add(at_held_out, residuals, out=slope)
            values[diagonal] = np.inf
            high = np.partition(values, k - 1, axis=1)[:, k - 1]
        lows[held] = np.where(every_line, low, np.nan)
        highs[held] = np.where(every_line, high, np.nan)
    return lows, highs


def jackknife_plus_guarantee(level: float) -> float:
    """The coverage jackknife+ guarantees at nominal ``level`` = 1 - α for exchangeable pairs: 1 - 2α (Barber et
    al. 2021, Theorem 1), never below 0."""
    return max(0.0, 2 * level - 1) if math.isfinite(level) else math.nan


def jackknife_plus_interval(
    x: ArrayLike, y: ArrayLike, x_new: ArrayLike, confidence: float = CONFIDENCE
) -> Bounds:
    """The jackknife+ prediction interval (module docstring) of the least-squares line of y on x at ``x_new``,
    from the lines of :func:`~.regression.loo_lines`, k from :func:`jackknife_plus_rank`. NaN with fewer than 3
    pairs or when some leave-one-out line does not exist (the other pairs share one S)."""
    x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    x_new = np.asarray(x_new, dtype=float)
    slope, intercept = loo_lines(x, y)
    n = len(x)
    if n < MIN_PAIRS or not np.isfinite(slope).all():
        nan = np.full(x_new.shape, np.nan)
        return nan, nan.copy()
    residuals = np.abs(y - (intercept + slope * x))  # each pair against the line fitted without it
    k = jackknife_plus_rank(n, confidence)
    flat = x_new.reshape(-1)
    low = order_statistic_of_lines(intercept, slope, -residuals, flat, n - k)
    high = order_statistic_of_lines(intercept, slope, residuals, flat, k - 1)
    return low.reshape(x_new.shape), high.reshape(x_new.shape)


#: New x values per block of :func:`order_statistic_of_lines`.
_LINES_BLOCK = 128


def order_statistic_of_lines(
    intercept: np.ndarray, slope: np.ndarray, shift: np.ndarray, x_new: np.ndarray, rank: int
) -> np.ndarray:
    """At each of ``x_new`` (1-D), the ``rank``-th smallest (0-based) over lines i of
    ``(intercept[i] + slope[i] * x) + shift[i]``, bit for bit the value sorting all of them gives (NaN at a NaN x).

    The x are taken in sorted blocks; a line's floating-point value is monotone in x, so over a block it lies
    between its values at the ends, [L_i, U_i]. Lines entirely below the ``rank``-th smallest L..U range are
    counted, those above dropped, and only the rest evaluated (jackknife+'s lines are nearly parallel: few remain).
    """
    found = np.full(x_new.shape, np.nan)
    finite = np.flatnonzero(~np.isnan(x_new))
    order = finite[np.argsort(x_new[finite], kind="stable")]
    for start in range(0, len(order), _LINES_BLOCK):
        at = order[start : start + _LINES_BLOCK]
        ends = (intercept + slope * x_new[at[0]]) + shift, (intercept + slope * x_new[at[-1]]) + shift
        lower, upper = np.minimum(*ends), np.maximum(*ends)
        least = np.partition(lower, rank)[rank]
        most = np.partition(upper, rank)[rank]
        below = upper < least
        kept = ~below & (lower <= most)
        values = (intercept[kept] + slope[kept] * x_new[at, None]) + shift[kept]
        inner = rank - int(below.sum())
        found[at] = np.partition(values, inner, axis=1)[:, inner]
    return found


@dataclass(frozen=True)
class IntervalMethod:
    """A prediction interval method: its interval, the level it attains with n pairs, and the coverage it
    guarantees without assuming normal errors at that level (NaN: none)."""

    name: str
    column: str
    interval: Callable[[ArrayLike, ArrayLike, ArrayLike, float], Bounds]
    held_out: Callable[[ArrayLike, ArrayLike, float], Bounds]
    level: Callable[[int, float], float]
    guarantee: Callable[[float], float]


METHODS: dict[str, IntervalMethod] = {
    "t": IntervalMethod("t", "t", t_interval, t_held_out, t_level, lambda level: math.nan),
    "jackknife+": IntervalMethod(
        "jackknife+",
        "jackknife_plus",
        jackknife_plus_interval,
        jackknife_plus_held_out,
        jackknife_plus_level,
        jackknife_plus_guarantee,
    ),
}


@dataclass(frozen=True)
class Coverage:
    """Leave-one-pair-out check of one method on one task: each pair's delta against the interval the other pairs
    give at its S. ``level`` and ``guarantee`` are the held-out intervals' (from n - 1 pairs); ``checked`` counts the
    pairs whose interval exists; ``outside`` holds the input positions of those that fell outside; ``lows`` and
    ``highs`` are the held-out intervals, in input order (NaN where none exists)."""

    method: str
    level: float
    guarantee: float
    covered: int
    checked: int
    median_width: float
    outside: tuple[int, ...]
    lows: tuple[float, ...] = ()
    highs: tuple[float, ...] = ()


def loo_coverage(x: ArrayLike, y: ArrayLike, method: str, confidence: float = CONFIDENCE) -> Coverage:
    """How often ``method``'s interval from all other pairs contained each pair's delta (closed interval). The
    checks share their data: covered/checked describes these pairs, not a binomial sample. Needs 4 pairs."""
    x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    spec = METHODS[method]
    n = len(x)
    level = spec.level(n - 1, confidence) if n > MIN_PAIRS else math.nan
    lows, highs = spec.held_out(x, y, confidence) if n > MIN_PAIRS else (np.full(n, np.nan),) * 2
    checked = np.isfinite(lows) & np.isfinite(highs)
    inside = checked & (lows <= y) & (y <= highs)
    widths = (highs - lows)[checked]
    return Coverage(
        method=method,
        level=level,
        guarantee=spec.guarantee(level),
        covered=int(inside.sum()),
        checked=int(checked.sum()),
        median_width=float(np.median(widths)) if widths.size else math.nan,
        outside=tuple(int(i) for i in np.flatnonzero(checked & ~inside)),
        lows=tuple(float(value) for value in lows),
        highs=tuple(float(value) for value in highs),
    )
