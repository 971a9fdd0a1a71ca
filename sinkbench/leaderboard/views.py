"""Views: what each page of the leaderboard shows, shaped for the templates from the aggregate tables (numbers) and
the entries they were built from (descriptive fields). Pair and backbone views are built in :mod:`.pair_views` and
:mod:`.backbone_views`; this module joins them with the correlations and the scatter charts. Nothing here reads a
file or computes a statistic.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable, Sequence
from dataclasses import replace
from operator import itemgetter
from typing import Any, TypeVar

import pandas as pd

from sinkbench.leaderboard.backbone_views import backbone_slugs, backbone_view, rank_order
from sinkbench.leaderboard.content import (
    BackboneView,
    CorrelationRow,
    IntervalRecord,
    PairView,
    PlotRef,
    SiteViews,
    TaskColumn,
)
from sinkbench.leaderboard.entry_details import Row
from sinkbench.leaderboard.history import BoardHistory
from sinkbench.leaderboard.pair_views import order_pairs, pair_view
from sinkbench.leaderboard.plots import ScatterChart, ScatterPoint
from sinkbench.leaderboard.precision import SourcePrecision
from sinkbench.numbers import finite_or_none
from sinkbench.stats.prediction import METHODS
from sinkbench.submissions.catalogue import IFEVAL_TASK, TASKS
from sinkbench.tables.build import AggregateTables
from sinkbench.tables.pairs import llm_keys

#: The task the home page and the leaderboard's prediction column are about.
HEADLINE_TASK = IFEVAL_TASK
T = TypeVar("T")


def _grouped(items: Iterable[T], key: Callable[[T], Hashable]) -> dict[Any, list[T]]:
    """``items`` grouped by ``key``, in their order."""
    groups: dict[Any, list[T]] = {}
    for item in items:
        groups.setdefault(key(item), []).append(item)
    return groups


def _interval_records(row: Row, labels: dict[str, str]) -> tuple[IntervalRecord, ...]:
    """Each interval method's leave-one-pair-out record of one task, the one predictions carry first; ``labels``
    maps entry names (page slugs) to VLM labels."""
    carried = row["prediction_interval"]
    records = []
    for method in sorted(METHODS.values(), key=lambda method: method.name != carried):
        column = f"{method.column}_loo"
        outside = [entry for entry in str(row[f"{column}_outside"] or "").split(";") if entry]
        records.append(
            IntervalRecord(
                method.name,
                finite_or_none(row[f"{column}_level"]),
                finite_or_none(row[f"{column}_guarantee"]),
                int(row[f"{column}_covered"]),
                int(row[f"{column}_checked"]),
                finite_or_none(row[f"{column}_median_width"]),
                tuple((entry, labels.get(entry, entry)) for entry in outside),
            )
        )
    return tuple(records)


def _as_strong_as(row: Row, rho: dict[str, float | None]) -> tuple[tuple[str, float | None], ...]:
    """The targets a control correlates with S as strongly as, with their rho (``control_as_strong_as``)."""
    tasks = [task for task in str(row.get("control_as_strong_as") or "").split(";") if task]
    return tuple((TASKS[task].label, rho.get(task)) for task in tasks)


def _correlation_row(row: Row, labels: dict[str, str], rho: dict[str, float | None]) -> CorrelationRow:
    low, high = row["spearman_ci"]
    slope, intercept = finite_or_none(row["slope"]), finite_or_none(row["intercept"])
    beats = row["beats_baseline"]
    return CorrelationRow(
        task=row["task"],
        label=TASKS[row["task"]].label,
        family=row["family"],
        n=int(row["n"]),
        distinct_s=int(row["distinct_s"]),
        spearman=finite_or_none(row["spearman"]),
        spearman_ci=(finite_or_none(low), finite_or_none(high)),
        kendall=finite_or_none(row["kendall"]),
        permutation_p=finite_or_none(row["permutation_p"]),
        loo_mae=finite_or_none(row["loo_mae"]),
        baseline_mae=finite_or_none(row["baseline_mae"]),
        beats_baseline=beats if isinstance(beats, str) else None,
        fit=(slope, intercept) if slope is not None and intercept is not None else None,
        prediction_interval=row["prediction_interval"],
        prediction_level=finite_or_none(row["prediction_interval_level"]),
        prediction_guarantee=finite_or_none(row["prediction_interval_guarantee"]),
        intervals=_interval_records(row, labels),
        as_strong_as=_as_strong_as(row, rho),
    )


def _point(pair: PairView, task: str, delta: float) -> ScatterPoint:
    """A pair's point on ``task``'s scatter, with what its hover label says."""
    result = pair.result(task)
    held = result.predicted if result else None
    return ScatterPoint(
        pair.vlm.label,
        pair.sink_strength.value,
        delta,
        pair.qk_norm,
        provenance=f"{pair.provenance}{f' · {result.basis}' if result and result.basis else ''}",
        delta_interval=result.delta_interval if result else None,
        predicted=held.delta if held else None,
        predicted_interval=(held.low, held.high)
        if held and held.low is not None and held.high is not None
        else None,
        interval_kind=f"{held.kind} {100 * held.level:.1f}%" if held and held.kind and held.level else "",
    )


def _scatter(correlation: CorrelationRow, pairs: Sequence[PairView]) -> PlotRef:
    points = tuple(
        _point(pair, correlation.task, delta)
        for pair in pairs
        if pair.sink_strength.value is not None and (delta := pair.delta(correlation.task)) is not None
    )
    rho = "n/a" if correlation.spearman is None else f"{correlation.spearman:.3f}"
    kind = "control task" if correlation.family == "control" else "format-sensitive task"
    caption = (
        f"{correlation.label} ({kind}): Spearman ρ = {rho} over {correlation.n} pairs "
        f"({correlation.distinct_s} distinct values of S)."
    )
    chart = ScatterChart(points, correlation.label, correlation.fit)
    return PlotRef(f"plots/scatter-{correlation.task}.svg", chart, caption)


def _entry_views(
    tables: AggregateTables, submitted: dict[str, str]
) -> tuple[list[PairView], list[BackboneView]]:
    """Every pair, in leaderboard order, and every LLM of the entries, in screening order (rank by S; unranked
    last); ``submitted`` is each entry's date on the board (by entry name)."""
    keys = llm_keys(tables.entries)
    slugs = backbone_slugs(keys.values())
    precision = SourcePrecision(tables.entries)
    pair_rows = _grouped(tables.pairs.to_dict("records"), itemgetter("entry"))
    regressions = {row["entry"]: row for row in tables.regressions.to_dict("records")}  # one row per pair
    pairs = [
        pair_view(
            entry,
            pair_rows.get(entry.name, []),
            regressions.get(entry.name),
            slugs[keys[entry.name]],
            precision,
            submitted.get(entry.name),
        )
        for entry in tables.entries
        if entry.kind == "pair"
    ]
    pairs = order_pairs(pairs, HEADLINE_TASK)
    by_llm = _grouped(tables.entries, lambda entry: keys[entry.name])
    screening = _grouped(
        tables.screening.to_dict("records"),
        lambda row: (row["model_id"], None if pd.isna(row["model_revision"]) else row["model_revision"]),
    )
    pairs_of = _grouped(pairs, lambda pair: pair.reference_slug)
    backbones = sorted(
        (
            backbone_view(
                group,
                screening.get(key, []),
                pairs_of.get(slugs[key], []),
                slugs[key],
                precision,
                submitted,
            )
            for key, group in by_llm.items()
        ),
        key=rank_order,
    )
    _describe_references(pairs, backbones)
    return pairs, backbones


