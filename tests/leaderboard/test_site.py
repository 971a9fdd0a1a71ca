"""Tests of the leaderboard site build (sinkbench.leaderboard: build, views, pages, plots; its templates)."""

from __future__ import annotations

import csv
import json
import re
import shutil
from html import unescape
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urlsplit

import pytest
from boards import PROJECT_CHART_CACHE
from commands import help_text
from markupsafe import Markup

from sinkbench import charts
from sinkbench.cli import build_parser, main
from sinkbench.leaderboard import raw_blocks
from sinkbench.leaderboard.content import Prediction
from sinkbench.leaderboard.entry_details import slugify
from sinkbench.leaderboard.formatting import (
    css_token,
    format_interval,
    format_number,
    format_percent,
    format_share,
    number_cell,
    sort_value,
)
from sinkbench.leaderboard.pages import make_environment
from sinkbench.leaderboard.project import build_site
from sinkbench.leaderboard.sources import SOURCES_DIR, SiteSources
from sinkbench.publish import MARKER
from sinkbench.submissions import SubmissionsInvalid, load_submissions
from sinkbench.tables.build import build_tables

PROJECT_ROOT = Path(__file__).resolve().parents[2]
FIXTURES = Path(__file__).parents[1] / "fixtures" / "submissions"
LEAD_MARKER = "Sink Strength definition marker 7f3a"
#: A reported pair whose every free-text field tries to inject HTML, Markdown or mathtext.
HOSTILE = {
    "schema_version": 1,
    "kind": "pair",
    "provenance": "reported",
    "vlm": {"id": "evil/vlm", "revision": None, "display_name": '<script>alert("vlm")</script> $x$'},
    "reference_llm": {"id": "evil/llm", "revision": None, "display_name": "<img src=x onerror=alert(1)>"},
    "qk_norm": "none",
    "vl_recipe": "[click me](javascript:alert(3)) <b>not bold</b>",
    "submitter": "</dd><script>alert(2)</script>",
    "citation": {"source": "<i>A.</i> Author (2026)"},
    "reported": {
        "sink_strength": {"value": 1.5, "table": "T1"},
        "tasks": [
            {"task": "ifeval_strict", "delta": -6.0, "table": "T2"},
            {"task": "gsm8k_cot_strict", "delta": -3.0, "table": "T2"},
        ],
    },
}
#: Elements and attributes through which a browser fetches something while showing a page.
_LOADING_ATTRIBUTES = {
    "script": ("src",),
    "img": ("src", "srcset"),
    "source": ("src", "srcset"),
    "iframe": ("src",),
    "embed": ("src",),
    "object": ("data",),
    "video": ("src", "poster"),
    "audio": ("src",),
    "track": ("src",),
    "input": ("src",),
    "image": ("href", "xlink:href"),
    "use": ("href", "xlink:href"),
    "feimage": ("href", "xlink:href"),
}
#: ``<link rel>`` values that name a related page instead of loading a resource.
_NAVIGATION_RELS = {"canonical", "alternate", "prev", "next", "author", "license", "help", "search"}
_CSS_URL = re.compile(r"""url\(\s*['"]?([^'")\s]+)|@import\s+['"]([^'"]+)""")
_JS_LOAD = re.compile(r"""(?:importScripts\(|import\(|\bfrom|\bimport)\s*['"`]((?:https?:)?//[^'"`]+)""")


