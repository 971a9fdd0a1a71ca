"""Every chart of sinkbench, declared once as a Vega-Lite specification and rendered twice from it: in the browser,
interactive (hover, legend selections, zoom where it helps) by Vega-Embed, and as a static SVG (downloads, the
README, papers, readers without JavaScript) by vl-convert, which runs the same Vega in-process: no browser, no
network.

A chart is a small frozen dataclass (:class:`Chart`): plain numbers and labels, a :attr:`~Chart.TITLE`, an
:attr:`~Chart.alt` description and one :meth:`~Chart.body` of data, marks and encodings. The site vendors Vega,
Vega-Lite and Vega-Embed as the one script vl-convert bundles (:func:`script_bundle`, :func:`licence_notice`) and
loads it only on pages that hold a chart (:func:`load_where_needed`). Labels may be user text: Vega draws text as
text (escaped in the SVG), and the page embeds a specification as JSON that no text can close (:func:`spec_json`). A
rendering depends on its specification only (:func:`_numbered_from_zero`), so an unchanged site renders
byte-identical charts; a build renders them in a second process (:class:`Rendering`) and keeps them between builds
(:class:`ChartCache`). Scatter labels are placed clear of each other, of the points and of a fit line
(:func:`place_labels`).
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import json
import multiprocessing
import os
import re
import sys
import tempfile
import textwrap
import threading
import time
from collections.abc import Iterator, Sequence
from concurrent.futures import CancelledError, Future, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from types import ModuleType
from typing import Any, ClassVar, NamedTuple
from xml.sax.saxutils import escape

from markupsafe import Markup

from sinkbench.errors import UserError

#: The Vega-Lite release the specifications are written for, in the vendored script and in the static SVGs alike.
VEGA_LITE = "6.4"
#: Where the site keeps the vendored script and its licence.
SCRIPT = "assets/vendor/vega-embed.js"
LICENCE = "assets/vendor/vega.LICENSE.txt"
#: The attribute that marks a chart in a page (``figure`` macro); a page holding one loads :data:`SCRIPT`.
CHART_MARK = "data-sb-chart"
#: Width of every single-panel chart (pixels; the interactive chart takes its container's width instead).
WIDTH = 560
#: Colours of a set of arms or series, in order (Okabe-Ito: they stay apart under the common colour-vision
#: deficiencies).
SERIES_COLOURS = ("#D55E00", "#0072B2", "#009E73", "#CC79A7", "#E69F00", "#56B4E9")
#: Colour and marker shape per QK-norm class (:data:`OTHER_STYLE` for any other), a shape each so that no reader
#: depends on colour alone.
QK_STYLES: dict[str, tuple[str, str]] = {
    "per-head": ("#0072B2", "circle"),
    "layerwise": ("#E69F00", "square"),
    "none": ("#CC79A7", "triangle-up"),
}
OTHER_STYLE = ("#7f7f7f", "diamond")
GREY = "#757575"
#: The look every chart shares; readable on the light ground of the SVG and on the dark theme's (the interactive
#: chart drops the ground and, on the dark theme, takes Vega's dark theme).
CONFIG: dict[str, Any] = {
    "font": "sans-serif",  # the page's own font in the browser (charts.js); one name renders fastest
    "background": "white",
    "aria": False,  # no description per mark (a heatmap's hundreds of cells): the chart's own alt text says it
    "view": {"stroke": None},
    "text": {"color": "#616161"},  # labels beside marks; charts.js lightens them on the dark theme
    "title": {"anchor": "start", "fontSize": 13, "fontWeight": "normal", "offset": 10},
    "axis": {
        "gridColor": "#9e9e9e",
        "gridOpacity": 0.3,
        "labelFontSize": 11,
        "titleFontSize": 11,
        "titleFontWeight": "normal",
        "labelLimit": 0,  # no truncation: checking a label against a limit costs as much as drawing it
    },
    "legend": {
        "orient": "top",
        "direction": "horizontal",
        "labelFontSize": 11,
        "titleFontSize": 11,
        "labelLimit": 0,
        "columns": 3,
    },
}


class ChartsMissing(UserError):
    """vl-convert-python, which renders the static SVGs and carries the site's chart script, is not installed."""


