"""The gate's invariant (issue 11): whatever ``validate`` accepts, ``aggregate`` and ``site build`` process.

Hypothesis writes submissions trees of valid and near-valid entries (reported pairs and backbones written from
scratch, measured ones made from the fixtures): display names and free text of any Unicode (control, bidi and
HTML included), numbers within and just outside their bounds, repeated and unknown tasks, unpinned and pinned
revisions, QK classes, provenance, small sink profiles. Whenever ``load_submissions`` finds no problem, building
the tables, writing every table as CSV and JSON, shaping the views and rendering every page, entry page and
chart must not raise, and no CSV cell may start a spreadsheet formula. Every problem found prints as one line
without raw control characters. A few tame examples run the whole ``build_site``.
"""

from __future__ import annotations

import csv
import io
import json
import math
import os
import re
import shutil
import tempfile
import unicodedata
from pathlib import Path
from typing import Any
from unittest import mock

import pytest
from hypothesis import HealthCheck, Phase, event, given, settings
from hypothesis import strategies as st

from sinkbench.leaderboard.compare import ComparePage
from sinkbench.leaderboard.pages import PageRenderer, make_environment
from sinkbench.leaderboard.project import build_site
from sinkbench.leaderboard.sources import SiteSources
from sinkbench.leaderboard.views import build_views
from sinkbench.submissions import SubmissionsInvalid, load_submissions
from sinkbench.submissions.catalogue import IFEVAL_CATEGORIES, TASKS
from sinkbench.tables.build import build_tables
from sinkbench.tables.write import render_tables

#: Any Unicode may be a display name; matplotlib warns when its font lacks a glyph, and draws a box.
pytestmark = pytest.mark.filterwarnings("ignore:Glyph .* missing from font")
FIXTURES = Path(__file__).parents[1] / "fixtures" / "submissions"
MEASURED_PAIR = FIXTURES / "pairs" / "tiny-vlm"
MEASURED_BACKBONE = FIXTURES / "backbones" / "tiny-llm"
_FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r", "\n")
_RAW_FORBIDDEN = {"Cc", "Cf", "Zl", "Zp", "Cs", "Co"}
_SLUG = re.compile(r"[a-z0-9._-]+")
_URL_PART = re.compile(r"[A-Za-z0-9._-]+")
CI_SETTINGS = {
    "deadline": None,
    "derandomize": True,
    "database": None,
    "suppress_health_check": [HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much],
    "phases": [Phase.explicit, Phase.reuse, Phase.generate, Phase.shrink],
}

# --- values ------------------------------------------------------------------------------------------------

#: Text an attacker would try: markup, formulas, bidi and zero-width characters, newlines, NUL, long runs.
HOSTILE_TEXT = [
    "<script>alert(1)</script>",
    '=HYPERLINK("https://evil.example","x")',
    "+cmd|' /C calc'!A0",
    "@SUM(1)",
    "-1+1",
    " =1+1",
    "\t=1",
    "[x](javascript:alert(1))",
    "$x^2$ {{ 7*7 }} {% raw %}",
    "a\u202eb",
    "a\u200bb",
    "a\u2028b",
    "a\x00b",
    "line\nbreak",
    "ok\u0378",
    "\u3164",
    "   ",
    "x" * 300,
    "Ünïcödé – 模型 🚀",
]
_VISIBLE = st.characters(exclude_categories=("Cc", "Cf", "Zl", "Zp", "Cs", "Co", "Cn"))
TAME_TEXT = st.one_of(
    st.text(_VISIBLE, min_size=1, max_size=20),
    st.sampled_from(
        [text for text in HOSTILE_TEXT if all(char.isprintable() for char in text) and text.strip()]
    ),
)
ANY_TEXT = st.one_of(st.text(max_size=20), st.sampled_from(HOSTILE_TEXT))


