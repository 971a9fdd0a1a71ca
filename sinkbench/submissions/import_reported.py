"""Create ``reported`` pair entries in bulk from a CSV of published numbers.

One CSV row per pair and task, columns ``vlm,reference_llm,qk_norm,sink_strength,task,delta`` and optionally
``reference_score,vlm_score`` (points), ``table`` (where the row's numbers are printed), ``sink_strength_table``
and ``derived`` (``;``-separated names of values computed from published ones). Each entry is built as
:class:`~sinkbench.submissions.schema.PairMetadata` and checked by the gate in a staging folder (a problem names
its CSV line and column); only if all pass are they moved into place (over an existing entry only with ``force``).
"""

from __future__ import annotations

import csv
import io
import itertools
import math
import os
import re
import shutil
import tempfile
from collections import defaultdict
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from sinkbench.publish import exclusive
from sinkbench.safe_io import UnsafeFileError, check_size, install_directory, scratch_folder
from sinkbench.submissions import SubmissionsInvalid, load_entry, load_submissions
from sinkbench.submissions.entry import Entry, Problem
from sinkbench.submissions.gate import refuse_entry_folder, run_rules
from sinkbench.submissions.metadata_rules import rule_no_duplicates
from sinkbench.submissions.read_entry import validation_problems
from sinkbench.submissions.schema import ENTRY_NAME_PATTERN, SCHEMA_VERSION, PairMetadata, metadata_json

REQUIRED_COLUMNS = ("vlm", "reference_llm", "qk_norm", "sink_strength", "task", "delta")
OPTIONAL_COLUMNS = ("reference_score", "vlm_score", "table", "sink_strength_table", "derived")
NUMBER_COLUMNS = ("sink_strength", "delta", "reference_score", "vlm_score")
#: Cap on the CSV size, checked before reading.
CSV_SIZE_LIMIT = 5_000_000
NOT_STATED = "not stated"
_LINE = "_line"
_ENTRY_NAME = re.compile(ENTRY_NAME_PATTERN)
#: The CSV column behind each field of a staged ``metadata.json`` outside ``reported.tasks``.
_COLUMN_OF_FIELD = {
    "vlm.id": "vlm",
    "reference_llm.id": "reference_llm",
    "reported.sink_strength.value": "sink_strength",
    "reported.sink_strength.table": "sink_strength_table",
    "reported.tasks": "task",
}

#: The command-line option behind each field of a staged ``metadata.json`` that no CSV cell gives.
_OPTION_OF_FIELD = {"citation.source": "--source", "citation.url": "--url", "submitter": "--submitter"}


class ImportFailed(SubmissionsInvalid):
    """Raised when the CSV or an entry built from it is invalid, or would overwrite; nothing is written."""


def entry_name(vlm_id: str) -> str:
    """Entry folder name for a VLM id: the part after the last ``/``, lower-cased, unsafe characters -> ``-``."""
    return re.sub(r"[^a-z0-9._-]+", "-", vlm_id.rsplit("/", 1)[-1].lower()).strip("-.")


#: A CSV number: ASCII digits only, an optional sign, decimal point and exponent (no ``_``, no other scripts).
_DECIMAL = re.compile(r"[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d{1,3})?", re.ASCII)


def _number(text: str) -> float | None:
    """A finite number written in ASCII decimal, None for an empty cell; ValueError otherwise."""
    if text == "":
        return None
    if not _DECIMAL.fullmatch(text):
        raise ValueError("not an ASCII decimal number")
    value = float(text)
    if not math.isfinite(value):
        raise ValueError("not a finite number")
    return value


def _parse_row(row: dict[str, str], line: int, shown: str) -> tuple[dict[str, Any], list[Problem]]:
    """Strip the cells and parse the number columns; a cell that is not a finite number is a problem."""
    parsed: dict[str, Any] = {key: value.strip() for key, value in row.items()}
    problems = []
    for column in NUMBER_COLUMNS:
        try:
            parsed[column] = _number(parsed.get(column, ""))
        except ValueError:
            problems.append(
                Problem(
                    shown,
                    f"line {line}: {column}",
                    f"{parsed[column]!r} is not a finite ASCII decimal number.",
                    "write a decimal number such as -10.3 (points; S in nats), with ASCII digits only",
                )
            )
    return parsed, problems


