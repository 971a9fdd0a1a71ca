"""Reading untrusted files safely and writing outputs atomically.

Reads check the size with ``lstat`` before opening (links and special files are refused), then parse strict JSON:
``NaN``/``Infinity``, numbers beyond a float's range (``1e309``) and duplicate keys are errors, reported, never a
traceback. Writes go to a temporary file or folder beside the target, are flushed to disk (``fsync``, or one
``syncfs`` for a folder), moved into place in one rename (:func:`write_text_atomic`, :func:`install_directory`), and
the rename is flushed: a kill leaves the old output whole, and a power cut never leaves the target renamed but empty.
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import hashlib
import json
import math
import os
import shutil
import stat
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from sinkbench.errors import SinkbenchError, UserError

_RENAME_EXCHANGE = 2
_AT_FDCWD = -100


class UnsafeFileError(SinkbenchError, ValueError):
    """A file that cannot be accepted: :attr:`message` says why (it follows the file's name), :attr:`fix` what to do."""


def check_size(path: Path, limit: int, *, follow_links: bool = False) -> int:
    """Return the size of regular file ``path``, refusing links, special files and files over ``limit``.

    Hard links are refused too (one may name a file outside the tree; git never creates one). With
    ``follow_links`` (a file of the user's own, such as a data file) links are followed and hard links allowed.
    """
    try:
        info = os.stat(path) if follow_links else os.lstat(path)
    except OSError as error:
        raise UnsafeFileError(f"cannot read the file: {error.strerror}.", "check that it exists") from error
    if stat.S_ISLNK(info.st_mode):
        raise UnsafeFileError("is a symbolic link.", "replace the link by the file itself")
    if not stat.S_ISREG(info.st_mode):
        raise UnsafeFileError("is not a regular file.", "replace it by a plain file")
    if info.st_nlink > 1 and not follow_links:
        raise UnsafeFileError(
            f"is a hard link ({info.st_nlink} names for one file).", "replace it by a copy of the file"
        )
    if info.st_size > limit:
        raise UnsafeFileError(
            f"is {info.st_size:,} bytes; the cap for this kind of file is {limit:,} bytes.",
            "remove what is not needed (e.g. drop --log_samples outputs of other tasks) or split the run",
        )
    return info.st_size


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"non-finite number {name} is not allowed")


def _finite_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(f"number {text[:40]} overflows to infinity")
    return value


def _float_sized_int(text: str) -> int:
    value = int(text)
    try:
        float(value)
    except OverflowError:
        raise ValueError(f"number {text[:40]}... is too large") from None
    return value


def _refuse_duplicate_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    result = dict(pairs)
    if len(result) != len(pairs):
        keys = [key for key, _ in pairs]
        raise ValueError(f"duplicate key {next(key for key in keys if keys.count(key) > 1)!r}")
    return result


def parse_json(text: str, *, single_line: bool = False) -> Any:
    """Parse strict JSON (no NaN or Infinity, no number beyond a float's range, no duplicate keys); UnsafeFileError
    with line and column (only the column for a ``single_line`` JSON-lines record, whose caller names the line)."""
    try:
        return json.loads(
            text,
            parse_constant=_refuse_constant,
            parse_float=_finite_float,
            parse_int=_float_sized_int,
            object_pairs_hook=_refuse_duplicate_keys,
        )
    except json.JSONDecodeError as error:
        where = f"column {error.pos + 1}" if single_line else f"line {error.lineno}, column {error.colno}"
        raise UnsafeFileError(
            f"is not valid JSON: {error.msg.removesuffix(' at')} at {where}.",  # not "starting at at line 8"
            "fix the syntax (an lm-eval or sinkbench output file should be copied unmodified)",
        ) from error
    except ValueError as error:
        raise UnsafeFileError(
            f"is not accepted: {error}.", "write finite numbers only (null for a missing value), keys once"
        ) from error
    except RecursionError as error:
        raise UnsafeFileError("is nested too deeply.", "flatten the document") from error


def _decode(raw: bytes) -> str:
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as error:
        raise UnsafeFileError(f"is not UTF-8 (byte {error.start}).", "save the file as UTF-8") from error


