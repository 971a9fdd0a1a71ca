"""The testbed experiment: per seed a shared stage 1, then stage 2 in every arm, each VLM measured as a submitter would.

For every (seed, arm): a fresh LLaVA around the base LM gets the seed's stage-1 vision weights, the arm's heads
are frozen (``protect_sink_heads``), stage 2 trains with the monitor measuring S every few steps, and the VLM
is saved as a LLaVA checkpoint, its language model extracted with ``extract_lm(verify=True)``, screened
(S, its interval and the secondary metrics) and asked the short-answer IFEval prompts. Results are written
after every run, and a rerun with the same configuration skips the runs already in the file.
"""

from __future__ import annotations

import shutil
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import torch

from sinkbench.safe_io import write_json_atomic
from sinkbench.sink.metrics import SECONDARY_METRICS, SINK_STRENGTH
from sinkbench.testbed import analysis
from sinkbench.testbed.controls import frozen_units, matched_random_heads
from sinkbench.testbed.ifeval_short import generate_answers, grade
from sinkbench.testbed.scenes import question_items
from sinkbench.testbed.train import StageSpec, pretrain_encoder, stage_data, train_stage, vision_state
from sinkbench.testbed.visual import visual_accuracy
from sinkbench.testbed.vlm import VisionSpec, build_vlm, save_vlm

ARMS = ("none", "sink", "random")
#: The running state under the work folder, resumed by a rerun with the same configuration.
STATE_FILE = "state.json"


@dataclass(frozen=True)
class TestbedConfig:
    """Everything that defines the experiment's numbers (a results file resumes only under the same config)."""

    stage1: StageSpec
    stage2: StageSpec
    vision: VisionSpec = field(default_factory=VisionSpec)
    stage0_steps: int = 400
    stage0_batch: int = 64
    seeds: tuple[int, ...] = (0, 1, 2, 3, 4, 5)
    arms: tuple[str, ...] = ARMS
    top_frac: float = 0.1
    bands: int = 3
    monitor_every: int = 10
    ifeval_prompts: int = 128
    max_new_tokens: int = 128
    eval_batch: int = 64
    eval_dtype: str = "bfloat16"
    visual_images: int = 64
    visual_seed: int = 1_000_003
    keep: tuple[int, str] = (0, "none")

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready (tuples become lists, as they come back from a file)."""
        data = asdict(self)
        return {key: list(value) if isinstance(value, tuple) else value for key, value in data.items()}


@dataclass
class Inputs:
    """What the experiment reads: the base LM as a transformers directory, IFEval docs, and the sink heads."""

    base_dir: Path
    docs: Sequence[dict[str, Any]]
    sink_heads: list[list[int]]
    shape: dict[str, int]  # num_layers, num_heads, num_kv_heads


def load_base(base_dir: Path, dtype: str = "float32") -> tuple[torch.nn.Module, Any]:
    """A fresh copy of the base LM (float32 unless told) and its tokenizer."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    model = AutoModelForCausalLM.from_pretrained(base_dir, dtype=getattr(torch, dtype))
    return model, AutoTokenizer.from_pretrained(base_dir)


def arm_heads(arm: str, seed: int, config: TestbedConfig, inputs: Inputs) -> list[list[int]]:
    """The heads ``arm`` freezes in ``seed``: none, the sink heads, or their matched random control."""
    if arm == "none":
        return []
    if arm == "sink":
        return inputs.sink_heads
    return matched_random_heads(inputs.sink_heads, bands=config.bands, seed=seed, **inputs.shape)


