"""One number per fact (sinkbench.leaderboard.consistency): the build collects every marked figure of every page and
fails when one fact is shown as two numbers without both pages saying why."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from sinkbench.leaderboard.consistency import Fact, FactBook, InconsistentFigures, fact_attributes, fact_key
from sinkbench.leaderboard.project import build_site
from sinkbench.leaderboard.sources import SOURCES_DIR, SiteSources

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = Path(__file__).parent / "fixtures" / "submissions"
KEY = fact_key("score", "org/model@rev", "ifeval_strict")


def _book(*shown: tuple[str, str, str]) -> FactBook:
    return FactBook(Fact(KEY, basis, text, page) for text, basis, page in shown)


@pytest.mark.parametrize(
    ("shown", "clashes"),
    [
        ((("19.96", "all 541", "a.md"), ("19.96", "all 541", "b.md")), False),
        ((("19.96", "all 541", "a.md"), ("20.0", "all 541", "b.md")), False),  # one number, printed coarser
        ((("19.96", "all 541", "a.md"), ("19.8", "all 541", "b.md")), True),  # same basis, another number
        ((("19.96", "all 541", "a.md"), ("10.94", "first 128 of 541", "b.md")), False),  # both say why
        ((("19.96", "all 541", "a.md"), ("10.94", "", "b.md")), True),  # one says nothing
        ((("\u221210.9", "x", "a.md"), ("-10.9", "x", "b.md")), False),  # a true minus is a minus
        ((("\u2013", "x", "a.md"), ("3.0", "x", "b.md")), False),  # a missing figure is no number
    ],
)
def test_a_fact_shown_as_two_numbers_needs_a_stated_basis(shown, clashes: bool) -> None:
    problems = _book(*shown).problems()
    assert bool(problems) == clashes, problems
    if clashes:
        assert problems[0].startswith(f"{KEY}: shown as ") and "Fix:" in problems[0]
        assert "a.md" in problems[0] and "b.md" in problems[0]


def test_marked_figures_are_read_from_a_page_whatever_they_hold() -> None:
    html = (
        f'<td class="sb-num" data-sort="1"{fact_attributes(KEY, "first 128 of 541 <prompts> & more")}>+1.5</td>'
        f'<span{fact_attributes(fact_key("s", "a@"), "")}>\u22120.21</span><td class="sb-num">9.9</td>'
    )
    book = FactBook()
    book.read_page("p.md", html)
    assert [(f.key, f.basis, f.text) for f in book.facts] == [
        (KEY, "first 128 of 541 <prompts> & more", "+1.5"),
        ("s|a@", "", "\u22120.21"),
    ]


@pytest.fixture(scope="module")
def board_facts(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[Fact]]:
    """The repository's board, built, with the facts its pages marked (read back from the HTML)."""
    site = tmp_path_factory.mktemp("facts") / "site"
    build_site(ROOT / "submissions", site)
    book = FactBook()
    for page in site.rglob("*.html"):
        book.read_page(page.relative_to(site).as_posix(), page.read_text(encoding="utf-8"))
    return site, book.facts


def test_the_board_marks_its_figures_on_every_kind_of_page(board_facts) -> None:
    _, facts = board_facts
    pages = {fact.page for fact in facts}
    for page in ("leaderboard.html", "screening.html", "correlations.html", "index.html", "compare.html"):
        assert page in pages, page
    assert any(p.startswith("pairs/") for p in pages) and any(p.startswith("backbones/") for p in pages)
    kinds = {fact.key.split("|")[0] for fact in facts}
    assert {"s", "score", "delta", "predicted_held_out", "predicted_all_pairs", "rho"} <= kinds


def test_smollm2_s_ifeval_scores_differ_only_with_their_basis_stated(board_facts) -> None:
    """The issue's example: one model, several IFEval scores, each now with what it was measured on."""
    _, facts = board_facts
    smollm2 = [
        f
        for f in facts
        if f.key.startswith("score|HuggingFaceTB/SmolLM2-135M-Instruct@") and "ifeval" in f.key
    ]
    values = {(f.text, f.basis) for f in smollm2}
    assert ("19.96", "all 541 documents · up to 1,280 new tokens · float32 · GGUF Q4_1") in values
    assert (
        "14.06",
        "the VL testbed's short-answer prompts: 128 of 541 documents · up to 64 new tokens · bfloat16",
    ) in values
    assert all(f.basis for f in smollm2)