class _Refs(HTMLParser):
    """Collects (tag, attribute, url, loads a resource?) from one HTML or SVG document."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.refs: list[tuple[str, str, str, bool]] = []
        self.inline_css: list[str] = []
        self._in_style = False
        self.scripts: list[str] = []
        self._in_script = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        values = {name: value or "" for name, value in attrs}
        for name in _LOADING_ATTRIBUTES.get(tag, ()):
            if name in values:
                for url in values[name].split(","):
                    self.refs.append((tag, name, url.strip().split(" ")[0], True))
        if tag == "link" and "href" in values:
            rels = set(values.get("rel", "").lower().split())
            self.refs.append((tag, "href", values["href"], not rels <= _NAVIGATION_RELS or not rels))
        if tag == "a" and "href" in values:
            self.refs.append((tag, "href", values["href"], False))
        self.inline_css.append(values.get("style", ""))
        self._in_style, self._in_script = tag == "style", tag == "script"

    def handle_endtag(self, tag: str) -> None:
        self._in_style = self._in_script = False

    def handle_data(self, data: str) -> None:
        if self._in_style:
            self.inline_css.append(data)
        if self._in_script:
            self.scripts.append(data)


def _refs(path: Path) -> _Refs:
    parser = _Refs()
    parser.feed(path.read_text(encoding="utf-8"))
    return parser


def _is_external(url: str) -> bool:
    parts = urlsplit(url.strip())
    return bool(parts.netloc) or parts.scheme not in ("", "data", "blob", "about", "mailto")


def external_resources(site_dir: Path) -> list[str]:
    """Every place in the built site that would make a browser fetch from another host."""
    found = []
    for path in sorted(site_dir.rglob("*")):
        where = path.relative_to(site_dir).as_posix()
        if path.suffix in (".html", ".svg"):
            parser = _refs(path)
            found += [
                f"{where}: <{tag} {attr}={url}>"
                for tag, attr, url, loads in parser.refs
                if loads and _is_external(url)
            ]
            css = "\n".join(parser.inline_css)
            found += [
                f"{where}: inline CSS {url}"
                for match in _CSS_URL.finditer(css)
                for url in match.groups()
                if url and _is_external(url)
            ]
            found += [
                f"{where}: inline script {url}" for text in parser.scripts for url in _JS_LOAD.findall(text)
            ]
        elif path.suffix == ".css":
            text = path.read_text(encoding="utf-8")
            found += [
                f"{where}: {url}"
                for match in _CSS_URL.finditer(text)
                for url in match.groups()
                if url and _is_external(url)
            ]
        elif path.suffix == ".js":
            found += [f"{where}: {url}" for url in _JS_LOAD.findall(path.read_text(encoding="utf-8"))]
    return found


def _write_entry(root: Path, name: str, metadata: dict) -> None:
    folder = root / "pairs" / name
    folder.mkdir(parents=True)
    (folder / "metadata.json").write_text(json.dumps(metadata, indent=2), encoding="utf-8")


@pytest.fixture(scope="module")
def submissions_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("submissions") / "submissions"
    shutil.copytree(FIXTURES, root)
    _write_entry(root, "evil-script", HOSTILE)
    return root


@pytest.fixture(scope="module")
def sources(tmp_path_factory: pytest.TempPathFactory) -> SiteSources:
    """A copy of the project's site sources in which the lead's definition of S holds a marker."""
    root = tmp_path_factory.mktemp("sources")
    shutil.copyfile(SOURCES_DIR / "mkdocs.yml", root / "mkdocs.yml")
    shutil.copytree(SOURCES_DIR / "site", root / "site", ignore=shutil.ignore_patterns("__pycache__"))
    definition = root / "site" / "docs" / "methodology" / "sink-strength.md"
    definition.write_text(
        f"## Sink Strength\n\n{LEAD_MARKER}: S is a median of log-odds.\n", encoding="utf-8"
    )
    return SiteSources(root)


@pytest.fixture(scope="module")
def site(submissions_dir: Path, sources: SiteSources, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("built") / "site"
    # charts from the project's cache: no second process
    report = build_site(submissions_dir, out, sources=sources, chart_cache=PROJECT_CHART_CACHE)
    assert report.site_dir == out.resolve()
    return out


@pytest.fixture(scope="module")
def entries(submissions_dir: Path) -> list:
    loaded = load_submissions(submissions_dir)
    assert loaded.ok, loaded.problems
    return list(loaded.entries)


def _html(site: Path, page: str) -> str:
    return (site / page).read_text(encoding="utf-8")


def test_every_page_is_built(site: Path, entries: list) -> None:
    for page in ("index", "leaderboard", "screening", "correlations", "methodology", "submit", "downloads"):
        assert (site / f"{page}.html").is_file(), page
    pairs = {e.name for e in entries if e.kind == "pair"}
    assert {p.stem for p in (site / "pairs").glob("*.html")} == pairs
    llms = {(e.llm.id, e.llm.revision) for e in entries}
    assert len(list((site / "backbones").glob("*.html"))) == len(llms)


def test_leaderboard_lists_every_pair_with_its_provenance_badge(site: Path, entries: list) -> None:
    html = _html(site, "leaderboard.html")
    rows = re.findall(
        r'<tr data-sb-qk="[^"]*" data-sb-provenance="([a-z]+)"[^>]*>.*?href="pairs/([^"]+)\.html"', html
    )
    expected = {e.name: e.provenance for e in entries if e.kind == "pair"}
    assert dict((name, provenance) for provenance, name in rows) == expected
    for provenance in set(expected.values()):
        assert f'<span class="sb-badge sb-badge--{provenance}">{provenance}</span>' in html


def test_user_supplied_strings_render_as_text(site: Path) -> None:
    pages = [site / "leaderboard.html", site / "pairs" / "evil-script.html", site / "screening.html"]
    pages += list((site / "backbones").glob("evil--llm*.html"))
    for page in pages:
        html = page.read_text(encoding="utf-8")
        assert "alert(" not in "".join(_refs(page).scripts), page
        assert "<script>alert" not in html and "<img src=x" not in html and "<b>not bold" not in html, page
        assert 'href="javascript:' not in html, page
    pair_page = _html(site, "pairs/evil-script.html")
    assert "&lt;script&gt;alert(&#34;vlm&#34;)&lt;/script&gt; $x$" in pair_page
    assert "&lt;/dd&gt;&lt;script&gt;alert(2)&lt;/script&gt;" in pair_page
    assert "[click me](javascript:alert(3)) &lt;b&gt;not bold&lt;/b&gt;" in pair_page
    assert "<title>&lt;script&gt;alert(&#34;vlm&#34;)&lt;/script&gt; $x$ - " in pair_page
    search_index = (site / "search" / "search_index.json").read_text(encoding="utf-8")
    assert "&lt;script&gt;alert" in search_index and "<script>alert" not in search_index
    assert "<img src=x" not in search_index
    scatter = (site / "plots" / "scatter-ifeval_strict.svg").read_text(encoding="utf-8")
    assert "&lt;script&gt;alert" in scatter and "<script" not in scatter


def test_built_site_loads_nothing_from_an_external_host(site: Path) -> None:
    assert external_resources(site) == []


def test_external_resource_scan_catches_each_kind(tmp_path: Path) -> None:
    (tmp_path / "a.html").write_text(
        '<link rel="stylesheet" href="https://cdn.example/x.css"><script src="//cdn.example/x.js"></script>'
        '<img srcset="a.png 1x, https://img.example/b.png 2x"><a href="https://example.org/">a link is fine</a>'
        '<link rel="canonical" href="https://example.org/"><div style="background:url(https://img.example/c)">',
        encoding="utf-8",
    )
    (tmp_path / "b.css").write_text('@import "https://fonts.example/f.css"; p{background:url(data:x)}')
    (tmp_path / "c.js").write_text(
        'importScripts("https://cdn.example/w.js"); const u = "https://ok.example";'
    )
    assert len(external_resources(tmp_path)) == 6


def test_every_local_link_and_resource_resolves(site: Path) -> None:
    missing = []
    for page in site.rglob("*.html"):
        for _, _, url, _ in _refs(page).refs:
            parts = urlsplit(url)
            if parts.scheme or parts.netloc or not parts.path:
                continue
            base = site if parts.path.startswith("/") else page.parent  # 404.html links from the root
            target = (base / unquote(parts.path).lstrip("/")).resolve()
            if not target.exists():
                missing.append(f"{page.relative_to(site)} -> {url}")
    assert missing == []


def test_every_table_downloads_as_csv_and_json_with_the_same_columns(site: Path, entries: list) -> None:
    for name in ("pairs", "correlations", "screening", "regressions"):
        with (site / "downloads" / f"{name}.csv").open(encoding="utf-8") as stream:
            rows = list(csv.DictReader(stream))
        records = json.loads((site / "downloads" / f"{name}.json").read_text(encoding="utf-8"))
        assert len(records) == len(rows), name
        assert records and list(records[0]) == list(rows[0]), name
    pairs = json.loads((site / "downloads" / "pairs.json").read_text(encoding="utf-8"))
    assert {row["entry"] for row in pairs} == {e.name for e in entries if e.kind == "pair"}
    downloads = _html(site, "downloads.html")
    for name in ("pairs", "correlations", "screening", "regressions"):
        assert f'href="downloads/{name}.csv"' in downloads and f'href="downloads/{name}.json"' in downloads


def test_every_chart_has_title_desc_and_matching_alt_text(site: Path) -> None:
    images = []
    for page in site.rglob("*.html"):
        html = page.read_text(encoding="utf-8")
        images += [
            (page, src, alt) for src, alt in re.findall(r'<img src="([^"]+\.svg)" alt="([^"]*)"', html)
        ]
    assert len(images) >= 5
    for page, src, alt in images:
        svg = (page.parent / src).read_text(encoding="utf-8")
        title = re.search(r"<title>(.+?)</title>", svg)
        desc = re.search(r"<desc>(.+?)</desc>", svg)
        assert title and desc, src
        # Both sides unescaped: an apostrophe is &#39; in the page's HTML and may stay literal in the SVG's XML.
        assert alt and unescape(alt) == unescape(desc.group(1)), src


def test_heatmap_and_category_charts_appear_where_their_data_exists(site: Path, entries: list) -> None:
    for entry in (e for e in entries if e.kind == "pair"):
        page = _html(site, f"pairs/{entry.name}.html")
        assert (f"plots/profile-{entry.name}.svg" in page) == (entry.sink_profile is not None), entry.name
        has_categories = entry.ifeval_outcomes() is not None or bool(
            entry.reported_regressions and any(entry.reported_regressions.lost_by_category.values())
        )
        assert (f"plots/regressions-{entry.name}.svg" in page) == has_categories, entry.name
    assert any(e.sink_profile is not None for e in entries) and any(e.ifeval_outcomes() for e in entries)


def test_pair_page_shows_revisions_lm_eval_version_and_raw_files(site: Path, entries: list) -> None:
    measured = next(e for e in entries if e.kind == "pair" and e.provenance == "measured")
    page = _html(site, f"pairs/{measured.name}.html")
    assert measured.vlm.revision in page and measured.llm.revision in page
    versions = {item.data.lm_eval_version for side in measured.sides.values() for item in side.results}
    assert all(version in page for version in versions if version)
    for link in re.findall(r'href="\.\./(raw/[^"]+)"', page):
        assert (site / unquote(link)).is_file(), link
    assert "reference/results_" in page and "metadata.json" in page


def test_backbone_page_labels_a_limited_run_and_shows_notes(site: Path, entries: list) -> None:
    backbone = next(e for e in entries if e.kind == "backbone" and e.provenance == "measured")
    assert backbone.scores["gsm8k_cot_strict"].coverage == (250, 1319)
    page = _html(site, f"backbones/{slugify(backbone.llm.id)}.html")
    row = re.search(r'<tr><td class="sb-sticky">GSM8K-CoT</td>(.*?)</tr>', page.split('id="own-scores"')[1])
    assert (
        row and "first 250 of 1,319 documents (--limit 250)" in row.group(1) and ">2.40<" in row.group(1)
    ), row
    assert "<dt>Notes</dt><dd>GSM8K-CoT on the first 250 problems only (--limit 250) &lt;b&gt;as text" in page


def test_home_page_has_counts_headline_chart_and_last_update(site: Path, entries: list) -> None:
    html = _html(site, "index.html")
    pairs = sum(e.kind == "pair" for e in entries)
    assert f"<strong>{pairs}</strong><span>VLM / reference-LLM pairs</span>" in html
    assert 'src="plots/scatter-ifeval_strict.svg"' in html
    assert re.search(r"<strong>20\d\d-\d\d-\d\d \d\d:\d\d UTC</strong><span>last update</span>", html)


def test_screening_ranks_backbones_by_sink_strength(site: Path) -> None:
    html = _html(site, "screening.html")
    table = html.split('id="board-screening"')[1].split("</table>")[0]
    values = [
        float(v)
        for v in re.findall(r'<td class="sb-num" data-sort="([-0-9.e]+)"><span data-sb-fact="s\|', table)
    ]
    assert values == sorted(values, reverse=True) and len(values) >= 3


@pytest.fixture(scope="module")
def board(real_board_site: Path) -> tuple[Path, object]:
    """The repository's own board (17 IFEval pairs, enough to check intervals held out), built, and its tables."""
    return real_board_site, build_tables(load_submissions(PROJECT_ROOT / "submissions").entries)


