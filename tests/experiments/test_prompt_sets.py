"""The prompt-set study's driver (``experiments/prompt_sets/run.py``)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.slow  # a fresh interpreter
def test_help_explains_the_models_option_and_imports_no_torch() -> None:
    code = (
        "import contextlib, io, sys\n"
        "from experiments.prompt_sets import run\n"
        "sys.argv = ['run', '--help']\n"
        "with contextlib.redirect_stdout(io.StringIO()) as out, contextlib.suppress(SystemExit):\n"
        "    run.main()\n"
        "print('torch' in sys.modules, out.getvalue())\n"
    )
    wide = {**os.environ, "COLUMNS": "200"}  # argparse breaks lines at the terminal's width, even at a hyphen
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, env=wide, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    text = " ".join(done.stdout.split())
    assert text.startswith("False ")
    assert (
        "models to measure" in text and "(default: the embedded smollm2-135m-instruct, gemma3-270m)" in text
    )
