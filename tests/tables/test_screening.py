"""Where the statistics stop (sinkbench.tables.screening, correlations, placement) on small synthetic submissions."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from sinkbench.stats import prediction
from sinkbench.submissions import load_submissions
from sinkbench.tables.build import build_tables
from sinkbench.tables.placement import PlacementData, format_placement, place, write_snapshot

FIXTURES = Path(__file__).parents[1] / "fixtures" / "submissions"
REPO_SUBMISSIONS = Path(__file__).resolve().parents[2] / "submissions"
SOURCE = "A. Author. A synthetic study. arXiv 0000.00001 (2026)."
#: (entry, reference id, reference size, S, IFEval delta, EQ-Bench delta, GSM8K delta): IFEval falls with S; EQ-Bench
#: is unrelated to S (the held-out fit loses to the mean); GSM8K is reported only by pairs sharing one reference.
PAIRS = [
    ("vlm-a", "org/llm-a", 7.0, 0.5, -15.0, 10.0, None),
    ("vlm-b", "org/llm-b", 8.0, 1.0, -11.0, -10.0, -4.0),
    ("vlm-c", "org/llm-c", 9.0, 1.5, -8.0, 10.0, None),
    ("vlm-d", "org/llm-d", 10.0, 2.0, -4.0, -10.0, None),
    ("vlm-e", "org/llm-b", 8.0, 1.0, -12.0, 9.0, -6.0),
    ("vlm-f", "org/llm-b", 8.0, 1.0, -10.0, -9.0, -5.0),
]


def _ref(model_id: str, size: float) -> dict:
    return {"id": model_id, "revision": None, "params_b": size, "params_source": "source"}


def _pair(
    name: str, reference: str, size: float, s: float, ifeval: float, eq: float, gsm8k: float | None
) -> dict:
    tasks = [
        {"task": "ifeval_strict", "delta": ifeval, "table": "T1"},
        {"task": "eq_bench_strict", "delta": eq, "table": "T1"},
    ]
    if gsm8k is not None:
        tasks.append({"task": "gsm8k_cot_strict", "delta": gsm8k, "table": "T2"})
    return {
        "schema_version": 1, "kind": "pair", "provenance": "reported",
        "vlm": {"id": f"org/{name}", "revision": None, "params_b": size, "params_source": "source"},
        "reference_llm": _ref(reference, size), "qk_norm": "none", "vl_recipe": "synthetic", "submitter": "tests",
        "citation": {"source": SOURCE}, "reported": {"sink_strength": {"value": s, "table": "T1"}, "tasks": tasks},
    }  # fmt: skip


def _backbone(name: str, s: float, size: float) -> dict:
    return {
        "schema_version": 1, "kind": "backbone", "provenance": "reported", "model": _ref(f"org/{name}", size),
        "qk_norm": "none", "submitter": "tests", "citation": {"source": SOURCE},
        "reported": {"sink_strength": {"value": s, "table": "T3"}},
    }  # fmt: skip


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Six synthetic reported pairs, two reported backbones (inside and outside the pairs' S), and the fixtures'
    measured backbone (another protocol)."""
    root = tmp_path_factory.mktemp("screening") / "submissions"
    for row in PAIRS:
        (root / "pairs" / row[0]).mkdir(parents=True)
        (root / "pairs" / row[0] / "metadata.json").write_text(json.dumps(_pair(*row)), encoding="utf-8")
    for name, s, size in (("inside", 1.2, 8.5), ("outside", 3.0, 8.5), ("tiny", 1.2, 0.1)):
        (root / "backbones" / name).mkdir(parents=True)
        (root / "backbones" / name / "metadata.json").write_text(
            json.dumps(_backbone(name, s, size)), encoding="utf-8"
        )
    shutil.copytree(FIXTURES / "backbones" / "tiny-llm", root / "backbones" / "tiny-llm")
    assert load_submissions(root).problems == ()
    return root


