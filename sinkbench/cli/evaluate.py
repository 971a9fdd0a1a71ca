"""``sinkbench eval`` and ``sinkbench tasks-path``: lm-eval with the plugin's tasks included."""

from __future__ import annotations

import argparse


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the ``eval`` and ``tasks-path`` subcommands."""
    run = subparsers.add_parser(
        "eval",
        help="Run lm_eval with sinkbench's tasks included (same arguments as lm_eval).",
        description="Behaves like `lm_eval ARGS...` with `--include_path` set to sinkbench's task folder, "
        "e.g. `sinkbench eval --model hf --model_args pretrained=DIR --tasks sink_strength "
        "--output_path OUT`.",
    )
    run.set_defaults(handler=run_eval, passthrough=True)
    path = subparsers.add_parser("tasks-path", help="Print the installed harness_tasks folder.")
    path.set_defaults(handler=print_tasks_path)


def print_tasks_path(args: argparse.Namespace) -> int:
    """Handle ``sinkbench tasks-path``."""
    from sinkbench.harness.run import tasks_path

    print(tasks_path())
    return 0


def run_eval(args: argparse.Namespace) -> int:
    """Handle ``sinkbench eval``."""
    from sinkbench.harness.run import run_lm_eval

    return run_lm_eval(args.passthrough_args)
