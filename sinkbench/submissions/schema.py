"""Schemas of the files in a submission entry (the tasks an entry may report: :mod:`.catalogue`).

One pydantic model per file kind: ``metadata.json`` (:data:`METADATA_ADAPTER`), an lm-eval results file
(:class:`LmEvalResults`), one line of an ``ifeval_strict`` samples file (:class:`IfevalSample`) and a
``sinkbench screen`` profile (:class:`SinkProfile`). Models of files we write are strict (unknown fields
are errors); models of lm-eval's files accept extra fields, since lm-eval adds keys between versions.
"""

from __future__ import annotations

import unicodedata
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, StringConstraints, TypeAdapter

from sinkbench.submissions.catalogue import known_task

#: Size caps in bytes per file kind, checked with ``stat`` before a file is read.
SIZE_LIMITS: dict[str, int] = {
    "metadata": 1_000_000,
    "results": 20_000_000,
    "samples": 100_000_000,
    "sink_profile": 20_000_000,
    "config": 5_000_000,
}

#: Entry folder names: lower-case letters, digits, ``.``, ``_`` and ``-``; no path separators.
ENTRY_NAME_PATTERN = r"^[a-z0-9][a-z0-9._-]{0,79}$"
#: Model ids as the Hugging Face Hub spells them: ``name`` or ``org/name``.
MODEL_ID_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9._-]{0,95}(/[A-Za-z0-9][A-Za-z0-9._-]{0,95})?$"
#: Revisions: a commit hash, a tag, or ``sha256:<hex>`` of a weights file.
REVISION_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9._:/+-]{0,127}$"
URL_PATTERN = r"^https?://[^\s<>\"'`]{1,2000}$"

QkNorm = Literal["per-head", "layerwise", "none"]
Provenance = Literal["measured", "reported"]

_BIDI_CONTROLS = frozenset("\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069")


def _no_control_characters(value: str, *, multiline: bool) -> str:
    allowed = {"\n", "\t"} if multiline else set()
    for position, char in enumerate(value):
        if char in allowed:
            continue
        if unicodedata.category(char) == "Cc" or char in _BIDI_CONTROLS:
            raise ValueError(f"control character U+{ord(char):04X} at position {position} is not allowed")
    return value


def _single_line(value: str) -> str:
    return _no_control_characters(value, multiline=False)


def _multi_line(value: str) -> str:
    return _no_control_characters(value, multiline=True)


ShortText = Annotated[str, StringConstraints(min_length=1, max_length=200), AfterValidator(_single_line)]
LongText = Annotated[str, StringConstraints(min_length=1, max_length=4000), AfterValidator(_multi_line)]
ModelId = Annotated[str, StringConstraints(pattern=MODEL_ID_PATTERN)]
Revision = Annotated[str, StringConstraints(pattern=REVISION_PATTERN)]
Url = Annotated[str, StringConstraints(pattern=URL_PATTERN)]
TaskName = Annotated[str, AfterValidator(known_task)]
Points = Annotated[float, Field(ge=0.0, le=100.0)]
DeltaPoints = Annotated[float, Field(ge=-100.0, le=100.0)]
Nats = Annotated[float, Field(ge=-100.0, le=100.0)]
Count = Annotated[int, Field(ge=0, le=10_000_000)]
DerivedField = Literal["delta", "reference_score", "vlm_score"]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)


class _Open(BaseModel):
    model_config = ConfigDict(extra="allow", frozen=True, allow_inf_nan=False, populate_by_name=True)


class ModelRef(_Strict):
    """A model: Hub id (stored verbatim; the site escapes it), revision, optional display name."""

    id: ModelId
    revision: Revision | None = None
    display_name: ShortText | None = None


class Citation(_Strict):
    """Where reported numbers come from."""

    source: LongText
    url: Url | None = None


class ReportedSinkStrength(_Strict):
    """S of the (reference) LLM as published."""

    value: Nats
    table: ShortText
    derived: bool = False


class ReportedPairTask(_Strict):
    """One task of a reported pair, in points; ``derived`` names values computed from published ones."""

    task: TaskName
    delta: DeltaPoints
    table: ShortText
    reference_score: Points | None = None
    vlm_score: Points | None = None
    scores_table: ShortText | None = None
    derived: list[DerivedField] = []
    note: LongText | None = None


