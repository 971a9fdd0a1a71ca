"""The screening table: every backbone and reference LLM ranked by S, with the deltas the fit on all pairs
predicts for it and their prediction intervals."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from sinkbench.submissions.catalogue import TASKS
from sinkbench.submissions.entry import Entry
from sinkbench.tables import stats
from sinkbench.tables.pairs import usable_pairs

_LLM_COLUMNS = ["model_id", "model_revision", "sink_strength", "qk_norm", "role", "provenance", "entries"]
SCREENING_COLUMNS = [
    "rank",
    *_LLM_COLUMNS,
    "task",
    "predicted_delta",
    "interval_low",
    "interval_high",
    "n_pairs",
]


def _llm_rows(entries: Sequence[Entry]) -> pd.DataFrame:
    """One row per distinct LLM (id, revision), sorted by them: the mean S of the entries that measured it."""
    groups: dict[tuple[str, str | None], list[Entry]] = {}
    for entry in entries:
        if entry.sink_strength is not None:
            groups.setdefault((entry.llm.id, entry.llm.revision), []).append(entry)
    rows = [
        {
            "model_id": model_id,
            "model_revision": revision,
            "sink_strength": float(np.mean([entry.sink_strength for entry in group])),
            "qk_norm": group[0].metadata.qk_norm,
            "role": ";".join(
                sorted({"reference" if entry.kind == "pair" else "backbone" for entry in group})
            ),
            "provenance": ";".join(sorted({entry.provenance for entry in group})),
            "entries": ";".join(sorted(entry.name for entry in group)),
        }
        for (model_id, revision), group in sorted(
            groups.items(), key=lambda item: (item[0][0], item[0][1] or "")
        )
    ]
    return pd.DataFrame(rows, columns=_LLM_COLUMNS)


def screening_table(entries: Sequence[Entry], pairs: pd.DataFrame) -> pd.DataFrame:
    """Every backbone and reference LLM ranked by S (1 = highest S), with per task the delta predicted
    by the linear fit on all pairs and its 95% prediction interval (see :class:`stats.LinearFit`)."""
    llms = _llm_rows(entries)
    llms.insert(0, "rank", llms["sink_strength"].rank(ascending=False, method="min").astype("Int64"))
    blocks = []
    for task in TASKS:
        usable = usable_pairs(pairs, task)
        fit = stats.fit_line(usable["sink_strength"], usable["delta"])
        if fit is None or fit.n < stats.MIN_PAIRS:
            continue
        low, high = fit.prediction_interval(llms["sink_strength"])
        predicted = fit.predict(llms["sink_strength"])
        blocks.append(
            llms.assign(
                task=task, predicted_delta=predicted, interval_low=low, interval_high=high, n_pairs=fit.n
            )
        )
    if not blocks:  # fewer than 3 pairs for every task: rank by S, predict nothing
        blocks.append(
            llms.assign(
                task=None, predicted_delta=np.nan, interval_low=np.nan, interval_high=np.nan, n_pairs=0
            )
        )
    table = pd.concat(blocks, ignore_index=True)
    order = table["task"].map({task: index for index, task in enumerate(TASKS)})
    table = table.assign(task_order=order).sort_values(["rank", "model_id", "task_order"], kind="stable")
    return table[SCREENING_COLUMNS].reset_index(drop=True)
