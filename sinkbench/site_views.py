"""What each page of the leaderboard shows: the aggregated tables and entries, shaped for the templates.

Numbers come from :mod:`sinkbench.aggregate`'s tables; the descriptive fields (revisions, recipe, links,
lm-eval version, raw files, sink profile) from the shared entry model of :mod:`sinkbench.submissions`. This
module computes no statistic: it joins, orders and labels. User-supplied text is passed through as plain
strings; the templates escape it.
"""

from __future__ import annotations

import math
import os
import re
import stat
import statistics
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from sinkbench.aggregate import AggregateTables
from sinkbench.plots import CategoryChart, HeatmapChart, ScatterChart, ScatterPoint
from sinkbench.site_model import (
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
from sinkbench.submission_entry import Entry, Side
from sinkbench.submission_schema import IFEVAL_TASK, TASKS, ModelRef
from sinkbench.submissions import KIND_FOLDERS

#: The task the home page and the leaderboard's prediction column are about.
HEADLINE_TASK = IFEVAL_TASK
_FOLDER_OF_KIND = {kind: folder for folder, kind in KIND_FOLDERS.items()}
_UNSAFE_SLUG = re.compile(r"[^a-z0-9._-]+")
#: One row of an aggregated table, as ``DataFrame.to_dict("records")`` gives it.
Row = dict[str, Any]
#: An LLM as the entries name it: (Hub id, revision or None).
LlmKey = tuple[str, str | None]


def _number(value: object) -> float | None:
    """A finite float, or None for missing values (None, NaN, pandas NA)."""
    if value is None or value is pd.NA:
        return None
    number = float(value)
    return number if math.isfinite(number) else None


def _label(model: ModelRef) -> str:
    return model.display_name or model.id


def slugify(text: str) -> str:
    """A lower-case URL-safe file name from a model id (``Org/Name`` becomes ``org--name``)."""
    return _UNSAFE_SLUG.sub("-", text.lower().replace("/", "--")).strip("-.") or "model"


def _lm_eval_versions(sides: Iterable[Side]) -> list[str]:
    return sorted(
        {item.data.lm_eval_version for side in sides for item in side.results if item.data.lm_eval_version}
    )


def _raw_files(entry: Entry, submissions_dir: Path) -> list[RawFile]:
    """Every regular file in the entry's folder (symbolic links left out), by path, for its page to link to."""
    kind_folder = _FOLDER_OF_KIND[entry.kind]
    found = sorted(
        _regular_files(submissions_dir / kind_folder / entry.name), key=lambda item: item[0].split("/")
    )
    return [
        RawFile(relative, f"raw/{kind_folder}/{entry.name}/{relative}", path, _size(size))
        for relative, path, size in found
    ]


def _regular_files(folder: Path) -> Iterator[tuple[str, Path, int]]:
    """(POSIX path relative to ``folder``, path, bytes) of each regular file below it: one ``lstat`` each."""
    for directory, _, names in os.walk(folder):
        for name in names:
            path = Path(directory, name)
            info = path.lstat()
            if stat.S_ISREG(info.st_mode):
                yield path.relative_to(folder).as_posix(), path, info.st_size


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
        if isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
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
        _number(row["reference_score"]),
        _number(row["vlm_score"]),
        _number(row["delta"]),
        _number(row["relative_degradation"]),
        _number(row["predicted_delta"]),
    )


def _regressions(row: Row | None, pair_label: str, slug: str) -> Regressions | None:
    if row is None:
        return None
    counts = tuple(
        (column.removeprefix("lost_"), int(value))
        for column, value in row.items()
        if column.startswith("lost_") and _number(value) is not None
    )
    plot = PlotRef(f"plots/regressions-{slug}.svg", CategoryChart(counts, pair_label)) if counts else None
    counts_by_outcome = [int(row[key]) for key in ("both_pass", "lost", "gained", "both_fail")]
    return Regressions(*counts_by_outcome, net_points=_number(row["net_points"]), plot=plot)


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
        sink_strength=_number(entry.sink_strength),
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
            _number(row["predicted_delta"]),
            _number(row["interval_low"]),
            _number(row["interval_high"]),
        )
        for task, spec in TASKS.items()
        if (row := found.get(task)) is not None
    ]


