"""Hooks for ``gsm8k_cot_strict.yaml``, named after the YAML keys they serve."""

from __future__ import annotations

from typing import TYPE_CHECKING

from harness_tasks._data import DataSource, load_task_data, read_jsonl

if TYPE_CHECKING:
    import datasets

#: openai/gsm8k (main, test) on the hub; the original release ``test.jsonl`` locally.
SOURCE = DataSource(
    hub_path="openai/gsm8k",
    hub_name="main",
    split="test",
    local_file="gsm8k_test.jsonl",
    read_local=read_jsonl,
)


def custom_dataset(**_metadata: object) -> datasets.DatasetDict:
    """Load the 1,319 GSM8K test problems (hub, or ``SINKBENCH_DATA_DIR``)."""
    return load_task_data(SOURCE)
