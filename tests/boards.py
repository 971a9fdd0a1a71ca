"""The repository's own board, for the tests that read it: its submissions folder and the paper's six headline
pairs (Table 1, the ones its Tables 4 and 10 are computed on)."""

from __future__ import annotations

import shutil
from pathlib import Path

#: The repository's submissions: the real board.
REPO_SUBMISSIONS = Path(__file__).resolve().parents[1] / "submissions"
#: The paper's six headline pairs, by entry name.
HEADLINE = (
    "qwen3-vl-8b-instruct",
    "internvl3.5-8b",
    "qwen2.5-vl-7b-instruct",
    "internvl3-8b",
    "llava-onevision-qwen2-7b-ov",
    "molmo2-o-7b",
)


def headline_board(root: Path) -> Path:
    """A submissions root at ``root`` holding the repository's six headline pairs only; returns it."""
    for name in HEADLINE:
        shutil.copytree(REPO_SUBMISSIONS / "pairs" / name, root / "pairs" / name)
    return root
