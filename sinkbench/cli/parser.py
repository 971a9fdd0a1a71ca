"""How a ``sinkbench`` command is declared (:func:`add_command`: its help is its handler's docstring, its
arguments made by :func:`arg` and :func:`group`) and parsed (:class:`CommandParser`: a mistyped option or choice is
refused under the usage of the command it was given to, naming the nearest one, ``did you mean --output?``,
exit 2)."""

from __future__ import annotations

import argparse
import difflib
import inspect
import math
import re
import sys
from collections.abc import Callable, Iterable, Sequence
from typing import Any

#: An argument (or a group of them) as it adds itself to a parser or a group of a parser.
Argument = Callable[[Any], object]
#: What argparse reads as a number, not an option (none of sinkbench's options looks like one).
_NUMBER = re.compile(r"^-\d+$|^-\d*\.\d+$")


def nearest(word: str, candidates: Iterable[str]) -> str:
    """``; did you mean X?`` for the candidate closest to ``word`` (:func:`difflib.get_close_matches`), or ''."""
    close = difflib.get_close_matches(word, list(candidates), n=1)
    return f"; did you mean {close[0]}?" if close else ""


class CommandParser(argparse.ArgumentParser):
    """An :class:`argparse.ArgumentParser` (its subcommands' too) that refuses an unknown option under the
    command's own usage, before a missing required argument; a ``passthrough`` command (``eval``) is not checked."""

    def parse_known_args(
        self, args: Sequence[str] | None = None, namespace: argparse.Namespace | None = None
    ) -> tuple[argparse.Namespace, list[str]]:
        """argparse's, after refusing an unknown option (and, for a command without subcommands, surplus words)."""
        args = list(sys.argv[1:] if args is None else args)
        passthrough = self.get_default("passthrough")
        if not passthrough:
            self._refuse_unknown_option(args)
        namespace, extra = super().parse_known_args(args, namespace)
        if extra and not passthrough and not self._has_subcommands():
            self.error(f"unrecognized arguments: {' '.join(extra)}")
        return namespace, extra

    def _check_value(self, action: argparse.Action, value: Any) -> None:
        # argparse's check of a choice (a subcommand's name included), with the nearest choice named
        if action.choices is not None and value not in action.choices:
            choices = ", ".join(map(str, action.choices))
            hint = nearest(str(value), map(str, action.choices))
            raise argparse.ArgumentError(action, f"invalid choice: {value!r}{hint} (choose from {choices})")

    def _has_subcommands(self) -> bool:
        return any(isinstance(action, argparse._SubParsersAction) for action in self._actions)

    def _refuse_unknown_option(self, args: list[str]) -> None:
        """Error on the first word that argparse would read as an option this parser does not have; a parser with
        subcommands reads only the words before its subcommand (the rest is the subcommand's)."""
        options = self._option_string_actions
        words = iter(args)
        for word in words:
            if word == "--":
                return
            if not word.startswith("-") or len(word) == 1 or _NUMBER.match(word) or " " in word:
                if self._has_subcommands():
                    return
                continue
            name = word.partition("=")[0]
            known = [name] if name in options else [option for option in options if option.startswith(name)]
            if not word.startswith("--") and word[:2] in options:
                known = [word[:2]]  # a short option with its value attached (-ofile.json)
            if not known:
                self.error(f"unknown option {name}{nearest(name, options)}")
            if "=" not in word and len(known) == 1 and options[known[0]].nargs != 0:
                next(words, None)  # its value


def whole_number(low: int, high: int | None = None) -> Callable[[str], int]:
    """An argparse type: a whole number from ``low`` (to ``high``), e.g. a seed or a port."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
        if value < low or (high is not None and value > high):
            bounds = f"from {low} to {high}" if high is not None else f">= {low}"
            raise argparse.ArgumentTypeError(f"{text} is out of range; give a whole number {bounds}")
        return value

    return parse


def finite_float(text: str) -> float:
    """An argparse type: a number, neither NaN nor infinite."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"{text} is not a finite number")
    return value


def arg(*flags: str, help: str, shown: str | None = None, **kwargs: Any) -> Argument:
    """An argument: argparse's ``flags`` and keywords, its help ``help (default: shown)``; ``shown`` (default
    ``%(default)s``; none for a positional or a required option) says what happens when an option is left out, and
    ``shown=""`` leaves the clause out of a help that places it itself."""
    if shown is None and flags[0].startswith("-") and not kwargs.get("required"):
        shown = "%(default)s"
    text = f"{help} (default: {shown})" if shown else help
    return lambda parser: parser.add_argument(*flags, help=text, **kwargs)


def group(*arguments: Argument) -> Argument:
    """Several arguments as one (a set of options that commands share)."""
    return lambda parser: [argument(parser) for argument in arguments]


def exclusive(*arguments: Argument, required: bool = False) -> Argument:
    """``arguments`` of which a command takes at most one (exactly one when ``required``)."""
    return lambda parser: group(*arguments)(parser.add_mutually_exclusive_group(required=required))


def add_command(
    subparsers: argparse._SubParsersAction,
    name: str,
    handler: Callable[[argparse.Namespace], int | None] | None,
    *arguments: Argument,
    doc: str | None = None,
    **defaults: Any,
) -> argparse.ArgumentParser:
    """Add the subcommand ``name`` with its ``arguments``, run by ``handler`` (with ``defaults`` set on them); its
    line in the parent's ``--help`` is the first paragraph of ``doc`` (default: the handler's docstring), its own
    ``--help`` description the rest."""
    summary, _, description = inspect.cleandoc(doc or handler.__doc__).partition("\n\n")
    parser = subparsers.add_parser(name, help=summary, description=description)
    group(*arguments)(parser)
    if handler is not None:
        parser.set_defaults(handler=handler, **defaults)
    return parser
