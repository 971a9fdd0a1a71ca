"""Publish an output folder as a whole: lock it, build its new contents beside it, swap them in atomically,
and clean up what an interrupted run left behind.

:func:`publishing` yields an empty staging folder next to ``out``. When the block succeeds, the staging folder
becomes ``out`` in one atomic, durable step (:func:`sinkbench.safe_io.install_directory`: every file is flushed
to disk first, and the rename after it; on Linux the two folders are swapped, so ``out`` is always either the
complete old output or the complete new one, never missing or mixed; elsewhere the old folder is renamed aside
first, a short window in which ``out`` is missing). The replaced contents are then deleted. Whatever a killed run left (``.<out>.staging-*`` folders) is deleted by the next run, under the lock.

An exclusive lock (``flock`` on ``.<out>.lock`` beside ``out``, removed when the run ends) keeps a second writer out:
it fails at once with one line saying that ``out`` is being written by another run. ``out`` is refused when it exists and was
not written by sinkbench (it lacks :data:`MARKER`), so a mistyped ``--out`` never replaces a user's folder, and
when a folder in it is read-only (its old contents could be swapped out but not deleted), so a run never exits 0
with the old output left beside ``out``.
Operating-system errors (read-only folder, full disk) become :class:`PublishError`: one line naming the path
and the reason.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import TextIO

from sinkbench.errors import SinkbenchError, UserError
from sinkbench.safe_io import created_mode, install_directory, overlap, scratch_folder, staging_prefix

try:
    import fcntl
except ImportError:  # not POSIX: no lock
    fcntl = None

#: The file that marks a folder as an output of sinkbench (safe to replace).
MARKER = ".sinkbench-output"


class PublishError(SinkbenchError, OSError):
    """The output could not be published; the message is one line naming the path, the reason and the fix.

    An ``OSError`` too, as the operating-system failures it reports (a full disk, a read-only folder) are."""


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
    """Hold ``out``'s lock, so that one run at a time writes it, and delete what killed runs left beside it.

    Raises:
        PublishError: another run holds the lock.
    """
    with _lock(out):
        _clean_leftovers(out)
        yield


def _clean_leftovers(out: Path) -> None:
    """Delete what killed runs left beside ``out`` (matched by name, never by a glob pattern built from it)."""
    prefix = staging_prefix(out)
    for leftover in out.parent.iterdir():
        if leftover.name.startswith(prefix) and leftover.is_dir() and not leftover.is_symlink():
            shutil.rmtree(leftover, ignore_errors=True)


def refuse_overlap(out: Path, source: Path, source_option: str) -> None:
    """Refuse to publish ``out`` inside the folder it is made from (``source``, given as ``source_option``), or
    around it: the output would land in the inputs, or replace them.

    Raises:
        UserError: one folder, resolved, is the other or inside it.
    """
    if overlap(out, source):
        raise UserError(
            f"--out {out} and {source_option} {source} overlap (one is inside the other), so the output would be "
            f"written into the inputs or replace them; choose an --out outside {source}"
        )


def _folder_mode(out: Path) -> int:
    """The permissions of the published folder: the earlier output's, else what ``mkdir`` gives (not the 0700 of a
    temporary folder, which would hide the output from a web server)."""
    try:
        return stat.S_IMODE(os.stat(out).st_mode)
    except OSError:
        return created_mode(0o777)


def _check_owned(out: Path) -> None:
    """Refuse to replace anything but a missing folder, an empty one, or an earlier output of sinkbench."""
    if not os.path.lexists(out):
        return
    if out.is_symlink() or not out.is_dir():
        raise PublishError(f"{out} exists and is not a folder; choose another --out or remove it")
    if not (out / MARKER).is_file() and any(out.iterdir()):
        raise PublishError(
            f"{out} exists and was not written by sinkbench (no {MARKER} in it); choose a new or empty --out, "
            "or remove that folder first"
        )
    locked = next((folder for folder, _, _ in os.walk(out) if not os.access(folder, os.W_OK | os.X_OK)), None)
    if locked is not None:
        raise PublishError(
            f"cannot replace {out}: {locked} is read-only, so the old output could not be deleted; make it "
            f"writable (chmod -R u+w {out}) or choose another --out"
        )


@contextlib.contextmanager
def publishing(out: Path) -> Iterator[Path]:
    """Yield an empty staging folder; when the block succeeds, publish it as ``out`` (see the module docstring).

    Raises:
        PublishError: ``out`` is locked by another run, is not a sinkbench output, or cannot be written.
    """
    out = Path(os.path.abspath(out))
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
        with exclusive(out):
            _check_owned(out)
            staging = scratch_folder(out)
            try:
                yield staging
                (staging / MARKER).write_text("written by sinkbench; the next run replaces this folder\n")
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
    return f"cannot write {out}: {error.strerror or error}{at}"