def _cells(row: str) -> list[str]:
    """The text of each cell of a table row, a line break read as a space."""
    cells = re.findall(r"<td[^>]*>(.*?)</td>", row)
    return [re.sub(r"<[^>]+>", "", cell.replace("<br>", " ")).strip() for cell in cells]


def test_the_correlations_page_shows_how_often_each_interval_held(board) -> None:
    site, tables = board
    html = _html(site, "correlations.html")
    rows = tables.correlations.set_index("task")
    ifeval = rows.loc["ifeval_strict"]
    main_row = next(
        r for r in html.split('id="board-correlations"')[1].split("<tr>") if r.startswith("<td>IFEval")
    )
    held = f"{ifeval['jackknife_plus_loo_covered']}/{ifeval['jackknife_plus_loo_checked']}"
    assert _cells(main_row)[-2:] == [f"{held} at 94.1%", f"{ifeval['t_loo_covered']}/17 at 95.0%"]
    table = html.split('id="board-interval-coverage"')[1].split("</table>")[0]
    detail = [_cells(row) for row in table.split("<tr>")[2:]]
    assert len(detail) == 2 * len(rows)  # every task, both kinds
    jackknife, t = detail[0], detail[1]
    assert jackknife[:6] == ["IFEval", "jackknife+ (predictions)", "94.1%", "88.2%", "16 of 17", "19.7"]
    assert t[:6] == ["IFEval", "t", "95.0%", "none", "14 of 17", "19.0"]
    outside = t[6].split(", ")
    assert len(outside) == 3 and table.count('href="pairs/ovis2-8b.html"') == 1


