"""One number per fact (sinkbench.leaderboard.consistency): the build collects every marked figure of every page and
fails when figures of one fact disagree: on one basis they are one number printed alike (the unrounded value rounded
to their decimals where it is known), and on bases that differ one page names them all.

The planted kinds are planted in the real board as built (its pages' HTML and the Compare page's facts), so each
case is a mismatch a reviewer could make on the real site."""

from __future__ import annotations

import re
import shutil
from dataclasses import replace
from pathlib import Path

import pytest

from sinkbench import charts
from sinkbench.cli.failures import run_command
from sinkbench.leaderboard.compare import ComparePage
from sinkbench.leaderboard.consistency import (
    Fact,
    FactBook,
    InconsistentFigures,
    basis_signature,
    fact_attributes,
    fact_key,
)
from sinkbench.leaderboard.history import board_history
from sinkbench.leaderboard.plugin import _message
from sinkbench.leaderboard.project import build_site
from sinkbench.leaderboard.sources import SOURCES_DIR, SiteSources
from sinkbench.leaderboard.views import build_views
from sinkbench.submissions.gate import load_valid_entries
from sinkbench.tables.build import build_tables

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = Path(__file__).parents[1] / "fixtures" / "submissions"
KEY = fact_key("score", "org/model@rev", "ifeval_strict")
SMOLLM2 = "HuggingFaceTB/SmolLM2-135M-Instruct@sha256:b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53"
TESTBED = "pairs/vl-testbed-smollm2-135m-seed0.html"
BACKBONE = "backbones/huggingfacetb--smollm2-135m-instruct.html"


def _book(*shown: tuple[str, str, str]) -> FactBook:
    return FactBook(Fact(KEY, basis, text, page) for text, basis, page in shown)


@pytest.mark.parametrize(
    ("shown", "clashes"),
    [
        ((("19.96", "all 541", "a.md"), ("19.96", "all 541", "b.md")), False),
        ((("19.96", "all 541", "a.md"), ("20.0", "all 541", "b.md")), True),  # one basis, printed coarser
        ((("19.96", "all 541", "a.md"), ("19.8", "all 541", "b.md")), True),  # same basis, another number
        ((("19.96", "all 541", "a.md"), ("19.96%", "all 541", "b.md")), True),  # points against a percentage
        ((("19.96", "all 541", "a.md"), ("\u221219.96", "all 541", "b.md")), True),  # sign flipped
        (
            (("19.96", "all 541 prompts", "a.md"), ("10.94", "all 541 documents", "b.md")),
            True,
        ),  # wording only
        ((("19.96", "all 541", "a.md"), ("10.94", "first 128 of 541", "b.md")), True),  # no page names both
        (
            (
                ("19.96", "all 541", "a.md"),
                ("10.94", "first 128 of 541", "b.md"),
                ("10.94", "first 128 of 541", "a.md"),
            ),
            False,
        ),
        (
            (("19.96", "all 541", "a.md"), ("10.94", "", "b.md"), ("10.94", "", "a.md")),
            True,
        ),  # one says nothing
        (
            (("19.96", "all 541 · float32", "a.md"), ("20.0", "all 541 · bfloat16", "b.md")),
            False,
        ),  # can be one
        ((("\u221210.9", "x", "a.md"), ("-10.9", "x", "b.md")), False),  # a true minus is a minus
        ((("\u2013", "x", "a.md"), ("3.0", "x", "b.md")), False),  # a missing figure is no number
        (
            (("+1.46 [1.38, 1.52]", "x", "a.md"), ("+1.46 [1.37, 1.52]", "x", "b.md")),
            True,
        ),  # widened interval
        ((("+1.46 [1.38, 1.52]", "x", "a.md"), ("+1.46 [1.38, 1.520]", "x", "b.md")), True),  # one end finer
        ((("+1.46 [1.52, 1.38]", "x", "a.md"),), True),  # ends swapped
        ((("+1.66 [1.38, 1.52]", "x", "a.md"),), True),  # a point outside its own interval
    ],
)
def test_figures_of_one_fact_are_one_number_printed_alike_or_named_on_one_page(shown, clashes: bool) -> None:
    problems = _book(*shown).problems()
    assert bool(problems) == clashes, problems
    for line in problems:
        assert "org/model@rev" in line and "Fix:" in line and "\n" not in line
        assert all(page in line for page in {page for _, _, page in shown})