@pytest.fixture(scope="module")
def tables(root: Path):
    return build_tables(load_submissions(root).entries)


def test_correlations_say_how_many_distinct_s_and_whether_the_fit_beats_the_mean(tables) -> None:
    rows = tables.correlations.set_index("task")
    assert rows.loc["ifeval_strict", ["n", "distinct_s", "beats_baseline"]].tolist() == [6, 4, "yes"]
    assert rows.loc["eq_bench_strict", "beats_baseline"] == "no"
    assert rows.loc["eq_bench_strict", "loo_mae"] > rows.loc["eq_bench_strict", "baseline_mae"]
    gsm8k = rows.loc["gsm8k_cot_strict"]
    assert (gsm8k["n"], gsm8k["distinct_s"]) == (3, 1) and not isinstance(gsm8k["beats_baseline"], str)
    assert rows.loc["ifeval_strict", "family"] == "format"


def test_correlations_say_how_often_each_interval_held_a_pair_left_out(tables) -> None:
    # IFEval without vlm-f: at S = 1 the other pairs' lines give the jackknife+ interval [-12.2, -10.6] (5 pairs,
    # level 5/6), and vlm-f's -10 lies above it; every 95% t interval held (the t intervals are wider here).
    ifeval = tables.correlations.set_index("task").loc["ifeval_strict"]
    assert ifeval["prediction_interval"] == "jackknife+"
    assert (ifeval["jackknife_plus_loo_covered"], ifeval["jackknife_plus_loo_checked"]) == (5, 6)
    assert ifeval["jackknife_plus_loo_outside"] == "vlm-f"
    assert ifeval["jackknife_plus_loo_level"] == pytest.approx(5 / 6)
    assert ifeval["jackknife_plus_loo_guarantee"] == pytest.approx(4 / 6)
    assert (ifeval["t_loo_covered"], ifeval["t_loo_checked"], ifeval["t_loo_outside"]) == (6, 6, "")
    assert ifeval["t_loo_level"] == 0.95 and np.isnan(ifeval["t_loo_guarantee"])
    assert ifeval["jackknife_plus_loo_median_width"] < ifeval["t_loo_median_width"]
    gsm8k = tables.correlations.set_index("task").loc["gsm8k_cot_strict"]  # 3 pairs: nothing to check
    assert (gsm8k["t_loo_checked"], gsm8k["jackknife_plus_loo_checked"]) == (0, 0)


def _ifeval_row(tables, model_id: str):
    screening = tables.screening
    return screening[(screening["task"] == "ifeval_strict") & (screening["model_id"] == model_id)].iloc[0]


def test_screening_flags_each_kind_of_extrapolation_with_its_reason(tables) -> None:
    inside, outside, tiny = (_ifeval_row(tables, f"org/{n}") for n in ("inside", "outside", "tiny"))
    assert not inside["extrapolated"] and inside["extrapolation_reasons"] == ""
    assert (
        outside["extrapolated"]
        and outside["extrapolation_reasons"] == "S +3.00 is outside the pairs' range [+0.50, +2.00]"
    )
    assert (
        tiny["extrapolated"]
        and tiny["extrapolation_reasons"] == "0.1B parameters is outside the pairs' 7B to 10B"
    )
    measured = _ifeval_row(tables, "sinkbench-fixtures/tiny-llm-base")
    assert (
        measured["extrapolated"]
        and "another protocol (sinkbench: calibration not recorded" in measured["extrapolation_reasons"]
    )
    assert inside["s_protocol"] == "reported: arXiv 0000.00001" and inside["params_b"] == 8.5
    for reference in ("org/llm-a", "org/llm-b", "org/llm-d"):
        assert not _ifeval_row(tables, reference)["extrapolated"], reference


