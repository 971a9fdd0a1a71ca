"""The pairs table: one row per pair and task, with scores and their bases, delta with its interval
(:func:`delta_interval`), S with its protocol, the models' sizes and the held-out prediction with its interval.

S of a reported pair is its publication's, unless the board holds a backbone entry of its reference LLM measured
by sinkbench on the default calibration set (:func:`s_used`): the fits then use that S, so that every S they see
has one protocol; ``s_source`` names the entry and ``reported_sink_strength`` keeps the publication's."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from sinkbench import stats
from sinkbench.sink.prompts import DEFAULT_SET
from sinkbench.stats import prediction
from sinkbench.submissions.catalogue import IFEVAL_TASK, TASKS
from sinkbench.submissions.entry import Entry, TaskScore
from sinkbench.submissions.facts import (
    ModelSize,
    calibration_set,
    llm_size,
    s_protocol,
    score_basis,
    vlm_size,
)
from sinkbench.tables.rules import delta_interval_kind, informative

#: The pairs table's columns, in order, with the type each is cast to (None: as the rows give it).
_COLUMN_TYPES: dict[str, type | None] = {
    "entry": None,
    "vlm_id": None,
    "vlm_revision": None,
    "reference_llm_id": None,
    "reference_llm_revision": None,
    "task": None,
    "reference_score": float,
    "vlm_score": float,
    "delta": float,
    "reported_delta": float,
    "relative_degradation": float,
    "delta_ci_low": float,
    "delta_ci_high": float,
    "delta_ci_kind": None,
    "delta_ci_reason": None,
    "sink_strength": float,
    "s_protocol": None,
    "qk_norm": None,
    "vlm_params_b": float,
    "reference_params_b": float,
    "provenance": None,
    "predicted_delta": float,
    "derived": None,
    "source": None,
    "testbed": None,
    "reference_basis": None,
    "vlm_basis": None,
    "s_source": None,
    "reported_sink_strength": float,
    "predicted_interval_kind": object,
    "predicted_interval_level": float,
    "predicted_interval_low": float,
    "predicted_interval_high": float,
    "predicted_informative": object,
}
PAIRS_COLUMNS = list(_COLUMN_TYPES)
#: The S of a pair that is its own (measured with the pair, or printed by its source).
OWN_S = "the pair's own"
#: Tasks whose score is a share of prompts passed (lm-eval reports it as a fraction, scaled to points): only
#: these can take an interval from the scores and the prompt count alone.
PROPORTION_TASKS = frozenset(task for task, spec in TASKS.items() if spec.scale == 100.0)


@dataclass(frozen=True)
class DeltaInterval:
    """A delta's 95% interval in points, its kind (:func:`~sinkbench.tables.rules.delta_interval_kind`), and why
    there is none (empty when there is one)."""

    low: float | None
    high: float | None
    kind: str
    reason: str = ""


def _no_interval_reason(task: str, score: TaskScore) -> str:
    """Why a delta has no interval: the first thing its kind's rule needs that is missing."""
    if task not in PROPORTION_TASKS:
        return f"{TASKS[task].label}'s score is not a share of prompts passed"
    if score.reference_score is None or score.vlm_score is None:
        return "the source gives the delta, not the two scores"
    return "the prompt count is not recorded"


def delta_interval(entry: Entry, task: str, score: TaskScore, seed: int) -> DeltaInterval:
    """The interval of a pair's ``task`` delta (:func:`~sinkbench.tables.rules.delta_interval_kind`): the paired
    bootstrap over IFEval prompts (both sides' samples, or published counts), else Newcombe's unpaired interval
    from the two scores and their prompt counts, else none with the reason."""
    outcomes = entry.ifeval_outcomes() if task == IFEVAL_TASK else None
    counts = entry.reported_regressions if task == IFEVAL_TASK else None
    bases = (score_basis(entry, "reference", task), score_basis(entry, "vlm", task))
    prompts = tuple(basis.evaluated if basis else None for basis in bases)
    kind = delta_interval_kind(
        samples=outcomes is not None,
        counts=counts is not None,
        proportion=task in PROPORTION_TASKS,
        scores=score.reference_score is not None and score.vlm_score is not None,
        prompts=None not in prompts,
    )
    if outcomes is not None:
        reference = {outcome.key: outcome.passed for outcome in outcomes[0]}
        vlm = outcomes[1]
        found = stats.paired_bootstrap_delta(
            [reference[o.key] for o in vlm], [o.passed for o in vlm], seed=seed
        )
    elif counts is not None:
        found = stats.paired_counts_delta(
            counts.both_pass, counts.lost, counts.gained, counts.both_fail, seed=seed
        )
    elif kind == "unpaired":
        found = stats.unpaired_delta_interval(score.reference_score, prompts[0], score.vlm_score, prompts[1])
    else:
        return DeltaInterval(None, None, kind, _no_interval_reason(task, score))
    return DeltaInterval(*found, kind)


def _size(size: ModelSize | None) -> float | None:
    return size.billions if size is not None else None


def _derived(entry: Entry, score: TaskScore) -> str:
    derived = list(score.derived)
    reported = entry.metadata.reported
    if reported is not None and reported.sink_strength.derived:
        derived.append("sink_strength")
    return ";".join(derived)


