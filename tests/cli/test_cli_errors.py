"""Every command reports a failure its user caused the same way (sinkbench.cli.failures): exit 1, no traceback,
one line ``sinkbench COMMAND: ...`` on stderr, or each problem of invalid submissions on its own stdout line."""

from __future__ import annotations

import json
import os
import shutil
import socket
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from sinkbench.cli import build_parser, main

FIXTURES = Path(__file__).parents[1] / "fixtures" / "submissions"


def _bad_prompts(tmp: Path) -> str:
    (tmp / "bad.jsonl").write_text('{"prompt": 1}\n', encoding="utf-8")
    return str(tmp / "bad.jsonl")


def _text_model(tmp: Path) -> str:
    """A folder that holds a text-only model's config: no VLM family to extract."""
    (tmp / "gpt2").mkdir()
    (tmp / "gpt2" / "config.json").write_text(json.dumps({"model_type": "gpt2"}), encoding="utf-8")
    return str(tmp / "gpt2")


def _a_file(tmp: Path) -> str:
    (tmp / "a-file").write_text("not a folder", encoding="utf-8")
    return str(tmp / "a-file")


def _broken_submissions(tmp: Path) -> str:
    shutil.copytree(FIXTURES, tmp / "submissions")
    (tmp / "submissions" / "pairs" / "broken").mkdir()
    (tmp / "submissions" / "pairs" / "broken" / "metadata.json").write_text(
        '{"kind": "pair"}', encoding="utf-8"
    )
    return str(tmp / "submissions")


@pytest.fixture
def listener() -> Iterator[socket.socket]:
    """A port that is taken for the whole test."""
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        yield taken


#: Per command: its arguments (``{name}`` filled by the helper of that name) and the start of its one line.
ONE_LINE = {
    "screen": (["screen", "--prompts", "{bad}", "--against", "none"], "sinkbench screen: {bad}:1: expected"),
    "heads": (["heads", "--output", "{tmp}/h.json", "--prompts", "{bad}"], "sinkbench heads: {bad}:1: expected"),
    "margin": (["margin", "a", "b", "--prompts", "{bad}"], "sinkbench margin: {bad}:1: expected"),
    "extract-lm": (["extract-lm", "{model}", "{tmp}/out"], "sinkbench extract-lm: {model}/config.json: model_type"),
    "eval": (
        ["eval", "--model", "hf", "--model_args", "pretrained=x", "--tasks", "no_such_task_4b1d"],
        "sinkbench eval: lm_eval: Tasks not found: no_such_task_4b1d",
    ),
    "aggregate": (
        ["aggregate", "--submissions", str(FIXTURES), "--out", "{file}"],
        "sinkbench aggregate: {file} exists and is not a folder",
    ),
    "submit pair": (
        ["submit", "pair", "--reference", "{tmp}/no-run", "--vlm", "{tmp}/no-run", "--vl-recipe", "r", "--name", "x",
         "--submitter", "me", "--out", "{tmp}/submissions"],
        "sinkbench submit: reference run",
    ),
    "submit backbone": (
        ["submit", "backbone", "{tmp}/no-run", "--name", "x", "--submitter", "me", "--out", "{tmp}/submissions"],
        "sinkbench submit: backbone run",
    ),
    "site build": (
        ["site", "build", "--submissions", str(FIXTURES), "--out", "{file}"],
        "sinkbench site build: {file} exists and is not a folder",
    ),
    "site serve": (
        ["site", "serve", "--submissions", str(FIXTURES), "--port", "{port}"],
        "sinkbench site serve: Address already in use",
    ),
    "buckets": (["buckets", "a", "--samples", "{tmp}/none.jsonl"], "sinkbench buckets: {tmp}/none.jsonl: cannot read"),
    "implant-lm": (["implant-lm", "{model}", "{tmp}/lm", "{tmp}/out"], "sinkbench implant-lm: {model}/config.json: model_type"),
    "displacement": (["displacement", "{tmp}/none", "{tmp}/b"], "sinkbench displacement: MODEL {tmp}/none: no such file"),
    "random-control": (["random-control", "a", "b", "{tmp}/out"], "sinkbench random-control: MODEL a: no such file"),
    "ablate-norms": (["ablate-norms", "{tmp}/none", "{tmp}/out"], "sinkbench ablate-norms: MODEL {tmp}/none: no such"),
    "inject-qk-norm": (["inject-qk-norm", "{tmp}/none", "{tmp}/out"], "sinkbench inject-qk-norm: MODEL {tmp}/none:"),
    "merge": (["merge", "a", "b", "{tmp}/out", "--setting", "ties"], "sinkbench merge: MODEL a: no such file or folder"),
}  # fmt: skip
#: Commands whose user errors are invalid submissions: every problem on a line of its own.
PROBLEMS = {
    "validate": ["validate", "{submissions}"],
    "aggregate": ["aggregate", "--submissions", "{submissions}", "--out", "{tmp}/tables"],
    "import-reported": [
        "import-reported",
        "{bad}",
        "--source",
        "A. Author (2026)",
        "--out",
        "{tmp}/imported",
    ],
    "site build": ["site", "build", "--submissions", "{submissions}", "--out", "{tmp}/site"],
}
HELPERS: dict[str, Callable[[Path], str]] = {
    "bad": _bad_prompts,
    "model": _text_model,
    "file": _a_file,
    "submissions": _broken_submissions,
    "tmp": str,
}


