"""A miniature LLaVA fine-tuning testbed: does freezing the sink heads protect S and strict instruction following?

SmolLM2-135M-Instruct (the embedded default) becomes the language model of a small LLaVA whose CLIP vision
encoder and projector are trained from scratch on synthetic scenes (``sinkbench.testbed``). Stage 1 trains the
vision side on captions with the LM frozen (shared by the arms of a seed); stage 2 trains everything on
question-answer chats, with warmup and a cosine decay, loss on the assistant turns only, in three arms that
share each seed's stage 1, data and data order:

* ``none``: no protection;
* ``sink``: ``protect_sink_heads(mode="freeze")`` on the top 10% of heads by median G (``sinkbench heads``);
* ``random``: the same freeze on random heads matched to the sink heads per third of the depth in query heads
  and key/value heads (the same number of frozen weights), drawn with their own generator per seed.

Each VLM is saved as a LLaVA checkpoint, its LM extracted with ``extract_lm(verify=True)``, screened, and asked
IFEval prompts that a short answer can satisfy (greedy, capped), graded by lm-eval's checkers; the monitor
traces S during stage 2, and held-out scenes give the visual accuracy. Checkpoints, scratch and the running
state go under ``--workdir`` (the state after every run: a rerun with the same settings resumes); the finished
results go to ``--out``, with SVG charts beside it. The no-protection VLM of seed 0 is kept in the workdir for
the measured testbed pair.

Usage: ``python benchmarks/vl_testbed.py [--quick]`` loads IFEval from the Hugging Face Hub, as ``ifeval_strict``
does; offline, ``SINKBENCH_DATA_DIR=DIR python benchmarks/vl_testbed.py`` reads the original release file
``ifeval_input_data.jsonl`` from DIR (70 min on a 2-core CPU shared with other jobs; ``--quick``: a smoke run
of about 2 min into ``out/testbed-quick``).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import shlex
import sys
import time
from pathlib import Path

import torch

from sinkbench.provenance import report_header
from sinkbench.tasks._data import DATA_DIR_ENV, DataUnavailable, load_task_data
from sinkbench.tasks.ifeval_strict.utils import SOURCE as IFEVAL
from sinkbench.testbed.experiment import Inputs, Testbed, TestbedConfig, ifeval_subset_record
from sinkbench.testbed.ifeval_short import MAX_WORDS_IN_TEXT, short_answer_prompts
from sinkbench.testbed.train import StageSpec

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "benchmarks" / "results" / "vl_testbed.json"

FULL = TestbedConfig(
    stage1=StageSpec(steps=12, batch_size=8, lr=1e-3, warmup=0.1, train_lm=False),
    stage2=StageSpec(steps=30, batch_size=8, lr=3e-4, warmup=0.1, train_lm=True),
    monitor_every=10,
    max_new_tokens=64,
    visual_images=32,
)
QUICK = TestbedConfig(
    stage1=StageSpec(steps=4, batch_size=4, lr=1e-3, warmup=0.25, train_lm=False),
    stage2=StageSpec(steps=4, batch_size=4, lr=1e-4, warmup=0.25, train_lm=True),
    stage0_steps=20,
    seeds=(0,),
    monitor_every=2,
    ifeval_prompts=8,
    max_new_tokens=16,
    eval_batch=8,
    visual_images=8,
)


def sink_heads(base_dir: Path, top_frac: float) -> tuple[list[list[int]], dict[str, int]]:
    """The base LM's top ``top_frac`` heads by median G over every layer, and its attention shape."""
    from sinkbench.sink.heads import ALL_LAYERS, head_map, select_heads, selection_rule
    from sinkbench.sink.observe import observe
    from sinkbench.sink.options import ProbeOptions
    from sinkbench.sink.prompts import load_prompts
    from sinkbench.testbed.experiment import load_base

    model, tokenizer = load_base(base_dir)
    observations = observe(
        model, tokenizer, load_prompts(), ProbeOptions(num_layers=ALL_LAYERS), progress=False
    )
    config = model.config
    shape = {
        "num_layers": config.num_hidden_layers,
        "num_heads": config.num_attention_heads,
        "num_kv_heads": config.num_key_value_heads,
    }
    return select_heads(head_map(observations), selection_rule(top_frac=top_frac)), shape


