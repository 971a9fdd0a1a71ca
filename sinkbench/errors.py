"""The errors a user can cause and fix, shared by every layer (torch-free).

Library code raises :class:`SinkbenchError` (most often :class:`UserError`), an ordinary exception whose message is
one line naming what was refused (file, field or model), why, and the fix. Only a command-line edge turns one into
an exit status: :mod:`sinkbench.cli.failures`, and for the stock ``lm_eval`` :mod:`sinkbench.harness.plugin`'s hook.
"""

from __future__ import annotations

import errno
import os
from collections.abc import Sequence
from pathlib import Path


def _collapsed(error: BaseException, limit: int) -> str:
    """The message of ``error`` with its whitespace collapsed to single spaces, cut to ``limit`` characters."""
    return " ".join(str(error).split())[:limit]


def one_line(error: BaseException, limit: int = 200) -> str:
    """An exception's message on one line (whitespace collapsed, cut to ``limit`` characters), or its type's name
    when it has no message."""
    return _collapsed(error, limit) or type(error).__name__


def described(error: BaseException, limit: int = 200) -> str:
    """``Type: message`` on one line (just ``Type`` when there is no message)."""
    message = _collapsed(error, limit)
    return f"{type(error).__name__}: {message}" if message else type(error).__name__


class SinkbenchError(Exception):
    """The one base of the errors sinkbench raises for its caller to handle: ``message`` (what failed, where and
    why, on one line) and ``fix`` (None when the message says it); ``str(error)`` is ``message Fix: fix``."""

    def __init__(self, message: str, fix: str | None = None) -> None:
        self.message, self.fix = message, fix
        super().__init__(f"{message} Fix: {fix}" if fix else message)


class UserError(SinkbenchError, ValueError):
    """Bad input a user can fix; a ``ValueError``, as the checks it marks raised before it had a name."""


class ProblemsFound(UserError):
    """Several problems found together: ``problems`` one line each (what, where, the fix), ``closing`` the line
    that ends the report; ``str(error)`` is every line."""

    def __init__(self, problems: Sequence[str], closing: str) -> None:
        self.problems, self.closing = list(problems), closing
        super().__init__("\n".join([*self.problems, closing]))


class ModelNotSupported(UserError):
    """A model that sinkbench cannot measure or extract; the message names its model type and the reason."""


def os_reason(error: OSError) -> str:
    """Why an operating-system call failed, in words: its reason, or the file that stands where a folder is
    needed (making a folder there reports only "File exists" or "Not a directory")."""
    path = Path(os.fsdecode(error.filename)) if isinstance(error.filename, (str, bytes)) else None
    if path and error.errno in (errno.EEXIST, errno.ENOTDIR):
        blocking = path if path.is_file() else file_in_the_way(path)
        if blocking is not None:
            return f"{blocking} is a file, not a folder"
    return error.strerror or str(error)


def file_in_the_way(path: Path) -> Path | None:
    """The nearest of ``path``'s folders that exists as something else (a file), or None."""
    return next((folder for folder in path.parents if folder.exists() and not folder.is_dir()), None)


def printable(text: object) -> str:
    """``text`` for the terminal, on one line: every non-printable character (newline, control, bidi) as
    ``\\uXXXX``, so that no name from a file or the command line can move the cursor or reorder the output."""
    return "".join(char if char.isprintable() else f"\\u{ord(char):04x}" for char in str(text))