def read_text(path: Path) -> str:
    """A text file's contents, decoded as UTF-8.

    Raises:
        UserError: the file is not UTF-8, in one line naming it and the fix.
    """
    try:
        return _decode(Path(path).read_bytes())
    except UnsafeFileError as error:
        raise UserError(f"{path}: {error.message}", error.fix) from None


def read_json(path: Path, limit: int) -> Any:
    """Read a strict JSON file of at most ``limit`` bytes (see :func:`check_size`, :func:`parse_json`)."""
    check_size(path, limit)
    try:
        raw = path.read_bytes()
    except OSError as error:
        raise UnsafeFileError(
            f"cannot be read: {error.strerror}.", "make the file readable (e.g. chmod a+r)"
        ) from error
    return parse_json(_decode(raw))


def read_jsonl(path: Path, limit: int, *, follow_links: bool = False) -> Iterator[tuple[int, Any]]:
    """Yield ``(line number, object)`` for each non-blank line of a strict JSON-lines file of at most ``limit``
    bytes (``follow_links``: see :func:`check_size`)."""
    check_size(path, limit, follow_links=follow_links)
    try:
        stream = path.open("rb")
    except OSError as error:
        raise UnsafeFileError(f"cannot be read: {error.strerror}.", "make the file readable") from error
    with stream:
        for number, raw in enumerate(stream, start=1):
            if not raw.strip():
                continue
            try:
                yield number, parse_json(_decode(raw), single_line=True)
            except UnsafeFileError as error:
                raise UnsafeFileError(f"line {number} {error.message}", error.fix) from error


def json_strings(data: Any) -> Iterator[tuple[str, str]]:
    """Every key and string value of parsed JSON ``data`` with its path (``configs.ifeval_strict.0``; a key's path
    ends with the key), walked without recursion (a deeply nested document costs no stack)."""
    stack: list[tuple[str, Any]] = [("", data)]
    while stack:
        path, value = stack.pop()
        if isinstance(value, str):
            yield path, value
        elif isinstance(value, dict):
            for key, item in value.items():
                child = f"{path}.{key}" if path else str(key)
                yield child, key
                stack.append((child, item))
        elif isinstance(value, list):
            stack.extend(
                (f"{path}.{index}" if path else str(index), item) for index, item in enumerate(value)
            )


def created_mode(mode: int) -> int:
    """The permissions a new file or folder asked for with ``mode`` gets under this process's umask."""
    umask = os.umask(0o022)
    os.umask(umask)
    return mode & ~umask


def _fsync(path: str | Path, flags: int = os.O_RDONLY) -> None:
    descriptor = os.open(path, flags)
    try:
        os.fsync(descriptor)
    finally:
        os.close(descriptor)


def sync_folder(folder: Path) -> None:
    """Flush a folder's entries (names just created, renamed or removed in it) to disk."""
    _fsync(folder, os.O_RDONLY | os.O_DIRECTORY)


def sync_file_system(folder: Path) -> bool:
    """Flush the file system holding ``folder`` with Linux's ``syncfs`` (through ``ctypes``: ``os`` lacks it), one
    call however many files were written; False where that is unavailable."""
    descriptor = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
    try:
        return _linux_call("syncfs", descriptor, path=folder)
    finally:
        os.close(descriptor)


def _linux_call(name: str, *args: object, path: Path) -> bool:
    """Call the C library's ``name`` (``os`` has no binding for it): whether it ran, False where the system, the
    kernel or the file system lacks it; any other failure is an OSError naming ``path``."""
    function = getattr(ctypes.CDLL(None, use_errno=True), name, None)
    if function is None:
        return False
    if function(*args) == 0:
        return True
    code = ctypes.get_errno()
    if code in (errno.ENOSYS, errno.EINVAL, errno.EOPNOTSUPP):
        return False
    raise OSError(code, os.strerror(code), str(path))


