"""Hooks for ``gsm8k_cot_strict.yaml``, named after the YAML keys they serve."""

from __future__ import annotations

from sinkbench.tasks._data import DataSource, data_task, read_records

#: openai/gsm8k (main, test) on the hub; the original release ``test.jsonl`` locally.
SOURCE = DataSource(
    hub_path="openai/gsm8k",
    hub_name="main",
    split="test",
    local_file="gsm8k_test.jsonl",
    read_local=read_records,
)


#: The task class the YAML names under ``class:``.
Task = data_task(SOURCE)
