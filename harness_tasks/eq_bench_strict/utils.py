"""Hooks for ``eq_bench_strict.yaml``. Scoring is lm-eval's EQ-Bench v2.1 scorer, imported: the answer must hold
exactly the four reference emotions as ``Emotion: <integer>`` pairs, or it is unparseable and scores 0."""

from __future__ import annotations

import json
from pathlib import Path

from lm_eval.tasks.eq_bench.utils import calculate_score_fullscale

from sinkbench.tasks._data import data_task

#: Keys every ``reference_answer_fullscale`` must carry.
REFERENCE_KEYS = tuple(f"emotion{i}" for i in range(1, 5)) + tuple(f"emotion{i}_score" for i in range(1, 5))


def read_release_json(path: Path) -> list[dict]:
    """Read the EQ-Bench release file (question id -> ``prompt``, ``reference_answer``,
    ``reference_answer_fullscale``) into hub-shaped rows, whose references are text (serialised here)."""
    questions = json.loads(path.read_text(encoding="utf-8"))
    if not isinstance(questions, dict):
        raise ValueError(f"{path}: expected a JSON object mapping question ids to questions")
    rows = []
    for qid, question in questions.items():
        reference = question.get("reference_answer_fullscale") if isinstance(question, dict) else None
        missing = [key for key in REFERENCE_KEYS if not isinstance(reference, dict) or key not in reference]
        if "prompt" not in question or missing:
            raise ValueError(
                f"{path}: question {qid!r} needs 'prompt' and 'reference_answer_fullscale' with {list(REFERENCE_KEYS)}"
            )
        rows.append(
            {
                "id": str(qid),
                "prompt": question["prompt"],
                "reference_answer": json.dumps(question.get("reference_answer", {})),
                "reference_answer_fullscale": json.dumps(reference),
            }
        )
    return rows


#: The task class the YAML names under ``class:``: the EQ-Bench v2 set lm-eval's ``eq_bench`` task uses, the release
#: JSON locally.
Task = data_task(
    hub_path="pbevan11/EQ-Bench",
    split="validation",
    local_file="eq_bench_v2_questions_171.json",
    read_local=read_release_json,
)
SOURCE = Task.SOURCE


def process_results(doc: dict, results: list[str]) -> dict[str, float]:
    """Score one answer with lm-eval's EQ-Bench v2.1 scorer.

    Returns:
        ``eqbench``: the question's score in points (100 is a perfect match, random answers
        average 0, it can go negative); ``percent_parseable``: 100 when the score block
        parsed, else 0 (and ``eqbench`` is 0).
    """
    return calculate_score_fullscale(doc, results)
