"""Time a full ``sinkbench site build`` on 10, 100 and 1,000 synthetic entries (target: under 15 s at 1,000).

The entries look like the real board's, so every kind of page and every path of the build is timed: reported pairs
(six tasks, derived IFEval scores, regression counts), measured pairs and backbones (``bench_aggregate.py``'s),
reported backbones, the repository's testbed pair, model facts on every model and, on ``--profiles`` of the measured
entries, a ``sink_profile.json`` (a heatmap); the experiments' committed pages are published as they are. The board
is flushed to disk before its build is timed. Prints the wall time of each build stage (aggregation, generated
pages, MkDocs, what is left of the charts rendered in a second process, publishing) and the CPU time of the whole
build (less noisy on a shared machine), then the time of a fixed pure-Python loop, to compare machines. Run:

    python benchmarks/bench_site.py [--sizes 10 100 1000] [--profiles 0.3] [--repeat 3] [--tmp /dev/shm] [--warm]

Every chart is rendered (an empty chart cache) unless ``--warm``, which times a rebuild of an unchanged board.
"""

from __future__ import annotations

import json
import os
import resource
import shutil
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np
from bench_aggregate import _write, generate

from sinkbench.cli.parser import CommandParser
from sinkbench.leaderboard.project import build_site
from sinkbench.submissions.catalogue import TASKS
from sinkbench.submissions.schema import SCHEMA_VERSION

STAGES = ("aggregate", "pages", "plots", "mkdocs", "publish")
REPOSITORY = Path(__file__).resolve().parents[1]
EXPERIMENTS = REPOSITORY / "experiments"
TESTBED_PAIR = REPOSITORY / "submissions" / "pairs" / "vl-testbed-smollm2-135m-seed0"
#: Model facts of the synthetic models: (family, model type of the LLM, model type of its VLM, QK-norm class).
FAMILIES = (
    ("Qwen3", "qwen3", "qwen3_vl", "per-head"),
    ("Qwen2.5", "qwen2", "qwen2_5_vl", "none"),
    ("Llama 3.1", "llama", "idefics3", "none"),
    ("OLMo 3", "olmo3", "molmo2", "layerwise"),
    ("Mistral", "mistral", "llava_next", "none"),
    ("Gemma 3", "gemma3_text", "llava", "per-head"),
)
SIZES = (0.5, 1.7, 4.0, 8.0, 14.0, 32.0)
CATEGORIES = ("length_constraints", "detectable_format", "keywords", "change_case", "combination", "startend")


def _model(kind: str, index: int, family: tuple[str, str, str, str], reported: bool) -> dict:
    """Model facts as a submitter (or an import of published numbers) records them."""
    name, llm_type, vlm_type, _ = family
    size = SIZES[index % len(SIZES)]
    model = {
        "display_name": f"{name} bench {kind} {index} ({size:g}B)",
        "family": name,
        "model_type": vlm_type if kind == "vlm" else llm_type,
        "license": "Apache-2.0",
    }
    if reported:
        model |= {"params_b": size, "params_source": "model name", "id_mapping": "unverified"}
    return model


def _with_facts(folder: Path, index: int) -> None:
    """Give a measured entry's models their facts, and its results files the weights' parameter count."""
    family = FAMILIES[index % len(FAMILIES)]
    metadata = json.loads((folder / "metadata.json").read_text(encoding="utf-8"))
    metadata["qk_norm"] = family[3]
    for key, kind in (("reference_llm", "llm"), ("vlm", "vlm"), ("model", "llm")):
        if key in metadata:
            metadata[key] |= _model(kind, index, family, reported=False)
    _write(folder / "metadata.json", metadata)
    for results in folder.rglob("results_*.json"):
        data = json.loads(results.read_text(encoding="utf-8"))
        data["config"]["model_num_parameters"] = int(SIZES[index % len(SIZES)] * 1e9)
        data["config"]["model_dtype"] = "torch.bfloat16"
        _write(results, data)


