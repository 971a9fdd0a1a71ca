"""Render the generated pages of the leaderboard (Markdown from the Jinja2 templates of ``site/templates/``): one
per table view and one per pair and per backbone; nothing here writes a file.

Templates autoescape, so every user-supplied string lands in the page as text, and put user strings only inside
HTML blocks, which the plugin keeps away from Markdown (entry pages are such a block whole, under an escaped title).
Trusted project prose (``site/docs/home.md``, ``site/docs/methodology/*.md``) is inserted as Markdown.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import jinja2
from markupsafe import Markup, escape

from sinkbench.conformance.table import SECTIONS, encoder_note, load, summary
from sinkbench.conformance.verdicts import EQUAL, EQUAL_LOGITS_ONLY, FAILED, REFUSED, UNTESTED
from sinkbench.leaderboard.backbone_views import ordering
from sinkbench.leaderboard.compare import ComparePage
from sinkbench.leaderboard.consistency import fact_attributes, fact_key, model_ref
from sinkbench.leaderboard.content import BackboneView, PairView, SiteViews
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
from sinkbench.tables.build import AggregateTables
from sinkbench.tables.rules import RULES
from sinkbench.tables.screening import REPORTED_S_BAND

#: The lead's definition of S and the choices made where the paper is silent (optional until written).
SINK_STRENGTH_DOC = "methodology/sink-strength.md"
PROTOCOL_DOC = "methodology/evaluation-protocol.md"

#: The front-matter key of the text that search indexes for an entry page instead of its whole content (tables
#: of every metric, which would make the index large and the build slow): its names and model ids.
SEARCH_TEXT = "sinkbench_search_text"
#: What search leaves out of the other pages: the rows of the tables that list the board's entries (Leaderboard,
#: Screening, Compare's choices), which templates put between these two comments. Search finds each entry by its
#: own page; indexing the rows again would more than double the index on a large board and slow its build.
UNINDEXED = re.compile(r"<!--sb:unindexed-->.*?<!--/sb:unindexed-->", re.DOTALL)

#: Each downloadable table: what it holds, for the Downloads page.
TABLE_DESCRIPTIONS = {
    "pairs": "One row per pair and task: scores, Δ in points with its 95% interval and the interval's kind "
    "(paired-samples, paired-counts, unpaired, or none and why), relative degradation, S, QK-norm class, "
    "provenance and the leave-one-pair-out predicted Δ.",
    "correlations": "One row per task: Spearman and Kendall of S against Δ, bootstrap CI, permutation p-value, "
    "leave-one-pair-out and constant-baseline MAE, the leave-one-pair-out coverage of the jackknife+ and t "
    "prediction intervals, and the fit on all pairs.",
    "screening": "One row per LLM and task: rank, place and tier by S with the interval tiers read (bootstrap or "
    "prompt-set band), predicted Δ from the fit on all pairs with its jackknife+ prediction interval (kind, level, "
    "guarantee, held-out coverage) and the 95% t interval beside it, and the difference in expected Δ against the "
    "next LLM by S and the first (interval, share of draws).",
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
    environment.globals["fact"] = _fact
    environment.globals["rules"] = RULES
    environment.globals["model_ref"] = model_ref
    environment.globals["fact_attributes"] = fact_attributes
    return environment


def _fact(
    kind: str, *parts: object, basis: str | None = "", value: float | Sequence[float] | None = None
) -> Markup:
    """The templates' ``fact``: the attributes marking a figure as fact ``kind`` of ``parts`` on ``basis`` (with its
    unrounded ``value`` when given)."""
    return fact_attributes(fact_key(kind, *parts), basis or "", value)


def _trusted_markdown(path: Path) -> Markup | None:
    """Project prose inserted as Markdown (not escaped), or None when the file does not exist."""
    return Markup(path.read_text(encoding="utf-8")) if path.is_file() else None


#: The Markdown of an entry page (:meth:`EntryPage.markdown`). Both texts are JSON strings, which YAML reads as the
#: same strings whatever they hold.
_ENTRY_PAGE = """---
title: {title}
{search_key}: {search_text}
hide:
  - navigation
  - toc
---

