"""How commands report failures: every problem on its own line, one line for an operating-system error, and
the exit codes (0 ok, 1 a check or a write failed, 2 usage error)."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Sequence
from typing import TypeVar

from sinkbench.leaderboard.sources import SourceInvalid
from sinkbench.submissions import Problem, SubmissionsInvalid

T = TypeVar("T")


def print_problems(problems: Sequence[Problem], what: str) -> None:
    """Print each problem (file, field, message, fix) and a closing count; ``what`` names what was refused."""
    for problem in problems:
        print(f"ERROR {problem}")
    print(f"{len(problems)} problem(s); {what}.")


def run_checked(command: str, action: Callable[[], T]) -> tuple[T | None, int]:
    """Run ``action``; on refused submissions or an OS error print why (no traceback) and return exit 1.

    Returns:
        The action's result and 0, or None and 1.
    """
    try:
        return action(), 0
    except SubmissionsInvalid as error:
        print_problems(error.problems, "nothing was written")
    except SourceInvalid as error:
        print(f"ERROR {printable(error)}")
        print("1 problem(s); nothing was written.")
    except OSError as error:  # PublishError included: one line that names the path and the reason
        where = f"{os.fsdecode(error.filename)}: " if isinstance(error.filename, (str, bytes)) else ""
        print(printable(f"sinkbench {command}: {where}{error.strerror or error}"), file=sys.stderr)
    return None, 1


def printable(text: object) -> str:
    """``text`` for the terminal, on one line: every non-printable character (newline, control, bidi) as
    ``\\uXXXX``, so that no name from a file or the command line can move the cursor or reorder the output."""
    return "".join(char if char.isprintable() else f"\\u{ord(char):04x}" for char in str(text))
