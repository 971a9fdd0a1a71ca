"""The Training dynamics page: the VL fine-tuning testbed (``benchmarks/vl_testbed.py``), read from the results file
it commits and shown as tables of every arm, paired effects against no protection, and charts of every run.

The file is read through a schema of the fields the page shows (others are ignored); a file that does not fit
is one :class:`~sinkbench.leaderboard.sources.SourceInvalid` line naming the file, the field and the fix. Every
number on the page is either in the file or computed here from it in one line (no statistic is recomputed: the
benchmark's ``analysis`` block holds them).
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator
from pydantic_core import PydanticCustomError

from sinkbench.leaderboard.content import PlotRef
from sinkbench.leaderboard.plots import TrajectoryChart
from sinkbench.leaderboard.sources import SourceInvalid
from sinkbench.leaderboard.testbed_charts import CouplingChart, PairedChart
from sinkbench.safe_io import UnsafeFileError, read_json

#: The results file of ``benchmarks/vl_testbed.py``.
TESTBED_FILE = "vl_testbed.json"
#: The experiment's arms, in the order they run, with what each does.
ARM_LABELS = {
    "none": "no protection",
    "sink": "freeze the top-10% sink heads",
    "random": "freeze matched random heads",
}
#: Outcomes of the paired table, with how the page names them and their unit.
OUTCOME_LABELS = {
    "sink_strength": ("S of the VLM-LM", "nats"),
    "prompt_strict": ("IFEval prompt-level strict", "points"),
    "inst_strict": ("IFEval instruction-level strict", "points"),
    "prompt_loose": ("IFEval prompt-level loose", "points"),
    "inst_loose": ("IFEval instruction-level loose", "points"),
    "visual_accuracy": ("visual accuracy (held-out scenes)", "points"),
}
#: Where the page's charts go, site-relative.
PLOT_PATHS = {
    "trace": "plots/testbed-s-trace.svg",
    "strict": "plots/testbed-strict-per-seed.svg",
    "s_end": "plots/testbed-s-per-seed.svg",
    "coupling": "plots/testbed-s-vs-strict.svg",
}
#: The largest results file read, in bytes (the committed one of six seeds is under 0.5 MB).
TESTBED_SIZE_LIMIT = 20_000_000
#: Why an effect has no smallest detectable difference, by its ``undetectable`` value.
UNDETECTABLE = {
    "too_few_seeds": "with this few seeds no difference is detectable",
    "no_spread": "the differences have no spread, so the smallest detectable difference cannot be estimated",
}
_FIX = "rerun `python benchmarks/vl_testbed.py` to rewrite it"


class _Record(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True)


class _Spread(_Record):
    median: float
    min: float
    max: float


class _Effect(_Record):
    differences: list[float] = Field(min_length=1)
    mean: float
    ci95: list[float | None] = Field(min_length=2, max_length=2)
    p_sign_flip: float | None
    positive: int
    negative: int
    minimum_detectable: float | None
    undetectable: Literal["too_few_seeds", "no_spread"] | None

    @model_validator(mode="after")
    def _one_of_size_or_reason(self) -> _Effect:
        if (self.minimum_detectable is None) == (self.undetectable is None):
            raise ValueError("exactly one of minimum_detectable and undetectable must be null")
        return self


class _Paired(_Record):
    """One arm's paired effects against no protection, per outcome of :data:`OUTCOME_LABELS`."""

    seeds: list[int]
    sink_strength: _Effect
    prompt_strict: _Effect
    inst_strict: _Effect
    prompt_loose: _Effect
    inst_loose: _Effect
    visual_accuracy: _Effect


class _Correlation(_Record):
    spearman: float | None
    ci95: list[float | None]
    p_permutation: float | None


class _CouplingPoint(_Record):
    arm: str
    seed: int
    delta_s: float
    delta_prompt_strict: float


class _Coupling(_Record):
    runs: int
    points: list[_CouplingPoint]
    raw: _Correlation
    within_seed: _Correlation


class _Secondary(_Record):
    share_g_above_2: _Spread
    position0_mass: _Spread


