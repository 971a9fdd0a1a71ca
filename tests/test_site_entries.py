"""Tests of the entry pages written from MkDocs-rendered shells (sinkbench.leaderboard.entry_pages) and of the raw files."""

from __future__ import annotations

import gzip
import json
import re
import shutil
from pathlib import Path

import pytest

from sinkbench.leaderboard import build as site_module
from sinkbench.leaderboard.build import build_site
from sinkbench.leaderboard.content import RawFile
from sinkbench.leaderboard.entry_pages import TITLE, TOKEN, EntryShell
from sinkbench.submissions import load_submissions

FIXTURES = Path(__file__).parent / "fixtures" / "submissions"
SITE_URL = "https://example.org/board/"
#: A reported pair whose display name is markup and also holds the shell's placeholder.
MARKUP_PAIR = {
    "schema_version": 1,
    "kind": "pair",
    "provenance": "reported",
    "vlm": {"id": "org/markup-vlm", "revision": None, "display_name": f"<script>x()</script> {TOKEN}"},
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
    assert f"<title>&lt;script&gt;x()&lt;/script&gt; {TOKEN} - sinkbench leaderboard</title>" in html
    assert f'<link rel="canonical" href="{SITE_URL}pairs/markup.html">' in html
    assert '<header class="md-header"' in html and '<nav class="md-tabs"' in html
    assert '<a href="../leaderboard.html" class="md-tabs__link">' in html
    assert 'href="../assets/sinkbench.css"' in html and 'src="../assets/tables.js"' in html
    assert f"<h1>&lt;script&gt;x()&lt;/script&gt; {TOKEN}</h1>" in html  # user text is left as it is
    assert html.count("<h1>") == 1 and "<script>x()" not in html


def test_every_entry_page_is_complete_and_no_shell_is_left(site: Path) -> None:
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
        assert html.rstrip().endswith("</html>") and "<!--sb:entry-->" not in html, page
        assert TITLE not in html, page
    assert not list(site.rglob(f"{TOKEN}.*"))


def test_sitemap_lists_every_entry_page_instead_of_the_shells(site: Path) -> None:
    sitemap = (site / "sitemap.xml").read_text(encoding="utf-8")
    listed = set(re.findall(r"<loc>([^<]+)</loc>", sitemap))
    assert {f"{SITE_URL}{p.relative_to(site).as_posix()}" for p in _entry_pages(site)} <= listed
    assert f"{SITE_URL}leaderboard.html" in listed and TOKEN not in sitemap
    assert gzip.decompress((site / "sitemap.xml.gz").read_bytes()).decode("utf-8") == sitemap


def test_shell_fills_content_title_and_url_but_not_inside_the_content() -> None:
    shell = EntryShell.from_html(
        f"<title>{TITLE} - x</title><a href='{TOKEN}.html'>{TITLE}</a><!--sb:entry--><h1>{TITLE}</h1>"
        f"<!--/sb:entry--><p>{TOKEN}</p>",
        Path("shell.html"),
    )
    page = shell.page("a-b.c", f"<h1>{TOKEN}</h1>", f"<i>{TOKEN}</i>")
    name = f"&lt;i&gt;{TOKEN}&lt;/i&gt;"
    assert page == f"<title>{name} - x</title><a href='a-b.c.html'>{name}</a><h1>{TOKEN}</h1><p>a-b.c</p>"


@pytest.mark.parametrize(
    "html", ["<title>t</title><!--sb:entry--><!--/sb:entry-->", f"<title>{TITLE}</title><!--sb:entry-->"]
)
def test_a_shell_of_another_shape_is_refused(html: str) -> None:
    with pytest.raises(ValueError, match=r"shell\.html: expected one <!--sb:entry-->"):
        EntryShell.from_html(html, Path("shell.html"))


def test_a_page_name_must_be_a_slug() -> None:
    shell = EntryShell(f"<title>{TITLE}</title><a href='{TOKEN}.html'>", "")
    assert shell.page("ok", "", "Name") == "<title>Name</title><a href='ok.html'>"
    with pytest.raises(ValueError, match=r"'<b>' is not a slug"):
        shell.page("<b>", "", "Name")


def test_raw_files_are_copies_and_links_are_not_followed(tmp_path: Path) -> None:
    source = tmp_path / "results.json"
    source.write_text('{"a": 1}', encoding="utf-8")
    files = [RawFile("results.json", f"raw/pairs/{name}/results.json", source, "8 bytes") for name in "ab"]
    site_module._add_raw_files(files, tmp_path / "site")
    for name in "ab":
        target = tmp_path / "site" / "raw" / "pairs" / name / "results.json"
        assert target.read_text(encoding="utf-8") == '{"a": 1}'
        assert not target.samefile(source) and source.stat().st_nlink == 1
    (tmp_path / "swapped.json").symlink_to(tmp_path / "outside.txt")
    (tmp_path / "outside.txt").write_text("secret", encoding="utf-8")
    swapped = [RawFile("x.json", "raw/pairs/c/x.json", tmp_path / "swapped.json", "6 bytes")]
    with pytest.raises(OSError):
        site_module._add_raw_files(swapped, tmp_path / "site")


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
