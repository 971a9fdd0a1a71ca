"""``sinkbench margin``: G_base, B_gap and the margin proxy of a reference LLM / VLM-LM pair."""

from __future__ import annotations

import argparse

from sinkbench.cli.options import (
    add_model_options,
    add_probe_options,
    add_quiet,
    check_model_arguments,
    probe_options,
)
from sinkbench.sink.options import PER_HEAD_SINK_MODES


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the ``margin`` subcommand."""
    parser = subparsers.add_parser(
        "margin",
        help="G_base, B_gap and the margin proxy median(G_base) - median(B_gap) for a reference/VLM-LM pair.",
        description="Probe REFERENCE and VLM_LM on the calibration prompts with the Sink Strength probe; "
        "B_gap is measured in VLM_LM at the reference's per-head sink positions. Prints a per-layer table.",
    )
    parser.add_argument(
        "reference", metavar="REFERENCE", help="reference LLM: hub id, dir, .gguf or embedded name"
    )
    parser.add_argument(
        "vlm_lm", metavar="VLM_LM", help="the extracted VLM-LM (see extract-lm): hub id or dir"
    )
    parser.add_argument(
        "--output", "-o", metavar="FILE.json", help="also write the full result as JSON (default: print only)"
    )
    parser.add_argument("--vlm-lm-revision", default=None, help="Hub revision of VLM_LM (default: main)")
    add_probe_options(parser, sink_modes=PER_HEAD_SINK_MODES)
    add_model_options(parser, model="REFERENCE")
    add_quiet(parser)
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    """Handle ``sinkbench margin``: the arguments are checked first, before the probe's heavy imports."""
    from pathlib import Path

    check_model_arguments([args.reference, args.vlm_lm], args.prompts)
    from sinkbench.sink.margin import format_margin, pair_margin

    result = pair_margin(
        args.reference,
        args.vlm_lm,
        prompts=args.prompts,
        options=probe_options(args),
        dtype=args.dtype,
        device=args.device,
        device_map=args.device_map,
        revisions=(args.revision, args.vlm_lm_revision),
        output=Path(args.output) if args.output else None,
        progress=not args.quiet,
    )
    print(format_margin(result))
    if args.output:
        print(f"Report written to {args.output}")
    return 0
