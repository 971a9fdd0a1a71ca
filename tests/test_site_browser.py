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
SEEDED = Path(__file__).resolve().parents[1] / "submissions"
#: The fixtures' measured pair, whose IFEval samples give the per-prompt drill-down.
MEASURED_PAIR = Path(__file__).parent / "fixtures" / "submissions" / "pairs" / "tiny-vlm"

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
def base_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The seeded submissions plus the fixtures' measured pair, built and served on 127.0.0.1."""
    root = tmp_path_factory.mktemp("browser")
    shutil.copytree(SEEDED, root / "submissions")
    shutil.copytree(MEASURED_PAIR, root / "submissions" / "pairs" / MEASURED_PAIR.name)
    site = root / "site"
    build_site(root / "submissions", site)
    server = http.server.ThreadingHTTPServer(
        ("127.0.0.1", 0), functools.partial(_QuietHandler, directory=str(site))
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
    page.fill('input[data-sb-filter="board-pairs"]', "InternVL")
    visible = page.locator("#board-pairs tbody tr:not([hidden])")
    assert 0 < visible.count() < total
    assert all("InternVL" in text for text in visible.all_inner_texts())
    page.fill('input[data-sb-filter="board-pairs"]', "")
    page.select_option('select[data-sb-filter="board-pairs"][data-sb-key="qk"]', "per-head")
    kinds = page.eval_on_selector_all(
        "#board-pairs tbody tr:not([hidden])", "rows => rows.map(r => r.dataset.sbQk)"
    )
    assert kinds and set(kinds) == {"per-head"} and len(kinds) < total
    assert page.inner_text('[data-sb-count="board-pairs"]') == f"{len(kinds)} of {total} rows"


def test_the_headline_scatter_plot_is_visible(page: object, base_url: str) -> None:
    page.goto(f"{base_url}/index.html")
    plot = page.locator('img[src$="scatter-ifeval_strict.svg"]')
    plot.scroll_into_view_if_needed()
    assert plot.is_visible()
    assert page.evaluate("img => img.complete && img.naturalWidth > 0", plot.element_handle())
    assert "Scatter plot of Sink Strength S" in plot.get_attribute("alt")


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
