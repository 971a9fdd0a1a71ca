"""The screening table: every backbone and reference LLM ranked by S, with the deltas the fit on the pairs
predicts for it, their prediction intervals (:mod:`sinkbench.stats.prediction`) and how often those held on the
pairs. A prediction is flagged ``extrapolated`` (with its reasons, :class:`FitDomain`) where the fit says nothing
about the model, and the board shows it apart instead of ranking it.

Each LLM's S carries an interval (a measured S's bootstrap over prompts, a reported one's prompt-set band
:data:`REPORTED_S_BAND`) that its tier (:func:`sinkbench.tables.rules.tiers`) and, per task, its differences in
expected delta against the next LLM by S and the first (:func:`sinkbench.stats.line_differences`) are read from.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike

from sinkbench import stats
from sinkbench.stats import prediction
from sinkbench.submissions.catalogue import TASKS
from sinkbench.submissions.entry import Entry
from sinkbench.submissions.facts import llm_size, s_protocol
from sinkbench.tables.pairs import llm_keys, usable_pairs
from sinkbench.tables.rules import beats_mean, informative, tiers

_LLM_COLUMNS = [
    "model_id",
    "model_revision",
    "sink_strength",
    "sink_strength_ci_low",
    "sink_strength_ci_high",
    "s_low",
    "s_high",
    "s_kind",
    "s_protocol",
    "qk_norm",
    "params_b",
    "params_source",
    "family",
    "license",
    "role",
    "provenance",
    "entries",
    "s_entry",
]
#: The per-task columns of the differences in expected delta (:func:`sinkbench.stats.line_differences`): this LLM
#: minus the next by S (``diff_next``), the first by S minus this LLM (``diff_top``); bounds and share of draws > 0.
_DIFFERENCE_COLUMNS = [
    f"diff_{kind}{part}" for kind in ("next", "top") for part in ("", "_low", "_high", "_share")
]
SCREENING_COLUMNS = [
    "rank",
    "position",
    "tier",
    *_LLM_COLUMNS,
    "task",
    "predicted_delta",
    "interval_kind",
    "interval_level",
    "interval_guarantee",
    "interval_low",
    "interval_high",
    "t_interval_low",
    "t_interval_high",
    "interval_loo_level",
    "interval_loo_covered",
    "interval_loo_checked",
    "n_pairs",
    "extrapolated",
    "extrapolation_reasons",
    "observed_delta_range",
    "informative",
    *_DIFFERENCE_COLUMNS,
]
#: z of a two-sided 95% normal interval: S's interval from its bootstrap standard error.
_Z95 = 1.959964
#: The prompt-set band of a reported S, in nats: the paper's value +- the largest shift of S between two calibration
#: prompt sets that this board measured (experiments/prompt_sets: +0.07 on SmolLM2-135M, +0.13 on Gemma 3 270M;
#: tests/leaderboard/test_decision.py holds it to those results). What another prompt set may do to S, not a sampling interval.
REPORTED_S_BAND = 0.13
#: How an LLM's S interval was made (``s_kind``), by whether its S was measured with a bootstrap or reported.
S_KINDS = {"bootstrap": "bootstrap over prompts", "band": "prompt-set band", "none": "none"}


@dataclass(frozen=True)
class FitDomain:
    """What the pairs behind one task's fit cover: their S range, their reference LLMs' sizes, their protocols. A
    prediction outside any of them extrapolates: the fit says nothing about such a model."""

    s_range: tuple[float, float]
    size_range: tuple[float, float] | None
    protocols: frozenset[str]

    @classmethod
    def of(cls, usable: pd.DataFrame) -> FitDomain:
        """The domain of the pairs in ``usable`` (rows of the pairs table)."""
        sizes = usable["reference_params_b"].dropna()
        return cls(
            (float(usable["sink_strength"].min()), float(usable["sink_strength"].max())),
            (float(sizes.min()), float(sizes.max())) if len(sizes) else None,
            frozenset(usable["s_protocol"].dropna()),
        )

    def reasons(self, s: float, size: float | None, protocol: str | None) -> list[str]:
        """Why a prediction at (S, size, protocol) lies outside this domain; empty when it lies inside."""
        found = []
        low, high = self.s_range
        if not low <= s <= high:
            found.append(f"S {s:+.2f} is outside the pairs' range [{low:+.2f}, {high:+.2f}]")
        if size is not None and self.size_range is not None:
            small, large = self.size_range
            if not small <= size <= large:
                found.append(
                    f"{_billions(size)} parameters is outside the pairs' {_billions(small)} to {_billions(large)}"
                )
        if protocol is not None and protocol not in self.protocols:
            theirs = "; ".join(sorted(self.protocols))
            found.append(f"S was measured by another protocol ({protocol}) than the pairs' ({theirs})")
        return found


@dataclass(frozen=True)
class TaskFit:
    """One task's straight line of delta on S over its pairs, what the pairs cover, and how the interval the
    predictions carry (:data:`prediction.PREDICTION_METHOD`) has held on them, left out one at a time."""

    s: np.ndarray
    delta: np.ndarray
    fit: stats.LinearFit
    domain: FitDomain
    coverage: prediction.Coverage

    @classmethod
    def of(cls, usable: pd.DataFrame, coverage: dict[str, prediction.Coverage]) -> TaskFit | None:
        """The fit of the pairs in ``usable`` (rows of the pairs table) with their leave-one-pair-out ``coverage``
        (:func:`sinkbench.tables.pairs.task_coverage`), or None below 3 pairs or with one S."""
        s, delta = usable["sink_strength"].to_numpy(float), usable["delta"].to_numpy(float)
        fit = stats.fit_line(s, delta)
        if fit is None or fit.n < stats.MIN_PAIRS:
            return None
        return cls(s, delta, fit, FitDomain.of(usable), coverage[prediction.PREDICTION_METHOD])

    def predict(self, new_s: ArrayLike) -> dict[str, Any]:
        """The screening columns of a prediction at each of ``new_s``: the predicted delta, the interval it carries
        (kind, level, guarantee, bounds), the 95% t interval, and the carried interval's leave-one-pair-out record."""
        method = prediction.METHODS[prediction.PREDICTION_METHOD]
        level = method.level(self.fit.n, prediction.CONFIDENCE)
        low, high = method.interval(self.s, self.delta, new_s, prediction.CONFIDENCE)
        t_low, t_high = self.fit.prediction_interval(new_s, prediction.CONFIDENCE)
        return {
            "predicted_delta": self.fit.predict(new_s),
            "interval_kind": method.name,
            "interval_level": level,
            "interval_guarantee": method.guarantee(level),
            "interval_low": low,
            "interval_high": high,
            "t_interval_low": t_low,
            "t_interval_high": t_high,
            "interval_loo_level": self.coverage.level,
            "interval_loo_covered": self.coverage.covered,
            "interval_loo_checked": self.coverage.checked,
            "n_pairs": self.fit.n,
            "observed_delta_range": float(np.ptp(self.delta)),
            "informative": informative(np.asarray(high) - np.asarray(low), float(np.ptp(self.delta))),
        }


