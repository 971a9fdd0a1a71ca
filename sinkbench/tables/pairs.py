"""The pairs table: one row per pair and task, with scores, delta (and its paired bootstrap interval where both
sides' IFEval samples exist), S with its protocol, the models' sizes and the leave-one-pair-out prediction."""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd

from sinkbench.submissions.catalogue import IFEVAL_TASK, TASKS
from sinkbench.submissions.entry import Entry, TaskScore
from sinkbench.submissions.facts import ModelSize, llm_size, s_protocol, vlm_size
from sinkbench.tables import intervals, stats

PAIRS_COLUMNS = [
    "entry",
    "vlm_id",
    "vlm_revision",
    "reference_llm_id",
    "reference_llm_revision",
    "task",
    "reference_score",
    "vlm_score",
    "delta",
    "reported_delta",
    "relative_degradation",
    "delta_ci_low",
    "delta_ci_high",
    "sink_strength",
    "s_protocol",
    "qk_norm",
    "vlm_params_b",
    "reference_params_b",
    "provenance",
    "predicted_delta",
    "derived",
    "source",
    "testbed",
]
_FLOAT_COLUMNS = [
    "reference_score",
    "vlm_score",
    "delta",
    "reported_delta",
    "relative_degradation",
    "delta_ci_low",
    "delta_ci_high",
    "sink_strength",
    "vlm_params_b",
    "reference_params_b",
    "predicted_delta",
]


def _delta_interval(entry: Entry, seed: int) -> tuple[float, float] | tuple[None, None]:
    """The paired bootstrap interval of the IFEval delta over prompts, when both sides' samples exist."""
    outcomes = entry.ifeval_outcomes()
    if outcomes is None:
        return None, None
    reference = {outcome.key: outcome.passed for outcome in outcomes[0]}
    keys = [outcome.key for outcome in outcomes[1]]
    vlm = {outcome.key: outcome.passed for outcome in outcomes[1]}
    return stats.paired_bootstrap_delta([reference[k] for k in keys], [vlm[k] for k in keys], seed=seed)


def _size(size: ModelSize | None) -> float | None:
    return size.billions if size is not None else None


def _derived(entry: Entry, score: TaskScore) -> str:
    derived = list(score.derived)
    reported = entry.metadata.reported
    if reported is not None and reported.sink_strength.derived:
        derived.append("sink_strength")
    return ";".join(derived)


def _pair_rows(entries: Sequence[Entry], seed: int) -> list[dict]:
    rows = []
    for entry in entries:
        if entry.kind != "pair":
            continue
        protocol = s_protocol(entry)
        for task, score in entry.scores.items():
            low, high = _delta_interval(entry, seed) if task == IFEVAL_TASK else (None, None)
            rows.append(
                {
                    "entry": entry.name,
                    "vlm_id": entry.vlm.id,
                    "vlm_revision": entry.vlm.revision,
                    "reference_llm_id": entry.llm.id,
                    "reference_llm_revision": entry.llm.revision,
                    "task": task,
                    "reference_score": score.reference_score,
                    "vlm_score": score.vlm_score,
                    "delta": score.delta,
                    "reported_delta": score.reported_delta,
                    "relative_degradation": score.relative_degradation,
                    "delta_ci_low": low,
                    "delta_ci_high": high,
                    "sink_strength": entry.sink_strength,
                    "s_protocol": protocol.label if protocol else None,
                    "qk_norm": entry.metadata.qk_norm,
                    "vlm_params_b": _size(vlm_size(entry)),
                    "reference_params_b": _size(llm_size(entry)),
                    "provenance": entry.provenance,
                    "derived": _derived(entry, score),
                    "source": score.source,
                    "testbed": entry.testbed,
                }
            )
    return rows


def usable_pairs(pairs: pd.DataFrame, task: str) -> pd.DataFrame:
    """Rows of ``task`` with both S and delta known, testbed pairs left out: the data every statistic of that task
    uses."""
    rows = pairs[pairs["task"] == task]
    if "testbed" in rows:
        rows = rows[~rows["testbed"].astype(bool)]
    return rows[rows["sink_strength"].notna() & rows["delta"].notna()]


def task_coverage(usable: pd.DataFrame) -> dict[str, intervals.Coverage]:
    """The leave-one-pair-out coverage of every interval method (:func:`intervals.loo_coverage`) on ``usable``
    (:func:`usable_pairs` of one task), by method name."""
    s, delta = usable["sink_strength"].to_numpy(float), usable["delta"].to_numpy(float)
    return {name: intervals.loo_coverage(s, delta, name) for name in intervals.METHODS}


def loo_coverages(pairs: pd.DataFrame) -> dict[str, dict[str, intervals.Coverage]]:
    """:func:`task_coverage` of every task, made once for the tables that report or carry it."""
    return {task: task_coverage(usable_pairs(pairs, task)) for task in TASKS}


def pairs_table(entries: Sequence[Entry], *, seed: int = 0) -> pd.DataFrame:
    """Per pair and task: scores, delta (points) with its interval, relative degradation, S and its protocol, QK
    class, sizes, held-out prediction."""
    pairs = pd.DataFrame(_pair_rows(entries, seed), columns=PAIRS_COLUMNS)
    pairs = pairs.astype(dict.fromkeys(_FLOAT_COLUMNS, float))
    for task in TASKS:
        usable = usable_pairs(pairs, task)
        held_out = stats.loo_predictions(usable["sink_strength"], usable["delta"])
        pairs.loc[usable.index, "predicted_delta"] = held_out
    return pairs
