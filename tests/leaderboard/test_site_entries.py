"""The entry pages (one per pair and per backbone) are ordinary pages of the MkDocs project, and the submitted
files they link to are copied into the site (sinkbench.leaderboard.pages, .plugin, .generate)."""

from __future__ import annotations

import gzip
import json
import re
import shutil
from pathlib import Path

import pytest

from sinkbench.leaderboard.generate import copy_submitted_file
from sinkbench.leaderboard.pages import EntryPage
from sinkbench.leaderboard.project import build_site
from sinkbench.submissions import load_submissions

FIXTURES = Path(__file__).parents[1] / "fixtures" / "submissions"
SITE_URL = "https://example.org/board/"
#: A reported pair whose display name is markup, quotes and YAML.
MARKUP_PAIR = {
    "schema_version": 1,
    "kind": "pair",
    "provenance": "reported",
    "vlm": {"id": "org/markup-vlm", "revision": None, "display_name": "<script>x()</script> \"a\": 'b' # c"},
    "reference_llm": {"id": "org/markup-llm", "revision": None, "display_name": None},
    "qk_norm": "none",
    "vl_recipe": "unknown",
    "submitter": "tester",
    "citation": {"source": "A. Author (2026)"},
    "reported": {
        "sink_strength": {"value": 1.0, "table": "T1"},
        "tasks": [{"task": "ifeval_strict", "delta": -2.0, "table": "T2"}],
    },
}
ESCAPED_NAME = "&lt;script&gt;x()&lt;/script&gt; &#34;a&#34;: &#39;b&#39; # c"


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The fixtures and :data:`MARKUP_PAIR`, built with a ``site_url`` (so MkDocs writes a sitemap)."""
    root = tmp_path_factory.mktemp("entries") / "submissions"
    shutil.copytree(FIXTURES, root)
    (root / "pairs" / "markup").mkdir()
    (root / "pairs" / "markup" / "metadata.json").write_text(json.dumps(MARKUP_PAIR), encoding="utf-8")
    out = root.parent / "site"
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("SINKBENCH_SITE_URL", SITE_URL)
        build_site(root, out)
    return out


def _entry_pages(site: Path) -> list[Path]:
    return sorted([*(site / "pairs").glob("*.html"), *(site / "backbones").glob("*.html")])


def test_entry_page_has_the_theme_the_escaped_name_and_its_own_title(site: Path) -> None:
    html = (site / "pairs" / "markup.html").read_text(encoding="utf-8")
    assert f"<title>{ESCAPED_NAME} - sinkbench leaderboard</title>" in html
    assert f'<link rel="canonical" href="{SITE_URL}pairs/markup.html">' in html
    assert '<header class="md-header"' in html and '<nav class="md-tabs"' in html
    assert 'href="../assets/sinkbench.css"' in html and 'src="../assets/tables.js"' in html
    assert f"<h1>{ESCAPED_NAME}</h1>" in html
    assert html.count("<h1>") == 1 and "<script>x()" not in html


def test_an_entry_page_lights_the_tab_of_the_table_that_lists_it(site: Path) -> None:
    tab = re.compile(
        r'<li class="md-tabs__item( md-tabs__item--active)?">\s*<a href="(?:\.\./)?([a-z/]+)\.html"'
    )
    pages = {"pairs/markup.html": "leaderboard", "backbones/org--markup-llm.html": "screening"}
    # a page of the navigation lights its own tab only (not the Guide's section too)
    pages |= {"downloads.html": "downloads", "index.html": "index"}
    for page, expected in pages.items():
        active = [name for flag, name in tab.findall((site / page).read_text(encoding="utf-8")) if flag]
        assert active == [expected], page


def test_every_entry_page_is_built_with_its_title(site: Path) -> None:
    entries = load_submissions(site.parent / "submissions").entries
    assert {p.stem for p in (site / "pairs").glob("*.html")} == {e.name for e in entries if e.kind == "pair"}
    assert len(list((site / "backbones").glob("*.html"))) == len(
        {(e.llm.id, e.llm.revision) for e in entries}
    )
    titles = {e.name: (e.vlm.display_name or e.vlm.id) for e in entries if e.kind == "pair"}
    for page in _entry_pages(site):
        html = page.read_text(encoding="utf-8")
        if page.parent.name == "pairs" and page.stem != "markup":
            assert f"<title>{titles[page.stem]} - sinkbench leaderboard</title>" in html, page
        assert html.rstrip().endswith("</html>") and "<!--sb:raw" not in html, page


def test_sitemap_and_search_index_list_every_entry_page(site: Path) -> None:
    sitemap = (site / "sitemap.xml").read_text(encoding="utf-8")
    listed = set(re.findall(r"<loc>([^<]+)</loc>", sitemap))
    assert {f"{SITE_URL}{p.relative_to(site).as_posix()}" for p in _entry_pages(site)} <= listed
    assert f"{SITE_URL}leaderboard.html" in listed
    assert gzip.decompress((site / "sitemap.xml.gz").read_bytes()).decode("utf-8") == sitemap
    index = json.loads((site / "search" / "search_index.json").read_text(encoding="utf-8"))
    located = {doc["location"].split("#")[0] for doc in index["docs"]}
    assert {p.relative_to(site).as_posix() for p in _entry_pages(site)} <= located
    markup = next(doc for doc in index["docs"] if doc["location"] == "pairs/markup.html")
    assert "org/markup-vlm" in markup["text"] and "<script>" not in json.dumps(index)


def test_search_finds_an_entry_by_its_page_not_by_the_rows_that_list_it(site: Path) -> None:
    index = json.loads((site / "search" / "search_index.json").read_text(encoding="utf-8"))

    def indexed(page: str) -> str:
        return " ".join(doc["text"] for doc in index["docs"] if doc["location"].split("#")[0] == page)

    name = "org/markup-vlm"  # in the Leaderboard's and Compare's HTML, as a row and as a choice
    leaderboard, compare = (
        (site / page).read_text(encoding="utf-8") for page in ("leaderboard.html", "compare.html")
    )
    assert "markup.html" in leaderboard and "org/markup-llm" in compare
    assert "markup" not in indexed("leaderboard.html") and "markup" not in indexed("compare.html")
    assert name in indexed("pairs/markup.html") and "org/markup-llm" in indexed(
        "backbones/org--markup-llm.html"
    )
    assert "Each row is a pair" in indexed("leaderboard.html")  # the prose still is
    assert "<!--sb:unindexed" in leaderboard  # the markers stay in the page, where they change nothing


@pytest.mark.parametrize(
    "title", ["plain", "<b>x</b>", "a \"quoted\": 'yaml' # not a comment", "---\nb: c", "\\u0041 é"]
)
def test_an_entry_page_keeps_any_title_as_escaped_text(title: str) -> None:
    """The metadata the build hands MkDocs is what MkDocs reads from the page's Markdown source."""
    from mkdocs.utils.meta import get_data

    page = EntryPage(title, f"found by {title}", "<p>content</p>")
    _, meta = get_data(page.markdown())
    assert meta["title"] == str(__import__("markupsafe").escape(title))
    assert meta == page.meta()


