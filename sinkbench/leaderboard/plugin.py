"""The MkDocs plugin that makes the leaderboard: ``mkdocs build`` and ``mkdocs serve`` aggregate ``submissions/``
and add every generated page, chart and download to the site as a virtual file, so the project needs no second
step. ``sinkbench site build`` runs the same project with its own ``--submissions`` and ``--out``.

Its options in ``mkdocs.yml`` (paths relative to that file)::

    plugins:
      - sinkbench:
          templates: site/templates      # the Jinja2 templates of the generated pages
          submissions: submissions       # pairs/ and backbones/
          experiments: experiments       # each experiment's page/ folder, published as it is (optional)
          experiment_pages: [training.md]  # pages the experiments give; a build without them says so
          seed: 0                        # of the bootstrap and permutation tests

It also does for every page what a theme hook would, with all state on the plugin instance (one per build): HTML
blocks bypass Markdown (:mod:`.raw_blocks`); search indexes an entry page by its names and model ids and the table
pages without the rows listing entries; an entry page lights its table's navigation tab; the 404 page links
relatively; the theme's shared parts render once per folder (:mod:`.shared_partials`); a page with an interactive
chart loads the Vega-Embed script; and the build fails when two pages show one fact as two numbers without saying
why (:mod:`.consistency`). ``mkdocs serve`` also watches the submissions and experiments folders. Invalid
submissions end the build with MkDocs' own error, listing every problem.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path
from typing import Any

from mkdocs.config import config_options as c
from mkdocs.config.base import Config
from mkdocs.config.defaults import MkDocsConfig
from mkdocs.exceptions import PluginError
from mkdocs.plugins import BasePlugin, CombinedEvent, event_priority
from mkdocs.structure.files import File, Files, InclusionLevel
from mkdocs.utils import is_error_template, normalize_url

from sinkbench import charts
from sinkbench.errors import ProblemsFound, UserError
from sinkbench.leaderboard import raw_blocks, shared_partials
from sinkbench.leaderboard.consistency import FactBook, InconsistentFigures
from sinkbench.leaderboard.generate import GeneratedSite, copy_submitted_file, generate_site
from sinkbench.leaderboard.pages import SEARCH_TEXT, UNINDEXED, PageRenderer, make_environment
from sinkbench.submissions import SubmissionsInvalid

#: The plugin's name in ``mkdocs.yml`` (its ``mkdocs.plugins`` entry point).
PLUGIN_NAME = "sinkbench"
#: The navigation page whose tab an entry page belongs to, by the page's folder.
TAB_OF_FOLDER = {"pairs": "leaderboard.md", "backbones": "screening.md"}


class LeaderboardOptions(Config):
    """The plugin's options in ``mkdocs.yml``."""

    templates = c.Type(str, default="site/templates")
    submissions = c.Type(str, default="submissions")
    experiments = c.Optional(c.Type(str))
    experiment_pages = c.ListOfItems(c.Type(str), default=[])
    seed = c.Type(int, default=0)
    #: Where rendered charts are kept between builds, relative to ``mkdocs.yml`` (empty: none kept).
    chart_cache = c.Type(str, default=".cache/charts")


class ChartFile(File):
    """A chart's SVG (or the chart script), still being made in the second process when MkDocs copies the site's
    files: written at the end of the build (:meth:`LeaderboardPlugin.on_post_build`), once its text is there."""

    def copy_file(self, dirty: bool = False) -> None:
        """Nothing yet: the plugin writes the file when its chart is drawn."""

    def write(self) -> None:
        """Write the chart into the site now."""
        super().copy_file()


class SubmittedFile(File):
    """A submitted file the entry pages link to, copied without following links."""

    def copy_file(self, dirty: bool = False) -> None:
        """Copy the file into the site (:func:`sinkbench.leaderboard.generate.copy_submitted_file`)."""
        copy_submitted_file(Path(self.abs_src_path), Path(self.abs_dest_path))


