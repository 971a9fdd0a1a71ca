"""Entry pages (one per pair and per backbone) built from a MkDocs-rendered shell instead of page by page: the one
seam where the site depends on the shape of a page MkDocs built, kept small and tested.

Why a seam: MkDocs with Material spends about 4 ms of CPU per page on the theme's templates and the search
plugin's HTML parsing. Measured on 1,000 synthetic entries (1,606 pages, 2-core CPU), letting MkDocs render
every entry page took the MkDocs stage from about 1 s to 6.5 s (8.6 s with the pages in its search index),
which breaks the 10 s budget of the whole build. So MkDocs renders one real *shell* page per entry folder
(``pairs/``, ``backbones/``): same folder depth as the entry pages, so every relative asset and navigation URL in
it is right for them too; title :data:`TITLE`; content a marked placeholder; its navigation tab made active by
the site's MkDocs hook. After ``mkdocs build``, :func:`write_entry_pages` cuts the shell's HTML around the
placeholder and writes each entry page as the shell with its content block replaced by the entry's HTML (rendered
by the site's autoescaped Jinja templates), :data:`TITLE` replaced by the entry's escaped display name and
:data:`TOKEN` (its URL) by the entry's slug. It then deletes the shells, lists the entry pages in the sitemap and
adds a short record of each (name, model ids) to the search index, so search finds a pair by its VLM's name.
The shell's markers are the project's own; if a theme change ever stops them from passing through, the build
fails with a message saying so instead of writing broken pages.
"""

from __future__ import annotations

import gzip
import json
import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from markupsafe import escape

#: The shell's file name and its title: ``~`` keeps them apart from every slug (``[a-z0-9._-]``) and title.
TOKEN = "sb~entry"
TITLE = "sb~title"
#: The folders of entry pages, each with one shell page.
ENTRY_FOLDERS = ("pairs", "backbones")
_START, _END = "<!--sb:entry-->", "<!--/sb:entry-->"
#: The shell's Markdown. Its ``<h1>`` stops Material from adding a heading of its own; the raw block markers let
#: the project's MkDocs hook (site/mkdocs_hooks.py) pass the placeholder through Markdown untouched.
SHELL_MARKDOWN = f"""---
title: {TITLE}
search:
  exclude: true
hide:
  - navigation
  - toc
---

<!--sb:raw-->
{_START}
<h1>{TITLE}</h1>
{_END}
<!--/sb:raw-->
"""
_SLUG = re.compile(r"[a-z0-9._-]+")
_SITEMAP_URL = re.compile(r"[ \t]*<url>.*?</url>\n?", re.DOTALL)


@dataclass(frozen=True)
class EntryPage:
    """One entry page: its folder (one of :data:`ENTRY_FOLDERS`), file name stem, content HTML, title (the
    display name, plain text) and the plain text the search index keeps for it."""

    folder: str
    slug: str
    content: str
    title: str
    summary: str


@dataclass(frozen=True)
class EntryShell:
    """A built shell page cut around its content block."""

    head: str
    tail: str

    @classmethod
    def from_html(cls, html: str, source: Path) -> EntryShell:
        """Cut the HTML of a built shell page (read from ``source``, named in errors)."""
        if html.count(_START) != 1 or html.count(_END) != 1 or TITLE not in html.split(_START)[0]:
            raise ValueError(
                f"{source}: expected one {_START} ... {_END} content block and the title {TITLE!r} before it; "
                "the MkDocs theme or site/mkdocs_hooks.py changed how the shell page is rendered."
            )
        head, rest = html.split(_START)
        return cls(head, rest.split(_END)[1])

    def page(self, slug: str, content: str, title: str) -> str:
        """The full HTML of the entry page ``slug`` titled ``title`` with ``content`` in the shell's content block."""
        if not _SLUG.fullmatch(slug):
            raise ValueError(f"entry page name {slug!r} is not a slug: expected only [a-z0-9._-].")
        name = str(escape(title))  # the slug goes in first, so a title holding a token stays as it is
        head = self.head.replace(TOKEN, slug).replace(TITLE, name)
        return head + content + self.tail.replace(TOKEN, slug).replace(TITLE, name)


def write_shells(docs_dir: Path) -> None:
    """Add the shell page of each entry folder to the generated MkDocs sources in ``docs_dir``."""
    for folder in ENTRY_FOLDERS:
        path = docs_dir / folder / f"{TOKEN}.md"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(SHELL_MARKDOWN, encoding="utf-8")


def write_entry_pages(site_dir: Path, pages: Iterable[EntryPage]) -> int:
    """Write every entry page into the built ``site_dir`` from its shell; remove the shells. Returns the count.

    Raises:
        ValueError: a shell page is not shaped as expected, or a page name is not a slug.
    """
    shells = {folder: _shell_path(site_dir, folder) for folder in ENTRY_FOLDERS}
    cut = {
        folder: EntryShell.from_html(path.read_text(encoding="utf-8"), path)
        for folder, path in shells.items()
    }
    slugs: dict[str, list[str]] = {folder: [] for folder in ENTRY_FOLDERS}
    records = []
    for page in pages:
        html = cut[page.folder].page(page.slug, page.content, page.title)
        (site_dir / page.folder / f"{page.slug}.html").write_text(html, encoding="utf-8")
        slugs[page.folder].append(page.slug)
        # The search index holds HTML text, as MkDocs writes it: user text goes in escaped.
        records.append(
            {
                "location": f"{page.folder}/{page.slug}.html",
                "title": str(escape(page.title)),
                "text": str(escape(page.summary)),
            }
        )
    for path in shells.values():
        path.unlink()
    _list_in_sitemap(site_dir / "sitemap.xml", slugs)
    _add_to_search_index(site_dir / "search" / "search_index.json", records)
    return sum(map(len, slugs.values()))


def _add_to_search_index(index: Path, records: list[dict[str, str]]) -> None:
    """Append one record per entry page to MkDocs' search index (``{"config": ..., "docs": [...]}``)."""
    if not index.is_file():
        return
    data = json.loads(index.read_text(encoding="utf-8"))
    data["docs"] = [*data.get("docs", []), *records]
    index.write_text(json.dumps(data, ensure_ascii=False, separators=(",", ":")), encoding="utf-8")


def _shell_path(site_dir: Path, folder: str) -> Path:
    return site_dir / folder / f"{TOKEN}.html"


def _list_in_sitemap(sitemap: Path, slugs: dict[str, list[str]]) -> None:
    """Replace each shell's ``<url>`` in ``sitemap`` (and its ``.gz`` twin) by one ``<url>`` per entry page.

    MkDocs lists pages in the sitemap only when ``site_url`` is set; otherwise there is nothing to replace.
    """
    if not sitemap.is_file():
        return

    def expand(match: re.Match[str]) -> str:
        block = match.group(0)
        folder = next((f for f in ENTRY_FOLDERS if f"/{f}/{TOKEN}.html" in block), None)
        return block if folder is None else "".join(block.replace(TOKEN, slug) for slug in slugs[folder])

    text = _SITEMAP_URL.sub(expand, sitemap.read_text(encoding="utf-8"))
    sitemap.write_text(text, encoding="utf-8")
    packed = sitemap.with_name(sitemap.name + ".gz")
    if packed.is_file():
        with gzip.open(packed) as stream:  # keep MkDocs' timestamp, so rebuilds stay reproducible
            stream.read()
            mtime = stream.mtime
        packed.write_bytes(gzip.compress(text.encode("utf-8"), mtime=mtime))
