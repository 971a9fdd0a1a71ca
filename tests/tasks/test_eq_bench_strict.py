"""eq_bench_strict: score-block parsing of hand-written answers and the release-file reader."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

FIXTURES = Path(__file__).parents[1] / "fixtures" / "strict"
CASES = json.loads((FIXTURES / "eq_bench_cases.json").read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def question() -> dict:
    """Question 1 of the fixture release file, as the task sees it (reference: 7, 0, 1, 5)."""
    from sinkbench.tasks.eq_bench_strict import utils

    rows = utils.read_release_json(FIXTURES / utils.SOURCE.local_file)
    return next(row for row in rows if row["id"] == "1")


@pytest.mark.parametrize("case", CASES, ids=[case["id"] for case in CASES])
def test_answer_is_scored_right(case: dict, question: dict) -> None:
    from sinkbench.tasks.eq_bench_strict import utils

    scores = utils.process_results(question, [case["response"]])
    assert scores["percent_parseable"] == case["percent_parseable"], case["why"]
    assert scores["eqbench"] == pytest.approx(case["eqbench"], abs=1e-9), case["why"]


def test_every_malformed_block_scores_zero() -> None:
    malformed = [case for case in CASES if case["percent_parseable"] == 0]
    assert len(malformed) >= 5
    assert all(case["eqbench"] == 0 for case in malformed)


def test_release_file_becomes_hub_shaped_rows() -> None:
    from sinkbench.tasks.eq_bench_strict import utils

    rows = utils.read_release_json(FIXTURES / utils.SOURCE.local_file)
    assert [row["id"] for row in rows] == ["1", "2"]
    reference = json.loads(rows[1]["reference_answer_fullscale"])
    assert (reference["emotion2"], reference["emotion2_score"]) == ("Sad", "7")
    assert rows[0]["prompt"].startswith("\nYour task is to predict")


def test_release_file_without_references_names_the_question(tmp_path: Path) -> None:
    from sinkbench.tasks.eq_bench_strict import utils

    path = tmp_path / utils.SOURCE.local_file
    path.write_text(json.dumps({"12": {"prompt": "p", "reference_answer_fullscale": {"emotion1": "Sad"}}}))
    with pytest.raises(ValueError, match=r"question '12' needs .*emotion4_score"):
        utils.read_release_json(path)
    path.write_text(json.dumps([{"prompt": "p"}]))
    with pytest.raises(ValueError, match="JSON object mapping question ids"):
        utils.read_release_json(path)
