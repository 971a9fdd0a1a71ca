"""``sinkbench eval`` and ``sinkbench tasks-path``: lm-eval with the plugin's tasks included."""

from __future__ import annotations

import argparse

from sinkbench.cli.parser import add_command


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the ``eval`` and ``tasks-path`` subcommands."""
    add_command(subparsers, "eval", run_eval, passthrough=True)
    add_command(subparsers, "tasks-path", print_tasks_path)


def print_tasks_path(args: argparse.Namespace) -> int:
    """Print the folder of the installed tasks (sinkbench.tasks, the repository's harness_tasks/).

    Print the folder of sinkbench's lm-eval tasks, for `lm_eval --include_path "$(sinkbench tasks-path)"`
    where the start-up hook is off (SINKBENCH_LM_EVAL_AUTOLOAD=0).
    """
    from sinkbench.harness.run import tasks_path

    print(tasks_path())
    return 0


def run_eval(args: argparse.Namespace) -> int:
    """Run lm_eval with sinkbench's tasks included (same arguments as lm_eval).

    Every argument goes to lm_eval, which runs with `--include_path` set to sinkbench's task folder, e.g.
    `sinkbench eval --model hf --model_args pretrained=DIR --tasks sink_strength --output_path OUT`. `lm_eval
    --help` lists the arguments. With sinkbench installed, plain `lm_eval` finds the same tasks too.
    """
    import sys

    if not args.passthrough_args:
        print(
            "sinkbench eval: give lm_eval's arguments, at least --model, --model_args and --tasks "
            "(`lm_eval --help` lists them)",
            file=sys.stderr,
        )
        return 2
    from sinkbench.harness.run import run_lm_eval

    return run_lm_eval(args.passthrough_args)
