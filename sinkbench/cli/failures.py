"""The one way every command reports a failure a user can cause: no traceback, one line (each problem of invalid
submissions on its own), exit 1 (0 ok, 2 usage error); :func:`main <sinkbench.cli.main>` runs every handler here."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable

from sinkbench.errors import ProblemsFound, SinkbenchError, os_reason, printable
from sinkbench.submissions import SubmissionsInvalid

#: Exit status of a command stopped with Ctrl-C (128 + SIGINT, as a shell reports it).
INTERRUPTED = 130


def run_command(command: str, handler: Callable[[], int]) -> int:
    """Run ``handler`` (a command's body) and return its exit status, a user's failure reported, not raised:
    :class:`~sinkbench.submissions.SubmissionsInvalid` as every problem on its own line (stdout), a
    :class:`~sinkbench.errors.SinkbenchError` as ``sinkbench COMMAND: message`` and an ``OSError`` as its path and
    reason (stderr), exit 1; Ctrl-C in one line, exit 130. Anything else is a bug, and keeps its traceback."""
    try:
        return handler()
    except SubmissionsInvalid as error:
        for problem in error.problems:
            print(f"ERROR {problem}")
        print(f"{len(error.problems)} problem(s); nothing was written.")
    except ProblemsFound as error:  # one line per problem, each made printable on its own
        for problem in error.problems:
            print(printable(f"ERROR {problem}"), file=sys.stderr)
        print(printable(f"sinkbench {command}: {error.closing}"), file=sys.stderr)
    except SinkbenchError as error:
        print(printable(f"sinkbench {command}: {error}"), file=sys.stderr)
    except OSError as error:
        path = os.fsdecode(error.filename) if isinstance(error.filename, (str, bytes)) else ""
        reason = os_reason(error)
        where = f"{path}: " if path and not reason.startswith(path) else ""
        print(printable(f"sinkbench {command}: {where}{reason}"), file=sys.stderr)
    except KeyboardInterrupt:
        print(f"sinkbench {command}: interrupted", file=sys.stderr)
        return INTERRUPTED
    return 1
