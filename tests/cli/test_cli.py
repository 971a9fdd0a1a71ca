"""The command line: every documented command runs."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from tiny_models import save_tiny_model

from sinkbench.cli import build_parser, main


@pytest.fixture(scope="module")
def tiny_dir(tmp_path_factory):
    return save_tiny_model(tmp_path_factory.mktemp("tiny") / "model", "llama")


def test_every_subcommand_has_help(capsys):
    parser = build_parser()
    commands = parser._subparsers._group_actions[0].choices
    assert {"screen", "eval", "tasks-path"} <= set(commands)
    for name in commands:
        with pytest.raises(SystemExit) as exit_:
            main([name, "--help"]) if name != "eval" else build_parser().parse_args([name, "--help"])
        assert exit_.value.code == 0
    assert "usage" in capsys.readouterr().out


def test_no_command_is_a_usage_error(capsys):
    assert main([]) == 2


def test_unknown_argument_is_a_usage_error():
    with pytest.raises(SystemExit) as exit_:
        main(["tasks-path", "--bogus"])
    assert exit_.value.code == 2


def test_screen_writes_report(tiny_dir, tmp_path, capsys):
    output = tmp_path / "out" / "report.json"
    assert main(["screen", str(tiny_dir), "--output", str(output), "--num-layers", "3", "--quiet"]) == 0
    printed = capsys.readouterr().out
    assert "Sink Strength S =" in printed and "layer  median G" in printed
    report = json.loads(output.read_text())
    for key in ("sink_strength", "options", "layers_probed", "calibration_prompts", "profile", "model"):
        assert key in report
    assert report["layers_probed"] == [1, 2, 3]
    assert len(report["calibration_prompts"]) == 15
    assert len(report["profile"]["median_g"]) == 3 and len(report["profile"]["median_g"][0]) == 4
    assert report["model"]["source"] == "dir" and report["options"]["num_layers"] == 3
    assert f"{report['sink_strength']:+.3f}" in printed


def test_tasks_path_command(capsys):
    assert main(["tasks-path"]) == 0
    assert capsys.readouterr().out.strip().endswith("harness_tasks")


@pytest.mark.slow  # a fresh interpreter
def test_help_is_fast_and_imports_no_torch():
    code = "import sys; from sinkbench.cli import build_parser; build_parser(); print('torch' in sys.modules)"
    assert (
        subprocess.run([sys.executable, "-c", code], capture_output=True, text=True).stdout.strip() == "False"
    )
