"""``sinkbench buckets``: S and the position-0 mass on the prompts a model passed against those it failed (C.3)."""

from __future__ import annotations

import argparse
from pathlib import Path

from sinkbench.cli import options
from sinkbench.cli.parser import add_command
from sinkbench.sink.options import BucketRule


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the ``buckets`` subcommand."""
    rule = BucketRule()
    parser = add_command(subparsers, "buckets", run)
    parser.add_argument(
        "model", metavar="MODEL", help="the model to probe (as for `sinkbench screen`), e.g. the VLM-LM"
    )
    parser.add_argument(
        "--samples",
        type=Path,
        required=True,
        metavar="FILE.jsonl",
        help="lm-eval's samples_<task>_*.jsonl of a --log_samples run, whose outcomes define the buckets",
    )
    parser.add_argument(
        "--metric", default=rule.metric, help="the per-prompt metric of each sample (default: %(default)s)"
    )
    parser.add_argument(
        "--threshold",
        type=float,
        default=rule.threshold,
        help="a prompt passes when its metric is at least this (default: %(default)s, the paper's)",
    )
    parser.add_argument(
        "--prompt-field",
        default=rule.prompt_field,
        help="the document field holding the prompt (default: %(default)s)",
    )
    parser.add_argument(
        "--filter", default=None, help="lm-eval filter of the samples to read (default: the file's only one)"
    )
    parser.add_argument(
        "--per-bucket",
        type=int,
        default=None,
        metavar="N",
        help="draw N prompts per bucket without replacement, seeded (the paper: 100) (default: all)",
    )
    options.add_output(parser)
    options.add_interval_options(parser, seed="of the per-bucket draws and the bootstraps")
    options.add_measure_options(parser)


def run(args: argparse.Namespace) -> int:
    """S and position-0 mass on the prompts a model passed vs failed in an lm-eval run (paper C.3).

    Split the prompts of an lm-eval --log_samples file into a pass bucket (the per-prompt metric at least the
    threshold) and a fail bucket, probe MODEL on each as `sinkbench screen` probes its calibration prompts,
    and print per bucket S and the position-0 mass (first-token attention over the probed layers x heads x
    last 8 queries) with percentile bootstrap intervals over prompts, and the pass - fail differences with
    theirs.
    """
    from sinkbench.sink.buckets import bucket_strength, format_buckets

    report = bucket_strength(
        args.model,
        args.samples,
        BucketRule(args.metric, args.threshold, args.prompt_field, args.filter),
        options.probe_options(args),
        interval=options.interval_options(args),
        per_bucket=args.per_bucket,
        output=options.output_path(args),
        progress=not args.quiet,
        **options.load_options(args),
    )
    return options.print_report(format_buckets(report), args)
