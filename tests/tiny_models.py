"""Tiny random-init models and an offline tokenizer for fast tests (no network)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from sinkbench.conformance.tiny import CHAT_TEMPLATE, CORPUS, tiny_tokenizer

if TYPE_CHECKING:
    import torch
    from transformers import PretrainedConfig

__all__ = [
    "CHAT_TEMPLATE",
    "CHOICE_DOCS",
    "CONFIGS",
    "CORPUS",
    "TASK_YAML",
    "lm_eval_tiny_choice",
    "model_config",
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


def model_config(model_type: str, **fields) -> PretrainedConfig:
    """transformers' config of ``model_type`` with ``fields`` (transformers is imported when it is called)."""
    from transformers import AutoConfig

    return AutoConfig.for_model(model_type, **fields)


CONFIGS = {
    "llama": lambda v: model_config("llama", vocab_size=v, **SMALL, num_key_value_heads=2),
    "mistral": lambda v: model_config(
        "mistral", vocab_size=v, **SMALL, num_key_value_heads=2, sliding_window=None
    ),
    "qwen2": lambda v: model_config("qwen2", vocab_size=v, **SMALL, num_key_value_heads=2),
    "qwen3": lambda v: model_config("qwen3", vocab_size=v, **SMALL, num_key_value_heads=2, head_dim=8),
    "gemma3_text": lambda v: model_config(
        "gemma3_text",
        vocab_size=v,
        **SMALL,
        num_key_value_heads=1,
        head_dim=8,
        sliding_window=6,
        layer_types=None,
    ),
    "olmo2": lambda v: model_config("olmo2", vocab_size=v, **SMALL, num_key_value_heads=2),
}


def tiny_causal_lm(
    model_type: str, seed: int = 0, layers: int = SMALL["num_hidden_layers"]
) -> torch.nn.Module:
    """A random-init causal LM of the given architecture (4 layers unless told), float32, eval mode."""
    import torch
    from transformers import AutoModelForCausalLM

    torch.manual_seed(seed)
    config = CONFIGS[model_type](len(tiny_tokenizer()))
    config.num_hidden_layers = layers
    return AutoModelForCausalLM.from_config(config, dtype=torch.float32).eval()


def save_tiny_model(
    directory: Path, model_type: str = "llama", seed: int = 0, layers: int = SMALL["num_hidden_layers"]
) -> Path:
    """Save a tiny model (:func:`tiny_causal_lm`) and its tokenizer as a transformers directory; returns it."""
    tiny_causal_lm(model_type, seed, layers).save_pretrained(directory)
    tiny_tokenizer().save_pretrained(directory)
    return directory


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
    import torch

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
    import torch
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
