"""The one typed schema of the testbed's results file: the experiment writes these models and the Training
dynamics page reads them back (``Results.model_validate``), so a field the page shows is a field the writer wrote.

Every record is frozen and forbids unknown fields. Per-prompt lists (strict outcomes, NLL, answer lengths) are
kept so that every statistic can be recomputed from the runs (:mod:`experiments.vl_testbed.analysis`).
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from experiments.vl_testbed.replies import ReplyMix
from experiments.vl_testbed.specs import StageSpec, VisionSpec

DataKind = Literal["vl", "text", "text_matched"]
#: The largest results or state file read, in bytes.
TESTBED_SIZE_LIMIT = 40_000_000


class Record(BaseModel):
    """A frozen record that forbids unknown fields."""

    model_config = ConfigDict(extra="forbid", frozen=True)


class Loose(BaseModel):
    """A frozen record that keeps fields the page does not read."""

    model_config = ConfigDict(extra="allow", frozen=True)


class RunGroup(Record):
    """Runs of one stage-2 data kind and dose, for each of ``arms`` and every seed."""

    data: DataKind
    dose: str
    arms: tuple[str, ...] = Field(min_length=1)


class RunKey(Record):
    """One run: the stage-2 data, dose, arm and seed. The data is ``vl`` (chats about scenes), ``text`` (text-only
    GSM8K chats, as many as the VL stage's) or ``text_matched`` (as many text-only chats, chosen to match the same
    seed's VL chats in supervised tokens within 5%: :func:`experiments.vl_testbed.train.token_matched`)."""

    data: DataKind
    dose: str
    arm: str
    seed: int

    def label(self) -> str:
        """``vl/high/none/seed0``."""
        return f"{self.data}/{self.dose}/{self.arm}/seed{self.seed}"


class TestbedConfig(Record):
    """Everything that defines the experiment's numbers.

    Attributes:
        backbone: the base LM (an embedded name, hub id or folder), as ``sinkbench screen`` takes it.
        stage1, doses: the alignment stage (LM frozen; shared by every run of a seed) and the stage-2 strengths
            by name; ``compare_dose`` is where the arms are compared, fixed before they run.
        replies, text_share: the VL chats' reply formats, and the share of them replaced by text-only GSM8K chats
            (0: the text-only control is the only text training).
        plan, seeds: the run groups, and the seeds each runs.
        top_frac, bands: the sink heads (top fraction of heads by median G) and the random control's depth bands.
        ifeval_prompts, ifeval_rule, max_new_tokens: the first N IFEval prompts of the short-answer subset (or of
            all 541), and the answer cap.
        keep: runs whose VLM and VLM-LM checkpoints stay in the work folder (for the interventions).
    """

    backbone: str = "smollm2-135m-instruct"
    stage1: StageSpec
    doses: dict[str, StageSpec] = Field(min_length=1)
    compare_dose: str
    replies: ReplyMix = ReplyMix()
    text_share: float = Field(default=0.0, ge=0.0, le=1.0)
    vision: VisionSpec = VisionSpec()
    stage0_steps: int = 400
    stage0_batch: int = 64
    seeds: tuple[int, ...] = Field(default=(0, 1, 2, 3, 4, 5, 6, 7), min_length=1)
    plan: tuple[RunGroup, ...] = Field(min_length=1)
    top_frac: float = 0.1
    bands: int = 3
    monitor_every: int = 10
    ifeval_prompts: int = 128
    ifeval_rule: Literal["short_answer", "all"] = "short_answer"
    max_new_tokens: int = 64
    eval_batch: int = 64
    eval_dtype: Literal["bfloat16", "float32"] = "bfloat16"
    visual_images: int = 64
    visual_seed: int = 1_000_003
    device: str = "cpu"
    keep: tuple[RunKey, ...] = ()

    @model_validator(mode="before")
    @classmethod
    def _no_token_matching_flag(cls, data: Any) -> Any:
        """Files written before the ``text_matched`` run group say ``match_text_tokens: false`` (their ``text`` runs
        were not matched): read them without it. A true flag made its ``text`` runs token-matched, which this schema
        would mislabel, so it is refused."""
        if isinstance(data, dict) and "match_text_tokens" in data:
            if data["match_text_tokens"] is not False:
                raise ValueError(
                    "match_text_tokens is true (its text runs were token-matched), which is no longer read: "
                    "token-matched runs are the text_matched run group now; run them as that group in a new work "
                    "folder"
                )
            data = {key: value for key, value in data.items() if key != "match_text_tokens"}
        return data

    @model_validator(mode="after")
    def _doses_and_arms_exist(self) -> TestbedConfig:
        from experiments.vl_testbed.controls import ARMS

        if self.compare_dose not in self.doses:
            raise ValueError(
                f"compare_dose {self.compare_dose!r} is not one of the doses {sorted(self.doses)}"
            )
        for group in self.plan:
            if group.dose not in self.doses:
                raise ValueError(f"plan: dose {group.dose!r} is not one of {sorted(self.doses)}")
            unknown = [arm for arm in group.arms if arm not in ARMS]
            if unknown:
                raise ValueError(f"plan: unknown arm {unknown[0]!r}; arms are {', '.join(ARMS)}")
        return self

    def runs(self) -> list[RunKey]:
        """Every run of the plan, seed by seed (so a seed's stage 1 is made once and used at once)."""
        return [
            RunKey(data=group.data, dose=group.dose, arm=arm, seed=seed)
            for seed in self.seeds
            for group in self.plan
            for arm in group.arms
        ]

    def recipe(self) -> dict[str, Any]:
        """What a run's numbers depend on: everything but the seeds, the plan and the kept checkpoints, so a
        results file can gain seeds or run groups and still resume."""
        return self.model_dump(mode="json", exclude={"seeds", "plan", "keep"})


class Spread(Record):
    """Median and range."""

    median: float
    min: float
    max: float


class SinkRecord(Record):
    """S of a causal LM with its bootstrap interval, the secondary metrics (by their names in
    :data:`sinkbench.sink.metrics.SECONDARY_METRICS`) and the per-layer medians."""

    sink_strength: float
    ci: tuple[float, float]
    secondary: dict[str, float | None]
    layer_median_g: list[float | None]


class IfevalRecord(Record):
    """Strict and loose IFEval accuracy, with the per-prompt strict outcomes."""

    prompt_strict: float
    prompt_loose: float
    inst_strict: float
    inst_loose: float
    prompts: int = Field(ge=1)
    instructions: int = Field(ge=1)
    strict_by_prompt: list[int]
    inst_strict_by_prompt: list[list[int]]
    answer_tokens: list[int]


class TextRecord(Record):
    """Every text outcome of one model (see :mod:`experiments.vl_testbed.outcomes`)."""

    ifeval: IfevalRecord
    non_trivial_strict: float
    non_trivial_prompts: int
    nll_mean: float
    nll_continue_mean: float
    nll: list[float]
    nll_continue: list[float | None]
    answer_tokens_median: float
    stopped_share: float
    stopped: list[int]
    answers: list[str]


class VisualKind(Record):
    """Accuracy on one kind of held-out question, its chance rate and its count."""

    accuracy: float
    chance: float
    n: int = Field(ge=1)


class VisualRecord(VisualKind):
    """Accuracy on the held-out questions, overall and per kind (count, colour, shape)."""

    by_kind: dict[str, VisualKind]


class TracePoint(Record):
    """One monitor measurement during stage 2."""

    step: int = Field(ge=0)
    sink_strength: float
    secondary: dict[str, float | None]
    seconds: float


class StageRecord(Record):
    """A training stage: loss and learning rate per step, wall time, and the tokens that entered the loss."""

    loss: list[float]
    lr: list[float]
    seconds: float = Field(ge=0)
    supervised_tokens: int


class Frozen(Record):
    """What an arm froze: query heads, key/value heads, weights, and whether the frozen rows stayed unchanged."""

    query_heads: int
    kv_heads: int
    weights: int
    rows_unchanged: bool
    lm_trained: bool


class Extraction(Loose):
    """``extract_lm(verify=True)``'s verification record."""

    passed: bool
    max_abs_logit_diff: float


class RunSeconds(Record):
    """Wall times of one run's steps, in seconds."""

    stage2: float
    monitor: float
    visual: float
    extract: float
    screen: float
    text: float
    total: float


class RunRecord(Record):
    """One run: its key, what it froze, stage 2, the monitor's trace, and every outcome of its VLM-LM."""

    key: RunKey
    heads: list[list[int]]
    frozen: Frozen
    stage2: StageRecord
    trace: list[TracePoint] = Field(min_length=1)
    visual: VisualRecord
    extraction: Extraction
    sink: SinkRecord
    text: TextRecord
    seconds: RunSeconds


class Stage0Record(Record):
    """Stage 0 (the encoder's pretraining on scene labels)."""

    loss: list[float]
    train_accuracy: float
    seconds: float


class SharedStages(Record):
    """A seed's shared stages: the encoder's pretraining and the alignment stage, with its visual accuracy."""

    stage0: Stage0Record
    stage1: StageRecord
    visual_after_stage1: VisualRecord


class RemadeStages(SharedStages):
    """The shared stages made again (their weights were no longer in the work folder) for the runs from
    ``first_run`` on: ``reproduced`` when both stages' losses equal the first making's, step for step."""

    first_run: str
    reproduced: bool


class SeedRecord(SharedStages):
    """A seed's shared stages as first made (the seed's earlier runs started from them), and each making since."""

    seed: int
    remade: list[RemadeStages] = []


class BaseSeconds(Record):
    """Wall times of the base model's measurements."""

    screen: float
    text: float


class BaseRecord(Record):
    """The untouched base LM through the same measurements, and an untrained VLM's visual accuracy."""

    sink: SinkRecord
    text: TextRecord
    reference_token_ids: list[list[int]]
    visual_untrained: VisualRecord
    seconds: BaseSeconds


class IfevalSubset(Loose):
    """Which IFEval prompts the testbed asks, and where they came from; the non-trivial subset (the prompts every
    trivial answer and every run's most frequent answer fail), and how many of them the base model passes."""

    documents: int
    short_answer_documents: int
    rule: str
    indices: list[int] = Field(min_length=1)
    keys: list[int]
    non_trivial: list[int]
    trivial_scores: dict[str, dict[str, float]]
    trivial_answers: list[str] = []
    frequent_answers: list[str] = []
    base_passes_non_trivial: int | None = None


class Machine(Record):
    """What the run was measured on: CPUs, torch threads, device, the load average at the start (and at each
    resumption of an interrupted run), a note by the person running it, and each session's CPU model and library
    versions (``when`` it started; files from before 2026-12-05 lack them)."""

    cpus: int
    torch_threads: int
    device: str
    load_average_at_start: list[float]
    resumed_at_load: list[list[float]] = []
    note: str | None = None
    software: list[dict[str, str]] = []

    def resumed(self, now: Machine) -> Machine:
        """This record with a resumption on the machine ``now`` describes: its load average and its software."""
        return self.model_copy(
            update={
                "resumed_at_load": [*self.resumed_at_load, now.load_average_at_start],
                "software": [*self.software, *now.software],
            }
        )


class Results(Record):
    """The testbed's results file."""

    model_config = ConfigDict(extra="forbid", frozen=True, protected_namespaces=())

    sinkbench_version: str
    created: str
    command: str
    model: dict[str, Any]
    machine: Machine
    ifeval_subset: IfevalSubset
    text_source: dict[str, Any] | None
    shape: dict[str, int]
    config: TestbedConfig
    sink_heads: list[list[int]]
    base: BaseRecord | None = None
    seeds: list[SeedRecord] = []
    runs: list[RunRecord] = []
    analysis: Analysis | None = None

    def run(self, key: RunKey) -> RunRecord | None:
        """The run of ``key``, if on file."""
        return next((run for run in self.runs if run.key == key), None)

    def seed_record(self, seed: int) -> SeedRecord | None:
        """The shared stages of ``seed``, if on file."""
        return next((record for record in self.seeds if record.seed == seed), None)


Verdict = Literal["yes", "reverse", "no", "cannot tell", "not posed", "descriptive"]


class Effect(Record):
    """A paired comparison on one outcome: per-seed differences (treated - control), their summary, the exact
    sign-flip test, the smallest difference the design detects (from a spread that is not the judged arm's), the
    outcome's margin, and the verdict of :mod:`experiments.vl_testbed.verdicts`."""

    differences: list[float] = Field(min_length=1)
    mean: float
    median: float
    ci95: tuple[float | None, float | None]
    p_sign_flip: float | None
    positive: int
    negative: int
    zero: int
    minimum_detectable: float | None
    undetectable: Literal["too_few_seeds", "no_spread"] | None
    margin: float | None
    verdict: Verdict

    @model_validator(mode="after")
    def _one_of_size_or_reason(self) -> Effect:
        if (self.minimum_detectable is None) == (self.undetectable is None):
            raise ValueError("exactly one of minimum_detectable and undetectable must be null")
        return self


class Comparison(Record):
    """One question of the experiment, asked as a paired comparison on every outcome."""

    question: str
    treated: str
    control: str
    seeds: list[int]
    effects: dict[str, Effect]


class GroupSummary(Record):
    """One run group (data, dose, arm) over its seeds: every outcome's median and range, and the wall times."""

    data: DataKind
    dose: str
    arm: str
    seeds: list[int] = Field(min_length=1)
    outcomes: dict[str, Spread]
    visual_by_kind: dict[str, Spread]
    visual_above_chance: int
    frozen_weights: int
    supervised_tokens: Spread
    seconds: dict[str, Spread]


class Analysis(Record):
    """Everything the page states, computed once from the runs by :func:`experiments.vl_testbed.analysis.summarize`."""

    groups: dict[str, GroupSummary]
    comparisons: dict[str, Comparison]
    power: dict[str, str]
    stage1_visual: Spread | None
    sink_shifts: list[float]
    sink_moved: bool | None


class PilotRun(Loose):
    """One run of the mechanism pilot (:mod:`experiments.vl_testbed.pilot`): what the page shows of it."""

    setting: str
    seed: int
    s_shift: float
    visual_gain: float
    sink: dict[str, Any]
    margin: dict[str, Any]
    echo: dict[str, Any]
    nll_continue: float
    first_token_attention: dict[str, dict[str, Any]]
    stage2: dict[str, Any]
    seconds: dict[str, float]


class PilotSetting(Record):
    """The pilot's rule applied to one setting."""

    sink_moved: bool
    visual_learned: bool
    echo_rate: float
    steps: int | None


class PilotVerdicts(Record):
    """The pilot's rule applied: per setting, and the compared regime (None: the protection questions are not
    posed)."""

    settings: dict[str, PilotSetting]
    compared_regime: str | None


class PilotResults(Loose):
    """The mechanism pilot's results file."""

    created: str
    updated: str | None = None
    backbone: str
    rule: str
    settings: list[dict[str, Any]] = Field(min_length=1)
    base: dict[str, Any]
    runs: list[PilotRun] = Field(min_length=1)
    verdicts: PilotVerdicts
