"""Stage-2 chats about scenes whose replies look like VL instruction data: from one word to several sentences.

LLaVA-Mix mixes short VQA answers, one-sentence answers, detailed descriptions, lists and short reasoning;
:class:`ReplyMix` draws each assistant turn's format (:data:`FORMATS`, written by :data:`TURNS`) with stated shares,
and every reply is written from the scene's own facts. Phrasings come from small pools drawn with the same
generator, so a seed gives the same chats on every machine.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from experiments.vl_testbed.scenes import (
    ANSWERS,
    CELLS,
    COLOURS,
    IMAGE_TOKEN,
    NUMBERS,
    ONE_WORD,
    SHAPES,
    Scene,
    Shape,
    ask,
    join_words,
)

FORMATS = ("word", "sentence", "description", "listing", "count_reasoning")


@dataclass(frozen=True)
class ReplyMix:
    """The share of assistant turns in each reply format (normalised when drawn), and the turns per chat.

    The default gives a third of the turns to one-word answers and spreads the rest over the longer formats, so
    that, as in LLaVA-Mix, short answers are common but most supervised tokens are sentences.
    """

    word: float = 0.3
    sentence: float = 0.25
    description: float = 0.15
    listing: float = 0.15
    count_reasoning: float = 0.15
    turns: int = 3

    def __post_init__(self) -> None:
        weights = [getattr(self, name) for name in FORMATS]
        if min(weights) < 0 or sum(weights) <= 0:
            raise ValueError(f"reply shares must be non-negative with a positive sum, got {weights}")
        if self.turns < 1:
            raise ValueError(f"a chat needs at least one turn, got turns={self.turns}")

    @property
    def shares(self) -> dict[str, float]:
        """Each format's share of the turns, summing to 1."""
        total = sum(getattr(self, name) for name in FORMATS)
        return {name: getattr(self, name) / total for name in FORMATS}

    def draw(self, rng: np.random.Generator) -> str:
        """One format, drawn with these shares."""
        shares = self.shares
        return FORMATS[int(rng.choice(len(FORMATS), p=[shares[name] for name in FORMATS]))]


def _pick(rng: np.random.Generator, options: tuple[str, ...]) -> str:
    return options[int(rng.integers(len(options)))]


def _phrase(shape: Shape) -> str:
    return f"a {shape.colour} {shape.kind}"


def word_turn(scene: Scene, rng: np.random.Generator) -> tuple[str, str]:
    """A count, colour or shape question asking for one word, answered in one word."""
    question, word = ask(scene, list(ANSWERS)[int(rng.integers(len(ANSWERS)))], rng)
    return f"{question}\n{ONE_WORD}", f"{word}."


def sentence_turn(scene: Scene, rng: np.random.Generator) -> tuple[str, str]:
    """A question answered in one full sentence (count, colour, shape, or a yes/no question)."""
    kind = _pick(rng, ("count", "colour", "shape", "yes_no"))
    count = len(scene.shapes)
    if kind == "count":
        noun = "shape" if count == 1 else "shapes"
        verb = "is" if count == 1 else "are"
        return "How many shapes are in the image?", f"There {verb} {NUMBERS[count - 1]} {noun} in the image."
    if kind == "yes_no":
        colour, shape_kind = _pick(rng, tuple(COLOURS)), _pick(rng, SHAPES)
        found = [s for s in scene.shapes if s.colour == colour and s.kind == shape_kind]
        question = f"Is there a {colour} {shape_kind} in the image?"
        if found:
            return question, f"Yes, there is a {colour} {shape_kind} in the {CELLS[found[0].cell]}."
        return question, f"No, there is no {colour} {shape_kind} in the image."
    shape = scene.shapes[int(rng.integers(count))]
    where = CELLS[shape.cell]
    if kind == "colour":
        return (
            f"What colour is the shape in the {where}?",
            f"The {shape.kind} in the {where} is {shape.colour}.",
        )
    return f"What shape is in the {where}?", f"The shape in the {where} is a {shape.colour} {shape.kind}."


_OPENINGS = (
    "The image shows {n} on a dark background.",
    "This is a picture of {n} on a two by two grid.",
    "I can see {n} on a black background.",
)
_CELL_SENTENCES = (
    "In the {cell} there is {shape}.",
    "The {cell} holds {shape}.",
    "{Shape} sits in the {cell}.",
)


