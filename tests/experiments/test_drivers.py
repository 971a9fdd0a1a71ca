"""The experiments' run drivers answer ``--help`` without loading torch or a model."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.slow  # a fresh interpreter each
@pytest.mark.parametrize(
    ("driver", "option"),
    [
        ("experiments.vl_testbed.run", "--precision"),
        ("experiments.interventions_pair.run", "--injection-seeds"),
        ("experiments.vl_testbed.pilot", "--settings"),
    ],
)
def test_help_shows_the_options_and_imports_no_torch(driver: str, option: str) -> None:
    code = (
        "import contextlib, io, runpy, sys\n"
        f"sys.argv = ['{driver}', '--help']\n"
        "with contextlib.redirect_stdout(io.StringIO()) as out, contextlib.suppress(SystemExit):\n"
        f"    runpy.run_module('{driver}', run_name='__main__')\n"
        "print('torch' in sys.modules, out.getvalue())\n"
    )
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith(f"False usage: python -m {driver} ")
    assert option in done.stdout


@pytest.mark.parametrize(
    ("text", "says"),
    [
        (None, "cannot read the file: No such file or directory"),
        ('{"runs": [', "is not valid JSON"),
        ('{"runs": []}', "sinkbench_version: Field required"),
    ],
)
def test_a_bad_testbed_file_is_one_line_before_anything_runs(
    text: str | None, says: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from experiments.interventions_pair import run

    testbed = tmp_path / "testbed.json"
    if text is not None:
        testbed.write_text(text, encoding="utf-8")
    monkeypatch.setattr(sys, "argv", ["run", "--testbed", str(testbed), "--workdir", str(tmp_path / "work")])
    with pytest.raises(SystemExit) as stopped:
        run.main()
    message = str(stopped.value)
    assert message.startswith(f"interventions_pair: {testbed}: ") and says in message and "\n" not in message
    fix = message.split("Fix: ", 1)[1]
    assert fix.endswith("pass --testbed the results of `python -m experiments.vl_testbed.run`")
    assert not (tmp_path / "work").exists()