def _fill(argv: list[str], tmp: Path) -> dict[str, str]:
    wanted = {name for part in argv for name in HELPERS if f"{{{name}}}" in part}
    return {name: HELPERS[name](tmp) for name in sorted(wanted | {"tmp"})}


#: Commands whose error case is slow: lm-eval indexes its whole task catalogue; serve builds a site and opens a port.
SLOW_ERRORS = ("eval", "site serve")


@pytest.mark.parametrize(
    "command",
    [
        pytest.param(name, marks=pytest.mark.slow) if name in SLOW_ERRORS else name
        for name in sorted(ONE_LINE)
    ],
)
def test_a_user_error_is_one_line_and_exit_1(
    command: str, tmp_path: Path, listener: socket.socket, capsys: pytest.CaptureFixture[str]
) -> None:
    argv, expected = ONE_LINE[command]
    values = {**_fill(argv, tmp_path), "port": str(listener.getsockname()[1])}
    capsys.readouterr()
    assert main([part.format(**values) for part in argv]) == 1
    printed = capsys.readouterr()
    assert "Traceback" not in printed.out + printed.err
    last = printed.err.strip().splitlines()[
        -1
    ]  # `site serve` logs its build above the line (MkDocs' INFO lines)
    assert last.startswith(expected.format(**values)), printed.err
    assert command == "site serve" or printed.err.count("\n") == 1, printed.err


@pytest.mark.parametrize("command", sorted(PROBLEMS))
def test_invalid_submissions_list_every_problem_and_exit_1(command: str, tmp_path: Path, capsys) -> None:
    argv = PROBLEMS[command]
    values = _fill(argv, tmp_path)
    capsys.readouterr()
    assert main([part.format(**values) for part in argv]) == 1
    printed = capsys.readouterr()
    assert "Traceback" not in printed.out + printed.err and printed.err == ""
    lines = printed.out.strip().splitlines()
    assert lines and all(line.startswith("ERROR ") for line in lines[:-1]), lines
    assert lines[-1].startswith(f"{len(lines) - 1} problem") or "problem(s)" in lines[-1], lines


def test_every_command_is_covered() -> None:
    """A new command needs a user error here too (``tasks-path`` takes no input a user could get wrong)."""
    parser = build_parser()
    commands = parser._subparsers._group_actions[0].choices  # argparse keeps them here
    names = set()
    for name, sub in commands.items():
        actions = [a for a in sub._actions if a.__class__.__name__ == "_SubParsersAction"]
        names |= {f"{name} {child}" for child in actions[0].choices} if actions else {name}
    assert names - {"tasks-path"} <= set(ONE_LINE) | set(PROBLEMS), names - set(ONE_LINE) - set(PROBLEMS)


def _mamba(tmp: Path) -> str:
    """A saved tiny model with no softmax attention, and a tokenizer."""
    from tiny_models import tiny_tokenizer
    from transformers import MambaConfig, MambaForCausalLM

    folder = tmp / "mamba"
    MambaForCausalLM(
        MambaConfig(num_hidden_layers=1, hidden_size=16, state_size=4, vocab_size=320)
    ).save_pretrained(folder)
    tiny_tokenizer().save_pretrained(folder)
    return str(folder)


def _remote(tmp: Path) -> str:
    folder = tmp / "minicpm"
    folder.mkdir()
    config = {"model_type": "minicpmv", "auto_map": {"AutoModel": "modeling_minicpmv.MiniCPMV"}}
    (folder / "config.json").write_text(json.dumps(config), encoding="utf-8")
    return str(folder)


