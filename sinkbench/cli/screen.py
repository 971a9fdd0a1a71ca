"""``sinkbench screen``: measure Sink Strength S of one model."""

from __future__ import annotations

import argparse

from sinkbench.sink_modes import SINK_MODES


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the ``screen`` subcommand."""
    parser = subparsers.add_parser(
        "screen",
        help="Measure Sink Strength S of a base LLM (default: embedded SmolLM2-135M-Instruct).",
        description="Probe the last K decoder layers on the calibration prompts and print S with a "
        "per-layer profile. MODEL is a hub id, a local transformers dir, a .gguf file, or an "
        "embedded name (smollm2-135m-instruct, gemma3-270m).",
    )
    parser.add_argument("model", nargs="?", default=None, metavar="MODEL", help="model to screen")
    parser.add_argument("--output", "-o", metavar="FILE.json", help="write the full report as JSON")
    parser.add_argument(
        "--prompts", metavar="FILE", help="calibration prompts (.jsonl with 'prompt', or .txt)"
    )
    parser.add_argument("--num-layers", type=int, default=10, help="probe the last K layers (default 10)")
    parser.add_argument(
        "--sink-position", choices=SINK_MODES, default="head", help="how p_sink is chosen (default head)"
    )
    parser.add_argument("--keep-degenerate", action="store_true", help="keep a=1 observations as G=+inf")
    parser.add_argument("--chat-template", choices=("auto", "on", "off"), default="auto")
    parser.add_argument("--padding-side", choices=("right", "left"), default="right")
    parser.add_argument("--batch-size", type=int, default=8)
    parser.add_argument("--dtype", default="float32", choices=("float32", "bfloat16", "float16", "auto"))
    parser.add_argument("--device", default=None, help="e.g. cpu, cuda:0")
    parser.add_argument("--device-map", default=None, help="e.g. auto (shard over GPUs via accelerate)")
    parser.add_argument("--revision", default=None, help="hub revision")
    parser.add_argument("--quiet", action="store_true", help="no progress bar")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    """Handle ``sinkbench screen``."""
    from pathlib import Path

    from sinkbench.measure import ProbeOptions
    from sinkbench.screening import screen

    options = ProbeOptions(
        num_layers=args.num_layers,
        sink_position=args.sink_position,
        keep_degenerate=args.keep_degenerate,
        chat_template=args.chat_template,
        padding_side=args.padding_side,
        batch_size=args.batch_size,
    )
    _, text = screen(
        args.model,
        options,
        prompts_path=args.prompts,
        dtype=args.dtype,
        device=args.device,
        device_map=args.device_map,
        revision=args.revision,
        output=Path(args.output) if args.output else None,
        progress=not args.quiet,
    )
    print(text)
    if args.output:
        print(f"Report written to {args.output}")
    return 0
