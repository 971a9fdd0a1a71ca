"""The VL fine-tuning testbed: does VL fine-tuning damage text skills beyond answer length, more than text-only
training, more at a higher dose, and does freezing the sink heads protect against it?

The backbone (SmolLM2-135M-Instruct; ``--backbone gemma3-270m`` for Gemma 3 270M) becomes the language model of a
small LLaVA trained on synthetic scenes (this package): per seed stage 0 and stage 1, then every run of the plan's
stage 2 with its arm (:data:`~experiments.vl_testbed.controls.ARMS`; ``none`` also on text-only GSM8K chats, the
text-only control). Each VLM-LM is extracted, screened and measured (:mod:`.experiment`). Checkpoints and the
running state go under ``--workdir`` (a rerun resumes run by run), the results to ``--out``; the committed results
also re-render the site's page (``page/``).

IFEval and GSM8K come from the Hub; offline, ``SINKBENCH_DATA_DIR=DIR`` reads ``ifeval_input_data.jsonl`` and
``gsm8k_train.jsonl`` from DIR. ``--quick`` is a smoke run into ``out/testbed-quick``; ``--preset gpu`` the recipe
sized for one H200 (see ``GPU``).
"""

from __future__ import annotations

import os
import platform
import shlex
import sys
import time
from collections.abc import Callable
from pathlib import Path

# torch and the models come in with the commands that use them (--help stays fast)
from experiments.page_fragment import write_fragment
from experiments.vl_testbed.ifeval_short import MAX_WORDS_IN_TEXT, short_answer_prompts
from experiments.vl_testbed.page import HERE, RESULTS, TESTBED_FILE, page_files
from experiments.vl_testbed.precision import PRECISIONS, check_precision, precision_of, with_precision
from experiments.vl_testbed.schema import RunGroup, RunKey, TestbedConfig
from experiments.vl_testbed.specs import StageSpec
from experiments.vl_testbed.text_chats import gsm8k_train_source
from sinkbench.cli.parser import CommandParser
from sinkbench.errors import UserError
from sinkbench.provenance import report_header
from sinkbench.tasks._data import DATA_DIR_ENV, DataUnavailable, load_task_data
from sinkbench.tasks.ifeval_strict.utils import Task as IfevalTask

IFEVAL = IfevalTask.SOURCE
ROOT = HERE.parents[1]

STAGE1 = StageSpec(steps=12, batch_size=8, lr=1e-3, warmup=0.1, train_lm=False)


def _stage2(lr: float, steps: int = 20, batch_size: int = 8) -> StageSpec:
    return StageSpec(steps=steps, batch_size=batch_size, lr=lr, warmup=0.1, train_lm=True)