@pytest.mark.parametrize(
    ("exact", "text", "clashes"),
    [
        (1.4556, "1.456", False),  # the value rounded to three decimals
        (1.4556, "1.747", True),  # the value × 1.2
        (1.4549, "1.46", True),  # 1.455 rounded again: not the value rounded
        (-7.8125, "\u22127.81", False),
        (-7.8125, "+7.81", True),
    ],
)
def test_each_figure_is_the_unrounded_value_rounded_to_its_decimals(
    exact: float, text: str, clashes: bool
) -> None:
    key = fact_key("s", "a@")
    book = FactBook()
    book.read_page("a.md", f"<td{fact_attributes(key, 'x', exact)}>{text}</td>")
    book.read_page("b.md", f"<span{fact_attributes(key, 'x')}>{text}</span>")
    assert bool(book.problems()) == clashes, book.problems()


def test_two_unrounded_values_on_one_basis_are_two_measurements() -> None:
    key = fact_key("s", "a@")
    book = FactBook()
    book.read_page("a.md", f"<td{fact_attributes(key, 'x', 1.4556)}>1.456</td>")
    book.read_page("b.md", f"<td{fact_attributes(key, 'x', 1.4561)}>1.456</td>")
    (problem,) = book.problems()
    assert "two numbers on one basis" in problem and "a.md" in problem and "b.md" in problem


def test_marked_figures_are_read_whole_inline_markup_and_tooltips_included() -> None:
    html = (
        f'<td class="sb-num" data-sort="1"{fact_attributes(KEY, "first 128 of 541 <prompts> & more")}>+1.5</td>'
        f'<span{fact_attributes(fact_key("s", "a@"), "")}>\u22120.21</span><td class="sb-num">9.9</td>'
        f"<p{fact_attributes(fact_key('rho', 't'), '17 pairs', 0.8771)}>ρ = <strong><em>0.877</em></strong><br>"
        "<img src=x> more</p>"
        f'<td{fact_attributes(fact_key("s", "b@"), "v1")} title="v1"><span title="S is 1.75">1.46</span></td>'
    )
    book = FactBook()
    book.read_page("p.md", html)
    assert [(f.key, f.basis, f.text, f.value) for f in book.facts] == [
        (KEY, "first 128 of 541 <prompts> & more", "+1.5", None),
        ("s|a@", "", "\u22120.21", None),
        ("rho|t", "17 pairs", "ρ = 0.877 more", (0.8771,)),
        ("s|b@", "v1", "1.46", None),
        ("s|b@", "v1", "S is 1.75", None),  # the tooltip, not the basis title
    ]
    (problem,) = book.problems()
    assert problem.startswith("s|b@: ") and "(a tooltip)" in problem


def test_bases_are_one_unless_they_name_another_subset_limit_cap_dtype_or_source() -> None:
    same = basis_signature("all 541 prompts, up to 1,280 new tokens, float32")
    assert same == basis_signature("all 541 documents · up to 1280 tokens · float32")
    assert same != basis_signature("all 541 documents · up to 1,280 new tokens · bfloat16")
    assert same != basis_signature("first 128 of 541 prompts, up to 1,280 new tokens, float32")
    assert basis_signature("sinkbench: calibration v1 (523de985), float32, GGUF Q4_1") != basis_signature(
        "sinkbench: calibration v1 (523de985), float32, transformers weights"
    )


@pytest.fixture(scope="module")
def board(real_board_site: Path) -> tuple[Path, dict[str, str], list[Fact]]:
    """The repository's board, built: the site, each page's HTML, and the facts the Compare page hands over."""
    site = real_board_site
    pages = {
        page.relative_to(site).as_posix(): page.read_text(encoding="utf-8") for page in site.rglob("*.html")
    }
    submissions = ROOT / "submissions"
    views = build_views(build_tables(load_valid_entries(submissions)), board_history(submissions))
    return site, pages, ComparePage.of(views).facts()


def _read(pages: dict[str, str], compare: list[Fact]) -> FactBook:
    book = FactBook(compare)
    for page, html in pages.items():
        book.read_page(page, html)
    return book


@pytest.fixture(scope="module")
def board_facts(board) -> tuple[Path, list[Fact]]:
    site, pages, compare = board
    return site, _read(pages, compare).facts


def test_the_real_board_has_no_mismatch(board) -> None:
    _, pages, compare = board
    assert _read(pages, compare).problems() == []


def _marked(key: str, basis_part: str = "") -> str:
    """The pattern of a marked element's opening tag of ``key`` (its basis holding ``basis_part``) up to its text."""
    return rf'data-sb-fact="{re.escape(key)}" data-sb-basis="[^"]*{re.escape(basis_part)}[^"]*"[^>]*>'


