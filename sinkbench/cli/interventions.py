"""The intervention commands (:mod:`sinkbench.interventions`), each one entry of :data:`INTERVENTIONS` (its name,
help, models, options and library spec) that :func:`register` turns into a subcommand."""

from __future__ import annotations

import argparse
import functools
import importlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from sinkbench.cli import options
from sinkbench.cli.parser import Argument, add_command, arg, exclusive, group
from sinkbench.interventions.settings import AblationParameters, MergeParameters, RandomControlParameters
from sinkbench.sink.options import IntervalOptions, ProbeOptions

_MODEL = "hub id, local folder, .gguf file or embedded name (as for `sinkbench screen`)"


@dataclass(frozen=True)
class Intervention:
    """One intervention command: its subcommand ``name`` and help ``doc``.

    ``models``: its model arguments, ``(name, help)`` each, the spec's first roles (a later role is the option of its
    name; a command of one model takes ``--revision``). ``out``: what OUT holds, None for a command that only
    reports. ``spec``: ``module:NAME`` of its :class:`~sinkbench.interventions.checkpoint.Intervention`, taking the
    ``parameters`` options; without one, ``call`` does it all (and measures no S), else it runs the spec.
    """

    name: str
    doc: str
    models: tuple[tuple[str, str], ...]
    out: str | None
    spec: str | None = None
    parameters: Argument | None = None
    call: Callable[[argparse.Namespace], None] | None = None

    def __post_init__(self) -> None:
        if self.call is None:  # the handler that runs the spec, its docstring the command's help
            handler = functools.partial(_write, self)
            handler.__doc__ = self.doc
            object.__setattr__(self, "call", handler)

    @property
    def strength(self) -> bool:
        """Whether S of the input and output models is measured (``--skip-strength``, the probe options)."""
        return self.spec is not None


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add one subcommand per entry of :data:`INTERVENTIONS`."""
    for spec in INTERVENTIONS:
        model = "the model" if len(spec.models) == 1 else None
        add_command(
            subparsers, spec.name, spec.call,
            *(arg(name, metavar=name.upper(), help=help) for name, help in spec.models),
            *([arg("out", metavar="OUT", help=f"{spec.out} (written atomically, as a whole)"),
               arg("--overwrite", action="store_true", shown="refuse an existing OUT",
                   help="replace OUT when it is an earlier output of sinkbench")] if spec.out else []),
            *([spec.parameters] if spec.parameters else []),
            *([arg("--skip-strength", action="store_true", help="do not measure S of the input and output models",
                   shown="measured, as `sinkbench screen` does"),
               options.model_options(IntervalOptions, skip=["seed"]),
               options.measure_arguments(model=model)] if spec.strength else
              [options.load_arguments(model), options.QUIET]),
        )  # fmt: skip


def _common(args: argparse.Namespace) -> dict[str, Any]:
    """The keywords every intervention call takes: progress bars and how models load."""
    return {"progress": not args.quiet, **options.load_options(args)}


def _write(command: Intervention, args: argparse.Namespace) -> None:
    """Run the command's library spec on the parsed arguments and print its report."""
    from sinkbench.interventions.checkpoint import StrengthProbe, write_intervention

    measure = StrengthProbe(
        options.from_args(ProbeOptions, args), args.prompts, options.from_args(IntervalOptions, args)
    )
    probe = None if args.skip_strength else measure
    module, _, name = command.spec.partition(":")
    spec = getattr(importlib.import_module(f"sinkbench.interventions.{module}"), name)
    names = [model for model, _ in command.models] + list(spec.roles[len(command.models) :])
    models = {role: getattr(args, name) for role, name in zip(spec.roles, names, strict=True)}
    parameters = options.from_args(spec.parameters, args)
    report = write_intervention(
        spec, models, args.out, parameters, probe=probe, overwrite=args.overwrite, **_common(args)
    )
    print(f"{report.text()}\nwritten to {args.out}")


_DISPLACEMENT_PARAMETERS = group(
    arg("--versus", metavar="OTHER", help="a second endpoint of REFERENCE, for the ratios", shown="none"),
    exclusive(
        arg("--window", type=int, default=ProbeOptions.num_layers, metavar="K",
            help="summarise the last K decoder layers"),
        arg("--layer-band", metavar="BAND", shown="none",
            help="summarise a band instead: first-third, middle-third, last-third or START-END"),
    ),
    options.output(),
    arg("--plot", metavar="FILE.svg", help="draw ||dW||_2 per layer, one panel per projection", shown="none"),
)  # fmt: skip


