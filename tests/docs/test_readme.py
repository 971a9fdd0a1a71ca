"""The README's promises: two set-up commands first (the second is what CI runs), the CPU wheel line, the first
lm_eval line run as written, the picture redrawn from the board, the board's numbers it quotes, the commands it
names, its links, and its length. Its library examples live in the Guide (``tests/docs/test_guide.py`` runs them)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from commands import help_text
from readme_picture import PICTURE, readme_picture

ROOT = Path(__file__).resolve().parents[2]
README = (ROOT / "README.md").read_text(encoding="utf-8")
SHARED_DATA = ROOT.parent / "shared" / "data"
FIXTURES = Path(__file__).parents[1] / "fixtures" / "strict"


def _setup_commands() -> list[str]:
    block = README.split("```bash\n", 1)[1].split("```", 1)[0]
    return [line for line in block.splitlines() if line.strip()]


def _blocks(language: str) -> list[str]:
    return re.findall(rf"```{language}\n(.*?)```", README, flags=re.DOTALL)


def _first_lm_eval_line() -> str:
    return next(line for block in _blocks("bash") for line in block.splitlines() if " lm_eval " in f" {line}")


def _environment(cwd: Path) -> dict[str, str]:
    """Offline, with this environment's commands first on PATH and no data folder unless the example sets one."""
    base = {key: value for key, value in os.environ.items() if key != "SINKBENCH_DATA_DIR"}
    path = os.pathsep.join([str(Path(sys.executable).parent), base.get("PATH", "")])
    return {
        **base,
        "PATH": path,
        "HF_HUB_OFFLINE": "1",
        "HF_DATASETS_OFFLINE": "1",
        "HOME": base.get("HOME", str(cwd)),
    }


def test_readme_opens_with_two_setup_commands():
    first, second = _setup_commands()
    assert first.startswith("pip install torch==2.13.0") and first.endswith("sinkbench screen")
    assert second.startswith("pip install torch==2.13.0") and "pytest" in second


def test_ci_runs_the_readme_test_command():
    ci = (ROOT / ".ci" / "run").read_text().splitlines()
    assert _setup_commands()[1] in ci


def test_the_first_lm_eval_line_names_its_data_variable_model_folder_and_samples():
    line = _first_lm_eval_line()
    assert line.startswith("SINKBENCH_DATA_DIR=../shared/data lm_eval --model hf")
    assert 'pretrained="$(sinkbench screen --print-model-dir)"' in line
    assert "--tasks sink_strength,ifeval_strict" in line and "--log_samples" in line
    assert "--batch_size 32" in line, "the README's IFEval time was measured with --batch_size 32"


@pytest.mark.slow  # the embedded model's real weights
def test_the_first_lm_eval_line_runs_offline_as_written(tmp_path: Path) -> None:
    """The line itself from a clone's root beside ``../shared/data``, with a ``--limit`` added to keep it short."""
    clone, data = tmp_path / "clone", tmp_path / "shared" / "data"
    clone.mkdir()
    data.mkdir(parents=True)
    source = SHARED_DATA if (SHARED_DATA / "ifeval_input_data.jsonl").is_file() else FIXTURES
    (data / "ifeval_input_data.jsonl").symlink_to(source / "ifeval_input_data.jsonl")
    command = f"{_first_lm_eval_line()} --limit 2 --gen_kwargs max_gen_toks=8"
    done = subprocess.run(
        ["bash", "-c", command],
        cwd=clone,
        env=_environment(clone),
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert "--limit 2 does not apply to sink_strength: S is measured on all 15 prompts" in done.stderr
    (results_file,) = (clone / "runs" / "smollm2").glob("*/results_*.json")
    results = json.loads(results_file.read_text(encoding="utf-8"))
    assert results["n-samples"]["sink_strength"] == {"original": 15, "effective": 15}
    assert results["n-samples"]["ifeval_strict"]["effective"] == 2
    assert results["results"]["sink_strength"]["sink_strength,none"] == pytest.approx(1.456, abs=5e-4)
    assert results["configs"]["ifeval_strict"]["metadata"]["data"]["source"] == "local"
    assert list(results_file.parent.glob("samples_ifeval_strict_*.jsonl"))


def test_the_readme_is_at_most_150_lines_and_names_the_cpu_wheel_beside_the_setup() -> None:
    assert len(README.splitlines()) <= 150
    second = _blocks("bash")[1]
    assert second == "pip install torch --index-url https://download.pytorch.org/whl/cpu\n"


def test_the_picture_is_the_board_s_chart_redrawn_from_submissions() -> None:
    assert f"]({PICTURE.relative_to(ROOT).as_posix()})" in README
    assert PICTURE.read_text(encoding="utf-8") == readme_picture(), (
        "redraw it: python tests/readme_picture.py"
    )


def test_the_board_s_numbers_the_readme_quotes_are_today_s(tmp_path: Path) -> None:
    from sinkbench.tables.aggregate import aggregate_submissions

    tables = aggregate_submissions(ROOT / "submissions", tmp_path / "tables")
    s = tables.screening[tables.screening["task"] == "ifeval_strict"]["sink_strength"]
    pairs = tables.pairs[(tables.pairs["task"] == "ifeval_strict") & (tables.pairs["testbed"] != True)]  # noqa: E712
    assert f"S runs from −{-s.min():.2f} to +{s.max():.2f}" in README
    assert f"The board's {len(pairs)} LLM → VLM pairs" in README and f"{len(s)} backbones by S" in README


def test_every_command_the_readme_names_exists(capsys: pytest.CaptureFixture[str]) -> None:
    code = " ".join(re.findall(r"`[^`\n]+`", README) + _blocks("bash"))
    commands = set(re.findall(r"\bsinkbench ([a-z][a-z-]+)", code))
    assert {"screen", "submit", "site", "aggregate"} <= commands
    for command in sorted(commands):
        help_text([command, "--help"], capsys)


def test_every_local_link_of_the_readme_exists() -> None:
    links = re.findall(r"\]\(([^)#]+)(?:#[^)]*)?\)", README)
    local = [link for link in links if not link.startswith(("http://", "https://"))]
    assert len(local) >= 10
    assert [link for link in local if not (ROOT / link).exists()] == []
