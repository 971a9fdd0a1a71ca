"""Backbone views: the Screening row and the page of each text-only LLM (a reference LLM of pairs and/or a
backbone entry), from its rows of the screening table and its entries."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from itertools import pairwise

import numpy as np

from sinkbench import stats
from sinkbench.leaderboard import entry_details as details
from sinkbench.leaderboard.content import (
    BackboneView,
    Difference,
    Ordering,
    OtherScore,
    OwnScore,
    PairView,
    Prediction,
    Shown,
)
from sinkbench.leaderboard.entry_details import Row
from sinkbench.leaderboard.precision import SourcePrecision
from sinkbench.numbers import finite_or_none
from sinkbench.submissions.catalogue import TASKS
from sinkbench.submissions.entry import Entry
from sinkbench.submissions.facts import llm_size, s_protocol, score_basis

#: An LLM as the entries name it: (Hub id, revision or None).
LlmKey = tuple[str, str | None]


def backbone_slugs(llms: Iterable[LlmKey]) -> dict[LlmKey, str]:
    """A unique page name per LLM; the revision is added only when one id has several."""
    keys = sorted(set(llms), key=lambda key: (key[0], key[1] or ""))
    revisions_of = Counter(model_id for model_id, _ in keys)
    slugs: dict[LlmKey, str] = {}
    taken: set[str] = set()
    for model_id, revision in keys:
        base = details.slugify(
            model_id if revisions_of[model_id] == 1 else f"{model_id}--{revision or 'unknown'}"
        )
        slug, number = base, 1
        while slug in taken:
            number += 1
            slug = f"{base}-{number}"
        taken.add(slug)
        slugs[(model_id, revision)] = slug
    return slugs


def _reasons(row: Row) -> tuple[str, ...]:
    text = row.get("extrapolation_reasons")
    return tuple(part for part in str(text).split("; ") if part) if row.get("extrapolated") else ()


def _difference(row: Row, kind: str) -> Difference | None:
    """The ``diff_{kind}`` columns of ``row`` (next, top), or None where they are undefined."""
    values = [finite_or_none(row.get(f"diff_{kind}{part}")) for part in ("", "_low", "_high", "_share")]
    return None if None in values else Difference(*values, draws=stats.default_resamples(int(row["n_pairs"])))


def _predictions(rows: Iterable[Row]) -> list[Prediction]:
    found = {row["task"]: row for row in rows}
    return [
        Prediction(
            task,
            spec.label,
            finite_or_none(row["predicted_delta"]),
            finite_or_none(row["interval_low"]),
            finite_or_none(row["interval_high"]),
            _reasons(row),
            row["interval_kind"],
            finite_or_none(row["interval_level"]),
            informative=bool(row["informative"]),
            observed_range=finite_or_none(row["observed_delta_range"]),
            vs_next=_difference(row, "next"),
            vs_top=_difference(row, "top") if row["position"] > 1 else None,
        )
        for task, spec in TASKS.items()
        if (row := found.get(task)) is not None and finite_or_none(row["predicted_delta"]) is not None
    ]


def _own_scores(entries: Sequence[Entry], precision: SourcePrecision) -> list[OwnScore]:
    """The LLM's own score per task (reference side of pairs, or the backbone), first entry wins (entries come
    sorted, backbones first); the other entries' scores of the same task are listed beside it, with their basis."""
    found: dict[str, list[tuple[Entry, Shown, str]]] = {}
    for entry in entries:
        role = "backbone" if entry.kind == "backbone" else "reference"
        for task, score in entry.scores.items():
            if finite_or_none(score.reference_score) is not None:
                derived = "reference_score" in score.derived
                value = precision.shown(score.reference_score, entry, "score", task, derived)
                basis = score_basis(entry, role, task)
                found.setdefault(task, []).append((entry, value, basis.label if basis else ""))
    scores = []
    for task in (task for task in TASKS if task in found):
        (_, value, basis), *others = found[task]
        elsewhere = tuple(
            OtherScore(entry.name, details.label(entry.vlm) if entry.vlm else entry.name, shown, other_basis)
            for entry, shown, other_basis in others
            if (shown.value, other_basis) != (value.value, basis)
        )
        scores.append(OwnScore(task, TASKS[task].label, value, basis, elsewhere))
    return scores


