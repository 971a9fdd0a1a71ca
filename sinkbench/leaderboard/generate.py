"""The generated part of the leaderboard's MkDocs project, made in memory from a submissions folder: load and
validate the submissions once, build the tables once, shape views from the tables, render every page and chart,
and list the submitted files the entry pages link to.

:class:`sinkbench.leaderboard.plugin.LeaderboardPlugin` hands the result to MkDocs as virtual files, so
``mkdocs build`` and ``mkdocs serve`` at the repository's root build the leaderboard with no second step.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import subprocess
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

from sinkbench.charts import ChartCache, Rendering, start_process
from sinkbench.errors import UserError
from sinkbench.leaderboard.compare import COMPARE_DATA, ComparePage
from sinkbench.leaderboard.consistency import Fact
from sinkbench.leaderboard.content import RawFile
from sinkbench.leaderboard.experiment_pages import experiment_pages, quote_scores
from sinkbench.leaderboard.history import board_history
from sinkbench.leaderboard.pages import EntryPage, PageRenderer
from sinkbench.leaderboard.views import build_views
from sinkbench.submissions import Entry, load_valid_entries
from sinkbench.tables.build import AggregateTables, build_tables
from sinkbench.tables.write import render_tables


class DrawnCharts:
    """The SVG files of a build's charts, rendered while the build goes on (:class:`sinkbench.charts.Rendering`):
    their paths at once, their texts (:meth:`texts`) once this process has nothing else to do, so that the
    drawing overlaps the pages and MkDocs."""

    def __init__(self, paths: Sequence[str], rendering: Rendering) -> None:
        self.paths = list(paths)
        self._rendering = rendering
        self._texts: dict[str, str] | None = None
        self.seconds = 0.0  # waited for (and drawn here) in :meth:`texts`

    def __len__(self) -> int:
        return len(self.paths)

    def texts(self) -> dict[str, str]:
        """Each chart's SVG by its path (drawing here whatever the second process has not started)."""
        if self._texts is None:
            started = time.perf_counter()
            self._texts = dict(zip(self.paths, self._rendering.result(), strict=True))
            self.seconds = time.perf_counter() - started
        return self._texts

    def script(self) -> str:
        """The site's chart script (:meth:`sinkbench.charts.Rendering.script`)."""
        return self._rendering.script()

    def cancel(self) -> None:
        """Stop drawing (a failed build)."""
        self._rendering.cancel()


@dataclass(frozen=True)
class GeneratedSite:
    """Every generated file of one build, by its path in the site's docs: Markdown pages, the entry pages (HTML),
    SVG charts (drawn meanwhile) and the table downloads (text), the submitted files and the experiments' page
    files (``(site path, source)``) copied as they are; with the wall time of each stage."""

    pages: dict[str, str]
    entries: dict[str, EntryPage]
    charts: DrawnCharts
    downloads: dict[str, str]
    raw_files: list[RawFile]
    copied: list[tuple[str, Path]] = field(default_factory=list)
    timings: dict[str, float] = field(default_factory=dict)
    facts: list[Fact] = field(
        default_factory=list
    )  # figures of generated data files, for the consistency check

    def texts(self) -> Iterator[tuple[str, str]]:
        """``(path, text)`` of every generated Markdown page and download (not the entry pages nor the charts)."""
        yield from self.pages.items()
        yield from self.downloads.items()