class Chart:
    """A chart: its data as frozen dataclass fields, one Vega-Lite :meth:`spec`, and the texts around it
    (:attr:`TITLE`, :attr:`alt`)."""

    #: The chart's title (drawn, and the SVG's ``<title>``), a format string of ``self`` (``{self.model_label}``).
    TITLE: ClassVar[str] = ""

    @property
    def title(self) -> str:
        """:attr:`TITLE` of this chart."""
        return self.TITLE.format(self=self)

    @property
    def alt(self) -> str:
        """One-paragraph description: the page's ``alt`` text and the SVG's ``<desc>``."""
        raise NotImplementedError

    def body(self) -> dict[str, Any]:
        """The specification's body: its data, marks and encodings (:meth:`spec` adds what all charts share)."""
        raise NotImplementedError

    def spec(self) -> dict[str, Any]:
        """The whole Vega-Lite specification, the one declaration both renderings come from."""
        body = self.body()
        if not any(key in body for key in ("hconcat", "vconcat", "concat", "facet")):
            body.setdefault("width", WIDTH)
        return {
            "$schema": f"https://vega.github.io/schema/vega-lite/v{VEGA_LITE.split('.')[0]}.json",
            "title": self.title,
            "description": self.alt,
            "config": CONFIG,
            **body,
        }

    def svg(self) -> str:
        """The static SVG, rendered from :meth:`spec`."""
        return static_svg(self.spec())


def _vl_convert() -> ModuleType:
    """The vl_convert module.

    Raises:
        ChartsMissing: vl-convert-python is not installed.
    """
    try:
        import vl_convert
    except ImportError:
        raise ChartsMissing(
            "vl-convert-python is not installed: the charts and the site's chart script need it; install it with "
            'pip install "sinkbench[site]"'
        ) from None
    return vl_convert


def static_svg(spec: dict[str, Any]) -> str:
    """The SVG of a specification, its root opening with a ``<title>`` and a ``<desc>`` (its description).

    Raises:
        ChartsMissing: vl-convert-python is not installed.
    """
    svg = _vl_convert().vegalite_to_svg(spec, vl_version=VEGA_LITE)
    title = spec.get("title", "")
    title = title if isinstance(title, str) else title.get("text", "")
    svg = _numbered_from_zero(svg)
    opening = svg.index(">", svg.index("<svg")) + 1
    texts = f"<title>{escape(title)}</title><desc>{escape(spec.get('description', ''))}</desc>"
    return svg[:opening] + texts + svg[opening:]


def _numbered_from_zero(svg: str) -> str:
    """``svg`` with its clip paths' and gradients' ids numbered from 0 in their order of appearance: vl-convert
    counts them over every chart its engine has drawn, so the same chart would differ from one build to another.
    Only markup changes: the texts (``<text>`` elements, which hold every user-supplied label) are left as they
    are."""
    numbers: dict[str, int] = {}

    def renumber(match: re.Match[str]) -> str:
        where, kind, number = match.groups()
        if kind + number not in numbers:
            numbers[kind + number] = sum(name.startswith(kind) for name in numbers)
        return f"{where}{kind}{numbers[kind + number]}"

    parts = re.split(r"(<text\b.*?</text>)", svg, flags=re.DOTALL)
    for index in range(0, len(parts), 2):  # the parts between texts
        parts[index] = re.sub(r'( id="|="url\(#)(clip|gradient_|pattern_)(\d+)', renumber, parts[index])
    return "".join(parts)


def render_chunk(specs: Sequence[dict[str, Any]]) -> list[str]:
    """The static SVGs of ``specs``, in order (what the rendering process runs)."""
    return [static_svg(spec) for spec in specs]


