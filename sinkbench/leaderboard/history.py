"""The board's own provenance, from the git history of the submissions folder: when each entry joined the board,
the board's version (its last change), and a changelog of every commit that added, changed or removed entries.

One ``git log`` call per build. Outside a git checkout (an installed sinkbench building a copied folder) there is no
history: the pages say so instead of guessing a date.
"""

from __future__ import annotations

import subprocess
from dataclasses import dataclass, field
from pathlib import Path

from sinkbench.submissions.catalogue import FOLDER_OF_KIND

#: The entry folders a change can touch (``pairs``, ``backbones``).
_KIND_FOLDERS = frozenset(FOLDER_OF_KIND.values())
#: Longest commit subject the changelog shows.
SUBJECT_LIMIT = 160
_STATUS = {"A": "added", "M": "changed", "D": "removed", "T": "changed"}
#: The ``git log`` that :func:`parse_log` reads, run in the submissions folder.
LOG_COMMAND = ("log", "--format=%x00%h%x09%cs%x09%s", "--name-status", "--no-renames", "--relative")


@dataclass(frozen=True)
class Change:
    """One commit that touched entries: its short hash, date (YYYY-MM-DD), subject, and the entries it added,
    changed or removed (``kind/name``)."""

    commit: str
    date: str
    subject: str
    added: tuple[str, ...] = ()
    changed: tuple[str, ...] = ()
    removed: tuple[str, ...] = ()


@dataclass(frozen=True)
class BoardHistory:
    """The history of one submissions folder: every change, newest first, and each entry's first date on the
    board (by entry name). ``available`` is False outside a git checkout."""

    available: bool
    changes: tuple[Change, ...] = ()
    submitted: dict[str, str] = field(default_factory=dict)
    uncommitted: bool = False

    @property
    def version(self) -> str | None:
        """The board's version: the date and commit of its last change (None without history)."""
        if not self.changes:
            return None
        last = self.changes[0]
        return f"{last.date} ({last.commit}){', with uncommitted changes' if self.uncommitted else ''}"


def git_output(folder: Path, *arguments: str, timeout: float = 60) -> str | None:
    """What ``git *arguments`` run in ``folder`` prints, or None when it fails (not a checkout, no git)."""
    try:
        done = subprocess.run(
            ["git", *arguments], cwd=folder, capture_output=True, text=True, timeout=timeout, check=False
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return done.stdout if done.returncode == 0 else None


def parse_log(text: str) -> tuple[Change, ...]:
    """The changes in the output of :data:`LOG_COMMAND`, newest first; commits that touch no entry are left out."""
    changes = []
    for block in text.split("\x00")[1:]:
        header, *lines = block.strip("\n").split("\n")
        commit, date, subject = [*header.split("\t", 2), "", ""][:3]
        touched: dict[str, set[str]] = {}
        for line in lines:
            status, _, path = line.partition("\t")
            parts = path.split("/")
            if len(parts) >= 3 and parts[0] in _KIND_FOLDERS and status[:1] in _STATUS:
                touched.setdefault(_STATUS[status[:1]], set()).add(f"{parts[0]}/{parts[1]}")
        if not touched:
            continue
        added = touched.get("added", set())
        removed = touched.get("removed", set()) - added
        changed = touched.get("changed", set()) - added - removed
        if len(subject) > SUBJECT_LIMIT:
            subject = subject[: SUBJECT_LIMIT - 1].rstrip() + "…"
        changes.append(
            Change(commit, date, subject, *(tuple(sorted(group)) for group in (added, changed, removed)))
        )
    return tuple(changes)


def board_history(submissions_dir: Path) -> BoardHistory:
    """The history of ``submissions_dir`` (see :class:`BoardHistory`)."""
    text = git_output(submissions_dir, *LOG_COMMAND, "--", ".")
    if text is None:
        return BoardHistory(available=False)
    changes = parse_log(text)
    submitted: dict[str, str] = {}
    for change in reversed(changes):  # oldest first: the first date wins
        for path in (*change.added, *change.changed):
            submitted.setdefault(path.split("/", 1)[1], change.date)
    status = git_output(submissions_dir, "status", "--porcelain", "--", ".")
    return BoardHistory(True, changes, submitted, uncommitted=bool(status and status.strip()))