class LeaderboardPlugin(BasePlugin[LeaderboardOptions]):
    """Generates the leaderboard's pages from the submissions and renders them (see the module docstring)."""

    #: Whether a user-caused failure leaves as itself (``sinkbench site build`` reports it) instead of as MkDocs'
    #: ``PluginError`` (the error line ``mkdocs build`` prints).
    raise_user_errors = False

    def __init__(self) -> None:
        self.generated: GeneratedSite | None = None
        self.finished_generating = 0.0
        self._base = Path.cwd()
        self._contents: dict[str, str] = {}  # an entry page's content while search reads its search text
        self._lifted: dict[str, list[str]] = {}  # each page's raw blocks while Markdown runs
        self._lit: list[Any] = []  # the navigation tab an entry page lit, until the page is written
        self.facts = FactBook()
        self._charts: list[ChartFile] = []  # written once drawn

    def on_config(self, config: MkDocsConfig) -> MkDocsConfig:
        """Note the folder of ``mkdocs.yml``, against which the options' paths are resolved."""
        if config.config_file_path:
            self._base = Path(config.config_file_path).resolve().parent
        return config

    def path(self, option: str) -> Path | None:
        """The path an option names, resolved against the folder of ``mkdocs.yml`` (None when unset)."""
        value = self.config[option]
        return None if value is None else self._base / value

    def on_files(self, files: Files, config: MkDocsConfig) -> Files:
        """Generate the site and add its pages, charts, downloads, submitted files and vendored scripts."""
        renderer = PageRenderer(
            make_environment(self.path("templates")),
            Path(config.docs_dir),
            (config.repo_url or "").rstrip("/"),
        )
        try:
            self.generated = generated = generate_site(
                self.path("submissions"),
                renderer,
                experiments_dir=_shown(self.path("experiments")),
                expected_pages=self.config.experiment_pages,
                seed=self.config.seed,
                chart_cache=self.path("chart_cache") if self.config.chart_cache else None,
            )
            licence = charts.licence_notice()
        except UserError as error:  # invalid submissions included
            if self.raise_user_errors:
                raise
            raise PluginError(_message(error)) from error
        entries = [(path, entry.markdown()) for path, entry in generated.entries.items()]
        texts = [*generated.pages.items(), *generated.downloads.items(), *entries, (charts.LICENCE, licence)]
        for path, text in texts:
            # a file that replaces an excluded one is not excluded in turn
            replaced = _refuse_clash(files, path, config)
            inclusion = InclusionLevel.INCLUDED if replaced else InclusionLevel.UNDEFINED
            files.append(File.generated(config, path, content=text, inclusion=inclusion))
        self._charts = []
        for path in [*generated.charts.paths, charts.SCRIPT]:
            _refuse_clash(files, path, config)
            self._charts.append(ChartFile.generated(config, path, content=""))
            files.append(self._charts[-1])
        for path, source in [*((raw.path, raw.source) for raw in generated.raw_files), *generated.copied]:
            _refuse_clash(files, path, config)
            files.append(SubmittedFile.generated(config, path, abs_src_path=str(source)))
        self.facts = FactBook(generated.facts)
        self.finished_generating = time.perf_counter()
        return files

    def on_env(self, env: Any, config: MkDocsConfig, files: Files) -> Any:
        """Render the theme's shared partials once per page kind (:func:`shared_partials.share_partials`)."""
        shared_partials.share_partials(env)
        return env

    def on_page_markdown(self, markdown: str, page: Any, config: MkDocsConfig, files: Files) -> str:
        """Lift the page's raw HTML blocks out of the Markdown (:func:`raw_blocks.lift`)."""
        text, self._lifted[page.file.src_uri] = raw_blocks.lift(markdown)
        return text

    def on_page_content(self, html: str, page: Any, config: MkDocsConfig, files: Files) -> str:
        """Put the lifted blocks back (:func:`raw_blocks.restore`) and collect the page's facts (the theme around the
        content adds none)."""
        html = raw_blocks.restore(html, self._lifted.pop(page.file.src_uri, []))
        self.facts.read_page(page.file.src_uri, html)
        return html

    @event_priority(100)  # before the search plugin indexes the page
    def _show_search_text(self, context: dict, page: Any, config: MkDocsConfig, nav: Any) -> dict:
        """Give search an entry page's search text in place of its content and any other page without its unindexed
        rows (:data:`UNINDEXED`), and light the page's tab."""
        text = page.meta.get(SEARCH_TEXT)
        indexed = f"<p>{text}</p>" if text is not None else UNINDEXED.sub("", page.content or "")
        if indexed != page.content:
            self._contents[page.file.src_uri] = page.content
            page.content = indexed
        folder, _, rest = page.file.src_uri.partition("/")
        # an entry page lights its table's tab; a page of the navigation (no target) lights its own tab only
        target = TAB_OF_FOLDER.get(folder) if rest else None
        for tab in nav.items if target else ():
            if getattr(getattr(tab, "file", None), "src_uri", None) == target and not tab.active:
                tab.active = True
                self._lit.append(tab)
        return context

    @event_priority(-100)  # after it
    def _restore_content(self, context: dict, page: Any, config: MkDocsConfig, nav: Any) -> dict:
        """Put the entry page's content back for the theme."""
        content = self._contents.pop(page.file.src_uri, None)
        if content is not None:
            page.content = content
        return context

    on_page_context = CombinedEvent(_show_search_text, _restore_content)

    def on_template_context(self, context: dict, template_name: str, config: MkDocsConfig) -> dict:
        """Render the 404 page with links relative to the site's root, as the other pages link (MkDocs would make
        them absolute from the server's root, which breaks a site opened from disk or served under a sub-path)."""
        if is_error_template(template_name):
            context["base_url"] = "."
            context["extra_css"] = [normalize_url(path, None, ".") for path in config.extra_css]
            context["extra_javascript"] = [
                normalize_url(str(script), None, ".") for script in config.extra_javascript
            ]
        return context

    def on_post_page(self, output: str, page: Any, config: MkDocsConfig) -> str:
        """Switch a borrowed tab off again, and load the chart script where a chart needs it."""
        while self._lit:
            self._lit.pop().active = False
        return charts.load_where_needed(output, page.url)

    def on_post_build(self, config: MkDocsConfig) -> None:
        """Fail the build when two pages show one fact as two numbers and neither says why
        (:meth:`FactBook.problems`), checked while the second process still draws (a failing build does not wait for
        the charts); else write the charts, drawing those still left."""
        _release_api_memos()
        problems = self.facts.problems()
        if problems:
            error = InconsistentFigures(problems)
            if self.raise_user_errors:
                raise error
            raise PluginError(_message(error))
        if self._charts:  # generated
            drawn = self.generated.charts
            texts = {**drawn.texts(), charts.SCRIPT: drawn.rendering.script()}
            for file in self._charts:
                file.content_string = texts[file.src_uri]
                file.write()

    def on_build_error(self, error: Exception) -> None:
        """Stop drawing the charts (MkDocs reports the error that stopped the build)."""
        _release_api_memos()
        if self.generated is not None:
            self.generated.charts.rendering.cancel()

    def on_serve(self, server: Any, config: MkDocsConfig, builder: Any) -> Any:
        """Rebuild the preview when the submissions or the experiments' pages change."""
        for folder in (self.path("submissions"), self.path("experiments")):
            if folder is not None and folder.exists():
                server.watch(str(folder))
        return server