class ChartCache:
    """Rendered SVGs kept between builds, one file per specification, named by a hash of the specification and the
    renderer's versions (so a changed chart, Vega-Lite or vl-convert never reads an old file), and the chart script
    bundled for those versions (:attr:`script_path`). A file a build used is touched; files no build used for
    :data:`KEEP_DAYS` days are removed. Written atomically; a cache that cannot be read or written is passed over
    (the chart is rendered, the script bundled), never an error."""

    KEEP_DAYS = 7

    def __init__(self, folder: Path) -> None:
        self.folder = folder

    def path(self, spec: dict[str, Any]) -> Path:
        """Where the SVG of ``spec`` is kept."""
        text = json.dumps([VEGA_LITE, _renderer_version(), spec], sort_keys=True, ensure_ascii=False)
        return self.folder / f"{hashlib.sha256(text.encode()).hexdigest()}.svg"

    def get(self, path: Path) -> str | None:
        """The SVG kept at ``path`` (:meth:`path`), or None."""
        try:
            text = path.read_text(encoding="utf-8")
            os.utime(path)
        except (OSError, UnicodeDecodeError):
            return None
        return text

    def put(self, path: Path, text: str) -> None:
        """Keep ``text`` at ``path`` (:meth:`path`, :attr:`script_path`)."""
        with contextlib.suppress(OSError):
            self.folder.mkdir(parents=True, exist_ok=True)
            with tempfile.NamedTemporaryFile(
                "w", encoding="utf-8", dir=self.folder, suffix=".part", delete=False
            ) as out:
                out.write(text)
            os.replace(out.name, path)

    @property
    def script_path(self) -> Path:
        """Where the site's chart script (:func:`script_bundle`) is kept: a build that finds it there and every
        chart in the cache starts no second process."""
        return self.folder / f"vega-embed-{VEGA_LITE}-vl-convert-{_renderer_version()}.js"

    def prune(self) -> None:
        """Remove the files no build used for :data:`KEEP_DAYS` days."""
        oldest = time.time() - self.KEEP_DAYS * 86400
        with contextlib.suppress(OSError):
            for path in self.folder.iterdir():
                with contextlib.suppress(OSError):
                    if path.stat().st_mtime < oldest:
                        path.unlink()


@functools.cache
def _renderer_version() -> str:
    try:
        return metadata.version("vl-convert-python")
    except metadata.PackageNotFoundError:
        return "none"


class Rendering:
    """Static SVGs rendered while the caller goes on: a spawned process takes chunks of the charts from the front
    while the caller renders from the back once it calls :meth:`result`, so the two meet wherever either got to.
    Charts a :class:`ChartCache` holds are taken from it instead.

    vl-convert runs one JavaScript engine per process and holds the interpreter while it draws (about a millisecond
    per text of a chart), so a second process is what lets the drawing overlap the build's own work. A few charts,
    one core, or a process that fails to start or dies: the caller renders everything itself, with the same
    result.
    """

    CHUNK = 8
    #: Fewer charts than this are rendered in this process (starting the second process costs about a second of
    #: its own core).
    MIN_FOR_PROCESS = 4

    def __init__(
        self,
        specs: Sequence[dict[str, Any]],
        cache: ChartCache | None = None,
        process: RenderProcess | None = None,
    ) -> None:
        """Start rendering ``specs`` (those ``cache`` lacks), in ``process`` when given (:func:`start_process`,
        started earlier so that it is ready), else in one started here when there are enough charts; either is
        stopped by :meth:`result` or :meth:`cancel`."""
        self._specs = list(specs)
        self._cache = cache
        self._paths = [cache.path(spec) for spec in self._specs] if cache else []
        self._kept = {
            i: svg for i, path in enumerate(self._paths) if cache and (svg := cache.get(path)) is not None
        }
        todo = [spec for i, spec in enumerate(self._specs) if i not in self._kept]
        self._chunks = [todo[i : i + self.CHUNK] for i in range(0, len(todo), self.CHUNK)]
        if process is None and len(todo) >= self.MIN_FOR_PROCESS:
            process = start_process(bundle=False)
        self._process = process
        self._script = None if process is None else process.script
        self._futures: list[Future[list[str]]] = []
        if process is not None:
            with contextlib.suppress(RuntimeError):  # the process is gone: all of it here
                self._futures = [process.pool.submit(render_chunk, chunk) for chunk in self._chunks]

    def result(self) -> list[str]:
        """Every SVG, in the order of the specifications given (the new ones kept in the cache)."""
        done: dict[int, list[str]] = {}
        try:
            for index in reversed(range(len(self._chunks))):
                future = self._futures[index] if self._futures else None
                if future is None or future.cancel():
                    done[index] = render_chunk(self._chunks[index])
            for index, future in enumerate(self._futures):
                if index not in done:
                    try:
                        done[index] = future.result()
                    except BrokenProcessPool:  # the process died (e.g. killed for memory): draw it here
                        done[index] = render_chunk(self._chunks[index])
        finally:  # a chart that cannot be drawn raises, and the process stops all the same
            self.cancel()
        drawn = iter([svg for index in range(len(self._chunks)) for svg in done[index]])
        svgs = [self._kept[i] if i in self._kept else next(drawn) for i in range(len(self._specs))]
        if self._cache is not None:
            for i, (path, svg) in enumerate(zip(self._paths, svgs, strict=True)):
                if i not in self._kept:
                    self._cache.put(path, svg)
            self._cache.prune()
        return svgs

    def script(self) -> str:
        """The site's chart script (:func:`script_bundle`): from the cache, else from the second process where it
        bundled it, else bundled here (and kept in the cache)."""
        kept = self._cache.get(self._cache.script_path) if self._cache else None
        if kept is not None:
            return kept
        script = None
        if self._script is not None:
            with contextlib.suppress(BrokenProcessPool, CancelledError):
                script = self._script.result()
        script = script or script_bundle()
        if self._cache is not None:
            self._cache.put(self._cache.script_path, script)
        return script

    def cancel(self) -> None:
        """Stop the second process (what it has not started is dropped)."""
        if self._process is not None:
            self._process.stop()
            self._process = None