def sync_tree(root: Path) -> None:
    """Flush every file and folder below ``root`` to disk (links not followed): one ``syncfs`` where available, as
    a built site has thousands of files, else an ``fsync`` of each."""
    if sync_file_system(root):
        return
    for folder, _, files in os.walk(root):
        for path in (os.path.join(folder, name) for name in files):
            if not os.path.islink(path):
                _fsync(path)
        sync_folder(Path(folder))


def write_text_atomic(path: Path, text: str) -> None:
    """Write ``text`` (UTF-8) to ``path`` durably and atomically (a killed run leaves ``path`` as it was and a
    ``.<name>.*.partial`` file beside it)."""
    path = Path(path)
    descriptor, temporary = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".partial", dir=path.parent)
    try:
        os.fchmod(descriptor, created_mode(0o666))  # as open() would create it, not mkstemp's 0600
        with os.fdopen(descriptor, "w", encoding="utf-8") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(temporary, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise
    sync_folder(path.parent)


def write_json_atomic(data: Any, path: Path) -> None:
    """Write ``data`` as strict JSON (no NaN) to ``path``, durably and atomically (:func:`write_text_atomic`)."""
    text = json.dumps(data, indent=2, allow_nan=False) + "\n"
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    write_text_atomic(path, text)


def overlap(first: Path, second: Path) -> bool:
    """Whether two folders, resolved, are one and the same or one lies inside the other."""
    first, second = Path(first).resolve(), Path(second).resolve()
    return first.is_relative_to(second) or second.is_relative_to(first)


def staging_prefix(target: Path) -> str:
    """The name prefix of the temporary folders made beside ``target`` (a killed run's leftovers carry it too)."""
    return f".{target.name}.staging-"


def scratch_folder(target: Path) -> Path:
    """A new temporary folder beside ``target`` (same file system), named with :func:`staging_prefix`."""
    return Path(tempfile.mkdtemp(prefix=staging_prefix(target), dir=target.parent))


def exchange(first: Path, second: Path) -> bool:
    """Swap two folders atomically with Linux's ``renameat2(RENAME_EXCHANGE)`` (through ``ctypes``); False where
    that is unavailable. It keeps :func:`install_directory`'s target old or new at every instant, never missing."""
    paths = (_AT_FDCWD, os.fsencode(first), _AT_FDCWD, os.fsencode(second))
    return _linux_call("renameat2", *paths, _RENAME_EXCHANGE, path=second)


def install_directory(staged: Path, target: Path, *, replace: bool) -> None:
    """Move the finished folder ``staged`` to ``target`` (same file system) in one atomic, durable step.

    ``staged`` is flushed first and the rename after. An existing ``target`` (only with ``replace``, else
    FileExistsError) is swapped with ``staged`` (:func:`exchange`) and deleted; where the swap is unavailable it is
    moved aside first, into a :func:`scratch_folder` that a later run may clean up.
    """
    if os.path.lexists(target) and not replace:
        raise FileExistsError(target)
    target.parent.mkdir(parents=True, exist_ok=True)
    sync_tree(staged)
    if not os.path.lexists(target):
        os.replace(staged, target)
        sync_folder(target.parent)
        return
    if exchange(staged, target):
        sync_folder(target.parent)
        _remove(staged)  # now the old target: a folder, a file or a link
        return
    retired = scratch_folder(target)
    os.replace(target, retired / target.name)
    os.replace(staged, target)
    sync_folder(target.parent)
    shutil.rmtree(retired, ignore_errors=True)


@contextlib.contextmanager
def building(target: Path, prefix: str, *, replace: bool) -> Iterator[Path]:
    """A new folder beside ``target`` (its name starting with ``prefix``), installed as ``target`` when the block
    succeeds (:func:`install_directory`) and removed in any case."""
    target.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=prefix, dir=target.parent))
    try:
        yield staging
        install_directory(staging, target, replace=replace)
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def _remove(path: Path) -> None:
    """Delete a folder tree, or a file or link (best effort, as a cleanup)."""
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path, ignore_errors=True)
    else:
        path.unlink(missing_ok=True)


def file_sha256(path: Path) -> str:
    """Streamed sha256 of a file."""
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()
