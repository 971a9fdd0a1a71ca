"""Tests of sinkbench.stats against values computed by hand."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sinkbench import stats

# The paper's six pairs: S of the reference LLM and the IFEval delta (the paper's Table 10).
PAPER_S = [2.36, 2.36, 1.18, 1.18, 1.44, 0.24]
PAPER_DELTA = [-5.4, -1.8, -9.6, -8.9, -7.9, -18.7]


def test_spearman_and_kendall_by_hand() -> None:
    # Ranks (1,2,3,4) vs (1,3,2,4): sum d^2 = 2, rho = 1 - 6*2/(4*15) = 0.8;
    # 5 concordant and 1 discordant of 6 pairs, tau = (5-1)/6.
    assert stats.spearman([1, 2, 3, 4], [1, 3, 2, 4]) == pytest.approx(0.8)
    assert stats.kendall([1, 2, 3, 4], [1, 3, 2, 4]) == pytest.approx(4 / 6)


def test_spearman_agrees_with_scipy() -> None:
    from scipy.stats import spearmanr

    x, y = [3.0, 1.0, 2.0, 2.0, 5.0, 4.0], [1.0, 0.5, 0.5, 2.0, 9.0, 3.0]
    assert stats.spearman(x, y) == pytest.approx(spearmanr(x, y).statistic)


def test_spearman_uses_mid_ranks_for_ties() -> None:
    # Mid-ranks (1.5, 1.5, 3) and (1, 2, 3): deviations (-.5, -.5, 1), (-1, 0, 1); r = 1.5 / sqrt(1.5 * 2).
    assert stats.spearman([1, 1, 2], [1, 2, 3]) == pytest.approx(math.sqrt(3) / 2)


def test_too_few_pairs_give_nan() -> None:
    assert math.isnan(stats.spearman([1, 2], [2, 1]))
    assert math.isnan(stats.loo_mae([1, 2], [2, 1]))
    assert math.isnan(stats.baseline_mae([1.0, 2.0]))
    assert all(math.isnan(value) for value in stats.spearman_bootstrap_ci([1, 2], [1, 2], seed=0))


def _enumerated_two_sided_p(x: list[float], y: list[float]) -> float:
    """Independent route: all n! pairings, rho from np.corrcoef of the mid-ranks."""
    from scipy.stats import rankdata

    rho = lambda a, b: np.corrcoef(rankdata(a), rankdata(b))[0, 1]  # noqa: E731
    observed = rho(x, y)
    values = np.array([rho(x, permuted) for permuted in itertools.permutations(y)])
    greater, less = np.mean(values >= observed - 1e-12), np.mean(values <= observed + 1e-12)
    return min(1.0, 2 * min(greater, less))


def test_exact_permutation_p_by_hand() -> None:
    # rho = 1 on 4 points: 1 of 24 pairings is as extreme on the upper side, so p = 2/24.
    assert stats.permutation_p_value([1, 2, 3, 4], [1, 2, 3, 4], seed=0) == pytest.approx(2 / 24)


def test_exact_permutation_p_on_the_paper_pairs_matches_enumeration() -> None:
    p = stats.permutation_p_value(PAPER_S, PAPER_DELTA, seed=0)
    # Tied S values make 2 x 2 = 4 of the 720 pairings reach rho = 0.971, so p = 2 * 4/720.
    assert p == pytest.approx(8 / 720)
    assert p == pytest.approx(_enumerated_two_sided_p(PAPER_S, PAPER_DELTA))


def test_monte_carlo_permutation_above_the_exact_limit_is_seeded() -> None:
    x = np.arange(stats.EXACT_PERMUTATION_MAX_N + 4, dtype=float)
    first = stats.permutation_p_value(x, 2 * x, seed=3)
    assert first == stats.permutation_p_value(x, 2 * x, seed=3)
    # No random pairing of 12 points reaches rho = 1: p = 2 * 1/(9999 + 1), the observed pairing counted.
    assert first == pytest.approx(2 / (stats.N_RESAMPLES + 1))


def test_bootstrap_ci_is_seeded_and_brackets_the_estimate() -> None:
    low, high = stats.spearman_bootstrap_ci(PAPER_S, PAPER_DELTA, seed=7)
    assert (low, high) == stats.spearman_bootstrap_ci(PAPER_S, PAPER_DELTA, seed=7)
    assert -1 <= low <= stats.spearman(PAPER_S, PAPER_DELTA) <= high <= 1


@pytest.mark.filterwarnings("ignore::RuntimeWarning", "ignore::scipy.stats.DegenerateDataWarning")
@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.integers(-3, 3), min_size=3, max_size=40),
    st.lists(st.integers(-2, 2), min_size=40, max_size=40),
    st.integers(0, 2**16),
)
def test_resampled_ranks_and_the_interval_equal_scipys_on_tied_data(
    x: list[int], noise: list[int], seed: int
) -> None:
    """The bootstrap resamples value codes and ranks each resample by counting (:func:`stats.resample_ranks`): the
    same mid-ranks as ``scipy.stats.rankdata``, and the same interval as ``scipy.stats.bootstrap`` resampling the
    values and ranking every resample itself."""
    from scipy import stats as scipy_stats

    values = np.asarray(x, dtype=float) / 2
    other = values + np.asarray(noise[: len(x)], dtype=float)
    distinct, codes = np.unique(values, return_inverse=True)
    drawn = np.random.default_rng(seed).integers(0, len(x), size=(50, len(x)))
    ranked = stats.resample_ranks(codes[drawn], distinct.size)
    assert np.array_equal(ranked, scipy_stats.rankdata(values[drawn], axis=-1))
    assert np.array_equal(stats.resample_ranks(codes, distinct.size), scipy_stats.rankdata(values))
    stacked = codes[drawn].reshape(5, 10, len(x))  # any leading axes
    assert np.array_equal(
        stats.resample_ranks(stacked, distinct.size),
        scipy_stats.rankdata(values[drawn].reshape(5, 10, -1), axis=-1),
    )
    ours = stats.spearman_bootstrap_ci(values, other, seed=seed, n_resamples=200)

    def spearman_rows(a: np.ndarray, b: np.ndarray, axis: int = -1) -> np.ndarray:
        ranks_a, ranks_b = (scipy_stats.rankdata(v, axis=axis) for v in (a, b))
        ranks_a, ranks_b = (r - r.mean(axis=axis, keepdims=True) for r in (ranks_a, ranks_b))
        with np.errstate(invalid="ignore", divide="ignore"):
            products = (ranks_a * ranks_b).sum(axis=axis)
            return products / np.sqrt((ranks_a**2).sum(axis=axis) * (ranks_b**2).sum(axis=axis))

    reference = scipy_stats.bootstrap(
        (values, other),
        spearman_rows,
        paired=True,
        vectorized=True,
        n_resamples=200,
        method="percentile",
        rng=np.random.default_rng(seed),
    ).bootstrap_distribution
    finite = reference[np.isfinite(reference)]
    expected = np.percentile(finite, [2.5, 97.5]) if finite.size else [math.nan, math.nan]
    assert ours == pytest.approx(tuple(expected), abs=1e-12, nan_ok=True)


def test_bootstrap_ci_of_a_monotone_relation_is_one() -> None:
    # Every resample of strictly increasing pairs is monotone (ties appear in both variables alike).
    assert stats.spearman_bootstrap_ci([1, 2, 3, 4, 5], [2, 4, 5, 8, 9], seed=0) == pytest.approx((1.0, 1.0))


def test_leave_one_out_fit_by_hand() -> None:
    # x = 0..3, y = (0, 1, 2, 4). Held out: i=0 -> line through (1,1),(2,2),(3,4): slope 3/2,
    # intercept -2/3, so -2/3; i=1 -> 8/7; i=2 -> 18/7; i=3 -> 3 (points on y = x).
    x, y = [0, 1, 2, 3], [0, 1, 2, 4]
    np.testing.assert_allclose(stats.loo_predictions(x, y), [-2 / 3, 8 / 7, 18 / 7, 3])
    assert stats.loo_mae(x, y) == pytest.approx((2 / 3 + 1 / 7 + 4 / 7 + 1) / 4)  # = 25/42


def test_vectorised_leave_one_out_equals_refitting_linregress() -> None:
    from scipy.stats import linregress

    rng = np.random.default_rng(0)
    x, y = rng.normal(1.0, 2.0, size=40), rng.normal(-8.0, 5.0, size=40)
    refits = []
    for i in range(len(x)):
        keep = np.arange(len(x)) != i
        fit = linregress(x[keep], y[keep])
        refits.append(fit.intercept + fit.slope * x[i])
    np.testing.assert_allclose(stats.loo_predictions(x, y), refits, rtol=1e-10, atol=1e-10)


def test_constant_mean_baseline_by_hand() -> None:
    # Means of the others: 7/3, 2, 5/3, 1 -> errors 7/3, 1, 1/3, 3.
    assert stats.baseline_mae([0, 1, 2, 4]) == pytest.approx(5 / 3)


def test_loo_prediction_is_nan_when_the_others_share_one_s() -> None:
    predictions = stats.loo_predictions([1, 1, 2], [0, 1, 5])
    assert math.isnan(predictions[2]) and not math.isnan(predictions[0])
    assert math.isnan(stats.loo_mae([1, 1, 2], [0, 1, 5]))


def test_prediction_interval_by_hand() -> None:
    # x = (0,1,2), y = (0,1,3): slope 3/2, intercept -1/6, SSE 1/6 on 1 dof, s = sqrt(1/6).
    # At x0 = 1 (the mean): half-width = t(0.975, 1) * s * sqrt(1 + 1/3), t = 12.706204736.
    fit = stats.fit_line([0, 1, 2], [0, 1, 3])
    assert (fit.slope, fit.intercept) == (pytest.approx(1.5), pytest.approx(-1 / 6))
    assert fit.residual_sd == pytest.approx(math.sqrt(1 / 6))
    low, high = fit.prediction_interval([1.0])
    half = 12.706204736 * math.sqrt(1 / 6) * math.sqrt(4 / 3)
    assert low[0] == pytest.approx(4 / 3 - half) and high[0] == pytest.approx(4 / 3 + half)


def test_fit_line_needs_two_distinct_s_values() -> None:
    assert stats.fit_line([1.0, 1.0, 1.0], [0.0, 1.0, 2.0]) is None
    assert stats.fit_line([1.0], [0.0]) is None


def test_inputs_must_be_paired() -> None:
    with pytest.raises(ValueError, match="1-D arrays of one length"):
        stats.spearman([1, 2, 3], [1, 2])


def test_sign_flip_p_value_and_detectable_difference() -> None:
    assert stats.sign_flip_p([1, 2, 3, 4, 5, 6, 7, 8]) == pytest.approx(2 / 256)
    assert stats.sign_flip_p([1, -1, 1, -1, 1, -1]) == pytest.approx(1.0)
    assert stats.sign_flip_p([0, 0, 0]) == 1.0 and math.isnan(stats.sign_flip_p([1.0]))
    low, high = stats.mean_interval([3, 4, 5, 6, 5, 4])
    assert 3.5 < low < 4.5 < high < 5.5
    assert stats.mean_interval([2.0, 2.0, 2.0]) == (2.0, 2.0) and all(
        map(math.isnan, stats.mean_interval([]))
    )
    continuous = stats.minimum_detectable_difference(1.0, 8)
    assert 0.8 < continuous < 2.0
    assert stats.minimum_detectable_difference(2.0, 8) == pytest.approx(2 * continuous, rel=0.05)
    assert stats.minimum_detectable_difference(1.0, 4) == math.inf  # 2 / 16 > 0.05: never significant
    assert math.isnan(stats.minimum_detectable_difference(0.0, 8))
    # whole prompts: differences rounded to one step have zeros, which the sign-flip test cannot use
    quantised = stats.minimum_detectable_difference(1.0, 8, resolution=1.0)
    assert quantised > continuous and quantised >= 1.0


@settings(max_examples=40, deadline=None)
@given(
    st.lists(st.tuples(st.integers(-5, 5), st.integers(-5, 5)), min_size=2, max_size=12),
    st.integers(0, 2**32 - 1),
)
def test_bootstrap_draws_are_scipys(pairs: list[tuple[int, int]], seed: int) -> None:
    # The same replicates as scipy.stats.bootstrap, paired, to the last bit (the board's numbers rest on it).
    from scipy import stats as scipy_stats

    x, y = (np.array(side, dtype=float) for side in zip(*pairs, strict=True))

    def difference(a: np.ndarray, b: np.ndarray, axis: int = -1) -> np.ndarray:
        return b.mean(axis=axis) - a.mean(axis=axis)

    ours = stats.bootstrap(difference, x, y, resamples=50, seed=seed)
    theirs = scipy_stats.bootstrap(
        (x, y),
        difference,
        paired=True,
        n_resamples=50,
        method="percentile",
        confidence_level=0.9,
        rng=np.random.default_rng(seed),
    )
    assert np.array_equal(ours, theirs.bootstrap_distribution)
    interval = stats.bootstrap_interval(difference, x, y, resamples=50, seed=seed, confidence=0.9)
    assert interval == tuple(theirs.confidence_interval)


@settings(max_examples=40, deadline=None)
@given(
    st.lists(st.lists(st.integers(-20, 20), max_size=6), min_size=1, max_size=6),
    st.integers(0, 2**32 - 1),
)
def test_pooled_median_replicates_are_medians_of_the_drawn_groups(groups: list[list[int]], seed: int) -> None:
    arrays = [np.array(group, dtype=float) for group in groups]
    replicates = stats.bootstrap_pooled_median(arrays, resamples=30, seed=seed)
    draws = np.random.default_rng(seed).multinomial(
        len(arrays), np.full(len(arrays), 1 / len(arrays)), size=30
    )
    for replicate, row in zip(replicates, draws, strict=True):
        pooled = np.concatenate([np.tile(array, count) for array, count in zip(arrays, row, strict=True)])
        assert (math.isnan(replicate) and pooled.size == 0) or replicate == np.median(pooled)


def test_percentile_interval_leaves_out_undefined_replicates() -> None:
    replicates = np.array([np.nan, 4.0, 1.0, np.nan, 3.0, 2.0, 5.0])
    assert stats.percentile_interval(replicates, 0.5) == (2.0, 4.0)  # the 25th and 75th percentiles of 1..5
    assert stats.percentile_interval(replicates, 0.9) == pytest.approx((1.2, 4.8))
    assert all(map(math.isnan, stats.percentile_interval(np.full(3, np.nan), 0.95)))


def test_a_paired_interval_from_outcome_counts_is_the_bootstrap_over_the_prompts_they_describe() -> None:
    # InternVL3-8B against Qwen2.5-7B-Instruct (the paper's Table 2): 294 both pass, 96 lost, 48 gained, 103 fail.
    low, high = stats.paired_counts_delta(294, 96, 48, 103, seed=0)
    delta = 100 * (48 - 96) / 541
    assert low < delta < high and (high - low) / 2 == pytest.approx(4.3, abs=0.1)
    reference, vlm = np.repeat([1, 1, 0, 0], [294, 96, 48, 103]), np.repeat([1, 0, 1, 0], [294, 96, 48, 103])
    assert (low, high) == stats.paired_bootstrap_delta(reference, vlm, seed=0)
    # Normal approximation of a paired difference of proportions: sd of (gained - lost) per prompt / sqrt(n).
    share = (96 + 48) / 541
    sd = 100 * math.sqrt((share - (delta / 100) ** 2) / 541)
    assert (high - low) / 2 == pytest.approx(1.96 * sd, rel=0.05)
    assert all(math.isnan(v) for v in stats.paired_counts_delta(1, 0, 0, 0, seed=0))


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.integers(0, 40), min_size=4, max_size=4).filter(lambda counts: sum(counts) >= 2),
    st.integers(0, 2**32 - 1),
    st.sampled_from([0.8, 0.9, 0.95]),
)
def test_the_interval_from_counts_is_the_bootstrap_over_the_prompts_to_the_last_bit(
    counts: list[int], seed: int, confidence: float
) -> None:
    reference, vlm = np.repeat([1, 1, 0, 0], counts), np.repeat([1, 0, 1, 0], counts)
    found = stats.paired_counts_delta(*counts, seed=seed, confidence=confidence, n_resamples=200)
    expected = stats.paired_bootstrap_delta(reference, vlm, seed=seed, confidence=confidence, n_resamples=200)
    assert found == expected


def _wilson_by_root(successes: float, n: int, z: float) -> tuple[float, float]:
    """Wilson's limits solved numerically from the score test, |p_hat - p| = z sqrt(p (1 - p) / n)."""
    from scipy.optimize import brentq

    share = successes / n

    def score(p: float) -> float:
        return abs(share - p) - z * math.sqrt(p * (1 - p) / n)

    low = 0.0 if share == 0 else brentq(score, 1e-12, share)
    high = 1.0 if share == 1 else brentq(score, share, 1 - 1e-12)
    return low, high


