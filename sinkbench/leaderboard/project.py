"""The leaderboard's MkDocs project run on a chosen submissions folder: ``sinkbench site build`` (published
atomically into ``--out``) and ``sinkbench site serve`` (live-reloading preview). Both load the project's one
``mkdocs.yml`` (:class:`~sinkbench.leaderboard.sources.SiteSources`) and set its ``sinkbench`` plugin's options, so
``mkdocs build`` at the repository's root and ``sinkbench site build`` give the same site."""

from __future__ import annotations

import contextlib
import gc
import logging
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sinkbench.errors import UserError
from sinkbench.leaderboard.plugin import PLUGIN_NAME, LeaderboardPlugin
from sinkbench.leaderboard.sources import EXPERIMENTS_DIR, SiteSources
from sinkbench.publish import publishing, refuse_overlap

#: Allocations between two young-generation collections while a site builds (Python's default: 700).
BUILD_GC_THRESHOLD = 50_000


class SiteBuildFailed(UserError):
    """MkDocs refused the site (in strict mode, a warning, e.g. a broken link in an edited page); the warnings
    themselves were printed above this one line."""


@dataclass(frozen=True)
class BuildReport:
    """What a build produced (``pages``: every HTML page, generated or static, but the 404), and how long each
    stage took (seconds; ``publish``: flushing the site to disk and moving it into place; ``total``: all of it)."""

    site_dir: Path
    pages: int
    plots: int
    raw_files: int
    timings: dict[str, float]


def build_site(
    submissions_dir: Path = Path("submissions"),
    out_dir: Path = Path("_site"),
    *,
    sources: SiteSources | None = None,
    experiments_dir: Path | None = EXPERIMENTS_DIR,
    seed: int = 0,
    chart_cache: Path | None = None,
) -> BuildReport:
    """Build the site of ``submissions_dir`` into ``out_dir`` (``mkdocs build --strict``, replaced atomically).

    Args:
        submissions_dir: The submissions root (``pairs/`` and ``backbones/``).
        out_dir: Where the finished site goes, published as a whole (:func:`sinkbench.publish.publishing`): an
            earlier site there is replaced atomically; a folder sinkbench did not write is refused.
        sources: The folder holding ``mkdocs.yml`` and ``site/``; defaults to the project's.
        experiments_dir: The experiments whose pages the site publishes (None, or a folder without them: each
            page the site expects from them says so).
        seed: Seed of the aggregation's bootstrap and permutation tests.
        chart_cache: Where rendered charts are kept between builds (None: the plugin's ``chart_cache`` option,
            ``.cache/charts`` beside ``mkdocs.yml``).

    Raises:
        sinkbench.submissions.SubmissionsInvalid: the submissions do not validate; nothing is written.
        sinkbench.errors.UserError: an experiment's page folder holds a link or a page of the board, or
            ``out_dir`` and ``submissions_dir`` overlap; nothing is written.
        SiteBuildFailed: MkDocs reported a warning or an error (strict mode); nothing is written.
        FileNotFoundError: a source is missing.
        sinkbench.publish.PublishError: ``out_dir`` is locked by another run, not a site, or not writable.
    """
    from mkdocs.commands.build import build
    from mkdocs.config import load_config
    from mkdocs.exceptions import Abort

    sources = sources or SiteSources()
    sources.check()
    refuse_overlap(out_dir, submissions_dir, "--submissions")
    with publishing(Path(out_dir), "site") as site_dir:
        plugins = _plugins(sources, submissions_dir, experiments_dir, seed)
        if chart_cache is not None:
            plugins[PLUGIN_NAME]["chart_cache"] = str(Path(chart_cache).absolute())
        config = load_config(str(sources.config), plugins=plugins, site_dir=str(site_dir), strict=True)
        plugin: LeaderboardPlugin = config.plugins[PLUGIN_NAME]
        plugin.raise_user_errors = True
        started = time.perf_counter()
        try:
            with fewer_collections(), mkdocs_log(logging.WARNING):
                build(config)
        except Abort as error:
            raise SiteBuildFailed(f"MkDocs stopped the build: {error.message}") from None
        generated = plugin.generated
        plots = generated.charts.seconds  # waited for at the end of MkDocs' build
        mkdocs = time.perf_counter() - plugin.finished_generating - plots
        timings = {**generated.timings, "mkdocs": mkdocs, "plots": plots}
        built = time.perf_counter()
    timings["publish"] = time.perf_counter() - built  # flushed to disk and moved into place
    timings["total"] = time.perf_counter() - started
    pages = sum(page.name != "404.html" for page in Path(out_dir).rglob("*.html"))  # generated and static
    return BuildReport(
        Path(out_dir).absolute(), pages, len(generated.charts.paths), len(generated.raw_files), timings
    )


