"""Does freezing the sink heads keep S up under aggressive fine-tuning? A small, real experiment.

SmolLM2-135M-Instruct (the embedded default, float32, CPU) is fully fine-tuned on GSM8K-train text (chat
format: the question as the user turn, the worked answer as the assistant turn) with a deliberately
aggressive constant learning rate, in three arms that share each seed and its data order:

* ``none``: no protection;
* ``sink``: ``protect_sink_heads(mode="freeze")`` on the top 10% of heads by median G (``sinkbench heads``);
* ``random``: the same freeze on as many randomly drawn non-sink heads (the control).

``SinkStrengthCallback`` measures S (packaged calibration prompts, default probe options) at step 0 and every
``--every`` steps. At the end each arm, and the untrained model, answers the first ``--eval-prompts`` IFEval
prompts greedily (chat template, at most ``--max-new-tokens`` tokens), graded by lm-eval's own strict and
loose checkers (``harness_tasks/ifeval_strict``). Text fine-tuning stands in for VL fine-tuning. Each seed
(``--seeds``, default 0 1 2) changes the data order and the random control heads; the sink heads are fixed.
An interrupted run resumes: (seed, arm) pairs already in ``--out`` with the same settings are kept.

Needs ``SINKBENCH_DATA_DIR`` holding ``gsm8k_train.jsonl`` and ``ifeval_input_data.jsonl``.
Usage: ``SINKBENCH_DATA_DIR=../shared/data python benchmarks/sink_drift.py [--steps N] [--lr LR] ...``;
writes ``benchmarks/results/sink_drift.json`` (after every arm) and ``sink_drift.svg`` (S against step).
"""

from __future__ import annotations

import argparse
import json
import random
import shlex
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import torch

from sinkbench.models import DEFAULT_MODEL, load_model
from sinkbench.monitor import SinkStrengthCallback
from sinkbench.protect import protect_sink_heads
from sinkbench.provenance import report_header
from sinkbench.safe_io import write_json_atomic
from sinkbench.sink.heads import ALL_LAYERS, head_map, select_heads, selection_rule
from sinkbench.sink.metrics import POSITION0_MASS, SHARE_G_ABOVE, SINK_STRENGTH
from sinkbench.sink.observe import observe
from sinkbench.sink.options import ProbeOptions
from sinkbench.sink.prompts import load_prompts
from sinkbench.tasks._data import DATA_DIR_ENV, local_data_dir, read_jsonl

RESULTS = Path(__file__).resolve().parent / "results"
ARMS = ("none", "sink", "random")
IFEVAL_TOTAL = 541


def _data_file(name: str) -> Path:
    data_dir = local_data_dir()
    if data_dir is None or not (data_dir / name).is_file():
        raise SystemExit(
            f"Set {DATA_DIR_ENV} to a folder holding {name} (e.g. {DATA_DIR_ENV}=../shared/data)."
        )
    return data_dir / name


class _ChatExamples(torch.utils.data.Dataset):
    """GSM8K-train problems as chat-formatted, right-padded token sequences (loss on every real token)."""

    def __init__(self, tokenizer, rows: list[dict], length: int) -> None:
        self.items = []
        for row in rows:
            turns = [
                {"role": "user", "content": row["question"]},
                {"role": "assistant", "content": row["answer"]},
            ]
            text = tokenizer.apply_chat_template(turns, tokenize=False)
            ids = tokenizer(text, add_special_tokens=False).input_ids[:length]
            pad = length - len(ids)
            self.items.append(
                {
                    "input_ids": torch.tensor(ids + [tokenizer.pad_token_id] * pad),
                    "attention_mask": torch.tensor([1] * len(ids) + [0] * pad),
                    "labels": torch.tensor(ids + [-100] * pad),
                }
            )

    def __len__(self) -> int:
        return len(self.items)

    def __getitem__(self, index: int) -> dict:
        return self.items[index]


def sink_heads(model, tokenizer, top_frac: float) -> tuple[list, list]:
    """The top ``top_frac`` heads by median G over all layers, and every head of the model."""
    observations = observe(model, tokenizer, load_prompts(), ProbeOptions(num_layers=ALL_LAYERS))
    heads = head_map(observations)
    every = [[layer, head] for layer in heads.layers for head in range(heads.median_g.shape[1])]
    return select_heads(heads, selection_rule(top_frac=top_frac)), every


def random_heads(every: list, sink: list, seed: int) -> list:
    """As many heads as ``sink``, drawn at random (seeded) from the others."""
    return sorted(random.Random(seed).sample([pair for pair in every if pair not in sink], len(sink)))


