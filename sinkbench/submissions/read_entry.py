"""Reading one entry folder into the entry model: every file checked (size, links, strict JSON, schema) and
every problem collected, capped per file so a broken file does not flood the report."""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import re
import stat
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ValidationError

from sinkbench.safe_io import UnsafeFileError, check_size, json_strings, read_json, read_jsonl
from sinkbench.submissions.catalogue import IFEVAL_TASK, SINK_TASK, TASKS
from sinkbench.submissions.entry import (
    BACKBONE_SIDE,
    PAIR_SIDES,
    Entry,
    EntryFile,
    IfevalOutcome,
    Problem,
    ResultsFile,
    Side,
)
from sinkbench.submissions.schema import (
    METADATA_ADAPTER,
    SIZE_LIMITS,
    IfevalSample,
    LmEvalResults,
    SinkProfile,
    invisible_character,
)

_ENTRY_FILES = frozenset({"metadata.json", "sink_profile.json"})
_RESULTS_FILE = re.compile(r"results[A-Za-z0-9._-]*\.json")
_SAMPLES_FILE = re.compile(r"samples_[A-Za-z0-9._-]+\.jsonl")
_SAMPLE_TASKS = sorted([*TASKS, SINK_TASK], key=len, reverse=True)
_MAX_PROBLEMS_PER_FILE = 10
#: Bounds on a whole entry, beyond each file's own cap, so that no entry makes the build expensive: its files and
#: bytes (each file is copied into the site) and its lm-eval metrics (each one is a row of the entry's page).
MAX_ENTRY_FILES = 100
MAX_ENTRY_BYTES = 500_000_000
MAX_ENTRY_METRICS = 10_000
_FIX_BY_ERROR_TYPE = {
    "missing": "add the field",
    "extra_forbidden": "remove the field (the allowed fields are listed in submissions/README.md)",
    "string_pattern_mismatch": "use only the characters the pattern allows",
    "string_too_long": "shorten the text",
    "literal_error": "use one of the allowed values",
    **dict.fromkeys(("union_tag_invalid", "union_tag_not_found"), "set `kind` to 'pair' or 'backbone'"),
    **dict.fromkeys(("greater_than_equal", "less_than_equal"), "use a value within the allowed range"),
    "value_error": "change the value as the message says",
}
_FIX_DEFAULT = "give the field the type and shape documented in submissions/README.md"
_COPY_SAMPLES = "copy the samples file unmodified from lm-eval --log_samples"


@dataclasses.dataclass
class _Collector:
    """Collects problems for one file, capped so a broken file does not flood the report."""

    problems: list[Problem] = dataclasses.field(default_factory=list)
    files: list[Path] = dataclasses.field(default_factory=list)

    def add(self, file: str, field: str, message: str, fix: str) -> None:
        same_file = sum(problem.file == file for problem in self.problems)
        if same_file < _MAX_PROBLEMS_PER_FILE:
            self.problems.append(Problem(file, field, message, fix))

    def add_validation_error(self, file: str, error: ValidationError, prefix: str = "") -> None:
        for item in error.errors(include_url=False):
            loc = [str(part) for part in item["loc"]]
            if loc and loc[0] in {"pair", "backbone"}:
                loc = loc[1:]
            got = repr(item.get("input"))[:80] if item["type"] != "missing" else "nothing"
            fix = _FIX_BY_ERROR_TYPE.get(item["type"], _FIX_DEFAULT)
            self.add(file, prefix + ".".join(loc), f"{item['msg']} (got {got}).", fix)


def validation_problems(file: str, error: ValidationError) -> list[Problem]:
    """The problems of a pydantic validation error, each naming ``file``, the field, the value and the fix (as the gate
    reports them), capped per file like every other report."""
    out = _Collector()
    out.add_validation_error(file, error)
    return out.problems


#: In ``json.dumps`` output: an escaped C0 control other than newline, tab and carriage return, or DEL. A literal
#: backslash before such letters matches too; that only costs the exact walk below.
_ESCAPED_CONTROL = re.compile(r"\\u00[01][0-9a-fA-F]|\\[bf]|\x7f")


def _hidden_character(data: Any, shown: str, out: _Collector) -> bool:
    """Report the first key or text of a parsed file that holds an invisible or control character (newlines, tabs
    and carriage returns aside: chat templates and prompts hold them); True if there is one."""
    try:
        serialised = json.dumps(data, ensure_ascii=False)
    except (RecursionError, ValueError):  # too deep for the C encoder: walk instead
        serialised = "\u00ff"
    if serialised.isascii() and not _ESCAPED_CONTROL.search(serialised):
        return False  # the common case, checked at C speed: no string of the file can hold such a character
    for field, text in json_strings(data):
        found = invisible_character(text.replace("\r", "\n"), multiline=True)
        if found:
            out.add(
                shown,
                field[:200],
                f"holds the invisible or control character {found}.",
                "submit the file as lm-eval or sinkbench wrote it (such characters hide or reorder text)",
            )
            return True
    return False


