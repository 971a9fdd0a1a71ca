"""Options shared by several commands: the model, how to load and probe it, S's interval, where a report goes,
and the folders of submissions.

The probe, interval and bucket options and the interventions' parameters are the fields of their options models
(:mod:`sinkbench.sink.options`, :mod:`sinkbench.interventions.settings`), declared once on the field:
:func:`model_options` turns each into an option and :func:`from_args` the parsed options back into the model.
Every help line ends with the default.
"""

from __future__ import annotations

import argparse
import os
import sys
import typing
from collections import abc
from collections.abc import Sequence
from dataclasses import fields
from pathlib import Path
from typing import Any, TypeVar

from sinkbench.cli.parser import Argument, arg, finite_float, group
from sinkbench.errors import UserError, file_in_the_way
from sinkbench.models import DEFAULT_MODEL, DTYPES
from sinkbench.sink.options import ProbeOptions, option_flag
from sinkbench.sink.prompts import DEFAULT_SET, PACKAGED_SETS

Model = TypeVar("Model")
#: ``--quiet``: no progress bars.
QUIET = arg("--quiet", action="store_true", help="no progress bars", shown="shown")
#: ``--overwrite`` of a command that writes a checkpoint folder OUT.
OVERWRITE = arg(
    "--overwrite", action="store_true", help="replace OUT if it exists", shown="refuse to overwrite"
)
#: What to do when the default submissions folder is not where the command runs.
FROM_THE_ROOT = "run it from the repository root (where submissions/ is), or pass the folder"


def model_argument(what: str) -> Argument:
    """``MODEL``, optional: ``what`` the command does with it, e.g. "model to screen"."""
    return arg("model", nargs="?", metavar="MODEL", help=what, shown=f"{DEFAULT_MODEL}, embedded")


def model_options(
    model: type, *, skip: Sequence[str] = (), only: Sequence[str] | None = None, **changes: dict[str, Any]
) -> Argument:
    """An option per field of the options dataclass ``model`` declared with :func:`sinkbench.sink.options.option`:
    ``--num-layers`` for ``num_layers``; a bool is a switch, an int or float typed, a sequence of strings
    comma-separated. ``skip``/``only``: fields not offered/the only ones offered; ``changes``: per field, the
    keywords this command changes (``choices``, ``default``)."""

    def add(parser: argparse.ArgumentParser) -> None:
        hints = typing.get_type_hints(model)
        for field in fields(model):
            cli = {"default": field.default, "dest": field.name, **field.metadata}
            cli.update(changes.get(field.name, {}))
            if "help" not in cli or field.name in skip or (only is not None and field.name not in only):
                continue
            flag = cli.pop("flag", option_flag(field))
            kind = hints[field.name]
            if type(None) in typing.get_args(kind):  # X | None: X
                kind = next(part for part in typing.get_args(kind) if part is not type(None))
            meanings = field.metadata.get("choices")
            if isinstance(meanings, dict):  # each choice the command offers with its meaning
                cli["help"] += ": " + ", ".join(f"{choice} = {meanings[choice]}" for choice in cli["choices"])
            if typing.get_origin(kind) is abc.Sequence:
                kind = _comma_separated
                cli["shown"] = cli.get("shown") or ",".join(cli["default"])
            kind = finite_float if kind is float else kind
            typed = {"action": "store_true"} if kind is bool else {} if kind is str else {"type": kind}
            arg(flag, **typed, **cli)(parser)

    return add


def _comma_separated(text: str) -> list[str]:
    return [name.strip() for name in text.split(",") if name.strip()]


def from_args(model: type[Model], args: argparse.Namespace) -> Model:
    """The options ``model`` of parsed arguments: the fields the command offers as parsed, the others' defaults."""
    dests = {field.name: field.metadata.get("dest", field.name) for field in fields(model) if field.metadata}
    return model(**{name: getattr(args, dest) for name, dest in dests.items() if dest in args})


def load_arguments(model: str | None = "the model") -> Argument:
    """``--dtype``, ``--device``, ``--device-map`` and ``--revision`` (of ``model``; none when ``model`` is None,
    for commands that load several models): how weights are loaded."""
    return group(
        arg("--dtype", default="float32", choices=DTYPES,
            help="weight and activation dtype; the paper measured in bfloat16"),
        arg("--device", help="device to run on, e.g. cpu or cuda:0", shown="where transformers loads it"),
        arg("--device-map", metavar="MAP", shown="none",
            help="accelerate device map, e.g. auto to shard a large model over GPUs"),
        *([arg("--revision", help=f"Hub revision (commit, tag or branch) of {model}", shown="main")] if model else []),
    )  # fmt: skip


def load_options(args: argparse.Namespace) -> dict[str, object]:
    """How the parsed arguments say models are loaded (:func:`sinkbench.models.load_model`'s keywords)."""
    options = {"dtype": args.dtype, "device": args.device, "device_map": args.device_map}
    return {**options, **({"revision": args.revision} if getattr(args, "revision", None) else {})}


