"""The built leaderboard in a real browser: headless Debian Chromium driven by Playwright.

Needs ``apt-get install chromium`` (``/usr/bin/chromium``) and the ``playwright`` Python package; Playwright never
downloads a browser here. The site is built from the seeded ``submissions/`` and served from 127.0.0.1.
"""

from __future__ import annotations

import functools
import http.server
import os
import shutil
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from sinkbench.leaderboard.project import build_site
from sinkbench.submissions import load_submissions

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
SEEDED = Path(__file__).resolve().parents[2] / "submissions"
#: The fixtures' measured pair, whose IFEval samples give the per-prompt drill-down.
MEASURED_PAIR = Path(__file__).parents[1] / "fixtures" / "submissions" / "pairs" / "tiny-vlm"

pytestmark = pytest.mark.browser
sync_api = pytest.importorskip("playwright.sync_api", reason="the playwright Python package is not installed")
if not CHROMIUM.exists():
    pytest.skip(
        f"{CHROMIUM} not found: install Debian's browser with `apt-get install chromium`",
        allow_module_level=True,
    )


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    """Serves the built site's files without logging every request."""

    def log_message(self, format: str, *args: object) -> None:
        pass


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The seeded submissions plus the fixtures' measured pair, built."""
    root = tmp_path_factory.mktemp("browser")
    shutil.copytree(SEEDED, root / "submissions")
    shutil.copytree(MEASURED_PAIR, root / "submissions" / "pairs" / MEASURED_PAIR.name)
    site = root / "site"
    build_site(root / "submissions", site)
    return site


@pytest.fixture(scope="module")
def base_url(built: Path) -> Iterator[str]:
    """The built site, served on 127.0.0.1."""
    server = http.server.ThreadingHTTPServer(
        ("127.0.0.1", 0), functools.partial(_QuietHandler, directory=str(built))
    )
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    thread.join()


@pytest.fixture(scope="module")
def requested() -> list[str]:
    """Every URL the browser requested, in order."""
    return []


@pytest.fixture(scope="module")
def page(base_url: str, requested: list[str]) -> Iterator[object]:
    with sync_api.sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_FLAGS)
        tab = browser.new_page(viewport={"width": 1400, "height": 1000})
        tab.on("request", lambda request: requested.append(request.url))
        yield tab
        browser.close()


def _column_values(page: object, column: int) -> list[str]:
    return page.eval_on_selector_all(
        "#board-pairs tbody tr:not([hidden])", f"rows => rows.map(r => r.cells[{column}].dataset.sort)"
    )


def test_leaderboard_lists_every_seeded_pair(page: object, base_url: str) -> None:
    page.goto(f"{base_url}/leaderboard.html")
    names = page.eval_on_selector_all(
        "#board-pairs tbody tr td:first-child a", "links => links.map(a => a.href)"
    )
    pairs = [
        entry for entry in load_submissions(SEEDED).entries if entry.kind == "pair" and not entry.testbed
    ]
    pairs.append(load_submissions(MEASURED_PAIR).entries[0])
    assert len(pairs) >= 18
    assert sorted(url.rsplit("/", 1)[-1] for url in names) == sorted(f"{e.name}.html" for e in pairs)
    assert page.locator("#board-pairs .sb-badge--reported").count() >= len(pairs) - 1
    assert page.inner_text('[data-sb-count="board-pairs"]') == f"{len(pairs)} of {len(pairs)} rows"


def test_clicking_a_column_header_sorts_the_table(page: object, base_url: str) -> None:
    page.goto(f"{base_url}/leaderboard.html")
    header = page.locator("#board-pairs thead th", has_text="S (nats)")
    column = page.locator("#board-pairs thead th").all_inner_texts().index("S (nats)")
    header.click()
    ascending = [float(v) for v in _column_values(page, column)]
    assert ascending == sorted(ascending) and header.get_attribute("aria-sort") == "ascending"
    header.click()
    descending = [float(v) for v in _column_values(page, column)]
    assert descending == sorted(ascending, reverse=True) and header.get_attribute("aria-sort") == "descending"
    assert ascending[0] < ascending[-1]


