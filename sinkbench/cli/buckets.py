"""``sinkbench buckets``: S and the position-0 mass on the prompts a model passed against those it failed (C.3)."""

from __future__ import annotations

import argparse
from pathlib import Path

from sinkbench.cli import options
from sinkbench.cli.parser import add_command, arg
from sinkbench.sink.options import BucketRule, IntervalOptions, ProbeOptions


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the ``buckets`` subcommand."""
    add_command(
        subparsers, "buckets", run,
        arg("model", metavar="MODEL", help="the model to probe (as for `sinkbench screen`), e.g. the VLM-LM"),
        arg("--samples", type=Path, required=True, metavar="FILE.jsonl",
            help="lm-eval's samples_<task>_*.jsonl of a --log_samples run, whose outcomes define the buckets"),
        options.model_options(BucketRule),
        arg("--per-bucket", type=int, metavar="N", shown="all",
            help="draw N prompts per bucket without replacement, seeded (the paper: 100)"),
        options.output(),
        options.model_options(IntervalOptions, seed={"help": "seed of the per-bucket draws and the bootstraps"}),
        options.measure_arguments(),
    )  # fmt: skip


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
        options.from_args(BucketRule, args),
        options.from_args(ProbeOptions, args),
        interval=options.from_args(IntervalOptions, args),
        per_bucket=args.per_bucket,
        output=options.output_path(args),
        progress=not args.quiet,
        **options.load_options(args),
    )
    return options.print_report(format_buckets(report), args)
