"""Schemas of the files in a submission entry: one pydantic model per file kind (``metadata.json``:
:data:`METADATA_ADAPTER`; :class:`LmEvalResults`, :class:`IfevalSample`, :class:`SinkProfile`). Models of files we
write are closed; those of lm-eval's files accept extra fields, since lm-eval adds keys between versions.

Every model is strict (``"541"`` is not 541, ``"yes"`` is not true), numbers are finite and in range, names, ids
and keys refuse invisible characters (:func:`refuse_invisible`), and collections are bounded, so one entry cannot
make the build expensive.
"""

from __future__ import annotations

import json
import re
import unicodedata
from functools import partial
from typing import Annotated, Any, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    StringConstraints,
    TypeAdapter,
    model_validator,
)

from sinkbench.submissions.catalogue import known_task

#: The version of ``metadata.json``'s schema: what every writer of an entry records and the gate accepts.
SCHEMA_VERSION = 1
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
#: Revisions that name no particular weights (an unpinned entry may hold the same weights as any other).
UNPINNED_REVISIONS = frozenset({None, "", "main"})
URL_PATTERN = r"^https?://[^\s<>\"'`]{1,2000}$"

QkNorm = Literal["per-head", "layerwise", "none"]
Provenance = Literal["measured", "reported"]

#: Unicode categories refused in text: control, format (zero-width, bidi overrides, BOM), line and paragraph
#: separators, surrogates, private use and unassigned (free text may still hold newlines and tabs).
_INVISIBLE_CATEGORIES = frozenset({"Cc", "Cf", "Zl", "Zp", "Cs", "Co", "Cn"})
_ASCII_CONTROLS = re.compile(r"[\x00-\x1f\x7f]")
#: Letters that render as blank space (the Hangul fillers), refused like the categories above.
_BLANK_LETTERS = frozenset("\u115f\u1160\u3164\uffa0")
#: Bounds on what one file may hold (beyond its size cap), so that no entry makes the build expensive.
MAX_PROFILE_LAYERS = 256
MAX_PROFILE_HEADS = 256
MAX_RESULTS_TASKS = 1000
MAX_METRICS_PER_TASK = 500
MAX_KEY_LENGTH = 200


def invisible_character(value: str, *, multiline: bool = False) -> str | None:
    """A description of the first invisible character in ``value`` (e.g. ``U+202E at position 3``), or None."""
    allowed = {"\n", "\t"} if multiline else set()
    if value.isascii():  # fast path for most text: in ASCII only the C0 controls and DEL are refused
        if _ASCII_CONTROLS.search(value) is None:
            return None
        found = next((m for m in _ASCII_CONTROLS.finditer(value) if m.group() not in allowed), None)
        return None if found is None else _describe(found.group(), found.start())
    for position, char in enumerate(value):
        if char not in allowed and (
            char in _BLANK_LETTERS or unicodedata.category(char) in _INVISIBLE_CATEGORIES
        ):
            return _describe(char, position)
    return None


def _describe(char: str, position: int) -> str:
    """``U+202E (RIGHT-TO-LEFT OVERRIDE) at position 3``; a character without a name is described by its kind."""
    name = unicodedata.name(char, "") or ("control" if unicodedata.category(char) == "Cc" else "unnamed")
    return f"U+{ord(char):04X} ({name}) at position {position}"


def refuse_invisible(value: str, *, multiline: bool = False) -> str:
    """Return ``value`` unless it is blank or holds a control, format, separator or blank character (newlines
    and tabs are allowed in ``multiline`` text)."""
    found = invisible_character(value, multiline=multiline)
    if found:
        raise ValueError(f"invisible or control character {found} is not allowed")
    if value and not value.strip():
        raise ValueError("text made only of spaces is not allowed; write the text or leave the field out")
    return value


_SINGLE_LINE = AfterValidator(refuse_invisible)
_MULTI_LINE = AfterValidator(partial(refuse_invisible, multiline=True))
ShortText = Annotated[str, StringConstraints(min_length=1, max_length=200), _SINGLE_LINE]
LongText = Annotated[str, StringConstraints(min_length=1, max_length=4000), _MULTI_LINE]
ModelId = Annotated[str, StringConstraints(pattern=MODEL_ID_PATTERN)]
#: A transformers model type as config.json writes it (``qwen3_moe``, ``llava_next``, ``bert-generation``).
ModelType = Annotated[str, StringConstraints(pattern=r"^[a-z0-9][a-z0-9_.-]{0,63}$")]
#: A class name from config.json's ``architectures`` (``LlavaQwenForCausalLM``).
ClassName = Annotated[str, StringConstraints(pattern=r"^[A-Za-z_][A-Za-z0-9_]{0,99}$")]
Revision = Annotated[str, StringConstraints(pattern=REVISION_PATTERN)]
Url = Annotated[str, StringConstraints(pattern=URL_PATTERN), _SINGLE_LINE]
TaskName = Annotated[str, AfterValidator(known_task)]
Key = Annotated[str, StringConstraints(min_length=1, max_length=MAX_KEY_LENGTH), _SINGLE_LINE]
Points = Annotated[float, Field(ge=0.0, le=100.0)]
DeltaPoints = Annotated[float, Field(ge=-100.0, le=100.0)]
Nats = Annotated[float, Field(ge=-100.0, le=100.0)]
Count = Annotated[int, Field(ge=0, le=10_000_000)]
DerivedField = Literal["delta", "reference_score", "vlm_score"]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False, strict=True)