def test_the_screening_page_says_per_task_how_often_its_intervals_held(board) -> None:
    site, tables = board
    html = _html(site, "screening.html")
    assert (
        "IFEval: 94.4% jackknife+ intervals from 17 pairs (guaranteed at least 88.9%). Held out, <strong>16 of 17"
        "</strong> pairs fell inside their interval (median width 19.7 points); the 95.0% t interval held 14 of 17."
    ) in html
    assert html.count("jackknife+ intervals from 6 pairs (guaranteed at least 71.4%)") == 5
    qwen3 = _html(site, "backbones/qwen--qwen3-8b.html")
    row = tables.screening[
        (tables.screening["model_id"] == "Qwen/Qwen3-8B") & (tables.screening["task"] == "ifeval_strict")
    ]
    low, high = row[["interval_low", "interval_high"]].iloc[0]
    assert (
        f'[{format_number(low, 1)}, {format_number(high, 1)}]</span><br><span class="sb-muted">94.4% jackknife+</span>'
        in qwen3
    )


def test_methodology_includes_the_definition_of_s_and_the_protocol(site: Path) -> None:
    html = _html(site, "methodology.html")
    assert LEAD_MARKER in html
    assert "Evaluation protocol" in html and "--apply_chat_template" in html and "v0.4.12" in html


