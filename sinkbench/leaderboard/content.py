"""The contents of the leaderboard's pages: plain dataclasses the templates render.

Built by :mod:`sinkbench.leaderboard.views`; numbers are points (deltas, scores) or nats (S), None when missing.
User-supplied text is kept as plain strings; the templates escape it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from sinkbench.leaderboard.plots import Chart


@dataclass(frozen=True)
class TaskColumn:
    """A task shown as a column: its lm-eval name and its display label."""

    task: str
    label: str


@dataclass(frozen=True)
class PlotRef:
    """A chart on a page: where its SVG goes (site-relative path) and what it shows."""

    path: str
    chart: Chart
    caption: str = ""

    @property
    def alt(self) -> str:
        """The chart's description, used as the image's alt text."""
        return self.chart.alt


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
class TaskResult:
    """One task of a pair, in points, with the leave-one-pair-out prediction."""

    task: str
    label: str
    reference_score: float | None
    vlm_score: float | None
    delta: float | None
    relative: float | None
    predicted_delta: float | None


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
class Prediction:
    """Delta predicted for a backbone by the fit on all pairs, with its 95% prediction interval."""

    task: str
    label: str
    delta: float | None
    low: float | None
    high: float | None


@dataclass(frozen=True)
class OwnScore:
    """A backbone's own score on one task, in points; ``coverage`` is ``(evaluated, documents)`` of a
    ``--limit`` run, None when the whole test set was evaluated."""

    label: str
    score: float
    coverage: tuple[int, int] | None = None


@dataclass
class PairView:
    """Everything the leaderboard row and the page of one pair show."""

    slug: str
    directory: str
    vlm: str
    vlm_id: str
    vlm_revision: str | None
    reference: str
    reference_id: str
    reference_revision: str | None
    reference_slug: str
    sink_strength: float | None
    sink_metrics: list[tuple[str, float]]
    qk_norm: str
    provenance: str
    vl_recipe: str
    submitter: str
    citation: str | None
    links: list[str]
    notes: str | None
    lm_eval_versions: list[str]
    results: list[TaskResult]
    raw_files: list[RawFile]
    metrics: list[MetricRow] = field(default_factory=list)
    heatmap: PlotRef | None = None
    regressions: Regressions | None = None

    def delta(self, task: str) -> float | None:
        """Observed delta of ``task`` in points, or None."""
        return next((r.delta for r in self.results if r.task == task), None)

    def predicted(self, task: str) -> float | None:
        """Held-out predicted delta of ``task`` in points, or None."""
        return next((r.predicted_delta for r in self.results if r.task == task), None)


@dataclass
class BackboneView:
    """A text-only LLM (a reference LLM of pairs and/or a backbone entry): the Screening row and its page."""

    slug: str
    label: str
    model_id: str
    revisions: list[str]
    qk_norm: str
    sink_strength: float | None
    rank: int | None
    role: str
    provenances: list[str]
    sink_metrics: list[tuple[str, float]]
    lm_eval_versions: list[str]
    directories: list[str]
    scores: list[OwnScore]
    notes: list[str]
    raw_files: list[RawFile]
    metrics: list[MetricRow] = field(default_factory=list)
    predictions: list[Prediction] = field(default_factory=list)
    pairs: list[PairView] = field(default_factory=list)
    heatmap: PlotRef | None = None
    ranked: int = 0

    def prediction(self, task: str) -> Prediction | None:
        """The prediction for ``task``, or None when no fit exists for it."""
        return next((p for p in self.predictions if p.task == task), None)


@dataclass(frozen=True)
class CorrelationRow:
    """One task of the correlations table."""

    task: str
    label: str
    n: int
    spearman: float | None
    spearman_ci: tuple[float | None, float | None]
    kendall: float | None
    permutation_p: float | None
    loo_mae: float | None
    baseline_mae: float | None
    fit: tuple[float, float] | None


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
