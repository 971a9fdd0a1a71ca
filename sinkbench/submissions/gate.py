"""The gate: find the submission entries, read each into the entry model (:mod:`.read_entry`), run every
validation rule (:data:`ENTRY_RULES`, :data:`CROSS_ENTRY_RULES`) and return the entries with every problem found.

Layout (documented in ``submissions/README.md``)::

    submissions/
      pairs/<name>/metadata.json            kind "pair"
        reference/results_*.json            measured only: the reference LLM's lm-eval results
        reference/samples_<task>_*.jsonl    optional lm-eval --log_samples output
        reference/config.json               optional Hugging Face config (QK-norm detection)
        vlm/...                             the same for the VLM-LM
        sink_profile.json                   optional `sinkbench screen --output` of the reference LLM
      backbones/<name>/metadata.json        kind "backbone"
        results_*.json, samples_*, config.json, sink_profile.json   measured only
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from sinkbench.errors import UserError
from sinkbench.submissions import lm_eval_rules as lm_eval
from sinkbench.submissions import metadata_rules as metadata
from sinkbench.submissions.catalogue import KIND_OF_FOLDER
from sinkbench.submissions.entry import Entry, Problem
from sinkbench.submissions.read_entry import load_entry
from sinkbench.submissions.schema import ENTRY_NAME_PATTERN, invisible_character

EntryRule = Callable[[Entry], Iterable[Problem]]
_ROOT_FILES = {"README.md"}
_ENTRY_NAME = re.compile(ENTRY_NAME_PATTERN)


class SubmissionsInvalid(UserError):
    """Raised when the submissions do not validate; ``problems`` lists every problem."""

    def __init__(self, problems: Sequence[Problem]) -> None:
        super().__init__(
            f"{len(problems)} problem(s); nothing was written (run `sinkbench validate` for details)"
        )
        self.problems = tuple(problems)


@dataclass(frozen=True)
class Submissions:
    """Loaded entries and every problem found; entries with unreadable files are left out."""

    entries: tuple[Entry, ...]
    problems: tuple[Problem, ...]
    checked: int

    @property
    def ok(self) -> bool:
        """True when no problem was found."""
        return not self.problems


def _listing(folder: Path, shown: str) -> tuple[list[Path], list[Problem]]:
    """The items of ``folder``, sorted, or a problem when it cannot be listed."""
    try:
        return sorted(folder.iterdir()), []
    except OSError as error:
        fix = "make the folder readable (e.g. chmod a+rx)"
        return [], [Problem(shown, "", f"cannot be listed: {error.strerror}.", fix)]


def _entry_folders(path: Path) -> tuple[Path, list[Path], list[Problem]]:
    """Resolve a command-line path (root, kind folder or entry folder) to (root, entry folders, problems)."""
    if os.path.lexists(path / "metadata.json"):
        return path.parent.parent, [path], []
    if path.name in KIND_OF_FOLDER and path.is_dir():
        return path.parent, *_listing(path, str(path))
    if not path.is_dir():
        problem = Problem(
            str(path),
            "",
            "is neither a submissions folder nor an entry folder.",
            "pass the submissions root (holding pairs/ and backbones/) or an entry folder",
        )
        return path, [], [problem]
    folders: list[Path] = []
    items, problems = _listing(path, path.name)
    for item in items:
        if item.name in KIND_OF_FOLDER and item.is_dir() and not item.is_symlink():
            found, trouble = _listing(item, f"{path.name}/{item.name}")
            folders.extend(found)
            problems.extend(trouble)
        elif item.name not in _ROOT_FILES and not item.name.startswith("."):
            problems.append(
                Problem(
                    f"{path.name}/{item.name}",
                    "",
                    "is not part of the submissions layout.",
                    "move entries under pairs/ or backbones/ (see submissions/README.md)",
                )
            )
    return path, folders, problems


def _name_problems(folder: Path, shown: str) -> list[Problem]:
    if folder.is_symlink() or not folder.is_dir():
        return [
            Problem(shown, "", "is not an entry folder.", "entries are plain folders; remove links and files")
        ]
    if not _ENTRY_NAME.fullmatch(folder.name) or ".." in folder.name:
        hidden = invisible_character(folder.name)
        why = f"holds the invisible character {hidden}" if hidden else f"does not match {ENTRY_NAME_PATTERN}"
        return [
            Problem(
                shown,
                "name",
                f"entry name {folder.name!r} is not allowed: it {why} (no '..' either).",
                "rename the folder, e.g. 'qwen3-vl-8b-instruct'",
            )
        ]
    try:
        (folder / "metadata.json").lstat()  # a link or a folder in its place is refused when it is read
    except (FileNotFoundError, NotADirectoryError):
        return [Problem(shown, "", "has no metadata.json.", "add metadata.json (see submissions/README.md)")]
    except OSError as error:
        return [
            Problem(
                shown, "", f"cannot be read: {error.strerror}.", "make the folder readable (e.g. chmod a+rx)"
            )
        ]
    return []


def load_submissions(paths: Path | str | Iterable[Path | str] = "submissions") -> Submissions:
    """Load and validate submissions roots and/or single entry folders: every rule runs on every entry whose files
    parse, the cross-entry rules (duplicates) on all of them together; nothing is written.

    Returns:
        The loaded entries (sorted by kind folder and name) and all problems found.
    """
    items = [paths] if isinstance(paths, (str, Path)) else list(paths)
    entries: list[Entry] = []
    problems: list[Problem] = []
    checked, seen = 0, set()
    for item in map(Path, items):
        root, folders, found = _entry_folders(item)
        problems.extend(found)
        for folder in folders:
            if folder.resolve() in seen:  # named twice (a root and one of its entries): loaded once
                continue
            seen.add(folder.resolve())
            checked += 1
            shown = f"{root.name}/{folder.relative_to(root).as_posix()}"
            name_problems = _name_problems(folder, shown)
            if name_problems:
                problems.extend(name_problems)
                continue
            entry, found = load_entry(folder, shown)
            problems.extend(found)
            if entry is not None:
                entries.append(entry)
    problems.extend(run_rules(entries))
    return Submissions(tuple(entries), tuple(problems), checked)


def load_valid_entries(root: Path | str) -> tuple[Entry, ...]:
    """Load and validate a submissions root; the entries when there is no problem.

    Raises:
        SubmissionsInvalid: any problem, all of them listed in ``problems``.
    """
    loaded = load_submissions(Path(root))
    if loaded.problems:
        raise SubmissionsInvalid(loaded.problems)
    return loaded.entries


def refuse_entry_folder(out: Path) -> None:
    """Refuse an ``--out`` that entries cannot go into: a kind folder (``pairs/``, ``backbones/``), an entry, or
    a folder of an entry (an entry goes into a submissions root, under its kind's folder).

    Raises:
        UserError: one line naming ``--out`` and what to pass instead.
    """
    if out.name in KIND_OF_FOLDER:
        raise UserError(
            f"--out {out} is the {out.name}/ folder of a submissions root; pass the root that holds it "
            f"({out.parent})"
        )
    for folder in (out, out.parent):
        if (folder / "metadata.json").is_file():
            raise UserError(
                f"--out {out} is inside the entry {folder}; pass the submissions root that holds pairs/ and "
                "backbones/"
            )


#: Every rule on one entry, in the order their problems are listed.
ENTRY_RULES: tuple[EntryRule, ...] = (
    metadata.rule_kind_matches_folder,
    metadata.rule_provenance_contents,
    metadata.rule_revisions_recorded,
    metadata.rule_pair_of_two_models,
    metadata.rule_required_tasks,
    lm_eval.rule_lm_eval_records_complete,
    lm_eval.rule_task_in_one_file,
    lm_eval.rule_no_limit,
    lm_eval.rule_lm_eval_version,
    lm_eval.rule_metrics_in_range,
    lm_eval.rule_pair_settings_match,
    lm_eval.rule_revision_matches_results,
    lm_eval.rule_qk_norm_matches_config,
    metadata.rule_reported_delta_matches_scores,
    metadata.rule_reported_regressions_consistent,
    lm_eval.rule_samples_match_results,
    lm_eval.rule_samples_cover_same_prompts,
    metadata.rule_sink_profile_shape,
    metadata.rule_no_local_paths,
)
#: Every rule on all entries together.
CROSS_ENTRY_RULES = (metadata.rule_no_duplicates, metadata.rule_one_qk_norm_per_llm)


def run_rules(entries: Sequence[Entry]) -> list[Problem]:
    """Run every entry rule on every entry, then the cross-entry rules; return all problems."""
    problems = [problem for entry in entries for rule in ENTRY_RULES for problem in rule(entry)]
    problems.extend(problem for rule in CROSS_ENTRY_RULES for problem in rule(entries))
    return problems
