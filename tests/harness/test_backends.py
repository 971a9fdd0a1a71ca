"""The strict tasks under an lm-eval backend other than ``hf``, and ``sink_strength`` refusing such a backend.

The other backend is :class:`ReplayLM`, registered with lm-eval's model registry as vLLM's class is: no torch
model, a tokenizer, its own ``generate_until`` / ``loglikelihood``. It answers every request with what a recorded
``hf`` run answered to the identical request, so the two runs' results files must agree in structure and in every
number: whatever differs would be an assumption of the tasks about the ``hf`` backend.

``sinkbench_control`` names lm-eval's own MMLU and BoolQ, whose documents come from the Hugging Face Hub; the
runs read two made-up documents per dataset instead (``load_dataset`` is replaced for those two datasets only).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from tiny_models import save_tiny_model

from sinkbench.harness.run import run_lm_eval

FIXTURES = Path(__file__).parents[1] / "fixtures" / "strict"
REPLAY = "sinkbench-test-replay"
LIMIT = 2
#: Made-up documents in the Hub datasets' own schemas, for the control group's MMLU subjects and BoolQ.
MMLU_ROWS = [
    {"question": "Which number is even?", "subject": "any", "choices": ["3", "5", "8", "9"], "answer": 2},
    {"question": "Which colour is the sky on a clear day?", "subject": "any", "choices": ["red", "blue", "green", "black"], "answer": 1},
]  # fmt: skip
BOOLQ_ROWS = [
    {"question": "is water wet", "passage": "Water makes things wet.", "idx": 0, "label": 1},
    {"question": "is the sun cold", "passage": "The sun is a hot star.", "idx": 1, "label": 0},
]
CONTROL_DATA = {
    "cais/mmlu": {"test": MMLU_ROWS, "dev": MMLU_ROWS, "validation": MMLU_ROWS},
    "aps/super_glue": {"train": BOOLQ_ROWS, "validation": BOOLQ_ROWS},
}
#: What lm-eval's ``hf`` wrapper adds to the run's ``config`` (``HFLM.get_model_info``); vLLM's wrapper has none.
HF_MODEL_INFO = {"model_num_parameters", "model_dtype", "model_revision", "model_sha"}


def _control_datasets(original: Any) -> Any:
    """``load_dataset`` that serves :data:`CONTROL_DATA` and defers every other dataset to ``original``."""
    import datasets

    def load_dataset(path: str, name: str | None = None, **kwargs: Any) -> Any:
        if path in CONTROL_DATA:
            splits = CONTROL_DATA[path]
            return datasets.DatasetDict(
                {split: datasets.Dataset.from_list(rows) for split, rows in splits.items()}
            )
        return original(path, name, **kwargs)

    return load_dataset


@pytest.fixture(scope="module")
def offline(tmp_path_factory: pytest.TempPathFactory) -> Iterator[pytest.MonkeyPatch]:
    """Fixture documents for every task, punkt_tab in a temporary folder, and the replay backend registered."""
    import datasets
    import lm_eval.models  # noqa: F401  (lm-eval's own backends first: a registry holding a name skips them)
    from lm_eval.api.registry import register_model
    from replay_lm import ReplayLM

    from harness_tasks import _data, _punkt

    register_model(REPLAY)(ReplayLM)
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv(_data.DATA_DIR_ENV, str(FIXTURES))
        patch.setenv(_punkt.NLTK_DATA_ENV, str(tmp_path_factory.mktemp("nltk_data")))
        patch.setattr(datasets, "load_dataset", _control_datasets(datasets.load_dataset))
        yield patch


def _run(out: Path, model: str, model_args: str, tasks: str) -> int:
    """``sinkbench eval`` (lm-eval's own command line, in this process) with the suite's protocol flags."""
    return run_lm_eval([
        "--model", model, "--model_args", model_args, "--tasks", tasks, "--limit", str(LIMIT),
        "--apply_chat_template", "--gen_kwargs", "max_gen_toks=4", "--batch_size", "4", "--device", "cpu",
        "--log_samples", "--output_path", str(out),
    ])  # fmt: skip


@pytest.fixture(scope="module")
def runs(offline: pytest.MonkeyPatch, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """An ``hf`` run of both groups on a tiny model, and the replay backend's run of the same requests."""
    root = tmp_path_factory.mktemp("backends")
    model = save_tiny_model(root / "model", "llama")
    tasks = "sinkbench_format,sinkbench_control"
    assert _run(root / "hf", "hf", f"pretrained={model},dtype=float32", tasks) == 0
    replay_args = f"pretrained={model},replay={root / 'hf'},tensor_parallel_size=2,data_parallel_size=1"
    assert _run(root / "replay", REPLAY, replay_args, tasks) == 0
    return {"hf": root / "hf", "replay": root / "replay", "model": model}


def _results(run: Path) -> dict[str, Any]:
    (path,) = run.rglob("results_*.json")
    return json.loads(path.read_text(encoding="utf-8"))


def _samples(run: Path) -> dict[str, list[dict[str, Any]]]:
    """Each task's samples file, by task name (the file name without its date stamp)."""
    return {
        path.stem.removeprefix("samples_").rsplit("_", 1)[0]: [
            json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()
        ]
        for path in run.rglob("samples_*.jsonl")
    }


def _without_model_args(config: dict[str, Any], model_args: set[str]) -> dict[str, Any]:
    """A task's ``configs`` record without the model arguments lm-eval merges into its ``metadata``."""
    metadata = {key: value for key, value in (config.get("metadata") or {}).items() if key not in model_args}
    return {**config, "metadata": metadata}


@pytest.mark.slow  # every strict task run by lm_eval on two backends (the runs fixture)
def test_both_groups_give_the_same_results_under_another_backend(runs: dict[str, Path]) -> None:
    hf, replay = _results(runs["hf"]), _results(runs["replay"])
    assert hf["group_subtasks"]["sinkbench_format"] == [
        "ifeval_strict", "gsm8k_cot_strict", "gpqa_diamond_cot_strict", "eq_bench_strict",
    ]  # fmt: skip
    assert len(hf["group_subtasks"]["mmlu"]) == 4 and "boolq" in hf["results"]
    assert replay["config"]["model"] == REPLAY and hf["config"]["model"] == "hf"
    for key in ("results", "group_subtasks", "versions", "n-shot", "n-samples", "higher_is_better"):
        assert replay[key] == hf[key], key
    assert hf["n-samples"]["gsm8k_cot_strict"] == {"original": 4, "effective": LIMIT}
    model_args = {"pretrained", "dtype", "replay", "tensor_parallel_size", "data_parallel_size"}
    assert replay["configs"].keys() == hf["configs"].keys()
    for task in hf["configs"]:
        assert _without_model_args(replay["configs"][task], model_args) == _without_model_args(
            hf["configs"][task], model_args
        ), task
    assert replay["configs"]["boolq"]["metadata"]["tensor_parallel_size"] == 2  # the backend's own arguments


@pytest.mark.slow  # every strict task run by lm_eval on two backends (the runs fixture)
def test_results_files_have_the_structure_of_an_hf_run(runs: dict[str, Path]) -> None:
    hf, replay = _results(runs["hf"]), _results(runs["replay"])
    assert replay.keys() == hf.keys()
    assert hf["config"].keys() - replay["config"].keys() == HF_MODEL_INFO
    assert replay["config"].keys() <= hf["config"].keys()
    assert replay["chat_template"] == hf["chat_template"] and replay["chat_template"]
    # lm-eval 0.4.13 records --model_args as the parsed dict (older versions: the command-line string)
    assert replay["config"]["model_args"]["tensor_parallel_size"] == 2


@pytest.mark.slow  # every strict task run by lm_eval on two backends (the runs fixture)
def test_samples_files_match_the_hf_run_line_by_line(runs: dict[str, Path]) -> None:
    hf, replay = _samples(runs["hf"]), _samples(runs["replay"])
    assert replay.keys() == hf.keys() and "ifeval_strict" in hf and "boolq" in hf
    for task, lines in hf.items():
        assert len(replay[task]) == len(lines), task
        for ours, theirs in zip(lines, replay[task], strict=True):
            assert theirs.keys() == ours.keys(), task
            assert theirs == ours, task


@pytest.mark.slow  # every strict task run by lm_eval on two backends (the runs fixture)
def test_sink_strength_refuses_the_backend_before_any_request_runs(
    runs: dict[str, Path], tmp_path: Path
) -> None:
    from replay_lm import ReplayLM

    from sinkbench.harness.request import BackendUnsupported

    ReplayLM.generated = 0
    args = f"pretrained={runs['model']},replay={runs['hf']}"
    with pytest.raises(BackendUnsupported) as raised:
        _run(tmp_path / "out", REPLAY, args, "gsm8k_cot_strict,sink_strength")
    message = str(raised.value)
    assert message.startswith("sink_strength reads the attention inside the model, and the ReplayLM")
    assert "--model hf" in message and "sinkbench screen MODEL" in message and "parallelize=True" in message
    assert ReplayLM.generated == 0, "gsm8k_cot_strict, listed first, ran before the refusal"
    assert not list((tmp_path / "out").rglob("results_*.json"))


def test_tensor_parallel_weights_are_refused() -> None:
    import torch

    from sinkbench.harness.request import BackendUnsupported, probed_model

    class TensorParallel(torch.nn.Linear):
        tp_size = 2

    class Wrapper:
        model, tokenizer = TensorParallel(2, 2), object()

    with pytest.raises(BackendUnsupported) as raised:
        probed_model(Wrapper())
    assert "tensor parallelism (tp_plan)" in str(raised.value) and "\n" not in str(raised.value)
    assert "--model hf" in raised.value.fix
