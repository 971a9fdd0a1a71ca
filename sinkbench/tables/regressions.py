"""The regressions table: IFEval prompts lost and gained per pair, from both sides' samples or published
counts, with the lost prompts per instruction category."""

from __future__ import annotations

import itertools
from collections import Counter
from collections.abc import Sequence

import pandas as pd

from sinkbench.submissions.catalogue import IFEVAL_CATEGORIES
from sinkbench.submissions.entry import Entry

REGRESSION_COLUMNS = [
    "entry",
    "vlm_id",
    "reference_llm_id",
    "source",
    "n_prompts",
    "both_pass",
    "lost",
    "gained",
    "both_fail",
    "net_points",
]
OUTCOME_COUNTS = ("both_pass", "lost", "gained", "both_fail")
#: The outcome of a prompt by (reference passed, VLM-LM passed).
_OUTCOME = dict(zip(itertools.product((True, False), repeat=2), OUTCOME_COUNTS, strict=True))


def _measured_regressions(entry: Entry) -> dict | None:
    """Counts from both sides' IFEval samples, prompts matched by ``doc.key``; a lost prompt is counted
    once in each category whose instructions the VLM-LM failed."""
    outcomes = entry.ifeval_outcomes()
    if outcomes is None:
        return None
    reference = {outcome.key: outcome.passed for outcome in outcomes[0]}
    tally: Counter[str] = Counter(dict.fromkeys((f"lost_{name}" for name in IFEVAL_CATEGORIES), 0))
    for vlm in outcomes[1]:
        outcome = _OUTCOME[(reference[vlm.key], vlm.passed)]
        tally[outcome] += 1
        if outcome == "lost":
            tally.update(f"lost_{category}" for category in vlm.failed_categories)
    return {
        "source": "samples",
        "n_prompts": len(outcomes[1]),
        **{key: tally[key] for key in OUTCOME_COUNTS},
        **{key: count for key, count in tally.items() if key.startswith("lost_")},
    }


def _reported_regressions(entry: Entry) -> dict | None:
    """Published counts; a category the source leaves out stays missing, not zero."""
    counts = entry.reported_regressions
    if counts is None:
        return None
    tables = "; ".join(filter(None, (counts.table, counts.categories_table)))
    row = {"source": f"reported ({tables})", "n_prompts": counts.n_prompts}
    row.update({key: getattr(counts, key) for key in OUTCOME_COUNTS})
    row.update({f"lost_{key}": value for key, value in counts.lost_by_category.items()})
    return row


def regressions_table(entries: Sequence[Entry]) -> pd.DataFrame:
    """Per pair with IFEval samples on both sides (or published counts): both-pass / lost / gained /
    both-fail, the net change in points, and lost prompts per instruction category."""
    rows = []
    for entry in (item for item in entries if item.kind == "pair"):
        found = _measured_regressions(entry) or _reported_regressions(entry)
        if found:
            rows.append(
                {"entry": entry.name, "vlm_id": entry.vlm.id, "reference_llm_id": entry.llm.id, **found}
            )
    categories = [f"lost_{name}" for name in IFEVAL_CATEGORIES]
    seen = {key for row in rows for key in row if key.startswith("lost_")}
    extra = sorted(seen - set(categories))
    table = pd.DataFrame(rows, columns=[*REGRESSION_COLUMNS, *categories, *extra])
    counts = ["n_prompts", *OUTCOME_COUNTS, *categories, *extra]
    table[counts] = table[counts].astype("Int64")
    table["net_points"] = (100 * (table["gained"] - table["lost"]) / table["n_prompts"]).astype(float)
    return table
