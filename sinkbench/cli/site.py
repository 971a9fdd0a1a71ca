"""``sinkbench site build`` and ``sinkbench site serve``: the leaderboard's MkDocs project (the ``site`` extra)."""

from __future__ import annotations

import argparse
import sys

from sinkbench.cli.extras import require_extra
from sinkbench.cli.options import FROM_THE_ROOT, SUBMISSIONS, folder, holds_no_entry, missing_paths
from sinkbench.cli.parser import add_command, arg, group, whole_number
from sinkbench.leaderboard.sources import EXPERIMENTS_DIR


def register(subparsers: argparse._SubParsersAction) -> None:
    """Build or preview the leaderboard site (MkDocs Material).

    Build the leaderboard site from a submissions folder, or preview it with live reload: the repository's MkDocs
    project (mkdocs.yml) with --submissions as its data.
    """
    parser = add_command(subparsers, "site", None, doc=register.__doc__)
    actions = parser.add_subparsers(dest="site_command", metavar="ACTION", required=True)
    sources = group(
        SUBMISSIONS,
        folder("--experiments", "folder of the experiments whose page/ folders the site publishes (the Training "
               "dynamics and Interventions pages; default: %(default)s; without them those pages say so)",
               EXPERIMENTS_DIR, shown=""),
    )  # fmt: skip
    add_command(
        actions, "build", _build, sources,
        folder("--out", "where the built site goes, replaced as a whole", "_site"),
        command_label="site build",
    )  # fmt: skip
    add_command(
        actions, "serve", _serve, sources,
        arg("--host", default="127.0.0.1", help="address to listen on"),
        arg("--port", type=whole_number(0, 65535), default=8000, help="port to listen on"),
        command_label="site serve",
    )  # fmt: skip


def _build(args: argparse.Namespace) -> int:
    """aggregate the submissions and build the static site with MkDocs

    Validate and aggregate the submissions and build the site with MkDocs (strict), as `mkdocs build` does at
    the repository's root; the site replaces --out only if every step succeeds.
    """
    from sinkbench.errors import printable

    require_extra("site")
    from sinkbench.leaderboard.project import build_site

    if _missing_sources("site build", args):
        return 2
    if holds_no_entry("site build", args.submissions):
        return 1
    report = build_site(args.submissions, args.out, experiments_dir=args.experiments)
    print(
        f"Built {report.pages} pages, {report.plots} charts and {report.raw_files} raw files into "
        f"{printable(report.site_dir)} in {report.timings['total']:.1f} s."
    )
    return 0


def _serve(args: argparse.Namespace) -> int:
    """preview the site with live reload (mkdocs serve)

    Serve the site with `mkdocs serve` until Ctrl-C: it rebuilds and reloads the page when a template, a docs
    page, mkdocs.yml, a submission or an experiment's page changes.
    """
    require_extra("site")
    from sinkbench.leaderboard.project import serve_site

    if _missing_sources("site serve", args):
        return 2
    serve_site(args.submissions, experiments_dir=args.experiments, host=args.host, port=args.port)
    return 0


def _missing_sources(command: str, args: argparse.Namespace) -> bool:
    """Print one line when --submissions is missing, or an --experiments given is not a folder (the default may
    be absent, in an installed package: the pages then say so); whether either is."""
    from sinkbench.errors import printable

    if missing_paths(command, [args.submissions], f"{FROM_THE_ROOT}: --submissions DIR"):
        return True
    if args.experiments != EXPERIMENTS_DIR and not args.experiments.is_dir():
        print(
            f"sinkbench {command}: --experiments {printable(args.experiments)} is not a folder; pass the folder "
            "holding the experiments (experiments/ at the repository's root)",
            file=sys.stderr,
        )
        return True
    return False