def rarely(
    usual: st.SearchStrategy[Any], hostile: st.SearchStrategy[Any], tame: bool
) -> st.SearchStrategy[Any]:
    """``usual``, or (one draw in ten, unless ``tame``) ``hostile``: most trees stay valid, some are near-valid."""
    if tame:
        return usual
    return st.integers(0, 9).flatmap(lambda roll: hostile if roll == 0 else usual)


def text(tame: bool) -> st.SearchStrategy[str]:
    return rarely(TAME_TEXT.filter(lambda value: len(value) <= 200), ANY_TEXT, tame)


def bounded(low: float, high: float, tame: bool) -> st.SearchStrategy[float]:
    """Floats in ``[low, high]``; near-valid mode adds values just outside, huge, non-finite and non-numbers."""
    inside = st.floats(low, high, allow_nan=False) | st.sampled_from([low, high, 0.0])
    outside = st.sampled_from([low - 1e-9, high + 1e-9, 1e308, -1e308, math.nan, math.inf, "1.0", True, None])
    return rarely(inside, outside, tame)


def model_ids(tame: bool) -> st.SearchStrategy[str]:
    pool = ["org/vlm-a", "Org/VLM-A", "org/vlm-b", "vlm-c", "org/llm-a", "org/llm-b", "a.b_c-d/e.f"]
    hostile = ["org/vlm-a\n", "<b>x</b>", "../x", "org/vlm a", "org/v\u202ea", ""]
    return rarely(st.sampled_from(pool), st.sampled_from(hostile), tame)


def revisions(tame: bool) -> st.SearchStrategy[str | None]:
    pool = [None, "main", "0123abcd", "v1.0", "sha256:" + "ab" * 32]
    return rarely(st.sampled_from(pool), st.sampled_from(["", "0123ABCD", "abc\n", "a" * 129, 123]), tame)


def model_ref(draw: st.DrawFn, tame: bool, ids: st.SearchStrategy[str] | None = None) -> dict[str, Any]:
    ref: dict[str, Any] = {
        "id": draw(model_ids(tame) if ids is None else ids),
        "revision": draw(revisions(tame)),
    }
    if draw(st.booleans()):
        ref["display_name"] = draw(text(tame))
    return ref


def names(tame: bool) -> st.SearchStrategy[str]:
    rest = st.text("abz09._-", max_size=7).map(lambda tail: re.sub(r"\.+", ".", tail))
    safe = st.builds(str.__add__, st.sampled_from("abz09"), rest)
    return rarely(safe, st.sampled_from(["a\n", "A", "-a", "a..b", "a\u202eb", "x" * 81]), tame)


# --- entries -----------------------------------------------------------------------------------------------


@st.composite
def reported_task(draw: st.DrawFn, task: str, tame: bool) -> dict[str, Any]:
    item: dict[str, Any] = {"task": task, "table": draw(text(tame))}
    reference = draw(st.none() | bounded(0.0, 100.0, tame))
    vlm = draw(st.none() | bounded(0.0, 100.0, tame))
    numeric = all(isinstance(value, float) and math.isfinite(value) for value in (reference, vlm))
    if numeric and draw(st.integers(0, 4)):
        item["delta"] = round(vlm - reference, 6)
    else:
        item["delta"] = draw(bounded(-100.0, 100.0, tame))
    for field, value in (("reference_score", reference), ("vlm_score", vlm)):
        if value is not None:
            item[field] = value
    if draw(st.booleans()):
        item["derived"] = draw(
            st.lists(st.sampled_from(["delta", "reference_score", "vlm_score"]), max_size=2)
        )
    if draw(st.integers(0, 3)) == 0:
        item["note"] = draw(text(tame))
    return item


