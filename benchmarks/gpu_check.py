"""One prepared check for a GPU machine: S of 7B-shaped models and extract-lm of a 7B-shaped LLaVA, as one JSON line.

Nothing is downloaded: every model is random-init from a config of the published shape (Llama 2 7B, Qwen2 7B,
LLaVA 1.5 7B), the prompts are the packaged calibration set under a byte-level tokenizer built in memory. Random
weights have no meaningful S; this checks that the code paths run on the device and agree:

* ``probe``: ``sinkbench.sink.observe`` with the default options: S, seconds after load (median of ``--reps``
  after a warm-up) and peak device memory above the loaded model;
* ``chunked`` (``ProbeOptions(use_flash_kernel=False)``) and ``eager`` (``sinkbench.sink.naive``): S, |S - S_probe|
  and the largest |G - G_probe| over the observations both routes keep;
* ``monitor``: ``SinkMonitor.measure`` against a plain forward over the same prompts in the same batches;
* ``llava``: a random LLaVA with a 7B text config saved with safetensors, then ``extract_lm(..., verify=True)``.

``passed`` is false (exit status 1) when a probe's S is not finite, a route's |ΔS| exceeds its tolerance (1e-4 in
float32; 0.05 in bfloat16 or float16, whose rounding the eager route carries) or the extraction fails its check.
Under 5 minutes on one GPU, most of it writing and re-reading the LLaVA's 14 GB. ``--tiny`` runs tiny shapes (and 3
prompts) in seconds, on the CPU too (``tests/benchmarks/test_gpu_check.py``).

Usage: ``python benchmarks/gpu_check.py [--tiny] [--device cuda] [--dtype bfloat16] [--reps 3] [--workdir DIR]``.
"""

from __future__ import annotations

import gc
import json
import math
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch
from bench_monitor import calibration_batches, forward
from tokenizers import Tokenizer, decoders, models, pre_tokenizers
from transformers import (
    AutoModelForCausalLM,
    AutoModelForImageTextToText,
    CLIPVisionConfig,
    LlamaConfig,
    LlavaConfig,
    PreTrainedTokenizerFast,
    Qwen2Config,
)

import sinkbench
from sinkbench.cli.parser import CommandParser
from sinkbench.extract import extract_lm
from sinkbench.monitor import SinkMonitor
from sinkbench.sink.naive import naive_observations
from sinkbench.sink.observe import observe
from sinkbench.sink.options import ProbeOptions
from sinkbench.sink.prompts import load_prompts
from sinkbench.sink.strength import PromptObservations, summarize

#: Timed repetitions (after one warm-up), and how many calibration prompts each size uses.
REPS = 3
PROMPTS = {"full": 15, "tiny": 3}
CHAT_TEMPLATE = (
    "{{ bos_token }}{% for m in messages %}<|{{ m['role'] }}|>{{ m['content'] }}</s>{% endfor %}"
    "{% if add_generation_prompt %}<|assistant|>{% endif %}"
)
#: Published shapes (Llama 2 7B, Qwen2 7B) and tiny ones of the same families.
TEXT_SHAPES = {
    "llama": {
        "full": {"hidden_size": 4096, "intermediate_size": 11008, "num_hidden_layers": 32,
                 "num_attention_heads": 32, "num_key_value_heads": 32, "vocab_size": 32000},
        "tiny": {"hidden_size": 64, "intermediate_size": 128, "num_hidden_layers": 4,
                 "num_attention_heads": 4, "num_key_value_heads": 4, "vocab_size": 300},
    },
    "qwen2": {
        "full": {"hidden_size": 3584, "intermediate_size": 18944, "num_hidden_layers": 28,
                 "num_attention_heads": 28, "num_key_value_heads": 4, "vocab_size": 152064, "rope_theta": 1e6},
        "tiny": {"hidden_size": 64, "intermediate_size": 128, "num_hidden_layers": 4,
                 "num_attention_heads": 4, "num_key_value_heads": 2, "vocab_size": 300},
    },
}  # fmt: skip
CONFIGS = {"llama": LlamaConfig, "qwen2": Qwen2Config}
#: LLaVA 1.5 7B: a CLIP ViT-L/14 at 336 px and a Llama 2 7B text model (vocabulary 32,064, image token 32,000).
LLAVA_SHAPES = {
    "full": {"vision": {"hidden_size": 1024, "intermediate_size": 4096, "num_hidden_layers": 24,
                        "num_attention_heads": 16, "image_size": 336, "patch_size": 14},
             "text": {**TEXT_SHAPES["llama"]["full"], "vocab_size": 32064}, "image_token_index": 32000},
    "tiny": {"vision": {"hidden_size": 16, "intermediate_size": 32, "num_hidden_layers": 1,
                        "num_attention_heads": 2, "image_size": 28, "patch_size": 14},
             "text": TEXT_SHAPES["llama"]["tiny"], "image_token_index": 299},
}  # fmt: skip
SPECIAL_IDS = {"pad_token_id": 0, "bos_token_id": 1, "eos_token_id": 2}