def remeasured(entries: Sequence[Entry]) -> dict[str, list[Entry]]:
    """Measured backbone entries whose S sinkbench took on its default calibration set, by model id."""
    found: dict[str, list[Entry]] = {}
    for entry in entries:
        if (
            entry.kind == "backbone"
            and entry.sink_strength is not None
            and calibration_set(entry) == DEFAULT_SET
        ):
            found.setdefault(entry.llm.id, []).append(entry)
    return found


def s_used(entry: Entry, backbones: dict[str, list[Entry]]) -> Entry:
    """The entry whose S a pair's statistics use: a re-measured backbone entry of its reference LLM (the same
    revision when the pair records one) for a reported pair, else the pair itself."""
    if entry.provenance != "reported":
        return entry
    revision = entry.llm.revision
    matching = [other for other in backbones.get(entry.llm.id, []) if revision in (None, other.llm.revision)]
    return matching[0] if matching else entry


def llm_keys(entries: Sequence[Entry]) -> dict[str, tuple[str, str | None]]:
    """The LLM of each entry as (Hub id, revision), by entry name; a reported pair whose S was re-measured
    (:func:`s_used`) counts as the re-measured entry's, so that one LLM is one row and one page."""
    backbones = remeasured(entries)
    keys = {}
    for entry in entries:
        used = s_used(entry, backbones) if entry.kind == "pair" else entry
        keys[entry.name] = (used.llm.id, used.llm.revision)
    return keys


def _basis(entry: Entry, role: str, task: str) -> str | None:
    found = score_basis(entry, role, task)
    return found.label if found else None


def _pair_rows(entries: Sequence[Entry], seed: int) -> list[dict]:
    rows = []
    backbones = remeasured(entries)
    for entry in entries:
        if entry.kind != "pair":
            continue
        measured = s_used(entry, backbones)
        protocol = s_protocol(measured)
        for task, score in entry.scores.items():
            interval = delta_interval(entry, task, score, seed)
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
                    "delta_ci_low": interval.low,
                    "delta_ci_high": interval.high,
                    "delta_ci_kind": interval.kind,
                    "delta_ci_reason": interval.reason,
                    "sink_strength": measured.sink_strength,
                    "s_protocol": protocol.label if protocol else None,
                    "qk_norm": entry.metadata.qk_norm,
                    "vlm_params_b": _size(vlm_size(entry)),
                    "reference_params_b": _size(llm_size(entry)),
                    "provenance": entry.provenance,
                    "derived": _derived(entry, score),
                    "source": score.source,
                    "testbed": entry.testbed,
                    "reference_basis": _basis(entry, "reference", task),
                    "vlm_basis": _basis(entry, "vlm", task),
                    "s_source": OWN_S if measured is entry else f"backbone entry {measured.name}",
                    "reported_sink_strength": entry.sink_strength if measured is not entry else None,
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


def task_coverage(usable: pd.DataFrame) -> dict[str, prediction.Coverage]:
    """The leave-one-pair-out coverage of every interval method (:func:`prediction.loo_coverage`) on ``usable``
    (:func:`usable_pairs` of one task), by method name."""
    s, delta = usable["sink_strength"].to_numpy(float), usable["delta"].to_numpy(float)
    return {name: prediction.loo_coverage(s, delta, name) for name in prediction.METHODS}


def loo_coverages(pairs: pd.DataFrame) -> dict[str, dict[str, prediction.Coverage]]:
    """:func:`task_coverage` of every task, made once for the tables that report or carry it."""
    return {task: task_coverage(usable_pairs(pairs, task)) for task in TASKS}


def pairs_table(entries: Sequence[Entry], *, seed: int = 0) -> pd.DataFrame:
    """Per pair and task: scores with their bases, delta (points) with its interval, relative degradation, S and
    its protocol, QK class, sizes, held-out prediction (its interval: :func:`with_held_out_intervals`)."""
    pairs = pd.DataFrame(_pair_rows(entries, seed), columns=PAIRS_COLUMNS)
    pairs = pairs.astype({column: kind for column, kind in _COLUMN_TYPES.items() if kind is not None})
    for task in TASKS:
        usable = usable_pairs(pairs, task)
        held_out = stats.loo_predictions(usable["sink_strength"], usable["delta"])
        pairs.loc[usable.index, "predicted_delta"] = held_out
    return pairs


def with_held_out_intervals(
    pairs: pd.DataFrame, coverages: dict[str, dict[str, prediction.Coverage]]
) -> pd.DataFrame:
    """``pairs`` with each held-out prediction's interval of the carried kind (:data:`prediction.PREDICTION_METHOD`),
    made from all other pairs (``coverages``: :func:`loo_coverages`), its level, and whether it is informative."""
    pairs = pairs.copy()
    for task in TASKS:
        usable = usable_pairs(pairs, task)
        found = coverages[task][prediction.PREDICTION_METHOD]
        if not found.lows:
            continue
        lows, highs = np.asarray(found.lows), np.asarray(found.highs)
        observed = float(np.ptp(usable["delta"].to_numpy(float)))
        pairs.loc[usable.index, "predicted_interval_kind"] = found.method
        pairs.loc[usable.index, "predicted_interval_level"] = found.level
        pairs.loc[usable.index, "predicted_interval_low"] = lows
        pairs.loc[usable.index, "predicted_interval_high"] = highs
        pairs.loc[usable.index, "predicted_informative"] = informative(highs - lows, observed)
    return pairs
