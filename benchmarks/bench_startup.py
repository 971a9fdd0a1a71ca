"""Time what sinkbench's lm-eval hook adds to every Python start-up (target: under 5 ms).

Starts ``python -c CODE`` (default ``pass``) in fresh processes, alternating the hook on and off in each
round. Off is ``SINKBENCH_LM_EVAL_AUTOLOAD=0``, so the installed ``sinkbench-lm-eval.pth`` stops at its first
comparison; on, it also defines its finder and puts it on ``sys.meta_path``. Prints the median and range of
each, of the paired differences, and of the ``.pth`` line itself executed in this process. Run:

    python benchmarks/bench_startup.py [--runs 40] [--code "import json"]
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import time

from sinkbench.cli.parser import CommandParser
from sinkbench.harness.plugin import AUTOLOAD_ENV, PTH_LINE

FINDER = "SinkbenchLmEvalFinder"


def start_up_seconds(code: str, hook: bool) -> float:
    """Wall time of one ``python -c code`` with the hook on or off."""
    env = {key: value for key, value in os.environ.items() if key != AUTOLOAD_ENV}
    if not hook:
        env[AUTOLOAD_ENV] = "0"
    started = time.perf_counter()
    subprocess.run([sys.executable, "-c", code], env=env, check=True)
    return time.perf_counter() - started


def hook_is_installed() -> bool:
    """Whether a fresh interpreter of this environment puts the hook's finder on ``sys.meta_path``."""
    code = f"import sys; print(any(getattr(f, '__name__', '') == {FINDER!r} for f in sys.meta_path))"
    env = {key: value for key, value in os.environ.items() if key != AUTOLOAD_ENV}
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    return done.stdout.strip() == "True"


def pth_line_seconds(repeats: int) -> list[float]:
    """Wall times of executing the ``.pth`` line in this process, each time with no finder installed before."""
    times = []
    for _ in range(repeats):
        sys.meta_path[:] = [f for f in sys.meta_path if getattr(f, "__name__", "") != FINDER]
        started = time.perf_counter()
        exec(PTH_LINE)
        times.append(time.perf_counter() - started)
    return times


def summary(label: str, seconds: list[float]) -> str:
    """``label: median X ms (range A to B ms, n=N)``."""
    ms = [value * 1000 for value in seconds]
    return f"{label}: median {statistics.median(ms):.3f} ms (range {min(ms):.3f} to {max(ms):.3f} ms, n={len(ms)})"


def main() -> int:
    """Run the benchmark and print one line per measurement; exit 1 when the hook is not installed."""
    parser = CommandParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=40, help="Rounds (one start-up each way). Default: 40.")
    parser.add_argument("--code", default="pass", help="What each interpreter runs. Default: pass.")
    args = parser.parse_args()
    if not hook_is_installed():
        print("error: the hook is not installed here; run `pip install -e .` first", file=sys.stderr)
        return 1
    off, on = [], []
    for round_ in range(args.runs):
        for hook in (True, False) if round_ % 2 else (False, True):
            (on if hook else off).append(start_up_seconds(args.code, hook))
    print(f"python -c {args.code!r}, {sys.executable}")
    print(summary("hook off (baseline)", off))
    print(summary("hook on", on))
    print(summary("added (paired on - off)", [a - b for a, b in zip(on, off, strict=True)]))
    print(summary(".pth line alone, in-process", pth_line_seconds(200)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
