"""Pair views: the leaderboard row and the page of each pair, from its rows of the pairs and regressions tables
and its entry (descriptive fields, the per-prompt drill-down of IFEval regressions, reproduce commands)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from sinkbench.leaderboard import entry_details as details
from sinkbench.leaderboard.content import HeldOut, PairView, PlotRef, PromptChange, Regressions, TaskResult
from sinkbench.leaderboard.entry_details import Row
from sinkbench.leaderboard.plots import CategoryChart
from sinkbench.leaderboard.precision import SourcePrecision
from sinkbench.numbers import finite_or_none
from sinkbench.submissions.catalogue import TASKS
from sinkbench.submissions.entry import Entry, IfevalOutcome
from sinkbench.submissions.facts import llm_size, s_protocol, vlm_size
from sinkbench.tables.pairs import OWN_S
from sinkbench.tables.screening import s_interval

_OUTCOMES = ("both_pass", "lost", "gained", "both_fail")


def _task_result(row: Row, entry: Entry, precision: SourcePrecision) -> TaskResult:
    """One task of a pair from its row of the pairs table; a reported pair's numbers are shown as its source printed
    them."""
    derived = set(str(row["derived"] or "").split(";"))
    task = row["task"]
    printed = finite_or_none(row["reported_delta"])
    low, high = finite_or_none(row["delta_ci_low"]), finite_or_none(row["delta_ci_high"])
    reported = entry.provenance == "reported"
    delta = printed if reported and printed is not None else row["delta"]
    return TaskResult(
        task,
        TASKS[task].label,
        precision.shown(row["reference_score"], entry, "score", task, "reference_score" in derived),
        precision.shown(row["vlm_score"], entry, "score", task, "vlm_score" in derived),
        precision.shown(delta, entry, "delta", task, "delta" in derived),
        finite_or_none(row["relative_degradation"]),
        _held_out(row),
        (low, high) if low is not None and high is not None else None,
        row["reference_basis"] or "",
        row["vlm_basis"] or "",
        row["delta_ci_kind"],
        row["delta_ci_reason"] if isinstance(row["delta_ci_reason"], str) else "",
    )


def _held_out(row: Row) -> HeldOut:
    """The pair's held-out prediction of one task with its interval, from its row of the pairs table."""
    low, high = finite_or_none(row["predicted_interval_low"]), finite_or_none(row["predicted_interval_high"])
    flag = row["predicted_informative"]
    return HeldOut(
        finite_or_none(row["predicted_delta"]),
        low,
        high,
        row["predicted_interval_kind"] if isinstance(row["predicted_interval_kind"], str) else None,
        finite_or_none(row["predicted_interval_level"]),
        informative=bool(flag) if isinstance(flag, (bool, np.bool_)) else True,
    )


def _regressions(row: Row | None, pair_label: str, slug: str) -> Regressions | None:
    if row is None:
        return None
    counts = tuple(
        (column.removeprefix("lost_"), int(value))
        for column, value in row.items()
        if column.startswith("lost_") and finite_or_none(value) is not None
    )
    plot = PlotRef(f"plots/regressions-{slug}.svg", CategoryChart(counts, pair_label)) if counts else None
    return Regressions(
        *(int(row[key]) for key in _OUTCOMES), net_points=finite_or_none(row["net_points"]), plot=plot
    )


def _readable(text: str | None) -> str:
    """Model output for display: invisible and control characters (other than newlines and tabs) as U+FFFD."""
    return "".join(char if char.isprintable() or char in "\n\t" else "\ufffd" for char in text or "")


def _prompt_changes(entry: Entry) -> list[PromptChange]:
    """Every IFEval prompt the VLM-LM lost or gained, with both responses, in the samples' order."""
    outcomes = entry.ifeval_outcomes()
    if outcomes is None:
        return []
    reference: dict[str, IfevalOutcome] = {outcome.key: outcome for outcome in outcomes[0]}
    changes = []
    for vlm in outcomes[1]:
        before = reference[vlm.key]
        if before.passed == vlm.passed:
            continue
        failed = vlm.failed_ids if before.passed else before.failed_ids
        changes.append(
            PromptChange(
                vlm.key,
                "lost" if before.passed else "gained",
                _readable(vlm.prompt or before.prompt),
                failed,
                _readable(before.response),
                _readable(vlm.response),
            )
        )
    return changes


def pair_view(
    entry: Entry,
    rows: list[Row],
    regressions: Row | None,
    reference_slug: str,
    precision: SourcePrecision,
    submitted: str | None = None,
) -> PairView:
    """The view of one pair from its rows of the pairs and regressions tables; ``precision`` gives the decimals
    of reported numbers, ``submitted`` the date it joined the board."""
    meta = entry.metadata
    protocol = s_protocol(entry)
    s_source = next((row["s_source"] for row in rows if row["s_source"] != OWN_S), "")
    s_derived = bool(meta.reported and meta.reported.sink_strength.derived)
    sides = [entry.sides.get("reference"), entry.sides.get("vlm")]
    present = [side for side in sides if side is not None]
    models = {"reference": entry.llm, "vlm": entry.vlm}
    return PairView(
        slug=entry.name,
        directory=entry.directory,
        vlm=details.model_facts(entry.vlm, vlm_size(entry), vlm=True, on_hub=not entry.testbed),
        reference=details.model_facts(entry.llm, llm_size(entry)),
        reference_slug=reference_slug,
        sink_strength=precision.shown(entry.sink_strength, entry, "sink_strength", derived=s_derived),
        s_protocol=protocol.label if protocol else None,
        sink_metrics=sorted(entry.sink_metrics.items()),
        qk_norm=meta.qk_norm,
        provenance=entry.provenance,
        vl_recipe=meta.vl_recipe,
        submitter=meta.submitter,
        citation=meta.citation.source if meta.citation else None,
        links=list(meta.links),
        notes=meta.notes,
        lm_eval_versions=details.lm_eval_versions(present),
        results=[_task_result(row, entry, precision) for row in rows],
        raw_files=details.raw_files(entry),
        metrics=details.all_metrics(sides) if present else [],
        heatmap=details.heatmap(entry),
        regressions=_regressions(regressions, details.label(entry.vlm), entry.name),
        prompt_changes=_prompt_changes(entry),
        data_files=details.data_files(present),
        reproduce=[
            block
            for role, side in entry.sides.items()
            for block in details.reproduce(entry, side, models[role])
        ],
        testbed=entry.testbed,
        s_interval=s_interval(entry),
        s_source=s_source,
        submitted=submitted,
    )


def order_pairs(pairs: Sequence[PairView], headline: str) -> list[PairView]:
    """The smallest headline loss first; pairs without the headline task last."""

    def key(pair: PairView) -> tuple:
        delta = pair.delta(headline)
        return (delta is None, -(delta or 0.0), pair.vlm.label)

    return sorted(pairs, key=key)
