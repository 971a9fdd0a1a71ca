"""The mechanism pilot's runs (:mod:`experiments.vl_testbed.pilot` declares the settings, the rule and the command):
the base model's measurements, each seed's stages 0 and 1, and each setting's stage 2 with every measurement."""

from __future__ import annotations

import dataclasses
import json
import shutil
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import torch

from experiments.vl_testbed.experiment import load_base
from experiments.vl_testbed.ifeval_short import short_answer_prompts
from experiments.vl_testbed.mechanism import first_token_attention, image_prompts, sink_shift, text_prompts
from experiments.vl_testbed.outcomes import ReferenceAnswers, answer_nll, generate
from experiments.vl_testbed.pilot import (
    BACKBONES,
    ECHO_PROMPTS,
    ECHO_SEED,
    ECHO_TOKENS,
    IMAGE_QUESTIONS,
    RULE,
    SETTINGS,
    STAGE0_STEPS,
    STAGE1,
    VISUAL_IMAGES,
    VISUAL_SEED,
    Backbone,
    Setting,
    copies_prompt,
    verdicts,
)
from experiments.vl_testbed.replies import ReplyMix, echo_rate, echoes_template
from experiments.vl_testbed.run import FULL, IFEVAL, gsm8k_problems, sink_heads
from experiments.vl_testbed.scenes import question_items
from experiments.vl_testbed.specs import VisionSpec
from experiments.vl_testbed.train import pretrain_encoder, stage_data, train_stage, vision_state
from experiments.vl_testbed.visual import visual_accuracy
from experiments.vl_testbed.vlm import build_vlm, save_vlm
from sinkbench.safe_io import write_json_atomic


