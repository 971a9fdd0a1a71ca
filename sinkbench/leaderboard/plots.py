"""Charts for the leaderboard site: SVG drawn with matplotlib's object API (no pyplot, no global state; the
per-entry heatmaps are written directly as SVG, :mod:`sinkbench.svg_heatmap`, with matplotlib's colours), and the
same data as an interactive plotly.js figure (:mod:`sinkbench.leaderboard.charts`).

Each chart is a small frozen dataclass of plain numbers and labels with an ``alt`` description, an ``svg()`` and a
``figure()`` method. The SVG root carries a ``<title>`` and a ``<desc>`` holding the same description as the page's
``alt`` text. Labels may be user-supplied: matplotlib escapes them for XML, and :func:`_plain` stops ``$`` from
starting mathtext. Output depends on the data only (fixed hash salt, no date, label placement limited by a step
count rather than by time), so rebuilding an unchanged site changes no file.
"""

from __future__ import annotations

import io
from dataclasses import dataclass
from html import escape
from xml.sax.saxutils import escape as xml_escape

import matplotlib
from adjustText import adjust_text
from matplotlib.axes import Axes
from matplotlib.figure import Figure

from sinkbench.leaderboard import charts
from sinkbench.leaderboard.svg_bars import bars_svg
from sinkbench.svg_heatmap import heatmap_svg

#: Most point labels drawn on a scatter; beyond this the chart relies on the table below it.
MAX_POINT_LABELS = 30
#: Most steps adjustText takes to move labels apart (it stops earlier once none overlap). A count, not its default
#: one-second time limit: on a busy machine a time limit allows fewer steps, and the chart would change.
LABEL_STEPS = 300
#: Points along a scatter's fit line that its labels are kept clear of (adjustText avoids points, not lines).
LINE_SAMPLES = 120

_STYLE = {
    "svg.fonttype": "none",
    "svg.hashsalt": "sinkbench",
    "font.family": ["DejaVu Sans", "sans-serif"],
    "font.size": 9,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "axes.grid": True,
    "grid.color": "#e0e0e0",
    "grid.linewidth": 0.6,
}


@dataclass(frozen=True)
class ScatterPoint:
    """One pair on an S-versus-delta scatter: what its point shows, and what its hover label adds (provenance, the
    interval of the observed delta, the held-out prediction with its interval and kind)."""

    label: str
    sink_strength: float
    delta: float
    qk_norm: str
    provenance: str = ""
    delta_interval: tuple[float, float] | None = None
    predicted: float | None = None
    predicted_interval: tuple[float, float] | None = None
    interval_kind: str = ""

    def hover(self) -> str:
        """The point's hover label."""
        lines = [
            f"S {self.sink_strength:+.2f} nats · QK-norm {escape(self.qk_norm)}",
            f"Δ {self.delta:+.1f} points",
        ]
        if self.delta_interval is not None:
            lines[-1] += f" (95% CI [{self.delta_interval[0]:+.1f}, {self.delta_interval[1]:+.1f}])"
        if self.predicted is not None:
            line = f"held-out prediction {self.predicted:+.1f}"
            if self.predicted_interval is not None:
                low, high = self.predicted_interval
                line += f" [{low:+.1f}, {high:+.1f}] {escape(self.interval_kind)}"
            lines.append(line)
        if self.provenance:
            lines.append(escape(self.provenance))
        return charts.hover_text(self.label, *lines)


def _plain(text: str) -> str:
    """Escape ``$`` so matplotlib draws user text literally instead of parsing it as mathtext."""
    return text.replace("$", r"\$")


def _to_svg(figure: Figure, title: str, description: str) -> str:
    """Serialise ``figure`` as SVG with ``<title>`` and ``<desc>`` as the first children of the root."""
    buffer = io.StringIO()
    with matplotlib.rc_context(_STYLE):
        figure.savefig(buffer, format="svg", metadata={"Title": title, "Date": None, "Creator": None})
    return buffer.getvalue().replace("</title>", f"</title>\n <desc>{xml_escape(description)}</desc>", 1)


def _new_axes(width: float, height: float, left: float) -> tuple[Figure, Axes]:
    """A figure with one axes and fixed margins in inches (``left`` fits the y tick labels).

    Fixed margins instead of a layout engine: constrained layout measures every text twice and doubles the
    drawing time, which matters with one chart per entry.
    """
    figure = Figure(figsize=(width, height))
    figure.subplots_adjust(
        left=left / width, right=1 - 0.25 / width, bottom=0.55 / height, top=1 - 0.4 / height
    )
    return figure, figure.subplots()


