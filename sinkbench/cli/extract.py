"""``sinkbench extract-lm``: a VLM's language backbone as a standalone causal LM."""

from __future__ import annotations

import argparse

from sinkbench.cli.options import OVERWRITE, keywords
from sinkbench.cli.parser import add_command, arg


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the ``extract-lm`` and ``implant-lm`` subcommands."""
    from sinkbench.extract.families import DEFAULT_MAX_SHARD_SIZE

    add_command(
        subparsers, "extract-lm", run_extract,
        arg("source", metavar="SOURCE", help="hub id or local directory of the VLM"),
        arg("out", metavar="OUT", help="output directory (written atomically)"),
        arg("--verify", action="store_true", shown="off",
            help="compare the logits with the VLM's own language path and fail (exit 1) if they differ by more "
            "than 1e-4 in float32"),
        arg("--tokenizer-from", metavar="REFERENCE", shown="the VLM's own",
            help="take tokenizer and chat template from this LLM instead"),
        arg("--max-shard-size", default=DEFAULT_MAX_SHARD_SIZE,
            help="largest output shard, e.g. 2GB; peak memory stays near one shard"),
        arg("--revision", help="Hub revision of SOURCE", shown="main"),
        OVERWRITE,
    )  # fmt: skip
    add_command(
        subparsers, "implant-lm", run_implant,
        arg("vlm", metavar="VLM", help="hub id or local directory of the VLM"),
        arg("lm", metavar="LM", help="the causal-LM folder to put into it"),
        arg("out", metavar="OUT", help="output VLM directory (written atomically)"),
        arg("--no-verify", dest="verify", action="store_false", help="skip the logit check",
            shown="checked; exit 1 if the logits differ by more than 1e-4 in float32"),
        arg("--revision", help="Hub revision of VLM", shown="main"),
        OVERWRITE,
    )  # fmt: skip


def run_implant(args: argparse.Namespace) -> int:
    """The inverse of extract-lm: put a causal LM (e.g. a merged VLM-LM) back into its VLM.

    Write VLM with its language model and LM head replaced by LM's tensors, file by file with the VLM's own
    names; the vision tower, projector, config, processor and tokenizer stay the VLM's. LM must have exactly
    the tensors extract-lm takes from VLM (an extraction of it, merged, ablated or perturbed). The result's
    text-only logits are checked against LM's (float32) before OUT is written.
    """
    from sinkbench.extract import implant_lm

    result = implant_lm(args.vlm, args.lm, args.out, **keywords(args, "verify", "overwrite", "revision"))
    print(f"{result.record['family']}: {result.record['tensors_replaced']} tensors from {args.lm}")
    return _written(result.record["verification"], result.output)


def _written(verification: dict | None, output: object) -> int:
    """Print the logit check (when made) and where the output went; exit status 0."""
    if verification is not None:
        print(f"verified: max |logit diff| = {verification['max_abs_logit_diff']:.3g} (float32)")
    print(f"written to {output}")
    return 0


def run_extract(args: argparse.Namespace) -> int:
    """Extract a VLM's language backbone as a standalone causal LM (the paper's VLM-LM).

    Stream the language backbone of SOURCE (hub id or local VLM dir) into OUT, a normal transformers causal-LM
    directory that AutoModelForCausalLM and `lm_eval --model hf` load, with provenance.json. SOURCE is any VLM
    of transformers' image-text-to-text registry whose language model runs as a transformers causal LM; the
    architecture table on the leaderboard's Methodology pages lists each model type's verdict.
    """
    from sinkbench.extract import extract_lm

    names = ("verify", "tokenizer_from", "overwrite", "revision", "max_shard_size")
    result = extract_lm(args.source, args.out, **keywords(args, *names))
    lm = result.provenance["causal_lm"]
    print(
        f"{result.provenance['family']} -> {lm['architecture']}: {lm['tensors']} tensors, {lm['bytes']:,} bytes"
    )
    return _written(result.provenance["verification"], result.output)
