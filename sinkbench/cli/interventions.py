"""The intervention commands (``sinkbench.interventions``): ``displacement``, ``random-control``,
``ablate-norms``, ``inject-qk-norm`` and ``merge``, each one entry of :data:`INTERVENTIONS` (its name, models,
parameters and library call, whose docstring is its help), which :func:`register` turns into subcommands. Heavy
imports happen in the calls."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from sinkbench.cli import options
from sinkbench.cli.parser import add_command
from sinkbench.interventions.settings import (
    ABLATION_SETTINGS,
    DEFAULT_TOP_K,
    MERGE_SETTING_NAMES,
    PAPER_NORMS,
)
from sinkbench.sink.options import ProbeOptions

_MODEL = "hub id, local folder, .gguf file or embedded name (as for `sinkbench screen`)"


@dataclass(frozen=True)
class Intervention:
    """One intervention command.

    Attributes:
        name: the subcommand.
        models: its model arguments, ``(name, help)`` each; a command of one model loads it with ``--revision``.
        out: what OUT holds (written atomically), or None for a command that only reports.
        call: the library call on the parsed arguments, which prints what it did: the command's handler, its
            docstring the command's help (:func:`~sinkbench.cli.parser.add_command`).
        parameters: adds the intervention's own options, if it has any.
        strength: whether S of the input and output models is measured (``--skip-strength``, the probe options).
    """

    name: str
    models: tuple[tuple[str, str], ...]
    out: str | None
    call: Callable[[argparse.Namespace], None]
    parameters: Callable[[argparse.ArgumentParser], None] | None = None
    strength: bool = True


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add one subcommand per entry of :data:`INTERVENTIONS`."""
    for spec in INTERVENTIONS:
        parser = add_command(subparsers, spec.name, spec.call)
        for name, help in spec.models:
            parser.add_argument(name, metavar=name.upper(), help=help)
        if spec.out is not None:
            parser.add_argument("out", metavar="OUT", help=f"{spec.out} (written atomically, as a whole)")
            parser.add_argument(
                "--overwrite",
                action="store_true",
                help="replace OUT when it is an earlier output of sinkbench (default: refuse an existing OUT)",
            )
        if spec.parameters is not None:
            spec.parameters(parser)
        model = "the model" if len(spec.models) == 1 else None
        if spec.strength:
            parser.add_argument(
                "--skip-strength",
                action="store_true",
                help="do not measure S of the input and output models (default: measured, as `sinkbench screen` "
                "does)",
            )
            options.add_interval_options(parser, seed=None)
            options.add_measure_options(parser, model=model)
        else:
            options.add_model_options(parser, model=model)
            options.add_quiet(parser)


def _probe(args: argparse.Namespace) -> Any:
    from sinkbench.interventions.checkpoint import StrengthProbe

    if args.skip_strength:
        return None
    return StrengthProbe(options.probe_options(args), args.prompts, options.interval_options(args))


def _common(args: argparse.Namespace) -> dict[str, Any]:
    """The keywords every intervention call takes: progress bars, how models load, and S's probe."""
    probe = {"probe": _probe(args)} if "skip_strength" in args else {}
    return {"progress": not args.quiet, **probe, **options.load_options(args)}


def _strength(found: dict | None) -> str:
    """``S = +1.456 [+1.382, +1.518]`` of a measured strength, or nothing when S was not measured."""
    if found is None:
        return ""
    ci = found.get("sink_strength_ci")
    interval = f" [{ci[0]:+.3f}, {ci[1]:+.3f}]" if ci else ""
    return f"S = {found['sink_strength']:+.3f}{interval}"


def _strength_line(label: str, found: dict | None) -> str:
    """``  S of LABEL = ...`` on a line of its own, or nothing."""
    return f"  S of {label}{_strength(found)[1:]}\n" if found is not None else ""


def _with_strength(text: str, found: dict | None) -> str:
    """``text`` followed by ``; S = ...`` when S was measured."""
    return f"{text}; {_strength(found)}" if found is not None else text


def _displacement_parameters(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--versus",
        metavar="OTHER",
        default=None,
        help="a second endpoint of REFERENCE, for the ratios (default: none)",
    )
    window = parser.add_mutually_exclusive_group()
    window.add_argument(
        "--window",
        type=int,
        default=ProbeOptions.num_layers,
        metavar="K",
        help="summarise the last K decoder layers (default: %(default)s)",
    )
    window.add_argument(
        "--layer-band",
        metavar="BAND",
        default=None,
        help="summarise a band instead: first-third, middle-third, last-third or START-END (default: none)",
    )
    options.add_output(parser)
    parser.add_argument(
        "--plot", metavar="FILE.svg", help="draw ||dW||_2 per layer, one panel per projection (default: none)"
    )


