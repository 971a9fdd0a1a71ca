"""``sinkbench extract-lm`` (a VLM's language backbone as a causal LM) and ``sinkbench margin``."""

from __future__ import annotations

import argparse
import sys

from sinkbench.sink_modes import PER_HEAD_SINK_MODES


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the ``extract-lm`` and ``margin`` subcommands."""
    _register_extract(subparsers)
    _register_margin(subparsers)


def _register_extract(subparsers: argparse._SubParsersAction) -> None:
    from sinkbench.extract.families import supported_families

    parser = subparsers.add_parser(
        "extract-lm",
        help="Extract a VLM's language backbone as a standalone causal LM (the paper's VLM-LM).",
        description="Stream the language backbone of SOURCE (hub id or local VLM dir) into OUT, a normal "
        "transformers causal-LM directory that AutoModelForCausalLM and `lm_eval --model hf` load, with "
        f"provenance.json. Supported families: {supported_families()}.",
    )
    parser.add_argument("source", metavar="SOURCE", help="hub id or local directory of the VLM")
    parser.add_argument("out", metavar="OUT", help="output directory (written atomically)")
    parser.add_argument(
        "--verify",
        action="store_true",
        help="fail (exit 1) if logits differ from the VLM's by more than 1e-4",
    )
    parser.add_argument(
        "--tokenizer-from", metavar="REFERENCE", help="take tokenizer and chat template from this LLM instead"
    )
    parser.add_argument(
        "--max-shard-size", default="5GB", help="largest output shard, e.g. 2GB (default 5GB)"
    )
    parser.add_argument("--revision", help="hub revision of SOURCE")
    parser.add_argument("--overwrite", action="store_true", help="replace OUT if it exists")
    parser.set_defaults(handler=run_extract)


def _register_margin(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "margin",
        help="G_base, B_gap and the margin proxy median(G_base) - median(B_gap) for a reference/VLM-LM pair.",
        description="Probe REFERENCE and VLM_LM on the calibration prompts with the Sink Strength probe; "
        "B_gap is measured in VLM_LM at the reference's per-head sink positions. Prints a per-layer table.",
    )
    parser.add_argument("reference", metavar="REFERENCE", help="reference LLM: hub id, dir or .gguf")
    parser.add_argument(
        "vlm_lm", metavar="VLM_LM", help="the extracted VLM-LM (see extract-lm): hub id or dir"
    )
    parser.add_argument("--output", "-o", metavar="FILE.json", help="write the full result as JSON")
    parser.add_argument(
        "--prompts", metavar="FILE", help="calibration prompts (.jsonl with 'prompt', or .txt)"
    )
    parser.add_argument("--num-layers", type=int, default=10, help="probe the last K layers (default 10)")
    parser.add_argument(
        "--sink-position",
        choices=PER_HEAD_SINK_MODES,
        default="head",
        help="how p_sink is chosen (default head)",
    )
    parser.add_argument("--chat-template", choices=("auto", "on", "off"), default="auto")
    parser.add_argument("--dtype", default="float32", choices=("float32", "bfloat16", "float16", "auto"))
    parser.add_argument("--device", default=None, help="e.g. cpu, cuda:0")
    parser.add_argument("--quiet", action="store_true", help="no progress bar")
    parser.set_defaults(handler=run_margin)


def run_extract(args: argparse.Namespace) -> int:
    """Handle ``sinkbench extract-lm``."""
    from sinkbench.extract import ExtractError, VerificationError, extract_lm

    shard_size = {"max_shard_size": args.max_shard_size} if args.max_shard_size else {}
    try:
        result = extract_lm(
            args.source,
            args.out,
            verify=args.verify,
            tokenizer_from=args.tokenizer_from,
            overwrite=args.overwrite,
            revision=args.revision,
            **shard_size,
        )
    except (ExtractError, VerificationError) as error:
        print(f"sinkbench extract-lm: {error}", file=sys.stderr)
        return 1
    lm = result.provenance["causal_lm"]
    print(
        f"{result.provenance['family']} -> {lm['architecture']}: {lm['tensors']} tensors, {lm['bytes']:,} bytes"
    )
    verification = result.provenance["verification"]
    if verification is not None:
        print(f"verified: max |logit diff| = {verification['max_abs_logit_diff']:.3g} (float32)")
    print(f"written to {result.output}")
    return 0


def run_margin(args: argparse.Namespace) -> int:
    """Handle ``sinkbench margin``."""
    from pathlib import Path

    from sinkbench.margin import format_margin, pair_margin
    from sinkbench.measure import ProbeOptions

    options = ProbeOptions(
        num_layers=args.num_layers, sink_position=args.sink_position, chat_template=args.chat_template
    )
    try:
        result = pair_margin(
            args.reference,
            args.vlm_lm,
            prompts_path=args.prompts,
            options=options,
            dtype=args.dtype,
            device=args.device,
            output=Path(args.output) if args.output else None,
            progress=not args.quiet,
        )
    except (ValueError, FileNotFoundError) as error:
        print(f"sinkbench margin: {error}", file=sys.stderr)
        return 1
    print(format_margin(result))
    if args.output:
        print(f"Report written to {args.output}")
    return 0
