"""Time a full ``sinkbench site build`` on 10, 100 and 1,000 synthetic entries (target: under 15 s at 1,000).

The entries are those of ``bench_aggregate.py`` (50% measured pairs, 40% measured backbones, 10% reported
pairs); ``--profiles`` gives that fraction of the measured entries a ``sink_profile.json`` (10 layers x 32
heads), so their pages carry a heatmap. Prints the wall time of each build stage (validation and aggregation, the
generated pages, the charts, then MkDocs itself on every page), and the CPU time of the whole build, which varies
less on a shared machine. Run:

    python benchmarks/bench_site.py [--sizes 10 100 1000] [--profiles 0.1]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import tempfile
from pathlib import Path

import numpy as np
from bench_aggregate import generate

from sinkbench.leaderboard.project import build_site

STAGES = ("aggregate", "pages", "plots", "mkdocs")


def add_profiles(root: Path, fraction: float, seed: int = 0) -> int:
    """Give ``fraction`` of the measured entries under ``root`` a synthetic ``sink_profile.json``."""
    rng = np.random.default_rng(seed)
    results = root.rglob("results_*.json")
    measured = {p.parent.parent if p.parent.name in ("reference", "vlm") else p.parent for p in results}
    chosen = [folder for folder in sorted(measured) if rng.random() < fraction]
    layers = list(range(22, 32))
    for folder in chosen:
        median_g = rng.normal(1.2, 0.8, size=(len(layers), 32)).round(4).tolist()
        profile = {
            "sink_strength": float(np.median(median_g)),
            "layers_probed": layers,
            "profile": {
                "layers": layers,
                "median_g": median_g,
                "layer_median_g": np.median(median_g, axis=1).tolist(),
            },
        }
        (folder / "sink_profile.json").write_text(json.dumps(profile), encoding="utf-8")
    return len(chosen)


def _cpu_seconds() -> float:
    """CPU time of this process and its finished children, user + system."""
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def bench(count: int, profiles: float) -> tuple[dict[str, float], float, int, int]:
    """Stage wall times and total CPU seconds of one full build over ``count`` synthetic entries, with the
    numbers of pages and charts built."""
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder) / "submissions"
        generate(root, count)
        add_profiles(root, profiles)
        started = _cpu_seconds()
        report = build_site(root, Path(folder) / "site")
        return report.timings, _cpu_seconds() - started, report.pages, report.plots


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[10, 100, 1000])
    parser.add_argument(
        "--profiles", type=float, default=0.1, help="fraction of measured entries with a profile"
    )
    args = parser.parse_args()
    header = " ".join(f"{stage:>9}" for stage in STAGES)
    print(f"{'entries':>8} {'pages':>6} {'charts':>6} {header} {'wall s':>8} {'CPU s':>8}")
    for count in args.sizes:
        timings, cpu, pages, plots = bench(count, args.profiles)
        stages = " ".join(f"{timings.get(stage, 0.0):>9.2f}" for stage in STAGES)
        print(f"{count:>8} {pages:>6} {plots:>6} {stages} {timings['total']:>8.2f} {cpu:>8.2f}", flush=True)
    print(f"load average at the end: {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs")


if __name__ == "__main__":
    main()