class Pilot:
    """Runs (and resumes) the pilot; the state is written to ``workdir/state.json`` after every step."""

    def __init__(
        self,
        workdir: Path,
        out: Path,
        header: dict[str, Any],
        log: Callable[[str], None],
        backbone: Backbone = BACKBONES["smollm2"],
        quick: bool = False,
    ) -> None:
        self.workdir, self.out, self.log, self.quick = workdir, out, log, quick
        self.started = header["created"]
        self.state_file = workdir / "state.json"
        self.base_dir = base_folder(backbone, workdir)
        self.stage1_spec = dataclasses.replace(STAGE1, steps=2) if quick else STAGE1
        self.stage0_steps = 20 if quick else STAGE0_STEPS
        self.sink_heads, self.shape = sink_heads(self.base_dir, 0.1)
        # the text25 setting's text-only chats: GSM8K's training problems, which FULL's text-only runs load too
        self.problems, self.text_source = gsm8k_problems(FULL)
        self.docs, self.echo_indices = echo_prompts(8 if quick else ECHO_PROMPTS)
        self.prompts = [d["prompt"] for d in self.docs]
        settings = [dataclasses.asdict(s) for s in SETTINGS]
        fresh = {**header, "backbone": backbone.label, "rule": RULE, "settings": settings, "runs": []}
        fresh["echo_prompts"] = {"seed": ECHO_SEED, "indices_in_ifeval": self.echo_indices}
        self.state = json.loads(self.state_file.read_text()) if self.state_file.is_file() else fresh
        self.state.update(backbone=backbone.label, rule=RULE, settings=settings)

    def _write(self) -> None:
        write_json_atomic(self.state, self.state_file)

    def base(self) -> dict[str, Any]:
        """The base LM's S, its answers to the echo prompts, and what they score (once)."""
        if "base" not in self.state:
            self.log("base model")
            model, tokenizer = load_base(self.base_dir)
            answers = generate(model, tokenizer, self.prompts, ECHO_TOKENS, 16)
            self.state["base"] = {
                "sink": _screen(self.base_dir),
                "answers": list(answers.texts),
                "answer_ids": [list(ids) for ids in answers.token_ids],
                "stopped": list(answers.stopped),
                "echo": _echo(answers.texts),
            }
            self._write()
        base = self.state["base"]
        if "nll_continue" not in base:  # what each run's NLL is read against (absent before 2026-12-04)
            base["nll_continue"] = self._nll_continue(load_base(self.base_dir))
            self._write()
        base["copies_prompt"] = copies_prompt(base["answers"], self.prompts)
        return base

    def _nll_continue(self, loaded: tuple[torch.nn.Module, Any]) -> float:
        """The mean ``nll_continue`` of the base model's answers under a loaded ``(model, tokenizer)``."""
        base = self.state["base"]
        reference = ReferenceAnswers(
            tuple(self.prompts), tuple(map(tuple, base["answer_ids"])), tuple(base["stopped"])
        )
        _, nll_continue = answer_nll(*loaded, reference)
        return round(float(np.nanmean(nll_continue)), 5)

    def stage1(self, seed: int, vision: VisionSpec) -> tuple[Path, dict[str, Any]]:
        """The seed's stage-0/1 vision weights for ``vision`` and the stage-1 VLM's measurements (made once)."""
        key = f"seed{seed}-px{vision.image_size}-scale{vision.projector_scale:g}"
        path = self.workdir / key / "stage1.pt"
        record = self.state.setdefault("stage1", {}).get(key)
        if record is not None and path.is_file():
            return path, record
        self.log(f"{key}: stages 0 and 1")
        started = time.perf_counter()
        lm, tokenizer = load_base(self.base_dir)
        vlm = build_vlm(lm, tokenizer, vision, seed=seed)
        stage0 = pretrain_encoder(vlm, vision, seed, self.stage0_steps)
        spec = self.stage1_spec
        data = stage_data("stage1", seed, spec.steps * spec.batch_size, tokenizer, vision)
        train_stage(vlm, tokenizer, data, spec, seed)
        path.parent.mkdir(parents=True, exist_ok=True)
        torch.save(vision_state(vlm), path)
        items = _visual_items(vision)
        np.savez(path.with_name("attention.npz"), **_attention(vlm, tokenizer, items, vision))
        record = {
            "stage0_train_accuracy": stage0["train_accuracy"],
            "visual": visual_accuracy(vlm, tokenizer, items, vision.image_tokens, dtype=torch.float32),
            "seconds": round(time.perf_counter() - started, 1),
        }
        self.state["stage1"][key] = record
        self._write()
        return path, record

    def run_one(self, setting: Setting, seed: int) -> dict[str, Any]:
        """Stage 2 of ``setting`` on ``seed`` (no protection), then every measurement of the module docstring."""
        from sinkbench.extract.pipeline import extract_lm
        from sinkbench.sink.margin import pair_margin

        vision = setting.vision
        stage1_path, stage1 = self.stage1(seed, vision)
        before = np.load(stage1_path.with_name("attention.npz"))
        started = time.perf_counter()
        lm, tokenizer = load_base(self.base_dir)
        vlm = build_vlm(lm, tokenizer, vision, seed=seed)
        vlm.load_state_dict(torch.load(stage1_path), strict=False)
        spec = dataclasses.replace(setting.stage2, steps=2) if self.quick else setting.stage2
        data = stage_data(
            "stage2",
            seed,
            spec.steps * spec.batch_size,
            tokenizer,
            vision,
            replies=ReplyMix(),
            problems=self.problems,
            text_share=setting.text_share,
        )
        trained = train_stage(vlm, tokenizer, data, spec, seed)
        stage2_seconds = time.perf_counter() - started
        items = _visual_items(vision)
        visual = visual_accuracy(vlm, tokenizer, items, vision.image_tokens, dtype=torch.float32)
        attention = {
            name: sink_shift(before[name], after, self.sink_heads)
            for name, after in _attention(vlm, tokenizer, items, vision).items()
        }
        run_dir = self.workdir / f"seed{seed}" / setting.name
        shutil.rmtree(run_dir, ignore_errors=True)
        save_vlm(vlm, tokenizer, vision, run_dir / "vlm")
        del vlm, lm
        extract_lm(str(run_dir / "vlm"), run_dir / "lm")
        sink = _screen(run_dir / "lm")
        margin = pair_margin(str(self.base_dir), str(run_dir / "lm"), progress=False)["overall"]
        model, tokenizer = load_base(run_dir / "lm")
        answers = generate(model, tokenizer, self.prompts, ECHO_TOKENS, 16)
        base = self.base()
        nll_continue = self._nll_continue((model, tokenizer))
        shutil.rmtree(run_dir, ignore_errors=True)
        return {
            "setting": setting.name,
            "seed": seed,
            "stage2": trained.model_dump(),
            "visual": visual,
            "visual_gain": round(visual["accuracy"] - stage1["visual"]["accuracy"], 5),
            "sink": sink,
            "s_shift": round(sink["sink_strength"] - base["sink"]["sink_strength"], 5),
            "margin": margin,
            "first_token_attention": attention,
            "echo": _echo(answers.texts),
            "answers": list(answers.texts),
            "nll_continue": nll_continue,
            "seconds": {"stage2": round(stage2_seconds, 1), "total": round(time.perf_counter() - started, 1)},
        }

    def run(self, settings: Sequence[Setting], seeds: Sequence[int]) -> dict[str, Any]:
        """Every (setting, seed) not yet on file, in order; then the verdicts and the results file."""
        self.base()
        for setting in settings:
            for seed in seeds:
                if any(r["setting"] == setting.name and r["seed"] == seed for r in self.state["runs"]):
                    continue
                self.log(f"{setting.name} seed {seed}")
                self.state["runs"].append(self.run_one(setting, seed))
                self.state["updated"] = self.started  # when the latest runs began (``created``: the first)
                self._write()
                run = self.state["runs"][-1]
                self.log(
                    f"  S shift {run['s_shift']:+.3f}, B_gap {run['margin']['b_gap']:.3f}, visual gain "
                    f"{run['visual_gain']:+.3f}, echo {run['echo']['rate']:.2f}, {run['seconds']['total']:.0f} s"
                )
        for run in self.state["runs"]:  # the echo of every answer on file, by the current templates
            run["echo"] = _echo(run["answers"])
        self.state["base"]["echo"] = _echo(self.state["base"]["answers"])
        self.state["verdicts"] = verdicts(self.state["runs"], seeds)
        self._write()
        write_json_atomic(self.state, self.out)
        return self.state