def byte_tokenizer() -> PreTrainedTokenizerFast:
    """A byte-level tokenizer built in memory (one token per byte, ids below 259) with a chat template."""
    specials = ["<pad>", "<s>", "</s>"]
    vocab = {token: i for i, token in enumerate(specials + sorted(pre_tokenizers.ByteLevel.alphabet()))}
    backend = Tokenizer(models.BPE(vocab=vocab, merges=[]))
    backend.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)
    backend.decoder = decoders.ByteLevel()
    return PreTrainedTokenizerFast(
        tokenizer_object=backend,
        pad_token="<pad>",
        bos_token="<s>",
        eos_token="</s>",
        chat_template=CHAT_TEMPLATE,
    )


def _timed(device: torch.device, action: Callable[[], Any]) -> tuple[Any, float, float | None]:
    """``action()``, its seconds, and the peak device memory it added (MiB; None off CUDA)."""
    if device.type != "cuda":
        started = time.perf_counter()
        return action(), time.perf_counter() - started, None
    torch.cuda.synchronize(device)
    torch.cuda.reset_peak_memory_stats(device)
    before = torch.cuda.memory_allocated(device)
    started = time.perf_counter()
    result = action()
    torch.cuda.synchronize(device)
    seconds = time.perf_counter() - started
    return result, seconds, (torch.cuda.max_memory_allocated(device) - before) / 2**20


def _repeated(device: torch.device, action: Callable[[], Any], reps: int) -> tuple[Any, dict[str, Any]]:
    """A warm-up (when ``reps`` > 1), then ``reps`` timed runs: the last result, the median seconds, their range
    and the peak memory."""
    if reps > 1:
        action()
    runs = [_timed(device, action) for _ in range(reps)]
    seconds = [run[1] for run in runs]
    peaks = [run[2] for run in runs if run[2] is not None]
    timing = {
        "seconds": statistics.median(seconds),
        "seconds_range": [min(seconds), max(seconds)],
        "peak_mib": max(peaks) if peaks else None,
    }
    return runs[-1][0], timing


def compare(
    reference: list[PromptObservations], probe: list[PromptObservations], s_probe: float
) -> dict[str, Any]:
    """S of a reference route, |ΔS| to the probe, and the largest |ΔG| where both keep an observation."""
    worst, mismatched = 0.0, 0
    for ours, theirs in zip(probe, reference, strict=True):
        a, b = ours.g.double().cpu(), theirs.g.double().cpu()
        both = torch.isfinite(a) & torch.isfinite(b)
        mismatched += int((torch.isfinite(a) != torch.isfinite(b)).sum())
        if both.any():
            worst = max(worst, float((a[both] - b[both]).abs().max()))
    s = summarize(reference).sink_strength
    return {
        "sink_strength": s,
        "abs_s_diff": abs(s - s_probe),
        "max_abs_g_diff": worst,
        "kept_mismatch": mismatched,
    }


def _free() -> None:
    gc.collect()
    if torch.cuda.is_available():
        torch.cuda.empty_cache()


def check_text_model(
    family: str, size: str, device: torch.device, dtype: torch.dtype, reps: int
) -> dict[str, Any]:
    """Every route on one random-init model of ``family``'s shape."""
    shape = TEXT_SHAPES[family][size]
    config = CONFIGS[family](**shape, **SPECIAL_IDS, max_position_embeddings=4096)
    tokenizer, prompts = byte_tokenizer(), load_prompts()[: PROMPTS[size]]
    torch.manual_seed(0)
    with torch.device(device):
        model, init_s, _ = _timed(
            device, lambda: AutoModelForCausalLM.from_config(config, dtype=dtype).to(device).eval()
        )
    options = ProbeOptions()
    probe, probe_timing = _repeated(device, lambda: observe(model, tokenizer, prompts, options), reps)
    s_probe = summarize(probe).sink_strength
    chunked_options = ProbeOptions(use_flash_kernel=False)
    chunked, chunked_timing = _repeated(
        device, lambda: observe(model, tokenizer, prompts, chunked_options), reps
    )
    eager, eager_timing = _repeated(
        device, lambda: naive_observations(model, tokenizer, prompts, options), reps
    )
    monitor = SinkMonitor(model, tokenizer, prompts, options)
    _, measure_timing = _repeated(device, lambda: monitor.measure(0), reps)
    batches = [
        (ids.to(device), mask.to(device))
        for ids, mask in calibration_batches(tokenizer, options.batch_size, prompts)
    ]
    _, forward_timing = _repeated(device, lambda: forward(model, batches), reps)
    return {
        "shape": {**shape, "parameters": sum(p.numel() for p in model.parameters())},
        "init_s": init_s,
        "probe": {"sink_strength": s_probe, **probe_timing},
        "chunked": {**compare(chunked, probe, s_probe), **chunked_timing},
        "eager": {**compare(eager, probe, s_probe), **eager_timing},
        "monitor": {
            "measure_s": measure_timing["seconds"],
            "forward_s": forward_timing["seconds"],
            "measure_over_forward": measure_timing["seconds"] / forward_timing["seconds"],
        },
        "tokens": sum(int(mask.sum()) for _, mask in batches),
    }


