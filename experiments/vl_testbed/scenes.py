"""Synthetic images with captions and questions, generated deterministically from a seed.

A scene puts one to four shapes (circle, square, triangle) in distinct cells of a 2 x 2 grid on a black canvas,
each in one of four colours with jittered size, position and shade, drawn with numpy alone (the same seed gives the
same pixels on every machine). From it come a caption and one-word questions about the count, a cell's colour and a
cell's shape; every answer of a kind starts with a distinct first token, so a model's choice can be read from one
next-token distribution (:func:`question_items`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

SHAPES = ("circle", "square", "triangle")
COLOURS = {
    "red": (0.9, 0.1, 0.1),
    "green": (0.1, 0.75, 0.2),
    "blue": (0.15, 0.3, 0.95),
    "yellow": (0.95, 0.9, 0.1),
}
CELLS = ("top left", "top right", "bottom left", "bottom right")
NUMBERS = ("one", "two", "three", "four")
#: Question kinds, the answers each can have, and its chance accuracy.
ANSWERS = {
    "count": tuple(n.capitalize() for n in NUMBERS),
    "colour": tuple(c.capitalize() for c in COLOURS),
    "shape": tuple(s.capitalize() for s in SHAPES),
}
IMAGE_TOKEN = "<image>"
#: LLaVA-Mix's instruction for short VQA answers: the one-word stage-2 turns and the held-out questions end with it.
ONE_WORD = "Answer the question using a single word."


@dataclass(frozen=True)
class Shape:
    """One shape of a scene: its grid cell (index into :data:`CELLS`), kind and colour name."""

    cell: int
    kind: str
    colour: str


@dataclass(frozen=True)
class Scene:
    """A rendered scene: the image (H, W, 3) in [0, 1] and its shapes, by cell."""

    image: np.ndarray
    shapes: tuple[Shape, ...]

    def shape_in(self, cell: int) -> Shape | None:
        """The shape in ``cell``, if any."""
        return next((shape for shape in self.shapes if shape.cell == cell), None)


def _mask(kind: str, size: int, cx: float, cy: float, radius: float) -> np.ndarray:
    y, x = np.mgrid[0:size, 0:size].astype(float) + 0.5
    if kind == "circle":
        return (x - cx) ** 2 + (y - cy) ** 2 <= radius**2
    if kind == "square":
        half = 0.85 * radius
        return (np.abs(x - cx) <= half) & (np.abs(y - cy) <= half)
    depth = (y - (cy - radius)) / (2 * radius)  # 0 at the apex, 1 at the base
    return (depth >= 0) & (depth <= 1) & (np.abs(x - cx) <= depth * radius)


def make_scene(rng: np.random.Generator, size: int = 48) -> Scene:
    """Draw one scene with ``rng`` on a ``size`` x ``size`` canvas (a multiple of 2)."""
    count = int(rng.integers(1, len(CELLS) + 1))
    cells = sorted(int(c) for c in rng.choice(len(CELLS), size=count, replace=False))
    image = np.zeros((size, size, 3))
    image += rng.uniform(0.0, 0.08, size=(size, size, 1))
    shapes = []
    half = size / 2
    for cell in cells:
        kind = SHAPES[int(rng.integers(len(SHAPES)))]
        colour = list(COLOURS)[int(rng.integers(len(COLOURS)))]
        cx = (cell % 2 + 0.5) * half + rng.uniform(-0.12, 0.12) * half
        cy = (cell // 2 + 0.5) * half + rng.uniform(-0.12, 0.12) * half
        radius = rng.uniform(0.25, 0.36) * half
        shade = np.clip(np.array(COLOURS[colour]) + rng.uniform(-0.08, 0.08, size=3), 0.0, 1.0)
        image[_mask(kind, size, cx, cy, radius)] = shade
        shapes.append(Shape(cell, kind, colour))
    return Scene(image.astype(np.float32), tuple(shapes))


def caption(scene: Scene) -> str:
    """``"Two shapes: a red circle in the top left and a blue square in the bottom right."``"""
    parts = [f"a {s.colour} {s.kind} in the {CELLS[s.cell]}" for s in scene.shapes]
    noun = "shape" if len(parts) == 1 else "shapes"
    return f"{NUMBERS[len(parts) - 1].capitalize()} {noun}: {join_words(parts)}."


def join_words(parts: list[str]) -> str:
    """``"a, b and c"``."""
    return parts[0] if len(parts) == 1 else ", ".join(parts[:-1]) + " and " + parts[-1]


def ask(scene: Scene, kind: str, rng: np.random.Generator) -> tuple[str, str]:
    """One question of ``kind`` (``count``, ``colour`` or ``shape``) about ``scene`` and its answer word."""
    if kind == "count":
        return "How many shapes are in the image?", ANSWERS["count"][len(scene.shapes) - 1]
    shape = scene.shapes[int(rng.integers(len(scene.shapes)))]
    where = CELLS[shape.cell]
    if kind == "colour":
        return f"What colour is the shape in the {where}?", shape.colour.capitalize()
    return f"What shape is in the {where}?", shape.kind.capitalize()


def caption_conversation(scene: Scene) -> list[dict[str, str]]:
    """Stage 1: the image and "Describe the image.", answered by the caption."""
    return [
        {"role": "user", "content": f"{IMAGE_TOKEN}\nDescribe the image."},
        {"role": "assistant", "content": caption(scene)},
    ]


@dataclass(frozen=True)
class QuestionItem:
    """A held-out question: the scene's image, the user turn, the kind and the correct answer word."""

    image: np.ndarray
    question: str
    kind: str
    answer: str


def question_items(seed: int, images: int, size: int = 48) -> list[QuestionItem]:
    """``images`` fresh scenes from ``seed``, each asked one question of every kind (3 items per image), in the
    one-word form of the stage-2 ``word`` turns."""
    rng = np.random.default_rng(seed)
    items = []
    for _ in range(images):
        scene = make_scene(rng, size)
        for kind in ANSWERS:
            question, answer = ask(scene, kind, rng)
            items.append(QuestionItem(scene.image, f"{IMAGE_TOKEN}\n{question}\n{ONE_WORD}", kind, answer))
    return items
