"""IFEval prompts a short answer can satisfy, graded by lm-eval's own IFEval checkers.

The testbed evaluates many fine-tuned models on a 2-core CPU, so it caps every answer at a few hundred tokens.
A prompt that asks for 300 words, 20 sentences or 6 paragraphs then fails by construction, in every arm, and
only dilutes the score. :func:`short_answer_prompts` keeps the prompts whose every instruction a short answer
can meet (the bounds are :data:`SHORT_ANSWER_BOUNDS`) and whose text asks for no long length; the selection is
a pure function of the IFEval release file, so every run evaluates the same prompts.

Grading is ``sinkbench.tasks.ifeval_strict.utils.process_results`` (lm-eval's strict and loose checkers), so the
in-process scores are the ones ``lm_eval --tasks ifeval_strict`` gives for the same answers.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

#: Per instruction id: (kwarg holding the count, kwarg holding the relation or None, largest count kept).
#: "less than" relations always fit a short answer; so do the instructions not listed here.
SHORT_ANSWER_BOUNDS: dict[str, tuple[str, str | None, int]] = {
    "length_constraints:number_words": ("num_words", "relation", 50),
    "length_constraints:number_sentences": ("num_sentences", "relation", 5),
    "length_constraints:number_paragraphs": ("num_paragraphs", None, 3),
    "length_constraints:nth_paragraph_first_word": ("num_paragraphs", None, 3),
    "detectable_format:multiple_sections": ("num_sections", None, 3),
    "detectable_format:number_bullet_lists": ("num_bullets", None, 5),
    "detectable_format:number_highlighted_sections": ("num_highlights", None, 5),
    "detectable_content:number_placeholders": ("num_placeholders", None, 5),
    "keywords:frequency": ("frequency", "relation", 3),
    "keywords:letter_frequency": ("let_frequency", "let_relation", 10),
    "change_case:capital_word_frequency": ("capital_frequency", "capital_relation", 5),
}
#: A prompt whose text asks for this many words or more (e.g. "a 300-word essay") is dropped too.
MAX_WORDS_IN_TEXT = 100
_WORD_COUNT = re.compile(r"(\d[\d,]*)\s*\+?\s*-?\s*words?\b", re.IGNORECASE)


def fits_short_answer(doc: dict[str, Any]) -> bool:
    """Whether every instruction of an IFEval ``doc`` can be met by a short answer (see the module docstring)."""
    for instruction, kwargs in zip(doc["instruction_id_list"], doc["kwargs"], strict=True):
        bound = SHORT_ANSWER_BOUNDS.get(instruction)
        if bound is None:
            continue
        count_key, relation_key, largest = bound
        count = (kwargs or {}).get(count_key)
        relation = (kwargs or {}).get(relation_key) if relation_key else "at least"
        if count is not None and relation != "less than" and count > largest:
            return False
    counts = [int(match.replace(",", "")) for match in _WORD_COUNT.findall(doc["prompt"])]
    return all(count < MAX_WORDS_IN_TEXT for count in counts)


def short_answer_prompts(docs: Sequence[dict[str, Any]]) -> list[int]:
    """Indices (in file order) of the ``docs`` that :func:`fits_short_answer`."""
    return [index for index, doc in enumerate(docs) if fits_short_answer(doc)]


@dataclass(frozen=True)
class IfevalScores:
    """Prompt- and instruction-level accuracy, strict and loose, with the per-prompt strict outcomes."""

    prompt_strict: float
    prompt_loose: float
    inst_strict: float
    inst_loose: float
    prompts: int
    instructions: int
    strict_by_prompt: tuple[bool, ...]
    inst_strict_by_prompt: tuple[tuple[bool, ...], ...]
    answer_tokens: tuple[int, ...]

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready; the per-prompt outcomes as 0/1 so paired analyses can read them back."""
        return {
            "prompt_strict": self.prompt_strict,
            "prompt_loose": self.prompt_loose,
            "inst_strict": self.inst_strict,
            "inst_loose": self.inst_loose,
            "prompts": self.prompts,
            "instructions": self.instructions,
            "strict_by_prompt": [int(ok) for ok in self.strict_by_prompt],
            "inst_strict_by_prompt": [[int(ok) for ok in row] for row in self.inst_strict_by_prompt],
            "answer_tokens": list(self.answer_tokens),
        }


def grade(
    docs: Sequence[dict[str, Any]], answers: Sequence[str], answer_tokens: Sequence[int]
) -> IfevalScores:
    """Grade ``answers`` (aligned with ``docs``) with lm-eval's strict and loose IFEval checkers."""
    from sinkbench.tasks.ifeval_strict.utils import process_results

    graded = [process_results(doc, [answer]) for doc, answer in zip(docs, answers, strict=True)]
    strict = [ok for g in graded for ok in g["inst_level_strict_acc"]]
    loose = [ok for g in graded for ok in g["inst_level_loose_acc"]]
    return IfevalScores(
        prompt_strict=float(np.mean([g["prompt_level_strict_acc"] for g in graded])),
        prompt_loose=float(np.mean([g["prompt_level_loose_acc"] for g in graded])),
        inst_strict=float(np.mean(strict)),
        inst_loose=float(np.mean(loose)),
        prompts=len(graded),
        instructions=len(strict),
        strict_by_prompt=tuple(bool(g["prompt_level_strict_acc"]) for g in graded),
        inst_strict_by_prompt=tuple(tuple(bool(ok) for ok in g["inst_level_strict_acc"]) for g in graded),
        answer_tokens=tuple(answer_tokens),
    )