class _RunSeconds(_Record):
    """Wall times of one run's steps, in seconds."""

    stage2: float
    monitor: float
    extract: float
    screen: float
    ifeval: float
    total: float


class _SecondsSpread(_Record):
    stage2: _Spread
    monitor: _Spread
    extract: _Spread
    screen: _Spread
    ifeval: _Spread
    total: _Spread


class _ArmSummary(_Record):
    seeds: list[int] = Field(min_length=1)
    s_start: _Spread
    s_end_monitor: _Spread
    sink_strength: _Spread
    prompt_strict: _Spread
    inst_strict: _Spread
    prompt_loose: _Spread
    inst_loose: _Spread
    visual_accuracy: _Spread
    secondary: _Secondary
    frozen_weights: _Spread
    visual_above_chance: int
    seconds: _SecondsSpread


class _Stage1Summary(_Record):
    seconds: _Spread
    visual_accuracy: _Spread


class _Analysis(_Record):
    arms: dict[str, _ArmSummary] = Field(min_length=1)
    paired_vs_none: dict[str, _Paired]
    coupling: _Coupling | None
    stage1: _Stage1Summary | None


class _Point(_Record):
    step: int = Field(ge=0)
    sink_strength: float


class _Sink(_Record):
    sink_strength: float
    share_g_above_2: float | None
    position0_mass: float | None


class _Ifeval(_Record):
    prompt_strict: float
    inst_strict: float
    prompts: int = Field(ge=1)
    instructions: int = Field(ge=1)


class _Visual(_Record):
    accuracy: float
    chance: float
    n: int


class _Arm(_Record):
    arm: str
    trace: list[_Point] = Field(min_length=1)
    sink: _Sink
    ifeval: _Ifeval
    seconds: _RunSeconds


class _Stage(_Record):
    seconds: float = Field(ge=0)


class _Seed(_Record):
    seed: int
    arms: list[_Arm] = Field(min_length=1)
    stage0: _Stage
    stage1: _Stage


class _BaseSeconds(_Record):
    screen: float
    ifeval: float


class _Base(_Record):
    sink: _Sink
    ifeval: _Ifeval
    visual_untrained: _Visual
    seconds: _BaseSeconds


class _Subset(_Record):
    documents: int
    short_answer_documents: int
    indices: list[int] = Field(min_length=1)
    rule: str


class _Model(_Record):
    id: str


class _Vision(_Record):
    layers: int
    image_size: int = Field(ge=1)
    patch_size: int = Field(ge=1)


class _StageConfig(_Record):
    steps: int
    batch_size: int
    lr: float
    warmup: float


class _Config(_Record):
    vision: _Vision
    stage0_steps: int
    stage0_batch: int
    stage1: _StageConfig
    stage2: _StageConfig
    seeds: list[int] = Field(min_length=1)
    bands: int
    top_frac: float
    max_new_tokens: int
    visual_images: int


class _Machine(_Record):
    cpus: int
    torch_threads: int
    note: str | None = None  # what else ran during the run, as the person running it said
    load_average_at_start: list[float] | None = None  # 1, 5 and 15 minutes


class _Testbed(_Record):
    created: str
    command: str
    model: _Model
    config: _Config
    machine: _Machine
    ifeval_subset: _Subset
    sink_heads: list[list[int]]
    base: _Base
    seeds: list[_Seed] = Field(min_length=1)
    analysis: _Analysis

    @model_validator(mode="after")
    def _every_arm_ran(self) -> _Testbed:
        ran = {run.arm for seed in self.seeds for run in seed.arms}
        missing = [arm for arm in self.analysis.arms if arm not in ran]
        if missing:
            raise PydanticCustomError(
                "arm_without_runs",
                "analysis.arms.{arm}: no seed in seeds has a run of this arm",
                {"arm": missing[0]},
            )
        return self


