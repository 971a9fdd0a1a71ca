"""Tests of the site's charts (sinkbench.leaderboard.plots, sinkbench.charts): one Vega-Lite specification each,
rendered to SVG from that specification."""

from __future__ import annotations

import itertools
import re
from pathlib import Path
from xml.etree import ElementTree

import pytest

from sinkbench.charts import HeatmapChart, crosses, label_box, overlap, static_svg
from sinkbench.leaderboard.plots import CategoryChart, ScatterChart, ScatterPoint

SVG = "{http://www.w3.org/2000/svg}"


def _texts(svg: str) -> list[str]:
    return [text.text or "" for text in ElementTree.fromstring(svg).iter(f"{SVG}text")]


def test_charts_are_deterministic_svg_with_escaped_labels() -> None:
    points = (
        ScatterPoint("<b>a</b> $x$", 1.0, -2.0, "none"),
        ScatterPoint('clip3 id="clip4"', 2.0, -1.0, "per-head"),
    )
    chart = ScatterChart(points, "IFEval", (1.0, -3.0))
    svg = chart.svg()
    assert svg == chart.svg()  # the renderer's running clip and gradient ids numbered from 0 in each chart
    assert 'clip-path="url(#clip0)"' in svg and 'clip3 id="clip4"' in _texts(svg)
    assert "&lt;b&gt;a&lt;/b&gt; $x$" in svg and "<b>" not in svg
    assert "<b>a</b> $x$" in _texts(svg)  # drawn literally: no markup, no mathtext
    assert "delta = -3.00 +1.00 × S points" in chart.alt
    heatmap = HeatmapChart((26, 27), ((1.0, None), (2.5, 3.0)), "m")
    assert "2 probed layers (rows, layers 26 to 27) and 2 attention heads" in heatmap.alt
    assert "<desc>" in heatmap.svg()
    bars = CategoryChart((("punctuation", 28), ("keywords", 13)), "p")
    assert bars.alt.endswith("punctuation 28, keywords 13.") and "<title>" in bars.svg()


@pytest.mark.parametrize(
    "chart",
    [
        CategoryChart((("keywords", 3),), "p <i>"),
        HeatmapChart((3,), ((1.0, 2.0),), "m & n", "2 sink heads"),
        ScatterChart((ScatterPoint("a", 1.0, -1.0, "none"),), "IFEval"),
    ],
    ids=["bars", "heatmap", "scatter"],
)
def test_each_svg_starts_with_its_title_and_desc_and_draws_the_title(chart) -> None:
    root = ElementTree.fromstring(chart.svg())
    assert [child.tag for child in root][:2] == [f"{SVG}title", f"{SVG}desc"]
    assert root[0].text == chart.title and root[1].text == chart.alt
    assert chart.title in _texts(chart.svg())
    spec = chart.spec()
    assert (
        spec["title"] == chart.title
        and spec["description"] == chart.alt
        and spec["$schema"].endswith("v6.json")
    )


def test_the_heatmap_is_one_viridis_cell_per_value_and_keeps_every_head_column() -> None:
    chart = HeatmapChart((26, 27), ((0.0, None, 1.0), (2.0, 4.0)), "<b>m</b> $x$")
    spec = chart.spec()
    assert spec["data"]["values"] == [
        {"layer": 26, "head": 0, "G": 0.0},
        {"layer": 26, "head": 2, "G": 1.0},
        {"layer": 27, "head": 0, "G": 2.0},
        {"layer": 27, "head": 1, "G": 4.0},
    ]
    assert spec["encoding"]["x"]["scale"]["domain"] == [0, 1, 2]  # the missing third head keeps its column
    svg = chart.svg()
    cells = re.findall(r'fill="(rgb\([0-9, ]+\))"', svg)
    assert len(cells) == 4  # the four values; None and the missing third head stay blank
    assert cells[0] == "rgb(68, 1, 84)" and cells[-1] == "rgb(253, 231, 37)"  # viridis' ends: lowest, highest
    labels = _texts(svg)
    assert {"26", "27", "0", "1", "2", "attention head", "layer", "median G (nats)"} <= set(labels)


def test_the_category_chart_is_one_bar_per_category_with_its_count() -> None:
    chart = CategoryChart((("keywords", 9), ("combination", 14), ("<b>x</b>", 1)), "Pair <i>")
    svg = chart.svg()
    assert chart.spec()["data"]["values"] == [
        {"category": "keywords", "lost": 9},
        {"category": "combination", "lost": 14},
        {"category": "<b>x</b>", "lost": 1},
    ]
    assert svg.count('fill="#3f51b5"') == 3
    assert "<title>IFEval prompts lost per category: Pair &lt;i&gt;</title>" in svg
    labels = _texts(svg)
    assert {"9", "14", "1", "<b>x</b>", "keywords"} <= set(labels) and "<b>" not in svg


