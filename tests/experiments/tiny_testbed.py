"""The VL testbed's tiny set-up, shared by the experiments' tests: a tiny Llama's sink heads and shape, IFEval- and
GSM8K-like documents, the tiny configuration, the whole pipeline run on them, and results files broken on purpose."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest
from tiny_models import save_tiny_model

#: The sink heads and attention shape the tiny testbed run uses (4 layers, 4 heads, 2 key/value heads).
TINY_SINK_HEADS = [[0, 0], [1, 1], [2, 2], [2, 3]]
TINY_SHAPE = {"num_layers": 4, "num_heads": 4, "num_kv_heads": 2}


#: IFEval-like documents of the tiny testbed: two that "Red." passes (trivial) and one that no trivial answer passes.
TINY_DOCS = [
    {"key": 1, "prompt": "Write a note in lowercase.", "instruction_id_list": ["change_case:english_lowercase"],
     "kwargs": [{}]},
    {"key": 2, "prompt": "Answer without commas.", "instruction_id_list": ["punctuation:no_comma"], "kwargs": [{}]},
    {"key": 3, "prompt": "Write two paragraphs.", "instruction_id_list": ["length_constraints:number_paragraphs"],
     "kwargs": [{"num_paragraphs": 2}]},
]  # fmt: skip
#: GSM8K-like problems of the tiny text-only control.
TINY_PROBLEMS = [
    {
        "question": f"What is {a} plus {a}?",
        "answer": f"{a} plus {a} is <<{a}+{a}={2 * a}>>{2 * a}.\n#### {2 * a}",
    }
    for a in range(1, 40)
]


def tiny_testbed_config(**changes: object) -> object:
    """The tiny testbed's configuration: two seeds, two doses, every arm, two steps per stage."""
    from experiments.vl_testbed.schema import RunGroup, RunKey, TestbedConfig
    from experiments.vl_testbed.train import StageSpec
    from experiments.vl_testbed.vlm import VisionSpec

    config = TestbedConfig(
        backbone="tiny-llama",
        stage1=StageSpec(2, 2, 1e-3, 0.5, False),
        doses={"low": StageSpec(2, 2, 1e-4, 0.5, True), "high": StageSpec(2, 2, 1e-2, 0.5, True)},
        compare_dose="high",
        plan=(
            RunGroup(data="vl", dose="high", arms=("none", "frozen_lm", "sink", "random")),
            RunGroup(data="vl", dose="low", arms=("none",)),
            RunGroup(data="text", dose="high", arms=("none",)),
        ),
        vision=VisionSpec(
            image_size=16, patch_size=8, hidden_size=16, intermediate_size=32, layers=1, heads=2
        ),
        stage0_steps=2,
        stage0_batch=4,
        seeds=(0, 1),
        bands=2,
        monitor_every=1,
        ifeval_prompts=3,
        max_new_tokens=4,
        eval_batch=2,
        visual_images=2,
        keep=(RunKey(data="vl", dose="high", arm="none", seed=0),),
    )
    return config.model_copy(update=changes)


def run_tiny_testbed(
    root: Path,
    log: Callable[[str], None],
    *,
    report_only: bool = False,
    problems: list[dict[str, str]] = TINY_PROBLEMS,
    **changes: object,
) -> Path:
    """The VL testbed's whole pipeline on a tiny Llama (two seeds, every arm, two doses, the text-only control, two
    steps per stage) into ``root``, its text-only chats from ``problems``; returns its results file. Running it
    again resumes (and trains nothing)."""
    from experiments.vl_testbed import experiment
    from experiments.vl_testbed.outcomes import non_trivial_prompts
    from experiments.vl_testbed.page import TESTBED_FILE

    base = root / "base"
    if not base.is_dir():
        save_tiny_model(base)
    config = tiny_testbed_config(**changes)
    non_trivial = non_trivial_prompts(TINY_DOCS)
    header = {
        "sinkbench_version": "0.1.0",
        "created": "2026-12-01T00:00:00+00:00",
        "command": "SINKBENCH_DATA_DIR=../shared/data python -m experiments.vl_testbed.run",
        "model": {"id": "tiny-llama", "num_parameters": 100_000},
        "machine": {
            "cpus": 2,
            "torch_threads": 1,
            "device": "cpu",
            "load_average_at_start": [0.5, 0.4, 0.3],
            "software": [{"when": "2026-12-01T00:00:00+00:00", "cpu": "tiny CPU", "torch": "2.13.0"}],
        },
        "ifeval_subset": experiment.ifeval_subset_record(
            TINY_DOCS, [0, 1, 2], non_trivial, {"documents": 3, "short_answer_documents": 3, "rule": "all"}
        ),
        "text_source": {"file": "gsm8k_train.jsonl", "sha256": "0" * 64, "split": "train"},
        "shape": TINY_SHAPE,
    }
    results = root / "results" / TESTBED_FILE
    inputs = experiment.Inputs(base, TINY_DOCS, non_trivial, problems, TINY_SINK_HEADS, TINY_SHAPE)
    experiment.Testbed(config, inputs, root / "work", results, header, log=log).run(report_only=report_only)
    return results


def refusal(
    read: Callable[[Path, str], object], results: Path, change: Callable[[dict], object], to: Path, shown: str
) -> str:
    """The error ``read`` raises (``SourceInvalid``, one line; ``shown`` names the file) on a copy at ``to`` of the
    results file ``results`` whose JSON ``change`` broke in place."""
    from experiments.page_fragment import SourceInvalid

    data = json.loads(results.read_text())
    change(data)
    to.write_text(json.dumps(data), encoding="utf-8")
    with pytest.raises(SourceInvalid) as raised:
        read(to, shown)
    message = str(raised.value)
    assert "\n" not in message
    return message
