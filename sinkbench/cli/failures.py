"""The one way every command reports a failure a user can cause: no traceback, one line (the problems of invalid
submissions each on a line of their own), and the exit codes (0 ok, 1 a check or a write failed, 2 usage error).

:func:`main <sinkbench.cli.main>` runs every handler through :func:`run_command`; handlers only call the library
and print what it returns.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Sequence

from sinkbench.errors import ProblemsFound, SinkbenchError
from sinkbench.submissions import Problem, SubmissionsInvalid

#: Exit status of a command stopped with Ctrl-C (128 + SIGINT, as a shell reports it).
INTERRUPTED = 130


def run_command(command: str, handler: Callable[[], int]) -> int:
    """Run ``handler`` (a command's body) and return its exit status; report a user's failure instead of raising.

    * :class:`~sinkbench.submissions.SubmissionsInvalid`: every problem on its own line (stdout), exit 1;
    * :class:`~sinkbench.errors.SinkbenchError` (bad input, an unsupported model, a failed extraction check, an
      output that cannot be published, ...): ``sinkbench COMMAND: message`` on one line (stderr), exit 1;
    * ``OSError`` (a missing or unreadable file, a full disk, a folder that cannot be written, a port in use):
      one line naming the path and the reason, exit 1;
    * Ctrl-C: one line, exit 130.

    Anything else is a bug in sinkbench, and keeps its traceback.
    """
    try:
        return handler()
    except SubmissionsInvalid as error:
        print_problems(error.problems, "nothing was written")
    except ProblemsFound as error:  # one line per problem, each made printable on its own
        for problem in error.problems:
            print(printable(f"ERROR {problem}"), file=sys.stderr)
        print(printable(f"sinkbench {command}: {error.closing}"), file=sys.stderr)
    except SinkbenchError as error:
        print(printable(f"sinkbench {command}: {error}"), file=sys.stderr)
    except OSError as error:
        print(printable(f"sinkbench {command}: {os_error_line(error)}"), file=sys.stderr)
    except KeyboardInterrupt:
        print(f"sinkbench {command}: interrupted", file=sys.stderr)
        return INTERRUPTED
    return 1


def os_error_line(error: OSError) -> str:
    """An operating-system error as ``path: reason`` (the path when the error names one)."""
    where = f"{os.fsdecode(error.filename)}: " if isinstance(error.filename, (str, bytes)) else ""
    return f"{where}{error.strerror or error}"


def print_problems(problems: Sequence[Problem], what: str) -> None:
    """Print each problem (file, field, message, fix) and a closing count; ``what`` names what was refused."""
    for problem in problems:
        print(f"ERROR {problem}")
    print(f"{len(problems)} problem(s); {what}.")


def printable(text: object) -> str:
    """``text`` for the terminal, on one line: every non-printable character (newline, control, bidi) as
    ``\\uXXXX``, so that no name from a file or the command line can move the cursor or reorder the output."""
    return "".join(char if char.isprintable() else f"\\u{ord(char):04x}" for char in str(text))