class IfevalRegressionCounts(_Strict):
    """Published per-prompt IFEval outcome counts of a pair, with the lost prompts per category."""

    n_prompts: Annotated[int, Field(ge=1, le=10_000_000)]
    both_pass: Count
    lost: Count
    gained: Count
    both_fail: Count
    table: ShortText
    lost_by_category: dict[Annotated[str, StringConstraints(pattern=r"^[a-z_]{1,40}$")], Count | None] = {}
    categories_table: ShortText | None = None


class ReportedPair(_Strict):
    """The published numbers of a reported pair."""

    sink_strength: ReportedSinkStrength
    tasks: Annotated[list[ReportedPairTask], Field(min_length=1)]
    ifeval_regressions: IfevalRegressionCounts | None = None


class ReportedBackboneScore(_Strict):
    """A published score of a backbone on one task, in points."""

    task: TaskName
    score: Points
    table: ShortText
    derived: bool = False


class ReportedBackbone(_Strict):
    """The published numbers of a reported backbone."""

    sink_strength: ReportedSinkStrength
    scores: list[ReportedBackboneScore] = []


class _MetadataBase(_Strict):
    schema_version: Literal[1]
    provenance: Provenance
    qk_norm: QkNorm
    submitter: ShortText
    links: Annotated[list[Url], Field(max_length=20)] = []
    citation: Citation | None = None
    notes: LongText | None = None


class PairMetadata(_MetadataBase):
    """``metadata.json`` of a pair: a VLM, its reference LLM and the VL recipe between them."""

    kind: Literal["pair"]
    vlm: ModelRef
    reference_llm: ModelRef
    vl_recipe: LongText
    reported: ReportedPair | None = None


class BackboneMetadata(_MetadataBase):
    """``metadata.json`` of a backbone: a candidate LLM without a VLM yet."""

    kind: Literal["backbone"]
    model: ModelRef
    reported: ReportedBackbone | None = None


EntryMetadata = Annotated[PairMetadata | BackboneMetadata, Field(discriminator="kind")]
METADATA_ADAPTER: TypeAdapter[PairMetadata | BackboneMetadata] = TypeAdapter(EntryMetadata)


class SampleCount(_Open):
    """lm-eval's ``n-samples`` record: documents in the task vs documents evaluated."""

    original: int
    effective: int


class RunConfig(_Open):
    """lm-eval's ``config`` block: run settings and the model revision lm-eval recorded."""

    limit: int | float | None = None
    gen_kwargs: str | dict[str, Any] | None = None
    model_revision: str | None = None
    model_sha: str | None = None


class TaskConfig(_Open):
    """One task's entry in lm-eval's ``configs`` block."""

    generation_kwargs: dict[str, Any] | None = None


class LmEvalResults(_Open):
    """An lm-eval (0.4.x) ``results_<date>.json`` file, as written by ``lm_eval --output_path``.

    Only the fields the rules read are typed; lm-eval's other fields are kept as extras.
    """

    results: dict[str, dict[str, Any]]
    configs: dict[str, TaskConfig] = {}
    versions: dict[str, Any] = {}
    n_shot: dict[str, int] = Field(default={}, alias="n-shot")
    n_samples: dict[str, SampleCount] = Field(alias="n-samples")
    config: RunConfig
    lm_eval_version: str | None = None
    chat_template: str | None = None
    system_instruction_sha: str | None = None
    fewshot_as_multiturn: bool | None = None


class IfevalDoc(_Open):
    """The part of an IFEval document the regression counts need."""

    key: int | str
    instruction_id_list: list[str]


class IfevalSample(_Open):
    """One line of an ``ifeval_strict`` samples file (``lm_eval --log_samples``)."""

    doc_id: int
    doc: IfevalDoc
    prompt_level_strict_acc: bool
    inst_level_strict_acc: list[bool]


class ProfileMatrix(_Open):
    """The per-layer x per-head median G of a ``sinkbench screen`` profile."""

    layers: list[int]
    median_g: list[list[float | None]]
    layer_median_g: list[float | None]


class SinkProfile(_Open):
    """A ``sinkbench screen --output`` file, shown as a layer x head heatmap on the site."""

    sink_strength: float
    layers_probed: list[int]
    profile: ProfileMatrix