@st.composite
def regressions(draw: st.DrawFn, tame: bool) -> dict[str, Any]:
    counts = {key: draw(st.integers(0, 40)) for key in ("both_pass", "lost", "gained", "both_fail")}
    total = sum(counts.values()) or 1
    counts["both_fail"] += total - sum(counts.values())
    lost = counts["lost"]
    categories = draw(st.lists(st.sampled_from(IFEVAL_CATEGORIES), unique=True, max_size=4))
    block = {
        "n_prompts": total + draw(rarely(st.just(0), st.just(1), tame)),
        **counts,
        "table": draw(text(tame)),
        "lost_by_category": {name: draw(st.none() | st.integers(0, lost)) for name in categories},
    }
    return block


@st.composite
def reported_pair(draw: st.DrawFn, tame: bool) -> dict[str, Any]:
    tasks = draw(st.lists(st.sampled_from(list(TASKS)), min_size=1, max_size=3, unique=True))
    if draw(rarely(st.just(True), st.just(False), tame)):
        tasks = ["ifeval_strict", *(task for task in tasks if task != "ifeval_strict")]
    tasks += draw(rarely(st.just([]), st.sampled_from([["ifeval"], ["unknown"], tasks[:1]]), tame))
    items = [draw(reported_task(task, tame)) for task in tasks]
    reported: dict[str, Any] = {
        "sink_strength": {"value": draw(bounded(-100.0, 100.0, tame)), "table": draw(text(tame))},
        "tasks": items,
    }
    if draw(st.booleans()):
        counts = draw(regressions(tame))
        reported["ifeval_regressions"] = counts
        ifeval = items[0] if items[0]["task"] == "ifeval_strict" else None
        if ifeval is not None and draw(st.integers(0, 4)):
            total = counts["n_prompts"]
            ifeval["reference_score"] = 100 * (counts["both_pass"] + counts["lost"]) / total
            ifeval["vlm_score"] = 100 * (counts["both_pass"] + counts["gained"]) / total
            ifeval["delta"] = ifeval["vlm_score"] - ifeval["reference_score"]
    return {
        "schema_version": 1,
        "kind": "pair",
        "provenance": "reported",
        "vlm": model_ref(draw, tame),
        "reference_llm": model_ref(draw, tame),
        "qk_norm": draw(rarely(st.sampled_from(["per-head", "layerwise", "none"]), st.just("global"), tame)),
        "vl_recipe": draw(text(tame)),
        "submitter": draw(text(tame)),
        "citation": {"source": draw(text(tame)), "url": "https://example.org/paper"},
        "reported": reported,
        **({"notes": draw(text(tame))} if draw(st.booleans()) else {}),
    }


@st.composite
def reported_backbone(draw: st.DrawFn, tame: bool) -> dict[str, Any]:
    tasks = draw(st.lists(st.sampled_from(list(TASKS)), max_size=3, unique=True))
    return {
        "schema_version": 1,
        "kind": "backbone",
        "provenance": "reported",
        "model": model_ref(draw, tame, st.sampled_from(["org/llm-a", "org/llm-b", "org/llm-c"])),
        "qk_norm": draw(st.sampled_from(["per-head", "layerwise", "none"])),
        "submitter": draw(text(tame)),
        "citation": {"source": draw(text(tame))},
        "reported": {
            "sink_strength": {"value": draw(bounded(-100.0, 100.0, tame)), "table": draw(text(tame))},
            "scores": [
                {"task": task, "score": draw(bounded(0.0, 100.0, tame)), "table": draw(text(tame))}
                for task in tasks
            ],
        },
    }


@st.composite
def profile(draw: st.DrawFn, tame: bool) -> dict[str, Any]:
    layers = draw(st.integers(1, 5))
    heads = draw(st.integers(1, 6))
    value = st.none() | bounded(-100.0, 100.0, tame)
    matrix = [[draw(value) for _ in range(heads)] for _ in range(layers)]
    if draw(rarely(st.just(False), st.just(True), tame)):
        matrix[-1] = matrix[-1][:-1] or [1.0, 2.0]
    return {
        "sink_strength": draw(bounded(-100.0, 100.0, tame)),
        "layers_probed": list(range(layers)),
        "profile": {
            "layers": list(range(layers)),
            "median_g": matrix,
            "layer_median_g": [draw(value) for _ in range(layers)],
        },
    }


