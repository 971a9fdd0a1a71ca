"""The ``sinkbench`` command line: argument parsing only.

Each module under ``sinkbench.cli`` exposes ``register(subparsers)``: one :func:`~sinkbench.cli.parser.add_command`
per command, naming its handler (whose docstring is its help) and its arguments (shared ones in
:mod:`sinkbench.cli.options`). A handler is one call into the library, its heavy imports inside so that ``--help``
stays instant, run through :func:`sinkbench.cli.failures.run_command` (a user's failure in one line) and
:func:`sinkbench.cli.extras.run_needing_extras` (a missing optional extra named). Exit codes: 0 ok, 1 a check
failed, 2 usage error.

Why argparse, not typer or click: the standard library imports in about 2 ms (typer about 70 ms, click 35 ms),
``sinkbench eval`` hands unknown arguments to lm-eval as they are, the Guide's CLI Reference walks these parsers,
and what argparse lacks (one declaration per option, the nearest option named) takes a few helpers.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from collections.abc import Sequence

from sinkbench import __version__
from sinkbench.cli.parser import CommandParser

#: Modules under ``sinkbench.cli`` that contribute subcommands, in help order.
COMMAND_MODULES = (
    "screen",
    "heads",
    "buckets",
    "evaluate",
    "submissions",
    "submit",
    "site",
    "extract",
    "margin",
    "interventions",
)


def build_parser() -> argparse.ArgumentParser:
    """Build the top-level parser with every registered subcommand."""
    parser = CommandParser(
        prog="sinkbench",
        description="Sink Strength screening, strict-format evaluation and the sinkbench leaderboard.",
    )
    parser.add_argument("--version", action="version", version=f"sinkbench {__version__}")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in COMMAND_MODULES:
        importlib.import_module(f"sinkbench.cli.{name}").register(subparsers)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the CLI and return its exit status."""
    args_list = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser()
    args, extra = parser.parse_known_args(args_list)
    if args.command is None:
        parser.print_help()
        return 2
    if getattr(args, "quiet", False):  # transformers' and the Hub's bars too (read on import)
        os.environ["HF_HUB_DISABLE_PROGRESS_BARS"] = "1"
    args.passthrough_args = extra  # only a passthrough command (eval) leaves any: CommandParser refuses them
    from sinkbench.cli.extras import run_needing_extras
    from sinkbench.cli.failures import run_command

    label = getattr(args, "command_label", args.command)
    return run_command(label, lambda: run_needing_extras(label, lambda: int(args.handler(args) or 0)))


if __name__ == "__main__":
    sys.exit(main())