#: The model a command is given is missing, of a type it cannot measure, or remote code: one line with the fix.
MODEL_ERRORS = {
    "screen, missing folder": (["screen", "./missing-dir", "--against", "none"], "MODEL ./missing-dir: no such file"),
    "heads, missing folder": (["heads", "./missing-dir", "--output", "h.json"], "MODEL ./missing-dir: no such file"),
    "margin, missing folder": (["margin", "./missing-dir", "./missing-dir"], "MODEL ./missing-dir: no such file"),
    "screen, missing parent folder": (["screen", "../missing-dir", "--against", "none"], "MODEL ../missing-dir: no such"),
    "extract-lm, missing parent folder": (["extract-lm", "../missing-dir", "out"], "'../missing-dir': not a directory"),
    "screen, no attention": (["screen", "{mamba}", "--against", "none"], "model type 'mamba': it has no softmax"),
    "heads, no attention": (["heads", "{mamba}", "--output", "h.json"], "model type 'mamba': it has no softmax"),
    "screen, remote code": (["screen", "{remote}", "--against", "none"], "{remote}/config.json: model type 'minicpmv'"),
    "extract-lm, remote code": (["extract-lm", "{remote}", "out"], "{remote}/config.json: model type 'minicpmv'"),
}  # fmt: skip


