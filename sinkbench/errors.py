"""The errors a user can cause and fix, shared by every layer (torch-free).

Library code raises :class:`SinkbenchError` (most often its subclass :class:`UserError`): an ordinary exception
that a caller catches like any other (``except Exception`` included), whose message is one line naming what was
refused (file, field or model), why, and the fix. Only a command-line edge turns one into an exit status:
``sinkbench`` (:mod:`sinkbench.cli.failures`) and, for the stock ``lm_eval``, the error hook that
:mod:`sinkbench.harness.plugin` installs.
"""

from __future__ import annotations

from collections.abc import Sequence


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
    """The one base of the errors sinkbench raises for its caller to handle.

    Attributes:
        message: What failed, where and why, on one line.
        fix: How to fix it, when given apart from the message (None when the message says it).

    ``str(error)`` is the line to show: the message, then ``Fix: ...`` when there is a separate fix.
    """

    def __init__(self, message: str, fix: str | None = None) -> None:
        self.message, self.fix = message, fix
        super().__init__(f"{message} Fix: {fix}" if fix else message)


class UserError(SinkbenchError, ValueError):
    """Bad input a user can fix; the message is one line naming what, why and the fix.

    A ``ValueError``, as the checks it marks raised before it had a name: ``except ValueError`` still catches them.
    """


class ProblemsFound(UserError):
    """Several problems found together (a check that reports every one at once): ``problems`` holds one line each
    (what, where, the fix) and ``closing`` the line that ends the report; ``str(error)`` is every line, each on a
    line of its own."""

    def __init__(self, problems: Sequence[str], closing: str) -> None:
        self.problems, self.closing = list(problems), closing
        super().__init__("\n".join([*self.problems, closing]))


class ModelNotSupported(UserError):
    """A model that sinkbench cannot measure or extract; the message names its model type and the reason."""
