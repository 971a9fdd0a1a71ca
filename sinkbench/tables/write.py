"""The one writer of the aggregate outputs: every table as CSV and as JSON, rounded alike. ``sinkbench aggregate``
and the site's Downloads both call :func:`render_tables`, so the two formats of a table always agree."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pandas as pd

from sinkbench.tables.build import TABLE_NAMES, AggregateTables

#: Decimal places kept in written tables.
DECIMALS = 6


def _replace_cells(
    frame: pd.DataFrame, test: Callable[[Any], bool], change: Callable[[Any], Any]
) -> pd.DataFrame:
    """A copy of ``frame`` with ``change(cell)`` for every cell that passes ``test`` (a column without one is left
    as it is, so that a large table stays fast)."""
    changed = frame.copy()
    for column in changed.columns:
        values = changed[column].tolist()
        if any(map(test, values)):
            changed[column] = [change(value) if test(value) else value for value in values]
    return changed


def _rounded(frame: pd.DataFrame) -> pd.DataFrame:
    """``frame`` with floats rounded to :data:`DECIMALS`, lists of floats (intervals) included."""
    return _replace_cells(
        frame.round(DECIMALS),
        lambda value: isinstance(value, list),
        lambda values: [round(item, DECIMALS) if isinstance(item, float) else item for item in values],
    )


#: A text cell starting with one of these is a formula to a spreadsheet (OWASP "CSV injection"); the full-width
#: forms too, which some spreadsheets read as the ASCII ones.
_FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r", "\n", "\uff1d", "\uff0b", "\uff0d", "\uff20")


def _is_formula(value: object) -> bool:
    """True for a text cell that a spreadsheet could run as a formula, leading spaces ignored."""
    return isinstance(value, str) and value.lstrip(" ").startswith(_FORMULA_STARTS)


def neutralise_formulas(frame: pd.DataFrame) -> pd.DataFrame:
    """``frame`` for CSV: every text cell that a spreadsheet would run as a formula gets a leading ``'`` (numbers,
    negative ones included, are numbers to a spreadsheet); the JSON twin of a table keeps the text as it is."""
    return _replace_cells(frame, _is_formula, lambda value: f"'{value}")


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