def test_the_filters_hide_rows(page: object, base_url: str) -> None:
    page.goto(f"{base_url}/leaderboard.html")
    rows = page.locator("#board-pairs tbody tr")
    total = rows.count()
    page.fill('input[data-sb-filter~="board-pairs"]', "InternVL")
    visible = page.locator("#board-pairs tbody tr:not([hidden])")
    assert 0 < visible.count() < total
    assert all("InternVL" in text for text in visible.all_inner_texts())
    page.fill('input[data-sb-filter~="board-pairs"]', "")
    page.select_option('select[data-sb-filter~="board-pairs"][data-sb-key="qk"]', "per-head")
    kinds = page.eval_on_selector_all(
        "#board-pairs tbody tr:not([hidden])", "rows => rows.map(r => r.dataset.sbQk)"
    )
    assert kinds and set(kinds) == {"per-head"} and len(kinds) < total
    assert page.inner_text('[data-sb-count="board-pairs"]') == f"{len(kinds)} of {total} rows"


def test_the_headline_scatter_plot_is_drawn_at_a_readable_size(page: object, base_url: str) -> None:
    page.goto(f"{base_url}/index.html")
    chart = page.locator("figure.sb-figure--live .sb-chart").first
    chart.wait_for()
    box = chart.bounding_box()
    assert box["width"] >= 1000 and box["height"] >= 400  # the whole column of a 1,400 px screen
    svg = page.locator('img[src$="scatter-ifeval_strict.svg"]')  # kept for downloads and readers without JS
    assert "Scatter plot of Sink Strength S" in svg.get_attribute("alt")
    assert page.evaluate("url => fetch(url).then(r => r.ok)", f"{base_url}/plots/scatter-ifeval_strict.svg")


def test_nothing_is_requested_from_another_host(page: object, base_url: str, requested: list[str]) -> None:
    page.goto(f"{base_url}/correlations.html")
    page.wait_for_load_state("networkidle")
    assert requested and all(url.startswith(base_url) for url in requested), requested


def test_screenshots_of_home_and_leaderboard(page: object, base_url: str, tmp_path: Path) -> None:
    """Saves both pages under tmp_path, and in $SINKBENCH_SCREENSHOT_DIR when set."""
    extra = os.environ.get("SINKBENCH_SCREENSHOT_DIR")
    for name in ("index", "leaderboard"):
        page.goto(f"{base_url}/{name}.html")
        shot = tmp_path / f"{name}.png"
        page.screenshot(path=str(shot), full_page=True)
        assert shot.stat().st_size > 10_000
        if extra:
            Path(extra).mkdir(parents=True, exist_ok=True)
            shutil.copy(shot, Path(extra) / f"site-{name}.png")


def test_search_finds_a_pair_page_by_its_vlm_name(page: object, base_url: str) -> None:
    page.goto(f"{base_url}/index.html")
    page.keyboard.press("s")  # Material's shortcut: focus the search box
    page.keyboard.type("Ovis2-34B", delay=30)
    hit = page.locator('.md-search-result__item a[href*="pairs/ovis2-34b.html"]')
    hit.first.wait_for(timeout=15_000)
    hit.first.click()
    page.wait_for_url("**/pairs/ovis2-34b.html*")
    assert page.title().startswith("Ovis2-34B")
    assert page.locator(".md-tabs__item--active").inner_text().strip() == "Leaderboard"


def test_the_first_column_stays_visible_when_the_table_scrolls(page: object, base_url: str) -> None:
    page.set_viewport_size({"width": 800, "height": 900})
    page.goto(f"{base_url}/leaderboard.html")
    box = page.locator("#board-pairs").locator(
        "xpath=ancestor::div[contains(@class, 'md-typeset__scrollwrap')]"
    )
    page.evaluate("el => { el.scrollLeft = el.scrollWidth; }", box.element_handle())
    assert page.evaluate("el => el.scrollLeft", box.element_handle()) > 100  # it did scroll
    first = page.locator("#board-pairs tbody tr td.sb-sticky").first.bounding_box()
    frame = box.bounding_box()
    assert abs(first["x"] - frame["x"]) < 2 and first["width"] > 20
    page.set_viewport_size({"width": 1400, "height": 1000})