@pytest.mark.parametrize("case", sorted(MODEL_ERRORS))
def test_a_model_that_cannot_be_used_is_one_line_with_the_fix(
    case: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from transformers.utils import logging

    monkeypatch.chdir(tmp_path)
    # transformers' log handler keeps the stderr of the test that first logged, closed by now; its notices
    # (a missing optional kernel) are not what this test is about
    verbosity = logging.get_verbosity()
    logging.set_verbosity_error()
    argv, expected = MODEL_ERRORS[case]
    values = {"mamba": _mamba(tmp_path) if "{mamba}" in argv else "", "remote": _remote(tmp_path)}
    capsys.readouterr()
    assert main([part.format(**values) for part in argv]) == 1
    printed = capsys.readouterr()
    assert "Traceback" not in printed.out + printed.err
    logging.set_verbosity(verbosity)
    last = printed.err.strip().splitlines()[-1]  # transformers' loading bar may come first
    assert last.startswith("sinkbench ") and expected.format(**values) in last, printed.err


#: An option value out of its range: refused by the parser (exit 2, naming the option) before anything is loaded.
OUT_OF_RANGE = {
    "aggregate --seed": (["aggregate", "--out", "{tmp}/tables", "--seed", "-1"], "--seed: -1 is out of range"),
    "site serve --port": (["site", "serve", "--port", "99999"], "--port: 99999 is out of range"),
    "heads --min-g": (["heads", "--output", "{tmp}/h.json", "--min-g", "nan"], "--min-g: nan is not a finite number"),
    "buckets --threshold": (
        ["buckets", "a", "--samples", "{tmp}/s.jsonl", "--threshold", "inf"], "--threshold: inf is not a finite number"
    ),
}  # fmt: skip


@pytest.mark.parametrize("case", sorted(OUT_OF_RANGE))
def test_an_option_value_out_of_range_is_refused_before_anything_runs(
    case: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv, expected = OUT_OF_RANGE[case]
    with pytest.raises(SystemExit) as stopped:
        main([part.format(tmp=tmp_path) for part in argv])
    assert stopped.value.code == 2
    assert f"error: argument {expected}" in capsys.readouterr().err
    assert not any(tmp_path.iterdir())


def test_a_negative_bootstrap_seed_is_one_line_before_the_model_loads(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from sinkbench import models

    monkeypatch.setattr(models, "load_model", lambda *a, **k: pytest.fail("the model was loaded"))
    assert main(["screen", "--seed", "-1", "--against", "none"]) == 1
    assert capsys.readouterr().err == (
        "sinkbench screen: the bootstrap's seed must be a whole number >= 0, got -1\n"
    )


@pytest.mark.parametrize("action", ["build", "serve"])
@pytest.mark.parametrize("given", ["missing", "a-file"])
def test_an_experiments_folder_that_is_not_one_is_refused(
    action: str, given: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A mistyped --experiments is refused (the site would build with its pages saying there are no results)."""
    if given == "a-file":
        (tmp_path / given).write_text("not a folder", encoding="utf-8")
    argv = ["site", action, "--submissions", str(FIXTURES), "--experiments", str(tmp_path / given)]
    assert main([*argv, *(["--out", str(tmp_path / "site")] if action == "build" else [])]) == 2
    assert capsys.readouterr().err == (
        f"sinkbench site {action}: --experiments {tmp_path / given} is not a folder; pass the folder holding the "
        "experiments (experiments/ at the repository's root)\n"
    )
    assert not (tmp_path / "site").exists()


@pytest.mark.parametrize(
    ("argv", "option"),
    [
        (["aggregate", "--submissions", "{empty}", "--out", "{tmp}/tables"], "--submissions"),
        (["site", "build", "--submissions", "{empty}", "--out", "{tmp}/site"], "--submissions"),
        (["screen", "--against", "{empty}"], "--against"),
    ],
    ids=["aggregate", "site build", "screen"],
)
def test_a_submissions_folder_without_entries_is_refused(
    argv: list[str], option: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """An empty board is far more often a mistyped folder: it would publish empty tables or an empty site."""
    empty = tmp_path / "empty"
    (empty / "pairs").mkdir(parents=True)
    assert main([part.format(empty=empty, tmp=tmp_path) for part in argv]) == 1
    command = " ".join(argv[:2]) if argv[0] == "site" else argv[0]
    assert capsys.readouterr().err == (
        f"sinkbench {command}: no entry in {empty} (no pairs/NAME/ or backbones/NAME/ folder); pass the "
        f"submissions root that holds them as {option} DIR\n"
    )
    assert sorted(path.name for path in tmp_path.iterdir()) == ["empty"]


def test_a_file_where_a_folder_is_needed_is_named(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Making a folder under a file, or where a file is, reports "File exists": the line names the file instead."""
    from sinkbench.cli.failures import run_command

    blocking = tmp_path / "a-file"
    blocking.write_text("not a folder", encoding="utf-8")
    out = blocking / "tables"
    assert main(["aggregate", "--submissions", str(FIXTURES), "--out", str(out)]) == 1
    assert (
        capsys.readouterr().err
        == f"sinkbench aggregate: cannot write {out}: {blocking} is a file, not a folder\n"
    )
    assert run_command("submit", lambda: blocking.mkdir(parents=True, exist_ok=True)) == 1
    assert capsys.readouterr().err == f"sinkbench submit: {blocking} is a file, not a folder\n"
    assert blocking.read_text(encoding="utf-8") == "not a folder"


#: Per command writing a report: its arguments, the report's flag and the function doing the work (never called).
REPORT_COMMANDS = {
    "screen": (["screen", "--against", "none"], "--output", "sinkbench.screen.screen"),
    "heads": (["heads", "--output", "{tmp}/h.json"], "--plot", "sinkbench.sink.heads.map_heads"),
    "margin": (["margin", "smollm2-135m-instruct", "smollm2-135m-instruct"], "--output",
               "sinkbench.sink.margin.pair_margin"),
    "buckets": (["buckets", "a", "--samples", "s.jsonl"], "--output", "sinkbench.sink.buckets.bucket_strength"),
    "displacement": (
        ["displacement", "a", "b"], "--plot", "sinkbench.interventions.displacement.weight_displacement"
    ),
}  # fmt: skip


@pytest.mark.parametrize("command", sorted(REPORT_COMMANDS))
@pytest.mark.parametrize("blocked", ["a folder", "below a file", "a pipe"])
def test_a_report_path_that_cannot_be_written_is_refused_before_the_work(
    command: str, blocked: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys
) -> None:
    argv, flag, work = REPORT_COMMANDS[command]
    module, _, name = work.rpartition(".")
    monkeypatch.setattr(f"{module}.{name}", lambda *args, **kwargs: pytest.fail(f"{name} ran"))
    target = tmp_path if blocked == "a folder" else Path(_a_file(tmp_path)) / "report.json"
    if blocked == "a pipe":
        target = tmp_path / f"report{'.svg' if flag == '--plot' else '.json'}"
        os.mkfifo(target)
    capsys.readouterr()
    assert main([part.format(tmp=tmp_path) for part in argv] + [flag, str(target)]) == 1
    err = capsys.readouterr().err
    reasons = {"a folder": "is a folder", "a pipe": "is not a regular file"}
    reason = reasons.get(blocked, f"{tmp_path / 'a-file'} is a file, not a folder")
    assert (
        err.startswith(f"sinkbench {command}: {flag} {target}") and reason in err and err.count("\n") == 1
    ), err


@pytest.mark.parametrize("command", ["heads", "displacement"])
def test_a_plot_named_other_than_svg_is_refused_before_the_work(
    command: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys
) -> None:
    argv, _, work = REPORT_COMMANDS[command]
    module, _, name = work.rpartition(".")
    monkeypatch.setattr(f"{module}.{name}", lambda *args, **kwargs: pytest.fail(f"{name} ran"))
    capsys.readouterr()
    assert main([part.format(tmp=tmp_path) for part in argv] + ["--plot", "heads.png"]) == 1
    err = capsys.readouterr().err
    assert err == f"sinkbench {command}: --plot heads.png: the file is written as SVG Fix: name it *.svg\n"