def ifeval_score(model, tokenizer, docs: list[dict], max_new_tokens: int, batch_size: int) -> dict:
    """Greedy answers to ``docs`` graded by lm-eval's IFEval checkers: prompt- and instruction-level accuracy."""
    from sinkbench.tasks.ifeval_strict.utils import process_results

    tokenizer.padding_side = "left"
    model.eval()
    graded = []
    for start in range(0, len(docs), batch_size):
        batch = docs[start : start + batch_size]
        texts = [
            tokenizer.apply_chat_template(
                [{"role": "user", "content": d["prompt"]}], tokenize=False, add_generation_prompt=True
            )
            for d in batch
        ]
        encoded = tokenizer(texts, return_tensors="pt", padding=True, add_special_tokens=False)
        with torch.inference_mode():
            output = model.generate(**encoded, max_new_tokens=max_new_tokens, do_sample=False)
        answers = tokenizer.batch_decode(output[:, encoded.input_ids.shape[1] :], skip_special_tokens=True)
        graded.extend(process_results(doc, [answer]) for doc, answer in zip(batch, answers, strict=True))
    return _ifeval_summary(graded)


def _ifeval_summary(graded: list[dict]) -> dict:
    instructions = [ok for g in graded for ok in g["inst_level_strict_acc"]]
    loose = [ok for g in graded for ok in g["inst_level_loose_acc"]]
    return {
        "prompt_strict": float(np.mean([g["prompt_level_strict_acc"] for g in graded])),
        "prompt_strict_passed": int(sum(g["prompt_level_strict_acc"] for g in graded)),
        "prompt_loose": float(np.mean([g["prompt_level_loose_acc"] for g in graded])),
        "inst_strict": float(np.mean(instructions)),
        "inst_loose": float(np.mean(loose)),
        "prompts": len(graded),
        "instructions": len(instructions),
    }


def run_arm(arm: str, heads: list, seed: int, data, docs: list[dict], args: argparse.Namespace) -> dict:
    """Fine-tune a fresh copy of the model in one arm; its S trajectory, losses and final IFEval score."""
    from transformers import Trainer

    loaded = load_model(DEFAULT_MODEL)
    model, tokenizer = loaded.model, loaded.tokenizer
    handle = protect_sink_heads(model, heads, mode="freeze") if heads else None
    with tempfile.TemporaryDirectory() as scratch:
        trainer = Trainer(model=model, args=_training_args(args, seed, scratch), train_dataset=data)
        callback = SinkStrengthCallback(trainer, every_n_steps=args.every, tokenizer=tokenizer)
        trainer.add_callback(callback)
        started = time.perf_counter()
        trainer.train()
        train_seconds = time.perf_counter() - started
    if handle is not None:
        handle.remove()
    started = time.perf_counter()
    score = ifeval_score(model, tokenizer, docs, args.max_new_tokens, args.eval_batch)
    return {
        "arm": arm,
        "heads": heads,
        "key_heads": {str(k): v for k, v in handle.key_heads.items()} if handle else {},
        "frozen_weights": handle.num_protected if handle else 0,
        "trajectory": [_point(m) for m in callback.monitor.history],
        "loss": [[h["step"], h["loss"]] for h in trainer.state.log_history if "loss" in h],
        "ifeval": score,
        "train_seconds": round(train_seconds, 1),
        "eval_seconds": round(time.perf_counter() - started, 1),
    }


def _training_args(args: argparse.Namespace, seed: int, output_dir: str):
    from transformers import TrainingArguments

    return TrainingArguments(
        output_dir=output_dir,
        max_steps=args.steps,
        per_device_train_batch_size=args.batch_size,
        learning_rate=args.lr,
        lr_scheduler_type="constant",
        warmup_steps=0,
        weight_decay=0.0,
        logging_steps=1,
        save_strategy="no",
        report_to=[],
        seed=seed,
        use_cpu=True,
        disable_tqdm=True,
    )


def _point(measurement) -> dict:
    metrics = measurement.summary.scalar_metrics()
    return {
        "step": measurement.step,
        SINK_STRENGTH.name: metrics[SINK_STRENGTH.name],
        SHARE_G_ABOVE.name: metrics[SHARE_G_ABOVE.name],
        POSITION0_MASS.name: metrics[POSITION0_MASS.name],
        "seconds": round(measurement.seconds, 3),
    }


def plot_svg(results: Path) -> str:
    """S against step per arm and seed, drawn from ``results`` by the Training dynamics page's own chart."""
    from sinkbench.leaderboard.training import read_sink_drift

    return read_sink_drift(results, results.name).chart.svg()


def main() -> None:
    """Run every (seed, arm) not already in ``--out`` (same settings), writing the JSON after each one."""
    args = _parser().parse_args()
    started = time.perf_counter()
    result, data, docs, every = _setup(args)
    for seed in args.seeds:
        run = _run_for(result, seed, every)
        for arm in ARMS:
            if any(done["arm"] == arm for done in run["arms"]):
                continue
            print(f"[{time.perf_counter() - started:7.1f} s] seed {seed}, arm {arm}", flush=True)
            run["arms"].append(run_arm(arm, run["heads"][arm], seed, data, docs, args))
            result["summary"] = summarize_arms(result)
            write_json_atomic(result, args.out)
            print(json.dumps(run["arms"][-1]["ifeval"]), flush=True)
    args.out.with_suffix(".svg").write_text(plot_svg(args.out), encoding="utf-8")
    print(
        f"done in {time.perf_counter() - started:.0f} s; wrote {args.out} and {args.out.with_suffix('.svg')}"
    )


