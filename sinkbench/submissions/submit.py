"""``sinkbench submit``: an entry folder built from lm-eval output folders, checked by the gate, written whole.

It reads the ``results_*.json`` and ``samples_*.jsonl`` that ``lm_eval --output_path RUN --log_samples`` wrote
(any depth below RUN), fills ``metadata.json`` from what they say (model ids and revisions, the QK-norm class
from the model's ``config.json`` or GGUF header where the run used a local folder, the model of an extracted
VLM-LM from its ``provenance.json``, the embedded model and its GGUF's sha256 from sinkbench's GGUF cache folder),
and asks for what they cannot say, every missing option in one message. The metadata is built as the
schema's own model (:class:`~sinkbench.submissions.schema.PairMetadata` or ``BackboneMetadata``) and serialised from
it, so a bad option is refused by field before anything is written. Local paths are replaced by the model id or
``<local>`` and every change is recorded (:mod:`sinkbench.submissions.local_paths`). Nothing is written unless the
new entry passes every rule of the gate; an existing entry is replaced only when asked.
"""

from __future__ import annotations

import json
import re
import shutil
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from sinkbench.errors import UserError
from sinkbench.models import cached_gguf
from sinkbench.safe_io import UnsafeFileError, file_sha256, install_directory, read_json
from sinkbench.submissions.catalogue import FOLDER_OF_KIND, FORMAT_TASKS, IFEVAL_TASK, SINK_TASK
from sinkbench.submissions.entry import Entry
from sinkbench.submissions.gate import SubmissionsInvalid, load_entry, load_submissions, run_rules
from sinkbench.submissions.lm_eval_rules import detect_qk_norm
from sinkbench.submissions.local_paths import redact
from sinkbench.submissions.metadata_rules import rule_no_duplicates
from sinkbench.submissions.read_entry import validation_problems
from sinkbench.submissions.schema import (
    ENTRY_NAME_PATTERN,
    MODEL_ID_PATTERN,
    SCHEMA_VERSION,
    SIZE_LIMITS,
    BackboneMetadata,
    PairMetadata,
    metadata_json,
)

_HUB_ID = re.compile(MODEL_ID_PATTERN)
_ENTRY_NAME = re.compile(ENTRY_NAME_PATTERN)
_STAMP = re.compile(r"results_(.+)\.json")
_UNPINNED = {None, "", "main"}


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


