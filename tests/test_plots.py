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