def _own_scores(entries: Sequence[Entry]) -> list[OwnScore]:
    """The LLM's own score per task (reference side of pairs, or the backbone), first entry wins."""
    scores: dict[str, OwnScore] = {}
    for entry in entries:
        for task, score in entry.scores.items():
            value = _number(score.reference_score)
            if value is not None:
                scores.setdefault(task, OwnScore(TASKS[task].label, value, score.coverage))
    return [scores[task] for task in TASKS if task in scores]


def _backbone_view(
    key: LlmKey,
    entries: list[Entry],
    screening: list[Row],
    pairs: list[PairView],
    slug: str,
    submissions_dir: Path,
) -> BackboneView:
    first = entries[0]
    measured_s = [value for entry in entries if (value := _number(entry.sink_strength)) is not None]
    sink_strength = _number(screening[0]["sink_strength"]) if screening else None
    if sink_strength is None and measured_s:
        sink_strength = statistics.fmean(measured_s)
    own = [entry for entry in entries if entry.kind == "backbone"]
    profiled = next((entry for entry in entries if entry.sink_profile is not None), None)
    return BackboneView(
        slug=slug,
        label=_label(first.llm),
        model_id=key[0],
        revisions=[key[1]] if key[1] else [],
        qk_norm=first.metadata.qk_norm,
        sink_strength=sink_strength,
        rank=int(screening[0]["rank"]) if screening and _number(screening[0]["rank"]) is not None else None,
        role=" + ".join(sorted({"reference" if e.kind == "pair" else "backbone" for e in entries})),
        provenances=sorted({entry.provenance for entry in entries}),
        sink_metrics=next((m for e in entries if (m := _sink_metrics(e))), []),
        lm_eval_versions=_lm_eval_versions(e.llm_side for e in entries if e.llm_side is not None),
        directories=[entry.directory for entry in entries],
        scores=_own_scores(entries),
        notes=[entry.metadata.notes for entry in own if entry.metadata.notes],
        raw_files=[f for entry in own for f in _raw_files(entry, submissions_dir)],
        metrics=all_metrics([own[0].llm_side]) if own and own[0].llm_side is not None else [],
        predictions=_predictions(screening),
        pairs=pairs,
        heatmap=_heatmap(profiled) if profiled is not None else None,
    )


def _correlation_row(row: Row) -> CorrelationRow:
    low, high = row["spearman_ci"]
    slope, intercept = _number(row["slope"]), _number(row["intercept"])
    return CorrelationRow(
        task=row["task"],
        label=TASKS[row["task"]].label,
        n=int(row["n"]),
        spearman=_number(row["spearman"]),
        spearman_ci=(_number(low), _number(high)),
        kendall=_number(row["kendall"]),
        permutation_p=_number(row["permutation_p"]),
        loo_mae=_number(row["loo_mae"]),
        baseline_mae=_number(row["baseline_mae"]),
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
    tables: AggregateTables, entries: Sequence[Entry], slugs: dict[LlmKey, str], submissions_dir: Path
) -> list[PairView]:
    """Every pair, the smallest headline loss first."""
    pair_rows = _group_rows(tables.pairs, "entry")
    regression_rows = _group_rows(tables.regressions, "entry")
    pairs = [
        _pair_view(
            entry,
            pair_rows.get(entry.name, []),
            next(iter(regression_rows.get(entry.name, [])), None),
            _raw_files(entry, submissions_dir),
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
    submissions_dir: Path,
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
            _backbone_view(
                key, group, screening.get(key, []), pairs_of.get(slugs[key], []), slugs[key], submissions_dir
            )
            for key, group in by_llm.items()
        ),
        key=_rank_order,
    )
    ranked = sum(view.rank is not None for view in backbones)
    for backbone in backbones:
        backbone.ranked = ranked
    return backbones


def build_views(tables: AggregateTables, entries: Sequence[Entry], submissions_dir: Path) -> SiteViews:
    """Shape the aggregated tables and the entries into the contents of every page."""
    slugs = _backbone_slugs(entries)
    pairs = _pair_views(tables, entries, slugs, submissions_dir)
    backbones = _backbone_views(tables, entries, pairs, slugs, submissions_dir)
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
