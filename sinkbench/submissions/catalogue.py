"""The task catalogue: which lm-eval tasks an entry may report, their headline metrics and labels, the
IFEval instruction categories, and which folder holds which kind of entry.

Everything downstream (the rules, the tables, the leaderboard) reads tasks from here; Sink Strength's own
metric names come from :mod:`sinkbench.sink.metrics`.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass
from typing import Literal

from sinkbench.sink.metrics import SECONDARY_METRICS, SINK_STRENGTH
from sinkbench.sink.metrics import SINK_TASK as SINK_TASK  # re-exported: the catalogue names every task

#: S's metric key in a results file, and the secondary metrics shown beside it.
SINK_METRIC = SINK_STRENGTH.results_key
SINK_SECONDARY_METRICS = tuple(metric.results_key for metric in SECONDARY_METRICS)

#: IFEval instruction categories (the id prefix before ``:``), in the order of the paper's Table 7.
IFEVAL_TASK = "ifeval_strict"
IFEVAL_CATEGORIES = (
    "length_constraints",
    "detectable_format",
    "keywords",
    "change_case",
    "combination",
    "startend",
    "language",
    "punctuation",
    "detectable_content",
)

#: The folder of each entry kind under the submissions root, and back.
FOLDER_OF_KIND: dict[str, str] = {"pair": "pairs", "backbone": "backbones"}
KIND_OF_FOLDER: dict[str, str] = {folder: kind for kind, folder in FOLDER_OF_KIND.items()}


@dataclass(frozen=True)
class TaskSpec:
    """A task an entry may report: its headline metric key and how to turn it into points."""

    name: str
    metric: str
    scale: float
    family: Literal["format", "control"]
    label: str


#: Tasks an entry may report, in display order. ``scale`` turns lm-eval's value into points (0-100).
TASKS: dict[str, TaskSpec] = {
    spec.name: spec
    for spec in (
        TaskSpec(IFEVAL_TASK, "prompt_level_strict_acc,none", 100.0, "format", "IFEval"),
        TaskSpec("eq_bench_strict", "eqbench,none", 1.0, "format", "EQ-Bench"),
        TaskSpec("gsm8k_cot_strict", "exact_match,flexible-extract", 100.0, "format", "GSM8K-CoT"),
        TaskSpec("gpqa_diamond_cot_strict", "exact_match,flexible-extract", 100.0, "format", "GPQA-D-CoT"),
        TaskSpec("mmlu", "acc,none", 100.0, "control", "MMLU"),
        TaskSpec("boolq", "acc,none", 100.0, "control", "BoolQ"),
    )
}
#: The strict-format suite: required on both sides of a measured pair.
FORMAT_TASKS = tuple(name for name, spec in TASKS.items() if spec.family == "format")


def known_task(name: str) -> str:
    """Return ``name`` if it is a registered task, else raise with the closest names."""
    if name in TASKS:
        return name
    close = [task for task in TASKS if name and name in task] or difflib.get_close_matches(name, TASKS, n=2)
    hint = f" Did you mean {' or '.join(repr(c) for c in close)}?" if close else ""
    raise ValueError(f"unknown task {name!r}.{hint} Available: {', '.join(TASKS)}")