def test_the_unpaired_interval_is_newcombes_hybrid_score_interval() -> None:
    # Newcombe (1998), Table II, example (a): 56/70 against 48/80, method 10: 0.0524 to 0.3339.
    from scipy import stats as scipy_stats

    low, high = stats.unpaired_delta_interval(100 * 48 / 80, 80, 100 * 56 / 70, 70)
    assert (low, high) == pytest.approx((5.24, 33.39), abs=0.01)
    # Against Wilson's limits found by root-finding, combined as Newcombe does.
    z = scipy_stats.norm.ppf(0.975)
    p1, p2, n1, n2 = 0.7209, 0.6322, 541, 541
    (l1, u1), (l2, u2) = _wilson_by_root(p1 * n1, n1, z), _wilson_by_root(p2 * n2, n2, z)
    expected = (
        100 * (p2 - p1 - math.sqrt((p2 - l2) ** 2 + (u1 - p1) ** 2)),
        100 * (p2 - p1 + math.sqrt((u2 - p2) ** 2 + (p1 - l1) ** 2)),
    )
    assert stats.unpaired_delta_interval(72.09, n1, 63.22, n2) == pytest.approx(expected, abs=1e-6)
    assert all(math.isnan(v) for v in stats.unpaired_delta_interval(72.0, 0, 63.0, 541))
    assert all(math.isnan(v) for v in stats.unpaired_delta_interval(120.0, 541, 63.0, 541))


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.floats(-1e6, 1e6), min_size=1, max_size=300),
    st.floats(0.01, 0.99),
)
def test_scipys_percentile_rule_is_scipy_quantile_to_the_last_bit(
    replicates: list[float], confidence: float
) -> None:
    """The partition behind the paired deltas' intervals takes the quantiles ``scipy.stats.quantile`` takes."""
    from scipy import stats as scipy_stats

    from sinkbench.stats.resampling import scipy_percentile_interval

    values = np.asarray(replicates)
    tail = (1 - confidence) / 2
    expected = scipy_stats.quantile(values, np.array([tail, 1 - tail]))
    assert scipy_percentile_interval(values, confidence) == (float(expected[0]), float(expected[1]))


