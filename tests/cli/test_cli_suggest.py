"""A mistyped option, choice or command is refused under the usage of the command it was given to, with the
nearest one named (sinkbench.cli.parser), exit 2, one line of error."""

from __future__ import annotations

import argparse

import pytest

from sinkbench.cli import build_parser, main

#: argv, the command whose usage is shown, and the error line.
MISTAKES = {
    "option": (["screen", "--ouput", "s.json"], "screen", "unknown option --ouput; did you mean --output?"),
    "option before a missing required one": (
        ["heads", "--outptu", "h.json"], "heads", "unknown option --outptu; did you mean --output?"
    ),
    "option with =": (["buckets", "m", "--sampels=s.jsonl"], "buckets", "unknown option --sampels; did you mean --samples?"),
    "option of a nested command": (
        ["submit", "pair", "--refrence", "run"], "submit pair", "unknown option --refrence; did you mean --reference?"
    ),
    "option of an intervention": (["merge", "a", "b", "out", "--swep"], "merge", "unknown option --swep; did you mean --sweep?"),
    "option nothing is near": (["tasks-path", "--bogus"], "tasks-path", "unknown option --bogus"),
    "option of the top level": (["--verison"], "", "unknown option --verison; did you mean --version?"),
    "command": (["scren"], "", "argument COMMAND: invalid choice: 'scren'; did you mean screen? (choose from screen,"),
    "nested command": (["site", "bild"], "site", "argument ACTION: invalid choice: 'bild'; did you mean build? (choose from build, serve)"),
    "choice": (["screen", "--sink-position", "hed"], "screen", "argument --sink-position: invalid choice: 'hed'; did you mean head?"),
    "surplus word": (["screen", "a", "b"], "screen", "unrecognized arguments: b"),
}  # fmt: skip


@pytest.mark.parametrize("case", sorted(MISTAKES))
def test_a_mistake_names_the_nearest_under_the_commands_usage(
    case: str, capsys: pytest.CaptureFixture[str]
) -> None:
    argv, command, error = MISTAKES[case]
    with pytest.raises(SystemExit) as exit_:
        main(argv)
    assert exit_.value.code == 2
    printed = capsys.readouterr()
    prog = " ".join(("sinkbench", command)) if command else "sinkbench"
    assert printed.err.startswith(f"usage: {prog} "), printed.err
    last = printed.err.strip().splitlines()[-1]
    assert last.startswith(f"{prog}: error: {error}"), last
    assert sum("error:" in line for line in printed.err.splitlines()) == 1, printed.err
    if "did you mean" not in error:
        assert "did you mean" not in last


@pytest.mark.parametrize(
    ("argv", "dest", "value"),
    [
        (["screen", "--out", "s.json"], "output", "s.json"),  # an unambiguous abbreviation
        (["screen", "-os.json"], "output", "s.json"),  # a short option with its value attached
        (["screen", "--output=s.json"], "output", "s.json"),
        (["buckets", "m", "--samples", "s", "--threshold", "-0.5"], "threshold", -0.5),  # a negative number
        (["screen", "--prompts", "a b.txt", "m"], "model", "m"),  # a value with a space
        (["screen", "--", "-m"], "model", "-m"),  # after --, a word is no option
    ],
)
def test_what_argparse_accepts_is_still_accepted(argv: list[str], dest: str, value: object) -> None:
    assert getattr(build_parser().parse_args(argv), dest) == value


def test_a_passthrough_command_keeps_the_arguments_it_does_not_know() -> None:
    args, extra = build_parser().parse_known_args(["eval", "--model", "hf", "--tasks", "t"])
    assert args.command == "eval" and extra == ["--model", "hf", "--tasks", "t"]


def _leaf_options() -> list[tuple[tuple[str, ...], str]]:
    """(command path, long option) for every option of every command that checks its arguments (not ``eval``)."""
    found, parsers = [], [((), build_parser())]
    while parsers:
        path, parser = parsers.pop()
        subcommands = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
        parsers += [((*path, name), sub) for action in subcommands for name, sub in action.choices.items()]
        if path and not subcommands and not parser.get_default("passthrough"):
            found += [(path, o) for a in parser._actions for o in a.option_strings if o.startswith("--")]
    return sorted(found)


@pytest.mark.parametrize(
    ("path", "option"), _leaf_options(), ids=lambda x: " ".join(x) if isinstance(x, tuple) else x
)
def test_every_option_of_every_command_mistyped_is_named(
    path: tuple[str, ...], option: str, capsys: pytest.CaptureFixture[str]
) -> None:
    at = next(i for i in range(3, len(option) - 1) if option[i] != option[i + 1])
    typo = option[:at] + option[at + 1] + option[at] + option[at + 2 :]  # two letters swapped: --otuput
    with pytest.raises(SystemExit) as exit_:
        main([*path, typo, "x"])
    assert exit_.value.code == 2
    err = capsys.readouterr().err
    prog = " ".join(("sinkbench", *path))
    assert err.startswith(f"usage: {prog} "), err
    assert err.strip().splitlines()[-1] == f"{prog}: error: unknown option {typo}; did you mean {option}?"
