"""Tiny random-init models and an offline tokenizer for fast tests (no network)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
import torch
from transformers import (
    Gemma3TextConfig,
    LlamaConfig,
    MistralConfig,
    Olmo2Config,
    Qwen2Config,
    Qwen3Config,
)

from sinkbench.conformance.tiny import CHAT_TEMPLATE, CORPUS, tiny_tokenizer

__all__ = [
    "CHAT_TEMPLATE",
    "CHOICE_DOCS",
    "CONFIGS",
    "CORPUS",
    "TASK_YAML",
    "lm_eval_tiny_choice",
    "save_tiny_model",
    "tiny_causal_lm",
    "tiny_tokenizer",
]

SMALL = {
    "hidden_size": 32,
    "intermediate_size": 64,
    "num_hidden_layers": 4,
    "num_attention_heads": 4,
    "pad_token_id": 0,
    "bos_token_id": 1,
    "eos_token_id": 2,
}
CONFIGS = {
    "llama": lambda v: LlamaConfig(vocab_size=v, num_key_value_heads=2, **SMALL),
    "mistral": lambda v: MistralConfig(vocab_size=v, num_key_value_heads=2, sliding_window=None, **SMALL),
    "qwen2": lambda v: Qwen2Config(vocab_size=v, num_key_value_heads=2, **SMALL),
    "qwen3": lambda v: Qwen3Config(vocab_size=v, num_key_value_heads=2, head_dim=8, **SMALL),
    "gemma3_text": lambda v: Gemma3TextConfig(
        vocab_size=v, num_key_value_heads=1, head_dim=8, sliding_window=6, layer_types=None, **SMALL
    ),
    "olmo2": lambda v: Olmo2Config(vocab_size=v, num_key_value_heads=2, **SMALL),
}


def tiny_causal_lm(model_type: str, seed: int = 0) -> torch.nn.Module:
    """A 4-layer random-init causal LM of the given architecture, float32, eval mode."""
    from transformers import AutoModelForCausalLM

    torch.manual_seed(seed)
    config = CONFIGS[model_type](len(tiny_tokenizer()))
    return AutoModelForCausalLM.from_config(config, dtype=torch.float32).eval()


def save_tiny_model(directory: Path, model_type: str = "llama", seed: int = 0) -> Path:
    """Save a tiny model and its tokenizer as a transformers directory; returns it."""
    tiny_causal_lm(model_type, seed).save_pretrained(directory)
    tiny_tokenizer().save_pretrained(directory)
    return directory


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
    from sinkbench.testbed.schema import RunGroup, RunKey, TestbedConfig
    from sinkbench.testbed.train import StageSpec
    from sinkbench.testbed.vlm import VisionSpec

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
    root: Path, log: Callable[[str], None], *, report_only: bool = False, **changes: object
) -> Path:
    """The VL testbed's whole pipeline on a tiny Llama (two seeds, every arm, two doses, the text-only control, two
    steps per stage) into ``root``; returns its results file. Running it again resumes (and trains nothing)."""
    from sinkbench.leaderboard.training import TESTBED_FILE
    from sinkbench.testbed import experiment
    from sinkbench.testbed.outcomes import non_trivial_prompts

    base = root / "base"
    if not base.is_dir():
        save_tiny_model(base)
    config = tiny_testbed_config(**changes)
    non_trivial = non_trivial_prompts(TINY_DOCS)
    header = {
        "sinkbench_version": "0.1.0",
        "created": "2026-12-01T00:00:00+00:00",
        "command": "SINKBENCH_DATA_DIR=../shared/data python benchmarks/vl_testbed.py",
        "model": {"id": "tiny-llama", "num_parameters": 100_000},
        "machine": {"cpus": 2, "torch_threads": 1, "device": "cpu", "load_average_at_start": [0.5, 0.4, 0.3]},
        "ifeval_subset": experiment.ifeval_subset_record(
            TINY_DOCS, [0, 1, 2], non_trivial, {"documents": 3, "short_answer_documents": 3, "rule": "all"}
        ),
        "text_source": {"file": "gsm8k_train.jsonl", "sha256": "0" * 64, "split": "train"},
        "shape": TINY_SHAPE,
    }
    results = root / "results" / TESTBED_FILE
    inputs = experiment.Inputs(base, TINY_DOCS, non_trivial, TINY_PROBLEMS, TINY_SINK_HEADS, TINY_SHAPE)
    experiment.Testbed(config, inputs, root / "work", results, header, log=log).run(report_only=report_only)
    return results


#: A tiny multiple-choice task for lm-eval (the ``task_manager`` fixture of conftest.py serves it, no network).
CHOICE_DOCS = [
    {"question": "what color is the sky", "choices": ["blue", "red", "green"], "answer": 0},
    {"question": "the cat and the dog", "choices": ["big", "small"], "answer": 1},
    {"question": "which is cold", "choices": ["snow", "fire"], "answer": 0},
    {"question": "the sun is", "choices": ["hot", "cold", "dark"], "answer": 0},
]
TASK_YAML = """task: sinkbench_tiny_choice
dataset_path: json
dataset_kwargs:
  data_files:
    test: {data}
test_split: test
output_type: multiple_choice
doc_to_text: "{{{{question}}}}"
doc_to_choice: "{{{{choices}}}}"
doc_to_target: answer
metric_list:
  - metric: acc
    aggregation: mean
    higher_is_better: true
"""


def _loglikelihood(model, tokenizer, context: str, continuation: str) -> float:
    """log p(continuation | context), split into tokens the way lm-eval's HF model does."""
    context_ids = tokenizer(context, add_special_tokens=False).input_ids
    whole = tokenizer(context + continuation, add_special_tokens=False).input_ids
    with torch.no_grad():
        logprobs = model(input_ids=torch.tensor([whole[:-1]])).logits[0].log_softmax(-1)
    positions = range(len(context_ids) - 1, len(whole) - 1)
    return sum(logprobs[p, whole[p + 1]].item() for p in positions)


def lm_eval_tiny_choice(folder: Path, task_manager) -> tuple[float, float]:
    """``lm_eval --model hf`` on the tiny choice task over the model ``folder``, with every log-likelihood it
    scored checked against one computed here (to 1e-4). Returns lm-eval's accuracy and the accuracy of the
    log-likelihoods computed here."""
    import lm_eval
    from transformers import AutoModelForCausalLM, AutoTokenizer

    results = lm_eval.simple_evaluate(
        model="hf",
        model_args={"pretrained": str(folder), "dtype": "float32"},
        tasks=["sinkbench_tiny_choice"],
        task_manager=task_manager,
        device="cpu",
        batch_size=1,
        log_samples=True,
    )
    model = AutoModelForCausalLM.from_pretrained(folder, dtype=torch.float32)
    tokenizer = AutoTokenizer.from_pretrained(folder)
    correct = []
    for sample in sorted(results["samples"]["sinkbench_tiny_choice"], key=lambda s: s["doc_id"]):
        expected = [_loglikelihood(model, tokenizer, *arguments) for arguments in sample["arguments"]]
        scored = [loglikelihood for loglikelihood, _ in sample["filtered_resps"]]
        if scored != pytest.approx(expected, abs=1e-4):
            raise AssertionError(f"lm-eval scored {scored}, the model computes {expected}")
        correct.append(expected.index(max(expected)) == CHOICE_DOCS[sample["doc_id"]]["answer"])
    return results["results"]["sinkbench_tiny_choice"]["acc,none"], sum(correct) / len(correct)
