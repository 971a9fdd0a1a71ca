"""Build and preview the leaderboard site, one way through the data: load and validate the submissions once,
build the tables once, shape views from the tables, render pages and charts, run MkDocs, write the entry pages
(:mod:`sinkbench.leaderboard.entry_pages`), publish.

:func:`build_site` works in a temporary folder beside the output and moves the finished site into place
only when every step succeeded, so a failed build never leaves a half-written site behind. Its sources ship
inside this package (``mkdocs.yml``, ``templates/`` for Jinja2, ``docs/`` for static pages, assets and the
included prose), so an installed sinkbench builds a site from any submissions folder.
"""

from __future__ import annotations

import contextlib
import functools
import http.server
import os
import shutil
import subprocess
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

from sinkbench.leaderboard.content import RawFile, SiteViews
from sinkbench.leaderboard.entry_pages import write_entry_pages
from sinkbench.leaderboard.pages import (
    INCLUDED_SOURCES,
    PageWriter,
    draw_plots,
)
from sinkbench.leaderboard.sources import EXPERIMENTS_DIR, SiteSources
from sinkbench.leaderboard.training import TrainingPage, find_testbed
from sinkbench.leaderboard.views import build_views
from sinkbench.publish import publishing, scratch_folder
from sinkbench.submissions import Entry, load_valid_entries
from sinkbench.tables.build import AggregateTables, build_tables
from sinkbench.tables.write import write_tables


@dataclass(frozen=True)
class BuildReport:
    """What a build produced, and how long each stage took (seconds)."""

    site_dir: Path
    pages: int
    plots: int
    raw_files: int
    timings: dict[str, float]


def _copy_static(sources: SiteSources, docs_dir: Path) -> None:
    """Copy ``docs/`` into the generated docs folder, leaving out the prose templates include."""
    ignore = shutil.ignore_patterns(*INCLUDED_SOURCES)
    shutil.copytree(
        sources.docs,
        docs_dir,
        ignore=lambda folder, names: ignore(folder, names) if Path(folder) == sources.docs else set(),
    )


def _run_mkdocs(config_file: Path, docs_dir: Path, site_dir: Path) -> None:
    """``mkdocs build --strict`` of ``docs_dir`` into ``site_dir`` through MkDocs' Python API."""
    from mkdocs.commands.build import build
    from mkdocs.config import load_config

    build(load_config(str(config_file), docs_dir=str(docs_dir), site_dir=str(site_dir), strict=True))


