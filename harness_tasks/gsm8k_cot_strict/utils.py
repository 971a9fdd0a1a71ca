"""Hooks for ``gsm8k_cot_strict.yaml``, named after the YAML keys they serve."""

from __future__ import annotations

from sinkbench.tasks._data import data_task

#: The task class the YAML names under ``class:``: openai/gsm8k (main, test), the release ``test.jsonl`` locally.
Task = data_task(hub_path="openai/gsm8k", hub_name="main", split="test", local_file="gsm8k_test.jsonl")