class RenderProcess(NamedTuple):
    """A second process that renders charts (:func:`start_process`), and the site's chart script it bundles first."""

    pool: ProcessPoolExecutor
    script: Future[str] | None

    def stop(self) -> None:
        """Stop the process; what it has not started is dropped."""
        self.pool.shutdown(wait=True, cancel_futures=True)


def start_process(bundle: bool = True) -> RenderProcess | None:
    """A second process that renders charts, bundling the site's chart script first when ``bundle`` (about a
    second, which also loads vl-convert's engine), or None where there is one core or no process can start."""
    if _cores() < 2:
        return None
    try:
        pool = ProcessPoolExecutor(
            1,
            mp_context=multiprocessing.get_context("spawn"),
            initializer=_exit_with_parent,
            initargs=(os.getpid(),),
        )
        with _main_hidden():  # the first task spawns the process: it must not see the main script
            first = pool.submit(script_bundle if bundle else str)
        return RenderProcess(pool, first if bundle else None)
    except (OSError, RuntimeError):
        return None


def _exit_with_parent(parent: int) -> None:
    """In the rendering process: exit once the process that started it is gone. A build killed outright (SIGKILL,
    a CI timeout) cannot stop it, and it would otherwise wait for charts forever."""

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(0.5)
        os._exit(0)

    threading.Thread(target=watch, name="exit-with-parent", daemon=True).start()


@contextlib.contextmanager
def _main_hidden() -> Iterator[None]:
    """Start processes without the caller's main script: a spawned process runs the script it was started from
    again unless the script guards its work with ``if __name__ == "__main__"``, so a user's unguarded script that
    builds the site would build it once more in the process that renders charts (which needs nothing from it)."""
    main = sys.modules["__main__"]
    saved = {name: vars(main)[name] for name in ("__file__", "__spec__") if name in vars(main)}
    if "__file__" in saved:
        del main.__file__
    main.__spec__ = None
    try:
        yield
    finally:
        for name, value in saved.items():
            setattr(main, name, value)


def _cores() -> int:
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


def script_bundle() -> str:
    """The site's chart script: Vega, Vega-Lite and Vega-Embed, as vl-convert bundles them (about a second the
    first time in a process).

    Raises:
        ChartsMissing: vl-convert-python is not installed.
    """
    return _vl_convert().javascript_bundle(vl_version=VEGA_LITE)


