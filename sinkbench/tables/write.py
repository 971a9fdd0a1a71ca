"""The one writer of the aggregate outputs: every table as CSV and as JSON, rounded alike, written atomically.

``sinkbench aggregate`` and the site's Downloads both call :func:`render_tables`, so the two formats of a
table always agree (same rows, same rounding).
"""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd

from sinkbench.safe_io import write_files_atomically
from sinkbench.tables.build import TABLE_NAMES, AggregateTables

#: Decimal places kept in written tables.
DECIMALS = 6


def _rounded(frame: pd.DataFrame) -> pd.DataFrame:
    """``frame`` with floats rounded to :data:`DECIMALS`, lists of floats (intervals) included."""
    rounded = frame.round(DECIMALS)
    for column in rounded.columns:
        values = rounded[column].tolist()
        if any(isinstance(value, list) for value in values):
            rounded[column] = [_round_list(value) if isinstance(value, list) else value for value in values]
    return rounded


def _round_list(values: list) -> list:
    return [round(value, DECIMALS) if isinstance(value, float) else value for value in values]


def _json_text(frame: pd.DataFrame) -> str:
    records = json.loads(frame.to_json(orient="records", double_precision=15))
    return json.dumps(records, indent=2, ensure_ascii=False, allow_nan=False) + "\n"


def render_tables(tables: AggregateTables) -> dict[str, str]:
    """File name -> text of every table, as ``<name>.csv`` and ``<name>.json``."""
    files = {}
    for name in TABLE_NAMES:
        frame = _rounded(getattr(tables, name))
        files[f"{name}.csv"] = frame.to_csv(index=False)
        files[f"{name}.json"] = _json_text(frame)
    return files


def write_tables(tables: AggregateTables, out_dir: Path) -> list[Path]:
    """Write every table into ``out_dir`` (all files or none: see :func:`sinkbench.safe_io.write_files_atomically`)."""
    return write_files_atomically(Path(out_dir), render_tables(tables))