@contextlib.contextmanager
def fewer_collections(threshold: int = BUILD_GC_THRESHOLD) -> Iterator[None]:
    """Run the ``with`` body with the cyclic garbage collector started ``threshold`` allocations apart (not 700).

    A build's millions of small objects mostly live until it ends, so at the default the collector rescans them
    (seconds of a 1,000-entry build); the build makes little cyclic garbage, so the peak memory is unchanged.
    """
    previous = gc.get_threshold()
    gc.set_threshold(threshold, *previous[1:])
    try:
        yield
    finally:
        gc.set_threshold(*previous)


def serve_site(
    submissions_dir: Path = Path("submissions"),
    *,
    sources: SiteSources | None = None,
    experiments_dir: Path | None = EXPERIMENTS_DIR,
    host: str = "127.0.0.1",
    port: int = 8000,
) -> None:
    """Serve the site of ``submissions_dir`` with ``mkdocs serve`` until interrupted (Ctrl-C): it rebuilds and
    reloads the page whenever a template, a docs page, ``mkdocs.yml``, a submission or an experiment's page
    change."""
    from mkdocs.commands.serve import serve

    sources = sources or SiteSources()
    sources.check()
    with mkdocs_log(logging.INFO):
        serve(
            config_file=str(sources.config),
            dev_addr=f"{host}:{port}",
            plugins=_plugins(sources, submissions_dir, experiments_dir, seed=0),
        )


@contextlib.contextmanager
def mkdocs_log(level: int) -> Iterator[None]:
    """Print MkDocs' log records from ``level`` up on stderr for the ``with`` body (a strict build's warnings
    would otherwise only be counted, never shown)."""
    handler = logging.StreamHandler()
    handler.setLevel(level)
    handler.setFormatter(logging.Formatter("%(levelname)-7s -  %(message)s"))
    logger = logging.getLogger("mkdocs")
    previous = logger.level
    logger.addHandler(handler)
    logger.setLevel(min(level, previous or level))
    try:
        yield
    finally:
        logger.removeHandler(handler)
        logger.setLevel(previous)


def _plugins(
    sources: SiteSources, submissions_dir: Path, experiments_dir: Path | None, seed: int
) -> dict[str, Any]:
    """The plugins of ``mkdocs.yml`` (name -> options, in order) with the ``sinkbench`` plugin's folders and seed
    replaced. A mapping, which MkDocs reads without changing it, so ``mkdocs serve`` can reload it."""
    from mkdocs.utils.yaml import yaml_load

    with sources.config.open(encoding="utf-8") as stream:
        listed = yaml_load(stream).get("plugins") or []
    plugins: dict[str, Any] = {}
    for item in listed:
        name, options = (item, {}) if isinstance(item, str) else next(iter(item.items()))
        plugins[name] = dict(options or {})
    plugins.setdefault(PLUGIN_NAME, {}).update(
        submissions=str(Path(submissions_dir).absolute()),
        experiments=None if experiments_dir is None else str(Path(experiments_dir).absolute()),
        seed=seed,
    )
    return plugins