@dataclass(frozen=True)
class TestbedResults:
    """What the Training dynamics page shows of one testbed results file."""

    source: str
    data: _Testbed

    @property
    def arms(self) -> list[str]:
        """The arms on file, in run order."""
        return [arm for arm in ARM_LABELS if arm in self.data.analysis.arms] + [
            arm for arm in self.data.analysis.arms if arm not in ARM_LABELS
        ]

    def label(self, arm: str) -> str:
        """How the page names ``arm``."""
        return ARM_LABELS.get(arm, arm)

    def _by_seed(self, outcome: str) -> tuple[tuple[int, tuple[float | None, ...]], ...]:
        def value(run: _Arm) -> float:
            return run.sink.sink_strength if outcome == "s" else 100 * run.ifeval.prompt_strict

        rows = []
        for seed in self.data.seeds:
            found = {run.arm: value(run) for run in seed.arms}
            rows.append((seed.seed, tuple(found.get(arm) for arm in self.arms)))
        return tuple(rows)

    def charts(self) -> dict[str, PlotRef]:
        """Every chart of the page by its :data:`PLOT_PATHS` key: the S traces, strict score and S per seed, and S
        against strict score."""
        labels = tuple(self.label(arm) for arm in self.arms)
        trace = TrajectoryChart(
            tuple(
                (
                    self.label(arm),
                    tuple(
                        tuple((p.step, p.sink_strength) for p in run.trace)
                        for seed in self.data.seeds
                        for run in seed.arms
                        if run.arm == arm
                    ),
                )
                for arm in self.arms
            ),
            model_label=f"testbed LLaVA on {self.data.model.id} (stage 2)",
        )
        base = self.data.base
        points = self.data.analysis.coupling.points if self.data.analysis.coupling else []
        charts = {
            "trace": trace,
            "strict": PairedChart(
                "IFEval prompt-level strict (%)",
                labels,
                self._by_seed("strict"),
                100 * base.ifeval.prompt_strict,
                "base LM",
            ),
            "s_end": PairedChart(
                "S of the VLM-LM (nats)", labels, self._by_seed("s"), base.sink.sink_strength, "base LM"
            ),
            "coupling": CouplingChart(
                tuple(
                    (
                        self.label(arm),
                        tuple((p.delta_s, p.delta_prompt_strict) for p in points if p.arm == arm),
                    )
                    for arm in self.arms
                ),
                "change in S from the base LM (nats)",
                "change in IFEval prompt-level strict (points)",
                self.coupling_sentence,
            ),
        }
        return {key: PlotRef(path, charts[key]) for key, path in PLOT_PATHS.items()}

    @property
    def coupling_sentence(self) -> str:
        """Spearman's rho of the change in S against the change in strict score, over runs."""
        coupling = self.data.analysis.coupling
        if coupling is None or coupling.raw.spearman is None:
            return "Too few runs for a correlation"
        within = coupling.within_seed.spearman
        within_text = f"{within:+.2f}" if within is not None else "undefined"
        return (
            f"Spearman rho over {coupling.runs} runs {coupling.raw.spearman:+.2f} "
            f"(p = {_p(coupling.raw.p_permutation)}); within seeds {within_text} (p = {_p(coupling.within_seed.p_permutation)})"
        )

    @property
    def recorded_minutes(self) -> float:
        """The wall times the file records (base model, stages 0 and 1 per seed, every run), in minutes."""
        base = self.data.base.seconds
        seconds = (
            base.screen
            + base.ifeval
            + sum(
                seed.stage0.seconds + seed.stage1.seconds + sum(run.seconds.total for run in seed.arms)
                for seed in self.data.seeds
            )
        )
        return seconds / 60

    def lowest_s(self, arm: str) -> tuple[int, float]:
        """The step at which the median S over ``arm``'s runs is lowest, and that median."""
        by_step: dict[int, list[float]] = {}
        for seed in self.data.seeds:
            for run in (r for r in seed.arms if r.arm == arm):
                for point in run.trace:
                    by_step.setdefault(point.step, []).append(point.sink_strength)
        return min(
            ((step, statistics.median(values)) for step, values in by_step.items()), key=lambda x: x[1]
        )

    def effect(self, arm: str, outcome: str) -> _Effect | None:
        """The paired effect of ``arm`` against no protection on ``outcome``, if on file."""
        paired = self.data.analysis.paired_vs_none.get(arm)
        return None if paired is None else getattr(paired, outcome)

    @property
    def answer(self) -> str:
        """The page's question answered in one sentence from the sink arm's paired effects."""
        strict, s = self.effect("sink", "prompt_strict"), self.effect("sink", "sink_strength")
        if strict is None or s is None:
            return "This file has no sink-head arm paired with a no-protection run, so it cannot answer."
        n = len(strict.differences)
        none = self.data.analysis.arms.get("none")
        erosion = (
            f" Without protection the VLM-LMs scored {none.prompt_strict.median:.1f} points (median) against the "
            f"base model's {100 * self.data.base.ifeval.prompt_strict:.1f}."
            if none
            else ""
        )
        return (
            f"{_verdict(strict)} over {n} seeds, freezing the sink heads changed IFEval prompt-level strict "
            f"accuracy by {strict.mean:+.1f} points (95% CI {_ci(strict)}, sign-flip p = {_p(strict.p_sign_flip)}; "
            f"{_mde(strict, 'points')}) and S of the VLM-LM by {s.mean:+.2f} nats ({_ci(s, 2)}, "
            f"p = {_p(s.p_sign_flip)}).{erosion}"
        )


