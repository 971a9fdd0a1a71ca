"""``sinkbench buckets``: S and the position-0 mass on the prompts a model passed against those it failed (C.3)."""

from __future__ import annotations

import argparse
from pathlib import Path

from sinkbench.cli.options import add_model_options, add_probe_options, add_quiet, load_options, probe_options
from sinkbench.sink.options import BucketRule, IntervalOptions


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the ``buckets`` subcommand."""
    rule = BucketRule()
    parser = subparsers.add_parser(
        "buckets",
        help="S and position-0 mass on the prompts a model passed vs failed in an lm-eval run (paper C.3).",
        description="Split the prompts of an lm-eval --log_samples file into a pass bucket (the per-prompt metric "
        "at least the threshold) and a fail bucket, probe MODEL on each as `sinkbench screen` probes its "
        "calibration prompts, and print per bucket S and the position-0 mass (first-token attention over the "
        "probed layers x heads x last 8 queries) with percentile bootstrap intervals over prompts, and the "
        "pass - fail differences with theirs.",
    )
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
    parser.add_argument(
        "--output", "-o", metavar="FILE.json", help="also write the full report as JSON (default: print only)"
    )
    parser.add_argument(
        "--bootstrap-resamples",
        type=int,
        default=IntervalOptions.resamples,
        metavar="N",
        help="resamples of the bootstraps over prompts; 0: no intervals (default: %(default)s)",
    )
    parser.add_argument(
        "--seed",
        type=int,
        default=IntervalOptions.seed,
        help="seed of the draws and bootstraps (default: %(default)s)",
    )
    add_probe_options(parser)
    add_model_options(parser)
    add_quiet(parser)
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    """Handle ``sinkbench buckets``."""
    from sinkbench.sink.buckets import bucket_strength, format_buckets

    report = bucket_strength(
        args.model,
        args.samples,
        BucketRule(args.metric, args.threshold, args.prompt_field, args.filter),
        probe_options(args),
        interval=IntervalOptions(resamples=args.bootstrap_resamples, seed=args.seed),
        per_bucket=args.per_bucket,
        output=Path(args.output) if args.output else None,
        progress=not args.quiet,
        **load_options(args),
    )
    print(format_buckets(report))
    if args.output:
        print(f"Report written to {args.output}")
    return 0