def test_the_scatter_specification_holds_its_own_data_and_hover_lines() -> None:
    points = (
        ScatterPoint("A", 1.0, -5.0, "none", "reported", None, -4.0, (-9.0, 1.0), "jackknife+ 94.1%"),
        ScatterPoint("B <x>", 2.0, -1.0, "per-head", delta_interval=(-2.0, 0.5)),
    )
    spec = ScatterChart(points, "IFEval", (3.0, -8.0)).spec()
    rows = spec["data"]["values"]
    assert [(r["S"], r["delta"], r["qk"]) for r in rows] == [
        (1.0, -5.0, "QK-norm: none"),
        (2.0, -1.0, "QK-norm: per-head"),
    ]
    assert (
        rows[0]["prediction"] == "-4.0 [-9.0, +1.0] jackknife+ 94.1%" and rows[0]["provenance"] == "reported"
    )
    assert rows[1]["delta_text"] == "-1.0 points (95% CI [-2.0, +0.5])" and rows[1]["label"] == "B <x>"
    fit, points_layer = spec["layer"][1], spec["layer"][2]
    assert fit["data"]["values"] == [{"S": 1.0, "delta": -5.0}, {"S": 2.0, "delta": -2.0}]
    shapes = points_layer["encoding"]["shape"]["scale"]
    assert dict(zip(shapes["domain"], shapes["range"], strict=True)) == {
        "QK-norm: none": "triangle-up",
        "QK-norm: per-head": "circle",
    }
    assert points_layer["params"][0]["bind"] == "legend"  # a legend entry toggles its class


def test_label_placement_avoids_what_it_is_told_to() -> None:
    assert overlap((0, 0, 10, 10), (5, 5, 15, 15)) and not overlap((0, 0, 10, 10), (10, 0, 20, 10))
    assert crosses((0, 0, 10, 10), (-5, 5), (15, 5)) and not crosses((0, 0, 10, 10), (-5, -5), (15, -1))
    crowded = tuple(ScatterPoint(f"model {i}", 1.0, -5.0 + 0.05 * i, "none") for i in range(4))
    labels = ScatterChart(crowded, "IFEval").labels()
    assert (
        len({(round(r["lx"], 6), round(r["ly"], 6)) for r in labels}) == 4
    )  # four points in one spot: four places
    assert any(r["moved"] for r in labels)  # those moved away get a leader line


def test_no_label_of_the_real_boards_scatters_crosses_the_fit_line_or_another_label() -> None:
    """The repository's board, aggregated as the site does: every labelled scatter keeps each label's box clear of
    the fit line, the points and the other labels, inside the plot; and the SVG draws each label where it was
    placed."""
    from sinkbench.leaderboard.history import board_history
    from sinkbench.leaderboard.views import build_views
    from sinkbench.submissions.gate import load_valid_entries
    from sinkbench.tables.build import build_tables

    root = Path(__file__).resolve().parents[2] / "submissions"
    views = build_views(build_tables(load_valid_entries(root)), board_history(root))
    labelled = 0
    for plot in views.scatters:
        chart = plot.chart
        frame = chart.frame
        line = chart.fit_line
        segment = None if line is None else (frame.pixel(*line[0]), frame.pixel(*line[1]))
        points = [frame.pixel(p.sink_strength, p.delta) for p in chart.points]
        boxes = {row["label"]: label_box(row, frame) for row in chart.labels()}
        for name, box in boxes.items():
            assert segment is None or not crosses(box, *segment), (plot.path, name)
            assert not any(overlap(box, (px - 5, py - 5, px + 5, py + 5)) for px, py in points), (
                plot.path,
                name,
            )
            assert box[0] >= 0 and box[2] <= frame.width and box[1] >= 0 and box[3] <= frame.height, (
                plot.path,
                name,
            )
        assert [(a, b) for (a, p), (b, q) in itertools.combinations(boxes.items(), 2) if overlap(p, q)] == []
        drawn = set(_texts(chart.svg()))
        assert set(boxes) <= drawn, plot.path
        labelled += len(boxes)
    assert labelled >= 17  # the IFEval scatter's 17 pairs at least: the check is not vacuous


def test_static_svg_names_the_missing_renderer(monkeypatch: pytest.MonkeyPatch) -> None:
    import sys

    from sinkbench.charts import ChartsMissing

    monkeypatch.setitem(sys.modules, "vl_convert", None)
    with pytest.raises(ChartsMissing, match=r'pip install "sinkbench\[site\]"'):
        static_svg({"mark": "point"})
