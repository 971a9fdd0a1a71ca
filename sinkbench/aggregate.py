"""Aggregate validated submission entries into the leaderboard tables (pandas) and write them atomically.

Outputs (``aggregate_submissions``): ``pairs.csv``/``pairs.json`` (per pair and task), ``correlations.json``
(per task: S vs delta), ``screening.csv`` (every LLM ranked by S with predicted deltas) and
``regressions.csv`` (IFEval per-prompt outcome counts per pair). Statistics come from
:mod:`sinkbench.stats`; the run is deterministic for a given ``seed``.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from sinkbench import stats
from sinkbench.safe_io import write_files_atomically
from sinkbench.submission_entry import Entry, Problem
from sinkbench.submission_schema import IFEVAL_CATEGORIES, TASKS
from sinkbench.submissions import load_submissions

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
CORRELATION_COLUMNS = [
    "task",
    "n",
    "spearman",
    "spearman_ci",
    "kendall",
    "permutation_p",
    "loo_mae",
    "baseline_mae",
    "permutation_method",
    "slope",
    "intercept",
    "residual_sd",
]
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
_FLOAT_COLUMNS = [
    "reference_score",
    "vlm_score",
    "delta",
    "reported_delta",
    "relative_degradation",
    "sink_strength",
    "predicted_delta",
]
OUTCOME_COUNTS = ("both_pass", "lost", "gained", "both_fail")
_OUTCOME = {
    (True, True): "both_pass",
    (True, False): "lost",
    (False, True): "gained",
    (False, False): "both_fail",
}
#: Decimal places kept in written tables.
DECIMALS = 6


class SubmissionsInvalid(ValueError):
    """Raised when the submissions do not validate; ``problems`` lists every problem."""

    def __init__(self, problems: Sequence[Problem]) -> None:
        super().__init__(f"{len(problems)} validation problem(s); run `sinkbench validate` for details")
        self.problems = tuple(problems)


@dataclass(frozen=True)
class AggregateTables:
    """The aggregated tables (each JSON/CSV output is one of these DataFrames) and the entries behind them."""

    pairs: pd.DataFrame
    correlations: pd.DataFrame
    screening: pd.DataFrame
    regressions: pd.DataFrame
    entries: tuple[Entry, ...] = ()


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


def _usable(pairs: pd.DataFrame, task: str) -> pd.DataFrame:
    """Rows of ``task`` with both S and delta known: the data every statistic of that task uses."""
    rows = pairs[pairs["task"] == task]
    return rows[rows["sink_strength"].notna() & rows["delta"].notna()]


def pairs_table(entries: Sequence[Entry]) -> pd.DataFrame:
    """Per pair and task: scores, delta (points), relative degradation, S, QK class, held-out prediction."""
    pairs = pd.DataFrame(_pair_rows(entries), columns=PAIRS_COLUMNS)
    pairs = pairs.astype(dict.fromkeys(_FLOAT_COLUMNS, float))
    for task in TASKS:
        usable = _usable(pairs, task)
        held_out = stats.loo_predictions(usable["sink_strength"], usable["delta"])
        pairs.loc[usable.index, "predicted_delta"] = held_out
    return pairs


def _permutation_method(n: int) -> str | None:
    if n < stats.MIN_PAIRS:
        return None
    return "exact" if n <= stats.EXACT_PERMUTATION_MAX_N else "monte-carlo"


def _correlation(task: str, usable: pd.DataFrame, seed: int) -> dict:
    s, delta = usable["sink_strength"].to_numpy(), usable["delta"].to_numpy()
    fit = stats.fit_line(s, delta) if len(s) >= stats.MIN_PAIRS else None
    return {
        "task": task,
        "n": len(s),
        "spearman": stats.spearman(s, delta),
        "spearman_ci": list(stats.spearman_bootstrap_ci(s, delta, seed=seed)),
        "kendall": stats.kendall(s, delta),
        "permutation_p": stats.permutation_p_value(s, delta, seed=seed),
        "loo_mae": stats.loo_mae(s, delta),
        "baseline_mae": stats.baseline_mae(delta),
        "permutation_method": _permutation_method(len(s)),
        "slope": fit.slope if fit else np.nan,
        "intercept": fit.intercept if fit else np.nan,
        "residual_sd": fit.residual_sd if fit else np.nan,
    }


def correlations_table(pairs: pd.DataFrame, *, seed: int) -> pd.DataFrame:
    """One row per task with pairs: Spearman, bootstrap CI, Kendall, permutation p, LOO and baseline MAE."""
    rows = [_correlation(task, _usable(pairs, task), seed) for task in TASKS if (pairs["task"] == task).any()]
    return pd.DataFrame(rows, columns=CORRELATION_COLUMNS)


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
        usable = _usable(pairs, task)
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


def build_tables(entries: Sequence[Entry], *, seed: int = 0) -> AggregateTables:
    """All tables from entries that passed validation (``load_submissions`` without problems); no I/O."""
    ordered = sorted(entries, key=lambda entry: (entry.kind, entry.name))
    pairs = pairs_table(ordered)
    return AggregateTables(
        pairs=pairs,
        correlations=correlations_table(pairs, seed=seed),
        screening=screening_table(ordered, pairs),
        regressions=regressions_table(ordered),
        entries=tuple(ordered),
    )


def _json_records(table: pd.DataFrame) -> str:
    records = json.loads(table.to_json(orient="records", double_precision=15))
    return json.dumps(records, indent=2, ensure_ascii=False, allow_nan=False) + "\n"


def render_outputs(tables: AggregateTables) -> dict[str, str]:
    """File name -> text of every output, floats rounded to :data:`DECIMALS` places."""
    rounded = {
        name: getattr(tables, name).round(DECIMALS)
        for name in ("pairs", "correlations", "screening", "regressions")
    }
    rounded["correlations"]["spearman_ci"] = [
        [round(value, DECIMALS) for value in interval] for interval in tables.correlations["spearman_ci"]
    ]
    return {
        "pairs.csv": rounded["pairs"].to_csv(index=False),
        "pairs.json": _json_records(rounded["pairs"]),
        "correlations.json": _json_records(rounded["correlations"]),
        "screening.csv": rounded["screening"].to_csv(index=False),
        "regressions.csv": rounded["regressions"].to_csv(index=False),
    }


def aggregate_submissions(submissions_dir: Path, out_dir: Path, *, seed: int = 0) -> AggregateTables:
    """Validate ``submissions_dir``, build every table and write them into ``out_dir`` atomically.

    Raises:
        SubmissionsInvalid: any validation problem; nothing is written then.
    """
    loaded = load_submissions(Path(submissions_dir))
    if loaded.problems:
        raise SubmissionsInvalid(loaded.problems)
    tables = build_tables(loaded.entries, seed=seed)
    write_files_atomically(Path(out_dir), render_outputs(tables))
    return tables