def measure_lm(lm_dir: Path, docs: Sequence[dict[str, Any]], config: TestbedConfig) -> dict[str, Any]:
    """S (with its interval and secondary metrics) and the IFEval scores of a causal-LM directory."""
    from sinkbench.sink.probe_model import probe_model

    started = time.perf_counter()
    report, _ = probe_model(str(lm_dir), progress=False)
    sink = {
        SINK_STRENGTH.name: report["sink_strength"],
        "ci": report["sink_strength_ci"],
        **{metric.name: report["metrics"][metric.name] for metric in SECONDARY_METRICS},
        "layer_median_g": report["profile"]["layer_median_g"],
    }
    screened = time.perf_counter()
    model, tokenizer = load_base(lm_dir, config.eval_dtype)
    answers, lengths = generate_answers(
        model, tokenizer, [doc["prompt"] for doc in docs], config.max_new_tokens, config.eval_batch
    )
    scores = grade(docs, answers, lengths).to_dict()
    return {
        "sink": sink,
        "ifeval": scores,
        "seconds": {
            "screen": round(screened - started, 1),
            "ifeval": round(time.perf_counter() - screened, 1),
        },
    }


class Testbed:
    """Runs (and resumes) the experiment; scratch goes under ``workdir``.

    The state is written to ``workdir / STATE_FILE`` after every stage and run (a rerun resumes from it), and the
    finished results, with their analysis, to ``results`` at the end: a results file is never partial.
    """

    def __init__(
        self,
        config: TestbedConfig,
        inputs: Inputs,
        workdir: Path,
        results: Path,
        header: dict[str, Any],
        log: Callable[[str], None] = print,
    ) -> None:
        self.config, self.inputs, self.workdir, self.results, self.log = config, inputs, workdir, results, log
        self.state_file = workdir / STATE_FILE
        self.items = question_items(config.visual_seed, config.visual_images, config.vision.image_size)
        self.state = self._resume(header)

    def _resume(self, header: dict[str, Any]) -> dict[str, Any]:
        import json

        fresh = {**header, "config": self.config.to_dict(), "sink_heads": self.inputs.sink_heads}
        if self.state_file.is_file():
            previous = json.loads(self.state_file.read_text(encoding="utf-8"))
            same = all(previous.get(key) == fresh[key] for key in ("config", "sink_heads", "ifeval_subset"))
            if same:
                self.log(f"resuming {self.state_file}: {len(previous.get('seeds', []))} seeds on file")
                return {**previous, **{k: v for k, v in fresh.items() if k not in previous}}
        return {**fresh, "seeds": []}

    def run(self) -> dict[str, Any]:
        """Every (seed, arm) not yet on file, then the analysis; returns the results document."""
        if "base" not in self.state:
            self.state["base"] = self._base()
            self._write()
        for seed in self.config.seeds:
            record = self._seed_record(seed)
            for arm in self.config.arms:
                if any(done["arm"] == arm for done in record["arms"]):
                    continue
                self.log(f"seed {seed}, arm {arm}")
                record["arms"].append(self._arm(seed, arm))
                self._write()
        self.state["analysis"] = analysis.summarize(self.state)
        self._write()
        write_json_atomic(self.state, self.results)
        return self.state

    def _write(self) -> None:
        write_json_atomic(self.state, self.state_file)

    def _base(self) -> dict[str, Any]:
        """The untouched base LM through the same measurements, and an untrained VLM's visual accuracy."""
        self.log("base model")
        measured = measure_lm(self.inputs.base_dir, self.inputs.docs, self.config)
        lm, tokenizer = load_base(self.inputs.base_dir)
        vlm = build_vlm(lm, tokenizer, self.config.vision, seed=0)
        measured["visual_untrained"] = visual_accuracy(
            vlm, tokenizer, self.items, self.config.vision.image_tokens
        )
        return measured

    def _seed_record(self, seed: int) -> dict[str, Any]:
        """The seed's record with its stage-1 weights on disk (trained now when either is missing)."""
        record = next((r for r in self.state["seeds"] if r["seed"] == seed), None)
        weights = self.workdir / f"seed{seed}" / "stage1.pt"
        if record is not None and weights.is_file():
            return record
        self.log(f"seed {seed}, stage 1")
        lm, tokenizer = load_base(self.inputs.base_dir)
        vlm = build_vlm(lm, tokenizer, self.config.vision, seed=seed)
        stage0 = pretrain_encoder(
            vlm, self.config.vision, seed, self.config.stage0_steps, self.config.stage0_batch
        )
        data = stage_data(
            "stage1",
            seed,
            self.config.stage1.steps * self.config.stage1.batch_size,
            tokenizer,
            self.config.vision,
        )
        result = train_stage(vlm, tokenizer, data, self.config.stage1, seed)
        weights.parent.mkdir(parents=True, exist_ok=True)
        torch.save(vision_state(vlm), weights)
        stage1 = {
            **result.to_dict(),
            "visual": visual_accuracy(vlm, tokenizer, self.items, self.config.vision.image_tokens),
        }
        if record is None:
            record = {"seed": seed, "arms": []}
            self.state["seeds"].append(record)
        record["stage0"], record["stage1"] = stage0, stage1
        self._write()
        return record

    def _arm(self, seed: int, arm: str) -> dict[str, Any]:
        """Stage 2 of one arm, then the VLM saved, its LM extracted and verified, screened and evaluated."""
        from sinkbench.extract.pipeline import extract_lm
        from sinkbench.monitor import SinkStrengthCallback
        from sinkbench.protect import protect_sink_heads

        started = time.perf_counter()
        lm, tokenizer = load_base(self.inputs.base_dir)
        vlm = build_vlm(lm, tokenizer, self.config.vision, seed=seed)
        vlm.load_state_dict(torch.load(self.workdir / f"seed{seed}" / "stage1.pt"), strict=False)
        heads = arm_heads(arm, seed, self.config, self.inputs)
        handle = protect_sink_heads(vlm, heads, mode="freeze") if heads else None
        data = stage_data(
            "stage2",
            seed,
            self.config.stage2.steps * self.config.stage2.batch_size,
            tokenizer,
            self.config.vision,
        )
        monitor: list[Any] = []

        def make_monitor(trainer: Any) -> Any:
            monitor.append(
                SinkStrengthCallback(trainer, every_n_steps=self.config.monitor_every, tokenizer=tokenizer)
            )
            return monitor[0]

        result = train_stage(vlm, tokenizer, data, self.config.stage2, seed, callbacks=[make_monitor])
        unchanged = handle is None or all(
            torch.equal(entry.parameter.detach()[entry.rows], entry.initial) for entry in handle.rows
        )
        if handle is not None:
            handle.remove()
        visual = visual_accuracy(vlm, tokenizer, self.items, self.config.vision.image_tokens)
        run_dir = self.workdir / f"seed{seed}" / arm
        shutil.rmtree(run_dir, ignore_errors=True)
        extract_started = time.perf_counter()
        save_vlm(vlm, tokenizer, self.config.vision, run_dir / "vlm")
        extraction = extract_lm(str(run_dir / "vlm"), run_dir / "lm", verify=True).provenance["verification"]
        extract_seconds = time.perf_counter() - extract_started
        del vlm, lm
        measured = measure_lm(run_dir / "lm", self.inputs.docs, self.config)
        if (seed, arm) != tuple(self.config.keep):
            shutil.rmtree(run_dir, ignore_errors=True)
        trace = [m.trace_record() for m in monitor[0].monitor.history]
        return {
            "arm": arm,
            "heads": heads,
            "frozen": {
                **frozen_units(heads, self.inputs.shape["num_heads"], self.inputs.shape["num_kv_heads"]),
                "weights": handle.num_protected if handle else 0,
                "rows_unchanged": unchanged,
            },
            "stage2": result.to_dict(),
            "trace": [{k: v for k, v in point.items() if k != "alerts"} for point in trace],
            "visual": visual,
            "extraction": extraction,
            **measured,
            "seconds": {
                **measured["seconds"],
                "stage2": round(result.seconds, 1),
                "monitor": round(sum(point["seconds"] for point in trace), 1),
                "extract": round(extract_seconds, 1),
                "total": round(time.perf_counter() - started, 1),
            },
        }


def ifeval_subset_record(
    docs: Sequence[dict[str, Any]], indices: Sequence[int], source: dict[str, Any]
) -> dict[str, Any]:
    """What the results file records of the IFEval prompts: the file, the rule, the indices and keys."""
    return {**source, "indices": list(indices), "keys": [docs[i]["key"] for i in indices]}