@settings(max_examples=40, deadline=None)
@given(
    st.lists(st.integers(-50, 50), min_size=1, max_size=15),
    st.integers(-20, 20),
    st.integers(0, 2**32 - 1),
)
def test_the_mean_interval_of_symmetric_data_contains_its_centre(
    half: list[int], centre: int, seed: int
) -> None:
    """Data symmetric about c: the bootstrap distribution of the mean is symmetric about c, so its percentile
    interval holds c (integers keep every mean exact)."""
    values = np.array([*half, *(2 * centre - v for v in half)], dtype=float)
    low, high = stats.mean_interval(values, seed=seed)
    assert low <= centre <= high


@settings(max_examples=40, deadline=None)
@given(
    st.lists(st.floats(-100, 100), min_size=1, max_size=60),
    st.floats(0.5, 0.95),
    st.floats(0.01, 0.04),
)
def test_percentile_intervals_nest_as_the_confidence_grows(
    replicates: list[float], lower: float, more: float
) -> None:
    narrow = stats.percentile_interval([*replicates, math.nan], lower)
    wide = stats.percentile_interval(replicates, lower + more)
    assert wide[0] <= narrow[0] <= narrow[1] <= wide[1]


@settings(max_examples=30, deadline=None)
@given(st.lists(st.integers(-6, 6), min_size=2, max_size=9).filter(lambda d: sum(d) != 0))
def test_the_power_simulations_sign_flip_p_is_the_tests(differences: list[int]) -> None:
    """The vectorised p-values :func:`stats.minimum_detectable_difference` simulates with equal
    :func:`stats.sign_flip_p` (and the test is blind to the sign of every difference at once)."""
    from sinkbench.stats.sign_flip import _sign_flip_p_rows

    d = np.asarray(differences, dtype=float)
    p = stats.sign_flip_p(d)
    assert p == pytest.approx(_sign_flip_p_rows(d[None, :])[0]) and p == pytest.approx(stats.sign_flip_p(-d))


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 60), st.integers(1, 60), st.integers(0, 60), st.integers(1, 60))
def test_newcombes_interval_holds_the_delta_and_turns_with_the_pair(
    a: int, n_a: int, b: int, n_b: int
) -> None:
    reference, vlm = 100 * min(a, n_a) / n_a, 100 * min(b, n_b) / n_b
    low, high = stats.unpaired_delta_interval(reference, n_a, vlm, n_b)
    assert low <= vlm - reference <= high and min(low, -high) >= -100 - 1e-9
    swapped = stats.unpaired_delta_interval(vlm, n_b, reference, n_a)
    assert swapped == pytest.approx((-high, -low), abs=1e-9)
