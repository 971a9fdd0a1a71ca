"""``sinkbench margin``: G_base, B_gap and the margin proxy of a reference LLM / VLM-LM pair."""

from __future__ import annotations

import argparse

from sinkbench.cli import options
from sinkbench.cli.parser import add_command, arg
from sinkbench.sink.options import PER_HEAD_SINK_MODES, ProbeOptions


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the ``margin`` subcommand."""
    add_command(
        subparsers, "margin", run,
        arg("reference", metavar="REFERENCE", help="reference LLM: hub id, dir, .gguf or embedded name"),
        arg("vlm_lm", metavar="VLM_LM", help="the extracted VLM-LM (see extract-lm): hub id or dir"),
        options.output("the full result"),
        arg("--vlm-lm-revision", help="Hub revision of VLM_LM", shown="main"),
        options.measure_arguments(
            model="REFERENCE", skip=["keep_degenerate"], sink_position={"choices": PER_HEAD_SINK_MODES}
        ),
    )  # fmt: skip


def run(args: argparse.Namespace) -> int:
    """G_base, B_gap and the margin proxy median(G_base) - median(B_gap) for a reference/VLM-LM pair.

    Probe REFERENCE and VLM_LM on the calibration prompts with the Sink Strength probe; B_gap is measured in
    VLM_LM at the reference's per-head sink positions. Prints a per-layer table.
    """
    # the arguments are checked first, before the probe's heavy imports
    options.check_model_arguments([args.reference, args.vlm_lm], args.prompts)
    from sinkbench.sink.margin import format_margin, pair_margin

    loading = options.load_options(args)
    result = pair_margin(
        args.reference,
        args.vlm_lm,
        prompts=args.prompts,
        options=options.from_args(ProbeOptions, args),
        revisions=(loading.pop("revision", None), args.vlm_lm_revision),
        output=options.output_path(args),
        progress=not args.quiet,
        **loading,
    )
    return options.print_report(format_margin(result), args)
