"""The exact sign-flip test of paired differences (:func:`sign_flip_p`) and the smallest mean difference it detects
(:func:`minimum_detectable_difference`): the experiments' comparisons over a handful of seeds."""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import ArrayLike


def sign_flip_p(differences: ArrayLike) -> float:
    """Exact two-sided sign-flip p-value of H0: the (independent) paired differences are symmetric about 0:
    ``scipy.stats.permutation_test`` of the mean against zeros over all 2^n sign patterns; at least 2^(1-n), NaN
    below 2 differences."""
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
    """:func:`sign_flip_p` of each row of the 2-D ``samples``, vectorised; ties count within an absolute 1e-12
    (scipy's tolerance is relative: they differ only when the observed mean is 0 up to rounding)."""
    n = samples.shape[1]
    signs = np.array(np.meshgrid(*[[1.0, -1.0]] * n)).reshape(n, -1)  # (n, 2^n)
    null = np.abs(samples @ signs) / n
    observed = np.abs(samples.mean(axis=1, keepdims=True))
    return (null >= observed - 1e-12).mean(axis=1)


def minimum_detectable_difference(
    sd: float, n: int, resolution: float = 0.0, *, alpha: float = 0.05, power: float = 0.8, seed: int = 0
) -> float:
    """Smallest mean difference the exact sign-flip test (two-sided, level ``alpha``) detects with ``power``:
    simulated with 4,000 seeded samples of ``n`` normal differences of standard deviation ``sd``, rounded to a
    multiple of a positive ``resolution``, on a grid of 0.05 sd (or ``resolution`` / 20 when finer). Infinity
    when 2^(1-n) > alpha (nothing detectable), NaN when ``sd`` is not positive."""
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
