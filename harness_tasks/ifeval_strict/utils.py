"""Hooks for ``ifeval_strict.yaml``, named after the YAML keys they serve.

Grading and the instruction-level aggregation are lm-eval's own IFEval code (``lm_eval.tasks.ifeval``),
imported, not re-written. It is imported lazily, after :func:`sinkbench.tasks._punkt.ensure_punkt_tab`, because importing
it otherwise tries to download NLTK's ``punkt_tab``.
"""

from __future__ import annotations

import functools
import importlib
from types import ModuleType

from sinkbench.tasks._data import DataSource, data_task, read_records
from sinkbench.tasks._punkt import ensure_punkt_tab

#: google/IFEval on the hub; the original release ``input_data.jsonl`` locally.
SOURCE = DataSource(
    hub_path="google/IFEval",
    hub_name=None,
    split="train",
    local_file="ifeval_input_data.jsonl",
    read_local=read_records,
)


@functools.cache
def lm_eval_ifeval() -> ModuleType:
    """Return ``lm_eval.tasks.ifeval.utils`` with NLTK's ``punkt_tab`` available offline."""
    ensure_punkt_tab()
    return importlib.import_module("lm_eval.tasks.ifeval.utils")


#: The task class the YAML names under ``class:``.
Task = data_task(SOURCE)


def process_results(doc: dict, results: list[str]) -> dict[str, bool | list[bool]]:
    """Grade one response with lm-eval's strict and loose IFEval checkers.

    Returns:
        ``prompt_level_strict_acc`` and ``prompt_level_loose_acc`` (bool: every instruction
        followed) and ``inst_level_strict_acc`` and ``inst_level_loose_acc`` (one bool per
        entry of ``doc["instruction_id_list"]``).
    """
    return lm_eval_ifeval().process_results(doc, results)


def agg_inst_level_acc(items: list[list[bool]]) -> float:
    """lm-eval's IFEval instruction-level accuracy: the share of all instructions followed, every instruction
    weighing the same whatever prompt it belongs to."""
    return lm_eval_ifeval().agg_inst_level_acc(items)
