"""Run lm-eval's own command line with sinkbench's task folder included."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path

from sinkbench.errors import SinkbenchError, UserError


def tasks_path() -> Path:
    """The folder of the installed ``sinkbench.tasks`` (the repository's ``harness_tasks/``): what
    ``--include_path`` needs."""
    import sinkbench.tasks

    return Path(sinkbench.tasks.__file__).resolve().parent


def lm_eval_argv(args: Sequence[str]) -> list[str]:
    """``lm_eval`` arguments with ``--include_path`` added; ValueError when the caller passed one already."""
    if any(arg == "--include_path" or arg.startswith("--include_path=") for arg in args):
        raise ValueError(
            "sinkbench eval sets --include_path itself and lm-eval accepts only one; to combine your own "
            "tasks with sinkbench's, run `lm_eval ... --include_path YOUR_FOLDER`: installed sinkbench already "
            "adds its tasks to lm-eval's (unless SINKBENCH_LM_EVAL_AUTOLOAD=0)."
        )
    return [*args, "--include_path", str(tasks_path())]


def run_lm_eval(args: Sequence[str]) -> int:
    """Run ``lm_eval ARGS --include_path <harness_tasks>`` in this process; returns its exit status.

    Raises:
        SinkbenchError: a task refused the run (missing data, a backend that cannot be probed), as raised.
        UserError: lm-eval refused its arguments with a ``ValueError`` (an unknown task, a malformed ``--model_args``).
    """
    from lm_eval.__main__ import cli_evaluate

    try:
        argv = lm_eval_argv(args)
    except ValueError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    saved, sys.argv = sys.argv, ["lm_eval", *argv]
    try:
        cli_evaluate()
    except SinkbenchError:
        raise
    except ValueError as error:
        raise UserError(f"lm_eval: {error} (run lm_eval itself for its traceback)") from error
    except SystemExit as exit_:
        if isinstance(exit_.code, str):  # a message: print it, as Python would
            print(exit_.code, file=sys.stderr)
        return exit_.code if isinstance(exit_.code, int) else (0 if exit_.code is None else 1)
    finally:
        sys.argv = saved
    return 0