def _displacement(args: argparse.Namespace) -> None:
    """Where a VLM-LM's weights moved from its reference: per layer and projection, ||dW||_2 and ||dW||_F /
    ||W||_F (paper F.1).

    Compare ENDPOINT (e.g. a VLM-LM from `sinkbench extract-lm`) with REFERENCE, tensor by tensor: operator
    norm and relative Frobenius norm of each projection's change, relative change of each norm scale. With
    --versus (a second endpoint of the same reference, e.g. the text-only one) it also gives each layer's
    ratio of the two operator norms and, per projection, the median over the window of layers.
    """
    from sinkbench.interventions.displacement import format_displacement, weight_displacement
    from sinkbench.interventions.plots import displacement_svg
    from sinkbench.safe_io import write_text_atomic

    # both checked before the work
    output, plot = options.output_path(args), options.output_path(args, "plot", ".svg")
    report = weight_displacement(
        args.reference,
        args.endpoint,
        band=args.layer_band,
        output=output,
        **options.keywords(args, "versus", "window"),
        **_common(args),
    )
    print(format_displacement(report))
    if plot is not None:
        plot.parent.mkdir(parents=True, exist_ok=True)
        write_text_atomic(plot, displacement_svg(report))
    for what, where in (("report", args.output), ("plot", args.plot)):
        if where:
            print(f"{what} written to {where}")


_MERGE_PARAMETERS = group(
    exclusive(
        options.model_options(MergeParameters, only=["setting"]),
        arg("--sweep", action="store_true", help="run all seven settings", shown="off; this or --setting"),
        required=True,
    ),
    arg("--base", metavar="BASE", shown="none, the reference is the base",
        help="the pretrained model both were fine-tuned from, for the two-task-vector reading"),
    options.model_options(MergeParameters, skip=["setting"]),
)  # fmt: skip


_REFERENCE = ("reference", f"the reference LLM: {_MODEL}")
#: Every intervention command, in help order.
INTERVENTIONS = (
    Intervention(
        "displacement",
        _displacement.__doc__,
        models=(_REFERENCE, ("endpoint", "the model fine-tuned from it (same architecture)")),
        out=None,
        parameters=_DISPLACEMENT_PARAMETERS,
        call=_displacement,
    ),
    Intervention(
        "random-control",
        """The random-dW control: REFERENCE plus Gaussian noise matched per tensor to VLM_LM's change (paper D.4).

        Add seeded Gaussian noise to every attention and MLP projection of REFERENCE (--scope changed: to every
        tensor VLM_LM changed), scaled so that each one's ||dW||_F (--match operator: ||dW||_2) equals VLM_LM's;
        by default norm scales, biases, embeddings and the LM head are left untouched, as in the paper. OUT is a
        transformers checkpoint with intervention.json (targets and realised norms, S).
        """,
        models=(_REFERENCE, ("vlm_lm", "its VLM-LM, whose changes the noise matches")),
        out="the control checkpoint folder",
        spec="random_control:RANDOM_CONTROL",
        parameters=options.model_options(RandomControlParameters),
    ),
    Intervention(
        "ablate-norms",
        """Channel ablation: the top-K |gamma| channels of norm scales set to the layer's channel mean (paper D.3).

        In every decoder layer, set the top-K channels by |gamma| of each chosen norm to that norm's channel mean
        (gamma is the effective scale: 1 + weight for Gemma's norms), each norm alone (single) and all together
        (joint). OUT holds one checkpoint per setting (OUT/<norm>/, OUT/joint/) and intervention.json with the
        channels changed and S of each.
        """,
        models=(("model", f"the model: {_MODEL}"),),
        out="the folder of ablated checkpoints",
        spec="ablation:CHANNEL_ABLATION",
        parameters=options.model_options(AblationParameters),
    ),
    Intervention(
        "inject-qk-norm",
        """Add per-head QK-RMSNorm with unit scales to a backbone without it (paper F.3), as a native checkpoint.

        Write MODEL with an RMSNorm over each head's queries and keys (gamma = 1, before RoPE) as a checkpoint of
        the native transformers architecture that has these norms and otherwise computes MODEL's function (Qwen3,
        for Llama, Mistral and Qwen2 sources), loadable without remote code. The sameness is checked before
        writing: with the new norms taken out, the logits must equal MODEL's. No training.
        """,
        models=(("model", f"the model: {_MODEL}"),),
        out="the injected checkpoint folder",
        spec="qk_norm:QK_NORM_INJECTION",
    ),
    Intervention(
        "merge",
        """Merge a VLM-LM with its reference LLM: the paper's seven settings (F.4) on mergekit (sinkbench[merge]).

        Merge VLM_LM with REFERENCE by one setting (--setting) or all seven (--sweep: OUT/<setting>/ each).
        Settings: mix_95_5 (95% VLM + 5% LLM), uniform, task_arithmetic (lambda=1), tsv (alpha=1), star (eta=40%),
        ties (density 0.2, lambda=1), dare (mask rate 0.9, lambda=1). Without --base the task-vector settings read
        the reference as the base and VLM_LM - REFERENCE as the one task vector, so task_arithmetic and tsv return
        VLM_LM unchanged; with --base both models are task vectors over it. Needs mergekit (LGPL-3.0): pip install
        'sinkbench[merge]'.
        """,
        models=(_REFERENCE, ("vlm_lm", "its VLM-LM (same architecture and size)")),
        out="the merged checkpoint folder (with --sweep: a folder of them)",
        spec="merging:MERGE",
        parameters=_MERGE_PARAMETERS,
    ),
)
