"""Write the generated MkDocs sources of the leaderboard: Markdown pages from Jinja2 templates, SVG charts
and the CSV/JSON downloads; and render the content of the entry pages, which skip MkDocs' Markdown.

Templates live in ``templates/`` beside this module and render with autoescaping on, so every user-supplied string lands in
the page as text. Markdown pages put user strings only inside HTML blocks, which the project's MkDocs hook keeps
away from Markdown; entry pages (``pair.html.j2``, ``backbone.html.j2``) are plain HTML, written by
:mod:`sinkbench.leaderboard.entry_pages` into a shell page that MkDocs renders once. Trusted project prose
(``docs/home.md``, ``docs/methodology/*.md``) is inserted as Markdown.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import jinja2
from markupsafe import Markup

from sinkbench.leaderboard.content import BackboneView, PairView, PlotRef, Prediction, SiteViews
from sinkbench.leaderboard.entry_pages import EntryPage, write_shells
from sinkbench.leaderboard.sources import SiteSources
from sinkbench.numbers import finite_or_none
from sinkbench.tables.build import AggregateTables

#: Markdown from ``docs/`` that templates include instead of publishing as pages of their own.
INCLUDED_SOURCES = ("home.md", "methodology")
#: The lead's definition of S and the choices made where the paper is silent (optional until written).
SINK_STRENGTH_DOC = "methodology/sink-strength.md"
PROTOCOL_DOC = "methodology/evaluation-protocol.md"

#: Each downloadable table: what it holds, for the Downloads page.
TABLE_DESCRIPTIONS = {
    "pairs": "One row per pair and task: scores, Δ in points, relative degradation, S, QK-norm class, "
    "provenance and the leave-one-pair-out predicted Δ.",
    "correlations": "One row per task: Spearman and Kendall of S against Δ, bootstrap CI, permutation p-value, "
    "leave-one-pair-out and constant-baseline MAE, and the fit on all pairs.",
    "screening": "One row per LLM and task: rank by S, predicted Δ from the fit on all pairs and its 95% "
    "prediction interval.",
    "regressions": "One row per pair with IFEval per-prompt outcomes: both-pass, lost, gained, both-fail, net "
    "change and lost prompts per instruction category.",
}
_MINUS = "\u2212"
_DASH = "\u2013"


def format_number(value: float | None, digits: int = 2, signed: bool = False) -> str:
    """``value`` with ``digits`` decimals, a true minus sign, ``+`` when ``signed``; an en dash if missing."""
    if finite_or_none(value) is None:
        return _DASH
    text = f"{value:+.{digits}f}" if signed else f"{value:.{digits}f}"
    return text.replace("-", _MINUS)


def sort_value(value: float | None) -> str:
    """The ``data-sort`` attribute of a numeric cell: plain digits, empty when missing."""
    if finite_or_none(value) is None:
        return ""
    return format(value, ".10g")


def number_cell(value: float | None, digits: int = 2, signed: bool = False, tone: bool = False) -> Markup:
    """A table cell of a number (:func:`format_number`) with its ``data-sort`` key, red or green by sign if ``tone``.

    The templates' ``num_cell`` global: a Python function renders the thousands of cells of a large site several
    times faster than a Jinja macro. The markup is safe: only formatted numbers go into it.
    """
    classes = "sb-num"
    if tone and value is not None and value < 0:
        classes += " sb-loss"
    elif tone and value is not None and value > 0:
        classes += " sb-gain"
    text = format_number(value, digits, signed)
    return Markup(f'<td class="{classes}" data-sort="{sort_value(value)}">{text}</td>')


def format_percent(value: float | None) -> str:
    """A fraction as a signed percentage with one decimal."""
    return _DASH if value is None else f"{format_number(100 * value, 1, signed=True)}%"


def format_interval(value: Prediction | Sequence[float | None] | None, digits: int = 1) -> str:
    """``[low, high]`` of a prediction or a pair of numbers; an en dash if missing."""
    if value is None:
        return _DASH
    low, high = (value.low, value.high) if isinstance(value, Prediction) else value
    if low is None or high is None:
        return _DASH
    return f"[{format_number(low, digits)}, {format_number(high, digits)}]"


def css_token(value: str) -> str:
    """A value reduced to ``[a-z0-9-]`` for use in a class name."""
    return re.sub(r"[^a-z0-9-]+", "-", value.lower()).strip("-") or "unknown"


def make_environment(templates_dir: Path) -> jinja2.Environment:
    """The Jinja2 environment of the site: autoescape on, undefined names are errors."""
    environment = jinja2.Environment(
        loader=jinja2.FileSystemLoader(templates_dir),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
    )
    environment.filters.update(
        num=format_number,
        sort_value=sort_value,
        percent=format_percent,
        interval=format_interval,
        css_token=css_token,
    )
    environment.globals["num_cell"] = number_cell
    return environment


def _trusted_markdown(path: Path) -> Markup | None:
    """Project prose inserted as Markdown (not escaped), or None when the file does not exist."""
    return Markup(path.read_text(encoding="utf-8")) if path.is_file() else None


@dataclass(frozen=True)
class PageWriter:
    """Renders templates from ``templates_dir`` into ``docs_dir``; ``sources_dir`` holds the included prose."""

    environment: jinja2.Environment
    docs_dir: Path
    sources_dir: Path

    @classmethod
    def for_sources(cls, sources: SiteSources, docs_dir: Path) -> PageWriter:
        """A writer rendering the templates of ``sources`` into ``docs_dir``."""
        return cls(make_environment(sources.templates), docs_dir, sources.docs)

    def write(self, template: str, target: str, **context: object) -> None:
        """Render ``template`` with ``context`` to ``docs_dir/target``."""
        path = self.docs_dir / target
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(self.environment.get_template(template).render(**context), encoding="utf-8")

    def write_all(self, views: SiteViews, *, updated: str) -> int:
        """Write the Markdown of every page but Downloads and the entry pages, and the entry page shells.

        Returns:
            How many pages were written (not counting the shells).
        """
        headline = next((p for p in views.scatters if p.chart.task_label == views.headline.label), None)
        pages: dict[str, tuple[str, dict[str, object]]] = {
            "index.md": (
                "home.md.j2",
                {
                    "intro": _trusted_markdown(self.sources_dir / "home.md"),
                    "counts": views.counts,
                    "updated": updated,
                    "headline_plot": headline,
                },
            ),
            "leaderboard.md": (
                "leaderboard.md.j2",
                {"pairs": views.pairs, "filters": _filters(views, "leaderboard")},
            ),
            "screening.md": (
                "screening.md.j2",
                {"backbones": views.backbones, "filters": _filters(views, "screening")},
            ),
            "correlations.md": (
                "correlations.md.j2",
                {"correlations": views.correlations, "scatters": views.scatters},
            ),
            "methodology.md": (
                "methodology.md.j2",
                {
                    "sink_strength": _trusted_markdown(self.sources_dir / SINK_STRENGTH_DOC),
                    "protocol": _trusted_markdown(self.sources_dir / PROTOCOL_DOC),
                },
            ),
        }
        for target, (template, context) in pages.items():
            self.write(template, target, **_common(views), **context)
        write_shells(self.docs_dir)
        return len(pages)

    def entry_pages(self, views: SiteViews) -> Iterator[EntryPage]:
        """The content of every pair and backbone page (:mod:`sinkbench.leaderboard.entry_pages`), rendered lazily."""
        pair, backbone = (self.environment.get_template(f"{kind}.html.j2") for kind in ("pair", "backbone"))
        for view in views.pairs:
            yield EntryPage("pairs", view.slug, pair.render(pair=view, **_common(views)))
        for view in views.backbones:
            yield EntryPage("backbones", view.slug, backbone.render(backbone=view, **_common(views)))

    def write_downloads_page(self, tables: AggregateTables) -> int:
        """The Downloads page: every table with its row count and columns. Returns 1 (one page)."""
        rows = [
            {"name": name, "rows": len(frame), "columns": list(frame.columns), "description": description}
            for name, description in TABLE_DESCRIPTIONS.items()
            if (frame := getattr(tables, name)) is not None
        ]
        self.write("downloads.md.j2", "downloads.md", tables=rows)
        return 1


def _common(views: SiteViews) -> dict[str, object]:
    """Context every page template gets."""
    return {"task_columns": views.task_columns, "headline": views.headline}


def _filters(views: SiteViews, page: str) -> list[tuple[str, str, list[str]]]:
    """Drop-down filters of the leaderboard or screening table: (row attribute, label, options)."""
    if page == "leaderboard":
        rows: Sequence[PairView | BackboneView] = views.pairs
        second = ("provenance", "Provenance", sorted({p.provenance for p in views.pairs}))
    else:
        rows = views.backbones
        second = ("role", "Role", sorted({b.role for b in views.backbones}))
    return [("qk", "QK-norm", sorted({row.qk_norm for row in rows})), second]


def draw_plots(plots: Iterable[PlotRef], docs_dir: Path) -> int:
    """Draw every chart to its SVG file under ``docs_dir``; return how many.

    In this process: the per-entry heatmaps take about a millisecond each and the matplotlib charts are one per
    task or per pair with IFEval samples, so worker processes would cost more to start than they save.
    """
    plots = list(plots)
    for plot in plots:
        path = docs_dir / plot.path
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(plot.chart.svg(), encoding="utf-8")
    return len(plots)
