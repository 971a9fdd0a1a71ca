"""Views: what each page of the leaderboard shows, shaped from the aggregate tables for the templates.

Numbers come from the aggregated tables (:mod:`sinkbench.tables`); the descriptive fields (revisions, recipe,
links, lm-eval version, raw files, sink profile) from the entries the tables were built from (the shared entry
model of :mod:`sinkbench.submissions`, which already lists each entry's files). This module reads no file and
computes no statistic: it joins, orders and labels. User-supplied text is passed through as plain strings; the
templates escape it.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Sequence
from typing import Any

import pandas as pd

from sinkbench.leaderboard.content import (
    BackboneView,
    CorrelationRow,
    MetricRow,
    OwnScore,
    PairView,
    PlotRef,
    Prediction,
    RawFile,
    Regressions,
    SiteViews,
    TaskColumn,
    TaskResult,
)
from sinkbench.leaderboard.plots import CategoryChart, HeatmapChart, ScatterChart, ScatterPoint
from sinkbench.numbers import finite_or_none, is_finite_number
from sinkbench.submissions.catalogue import FOLDER_OF_KIND, IFEVAL_TASK, TASKS
from sinkbench.submissions.entry import Entry, Side
from sinkbench.submissions.schema import ModelRef
from sinkbench.tables.build import AggregateTables

#: The task the home page and the leaderboard's prediction column are about.
HEADLINE_TASK = IFEVAL_TASK
_UNSAFE_SLUG = re.compile(r"[^a-z0-9._-]+")
#: One row of an aggregated table, as ``DataFrame.to_dict("records")`` gives it.
Row = dict[str, Any]
#: An LLM as the entries name it: (Hub id, revision or None).
LlmKey = tuple[str, str | None]


def _label(model: ModelRef) -> str:
    return model.display_name or model.id


def slugify(text: str) -> str:
    """A lower-case URL-safe file name from a model id (``Org/Name`` becomes ``org--name``)."""
    return _UNSAFE_SLUG.sub("-", text.lower().replace("/", "--")).strip("-.") or "model"


def _lm_eval_versions(sides: Iterable[Side]) -> list[str]:
    return sorted(
        {item.data.lm_eval_version for side in sides for item in side.results if item.data.lm_eval_version}
    )


def _raw_files(entry: Entry) -> list[RawFile]:
    """Every file of the entry (as the loader found it), for its page to link to."""
    kind_folder = FOLDER_OF_KIND[entry.kind]
    return [
        RawFile(file.relative, f"raw/{kind_folder}/{entry.name}/{file.relative}", file.path, _size(file.size))
        for file in entry.files
    ]


def _size(size: int) -> str:
    """A file size for people: bytes, kB or MB (powers of 1,000)."""
    if size < 1000:
        return f"{size} bytes"
    return f"{size / 1000:.1f} kB" if size < 1_000_000 else f"{size / 1_000_000:.1f} MB"


def _heatmap(entry: Entry) -> PlotRef | None:
    profile = entry.sink_profile
    if profile is None or not profile.profile.layers:
        return None
    matrix = tuple(tuple(row) for row in profile.profile.median_g)
    chart = HeatmapChart(tuple(profile.profile.layers), matrix, _label(entry.llm))
    return PlotRef(f"plots/profile-{entry.name}.svg", chart)


def _side_metrics(side: Side) -> dict[tuple[str, str], float]:
    """Every numeric metric of a side's results files, keyed by (task, metric key)."""
    return {
        (task, key): float(value)
        for item in side.results
        for task, metrics in item.data.results.items()
        for key, value in metrics.items()
        if is_finite_number(value)
    }


def all_metrics(sides: Sequence[Side | None]) -> list[MetricRow]:
    """One row per (task, metric) found on any of ``sides``, with each side's value or None."""
    found = [_side_metrics(side) if side is not None else {} for side in sides]
    keys = sorted({key for metrics in found for key in metrics})
    return [
        MetricRow(task, metric, tuple(metrics.get((task, metric)) for metrics in found))
        for task, metric in keys
    ]


def _sink_metrics(entry: Entry) -> list[tuple[str, float]]:
    return sorted(entry.sink_metrics.items())