class _Open(BaseModel):
    model_config = ConfigDict(
        extra="allow", frozen=True, allow_inf_nan=False, populate_by_name=True, strict=True
    )


def _no_repeated_tasks(items: list[Any]) -> list[Any]:
    tasks = [item.task for item in items]
    repeated = sorted({task for task in tasks if tasks.count(task) > 1})
    if repeated:
        raise ValueError(f"task {repeated[0]!r} is listed more than once; give each task once")
    return items


#: Where a parameter count comes from: the weights (counted), the cited source, the model's card, or the size in
#: the model's name (nominal, e.g. "8B").
ParamsSource = Literal["weights", "source", "model card", "model name"]


class ModelRef(_Strict):
    """A model: Hub id (stored verbatim; the site escapes it), revision, display name, and what is known of it.

    ``id_mapping`` is ``unverified`` when the id was mapped from a publication's model name and not checked
    against the Hub. ``params_b`` (billions of parameters, all of them for a mixture of experts) comes with
    ``params_source``; measured entries may leave it out, since lm-eval records the count of the weights.
    ``model_type`` (and ``architecture``, where the class says more than the type) are the checkpoint's, as
    its ``config.json`` gives them: they say whether ``screen`` / ``extract-lm`` can re-measure the model.
    """

    id: ModelId
    revision: Revision | None = None
    display_name: ShortText | None = None
    id_mapping: Literal["verified", "unverified"] | None = None
    params_b: Annotated[float, Field(gt=0.0, le=100_000.0)] | None = None
    params_source: ParamsSource | None = None
    license: ShortText | None = None
    family: ShortText | None = None
    model_type: ModelType | None = None
    architecture: ClassName | None = None

    @model_validator(mode="after")
    def _params_with_source(self) -> ModelRef:
        if (self.params_b is None) != (self.params_source is None):
            raise ValueError("params_b and params_source go together: give both or neither")
        return self


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
    lost_by_category: Annotated[
        dict[Annotated[str, StringConstraints(pattern=r"^[a-z_]{1,40}$")], Count | None], Field(max_length=50)
    ] = {}
    categories_table: ShortText | None = None


class ReportedPair(_Strict):
    """The published numbers of a reported pair."""

    sink_strength: ReportedSinkStrength
    tasks: Annotated[
        list[ReportedPairTask], Field(min_length=1, max_length=50), AfterValidator(_no_repeated_tasks)
    ]
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
    scores: Annotated[
        list[ReportedBackboneScore], Field(max_length=50), AfterValidator(_no_repeated_tasks)
    ] = []


class RedactionRecord(_Strict):
    """One field of a submitted file that ``sinkbench submit`` changed: a local path replaced (see
    :mod:`sinkbench.submissions.local_paths`). The original value is not kept: it is private."""

    file: ShortText
    field: Annotated[str, StringConstraints(min_length=1, max_length=400), _SINGLE_LINE]
    replacement: ShortText


class _MetadataBase(_Strict):
    # strict: neither true nor 1.0
    schema_version: Annotated[int, Field(ge=SCHEMA_VERSION, le=SCHEMA_VERSION)]
    provenance: Provenance
    qk_norm: QkNorm
    submitter: ShortText
    links: Annotated[list[Url], Field(max_length=20)] = []
    citation: Citation | None = None
    notes: LongText | None = None
    redactions: Annotated[list[RedactionRecord], Field(max_length=2000)] = []


class PairMetadata(_MetadataBase):
    """``metadata.json`` of a pair: a VLM, its reference LLM and the VL recipe between them."""

    kind: Literal["pair"]
    vlm: ModelRef
    reference_llm: ModelRef
    vl_recipe: LongText
    reported: ReportedPair | None = None
    #: Made by the project's VL testbed (``experiments/vl_testbed``), not a published VLM: shown apart from the
    #: other pairs and left out of every fit; its strict-suite runs may cover part of a test set (``--limit``).
    testbed: bool = False


class BackboneMetadata(_MetadataBase):
    """``metadata.json`` of a backbone: a candidate LLM without a VLM yet."""

    kind: Literal["backbone"]
    model: ModelRef
    reported: ReportedBackbone | None = None


