"""S of a model split by a device map equals S of the whole model: probe, ``lm_eval --model hf`` with
``parallelize=True``, and ``sinkbench screen --device-map auto``.

A CPU has one device, so the split here is accelerate's offloading: the map keeps the embeddings and the
first layers on the CPU and sends the probed last layers to ``disk``. transformers then dispatches the model
the way it dispatches one sharded over GPUs (an ``AlignDevicesHook`` on each placed module moves the inputs,
the ``sink_recorder`` keyword included, and loads offloaded weights at each forward). What a CPU cannot show
is tensors crossing between two devices; ``benchmarks/gpu_check.py`` is the check prepared for a GPU.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from tiny_models import save_tiny_model, tiny_tokenizer

from sinkbench.cli import main
from sinkbench.harness.run import tasks_path
from sinkbench.sink.options import ProbeOptions

if TYPE_CHECKING:
    import torch
    from lm_eval.models.huggingface import HFLM

PROMPTS = [
    "Write a short note to a friend about the weather.",
    "Explain how a bicycle works.",
    "List four tips, then end with a postscript and the answer 42 in three sentences with no commas.",
]
#: The tiny Llama's modules: embeddings and layers 0-1 on the CPU, the probed layers 2-3 offloaded to disk.
SPLIT = {
    "model.embed_tokens": "cpu",
    "model.layers.0": "cpu",
    "model.layers.1": "cpu",
    "model.layers.2": "disk",
    "model.layers.3": "disk",
    "model.norm": "cpu",
    "model.rotary_emb": "cpu",
    "lm_head": "cpu",
}
OPTIONS = ProbeOptions(num_layers=3, batch_size=2)


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return save_tiny_model(tmp_path_factory.mktemp("sharded") / "model", "llama")


def _load(model_dir: Path, **kwargs: object) -> torch.nn.Module:
    import torch
    from transformers import AutoModelForCausalLM

    return AutoModelForCausalLM.from_pretrained(model_dir, dtype=torch.float32, **kwargs).eval()


def test_probe_gives_the_same_observations_across_a_device_map(model_dir: Path, tmp_path: Path) -> None:
    import torch

    from sinkbench.sink.observe import observe

    whole = observe(_load(model_dir), tiny_tokenizer(), PROMPTS, OPTIONS)
    split_model = _load(model_dir, device_map=SPLIT, offload_folder=str(tmp_path / "offload"))
    assert split_model.hf_device_map == SPLIT
    assert split_model.model.layers[3].self_attn.q_proj.weight.device.type == "meta"  # weights live on disk
    split = observe(split_model, tiny_tokenizer(), PROMPTS, OPTIONS)
    for ours, theirs in zip(whole, split, strict=True):
        torch.testing.assert_close(theirs.g, ours.g, equal_nan=True, atol=1e-6, rtol=0)
        assert torch.equal(theirs.sink_position, ours.sink_position)
        torch.testing.assert_close(
            theirs.first_token_attention, ours.first_token_attention, atol=1e-6, rtol=0
        )


def _hf(model_dir: Path, **model_args: object) -> HFLM:
    """lm-eval's ``hf`` backend, built as ``--model hf --model_args pretrained=DIR,...`` builds it."""
    from lm_eval.models.huggingface import HFLM

    return HFLM(pretrained=str(model_dir), dtype="float32", device="cpu", **model_args)


def _lm_eval_s(lm: HFLM) -> float:
    import lm_eval

    results = lm_eval.simple_evaluate(
        model=lm,
        tasks=["sink_strength"],
        task_manager=lm_eval.tasks.TaskManager(include_path=str(tasks_path()), include_defaults=False),
        limit=4,
        bootstrap_iters=0,
    )
    return results["results"]["sink_strength"]["sink_strength,none"]


@pytest.mark.slow  # a whole lm_eval evaluation
def test_lm_eval_parallelize_gives_the_same_s(model_dir: Path, tmp_path: Path) -> None:
    split = _hf(model_dir, parallelize=True, device_map=SPLIT, offload_folder=str(tmp_path / "offload"))
    assert split.model.hf_device_map == SPLIT
    assert split.model.model.layers[3].self_attn.q_proj.weight.device.type == "meta"
    assert _lm_eval_s(split) == pytest.approx(_lm_eval_s(_hf(model_dir)), abs=1e-6)


def test_probe_with_offloaded_embeddings(model_dir: Path, tmp_path: Path) -> None:
    """The inputs go where accelerate runs the embeddings, not to their weights' ``meta`` device."""
    import torch

    from sinkbench.sink.observe import observe

    offloaded = {**SPLIT, "model.embed_tokens": "disk"}
    model = _load(model_dir, device_map=offloaded, offload_folder=str(tmp_path / "offload"))
    assert model.model.embed_tokens.weight.device.type == "meta"
    whole = observe(_load(model_dir), tiny_tokenizer(), PROMPTS, OPTIONS)
    for ours, theirs in zip(whole, observe(model, tiny_tokenizer(), PROMPTS, OPTIONS), strict=True):
        torch.testing.assert_close(theirs.g, ours.g, equal_nan=True, atol=1e-6, rtol=0)


@pytest.mark.slow  # a whole lm_eval evaluation
def test_lm_eval_parallelize_without_a_gpu(model_dir: Path, tmp_path: Path) -> None:
    lm = _hf(model_dir, parallelize=True, offload_folder=str(tmp_path / "offload"))
    assert _lm_eval_s(lm) == pytest.approx(_lm_eval_s(_hf(model_dir)), abs=1e-6)


def test_screen_device_map_auto_gives_the_same_s(model_dir: Path, tmp_path: Path) -> None:
    """Without a GPU, ``auto`` keeps the model whole on the CPU: this checks the option's path; the split
    itself is tested above, through the same ``from_pretrained`` dispatch."""
    reports = {}
    for name, extra in {"whole": [], "auto": ["--device-map", "auto"]}.items():
        output = tmp_path / f"{name}.json"
        argv = ["screen", str(model_dir), "--against", "none", "--quiet", "--output", str(output), *extra]
        assert main(argv) == 0
        reports[name] = json.loads(output.read_text(encoding="utf-8"))
    assert reports["auto"]["sink_strength"] == pytest.approx(reports["whole"]["sink_strength"], abs=1e-6)
    assert reports["auto"]["profile"] == reports["whole"]["profile"]
