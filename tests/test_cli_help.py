"""Every option of every command says what it does and what happens when it is left out."""

from __future__ import annotations

import argparse

import pytest

from sinkbench.cli import build_parser, main


def _commands(
    parser: argparse.ArgumentParser, path: tuple[str, ...] = ()
) -> list[tuple[tuple[str, ...], argparse.ArgumentParser]]:
    """Every (sub)command parser with its path of names, nested ones included (``site build``, ``submit pair``)."""
    found = [(path, parser)] if path else []
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                found += _commands(sub, (*path, name))
    return found


COMMANDS = _commands(build_parser())


def test_the_command_tree_is_complete() -> None:
    names = {" ".join(path) for path, _ in COMMANDS}
    expected = {"screen", "eval", "tasks-path", "validate", "aggregate", "import-reported", "submit pair",
                "submit backbone", "site build", "site serve", "extract-lm", "margin", "buckets", "implant-lm",
                "displacement", "random-control", "ablate-norms", "inject-qk-norm", "merge"}  # fmt: skip
    assert expected <= names, expected - names


@pytest.mark.parametrize(("path", "parser"), COMMANDS, ids=[" ".join(path) for path, _ in COMMANDS])
def test_every_option_has_help_with_its_default(
    path: tuple[str, ...], parser: argparse.ArgumentParser
) -> None:
    assert parser.description, f"`sinkbench {' '.join(path)}` has no description"
    for action in parser._actions:
        if isinstance(action, (argparse._HelpAction, argparse._SubParsersAction)):
            continue
        name = "/".join(action.option_strings) or action.dest
        assert action.help, f"`sinkbench {' '.join(path)}` {name} has no help text"
        if action.option_strings and not action.required:
            assert "(default" in action.help, (
                f"`sinkbench {' '.join(path)}` {name}: help does not say its default"
            )


def test_eval_help_says_where_the_arguments_go(capsys) -> None:
    with pytest.raises(SystemExit) as exit_:
        main(["eval", "--help"])
    assert exit_.value.code == 0
    text = " ".join(capsys.readouterr().out.split())
    assert "lm_eval" in text and "lm_eval --help" in text


def test_eval_without_arguments_is_a_one_line_usage_error(capsys) -> None:
    assert main(["eval"]) == 2
    captured = capsys.readouterr()
    assert "Traceback" not in captured.err + captured.out
    assert captured.err.strip().startswith("sinkbench eval: ") and "\n" not in captured.err.strip()