def test_a_phone_sees_the_ifeval_delta_column(page: object, base_url: str) -> None:
    page.set_viewport_size({"width": 390, "height": 844})
    page.goto(f"{base_url}/leaderboard.html")
    header = page.locator("#board-pairs thead th", has_text="Δ IFEval").first
    box = header.bounding_box()
    assert header.is_visible() and box["x"] + box["width"] <= 390
    assert not page.locator("#board-pairs thead th", has_text="Reference LLM").is_visible()
    page.set_viewport_size({"width": 1400, "height": 1000})


def test_a_measured_pair_opens_its_per_prompt_drill_down(page: object, base_url: str) -> None:
    page.goto(f"{base_url}/pairs/tiny-vlm.html")
    prompt = page.locator("details.sb-prompt").first
    assert prompt.get_attribute("open") is None
    prompt.locator("summary").click()
    assert prompt.get_attribute("open") is not None
    assert prompt.locator(".sb-side-by-side pre").first.is_visible()
    assert "CC BY 4.0" in page.inner_text("body")


def test_screenshots_desktop_and_phone(page: object, base_url: str, tmp_path: Path) -> None:
    """Saves the leaderboard and a measured pair page at 1400 px and 390 px wide (and in $SINKBENCH_SCREENSHOT_DIR)."""
    extra = os.environ.get("SINKBENCH_SCREENSHOT_DIR")
    for width, tag in ((1400, "desktop"), (390, "phone")):
        page.set_viewport_size({"width": width, "height": 900})
        for name in ("leaderboard", "screening", "pairs/tiny-vlm"):
            page.goto(f"{base_url}/{name}.html")
            shot = tmp_path / f"{tag}-{name.replace('/', '-')}.png"
            page.screenshot(path=str(shot), full_page=width > 390)
            assert shot.stat().st_size > 10_000
            if extra:
                Path(extra).mkdir(parents=True, exist_ok=True)
                shutil.copy(shot, Path(extra) / shot.name)
    page.set_viewport_size({"width": 1400, "height": 1000})


#: The two widths every page is checked at: a laptop and a phone.
WIDTHS = {"desktop": 1400, "phone": 390}


@pytest.fixture(scope="module")
def site_pages(built: Path) -> list[str]:
    """Every HTML page the build produced (so a page added later is covered without a change here)."""
    return sorted(path.relative_to(built).as_posix() for path in built.rglob("*.html"))


def test_every_page_fits_the_screen_keeps_a_clean_console_and_is_screenshotted(
    page: object, base_url: str, site_pages: list[str], tmp_path: Path
) -> None:
    """At 1400 px and 390 px: no horizontal overflow of the page (wide tables scroll inside their own box), no
    console error or warning, no failed request, every chart drawn. Screenshots of every page go to tmp_path (the
    viewport) and, full page, to $SINKBENCH_SCREENSHOT_DIR when set."""
    extra = os.environ.get("SINKBENCH_SCREENSHOT_DIR")
    messages: list[str] = []
    page.on(
        "console",
        lambda m: messages.append(f"{m.type}: {m.text}") if m.type in ("error", "warning") else None,
    )
    page.on("pageerror", lambda error: messages.append(f"page error: {error}"))
    page.on("requestfailed", lambda request: messages.append(f"failed: {request.url}"))
    problems = []
    assert len(site_pages) >= 20 and "compare.html" in site_pages and "architectures.html" in site_pages
    for tag, width in WIDTHS.items():
        page.set_viewport_size({"width": width, "height": 900})
        for name in site_pages:
            messages.clear()
            page.goto(f"{base_url}/{name}")
            page.wait_for_load_state("networkidle")
            widths = page.evaluate("[document.documentElement.scrollWidth, window.innerWidth]")
            charts = page.evaluate(
                "[document.querySelectorAll('figure[data-sb-chart]').length,"
                " document.querySelectorAll('figure.sb-figure--live').length]"
            )
            if widths[0] > widths[1]:
                problems.append(f"{tag} {name}: page {widths[0]} px wide in a {widths[1]} px window")
            if charts[0] != charts[1]:
                problems.append(f"{tag} {name}: {charts[1]} of {charts[0]} charts drawn")
            problems += [f"{tag} {name}: {message}" for message in messages if "favicon" not in message]
            shot = tmp_path / f"{tag}-{name.replace('/', '-')}.png"
            page.screenshot(path=str(shot))
            assert shot.stat().st_size > 5_000, shot
            if extra:
                Path(extra).mkdir(parents=True, exist_ok=True)
                page.screenshot(path=str(Path(extra) / f"{tag}-{name.replace('/', '-')}.png"), full_page=True)
    page.set_viewport_size({"width": 1400, "height": 1000})
    assert problems == [], "\n".join(problems)


