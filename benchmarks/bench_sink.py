"""Time and memory of the Sink Strength probe against its floor and the naive route.

Routes, on SmolLM2-135M-Instruct (embedded default, float32, CPU), one prompt of N tokens:

* ``forward``: the decoder stack with SDPA, no statistics (the floor: the probe cannot beat it);
* ``probe``: ``sinkbench.sink.observe.observe_tokens`` plus the summary (what ``sinkbench screen`` runs);
* ``naive``: eager attention with ``output_attentions=True`` plus S from the materialised probabilities
  (``sinkbench.sink.naive``).

Each (route, length) runs in a fresh process. Memory is the peak resident set *above* the loaded model (the
kernel's high-water mark is reset after loading, ``/proc/self/clear_refs``); time is the median over repetitions
after one warm-up. Ratios, not seconds, are the result: the machines are noisy. The last line is the 2,048-token
summary: ``probe/forward=R1 naive/probe=R2 naive_mem/probe_mem=R3``.

Usage: ``python benchmarks/bench_sink.py [--quick] [--reps N]``.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

from sinkbench.cli.parser import CommandParser

ROUTES = ("forward", "probe", "naive")
_MEMORY_FLOOR_MIB = 1.0


def _rss_kib(field: str) -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    raise RuntimeError(f"{field} not found in /proc/self/status")


def _tokens(tokenizer, length: int) -> list[int]:
    """Calibration prompts, concatenated and repeated to exactly ``length`` tokens."""
    from sinkbench.sink.prompts import load_prompts

    text = " ".join(load_prompts())
    ids = tokenizer(text).input_ids
    return (ids * (length // len(ids) + 1))[:length]


def _route(name: str, model, ids: list[int]):
    import torch

    from sinkbench.sink.naive import naive_observations_tokens
    from sinkbench.sink.observe import observe_tokens
    from sinkbench.sink.options import ProbeOptions
    from sinkbench.sink.strength import summarize

    options = ProbeOptions(batch_size=1)
    if name == "forward":
        with torch.inference_mode():
            return lambda: model.model(input_ids=torch.tensor([ids]), use_cache=False)
    if name == "probe":
        return lambda: summarize(observe_tokens(model, [ids], options))
    return lambda: summarize(naive_observations_tokens(model, [ids], options))


def worker(route: str, length: int, reps: int) -> dict:
    """Run one route in this (fresh) process and return its timings and peak memory."""
    import torch

    from sinkbench.models import load_model

    loaded = load_model(None)
    ids = _tokens(loaded.tokenizer, length)
    run = _route(route, loaded.model, ids)
    with torch.inference_mode():
        run()  # warm-up
        Path("/proc/self/clear_refs").write_text("5")  # reset the peak RSS to the current RSS
        base = _rss_kib("VmRSS")
        times = []
        for _ in range(reps):
            started = time.perf_counter()
            run()
            times.append(time.perf_counter() - started)
    return {
        "route": route,
        "tokens": length,
        "seconds": statistics.median(times),
        "peak_mib": (_rss_kib("VmHWM") - base) / 1024,
    }


def _spawn(route: str, length: int, reps: int) -> dict:
    command = [sys.executable, __file__, "--worker", route, "--tokens", str(length), "--reps", str(reps)]
    done = subprocess.run(command, capture_output=True, text=True, check=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = CommandParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="one repetition at 2,048 tokens only")
    parser.add_argument("--reps", type=int, default=3, help="timed repetitions per route (default 3)")
    parser.add_argument("--worker", choices=ROUTES, help=argparse.SUPPRESS)
    parser.add_argument("--tokens", type=int, default=2048, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        print(json.dumps(worker(args.worker, args.tokens, args.reps)))
        return
    reps, lengths = (1, [2048]) if args.quick else (args.reps, [512, 2048])
    from sinkbench.models import load_model

    load_model(None)  # build the dequantized cache once, outside the timed workers
    summary = ""
    for length in lengths:
        rows = {route: _spawn(route, length, reps) for route in ROUTES}
        for row in rows.values():
            print(
                f"{length:>5} tokens  {row['route']:<8} {row['seconds']:8.3f} s  peak +{row['peak_mib']:8.1f} MiB"
            )
        forward, probe, naive = (rows[r] for r in ROUTES)
        # Below 1 MiB the resident-set peak is page-cache noise (it can even read negative): divide by 1 MiB
        # then and say the ratio is a lower bound.
        memory = "=" if probe["peak_mib"] >= _MEMORY_FLOOR_MIB else ">="
        summary = (
            f"probe/forward={probe['seconds'] / forward['seconds']:.2f} "
            f"naive/probe={naive['seconds'] / probe['seconds']:.2f} "
            f"naive_mem/probe_mem{memory}{naive['peak_mib'] / max(probe['peak_mib'], _MEMORY_FLOOR_MIB):.2f}"
        )
        print(f"{length:>5} tokens  {summary}")
    print(summary)


if __name__ == "__main__":
    main()
