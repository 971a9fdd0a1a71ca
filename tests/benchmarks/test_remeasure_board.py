"""benchmarks/remeasure_board.py on tiny random models standing in for the board's Hub ids: it measures S on both
calibration sets through lm-eval, submits the v1 run as a measured backbone entry the gate accepts, and the fits then
use that S for the pairs of that reference LLM."""

from __future__ import annotations

import importlib.util
import json
import os
import sys
from pathlib import Path

import pytest
from boards import headline_board
from tiny_models import save_tiny_model

from sinkbench.submissions import load_valid_entries
from sinkbench.tables.build import build_tables

ROOT = Path(__file__).resolve().parents[2]
#: The board's ids re-measured here, with the model type of the tiny random model standing in for each (its config
#: must agree with the QK-norm class the board records: Qwen3 has per-head QK-norm). One model, two lm-eval runs:
#: each costs a minute or more on a loaded 2-core machine.
REMEASURED = {"Qwen/Qwen3-8B": "qwen3"}


def _script():
    spec = importlib.util.spec_from_file_location(
        "remeasure_board", ROOT / "benchmarks" / "remeasure_board.py"
    )
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def board(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return headline_board(tmp_path_factory.mktemp("remeasure") / "submissions")


def test_the_plan_lists_every_board_llm_with_its_expected_time(board: Path, capsys) -> None:
    script = _script()
    llms = script.board_llms(board)
    assert [llm.model_id for llm in llms] == [
        "Qwen/Qwen2-7B-Instruct",
        "Qwen/Qwen2.5-7B-Instruct",
        "Qwen/Qwen3-8B",
        "allenai/Olmo-3-7B-Instruct",
    ]
    assert {llm.qk_norm for llm in llms if llm.model_id == "Qwen/Qwen3-8B"} == {"per-head"}
    assert script.main(["--submissions", str(board), "--dry-run"]) == 0
    printed = capsys.readouterr().out
    assert printed.startswith("Plan: 4 models, 29B parameters in all: about 0.2 h to download 58 GB")
    assert "an estimate, not measured" in printed


@pytest.mark.slow
def test_it_measures_both_sets_and_the_fits_then_use_the_sinkbench_s(
    board: Path, tmp_path: Path, monkeypatch
) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]))
    stand_ins = [f"{model}={save_tiny_model(tmp_path / 'models' / model.replace('/', '--'), kind, seed=i)}"
                 for i, (model, kind) in enumerate(REMEASURED.items())]  # fmt: skip
    runs = tmp_path / "runs"
    argv = ["--submissions", str(board), "--runs", str(runs), "--device", "cpu", "--dtype", "float32"]
    argv += ["--models", *REMEASURED] + [f"--stand-in={value}" for value in stand_ins]
    assert _script().main(argv) == 0
    summary = json.loads((runs / "remeasure.json").read_text(encoding="utf-8"))
    assert [item["model_id"] for item in summary] == sorted(REMEASURED)
    for item in summary:
        assert (
            set(item["sink_strength"]) == {"v1", "v2"}
            and item["sink_strength"]["v1"] != item["sink_strength"]["v2"]
        )
        assert item["stderr"]["v1"] is not None and item["entry"].endswith("-sinkbench-v1")
    entries = load_valid_entries(board)  # the gate accepts the written entries
    written = {e.llm.id: e for e in entries if e.kind == "backbone"}
    assert set(written) == set(REMEASURED)
    tables = build_tables(entries)
    ifeval = tables.pairs[tables.pairs["task"] == "ifeval_strict"].set_index("entry")
    for model_id in REMEASURED:
        rows = ifeval[ifeval["reference_llm_id"] == model_id]
        assert set(rows["sink_strength"]) == {written[model_id].sink_strength}
        assert set(rows["s_source"]) == {f"backbone entry {written[model_id].name}"}
    others = ifeval[~ifeval["reference_llm_id"].isin(REMEASURED)]
    assert (
        set(others["s_source"]) == {"the pair's own"}
        and others["s_protocol"].str.startswith("reported").all()
    )