def licence_notice() -> str:
    """The licence notice of the chart script: the three libraries and their versions, their licence, and the
    licence of vl-convert, which bundled them.

    Raises:
        ChartsMissing: vl-convert-python is not installed, or its wheel lacks its licence.
    """
    vl_convert = _vl_convert()
    try:
        distribution = metadata.distribution("vl-convert-python")
    except metadata.PackageNotFoundError:  # importable without its metadata (e.g. copied onto the path)
        raise ChartsMissing(
            'vl-convert-python has no package metadata; reinstall it with pip install "sinkbench[site]"'
        ) from None
    licence = next((file for file in distribution.files or [] if file.name == "LICENSE"), None)
    if licence is None:
        raise ChartsMissing(
            f"vl-convert-python {distribution.version} lacks its licence file; reinstall it with "
            'pip install --force-reinstall "vl-convert-python"'
        )
    # Vega's BSD-3 licence, which the bundle vl-convert makes does not carry.
    vega_licence = (Path(__file__).parent / "licences" / "vega.txt").read_text(encoding="utf-8")
    return (
        f"{SCRIPT} holds Vega {vl_convert.get_vega_version()}, Vega-Lite {VEGA_LITE} and Vega-Embed "
        f"{vl_convert.get_vega_embed_version()} (https://vega.github.io), bundled by vl-convert "
        f"{distribution.version} (https://github.com/vega/vl-convert).\n\nVega, Vega-Lite and Vega-Embed:\n\n"
        f"{vega_licence}\nvl-convert:\n\n{Path(str(distribution.locate_file(licence))).read_text(encoding='utf-8')}"
    )


def load_where_needed(html: str, page_url: str) -> str:
    """``html`` of the page at ``page_url``, loading the chart script (deferred, from the site itself) when it
    holds a chart."""
    if CHART_MARK not in html or SCRIPT in html:
        return html
    source = "../" * page_url.count("/") + SCRIPT  # page URLs are files (use_directory_urls: false)
    return html.replace("</head>", f'<script src="{source}" defer></script>\n</head>', 1)


