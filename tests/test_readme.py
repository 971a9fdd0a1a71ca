"""The README's promises: two set-up commands (the second is what CI runs), the first lm_eval line, and the library
examples, each run as written in a fresh interpreter or shell."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text(encoding="utf-8")
SHARED_DATA = ROOT.parent / "shared" / "data"
FIXTURES = Path(__file__).parent / "fixtures" / "strict"


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


#: What each library example prints (or writes), in README order.
EXPECTED = [
    r"S = \+1\.456 nats, 95% CI \[\+1\.382, \+1\.518\]",
    r"S = 1\.45\d+\n.*SINKBENCH_DATA_DIR=no-data-here is set but no-data-here/ifeval_input_data\.jsonl does not "
    r"exist\. Fix: put the original 'ifeval_input_data\.jsonl' there",
    None,  # the monitor: its trace file
]


def test_the_readme_has_the_three_library_examples():
    blocks = _blocks("python")
    assert len(blocks) == len(EXPECTED)
    assert "sinkbench.screen" in blocks[0] and "simple_evaluate" in blocks[1]
    assert "SinkStrengthCallback" in blocks[2]


@pytest.mark.slow  # the embedded model's real weights
@pytest.mark.parametrize("index", range(len(EXPECTED)), ids=["screen", "simple_evaluate", "monitor"])
def test_a_library_example_runs_as_written_in_a_fresh_interpreter(index: int, tmp_path: Path) -> None:
    code = _blocks("python")[index]
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=tmp_path, env=_environment(tmp_path), capture_output=True, text=True,
        timeout=900,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    if EXPECTED[index] is not None:
        assert re.search(EXPECTED[index], done.stdout, flags=re.DOTALL), done.stdout
    else:
        steps = [json.loads(line)["step"] for line in (tmp_path / "sink.jsonl").read_text().splitlines()]
        assert steps == [0, 2]