def save_random_llava(size: str, device: torch.device, dtype: torch.dtype, source: Path) -> dict[str, Any]:
    """Save a random-init LLaVA of the given shape (safetensors) with the byte tokenizer; its size and times."""
    shape = LLAVA_SHAPES[size]
    config = LlavaConfig(
        vision_config=CLIPVisionConfig(**shape["vision"]),
        text_config=LlamaConfig(**shape["text"], **SPECIAL_IDS),
        image_token_index=shape["image_token_index"],
    )
    torch.manual_seed(0)
    with torch.device(device):
        vlm, init_s, _ = _timed(
            device, lambda: AutoModelForImageTextToText.from_config(config, dtype=dtype).to(device)
        )
    _, save_s, _ = _timed(device, lambda: vlm.save_pretrained(source))
    byte_tokenizer().save_pretrained(source)
    return {"parameters": sum(p.numel() for p in vlm.parameters()), "init_s": init_s, "save_s": save_s}


def check_llava(size: str, device: torch.device, dtype: torch.dtype, workdir: Path) -> dict[str, Any]:
    """A random LLaVA saved (its model freed), then its language model extracted with ``verify``."""
    saved = save_random_llava(size, device, dtype, workdir / "llava")
    _free()
    extracted, seconds, _ = _timed(
        device, lambda: extract_lm(str(workdir / "llava"), workdir / "llava-lm", verify=True)
    )
    written = sum(path.stat().st_size for path in (workdir / "llava-lm").glob("*.safetensors"))
    return {
        **saved,
        "extract_verify_s": seconds,
        "extracted_bytes": written,
        "verification": extracted.provenance.get("verification"),
    }


def run(
    size: str, device: torch.device, dtype: torch.dtype, workdir: Path, reps: int = REPS
) -> dict[str, Any]:
    """Every check; the report :func:`main` prints."""
    started = time.perf_counter()
    report: dict[str, Any] = {
        "check": "gpu_check",
        "size": size,
        "device": str(device),
        "device_name": torch.cuda.get_device_name(device) if device.type == "cuda" else "cpu",
        "dtype": str(dtype).removeprefix("torch."),
        "versions": {"torch": torch.__version__, "sinkbench": sinkbench.__version__},
        "probe_options": ProbeOptions().to_dict(),
        "tolerance_abs_s": 1e-4 if dtype == torch.float32 else 0.05,  # the largest |ΔS| of a reference route
        "reps": reps,
    }
    report["models"] = {}
    for family in TEXT_SHAPES:
        report["models"][family] = check_text_model(family, size, device, dtype, reps)
        _free()
    report["llava"] = check_llava(size, device, dtype, workdir)
    within = [
        model[route]["abs_s_diff"] <= report["tolerance_abs_s"]
        for model in report["models"].values()
        for route in ("chunked", "eager")
    ]
    finite = [math.isfinite(model["probe"]["sink_strength"]) for model in report["models"].values()]
    verification = report["llava"]["verification"] or {}
    report["passed"] = all(within) and all(finite) and bool(verification.get("passed"))
    report["total_s"] = time.perf_counter() - started
    return report


def main(argv: list[str] | None = None) -> int:
    """Print the report as one JSON line; exit 1 when a check failed."""
    parser = CommandParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--tiny", action="store_true", help="tiny shapes, seconds on a CPU (default: 7B shapes)"
    )
    parser.add_argument("--device", default="cuda", help="torch device (default: %(default)s)")
    parser.add_argument(
        "--dtype",
        default="bfloat16",
        choices=("bfloat16", "float16", "float32"),
        help="(default: %(default)s)",
    )
    parser.add_argument(
        "--workdir", default=None, help="folder for the LLaVA and its extraction, about 28 GB at 7B "
        "(default: a temporary folder, removed afterwards)",
    )  # fmt: skip
    parser.add_argument(
        "--reps",
        type=int,
        default=REPS,
        help="timed repetitions per route, after one warm-up when > 1 (default: %(default)s)",
    )
    args = parser.parse_args(argv)
    device = torch.device(args.device)
    if device.type == "cuda" and not torch.cuda.is_available():
        parser.error("no CUDA device here; pass --device cpu (with --tiny) to run the check on the CPU")
    from transformers.utils import logging as transformers_logging

    transformers_logging.set_verbosity_error()
    transformers_logging.disable_progress_bar()
    dtype = getattr(torch, args.dtype)
    size = "tiny" if args.tiny else "full"
    with tempfile.TemporaryDirectory(dir=args.workdir) as scratch:
        report = run(size, device, dtype, Path(scratch), max(args.reps, 1))
    print(json.dumps(report))
    return 0 if report["passed"] else 1


if __name__ == "__main__":
    sys.exit(main())
