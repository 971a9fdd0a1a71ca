"""``sinkbench heads``: the sink-head map of one model (per layer and head, over every layer) and its sink heads."""

from __future__ import annotations

import argparse

from sinkbench.cli import options
from sinkbench.cli.parser import add_command, arg, exclusive, finite_float
from sinkbench.sink.options import ALL_LAYERS, DEFAULT_TOP_FRAC, ProbeOptions


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the ``heads`` subcommand."""
    add_command(
        subparsers, "heads", run,
        options.model_argument("model to map"),
        options.output("the head map", required=True),
        exclusive(
            arg("--top-frac", type=finite_float, metavar="F", shown=f"{DEFAULT_TOP_FRAC:g}",
                help="select the top fraction F of heads by median G"),
            arg("--min-g", type=finite_float, metavar="G", shown="not used",
                help="select every head whose median G is at least G, instead of --top-frac"),
        ),
        arg("--plot", metavar="FILE.svg", help="also draw a layer x head heatmap", shown="none"),
        options.measure_arguments(num_layers={"default": ALL_LAYERS, "shown": "all layers"}),
    )  # fmt: skip


def run(args: argparse.Namespace) -> int:
    """Map sink heads: median G, dominant sink position and share of G > 2 per layer and head.

    Probe every decoder layer (unless --num-layers says otherwise) on the calibration prompts and report, per
    (layer, head), the median G, the dominant sink position and the share of G above the threshold, then
    select the sink heads: the top fraction by median G (--top-frac) or every head at or above a median G
    (--min-g). MODEL is resolved as for `sinkbench screen`.
    """
    from sinkbench.sink.heads import map_heads

    options.check_model_arguments([args.model], args.prompts)  # before the probe's heavy imports
    report = map_heads(
        args.model,
        options.from_args(ProbeOptions, args),
        prompts=args.prompts,
        top_frac=args.top_frac,
        min_g=args.min_g,
        output=options.output_path(args),
        plot=options.output_path(args, "plot", ".svg"),
        progress=not args.quiet,
        **options.load_options(args),
    )
    selection = report["selection"]
    print(
        f"{report['model']['id']}: {selection['count']} sink heads ({selection['rule']} = {selection['value']:g}) "
        f"of {len(report['layers'])} layers x {report['num_heads']} heads"
    )
    print("layer.head: " + " ".join(f"{layer}.{head}" for layer, head in selection["heads"]))
    print(f"Head map written to {args.output}" + (f", plot to {args.plot}" if args.plot else ""))
    return 0
