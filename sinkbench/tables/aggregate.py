"""``sinkbench aggregate`` as one library call: validated entries -> tables -> the files of every table."""

from __future__ import annotations

from pathlib import Path

from sinkbench.publish import publishing, refuse_overlap
from sinkbench.submissions import load_valid_entries
from sinkbench.tables.build import AggregateTables, build_tables
from sinkbench.tables.write import write_tables


def aggregate_submissions(submissions_dir: Path, out_dir: Path, *, seed: int = 0) -> AggregateTables:
    """Validate ``submissions_dir``, build every table and publish them as the folder ``out_dir`` (as a whole:
    :func:`sinkbench.publish.publishing`).

    Raises:
        sinkbench.submissions.SubmissionsInvalid: any validation problem; nothing is written then.
        sinkbench.errors.UserError: ``out_dir`` and ``submissions_dir`` overlap; nothing is written.
        sinkbench.publish.PublishError: ``out_dir`` is locked, not an output of sinkbench, or not writable.
    """
    refuse_overlap(out_dir, submissions_dir, "--submissions")
    tables = build_tables(load_valid_entries(submissions_dir), seed=seed)
    with publishing(Path(out_dir), "tables") as staging:
        write_tables(tables, staging)
    return tables