def _task_result(row: Row) -> TaskResult:
    """One task of a pair from its row of the pairs table."""
    return TaskResult(
        row["task"],
        TASKS[row["task"]].label,
        finite_or_none(row["reference_score"]),
        finite_or_none(row["vlm_score"]),
        finite_or_none(row["delta"]),
        finite_or_none(row["relative_degradation"]),
        finite_or_none(row["predicted_delta"]),
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
    counts_by_outcome = [int(row[key]) for key in ("both_pass", "lost", "gained", "both_fail")]
    return Regressions(*counts_by_outcome, net_points=finite_or_none(row["net_points"]), plot=plot)


def _group_rows(table: pd.DataFrame, key: str) -> dict[str, list[Row]]:
    """The rows of ``table`` grouped by the value of column ``key``, in table order."""
    groups: dict[str, list[Row]] = {}
    for row in _records(table):
        groups.setdefault(row[key], []).append(row)
    return groups


def _records(table: pd.DataFrame) -> list[Row]:
    return table.to_dict("records")


def _pair_view(
    entry: Entry, rows: list[Row], regressions: Row | None, raw: list[RawFile], reference_slug: str
) -> PairView:
    meta = entry.metadata
    vlm = entry.vlm
    results = [_task_result(row) for row in rows]
    citation = meta.citation.source if meta.citation else None
    return PairView(
        slug=entry.name,
        directory=entry.directory,
        vlm=_label(vlm),
        vlm_id=vlm.id,
        vlm_revision=vlm.revision,
        reference=_label(entry.llm),
        reference_id=entry.llm.id,
        reference_revision=entry.llm.revision,
        reference_slug=reference_slug,
        sink_strength=finite_or_none(entry.sink_strength),
        sink_metrics=_sink_metrics(entry),
        qk_norm=meta.qk_norm,
        provenance=entry.provenance,
        vl_recipe=meta.vl_recipe,
        submitter=meta.submitter,
        citation=citation,
        links=list(meta.links),
        notes=meta.notes,
        lm_eval_versions=_lm_eval_versions(entry.sides.values()),
        results=results,
        raw_files=raw,
        metrics=all_metrics([entry.sides.get("reference"), entry.sides.get("vlm")]) if entry.sides else [],
        heatmap=_heatmap(entry),
        regressions=_regressions(regressions, _label(vlm), entry.name),
    )


def _llm_key(entry: Entry) -> LlmKey:
    return entry.llm.id, entry.llm.revision


def _backbone_slugs(entries: Sequence[Entry]) -> dict[LlmKey, str]:
    """A unique page name per LLM; the revision is added only when one id has several."""
    keys = sorted({_llm_key(entry) for entry in entries}, key=lambda key: (key[0], key[1] or ""))
    revisions_of: dict[str, int] = {}
    for model_id, _ in keys:
        revisions_of[model_id] = revisions_of.get(model_id, 0) + 1
    slugs: dict[LlmKey, str] = {}
    taken: set[str] = set()
    for model_id, revision in keys:
        base = slugify(model_id if revisions_of[model_id] == 1 else f"{model_id}--{revision or 'unknown'}")
        slug, number = base, 1
        while slug in taken:
            number += 1
            slug = f"{base}-{number}"
        taken.add(slug)
        slugs[(model_id, revision)] = slug
    return slugs


def _predictions(rows: Iterable[Row]) -> list[Prediction]:
    found = {row["task"]: row for row in rows}
    return [
        Prediction(
            task,
            spec.label,
            finite_or_none(row["predicted_delta"]),
            finite_or_none(row["interval_low"]),
            finite_or_none(row["interval_high"]),
        )
        for task, spec in TASKS.items()
        if (row := found.get(task)) is not None
    ]


def _own_scores(entries: Sequence[Entry]) -> list[OwnScore]:
    """The LLM's own score per task (reference side of pairs, or the backbone), first entry wins."""
    scores: dict[str, OwnScore] = {}
    for entry in entries:
        for task, score in entry.scores.items():
            value = finite_or_none(score.reference_score)
            if value is not None:
                scores.setdefault(task, OwnScore(TASKS[task].label, value, score.coverage))
    return [scores[task] for task in TASKS if task in scores]


def _backbone_view(
    key: LlmKey,
    entries: list[Entry],
    screening: list[Row],
    pairs: list[PairView],
    slug: str,
) -> BackboneView:
    first = entries[0]
    sink_strength = finite_or_none(screening[0]["sink_strength"]) if screening else None
    own = [entry for entry in entries if entry.kind == "backbone"]
    profiled = next((entry for entry in entries if entry.sink_profile is not None), None)
    return BackboneView(
        slug=slug,
        label=_label(first.llm),
        model_id=key[0],
        revisions=[key[1]] if key[1] else [],
        qk_norm=first.metadata.qk_norm,
        sink_strength=sink_strength,
        rank=int(screening[0]["rank"])
        if screening and finite_or_none(screening[0]["rank"]) is not None
        else None,
        role=" + ".join(sorted({"reference" if e.kind == "pair" else "backbone" for e in entries})),
        provenances=sorted({entry.provenance for entry in entries}),
        sink_metrics=next((m for e in entries if (m := _sink_metrics(e))), []),
        lm_eval_versions=_lm_eval_versions(e.llm_side for e in entries if e.llm_side is not None),
        directories=[entry.directory for entry in entries],
        scores=_own_scores(entries),
        notes=[entry.metadata.notes for entry in own if entry.metadata.notes],
        raw_files=[f for entry in own for f in _raw_files(entry)],
        metrics=all_metrics([own[0].llm_side]) if own and own[0].llm_side is not None else [],
        predictions=_predictions(screening),
        pairs=pairs,
        heatmap=_heatmap(profiled) if profiled is not None else None,
    )


def _correlation_row(row: Row) -> CorrelationRow:
    low, high = row["spearman_ci"]
    slope, intercept = finite_or_none(row["slope"]), finite_or_none(row["intercept"])
    return CorrelationRow(
        task=row["task"],
        label=TASKS[row["task"]].label,
        n=int(row["n"]),
        spearman=finite_or_none(row["spearman"]),
        spearman_ci=(finite_or_none(low), finite_or_none(high)),
        kendall=finite_or_none(row["kendall"]),
        permutation_p=finite_or_none(row["permutation_p"]),
        loo_mae=finite_or_none(row["loo_mae"]),
        baseline_mae=finite_or_none(row["baseline_mae"]),
        fit=(slope, intercept) if slope is not None and intercept is not None else None,
    )


def _scatter(correlation: CorrelationRow, pairs: Sequence[PairView]) -> PlotRef:
    points = tuple(
        ScatterPoint(pair.vlm, pair.sink_strength, delta, pair.qk_norm)
        for pair in pairs
        if pair.sink_strength is not None and (delta := pair.delta(correlation.task)) is not None
    )
    rho = "n/a" if correlation.spearman is None else f"{correlation.spearman:.3f}"
    caption = f"{correlation.label}: Spearman ρ = {rho} over {correlation.n} pairs."
    chart = ScatterChart(points, correlation.label, correlation.fit)
    return PlotRef(f"plots/scatter-{correlation.task}.svg", chart, caption)


def _rank_order(view: BackboneView) -> tuple:
    return (view.rank is None, view.rank or 0, -(view.sink_strength or -math.inf), view.label)


def _pair_views(
    tables: AggregateTables, entries: Sequence[Entry], slugs: dict[LlmKey, str]
) -> list[PairView]:
    """Every pair, the smallest headline loss first."""
    pair_rows = _group_rows(tables.pairs, "entry")
    regression_rows = _group_rows(tables.regressions, "entry")
    pairs = [
        _pair_view(
            entry,
            pair_rows.get(entry.name, []),
            next(iter(regression_rows.get(entry.name, [])), None),
            _raw_files(entry),
            slugs[_llm_key(entry)],
        )
        for entry in entries
        if entry.kind == "pair"
    ]
    headline = [pair.delta(HEADLINE_TASK) for pair in pairs]
    order = sorted(
        range(len(pairs)), key=lambda i: (headline[i] is None, -(headline[i] or 0.0), pairs[i].vlm)
    )
    return [pairs[i] for i in order]


def _backbone_views(
    tables: AggregateTables,
    entries: Sequence[Entry],
    pairs: list[PairView],
    slugs: dict[LlmKey, str],
) -> list[BackboneView]:
    """Every LLM of the entries, in screening order (rank by S; unranked last)."""
    by_llm: dict[LlmKey, list[Entry]] = {}
    for entry in entries:
        by_llm.setdefault(_llm_key(entry), []).append(entry)
    screening: dict[LlmKey, list[Row]] = {}
    for row in _records(tables.screening):
        key = (row["model_id"], None if pd.isna(row["model_revision"]) else row["model_revision"])
        screening.setdefault(key, []).append(row)
    pairs_of: dict[str, list[PairView]] = {}
    for pair in pairs:
        pairs_of.setdefault(pair.reference_slug, []).append(pair)
    backbones = sorted(
        (
            _backbone_view(key, group, screening.get(key, []), pairs_of.get(slugs[key], []), slugs[key])
            for key, group in by_llm.items()
        ),
        key=_rank_order,
    )
    ranked = sum(view.rank is not None for view in backbones)
    for backbone in backbones:
        backbone.ranked = ranked
    return backbones


def build_views(tables: AggregateTables) -> SiteViews:
    """Shape the aggregated tables and the entries they were built from into the contents of every page."""
    entries = tables.entries
    slugs = _backbone_slugs(entries)
    pairs = _pair_views(tables, entries, slugs)
    backbones = _backbone_views(tables, entries, pairs, slugs)
    correlations = [_correlation_row(row) for row in _records(tables.correlations)]
    present = set(tables.pairs["task"])
    return SiteViews(
        task_columns=[TaskColumn(task, spec.label) for task, spec in TASKS.items() if task in present],
        headline=TaskColumn(HEADLINE_TASK, TASKS[HEADLINE_TASK].label),
        pairs=pairs,
        backbones=backbones,
        correlations=correlations,
        scatters=[_scatter(row, pairs) for row in correlations],
        counts={
            "pairs": len(pairs),
            "backbones": len(backbones),
            "measured": sum(entry.provenance == "measured" for entry in entries),
            "reported": sum(entry.provenance == "reported" for entry in entries),
        },
    )