#: The CPU recipe. The doses and the compared dose were fixed from the pilot (``--preset pilot``, committed as
#: experiments/vl_testbed/results/vl_testbed_pilot.json) before any protected arm ran.
FULL = TestbedConfig(
    stage1=STAGE1,
    doses={"low": _stage2(1e-4), "high": _stage2(3e-4)},
    compare_dose="high",
    plan=(
        RunGroup(data="vl", dose="high", arms=("none", "frozen_lm", "sink", "random")),
        RunGroup(data="vl", dose="low", arms=("none",)),
        RunGroup(data="text", dose="high", arms=("none",)),
        RunGroup(data="text_matched", dose="high", arms=("none",)),
    ),
    keep=(
        RunKey(data="vl", dose="high", arm="none", seed=0),
        RunKey(data="text", dose="high", arm="none", seed=0),
    ),
)
#: The dose pilot: the no-protection arm at three learning rates on two seeds that the experiment never uses.
PILOT = FULL.model_copy(
    update={
        "doses": {"lr1e-4": _stage2(1e-4), "lr3e-4": _stage2(3e-4), "lr1e-3": _stage2(1e-3)},
        "compare_dose": "lr1e-3",
        "seeds": (100, 101),
        "plan": tuple(
            RunGroup(data="vl", dose=dose, arms=("none",)) for dose in ("lr1e-4", "lr3e-4", "lr1e-3")
        ),
        "keep": (),
    }
)
#: A smoke run of a few minutes.
QUICK = TestbedConfig(
    stage1=StageSpec(steps=2, batch_size=4, lr=1e-3, warmup=0.25, train_lm=False),
    doses={"low": _stage2(1e-4, 2, 4), "high": _stage2(1e-3, 2, 4)},
    compare_dose="high",
    stage0_steps=20,
    seeds=(0, 1),
    plan=(
        RunGroup(data="vl", dose="high", arms=("none", "frozen_lm", "sink")),
        RunGroup(data="text", dose="high", arms=("none",)),
    ),
    monitor_every=1,
    ifeval_prompts=8,
    max_new_tokens=16,
    eval_batch=8,
    visual_images=8,
)
#: For one H200: bfloat16, ten times the stage-2 steps at twice the batch, the full 541-prompt IFEval at 1,280
#: tokens; six seeds (the fewest at which the exact sign-flip test can reach p < 0.05) of the compared arms, the
#: all_qk graded control and the token-matched text-only control: 36 runs. On the CPU the mechanism pilot found S
#: growing with the stage-2 length up to 80 steps of 8 and no further at 160, short of the rule on one seed each
#: time, so these 200 steps of 16 may not move the sink either; the rule decides whether its protection questions
#: are posed. Estimated, not measured: about 10 s of training and 65 to 130 s of generation per run, 45 to 90
#: minutes in all. Prepared, not yet run: no GPU was lent to the sessions that wrote it.
GPU = FULL.model_copy(
    update={
        "doses": {"low": _stage2(1e-4, 200, 16), "high": _stage2(3e-4, 200, 16)},
        "seeds": (0, 1, 2, 3, 4, 5),
        "plan": (
            RunGroup(data="vl", dose="high", arms=("none", "frozen_lm", "sink", "random", "all_qk")),
            RunGroup(data="text_matched", dose="high", arms=("none",)),
        ),
        "ifeval_prompts": 541,
        "ifeval_rule": "all",
        "max_new_tokens": 1280,
        "eval_batch": 128,
        "device": "cuda",
    }
)
PRESETS = {"full": FULL, "pilot": PILOT, "quick": QUICK, "gpu": GPU}


def sink_heads(base_dir: Path, top_frac: float) -> tuple[list[list[int]], dict[str, int]]:
    """The base LM's top ``top_frac`` heads by median G over every layer, and its attention shape."""
    from experiments.vl_testbed.experiment import attention_shape, load_base
    from sinkbench.sink.heads import ALL_LAYERS, head_map, select_heads, selection_rule
    from sinkbench.sink.observe import observe
    from sinkbench.sink.options import ProbeOptions
    from sinkbench.sink.prompts import load_prompts

    model, tokenizer = load_base(base_dir)
    observations = observe(
        model, tokenizer, load_prompts(), ProbeOptions(num_layers=ALL_LAYERS), progress=False
    )
    heads = select_heads(head_map(observations), selection_rule(top_frac=top_frac))
    return heads, attention_shape(model.config)


def _source(where: dict) -> dict:
    local = where.get("files", [{}])[0]
    return {"file": local["file"], "sha256": local["sha256"]} if local else {"hub": where.get("dataset")}


def ifeval_inputs(count: int, rule: str) -> tuple[list[dict], list[int], dict]:
    """The first ``count`` IFEval prompts of the short-answer subset (``rule`` short_answer) or of all, which of them
    both trivial answers fail, and the record of where they came from."""
    from experiments.vl_testbed.experiment import ifeval_subset_record
    from experiments.vl_testbed.outcomes import TRIVIAL_ANSWERS, non_trivial_prompts

    data, where = load_task_data(IFEVAL)
    docs = [dict(doc) for doc in data[IFEVAL.split]]
    kept = short_answer_prompts(docs) if rule == "short_answer" else list(range(len(docs)))
    chosen = [docs[i] for i in kept[:count]]
    non_trivial = non_trivial_prompts(chosen)
    source = {
        **_source(where),
        "documents": len(docs),
        "short_answer_documents": len(kept),
        "rule": (
            "every instruction satisfiable in a short answer (bounds in experiments.vl_testbed.ifeval_short."
            f"SHORT_ANSWER_BOUNDS) and no request of {MAX_WORDS_IN_TEXT}+ words in the text"
            if rule == "short_answer"
            else "every prompt"
        )
        + f"; the first {count} in file order; non-trivial: the prompts that both "
        f"{', '.join(map(repr, TRIVIAL_ANSWERS))} fail (prompt-level strict)",
    }
    return chosen, non_trivial, ifeval_subset_record(docs, kept[:count], non_trivial, source)


