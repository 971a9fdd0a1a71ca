"""``sinkbench site build`` and ``sinkbench site serve``: the leaderboard site."""

from __future__ import annotations

import argparse
from pathlib import Path

from sinkbench.leaderboard.sources import EXPERIMENTS_DIR


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the ``site`` command and its ``build`` / ``serve`` subcommands."""
    parser = subparsers.add_parser(
        "site",
        help="Build or preview the leaderboard site (MkDocs Material).",
        description="Build the leaderboard site from a submissions folder, or build and serve it for a preview.",
    )
    actions = parser.add_subparsers(dest="site_command", metavar="ACTION", required=True)
    build = actions.add_parser(
        "build",
        help="aggregate the submissions and build the static site with MkDocs",
        description="Aggregate the submissions, render the pages, charts and downloads, and run MkDocs "
        "(strict). Run it from a clone of the repository; the site replaces --out only if every step succeeds.",
    )
    _add_common(build)
    build.set_defaults(handler=_build)
    serve = actions.add_parser(
        "serve",
        help="build the site and serve it locally for a preview",
        description="Build the site into --out, then serve it over HTTP until Ctrl-C.",
    )
    _add_common(serve)
    serve.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1)")
    serve.add_argument("--port", type=int, default=8000, help="port to listen on (default 8000)")
    serve.set_defaults(handler=_serve)


def _add_common(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--submissions",
        type=Path,
        default=Path("submissions"),
        metavar="DIR",
        help="submissions root holding pairs/ and backbones/ (default: submissions)",
    )
    parser.add_argument(
        "--experiments",
        type=Path,
        default=EXPERIMENTS_DIR,
        metavar="DIR",
        help="folder of the committed experiment results that the Training dynamics page shows "
        "(default: benchmarks/results; without them the page says so)",
    )
    parser.add_argument(
        "--out",
        type=Path,
        default=Path("_site"),
        metavar="DIR",
        help="where the built site goes (default: _site)",
    )


def _build(args: argparse.Namespace) -> int:
    return _built(args)


def _serve(args: argparse.Namespace) -> int:
    from sinkbench.leaderboard.build import serve_site

    status = _built(args)
    if status == 0:
        serve_site(args.out, host=args.host, port=args.port)
    return status


def _built(args: argparse.Namespace) -> int:
    """Build the site; print the result, or why nothing was written (exit 1)."""
    from sinkbench.cli.failures import printable, run_checked
    from sinkbench.leaderboard.build import build_site

    report, status = run_checked(
        "site build", lambda: build_site(args.submissions, args.out, experiments_dir=args.experiments)
    )
    if report is not None:
        total = sum(report.timings.values())
        print(
            f"Built {report.pages} pages, {report.plots} charts and {report.raw_files} raw files into "
            f"{printable(report.site_dir)} in {total:.1f} s."
        )
    return status
