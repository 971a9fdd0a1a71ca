"""``sinkbench validate``, ``sinkbench aggregate`` and ``sinkbench import-reported``: commands on the submissions folder."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from sinkbench.cli.options import (
    ENTRY_OUTPUT,
    FROM_THE_ROOT,
    SUBMISSIONS,
    folder,
    holds_no_entry,
    keywords,
    missing_paths,
)
from sinkbench.cli.parser import add_command, arg, whole_number


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add ``validate``, ``aggregate`` and ``import-reported``."""
    add_command(
        subparsers, "validate", _validate,
        arg("paths", nargs="*", default=["submissions"], metavar="PATH", shown="submissions",
            help="a submissions folder (holding pairs/ and backbones/), a kind folder or an entry folder"),
    )  # fmt: skip
    add_command(
        subparsers, "aggregate", _aggregate, SUBMISSIONS,
        folder("--out", "output folder, replaced as a whole (a folder sinkbench did not write is refused)"),
        arg("--seed", type=whole_number(0), default=0, help="seed of the bootstrap and permutation tests"),
    )  # fmt: skip
    add_command(
        subparsers, "import-reported", _import_reported,
        arg("csv", type=Path, metavar="FILE.csv", help="one row per pair and task"),
        arg("--source", required=True, metavar="CITATION", help="citation of the publication"),
        arg("--url", help="link to the publication, http or https", shown="none"),
        arg("--submitter", default="sinkbench import-reported", help="who transcribed the numbers"),
        ENTRY_OUTPUT,
    )  # fmt: skip


def _validate(args: argparse.Namespace) -> int:
    """Check submission entries; exit 1 and list every problem found.

    Validate submission entries (schemas, required tasks, matched settings, duplicates, size caps, safe
    names). Each problem names the file, the field and the fix. Exit 1 when an entry has a problem, or when
    the paths hold no entry at all (a check of nothing has not passed).
    """
    from sinkbench.errors import printable
    from sinkbench.submissions import load_submissions

    paths = [Path(path) for path in args.paths]
    if missing_paths("validate", paths, f"{FROM_THE_ROOT}: sinkbench validate DIR"):
        return 2
    loaded = load_submissions(paths)
    if loaded.checked == 0 and not loaded.problems:
        print(
            f"sinkbench validate: no entry in {', '.join(printable(path) for path in paths)} (no pairs/NAME/ or "
            "backbones/NAME/ folder); pass the submissions root, a kind folder or an entry folder",
            file=sys.stderr,
        )
        return 1
    for problem in loaded.problems:
        print(f"ERROR {problem}")
    print(
        f"{loaded.checked} entries checked, {len(loaded.entries)} loaded, {len(loaded.problems)} problem(s)."
    )
    return 1 if loaded.problems else 0


def _aggregate(args: argparse.Namespace) -> int:
    """Build the pairs, correlations, screening and regressions tables from valid submissions.

    Validate the submissions, then write pairs.csv, pairs.json, correlations.json, screening.csv and
    regressions.csv into --out (atomically; deterministic for a seed).
    """
    from sinkbench.errors import printable
    from sinkbench.tables.aggregate import aggregate_submissions

    if missing_paths("aggregate", [args.submissions], f"{FROM_THE_ROOT}: --submissions DIR"):
        return 2
    if holds_no_entry("aggregate", args.submissions):
        return 1
    tables = aggregate_submissions(args.submissions, args.out, seed=args.seed)
    for row in tables.correlations.itertuples():
        print(
            f"{row.task:<24} n={row.n:<3} spearman={row.spearman:+.3f} loo_mae={row.loo_mae:.2f} "
            f"baseline_mae={row.baseline_mae:.2f} held_out_inside: t={row.t_loo_covered}/{row.t_loo_checked} "
            f"jackknife+={row.jackknife_plus_loo_covered}/{row.jackknife_plus_loo_checked}"
        )
    print(
        f"wrote {len(tables.pairs)} pair rows, {len(tables.screening)} screening rows to {printable(args.out)}"
    )
    return 0


def _import_reported(args: argparse.Namespace) -> int:
    """Create reported pair entries from a CSV of published numbers.

    Create one reported pair entry per VLM from a CSV with columns
    vlm,reference_llm,qk_norm,sink_strength,task,delta and optionally
    reference_score,vlm_score,table,sink_strength_table,derived. Nothing is written unless every entry
    validates.
    """
    from sinkbench.errors import printable
    from sinkbench.submissions.import_reported import import_reported

    if missing_paths("import-reported", [args.csv], "check the path of the CSV file"):
        return 2
    written = import_reported(
        args.csv, out_dir=args.out, **keywords(args, "source", "url", "submitter", "force")
    )
    for path in written:
        print(f"wrote {printable(path)}/metadata.json")
    return 0