def description_turn(scene: Scene, rng: np.random.Generator) -> tuple[str, str]:
    """A request for a detailed description, answered in sentences: the count, each shape, the empty cells."""
    count = len(scene.shapes)
    noun = f"{NUMBERS[count - 1]} shape" + ("s" if count > 1 else "")
    sentences = [_pick(rng, _OPENINGS).format(n=noun)]
    for shape in scene.shapes:
        phrase = _phrase(shape)
        template = _pick(rng, _CELL_SENTENCES)
        sentences.append(template.format(cell=CELLS[shape.cell], shape=phrase, Shape=phrase.capitalize()))
    empty = [CELLS[cell] for cell in range(len(CELLS)) if scene.shape_in(cell) is None]
    if empty:
        verb = "is" if len(empty) == 1 else "are"
        sentences.append(f"The {join_words(empty)} {verb} empty.")
    colours = sorted({s.colour for s in scene.shapes})
    if count > 1:
        sentences.append(
            f"All of the shapes are {colours[0]}."
            if len(colours) == 1
            else f"The colours used are {join_words(colours)}."
        )
    question = _pick(rng, ("Describe the image in detail.", "Give a detailed description of this picture."))
    return question, " ".join(sentences)


def listing_turn(scene: Scene, rng: np.random.Generator) -> tuple[str, str]:
    """A request to list the shapes, answered one line per shape (numbered or bulleted)."""
    numbered = bool(rng.integers(2))
    lines = [
        f"{f'{index}.' if numbered else '-'} {_phrase(shape).capitalize()} in the {CELLS[shape.cell]}."
        for index, shape in enumerate(scene.shapes, start=1)
    ]
    question = _pick(rng, ("List the shapes in the image.", "Make a list of every shape you can see."))
    return question, "\n".join(lines)


def count_reasoning_turn(scene: Scene, rng: np.random.Generator) -> tuple[str, str]:
    """A count question asking for an explanation, answered by naming each shape and then the number."""
    count = len(scene.shapes)
    named = join_words([f"{_phrase(s)} in the {CELLS[s.cell]}" for s in scene.shapes])
    number = NUMBERS[count - 1]
    reply = (
        f"I can see {named}. That makes {number} shape{'s' if count > 1 else ''}, so the answer is {count}."
    )
    question = _pick(
        rng,
        ("How many shapes are there? Explain your answer.", "Count the shapes and explain how you counted."),
    )
    return question, reply


TURNS = {
    "word": word_turn,
    "sentence": sentence_turn,
    "description": description_turn,
    "listing": listing_turn,
    "count_reasoning": count_reasoning_turn,
}


def vl_conversation(scene: Scene, rng: np.random.Generator, mix: ReplyMix) -> list[dict[str, str]]:
    """A stage-2 chat of ``mix.turns`` turns about ``scene`` (the image in the first user turn)."""
    messages = []
    for turn in range(mix.turns):
        question, reply = TURNS[mix.draw(rng)](scene, rng)
        prefix = f"{IMAGE_TOKEN}\n" if turn == 0 else ""
        messages += [{"role": "user", "content": prefix + question}, {"role": "assistant", "content": reply}]
    return messages


def _alternatives(words: tuple[str, ...] | list[str]) -> str:
    return "(?:" + "|".join(re.escape(word) for word in words) + ")"


_CELL = _alternatives(CELLS)
_NUMBER = _alternatives(NUMBERS)
_COLOUR = _alternatives(list(COLOURS))
_SHAPE = _alternatives(SHAPES)
_ANSWER_WORDS = _alternatives([word for words in ANSWERS.values() for word in words])
#: What a stage-2 reply says in words no IFEval answer needs: a grid cell, a counted shape, the counting verdict,
#: a description's opening or a one-word answer on its own (case-insensitive; the templates above, as patterns).
TEMPLATE_PATTERNS = (
    rf"\bthe {_CELL}\b",
    rf"\bthat makes {_NUMBER} shapes?\b",
    r"\bso the answer is \d\b",
    rf"\bthere (?:is|are) {_NUMBER} shapes? in the image\b",
    r"\bon a (?:dark|black) background\b",
    r"\bon a two by two grid\b",
    rf"\bthere is no {_COLOUR} {_SHAPE}\b",
    rf"^\s*{_ANSWER_WORDS}\.?\s*$",
)
_TEMPLATE = re.compile("|".join(f"(?:{pattern})" for pattern in TEMPLATE_PATTERNS), re.IGNORECASE)


def echoes_template(answer: str) -> bool:
    """Whether ``answer`` contains a stage-2 reply template (:data:`TEMPLATE_PATTERNS`): the model answers a text
    prompt as it was taught to answer about an image."""
    return _TEMPLATE.search(answer) is not None


def echo_rate(answers: Sequence[str]) -> float:
    """The share of ``answers`` that contain a stage-2 reply template (NaN for none)."""
    return sum(map(echoes_template, answers)) / len(answers) if answers else math.nan