def generate_site(
    submissions_dir: Path,
    renderer: PageRenderer,
    *,
    experiments_dir: Path | None,
    expected_pages: Sequence[str] = (),
    seed: int = 0,
    chart_cache: Path | None = None,
) -> GeneratedSite:
    """Aggregate ``submissions_dir`` and render the generated pages, charts and downloads of the site.

    Args:
        submissions_dir: The submissions root (``pairs/`` and ``backbones/``).
        renderer: Renders the site's templates.
        experiments_dir: The experiments, whose ``*/page/`` folders are published as they are
            (:mod:`sinkbench.leaderboard.experiment_pages`; None: none).
        expected_pages: The pages the site expects from the experiments; one that none gives says so.
        seed: Seed of the aggregation's bootstrap and permutation tests.
        chart_cache: Where rendered charts are kept between builds (:class:`sinkbench.charts.ChartCache`; None:
            every chart rendered).

    Raises:
        sinkbench.submissions.SubmissionsInvalid: the submissions do not validate.
        sinkbench.errors.UserError: an experiment's page folder holds a link, or two publish one path.
    """
    source_date()  # a bad SOURCE_DATE_EPOCH stops the build before any work (libraries read it too)
    timings: dict[str, float] = {}
    started = time.perf_counter()
    entries = load_valid_entries(
        submissions_dir
    )  # invalid submissions stop the build before a process starts
    # The charts' SVGs need nothing the pages make: a second process (where a second core allows), started now so
    # that its engine is loaded by the time the charts are known, renders them while this one renders the pages and
    # MkDocs runs; the plugin asks for what is left at the end.
    process = start_process()
    try:
        tables = build_tables(entries, seed=seed)
        views = build_views(tables, board_history(submissions_dir))
        experiments = experiment_pages(experiments_dir, expected_pages)
        quote_scores(views.backbones, experiments.pages)
        compare = ComparePage.of(views)
    except BaseException:
        if process is not None:
            process.pool.shutdown(wait=True, cancel_futures=True)
        raise
    timings["aggregate"] = time.perf_counter() - started
    plots = views.plots()
    cache = None if chart_cache is None else ChartCache(chart_cache)
    rendering = Rendering([plot.chart.spec() for plot in plots], cache, process)
    charts = DrawnCharts([plot.path for plot in plots], rendering)
    try:
        with _timed(timings, "pages"):
            updated = data_timestamp(submissions_dir, tables.entries)
            pages = renderer.pages(views, tables, compare, updated=updated)
            clash = sorted(pages.keys() & experiments.pages.keys())
            if clash:
                raise UserError(
                    f"{experiments_dir}: an experiment's page {clash[0]} is a page of the board. Fix: rename it"
                )
            pages |= experiments.pages
            entries = dict(renderer.entry_pages(views))
            downloads = _downloads(tables, compare)
    except BaseException:
        charts.cancel()
        raise
    return GeneratedSite(
        pages, entries, charts, downloads, views.raw_files(), experiments.files, timings, compare.facts()
    )


def _downloads(tables: AggregateTables, compare: ComparePage) -> dict[str, str]:
    """The table downloads and the Compare page's data, by their path in the site."""
    downloads = {f"downloads/{name}": text for name, text in render_tables(tables).items()}
    downloads[COMPARE_DATA] = compare.script()
    return downloads


def copy_submitted_file(source: Path, target: Path) -> None:
    """Copy a submitted file into the site, never following a link (the gate refused links; a file swapped for
    one since then fails here instead of publishing what it points to).

    A copy, not a hard link: a published file must not share its inode with the submission (the gate refuses
    hard links in submissions, and a site inside the tree would otherwise make every file one).
    """
    target.parent.mkdir(parents=True, exist_ok=True)
    descriptor = os.open(source, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
    with os.fdopen(descriptor, "rb") as reader, open(target, "wb") as writer:
        shutil.copyfileobj(reader, writer)


def data_timestamp(submissions_dir: Path, entries: Sequence[Entry]) -> str:
    """When the data last changed, in UTC: ``SOURCE_DATE_EPOCH`` when set (:func:`source_date`), else the last git
    commit touching ``submissions_dir``, else the newest modification time of an entry's files."""
    stamped = source_date()
    if stamped is not None:
        return stamped
    seconds = _last_commit(submissions_dir)
    if seconds is None:
        seconds = max((file.path.lstat().st_mtime for entry in entries for file in entry.files), default=0)
    return _utc(seconds)


def source_date() -> str | None:
    """``SOURCE_DATE_EPOCH`` in UTC, or None when it is not set.

    Raises:
        UserError: ``SOURCE_DATE_EPOCH`` is not a whole number of seconds a date can hold.
    """
    epoch = os.environ.get("SOURCE_DATE_EPOCH")
    if not epoch:
        return None
    try:
        if not re.fullmatch("[0-9]+", epoch):
            raise ValueError(epoch)
        return _utc(int(epoch))
    except (ValueError, OverflowError, OSError):
        raise UserError(
            f"SOURCE_DATE_EPOCH is {epoch[:40]!r}; set it to a whole number of seconds since "
            "1970-01-01 UTC (e.g. $(git log -1 --format=%ct)), or unset it"
        ) from None


def _utc(seconds: float) -> str:
    return datetime.fromtimestamp(seconds, timezone.utc).strftime("%Y-%m-%d %H:%M UTC")


def _last_commit(folder: Path) -> int | None:
    """The commit time of the last change to ``folder`` in its git repository, or None outside one."""
    try:
        done = subprocess.run(
            ["git", "log", "-1", "--format=%ct", "--", "."],
            cwd=folder,
            capture_output=True,
            text=True,
            timeout=20,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    text = done.stdout.strip()
    return int(text) if done.returncode == 0 and text.isdigit() else None


@contextlib.contextmanager
def _timed(timings: dict[str, float], stage: str) -> Iterator[None]:
    """Record the wall time of the ``with`` body as ``timings[stage]``."""
    started = time.perf_counter()
    yield
    timings[stage] = time.perf_counter() - started