def measure_arguments(
    *, model: str | None = "the model", skip: Sequence[str] = (), **probe: dict[str, Any]
) -> Argument:
    """What every command that measures S takes: ``--prompts``, the probe options (``skip`` and ``probe``: as
    :func:`model_options` takes them), :func:`load_arguments` of ``model`` and ``--quiet``."""
    prompts = arg(
        "--prompts",
        metavar="SET|FILE",
        default=DEFAULT_SET,
        help=f"calibration prompts: a packaged set ({', '.join(PACKAGED_SETS)}), or a .jsonl file with a 'prompt' "
        "field per line, or a .txt file with one prompt per line",
    )
    return group(prompts, model_options(ProbeOptions, skip=skip, **probe), load_arguments(model), QUIET)


def output(what: str = "the full report", *, required: bool = False) -> Argument:
    """``--output/-o FILE.json``: where the command writes ``what`` as JSON; printed only when left out."""
    help = f"write {what} as JSON (required)" if required else f"also write {what} as JSON"
    return arg(
        "--output",
        "-o",
        metavar="FILE.json",
        required=required,
        help=help,
        shown=None if required else "print only",
    )


def keywords(args: argparse.Namespace, *names: str) -> dict[str, Any]:
    """The parsed values of the options ``names``: the keywords of a library call whose parameters they share."""
    return {name: getattr(args, name) for name in names}


def output_path(args: argparse.Namespace, option: str = "output", suffix: str | None = None) -> Path | None:
    """``--output`` (or another file option, of a file ending in ``suffix`` when given) as a path, None when left
    out; checked before the command's work, so that a report is never computed only to find it cannot be written.

    Raises:
        UserError: the path is a folder or another non-file, a file stands where one of its folders would be, or
            its suffix is not ``suffix``.
    """
    value = getattr(args, option)
    if not value:
        return None
    path, flag = Path(value), f"--{option.replace('_', '-')}"
    if path.is_dir():
        example = path / f"report{suffix or '.json'}"
        raise UserError(f"{flag} {value} is a folder", f"give a file name, e.g. {example}")
    if path.exists() and not path.is_file():  # a device or a pipe, which the atomic write would replace
        raise UserError(f"{flag} {value} is not a regular file", "give the name of a file to write")
    blocking = file_in_the_way(path)
    if blocking is not None:
        raise UserError(f"{flag} {value}: {blocking} is a file, not a folder", "give a path inside a folder")
    if suffix is not None and path.suffix.lower() != suffix:
        raise UserError(f"{flag} {value}: the file is written as {suffix[1:].upper()}", f"name it *{suffix}")
    return path


def print_report(text: str, args: argparse.Namespace) -> int:
    """Print a command's report, then where ``--output`` wrote it; exit status 0."""
    print(text)
    if args.output:
        print(f"Report written to {args.output}")
    return 0


def check_model_arguments(models: Sequence[str | None], prompts: str) -> None:
    """Raise UserError for what the arguments alone show to be wrong, before a command's heavy imports: the
    calibration prompts, then each model spec (:func:`sinkbench.models.locate_model`; a hub id neither reachable
    nor cached, :func:`sinkbench.models.hub_access`)."""
    from sinkbench.models import hub_access, locate_model
    from sinkbench.sink.prompts import load_calibration

    load_calibration(prompts)
    for model in models:
        source, location = locate_model(model)
        if source == "hub":
            hub_access(location)


def missing_paths(command: str, paths: Sequence[Path], fix: str) -> bool:
    """Print one line naming the ``paths`` that do not exist, and ``fix``; whether any is missing."""
    from sinkbench.errors import printable

    missing = [printable(path) for path in paths if not os.path.exists(path)]
    if missing:
        print(f"sinkbench {command}: no such file or folder: {', '.join(missing)}; {fix}", file=sys.stderr)
    return bool(missing)


def holds_no_entry(command: str, root: Path, option: str = "--submissions") -> bool:
    """Print one line when the submissions root ``root`` holds no entry folder (``pairs/NAME/``,
    ``backbones/NAME/``); whether it holds none. An empty board is far more often a mistyped folder than a board,
    and its tables or site would replace full ones."""
    from sinkbench.errors import printable
    from sinkbench.submissions.catalogue import KIND_OF_FOLDER

    kinds = [root / kind for kind in KIND_OF_FOLDER if (root / kind).is_dir()]
    if any(child.is_dir() for kind in kinds for child in kind.iterdir()):
        return False
    print(
        f"sinkbench {command}: no entry in {printable(root)} (no pairs/NAME/ or backbones/NAME/ folder); pass "
        f"the submissions root that holds them as {option} DIR",
        file=sys.stderr,
    )
    return True


def folder(option: str, help: str, default: str | Path | None = None, shown: str | None = None) -> Argument:
    """A folder option, ``option DIR``; required when ``default`` is None."""
    where = {"required": True} if default is None else {"default": Path(default)}
    return arg(option, type=Path, metavar="DIR", help=help, shown=shown, **where)


#: ``--submissions DIR``: the submissions folder a command reads.
SUBMISSIONS = folder("--submissions", "submissions root holding pairs/ and backbones/", "submissions")
#: ``--out DIR`` and ``--force``: the submissions folder a command writes entries into.
ENTRY_OUTPUT = group(
    folder("--out", "submissions folder to write into", "submissions"),
    arg("--force", action="store_true", help="replace an entry that already exists", shown="refuse"),
)