@dataclass(frozen=True)
class ScatterChart:
    """Sink Strength S (x) against the observed delta in points (y) per pair, with the fit line.

    ``fit`` is ``(slope, intercept)`` of the least-squares line the aggregation computed, or None.
    """

    points: tuple[ScatterPoint, ...]
    task_label: str
    fit: tuple[float, float] | None = None

    @property
    def alt(self) -> str:
        """One-paragraph description for ``alt`` and ``<desc>``."""
        text = f"Scatter plot of Sink Strength S against the observed {self.task_label} delta for "
        text += f"{len(self.points)} pairs."
        if self.fit is not None:
            text += f" Least-squares fit: delta = {self.fit[1]:+.2f} {self.fit[0]:+.2f} × S points."
        return text

    def svg(self) -> str:
        """Draw the chart."""
        return _to_svg(self.draw(), f"{self.task_label}: Sink Strength vs delta", self.alt)

    def draw(self) -> Figure:
        """The matplotlib figure of :meth:`svg`: points, fit line and zero line first, then the point labels,
        placed clear of all of them."""
        with matplotlib.rc_context(_STYLE):
            figure, axes = _new_axes(6.4, 4.0, left=0.75)
            self._draw_points(axes)
            line = self._fit_line()
            if line is not None:
                axes.plot(
                    *line,
                    color="#3f51b5",
                    linestyle="--",
                    linewidth=1.2,
                    label="least-squares fit (all pairs)",
                    zorder=2,
                )
            axes.axhline(0.0, color="#9e9e9e", linewidth=0.8, zorder=1)
            axes.set_xlabel("Sink Strength S of the reference LLM (nats)")
            axes.set_ylabel(f"{_plain(self.task_label)} Δ, VLM-LM − reference (points)")
            axes.set_title(_plain(f"{self.task_label}: S vs observed Δ"), loc="left", fontsize=10)
            if self.points:
                axes.legend(frameon=False, fontsize=7.5, loc="best")
            if len(self.points) <= MAX_POINT_LABELS:
                self._draw_labels(axes, line)
        return figure

    def _fit_line(self) -> tuple[list[float], list[float]] | None:
        """The fit line's two ends over the points' range of S, or None without a fit or points."""
        if self.fit is None or not self.points:
            return None
        xs = [min(p.sink_strength for p in self.points), max(p.sink_strength for p in self.points)]
        slope, intercept = self.fit
        return xs, [intercept + slope * x for x in xs]

    def _groups(self) -> list[tuple[str, list[ScatterPoint]]]:
        """The points per QK-norm class, classes in name order."""
        classes = sorted({p.qk_norm for p in self.points})
        return [(qk_norm, [p for p in self.points if p.qk_norm == qk_norm]) for qk_norm in classes]

    def figure(self) -> dict:
        """The interactive figure: one series per QK-norm class (toggled from the legend), the fit line, and a
        hover label per pair."""
        data = []
        for qk_norm, group in self._groups():
            colour, symbol, _ = charts.qk_style(qk_norm)
            data.append(
                {
                    "type": "scatter",
                    "mode": "markers",
                    "name": f"QK-norm: {escape(qk_norm)}",
                    "x": [p.sink_strength for p in group],
                    "y": [p.delta for p in group],
                    "text": [p.hover() for p in group],
                    "hovertemplate": "%{text}<extra></extra>",
                    "marker": {
                        "color": colour,
                        "symbol": symbol,
                        "size": 10,
                        "line": {"color": "white", "width": 1},
                    },
                }
            )
        line = self._fit_line()
        if line is not None:
            slope, intercept = self.fit
            data.append(
                {
                    "type": "scatter",
                    "mode": "lines",
                    "name": "least-squares fit (all pairs)",
                    "x": line[0],
                    "y": line[1],
                    "hovertemplate": f"Δ = {intercept:+.2f} {slope:+.2f} × S<extra></extra>",
                    "line": {"color": "#3f51b5", "dash": "dash", "width": 1.5},
                }
            )
        return {
            "data": data,
            "layout": charts.layout(
                "Sink Strength S of the reference LLM (nats)",
                f"{self.task_label} Δ, VLM-LM − reference (points)",
                shapes=[charts.horizontal_line(0.0)],
            ),
        }

    def _draw_points(self, axes: Axes) -> None:
        """One series per QK-norm class (its own colour and marker); point labels while there are few enough to
        read."""
        for qk_norm, group in self._groups():
            colour, _, marker = charts.qk_style(qk_norm)
            axes.scatter(
                [p.sink_strength for p in group],
                [p.delta for p in group],
                s=36,
                zorder=3,
                color=colour,
                marker=marker,
                edgecolor="white",
                linewidth=0.6,
                label=f"QK-norm: {_plain(qk_norm)}",
            )

    def _clear_of_fit(self, point: ScatterPoint) -> dict[str, str]:
        """Where a label starts, beside its point: in the quarter around the point that the fit line does not pass
        through, on the point's side of the line (above it: up; below: down), so that adjustText starts it clear
        of the line."""
        if self.fit is None:
            return {}
        slope, intercept = self.fit
        above = point.delta >= intercept + slope * point.sink_strength
        left = above == (slope >= 0)  # a rising line leaves the upper left and the lower right free
        return {"ha": "right" if left else "left", "va": "bottom" if above else "top"}

    def _draw_labels(self, axes: Axes, line: tuple[list[float], list[float]] | None) -> None:
        """One label per point, moved apart by adjustText until no two labels (or a label and a point, or a label
        and the fit ``line``, given as :data:`LINE_SAMPLES` points along it) overlap, with a thin line to its
        point where it had to move. The placement depends on the data only: at most :data:`LABEL_STEPS` steps,
        however fast the machine."""
        texts = [
            axes.text(
                p.sink_strength,
                p.delta,
                _plain(p.label),
                fontsize=7,
                color="#333333",
                zorder=4,
                **self._clear_of_fit(p),
            )
            for p in self.points
        ]
        xs, ys = [p.sink_strength for p in self.points], [p.delta for p in self.points]
        if line is not None:
            (x0, x1), (y0, y1) = line
            steps = [i / (LINE_SAMPLES - 1) for i in range(LINE_SAMPLES)]
            xs += [x0 + t * (x1 - x0) for t in steps]
            ys += [y0 + t * (y1 - y0) for t in steps]
        if texts:
            adjust_text(
                texts,
                x=xs,
                y=ys,
                target_x=[p.sink_strength for p in self.points],
                target_y=[p.delta for p in self.points],
                ax=axes,
                expand=(1.1, 1.3),
                expand_axes=True,  # room for the labels of points at the edges, on their side of the line
                iter_lim=LABEL_STEPS,
                time_lim=None,
                arrowprops={"arrowstyle": "-", "color": "#9e9e9e", "linewidth": 0.5},
            )


