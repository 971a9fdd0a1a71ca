"""The decision page's numbers (Choose a backbone): the tier rule and the difference rule with planted intervals,
the bootstrap of the difference in expected delta (sinkbench.stats.line_differences) on planted lines, the
prompt-set band held to the experiment that measured it, and the real board's tiers and differences."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

from sinkbench import stats
from sinkbench.leaderboard.backbone_views import ordering
from sinkbench.leaderboard.compare import ComparePage
from sinkbench.leaderboard.formatting import format_number, format_share
from sinkbench.leaderboard.pages import PageRenderer, make_environment
from sinkbench.leaderboard.views import build_views
from sinkbench.submissions import load_valid_entries
from sinkbench.tables.build import build_tables
from sinkbench.tables.rules import RULES, tiers, told_apart
from sinkbench.tables.screening import REPORTED_S_BAND

ROOT = Path(__file__).parents[2]
PROMPT_SETS = ROOT / "experiments" / "prompt_sets" / "results" / "prompt_sets.json"
_DIFFERENCES = [f"diff_{kind}{part}" for kind in ("next", "top") for part in ("", "_low", "_high", "_share")]


@pytest.mark.parametrize(
    ("lows", "highs", "expected"),
    [
        ([2.0, 1.8, 1.0], [2.4, 2.1, 1.3], [1, 1, 2]),  # the second overlaps the leader, the third does not
        ([2.0, 1.9, 1.7], [2.2, 2.1, 1.95], [1, 1, 2]),  # the third overlaps the second but not the leader
        ([2.0, 1.0, 0.0], [2.1, 1.1, 0.1], [1, 2, 3]),  # all apart
        (
            [1.0, 1.0, math.nan],
            [1.0, 1.0, math.nan],
            [1, 1, 2],
        ),  # points: equal S share a tier; no S, its own
        ([], [], []),
    ],
)
def test_tiers_follow_the_leader_rule(lows, highs, expected) -> None:
    np.testing.assert_array_equal(tiers(lows, highs), expected)


def test_a_follower_after_a_gap_does_not_rejoin_its_leaders_tier() -> None:
    """Tiers are runs in the order by S: a wide interval after a narrow one that broke the run starts anew."""
    np.testing.assert_array_equal(tiers([2.0, 1.49, 1.0], [2.2, 1.51, 2.5]), [1, 2, 2])


def test_told_apart_needs_an_interval_that_excludes_zero_and_a_share_clear_of_monte_carlo_error() -> None:
    # 3 Monte-Carlo standard errors at 9,999 draws: 0.0047, so a share must reach 0.9797 (or fall to 0.0203).
    found = told_apart(
        [0.1, -2, -1, math.nan, 0.1, 0.1, -2],
        [2, -0.1, 1, 1, 2, 2, -0.1],
        [0.99, 0.01, 0.5, 0.5, 0.976, 0.98, 0.021],
        draws=9999,
    )
    np.testing.assert_array_equal(found, [True, True, False, False, False, True, False])
    assert told_apart([0.1], [2.0], [0.976], draws=10**7)[0]  # with draws enough, the same share is clear
    assert {"tiers", "told apart"} <= set(RULES)  # stated on the methodology page


def test_an_exact_line_gives_slope_times_the_difference_of_s_with_certainty() -> None:
    x = np.array([0.0, 1.0, 2.0, 3.0, 4.0])
    found = stats.line_differences(x, 2 * x + 1, [3.0, 2.0, 0.5], [0.0, 0.0, 0.0], seed=0)
    np.testing.assert_allclose(found.next[:2], [2.0, 3.0])
    np.testing.assert_allclose([found.next_low[:2], found.next_high[:2]], [[2.0, 3.0], [2.0, 3.0]])
    np.testing.assert_array_equal(found.next_share[:2], [1.0, 1.0])
    assert math.isnan(found.next[2]) and math.isnan(found.next_low[2])  # the last has no next
    np.testing.assert_allclose([found.first, found.first_low, found.first_high], [[0, 2, 5]] * 3)


def test_the_uncertainty_of_s_widens_the_difference_as_a_normal_sum() -> None:
    """Slope 2, both S with sd 0.1: the difference at a gap of 3 is 2 * (3 +- 1.96 * sqrt(2) * 0.1)."""
    x = np.arange(6.0)
    found = stats.line_differences(x, 2 * x, [3.0, 0.0], [0.1, 0.1], seed=1)
    half = 2 * 1.959964 * math.sqrt(2) * 0.1
    assert (found.next_low[0], found.next_high[0]) == pytest.approx((6 - half, 6 + half), abs=0.03)
    assert found.next_share[0] == 1.0


def test_a_flat_line_orders_nothing() -> None:
    rng = np.random.default_rng(3)
    x, noise = rng.normal(size=400), rng.normal(size=400)
    y = noise - stats.fit_line(x, noise).slope * (x - x.mean())  # a fitted slope of exactly 0
    found = stats.line_differences(x, y, [0.0, -0.5], [0.0, 0.0], seed=0)
    assert found.next_low[0] < 0 < found.next_high[0]
    assert found.next_share[0] == pytest.approx(0.5, abs=0.15)


def test_differences_across_blocks_are_the_same_draws_in_order() -> None:
    """Points are drawn in blocks; the next of a block's last point is the following block's first."""
    x = np.arange(5.0)
    at = np.linspace(10, 0, 600)
    exact = stats.line_differences(x, 3 * x, at, np.zeros(600), seed=0)
    np.testing.assert_allclose(exact.next_low[:-1], 3 * (at[:-1] - at[1:]))
    noisy = stats.line_differences(x, 3 * x, at, np.full(600, 0.05), seed=0)
    assert np.isfinite(noisy.next_low[:-1]).all() and math.isnan(noisy.next_low[-1])
    again = stats.line_differences(x, 3 * x, at, np.full(600, 0.05), seed=0)
    np.testing.assert_array_equal(noisy.next_low, again.next_low)  # seeded


def test_too_few_pairs_give_no_difference() -> None:
    found = stats.line_differences([0.0, 1.0], [0.0, 1.0], [1.0, 0.0], [0.0, 0.0], seed=0)
    assert np.isnan(found.next).all() and np.isnan(found.first_share).all()


def test_the_prompt_set_band_is_the_largest_shift_the_experiment_measured() -> None:
    rows = json.loads(PROMPT_SETS.read_text(encoding="utf-8"))["rows"]
    by_model: dict[str, list[float]] = {}
    for row in rows:
        by_model.setdefault(row["model"], []).append(row["sink_strength"])
    shifts = [max(values) - min(values) for values in by_model.values() if len(values) > 1]
    assert len(shifts) >= 2
    assert round(max(shifts), 2) == REPORTED_S_BAND


@pytest.fixture(scope="module")
def board():
    return build_tables(load_valid_entries(ROOT / "submissions"))


def test_every_backbone_s_on_the_board_carries_an_interval_of_its_kind(board) -> None:
    rows = board.screening.drop_duplicates("position")
    reported = rows[rows["provenance"] == "reported"]
    assert (reported["s_kind"] == "prompt-set band").all()
    np.testing.assert_allclose(reported["s_high"] - reported["sink_strength"], REPORTED_S_BAND)
    measured = rows[rows["provenance"] == "measured"]
    assert (measured["s_kind"] == "bootstrap over prompts").all() and len(measured) == 2
    np.testing.assert_allclose(
        measured[["s_low", "s_high"]], measured[["sink_strength_ci_low", "sink_strength_ci_high"]]
    )


def test_the_boards_tiers_and_differences_follow_from_its_intervals(board) -> None:
    rows = board.screening[board.screening["task"] == "ifeval_strict"].sort_values("position")
    assert list(rows["position"]) == list(range(1, len(rows) + 1))
    assert (np.diff(rows["sink_strength"]) <= 0).all()
    np.testing.assert_array_equal(rows["tier"], tiers(rows["s_low"], rows["s_high"]))
    first = rows.iloc[0]
    qwen3 = rows[rows["model_id"].str.startswith("Qwen/Qwen3-") & (rows["sink_strength"] == 2.36)]
    assert set(qwen3["tier"]) == {1} and first["tier"] == 1
    slope = board.correlations.set_index("task").loc["ifeval_strict", "slope"]
    assert rows.loc[rows["extrapolated"].astype(bool), _DIFFERENCES].isna().all().all()  # apart: not compared
    rows = rows[~rows["extrapolated"].astype(bool)]
    first = rows.iloc[0]
    gaps = rows["sink_strength"].to_numpy()[:-1] - rows["sink_strength"].to_numpy()[1:]
    np.testing.assert_allclose(rows["diff_next"].to_numpy()[:-1], slope * gaps)
    np.testing.assert_allclose(
        rows["diff_top"][1:], slope * (first["sink_strength"] - rows["sink_strength"][1:])
    )
    tied = rows.iloc[0]  # Qwen3-4B against Qwen3-8B: equal S, a coin toss
    assert tied["diff_next_low"] < 0 < tied["diff_next_high"] and 0.4 < tied["diff_next_share"] < 0.6


def test_the_ordering_sentence_counts_what_the_table_says(board) -> None:
    views = build_views(board)
    found = ordering(views.backbones, "ifeval_strict")
    rows = board.screening[board.screening["task"] == "ifeval_strict"].sort_values("position")
    rows = rows[~rows["extrapolated"].astype(bool)]
    draws = stats.default_resamples(int(rows["n_pairs"].iloc[0]))
    apart = told_apart(rows["diff_next_low"], rows["diff_next_high"], rows["diff_next_share"], draws)
    assert (found.compared, found.apart) == (len(rows) - 1, int(apart.sum()))
    gaps = -np.diff(rows["sink_strength"].to_numpy())
    assert found.smallest_apart == pytest.approx(gaps[apart[:-1]].min())
    assert found.largest_not_apart == pytest.approx(gaps[~apart[:-1]].max())
    inside = rows[~rows["extrapolated"].astype(bool)]
    overlapping = inside["interval_low"].max() <= inside["interval_high"].min()
    assert found.backbones == len(inside) and (found.separated == 0) == overlapping


@pytest.fixture(scope="module")
def page(board) -> str:
    """The real board's decision page, as the templates render it (the Markdown MkDocs is handed)."""
    views = build_views(board)
    renderer = PageRenderer(make_environment(ROOT / "site" / "templates"), ROOT / "site" / "docs")
    return renderer.pages(views, board, ComparePage.of(views), updated="2026-12-03 00:00 UTC")["screening.md"]


