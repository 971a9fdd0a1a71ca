"""Interactive charts, offline: every chart of the site is drawn twice, as a static SVG (downloads, readers without
JavaScript, the ``alt`` text) and as a plotly.js figure (hover, zoom, series toggles), from the same data.

plotly.js ships inside the ``plotly`` wheel on PyPI (``plotly/package_data/plotly.min.js``, MIT licence); the build
copies that file and its licence into the site (:func:`vendored_files`) instead of loading it from a CDN, and only
pages that hold a chart load it (:func:`load_where_needed`). A chart class gives its figure as plain JSON
(``figure()``: plotly's ``{"data": [...], "layout": {...}}``); the ``figure`` macro of ``site/templates/_macros.j2``
puts it in the page (:func:`spec_json`) beside the SVG, and ``site/docs/assets/charts.js`` draws it.
"""

from __future__ import annotations

import json
from html import escape
from importlib import metadata
from pathlib import Path
from typing import Any

from markupsafe import Markup

from sinkbench.errors import UserError

#: Where the site keeps plotly.js and its licence.
PLOTLY_SCRIPT = "assets/vendor/plotly.min.js"
PLOTLY_LICENCE = "assets/vendor/plotly.LICENSE.txt"
#: The attribute that marks a chart in a page (``figure`` macro); a page holding one loads plotly.js.
CHART_MARK = "data-sb-chart"
#: Colours and marker shapes per QK-norm class: Okabe-Ito blue, orange and reddish purple, which stay apart under
#: the common colour-vision deficiencies, and a shape each so that no reader depends on colour alone.
QK_STYLES: dict[str, tuple[str, str, str]] = {
    "per-head": ("#0072B2", "circle", "o"),
    "layerwise": ("#E69F00", "square", "s"),
    "none": ("#CC79A7", "triangle-up", "^"),
}
OTHER_STYLE = ("#7f7f7f", "diamond", "D")


class PlotlyMissing(UserError):
    """The ``plotly`` package, whose wheel carries plotly.js, is not installed."""


def vendored_files() -> list[tuple[str, Path]]:
    """``(site path, installed file)`` of plotly.js and its licence, from the installed ``plotly`` package.

    Raises:
        PlotlyMissing: ``plotly`` is not installed (``pip install "sinkbench[site]"`` installs it).
    """
    try:
        distribution = metadata.distribution("plotly")
    except metadata.PackageNotFoundError:
        raise PlotlyMissing(
            "the plotly package is not installed: the site's interactive charts need the plotly.js its wheel "
            'carries; install it with pip install "sinkbench[site]"'
        ) from None
    files = {str(file): Path(str(distribution.locate_file(file))) for file in distribution.files or []}
    script = next((path for name, path in files.items() if name.endswith("package_data/plotly.min.js")), None)
    licence = next(
        (path for name, path in files.items() if name.endswith(".dist-info/licenses/LICENSE.txt")), None
    )
    if script is None or licence is None or not script.is_file():
        raise PlotlyMissing(
            f"plotly {distribution.version} lacks plotly.min.js or its licence file; reinstall it with "
            'pip install --force-reinstall "plotly>=6"'
        )
    return [(PLOTLY_SCRIPT, script), (PLOTLY_LICENCE, licence)]


def load_where_needed(html: str, page_url: str) -> str:
    """``html`` of the page at ``page_url``, loading plotly.js (deferred, from the site itself) when it holds a
    chart."""
    if CHART_MARK not in html or PLOTLY_SCRIPT in html:
        return html
    source = "../" * page_url.count("/") + PLOTLY_SCRIPT  # page URLs are files (use_directory_urls: false)
    return html.replace("</head>", f'<script src="{source}" defer></script>\n</head>', 1)


def spec_json(figure: dict[str, Any]) -> Markup:
    """A figure as JSON safe inside ``<script type="application/json">``: ``<``, ``>`` and ``&`` escaped, so no
    user text can close the element."""
    text = json.dumps(figure, ensure_ascii=False, allow_nan=False, separators=(",", ":"))
    return Markup(text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026"))


def qk_style(qk_norm: str) -> tuple[str, str, str]:
    """(colour, plotly symbol, matplotlib marker) of a QK-norm class."""
    return QK_STYLES.get(qk_norm, OTHER_STYLE)


def hover_text(title: str, *lines: str) -> str:
    """A hover label: the (escaped) title in bold, then one line each (already safe text)."""
    return "<br>".join([f"<b>{escape(title)}</b>", *lines])


def layout(x_title: str, y_title: str, **extra: Any) -> dict[str, Any]:
    """The layout every chart shares: axis titles, a legend above the plot, hover on the nearest point."""
    base: dict[str, Any] = {
        "xaxis": {"title": {"text": escape(x_title)}, "zeroline": False, "automargin": True},
        "yaxis": {"title": {"text": escape(y_title)}, "zeroline": False, "automargin": True},
        "hovermode": "closest",
        "legend": {"orientation": "h", "y": 1.02, "yanchor": "bottom", "x": 0, "font": {"size": 11}},
        "margin": {"l": 10, "r": 10, "t": 10, "b": 10},
        "font": {"size": 12},
        "height": 420,
    }
    base.update(extra)
    return base


def horizontal_line(y: float, colour: str = "#9e9e9e", dash: str = "solid") -> dict[str, Any]:
    """A full-width horizontal line at ``y`` (a layout shape)."""
    return {
        "type": "line",
        "xref": "paper",
        "x0": 0,
        "x1": 1,
        "y0": y,
        "y1": y,
        "line": {"color": colour, "width": 1, "dash": dash},
        "layer": "below",
    }
