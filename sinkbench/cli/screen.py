"""``sinkbench screen``: measure Sink Strength S of one model."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from sinkbench.cli import options
from sinkbench.cli.parser import add_command, arg
from sinkbench.sink.options import IntervalOptions, ProbeOptions


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the ``screen`` subcommand."""
    add_command(
        subparsers, "screen", run,
        options.model_argument("model to screen"),
        options.output(),
        arg("--print-model-dir", action="store_true", shown="screen",
            help="print the folder (or hub id) of MODEL that lm-eval's --model_args pretrained= takes, and exit "
            "without screening: for an embedded or .gguf model its dequantized copy, built on first use, e.g. "
            'lm_eval --model hf --model_args pretrained="$(sinkbench screen --print-model-dir)"'),
        options.model_options(IntervalOptions),
        arg("--against", metavar="DIR|none",
            help="place the model among the backbones of this submissions folder: its rank by S and the deltas "
            "the pairs' fits predict for it",
            shown="./submissions when it exists, else the packaged snapshot of the seeded tables; none: skip"),
        options.measure_arguments(),
    )  # fmt: skip


def _against(value: str | None) -> tuple[bool, Path | None]:
    """(place at all, submissions folder or None for the packaged snapshot)."""
    if value == "none":
        return False, None
    if value is None:
        return True, Path("submissions") if Path("submissions").is_dir() else None
    return True, Path(value)


def run(args: argparse.Namespace) -> int:
    """Measure Sink Strength S of a base LLM (default: embedded SmolLM2-135M-Instruct).

    Probe the last K decoder layers on the calibration prompts and print S with a per-layer profile. MODEL is
    a hub id, a local transformers dir, a .gguf file, or an embedded name (smollm2-135m-instruct,
    gemma3-270m). With --print-model-dir it prints the folder that lm-eval's --model_args pretrained= takes
    for MODEL instead.
    """
    # the arguments are checked first, before the probe's heavy imports
    if args.print_model_dir:
        from sinkbench.models import model_dir

        print(model_dir(args.model, progress=not args.quiet))
        return 0
    options.check_model_arguments([args.model], args.prompts)
    wanted, against = _against(args.against)
    if wanted and against is not None and not against.is_dir():
        print(
            f"sinkbench screen: --against {against} is not a folder; pass a submissions folder, or none",
            file=sys.stderr,
        )
        return 2
    if wanted and against is not None and options.holds_no_entry("screen", against, "--against"):
        return 1
    from sinkbench.screen import screen

    _, text = screen(
        args.model,
        place_among=wanted,
        against=against,
        options=options.from_args(ProbeOptions, args),
        prompts=args.prompts,
        interval=options.from_args(IntervalOptions, args),
        output=options.output_path(args),
        progress=not args.quiet,
        **options.load_options(args),
    )
    return options.print_report(text, args)