@st.composite
def measured_changes(draw: st.DrawFn, kind: str, tame: bool) -> dict[str, Any]:
    """Changes to a copy of a measured fixture: display names, notes, a few metric values, a profile."""
    changes: dict[str, Any] = {"notes": draw(st.none() | text(tame)), "profile": None}
    if draw(st.booleans()):
        changes["profile"] = draw(profile(tame))
    changes["display_name"] = draw(st.none() | text(tame))
    changes["sink_strength"] = draw(bounded(-100.0, 100.0, tame))
    changes["gsm8k"] = draw(bounded(0.0, 1.0, tame))
    changes["eq_bench"] = draw(bounded(0.0, 100.0, tame))
    changes["id_suffix"] = draw(st.sampled_from(["", "-b", "-c"]))
    changes["kind"] = kind
    return changes


def entries(tame: bool) -> st.SearchStrategy[list[tuple[str, str, Any]]]:
    """``(kind folder, entry name, content)``: a metadata dict, or measured changes to a fixture."""
    one = st.one_of(
        st.tuples(st.just("pairs"), names(tame), reported_pair(tame)),
        st.tuples(st.just("backbones"), names(tame), reported_backbone(tame)),
        st.tuples(st.just("pairs"), names(tame), measured_changes("pair", tame)),
        st.tuples(st.just("backbones"), names(tame), measured_changes("backbone", tame)),
    )
    return st.lists(one, min_size=1, max_size=4, unique_by=lambda item: (item[0], item[1]))


# --- writing a tree ----------------------------------------------------------------------------------------


def _edit(path: Path, change: Any) -> None:
    data = json.loads(path.read_text(encoding="utf-8"))
    change(data)
    path.write_text(json.dumps(data, ensure_ascii=False), encoding="utf-8")


def _write_measured(folder: Path, changes: dict[str, Any]) -> None:
    pair = changes["kind"] == "pair"
    shutil.copytree(MEASURED_PAIR if pair else MEASURED_BACKBONE, folder)

    def metadata(data: dict) -> None:
        model = data["vlm" if pair else "model"]
        model["id"] += changes["id_suffix"]
        if changes["display_name"] is not None:
            model["display_name"] = changes["display_name"]
        if changes["notes"] is not None:
            data["notes"] = changes["notes"]

    _edit(folder / "metadata.json", metadata)
    _set_metric(folder, "sink_strength", "sink_strength,none", changes["sink_strength"])
    _set_metric(folder, "gsm8k_cot_strict", "exact_match,flexible-extract", changes["gsm8k"])
    _set_metric(folder, "eq_bench_strict", "eqbench,none", changes["eq_bench"])
    if changes["profile"] is not None:
        (folder / "sink_profile.json").write_text(json.dumps(changes["profile"]), encoding="utf-8")
    elif (folder / "sink_profile.json").exists():
        (folder / "sink_profile.json").unlink()


def _set_metric(folder: Path, task: str, key: str, value: Any) -> None:
    """Set metric ``key`` of ``task`` in every results file of ``folder`` that holds the task."""
    for path in folder.rglob("results_*.json"):
        data = json.loads(path.read_text(encoding="utf-8"))
        if task in data["results"]:
            data["results"][task][key] = value
            path.write_text(json.dumps(data), encoding="utf-8")


def write_tree(items: list[tuple[str, str, Any]], base: Path) -> Path:
    root = base / "submissions"
    for folder_name in ("pairs", "backbones"):
        (root / folder_name).mkdir(parents=True)
    for kind_folder, name, content in items:
        folder = root / kind_folder / name
        if "schema_version" in content:
            folder.mkdir()
            (folder / "metadata.json").write_text(json.dumps(content, ensure_ascii=False), encoding="utf-8")
        else:
            _write_measured(folder, content)
    return root


# --- the checks --------------------------------------------------------------------------------------------


