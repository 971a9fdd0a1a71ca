"""IFEval prompts a short answer can satisfy, graded by lm-eval's own IFEval checkers.

The testbed caps every answer at a few hundred tokens, so a prompt asking for 300 words fails in every arm and
only dilutes the score. :func:`short_answer_prompts` keeps the prompts whose every instruction a short answer can
meet (:data:`SHORT_ANSWER_BOUNDS`) and whose text asks for no long length: a pure function of the release file.
:func:`grade` uses ``sinkbench.tasks.ifeval_strict.utils.process_results``, so its scores are ``lm_eval``'s.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

import numpy as np

from experiments.vl_testbed.schema import IfevalRecord

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


def grade(
    docs: Sequence[dict[str, Any]], answers: Sequence[str], answer_tokens: Sequence[int]
) -> IfevalRecord:
    """Grade ``answers`` (aligned with ``docs``) with lm-eval's strict and loose IFEval checkers; the per-prompt
    outcomes as 0/1, so paired analyses can read them back."""
    from sinkbench.tasks.ifeval_strict.utils import process_results

    graded = [process_results(doc, [answer]) for doc, answer in zip(docs, answers, strict=True)]
    strict = [ok for g in graded for ok in g["inst_level_strict_acc"]]
    loose = [ok for g in graded for ok in g["inst_level_loose_acc"]]
    return IfevalRecord(
        prompt_strict=float(np.mean([g["prompt_level_strict_acc"] for g in graded])),
        prompt_loose=float(np.mean([g["prompt_level_loose_acc"] for g in graded])),
        inst_strict=float(np.mean(strict)),
        inst_loose=float(np.mean(loose)),
        prompts=len(graded),
        instructions=len(strict),
        strict_by_prompt=[int(bool(g["prompt_level_strict_acc"])) for g in graded],
        inst_strict_by_prompt=[[int(bool(ok)) for ok in g["inst_level_strict_acc"]] for g in graded],
        answer_tokens=list(answer_tokens),
    )
