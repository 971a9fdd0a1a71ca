"""The errors a user can cause and fix, shared by every layer (torch-free).

Every command prints a :class:`UserError` as one line and exits 1 (``sinkbench.cli.failures``); its message
names what was refused (file, field or model), why, and the fix.
"""

from __future__ import annotations


class UserError(ValueError):
    """Bad input a user can fix; the message is one line naming what, why and the fix.

    A ``ValueError``, as the checks it marks raised before it had a name: ``except ValueError`` still catches them.
    """


class ModelNotSupported(UserError):
    """A model that sinkbench cannot measure or extract; the message names its model type and the reason."""
