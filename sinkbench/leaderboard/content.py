"""The contents of the leaderboard's pages: plain dataclasses the templates render.

Built by :mod:`sinkbench.leaderboard.views`; numbers are points (deltas, scores) or nats (S), None when missing
(:class:`Shown`: with their decimals). User-supplied text is kept as plain strings; the templates escape it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING

from markupsafe import Markup

from sinkbench.charts import Chart, spec_json
from sinkbench.leaderboard.history import BoardHistory
from sinkbench.tables.rules import Sign, interval_sign, told_apart

if TYPE_CHECKING:
    from sinkbench.leaderboard.reproduce import Reproduction

#: Decimals of measured numbers (more than any source prints, fewer than the files hold).
MEASURED_DIGITS = 2


@dataclass(frozen=True)
class Shown:
    """A number as a page shows it: its value, its decimals, and whether it is derived (not printed by its source)."""

    value: float | None
    digits: int = MEASURED_DIGITS
    derived: bool = False


@dataclass(frozen=True)
class TaskColumn:
    """A task shown as a column: its lm-eval name, its display label, and its family (format or control)."""

    task: str
    label: str
    family: str = "format"


@dataclass(frozen=True)
class PlotRef:
    """A chart on a page: where its SVG goes (site-relative path) and what it shows."""

    path: str
    chart: Chart
    caption: str = ""

    @cached_property
    def spec(self) -> Markup:
        """The chart's specification, as JSON for the page (:func:`sinkbench.charts.spec_json`)."""
        return spec_json(self.chart.spec())


@dataclass(frozen=True)
class RawFile:
    """A file of an entry, copied into the site so its page can link to it."""

    name: str
    path: str
    source: Path
    size: str


@dataclass(frozen=True)
class MetricRow:
    """One metric exactly as lm-eval wrote it (its own units), per side: (reference, VLM-LM) or (backbone,)."""

    task: str
    metric: str
    values: tuple[float | None, ...]


@dataclass(frozen=True)
class ModelFacts:
    """What the board knows about one model besides its scores."""

    model_id: str
    label: str
    revision: str | None
    url: str | None
    params_b: float | None
    params_source: str | None
    family: str | None
    license: str | None
    id_mapping: str | None
    model_type: str | None = None
    remeasurable: bool | None = None
    remeasure: str = ""

    @property
    def size_bucket(self) -> str:
        """The size filter's bucket: ``<1B``, ``1-4B``, ``4-10B``, ``10-40B``, ``>40B`` or ``unknown``."""
        if self.params_b is None:
            return "unknown"
        bounds = ((1.0, "<1B"), (4.0, "1-4B"), (10.0, "4-10B"), (40.0, "10-40B"))
        return next((name for bound, name in bounds if self.params_b < bound), ">40B")


@dataclass(frozen=True)
class HeldOut:
    """A pair's leave-one-pair-out prediction of one task: the delta the line through every other pair gives at
    its S, with that fit's prediction interval (``kind`` at ``level``), and whether the interval is narrower than
    the task's observed range of delta (``informative``)."""

    delta: float | None
    low: float | None = None
    high: float | None = None
    kind: str | None = None
    level: float | None = None
    informative: bool = True

    @property
    def sign(self) -> Sign | None:
        """The interval's sign where it excludes zero (:func:`~sinkbench.tables.rules.interval_sign`)."""
        return interval_sign(self.low, self.high)


@dataclass(frozen=True)
class TaskResult:
    """One task of a pair, in points, with the leave-one-pair-out prediction and the delta's 95% interval of
    ``interval_kind`` (``paired-samples``, ``paired-counts``, ``unpaired``; ``none``: ``interval_reason`` says why);
    ``reference_basis`` and ``vlm_basis`` say what each score was measured on (subset or limit, token cap, dtype;
    or its publication)."""

    task: str
    label: str
    reference_score: Shown
    vlm_score: Shown
    delta: Shown
    relative: float | None
    predicted: HeldOut
    delta_interval: tuple[float, float] | None = None
    reference_basis: str = ""
    vlm_basis: str = ""
    interval_kind: str = "none"
    interval_reason: str = ""

    @property
    def delta_sign(self) -> Sign | None:
        """The delta interval's sign where it excludes zero (:func:`~sinkbench.tables.rules.interval_sign`)."""
        return interval_sign(*(self.delta_interval or (None, None)))

    @property
    def basis(self) -> str:
        """What the delta was measured on: the two sides' basis, once when they agree."""
        if self.reference_basis == self.vlm_basis:
            return self.reference_basis
        return (
            f"reference: {self.reference_basis or 'not recorded'}; VLM-LM: {self.vlm_basis or 'not recorded'}"
        )


@dataclass(frozen=True)
class Regressions:
    """IFEval per-prompt outcome counts of a pair and the lost prompts per category."""

    both_pass: int
    lost: int
    gained: int
    both_fail: int
    net_points: float | None
    plot: PlotRef | None


