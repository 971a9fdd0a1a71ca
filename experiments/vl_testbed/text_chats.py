"""Text-only stage-2 chats for the paper's text-only control (F.1): the same recipe without images.

The chats come from GSM8K's training split (``openai/gsm8k``, or ``gsm8k_train.jsonl`` under ``SINKBENCH_DATA_DIR``):
a problem as the user turn and its worked solution as the reply, calculator annotations removed and the final
``#### 72`` written as a sentence. GSM8K's test split, which ``gsm8k_cot_strict`` evaluates, is never used.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

import numpy as np

_CALCULATOR = re.compile(r"<<[^>]*>>")
_FINAL = re.compile(r"\n?####\s*(.+)\s*$")


def gsm8k_train_source() -> Any:
    """The :class:`~sinkbench.tasks._data.DataSource` of GSM8K's training split."""
    from sinkbench.tasks._data import DataSource, read_records

    return DataSource(
        hub_path="openai/gsm8k",
        hub_name="main",
        split="train",
        local_file="gsm8k_train.jsonl",
        read_local=read_records,
    )


def solution_text(answer: str) -> str:
    """A GSM8K ``answer`` as an assistant reply: annotations removed, ``#### 72`` as "The answer is 72."

    Raises:
        ValueError: the answer has no final ``####`` line (not a GSM8K solution).
    """
    final = _FINAL.search(answer)
    if final is None:
        raise ValueError(f"a GSM8K answer ends with '#### <number>'; this one does not: {answer[-60:]!r}")
    steps = _CALCULATOR.sub("", answer[: final.start()]).strip()
    return f"{steps}\nThe answer is {final.group(1).strip()}."


def problem_turns(problem: dict[str, str]) -> list[dict[str, str]]:
    """One GSM8K problem as a user turn and its solution as the assistant turn."""
    return [
        {"role": "user", "content": problem["question"].strip()},
        {"role": "assistant", "content": solution_text(problem["answer"])},
    ]


def text_conversations(
    problems: Sequence[dict[str, str]], count: int, turns: int, rng: np.random.Generator
) -> list[list[dict[str, str]]]:
    """``count`` chats of ``turns`` problem-solution turns each, problems drawn without replacement by ``rng``.

    Raises:
        ValueError: fewer problems than ``count * turns``.
    """
    needed = count * turns
    if len(problems) < needed:
        raise ValueError(
            f"{needed} GSM8K problems are needed ({count} chats of {turns}), only {len(problems)} given"
        )
    order = rng.permutation(len(problems))[:needed]
    return [
        [turn for index in order[start : start + turns] for turn in problem_turns(problems[int(index)])]
        for start in range(0, needed, turns)
    ]