#: What the csv module's errors mean, in the words of the fix.
_CSV_ERRORS = {
    "unexpected end of data": "a quoted cell that starts here is never closed",
    "field larger than field limit": f"a cell is longer than {csv.field_size_limit():,} characters",
}


def _records(text: str, shown: str) -> Iterator[tuple[int, list[str]] | Problem]:
    """Yield ``(line where the record starts, cells)`` per non-blank record, or a problem where the CSV stops
    being readable (bad quoting, an oversized cell)."""
    reader = csv.reader(io.StringIO(text), strict=True)
    while True:
        line = reader.line_num + 1
        try:
            cells = next(reader)
        except StopIteration:
            return
        except csv.Error as error:
            reason = next((why for key, why in _CSV_ERRORS.items() if str(error).startswith(key)), str(error))
            yield Problem(
                shown,
                f"line {line}",
                f"is not readable CSV: {reason}; nothing after it was read.",
                "close every quoted cell (a quote inside a quoted cell is written twice), keep cells short",
            )
            return
        if cells:
            yield line, cells


def _csv_text(path: Path, shown: str) -> str | Problem:
    """The text of the CSV file (size-checked, UTF-8 with or without a BOM), or the problem reading it."""
    try:
        check_size(path, CSV_SIZE_LIMIT)
        return path.read_bytes().decode("utf-8-sig")
    except UnsafeFileError as error:
        return Problem(shown, "", error.message, error.fix)
    except UnicodeDecodeError as error:
        return Problem(shown, "", f"is not UTF-8 (byte {error.start}).", "save the CSV file as UTF-8")
    except OSError as error:
        return Problem(
            shown, "", f"cannot be read: {error.strerror}.", "make the file readable (e.g. chmod a+r)"
        )


def _rows(path: Path, shown: str) -> Iterator[tuple[int, dict[str, Any]] | Problem]:
    """Yield ``(line, row with parsed numbers)`` per valid row, or the problems of a file or row."""
    text = _csv_text(path, shown)
    records = _records(text, shown) if isinstance(text, str) else iter([text])
    first = next(records, None)
    if first is None or isinstance(first, Problem):
        yield first or Problem(shown, "", "has no rows.", "add a header and one row per pair and task")
        return
    header_line, header = first
    problem = _header_problem(header, shown, header_line)
    if problem is not None:
        yield problem
        return
    for item in records:
        if isinstance(item, Problem):
            yield item
            continue
        line, cells = item
        if len(cells) > len(header):
            yield Problem(
                shown,
                f"line {line}",
                f"has {len(cells)} cells but the header names {len(header)} columns.",
                "remove the extra cells, or quote a cell that holds a comma",
            )
            continue
        parsed, problems = _parse_row(dict(itertools.zip_longest(header, cells, fillvalue="")), line, shown)
        yield from problems or [(line, parsed)]


def _header_problem(header: Sequence[str], shown: str, line: int) -> Problem | None:
    """A problem with the header row (missing, unknown or repeated columns), or None."""
    columns = set(header)
    missing = set(REQUIRED_COLUMNS) - columns
    unknown = columns - set(REQUIRED_COLUMNS) - set(OPTIONAL_COLUMNS)
    repeated = sorted({column for column in header if header.count(column) > 1})
    if not (missing or unknown or repeated):
        return None
    return Problem(
        shown,
        f"line {line}: header",
        f"missing columns {sorted(missing)}, unknown columns {sorted(unknown)}, repeated columns {repeated}.",
        f"use columns {', '.join(REQUIRED_COLUMNS)} and optionally {', '.join(OPTIONAL_COLUMNS)}, each once",
    )


def _task_item(row: dict[str, Any]) -> dict[str, Any]:
    item = {"task": row["task"], "delta": row["delta"], "table": row.get("table") or NOT_STATED}
    for column in ("reference_score", "vlm_score"):
        if row[column] is not None:
            item[column] = row[column]
    derived = [name for name in (row.get("derived") or "").split(";") if name.strip()]
    if derived:
        item["derived"] = [name.strip() for name in derived]
    return item


