"""The in-memory model of a submission entry (one folder under ``submissions/``), shared by validation,
aggregation and the site: the parsed files, and the numbers in points (0-100), read from lm-eval results files
(``measured``) or from the metadata's ``reported`` block (``reported``)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

from sinkbench.errors import printable
from sinkbench.numbers import is_finite_number
from sinkbench.sink.metrics import SINK_STRENGTH
from sinkbench.submissions.catalogue import SINK_METRIC, SINK_SECONDARY_METRICS, SINK_TASK, TASKS
from sinkbench.submissions.schema import (
    BackboneMetadata,
    IfevalRegressionCounts,
    LmEvalResults,
    ModelRef,
    PairMetadata,
    SinkProfile,
)

#: Side folders of a measured pair, and the role of a backbone's own files.
PAIR_SIDES = ("reference", "vlm")
BACKBONE_SIDE = "backbone"


@dataclass(frozen=True)
class Problem:
    """One validation problem: which file, which field, what is wrong, how to fix it."""

    file: str
    field: str
    message: str
    fix: str

    def __str__(self) -> str:
        """One line, made :func:`~sinkbench.errors.printable` (a file or folder name may hold controls)."""
        return printable(f"{self.file}: {self.field or '<file>'}: {self.message} Fix: {self.fix}")


@dataclass(frozen=True)
class ResultsFile:
    """A parsed lm-eval results file and the path shown in messages."""

    path: str
    data: LmEvalResults


@dataclass(frozen=True)
class IfevalOutcome:
    """One IFEval prompt's strict outcome, the instructions it failed (ids and their categories), and the
    prompt and response as the samples file holds them (for the per-prompt view of a pair's regressions)."""

    key: str
    passed: bool
    failed_categories: frozenset[str]
    failed_ids: tuple[str, ...] = ()
    prompt: str | None = None
    response: str | None = None


@dataclass(frozen=True)
class Side:
    """The raw evidence for one model of an entry: results files, IFEval samples, ``config.json``."""

    role: str
    directory: str
    results: tuple[ResultsFile, ...] = ()
    ifeval_samples_path: str | None = None
    ifeval: tuple[IfevalOutcome, ...] | None = None
    model_config: Mapping[str, Any] | None = None

    def results_for(self, task: str) -> ResultsFile | None:
        """The first results file that holds ``task``, or None."""
        return next((item for item in self.results if task in item.data.results), None)

    def metric(self, task: str, key: str) -> float | None:
        """The value of metric ``key`` of ``task`` as lm-eval wrote it, or None when absent or not a number."""
        found = self.results_for(task)
        value = found.data.results[task].get(key) if found else None
        return float(value) if is_finite_number(value) else None

    def score(self, task: str) -> float | None:
        """The headline metric of ``task`` in points, or None."""
        spec = TASKS[task]
        value = self.metric(task, spec.metric)
        return None if value is None else value * spec.scale


@dataclass(frozen=True)
class TaskScore:
    """One task of an entry, in points (a backbone's own score is its ``reference_score``). ``derived`` names the
    values computed from published ones; ``coverage`` is ``(evaluated, documents)`` when a measured run skipped
    documents (``--limit``: see :func:`sinkbench.submissions.lm_eval_rules.rule_no_limit`), else None.
    """

    task: str
    reference_score: float | None
    vlm_score: float | None
    reported_delta: float | None
    derived: tuple[str, ...]
    source: str
    coverage: tuple[int, int] | None = None

    @property
    def delta(self) -> float | None:
        """VLM-LM minus reference, in points (negative: the VLM lost skill): from the two scores when both are known
        (more digits than a printed delta), else the published delta."""
        if self.reference_score is not None and self.vlm_score is not None:
            return self.vlm_score - self.reference_score
        return self.reported_delta

    @property
    def relative_degradation(self) -> float | None:
        """``delta / reference_score`` as a fraction, or None without a positive reference score."""
        delta = self.delta
        if delta is None or not self.reference_score:
            return None
        return delta / self.reference_score


@dataclass(frozen=True)
class EntryFile:
    """A regular file of an entry found while loading it: its path inside the entry folder, where it is, its size."""

    relative: str
    path: Path
    size: int


@dataclass(frozen=True)
class Entry:
    """One submission entry: a ``pair`` (VLM + reference LLM) or a ``backbone`` (a candidate LLM); ``files`` lists
    every file the loader accepted, so nothing downstream walks the folder again."""

    name: str
    directory: str
    metadata: PairMetadata | BackboneMetadata
    sides: Mapping[str, Side] = field(default_factory=dict)
    sink_profile: SinkProfile | None = None
    files: tuple[EntryFile, ...] = ()

    @property
    def kind(self) -> str:
        """``pair`` or ``backbone``."""
        return self.metadata.kind

    @property
    def provenance(self) -> str:
        """``measured`` (raw lm-eval files) or ``reported`` (transcribed from a publication)."""
        return self.metadata.provenance

    @property
    def metadata_file(self) -> str:
        """Path of ``metadata.json`` as shown in messages."""
        return f"{self.directory}/metadata.json"

    @property
    def testbed(self) -> bool:
        """Whether this is a testbed pair (shown apart, left out of the fits; see ``PairMetadata.testbed``)."""
        return isinstance(self.metadata, PairMetadata) and self.metadata.testbed

    @property
    def llm(self) -> ModelRef:
        """The text-only LLM whose S is measured: the reference LLM of a pair, or the backbone."""
        meta = self.metadata
        return meta.reference_llm if isinstance(meta, PairMetadata) else meta.model

    @property
    def vlm(self) -> ModelRef | None:
        """The VLM of a pair, None for a backbone."""
        return self.metadata.vlm if isinstance(self.metadata, PairMetadata) else None

    @property
    def llm_side(self) -> Side | None:
        """The side holding the LLM's results (measured entries only)."""
        return self.sides.get("reference" if self.kind == "pair" else BACKBONE_SIDE)

    @property
    def sink_strength(self) -> float | None:
        """S of the LLM in nats, from its ``sink_strength`` results or the reported value."""
        if self.metadata.reported is not None:
            return self.metadata.reported.sink_strength.value
        side = self.llm_side
        return side.metric(SINK_TASK, SINK_METRIC) if side else None

    @property
    def sink_strength_stderr(self) -> float | None:
        """The bootstrap standard error of a measured S over prompts, when its results file records one."""
        side = self.llm_side
        if side is None or self.metadata.reported is not None:
            return None
        return side.metric(SINK_TASK, SINK_STRENGTH.stderr_key)

    @property
    def sink_metrics(self) -> dict[str, float]:
        """The secondary sink metrics of a measured LLM (key without the ``,none`` filter suffix)."""
        side = self.llm_side
        if side is None:
            return {}
        values = {key.split(",")[0]: side.metric(SINK_TASK, key) for key in SINK_SECONDARY_METRICS}
        return {key: value for key, value in values.items() if value is not None}

    @cached_property
    def scores(self) -> dict[str, TaskScore]:
        """Per-task scores in registry order; tasks the entry does not report are absent."""
        found = self._reported_scores() if self.metadata.reported is not None else self._measured_scores()
        return {task: found[task] for task in TASKS if task in found}

    @property
    def reported_regressions(self) -> IfevalRegressionCounts | None:
        """Published IFEval outcome counts of a reported pair, if any."""
        return getattr(self.metadata.reported, "ifeval_regressions", None)

    def _reported_scores(self) -> dict[str, TaskScore]:
        reported = self.metadata.reported
        if isinstance(self.metadata, BackboneMetadata):
            derived = ("reference_score",)
            return {
                item.task: TaskScore(
                    item.task, item.score, None, None, derived if item.derived else (), item.table
                )
                for item in reported.scores
            }
        return {
            item.task: TaskScore(
                item.task,
                item.reference_score,
                item.vlm_score,
                item.delta,
                tuple(item.derived),
                "; ".join(filter(None, (item.table, item.scores_table))),
            )
            for item in reported.tasks
        }

    def _measured_scores(self) -> dict[str, TaskScore]:
        llm, vlm = self.llm_side, self.sides.get("vlm")
        scores = {}
        for task in TASKS:
            reference = llm.score(task) if llm else None
            other = vlm.score(task) if vlm else None
            if reference is None and other is None:
                continue
            reference_file = llm.results_for(task) if llm else None
            files = [reference_file, vlm.results_for(task) if vlm else None]
            source = " | ".join(item.path for item in files if item is not None)
            scores[task] = TaskScore(
                task, reference, other, None, (), source, _partial_coverage(reference_file, task)
            )
        return scores

    def ifeval_outcomes(self) -> tuple[tuple[IfevalOutcome, ...], tuple[IfevalOutcome, ...]] | None:
        """Reference and VLM-LM IFEval outcomes of a measured pair when both samples files exist."""
        reference, vlm = self.sides.get("reference"), self.sides.get("vlm")
        if reference is None or vlm is None or reference.ifeval is None or vlm.ifeval is None:
            return None
        return reference.ifeval, vlm.ifeval


def _partial_coverage(found: ResultsFile | None, task: str) -> tuple[int, int] | None:
    """``(evaluated, documents)`` of ``task`` in ``found`` when its run skipped documents, else None."""
    count = found.data.n_samples.get(task) if found is not None else None
    if count is None or count.effective == count.original:
        return None
    return count.effective, count.original
