"""The errors a user can cause and fix, shared by every layer (torch-free).

Every command prints a :class:`UserError` as one line and exits 1 (``sinkbench.cli.failures``); its message
names what was refused (file, field or model), why, and the fix.
"""

from __future__ import annotations


def one_line(error: BaseException, limit: int = 200) -> str:
    """An exception's message on one line (whitespace collapsed, cut to ``limit`` characters), or its type's name
    when it has no message."""
    return " ".join(str(error).split())[:limit] or type(error).__name__


def described(error: BaseException, limit: int = 200) -> str:
    """``Type: message`` on one line (just ``Type`` when there is no message)."""
    message = " ".join(str(error).split())[:limit]
    return f"{type(error).__name__}: {message}" if message else type(error).__name__


class UserError(ValueError):
    """Bad input a user can fix; the message is one line naming what, why and the fix.

    A ``ValueError``, as the checks it marks raised before it had a name: ``except ValueError`` still catches them.
    """


class ModelNotSupported(UserError):
    """A model that sinkbench cannot measure or extract; the message names its model type and the reason."""
