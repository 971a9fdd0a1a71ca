"""Hooks for ``ifeval_strict.yaml``: grading and aggregation are lm-eval's IFEval code, imported (lazily, after
:func:`sinkbench.tasks._punkt.ensure_punkt_tab`, as importing it otherwise downloads NLTK's ``punkt_tab``)."""

from __future__ import annotations

import functools
import importlib
from types import ModuleType

from sinkbench.tasks._data import data_task
from sinkbench.tasks._punkt import ensure_punkt_tab

#: The task class the YAML names under ``class:``: google/IFEval, the release ``input_data.jsonl`` locally.
Task = data_task(hub_path="google/IFEval", split="train", local_file="ifeval_input_data.jsonl")


@functools.cache
def lm_eval_ifeval() -> ModuleType:
    """Return ``lm_eval.tasks.ifeval.utils`` with NLTK's ``punkt_tab`` available offline."""
    ensure_punkt_tab()
    return importlib.import_module("lm_eval.tasks.ifeval.utils")


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
