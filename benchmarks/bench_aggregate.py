"""Time ``validate`` + ``aggregate`` on 10, 100 and 1,000 synthetic entries (target: under 5 s at 1,000).

Half of the entries are measured pairs (one lm-eval results file per side: S and the strict suite on the
reference, the strict suite on the VLM-LM), 40% measured backbones (S only) and 10% reported pairs.
Deltas follow ``delta = -12 + 5 S + noise`` so the statistics have something to find. Run:

    python benchmarks/bench_aggregate.py [--sizes 10 100 1000]
"""

from __future__ import annotations

import json
import os
import tempfile
import time
from pathlib import Path

import numpy as np

from sinkbench.cli.parser import CommandParser
from sinkbench.submissions import load_submissions
from sinkbench.submissions.catalogue import (
    FORMAT_TASKS,
    SINK_METRIC,
    SINK_SECONDARY_METRICS,
    SINK_TASK,
    TASKS,
)
from sinkbench.submissions.schema import SCHEMA_VERSION
from sinkbench.tables.aggregate import aggregate_submissions

GENERATION = {"until": [], "do_sample": False, "temperature": 0.0, "max_gen_toks": 1280}


def _results(model: str, revision: str, scores: dict[str, float], s: float | None) -> dict:
    """A minimal lm-eval 0.4.x results file holding ``scores`` (lm-eval's units) and optionally S."""
    results = {task: {"alias": task, TASKS[task].metric: value} for task, value in scores.items()}
    configs = {task: {"task": task, "num_fewshot": 0, "generation_kwargs": GENERATION} for task in scores}
    if s is not None:
        secondary = dict.fromkeys(SINK_SECONDARY_METRICS, 0.3)
        results[SINK_TASK] = {"alias": SINK_TASK, SINK_METRIC: s, **secondary, "observations,none": 900}
        configs[SINK_TASK] = {"task": SINK_TASK, "num_fewshot": 0}
    return {
        "results": results,
        "configs": configs,
        "versions": dict.fromkeys(configs, 1.0),
        "n-shot": dict.fromkeys(configs, 0),
        "n-samples": {task: {"original": 100, "effective": 100} for task in configs},
        "config": {
            "model": "hf",
            "model_args": f"pretrained={model}",
            "limit": None,
            "model_revision": revision,
        },
        "lm_eval_version": "0.4.13",
        "chat_template": "{{ messages }}",
        "fewshot_as_multiturn": True,
    }


def _write(path: Path, data: dict) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data), encoding="utf-8")


def _metadata(kind: str, provenance: str, index: int, **extra: object) -> dict:
    base = {
        "schema_version": SCHEMA_VERSION,
        "kind": kind,
        "provenance": provenance,
        "qk_norm": "none",
        "submitter": "bench",
    }
    refs = {"vlm": f"bench/vlm-{index}", "reference_llm": f"bench/llm-{index}"} if kind == "pair" else {}
    refs = refs or {"model": f"bench/backbone-{index}"}
    models = {key: {"id": value, "revision": f"rev{index}"} for key, value in refs.items()}
    return {**base, **models, **({"vl_recipe": "SFT"} if kind == "pair" else {}), **extra}


def _units(points: dict[str, float]) -> dict[str, float]:
    """Points (0-100) to the units lm-eval reports: fractions for accuracies, points for EQ-Bench."""
    return {task: value / TASKS[task].scale for task, value in points.items()}


def _measured_pair(root: Path, index: int, rng: np.random.Generator) -> None:
    folder = root / "pairs" / f"pair-{index:05d}"
    s = float(rng.uniform(-1, 3))
    reference = {task: float(rng.uniform(40, 80)) for task in FORMAT_TASKS}
    vlm = {
        task: float(np.clip(value - 12 + 5 * s + rng.normal(0, 2), 0, 100))
        for task, value in reference.items()
    }
    _write(folder / "metadata.json", _metadata("pair", "measured", index))
    _write(
        folder / "reference" / "results_bench.json",
        _results(f"bench/llm-{index}", f"rev{index}", _units(reference), s),
    )
    _write(
        folder / "vlm" / "results_bench.json",
        _results(f"bench/vlm-{index}", f"rev{index}", _units(vlm), None),
    )


def _backbone(root: Path, index: int, rng: np.random.Generator) -> None:
    folder = root / "backbones" / f"backbone-{index:05d}"
    _write(folder / "metadata.json", _metadata("backbone", "measured", index))
    results = _results(f"bench/backbone-{index}", f"rev{index}", {}, float(rng.uniform(-1, 3)))
    _write(folder / "results_bench.json", results)


def _reported_pair(root: Path, index: int, rng: np.random.Generator) -> None:
    s = float(rng.uniform(-1, 3))
    reported = {
        "sink_strength": {"value": round(s, 2), "table": "Table 1"},
        "tasks": [
            {"task": "ifeval_strict", "delta": round(-12 + 5 * s + rng.normal(0, 2), 1), "table": "Table 2"}
        ],
    }
    citation = {"source": "Synthetic benchmark entry."}
    metadata = _metadata("pair", "reported", index, citation=citation, reported=reported)
    metadata["vlm"]["revision"] = metadata["reference_llm"]["revision"] = None
    _write(root / "pairs" / f"reported-{index:05d}" / "metadata.json", metadata)


def generate(root: Path, count: int, seed: int = 0) -> None:
    """Write ``count`` synthetic entries under ``root`` (50% measured pairs, 40% backbones, 10% reported)."""
    rng = np.random.default_rng(seed)
    makers = (*[_measured_pair] * 5, *[_backbone] * 4, _reported_pair)
    for index in range(count):
        makers[index % len(makers)](root, index, rng)


def bench(count: int) -> dict[str, float]:
    """Wall and CPU seconds to validate, then aggregate (which validates again), ``count`` entries."""
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder) / "submissions"
        generate(root, count)
        wall, cpu = time.perf_counter(), time.process_time()
        loaded = load_submissions(root)
        validate_wall = time.perf_counter() - wall
        if loaded.problems:
            raise SystemExit(
                "synthetic entries do not validate:\n" + "\n".join(map(str, loaded.problems[:5]))
            )
        aggregate_submissions(root, Path(folder) / "out")
        return {
            "validate": validate_wall,
            "aggregate": time.perf_counter() - wall - validate_wall,
            "total": time.perf_counter() - wall,
            "cpu": time.process_time() - cpu,
        }


def main() -> None:
    parser = CommandParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[10, 100, 1000], help="entries per board")
    args = parser.parse_args()
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs (wall times grow with load)")
    print(
        f"{'entries':>8} {'validate s':>11} {'aggregate s':>12} {'total s':>8} {'cpu s':>6} {'ms/entry':>9}"
    )
    for count in args.sizes:
        t = bench(count)
        print(
            f"{count:>8} {t['validate']:>11.3f} {t['aggregate']:>12.3f} {t['total']:>8.3f} {t['cpu']:>6.2f} "
            f"{1000 * t['total'] / count:>9.2f}"
        )


if __name__ == "__main__":
    main()
