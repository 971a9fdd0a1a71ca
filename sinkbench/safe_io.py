"""Reading untrusted files safely and writing outputs atomically.

Reads check the size with ``lstat`` before opening (symbolic links, hard links and special files are refused),
then parse strict JSON: ``NaN``/``Infinity`` (which Python's ``json`` accepts by default), numbers beyond a
float's range (``1e309``, an integer of 309 digits) and duplicate keys are errors. An unreadable file is a problem
to report, never a traceback. Writes go to a temporary file or folder beside the target and are moved into place with
``os.replace``, so a failure never leaves a half-written output behind.
"""

from __future__ import annotations

import ctypes
import errno
import hashlib
import json
import math
import os
import shutil
import stat
import tempfile
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

_RENAME_EXCHANGE = 2
_AT_FDCWD = -100


class UnsafeFileError(ValueError):
    """A file that cannot be accepted, with the fix to suggest."""

    def __init__(self, message: str, fix: str) -> None:
        super().__init__(message)
        self.message = message
        self.fix = fix


def check_size(path: Path, limit: int) -> int:
    """Return the size of regular file ``path``, refusing links, special files and files over ``limit``.

    A hard link (more than one name for the file) is refused too: it may name a file outside the tree, and
    a git checkout never creates one.
    """
    try:
        info = os.lstat(path)
    except OSError as error:
        raise UnsafeFileError(f"cannot read the file: {error.strerror}.", "check that it exists") from error
    if stat.S_ISLNK(info.st_mode):
        raise UnsafeFileError("is a symbolic link.", "replace the link by the file itself")
    if not stat.S_ISREG(info.st_mode):
        raise UnsafeFileError("is not a regular file.", "replace it by a plain file")
    if info.st_nlink > 1:
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


def parse_json(text: str) -> Any:
    """Parse strict JSON: no NaN or Infinity, no number beyond a float's range, no duplicate keys.

    Raises:
        UnsafeFileError: the text is not strict JSON; the message gives line and column.
    """
    try:
        return json.loads(
            text,
            parse_constant=_refuse_constant,
            parse_float=_finite_float,
            parse_int=_float_sized_int,
            object_pairs_hook=_refuse_duplicate_keys,
        )
    except json.JSONDecodeError as error:
        raise UnsafeFileError(
            f"is not valid JSON: {error.msg} at line {error.lineno}, column {error.colno}.",
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


def _read_bytes(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except OSError as error:
        raise UnsafeFileError(
            f"cannot be read: {error.strerror}.", "make the file readable (e.g. chmod a+r)"
        ) from error


def read_json(path: Path, limit: int) -> Any:
    """Read a strict JSON file of at most ``limit`` bytes (see :func:`check_size`, :func:`parse_json`)."""
    check_size(path, limit)
    return parse_json(_decode(_read_bytes(path)))


def read_jsonl(path: Path, limit: int) -> Iterator[tuple[int, Any]]:
    """Yield ``(line number, object)`` for each non-blank line of a strict JSON-lines file."""
    check_size(path, limit)
    try:
        stream = path.open("rb")
    except OSError as error:
        raise UnsafeFileError(f"cannot be read: {error.strerror}.", "make the file readable") from error
    with stream:
        for number, raw in enumerate(stream, start=1):
            if not raw.strip():
                continue
            try:
                yield number, parse_json(_decode(raw))
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


def write_files_atomically(out_dir: Path, files: Mapping[str, str]) -> list[Path]:
    """Write every ``name -> text`` into ``out_dir``: all to temporary files first, then rename each.

    Other files in ``out_dir`` are left alone. Returns the written paths.
    """
    out_dir.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=".staging-", dir=out_dir))
    try:
        for name, text in files.items():
            (staging / name).write_text(text, encoding="utf-8")
        written = []
        for name in files:
            os.replace(staging / name, out_dir / name)
            written.append(out_dir / name)
        return written
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def write_json_atomic(data: Any, path: Path) -> None:
    """Write ``data`` as strict JSON (no NaN) to ``path`` through a sibling temporary file."""
    text = json.dumps(data, indent=2, allow_nan=False) + "\n"
    write_files_atomically(path.parent, {path.name: text})


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
    """Swap two folders atomically with Linux's ``renameat2(RENAME_EXCHANGE)``; False where that is unavailable.

    Python's ``os`` has no binding for it, hence ``ctypes``. It is what makes :func:`install_directory` leave the
    target whole at every instant (old or new, never missing): the fault-injection tests kill a run between any
    two steps and find one or the other.
    """
    renameat2 = getattr(ctypes.CDLL(None, use_errno=True), "renameat2", None)
    if renameat2 is None:
        return False
    result = renameat2(_AT_FDCWD, os.fsencode(first), _AT_FDCWD, os.fsencode(second), _RENAME_EXCHANGE)
    if result == 0:
        return True
    code = ctypes.get_errno()
    if code in (errno.EINVAL, errno.ENOSYS, errno.EOPNOTSUPP):  # the file system or kernel cannot exchange
        return False
    raise OSError(code, os.strerror(code), str(second))


def install_directory(staged: Path, target: Path, *, replace: bool) -> None:
    """Move the finished folder ``staged`` to ``target`` (same file system) in one atomic step; ``staged`` is gone
    afterwards.

    An existing ``target`` (only with ``replace``) is swapped with ``staged`` (:func:`exchange`) and its old
    contents deleted, so ``target`` is never missing or mixed; where the swap is not available the old folder is
    moved aside first (into a :func:`scratch_folder`, which a later run may clean up if this one is killed).

    Raises:
        FileExistsError: ``target`` exists and ``replace`` is false.
    """
    if os.path.lexists(target) and not replace:
        raise FileExistsError(target)
    target.parent.mkdir(parents=True, exist_ok=True)
    if not os.path.lexists(target):
        os.replace(staged, target)
        return
    if exchange(staged, target):
        _remove(staged)  # now the old target: a folder, a file or a link
        return
    retired = scratch_folder(target)
    os.replace(target, retired / target.name)
    os.replace(staged, target)
    shutil.rmtree(retired, ignore_errors=True)


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
