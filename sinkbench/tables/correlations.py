"""The correlations table: per task, how well S ranks and predicts the observed deltas of the pairs, and where
that evidence stops: how many distinct values of S it rests on, whether the leave-one-pair-out fit beats the
constant-mean baseline, how often each kind of prediction interval (:mod:`sinkbench.stats.prediction`) held a pair
left out, and whether the task is a format-sensitive one or a knowledge control."""

from __future__ import annotations

import numpy as np
import pandas as pd

from sinkbench import stats
from sinkbench.stats import prediction
from sinkbench.submissions.catalogue import TASKS
from sinkbench.tables.pairs import usable_pairs
from sinkbench.tables.rules import beats_mean, control_as_strong_as

#: Per interval method (``t_loo_*``, ``jackknife_plus_loo_*``): the level and distribution-free guarantee of the
#: held-out intervals, pairs inside them, pairs checked, median width (points), and the entries outside (``;``).
_COVERAGE_FIELDS = ("level", "guarantee", "covered", "checked", "median_width", "outside")
COVERAGE_COLUMNS = [
    f"{method.column}_loo_{field}" for method in prediction.METHODS.values() for field in _COVERAGE_FIELDS
]
CORRELATION_COLUMNS = [
    "task",
    "n",
    "spearman",
    "spearman_ci",
    "kendall",
    "permutation_p",
    "loo_mae",
    "baseline_mae",
    "prediction_interval",
    "prediction_interval_level",
    "prediction_interval_guarantee",
    *COVERAGE_COLUMNS,
    "permutation_method",
    "slope",
    "intercept",
    "residual_sd",
    "distinct_s",
    "beats_baseline",
    "family",
    "control_as_strong_as",
]


def _permutation_method(n: int) -> str | None:
    if n < stats.MIN_PAIRS:
        return None
    return "exact" if n <= stats.EXACT_PERMUTATION_MAX_N else "monte-carlo"


def _coverage(usable: pd.DataFrame, coverage: dict[str, prediction.Coverage]) -> dict:
    """The interval the predictions carry with its level and guarantee with all pairs, and the leave-one-pair-out
    ``coverage`` of every interval method on ``usable`` (:func:`sinkbench.tables.pairs.task_coverage`)."""
    entries = usable["entry"].tolist()
    carried = prediction.METHODS[prediction.PREDICTION_METHOD]
    level = carried.level(len(usable), prediction.CONFIDENCE)
    row: dict = {
        "prediction_interval": carried.name,
        "prediction_interval_level": level,
        "prediction_interval_guarantee": carried.guarantee(level),
    }
    for name, method in prediction.METHODS.items():
        found = coverage[name]
        values = (found.level, found.guarantee, found.covered, found.checked, found.median_width)
        outside = ";".join(entries[i] for i in found.outside)
        row |= dict(
            zip((f"{method.column}_loo_{f}" for f in _COVERAGE_FIELDS), (*values, outside), strict=True)
        )
    return row


def _correlation(
    task: str, usable: pd.DataFrame, coverage: dict[str, prediction.Coverage], seed: int
) -> dict:
    s, delta = usable["sink_strength"].to_numpy(), usable["delta"].to_numpy()
    fit = stats.fit_line(s, delta) if len(s) >= stats.MIN_PAIRS else None
    loo, baseline = stats.loo_mae(s, delta), stats.baseline_mae(delta)
    return {
        "task": task,
        "n": len(s),
        "spearman": stats.spearman(s, delta),
        "spearman_ci": list(stats.spearman_bootstrap_ci(s, delta, seed=seed)),
        "kendall": stats.kendall(s, delta),
        "permutation_p": stats.permutation_p_value(s, delta, seed=seed),
        "loo_mae": loo,
        "baseline_mae": baseline,
        **_coverage(usable, coverage),
        "permutation_method": _permutation_method(len(s)),
        "slope": fit.slope if fit else np.nan,
        "intercept": fit.intercept if fit else np.nan,
        "residual_sd": fit.residual_sd if fit else np.nan,
        "distinct_s": len(np.unique(s)),
        "beats_baseline": beats_mean(loo, baseline),
        "family": TASKS[task].family,
    }


def correlations_table(
    pairs: pd.DataFrame, coverages: dict[str, dict[str, prediction.Coverage]], *, seed: int
) -> pd.DataFrame:
    """One row per task with pairs: Spearman, bootstrap CI, Kendall, permutation p, LOO and baseline MAE, and the
    leave-one-pair-out coverage of each kind of prediction interval (``coverages``:
    :func:`sinkbench.tables.pairs.loo_coverages`)."""
    rows = [
        _correlation(task, usable_pairs(pairs, task), coverages[task], seed)
        for task in TASKS
        if (pairs["task"] == task).any()
    ]
    targets = {row["task"]: row["spearman"] for row in rows if row["family"] != "control"}
    for row in rows:
        flagged = control_as_strong_as(row["spearman"], targets) if row["family"] == "control" else []
        row["control_as_strong_as"] = ";".join(flagged)
    return pd.DataFrame(rows, columns=CORRELATION_COLUMNS)