def _parse(model: type[BaseModel] | None, path: Path, shown: str, kind: str, out: _Collector) -> Any:
    """``path`` validated as ``model`` (None: any JSON object, as ``config.json``), or None with its problems."""
    try:
        data = read_json(path, SIZE_LIMITS[kind])
        if model is None and not isinstance(data, dict):
            out.add(shown, "", "must be a JSON object.", "copy config.json from the model folder unmodified")
        elif not _hidden_character(data, shown, out):
            return data if model is None else model.model_validate(data)
    except UnsafeFileError as error:
        out.add(shown, "", error.message, error.fix)
    except ValidationError as error:
        out.add_validation_error(shown, error)
    return None


def _outcome(sample: IfevalSample, shown: str, number: int, out: _Collector) -> IfevalOutcome | None:
    ids, flags = sample.doc.instruction_id_list, sample.inst_level_strict_acc
    if len(ids) != len(flags):
        out.add(
            shown,
            f"line {number}: inst_level_strict_acc",
            f"has {len(flags)} values for {len(ids)} instructions.",
            _COPY_SAMPLES,
        )
        return None
    if sample.prompt_level_strict_acc != all(flags):
        out.add(
            shown,
            f"line {number}: prompt_level_strict_acc",
            "disagrees with inst_level_strict_acc.",
            _COPY_SAMPLES,
        )
        return None
    failed_ids = tuple(ident for ident, ok in zip(ids, flags, strict=True) if not ok)
    return IfevalOutcome(
        str(sample.doc.key),
        sample.prompt_level_strict_acc,
        frozenset(ident.split(":")[0] for ident in failed_ids),
        failed_ids,
        sample.doc.prompt,
        next(iter(sample.filtered_resps), None),
    )


def _ifeval_outcomes(path: Path, shown: str, out: _Collector) -> tuple[IfevalOutcome, ...] | None:
    outcomes: dict[str, IfevalOutcome] = {}
    before = len(out.problems)
    try:
        for number, raw in read_jsonl(path, SIZE_LIMITS["samples"]):
            try:
                outcome = _outcome(IfevalSample.model_validate(raw), shown, number, out)
            except ValidationError as error:
                out.add_validation_error(shown, error, prefix=f"line {number}: ")
                continue
            if outcome is not None and outcome.key in outcomes:
                out.add(
                    shown,
                    f"line {number}: doc.key",
                    f"prompt key {outcome.key} appears twice.",
                    "keep one line per prompt (do not concatenate two runs)",
                )
            elif outcome is not None:
                outcomes[outcome.key] = outcome
    except UnsafeFileError as error:
        out.add(shown, "", error.message, error.fix)
    return tuple(outcomes.values()) if len(out.problems) == before else None


def _sample_task(name: str) -> str | None:
    """The task of a ``samples_<task>_<date>.jsonl`` file name, or None."""
    if not _SAMPLES_FILE.fullmatch(name):
        return None
    return next((task for task in _SAMPLE_TASKS if name.startswith(f"samples_{task}_")), None)


def _items(folder: Path, shown: str, out: _Collector) -> list[Path]:
    """The items of ``folder``, sorted; none, and a problem, when it cannot be listed or searched."""
    try:
        items = sorted(folder.iterdir())
        for path in items:
            path.lstat()
    except OSError as error:
        out.add(
            shown, "", f"cannot be listed: {error.strerror}.", "make the folder readable (e.g. chmod a+rx)"
        )
        return []
    return items


def _load_side(role: str, folder: Path, shown: str, out: _Collector, skip: frozenset[str]) -> Side:
    """Load the results, IFEval samples and config of one side folder, ignoring the names in ``skip``."""
    results, samples_path, ifeval, config = [], None, None, None
    for path in _items(folder, shown, out):
        name, file = path.name, f"{shown}/{path.name}"
        task = _sample_task(name)
        if name in skip:
            continue
        if path.is_symlink() or not path.is_file():
            out.add(
                file,
                "",
                "is a link or a folder where a plain file was expected.",
                "replace it by the file itself or remove it",
            )
            continue
        out.files.append(path)
        if _RESULTS_FILE.fullmatch(name):
            parsed = _parse(LmEvalResults, path, file, "results", out)
            if parsed is not None:
                results.append(ResultsFile(file, parsed))
        elif name == "config.json":
            config = _parse(None, path, file, "config", out)
        elif task == IFEVAL_TASK and samples_path is None:
            samples_path, ifeval = file, _ifeval_outcomes(path, file, out)
        elif task == IFEVAL_TASK:
            out.add(
                file,
                "",
                f"is a second {IFEVAL_TASK} samples file (after {samples_path}).",
                "keep the samples file of the run whose results you submit",
            )
        elif task is not None:
            _size_only(path, file, out)
        else:
            out.add(
                file,
                "",
                "is not a file this layout expects.",
                "keep only results_*.json, samples_<task>_*.jsonl (one per task) and config.json",
            )
    return Side(role, shown, tuple(results), samples_path, ifeval, config)


def _size_only(path: Path, shown: str, out: _Collector) -> None:
    """Check a file that is published but not parsed: its size, and that it can be read (the site copies it)."""
    try:
        check_size(path, SIZE_LIMITS["samples"])
        with path.open("rb"):
            pass
    except UnsafeFileError as error:
        out.add(shown, "", error.message, error.fix)
    except OSError as error:
        out.add(shown, "", f"cannot be read: {error.strerror}.", "make the file readable (e.g. chmod a+r)")


