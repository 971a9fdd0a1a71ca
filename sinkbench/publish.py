"""Publish an output folder as a whole: lock it, build its new contents beside it, swap them in atomically.

:func:`publishing` yields an empty staging folder next to ``out`` that, when the block succeeds, becomes ``out`` in
one atomic, durable step (:func:`sinkbench.safe_io.install_directory`). An exclusive ``flock`` on ``.<out>.lock``
keeps a second writer out (it fails at once, in one line), and the ``.<out>.staging-*`` folders a killed run left
are deleted under it. ``out`` is refused when it exists and lacks :data:`MARKER` (a mistyped ``--out`` never
replaces a user's folder), when its marker names another kind of output (the tables never replace a site or a
checkpoint folder), or when it holds a read-only folder (the old output could not be deleted). Operating-system
errors become :class:`PublishError`: one line naming the path and the reason.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import Literal, TextIO

from sinkbench.errors import SinkbenchError, UserError, os_reason
from sinkbench.safe_io import created_mode, install_directory, overlap, scratch_folder, staging_prefix

try:
    import fcntl
except ImportError:  # not POSIX: no lock
    fcntl = None

#: The file that marks a folder as an output of sinkbench (safe to replace by an output of its kind).
MARKER = ".sinkbench-output"
#: What a published folder holds: ``aggregate``'s tables, a built site, or an intervention's checkpoints.
OutputKind = Literal["tables", "site", "checkpoints"]


class PublishError(SinkbenchError, OSError):
    """The output could not be published (one line: path, reason, fix); an ``OSError``, as the failures it reports."""


@contextlib.contextmanager
def _lock(out: Path) -> Iterator[None]:
    if fcntl is None:
        yield
        return
    path = out.parent / f".{out.name}.lock"
    while True:
        handle = open(path, "a")  # noqa: SIM115 (held for the whole block)
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            handle.close()
            raise PublishError(
                f"{out} is being written by another run; wait for it to finish, or choose another --out"
            ) from None
        if _same_file(handle, path):
            break
        handle.close()  # the run that held it removed it before we locked it: lock the new one
    try:
        yield
    finally:
        path.unlink(missing_ok=True)  # still locked: a run that opened it meanwhile sees it gone and retries
        handle.close()


def _same_file(handle: TextIO, path: Path) -> bool:
    """Whether the open ``handle`` is still the file at ``path`` (not one removed from there since)."""
    try:
        return os.path.samestat(os.fstat(handle.fileno()), os.stat(path))
    except FileNotFoundError:
        return False


@contextlib.contextmanager
def exclusive(out: Path) -> Iterator[None]:
    """Hold ``out``'s lock (PublishError when another run does), so one run at a time writes it, and delete what
    killed runs left beside it."""
    with _lock(out):
        prefix = staging_prefix(out)  # matched by name, never by a glob pattern built from it
        for leftover in out.parent.iterdir():
            if leftover.name.startswith(prefix) and leftover.is_dir() and not leftover.is_symlink():
                shutil.rmtree(leftover, ignore_errors=True)
        yield


def refuse_overlap(out: Path, source: Path, source_option: str) -> None:
    """Raise UserError when ``out`` and the folder it is made from (``source``, given as ``source_option``) are
    the same or one is inside the other: the output would land in the inputs, or replace them."""
    if overlap(out, source):
        raise UserError(
            f"--out {out} and {source_option} {source} overlap (one is inside the other), so the output would be "
            f"written into the inputs or replace them; choose an --out outside {source}"
        )


def _folder_mode(out: Path) -> int:
    """The published folder's permissions: the earlier output's, else ``mkdir``'s (not a temporary folder's 0700,
    which would hide the output from a web server)."""
    try:
        return stat.S_IMODE(os.stat(out).st_mode)
    except OSError:
        return created_mode(0o777)


def _check_owned(out: Path, kind: OutputKind) -> None:
    """Refuse to replace anything but a missing folder, an empty one, or an earlier output of sinkbench of
    ``kind`` (a marker that names no kind, written before kinds were, counts as any)."""
    if not os.path.lexists(out):
        return
    if out.is_symlink() or not out.is_dir():
        raise PublishError(f"{out} exists and is not a folder; choose another --out or remove it")
    if not (out / MARKER).is_file() and any(out.iterdir()):
        raise PublishError(
            f"{out} exists and was not written by sinkbench (no {MARKER} in it); choose a new or empty --out, "
            "or remove that folder first"
        )
    written = _written_kind(out / MARKER)
    if written not in (None, kind):
        raise PublishError(
            f"{out} holds sinkbench's {written}, not {kind}; choose another --out, or remove that folder first"
        )
    locked = next((folder for folder, _, _ in os.walk(out) if not os.access(folder, os.W_OK | os.X_OK)), None)
    if locked is not None:
        raise PublishError(
            f"cannot replace {out}: {locked} is read-only, so the old output could not be deleted; make it "
            f"writable (chmod -R u+w {out}) or choose another --out"
        )


def _written_kind(marker: Path) -> str | None:
    """The kind of output a :data:`MARKER` file names, or None (none named, or no marker)."""
    with contextlib.suppress(OSError), marker.open("rb") as stream:
        found = re.match(rb"written by sinkbench \((\w+)\)", stream.read(100))
        return found.group(1).decode() if found else None
    return None


@contextlib.contextmanager
def publishing(out: Path, kind: OutputKind) -> Iterator[Path]:
    """Yield an empty staging folder, published as ``out`` (holding ``kind``) when the block succeeds (see the
    module docstring); PublishError when ``out`` is locked by another run, is not a sinkbench output of ``kind``, or
    cannot be written."""
    out = Path(os.path.abspath(out))
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
        with exclusive(out):
            _check_owned(out, kind)
            staging = scratch_folder(out)
            try:
                yield staging
                (staging / MARKER).write_text(
                    f"written by sinkbench ({kind}); the next run that writes {kind} replaces this folder\n"
                )
                staging.chmod(_folder_mode(out))
                install_directory(staging, out, replace=True)
            finally:
                shutil.rmtree(staging, ignore_errors=True)
    except PublishError:
        raise
    except OSError as error:
        raise PublishError(_os_error_line(out, error)) from error


def _os_error_line(out: Path, error: OSError) -> str:
    """One line naming ``out``, the reason, and the path that failed when it is another one (a scratch folder)."""
    failed = os.fsdecode(error.filename) if isinstance(error.filename, (str, bytes)) else None
    at = f" (at {failed})" if failed and failed not in (str(out), str(out.parent)) else ""
    return f"cannot write {out}: {os_reason(error)}{at}"
