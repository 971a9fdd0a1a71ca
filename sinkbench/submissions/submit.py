"""``sinkbench submit``: an entry folder built from lm-eval output folders, checked by the gate, written whole.

It reads the ``results_*.json`` and ``samples_*.jsonl`` that ``lm_eval --output_path RUN --log_samples`` wrote
(any depth below RUN) and fills ``metadata.json`` from what they say (see :func:`model_of` and :func:`qk_norm_of`),
asking for what they cannot say, every missing option in one message. The metadata is built as the schema's own
model, so a bad option is refused by field. Local paths are replaced by the model id or ``<local>`` and every
change is recorded (:mod:`sinkbench.submissions.local_paths`). Nothing is written unless the new entry passes every
rule of the gate; an existing entry is replaced only when asked.
"""

from __future__ import annotations

import json
import re
import shutil
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from sinkbench.errors import UserError
from sinkbench.models import cached_gguf
from sinkbench.safe_io import UnsafeFileError, file_sha256, install_directory, read_json
from sinkbench.submissions.catalogue import FOLDER_OF_KIND, FORMAT_TASKS, IFEVAL_TASK, SINK_TASK
from sinkbench.submissions.facts import model_args
from sinkbench.submissions.gate import (
    SubmissionsInvalid,
    load_entry,
    load_submissions,
    refuse_entry_folder,
    run_rules,
)
from sinkbench.submissions.lm_eval_rules import detect_qk_norm
from sinkbench.submissions.local_paths import redact
from sinkbench.submissions.metadata_rules import rule_no_duplicates
from sinkbench.submissions.read_entry import validation_problems
from sinkbench.submissions.schema import (
    ENTRY_NAME_PATTERN,
    MODEL_ID_PATTERN,
    SCHEMA_VERSION,
    SIZE_LIMITS,
    UNPINNED_REVISIONS,
    BackboneMetadata,
    PairMetadata,
    metadata_json,
)

_HUB_ID = re.compile(MODEL_ID_PATTERN)
_ENTRY_NAME = re.compile(ENTRY_NAME_PATTERN)
_STAMP = re.compile(r"results_(.+)\.json")


class SubmitError(UserError):
    """A run folder or option that cannot make an entry; the message is one line with the fix."""


@dataclass(frozen=True)
class Missing:
    """An option the run folders cannot stand in for, and why it is needed."""

    option: str  # the flag and its value's name, e.g. ``--model-id ORG/NAME``
    why: str


class MissingOptions(SubmitError):
    """Every option still needed, named at once in one line."""

    def __init__(self, missing: Sequence[Missing]) -> None:
        self.missing = tuple(missing)
        flags = ", ".join(item.option.split()[0] for item in self.missing)
        super().__init__(
            f"missing {flags}: " + "; ".join(f"{item.option} ({item.why})" for item in self.missing)
        )


#: The options every entry needs, and what each is (``--qk-norm`` only where the run's files cannot tell it).
_ENTRY_OPTIONS = {
    "name": Missing("--name NAME", "the entry folder's name, e.g. smollm2-135m-instruct"),
    "submitter": Missing("--submitter WHO", "your name or handle, shown on the board"),
    "vl_recipe": Missing(
        "--vl-recipe TEXT", "the VL training between the two models, e.g. 'SFT on LLaVA-665k'"
    ),
    "qk_norm": Missing(
        "--qk-norm per-head|layerwise|none", "the QK-norm class cannot be read from the run's files"
    ),
}
#: Where a revision can be found, for the message that asks for one.
_WHERE_REVISIONS_ARE = (
    "the commit of the weights on the Hub, or sha256:HEX of the weights file: the model.sha256 that `sinkbench "
    "screen MODEL --output FILE.json` records for a .gguf file or an embedded model"
)