def test_one_filter_covers_every_table_of_the_page_and_lives_in_the_url(page: object, base_url: str) -> None:
    page.goto(f"{base_url}/leaderboard.html")
    page.select_option('select[data-sb-key="provenance"]', "measured")
    counts = page.eval_on_selector_all("[data-sb-count]", "spans => spans.map(s => s.textContent)")
    visible = page.locator("#board-pairs tbody tr:not([hidden])").count()
    testbed = page.locator("#board-testbed-pairs tbody tr:not([hidden])").count()
    assert visible == 1 and testbed == 1  # the fixtures' measured pair, and the testbed pair in its own table
    assert f"{visible} of " in counts[0] and counts[1] == "1 of 1 rows"
    assert "provenance=measured" in page.url
    header = page.locator("#board-pairs thead th", has_text="S (nats)")
    header.click()
    assert "sort=board-pairs" in page.url
    page.goto(page.url)  # the shared address restores the view
    assert page.input_value('select[data-sb-key="provenance"]') == "measured"
    assert page.locator("#board-pairs tbody tr:not([hidden])").count() == 1
    assert (
        page.locator("#board-pairs thead th", has_text="S (nats)").get_attribute("aria-sort") == "ascending"
    )
    page.goto(f"{base_url}/screening.html")
    page.fill('input[data-sb-filter~="board-screening"]', "smollm2")
    inside = page.locator("#board-screening tbody tr:not([hidden])").count()
    apart = page.locator("#board-screening-apart tbody tr:not([hidden])").count()
    assert inside + apart == 1  # found wherever it is listed, with both tables' counts shown
    assert page.inner_text('[data-sb-count="board-screening-apart"]') == f"{apart} of 2 rows"


def test_columns_can_be_hidden_and_shown_and_the_choice_is_kept(page: object, base_url: str) -> None:
    page.goto(f"{base_url}/leaderboard.html")
    menu = page.locator("details.sb-columns").first
    menu.locator("summary").click()
    assert not page.locator("#board-pairs thead th", has_text="Submitted").is_visible()  # hidden by default
    menu.locator("label", has_text="Submitted").locator("input").check()
    assert page.locator("#board-pairs thead th", has_text="Submitted").is_visible()
    menu.locator("label", has_text="Provenance").locator("input").uncheck()
    assert not page.locator("#board-pairs thead th", has_text="Provenance").is_visible()
    page.goto(page.url)
    assert page.locator("#board-pairs thead th", has_text="Submitted").is_visible()
    assert not page.locator("#board-pairs thead th", has_text="Provenance").is_visible()


