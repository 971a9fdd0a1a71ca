"""Tests of the board's uncertainty and provenance columns (sinkbench.tables and sinkbench.submissions.facts): the
held-out prediction's interval, uninformative predictions, control flags, the basis of every score,
S's interval for an LLM measured by several entries, and re-measured S replacing a publication's in the fits."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest
from boards import REPO_SUBMISSIONS, headline_board

from sinkbench.stats import prediction
from sinkbench.submissions import load_valid_entries
from sinkbench.submissions.facts import score_basis
from sinkbench.tables.build import build_tables
from sinkbench.tables.pairs import OWN_S


@pytest.fixture(scope="module")
def board():
    """The repository's board, aggregated."""
    return build_tables(load_valid_entries(REPO_SUBMISSIONS))


def test_each_held_out_prediction_carries_the_jackknife_plus_interval_of_the_other_pairs(board) -> None:
    rows = board.pairs[(board.pairs["task"] == "ifeval_strict") & ~board.pairs["testbed"].astype(bool)]
    s, delta = rows["sink_strength"].to_numpy(float), rows["delta"].to_numpy(float)
    for position, (_, row) in enumerate(rows.iterrows()):
        others = np.arange(len(rows)) != position
        low, high = prediction.jackknife_plus_interval(s[others], delta[others], s[position : position + 1])
        assert row["predicted_interval_low"] == pytest.approx(low[0])
        assert row["predicted_interval_high"] == pytest.approx(high[0])
        assert row["predicted_interval_kind"] == "jackknife+" and row["predicted_interval_level"] == 16 / 17
    testbed = board.pairs[board.pairs["testbed"].astype(bool)]
    assert testbed["predicted_interval_low"].isna().all()  # left out of every fit, so of every prediction


def test_a_prediction_wider_than_every_observed_delta_is_uninformative(board) -> None:
    screening = board.screening.set_index(["model_id", "task"])
    eq_bench = screening.loc[("Qwen/Qwen3-8B", "eq_bench_strict")]
    width = eq_bench["interval_high"] - eq_bench["interval_low"]
    assert width > eq_bench["observed_delta_range"] and not eq_bench["informative"]
    ifeval = screening.loc[("Qwen/Qwen3-8B", "ifeval_strict")]
    assert (
        ifeval["interval_high"] - ifeval["interval_low"] < ifeval["observed_delta_range"]
        and ifeval["informative"]
    )


def test_a_control_as_strong_as_a_target_is_flagged_with_the_targets(board) -> None:
    rows = board.correlations.set_index("task")
    flagged = rows.loc["boolq", "control_as_strong_as"].split(";")
    assert flagged and all(
        abs(rows.loc[t, "spearman"]) <= abs(rows.loc["boolq", "spearman"]) for t in flagged
    )
    assert all(rows.loc[t, "family"] == "format" for t in flagged)
    weaker = [t for t, row in rows.iterrows() if row["family"] == "format" and t not in flagged]
    assert all(abs(rows.loc[t, "spearman"]) > abs(rows.loc["boolq", "spearman"]) for t in weaker)
    assert rows.loc["ifeval_strict", "control_as_strong_as"] == ""


def test_every_score_says_what_it_was_measured_on() -> None:
    entries = {entry.name: entry for entry in load_valid_entries(REPO_SUBMISSIONS)}
    smollm2 = entries["smollm2-135m-instruct"]
    full = score_basis(smollm2, "backbone", "ifeval_strict")
    assert full.label == "all 541 documents · up to 1,280 new tokens · float32 · GGUF Q4_1"
    assert (full.evaluated, full.documents, full.limit, full.max_new_tokens) == (541, 541, None, 1280)
    limited = score_basis(smollm2, "backbone", "gsm8k_cot_strict")
    assert limited.label.startswith("first 250 of 1,319 documents (--limit 250) · up to 256 new tokens")
    testbed = entries["vl-testbed-smollm2-135m-seed0"]
    for role in ("reference", "vlm"):
        assert score_basis(testbed, role, "ifeval_strict").label == (
            "the VL testbed's short-answer prompts: 128 of 541 documents · up to 64 new tokens · bfloat16"
        )
    reported = score_basis(entries["qwen3-vl-8b-instruct"], "reference", "boolq")
    assert reported.label == "reported by arXiv 2609.00746 (Table 6)"
    assert score_basis(smollm2, "backbone", "boolq") is None


