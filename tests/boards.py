"""The repository's own board, for the tests that read it: its submissions folder, its chart cache and the paper's
six headline pairs (Table 1, the ones its Tables 4 and 10 are computed on)."""

from __future__ import annotations

import shutil
from pathlib import Path

#: The repository's submissions: the real board.
REPO_SUBMISSIONS = Path(__file__).resolve().parents[1] / "submissions"
#: The project's chart cache (the site plugin's default, beside ``mkdocs.yml``), which its builds fill: a test that
#: builds from a copy of the site sources takes its charts from there, and starts no second process to draw them.
PROJECT_CHART_CACHE = Path(__file__).resolve().parents[1] / ".cache" / "charts"
#: The paper's (arXiv 2609.00746) Table 10, as transcribed in shared/paper/FACTS.md: the held-out predicted IFEval
#: delta of each of its six headline pairs (leave-one-pair-out linear fit on S), by entry name.
TABLE_10_PREDICTED = {
    "qwen3-vl-8b-instruct": -0.92,
    "internvl3.5-8b": -3.41,
    "qwen2.5-vl-7b-instruct": -10.78,
    "internvl3-8b": -10.95,
    "llava-onevision-qwen2-7b-ov": -9.04,
    "molmo2-o-7b": -13.74,
}
#: The paper's six headline pairs (Table 1), by entry name.
HEADLINE = tuple(TABLE_10_PREDICTED)


def headline_board(root: Path) -> Path:
    """A submissions root at ``root`` holding the repository's six headline pairs only; returns it."""
    for name in HEADLINE:
        shutil.copytree(REPO_SUBMISSIONS / "pairs" / name, root / "pairs" / name)
    return root