def test_hovering_a_point_of_the_headline_chart_names_the_pair_with_its_numbers(
    page: object, base_url: str
) -> None:
    page.goto(f"{base_url}/index.html")
    points = "figure.sb-figure--live .sb-chart svg .mark-symbol.role-mark path"
    page.wait_for_selector(points, timeout=20_000)
    assert not page.locator(
        "figure.sb-figure--live img.sb-chart-static"
    ).is_visible()  # the SVG stays for no-JS
    page.locator(points).first.hover(force=True)
    label = page.locator("#vg-tooltip-element")
    label.wait_for(state="visible", timeout=10_000)
    text = label.inner_text()
    assert "S (nats)" in text and "Δ" in text and ("reported" in text or "measured" in text)
    page.mouse.move(0, 0)
    page.locator("figure.sb-figure--live .role-legend-symbol path").first.click(force=True)
    page.wait_for_timeout(500)  # a legend entry shows its class alone: the others fade
    faded = page.eval_on_selector_all(
        points, "ps => ps.filter(p => p.getAttribute('opacity') === '0.15').length"
    )
    assert faded > 0


def test_compare_shows_the_two_chosen_models_and_keeps_them_in_the_url(page: object, base_url: str) -> None:
    page.goto(f"{base_url}/compare.html")
    page.select_option('select[data-sb-compare-pick="a"]', "pair:tiny-vlm")
    page.select_option('select[data-sb-compare-pick="b"]', "pair:qwen3-vl-8b-instruct")
    headers = page.locator("#board-compare thead th").all_inner_texts()
    assert headers[1].startswith("Tiny VLM") and headers[2].startswith("Qwen3-VL-8B-Instruct")
    body = page.inner_text("#board-compare tbody")
    assert "IFEval: observed Δ" in body and "held-out predicted Δ" in body and "Sink Strength S" in body
    assert "a=pair%3Atiny-vlm" in page.url or "a=pair:tiny-vlm" in page.url
    page.wait_for_selector("#board-compare-profile svg .mark-line path", timeout=20_000)
    assert (
        page.locator("#board-compare-profile svg .mark-line path").count() == 1
    )  # only tiny-vlm has a profile
    page.goto(page.url)
    assert page.input_value('select[data-sb-compare-pick="b"]') == "pair:qwen3-vl-8b-instruct"


def test_architectures_are_searchable_grouped_and_never_broken_mid_word(page: object, base_url: str) -> None:
    page.set_viewport_size({"width": 390, "height": 900})
    page.goto(f"{base_url}/architectures.html")
    groups = page.locator("details.sb-verdict summary").all_inner_texts()
    assert any(g.startswith("equal:") for g in groups) and any(g.startswith("refused:") for g in groups)
    lines = page.eval_on_selector_all("code.sb-type", "codes => codes.map(c => c.getClientRects().length)")
    assert lines and set(lines) == {1}  # every model type on one line, bailing_hybrid included
    page.fill("input[data-sb-filter]", "bert")
    rows = page.eval_on_selector_all(
        "table.sb-arch tbody tr:not([hidden])", "rows => rows.map(r => r.textContent)"
    )
    shown = page.eval_on_selector_all(
        "table.sb-arch tbody tr:not([hidden]) code.sb-type", "c => c.map(x => x.textContent)"
    )
    assert "bert" in shown and "camembert" in shown and all("bert" in row.lower() for row in rows)
    assert "llama" not in shown and len(shown) < 40
    assert "encoder, run causally" in page.inner_text("body")
    page.set_viewport_size({"width": 1400, "height": 1000})


def test_no_leaderboard_table_scrolls_sideways_at_1400_px(page: object, base_url: str) -> None:
    page.set_viewport_size({"width": 1400, "height": 1000})
    page.goto(f"{base_url}/leaderboard.html")
    page.wait_for_selector("#board-pairs", timeout=10_000)
    overflow = page.eval_on_selector_all(
        ".sb-scroll, .sb-scroll .md-typeset__scrollwrap",
        "boxes => boxes.map(b => [b.querySelector('table').id, b.scrollWidth - b.clientWidth])",
    )
    assert len(overflow) >= 4 and all(extra == 0 for _, extra in overflow), overflow