def build_metadata(
    rows: Sequence[dict[str, Any]], *, source: str, url: str | None, submitter: str
) -> PairMetadata:
    """The metadata of one reported pair from its CSV rows (one per task).

    Raises:
        ValidationError: a value does not fit the schema (the errors name the fields).
    """
    first = rows[0]
    citation = {"source": source, **({"url": url} if url else {})}
    return PairMetadata.model_validate({
        "schema_version": SCHEMA_VERSION,
        "kind": "pair",
        "provenance": "reported",
        "vlm": {"id": first["vlm"], "revision": None},
        "reference_llm": {"id": first["reference_llm"], "revision": None},
        "qk_norm": first["qk_norm"],
        "vl_recipe": NOT_STATED,
        "submitter": submitter,
        "citation": citation,
        "reported": {
            "sink_strength": {
                "value": first["sink_strength"],
                "table": first.get("sink_strength_table") or NOT_STATED,
            },
            "tasks": [_task_item(row) for row in rows],
        },
    })  # fmt: skip


def _group(path: Path, shown: str) -> tuple[dict[str, list[dict[str, Any]]], list[Problem]]:
    """Rows grouped by VLM id, with problems for unreadable cells and conflicting or repeated rows."""
    groups: dict[str, list[dict[str, Any]]] = defaultdict(list)
    problems: list[Problem] = []
    for item in _rows(path, shown):
        if isinstance(item, Problem):
            problems.append(item)
            continue
        line, row = item
        rows = groups[row["vlm"]]
        for column in ("reference_llm", "qk_norm", "sink_strength"):
            if rows and row[column] != rows[0][column]:
                problems.append(
                    Problem(
                        shown,
                        f"line {line}: {column}",
                        f"{row[column]!r} conflicts with "
                        f"{rows[0][column]!r} in an earlier row of {row['vlm']}.",
                        "one pair has one reference LLM, QK class and S",
                    )
                )
        if any(other["task"] == row["task"] for other in rows):
            problems.append(
                Problem(
                    shown,
                    f"line {line}: task",
                    f"{row['task']} of {row['vlm']} appears twice.",
                    "keep one row per pair and task",
                )
            )
        rows.append({**row, _LINE: line})
    return groups, problems


def _as_csv_problem(problem: Problem, rows: Sequence[dict[str, Any]], shown: str) -> Problem:
    """A problem found in a staged entry, told as the CSV file, line and column that caused it (the field in
    pydantic or rule spelling), or as the command-line option, for the fields that come from one."""
    field = problem.field
    option = _OPTION_OF_FIELD.get(field.split(".[")[0])
    if option is not None:
        return Problem(option, field, problem.message, problem.fix)
    parts = field.split(".")
    line, column = rows[0][_LINE], _COLUMN_OF_FIELD.get(field, field or "row")
    if parts[:2] == ["reported", "tasks"] and len(parts) >= 3:
        key = parts[2]
        row = rows[int(key)] if key.isdigit() and int(key) < len(rows) else None
        row = row or next((item for item in rows if item["task"] == key), rows[0])
        line, column = row[_LINE], parts[3] if len(parts) > 3 else "task"
    return Problem(shown, f"line {line}: {column}", problem.message, problem.fix)