def _displacement(args: argparse.Namespace) -> None:
    """Where a VLM-LM's weights moved from its reference: per layer and projection, ||dW||_2 and ||dW||_F /
    ||W||_F (paper F.1).

    Compare ENDPOINT (e.g. a VLM-LM from `sinkbench extract-lm`) with REFERENCE, tensor by tensor: operator
    norm and relative Frobenius norm of each projection's change, relative change of each norm scale. With
    --versus (a second endpoint of the same reference, e.g. the text-only one) it also gives each layer's
    ratio of the two operator norms and, per projection, the median over the window of layers.
    """
    from pathlib import Path

    from sinkbench.interventions.displacement import format_displacement, weight_displacement
    from sinkbench.interventions.plots import displacement_svg
    from sinkbench.safe_io import write_text_atomic

    report = weight_displacement(
        args.reference,
        args.endpoint,
        band=args.layer_band,
        output=options.output_path(args),
        **options.keywords(args, "versus", "window"),
        **_common(args),
    )
    print(format_displacement(report))
    if args.plot:
        plot = Path(args.plot)
        plot.parent.mkdir(parents=True, exist_ok=True)
        write_text_atomic(plot, displacement_svg(report))
    for what, where in (("report", args.output), ("plot", args.plot)):
        if where:
            print(f"{what} written to {where}")


