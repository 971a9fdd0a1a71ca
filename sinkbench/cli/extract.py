"""``sinkbench extract-lm``: a VLM's language backbone as a standalone causal LM."""

from __future__ import annotations

import argparse


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the ``extract-lm`` subcommand."""
    from sinkbench.extract.families import DEFAULT_MAX_SHARD_SIZE

    parser = subparsers.add_parser(
        "extract-lm",
        help="Extract a VLM's language backbone as a standalone causal LM (the paper's VLM-LM).",
        description="Stream the language backbone of SOURCE (hub id or local VLM dir) into OUT, a normal "
        "transformers causal-LM directory that AutoModelForCausalLM and `lm_eval --model hf` load, with "
        "provenance.json. SOURCE is any VLM of transformers' image-text-to-text registry whose language model "
        "runs as a transformers causal LM; the architecture table on the leaderboard's Methodology pages lists "
        "each model type's verdict.",
    )
    parser.add_argument("source", metavar="SOURCE", help="hub id or local directory of the VLM")
    parser.add_argument("out", metavar="OUT", help="output directory (written atomically)")
    parser.add_argument(
        "--verify",
        action="store_true",
        help="compare the logits with the VLM's own language path and fail (exit 1) if they differ by more "
        "than 1e-4 in float32 (default: off)",
    )
    parser.add_argument(
        "--tokenizer-from",
        metavar="REFERENCE",
        help="take tokenizer and chat template from this LLM instead (default: the VLM's own)",
    )
    parser.add_argument(
        "--max-shard-size",
        default=DEFAULT_MAX_SHARD_SIZE,
        help="largest output shard, e.g. 2GB; peak memory stays near one shard (default: %(default)s)",
    )
    parser.add_argument("--revision", help="Hub revision of SOURCE (default: main)")
    parser.add_argument(
        "--overwrite", action="store_true", help="replace OUT if it exists (default: refuse to overwrite)"
    )
    parser.set_defaults(handler=run_extract)


def run_extract(args: argparse.Namespace) -> int:
    """Handle ``sinkbench extract-lm``."""
    from sinkbench.extract import extract_lm

    result = extract_lm(
        args.source,
        args.out,
        verify=args.verify,
        tokenizer_from=args.tokenizer_from,
        overwrite=args.overwrite,
        revision=args.revision,
        max_shard_size=args.max_shard_size,
    )
    lm = result.provenance["causal_lm"]
    print(
        f"{result.provenance['family']} -> {lm['architecture']}: {lm['tensors']} tensors, {lm['bytes']:,} bytes"
    )
    verification = result.provenance["verification"]
    if verification is not None:
        print(f"verified: max |logit diff| = {verification['max_abs_logit_diff']:.3g} (float32)")
    print(f"written to {result.output}")
    return 0
