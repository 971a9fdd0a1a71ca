"""Tests of the site's SVG charts (sinkbench.plots)."""

from __future__ import annotations

import re

from sinkbench.plots import CategoryChart, HeatmapChart, ScatterChart, ScatterPoint


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
