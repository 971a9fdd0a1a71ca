"""MkDocs hooks of the sinkbench site (``mkdocs.yml`` names this file): pre-rendered HTML bypasses Markdown, and
each entry page lights up the navigation tab of the table that lists it.

The page templates (``templates/`` beside this file) wrap their HTML blocks in ``<!--sb:raw-->`` ... ``<!--/sb:raw-->``.
Before Markdown runs, :func:`on_page_markdown` swaps each block for a numbered placeholder comment;
after, :func:`on_page_content` puts the HTML back unchanged. Python-Markdown would pass these blocks through
anyway, but only after parsing every tag, which dominates the build time of a large leaderboard. The
markers cannot come from user data: the templates autoescape it, so ``<`` never reaches the page raw.
"""

from __future__ import annotations

import re
from typing import Any

_BLOCK = re.compile(r"^<!--sb:raw-->\n(.*?)\n<!--/sb:raw-->$", re.DOTALL | re.MULTILINE)
_PLACEHOLDER = re.compile(r"<!--sb:raw:(\d+)-->")
#: Blocks lifted out of each page, keyed by the page's source path, until its HTML is ready.
_stash: dict[str, list[str]] = {}


def on_page_markdown(markdown: str, page: Any, **kwargs: Any) -> str:
    """Replace each raw block by ``<!--sb:raw:N-->`` and keep it for :func:`on_page_content`."""
    blocks: list[str] = []

    def lift(match: re.Match[str]) -> str:
        blocks.append(match.group(1))
        return f"<!--sb:raw:{len(blocks) - 1}-->"

    text = _BLOCK.sub(lift, markdown)
    _stash[page.file.src_uri] = blocks
    return text


def on_page_content(html: str, page: Any, **kwargs: Any) -> str:
    """Put the lifted blocks back in place of their placeholders."""
    blocks = _stash.pop(page.file.src_uri, [])
    return _PLACEHOLDER.sub(lambda match: blocks[int(match.group(1))], html)


#: The navigation page whose tab an entry page belongs to, by the page's folder.
_TAB_OF_FOLDER = {"pairs": "leaderboard.md", "backbones": "screening.md"}
#: The navigation page made active for the entry page being rendered, reset after it.
_lit: list[Any] = []


def on_page_context(context: dict, page: Any, config: Any, nav: Any, **kwargs: Any) -> dict:
    """For an entry page (``pairs/...``, ``backbones/...``), mark its tab's page active while it renders."""
    folder = page.file.src_uri.split("/")[0]
    target = _TAB_OF_FOLDER.get(folder) if "/" in page.file.src_uri else None
    tab = next(
        (item for item in nav.items if getattr(getattr(item, "file", None), "src_uri", None) == target), None
    )
    if tab is not None:
        tab.active = True
        _lit.append(tab)
    return context


def on_post_page(output: str, page: Any, config: Any, **kwargs: Any) -> str:
    """Switch the borrowed tab off again, so no other page shows it active."""
    while _lit:
        _lit.pop().active = False
    return output