def _release_api_memos() -> None:
    """Empty two memos of the API page's libraries (mkdocstrings-python's templates per Jinja environment, griffe's
    dataclass parameters) that kept every finished build alive (about 165 MiB per 1,000-entry build), so ``mkdocs
    serve`` grew at each rebuild. A version without them, or a build that never loaded them, needs nothing."""
    for module, name in (
        ("mkdocstrings_handlers.python._internal.rendering", "_test_existing_template"),
        ("griffe._internal.extensions.dataclasses", "_dataclass_parameters"),
    ):
        memo = getattr(sys.modules.get(module), name, None)
        if hasattr(memo, "cache_clear"):
            memo.cache_clear()


def _shown(path: Path | None) -> Path | None:
    """``path`` relative to the working folder when it lies inside it: pages name the files they read, and a
    published page must not carry the absolute path of the machine that built it."""
    if path is None:
        return None
    relative = Path(os.path.relpath(path))
    return path if relative.parts[:1] == ("..",) else relative


def _refuse_clash(files: Files, path: str, config: MkDocsConfig) -> bool:
    """Refuse a file of the docs folder at a path the plugin generates (one would silently replace the other); one
    that ``exclude_docs`` leaves out of the site (a Markdown copy kept for the repository's readers) gives way, and
    True says so."""
    existing = files.get_file_from_path(path)
    if existing is None:
        return False
    if existing.inclusion.is_excluded():
        files.remove(existing)
        return True
    raise PluginError(
        f"{Path(config.docs_dir) / path}: the leaderboard generates this file; rename or remove the one in "
        "the docs folder."
    )


def _message(error: Exception) -> str:
    """The error as MkDocs prints it: every problem of invalid submissions on its own line."""
    if isinstance(error, SubmissionsInvalid):
        lines = [f"ERROR {problem}" for problem in error.problems]
        return "\n".join([*lines, f"{len(lines)} problem(s) in the submissions; nothing was built."])
    if isinstance(error, ProblemsFound):
        return "\n".join([*(f"ERROR {problem}" for problem in error.problems), error.closing])
    return str(error)