def _ifeval(count: int) -> tuple[list[dict], dict]:
    """The first ``count`` short-answer IFEval prompts and the record of where they came from: the hub dataset
    ``ifeval_strict`` uses, or, with ``SINKBENCH_DATA_DIR`` set, the local release file (and its sha256)."""
    try:
        data, where = load_task_data(IFEVAL)
    except DataUnavailable as error:
        raise SystemExit(f"sinkbench: {error}") from None
    docs = [dict(doc) for doc in data[IFEVAL.split]]
    kept = short_answer_prompts(docs)
    indices = kept[:count]
    local = where.get("files", [{}])[0]
    source = {
        **({"file": local["file"], "sha256": local["sha256"]} if local else {"hub": where.get("dataset")}),
        "documents": len(docs),
        "short_answer_documents": len(kept),
        "rule": "every instruction satisfiable in a short answer (bounds in sinkbench.testbed.ifeval_short."
        f"SHORT_ANSWER_BOUNDS) and no request of {MAX_WORDS_IN_TEXT}+ words in the text; the first {count} in file order",
    }
    return [docs[i] for i in indices], ifeval_subset_record(docs, indices, source)


def _config(args: argparse.Namespace) -> TestbedConfig:
    base = QUICK if args.quick else FULL
    seeds = tuple(args.seeds) if args.seeds else base.seeds
    return dataclasses.replace(base, seeds=seeds)


def main() -> None:
    """Run or resume the experiment, then draw its charts."""
    args = _parser().parse_args()
    torch.set_num_threads(args.threads)
    from sinkbench.models import DEFAULT_MODEL, load_model, resolve_model

    started = time.perf_counter()
    config = _config(args)
    out = args.out or (ROOT / "out" / "testbed-quick" / "vl_testbed.json" if args.quick else RESULTS)
    workdir = args.workdir or (ROOT / "out" / ("testbed-quick" if args.quick else "testbed"))
    base_dir = Path(resolve_model(DEFAULT_MODEL)[1])
    docs, subset = _ifeval(config.ifeval_prompts)
    heads, shape = sink_heads(base_dir, config.top_frac)
    header = {
        **report_header(),
        "command": " ".join(
            [
                f"{DATA_DIR_ENV}=DIR python benchmarks/vl_testbed.py"
                if os.environ.get(DATA_DIR_ENV)
                else "python benchmarks/vl_testbed.py",
                *map(shlex.quote, sys.argv[1:]),
            ]
        ),
        "model": load_model(DEFAULT_MODEL).info.to_dict(),
        "machine": {
            "cpus": os.cpu_count(),
            "torch_threads": torch.get_num_threads(),
            "load_average_at_start": [round(load, 2) for load in os.getloadavg()],
            "note": args.machine_note,
        },
        "ifeval_subset": subset,
        "shape": shape,
    }
    testbed = Testbed(config, Inputs(base_dir, docs, heads, shape), workdir, out, header, log=_log(started))
    result = testbed.run()
    write_charts(out)
    print(json.dumps(result["analysis"]["paired_vs_none"], indent=1)[:4000])
    print(f"done in {time.perf_counter() - started:.0f} s; wrote {out} and its charts")


def write_charts(results: Path) -> None:
    """The SVG charts of ``results``, drawn beside it by the Training dynamics page's own code."""
    from sinkbench.leaderboard.training import read_testbed

    for plot in read_testbed(results, results.name).charts().values():
        (results.parent / Path(plot.path).name).write_text(plot.chart.svg(), encoding="utf-8")


def _log(started: float):
    return lambda message: print(f"[{time.perf_counter() - started:7.1f} s] {message}", flush=True)


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a smoke run of a few minutes (default: off)")
    parser.add_argument("--seeds", type=int, nargs="+", help="seeds to run (default: 0-5; --quick: 0)")
    parser.add_argument(
        "--threads",
        type=int,
        default=1,
        help="torch threads; on a machine shared with other jobs one thread is faster than two, whose OpenMP "
        "threads wait for each other whenever one is descheduled (default: %(default)s)",
    )
    parser.add_argument(
        "--machine-note",
        metavar="TEXT",
        help="what else ran on the machine during the run (e.g. 'shared with other jobs'), recorded with the "
        "results and printed beside the wall times on the page (default: none; the load average at the start is "
        "recorded either way)",
    )
    parser.add_argument(
        "--out",
        type=Path,
        help="results JSON (default: benchmarks/results/vl_testbed.json; --quick: out/testbed-quick/)",
    )
    parser.add_argument(
        "--workdir",
        type=Path,
        help="checkpoints and scratch (default: out/testbed, --quick: out/testbed-quick)",
    )
    return parser


if __name__ == "__main__":
    main()