def test_screening_rows_carry_the_jackknife_plus_interval_and_the_t_interval_beside_it(tables) -> None:
    s, delta = [row[3] for row in PAIRS], [row[4] for row in PAIRS]
    inside = _ifeval_row(tables, "org/inside")  # S = 1.2
    low, high = prediction.jackknife_plus_interval(s, delta, [1.2])
    t_low, t_high = prediction.t_interval(s, delta, [1.2])
    assert (inside["interval_low"], inside["interval_high"]) == (
        pytest.approx(low[0]),
        pytest.approx(high[0]),
    )
    assert (inside["t_interval_low"], inside["t_interval_high"]) == (
        pytest.approx(t_low[0]),
        pytest.approx(t_high[0]),
    )
    assert (inside["interval_kind"], inside["interval_level"]) == ("jackknife+", pytest.approx(6 / 7))
    assert inside["interval_guarantee"] == pytest.approx(5 / 7)
    assert (inside["interval_loo_covered"], inside["interval_loo_checked"]) == (5, 6)
    assert inside["interval_loo_level"] == pytest.approx(5 / 6)


def test_no_fit_without_three_distinct_s_values(tables) -> None:
    assert "gsm8k_cot_strict" not in set(tables.screening["task"])  # one distinct S: no line to predict from


def test_placement_ranks_and_flags_a_new_model(root: Path) -> None:
    report = {
        "sink_strength": 1.75,
        "model": {"num_parameters": 9_000_000_000, "dtype": "float32", "weights": "transformers weights"},
        "calibration": {"set": "v1", "sha256": "523de98521ad"},
    }
    placement = place(report, PlacementData.from_submissions(root))
    assert (placement["rank"], placement["of"]) == (3, 9)  # below llm-d (2.0) and "outside" (3.0)
    ifeval = next(item for item in placement["predictions"] if item["task"] == "ifeval_strict")
    assert (
        ifeval["n_pairs"] == 6
        and ifeval["interval"][0] < ifeval["predicted_delta"] < ifeval["interval"][1]
        and ifeval["t_interval_95"][0] < ifeval["predicted_delta"] < ifeval["t_interval_95"][1]
    )
    # Six pairs: the widest finite jackknife+ interval, 6/7, guaranteeing 5/7; the held-out checks use 5 pairs.
    assert (ifeval["interval_kind"], ifeval["interval_level"]) == ("jackknife+", pytest.approx(6 / 7))
    assert ifeval["interval_guarantee"] == pytest.approx(5 / 7)
    assert ifeval["held_out"] == {
        "level": pytest.approx(5 / 6),
        "covered": 5,
        "checked": 6,
    }  # vlm-f falls out
    assert (
        "(6 pairs; jackknife+ 85.7%, guaranteed >= 71.4%; 5 of 6 held-out pairs inside)"
        in format_placement(placement)
    )
    assert ifeval["reasons"] == [
        "S was measured by another protocol (sinkbench: calibration v1 (523de985), float32, transformers weights) "
        "than the pairs' (reported: arXiv 0000.00001)"
    ]


def test_the_packaged_snapshot_is_the_seeded_entries_of_the_repository() -> None:
    shipped = Path(__file__).resolve().parents[2] / "sinkbench" / "tables" / "seeded_placement.json"
    assert write_snapshot(REPO_SUBMISSIONS) == shipped.read_text(encoding="utf-8")
    packaged = PlacementData.packaged()
    assert len(packaged.pairs[packaged.pairs["task"] == "ifeval_strict"]) == 17


def test_placement_leaves_the_model_itself_out_of_the_ranking(root: Path) -> None:
    data = PlacementData.from_submissions(root)
    report = {
        "sink_strength": 1.75,
        "model": {"id": "quantised-llm-d", "upstream": "org/llm-d", "num_parameters": 9_000_000_000},
    }
    placement = place(report, data)
    assert (placement["rank"], placement["of"], placement["on_board_as"]) == (2, 8, ["org/llm-d"])
    assert "already on the board as org/llm-d" in format_placement(placement)