@dataclass(frozen=True)
class PromptChange:
    """One IFEval prompt a pair lost or gained: the failed instructions and both responses, for the drill-down."""

    key: str
    outcome: str
    prompt: str
    failed_ids: tuple[str, ...]
    reference_response: str
    vlm_response: str


@dataclass(frozen=True)
class DataFile:
    """A local data file a measured run read (``SINKBENCH_DATA_DIR``), with its sha256."""

    task: str
    file: str
    sha256: str


@dataclass(frozen=True)
class Difference:
    """The difference in expected Δ (points) between a higher-S and a lower-S backbone under one task's fit, its
    95% interval, and the share of its ``draws`` in which the higher one is expected to lose less (``share``)."""

    estimate: float
    low: float
    high: float
    share: float
    draws: int

    @property
    def apart(self) -> bool:
        """True when the two are told apart (:func:`sinkbench.tables.rules.told_apart`)."""
        return bool(told_apart(self.low, self.high, self.share, self.draws))

    @property
    def too_close(self) -> bool:
        """True when the interval excludes zero but its share of draws is too near the threshold to call."""
        return not self.apart and (self.low > 0 or self.high < 0)


@dataclass(frozen=True)
class Ordering:
    """What one task's fit can order today: of the ``compared`` backbones taken against the next by S, how many are
    told apart, the smallest S gap (nats) told apart and the largest not; of the ``backbones`` inside what the pairs
    cover, how many pairs have prediction intervals that do not overlap (``separated``)."""

    compared: int
    apart: int
    smallest_apart: float | None
    largest_not_apart: float | None
    backbones: int
    separated: int


@dataclass(frozen=True)
class Prediction:
    """Delta predicted for a backbone by the fit on all pairs, with its prediction interval (``kind`` at ``level``)
    and, when the fit says nothing about this backbone, why (``reasons``)."""

    task: str
    label: str
    delta: float | None
    low: float | None
    high: float | None
    reasons: tuple[str, ...] = ()
    kind: str | None = None
    level: float | None = None
    informative: bool = True
    observed_range: float | None = None
    vs_next: Difference | None = None  # this backbone against the next one by S
    vs_top: Difference | None = None  # the first by S against this backbone

    @property
    def extrapolated(self) -> bool:
        """True when the backbone lies outside what the pairs behind the fit cover."""
        return bool(self.reasons)

    @property
    def sign(self) -> Sign | None:
        """The interval's sign where it excludes zero (:func:`~sinkbench.tables.rules.interval_sign`)."""
        return interval_sign(self.low, self.high)


@dataclass(frozen=True)
class OtherScore:
    """The same model's score on the same task in another entry of the board (a pair it is the reference of) or on
    an experiment's page, on the basis it was measured on."""

    entry: str
    entry_label: str
    score: Shown
    basis: str
    page: str = ""  # an experiment's page (site path) quoting the score instead of an entry (``entry`` is "")


@dataclass(frozen=True)
class OwnScore:
    """A backbone's own score on one task, in points; ``basis`` what it was measured on; ``elsewhere`` the model's
    other scores on this task on the board."""

    task: str
    label: str
    score: Shown
    basis: str = ""
    elsewhere: tuple[OtherScore, ...] = ()


@dataclass(kw_only=True)
class EntryView:
    """What the pages of a pair and of a backbone both show (keyword-only, after each kind's own fields)."""

    slug: str
    qk_norm: str
    sink_strength: Shown
    s_interval: tuple[float, float] | None = None
    s_protocol: str | None
    sink_metrics: list[tuple[str, float]]
    lm_eval_versions: list[str]
    raw_files: list[RawFile]
    metrics: list[MetricRow] = field(default_factory=list)
    heatmap: PlotRef | None = None
    data_files: list[DataFile] = field(default_factory=list)
    reproduce: list[Reproduction] = field(default_factory=list)
    #: When the entry joined the board (YYYY-MM-DD), from the repository's history.
    submitted: str | None = None


@dataclass
class PairView(EntryView):
    """Everything the leaderboard row and the page of one pair show."""

    directory: str
    vlm: ModelFacts
    reference: ModelFacts
    reference_slug: str
    provenance: str
    vl_recipe: str
    submitter: str
    citation: str | None
    links: list[str]
    notes: str | None
    results: list[TaskResult]
    regressions: Regressions | None = None
    prompt_changes: list[PromptChange] = field(default_factory=list)
    testbed: bool = False  # made by sinkbench's VL testbed: shown apart, left out of every fit
    s_source: str = ""  # the entry whose S the fits use, when not the pair's own (a re-measured backbone)

    def result(self, task: str) -> TaskResult | None:
        """The result of ``task``, or None."""
        return next((r for r in self.results if r.task == task), None)

    def delta(self, task: str) -> float | None:
        """Observed delta of ``task`` in points (as used by the statistics), or None."""
        found = self.result(task)
        return found.delta.value if found else None


