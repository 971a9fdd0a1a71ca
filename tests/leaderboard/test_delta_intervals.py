"""Every observed delta carries an interval or says why not (sinkbench.tables.pairs.delta_interval): paired over
prompts from samples or published counts, else unpaired from the scores and the prompt counts, else none with the
reason; and the pages show it: the Leaderboard's every Δ, the sign of an uninformative prediction whose interval
excludes zero, "marginal" beside a fit that beats the mean by a hair, and every rule on the methodology page."""

from __future__ import annotations

import html
import re
from pathlib import Path

import pytest
from markupsafe import escape

from sinkbench import stats
from sinkbench.leaderboard.compare import ComparePage
from sinkbench.leaderboard.pages import PageRenderer, make_environment
from sinkbench.leaderboard.views import build_views
from sinkbench.submissions import load_valid_entries
from sinkbench.submissions.facts import score_basis
from sinkbench.tables.build import build_tables
from sinkbench.tables.rules import RULES

ROOT = Path(__file__).parents[2]
FIXTURES = Path(__file__).parents[1] / "fixtures" / "submissions"
#: The reported pairs whose paper prints per-prompt IFEval counts (Table 2), and their observed delta.
COUNTED = {
    "internvl3-8b": -8.87,
    "internvl3.5-8b": -1.85,
    "llava-onevision-qwen2-7b-ov": -7.95,
    "molmo2-o-7b": -18.67,
    "qwen2.5-vl-7b-instruct": -9.61,
    "qwen3-vl-8b-instruct": -5.36,
}


def _rows(tables) -> dict[tuple[str, str], dict]:
    return {(row["entry"], row["task"]): row for row in tables.pairs.to_dict("records")}


@pytest.fixture(scope="module")
def fixture_tables():
    return build_tables(load_valid_entries(FIXTURES))


@pytest.fixture(scope="module")
def board():
    return build_tables(load_valid_entries(ROOT / "submissions"))


@pytest.fixture(scope="module")
def board_pages(board) -> dict[str, str]:
    """The board's pages as the site renders them: Markdown pages and entry pages (HTML), by site path."""
    views = build_views(board)
    renderer = PageRenderer(make_environment(ROOT / "site" / "templates"), ROOT / "site" / "docs")
    pages = renderer.pages(views, board, ComparePage.of(views), updated="today")
    return pages | {path: page.html for path, page in renderer.entry_pages(views)}


def test_each_delta_takes_the_interval_its_data_allow(fixture_tables) -> None:
    rows = _rows(fixture_tables)
    entries = {entry.name: entry for entry in fixture_tables.entries}
    measured = entries["tiny-vlm"]
    reference, vlm = measured.ifeval_outcomes()
    passed = {outcome.key: outcome.passed for outcome in reference}
    expected = stats.paired_bootstrap_delta([passed[o.key] for o in vlm], [o.passed for o in vlm], seed=0)
    ifeval = rows[("tiny-vlm", "ifeval_strict")]
    assert ifeval["delta_ci_kind"] == "paired-samples"
    assert (ifeval["delta_ci_low"], ifeval["delta_ci_high"]) == pytest.approx(expected)
    gsm8k = rows[("tiny-vlm", "gsm8k_cot_strict")]
    n = [score_basis(measured, role, "gsm8k_cot_strict").evaluated for role in ("reference", "vlm")]
    assert gsm8k["delta_ci_kind"] == "unpaired" and None not in n
    unpaired = stats.unpaired_delta_interval(gsm8k["reference_score"], n[0], gsm8k["vlm_score"], n[1])
    assert (gsm8k["delta_ci_low"], gsm8k["delta_ci_high"]) == pytest.approx(unpaired)
    eq_bench = rows[("tiny-vlm", "eq_bench_strict")]
    assert eq_bench["delta_ci_kind"] == "none" and "not a share of prompts" in eq_bench["delta_ci_reason"]
    counts = entries["tiny-vlm-reported"].reported_regressions
    counted = rows[("tiny-vlm-reported", "ifeval_strict")]
    expected = stats.paired_counts_delta(
        counts.both_pass, counts.lost, counts.gained, counts.both_fail, seed=0
    )
    assert counted["delta_ci_kind"] == "paired-counts"
    assert (counted["delta_ci_low"], counted["delta_ci_high"]) == pytest.approx(expected)
    only_delta = rows[("tiny-vlm-reported", "gsm8k_cot_strict")]
    assert only_delta["delta_ci_kind"] == "none" and "not the two scores" in only_delta["delta_ci_reason"]
    for row in rows.values():  # an interval, or a reason: never neither
        has_interval = row["delta_ci_kind"] != "none"
        assert has_interval == (row["delta_ci_low"] == row["delta_ci_low"]) != bool(row["delta_ci_reason"])