def _add_raw_files(files: list[RawFile], site_dir: Path) -> None:
    """Copy each raw file into the site, never following a link (the gate refused links; a file swapped for
    one since then fails here instead of publishing what it points to).

    Copies, not hard links: a published file must not share its inode with the submission (the gate refuses
    hard links in submissions, and a site inside the tree would otherwise make every file one).
    """
    folders: set[Path] = set()
    for file in files:
        target = site_dir / file.path
        if target.parent not in folders:
            target.parent.mkdir(parents=True, exist_ok=True)
            folders.add(target.parent)
        source = os.open(file.source, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
        with os.fdopen(source, "rb") as reader, open(target, "wb") as writer:
            shutil.copyfileobj(reader, writer)


def data_timestamp(submissions_dir: Path, entries: Sequence[Entry]) -> str:
    """When the data last changed, in UTC: ``SOURCE_DATE_EPOCH`` when set, else the last git commit touching
    ``submissions_dir``, else the newest modification time of an entry's files."""
    epoch = os.environ.get("SOURCE_DATE_EPOCH")
    seconds = int(epoch) if epoch else _last_commit(submissions_dir)
    if seconds is None:
        seconds = max((file.path.lstat().st_mtime for entry in entries for file in entry.files), default=0)
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


def build_site(
    submissions_dir: Path = Path("submissions"),
    out_dir: Path = Path("_site"),
    *,
    sources: SiteSources | None = None,
    experiments_dir: Path | None = EXPERIMENTS_DIR,
    seed: int = 0,
) -> BuildReport:
    """Aggregate ``submissions_dir`` and build the static site into ``out_dir`` (replaced atomically).

    Args:
        submissions_dir: The submissions root (``pairs/`` and ``backbones/``).
        out_dir: Where the finished site goes, published as a whole (:func:`sinkbench.publish.publishing`): an
            earlier site there is replaced atomically; a folder sinkbench did not write is refused.
        sources: The folder holding ``mkdocs.yml``, ``templates/`` and ``docs/``; defaults to this package's.
        experiments_dir: Where the Training dynamics page finds the experiment's results (None, or a folder
            without them: the page says so).
        seed: Seed of the aggregation's bootstrap and permutation tests.

    Raises:
        sinkbench.submissions.SubmissionsInvalid: the submissions do not validate; nothing is written.
        sinkbench.leaderboard.sources.SourceInvalid: the experiment's results file cannot be read; nothing is
            written.
        FileNotFoundError: a source is missing.
        mkdocs.exceptions.Abort: MkDocs reported a warning or error (strict mode).
        sinkbench.publish.PublishError: ``out_dir`` is locked by another run, not a site, or not writable.
    """
    sources = sources or SiteSources()
    sources.check()
    timings: dict[str, float] = {}
    with _timed(timings, "aggregate"):
        tables = build_tables(load_valid_entries(submissions_dir), seed=seed)
        views = build_views(tables)
        training = TrainingPage(experiments_dir, find_testbed(experiments_dir))
    with publishing(Path(out_dir)) as site_dir:
        docs_dir = scratch_folder(Path(os.path.abspath(out_dir))) / "docs"
        try:
            pages, plots = _render(sources, tables, views, training, docs_dir, timings, Path(submissions_dir))
            with _timed(timings, "mkdocs"):
                _run_mkdocs(sources.config, docs_dir, site_dir)
            with _timed(timings, "entries"):
                pages += write_entry_pages(
                    site_dir, PageWriter.for_sources(sources, docs_dir).entry_pages(views)
                )
            with _timed(timings, "install"):
                _add_raw_files(views.raw_files(), site_dir)
        finally:
            shutil.rmtree(docs_dir.parent, ignore_errors=True)
    return BuildReport(Path(out_dir).absolute(), pages, plots, len(views.raw_files()), timings)


def _render(
    sources: SiteSources,
    tables: AggregateTables,
    views: SiteViews,
    training: TrainingPage,
    docs_dir: Path,
    timings: dict[str, float],
    submissions_dir: Path,
) -> tuple[int, int]:
    """Write the MkDocs sources: static files, downloads, pages and charts. Returns (pages, charts)."""
    with _timed(timings, "pages"):
        _copy_static(sources, docs_dir)
        (docs_dir / "downloads").mkdir(parents=True, exist_ok=True)
        write_tables(tables, docs_dir / "downloads")
        writer = PageWriter.for_sources(sources, docs_dir)
        pages = (
            writer.write_all(views, updated=data_timestamp(submissions_dir, tables.entries))
            + writer.write_downloads_page(tables)
            + writer.write_training_page(training)
        )
    with _timed(timings, "plots"):
        plots = draw_plots([*views.plots(), *training.plots()], docs_dir)
    return pages, plots


@contextlib.contextmanager
def _timed(timings: dict[str, float], stage: str) -> Iterator[None]:
    """Record the wall time of the ``with`` body as ``timings[stage]``."""
    started = time.perf_counter()
    yield
    timings[stage] = time.perf_counter() - started


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    """Serves files without logging every request to stderr."""

    def log_message(self, format: str, *args: object) -> None:
        pass


def make_server(site_dir: Path, *, host: str = "127.0.0.1", port: int = 0) -> http.server.ThreadingHTTPServer:
    """An HTTP server for a built site (``port=0`` picks a free port; see ``server_address``)."""
    handler = functools.partial(_QuietHandler, directory=str(site_dir))
    return http.server.ThreadingHTTPServer((host, port), handler)


def serve_site(site_dir: Path, *, host: str = "127.0.0.1", port: int = 8000) -> None:
    """Serve a built site over HTTP until interrupted (Ctrl-C)."""
    with make_server(site_dir, host=host, port=port) as server:
        print(f"Serving {site_dir} at http://{host}:{server.server_address[1]}/ (Ctrl-C to stop)")
        with contextlib.suppress(KeyboardInterrupt):
            server.serve_forever()
