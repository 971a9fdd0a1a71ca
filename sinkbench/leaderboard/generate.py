"""The generated part of the leaderboard's MkDocs project, made in memory from a submissions folder (validated once,
tables built once, views shaped, every page and chart rendered, submitted files listed), which the plugin hands to
MkDocs as virtual files."""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

from sinkbench.charts import ChartCache, Rendering, start_process
from sinkbench.errors import UserError
from sinkbench.leaderboard.compare import COMPARE_DATA, ComparePage
from sinkbench.leaderboard.consistency import Fact
from sinkbench.leaderboard.content import RawFile
from sinkbench.leaderboard.experiment_pages import experiment_pages, quote_scores
from sinkbench.leaderboard.history import board_history, git_output
from sinkbench.leaderboard.pages import EntryPage, PageRenderer
from sinkbench.leaderboard.views import build_views
from sinkbench.submissions import Entry, load_valid_entries
from sinkbench.tables.build import build_tables
from sinkbench.tables.write import render_tables


@dataclass
class DrawnCharts:
    """The SVG files of a build's charts, rendered while the build goes on (:class:`sinkbench.charts.Rendering`):
    their paths at once, their texts (:meth:`texts`) once this process has nothing else to do, so that the
    drawing overlaps the pages and MkDocs."""

    paths: list[str]
    rendering: Rendering
    seconds: float = 0.0  # waited for (and drawn here) in :meth:`texts`

    def texts(self) -> dict[str, str]:
        """Each chart's SVG by its path (drawing here whatever the second process has not started)."""
        started = time.perf_counter()
        texts = dict(zip(self.paths, self.rendering.result(), strict=True))
        self.seconds = time.perf_counter() - started
        return texts


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
    #: Figures of generated data files, for the consistency check.
    facts: list[Fact] = field(default_factory=list)


def generate_site(
    submissions_dir: Path,
    renderer: PageRenderer,
    *,
    experiments_dir: Path | None,
    expected_pages: Sequence[str] = (),
    seed: int = 0,
    chart_cache: Path | None = None,
) -> GeneratedSite:
    """Aggregate ``submissions_dir`` and render the generated pages, charts and downloads of the site; the
    experiments' ``*/page/`` folders are published as they are (``expected_pages``: those the site expects), and
    ``chart_cache`` keeps rendered charts between builds (None: every chart rendered).

    Raises:
        sinkbench.submissions.SubmissionsInvalid: the submissions do not validate.
        sinkbench.errors.UserError: an experiment's page folder holds a link, or two publish one path.
    """
    source_date()  # a bad SOURCE_DATE_EPOCH stops the build before any work (libraries read it too)
    timings: dict[str, float] = {}
    started = time.perf_counter()
    # invalid submissions stop the build before a process starts
    entries = load_valid_entries(submissions_dir)
    # The charts' SVGs need nothing the pages make: a second process (where a second core allows) renders them while
    # this one renders the pages and MkDocs runs; the plugin asks for what is left at the end. Where the cache lacks
    # the chart script, the process is started now to bundle it meanwhile (about a second); else only once charts
    # are missing from the cache (reading the script touches it: the cache's pruning keeps it).
    cache = None if chart_cache is None else ChartCache(chart_cache)
    process = None if cache is not None and cache.get(cache.script_path) is not None else start_process()
    try:
        tables = build_tables(entries, seed=seed)
        views = build_views(tables, board_history(submissions_dir))
        experiments = experiment_pages(experiments_dir, expected_pages)
        quote_scores(views.backbones, experiments.pages)
        compare = ComparePage.of(views)
        timings["aggregate"] = time.perf_counter() - started
        plots = views.plots()
        rendering = Rendering([plot.chart.spec() for plot in plots], cache, process)
    except BaseException:
        if process is not None:
            process.stop()
        raise
    charts = DrawnCharts([plot.path for plot in plots], rendering)
    try:
        started = time.perf_counter()
        updated = data_timestamp(submissions_dir, tables.entries)
        pages = renderer.pages(views, tables, compare, updated=updated)
        clash = sorted(pages.keys() & experiments.pages.keys())
        if clash:
            raise UserError(
                f"{experiments_dir}: an experiment's page {clash[0]} is a page of the board. Fix: rename it"
            )
        pages |= experiments.pages
        entries = dict(renderer.entry_pages(views))
        downloads = {f"downloads/{name}": text for name, text in render_tables(tables).items()}
        downloads[COMPARE_DATA] = compare.script()
        timings["pages"] = time.perf_counter() - started
    except BaseException:
        rendering.cancel()
        raise
    return GeneratedSite(
        pages, entries, charts, downloads, views.raw_files(), experiments.files, timings, compare.facts()
    )


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
    commit = (git_output(submissions_dir, "log", "-1", "--format=%ct", "--", ".", timeout=20) or "").strip()
    if commit.isdigit():
        return _utc(int(commit))
    return _utc(max((file.path.lstat().st_mtime for entry in entries for file in entry.files), default=0))


def source_date() -> str | None:
    """``SOURCE_DATE_EPOCH`` in UTC, or None when it is not set.

    Raises:
        UserError: ``SOURCE_DATE_EPOCH`` is not a whole number of seconds a date can hold.
    """
    epoch = os.environ.get("SOURCE_DATE_EPOCH")
    if not epoch:
        return None
    if re.fullmatch("[0-9]+", epoch):
        with contextlib.suppress(ValueError, OverflowError, OSError):
            return _utc(int(epoch))
    raise UserError(
        f"SOURCE_DATE_EPOCH is {epoch[:40]!r}; set it to a whole number of seconds since "
        "1970-01-01 UTC (e.g. $(git log -1 --format=%ct)), or unset it"
    )


def _utc(seconds: float) -> str:
    return datetime.fromtimestamp(seconds, timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