def test_methodology_says_so_when_the_definition_is_not_written_yet() -> None:
    template = make_environment(SiteSources().templates).get_template("methodology.md.j2")
    text = template.render(sink_strength=None, protocol=Markup("## Evaluation protocol"))
    assert "The definition of Sink Strength is being written" in text and "## Evaluation protocol" in text


def test_invalid_submissions_leave_the_existing_site_untouched(tmp_path: Path, capsys) -> None:
    broken = tmp_path / "submissions"
    _write_entry(broken, "broken", {"schema_version": 1, "kind": "pair"})
    out = tmp_path / "site"
    out.mkdir()
    (out / "index.html").write_text("previous build", encoding="utf-8")
    (out / MARKER).write_text("an earlier build\n", encoding="utf-8")
    with pytest.raises(SubmissionsInvalid):
        build_site(broken, out)
    assert main(["site", "build", "--submissions", str(broken), "--out", str(out)]) == 1
    assert "broken/metadata.json" in capsys.readouterr().out
    assert (out / "index.html").read_text(encoding="utf-8") == "previous build"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["site", "submissions"]  # not even its lock


def test_missing_sources_name_the_file_and_the_fix(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match=r"mkdocs\.yml is missing.*reinstall sinkbench"):
        build_site(FIXTURES, tmp_path / "site", sources=SiteSources(tmp_path))


