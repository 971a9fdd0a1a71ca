"""Tests of the site's SVG charts (sinkbench.leaderboard.plots)."""

from __future__ import annotations

import re
from xml.etree import ElementTree

from matplotlib import colormaps
from matplotlib.colors import to_hex

from sinkbench.leaderboard.plots import CategoryChart, HeatmapChart, ScatterChart, ScatterPoint

SVG = "{http://www.w3.org/2000/svg}"


def test_charts_are_deterministic_svg_with_escaped_labels() -> None:
    points = (ScatterPoint("<b>a</b> $x$", 1.0, -2.0, "none"), ScatterPoint("b", 2.0, -1.0, "per-head"))
    chart = ScatterChart(points, "IFEval", (1.0, -3.0))
    svg = chart.svg()
    assert svg == chart.svg()
    assert "&lt;b&gt;a&lt;/b&gt; $x$" in svg and "<b>" not in svg
    assert "delta = -3.00 +1.00 × S points" in chart.alt
    heatmap = HeatmapChart((26, 27), ((1.0, None), (2.5, 3.0)), "m")
    assert "2 probed layers (rows, layers 26 to 27) and 2 attention heads" in heatmap.alt
    assert "<desc>" in heatmap.svg()
    bars = CategoryChart((("punctuation", 28), ("keywords", 13)), "p")
    assert bars.alt.endswith("punctuation 28, keywords 13.") and "<title>" in bars.svg()


def test_each_chart_starts_with_title_and_desc() -> None:
    svg = CategoryChart((("keywords", 3),), "p").svg()
    root = svg[svg.index("<svg") :]
    assert re.match(r"<svg[^>]*>\s*<title>IFEval regressions by category: p</title>\s*<desc>Bar chart", root)


def test_heatmap_is_one_coloured_rect_per_cell_with_viridis_colours() -> None:
    chart = HeatmapChart((26, 27), ((0.0, None, 1.0), (2.0, 4.0)), "<b>m</b> $x$")
    svg = chart.svg()
    root = ElementTree.fromstring(svg)  # well-formed XML
    assert [child.tag for child in root][:2] == [f"{SVG}title", f"{SVG}desc"]
    assert root[0].text == "Sink profile of <b>m</b> $x$" and root[1].text == chart.alt
    cells = [
        rect.get("fill")
        for rect in root.iter(f"{SVG}rect")
        if re.fullmatch(r"#[0-9a-f]{6}", rect.get("fill"))
    ]
    low, high = (to_hex(colormaps["viridis"](end)) for end in (0.0, 1.0))
    assert (
        len(cells) == 4 + 1
    )  # four finite cells (None and the missing third head stay blank), the background
    assert cells[1] == low and cells[-1] == high and cells.count(high) == 1
    labels = [text.text for text in root.iter(f"{SVG}text")]
    assert {"26", "27", "0", "1", "2", "attention head", "layer", "median G (nats)"} <= set(labels)
    assert "4" in labels and "0" in labels  # colour-bar ticks at both ends of the data's range
    assert svg == chart.svg()


def test_heatmap_of_one_value_or_none_still_draws() -> None:
    flat = ElementTree.fromstring(HeatmapChart((3,), ((2.0, 2.0),), "m").svg())
    fills = {rect.get("fill") for rect in flat.iter(f"{SVG}rect")}
    assert to_hex(colormaps["viridis"](0.5)) in fills  # a constant profile sits mid-scale
    empty = ElementTree.fromstring(HeatmapChart((3,), ((None,),), "m").svg())
    assert [rect.get("fill") for rect in empty.iter(f"{SVG}rect")] == ["#ffffff", "none", "url(#colour-bar)"]


def test_the_category_chart_is_one_bar_per_category_its_axis_past_the_longest() -> None:
    from sinkbench.leaderboard.plots import CategoryChart

    chart = CategoryChart((("keywords", 9), ("combination", 14), ("<b>x</b>", 1)), "Pair <i>")
    svg = chart.svg()
    assert svg.startswith("<svg") and svg.count('fill="#3f51b5"') == 3
    assert "<title>IFEval regressions by category: Pair &lt;i&gt;</title>" in svg
    assert f"<desc>{chart.alt.replace('<', '&lt;').replace('>', '&gt;')}</desc>" in svg
    assert ">14</text>" in svg and ">15</text>" in svg and "&lt;b&gt;x&lt;/b&gt;" in svg and "<b>" not in svg
    figure = chart.figure()
    assert figure["data"][0]["x"] == [9, 14, 1] and figure["data"][0]["y"][2] == "&lt;b&gt;x&lt;/b&gt;"


def test_every_chart_gives_an_interactive_figure_of_its_own_data() -> None:
    from sinkbench.leaderboard.plots import HeatmapChart, ScatterChart, ScatterPoint

    points = (
        ScatterPoint("A", 1.0, -5.0, "none", "reported", None, -4.0, (-9.0, 1.0), "jackknife+ 94.1%"),
        ScatterPoint("B <x>", 2.0, -1.0, "per-head"),
    )
    scatter = ScatterChart(points, "IFEval", (3.0, -8.0)).figure()
    series = {trace["name"]: trace for trace in scatter["data"]}
    assert series["QK-norm: none"]["x"] == [1.0] and series["QK-norm: per-head"]["y"] == [-1.0]
    hover = series["QK-norm: none"]["text"][0]
    assert "<b>A</b>" in hover and "held-out prediction -4.0" in hover and "[-9.0, +1.0]" in hover
    assert "reported" in hover and "&lt;x&gt;" in series["QK-norm: per-head"]["text"][0]
    assert series["least-squares fit (all pairs)"]["y"] == [-5.0, -2.0]
    assert {trace["marker"]["symbol"] for trace in scatter["data"] if "marker" in trace} == {
        "circle",
        "triangle-up",
    }
    heat = HeatmapChart((20, 21), ((1.0, None), (2.0, 3.0)), "M").figure()["data"][0]
    assert heat["z"] == [[1.0, None], [2.0, 3.0]] and heat["y"] == ["20", "21"]


def test_no_label_of_the_real_boards_scatters_crosses_the_fit_line_or_another_label() -> None:
    """The repository's board, aggregated as the site does: every labelled scatter keeps each label's box clear of
    the fit line (and of the other labels), however the points crowd around it."""
    import itertools
    from pathlib import Path

    from matplotlib.path import Path as LinePath

    from sinkbench.leaderboard.history import board_history
    from sinkbench.leaderboard.views import build_views
    from sinkbench.submissions.gate import load_valid_entries
    from sinkbench.tables.build import build_tables

    root = Path(__file__).resolve().parents[2] / "submissions"
    views = build_views(build_tables(load_valid_entries(root)), board_history(root))
    labelled = 0
    for plot in views.scatters:
        figure = plot.chart.draw()
        axes, renderer = figure.axes[0], figure._get_renderer()
        boxes = {text.get_text(): text.get_window_extent(renderer) for text in axes.texts}
        (fit,) = [line for line in axes.get_lines() if line.get_label().startswith("least-squares fit")]
        line = LinePath(fit.get_transform().transform(fit.get_xydata()))
        crossing = [name for name, box in boxes.items() if line.intersects_bbox(box, filled=False)]
        assert crossing == [], plot.path
        assert [(a, b) for (a, p), (b, q) in itertools.combinations(boxes.items(), 2) if p.overlaps(q)] == []
        labelled += len(boxes)
    assert labelled >= 17  # the IFEval scatter's 17 pairs at least: the check is not vacuous