def test_downloads_table_names_stay_whole_and_column_names_break_only_at_underscores(
    page: object, base_url: str
) -> None:
    for width in WIDTHS.values():
        page.set_viewport_size({"width": width, "height": 900})
        page.goto(f"{base_url}/downloads.html")
        page.wait_for_selector("code.sb-name", timeout=10_000)
        lines = page.eval_on_selector_all(
            "code.sb-name", "codes => codes.map(c => c.getClientRects().length)"
        )
        assert len(lines) >= 4 and set(lines) == {1}, (width, lines)  # "correlations" on one line
        cut = page.eval_on_selector_all(
            ".sb-scroll td", "cells => cells.filter(c => c.scrollWidth > c.clientWidth + 1).length"
        )
        assert cut == 0, width  # no column name runs out of its cell
    page.set_viewport_size({"width": 1400, "height": 1000})


def test_compare_states_each_basis_and_says_when_two_differ(page: object, base_url: str) -> None:
    page.goto(f"{base_url}/compare.html?a=pair:vl-testbed-smollm2-135m-seed0&b=pair:internvl3-8b")
    notice = page.locator("[data-sb-compare-notice]")
    notice.wait_for(state="visible", timeout=10_000)
    text = notice.inner_text()
    assert "Different bases side by side" in text and "128 of 541 documents" in text
    assert "reported by arXiv 2609.00746" in text and "541 prompts" in text
    testbed = page.locator("#board-compare tbody tr", has_text="IFEval: observed Δ").locator("td").nth(1)
    assert "measured by sinkbench's VL testbed" in testbed.locator(".sb-basis").inner_text()
    page.select_option('select[data-sb-compare-pick="a"]', "pair:ovis2-34b")  # both reported by the paper
    assert not notice.is_visible()
    assert page.locator("#board-compare tbody .sb-basis").count() >= 12


def test_compare_profile_chart_has_a_legend_readable_on_both_schemes(page: object, base_url: str) -> None:
    page.goto(f"{base_url}/compare.html?a=pair:vl-testbed-smollm2-135m-seed0&b=pair:tiny-vlm")
    labels = "#board-compare-profile .role-legend-label text"
    page.locator(labels).first.wait_for(timeout=20_000)
    names = page.locator(labels).all_text_contents()
    assert len(names) == 2 and names[0].startswith("first: sinkbench/vl-testbed") and "Tiny VLM" in names[1]
    assert (
        "Per-layer median G" in page.locator("#board-compare-profile .role-legend-title text").text_content()
    )
    for scheme, light_text in (("default", False), ("slate", True)):
        page.evaluate("s => document.body.setAttribute('data-md-color-scheme', s)", scheme)
        page.wait_for_timeout(300)
        page.wait_for_selector(labels, timeout=10_000)
        fill = page.locator(labels).first.evaluate("t => getComputedStyle(t).fill")
        channels = [int(c) for c in fill[fill.index("(") + 1 : fill.index(")")].split(",")[:3]]
        assert (sum(channels) / 3 > 128) is light_text, (scheme, fill)
    page.select_option('select[data-sb-compare-pick="b"]', "pair:internvl3-8b")
    assert "No line for InternVL3-8B" in page.inner_text("figure.sb-compare-profile figcaption")


def test_compare_fits_a_phone_without_scrolling_sideways(page: object, base_url: str) -> None:
    page.set_viewport_size({"width": 390, "height": 844})
    page.goto(f"{base_url}/compare.html?a=pair:vl-testbed-smollm2-135m-seed0&b=pair:internvl3-8b")
    page.wait_for_selector("#board-compare tbody .sb-basis", timeout=10_000)
    extra = page.eval_on_selector_all(
        ".sb-scroll, .sb-scroll .md-typeset__scrollwrap",
        "boxes => boxes.map(b => b.scrollWidth - b.clientWidth)",
    )
    widths = page.eval_on_selector_all(
        "#board-compare thead th", "hs => hs.map(h => h.getBoundingClientRect().width)"
    )
    page.set_viewport_size({"width": 1400, "height": 1000})
    assert extra and set(extra) == {0}, extra
    assert abs(widths[1] - widths[2]) < 2 and widths[1] > 100  # the two entries share the width
