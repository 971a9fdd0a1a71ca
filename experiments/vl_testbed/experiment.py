"""The testbed experiment: per seed a shared stage 0 and stage 1, then every run of the plan, each VLM measured as
a submitter would measure it.

A run (:class:`~experiments.vl_testbed.schema.RunKey`: data kind, dose, arm, seed) gives a fresh LLaVA around the
base LM the seed's stage-1 vision weights, applies the arm's protection, trains stage 2 with the monitor measuring
S, saves the VLM, extracts its LM with ``extract_lm(verify=True)``, screens it and measures the text outcomes
(:mod:`.outcomes`) and the visual accuracy. The state is written after every run, so a rerun resumes.
"""

from __future__ import annotations

import dataclasses
import shutil
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from experiments.page_fragment import read_results
from experiments.vl_testbed import analysis
from experiments.vl_testbed.controls import ARMS, arm_heads, frozen_units
from experiments.vl_testbed.outcomes import (
    TRIVIAL_ANSWERS,
    Generated,
    ReferenceAnswers,
    frequent_answers,
    measure_text,
    non_trivial_prompts,
    reference_answers,
    trivial_scores,
)
from experiments.vl_testbed.scenes import question_items
from experiments.vl_testbed.schema import (
    TESTBED_SIZE_LIMIT,
    BaseRecord,
    Machine,
    RemadeStages,
    Results,
    RunKey,
    RunRecord,
    SeedRecord,
    SharedStages,
    SinkRecord,
    TestbedConfig,
    TextRecord,
    TracePoint,
    VisualRecord,
)
from experiments.vl_testbed.train import pretrain_encoder, stage_data, train_stage, vision_state
from experiments.vl_testbed.visual import visual_accuracy
from experiments.vl_testbed.vlm import build_vlm, save_vlm
from sinkbench.safe_io import write_json_atomic
from sinkbench.sink.metrics import SECONDARY_METRICS, SINK_STRENGTH

#: The running state under the work folder, resumed by a rerun with the same recipe.
STATE_FILE = "state.json"


@dataclass
class Inputs:
    """What the experiment reads: the base LM as a transformers folder, the IFEval docs (and which of them a
    trivial answer fails), GSM8K training problems for text-only chats, the sink heads and the attention shape."""

    base_dir: Path
    docs: Sequence[dict[str, Any]]
    non_trivial: Sequence[int]
    problems: Sequence[dict[str, str]]
    sink_heads: list[list[int]]
    shape: dict[str, int]  # num_layers, num_heads, num_kv_heads


