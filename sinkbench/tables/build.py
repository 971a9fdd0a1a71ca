"""All leaderboard tables from validated entries, in one frozen bundle: pairs, correlations, screening,
regressions (one module each in this package). No I/O; deterministic for a given ``seed``."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import pandas as pd

from sinkbench.submissions.entry import Entry
from sinkbench.tables.correlations import correlations_table
from sinkbench.tables.pairs import loo_coverages, pairs_table, with_held_out_intervals
from sinkbench.tables.regressions import regressions_table
from sinkbench.tables.screening import screening_table

#: The tables of the bundle, in the order they are written and listed.
TABLE_NAMES = ("pairs", "correlations", "screening", "regressions")


@dataclass(frozen=True)
class AggregateTables:
    """The aggregated tables (each JSON/CSV output is one of these DataFrames) and the entries behind them."""

    pairs: pd.DataFrame
    correlations: pd.DataFrame
    screening: pd.DataFrame
    regressions: pd.DataFrame
    entries: tuple[Entry, ...] = ()


def build_tables(entries: Sequence[Entry], *, seed: int = 0) -> AggregateTables:
    """All tables from entries that passed validation (``load_valid_entries``); no I/O."""
    ordered = sorted(entries, key=lambda entry: (entry.kind, entry.name))
    pairs = pairs_table(ordered, seed=seed)
    coverages = loo_coverages(pairs)
    pairs = with_held_out_intervals(pairs, coverages)
    return AggregateTables(
        pairs=pairs,
        correlations=correlations_table(pairs, coverages, seed=seed),
        screening=screening_table(ordered, pairs, coverages, seed=seed),
        regressions=regressions_table(ordered),
        entries=tuple(ordered),
    )
