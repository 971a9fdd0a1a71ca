"""The pairs table: one row per pair and task, with scores, delta, S and the leave-one-pair-out prediction."""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd

from sinkbench.submissions.catalogue import TASKS
from sinkbench.submissions.entry import Entry
from sinkbench.tables import stats

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
    "sink_strength",
    "qk_norm",
    "provenance",
    "predicted_delta",
    "derived",
    "source",
]
_FLOAT_COLUMNS = [
    "reference_score",
    "vlm_score",
    "delta",
    "reported_delta",
    "relative_degradation",
    "sink_strength",
    "predicted_delta",
]


def _pair_rows(entries: Sequence[Entry]) -> list[dict]:
    rows = []
    for entry in entries:
        if entry.kind != "pair":
            continue
        for task, score in entry.scores.items():
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
                    "sink_strength": entry.sink_strength,
                    "qk_norm": entry.metadata.qk_norm,
                    "provenance": entry.provenance,
                    "derived": ";".join(score.derived),
                    "source": score.source,
                }
            )
    return rows


def usable_pairs(pairs: pd.DataFrame, task: str) -> pd.DataFrame:
    """Rows of ``task`` with both S and delta known: the data every statistic of that task uses."""
    rows = pairs[pairs["task"] == task]
    return rows[rows["sink_strength"].notna() & rows["delta"].notna()]


def pairs_table(entries: Sequence[Entry]) -> pd.DataFrame:
    """Per pair and task: scores, delta (points), relative degradation, S, QK class, held-out prediction."""
    pairs = pd.DataFrame(_pair_rows(entries), columns=PAIRS_COLUMNS)
    pairs = pairs.astype(dict.fromkeys(_FLOAT_COLUMNS, float))
    for task in TASKS:
        usable = usable_pairs(pairs, task)
        held_out = stats.loo_predictions(usable["sink_strength"], usable["delta"])
        pairs.loc[usable.index, "predicted_delta"] = held_out
    return pairs