def _verdict(effect: _Effect) -> str:
    """Yes or no when the sign-flip test rejects no effect; no when the interval excludes every effect this design
    detects (an equivalence reading of the interval); else that the design cannot tell."""
    p, (low, high), mde = effect.p_sign_flip, effect.ci95, effect.minimum_detectable
    if p is not None and p <= 0.05:
        return "Yes, it helped:" if effect.mean > 0 else "No, it hurt:"
    if None not in (low, high, mde) and -mde < low and high < mde:
        return "No, not by as much as this design can detect:"
    return "This design cannot tell:"


def _p(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.3f}"


def _ci(effect: _Effect, digits: int = 1) -> str:
    low, high = effect.ci95
    if low is None or high is None:
        return "n/a"
    return f"[{low:+.{digits}f}, {high:+.{digits}f}]"


def _mde(effect: _Effect, unit: str) -> str:
    value = effect.minimum_detectable
    if value is None:
        return UNDETECTABLE[effect.undetectable]
    return f"the smallest difference detectable with 80% power is about {value:.1f} {unit}"


def read_testbed(path: Path, shown: str) -> TestbedResults:
    """Read a ``vl_testbed.json`` (``shown`` is how messages name it).

    Raises:
        SourceInvalid: the file is unsafe to read (a link, too large), not strict JSON, or lacks a field the page
            shows.
    """
    try:
        data = _Testbed.model_validate(read_json(path, TESTBED_SIZE_LIMIT))
    except UnsafeFileError as error:
        raise SourceInvalid(f"{shown}: <file>: {error.message} Fix: {error.fix}, or {_FIX}") from None
    except ValidationError as error:
        first = error.errors()[0]
        field = ".".join(str(part) for part in first["loc"]) or "<file>"
        raise SourceInvalid(f"{shown}: {field}: {first['msg']}. Fix: {_FIX}") from None
    return TestbedResults(shown, data)


def find_testbed(folder: Path | None) -> TestbedResults | None:
    """The experiment in ``folder`` (None or a folder without the file: None, and the page says so)."""
    if folder is None or not (folder / TESTBED_FILE).is_file():
        return None
    return read_testbed(folder / TESTBED_FILE, (folder / TESTBED_FILE).as_posix())


@dataclass(frozen=True)
class TrainingPage:
    """The Training dynamics page: where it looked for results, and what it found there (or None)."""

    folder: Path | None
    run: TestbedResults | None

    @cached_property
    def charts(self) -> dict[str, PlotRef]:
        """The page's charts by their :data:`PLOT_PATHS` key (none without results), made once for the page and
        the drawing."""
        return self.run.charts() if self.run else {}

    def plots(self) -> list[PlotRef]:
        """The page's charts, when there are results."""
        return list(self.charts.values())

    def context(self) -> dict[str, object]:
        """What ``training.md.j2`` is given."""
        return {
            "run": self.run,
            "plots": self.charts,
            "outcomes": OUTCOME_LABELS,
            "undetectable": UNDETECTABLE,
            "results_file": TESTBED_FILE,
            "experiments_dir": self.folder.as_posix() if self.folder else "(none given)",
        }