def _rows(page: str, table: str) -> list[str]:
    body = page.split(f'id="{table}"')[1].split("</tbody>")[0]
    return [row for row in body.split("<tr")[2:]]


def test_the_decision_page_shows_each_backbone_with_tier_s_interval_and_prediction(board, page) -> None:
    assert "title: Choose a backbone" in page and "Ranks that cannot be told apart" not in page
    rows = board.screening[board.screening["task"] == "ifeval_strict"].sort_values("position")
    shown = _rows(page, "board-screening") + _rows(page, "board-screening-apart")
    assert len(shown) == len(rows)
    for row in rows.itertuples():
        html = next(
            html
            for html in shown
            if f">{row.sink_strength:+.2f}".replace("-", "−") in html and f">{row.tier}<" in html
        )
        low, high = format_number(row.s_low, 2), format_number(row.s_high, 2)
        assert f"[{low}, {high}]" in html and ("band" in html) == (row.s_kind == "prompt-set band")
        assert f"[{format_number(row.interval_low, 1)}, {format_number(row.interval_high, 1)}]" in html


def test_the_decision_page_states_what_the_board_can_order(board, page) -> None:
    found = ordering(build_views(board).backbones, "ifeval_strict")
    text = " ".join(page.split())
    assert (
        f"the fit tells {found.apart} of the {found.compared} backbones inside what the pairs cover apart from the "
        "next such one by S" in text
    )
    assert f"by more than {format_number(found.largest_not_apart, 2)} nats is told apart" in text
    assert f"none whose S differs by less than {format_number(found.smallest_apart, 2)}" in text
    assert f"No two of the {found.backbones} backbones inside what the pairs cover" in text
    rows = board.screening[board.screening["task"] == "ifeval_strict"].sort_values("position")
    rows = rows[~rows["extrapolated"].astype(bool)]
    for html, row in zip(_rows(page, "board-differences"), rows.itertuples(), strict=True):
        if not math.isnan(row.diff_next):
            interval = (
                f"[{format_number(row.diff_next_low, 2, True)}, {format_number(row.diff_next_high, 2, True)}]"
            )
            share = "&gt; 99.9%" if row.diff_next_share > 0.999 else format_share(row.diff_next_share)
            assert interval in html and f"{share} of draws" in html
            cell = html.split("</td>")[2]  # against the next by S
            assert ("too close to call" in cell) == (
                (row.diff_next_low > 0 or row.diff_next_high < 0) and "<strong>" not in cell
            )


def test_differences_are_drawn_only_where_the_fit_beats_the_mean(board) -> None:
    beats = board.correlations.set_index("task")["beats_baseline"]
    assert {"yes", "marginal", "no"} <= set(beats)  # the real board has each outcome
    for task, outcome in beats.items():
        rows = board.screening[board.screening["task"] == task]
        inside = rows[~rows["extrapolated"].astype(bool)]
        assert inside["diff_next"].notna().any() == (outcome == "yes"), task
