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
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

from sinkbench.leaderboard.content import RawFile
from sinkbench.leaderboard.entry_pages import write_entry_pages
from sinkbench.leaderboard.pages import (
    INCLUDED_SOURCES,
    PageWriter,
    draw_plots,
    make_environment,
)
from sinkbench.leaderboard.views import build_views
from sinkbench.safe_io import install_directory
from sinkbench.submissions import load_valid_entries
from sinkbench.tables.build import build_tables
from sinkbench.tables.write import write_tables

#: The site's sources, shipped inside this package.
SOURCES_DIR = Path(__file__).resolve().parent


@dataclass(frozen=True)
class SiteSources:
    """Where the site's sources live (this package's folder unless told otherwise)."""

    root: Path = SOURCES_DIR

    @property
    def config(self) -> Path:
        """``mkdocs.yml`` (Material theme, navigation, Markdown extensions)."""
        return self.root / "mkdocs.yml"

    @property
    def templates(self) -> Path:
        """Jinja2 templates of the generated pages."""
        return self.root / "templates"

    @property
    def docs(self) -> Path:
        """Static pages and assets, and the prose the templates include."""
        return self.root / "docs"

    def check(self) -> None:
        """Raise FileNotFoundError naming the first missing source and how to get it."""
        for path in (self.config, self.templates, self.docs):
            if not path.exists():
                raise FileNotFoundError(
                    f"{path} is missing: the sinkbench installation is incomplete; reinstall sinkbench."
                )


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
    """Put each raw file into the site: a hard link where the file system allows one, else a copy.

    The site only serves these files, and a link costs far less than a copy where creating files is slow (about
    30 times less on the shared build machine: ~1 s at 1,000 entries). A link is the same file: a submission file
    edited in place after the build changes in the built site too, until the next build (a git checkout
    replaces files instead, which leaves the built copy alone).
    """
    folders: set[Path] = set()
    for file in files:
        target = site_dir / file.path
        if target.parent not in folders:
            target.parent.mkdir(parents=True, exist_ok=True)
            folders.add(target.parent)
        try:
            os.link(file.source, target)
        except OSError:  # another device, no hard links there, or linking refused (fs.protected_hardlinks)
            shutil.copyfile(file.source, target)


def build_timestamp() -> str:
    """The build time in UTC, or ``SOURCE_DATE_EPOCH`` when set (reproducible builds)."""
    epoch = os.environ.get("SOURCE_DATE_EPOCH")
    moment = datetime.fromtimestamp(int(epoch), timezone.utc) if epoch else datetime.now(timezone.utc)
    return moment.strftime("%Y-%m-%d %H:%M UTC")


def build_site(
    submissions_dir: Path = Path("submissions"),
    out_dir: Path = Path("_site"),
    *,
    sources: SiteSources | None = None,
    seed: int = 0,
) -> BuildReport:
    """Aggregate ``submissions_dir`` and build the static site into ``out_dir`` (replaced atomically).

    Args:
        submissions_dir: The submissions root (``pairs/`` and ``backbones/``).
        out_dir: Where the finished site goes; an existing folder there is replaced.
        sources: The folder holding ``mkdocs.yml``, ``templates/`` and ``docs/``; defaults to this package's.
        seed: Seed of the aggregation's bootstrap and permutation tests.

    Raises:
        sinkbench.submissions.SubmissionsInvalid: the submissions do not validate; nothing is written.
        FileNotFoundError: a source is missing.
        mkdocs.exceptions.Abort: MkDocs reported a warning or error (strict mode).
    """
    sources = sources or SiteSources()
    sources.check()
    submissions_dir, out_dir = Path(submissions_dir), Path(out_dir).resolve()
    out_dir.parent.mkdir(parents=True, exist_ok=True)
    timings: dict[str, float] = {}
    with tempfile.TemporaryDirectory(prefix=f".{out_dir.name}.build-", dir=out_dir.parent) as work:
        docs_dir, site_dir = Path(work) / "docs", Path(work) / "site"
        with _timed(timings, "aggregate"):
            _copy_static(sources, docs_dir)
            tables = build_tables(load_valid_entries(submissions_dir), seed=seed)
            write_tables(tables, docs_dir / "downloads")
            views = build_views(tables)
        with _timed(timings, "pages"):
            writer = PageWriter(make_environment(sources.templates), docs_dir, sources.docs)
            pages = writer.write_all(views, updated=build_timestamp()) + writer.write_downloads_page(tables)
        with _timed(timings, "plots"):
            plots = draw_plots(views.plots(), docs_dir)
        with _timed(timings, "mkdocs"):
            _run_mkdocs(sources.config, docs_dir, site_dir)
        with _timed(timings, "entries"):
            pages += write_entry_pages(site_dir, writer.entry_pages(views))
        with _timed(timings, "install"):
            _add_raw_files(views.raw_files(), site_dir)
            install_directory(site_dir, out_dir, replace=True)
    return BuildReport(out_dir, pages, plots, len(views.raw_files()), timings)


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
