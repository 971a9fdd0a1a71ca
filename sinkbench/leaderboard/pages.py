"""Write the generated MkDocs sources of the leaderboard: Markdown pages from Jinja2 templates, SVG charts
and the CSV/JSON downloads; and render the content of the entry pages, which skip MkDocs' Markdown.

Templates live in ``templates/`` beside this module and render with autoescaping on, so every user-supplied string lands in
the page as text. Markdown pages put user strings only inside HTML blocks, which the project's MkDocs hook keeps
away from Markdown; entry pages (``pair.html.j2``, ``backbone.html.j2``) are plain HTML, written by
:mod:`sinkbench.leaderboard.entry_pages` into a shell page that MkDocs renders once. Trusted project prose
(``docs/home.md``, ``docs/methodology/*.md``) is inserted as Markdown.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import jinja2
from markupsafe import Markup

from sinkbench.leaderboard.content import BackboneView, CorrelationRow, PairView, PlotRef, SiteViews
from sinkbench.leaderboard.entry_pages import EntryPage, write_shells
from sinkbench.leaderboard.formatting import (
    css_token,
    format_billions,
    format_interval,
    format_number,
    format_percent,
    format_share,
    format_shown,
    number_cell,
    shown_cell,
    sort_value,
)
from sinkbench.leaderboard.sources import SiteSources
from sinkbench.leaderboard.training import TrainingPage
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
    "leave-one-pair-out and constant-baseline MAE, the leave-one-pair-out coverage of the jackknife+ and t "
    "prediction intervals, and the fit on all pairs.",
    "screening": "One row per LLM and task: rank by S, predicted Δ from the fit on all pairs with its jackknife+ "
    "prediction interval (kind, level, guarantee, held-out coverage) and the 95% t interval beside it.",
    "regressions": "One row per pair with IFEval per-prompt outcomes: both-pass, lost, gained, both-fail, net "
    "change and lost prompts per instruction category.",
}


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
        share=format_share,
        interval=format_interval,
        css_token=css_token,
    )
    environment.filters["shown"] = format_shown
    environment.filters["billions"] = format_billions
    environment.globals["num_cell"] = number_cell
    environment.globals["shown_cell"] = shown_cell
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
    repo_url: str = ""

    @classmethod
    def for_sources(cls, sources: SiteSources, docs_dir: Path) -> PageWriter:
        """A writer rendering the templates of ``sources`` into ``docs_dir``."""
        return cls(make_environment(sources.templates), docs_dir, sources.docs, sources.repo_url())

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
        pages = self._contexts(views, updated)
        for target, (template, context) in pages.items():
            self.write(template, target, **_common(views), **context)
        write_shells(self.docs_dir)
        return len(pages)

    def _contexts(self, views: SiteViews, updated: str) -> dict[str, tuple[str, dict[str, object]]]:
        """Each generated page: its file, its template and what the template is given."""
        headline = next((p for p in views.scatters if p.chart.task_label == views.headline.label), None)
        outside = [b for b in views.backbones if b.extrapolated(views.headline.task)]
        formats = [row for row in views.correlations if row.family != "control"]
        controls = [row for row in views.correlations if row.family == "control"]
        home = {
            "intro": _trusted_markdown(self.sources_dir / "home.md"),
            "counts": views.counts,
            "updated": updated,
            "headline_plot": headline,
        }
        screening = {
            "inside": [b for b in views.backbones if b not in outside],
            "outside": outside,
            "filters": _filters(views, "screening"),
            "intervals": views.correlations,
        }
        correlations = {
            "format_rows": formats,
            "control_rows": controls,
            "notes": correlation_notes(formats),
            "control_notes": correlation_notes(controls),
            "scatters": views.scatters,
        }
        methodology = {
            "sink_strength": _trusted_markdown(self.sources_dir / SINK_STRENGTH_DOC),
            "protocol": _trusted_markdown(self.sources_dir / PROTOCOL_DOC),
        }
        return {
            "index.md": ("home.md.j2", home),
            "leaderboard.md": (
                "leaderboard.md.j2",
                {"pairs": views.pairs, "filters": _filters(views, "leaderboard")},
            ),
            "screening.md": ("screening.md.j2", screening),
            "correlations.md": ("correlations.md.j2", correlations),
            "methodology.md": ("methodology.md.j2", methodology),
            "submit.md": ("submit.md.j2", {"repo_url": self.repo_url}),
        }

    def entry_pages(self, views: SiteViews) -> Iterator[EntryPage]:
        """The content of every pair and backbone page (:mod:`sinkbench.leaderboard.entry_pages`), rendered lazily."""
        pair, backbone = (self.environment.get_template(f"{kind}.html.j2") for kind in ("pair", "backbone"))
        for view in views.pairs:
            summary = f"{view.vlm.label} {view.vlm.model_id} against {view.reference.label} {view.reference.model_id}"
            content = pair.render(pair=view, **_common(views))
            yield EntryPage("pairs", view.slug, content, view.vlm.label, summary)
        for view in views.backbones:
            summary = f"{view.label} {view.model.model_id} {view.role}"
            content = backbone.render(backbone=view, **_common(views))
            yield EntryPage("backbones", view.slug, content, view.label, summary)

    def write_training_page(self, training: TrainingPage) -> int:
        """The Training dynamics page (the measured experiment, or a note that there is none). Returns 1."""
        self.write("training.md.j2", "training.md", **training.context())
        return 1

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


_SIZE_ORDER = ("<1B", "1-4B", "4-10B", "10-40B", ">40B", "unknown")


def _filters(views: SiteViews, page: str) -> list[tuple[str, str, list[str]]]:
    """Drop-down filters of the leaderboard or screening table: (row attribute, label, options)."""
    if page == "leaderboard":
        rows: Sequence[PairView | BackboneView] = views.pairs
        second = ("provenance", "Provenance", sorted({p.provenance for p in views.pairs}))
        sizes = {p.vlm.size_bucket for p in views.pairs}
    else:
        rows = views.backbones
        second = ("role", "Role", sorted({b.role for b in views.backbones}))
        sizes = {b.model.size_bucket for b in views.backbones}
    size = ("size", "Size", [bucket for bucket in _SIZE_ORDER if bucket in sizes])
    return [("qk", "QK-norm", sorted({row.qk_norm for row in rows})), size, second]


#: A fit that beats the constant mean by less than this share of the baseline's error is no real improvement.
_MARGINAL = 0.05


def _correlation_note(row: CorrelationRow) -> str | None:
    """One plain sentence on where this task's evidence stops, or None when there is nothing to warn about."""
    if row.loo_mae is None or row.baseline_mae is None or row.beats_baseline is None:
        return f"{row.label}: too few pairs ({row.n}) for a held-out fit."
    if not row.beats_baseline:
        return (
            f"{row.label}: the held-out fit's error ({row.loo_mae:.2f}) is not below the constant-mean baseline's "
            f"({row.baseline_mae:.2f}); S does not predict Δ on this task."
        )
    gain = row.baseline_mae - row.loo_mae
    if gain < _MARGINAL * row.baseline_mae:
        return (
            f"{row.label}: the held-out fit beats the constant mean by only {gain:.2f} points ({row.loo_mae:.2f} "
            f"against {row.baseline_mae:.2f}), no real improvement."
        )
    return None


def correlation_notes(rows: Sequence[CorrelationRow]) -> list[str]:
    """Plain statements of where each task's evidence stops: weak fits, and how few distinct values of S it rests on."""
    notes = [note for row in rows if (note := _correlation_note(row))]
    notes += [
        f"{row.label}: its {row.n} pairs carry {row.distinct_s} distinct values of S (pairs sharing a reference LLM share S)."
        for row in rows
        if row.distinct_s < row.n
    ]
    return notes


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
