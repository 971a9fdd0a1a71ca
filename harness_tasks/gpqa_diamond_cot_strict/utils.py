"""Hooks for ``gpqa_diamond_cot_strict.yaml``. Unlike lm-eval's GPQA tasks (the global ``random`` state), the
option order is a pure function of the question's ``Record ID``: every model sees the same letters on every run."""

from __future__ import annotations

import csv
import random
from pathlib import Path
from typing import TYPE_CHECKING

from lm_eval.tasks.gpqa.cot_zeroshot.utils import preprocess

from sinkbench.tasks._data import data_task

if TYPE_CHECKING:
    import datasets

#: Columns of the GPQA release (and hub) rows that the task reads.
COLUMNS = (
    "Record ID",
    "Question",
    "Correct Answer",
    "Incorrect Answer 1",
    "Incorrect Answer 2",
    "Incorrect Answer 3",
)
LETTERS = "ABCD"


def read_release_csv(path: Path) -> list[dict]:
    """Read the GPQA release CSV (``gpqa_diamond.csv``), checking the columns the task needs."""
    with path.open(encoding="utf-8", newline="") as handle:
        reader = csv.DictReader(handle)
        missing = [column for column in COLUMNS if column not in (reader.fieldnames or [])]
        if missing:
            raise ValueError(
                f"{path}: missing column(s) {missing}; expected the GPQA release CSV with {list(COLUMNS)}"
            )
        return [{column: row[column] for column in COLUMNS} for row in reader]


#: The task class the YAML names under ``class:``: Idavidrein/gpqa (gpqa_diamond, 198 questions) on the hub, the
#: release ``gpqa_diamond.csv`` locally.
Task = data_task(
    hub_path="Idavidrein/gpqa",
    hub_name="gpqa_diamond",
    split="train",
    local_file="gpqa_diamond.csv",
    read_local=read_release_csv,
)


def shuffle_options(doc: dict) -> dict:
    """The four options (cleaned by lm-eval's GPQA ``preprocess``) in a fixed per-question order: ``choices``,
    ``choice1`` to ``choice4``, and the correct letter as ``answer``, ``"(X)"``."""
    correct = preprocess(doc["Correct Answer"])
    options = [preprocess(doc[f"Incorrect Answer {i}"]) for i in (1, 2, 3)] + [correct]
    random.Random(f"sinkbench-gpqa:{doc['Record ID']}").shuffle(options)
    fields = {f"choice{i}": option for i, option in enumerate(options, start=1)}
    return {**fields, "choices": options, "answer": f"({LETTERS[options.index(correct)]})"}


def process_docs(dataset: datasets.Dataset) -> datasets.Dataset:
    """Add the shuffled options and the target letter to every question."""
    return dataset.map(shuffle_options)