@pytest.mark.parametrize(
    "argv", [["site", "--help"], ["site", "build", "--help"], ["site", "serve", "--help"]]
)
def test_site_commands_have_help(argv: list[str], capsys) -> None:
    assert "--submissions" in help_text(argv, capsys) or argv == ["site", "--help"]


def test_submit_guide_uses_only_commands_and_tasks_that_exist() -> None:
    guide = (SiteSources().templates / "submit.md.j2").read_text(encoding="utf-8")
    subcommands = build_parser()._subparsers._group_actions[0].choices  # argparse keeps them here
    used = set(re.findall(r"^sinkbench ([a-z-]+)", guide, flags=re.MULTILINE))
    assert used >= {"submit", "screen", "validate", "site"} and used <= set(subcommands), used - set(
        subcommands
    )
    assert guide.index("sinkbench submit pair") < guide.index("## 1.")  # the one command leads
    yaml_text = "\n".join(
        p.read_text(encoding="utf-8") for p in (PROJECT_ROOT / "harness_tasks").rglob("*.yaml")
    )
    for tasks in re.findall(r"--tasks ([a-z_,]+)", guide):
        for task in tasks.split(","):
            assert re.search(rf"^(task|group): {task}$", yaml_text, flags=re.MULTILINE), task


@pytest.mark.parametrize(
    ("value", "digits", "signed", "expected"),
    [(-1.85, 2, True, "−1.85"), (3.0, 1, True, "+3.0"), (0.971, 3, False, "0.971"), (None, 2, False, "–"),
     (float("nan"), 2, True, "–")],
)  # fmt: skip
def test_format_number(value: float | None, digits: int, signed: bool, expected: str) -> None:
    assert format_number(value, digits, signed) == expected


def test_raw_blocks_pass_around_markdown() -> None:
    block = "<table>\n<tr><td>*not emphasis*</td></tr>\n</table>"
    markdown = f"# T\n\n<!--sb:raw-->\n{block}\n<!--/sb:raw-->\n\ntext *em*\n"
    lifted, blocks = raw_blocks.lift(markdown)
    assert lifted == "# T\n\n<!--sb:raw:0-->\n\ntext *em*\n" and blocks == [block]
    html = "<h1>T</h1>\n<!--sb:raw:0-->\n<p>text <em>em</em></p>"
    assert raw_blocks.restore(html, blocks) == f"<h1>T</h1>\n{block}\n<p>text <em>em</em></p>"


def test_the_plugin_keeps_no_module_state() -> None:
    """Everything a build remembers between events lives on the plugin instance (one per build): no mutable
    module-level value in the plugin's modules."""
    from sinkbench.leaderboard import consistency, plugin

    for module in (plugin, raw_blocks, consistency, charts):
        mutable = [
            name
            for name, value in vars(module).items()
            if not name.startswith("__") and isinstance(value, (list, dict, set)) and name.isupper() is False
        ]
        assert mutable == [], (module.__name__, mutable)