def _plant(pages: dict[str, str], page: str, pattern: str, new: str) -> dict[str, str]:
    """``pages`` with the first match of ``pattern`` on ``page`` replaced by ``new`` (the pattern must match)."""
    planted, count = re.subn(pattern, new, pages[page], count=1)
    assert count == 1, (page, pattern)
    return {**pages, page: planted}


DELTA = fact_key("delta", "vl-testbed-smollm2-135m-seed0", "ifeval_strict")
SCORE = fact_key("score", SMOLLM2, "ifeval_strict")
S, S_INTERVAL = fact_key("s", SMOLLM2), fact_key("s_interval", SMOLLM2)

#: Each kind of mismatch planted in the real board: the page, what is replaced (a pattern) and by what.
PLANTED = {
    "a figure that agrees only at a coarser precision": (
        "leaderboard.html",
        f"({_marked(DELTA)})\u22127.81<",
        "\\1\u22127.8<",
    ),
    "a figure inside an inline tag": (
        TESTBED,
        f"({_marked(DELTA)})\u22127.81<",
        "\\1<strong>\u22127.91</strong><",
    ),
    "a widened S interval": (
        "leaderboard.html",
        f"({_marked(S_INTERVAL)})\\[1.38, 1.52\\]",
        r"\1[1.37, 1.52]",
    ),
    "an interval's ends swapped": (BACKBONE, f"({_marked(S_INTERVAL)})\\[1.38, 1.52\\]", r"\1[1.52, 1.38]"),
    "Training dynamics' base-row S × 1.2": ("training.html", f"({_marked(S)})1.456<", r"\g<1>1.747<"),
    "Training dynamics' base-row IFEval × 1.2": ("training.html", f"({_marked(SCORE)})15.6<", r"\g<1>18.7<"),
    "Interventions' float32 IFEval changed": (
        "interventions.html",
        f"({_marked(SCORE, 'float32')})13.3<",
        r"\g<1>13.9<",
    ),
    "a truncated plain figure": (BACKBONE, f"({_marked(SCORE, 'all 541')})19.96<", r"\g<1>19.9<"),
    "a truncated ρ": ("index.html", f"({_marked('rho|ifeval_strict')})0.877<", r"\g<1>0.87<"),
    "a sign flipped": (TESTBED, f"({_marked(DELTA)})\u22127.81<", r"\1+7.81<"),
    "points shown as a percentage": ("leaderboard.html", f"({_marked(DELTA)})\u22127.81<", "\\1\u22127.81%<"),
    "a figure hidden in a tooltip": (
        "leaderboard.html",
        f"({_marked(S)[:-1]})>\\+1.46<",
        r'\1 title="S = +1.75 nats">+1.46<',
    ),
    "a basis reworded to excuse another number": (
        TESTBED,
        '(data-sb-fact="' + re.escape(SCORE) + '" )data-sb-basis="[^"]*"([^>]*>)14.06<',
        r'\1data-sb-basis="short-answer prompts of the VL testbed: 128 of its 541 prompts, with up to 64 new '
        r'tokens, in bfloat16"\g<2>14.96<',
    ),
    "a prediction interval widened on Screening": (
        "screening.html",
        r'(data-sb-fact="predicted_all_pairs_interval\|[^"]*"[^>]*>)\[[^,]*,',
        "\\1[\u221299.0,",
    ),
    "a held-out prediction's interval end moved on the Leaderboard": (
        "leaderboard.html",
        r'(data-sb-fact="predicted_held_out_interval\|[^"]*"[^>]*>\[[^,]*, )[^\]]*\]',
        "\\g<1>99.0]",
    ),
    "a reported S's prompt-set band widened on Choose a backbone": (
        "screening.html",
        r'(data-sb-fact="s_band_interval\|Qwen/Qwen3-4B@"[^>]*>)\[2.23,',
        r"\1[2.13,",
    ),
    "a basis of a score dropped from the backbone page's Elsewhere": (
        BACKBONE,
        f'<a href="../interventions.html"><span {_marked(SCORE, "float32")}13.3</span>',
        "13.3",
    ),
}


@pytest.mark.parametrize("kind", PLANTED)
def test_a_mismatch_planted_in_the_real_board_is_refused(board, kind: str) -> None:
    _, pages, compare = board
    page, pattern, new = PLANTED[kind]
    problems = _read(_plant(pages, page, pattern, new), compare).problems()
    assert problems, kind
    named = [line for line in problems if page in line or "no page names both" in line]
    assert named and all("Fix:" in line and "\n" not in line for line in problems)