def _describe_references(pairs: list[PairView], backbones: list[BackboneView]) -> None:
    """A pair whose entry records no family or licence of its reference LLM shows those its backbone page shows."""
    models = {backbone.slug: backbone.model for backbone in backbones}
    for pair in pairs:
        known, facts = models[pair.reference_slug], pair.reference
        pair.reference = replace(
            facts, family=facts.family or known.family, license=facts.license or known.license
        )


def build_views(tables: AggregateTables, history: BoardHistory | None = None) -> SiteViews:
    """Shape the aggregated tables and the entries they were built from into the contents of every page;
    ``history`` (of the submissions folder) gives each entry's date on the board and the changelog."""
    history = history or BoardHistory(available=False)
    pairs, backbones = _entry_views(tables, history.submitted)
    labels = {pair.slug: pair.vlm.label for pair in pairs}
    records = tables.correlations.to_dict("records")
    rho = {row["task"]: finite_or_none(row["spearman"]) for row in records}
    correlations = [_correlation_row(row, labels, rho) for row in records]
    present = set(tables.pairs["task"])
    return SiteViews(
        task_columns=[
            TaskColumn(task, spec.label, spec.family) for task, spec in TASKS.items() if task in present
        ],
        headline=TaskColumn(HEADLINE_TASK, TASKS[HEADLINE_TASK].label, TASKS[HEADLINE_TASK].family),
        pairs=pairs,
        backbones=backbones,
        correlations=correlations,
        scatters=[_scatter(row, [pair for pair in pairs if not pair.testbed]) for row in correlations],
        counts={
            "pairs": sum(not pair.testbed for pair in pairs),
            "testbed_pairs": sum(pair.testbed for pair in pairs),
            "backbones": len(backbones),
            "measured": sum(entry.provenance == "measured" for entry in tables.entries),
            "reported": sum(entry.provenance == "reported" for entry in tables.entries),
        },
        history=history,
    )