def test_the_home_and_correlations_pages_quote_one_rho(board_facts) -> None:
    site, facts = board_facts
    rho = {f.page: f.text for f in facts if f.key == "rho|ifeval_strict"}
    assert rho["index.html"] == rho["correlations.html"] == "0.877"
    home = (site / "index.html").read_text(encoding="utf-8")
    assert (
        re.search(r"On this board.s <strong>17 pairs</strong>", home)
        and "ρ = 0.971 is over its own six" in home
    )


def test_a_page_that_contradicts_another_stops_the_build(tmp_path: Path) -> None:
    """A template that prints a pair's S one hundredth off on the Leaderboard, under the same fact and basis as the
    pair's page, fails the build, naming the fact, both figures and both pages; nothing is published."""
    sources = tmp_path / "sources"
    sources.mkdir()
    shutil.copyfile(SOURCES_DIR / "mkdocs.yml", sources / "mkdocs.yml")
    shutil.copytree(SOURCES_DIR / "site", sources / "site", ignore=shutil.ignore_patterns("__pycache__"))
    template = sources / "site" / "templates" / "leaderboard.md.j2"
    text = template.read_text(encoding="utf-8")
    original = "{{ m.s_value(pair.sink_strength, pair.s_interval, ref, pair.s_protocol) }}"
    assert original in text
    wrong = (
        '<span{{ fact("s", ref, basis=pair.s_protocol) }}>'
        "{{ (pair.sink_strength.value + 0.01) | num(2, True) if pair.sink_strength.value is not none else '' }}</span>"
    )
    template.write_text(text.replace(original, wrong, 1), encoding="utf-8")
    out = tmp_path / "site"
    with pytest.raises(InconsistentFigures) as raised:
        build_site(FIXTURES, out, sources=SiteSources(sources))
    message = str(raised.value)
    assert message.startswith("s|") and "leaderboard.md" in message and "Fix:" in message
    assert not out.exists()


def test_the_training_page_quotes_the_testbed_models_figures_as_facts_of_the_pairs_model(board_facts) -> None:
    """Training dynamics' base-model row shows the testbed pair's reference LLM: its IFEval score and S are facts
    under the same key as the pair page's, each with the basis that makes them differ (the testbed's own run)."""
    site, facts = board_facts
    model = "HuggingFaceTB/SmolLM2-135M-Instruct@sha256:b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53"
    score, s = fact_key("score", model, "ifeval_strict"), fact_key("s", model)
    training = {f.key: f for f in facts if f.page == "training.html"}
    assert training[score].text == "15.6" and "not by lm-eval" in training[score].basis
    assert training[s].text == "1.456" and training[s].basis.startswith("the VL testbed's own screen")
    pair = [f for f in facts if f.page == "pairs/vl-testbed-smollm2-135m-seed0.html" and f.key == score]
    assert [f.text for f in pair] == ["14.06"] and pair[0].basis != training[score].basis
    page = (site / "training.html").read_text(encoding="utf-8")
    assert training[score].basis.replace("'", "&#39;") in page  # the basis is on the page, not only in markup
    assert 'href="leaderboard.html#board-testbed-pairs"' in page and 'id="board-testbed-pairs"' in (
        site / "leaderboard.html"
    ).read_text(encoding="utf-8")


def test_a_training_page_figure_that_contradicts_another_page_silently_stops_the_build(
    tmp_path: Path,
) -> None:
    """The base model's IFEval score printed without its basis (15.6 against the pair page's 14.06) on the page an
    experiment publishes fails the build, naming the fact and both pages: its pages pass the same check."""
    experiments = tmp_path / "experiments"
    shutil.copytree(ROOT / "experiments" / "vl_testbed" / "page", experiments / "vl_testbed" / "page")
    page = experiments / "vl_testbed" / "page" / "training.md"
    text = page.read_text(encoding="utf-8")
    marked = re.search(
        r'(data-sb-fact="score\|HuggingFaceTB[^"]*\|ifeval_strict") data-sb-basis="[^"]*"', text
    )
    assert marked is not None
    page.write_text(text.replace(marked.group(0), f'{marked.group(1)} data-sb-basis=""'), encoding="utf-8")
    out = tmp_path / "site"
    with pytest.raises(InconsistentFigures) as raised:
        build_site(ROOT / "submissions", out, experiments_dir=experiments)
    message = str(raised.value)
    assert (
        message.startswith("score|HuggingFaceTB/SmolLM2-135M-Instruct@")
        and "|ifeval_strict: shown as " in message
    )
    assert "training.md" in message and "no basis stated" in message and "Fix:" in message
    assert not out.exists()