def _stage(
    groups: dict[str, list[dict]], staging: Path, out_dir: Path, shown: str, **meta: Any
) -> tuple[list[Entry], list[Problem]]:
    """Build each entry's metadata, write it into ``staging/pairs/<name>`` and load the entry through the gate;
    return (entries, problems), the problems naming the CSV file (``shown``), line and column that caused them."""
    entries, problems, names = [], [], {}
    for vlm, rows in groups.items():
        name = entry_name(vlm)
        if not _ENTRY_NAME.fullmatch(name) or name in names:
            reason = f"is also the name of {names[name]!r}" if name in names else "is not a valid entry name"
            problems.append(
                Problem(
                    shown,
                    f"line {rows[0][_LINE]}: vlm",
                    f"gives the entry name {name!r}, which {reason}.",
                    "use distinct Hub ids of the form org/model-name",
                )
            )
            continue
        names[name] = vlm
        try:
            metadata = build_metadata(rows, **meta)
        except ValidationError as error:
            found = validation_problems(f"{out_dir.name}/pairs/{name}/metadata.json", error)
        else:
            folder = staging / "pairs" / name
            folder.mkdir(parents=True)
            (folder / "metadata.json").write_text(metadata_json(metadata), encoding="utf-8")
            entry, found = load_entry(folder, f"{out_dir.name}/pairs/{name}")
            if entry is not None:
                entries.append(entry)
                found = run_rules([entry])
        problems.extend(_as_csv_problem(problem, rows, shown) for problem in found)
    return entries, problems


def _measured(folder: Path) -> bool:
    """Whether an entry folder holds more than a reported entry's ``metadata.json`` (results files)."""
    return (
        folder.is_dir()
        and not folder.is_symlink()
        and any(p.name != "metadata.json" for p in folder.iterdir())
    )


def _conflicts(entries: Sequence[Entry], out_dir: Path, *, force: bool) -> list[Problem]:
    """Existing entries that would be overwritten (without ``force``; a measured one, which holds more than its
    ``metadata.json``, even with it) and duplicates of existing VLMs."""
    names = {entry.name for entry in entries}
    problems = []
    for entry in entries:
        folder = out_dir / "pairs" / entry.name
        if not os.path.lexists(folder):
            continue
        if not force:
            problems.append(
                Problem(
                    entry.directory, "", "already exists.", "pass --force to replace it, or remove it first"
                )
            )
        elif _measured(folder):
            problems.append(
                Problem(
                    entry.directory,
                    "",
                    "is a measured entry (it holds results files, not only metadata.json); reported numbers never "
                    "replace measured ones.",
                    "name the VLM's entry differently, or remove the measured entry yourself first",
                )
            )
    existing = [entry for entry in load_submissions(out_dir).entries if entry.name not in names]
    problems.extend(rule_no_duplicates([*existing, *entries]))
    return problems


def import_reported(
    csv_path: Path,
    *,
    source: str,
    out_dir: Path,
    url: str | None = None,
    submitter: str = "sinkbench import-reported",
    force: bool = False,
) -> list[Path]:
    """Create one reported pair entry per VLM of ``csv_path`` under ``out_dir/pairs/``.

    Returns:
        The entry folders written.

    Raises:
        ImportFailed: any problem in the CSV or the entries built from it, or an existing entry
            without ``force``; nothing is written then.
        sinkbench.errors.UserError: ``out_dir`` is an entry, a folder of one, or a kind folder.
    """
    refuse_entry_folder(out_dir)
    groups, problems = _group(csv_path, csv_path.name or str(csv_path))
    # Nothing goes into out_dir until every entry passes.
    with tempfile.TemporaryDirectory(prefix="sinkbench-import-") as built:
        entries, found = _stage(
            groups, Path(built), out_dir, csv_path.name, source=source, url=url, submitter=submitter
        )
        problems += found
        if problems or not entries:
            raise ImportFailed(
                problems or [Problem(csv_path.name, "", "has no rows.", "add one row per pair and task")]
            )
        pairs_dir = out_dir / "pairs"
        out_dir.mkdir(parents=True, exist_ok=True)
        with exclusive(pairs_dir):  # one import at a time; removes what a killed import left in out_dir
            conflicts = _conflicts(entries, out_dir, force=force)
            if conflicts:
                raise ImportFailed(conflicts)
            staging = scratch_folder(pairs_dir)  # beside pairs/: the same file system as the targets
            try:
                targets = [pairs_dir / entry.name for entry in entries]
                for entry, target in zip(entries, targets, strict=True):
                    shutil.copytree(Path(built) / "pairs" / entry.name, staging / entry.name)
                    install_directory(staging / entry.name, target, replace=force)
                return targets
            finally:
                shutil.rmtree(staging, ignore_errors=True)