def _random_control_parameters(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--seed", type=int, default=0, help="seed of the noise (default: %(default)s)")


def _random_control(args: argparse.Namespace) -> None:
    """The random-dW control: REFERENCE plus Gaussian noise matched per projection to VLM_LM's relative change
    (paper D.4).

    Add seeded Gaussian noise to every attention and MLP projection of REFERENCE, scaled so that each one's
    ||dW||_F / ||W||_F equals VLM_LM's; norm scales, biases, embeddings and the LM head are left untouched.
    OUT is a transformers checkpoint with intervention.json (targets and realised norms, S).
    """
    from sinkbench.interventions.random_control import write_random_control

    report = write_random_control(
        args.reference, args.vlm_lm, args.out, seed=args.seed, overwrite=args.overwrite, **_common(args)
    )
    strengths = report["sink_strength"] or {}
    print(
        f"random control of {len(report['projections'])} projections, seed {args.seed}: realised relative norms "
        f"within {report['max_relative_error']:.2%} of their targets\n"
        + "".join(_strength_line(role, strengths.get(role)) for role in ("reference", "vlm_lm", "control"))
        + f"written to {args.out}"
    )


def _ablate_parameters(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--norms",
        default=None,
        metavar="A,B",
        help=f"comma-separated norm names, as the model names them (default: those of {', '.join(PAPER_NORMS)} "
        "the model has, as in the paper)",
    )
    parser.add_argument(
        "--top-k",
        type=int,
        default=DEFAULT_TOP_K,
        metavar="K",
        help="channels per layer and norm (default: %(default)s)",
    )
    parser.add_argument(
        "--settings",
        default=",".join(ABLATION_SETTINGS),
        metavar="S",
        help="single (each norm alone) and/or joint (all at once), comma-separated (default: %(default)s)",
    )


def _ablate(args: argparse.Namespace) -> None:
    """Channel ablation: the top-K |gamma| channels of norm scales set to the layer's channel mean (paper D.3).

    In every decoder layer, set the top-K channels by |gamma| of each chosen norm to that norm's channel mean
    (gamma is the effective scale: 1 + weight for Gemma's norms), each norm alone (single) and all together
    (joint). OUT holds one checkpoint per setting (OUT/<norm>/, OUT/joint/) and intervention.json with the
    channels changed and S of each.
    """
    from sinkbench.interventions.ablation import write_channel_ablation

    report = write_channel_ablation(
        args.model,
        args.out,
        kinds=_names(args.norms),
        top_k=args.top_k,
        settings=_names(args.settings),
        overwrite=args.overwrite,
        **_common(args),
    )
    lines = [f"top-{report['top_k']} channel ablation of {', '.join(report['kinds'])}"]
    if report["paper_kinds_absent"]:
        lines.append(f"  (the model has no {', '.join(report['paper_kinds_absent'])})")
    lines.append(_strength_line("the unablated model", report["sink_strength"]).rstrip("\n"))
    for name, result in report["settings"].items():
        lines.append(
            _with_strength(f"  {name}: {result['norms_changed']} norms changed", result["sink_strength"])
        )
    print("\n".join(line for line in lines if line) + f"\nwritten to {args.out}")


def _names(text: str | None) -> list[str] | None:
    return None if text is None else [name.strip() for name in text.split(",") if name.strip()]


def _inject(args: argparse.Namespace) -> None:
    """Add per-head QK-RMSNorm with unit scales to a backbone without it (paper F.3), as a native checkpoint.

    Write MODEL with an RMSNorm over each head's queries and keys (gamma = 1, before RoPE) as a checkpoint of
    the native transformers architecture that has these norms and otherwise computes MODEL's function (Qwen3,
    for Llama, Mistral and Qwen2 sources), loadable without remote code. The sameness is checked before
    writing: with the new norms taken out, the logits must equal MODEL's. No training.
    """
    from sinkbench.interventions.qk_norm import write_qk_norm_injection

    report = write_qk_norm_injection(args.model, args.out, overwrite=args.overwrite, **_common(args))
    strengths = report["sink_strength"] or {}
    check = report["equivalence"]["max_abs_logit_diff_without_new_norms"]
    print(
        f"{report['source_model_type']} -> {report['target_architecture']} with unit q_norm/k_norm "
        f"(without them: max |logit diff| {check:.3g})\n"
        + "".join(_strength_line(role, strengths.get(role)) for role in ("source", "injected"))
        + f"written to {args.out}"
    )


def _merge_parameters(parser: argparse.ArgumentParser) -> None:
    which = parser.add_mutually_exclusive_group(required=True)
    which.add_argument(
        "--setting",
        choices=MERGE_SETTING_NAMES,
        help="the one setting to run (default: none; this or --sweep)",
    )
    which.add_argument(
        "--sweep", action="store_true", help="run all seven settings (default: off; this or --setting)"
    )
    parser.add_argument(
        "--base",
        metavar="BASE",
        default=None,
        help="the pretrained model both were fine-tuned from, for the two-task-vector reading (default: none, "
        "the reference is the base)",
    )
    parser.add_argument(
        "--seed", type=int, default=0, help="seed of DARE's random mask (default: %(default)s)"
    )


def _merge(args: argparse.Namespace) -> None:
    """Merge a VLM-LM with its reference LLM: the paper's seven settings (F.4) on mergekit (sinkbench[merge]).

    Merge VLM_LM with REFERENCE by one setting (--setting) or all seven (--sweep: OUT/<setting>/ each).
    Settings: mix_95_5 (95% VLM + 5% LLM), uniform, task_arithmetic (lambda=1), tsv (alpha=1), star (eta=40%),
    ties (density 0.2, lambda=1), dare (mask rate 0.9, lambda=1). Without --base the task-vector settings read
    the reference as the base and VLM_LM - REFERENCE as the one task vector, so task_arithmetic and tsv return
    VLM_LM unchanged; with --base both models are task vectors over it. Needs mergekit (LGPL-3.0): pip install
    'sinkbench[merge]'.
    """
    from sinkbench.interventions.merging import write_merges

    report = write_merges(
        args.reference,
        args.vlm_lm,
        args.out,
        MERGE_SETTING_NAMES if args.sweep else (args.setting,),
        sweep=args.sweep,
        base=args.base,
        seed=args.seed,
        overwrite=args.overwrite,
        **_common(args),
    )
    inputs = report["inputs_sink_strength"] or {}
    lines = [_strength_line(role, inputs.get(role)).rstrip("\n") for role in ("reference", "vlm_lm", "base")]
    for name, record in report["settings"].items():
        distance = record["distance"]["to_vlm_lm"]
        moved = "" if distance is None else f" (distance to VLM-LM {distance:.3g} of the pair's)"
        lines.append(_with_strength(f"{name}: {record['title']}{moved}", record["sink_strength"]))
    print("\n".join(line for line in lines if line) + f"\nwritten to {args.out}")


_REFERENCE = ("reference", f"the reference LLM: {_MODEL}")
#: Every intervention command, in help order.
INTERVENTIONS = (
    Intervention(
        "displacement",
        models=(_REFERENCE, ("endpoint", "the model fine-tuned from it (same architecture)")),
        out=None,
        call=_displacement,
        parameters=_displacement_parameters,
        strength=False,
    ),
    Intervention(
        "random-control",
        models=(_REFERENCE, ("vlm_lm", "its VLM-LM, whose relative changes the noise matches")),
        out="the control checkpoint folder",
        call=_random_control,
        parameters=_random_control_parameters,
    ),
    Intervention(
        "ablate-norms",
        models=(("model", f"the model: {_MODEL}"),),
        out="the folder of ablated checkpoints",
        call=_ablate,
        parameters=_ablate_parameters,
    ),
    Intervention(
        "inject-qk-norm",
        models=(("model", f"the model: {_MODEL}"),),
        out="the injected checkpoint folder",
        call=_inject,
    ),
    Intervention(
        "merge",
        models=(_REFERENCE, ("vlm_lm", "its VLM-LM (same architecture and size)")),
        out="the merged checkpoint folder (with --sweep: a folder of them)",
        call=_merge,
        parameters=_merge_parameters,
    ),
)
