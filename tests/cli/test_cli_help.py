"""Every option of every command says what it does and what happens when it is left out."""

from __future__ import annotations

import argparse
import inspect

import pytest
from commands import help_text

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
    text = help_text(["eval", "--help"], capsys)
    assert "lm_eval" in text and "lm_eval --help" in text


def test_eval_without_arguments_is_a_one_line_usage_error(capsys) -> None:
    assert main(["eval"]) == 2
    captured = capsys.readouterr()
    assert "Traceback" not in captured.err + captured.out
    assert captured.err.strip().startswith("sinkbench eval: ") and "\n" not in captured.err.strip()


def test_a_commands_help_is_its_handlers_docstring() -> None:
    """add_command: the first paragraph of the handler's docstring is the command's line in its parent's help, the
    rest its description."""
    parents = {path: parser for path, parser in COMMANDS}
    for path, parser in COMMANDS:
        handler = parser.get_default("handler")
        if handler is None:  # a group of subcommands (site, submit)
            continue
        summary, _, description = inspect.cleandoc(handler.__doc__).partition("\n\n")
        assert parser.description == description, path
        listing = parents[path[:-1]] if len(path) > 1 else build_parser()
        line = next(a for a in listing._subparsers._group_actions[0]._choices_actions if a.dest == path[-1])
        assert line.help == summary, path


def test_each_intervention_command_comes_from_its_spec() -> None:
    from sinkbench.cli.interventions import INTERVENTIONS

    parsers = dict(COMMANDS)
    for spec in INTERVENTIONS:
        parser = parsers[(spec.name,)]
        positionals = [action.dest for action in parser._actions if not action.option_strings]
        assert positionals == [name for name, _ in spec.models] + (["out"] if spec.out else []), spec.name
        options = {option for action in parser._actions for option in action.option_strings}
        assert ("--skip-strength" in options) == ("--prompts" in options) == spec.strength, spec.name
        assert ("--revision" in options) == (len(spec.models) == 1), spec.name
        assert ("--overwrite" in options) == (spec.out is not None), spec.name
        assert parser.get_default("handler") is spec.call


def test_the_options_models_are_the_options_and_come_back_from_them() -> None:
    """sinkbench.cli.options.model_options / from_args: each field with help is an option; left out, the model's
    default; given, its value, typed."""
    from sinkbench.cli.options import from_args
    from sinkbench.sink.options import BucketRule, IntervalOptions, ProbeOptions

    given = ["--metric", "acc", "--threshold", "0.7", "--prompt-field", "q", "--filter", "f"]
    given += ["--bootstrap-resamples", "5", "--seed", "3", "--num-layers", "4", "--layer-band", "2-3"]
    given += [
        "--sink-position",
        "query",
        "--keep-degenerate",
        "--chat-template",
        "off",
        "--padding-side",
        "left",
    ]
    args = build_parser().parse_args(["buckets", "m", "--samples", "s.jsonl", *given, "--batch-size", "2"])
    assert from_args(BucketRule, args) == BucketRule("acc", 0.7, "q", "f")
    assert from_args(IntervalOptions, args) == IntervalOptions(resamples=5, seed=3)
    assert from_args(ProbeOptions, args) == ProbeOptions(
        num_layers=4, layer_band="2-3", sink_position="query", keep_degenerate=True, chat_template="off",
        padding_side="left", batch_size=2,
    )  # fmt: skip
    args = build_parser().parse_args(["buckets", "m", "--samples", "s.jsonl"])
    assert (from_args(BucketRule, args), from_args(IntervalOptions, args)) == (
        BucketRule(),
        IntervalOptions(),
    )
    assert from_args(ProbeOptions, args) == ProbeOptions()
