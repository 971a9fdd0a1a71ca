"""A per-layer x per-head heatmap as a small hand-written SVG: one ``<rect>`` per cell.

A full matplotlib figure costs ~0.2 s of CPU per chart, and the leaderboard draws one per sink profile; this
writes the same picture directly in well under a millisecond per chart. matplotlib still decides what the chart
shows: the colours come from its ``viridis`` colormap over the data's range (as ``imshow`` would scale it) and
the axis and colour-bar ticks from its ``MaxNLocator``. Every text is XML-escaped, and the root starts with a
``<title>`` and a ``<desc>`` (the alt text).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from xml.sax.saxutils import escape

import matplotlib
import numpy as np
from matplotlib.colors import Normalize
from matplotlib.ticker import MaxNLocator

WIDTH = 640
#: Margins around the cells (pixels): y tick labels and axis label, colour bar, title, x ticks and label.
LEFT, RIGHT, TOP, BOTTOM = 64, 104, 40, 48
ROW_HEIGHT, MIN_PLOT_HEIGHT = 24, 120
COLOUR_BAR_WIDTH, COLOUR_BAR_GAP, GRADIENT_STOPS = 14, 18, 11
MINUS = "\u2212"
#: The colormap of the cells and the colour bar (``imshow``'s default).
COLORMAP = matplotlib.colormaps["viridis"]
_FONT = 'font-family="DejaVu Sans, sans-serif" font-size="11" fill="#333333"'


@dataclass(frozen=True)
class _Frame:
    """Where the cells go: left and top edge, cell width and height (pixels)."""

    x: float
    y: float
    cell_width: float
    cell_height: float
    rows: int
    columns: int

    @property
    def width(self) -> float:
        return self.cell_width * self.columns

    @property
    def height(self) -> float:
        return self.cell_height * self.rows


def heatmap_svg(
    values: Sequence[Sequence[float | None]], row_labels: Sequence[str], *, title: str, heading: str, alt: str
) -> str:
    """The SVG of ``values`` (rows x columns, None where missing): rows labelled, columns numbered from 0.

    Args:
        values: One row per y label; rows may be shorter than the longest (missing cells are left blank).
        row_labels: The y tick labels, one per row.
        title: The SVG ``<title>``.
        heading: The title drawn above the chart.
        alt: The ``<desc>``: the same description as the page's alt text.
    """
    grid = _grid(values)
    rows, columns = grid.shape
    plot_height = max(MIN_PLOT_HEIGHT, ROW_HEIGHT * rows)
    frame = _Frame(
        LEFT, TOP, (WIDTH - LEFT - RIGHT) / max(columns, 1), plot_height / max(rows, 1), rows, columns
    )
    height = TOP + plot_height + BOTTOM
    norm = _colour_scale(grid)
    parts = [
        *svg_opening(WIDTH, height, title=title, alt=alt, heading=heading),
        *_cells(grid, frame, norm),
        *_axes(frame, row_labels),
        *_colour_bar(frame, norm),
        "</svg>",
    ]
    return "\n".join(parts) + "\n"


def svg_opening(width: float, height: float, *, title: str, alt: str, heading: str) -> list[str]:
    """The first elements of a hand-written site SVG: the root, its ``<title>`` and ``<desc>`` (the page's alt
    text), a white ground and the heading (all text escaped)."""
    return [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}" role="img">',
        f"<title>{escape(title)}</title>",
        f"<desc>{escape(alt)}</desc>",
        f'<rect width="{width}" height="{height}" fill="#ffffff"/>',
        f'<text x="8" y="22" font-family="DejaVu Sans, sans-serif" font-size="13" fill="#333333">'
        f"{escape(heading)}</text>",
    ]


def _grid(values: Sequence[Sequence[float | None]]) -> np.ndarray:
    """``values`` as a rows x columns float array, NaN where missing (short rows are padded)."""
    columns = max((len(row) for row in values), default=0)
    padded = [
        [math.nan if v is None else float(v) for v in row] + [math.nan] * (columns - len(row))
        for row in values
    ]
    return np.array(padded, dtype=float).reshape(len(values), columns)


def _colour_scale(grid: np.ndarray) -> Normalize:
    """Linear from the smallest to the largest finite value, as ``imshow`` scales; widened when they are equal."""
    finite = grid[np.isfinite(grid)]
    low, high = (float(finite.min()), float(finite.max())) if finite.size else (0.0, 1.0)
    return Normalize(low, high) if high > low else Normalize(low - 0.5, high + 0.5)


def _cells(grid: np.ndarray, frame: _Frame, norm: Normalize) -> list[str]:
    """A frame, and one filled ``<rect>`` per finite cell."""
    rgb = np.rint(COLORMAP(norm(np.nan_to_num(grid)))[..., :3] * 255).astype(int).tolist()  # as to_hex rounds
    size = f'width="{frame.cell_width:.2f}" height="{frame.cell_height:.2f}"'
    parts = [
        f'<rect x="{frame.x}" y="{frame.y}" width="{frame.width:.2f}" height="{frame.height:.2f}" '
        'fill="none" stroke="#bdbdbd"/>',
        '<g shape-rendering="crispEdges">',
    ]
    for row, column in zip(*np.nonzero(np.isfinite(grid)), strict=True):
        red, green, blue = rgb[row][column]
        x, y = frame.x + column * frame.cell_width, frame.y + row * frame.cell_height
        parts.append(f'<rect x="{x:.2f}" y="{y:.2f}" {size} fill="#{red:02x}{green:02x}{blue:02x}"/>')
    return [*parts, "</g>"]


def _axes(frame: _Frame, row_labels: Sequence[str]) -> list[str]:
    """Tick labels (every row; integer column ticks from MaxNLocator) and the two axis labels."""
    parts = [f"<g {_FONT}>"]
    for row, label in enumerate(row_labels):
        y = frame.y + (row + 0.5) * frame.cell_height
        parts.append(
            f'<text x="{frame.x - 6}" y="{y:.2f}" text-anchor="end" dy="0.35em">{escape(label)}</text>'
        )
    ticks = MaxNLocator(nbins=10, integer=True).tick_values(0, max(frame.columns - 1, 0))
    bottom = frame.y + frame.height
    for tick in (int(t) for t in ticks if 0 <= t < frame.columns):
        x = frame.x + (tick + 0.5) * frame.cell_width
        parts.append(f'<text x="{x:.2f}" y="{bottom + 16:.2f}" text-anchor="middle">{tick}</text>')
    middle_x, middle_y = frame.x + frame.width / 2, frame.y + frame.height / 2
    parts.append(f'<text x="{middle_x:.2f}" y="{bottom + 38:.2f}" text-anchor="middle">attention head</text>')
    parts.append(
        f'<text x="16" y="{middle_y:.2f}" text-anchor="middle" transform="rotate(-90 16 {middle_y:.2f})">layer</text>'
    )
    parts.append("</g>")
    return parts


def _colour_bar(frame: _Frame, norm: Normalize) -> list[str]:
    """A vertical viridis gradient beside the cells, with MaxNLocator ticks and its label."""
    x = frame.x + frame.width + COLOUR_BAR_GAP
    stops = [
        f'<stop offset="{i / (GRADIENT_STOPS - 1):.2f}" stop-color="{matplotlib.colors.to_hex(colour)}"/>'
        for i, colour in enumerate(COLORMAP(np.linspace(1, 0, GRADIENT_STOPS)))
    ]
    parts = [
        '<defs><linearGradient id="colour-bar" x1="0" y1="0" x2="0" y2="1">',
        *stops,
        "</linearGradient></defs>",
        f'<rect x="{x:.2f}" y="{frame.y}" width="{COLOUR_BAR_WIDTH}" height="{frame.height:.2f}" '
        'fill="url(#colour-bar)" stroke="#bdbdbd"/>',
        f"<g {_FONT}>",
    ]
    for tick in MaxNLocator(nbins=5).tick_values(norm.vmin, norm.vmax):
        if norm.vmin <= tick <= norm.vmax:
            y, label = frame.y + (1 - norm(tick)) * frame.height, f"{tick:g}".replace("-", MINUS)
            parts.append(f'<text x="{x + COLOUR_BAR_WIDTH + 4:.2f}" y="{y:.2f}" dy="0.35em">{label}</text>')
    label_x, label_y = x + COLOUR_BAR_WIDTH + 50, frame.y + frame.height / 2
    parts.append(
        f'<text x="{label_x:.2f}" y="{label_y:.2f}" text-anchor="middle" '
        f'transform="rotate(-90 {label_x:.2f} {label_y:.2f})">median G (nats)</text>'
    )
    parts.append("</g>")
    return parts