def test_compare_s_interval_and_observed_delta_are_checked_with_the_pages(board) -> None:
    """Compare's figures (handed over as facts) are read point and interval, and a Δ one point off is refused."""
    _, pages, compare = board
    assert "+1.46 [1.38, 1.52]" in {f.text for f in compare if f.key == S}
    assert any(f.text.startswith("\u22127.81") for f in compare if f.key == DELTA)
    wrong = [
        replace(f, text=f.text.replace("\u22127.81", "\u22126.81", 1)) if f.key == DELTA else f
        for f in compare
    ]
    problems = _read(pages, wrong).problems()
    assert problems and all(
        p.startswith(f"{DELTA}: ") and "compare.md shows '\u22126.81" in p for p in problems
    )
    widened = [replace(f, text="+1.46 [1.30, 1.52]") if f.key == S else f for f in compare]
    problems = _read(pages, widened).problems()
    assert problems and all(p.startswith(f"{S_INTERVAL}: ") and "compare.md" in p for p in problems)


def test_the_board_marks_its_figures_on_every_kind_of_page(board_facts) -> None:
    _, facts = board_facts
    pages = {fact.page for fact in facts}
    for page in ("leaderboard.html", "screening.html", "correlations.html", "index.html", "compare.md"):
        assert page in pages, page
    assert "training.html" in pages and "interventions.html" in pages
    assert any(p.startswith("pairs/") for p in pages) and any(p.startswith("backbones/") for p in pages)
    kinds = {fact.key.split("|")[0] for fact in facts}
    assert {
        "s",
        "s_interval",
        "score",
        "delta",
        "delta_interval",
        "predicted_held_out",
        "predicted_all_pairs",
    } <= kinds
    assert {"predicted_all_pairs_interval", "predicted_held_out_interval", "rho"} <= kinds


def test_smollm2_s_interval_is_one_interval_at_one_precision_on_the_board(board_facts) -> None:
    """The issue's example: the board showed [1.38, 1.53] (S ± 1.96 standard errors) beside the [1.382, 1.518] that
    ``sinkbench screen`` recorded; now every page shows the recorded interval, at two decimals on sinkbench's basis
    and at the testbed's three on the testbed's own screen."""
    _, facts = board_facts
    intervals = {(f.page, f.text) for f in facts if f.key == S and "[" in f.text} | {
        (f.page, f.text) for f in facts if f.key == S_INTERVAL
    }
    texts = {text for _, text in intervals}
    assert texts == {"[1.38, 1.52]", "+1.46 [1.38, 1.52]", "1.456 [1.382, 1.518]"}, intervals
    assert {page for page, text in intervals if "1.382" in text} == {"interventions.html"}


def test_smollm2_ifeval_scores_are_listed_on_every_basis_by_its_backbone_page(board_facts) -> None:
    """The issue's example: one model, IFEval 19.96, 14.06, 15.6 and 13.3 on four bases; its backbone page's
    "Elsewhere on this board" now lists each (marked, with its basis), and every figure states its basis."""
    _, facts = board_facts
    smollm2 = [f for f in facts if f.key == SCORE]
    assert {f.text for f in smollm2} == {"19.96", "14.06", "15.6", "13.3"}
    assert all(f.basis for f in smollm2)
    on_backbone = {(f.text, f.basis) for f in smollm2 if f.page == BACKBONE}
    assert {text for text, _ in on_backbone} == {"19.96", "14.06", "15.6", "13.3"}
    assert len({basis_signature(basis) for _, basis in on_backbone}) == 4


def test_the_home_and_correlations_pages_quote_one_rho(board_facts) -> None:
    site, facts = board_facts
    rho = {f.page: f.text for f in facts if f.key == "rho|ifeval_strict"}
    assert rho["index.html"] == rho["correlations.html"] == "0.877"
    home = (site / "index.html").read_text(encoding="utf-8")
    assert (
        re.search(r"On this board.s <strong>17 pairs</strong>", home)
        and "ρ = 0.971 is over its own six" in home
    )


def test_the_training_page_quotes_the_testbed_models_figures_as_facts_of_the_pairs_model(board_facts) -> None:
    """Training dynamics' base-model row shows the testbed pair's reference LLM: its IFEval score and S are facts
    under the same key as the pair page's, each with the basis that makes them differ (the testbed's own run), and
    the Interventions page shows the same run's figures under the same keys and bases."""
    site, facts = board_facts
    training = {f.key: f for f in facts if f.page == "training.html"}
    assert training[SCORE].text == "15.6" and "not by lm-eval" in training[SCORE].basis
    assert training[S].text == "1.456" and training[S].basis.startswith("the VL testbed's own screen")
    assert training[S].value == pytest.approx((1.4556274,))
    pair = [f for f in facts if f.page == TESTBED and f.key == SCORE]
    assert [f.text for f in pair] == ["14.06"] and pair[0].basis != training[SCORE].basis
    interventions = [(f.key, f.text, f.basis) for f in facts if f.page == "interventions.html"]
    assert (SCORE, "15.6", training[SCORE].basis) in interventions
    assert (S, "1.456 [1.382, 1.518]", training[S].basis) in interventions
    page = (site / "training.html").read_text(encoding="utf-8")
    assert training[SCORE].basis.replace("'", "&#39;") in page  # the basis is on the page, not only in markup
    assert 'href="leaderboard.html#board-testbed-pairs"' in page and 'id="board-testbed-pairs"' in (
        site / "leaderboard.html"
    ).read_text(encoding="utf-8")