#: The options every entry needs, and what each is.
_ENTRY_OPTIONS = {
    "name": Missing("--name NAME", "the entry folder's name, e.g. smollm2-135m-instruct"),
    "submitter": Missing("--submitter WHO", "your name or handle, shown on the board"),
    "vl_recipe": Missing(
        "--vl-recipe TEXT", "the VL training between the two models, e.g. 'SFT on LLaVA-665k'"
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
            for task in data.get("results", {}):
                if task not in groups:
                    found[task] = path
        return found

    @property
    def config(self) -> dict[str, Any]:
        """lm-eval's ``config`` block of the run (the same for every results file of one model)."""
        return next(iter(self.results.values())).get("config") or {}

    @property
    def model_args(self) -> dict[str, Any]:
        """The ``--model_args`` the run used, as a dict."""
        args = self.config.get("model_args")
        if isinstance(args, dict):
            return args
        return dict(item.split("=", 1) for item in str(args or "").split(",") if "=" in item)


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


def read_run(folder: Path, role: str) -> Run:
    """The results and samples files below ``folder``, each task in one results file.

    Raises:
        SubmitError: no results file, an unreadable one, or a task in two results files.
    """
    if not folder.is_dir():
        raise SubmitError(
            f"{role} run {folder} is not a folder; pass the --output_path folder of `sinkbench eval`"
        )
    results = {}
    for path in sorted(folder.rglob("results_*.json")):
        try:
            results[path] = read_json(path, SIZE_LIMITS["results"])
        except UnsafeFileError as error:
            raise SubmitError(f"{path}: {error.message} Fix: {error.fix}") from error
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
    return (
        (model, source.get("revision"))
        if isinstance(model, str) and _HUB_ID.fullmatch(model)
        else (None, None)
    )


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
    local = (
        Path(pretrained).expanduser()
        if pretrained.startswith(("/", "~", ".")) or Path(pretrained).is_dir()
        else None
    )
    if local is None and _HUB_ID.fullmatch(pretrained):
        recorded = args.get("revision") or run.config.get("model_revision")
        pinned = (
            revision
            or (recorded if recorded not in _UNPINNED else None)
            or run.config.get("model_sha")
            or None
        )
        unpinned = (
            f"the run in {run.folder} ran {pretrained} with no pinned revision: pass {_WHERE_REVISIONS_ARE}"
        )
        needed = [] if pinned else [Missing(f"--{option}-revision REV", unpinned)]
        return Model(model_id or pretrained, pinned, None), needed
    found_id, found_revision = _extracted_from(local) if local else (None, None)
    if local and not (found_id and found_revision):
        snapshot_id, commit = _hub_snapshot(local)
        found_id, found_revision = found_id or snapshot_id, found_revision or commit
    cache = cached_gguf(local) if local else None
    if cache:
        embedded = cache.embedded
        found_id = found_id or (embedded.upstream if embedded else None)
        found_revision = found_revision or f"sha256:{cache.sha256}"
    gguf = local / str(args["gguf_file"]) if local and args.get("gguf_file") else None
    pinned = (
        revision or found_revision or (f"sha256:{file_sha256(gguf)}" if gguf and gguf.is_file() else None)
    )
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
        missing.append(
            Missing(
                f"--{option}-revision REV",
                f"the local folder {pretrained!r} records no revision: pass {_WHERE_REVISIONS_ARE}",
            )
        )
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
    missing = [_ENTRY_OPTIONS[name] for name, value in given.items() if not value]
    missing += needed
    if qk_norm is None:
        missing.append(
            Missing(
                "--qk-norm per-head|layerwise|none", "the QK-norm class cannot be read from the run's files"
            )
        )
    if missing:
        raise MissingOptions(missing)


def _copy_run(run: Run, model: Model, target: Path, shown: str) -> list[dict[str, str]]:
    """Copy the run's results (redacted) and samples files into ``target``; return the redaction records."""
    target.mkdir(parents=True, exist_ok=True)
    records = []
    for path, data in run.results.items():
        clean, changed = redact(data, model_id=model.id, file=f"{shown}{path.name}")
        (target / path.name).write_text(
            json.dumps(clean, indent=2, ensure_ascii=False) + "\n", encoding="utf-8"
        )
        records += [record.to_dict() for record in changed]
    for path in run.samples:
        shutil.copyfile(path, target / path.name)
    if model.local and (model.local / "config.json").is_file():
        config = read_json(model.local / "config.json", SIZE_LIMITS["config"])
        clean, changed = redact(config, model_id=model.id, file=f"{shown}config.json")
        (target / "config.json").write_text(json.dumps(clean, indent=2) + "\n", encoding="utf-8")
        records += [record.to_dict() for record in changed]
    return records


def _copy_profile(profile: Path | None, model: Model, folder: Path) -> list[dict[str, str]]:
    if profile is None:
        return []
    try:
        data = read_json(profile, SIZE_LIMITS["sink_profile"])
    except UnsafeFileError as error:
        raise SubmitError(f"{profile}: {error.message} Fix: {error.fix}") from error
    clean, changed = redact(data, model_id=model.id, file="sink_profile.json")
    if isinstance(clean.get("model"), dict) and clean["model"].get("source") in ("dir", "gguf"):
        clean["model"]["id"] = model.id
    (folder / "sink_profile.json").write_text(json.dumps(clean, indent=2) + "\n", encoding="utf-8")
    return [record.to_dict() for record in changed]


def _model_ref(model: Model, display_name: str | None) -> dict[str, Any]:
    return {
        "id": model.id,
        "revision": model.revision,
        **({"display_name": display_name} if display_name else {}),
    }


def _install(staging: Path, entry: Entry, out: Path, kind: str, *, force: bool) -> Path:
    """Check the staged entry against the gate and the existing entries, then move it into ``out``."""
    target = out / FOLDER_OF_KIND[kind] / entry.name
    if target.exists() and not force:
        raise SubmitError(f"{target} already exists; pass --force to replace it")
    existing = [e for e in load_submissions(out).entries if e.name != entry.name] if out.is_dir() else []
    problems = run_rules([entry]) + list(rule_no_duplicates([*existing, entry]))
    if problems:
        raise SubmissionsInvalid(problems)
    install_directory(staging, target, replace=force)
    return target


def _stage_and_install(out: Path, name: str, kind: str, fill: Any, *, force: bool) -> Submitted:
    """Make the entry in a staging folder beside ``out`` with ``fill(folder)``, load it, check it, install it.

    Raises:
        SubmissionsInvalid: the metadata ``fill`` builds does not validate (each problem names the field), or the
            entry breaks a rule of the gate.
    """
    if not _ENTRY_NAME.fullmatch(name) or ".." in name:
        raise SubmitError(
            f"--name {name!r} is not an entry name: use a-z, 0-9, '.', '_', '-' (e.g. qwen3-vl-8b)"
        )
    out.mkdir(parents=True, exist_ok=True)
    staging_root = Path(tempfile.mkdtemp(prefix=".sinkbench-submit-", dir=out))
    try:
        folder = staging_root / FOLDER_OF_KIND[kind] / name
        folder.mkdir(parents=True)
        shown = f"{out.name}/{FOLDER_OF_KIND[kind]}/{name}"
        try:
            redactions = fill(folder)
        except ValidationError as error:
            raise SubmissionsInvalid(validation_problems(f"{shown}/metadata.json", error)) from None
        files = sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file())
        entry, problems = load_entry(folder, shown)
        if entry is None:
            raise SubmissionsInvalid(problems)
        return Submitted(_install(folder, entry, out, kind, force=force), files, redactions)
    finally:
        shutil.rmtree(staging_root, ignore_errors=True)


def _write_metadata(
    folder: Path,
    schema: type[PairMetadata | BackboneMetadata],
    fields: dict[str, Any],
    redactions: list[dict[str, str]],
) -> int:
    """Build the entry's metadata as ``schema`` (with the redaction records, if any) and write it; the count of
    redactions.

    Raises:
        ValidationError: a field does not fit the schema.
    """
    metadata = schema.model_validate({**fields, **({"redactions": redactions} if redactions else {})})
    (folder / "metadata.json").write_text(metadata_json(metadata), encoding="utf-8")
    return len(redactions)


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

    def fill(folder: Path) -> int:
        records = _copy_run(run, model, folder, "") + _copy_profile(profile, model, folder)
        return _write_metadata(folder, BackboneMetadata, fields, records)

    return _stage_and_install(Path(out), name, "backbone", fill, force=force)


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
        "vlm": _model_ref(vlm_model, None), "reference_llm": _model_ref(reference_model, None),
        "qk_norm": qk_class, "vl_recipe": vl_recipe, "submitter": submitter,
        **({"testbed": True} if testbed else {}),
    }  # fmt: skip

    def fill(folder: Path) -> int:
        records = _copy_run(reference, reference_model, folder / "reference", "reference/")
        records += _copy_run(vlm, vlm_model, folder / "vlm", "vlm/")
        records += _copy_profile(profile, reference_model, folder)
        return _write_metadata(folder, PairMetadata, fields, records)

    return _stage_and_install(Path(out), name, "pair", fill, force=force)