EntryMetadata = Annotated[PairMetadata | BackboneMetadata, Field(discriminator="kind")]
METADATA_ADAPTER: TypeAdapter[PairMetadata | BackboneMetadata] = TypeAdapter(EntryMetadata)
#: Where a written ``metadata.json`` puts these keys: first what the entry is, last the redaction records.
_FIRST_KEYS, _LAST_KEYS = ("schema_version", "kind", "provenance"), ("redactions",)


def metadata_json(metadata: PairMetadata | BackboneMetadata) -> str:
    """The text of ``metadata.json`` for validated ``metadata``: the fields that were set, as JSON (UTF-8, two-space
    indents), what the entry is first and its redaction records last."""
    fields = metadata.model_dump(mode="json", exclude_unset=True)
    first = {key: fields.pop(key) for key in _FIRST_KEYS if key in fields}
    last = {key: fields.pop(key) for key in _LAST_KEYS if key in fields}
    return json.dumps({**first, **fields, **last}, indent=2, ensure_ascii=False, allow_nan=False) + "\n"


class SampleCount(_Open):
    """lm-eval's ``n-samples`` record: documents in the task vs documents evaluated."""

    original: Annotated[int, Field(ge=0, le=100_000_000)]
    effective: Annotated[int, Field(ge=0, le=100_000_000)]


class RunConfig(_Open):
    """lm-eval's ``config`` block: run settings and the model revision lm-eval recorded."""

    limit: int | float | None = None
    gen_kwargs: str | dict[str, Any] | None = None
    model_args: str | dict[str, Any] | None = None
    model_revision: str | None = None
    model_sha: str | None = None
    model_num_parameters: Annotated[int, Field(ge=0, le=10**15)] | None = None
    model_dtype: str | None = None


class TaskConfig(_Open):
    """One task's entry in lm-eval's ``configs`` block."""

    generation_kwargs: dict[str, Any] | None = None
    num_fewshot: int | None = None
    metadata: dict[str, Any] | None = None


class LmEvalResults(_Open):
    """An lm-eval (0.4.x) ``results_<date>.json`` file, as written by ``lm_eval --output_path``.

    Only the fields the rules read are typed; lm-eval's other fields are kept as extras.
    """

    results: Annotated[
        dict[Key, Annotated[dict[Key, Any], Field(max_length=MAX_METRICS_PER_TASK)]],
        Field(min_length=1, max_length=MAX_RESULTS_TASKS),
    ]
    group_subtasks: dict[Key, list[Key]] = {}
    configs: dict[Key, TaskConfig]
    versions: dict[Key, Any]
    n_shot: dict[Key, int] = Field(alias="n-shot")
    n_samples: dict[Key, SampleCount] = Field(alias="n-samples")
    config: RunConfig
    lm_eval_version: str | None = None
    chat_template: str | None = None
    system_instruction_sha: str | None = None
    fewshot_as_multiturn: bool | None = None


#: Longest prompt or response kept from a samples file (model output is shown, never interpreted).
MAX_SAMPLE_TEXT = 100_000


class IfevalDoc(_Open):
    """The part of an IFEval document the regression counts and the per-prompt view need."""

    key: int | ShortText
    instruction_id_list: Annotated[list[Key], Field(max_length=100)]
    prompt: Annotated[str, StringConstraints(max_length=MAX_SAMPLE_TEXT)] | None = None


class IfevalSample(_Open):
    """One line of an ``ifeval_strict`` samples file (``lm_eval --log_samples``)."""

    doc_id: int
    doc: IfevalDoc
    prompt_level_strict_acc: bool
    inst_level_strict_acc: Annotated[list[bool], Field(max_length=100)]
    filtered_resps: Annotated[
        list[Annotated[str, StringConstraints(max_length=MAX_SAMPLE_TEXT)]], Field(max_length=16)
    ] = []


Layer = Annotated[int, Field(ge=0, le=100_000)]


class ProfileMatrix(_Open):
    """The per-layer x per-head median G of a ``sinkbench screen`` profile (bounded: it becomes a heatmap)."""

    layers: Annotated[list[Layer], Field(min_length=1, max_length=MAX_PROFILE_LAYERS)]
    median_g: Annotated[
        list[Annotated[list[Nats | None], Field(min_length=1, max_length=MAX_PROFILE_HEADS)]],
        Field(min_length=1, max_length=MAX_PROFILE_LAYERS),
    ]
    layer_median_g: Annotated[list[Nats | None], Field(max_length=MAX_PROFILE_LAYERS)]


class SinkProfile(_Open):
    """A ``sinkbench screen --output`` file, shown as a layer x head heatmap on the site."""

    sink_strength: Nats
    sink_strength_ci: Annotated[list[Nats], Field(min_length=2, max_length=2)] | None = None
    layers_probed: Annotated[list[Layer], Field(max_length=MAX_PROFILE_LAYERS)]
    profile: ProfileMatrix
