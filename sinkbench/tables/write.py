"""The one writer of the aggregate outputs: every table as CSV and as JSON, rounded alike.

``sinkbench aggregate`` and the site's Downloads both call :func:`render_tables`, so the two formats of a
table always agree (same rows, same rounding).
"""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd

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


#: A text cell starting with one of these is a formula to a spreadsheet (OWASP "CSV injection"); the full-width
#: forms too, which some spreadsheets read as the ASCII ones.
_FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r", "\n", "\uff1d", "\uff0b", "\uff0d", "\uff20")


def _is_formula(value: object) -> bool:
    """True for a text cell that a spreadsheet could run as a formula, leading spaces ignored."""
    return isinstance(value, str) and value.lstrip(" ").startswith(_FORMULA_STARTS)


def neutralise_formulas(frame: pd.DataFrame) -> pd.DataFrame:
    """``frame`` for CSV: every text cell that a spreadsheet would run as a formula gets a leading ``'``.

    Only text cells change (numbers, including negative ones, are numbers to a spreadsheet); the JSON twin of
    a table keeps the text as it is.
    """
    safe = frame.copy()
    for column in safe.columns:
        values = safe[column].tolist()
        if any(map(_is_formula, values)):
            safe[column] = [f"'{value}" if _is_formula(value) else value for value in values]
    return safe


def _round_list(values: list) -> list:
    return [round(value, DECIMALS) if isinstance(value, float) else value for value in values]


def _json_text(frame: pd.DataFrame) -> str:
    """The rows of ``frame`` as a JSON array, one row per line: readable and diffable, and written by json's C
    encoder (an indented dump runs the pure-Python one, several times slower on a large board)."""
    records = json.loads(frame.to_json(orient="records", double_precision=15))
    rows = ",\n".join(json.dumps(record, ensure_ascii=False, allow_nan=False) for record in records)
    return f"[\n{rows}\n]\n" if records else "[]\n"


def render_tables(tables: AggregateTables) -> dict[str, str]:
    """File name -> text of every table, as ``<name>.csv`` and ``<name>.json``."""
    files = {}
    for name in TABLE_NAMES:
        frame = _rounded(getattr(tables, name))
        files[f"{name}.csv"] = neutralise_formulas(frame).to_csv(index=False)
        files[f"{name}.json"] = _json_text(frame)
    return files


def write_tables(tables: AggregateTables, folder: Path) -> list[Path]:
    """Write every table into ``folder`` (an existing, empty folder: a staging folder, or the site's downloads)."""
    written = []
    for name, text in render_tables(tables).items():
        (folder / name).write_text(text, encoding="utf-8")
        written.append(folder / name)
    return written
