"""Render once the parts of Material's page that many pages share (navigation, tabs, search box, footer, style
sheets, scripts), which come out the same on every entry page of one folder: each is rendered on the first page of
a kind and its text reused, keyed by exactly what it reads of the page:

* :data:`FOLDER_PARTIALS` and :data:`FOLDER_BLOCKS` read only the page's folder (their links are relative to it);
* :data:`NAVIGATION_PARTIALS` also read the navigation: the lit tab, and whether an item is the page itself or its
  neighbour. A page outside the navigation is neither, so its key is its folder and the lit items; a page in the
  navigation is rendered as usual.

The texts live on the build's one Jinja environment (new for every build and rebuild).
``tests/leaderboard/test_site_project.py`` compares a build with and without this byte for byte, so a theme whose
partial starts reading something else of the page fails there.
"""

from __future__ import annotations

import posixpath
from collections.abc import Callable, Iterator
from typing import Any

import jinja2

#: Partials that read nothing of the page but its folder (through the ``url`` filter).
FOLDER_PARTIALS = (
    "partials/search.html",
    "partials/palette.html",
    "partials/logo.html",
    "partials/source.html",
    "partials/top.html",
    "partials/icons.html",
)
#: Partials that also read the navigation's state (shared only among pages outside the navigation).
NAVIGATION_PARTIALS = ("partials/nav.html", "partials/tabs.html", "partials/footer.html")
#: Blocks of the theme's page that, like :data:`FOLDER_PARTIALS`, read nothing of the page but its folder: the style
#: sheets, the theme's configuration for its scripts, and the scripts.
FOLDER_BLOCKS = ("styles", "config", "scripts")

RenderFunction = Callable[[Any], Iterator[str]]


def share_partials(env: jinja2.Environment) -> None:
    """Make ``env`` render each shared partial once per key (see the module docstring); a partial the installed
    theme does not have is left alone."""
    texts: dict[tuple, str] = {}
    for name in (*FOLDER_PARTIALS, *NAVIGATION_PARTIALS):
        template = _template(env, name)
        if template is not None:
            template.root_render_func = _shared(name, template.root_render_func, texts)
    page = _template(env, "base.html")
    for block in FOLDER_BLOCKS if page is not None else ():
        if block in page.blocks:
            page.blocks[block] = _shared(f"base.html#{block}", page.blocks[block], texts)


def _template(env: jinja2.Environment, name: str) -> jinja2.Template | None:
    """The theme's template ``name``, or None when the installed theme has none."""
    try:
        return env.get_template(name)
    except jinja2.TemplateNotFound:
        return None


def _shared(name: str, render: RenderFunction, texts: dict[tuple, str]) -> RenderFunction:
    """``render`` of the partial ``name``, answering from ``texts`` for a page whose key is already there."""
    reads_navigation = name in NAVIGATION_PARTIALS

    def shared(context: Any) -> Iterator[str]:
        key = _key(name, context, reads_navigation)
        if key is None:
            yield from render(context)
            return
        text = texts.get(key)
        if text is None:
            text = texts[key] = "".join(render(context))
        yield text

    return shared


def _key(name: str, context: Any, reads_navigation: bool) -> tuple | None:
    """What the partial's text depends on for this page, or None when it must be rendered for the page alone."""
    page, nav = context.get("page"), context.get("nav")
    if page is None or page.url is None:
        return None  # the 404 page and other theme templates: links relative to the site's root
    folder = posixpath.dirname(page.url)
    if not reads_navigation:
        return name, folder
    if nav is None or not page.file.inclusion.is_not_in_nav():
        return None
    return name, folder, tuple(id(item) for item in _lit(nav.items))


def _lit(items: list[Any]) -> Iterator[Any]:
    """The active navigation items, depth first."""
    for item in items:
        if item.active:
            yield item
        yield from _lit(getattr(item, "children", None) or [])
