"""MkDocs hooks of the sinkbench site (MkDocs loads this file by path): pre-rendered HTML bypasses Markdown.

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
