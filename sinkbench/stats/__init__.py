"""The project's statistics, in one place: pure functions on arrays, built on numpy and scipy.stats, imported by
the probe (S's interval, :mod:`sinkbench.sink.uncertainty`), the tables and the experiments. One module a job:

- :mod:`.resampling`: the bootstrap over units and the cluster bootstrap of a pooled median (S over prompts), with
  the percentile intervals of their replicates.
- :mod:`.deltas`: intervals of a delta of two pass rates, paired over prompts (from outcomes or their four counts)
  or Newcombe's unpaired interval from Wilson's.
- :mod:`.sign_flip`: the exact sign-flip test of paired differences and its power.
- :mod:`.correlation`: Spearman and Kendall of S against delta, Spearman's bootstrap interval, the permutation test.
- :mod:`.regression`: the least-squares line of delta on S, its leave-one-pair-out fits and their error against a
  constant-mean baseline, the bootstrap of differences in expected delta.
- :mod:`.prediction`: prediction intervals of a new pair's delta (t, jackknife+) and their leave-one-pair-out
  coverage.

Undefined values (too few pairs, constant S) are returned as NaN, never raised. ``scipy.stats`` is imported inside
the functions that use it: the probe's path (S's interval) needs none of it. The names below are the ones its callers use.
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
from sinkbench.stats.deltas import (
    paired_bootstrap_delta,
    paired_counts_delta,
    unpaired_delta_interval,
)
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
