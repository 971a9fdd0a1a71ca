"""What the training monitor costs: one measurement against a plain forward over the same calibration prompts.

On SmolLM2-135M-Instruct (the embedded default, float32, CPU), the 15 packaged calibration prompts in the
monitor's batches (8 prompts, right-padded, chat template):

* ``forward``: the model's own forward (decoder and LM head, SDPA, inference mode), as in a training step;
* ``backbone``: the decoder stack alone (no LM head), the strictest floor: the probe runs only this;
* ``measure``: ``SinkMonitor.measure`` on the model in train mode (eval switch, probe, summary, restoring every
  mode and random state).

Each repetition times the three back to back, so that machine noise hits them alike; the result is the ratio
measure/forward (and measure/backbone), median and range. A step that does not measure runs
``SinkStrengthCallback.on_step_end`` up to one modulo; its time is the median of 10,000 calls.

Usage: ``python benchmarks/bench_monitor.py [--reps N]`` (N >= 3, default 5).
"""

from __future__ import annotations

import statistics
import tempfile
import time

import torch

from sinkbench.cli.parser import CommandParser
from sinkbench.models import load_model
from sinkbench.monitor import SinkMonitor, SinkStrengthCallback
from sinkbench.sink.observe import encode_prompts
from sinkbench.sink.options import ProbeOptions
from sinkbench.sink.prompts import load_prompts


def calibration_batches(
    tokenizer, batch_size: int, prompts: list[str] | None = None
) -> list[tuple[torch.Tensor, torch.Tensor]]:
    """The calibration prompts (default: the packaged set), encoded as the monitor encodes them, in right-padded
    batches of token ids and attention masks."""
    encoded = encode_prompts(tokenizer, prompts or load_prompts())
    batches = []
    for start in range(0, len(encoded), batch_size):
        chunk = encoded[start : start + batch_size]
        width = max(map(len, chunk))
        ids = torch.tensor([row + [0] * (width - len(row)) for row in chunk])
        mask = torch.tensor([[1] * len(row) + [0] * (width - len(row)) for row in chunk])
        batches.append((ids, mask))
    return batches


def _timed(function) -> float:
    started = time.perf_counter()
    function()
    return time.perf_counter() - started


def forward(module: torch.nn.Module, batches: list) -> None:
    """The module's plain forward over ``batches`` (inference mode, no cache)."""
    with torch.inference_mode():
        for ids, mask in batches:
            module(input_ids=ids, attention_mask=mask, use_cache=False)


def _idle_step_seconds(model: torch.nn.Module, tokenizer) -> float:
    """Median time of ``on_step_end`` on a step that does not measure."""
    from transformers import Trainer, TrainerControl, TrainerState, TrainingArguments

    with tempfile.TemporaryDirectory() as scratch:
        trainer = Trainer(model=model, args=TrainingArguments(output_dir=scratch, report_to=[], use_cpu=True))
    callback = SinkStrengthCallback(trainer, every_n_steps=100, tokenizer=tokenizer)
    state, control = TrainerState(global_step=1), TrainerControl()
    times = [_timed(lambda: callback.on_step_end(trainer.args, state, control)) for _ in range(10_000)]
    return statistics.median(times)


def main() -> None:
    """Print the per-repetition times and the ratios' median and range."""
    parser = CommandParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=5, help="timed repetitions, >= 3 (default: %(default)s)")
    args = parser.parse_args()
    if args.reps < 3:
        parser.error("--reps must be at least 3")
    loaded = load_model()
    model, tokenizer = loaded.model, loaded.tokenizer
    batches = calibration_batches(tokenizer, ProbeOptions().batch_size)
    monitor = SinkMonitor(model.train(), tokenizer)
    routes = {
        "forward": lambda: forward(model, batches),
        "backbone": lambda: forward(model.model, batches),
        "measure": lambda: monitor.measure(0),
    }
    for route in routes.values():  # warm-up
        route()
    rows = []
    for rep in range(args.reps):
        row = {name: _timed(route) for name, route in routes.items()}
        rows.append(row)
        print(f"rep {rep + 1}: " + "  ".join(f"{name} {seconds:.3f} s" for name, seconds in row.items()))
    for floor in ("forward", "backbone"):
        ratios = [row["measure"] / row[floor] for row in rows]
        print(
            f"measure/{floor}: median {statistics.median(ratios):.2f} "
            f"(range {min(ratios):.2f}-{max(ratios):.2f}, {args.reps} reps)"
        )
    print(f"non-measuring step: on_step_end {_idle_step_seconds(model, tokenizer) * 1e6:.2f} us (median)")
    tokens = sum(int(mask.sum()) for _, mask in batches)
    print(f"torch threads: {torch.get_num_threads()}; {len(load_prompts())} prompts, {tokens} tokens")


if __name__ == "__main__":
    main()
