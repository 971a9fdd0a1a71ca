"""The project's statistics: pure functions on arrays (numpy, scipy.stats), for the probe (S's interval), the
tables and the experiments. :mod:`.resampling` (bootstraps and percentile intervals), :mod:`.deltas` (intervals of
a delta of two pass rates), :mod:`.sign_flip` (the exact sign-flip test and its power), :mod:`.correlation`
(Spearman, Kendall, their bootstrap and permutation test), :mod:`.regression` (the line of delta on S, its
leave-one-out fits and errors), :mod:`.prediction` (prediction intervals and their coverage). Undefined values are
NaN, never raised; ``scipy.stats`` is imported inside the functions that use it (S's interval needs none of it).
"""

from __future__ import annotations

from sinkbench.stats.correlation import (
    EXACT_PERMUTATION_MAX_N,
    MIN_PAIRS,
    kendall,
    permutation_p_value,
    resample_ranks,
    spearman,
    spearman_bootstrap_ci,
)
from sinkbench.stats.deltas import paired_bootstrap_delta, paired_counts_delta, unpaired_delta_interval
from sinkbench.stats.regression import (
    LinearFit,
    baseline_mae,
    fit_line,
    line_differences,
    loo_mae,
    loo_predictions,
)
from sinkbench.stats.resampling import (
    N_RESAMPLES,
    bootstrap,
    bootstrap_interval,
    bootstrap_pooled_median,
    default_resamples,
    mean_interval,
    percentile_interval,
)
from sinkbench.stats.sign_flip import minimum_detectable_difference, sign_flip_p

__all__ = [
    "EXACT_PERMUTATION_MAX_N",
    "MIN_PAIRS",
    "N_RESAMPLES",
    "LinearFit",
    "baseline_mae",
    "bootstrap",
    "bootstrap_interval",
    "bootstrap_pooled_median",
    "default_resamples",
    "fit_line",
    "kendall",
    "line_differences",
    "loo_mae",
    "loo_predictions",
    "mean_interval",
    "minimum_detectable_difference",
    "paired_bootstrap_delta",
    "paired_counts_delta",
    "percentile_interval",
    "permutation_p_value",
    "resample_ranks",
    "sign_flip_p",
    "spearman",
    "spearman_bootstrap_ci",
    "unpaired_delta_interval",
]
