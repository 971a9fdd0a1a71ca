"""``sinkbench aggregate`` as one library call: validated entries -> tables -> the files of every table."""

from __future__ import annotations

from pathlib import Path

from sinkbench.submissions import load_valid_entries
from sinkbench.tables.build import AggregateTables, build_tables
from sinkbench.tables.write import write_tables


def aggregate_submissions(submissions_dir: Path, out_dir: Path, *, seed: int = 0) -> AggregateTables:
    """Validate ``submissions_dir``, build every table and write them into ``out_dir`` atomically.

    Raises:
        sinkbench.submissions.SubmissionsInvalid: any validation problem; nothing is written then.
    """
    tables = build_tables(load_valid_entries(submissions_dir), seed=seed)
    write_tables(tables, Path(out_dir))
    return tables