def _screen(path: Path) -> dict[str, Any]:
    from sinkbench.sink.probe_model import probe_model

    report, _ = probe_model(str(path), progress=False)
    return {
        "sink_strength": report["sink_strength"],
        "ci": report["sink_strength_ci"],
        "position0_mass": report["metrics"]["position0_mass"],
    }


def _echo(answers: Sequence[str]) -> dict[str, Any]:
    return {
        "rate": round(echo_rate(answers), 5),
        "echoed": sum(map(echoes_template, answers)),
        "distinct": len(set(answers)),
    }


def _visual_items(vision: VisionSpec) -> list[Any]:
    return question_items(VISUAL_SEED, VISUAL_IMAGES, vision.image_size)


def _attention(
    vlm: torch.nn.Module, tokenizer: Any, items: Sequence[Any], vision: VisionSpec
) -> dict[str, Any]:
    """First-token attention on the text prompts and on the first :data:`IMAGE_QUESTIONS` held-out questions."""
    image = image_prompts(tokenizer, items[:IMAGE_QUESTIONS], vision.image_tokens)
    return {
        "text": first_token_attention(vlm, text_prompts(tokenizer)),
        "image": first_token_attention(vlm, image),
    }


def base_folder(backbone: Backbone, workdir: Path) -> Path:
    """The backbone's transformers folder: its packaged one; for a base Gemma 3 checkpoint (``gemma_turns``) one
    written once under ``workdir`` with Gemma 3's turn format as the chat template and ``<end_of_turn>`` as the
    tokenizer's end of sequence, so that every model built from it (the VLM, the extracted VLM-LM) stops where a turn
    ends."""
    if not backbone.gemma_turns:
        from sinkbench.models import resolve_model

        return Path(resolve_model(backbone.model)[1])
    from transformers import AutoTokenizer

    from experiments.interventions_pair.study import write_gemma_folder

    folder = write_gemma_folder(workdir / "gemma-base")
    tokenizer = AutoTokenizer.from_pretrained(folder)
    if tokenizer.eos_token != "<end_of_turn>":
        tokenizer.eos_token = "<end_of_turn>"
        tokenizer.save_pretrained(folder)
    return folder


def echo_prompts(count: int = ECHO_PROMPTS) -> tuple[list[dict[str, Any]], list[int]]:
    """``count`` IFEval prompts drawn at random (seed :data:`ECHO_SEED`) from the short-answer subset."""
    from sinkbench.tasks._data import load_task_data

    data, _ = load_task_data(IFEVAL)
    docs = [dict(doc) for doc in data[IFEVAL.split]]
    kept = short_answer_prompts(docs)
    chosen = sorted(np.random.default_rng(ECHO_SEED).choice(kept, size=count, replace=False).tolist())
    return [docs[i] for i in chosen], chosen