def gsm8k_problems(config: TestbedConfig) -> tuple[list[dict], dict | None]:
    """GSM8K training problems when the plan has text-only chats (``text``, ``text_matched`` or a text share),
    and where they came from."""
    if not (config.text_share > 0 or any(group.data != "vl" for group in config.plan)):
        return [], None
    source = gsm8k_train_source()
    data, where = load_task_data(source)
    return [dict(doc) for doc in data[source.split]], {**_source(where), "split": source.split}


def main() -> None:
    """Run or resume the experiment, then draw its charts."""
    args = _parser().parse_args()
    import torch

    from experiments.vl_testbed.experiment import Inputs, Testbed
    from sinkbench.models import load_model, resolve_model

    torch.set_num_threads(args.threads)

    started = time.perf_counter()
    preset = "quick" if args.quick else args.preset
    config = PRESETS[preset].model_copy(update={"backbone": args.backbone})
    if args.seeds:
        config = config.model_copy(update={"seeds": tuple(args.seeds)})
    if args.groups:
        config = config.model_copy(update={"plan": _only_groups(config, args.groups)})
    if args.precision:
        config = with_precision(config, args.precision)
    config = TestbedConfig.model_validate(config.model_dump())
    try:
        # A report (--report-only) trains and measures nothing.
        check_precision(config, chosen=args.precision is not None or args.report_only)
    except UserError as error:
        raise SystemExit(f"vl_testbed: {error}") from None
    name = "vl_testbed" + ("" if preset in ("full", "quick") else f"_{preset}")
    name += "" if args.backbone == FULL.backbone else f"_{args.backbone.replace('-', '_')}"
    precision = precision_of(config)
    name += "" if precision == precision_of(PRESETS[preset]) else f"_{precision}"
    default_root = ROOT / "out" / "testbed-quick" if args.quick else RESULTS
    out = args.out or default_root / f"{name}.json"
    workdir = args.workdir or ROOT / "out" / ("testbed-quick" if args.quick else name.replace("vl_", ""))
    try:
        docs, non_trivial, subset = ifeval_inputs(config.ifeval_prompts, config.ifeval_rule)
        problems, text_source = gsm8k_problems(config)
    except DataUnavailable as error:
        raise SystemExit(f"sinkbench: {error}") from None
    base_dir = Path(resolve_model(config.backbone)[1])
    heads, shape = sink_heads(base_dir, config.top_frac)
    header = {
        **report_header(),
        "command": recorded_command(sys.argv[1:], data_dir=bool(os.environ.get(DATA_DIR_ENV))),
        "model": load_model(config.backbone).info.to_dict(),
        "machine": machine_record(config.device, args.machine_note),
        "ifeval_subset": subset,
        "text_source": text_source,
        "shape": shape,
    }
    inputs = Inputs(base_dir, docs, non_trivial, problems, heads, shape)
    try:
        testbed = Testbed(config, inputs, workdir, out, header, log=log_since(started))
        testbed.run(report_only=args.report_only)
    except ValueError as error:
        raise SystemExit(f"vl_testbed: {error}") from None
    if out == RESULTS / TESTBED_FILE:  # the site's Training dynamics page shows the main experiment only
        write_fragment(HERE, page_files(out))
    print(f"done in {time.perf_counter() - started:.0f} s; wrote {out}")


def machine_record(device: str, note: str | None) -> dict:
    """What a results file records of the machine: CPUs, torch threads, device, the load average now, a note, and
    this session's software (:func:`session_software`)."""
    import torch

    return {
        "cpus": os.cpu_count(),
        "torch_threads": torch.get_num_threads(),
        "device": device,
        "load_average_at_start": [round(load, 2) for load in os.getloadavg()],
        "note": note,
        "software": [session_software()],
    }