def spec_json(spec: dict[str, Any]) -> Markup:
    """A specification as JSON safe inside ``<script type="application/json">``: ``<``, ``>`` and ``&`` escaped,
    so no user text can close the element."""
    text = json.dumps(spec, ensure_ascii=False, allow_nan=False, separators=(",", ":"))
    return Markup(text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026"))


#: Plot height of a scatter, font size of its point labels, and the estimated size of a label's characters (pixels:
#: DejaVu Sans averages about 0.6 em; the estimate errs wide) and of its line.
SCATTER_HEIGHT, LABEL_FONT = 340, 9
CHARACTER, LABEL_HEIGHT = 5.6, 11.0
#: Where a label may go, tried in order: beside its point (right, then left), then further up or down.
OFFSETS = [
    (side, sign * rise) for rise in (0, 12, 22, 34, 46, 58, 70, 82) for sign in (-1, 1) for side in (8, -8)
]

Box = tuple[float, float, float, float]
Point = tuple[float, float]


@dataclass(frozen=True)
class Frame:
    """The data domains of a labelled scatter's axes (set in its specification, so that Vega draws exactly these)
    and their mapping to the plot's pixels (y down)."""

    x: tuple[float, float]
    y: tuple[float, float]
    width: float = WIDTH
    height: float = SCATTER_HEIGHT

    @classmethod
    def around(cls, xs: Sequence[float], ys: Sequence[float]) -> Frame:
        """Domains holding ``xs`` and ``ys`` with a margin, wider on the right, where labels go first."""
        xs, ys = list(xs) or [0.0, 1.0], list(ys) or [0.0, 1.0]
        x_pad = max(max(xs) - min(xs), 0.2) * 0.08
        y_pad = max(max(ys) - min(ys), 1.0) * 0.06
        return cls((min(xs) - x_pad, max(xs) + x_pad * 2.5), (min(ys) - y_pad, max(ys) + y_pad))

    def scale(self, axis: str) -> dict[str, Any]:
        """The scale of ``axis`` (``"x"`` or ``"y"``) that draws this frame."""
        return {"domain": list(getattr(self, axis)), "nice": False, "zero": False}

    def pixel(self, x: float, y: float) -> Point:
        """A point's position in pixels."""
        return (
            (x - self.x[0]) / (self.x[1] - self.x[0]) * self.width,
            (self.y[1] - y) / (self.y[1] - self.y[0]) * self.height,
        )

    def value(self, px: float, py: float) -> Point:
        """The data coordinates of a pixel position."""
        return (
            self.x[0] + px / self.width * (self.x[1] - self.x[0]),
            self.y[1] - py / self.height * (self.y[1] - self.y[0]),
        )


def place_labels(
    points: Sequence[tuple[str, float, float]], frame: Frame, line: tuple[Point, Point] | None = None
) -> list[dict[str, Any]]:
    """Where each ``(label, x, y)`` point's label goes: the first of :data:`OFFSETS` whose box stays inside the
    plot and clear of the labels placed before it, of every point and of the ``line`` (its two ends, in data
    coordinates); where none is, the one with the fewest clashes. Depends on the data only.

    Returns:
        Rows for :func:`label_layer`: the label, its anchor ``lx``, ``ly`` (data coordinates), its alignment,
        whether it ``moved`` away from its point (a leader line joins them), and the point's ``px``, ``py``.
    """
    anchors = [frame.pixel(x, y) for _, x, y in points]
    segment = None if line is None else (frame.pixel(*line[0]), frame.pixel(*line[1]))
    placed: list[Box] = []
    rows = []
    for (label, x, y), (px, py) in zip(points, anchors, strict=True):
        width = CHARACTER * len(label) + 2
        best: tuple[int, Box, str] | None = None
        for side, rise in OFFSETS:
            left = px + side if side > 0 else px + side - width
            box = (left, py + rise - LABEL_HEIGHT / 2, left + width, py + rise + LABEL_HEIGHT / 2)
            clashes = sum(overlap(box, other) for other in placed)
            clashes += sum(overlap(box, (ox - 5, oy - 5, ox + 5, oy + 5)) for ox, oy in anchors)
            clashes += segment is not None and crosses(box, *segment)
            clashes += box[0] < 0 or box[2] > frame.width or box[1] < 0 or box[3] > frame.height
            if best is None or clashes < best[0]:
                best = (clashes, box, "left" if side > 0 else "right")
            if clashes == 0:
                break
        assert best is not None
        _, box, align = best
        placed.append(box)
        lx, ly = frame.value(box[0] if align == "left" else box[2], (box[1] + box[3]) / 2)
        moved = abs((box[1] + box[3]) / 2 - py) > LABEL_HEIGHT
        rows.append({"label": label, "lx": lx, "ly": ly, "align": align, "moved": moved, "px": x, "py": y})
    return rows


def label_box(row: dict[str, Any], frame: Frame) -> Box:
    """The box (pixels) a placed label takes (:func:`place_labels`)."""
    x, y = frame.pixel(row["lx"], row["ly"])
    width = CHARACTER * len(row["label"]) + 2
    left = x if row["align"] == "left" else x - width
    return (left, y - LABEL_HEIGHT / 2, left + width, y + LABEL_HEIGHT / 2)


def label_layer(rows: list[dict[str, Any]], x: dict[str, Any], y: dict[str, Any]) -> dict[str, Any]:
    """The layer drawing placed labels (:func:`place_labels`) on the channels ``x`` and ``y``: a leader line to
    each moved label's point, and the labels (left- and right-aligned ones), over the rows given once."""
    at = {"x": {**x, "field": "lx"}, "y": {**y, "field": "ly"}}
    text = {"type": "text", "fontSize": LABEL_FONT, "baseline": "middle", "aria": False}
    leaders = {
        "transform": [{"filter": "datum.moved"}],
        "mark": {"type": "rule", "color": "#9e9e9e", "strokeWidth": 0.5, "aria": False},
        "encoding": {**at, "x2": {"field": "px"}, "y2": {"field": "py"}},
    }
    names = [
        {
            "transform": [{"filter": f"datum.align === '{align}'"}],
            "mark": {**text, "align": align},
            "encoding": {**at, "text": {"field": "label"}},
        }
        for align in ("left", "right")
    ]
    return {"data": {"values": rows}, "layer": [leaders, *names]}


def overlap(a: Box, b: Box) -> bool:
    """Whether two boxes overlap."""
    return a[0] < b[2] and b[0] < a[2] and a[1] < b[3] and b[1] < a[3]


def crosses(box: Box, start: Point, end: Point) -> bool:
    """Whether the segment from ``start`` to ``end`` passes through ``box`` (Liang-Barsky clipping)."""
    (x0, y0), (x1, y1) = start, end
    low, high = 0.0, 1.0
    for delta, distance in (
        (x0 - x1, x0 - box[0]),
        (x1 - x0, box[2] - x0),
        (y0 - y1, y0 - box[1]),
        (y1 - y0, box[3] - y0),
    ):
        if delta == 0:
            if distance < 0:
                return False
            continue
        t = distance / delta
        if delta < 0:
            low = max(low, t)
        else:
            high = min(high, t)
        if low > high:
            return False
    return True


def wrap(text: str, width: int) -> list[str]:
    """``text`` in lines of at most ``width`` characters (a title Vega draws on several lines)."""
    return textwrap.wrap(text, width) or [text]


def wrapped_labels(values: Sequence[str], width: int) -> dict[str, Any]:
    """Axis properties drawing each of ``values`` as its label wrapped at ``width`` characters."""
    lines = {value: wrap(value, width) for value in values}
    return {"labelExpr": f"{json.dumps(lines)}[datum.label]", "labelAngle": 0}


def series_scale(names: Sequence[str]) -> dict[str, Any]:
    """A colour scale giving ``names`` the series colours in order."""
    colours = [SERIES_COLOURS[i % len(SERIES_COLOURS)] for i in range(len(names))]
    return {"domain": list(names), "range": colours}


def rule(axis: str, value: float, dash: Sequence[int] = (), colour: str = GREY) -> dict[str, Any]:
    """A reference line across the plot at ``value`` on ``axis`` (``"x"`` or ``"y"``): a layer of its own."""
    return {
        "data": {"values": [{"at": value}]},
        "mark": {"type": "rule", "color": colour, "strokeDash": list(dash), "strokeWidth": 1, "aria": False},
        "encoding": {axis: {"field": "at", "type": "quantitative"}},
    }


def quantitative(field: str, title: str | list[str], **extra: Any) -> dict[str, Any]:
    """A quantitative channel with its axis title."""
    return {"field": field, "type": "quantitative", "title": title, **extra}


def nominal(field: str, title: str | None, **extra: Any) -> dict[str, Any]:
    """A nominal channel with its axis or legend title (None: none), in the data's order."""
    return {"field": field, "type": "nominal", "title": title, "sort": None, **extra}


@dataclass(frozen=True)
class HeatmapChart(Chart):
    """Per-layer x per-head median sink log-odds G (nats) of a probed LLM (a ``sink_profile.json``, a head map),
    ``note`` added to its title."""

    layers: tuple[int, ...]
    median_g: tuple[tuple[float | None, ...], ...]
    model_label: str
    note: str = ""

    TITLE = "Median sink log-odds G per head: {self.model_label}{self.note_suffix}"

    @property
    def note_suffix(self) -> str:
        """The note as the title's ending ("" without one)."""
        return f"; {self.note}" if self.note else ""

    @property
    def alt(self) -> str:
        """One-paragraph description for ``alt`` and ``<desc>``."""
        heads = max((len(row) for row in self.median_g), default=0)
        span = f"{self.layers[0]} to {self.layers[-1]}" if self.layers else "none"
        return (
            f"Heatmap of the median sink log-odds G of {self.model_label} over {len(self.layers)} probed "
            f"layers (rows, layers {span}) and {heads} attention heads (columns)"
            + (f"; {self.note}." if self.note else ".")
        )

    def body(self) -> dict[str, Any]:
        """One cell per (layer, head) with a value (missing ones left blank), coloured by G (viridis); past 16
        heads every eighth head numbered (a text costs about a millisecond to render, and there is one of these
        charts per probed entry)."""
        heads = max((len(row) for row in self.median_g), default=0)
        rows = [
            {"layer": layer, "head": head, "G": value}
            for layer, row in zip(self.layers, self.median_g, strict=True)
            for head, value in enumerate(row)
            if value is not None
        ]
        return {
            "data": {"values": rows},
            "mark": {"type": "rect"},
            "height": max(120, 20 * len(self.layers)),
            "encoding": {
                "x": {
                    "field": "head",
                    "type": "ordinal",
                    "title": "attention head",
                    "scale": {"domain": list(range(heads))},
                    "axis": {"labelAngle": 0, "values": list(range(0, heads, 1 if heads <= 16 else 8))},
                },
                "y": {"field": "layer", "type": "ordinal", "title": "layer"},
                "color": quantitative(
                    "G",
                    "median G (nats)",
                    scale={"scheme": "viridis"},
                    legend={"orient": "right", "direction": "vertical"},
                ),
                "tooltip": [
                    {"field": "layer", "type": "ordinal"},
                    {"field": "head", "type": "ordinal"},
                    {"field": "G", "type": "quantitative", "title": "G (nats)", "format": ".2f"},
                ],
            },
        }