def _load_sides(kind: str, folder: Path, shown: str, out: _Collector) -> dict[str, Side]:
    """A pair's ``reference/`` and ``vlm/`` folders, or a backbone's own files (no side when it has none)."""
    if kind != "pair":
        backbone = _load_side(BACKBONE_SIDE, folder, shown, out, _ENTRY_FILES)
        has_files = backbone.results or backbone.ifeval_samples_path or backbone.model_config
        return {BACKBONE_SIDE: backbone} if has_files else {}
    sides = {}
    for path in _items(folder, shown, out):
        if path.name in PAIR_SIDES and path.is_dir() and not path.is_symlink():
            sides[path.name] = _load_side(path.name, path, f"{shown}/{path.name}", out, frozenset())
        elif path.name in PAIR_SIDES:
            what = "a link" if path.is_symlink() else "not a folder"
            out.add(
                f"{shown}/{path.name}",
                "",
                f"is {what}; a pair's {path.name}/ is a plain folder holding that side's lm-eval run.",
                f"replace it by the folder of the {path.name} side's results and samples files",
            )
        elif path.name not in _ENTRY_FILES:
            out.add(
                f"{shown}/{path.name}",
                "",
                "is not part of a pair entry.",
                "a pair folder holds metadata.json, sink_profile.json, reference/ and vlm/ only",
            )
    return sides


def _entry_size(folder: Path) -> tuple[int, int]:
    """Regular files and their bytes in ``folder`` and its plain subfolders, as ``lstat`` sees them."""
    files = size = 0
    with contextlib.suppress(OSError):
        subfolders = [item.path for item in os.scandir(folder) if item.is_dir(follow_symlinks=False)]
        for directory in [folder, *subfolders]:
            for item in os.scandir(directory):
                info = item.stat(follow_symlinks=False)
                if stat.S_ISREG(info.st_mode):
                    files, size = files + 1, size + info.st_size
    return files, size


def _budget_problem(folder: Path, shown: str) -> Problem | None:
    """A problem when the entry holds more files or bytes than an entry may (checked before anything is parsed)."""
    files, size = _entry_size(folder)
    if files <= MAX_ENTRY_FILES and size <= MAX_ENTRY_BYTES:
        return None
    return Problem(
        shown,
        "",
        f"holds {files:,} files of {size:,} bytes in all; an entry may hold {MAX_ENTRY_FILES} files and "
        f"{MAX_ENTRY_BYTES:,} bytes.",
        "submit only the files the layout lists (leave out samples files of other tasks)",
    )


def _metrics_problem(sides: dict[str, Side], shown: str) -> Problem | None:
    """A problem when the entry's results files hold more metrics than an entry's page may list."""
    count = sum(
        len(metrics)
        for side in sides.values()
        for item in side.results
        for metrics in item.data.results.values()
    )
    if count <= MAX_ENTRY_METRICS:
        return None
    return Problem(
        shown,
        "results",
        f"the results files hold {count:,} metrics in all; an entry may hold {MAX_ENTRY_METRICS:,}.",
        "submit the results files of the tasks this leaderboard shows (see submissions/README.md)",
    )


def load_entry(folder: Path, shown: str) -> tuple[Entry | None, list[Problem]]:
    """Load one entry folder (``shown`` is its path in messages).

    Returns:
        The entry, or None when a file could not be read or parsed, and the problems found while loading.
    """
    out = _Collector()
    meta_file = f"{shown}/metadata.json"
    try:
        metadata = METADATA_ADAPTER.validate_python(
            read_json(folder / "metadata.json", SIZE_LIMITS["metadata"])
        )
    except UnsafeFileError as error:
        return None, [Problem(meta_file, "", error.message, error.fix)]
    except ValidationError as error:
        out.add_validation_error(meta_file, error)
        return None, out.problems
    too_big = _budget_problem(folder, shown)
    if too_big is not None:
        return None, [too_big]
    out.files.append(folder / "metadata.json")
    sides = _load_sides(metadata.kind, folder, shown, out)
    profile = None
    if os.path.lexists(folder / "sink_profile.json"):
        profile = _parse(
            SinkProfile, folder / "sink_profile.json", f"{shown}/sink_profile.json", "sink_profile", out
        )
        out.files.append(folder / "sink_profile.json")
    too_many = _metrics_problem(sides, shown)
    if out.problems or too_many is not None:
        return None, out.problems or [too_many]
    return Entry(folder.name, shown, metadata, sides, profile, _entry_files(folder, out.files)), []


def _entry_files(folder: Path, paths: Iterable[Path]) -> tuple[EntryFile, ...]:
    """The loaded files of an entry, by their path inside it (folder by folder), with their sizes."""
    found = [(path.relative_to(folder).as_posix(), path) for path in paths]
    return tuple(
        EntryFile(relative, path, path.lstat().st_size)
        for relative, path in sorted(found, key=lambda item: item[0].split("/"))
    )