#: The prediction columns of a ranking without any fit (no task has 3 pairs with distinct S): NaN but these.
_NO_PREDICTION = {
    **dict.fromkeys(SCREENING_COLUMNS[SCREENING_COLUMNS.index("task") :], np.nan),
    "task": None,
    "interval_kind": None,
    "interval_loo_covered": 0,
    "interval_loo_checked": 0,
    "n_pairs": 0,
    "extrapolated": False,
    "extrapolation_reasons": "",
    "informative": False,
}


def _billions(value: float) -> str:
    return f"{value:.3g}B"


def s_interval(entry: Entry) -> tuple[float, float] | None:
    """The 95% interval of a measured S over prompts: the percentile bootstrap ``sinkbench screen`` recorded in the
    entry's sink profile (of the same S), else S +- 1.96 bootstrap standard errors from its results file."""
    profile = entry.sink_profile
    if (
        profile is not None
        and profile.sink_strength_ci is not None
        and entry.sink_strength is not None
        and abs(profile.sink_strength - entry.sink_strength) < 1e-6
    ):
        low, high = profile.sink_strength_ci
        return float(low), float(high)
    error = entry.sink_strength_stderr
    if error is None or entry.sink_strength is None:
        return None
    return entry.sink_strength - _Z95 * error, entry.sink_strength + _Z95 * error


def _primary(group: list[Entry]) -> Entry:
    """The entry whose S stands for an LLM of several entries: its backbone entry with an interval, else its backbone
    entry, else the first (entries come sorted by kind and name)."""
    own = [entry for entry in group if entry.kind == "backbone"]
    with_interval = [entry for entry in own if entry.sink_strength_stderr is not None]
    return (with_interval or own or group)[0]


def _s_bounds(entry: Entry) -> tuple[float | None, float | None, str]:
    """The interval tiers and differences read an LLM's S from, and its kind (:data:`S_KINDS`)."""
    measured = s_interval(entry)
    if measured is not None:
        return *measured, S_KINDS["bootstrap"]
    if entry.provenance == "reported" and entry.sink_strength is not None:
        return entry.sink_strength - REPORTED_S_BAND, entry.sink_strength + REPORTED_S_BAND, S_KINDS["band"]
    return None, None, S_KINDS["none"]


def _llm_row(model_id: str, revision: str | None, group: list[Entry]) -> dict:
    first, primary = group[0], _primary(group)
    size, protocol = llm_size(first), s_protocol(primary)
    low, high = s_interval(primary) or (None, None)
    s_low, s_high, s_kind = _s_bounds(primary)
    return {
        "model_id": model_id,
        "model_revision": revision,
        "sink_strength": primary.sink_strength,
        "sink_strength_ci_low": low,
        "sink_strength_ci_high": high,
        "s_low": s_low,
        "s_high": s_high,
        "s_kind": s_kind,
        "s_protocol": protocol.label if protocol else None,
        "qk_norm": first.metadata.qk_norm,
        "params_b": size.billions if size else None,
        "params_source": size.source if size else None,
        "family": first.llm.family,
        "license": first.llm.license,
        "role": ";".join(sorted({"reference" if entry.kind == "pair" else "backbone" for entry in group})),
        "provenance": ";".join(sorted({entry.provenance for entry in group})),
        "entries": ";".join(sorted(entry.name for entry in group)),
        "s_entry": primary.name,
    }


