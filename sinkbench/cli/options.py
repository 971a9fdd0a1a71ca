"""Options shared by several commands: the model, how to load and probe it, S's interval, where a report goes,
and the folders of submissions.

Defaults come from their one home (:class:`~sinkbench.sink.options.ProbeOptions`,
:class:`~sinkbench.sink.options.IntervalOptions`); every help line ends with the default, so ``--help`` says what
happens when an option is left out.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from dataclasses import fields
from pathlib import Path
from typing import Any

from sinkbench.models import DEFAULT_MODEL, DTYPES
from sinkbench.sink.options import (
    CHAT_TEMPLATE_MODES,
    LAYER_THIRDS,
    PADDING_SIDES,
    SINK_MODES,
    IntervalOptions,
    ProbeOptions,
)
from sinkbench.sink.prompts import DEFAULT_SET, PACKAGED_SETS

_DEFAULTS = {field.name: field.default for field in fields(ProbeOptions)}
_INTERVAL = IntervalOptions()
#: What each sink-position mode means, for the help of the commands that offer it.
_SINK_MODE_HELP = {
    "head": "the key each head attends to most",
    "query": "each query's own argmax",
    "first": "the first token",
}


def add_model_argument(parser: argparse.ArgumentParser, what: str) -> None:
    """``MODEL``, optional: ``what`` the command does with it, e.g. "model to screen"."""
    parser.add_argument(
        "model", nargs="?", default=None, metavar="MODEL", help=f"{what} (default: {DEFAULT_MODEL}, embedded)"
    )


def add_measure_options(
    parser: argparse.ArgumentParser, *, model: str | None = "the model", **probe: Any
) -> None:
    """What every command that measures S takes: :func:`add_probe_options` (``probe``: its keywords),
    :func:`add_model_options` (of ``model``) and ``--quiet``."""
    add_probe_options(parser, **probe)
    add_model_options(parser, model=model)
    add_quiet(parser)


def add_model_options(parser: argparse.ArgumentParser, *, model: str | None = "the model") -> None:
    """``--dtype``, ``--device``, ``--device-map`` and ``--revision`` (of ``model``; none when ``model`` is None,
    for commands that load several models): how weights are loaded."""
    parser.add_argument(
        "--dtype",
        default="float32",
        choices=DTYPES,
        help="weight and activation dtype; the paper measured in bfloat16 (default: %(default)s)",
    )
    parser.add_argument(
        "--device",
        default=None,
        help="device to run on, e.g. cpu or cuda:0 (default: where transformers loads it)",
    )
    parser.add_argument(
        "--device-map",
        default=None,
        metavar="MAP",
        help="accelerate device map, e.g. auto to shard a large model over GPUs (default: none)",
    )
    if model is not None:
        parser.add_argument(
            "--revision",
            default=None,
            help=f"Hub revision (commit, tag or branch) of {model} (default: main)",
        )


def load_options(args: argparse.Namespace) -> dict[str, object]:
    """How the parsed arguments say models are loaded (:func:`sinkbench.models.load_model`'s keywords)."""
    options = {"dtype": args.dtype, "device": args.device, "device_map": args.device_map}
    return {**options, **({"revision": args.revision} if getattr(args, "revision", None) else {})}


def add_probe_options(
    parser: argparse.ArgumentParser, *, sink_modes: Sequence[str] = SINK_MODES, all_layers: int | None = None
) -> None:
    """The probe options of :class:`~sinkbench.sink.options.ProbeOptions` that a user may want to change.

    Args:
        parser: the command's parser.
        sink_modes: the ``--sink-position`` modes the command accepts (its help explains only these).
        all_layers: the ``--num-layers`` value that means every layer, when that is the command's default (its
            help then says "all layers", not the number).
    """
    parser.add_argument(
        "--prompts",
        metavar="SET|FILE",
        default=DEFAULT_SET,
        help=f"calibration prompts: a packaged set ({', '.join(PACKAGED_SETS)}), or a .jsonl file with a 'prompt' "
        "field per line, or a .txt file with one prompt per line (default: %(default)s)",
    )
    parser.add_argument(
        "--num-layers",
        type=int,
        default=_DEFAULTS["num_layers"] if all_layers is None else all_layers,
        metavar="K",
        help="probe the last K decoder layers, all of them if the model has fewer (default: "
        + ("%(default)s)" if all_layers is None else "all layers)"),
    )
    modes = ", ".join(f"{mode} = {_SINK_MODE_HELP[mode]}" for mode in sink_modes)
    parser.add_argument(
        "--layer-band",
        metavar="BAND",
        default=_DEFAULTS["layer_band"],
        help=f"probe a band of decoder layers instead of the last K: {', '.join(LAYER_THIRDS)} (the paper's "
        "depth ablation), or START-END, decoder-layer indices inclusive (default: none, the last K)",
    )
    parser.add_argument(
        "--sink-position",
        choices=sink_modes,
        default=_DEFAULTS["sink_position"],
        help=f"how the sink key is chosen: {modes} (default: %(default)s)",
    )
    if "query" in sink_modes:
        parser.add_argument(
            "--keep-degenerate",
            action="store_true",
            help="count queries that can see only the sink key (attention 1, so G is infinite) as observations "
            "instead of dropping them (default: dropped)",
        )
    parser.add_argument(
        "--chat-template",
        choices=CHAT_TEMPLATE_MODES,
        default=_DEFAULTS["chat_template"],
        help="wrap each prompt as a user turn with the tokenizer's chat template: auto = when it has one "
        "(default: %(default)s)",
    )
    parser.add_argument(
        "--padding-side",
        choices=PADDING_SIDES,
        default=_DEFAULTS["padding_side"],
        help="where batches are padded; S does not depend on it (default: %(default)s)",
    )
    parser.add_argument(
        "--batch-size",
        type=int,
        default=_DEFAULTS["batch_size"],
        metavar="N",
        help="prompts per forward pass; S does not depend on it (default: %(default)s)",
    )


def probe_options(args: argparse.Namespace) -> ProbeOptions:
    """The :class:`~sinkbench.sink.options.ProbeOptions` of parsed command-line arguments."""
    return ProbeOptions(
        num_layers=args.num_layers,
        layer_band=args.layer_band,
        sink_position=args.sink_position,
        keep_degenerate=getattr(args, "keep_degenerate", _DEFAULTS["keep_degenerate"]),
        chat_template=args.chat_template,
        padding_side=args.padding_side,
        batch_size=args.batch_size,
    )


def add_interval_options(parser: argparse.ArgumentParser, *, seed: str | None = "of the bootstrap") -> None:
    """``--bootstrap-resamples`` and, unless ``seed`` is None, ``--seed`` (``seed`` says of what) of
    :class:`~sinkbench.sink.options.IntervalOptions`."""
    parser.add_argument(
        "--bootstrap-resamples",
        type=int,
        default=_INTERVAL.resamples,
        metavar="N",
        help="resamples of the bootstrap over prompts behind each interval; 0: no intervals (default: %(default)s)",
    )
    if seed is not None:
        parser.add_argument(
            "--seed",
            dest="interval_seed",
            type=int,
            default=_INTERVAL.seed,
            metavar="SEED",
            help=f"seed {seed} (default: %(default)s)",
        )


def interval_options(args: argparse.Namespace) -> IntervalOptions:
    """The :class:`~sinkbench.sink.options.IntervalOptions` of parsed command-line arguments."""
    return IntervalOptions(
        resamples=args.bootstrap_resamples, seed=getattr(args, "interval_seed", _INTERVAL.seed)
    )


def add_output(
    parser: argparse.ArgumentParser, what: str = "the full report", *, required: bool = False
) -> None:
    """``--output/-o FILE.json``: where the command writes ``what`` as JSON; printed only when left out."""
    help = (
        f"write {what} as JSON (required)" if required else f"also write {what} as JSON (default: print only)"
    )
    parser.add_argument("--output", "-o", metavar="FILE.json", required=required, help=help)


def keywords(args: argparse.Namespace, *names: str) -> dict[str, Any]:
    """The parsed values of the options ``names``: the keywords of a library call whose parameters they share."""
    return {name: getattr(args, name) for name in names}


def output_path(args: argparse.Namespace) -> Path | None:
    """``--output`` as a path, None when left out."""
    return Path(args.output) if args.output else None


def print_report(text: str, args: argparse.Namespace) -> int:
    """Print a command's report, then where ``--output`` wrote it; exit status 0."""
    print(text)
    if args.output:
        print(f"Report written to {args.output}")
    return 0


def check_model_arguments(models: Sequence[str | None], prompts: str) -> None:
    """Refuse what the arguments alone show to be wrong, before a command's heavy imports (torch, transformers):
    the calibration prompts, then each model spec (:func:`sinkbench.models.locate_model`: a missing path, a file
    that is not GGUF, a missing weights package; :func:`sinkbench.models.hub_access`: a hub id neither reachable
    nor cached).

    Raises:
        UserError: one line naming the argument and the fix.
    """
    from sinkbench.models import hub_access, locate_model
    from sinkbench.sink.prompts import load_calibration

    load_calibration(prompts)
    for model in models:
        source, location = locate_model(model)
        if source == "hub":
            hub_access(location)


def add_quiet(parser: argparse.ArgumentParser) -> None:
    """``--quiet``: no progress bars."""
    parser.add_argument("--quiet", action="store_true", help="no progress bars (default: shown)")


#: What to do when the default submissions folder is not where the command runs.
FROM_THE_ROOT = "run it from the repository root (where submissions/ is), or pass the folder"


def missing_paths(command: str, paths: Sequence[Path], fix: str) -> bool:
    """Print one line naming the ``paths`` that do not exist, and ``fix``; whether any is missing."""
    from sinkbench.cli.failures import printable

    missing = [printable(path) for path in paths if not os.path.exists(path)]
    if missing:
        print(f"sinkbench {command}: no such file or folder: {', '.join(missing)}; {fix}", file=sys.stderr)
    return bool(missing)


def add_folder(
    parser: argparse.ArgumentParser, option: str, help: str, default: str | Path | None = None
) -> None:
    """A folder option, ``option DIR``; required when ``default`` is None (``help`` then says so, else ends with it)."""
    where = {"required": True} if default is None else {"default": Path(default)}
    parser.add_argument(option, type=Path, metavar="DIR", help=help, **where)


def add_submissions_option(parser: argparse.ArgumentParser) -> None:
    """``--submissions DIR``: the submissions folder a command reads."""
    add_folder(
        parser,
        "--submissions",
        "submissions root holding pairs/ and backbones/ (default: %(default)s)",
        "submissions",
    )


def add_entry_output(parser: argparse.ArgumentParser) -> None:
    """``--out DIR`` and ``--force``: the submissions folder a command writes entries into."""
    add_folder(parser, "--out", "submissions folder to write into (default: %(default)s)", "submissions")
    parser.add_argument(
        "--force", action="store_true", help="replace an entry that already exists (default: refuse)"
    )