@dataclass(frozen=True)
class Run:
    """An lm-eval output folder: its results files, the samples files of the same runs, and the model it ran."""

    folder: Path
    results: dict[Path, dict[str, Any]]
    samples: list[Path]

    @property
    def tasks(self) -> dict[str, Path]:
        """Each task (not group) of the run and the results file that holds it."""
        found = {}
        for path, data in self.results.items():
            groups = {name for name, members in (data.get("group_subtasks") or {}).items() if members}
            found |= {task: path for task in data.get("results", {}) if task not in groups}
        return found

    @property
    def config(self) -> dict[str, Any]:
        """lm-eval's ``config`` block of the run (the same for every results file of one model)."""
        return next(iter(self.results.values())).get("config") or {}

    @property
    def model_args(self) -> dict[str, Any]:
        """The ``--model_args`` the run used, as a dict."""
        return model_args(self.config.get("model_args"))


@dataclass(frozen=True)
class Model:
    """A model of the entry as ``metadata.json`` names it, and its local folder when the run used one."""

    id: str
    revision: str | None
    local: Path | None


@dataclass(frozen=True)
class Submitted:
    """What ``submit`` wrote: the entry folder, the files in it, and the fields it redacted."""

    folder: Path
    files: list[str]
    redactions: int


def _read_json(path: Path, kind: str) -> Any:
    """``path`` parsed (size-capped as ``kind``); an unsafe or unreadable file raises :class:`SubmitError`."""
    try:
        return read_json(path, SIZE_LIMITS[kind])
    except UnsafeFileError as error:
        raise SubmitError(f"{path}: {error.message} Fix: {error.fix}") from error


def read_run(folder: Path, role: str) -> Run:
    """The results and samples files below ``folder``, each task in one results file.

    Raises:
        SubmitError: no results file, an unreadable one, or a task in two results files.
    """
    if not folder.is_dir():
        raise SubmitError(
            f"{role} run {folder} is not a folder; pass the --output_path folder of `sinkbench eval`"
        )
    results = {path: _read_json(path, "results") for path in sorted(folder.rglob("results_*.json"))}
    if not results:
        raise SubmitError(
            f"{role} run {folder} holds no results_*.json; pass the --output_path folder of an lm-eval run"
        )
    seen: dict[str, Path] = {}
    for path, data in results.items():
        for task in data.get("results", {}):
            if task in seen and not (data.get("group_subtasks") or {}).get(task):
                raise SubmitError(
                    f"{role} run {folder} holds {task} in two results files ({seen[task].name}, {path.name}); "
                    "remove the older run or pass the folder of one run"
                )
            seen[task] = path
    stamps = {match.group(1) for path in results if (match := _STAMP.fullmatch(path.name))}
    samples = [p for p in sorted(folder.rglob("samples_*.jsonl")) if p.stem.rsplit("_", 1)[-1] in stamps]
    return Run(folder, results, samples)


def require_tasks(run: Run, tasks: tuple[str, ...], role: str) -> None:
    """Raise, naming the missing tasks and the run to make, unless ``run`` holds every task of ``tasks``."""
    missing = [task for task in tasks if task not in run.tasks]
    if missing:
        raise SubmitError(
            f"{role} run {run.folder} lacks {', '.join(missing)}; run `sinkbench eval --model hf --model_args "
            f"pretrained=MODEL --tasks {','.join(missing)} --apply_chat_template --log_samples --output_path "
            f"{run.folder}` with the settings of the other tasks, then submit again"
        )


def _extracted_from(local: Path) -> tuple[str | None, str | None]:
    """The VLM an extracted VLM-LM folder came from (its ``provenance.json``), when that names a Hub id."""
    try:
        source = read_json(local / "provenance.json", SIZE_LIMITS["metadata"]).get("source", {})
    except (UnsafeFileError, AttributeError):
        return None, None
    model = source.get("id") if isinstance(source, dict) else None
    if isinstance(model, str) and _HUB_ID.fullmatch(model):
        return model, source.get("revision")
    return None, None


def _hub_snapshot(local: Path) -> tuple[str | None, str | None]:
    """The Hub id and commit of a folder of the Hub cache (``models--ORG--NAME/snapshots/COMMIT``), else Nones."""
    parts = local.resolve().parts
    for index in range(len(parts) - 2):
        if parts[index].startswith("models--") and parts[index + 1] == "snapshots":
            model = parts[index].removeprefix("models--").replace("--", "/", 1)
            if _HUB_ID.fullmatch(model) and re.fullmatch(r"[0-9a-f]{40}", parts[index + 2]):
                return model, parts[index + 2]
    return None, None