@dataclass(frozen=True)
class HeatmapChart:
    """Per-layer x per-head median sink log-odds G (nats) of a probed LLM (``sink_profile.json``)."""

    layers: tuple[int, ...]
    median_g: tuple[tuple[float | None, ...], ...]
    model_label: str

    @property
    def alt(self) -> str:
        """One-paragraph description for ``alt`` and ``<desc>``."""
        heads = max((len(row) for row in self.median_g), default=0)
        span = f"{self.layers[0]} to {self.layers[-1]}" if self.layers else "none"
        return (
            f"Heatmap of the median sink log-odds G of {self.model_label} over {len(self.layers)} probed "
            f"layers (rows, layers {span}) and {heads} attention heads (columns)."
        )

    def svg(self) -> str:
        """Draw the chart as hand-written SVG (:mod:`sinkbench.svg_heatmap`); missing values are left blank."""
        return heatmap_svg(
            self.median_g,
            [str(layer) for layer in self.layers],
            title=f"Sink profile of {self.model_label}",
            heading=f"Median sink log-odds G per head: {self.model_label}",
            alt=self.alt,
        )

    def figure(self) -> dict:
        """The interactive heatmap: hover gives layer, head and G."""
        return {
            "data": [
                {
                    "type": "heatmap",
                    "z": [list(row) for row in self.median_g],
                    "y": [str(layer) for layer in self.layers],
                    "colorscale": "Viridis",
                    "colorbar": {"title": {"text": "G (nats)"}, "thickness": 12},
                    "hovertemplate": "layer %{y}, head %{x}: G = %{z:.2f} nats<extra></extra>",
                }
            ],
            "layout": charts.layout(
                "attention head",
                "layer",
                yaxis={"title": {"text": "layer"}, "type": "category", "automargin": True},
                height=max(260, 18 * len(self.layers) + 120),
            ),
        }


@dataclass(frozen=True)
class CategoryChart:
    """IFEval prompts lost by the VLM-LM per violated instruction category (horizontal bars)."""

    counts: tuple[tuple[str, int], ...]
    pair_label: str

    @property
    def alt(self) -> str:
        """One-paragraph description for ``alt`` and ``<desc>``."""
        listing = ", ".join(f"{name} {count}" for name, count in self.counts)
        return (
            f"Bar chart of IFEval prompts that {self.pair_label} lost, per instruction category: {listing}."
        )

    def svg(self) -> str:
        """Draw the chart as hand-written SVG (:mod:`sinkbench.leaderboard.svg_bars`)."""
        return bars_svg(
            self.counts,
            title=f"IFEval regressions by category: {self.pair_label}",
            heading=f"Regressed IFEval prompts by category: {self.pair_label}",
            x_label="IFEval prompts lost (a prompt counts once per violated category)",
            alt=self.alt,
        )

    def figure(self) -> dict:
        """The interactive bar chart: hover gives the category and its count."""
        return {
            "data": [
                {
                    "type": "bar",
                    "orientation": "h",
                    "x": [count for _, count in self.counts],
                    "y": [escape(name) for name, _ in self.counts],
                    "marker": {"color": "#3f51b5"},
                    "hovertemplate": "%{y}: %{x} prompts lost<extra></extra>",
                }
            ],
            "layout": charts.layout(
                "IFEval prompts lost",  # short enough for a phone; the caption gives the counting rule
                "",
                yaxis={"autorange": "reversed", "automargin": True},
                height=max(220, 26 * len(self.counts) + 100),
            ),
        }


Chart = ScatterChart | HeatmapChart | CategoryChart