<!--sb:raw-->
{content}
<!--/sb:raw-->
"""


@dataclass(frozen=True)
class EntryPage:
    """A pair's or a backbone's page: its title (plain text), the text search finds it by besides its title (plain
    text), and its content (HTML, all of it: the page has no Markdown)."""

    title: str
    search_text: str
    html: str

    def meta(self) -> dict[str, object]:
        """The page's metadata as MkDocs reads it from :meth:`markdown`'s front matter: the title escaped (the
        theme prints it as it is), the search text (:data:`SEARCH_TEXT`, escaped), and no navigation or table of
        contents beside it."""
        return {
            "title": str(escape(self.title)),
            SEARCH_TEXT: str(escape(self.search_text)),
            "hide": ["navigation", "toc"],
        }

    def markdown(self) -> str:
        """The page as a Markdown source: :meth:`meta` as front matter, and the content as one raw HTML block."""
        meta = self.meta()
        return _ENTRY_PAGE.format(
            title=json.dumps(meta["title"]),
            search_key=SEARCH_TEXT,
            search_text=json.dumps(meta[SEARCH_TEXT]),
            content=self.html,
        )


@dataclass(frozen=True)
class PageRenderer:
    """Renders the site's templates (``environment``: :func:`make_environment`) into the Markdown of each page;
    ``prose_dir`` holds the prose they include, ``repo_url`` is the repository the Submit page names."""

    environment: jinja2.Environment
    prose_dir: Path
    repo_url: str = ""

    def render(self, template: str, **context: object) -> str:
        """``template`` rendered with ``context``."""
        return self.environment.get_template(template).render(**context)

    def pages(
        self, views: SiteViews, tables: AggregateTables, compare: ComparePage, *, updated: str
    ) -> dict[str, str]:
        """The Markdown of every page but the entry pages, by its path in the site's docs."""

        def page(template: str, **context: object) -> str:
            return self.render(template, **_common(views), **context)

        headline_row = views.correlation(views.headline.task)
        carried = headline_row.interval(headline_row.prediction_interval) if headline_row else None
        outside = [b for b in views.backbones if b.extrapolated(views.headline.task)]
        testbed_tasks = {result.task for pair in views.pairs if pair.testbed for result in pair.results}
        return {
            "index.md": page(
                "home.md.j2",
                intro=_trusted_markdown(self.prose_dir / "home.md"),
                counts=views.counts,
                updated=updated,
                headline_plot=next(
                    (p for p in views.scatters if p.chart.task_label == views.headline.label), None
                ),
                headline_row=headline_row,
                flagged=views.flagged_controls,
                history=views.history,
                repo_url=self.repo_url,
            ),
            "leaderboard.md": page(
                "leaderboard.md.j2",
                pairs=views.pairs,
                filters=_filters(views, "leaderboard"),
                held_level=carried.level if carried else None,
                testbed_columns=[column for column in views.task_columns if column.task in testbed_tasks],
            ),
            "screening.md": page(
                "screening.md.j2",
                inside=[b for b in views.backbones if b not in outside],
                outside=outside,
                filters=_filters(views, "screening"),
                intervals=views.correlations,
                ordering=ordering(views.backbones, views.headline.task),
                ordered=[b for b in views.backbones if b.position is not None],
                s_band=REPORTED_S_BAND,
            ),
            "correlations.md": page(
                "correlations.md.j2",
                format_rows=[row for row in views.correlations if row.family != "control"],
                control_rows=[row for row in views.correlations if row.family == "control"],
                scatters=views.scatters,
                flagged=views.flagged_controls,
            ),
            "methodology.md": page(
                "methodology.md.j2",
                sink_strength=_trusted_markdown(self.prose_dir / SINK_STRENGTH_DOC),
                protocol=_trusted_markdown(self.prose_dir / PROTOCOL_DOC),
            ),
            "submit.md": page("submit.md.j2", repo_url=self.repo_url),
            "compare.md": page("compare.md.j2", compare=compare),
            "downloads.md": self.render("downloads.md.j2", tables=_downloads(tables)),
            "architectures.md": self.render("architectures.md.j2", **_architectures()),
            "changelog.md": self.render(
                "changelog.md.j2", history=views.history, repo_url=self.repo_url, links=_entry_links(views)
            ),
        }

    def entry_pages(self, views: SiteViews) -> Iterator[tuple[str, EntryPage]]:
        """``(path, page)`` of every pair and backbone page, rendered lazily."""
        pair, backbone = (self.environment.get_template(f"{kind}.html.j2") for kind in ("pair", "backbone"))
        for view in views.pairs:
            content = pair.render(pair=view, **_common(views))
            found_by = f"{view.vlm.label} {view.vlm.model_id} against {view.reference.label} {view.reference.model_id}"
            yield f"pairs/{view.slug}.md", EntryPage(view.vlm.label, found_by, content)
        for view in views.backbones:
            content = backbone.render(backbone=view, **_common(views))
            found_by = f"{view.label} {view.model.model_id} {view.role}"
            yield f"backbones/{view.slug}.md", EntryPage(view.label, found_by, content)