def model_of(
    run: Run, *, model_id: str | None, revision: str | None, option: str
) -> tuple[Model, list[Missing]]:
    """The model a run evaluated, its Hub id and revision from the options, else from what the run's files say:
    the Hub id it ran, an extracted VLM-LM's ``provenance.json``, a Hub-cache snapshot folder, the sha256 of its
    GGUF file, or the folder of sinkbench's GGUF cache (``screen --print-model-dir``: the GGUF's sha256, and
    the Hub id of the embedded model it holds); with the options still needed to say the rest.
    """
    args = run.model_args
    pretrained = str(args.get("pretrained", ""))
    is_local = pretrained.startswith(("/", "~", ".")) or Path(pretrained).is_dir()
    local = Path(pretrained).expanduser() if is_local else None
    if local is None and _HUB_ID.fullmatch(pretrained):
        recorded = args.get("revision") or run.config.get("model_revision")
        recorded = recorded if recorded not in UNPINNED_REVISIONS else None
        found_id, found_revision = pretrained, recorded or run.config.get("model_sha")
        unpinned = f"the run in {run.folder} ran {pretrained} with no pinned revision"
    else:
        found_id, found_revision = _extracted_from(local) if local else (None, None)
        if local and not (found_id and found_revision):
            snapshot_id, commit = _hub_snapshot(local)
            found_id, found_revision = found_id or snapshot_id, found_revision or commit
        cache = cached_gguf(local) if local else None
        if cache:
            found_id = found_id or (cache.embedded.upstream if cache.embedded else None)
            found_revision = found_revision or f"sha256:{cache.sha256}"
        gguf = local / str(args["gguf_file"]) if local and args.get("gguf_file") else None
        if not (revision or found_revision) and gguf and gguf.is_file():
            found_revision = f"sha256:{file_sha256(gguf)}"
        unpinned = f"the local folder {pretrained!r} records no revision"
    pinned = revision or found_revision or None
    missing = []
    if not (model_id or found_id):
        missing.append(
            Missing(
                f"--{option}-id ORG/NAME",
                f"the run in {run.folder} used the local folder {pretrained!r}, which names no Hub id; "
                "sinkbench does not guess it",
            )
        )
    if pinned is None:
        missing.append(Missing(f"--{option}-revision REV", f"{unpinned}: pass {_WHERE_REVISIONS_ARE}"))
    return Model(model_id or found_id or "", pinned, local), missing


def qk_norm_of(model: Model, run: Run, given: str | None) -> str | None:
    """The QK-norm class: as given, else from the local model's ``config.json`` or GGUF header; None when the
    run's files cannot tell it."""
    if given:
        return given
    detected = None
    if model.local and (model.local / "config.json").is_file():
        detected = detect_qk_norm(read_json(model.local / "config.json", SIZE_LIMITS["config"]))
    gguf = run.model_args.get("gguf_file")
    if detected is None and model.local and gguf and (model.local / str(gguf)).is_file():
        from gguf import GGUFReader

        field = GGUFReader(model.local / str(gguf)).fields.get("general.architecture")
        architecture = bytes(field.parts[field.data[0]]).decode() if field else ""
        detected = detect_qk_norm({"model_type": architecture})
    return detected


def _check_options(given: dict[str, str | None], needed: list[Missing], qk_norm: str | None) -> None:
    """Raise :class:`MissingOptions` naming every option still needed: the entry's own (``given``), those the
    models need (``needed``), and ``--qk-norm`` when the run's files cannot tell it (``qk_norm`` None)."""
    missing = [_ENTRY_OPTIONS[name] for name, value in given.items() if not value] + needed
    if qk_norm is None:
        missing.append(_ENTRY_OPTIONS["qk_norm"])
    if missing:
        raise MissingOptions(missing)