def _reported_pair(root: Path, index: int, rng: np.random.Generator) -> None:
    """A reported pair as the paper's seeded ones: six tasks; for a third of them, the IFEval regression counts and
    the scores derived from them."""
    family = FAMILIES[index // 3 % len(FAMILIES)]
    # What the reference LLM's pairs share: its family, S and own IFEval passes.
    llm = np.random.default_rng(index // 3)
    s = round(float(llm.uniform(-0.5, 2.5)), 2)
    prompts, reference_passes = 541, int(llm.integers(300, 450))
    lost = int(np.clip(rng.normal(60 - 15 * s, 10), 5, 150))
    gained = int(rng.integers(5, 40))
    both_pass = reference_passes - lost
    regressions = {
        "n_prompts": prompts,
        "both_pass": both_pass,
        "lost": lost,
        "gained": gained,
        "both_fail": prompts - both_pass - lost - gained,
        "table": "Table 2",
        "lost_by_category": {name: int(rng.integers(1, min(15, lost) + 1)) for name in CATEGORIES},
    }
    tasks = []
    for task in TASKS:
        item = {"task": task, "delta": round(float(-12 + 5 * s + rng.normal(0, 3)), 1), "table": "Table 6"}
        if task == "ifeval_strict":  # the counts' delta, inside the interval drawn from them
            item["delta"] = round(100 * (gained - lost) / prompts, 1)
        if task == "ifeval_strict" and index % 3 == 0:  # the scores the counts give, as the seeded ones
            reference = round(100 * (both_pass + lost) / prompts, 2)
            vlm = round(100 * (both_pass + gained) / prompts, 2)
            item |= {
                "delta": round(vlm - reference, 1),
                "reference_score": reference,
                "vlm_score": vlm,
                "scores_table": "Table 2 [derived]",
                "derived": ["reference_score", "vlm_score"],
            }
        tasks.append(item)
    # Three VLMs per reference LLM, as on the real board.
    models = {
        "vlm": _reported_model("vlm", index, family),
        "reference_llm": _reported_model("llm", index // 3, family),
    }
    reported = {
        "sink_strength": {"value": s, "table": "Table 5"},
        "tasks": tasks,
        "ifeval_regressions": regressions,
    }
    metadata = _reported_metadata("pair", family, models, reported, vl_recipe="SFT+RL (Table 1)")
    _write(root / "pairs" / f"reported-{index:05d}" / "metadata.json", metadata)


def _reported_backbone(root: Path, index: int, rng: np.random.Generator) -> None:
    family = FAMILIES[index % len(FAMILIES)]
    reported = {
        "sink_strength": {"value": round(float(rng.uniform(-0.5, 2.5)), 2), "table": "Table 14"},
        "scores": [
            {"task": "ifeval_strict", "score": round(float(rng.uniform(40, 80)), 1), "table": "Table 14"}
        ],
    }
    models = {"model": _reported_model("backbone", index, family)}
    metadata = _reported_metadata("backbone", family, models, reported)
    _write(root / "backbones" / f"reported-backbone-{index:05d}" / "metadata.json", metadata)


def _reported_model(kind: str, index: int, family: tuple[str, str, str, str]) -> dict:
    """A reported entry's model ``bench/reported-<kind>-<index>`` (a backbone is an LLM) with its facts."""
    facts = _model("vlm" if kind == "vlm" else "llm", index, family, reported=True)
    return {"id": f"bench/reported-{kind}-{index}", "revision": None, **facts}


def _reported_metadata(kind: str, family: tuple, models: dict, reported: dict, **extra: str) -> dict:
    """The metadata of a reported entry of ``kind`` with its ``models`` and ``reported`` numbers."""
    return {
        "schema_version": SCHEMA_VERSION,
        "kind": kind,
        "provenance": "reported",
        **models,
        "qk_norm": family[3],
        **extra,
        "submitter": "bench",
        "citation": {"source": "Synthetic benchmark entry, arXiv 2609.00746 style."},
        "reported": reported,
    }


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


def board_like(root: Path, count: int, profiles: float, seed: int = 0) -> None:
    """Write ``count`` synthetic entries under ``root``, mixed as the real board is: 40% reported pairs, 25%
    measured pairs, 25% measured backbones, 10% reported backbones, and the repository's testbed pair."""
    rng = np.random.default_rng(seed)
    measured = root / "measured"
    generate(measured, count, seed=seed)  # bench_aggregate's measured pairs and backbones, and more
    pairs = sorted((measured / "pairs").glob("pair-*"))
    backbones = sorted((measured / "backbones").glob("backbone-*"))
    plan = {"reported": int(0.4 * count), "pairs": int(0.25 * count), "backbones": int(0.25 * count)}
    plan["reported_backbones"] = count - sum(plan.values()) - 1
    for kind, folders in (("pairs", pairs[: plan["pairs"]]), ("backbones", backbones[: plan["backbones"]])):
        for folder in folders:
            index = int(folder.name.rsplit("-", 1)[1])
            _with_facts(folder, index)
            shutil.move(str(folder), root / kind / folder.name)
    shutil.rmtree(measured)
    for index in range(plan["reported"]):
        _reported_pair(root, index, rng)
    for index in range(max(plan["reported_backbones"], 0)):
        _reported_backbone(root, index, rng)
    add_profiles(root, profiles, seed)
    shutil.copytree(TESTBED_PAIR, root / "pairs" / TESTBED_PAIR.name)  # with its own profile and S interval


def reference_loop_seconds(repeat: int = 3) -> float:
    """How fast this machine runs plain Python, to compare builds timed on different machines: the median time of
    a loop of ten million additions."""
    timings = []
    for _ in range(repeat):
        started = time.perf_counter()
        total = 0
        for number in range(10_000_000):
            total += number
        timings.append(time.perf_counter() - started)
    return statistics.median(timings)


def _cpu_seconds() -> float:
    """CPU time of this process and its finished children, user + system."""
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def bench(
    count: int, profiles: float, where: Path | None = None, warm: bool = False
) -> tuple[dict[str, float], float, int, int]:
    """Stage wall times and total CPU seconds of one full build over ``count`` synthetic entries (written, with the
    site, under ``where``: the system's temporary folder when None), with the numbers of pages and charts built.
    The build renders every chart (an empty chart cache), or with ``warm`` none (a build before it filled it)."""
    with tempfile.TemporaryDirectory(dir=where) as folder:
        root, cache = Path(folder) / "submissions", Path(folder) / "chart-cache"
        board_like(root, count, profiles)
        if warm:
            build_site(root, Path(folder) / "site", experiments_dir=EXPERIMENTS, chart_cache=cache)
        os.sync()  # the board's files reach the disk now, not while the build is timed
        started = _cpu_seconds()
        report = build_site(root, Path(folder) / "site", experiments_dir=EXPERIMENTS, chart_cache=cache)
        return report.timings, _cpu_seconds() - started, report.pages, report.plots


def main() -> None:
    parser = CommandParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[10, 100, 1000], help="entries per board")
    parser.add_argument(
        "--profiles", type=float, default=0.3, help="fraction of measured entries with a profile"
    )
    parser.add_argument(
        "--repeat", type=int, default=1, help="builds per size; the median and range are printed"
    )
    parser.add_argument(
        "--tmp",
        type=Path,
        help="folder the boards and sites are written under (default: the system's temporary folder); a RAM-backed "
        "one such as /dev/shm times the build without the disk, which on a slow virtual disk adds seconds of "
        "file creation to the MkDocs stage",
    )
    parser.add_argument(
        "--warm",
        action="store_true",
        help="time a rebuild whose charts a first build kept in the chart cache (default: every chart rendered)",
    )
    args = parser.parse_args()
    header = " ".join(f"{stage:>9}" for stage in STAGES)
    print(f"{'entries':>8} {'pages':>6} {'charts':>6} {header} {'wall s':>8} {'CPU s':>8}")
    for count in args.sizes:
        walls = []
        for _ in range(args.repeat):
            timings, cpu, pages, plots = bench(count, args.profiles, args.tmp, args.warm)
            walls.append(timings["total"])
            stages = " ".join(f"{timings.get(stage, 0.0):>9.2f}" for stage in STAGES)
            print(
                f"{count:>8} {pages:>6} {plots:>6} {stages} {timings['total']:>8.2f} {cpu:>8.2f}", flush=True
            )
        if args.repeat > 1:
            print(
                f"{count:>8} entries: median {statistics.median(walls):.2f} s ({min(walls):.2f} to {max(walls):.2f})"
            )
    print(f"load average at the end: {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs")
    print(f"this machine's reference loop (ten million Python additions): {reference_loop_seconds():.2f} s")


if __name__ == "__main__":
    main()