def _entry_links(views: SiteViews) -> dict[str, str]:
    """The page of every entry on the board, by its ``kind folder/name`` (as the changelog names entries)."""
    links = {f"pairs/{pair.slug}": f"pairs/{pair.slug}.html" for pair in views.pairs}
    for backbone in views.backbones:
        for directory in backbone.directories:
            links.setdefault("/".join(directory.split("/")[-2:]), f"backbones/{backbone.slug}.html")
    return links


def _downloads(tables: AggregateTables) -> list[dict[str, object]]:
    """Every table of the Downloads page with its row count and columns."""
    return [
        {"name": name, "rows": len(frame), "columns": list(frame.columns), "description": description}
        for name, description in TABLE_DESCRIPTIONS.items()
        if (frame := getattr(tables, name)) is not None
    ]


#: The verdicts of the conformance sweeps, in the order the Architectures page groups them, with what each means.
VERDICTS = {
    EQUAL: "measured, and equal to the independent reference",
    EQUAL_LOGITS_ONLY: "measured; only the logits can be compared (a learned sink applied after normalising)",
    REFUSED: "refused in one line, with the reason",
    UNTESTED: "no tiny model can be built from the type's defaults",
    FAILED: "the sweep failed on it",
}


@dataclass(frozen=True)
class VerdictGroup:
    """The model types of one verdict in one section of the Architectures page, as (model type, row)."""

    verdict: str
    meaning: str
    rows: list[tuple[str, dict[str, Any]]]


def _architectures() -> dict[str, object]:
    """What ``architectures.md.j2`` is given: the committed verdicts of the conformance sweeps
    (``sinkbench/conformance/architectures.json``), per section its summary line and its groups by verdict, and the
    note on encoder types that run as causal decoders (the page stands in for ``site/docs/architectures.md``)."""
    document = load()
    encoders = document.get("encoder_types") or {}
    sections = []
    for key in ("probe", "extract"):
        rows = document[key]
        groups = [
            VerdictGroup(
                verdict, meaning, [(name, row) for name, row in rows.items() if row["verdict"] == verdict]
            )
            for verdict, meaning in VERDICTS.items()
        ]
        groups = [group for group in groups if group.rows]
        sections.append({"key": key, "commands": SECTIONS[key], "summary": summary(rows), "groups": groups})
    return {
        "transformers": document["transformers"],
        "sections": sections,
        "encoder_note": encoder_note(encoders),
        "not_decoders": set(encoders.get("encoder") or []) | set(encoders.get("encoder_decoder") or []),
    }


def _common(views: SiteViews) -> dict[str, object]:
    """Context every page template gets."""
    return {"task_columns": views.task_columns, "headline": views.headline}


_SIZE_ORDER = ("<1B", "1-4B", "4-10B", "10-40B", ">40B", "unknown")


def _filters(views: SiteViews, page: str) -> list[tuple[str, str, list[str]]]:
    """Drop-down filters of the leaderboard's or the screening page's tables, from every row those tables hold
    (on the leaderboard, the testbed pairs too): (row attribute, label, options)."""
    pairs = page == "leaderboard"
    rows: Sequence[PairView | BackboneView] = views.pairs if pairs else views.backbones
    sizes = {(row.vlm if pairs else row.model).size_bucket for row in rows}
    families = {(row.reference if pairs else row.model).family or "not recorded" for row in rows}
    column, label = ("provenance", "Provenance") if pairs else ("role", "Role")
    return [
        ("qk", "QK-norm", sorted({row.qk_norm for row in rows})),
        ("size", "Size", [bucket for bucket in _SIZE_ORDER if bucket in sizes]),
        ("family", "LLM family", sorted(families)),
        (column, label, sorted({getattr(row, column) for row in rows})),
    ]