def _run_for(result: dict, seed: int, every: list) -> dict:
    """The result's run of ``seed``, created (with its random control heads) when missing."""
    for run in result["runs"]:
        if run["seed"] == seed:
            return run
    sink = result["sink_heads"]
    run = {
        "seed": seed,
        "heads": {"none": [], "sink": sink, "random": random_heads(every, sink, seed)},
        "arms": [],
    }
    result["runs"].append(run)
    return run


def summarize_arms(result: dict) -> dict:
    """Per arm over seeds: S at the first and last measurement and the final IFEval prompt-strict score."""
    summary = {}
    for arm in ARMS:
        runs = [a for run in result["runs"] for a in run["arms"] if a["arm"] == arm]
        if runs:
            end = [a["trajectory"][-1][SINK_STRENGTH.name] for a in runs]
            passed = [a["ifeval"]["prompt_strict_passed"] for a in runs]
            summary[arm] = {
                "seeds": len(runs),
                "s_start": runs[0]["trajectory"][0][SINK_STRENGTH.name],
                "s_end": end,
                "s_end_mean": float(np.mean(end)),
                "ifeval_prompt_strict_passed": passed,
                "ifeval_prompt_strict_mean": float(np.mean([a["ifeval"]["prompt_strict"] for a in runs])),
                "frozen_weights": [a["frozen_weights"] for a in runs],
            }
    return summary


def _settings(args: argparse.Namespace) -> dict:
    """What must match for a previous result file to be resumed (everything but the seeds and the path)."""
    return {k: v for k, v in vars(args).items() if k not in ("seeds", "out")} | {
        "threads": torch.get_num_threads()
    }


def _setup(args: argparse.Namespace) -> tuple[dict, _ChatExamples, list[dict], list]:
    """The result (resumed from ``--out`` when its settings match), the training data, IFEval docs, all heads."""
    started = time.perf_counter()
    loaded = load_model(DEFAULT_MODEL)
    sink, every = sink_heads(loaded.model, loaded.tokenizer, args.top_frac)
    train_rows = read_jsonl(_data_file("gsm8k_train.jsonl"))[: args.steps * args.batch_size]
    docs = read_jsonl(_data_file("ifeval_input_data.jsonl"))[: args.eval_prompts]
    previous = json.loads(args.out.read_text()) if args.out.is_file() else {}
    resumed = previous.get("settings") == _settings(args) and previous.get("sink_heads") == sink
    result = {
        **report_header(),
        "command": " ".join(
            [
                "SINKBENCH_DATA_DIR=../shared/data python benchmarks/sink_drift.py",
                *map(shlex.quote, sys.argv[1:]),
            ]
        ),
        "model": loaded.info.to_dict(),
        "settings": _settings(args),
        "coverage": f"IFEval: first {len(docs)} of {IFEVAL_TOTAL} prompts, answers capped at "
        f"{args.max_new_tokens} new tokens; GSM8K-train: first {len(train_rows)} of 7,473 problems",
        "sink_heads": sink,
        "base_ifeval": ifeval_score(
            loaded.model, loaded.tokenizer, docs, args.max_new_tokens, args.eval_batch
        ),
        "setup_seconds": round(time.perf_counter() - started, 1),
        "runs": previous["runs"] if resumed else [],
    }
    return result, _ChatExamples(loaded.tokenizer, train_rows, args.seq_len), docs, every


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    options = {
        "--steps": (int, 40, "optimizer steps per arm"),
        "--lr": (float, 1e-3, "constant learning rate"),
        "--batch-size": (int, 4, "sequences per step"),
        "--seq-len": (int, 128, "tokens per sequence"),
        "--every": (int, 5, "measure S every N steps"),
        "--top-frac": (float, 0.1, "fraction of heads frozen as sink heads"),
        "--eval-prompts": (int, 32, "answer the first N IFEval prompts"),
        "--max-new-tokens": (int, 160, "cap on each IFEval answer"),
        "--eval-batch": (int, 16, "prompts per generate call"),
    }
    for flag, (kind, default, text) in options.items():
        parser.add_argument(flag, type=kind, default=default, help=f"{text} (default: %(default)s)")
    parser.add_argument(
        "--seeds",
        type=int,
        nargs="+",
        default=[0, 1, 2],
        help="training and control seeds (default: %(default)s)",
    )
    parser.add_argument(
        "--out",
        type=Path,
        default=RESULTS / "sink_drift.json",
        help="the results JSON, resumed when its settings match; the SVG goes beside it (default: %(default)s)",
    )
    return parser


if __name__ == "__main__":
    main()