@dataclass
class BackboneView(EntryView):
    """A text-only LLM (a reference LLM of pairs and/or a backbone entry): the Screening row and its page."""

    model: ModelFacts
    role: str
    provenances: list[str]
    directories: list[str]
    scores: list[OwnScore]
    notes: list[str]
    predictions: list[Prediction] = field(default_factory=list)
    pairs: list[PairView] = field(default_factory=list)
    s_entry: str = ""  # the entry whose S and interval the row shows
    s_bounds: tuple[float, float] | None = None  # the interval tiers and differences read S from
    s_kind: str = "none"  # how: bootstrap over prompts, prompt-set band, none
    tier: int | None = None
    position: int | None = None  # place in the order by S (1: highest)

    @property
    def label(self) -> str:
        """The display name."""
        return self.model.label

    def prediction(self, task: str) -> Prediction | None:
        """The prediction for ``task``, or None when no fit exists for it."""
        return next((p for p in self.predictions if p.task == task), None)

    def extrapolated(self, task: str) -> bool:
        """True when the prediction for ``task`` lies outside what the fit's pairs cover."""
        found = self.prediction(task)
        return found is not None and found.extrapolated


@dataclass(frozen=True)
class IntervalRecord:
    """How one kind of prediction interval held on one task's pairs, each left out in turn: the level of the held-out
    intervals and what the method guarantees at it without normal errors (None: nothing), pairs inside, pairs
    checked, median width (points), and the pairs outside as (page slug, label)."""

    method: str
    level: float | None
    guarantee: float | None
    covered: int
    checked: int
    median_width: float | None
    outside: tuple[tuple[str, str], ...]

    @property
    def share(self) -> float | None:
        """The share of checked pairs inside, or None when none was checked."""
        return self.covered / self.checked if self.checked else None


@dataclass(frozen=True)
class CorrelationRow:
    """One task of the correlations table, with where its evidence stops and how its prediction intervals held
    (``intervals``; first the one predictions carry, ``prediction_interval``, whose level and guarantee with all
    pairs are ``prediction_level`` and ``prediction_guarantee``)."""

    task: str
    label: str
    family: str
    n: int
    distinct_s: int
    spearman: float | None
    spearman_ci: tuple[float | None, float | None]
    kendall: float | None
    permutation_p: float | None
    loo_mae: float | None
    baseline_mae: float | None
    beats_baseline: str | None  # yes, marginal or no (sinkbench.tables.rules.beats_mean)
    fit: tuple[float, float] | None
    prediction_interval: str | None = None
    prediction_level: float | None = None
    prediction_guarantee: float | None = None
    intervals: tuple[IntervalRecord, ...] = ()
    as_strong_as: tuple[tuple[str, float | None], ...] = ()  # a control: (target label, its rho) no stronger

    def interval(self, method: str) -> IntervalRecord | None:
        """The record of ``method``, or None."""
        return next((record for record in self.intervals if record.method == method), None)

    @property
    def evidence(self) -> str:
        """Where this task's evidence stops: ``too few pairs`` for a held-out fit, a fit ``no better`` than the
        constant mean, one better by a ``marginal`` amount, or ``""`` (:func:`sinkbench.tables.rules.beats_mean`)."""
        if self.loo_mae is None or self.baseline_mae is None or self.beats_baseline is None:
            return "too few pairs"
        return {"no": "no better", "marginal": "marginal"}.get(self.beats_baseline, "")


@dataclass
class SiteViews:
    """All page contents of one build."""

    task_columns: list[TaskColumn]
    headline: TaskColumn
    pairs: list[PairView]
    backbones: list[BackboneView]
    correlations: list[CorrelationRow]
    scatters: list[PlotRef]
    counts: dict[str, int]
    history: BoardHistory = field(default_factory=lambda: BoardHistory(available=False))

    def correlation(self, task: str) -> CorrelationRow | None:
        """The correlations row of ``task``, or None."""
        return next((row for row in self.correlations if row.task == task), None)

    @property
    def flagged_controls(self) -> list[CorrelationRow]:
        """The knowledge controls that correlate with S as strongly as a format-sensitive task."""
        return [row for row in self.correlations if row.family == "control" and row.as_strong_as]

    def plots(self) -> list[PlotRef]:
        """Every chart of the site, each once."""
        found = [*self.scatters, *(p.heatmap for p in self.pairs), *(b.heatmap for b in self.backbones)]
        found += [p.regressions.plot for p in self.pairs if p.regressions is not None]
        unique = {plot.path: plot for plot in found if plot is not None}
        return list(unique.values())

    def raw_files(self) -> list[RawFile]:
        """Every raw file linked from a page, each once."""
        unique = {f.path: f for view in [*self.pairs, *self.backbones] for f in view.raw_files}
        return list(unique.values())
