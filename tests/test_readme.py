"""The README's promises: two set-up commands, the second is what CI runs."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _setup_commands() -> list[str]:
    text = (ROOT / "README.md").read_text()
    block = text.split("```bash\n", 1)[1].split("```", 1)[0]
    return [line for line in block.splitlines() if line.strip()]


def test_readme_opens_with_two_setup_commands():
    first, second = _setup_commands()
    assert first.startswith("pip install torch==2.13.0") and first.endswith("sinkbench screen")
    assert second.startswith("pip install torch==2.13.0") and "pytest" in second


def test_ci_runs_the_readme_test_command():
    ci = (ROOT / ".ci" / "run").read_text().splitlines()
    assert _setup_commands()[1] in ci