def _assert_problems_print_safely(problems: Any) -> None:
    for problem in problems:
        line = f"ERROR {problem}"
        assert "\n" not in line and problem.file and problem.fix, line
        assert not [char for char in line if unicodedata.category(char) in _RAW_FORBIDDEN], repr(line)


def _assert_csv_is_inert(name: str, text: str) -> None:
    for row in csv.reader(io.StringIO(text)):
        for cell in row:
            if cell.lstrip(" ").startswith(_FORMULA_STARTS):
                float(cell)  # only a number may start with a sign: a spreadsheet reads it as a number
    assert name.endswith(".csv")


def render_everything(loaded_entries: Any) -> None:
    """Everything ``aggregate`` and ``site build`` compute from valid entries, short of running MkDocs."""
    tables = build_tables(loaded_entries, seed=0)
    for name, content in render_tables(tables).items():
        if name.endswith(".csv"):
            _assert_csv_is_inert(name, content)
        else:
            json.loads(content)
    views = build_views(tables)
    renderer = PageRenderer(make_environment(SiteSources().templates), SiteSources().docs)
    compare = ComparePage.of(views)
    renderer.pages(views, tables, compare, updated="2026-11-30 00:00 UTC")
    prefix, data = compare.script().split(" = ", 1)
    assert prefix == "window.SB_COMPARE" and "<" not in data
    json.loads(data.rstrip().removesuffix(";"))
    for path, _ in renderer.entry_pages(views):
        assert _SLUG.fullmatch(Path(path).stem), path
    for plot in views.plots():
        plot.chart.svg()
    for raw in views.raw_files():
        assert all(_URL_PART.fullmatch(part) for part in raw.path.split("/")), raw.path


def _validate_then_render(items: list[tuple[str, str, Any]]) -> None:
    """Write ``items`` as a submissions tree and load it: every problem prints safely, and an accepted tree is
    aggregated and rendered."""
    with tempfile.TemporaryDirectory() as tmp:
        loaded = load_submissions(write_tree(items, Path(tmp)))
        _assert_problems_print_safely(loaded.problems)
        event("refused" if loaded.problems else "accepted")
        if not loaded.problems:
            render_everything(loaded.entries)


@pytest.mark.slow  # a hypothesis sweep: 80 boards aggregated and rendered
@settings(max_examples=80, **CI_SETTINGS)
@given(items=entries(tame=False))
def test_whatever_validate_accepts_is_aggregated_and_rendered(items: list[tuple[str, str, Any]]) -> None:
    _validate_then_render(items)


@pytest.mark.slow  # a hypothesis sweep: 25 boards aggregated and rendered
@settings(max_examples=25, **CI_SETTINGS)
@given(items=entries(tame=True))
def test_tame_entries_with_hostile_text_are_accepted_and_rendered(items: list[tuple[str, str, Any]]) -> None:
    """Visible Unicode, markup and formulas are valid text: most tame trees validate and must render."""
    _validate_then_render(items)


@pytest.mark.slow  # a hypothesis sweep: 5 boards aggregated and rendered as sites
@settings(max_examples=5, **CI_SETTINGS)
@given(items=entries(tame=True))
def test_site_build_either_refuses_or_builds(items: list[tuple[str, str, Any]]) -> None:
    """The whole ``build_site``: invalid submissions raise SubmissionsInvalid (nothing written), valid ones build."""
    with (
        tempfile.TemporaryDirectory() as tmp,
        mock.patch.dict(os.environ, {"SOURCE_DATE_EPOCH": "1796000000"}),
    ):
        root = write_tree(items, Path(tmp))
        valid = not load_submissions(root).problems
        event("built" if valid else "refused")
        try:
            report = build_site(root, Path(tmp) / "site")
        except SubmissionsInvalid:
            assert not valid
            assert not (Path(tmp) / "site").exists()
            return
        assert valid and report.pages > 0
        assert (Path(tmp) / "site" / "index.html").is_file()