def test_submitted_files_are_copies_and_links_are_not_followed(tmp_path: Path) -> None:
    source = tmp_path / "results.json"
    source.write_text('{"a": 1}', encoding="utf-8")
    for name in "ab":
        target = tmp_path / "site" / "raw" / "pairs" / name / "results.json"
        copy_submitted_file(source, target)
        assert target.read_text(encoding="utf-8") == '{"a": 1}'
        assert not target.samefile(source) and source.stat().st_nlink == 1
    (tmp_path / "swapped.json").symlink_to(tmp_path / "outside.txt")
    (tmp_path / "outside.txt").write_text("secret", encoding="utf-8")
    with pytest.raises(OSError):
        copy_submitted_file(tmp_path / "swapped.json", tmp_path / "site" / "raw" / "x.json")


def test_a_testbed_pair_is_shown_apart_and_not_linked_to_the_hub(tmp_path: Path) -> None:
    root = Path(shutil.copytree(FIXTURES, tmp_path / "submissions"))
    metadata = root / "pairs" / "tiny-vlm" / "metadata.json"
    metadata.write_text(json.dumps({**json.loads(metadata.read_text()), "testbed": True}), encoding="utf-8")
    build_site(root, tmp_path / "site", experiments_dir=None)
    board = (tmp_path / "site" / "leaderboard.html").read_text(encoding="utf-8")
    publication = board.split('id="board-pairs"')[1].split("</table>")[0]
    testbed = board.split('id="board-testbed-pairs"')[1].split("</table>")[0]
    assert "pairs/tiny-vlm.html" in testbed and "pairs/tiny-vlm.html" not in publication
    assert "pairs/tiny-vlm-reported.html" in publication
    page = (tmp_path / "site" / "pairs" / "tiny-vlm.html").read_text(encoding="utf-8")
    assert "sb-badge--testbed" in page and "left out of every fit" in page
    assert "huggingface.co/sinkbench-fixtures/tiny-vlm" not in page
    assert "huggingface.co/sinkbench-fixtures/tiny-llm-instruct" in page  # the reference is a Hub model
