"""ifeval_strict: lm-eval's IFEval checkers on hand-written responses, offline Punkt, lm-eval's aggregation."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from sinkbench.tasks import _punkt

FIXTURES = Path(__file__).parents[1] / "fixtures" / "strict"
CASES = json.loads((FIXTURES / "ifeval_cases.json").read_text(encoding="utf-8"))
CATEGORIES = (
    "change_case",
    "combination",
    "detectable_content",
    "detectable_format",
    "keywords",
    "language",
    "length_constraints",
    "punctuation",
    "startend",
)


@pytest.fixture(scope="module", autouse=True)
def private_nltk_data(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """Materialise punkt_tab into a temporary directory, never into the user's cache."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv(_punkt.NLTK_DATA_ENV, str(tmp_path_factory.mktemp("nltk_data")))
        yield


@pytest.fixture(autouse=True)
def deterministic_langdetect(monkeypatch: pytest.MonkeyPatch) -> None:
    """langdetect samples at random unless seeded; lm-eval does not seed it."""
    import langdetect

    monkeypatch.setattr(langdetect.DetectorFactory, "seed", 0)


def grade(instruction_id: str, kwargs: dict, response: str) -> dict:
    """Grade one response through the task's own ``process_results`` hook."""
    from sinkbench.tasks.ifeval_strict import utils

    doc = {"key": 1, "prompt": "(test prompt)", "instruction_id_list": [instruction_id], "kwargs": [kwargs]}
    return utils.process_results(doc, [response])


def test_every_category_has_a_pass_and_a_fail_case() -> None:
    outcomes = {(case["instruction_id"].split(":")[0], case["strict"]) for case in CASES}
    assert outcomes == {(category, verdict) for category in CATEGORIES for verdict in (True, False)}


@pytest.mark.parametrize("case", CASES, ids=[case["id"] for case in CASES])
def test_hand_written_response_is_graded_right(case: dict) -> None:
    scores = grade(case["instruction_id"], case["kwargs"], case["response"])
    assert scores == {
        "prompt_level_strict_acc": case["strict"],
        "inst_level_strict_acc": [case["strict"]],
        "prompt_level_loose_acc": case["loose"],
        "inst_level_loose_acc": [case["loose"]],
    }, case["why"]


def test_prompt_passes_only_when_every_instruction_passes() -> None:
    from sinkbench.tasks.ifeval_strict import utils

    doc = {
        "key": 7,
        "prompt": "(test prompt)",
        "instruction_id_list": ["punctuation:no_comma", "keywords:existence"],
        "kwargs": [{}, {"keywords": ["lamp"]}],
    }
    scores = utils.process_results(doc, ["The keeper lights the lamp."])
    assert scores["prompt_level_strict_acc"] is True
    scores = utils.process_results(doc, ["The keeper, tired, sleeps."])
    assert scores["prompt_level_strict_acc"] is False
    assert scores["inst_level_strict_acc"] == [False, False]
    scores = utils.process_results(doc, ["The keeper, tired, lights the lamp."])
    assert (scores["prompt_level_strict_acc"], scores["inst_level_strict_acc"]) == (False, [False, True])


def test_empty_response_follows_nothing() -> None:
    assert grade("punctuation:no_comma", {}, "   ")["inst_level_strict_acc"] == [False]


def test_instruction_level_accuracy_is_lm_evals_own_aggregation() -> None:
    import yaml

    from sinkbench.tasks.ifeval_strict import utils

    lm_eval_utils = utils.lm_eval_ifeval()
    config = yaml.safe_load((FIXTURES.parents[2] / "harness_tasks" / "ifeval_strict" / "ifeval_strict.yaml")
                            .read_text().replace("!function ", ""))  # fmt: skip
    aggregations = {metric["metric"]: metric["aggregation"] for metric in config["metric_list"]}
    assert (
        aggregations["inst_level_strict_acc"]
        == aggregations["inst_level_loose_acc"]
        == "utils.agg_inst_level_acc"
    )
    items = [[True, False], [True], [False, False, True]]
    assert utils.agg_inst_level_acc(items) == lm_eval_utils.agg_inst_level_acc(items) == pytest.approx(3 / 6)


def test_punkt_tab_is_materialised_where_nltk_finds_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import nltk

    monkeypatch.setattr(nltk.data, "path", [])
    monkeypatch.setenv(_punkt.NLTK_DATA_ENV, str(tmp_path))
    model_dir = tmp_path / _punkt.RESOURCE
    assert _punkt.ensure_punkt_tab() == model_dir
    assert sorted(path.name for path in model_dir.iterdir()) == [
        "abbrev_types.txt",
        "collocations.tab",
        "ortho_context.tab",
        "sent_starters.txt",
    ]
    tokenizer = nltk.tokenize.PunktTokenizer("english")
    assert tokenizer.tokenize("Dr. Smith left at 5 p.m. on Monday. He was tired.") == [
        "Dr. Smith left at 5 p.m. on Monday.",
        "He was tired.",
    ]
    assert "dr" in (model_dir / "abbrev_types.txt").read_text(encoding="utf-8").split("\n")
    assert _punkt.ensure_punkt_tab() == model_dir  # found now: nothing is written twice


def test_punkt_tab_files_are_reproducible() -> None:
    assert _punkt.punkt_tab_files() == _punkt.punkt_tab_files()


def test_unwritable_nltk_dir_fails_with_a_fix(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import nltk

    blocker = tmp_path / "a_file"
    blocker.write_text("not a directory", encoding="utf-8")
    monkeypatch.setattr(nltk.data, "path", [])
    monkeypatch.setenv(_punkt.NLTK_DATA_ENV, str(blocker / "nltk_data"))
    with pytest.raises(RuntimeError, match=r"SINKBENCH_NLTK_DATA.*nltk\.downloader punkt_tab"):
        _punkt.ensure_punkt_tab()


GRADE_WITHOUT_NETWORK = """
import nltk, sys
def refuse(*args, **kwargs):
    sys.exit("nltk.download was called")
nltk.download = refuse
from sinkbench.tasks.ifeval_strict import utils
doc = {"key": 1, "prompt": "p", "instruction_id_list": ["length_constraints:number_sentences"],
       "kwargs": [{"num_sentences": 2, "relation": "less than"}]}
print(utils.process_results(doc, ["Dr. Smith arrived at 5 p.m. and left."])["prompt_level_strict_acc"])
"""


@pytest.mark.slow
def test_grading_in_a_fresh_process_downloads_nothing(tmp_path: Path) -> None:
    env = {
        "PATH": "/usr/bin:/bin",
        "HOME": str(tmp_path / "home"),
        _punkt.NLTK_DATA_ENV: str(tmp_path / "nltk_data"),
        "HF_HUB_OFFLINE": "1",
        "HF_DATASETS_OFFLINE": "1",
    }
    done = subprocess.run(
        [sys.executable, "-c", GRADE_WITHOUT_NETWORK], env=env, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip().splitlines()[-1] == "True"
    assert (tmp_path / "nltk_data" / _punkt.RESOURCE / "ortho_context.tab").is_file()