def test_small_formatters() -> None:
    assert sort_value(-9.6) == "-9.6" and sort_value(None) == "" and sort_value(float("inf")) == ""
    assert format_percent(-0.064) == "−6.4%" and format_percent(None) == "–"
    assert (
        format_share(17 / 18) == "94.4%" and format_share(None) == "–" and format_share(float("nan")) == "–"
    )
    assert format_interval(Prediction("t", "T", -2.8, -9.34, 3.8)) == "[−9.3, 3.8]"
    assert format_interval((0.775, None), 3) == "–" and format_interval((0.775, 1.0), 3) == "[0.775, 1.000]"
    assert css_token('per-head"><script>') == "per-head-script" and css_token("<>") == "unknown"
    assert number_cell(-1.25, 1, True, True) == '<td class="sb-num sb-loss" data-sort="-1.25">−1.2</td>'
    assert number_cell(3, tone=True) == '<td class="sb-num sb-gain" data-sort="3">3.00</td>'
    assert number_cell(None, tone=True) == '<td class="sb-num" data-sort="">–</td>'
    assert slugify("Qwen/Qwen2.5-7B-Instruct") == "qwen--qwen2.5-7b-instruct"


def test_the_submit_page_names_the_repository_of_mkdocs_yml(submissions_dir: Path, tmp_path: Path) -> None:
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("SINKBENCH_REPO_URL", "https://github.com/example-org/sinkbench")
        build_site(submissions_dir, tmp_path / "site")
    page = (tmp_path / "site" / "submit.html").read_text(encoding="utf-8")
    assert "https://github.com/example-org/sinkbench.git" in page and "YOUR-NAME" not in page
    assert 'href="https://github.com/example-org/sinkbench"' in page
    home = (tmp_path / "site" / "index.html").read_text(encoding="utf-8")
    bibtex = re.sub(r"<[^>]+>", "", home)  # the highlighted code block as text
    assert 'href="https://github.com/example-org/sinkbench"' in home
    assert "url     = {https://github.com/example-org/sinkbench}," in bibtex  # the software's BibTeX entry


def test_without_a_repository_url_no_page_guesses_one(submissions_dir: Path, tmp_path: Path) -> None:
    """``repo_url`` unset (a local build): the Submit page says the address is not recorded and how to go on from
    a clone, and no page carries a placeholder or an invented address."""
    with pytest.MonkeyPatch.context() as patch:
        patch.delenv("SINKBENCH_REPO_URL", raising=False)
        build_site(submissions_dir, tmp_path / "site")
    for path in (tmp_path / "site").rglob("*.html"):
        html = path.read_text(encoding="utf-8")
        assert "OWNER" not in html and "sinkbench.git" not in html, path
    page = (tmp_path / "site" / "submit.html").read_text(encoding="utf-8")
    assert "does not record the address of its repository" in page and "git clone" not in page
    assert "Open the pull request on the repository you cloned" in page


@pytest.mark.parametrize(
    ("page", "says"),
    [
        ("pairs/qwen3-vl-30b-a3b-instruct.html", "Re-measurable: extract-lm accepts model type qwen3_vl_moe"),
        ("pairs/qwen3-vl-30b-a3b-instruct.html", "Re-measurable: screen accepts model type qwen3_moe"),
        ("pairs/molmo2-o-7b.html", "Re-measurable: extract-lm accepts model type molmo2"),
        ("pairs/molmoe-1b-0924.html", "Re-measurable: screen accepts model type olmoe"),
        (
            "pairs/minicpm-v-4_5.html",
            "Not re-measurable: extract-lm refuses it: model type &#39;minicpmv&#39; exists only",
        ),
        ("pairs/internvl3-8b.html", "OpenGVLab/InternVL3-8B-hf"),
        (
            "pairs/llava-onevision-qwen2-7b-ov.html",
            "use its transformers conversion, e.g. llava-hf/llava-onevision",
        ),
    ],
)
def test_every_model_page_says_whether_sinkbench_can_re_measure_it(board, page: str, says: str) -> None:
    assert says in _html(board[0], page)


def test_every_model_on_the_board_has_a_model_type(board) -> None:
    html = "".join(_html(board[0], str(path.relative_to(board[0]))) for path in board[0].glob("*s/*.html"))
    assert html.count("Re-measurable?") == 0  # a model type unknown to the page would read so