def _llm_rows(entries: Sequence[Entry]) -> pd.DataFrame:
    """One row per distinct LLM (id, revision) in order of S (highest first, then by id and revision), with the S of
    its primary entry (:func:`_primary`, named in ``s_entry``), its place in that order, its rank and its tier."""
    groups: dict[tuple[str, str | None], list[Entry]] = {}
    keys = llm_keys(entries)
    for entry in entries:
        if entry.sink_strength is not None:
            groups.setdefault(keys[entry.name], []).append(entry)
    ordered = sorted(groups.items(), key=lambda item: (item[0][0], item[0][1] or ""))
    rows = [_llm_row(model_id, revision, group) for (model_id, revision), group in ordered]
    llms = pd.DataFrame(rows, columns=_LLM_COLUMNS).astype(
        {"params_b": float, "s_low": float, "s_high": float}
    )
    llms = llms.sort_values("sink_strength", ascending=False, kind="stable").reset_index(drop=True)
    return llms.assign(
        rank=llms["sink_strength"].rank(ascending=False, method="min").astype("Int64"),
        position=np.arange(1, len(llms) + 1),
        tier=tiers(llms["s_low"], llms["s_high"]),
    )


def _differences(fitted: TaskFit, llms: pd.DataFrame, seed: int) -> dict[str, np.ndarray]:
    """The difference columns of ``llms`` (in order of S) under ``fitted``: each S drawn from a normal distribution
    centred on it, with standard deviation its interval's width / 3.92 (a point where it has none)."""
    sd = ((llms["s_high"] - llms["s_low"]) / (2 * _Z95)).fillna(0.0).to_numpy(float)
    found = stats.line_differences(fitted.s, fitted.delta, llms["sink_strength"], sd, seed=seed)
    return {
        f"diff_{kind}{part}": getattr(found, f"{name}{part}")
        for kind, name in (("next", "next"), ("top", "first"))
        for part in ("", "_low", "_high", "_share")
    }


def _task_block(
    llms: pd.DataFrame, usable: pd.DataFrame, task: str, coverage: dict[str, prediction.Coverage], seed: int
) -> pd.DataFrame | None:
    """Every LLM with the prediction of ``task``'s fit, its extrapolation flags and, for the LLMs inside what the
    pairs cover and where the fit beats the mean (:func:`~sinkbench.tables.rules.beats_mean`), its differences
    against the next such LLM and the first; None without a fit."""
    fitted = TaskFit.of(usable, coverage)
    if fitted is None:
        return None
    reasons = [
        fitted.domain.reasons(
            row.sink_strength, None if pd.isna(row.params_b) else row.params_b, row.s_protocol
        )
        for row in llms.itertuples()
    ]
    inside = np.array([not found for found in reasons], dtype=bool)
    differences = {column: np.full(len(llms), np.nan) for column in _DIFFERENCE_COLUMNS}
    if (
        inside.any()
        and beats_mean(stats.loo_mae(fitted.s, fitted.delta), stats.baseline_mae(fitted.delta)) == "yes"
    ):
        for column, values in _differences(fitted, llms[inside], seed).items():
            differences[column][inside] = values
        first = np.flatnonzero(inside)[0]  # the first inside is the one the others are taken against
        for column in _DIFFERENCE_COLUMNS[4:]:
            differences[column][first] = np.nan
    return llms.assign(
        task=task,
        **fitted.predict(llms["sink_strength"].to_numpy(float)),
        extrapolated=~inside,
        extrapolation_reasons=["; ".join(found) for found in reasons],
        **differences,
    )


def screening_table(
    entries: Sequence[Entry],
    pairs: pd.DataFrame,
    coverages: dict[str, dict[str, prediction.Coverage]],
    *,
    seed: int = 0,
) -> pd.DataFrame:
    """Every backbone and reference LLM ranked by S (1 = highest) and tiered, with per task the prediction of the fit
    on all pairs (:class:`TaskFit`), its extrapolation flags and its differences (seeded by ``seed``);
    ``coverages``: :func:`sinkbench.tables.pairs.loo_coverages`."""
    llms = _llm_rows(entries)
    blocks = [
        block
        for task in TASKS
        if (block := _task_block(llms, usable_pairs(pairs, task), task, coverages[task], seed)) is not None
    ]
    if not blocks:  # fewer than 3 pairs for every task: rank by S, predict nothing
        blocks.append(llms.assign(**_NO_PREDICTION))
    table = pd.concat(blocks, ignore_index=True)
    order = table["task"].map({task: index for index, task in enumerate(TASKS)})
    table = table.assign(task_order=order).sort_values(["position", "task_order"], kind="stable")
    return table[SCREENING_COLUMNS].reset_index(drop=True)