def test_the_reported_pairs_with_counts_carry_their_paired_interval(board) -> None:
    rows = _rows(board)
    for entry, delta in COUNTED.items():
        row = rows[(entry, "ifeval_strict")]
        assert row["delta_ci_kind"] == "paired-counts", entry
        assert row["delta"] == pytest.approx(delta, abs=0.005)
        assert row["delta_ci_low"] < row["delta"] < row["delta_ci_high"], entry
    internvl3 = rows[("internvl3-8b", "ifeval_strict")]
    assert (internvl3["delta_ci_high"] - internvl3["delta_ci_low"]) / 2 == pytest.approx(4.3, abs=0.1)
    testbed = rows[("vl-testbed-smollm2-135m-seed0", "ifeval_strict")]
    assert testbed["delta_ci_kind"] == "paired-samples"
    assert (testbed["delta_ci_low"], testbed["delta_ci_high"]) == pytest.approx((-14.06, -2.34), abs=0.01)


def test_every_leaderboard_delta_shows_its_interval_or_why_not(board, board_pages) -> None:
    page = board_pages["leaderboard.md"]
    cells = re.findall(r'<td class="sb-num[^"]*" data-sort="[^"]*"><span data-sb-fact="delta\|.*?</td>', page)
    assert len(cells) == board.pairs["delta"].notna().sum()
    legend = html.unescape(re.search(r"^No interval: (.*)\.$", page, re.M).group(1))
    reasons = dict(re.findall(r"<sup>(\d+)</sup> (.*?)(?=; <sup>|$)", legend))
    for cell in cells:
        interval = re.search(r'data-sb-fact="delta_interval\|[^"]*"[^>]*>(\[[^\]]+\])</span>', cell)
        note = re.search(r"no interval<sup>(\d+)</sup>", cell)
        assert bool(interval) != bool(note), cell
        assert note is None or reasons[note.group(1)].strip()
    assert set(reasons.values()) == {r for r in board.pairs["delta_ci_reason"] if isinstance(r, str) and r}
    testbed = next(cell for cell in cells if "delta|vl-testbed-smollm2-135m-seed0|" in cell)
    assert "−7.81" in testbed and "[−14.1, −2.3]" in testbed and "sb-loss" in testbed
    internvl3 = next(cell for cell in cells if "delta|internvl3-8b|ifeval_strict" in cell)
    assert "[−13.1, −4.6]" in internvl3
    regressions = board_pages["pairs/internvl3-8b.md"].split("IFEval regressions")[1].split("</table>")[0]
    assert "[−13.1, −4.6]" in regressions  # its page gives the net change of its counts the same interval


def test_an_uninformative_prediction_below_zero_says_so(board, board_pages) -> None:
    screening = board.screening.set_index(["model_id", "task"])
    llama = screening.loc[("meta-llama/Llama-3.1-8B-Instruct", "gsm8k_cot_strict")]
    assert not llama["informative"] and llama["interval_high"] < 0
    page = board_pages["backbones/meta-llama--llama-3.1-8b-instruct.md"]
    row = next(row for row in page.split("<tr>") if row.startswith('<td class="sb-sticky">GSM8K-CoT</td>'))
    assert "uninformative" in row and "below 0" in row and "[−53.7, −8.1]" in row


def test_a_fit_that_beats_the_mean_by_a_hair_is_marginal_on_the_correlations_page(board, board_pages) -> None:
    row = board.correlations.set_index("task").loc["eq_bench_strict"]
    assert row["baseline_mae"] - row["loo_mae"] == pytest.approx(0.20, abs=0.005)
    assert row["beats_baseline"] == "marginal"
    table = board_pages["correlations.md"].split('id="board-correlations"')[1].split("</table>")[0]
    eq_bench = next(line for line in table.splitlines() if line.startswith("<tr><td>EQ-Bench"))
    assert "<td>marginal</td>" in eq_bench and "<td>yes</td>" not in eq_bench


def test_the_methodology_page_states_every_rule(board_pages) -> None:
    page = board_pages["methodology.md"]
    for rule in RULES.values():
        assert str(escape(rule.statement)) in page, rule.name