def _write_redacted(data: Any, model: Model, target: Path, shown: str, **dumps: Any) -> list[dict[str, str]]:
    """Write ``data`` to ``target`` as JSON with its local paths redacted; return the redaction records."""
    clean, changed = redact(data, model_id=model.id, file=shown)
    target.write_text(json.dumps(clean, indent=2, **dumps) + "\n", encoding="utf-8")
    return [asdict(record) for record in changed]


def _copy_run(run: Run, model: Model, target: Path, shown: str) -> list[dict[str, str]]:
    """Copy the run's results (redacted) and samples files into ``target``; return the redaction records."""
    target.mkdir(parents=True, exist_ok=True)
    records = []
    for path, data in run.results.items():
        records += _write_redacted(data, model, target / path.name, f"{shown}{path.name}", ensure_ascii=False)
    for path in run.samples:
        shutil.copyfile(path, target / path.name)
    if model.local and (model.local / "config.json").is_file():
        config = read_json(model.local / "config.json", SIZE_LIMITS["config"])
        records += _write_redacted(config, model, target / "config.json", f"{shown}config.json")
    return records


def _copy_profile(profile: Path | None, model: Model, folder: Path) -> list[dict[str, str]]:
    if profile is None:
        return []
    data = _read_json(profile, "sink_profile")
    if not isinstance(data, dict):
        raise SubmitError(
            f"{profile}: <file>: is a JSON {type(data).__name__}, not an object. Fix: pass the report "
            "`sinkbench screen --output` wrote"
        )
    clean, changed = redact(data, model_id=model.id, file="sink_profile.json")
    if isinstance(clean.get("model"), dict) and clean["model"].get("source") in ("dir", "gguf"):
        clean["model"]["id"] = model.id
    (folder / "sink_profile.json").write_text(json.dumps(clean, indent=2) + "\n", encoding="utf-8")
    return [asdict(record) for record in changed]


def _model_ref(model: Model, display_name: str | None = None) -> dict[str, Any]:
    return {
        "id": model.id,
        "revision": model.revision,
        **({"display_name": display_name} if display_name else {}),
    }


def _stage_and_install(
    out: Path, name: str, fields: dict[str, Any], copy: Callable[[Path], list[dict[str, str]]], *, force: bool
) -> Submitted:
    """Make the entry in a staging folder beside ``out``: ``copy(folder)`` copies its files and returns the
    redaction records, then its metadata (``fields`` and the records) is written; load it, check it against the
    gate and the existing entries, and move it into ``out``.

    Raises:
        SubmissionsInvalid: the metadata does not validate (each problem names the field), or the entry breaks a
            rule of the gate.
    """
    if not _ENTRY_NAME.fullmatch(name) or ".." in name:
        raise SubmitError(
            f"--name {name!r} is not an entry name: use a-z, 0-9, '.', '_', '-' (e.g. qwen3-vl-8b)"
        )
    refuse_entry_folder(out)
    kind_folder = FOLDER_OF_KIND[fields["kind"]]
    target = out / kind_folder / name
    schema = PairMetadata if fields["kind"] == "pair" else BackboneMetadata
    out.mkdir(parents=True, exist_ok=True)
    staging_root = Path(tempfile.mkdtemp(prefix=".sinkbench-submit-", dir=out))
    try:
        folder = staging_root / kind_folder / name
        folder.mkdir(parents=True)
        shown = f"{out.name}/{kind_folder}/{name}"
        records = copy(folder)
        try:
            metadata = schema.model_validate({**fields, **({"redactions": records} if records else {})})
        except ValidationError as error:
            raise SubmissionsInvalid(validation_problems(f"{shown}/metadata.json", error)) from None
        (folder / "metadata.json").write_text(metadata_json(metadata), encoding="utf-8")
        files = sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file())
        entry, problems = load_entry(folder, shown)
        if entry is None:
            raise SubmissionsInvalid(problems)
        if target.exists() and not force:
            raise SubmitError(f"{target} already exists; pass --force to replace it")
        existing = [e for e in load_submissions(out).entries if e.name != entry.name] if out.is_dir() else []
        problems = run_rules([entry]) + list(rule_no_duplicates([*existing, entry]))
        if problems:
            raise SubmissionsInvalid(problems)
        install_directory(folder, target, replace=force)
        return Submitted(target, files, len(records))
    finally:
        shutil.rmtree(staging_root, ignore_errors=True)


