"""S of the embedded models on each packaged calibration set, with its bootstrap interval over prompts.

How much of S is the prompt set? The interval says how far S moves under another draw of prompts of the same
kind; the gap between the two sets says how far it moves under another, independently written set. Run:

    python -m experiments.prompt_sets.run [--models smollm2-135m-instruct gemma3-270m] [--out FILE.json]

Prints one row per model and set; ``--out`` also writes the rows as JSON (float32, CPU, default options).
"""

from __future__ import annotations

import json
import time
from pathlib import Path

from sinkbench.cli.parser import CommandParser
from sinkbench.models import EMBEDDED_MODELS, load_model
from sinkbench.provenance import report_header
from sinkbench.sink.options import IntervalOptions, ProbeOptions
from sinkbench.sink.prompts import PACKAGED_SETS, load_calibration


def measure_sets(model_name: str) -> list[dict]:
    """S and its interval on every packaged set for one model (loaded once)."""
    from sinkbench.sink.observe import measure  # torch comes in here, not at import: --help stays instant
    from sinkbench.sink.uncertainty import sink_strength_interval

    loaded = load_model(model_name)
    rows = []
    for name in PACKAGED_SETS:
        calibration = load_calibration(name)
        started = time.perf_counter()
        summary, observations = measure(loaded.model, loaded.tokenizer, calibration.prompts, ProbeOptions())
        probe_seconds = time.perf_counter() - started
        started = time.perf_counter()
        low, high = sink_strength_interval(observations, IntervalOptions())
        rows.append(
            {
                "model": model_name,
                "weights_sha256": loaded.info.sha256,
                "calibration": calibration.to_dict(),
                "sink_strength": summary.sink_strength,
                "interval_95": [low, high],
                "observations": summary.observations,
                "probe_seconds": round(probe_seconds, 2),
                "interval_seconds": round(time.perf_counter() - started, 3),
            }
        )
    return rows


def main() -> None:
    parser = CommandParser(prog=f"python -m {__spec__.name}", description=__doc__.splitlines()[0])
    parser.add_argument(
        "--models",
        nargs="+",
        default=list(EMBEDDED_MODELS),
        metavar="MODEL",
        help="models to measure: embedded names, local folders, .gguf files or hub ids (default: the embedded "
        f"{', '.join(EMBEDDED_MODELS)})",
    )
    parser.add_argument(
        "--out", type=Path, default=None, help="also write the rows as JSON (default: print only)"
    )
    args = parser.parse_args()
    rows = [row for model in args.models for row in measure_sets(model)]
    print(f"{'model':<24} {'set':<4} {'S':>8} {'95% interval over prompts':>28} {'probe s':>8} {'CI s':>6}")
    for row in rows:
        low, high = row["interval_95"]
        print(
            f"{row['model']:<24} {row['calibration']['set']:<4} {row['sink_strength']:>+8.3f} "
            f"{f'[{low:+.3f}, {high:+.3f}]':>28} {row['probe_seconds']:>8.2f} {row['interval_seconds']:>6.3f}"
        )
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        payload = {
            **report_header(),
            "device": "cpu",
            "dtype": "float32",
            "options": ProbeOptions().to_dict(),
            "rows": rows,
        }
        args.out.write_text(json.dumps(payload, indent=2) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