def session_software() -> dict[str, str]:
    """When this session started, its CPU model and the versions of the libraries the numbers depend on: a run
    resumed in another session may not reproduce the first bit for bit."""
    import numpy
    import torch
    import transformers

    cpu = next(
        (
            line.split(":", 1)[1].strip()
            for line in _read_lines("/proc/cpuinfo")
            if line.startswith("model name")
        ),
        platform.processor() or "unknown",
    )
    return {
        "when": report_header()["created"],
        "cpu": cpu,
        "python": platform.python_version(),
        "torch": torch.__version__,
        "transformers": transformers.__version__,
        "numpy": numpy.__version__,
    }


def _read_lines(path: str) -> list[str]:
    try:
        return Path(path).read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return []


def recorded_command(argv: list[str], *, data_dir: bool) -> str:
    """The command line as the results file records it: the data folder as ``DIR`` and every absolute path (a
    work folder in RAM, say) as ``PATH``, so no path of the machine that ran it is committed."""
    words = ["PATH" if os.path.isabs(word) else shlex.quote(word) for word in argv]
    start = (f"{DATA_DIR_ENV}=DIR " if data_dir else "") + "python -m experiments.vl_testbed.run"
    return " ".join([start, *words])


def _only_groups(config: TestbedConfig, names: list[str]) -> tuple[RunGroup, ...]:
    """The run groups of ``config``'s plan named ``DATA/DOSE`` in ``names``, in plan order."""
    known = {f"{group.data}/{group.dose}": group for group in config.plan}
    unknown = [name for name in names if name not in known]
    if unknown:
        raise SystemExit(
            f"vl_testbed: --groups {' '.join(unknown)}: the plan's groups are {', '.join(known)}"
        )
    return tuple(group for name, group in known.items() if name in names)


def log_since(started: float) -> Callable[[str], None]:
    """A logger that prints each message after the seconds since ``started`` (a ``perf_counter`` time)."""
    return lambda message: print(f"[{time.perf_counter() - started:7.1f} s] {message}", flush=True)


def _parser() -> CommandParser:
    parser = CommandParser(prog=f"python -m {__spec__.name}", description=__doc__.splitlines()[0])
    parser.add_argument(
        "--quick", action="store_true", help="a smoke run of a few minutes (the 'quick' preset)"
    )
    parser.add_argument(
        "--preset",
        choices=sorted(PRESETS),
        default="full",
        help="full: the committed CPU experiment; pilot: the dose pilot; gpu: sized for one H200 (device cuda, "
        "not yet run); quick: as --quick (default: %(default)s)",
    )
    parser.add_argument(
        "--backbone",
        default=FULL.backbone,
        help="the base LM, as `sinkbench screen` takes it (default: %(default)s; gemma3-270m for Gemma 3 270M)",
    )
    parser.add_argument("--seeds", type=int, nargs="+", help="seeds to run (default: the preset's)")
    parser.add_argument(
        "--precision",
        choices=PRECISIONS,
        help="train and evaluate in this precision (default: the preset's, bfloat16; refused on a CPU without fast "
        "bfloat16 unless given). float32 is another recipe: its results go to a file of their own, e.g. "
        "vl_testbed_float32.json",
    )
    parser.add_argument(
        "--groups",
        nargs="+",
        metavar="DATA/DOSE",
        help="run only these run groups of the plan, e.g. vl/high (the compared arms) to give them their seeds "
        "first when the budget is short; the results then hold only these groups' comparisons until a run with "
        "every group (or --report-only) reports them all (default: every group)",
    )
    parser.add_argument(
        "--report-only",
        action="store_true",
        help="run nothing: write the results and charts from the runs already in --workdir's state (default: off)",
    )
    parser.add_argument(
        "--threads",
        type=int,
        default=2,
        help="torch threads (default: %(default)s; on a machine shared with other jobs one thread can be faster)",
    )
    parser.add_argument(
        "--machine-note",
        metavar="TEXT",
        help="a note on the machine, recorded with the results beside the load average at the start (default: none)",
    )
    parser.add_argument(
        "--out", type=Path, help="results JSON (default: experiments/vl_testbed/results/vl_testbed*.json)"
    )
    parser.add_argument(
        "--workdir", type=Path, help="checkpoints, scratch and the running state (default: out/...)"
    )
    return parser


if __name__ == "__main__":
    main()
