"""The first hour with sinkbench, as a new user meets it: the installed ``sinkbench`` command run from a folder of
their own (outside any clone), each mistake answered by one line with the fix, and before the heavy imports
(torch, transformers) wherever the arguments alone show the mistake."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SINKBENCH = shutil.which("sinkbench", path=str(Path(sys.executable).parent))
FIXTURES = Path(__file__).parents[1] / "fixtures" / "submissions"
#: Runs the command line in this process, then prints its exit status and which heavy modules it imported.
IN_PROCESS = (
    "import json, sys; from sinkbench.cli import main; status = main(sys.argv[1:]); "
    "print(json.dumps([status, sorted({'torch', 'transformers', 'lm_eval'} & set(sys.modules))]))"
)


def _run(cwd: Path, *args: str) -> subprocess.CompletedProcess:
    assert SINKBENCH, f"no sinkbench command beside {sys.executable}"
    assert ROOT not in cwd.parents, "a newcomer's folder lies outside the clone"
    environment = {**os.environ, "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1"}
    return subprocess.run(
        [SINKBENCH, *args], cwd=cwd, env=environment, capture_output=True, text=True, timeout=600
    )


def _before_heavy_imports(cwd: Path, *args: str) -> tuple[int, str]:
    """The exit status and the stderr of ``sinkbench ARGS``, which must import neither torch nor transformers."""
    done = subprocess.run(
        [sys.executable, "-c", IN_PROCESS, *args], cwd=cwd, capture_output=True, text=True, timeout=600,
        env={**os.environ, "HF_HUB_OFFLINE": "1"},
    )  # fmt: skip
    status, heavy = json.loads(done.stdout.strip().splitlines()[-1])
    assert heavy == [], f"`sinkbench {' '.join(args)}` imported {heavy} before refusing"
    return status, done.stderr


def _one_line(stderr: str) -> str:
    assert "Traceback" not in stderr, stderr
    (line,) = stderr.strip().splitlines()
    return line


@pytest.mark.slow  # a fresh interpreter
def test_a_text_file_named_gguf_is_one_line_before_any_heavy_import(tmp_path: Path) -> None:
    (tmp_path / "fake.gguf").write_text("not weights\n", encoding="utf-8")
    status, stderr = _before_heavy_imports(tmp_path, "screen", "fake.gguf")
    assert status == 1
    assert _one_line(stderr) == (
        "sinkbench screen: MODEL fake.gguf: not a GGUF file (it does not start with the GGUF magic bytes); pass a "
        ".gguf file as llama.cpp writes it, a transformers model folder, or a hub id"
    )


@pytest.mark.slow  # fresh interpreters
@pytest.mark.parametrize(
    ("args", "status", "says"),
    [
        (
            ["screen", "my-modle"],
            1,
            "sinkbench screen: MODEL my-modle: no such file or folder, and not a hub id",
        ),
        (
            ["screen", "missing.gguf"],
            1,
            "sinkbench screen: MODEL missing.gguf: no such .gguf file; check the path",
        ),
        (["screen", "--against", "nowhere"], 2, "sinkbench screen: --against nowhere is not a folder"),
        (["screen", "--prompts", "nowhere.jsonl"], 1, "sinkbench screen: "),
        (
            ["heads", "fake.gguf", "--output", "h.json"],
            1,
            "sinkbench heads: MODEL fake.gguf: not a GGUF file",
        ),
        (["margin", "fake.gguf", "org/vlm-lm"], 1, "sinkbench margin: MODEL fake.gguf: not a GGUF file"),
    ],
    ids=["typo", "missing gguf", "against", "prompts", "heads", "margin"],
)
def test_each_bad_argument_is_refused_before_the_heavy_imports(
    tmp_path: Path, args: list[str], status: int, says: str
) -> None:
    (tmp_path / "fake.gguf").write_text("not weights\n", encoding="utf-8")
    got, stderr = _before_heavy_imports(tmp_path, *args)
    assert got == status and _one_line(stderr).startswith(says)


@pytest.mark.slow  # a fresh interpreter
def test_print_model_dir_of_a_hub_id_is_the_id_without_heavy_imports(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-c", IN_PROCESS, "screen", "--print-model-dir", "Qwen/Qwen3-8B"], cwd=tmp_path,
        capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    printed, outcome = done.stdout.strip().splitlines()
    assert printed == "Qwen/Qwen3-8B" and json.loads(outcome) == [0, []]


@pytest.mark.slow  # dequantizes the embedded model's real weights on first use
def test_print_model_dir_names_the_folder_lm_eval_loads(tmp_path: Path) -> None:
    done = _run(tmp_path, "screen", "--print-model-dir", "--quiet")
    assert done.returncode == 0, done.stderr[-2000:]
    folder = Path(done.stdout.strip())
    assert (
        folder.is_absolute() and (folder / "config.json").is_file() and (folder / "tokenizer.json").is_file()
    )
    assert folder.parent.name == "gguf"


@pytest.mark.slow  # a fresh interpreter
def test_validate_on_a_folder_without_entries_says_so_and_fails(tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    done = _run(tmp_path, "validate", "empty")
    assert done.returncode == 1
    assert _one_line(done.stderr) == (
        "sinkbench validate: no entry in empty (no pairs/NAME/ or backbones/NAME/ folder); pass the submissions "
        "root, a kind folder or an entry folder"
    )


@pytest.mark.slow  # a fresh interpreter
@pytest.mark.parametrize(
    ("args", "fix"),
    [
        (["validate"], "sinkbench validate DIR"),
        (["aggregate", "--out", "tables"], "--submissions DIR"),
        (["site", "build"], "--submissions DIR"),
    ],
    ids=["validate", "aggregate", "site build"],
)
def test_outside_the_repository_the_default_folder_is_named_with_the_fix(
    tmp_path: Path, args: list[str], fix: str
) -> None:
    done = _run(tmp_path, *args)
    assert done.returncode == 2
    line = _one_line(done.stderr)
    assert line == (
        f"sinkbench {' '.join(args[:2]) if args[0] == 'site' else args[0]}: no such file or folder: submissions; run "
        f"it from the repository root (where submissions/ is), or pass the folder: {fix}"
    )
    assert "<file>" not in line


@pytest.mark.slow  # a fresh interpreter
def test_a_truncated_json_file_names_its_line_once(tmp_path: Path) -> None:
    submissions = tmp_path / "submissions"
    shutil.copytree(FIXTURES, submissions)
    metadata = submissions / "backbones" / "tiny-llm" / "metadata.json"
    metadata.write_text(metadata.read_text(encoding="utf-8")[:60], encoding="utf-8")
    done = _run(tmp_path, "validate")
    assert done.returncode == 1
    (line,) = [line for line in done.stdout.splitlines() if "tiny-llm/metadata.json" in line]
    assert "is not valid JSON: " in line and " at line " in line and "at at" not in line


@pytest.mark.slow  # a fresh interpreter
def test_margin_help_explains_only_the_sink_positions_it_accepts(tmp_path: Path) -> None:
    text = " ".join(_run(tmp_path, "margin", "--help").stdout.split())
    assert (
        "{head,first}" in text and "head = the key each head attends to most, first = the first token" in text
    )
    assert "query" not in text


@pytest.mark.slow  # a fresh interpreter
def test_heads_help_says_all_layers_not_a_number(tmp_path: Path) -> None:
    text = " ".join(_run(tmp_path, "heads", "--help").stdout.split())
    assert "all of them if the model has fewer (default: all layers)" in text and "1000" not in text


def test_the_licence_at_the_root_is_the_one_pyproject_names() -> None:
    (declared,) = re.findall(
        r'^license = \{ text = "([^"]+)" \}$', (ROOT / "pyproject.toml").read_text(), re.M
    )
    licence = (ROOT / "LICENSE").read_text(encoding="utf-8")
    assert declared == "MIT" and licence.startswith("MIT License\n\nCopyright (c) 2026 ")
    assert 'THE SOFTWARE IS PROVIDED "AS IS", WITHOUT WARRANTY OF ANY KIND' in licence