def _interval(row: Row | None) -> tuple[float, float] | None:
    low = finite_or_none(row.get("sink_strength_ci_low")) if row else None
    high = finite_or_none(row.get("sink_strength_ci_high")) if row else None
    return (low, high) if low is not None and high is not None else None


def backbone_view(
    entries: list[Entry],
    screening: list[Row],
    pairs: list[PairView],
    slug: str,
    precision: SourcePrecision,
    submitted: dict[str, str] | None = None,
) -> BackboneView:
    """The view of one LLM from its entries and its rows of the screening table; ``precision`` gives the decimals
    of reported numbers, ``submitted`` each entry's date on the board (by entry name)."""
    first, row = entries[0], (screening[0] if screening else None)
    primary = next((entry for entry in entries if row and entry.name == row["s_entry"]), first)
    own = [entry for entry in entries if entry.kind == "backbone"]
    measured = [entry for entry in own if entry.llm_side is not None]
    profiled = next((entry for entry in entries if entry.sink_profile is not None), None)
    protocol = s_protocol(primary)
    return BackboneView(
        slug=slug,
        model=details.model_facts(first.llm, llm_size(first)),
        qk_norm=first.metadata.qk_norm,
        sink_strength=precision.shown(row["sink_strength"] if row else None, primary, "sink_strength"),
        s_interval=_interval(row),
        s_bounds=(row["s_low"], row["s_high"]) if row and finite_or_none(row["s_low"]) is not None else None,
        s_kind=row["s_kind"] if row else "none",
        tier=int(row["tier"]) if row else None,
        position=int(row["position"]) if row else None,
        s_protocol=protocol.label if protocol else None,
        role=" + ".join(sorted({"reference" if e.kind == "pair" else "backbone" for e in entries})),
        provenances=sorted({entry.provenance for entry in entries}),
        sink_metrics=next((sorted(m.items()) for e in entries if (m := e.sink_metrics)), []),
        lm_eval_versions=details.lm_eval_versions(e.llm_side for e in entries if e.llm_side is not None),
        directories=[entry.directory for entry in entries],
        scores=_own_scores(entries, precision),
        notes=[entry.metadata.notes for entry in own if entry.metadata.notes],
        raw_files=[f for entry in own for f in details.raw_files(entry)],
        metrics=details.all_metrics([measured[0].llm_side]) if measured else [],
        predictions=_predictions(screening),
        pairs=pairs,
        heatmap=details.heatmap(profiled) if profiled is not None else None,
        data_files=details.data_files(e.llm_side for e in measured),
        reproduce=[block for e in measured for block in details.reproduce(e, e.llm_side, e.llm)],
        s_entry=primary.name,
        submitted=min((submitted[e.name] for e in entries if e.name in (submitted or {})), default=None),
    )


def rank_order(view: BackboneView) -> tuple:
    """Screening order: the screening table's order by S (``position``), LLMs without an S last, by name."""
    return (view.position is None, view.position or 0, view.label)


def ordering(backbones: Sequence[BackboneView], task: str) -> Ordering:
    """What ``task``'s fit can order among ``backbones`` (in screening order): each inside what the pairs cover
    against the next such one by S, told apart or not, with the S gaps; and how many pairs of those backbones have
    prediction intervals that do not overlap."""
    gaps: dict[bool, list[float]] = {True: [], False: []}
    covered = [b for b in backbones if (p := b.prediction(task)) is not None and not p.extrapolated]
    for higher, lower in pairwise(covered):
        found = higher.prediction(task)
        if found is not None and found.vs_next is not None:
            gap = (higher.sink_strength.value or 0.0) - (lower.sink_strength.value or 0.0)
            gaps[found.vs_next.apart].append(gap)
    inside = [p for b in covered if (p := b.prediction(task)) and p.low is not None]
    lows = np.sort([p.low for p in inside])
    separated = sum(len(lows) - np.searchsorted(lows, p.high, side="right") for p in inside)
    return Ordering(
        compared=len(gaps[True]) + len(gaps[False]),
        apart=len(gaps[True]),
        smallest_apart=min(gaps[True], default=None),
        largest_not_apart=max(gaps[False], default=None),
        backbones=len(inside),
        separated=int(separated),
    )