def load_base(base_dir: Path, dtype: str = "float32", device: str = "cpu") -> tuple[torch.nn.Module, Any]:
    """A fresh copy of the base LM (float32 unless told) and its tokenizer."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    model = AutoModelForCausalLM.from_pretrained(base_dir, dtype=getattr(torch, dtype)).to(device)
    return model, AutoTokenizer.from_pretrained(base_dir)


def attention_shape(config: Any) -> dict[str, int]:
    """The attention shape of a causal LM's config (a composite one's text model), as :class:`Inputs` holds it."""
    config = getattr(config, "text_config", config)
    return {
        "num_layers": config.num_hidden_layers,
        "num_heads": config.num_attention_heads,
        "num_kv_heads": config.num_key_value_heads,
    }


def trace_point(record: dict[str, Any]) -> TracePoint:
    """A monitor measurement (``Measurement.trace_record()``) as the results keep it."""
    return TracePoint(
        step=record["step"],
        sink_strength=record[SINK_STRENGTH.name],
        secondary={metric.name: record.get(metric.name) for metric in SECONDARY_METRICS},
        seconds=record["seconds"],
    )


class Testbed:
    """Runs (and resumes) the experiment; checkpoints and scratch go under ``workdir``. The state (the results
    without their analysis) is written to ``workdir / STATE_FILE`` after every stage and run; the finished
    results go to ``results`` at the end, so a results file is never partial."""

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
        self.resumed_on: Machine | None = None  # this session's machine, when it resumes a state
        self.state = self._resume(header)
        self.reference: ReferenceAnswers | None = None
        self.dtype = getattr(torch, config.eval_dtype)  # generation and visual accuracy

    def _resume(self, header: dict[str, Any]) -> Results:
        fresh = Results.model_validate(
            {**header, "config": self.config, "sink_heads": self.inputs.sink_heads}
        )
        if not self.state_file.is_file():
            return fresh
        previous = read_results(
            Results,
            self.state_file,
            str(self.state_file),
            TESTBED_SIZE_LIMIT,
            "move it out of the work folder to start afresh, or give another --workdir",
        )
        same = (
            previous.config.recipe() == self.config.recipe()
            and previous.sink_heads == fresh.sink_heads
            and previous.ifeval_subset.indices == fresh.ifeval_subset.indices
        )
        if not same:
            self.log(f"{self.state_file} was made with another recipe: starting afresh")
            return fresh
        self.log(f"resuming {self.state_file}: {len(previous.runs)} runs on file")
        self.resumed_on = fresh.machine
        return previous.model_copy(update={"config": self.config})

    def _write(self, path: Path | None = None) -> None:
        write_json_atomic(self.state.model_dump(mode="json", by_alias=True), path or self.state_file)

    def _update(self, **fields: Any) -> None:
        self.state = self.state.model_copy(update=fields)
        self._write()

    def run(self, *, report_only: bool = False) -> Results:
        """Every run of the plan not yet on file, then the analysis; returns the results. ``report_only`` runs
        nothing and reports the runs on file (the page shows each group's seeds).

        Raises:
            ValueError: ``report_only`` with no base model or no run on file.
        """
        if report_only and (self.state.base is None or not self.state.runs):
            raise ValueError(f"{self.state_file} holds no finished run to report; run the experiment first")
        if self.resumed_on is not None and not report_only:
            self._update(machine=self.state.machine.resumed(self.resumed_on))
        self.ensure_base()
        planned = self.config.runs()
        for number, key in enumerate(planned, start=1):
            if report_only or self.state.run(key) is not None:
                continue
            self.prepare_seed(key.seed, key.label())
            self.log(f"run {number} of {len(planned)}: {key.label()}")
            self._update(runs=[*self.state.runs, self.run_one(key)])
        self.state = with_trivial_proof_subset(self.state, self.inputs.docs)
        self.state = self.state.model_copy(update={"analysis": analysis.summarize(self.state)})
        self._write()
        self._write(self.results)
        return self.state

    def ensure_base(self) -> BaseRecord:
        """The base model's record, measured (and written to the state) unless it is on file."""
        if self.state.base is None:
            self._update(base=self._base())
        return self.state.base

    def _reference(self) -> ReferenceAnswers:
        """The base model's answers, which every run's NLL scores (from the state; measured first in a new work
        folder whose state has no base, e.g. the interventions study's in another precision)."""
        if self.reference is None:
            base = self.ensure_base()
            self.reference = ReferenceAnswers(
                tuple(doc["prompt"] for doc in self.inputs.docs),
                tuple(tuple(ids) for ids in base.reference_token_ids),
                tuple(map(bool, base.text.stopped)),
            )
        return self.reference

    def measure_text_of(self, lm_dir: Path, generated: Generated | None = None) -> TextRecord:
        """The text outcomes of a causal-LM folder (``generated``: its answers when already made, the base's)."""
        config = self.config
        model, tokenizer = load_base(lm_dir, config.eval_dtype, config.device)
        return measure_text(
            model,
            tokenizer,
            self.inputs.docs,
            self.inputs.non_trivial,
            self._reference(),
            max_new_tokens=config.max_new_tokens,
            batch_size=config.eval_batch,
            generate_dtype=self.dtype,
            generated=generated,
        )

    def screen(self, lm_dir: Path) -> SinkRecord:
        """S of a causal-LM folder, as ``sinkbench screen`` measures it."""
        from sinkbench.sink.probe_model import probe_model

        report, _ = probe_model(str(lm_dir), progress=False, device=self.config.device)
        return SinkRecord(
            sink_strength=report["sink_strength"],
            ci=tuple(report["sink_strength_ci"]),
            secondary={metric.name: report["metrics"][metric.name] for metric in SECONDARY_METRICS},
            layer_median_g=report["profile"]["layer_median_g"],
        )

    def _base(self) -> BaseRecord:
        """The untouched base LM through the same measurements, and an untrained VLM's visual accuracy."""
        self.log("base model")
        config = self.config
        started = time.perf_counter()
        sink = self.screen(self.inputs.base_dir)
        screened = time.perf_counter()
        model, tokenizer = load_base(self.inputs.base_dir, config.eval_dtype, config.device)
        self.reference, generated = reference_answers(
            model,
            tokenizer,
            self.inputs.docs,
            max_new_tokens=config.max_new_tokens,
            batch_size=config.eval_batch,
            generate_dtype=self.dtype,
        )
        del model
        text = self.measure_text_of(self.inputs.base_dir, generated)
        measured = time.perf_counter()
        return BaseRecord(
            sink=sink,
            text=text,
            reference_token_ids=[list(ids) for ids in self.reference.token_ids],
            visual_untrained=self._visual(*self._fresh_vlm(0)),
            seconds={"screen": round(screened - started, 1), "text": round(measured - screened, 1)},
        )

    def _fresh_vlm(self, seed: int) -> tuple[torch.nn.Module, Any]:
        """A LLaVA around a fresh base LM (vision side from ``seed``) on the device, and its tokenizer."""
        lm, tokenizer = load_base(self.inputs.base_dir, device=self.config.device)
        return build_vlm(lm, tokenizer, self.config.vision, seed=seed).to(self.config.device), tokenizer

    def _visual(self, vlm: torch.nn.Module, tokenizer: Any) -> VisualRecord:
        """The held-out visual accuracy of ``vlm``."""
        accuracy = visual_accuracy(
            vlm, tokenizer, self.items, self.config.vision.image_tokens, dtype=self.dtype
        )
        return VisualRecord.model_validate(accuracy)

    def visual_of(self, vlm_dir: Path) -> VisualRecord:
        """The held-out visual accuracy of a saved VLM folder (a LLaVA checkpoint)."""
        from transformers import AutoTokenizer, LlavaForConditionalGeneration

        vlm = LlavaForConditionalGeneration.from_pretrained(vlm_dir, dtype=torch.float32)
        return self._visual(vlm.to(self.config.device), AutoTokenizer.from_pretrained(vlm_dir))

    def run_dir(self, key: RunKey) -> Path:
        """Where a run's VLM (``vlm/``) and VLM-LM (``lm/``) are saved (kept for the runs in ``config.keep``)."""
        return self.workdir / f"seed{key.seed}" / f"{key.data}-{key.dose}-{key.arm}"

    def _stage1_path(self, seed: int) -> Path:
        return self.workdir / f"seed{seed}" / "stage1.pt"

    def prepare_seed(self, seed: int, first_run: str) -> None:
        """Make the seed's stage-0/1 vision weights unless they are on disk, and record them: as the seed's record,
        or, when one is on file (the weights were lost, e.g. a new work folder), as a remaking for ``first_run`` (a
        :meth:`RunKey.label`) and the seed's later runs, with whether it reproduced the first making."""
        on_file = self.state.seed_record(seed)
        if on_file is not None and self._stage1_path(seed).is_file():
            return
        self.log(f"seed {seed}: stages 0 and 1")
        config = self.config
        vlm, tokenizer = self._fresh_vlm(seed)
        stage0 = pretrain_encoder(vlm, config.vision, seed, config.stage0_steps, config.stage0_batch)
        count = config.stage1.steps * config.stage1.batch_size
        data = stage_data("stage1", seed, count, tokenizer, config.vision)
        result = train_stage(vlm, tokenizer, data, config.stage1, seed, device=config.device)
        # the weights take their name only once their record is on file: a run that dies in between remakes them
        path = self._stage1_path(seed)
        path.parent.mkdir(parents=True, exist_ok=True)
        unrecorded = path.with_suffix(".unrecorded")
        torch.save(vision_state(vlm), unrecorded)
        made = SharedStages(stage0=stage0, stage1=result, visual_after_stage1=self._visual(vlm, tokenizer))
        if on_file is None:
            record = SeedRecord(seed=seed, **dict(made))
        else:
            reproduced = made.stage0.loss == on_file.stage0.loss and made.stage1.loss == on_file.stage1.loss
            self.log(f"seed {seed}: stages 0 and 1 made again, {'' if reproduced else 'not '}reproduced")
            remade = RemadeStages(**dict(made), first_run=first_run, reproduced=reproduced)
            record = on_file.model_copy(update={"remade": [*on_file.remade, remade]})
        others = [r for r in self.state.seeds if r.seed != seed]
        self._update(seeds=sorted([*others, record], key=lambda r: r.seed))
        unrecorded.replace(path)

    def run_one(self, key: RunKey) -> RunRecord:
        """Stage 2 of one run, then the VLM saved, its LM extracted and verified, screened and measured."""
        from sinkbench.extract.pipeline import extract_lm
        from sinkbench.monitor import SinkStrengthCallback
        from sinkbench.protect import protect_sink_heads

        config, inputs = self.config, self.inputs
        started = time.perf_counter()
        vlm, tokenizer = self._fresh_vlm(key.seed)
        vlm.load_state_dict(torch.load(self._stage1_path(key.seed)), strict=False)
        heads = arm_heads(key.arm, key.seed, inputs.sink_heads, inputs.shape, config.bands)
        handle = protect_sink_heads(vlm, heads, mode="freeze") if heads else None
        spec = dataclasses.replace(config.doses[key.dose], train_lm=ARMS[key.arm].lm_trains)
        count = spec.steps * spec.batch_size
        vl_data = stage_data(
            "stage2",
            key.seed,
            count,
            tokenizer,
            config.vision,
            replies=config.replies,
            problems=inputs.problems,
            text_share=config.text_share,
        )
        data = (
            vl_data
            if key.data == "vl"
            else stage_data(
                "stage2_text",
                key.seed,
                count,
                tokenizer,
                config.vision,
                problems=inputs.problems,
                supervised_tokens=vl_data.supervised_tokens if key.data == "text_matched" else None,
            )
        )
        monitor: list[Any] = []

        def make_monitor(trainer: Any) -> Any:
            monitor.append(
                SinkStrengthCallback(trainer, every_n_steps=config.monitor_every, tokenizer=tokenizer)
            )
            return monitor[0]

        result = train_stage(
            vlm, tokenizer, data, spec, key.seed, callbacks=[make_monitor], device=config.device
        )
        unchanged = handle is None or all(
            torch.equal(entry.parameter.detach()[entry.rows], entry.initial) for entry in handle.rows
        )
        if handle is not None:
            handle.remove()
        visual_started = time.perf_counter()
        visual = self._visual(vlm, tokenizer)
        run_dir = self.run_dir(key)
        shutil.rmtree(run_dir, ignore_errors=True)
        extract_started = time.perf_counter()
        save_vlm(vlm, tokenizer, config.vision, run_dir / "vlm")
        extraction = extract_lm(str(run_dir / "vlm"), run_dir / "lm", verify=True).provenance["verification"]
        del vlm
        screen_started = time.perf_counter()
        sink = self.screen(run_dir / "lm")
        text_started = time.perf_counter()
        text = self.measure_text_of(run_dir / "lm")
        finished = time.perf_counter()
        if key not in config.keep:
            shutil.rmtree(run_dir, ignore_errors=True)
        trace = [trace_point(m.trace_record()) for m in monitor[0].monitor.history]
        return RunRecord(
            key=key,
            heads=heads,
            frozen={
                **frozen_units(heads, inputs.shape["num_heads"], inputs.shape["num_kv_heads"]),
                "weights": handle.num_protected if handle else 0,
                "rows_unchanged": unchanged,
                "lm_trained": spec.train_lm,
            },
            stage2=result,
            trace=trace,
            visual=visual,
            extraction=extraction,
            sink=sink,
            text=text,
            seconds={
                "stage2": result.seconds,
                "monitor": round(sum(point.seconds for point in trace), 1),
                "visual": round(extract_started - visual_started, 1),
                "extract": round(screen_started - extract_started, 1),
                "screen": round(text_started - screen_started, 1),
                "text": round(finished - text_started, 1),
                "total": round(finished - started, 1),
            },
        )


def ifeval_subset_record(
    docs: Sequence[dict[str, Any]], indices: Sequence[int], non_trivial: Sequence[int], source: dict[str, Any]
) -> dict[str, Any]:
    """What the results file records of the IFEval prompts: the file, the rule, the indices and keys, which of
    them a trivial answer fails, and what the trivial answers score."""
    chosen = [docs[i] for i in indices]
    return {
        **source,
        "indices": list(indices),
        "keys": [doc["key"] for doc in chosen],
        "non_trivial": list(non_trivial),
        "trivial_scores": trivial_scores(chosen),
    }


def with_trivial_proof_subset(results: Results, docs: Sequence[dict[str, Any]]) -> Results:
    """``results`` with the non-trivial subset narrowed to the prompts that every run's most frequent answer fails
    too (:func:`~experiments.vl_testbed.outcomes.frequent_answers`), and every model's strict score on it
    recomputed from its per-prompt outcomes. ``docs`` are the experiment's IFEval prompts, in order; ``results``
    hold the base model's record."""
    frequent = frequent_answers(run.text.answers for run in results.runs)
    kept = sorted(set(non_trivial_prompts(docs)) & set(non_trivial_prompts(docs, frequent)))

    def narrowed(text: TextRecord) -> TextRecord:
        strict = text.ifeval.strict_by_prompt
        score = sum(strict[i] for i in kept) / len(kept) if kept else float("nan")
        return text.model_copy(update={"non_trivial_strict": score, "non_trivial_prompts": len(kept)})

    subset = results.ifeval_subset.model_copy(
        update={
            "non_trivial": kept,
            "trivial_scores": trivial_scores(docs),
            "trivial_answers": list(TRIVIAL_ANSWERS),
            "frequent_answers": frequent,
            "base_passes_non_trivial": sum(results.base.text.ifeval.strict_by_prompt[i] for i in kept),
        }
    )
    return results.model_copy(
        update={
            "ifeval_subset": subset,
            "base": results.base.model_copy(update={"text": narrowed(results.base.text)}),
            "runs": [run.model_copy(update={"text": narrowed(run.text)}) for run in results.runs],
        }
    )
