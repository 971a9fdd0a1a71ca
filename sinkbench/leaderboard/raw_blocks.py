"""HTML blocks that bypass Markdown: the page templates wrap their HTML in ``<!--sb:raw-->`` ... ``<!--/sb:raw-->``.

Before Markdown runs, :func:`lift` swaps each block for a numbered placeholder comment; after, :func:`restore` puts
the HTML back unchanged. Python-Markdown would pass these blocks through anyway, but only after parsing every tag,
which dominates the build time of a large leaderboard. The markers cannot come from user data: the templates
autoescape it, so ``<`` never reaches the page raw. The ``sinkbench`` MkDocs plugin calls both, per page.
"""

from __future__ import annotations

import re

_BLOCK = re.compile(r"^<!--sb:raw-->\n(.*?)\n<!--/sb:raw-->$", re.DOTALL | re.MULTILINE)
_PLACEHOLDER = re.compile(r"<!--sb:raw:(\d+)-->")


def lift(markdown: str) -> tuple[str, list[str]]:
    """``markdown`` with each raw block replaced by ``<!--sb:raw:N-->``, and the blocks in order."""
    blocks: list[str] = []

    def keep(match: re.Match[str]) -> str:
        blocks.append(match.group(1))
        return f"<!--sb:raw:{len(blocks) - 1}-->"

    return _BLOCK.sub(keep, markdown), blocks


def restore(html: str, blocks: list[str]) -> str:
    """``html`` with each placeholder replaced by its block."""
    return _PLACEHOLDER.sub(lambda match: blocks[int(match.group(1))], html)