def test_a_page_that_contradicts_another_stops_the_build(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A template that prints a pair's S one hundredth off on the Leaderboard, under the same fact and basis as the
    pair's page, fails the build, naming the fact, both figures and both pages; nothing is published. The build
    fails without waiting for its charts, and stops the process drawing them."""
    stopped = []
    monkeypatch.setattr(
        charts, "_cores", lambda: 2
    )  # charts drawn in a second process (an empty chart cache)
    monkeypatch.setattr(
        charts.Rendering, "result", lambda self: pytest.fail("the failing build drew its charts")
    )
    cancel = charts.Rendering.cancel
    monkeypatch.setattr(
        charts.Rendering, "cancel", lambda self: stopped.append(self._process) or cancel(self)
    )
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
    assert stopped and stopped[0] is not None  # the process was still there, and was stopped


def test_a_training_page_figure_times_1_2_stops_the_build_with_a_readable_refusal(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The base model's S printed × 1.2 on the page an experiment publishes fails the build: one line per problem,
    naming the fact, the pages, both figures and the fix, on real lines (MkDocs' message and the command's)."""
    experiments = tmp_path / "experiments"
    for name in ("vl_testbed", "interventions_pair"):
        shutil.copytree(ROOT / "experiments" / name / "page", experiments / name / "page")
    page = experiments / "vl_testbed" / "page" / "training.md"
    text = page.read_text(encoding="utf-8")
    planted, count = re.subn(f"({_marked(S)})1.456<", r"\g<1>1.747<", text, count=1)
    assert count == 1
    page.write_text(planted, encoding="utf-8")
    out = tmp_path / "site"
    with pytest.raises(InconsistentFigures) as raised:
        build_site(ROOT / "submissions", out, experiments_dir=experiments)
    assert not out.exists()
    error = raised.value
    (line,) = [line for line in error.problems if line.startswith(f"{S}: ")]
    assert line.startswith(f"{S}: training.md shows '1.747' (basis: the VL testbed's own screen")
    assert re.search(
        r"but (its own unrounded value \(data-sb-value\)|the value \S+ shows as '[^']+') is 1\.45563\.", line
    )
    assert line.endswith(
        "Fix: print 1.45563 rounded to the figure's decimals, or state the basis (subset, limit, token "
        "cap, dtype, source) that makes it differ"
    )
    assert str(error).split("\n") == [*error.problems, error.closing]
    mkdocs = _message(error).split("\n")
    assert mkdocs[0] == f"ERROR {error.problems[0]}" and mkdocs[-1] == error.closing

    def refuse() -> int:
        raise error

    assert run_command("site build", refuse) == 1
    printed = capsys.readouterr().err
    assert "\\u000a" not in printed and printed.count("\n") == len(error.problems) + 1
    assert printed.splitlines()[-1] == f"sinkbench site build: {error.closing}"


def test_every_pair_and_backbone_page_marks_its_s_and_interval(board) -> None:
    """An unmarked figure escapes the check, so the figures of board facts carry marks wherever a page shows them:
    each pair and backbone page's S (and its interval, where it has one) in the page's facts list, and each score
    a backbone page lists as shown elsewhere."""
    _, pages, _ = board
    shown = {path: html for path, html in pages.items() if path.startswith(("pairs/", "backbones/"))}
    assert len(shown) > 20
    for path, html in shown.items():
        found = re.search(r"<dt>Sink Strength S</dt><dd>(.*?)</dd>", html)
        assert found is not None, path
        figure = found.group(1).split(" nats")[0]
        assert 'data-sb-fact="s|' in figure or figure.startswith("\u2013"), path
        assert "[" not in figure or 'data-sb-fact="s_interval|' in figure, path
    cell = re.search(r'<td><a href="\.\./pairs/(?:(?!</td>).)*as the reference of .*?</td>', shown[BACKBONE])
    assert cell is not None
    assert cell.group(0).count('<a href="') == cell.group(0).count(f'data-sb-fact="{SCORE}"') == 3
