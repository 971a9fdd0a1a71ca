"""``sinkbench screen``: measure Sink Strength S of one model."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from sinkbench.cli.options import (
    add_model_options,
    add_probe_options,
    add_quiet,
    check_model_arguments,
    probe_options,
)
from sinkbench.sink.options import IntervalOptions


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the ``screen`` subcommand."""
    parser = subparsers.add_parser(
        "screen",
        help="Measure Sink Strength S of a base LLM (default: embedded SmolLM2-135M-Instruct).",
        description="Probe the last K decoder layers on the calibration prompts and print S with a "
        "per-layer profile. MODEL is a hub id, a local transformers dir, a .gguf file, or an "
        "embedded name (smollm2-135m-instruct, gemma3-270m). With --print-model-dir it prints the folder that "
        "lm-eval's --model_args pretrained= takes for MODEL instead.",
    )
    parser.add_argument(
        "model",
        nargs="?",
        default=None,
        metavar="MODEL",
        help="model to screen (default: smollm2-135m-instruct, embedded)",
    )
    parser.add_argument(
        "--output", "-o", metavar="FILE.json", help="also write the full report as JSON (default: print only)"
    )
    parser.add_argument(
        "--print-model-dir",
        action="store_true",
        help="print the folder (or hub id) of MODEL that lm-eval's --model_args pretrained= takes, and exit without "
        "screening: for an embedded or .gguf model its dequantized copy, built on first use, e.g. "
        'lm_eval --model hf --model_args pretrained="$(sinkbench screen --print-model-dir)" (default: screen)',
    )
    add_probe_options(parser)
    parser.add_argument(
        "--bootstrap-resamples",
        type=int,
        default=IntervalOptions.resamples,
        metavar="N",
        help="resamples of the bootstrap over prompts behind S's interval; 0 turns it off (default: %(default)s)",
    )
    parser.add_argument(
        "--seed", type=int, default=IntervalOptions.seed, help="seed of that bootstrap (default: %(default)s)"
    )
    parser.add_argument(
        "--against",
        default=None,
        metavar="DIR|none",
        help="place the model among the backbones of this submissions folder: its rank by S and the deltas the "
        "pairs' fits predict for it (default: ./submissions when it exists, else the packaged snapshot of the "
        "seeded tables; none: skip)",
    )
    add_model_options(parser)
    add_quiet(parser)
    parser.set_defaults(handler=run)


def _against(value: str | None) -> tuple[bool, Path | None]:
    """(place at all, submissions folder or None for the packaged snapshot)."""
    if value == "none":
        return False, None
    if value is None:
        return True, Path("submissions") if Path("submissions").is_dir() else None
    return True, Path(value)


def run(args: argparse.Namespace) -> int:
    """Handle ``sinkbench screen``: the arguments are checked first, before the probe's heavy imports."""
    if args.print_model_dir:
        from sinkbench.models import model_dir

        print(model_dir(args.model, progress=not args.quiet))
        return 0
    check_model_arguments([args.model], args.prompts)
    wanted, against = _against(args.against)
    if wanted and against is not None and not against.is_dir():
        print(
            f"sinkbench screen: --against {against} is not a folder; pass a submissions folder, or none",
            file=sys.stderr,
        )
        return 2
    from sinkbench.screen import screen

    options = {
        "options": probe_options(args),
        "prompts": args.prompts,
        "interval": IntervalOptions(resamples=args.bootstrap_resamples, seed=args.seed),
        "dtype": args.dtype,
        "device": args.device,
        "device_map": args.device_map,
        "revision": args.revision,
        "output": Path(args.output) if args.output else None,
        "progress": not args.quiet,
    }
    _, text = screen(args.model, place_among=wanted, against=against, **options)
    print(text)
    if args.output:
        print(f"Report written to {args.output}")
    return 0