def test_a_named_subset_in_the_task_metadata_labels_the_score(tmp_path: Path) -> None:
    """The testbed's own IFEval subset, recorded as lm-eval's --metadata records it, names the score's basis."""
    root = tmp_path / "submissions"
    shutil.copytree(REPO_SUBMISSIONS / "pairs" / "vl-testbed-smollm2-135m-seed0", root / "pairs" / "testbed")
    for results in (root / "pairs" / "testbed").rglob("results_*.json"):
        data = json.loads(results.read_text(encoding="utf-8"))
        if "ifeval_strict" in data["configs"]:
            data["configs"]["ifeval_strict"]["metadata"]["subset"] = {
                "name": "short-answer prompts",
                "rule": "...",
            }
            data["config"]["limit"] = None
            data["n-samples"]["ifeval_strict"] = {"original": 412, "effective": 128}
            results.write_text(json.dumps(data), encoding="utf-8")
    (entry,) = load_valid_entries(root)
    basis = score_basis(entry, "reference", "ifeval_strict")
    assert basis.label == "short-answer prompts: 128 of 412 documents · up to 64 new tokens · bfloat16"
    pairs = build_tables([entry]).pairs
    assert set(pairs["reference_basis"]) == {basis.label} == set(pairs["vlm_basis"])


def test_an_llm_measured_by_several_entries_keeps_its_own_entry_s_and_interval(board) -> None:
    row = board.screening[board.screening["model_id"] == "HuggingFaceTB/SmolLM2-135M-Instruct"].iloc[0]
    assert row["s_entry"] == "smollm2-135m-instruct" and "vl-testbed-smollm2-135m-seed0" in row["entries"]
    (backbone,) = [e for e in board.entries if e.name == "smollm2-135m-instruct"]
    assert row["sink_strength"] == backbone.sink_strength
    # the percentile bootstrap ``sinkbench screen`` recorded in the entry's sink profile
    recorded = tuple(backbone.sink_profile.sink_strength_ci)
    assert (row["sink_strength_ci_low"], row["sink_strength_ci_high"]) == pytest.approx(recorded)


def test_re_measured_s_replaces_the_publication_s_in_the_fits(tmp_path: Path) -> None:
    """A measured backbone entry of a reported pair's reference LLM (sinkbench's default calibration set) gives the
    S every fit, prediction and extrapolation check then uses, and the pairs table says so."""
    root = headline_board(tmp_path / "submissions")
    before = build_tables(load_valid_entries(root))
    remeasured = root / "backbones" / "qwen3-8b-sinkbench-v1"
    shutil.copytree(REPO_SUBMISSIONS / "backbones" / "smollm2-135m-instruct", remeasured)
    metadata = json.loads((remeasured / "metadata.json").read_text(encoding="utf-8"))
    metadata["model"].update(id="Qwen/Qwen3-8B", display_name="Qwen3-8B", revision="0123abcd")
    metadata["qk_norm"] = "per-head"  # Qwen3's class, as its reported pairs give it
    (remeasured / "metadata.json").write_text(json.dumps(metadata), encoding="utf-8")
    after = build_tables(load_valid_entries(root))
    new_s = next(e.sink_strength for e in after.entries if e.name == "qwen3-8b-sinkbench-v1")
    rows = after.pairs[after.pairs["reference_llm_id"] == "Qwen/Qwen3-8B"]
    assert set(rows["sink_strength"]) == {new_s} and set(rows["reported_sink_strength"]) == {2.36}
    assert set(rows["s_source"]) == {"backbone entry qwen3-8b-sinkbench-v1"}
    assert rows["s_protocol"].str.startswith("sinkbench: calibration v1").all()
    others = after.pairs[after.pairs["reference_llm_id"] != "Qwen/Qwen3-8B"]
    assert set(others["s_source"]) == {OWN_S}
    fit_before, fit_after = (t.correlations.set_index("task").loc["ifeval_strict"] for t in (before, after))
    assert fit_before["slope"] != fit_after["slope"]  # the fit moved with the re-measured S
    qwen = after.screening[
        (after.screening["model_id"] == "Qwen/Qwen3-8B") & (after.screening["task"] == "ifeval_strict")
    ]
    assert qwen["s_entry"].iloc[0] == "qwen3-8b-sinkbench-v1" and qwen["sink_strength"].iloc[0] == new_s