def submit_backbone(
    run_dir: Path, *, name: str | None, out: Path, submitter: str | None, profile: Path | None = None,
    model_id: str | None = None, revision: str | None = None, qk_norm: str | None = None,
    display_name: str | None = None, force: bool = False,
) -> Submitted:  # fmt: skip
    """A measured backbone entry from one run folder (with ``sink_strength``) and an optional profile.

    Raises:
        MissingOptions: every option still needed (``name`` or ``submitter`` None, a model id or revision or the
            QK-norm class the run cannot tell), at once.
    """
    run = read_run(Path(run_dir), "backbone")
    require_tasks(run, (SINK_TASK,), "backbone")
    model, needed = model_of(run, model_id=model_id, revision=revision, option="model")
    qk_class = qk_norm_of(model, run, qk_norm)
    _check_options({"name": name, "submitter": submitter}, needed, qk_class)
    fields = {
        "schema_version": SCHEMA_VERSION, "kind": "backbone", "provenance": "measured",
        "model": _model_ref(model, display_name), "qk_norm": qk_class, "submitter": submitter,
    }  # fmt: skip

    def copy(folder: Path) -> list[dict[str, str]]:
        return _copy_run(run, model, folder, "") + _copy_profile(profile, model, folder)

    return _stage_and_install(Path(out), name, fields, copy, force=force)


def submit_pair(
    reference_dir: Path, vlm_dir: Path, *, name: str | None, out: Path, submitter: str | None,
    vl_recipe: str | None,
    profile: Path | None = None, reference_id: str | None = None, reference_revision: str | None = None,
    vlm_id: str | None = None, vlm_revision: str | None = None, qk_norm: str | None = None, force: bool = False,
    testbed: bool = False,
) -> Submitted:  # fmt: skip
    """A measured pair entry from the reference LLM's run folder, the VLM-LM's run folder and an optional profile.

    ``testbed`` marks a pair made by sinkbench's VL testbed: it needs only S and ``ifeval_strict``, may use
    ``--limit``, and is shown apart from the other pairs and left out of their fits.

    Raises:
        MissingOptions: every option still needed (as :func:`submit_backbone`, and ``vl_recipe``), at once.
    """
    reference, vlm = read_run(Path(reference_dir), "reference"), read_run(Path(vlm_dir), "VLM-LM")
    strict = (IFEVAL_TASK,) if testbed else FORMAT_TASKS
    require_tasks(reference, (SINK_TASK, *strict), "reference")
    require_tasks(vlm, strict, "VLM-LM")
    reference_model, reference_needs = model_of(
        reference, model_id=reference_id, revision=reference_revision, option="reference"
    )
    vlm_model, vlm_needs = model_of(vlm, model_id=vlm_id, revision=vlm_revision, option="vlm")
    qk_class = qk_norm_of(reference_model, reference, qk_norm)
    _check_options(
        {"name": name, "submitter": submitter, "vl_recipe": vl_recipe},
        reference_needs + vlm_needs,
        qk_class,
    )
    fields = {
        "schema_version": SCHEMA_VERSION, "kind": "pair", "provenance": "measured",
        "vlm": _model_ref(vlm_model), "reference_llm": _model_ref(reference_model),
        "qk_norm": qk_class, "vl_recipe": vl_recipe, "submitter": submitter,
        **({"testbed": True} if testbed else {}),
    }  # fmt: skip

    def copy(folder: Path) -> list[dict[str, str]]:
        records = _copy_run(reference, reference_model, folder / "reference", "reference/")
        records += _copy_run(vlm, vlm_model, folder / "vlm", "vlm/")
        return records + _copy_profile(profile, reference_model, folder)

    return _stage_and_install(Path(out), name, fields, copy, force=force)
