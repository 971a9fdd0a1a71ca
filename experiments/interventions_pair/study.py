"""The interventions study: the paper's diagnosis and intervention experiments (:mod:`sinkbench.interventions`) in
miniature on the testbed's SmolLM2 pair, each model measured as the testbed measures its runs.

Steps, each resumable (the running state is ``STUDY_FILE`` in the work folder); checkpoints are removed once
measured, except the pair's endpoints and the injected model, which later steps read:

* ``ablation_smollm2`` / ``ablation_gemma``: the top-10 norm channels per layer set to the mean (D.3);
* ``injection_before``: QK-RMSNorm injected into SmolLM2, before any training (F.3);
* ``endpoints``: the VL and text-only endpoints of seed 0 at the compared dose, re-made by the testbed's recipe;
* ``displacement``: where the weights moved, VL against text-only endpoint (F.1);
* ``random_control``: Gaussian ΔW at the VL pair's relative norms, seed 0 (D.4);
* ``random_controls``: the same control matched on each projection's operator norm instead, and one on every
  tensor the VL pair changed (:data:`RANDOM_CONTROLS`);
* ``merges``: the seven merge settings of F.4, each with its text outcomes and the visual accuracy of its VLM;
* ``toward_base``: graded positive controls of known size, the VLM-LM moved a fraction :data:`TOWARD_BASE` of the way
  back to the base (a linear mix; no training), measured as the merges are;
* ``injection_runs``: the injected SmolLM2 through the testbed's stages, against vanilla runs of the same seeds (the
  study makes those that are not on file).
"""

from __future__ import annotations

import json
import shutil
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np

from experiments.interventions_pair.study_schema import (
    STEPS,
    Ablation,
    Arm,
    Endpoints,
    Injection,
    Measured,
    StudyResults,
    contrasts,
    run_measured,
)
from experiments.vl_testbed.experiment import STATE_FILE, Inputs, Testbed, attention_shape
from experiments.vl_testbed.precision import with_precision
from experiments.vl_testbed.schema import BaseRecord, Results, RunKey, RunRecord
from sinkbench.safe_io import write_json_atomic
from sinkbench.stats import mean_interval, sign_flip_p

#: The running state of the study under its work folder.
STUDY_FILE = "study.json"
#: Gemma 3's turn format, given to the base Gemma 3 270M checkpoint (which ships no chat template) so that it is
#: asked the IFEval prompts as the instruct models are.
GEMMA_TURNS = (
    "{{ bos_token }}{% for message in messages %}"
    "{% set role = 'model' if message['role'] == 'assistant' else message['role'] %}"
    "<start_of_turn>{{ role }}\n{{ message['content'] | trim }}<end_of_turn>\n{% endfor %}"
    "{% if add_generation_prompt %}<start_of_turn>model\n{% endif %}"
)
#: The steps that read the endpoints' checkpoints (kept in the work folder only): ``endpoints`` runs before them
#: whenever they are missing (:meth:`Study._needs`).
NEEDS_ENDPOINTS = ("displacement", "random_control", "random_controls", "merges", "toward_base")
#: The ``toward_base`` step's fractions α: the VLM-LM's weights W + α (W_base - W), α of its change undone.
TOWARD_BASE = (0.25, 0.5, 0.75)
#: The paper's random-ΔW control (the ``random_control`` step): (title, match, scope), seed 0.
PAPER_CONTROL = ("Gaussian ΔW at the VLM-LM's relative norms (seed 0)", "frobenius", "projections")
#: The ``random_controls`` step's controls beside the paper's: name -> (title, match, scope), all of seed 0.
RANDOM_CONTROLS = {
    "random_operator": ("Gaussian ΔW at the VLM-LM's operator norms (seed 0)", "operator", "projections"),
    "random_every_tensor": (
        "Gaussian ΔW at the VLM-LM's relative norms on every tensor it changed (seed 0)",
        "frobenius",
        "changed",
    ),
}
#: Per-seed outcomes of the injection runs, paired with vanilla over seeds: name -> value of a run.
SEED_OUTCOMES: dict[str, Callable[[RunRecord], float]] = {
    "nll_continue": lambda run: run.text.nll_continue_mean,
    "non_trivial_strict": lambda run: run.text.non_trivial_strict * 100,
    "prompt_strict": lambda run: run.text.ifeval.prompt_strict * 100,
    "visual": lambda run: run.visual.accuracy * 100,
    "sink_strength": lambda run: run.sink.sink_strength,
}


def base_measured(base: BaseRecord) -> Measured:
    """An untouched base model's record as a :class:`Measured`."""
    return Measured(
        sink=base.sink, text=base.text, visual=None, seconds=base.seconds.screen + base.seconds.text
    )


def recipe_in(testbed_results: Results, precision: str) -> Results:
    """``testbed_results`` with its recipe in ``precision`` and nothing measured: another precision is another
    recipe, so the study measures the base again and compares with none of the results' runs."""
    config = with_precision(testbed_results.config, precision)
    return testbed_results.model_copy(
        update={"config": config, "base": None, "seeds": [], "runs": [], "analysis": None}
    )


def over_seeds(treated: list[RunRecord], control: dict[int, RunRecord]) -> dict[str, dict[str, Any]]:
    """``treated`` minus the ``control`` run of the same seed on each of :data:`SEED_OUTCOMES`: the per-seed
    differences, their mean with a percentile bootstrap interval over seeds, and the exact sign-flip p."""
    found = {}
    for name, value in SEED_OUTCOMES.items():
        differences = [value(run) - value(control[run.key.seed]) for run in treated]
        found[name] = {
            "differences": differences,
            "mean": float(np.mean(differences)),
            "ci": list(mean_interval(differences)),
            "p_sign_flip": sign_flip_p(differences),
        }
    return found


@dataclass
class StudyInputs:
    """What the study reads: the committed testbed results, the testbed's inputs for SmolLM2, the Gemma 3 270M
    folder (None: skip its ablation) and the seeds of the injection runs."""

    testbed_results: Results
    inputs: Inputs
    gemma_dir: Path | None
    injection_seeds: tuple[int, ...]


class Study:
    """Runs (and resumes) the study under ``workdir``; the finished results go to ``results``."""

    def __init__(
        self,
        study: StudyInputs,
        workdir: Path,
        results: Path,
        header: dict[str, Any],
        log: Callable[[str], None] = print,
    ) -> None:
        self.study, self.workdir, self.results, self.log = study, workdir, results, log
        self.state_file = workdir / STUDY_FILE
        self.injected = workdir / "injected"
        committed = study.testbed_results
        dose = committed.config.compare_dose
        self.endpoint_keys = tuple(
            RunKey(data=data, dose=dose, arm="none", seed=0) for data in ("vl", "text")
        )
        self.config = committed.config.model_copy(update={"keep": self.endpoint_keys})
        fresh = StudyResults.model_validate(header)
        if self.state_file.is_file():
            self.log(f"resuming {self.state_file}")
            previous = StudyResults.model_validate(json.loads(self.state_file.read_text(encoding="utf-8")))
            machine = previous.machine.resumed(fresh.machine)
            fresh = previous.model_copy(update={"command": fresh.command, "machine": machine})
        self.state = fresh
        self.testbed = self._testbed("smollm2", study.inputs, committed)

    def _testbed(self, name: str, inputs: Inputs, seeded: Results | None) -> Testbed:
        """A testbed in ``workdir/name`` whose state starts from ``seeded`` (its base record, so that every model
        is scored on the same base answers) unless it has a state of its own."""
        folder = self.workdir / name
        folder.mkdir(parents=True, exist_ok=True)
        if seeded is not None and not (folder / STATE_FILE).is_file():
            state = seeded.model_copy(
                update={"seeds": [], "runs": [], "analysis": None, "sink_heads": inputs.sink_heads}
            )
            write_json_atomic(state.model_dump(mode="json", by_alias=True), folder / STATE_FILE)
        kept = ("sinkbench_version", "created", "command", "model", "machine", "ifeval_subset", "text_source")
        header = self.study.testbed_results.model_dump(include=set(kept))
        header["shape"] = inputs.shape
        if seeded is None:
            header["model"] = {"path": name}
        return Testbed(self.config, inputs, folder, folder / "results.json", header, log=self.log)

    def _write(self, path: Path | None = None) -> None:
        """The state to ``path`` (None: the running state's file)."""
        write_json_atomic(self.state.model_dump(mode="json", by_alias=True), path or self.state_file)

    def run(self, steps: tuple[str, ...] = STEPS) -> StudyResults:
        """Every step of ``steps`` not yet on file, then the results file; returns the results."""
        if self.state.base is None:
            self.state = self.state.model_copy(update={"base": base_measured(self.testbed.ensure_base())})
        for step in steps:
            if self._done(step):
                continue
            for needed in self._needs(step):
                if not self._done(needed):  # e.g. checkpoints not committed: a new work folder re-makes them
                    self._run_step(needed)
            self._run_step(step)
        self._write(self.results)
        return self.state

    def _needs(self, step: str) -> tuple[str, ...]:
        """The steps ``step`` reads: the endpoints' checkpoints, or the injection's record; the injected runs also
        need the re-made VL endpoint's record when it is their vanilla run of seed 0 (a recipe of another precision)
        and is not yet on file."""
        if step in NEEDS_ENDPOINTS:
            return ("endpoints",)
        if step == "injection_runs":
            own_vanilla = 0 in self.study.injection_seeds and 0 not in self._vanilla()
            return ("injection_before", "endpoints") if own_vanilla else ("injection_before",)
        return ()

    def _run_step(self, step: str) -> None:
        self.log(f"step {step}")
        started = time.perf_counter()
        update = getattr(self, f"_{step}")()
        seconds = {**self.state.seconds, step: round(time.perf_counter() - started, 1)}
        self.state = self.state.model_copy(update={**update, "seconds": seconds})
        self._write()

    def _done(self, step: str) -> bool:
        state = self.state
        if step == "endpoints":
            kept = all((self.testbed.run_dir(key) / "lm").is_dir() for key in self.endpoint_keys)
            return state.endpoints is not None and kept
        if step == "ablation_gemma" and self.study.gemma_dir is None:
            return True  # no Gemma 3 270M here: the step is skipped (the script says so)
        if step.startswith("ablation_"):
            return any(item.backbone == step.removeprefix("ablation_") for item in state.ablations)
        if step == "injection_before":
            return state.injection is not None
        if step == "injection_runs":
            injection = state.injection
            return injection is not None and set(self.study.injection_seeds) <= set(injection.vanilla_seeds)
        return bool(getattr(state, step))

    # -- the pair ------------------------------------------------------------------------------------------------

    def _endpoints(self) -> dict[str, Any]:
        """Re-make seed 0's VL and text-only endpoints and compare them with the committed runs."""
        committed = self.study.testbed_results
        self.testbed.prepare_seed(0, self.endpoint_keys[0].label())
        made = {key.data: self.testbed.run_one(key) for key in self.endpoint_keys}
        reproduction = {}
        for data, run in made.items():
            before = committed.run(run.key)
            if before is not None:
                reproduction[f"{data}_nll_continue_difference"] = (
                    run.text.nll_continue_mean - before.text.nll_continue_mean
                )
                reproduction[f"{data}_prompt_strict_difference"] = (
                    run.text.ifeval.prompt_strict - before.text.ifeval.prompt_strict
                )
                reproduction[f"{data}_visual_difference"] = run.visual.accuracy - before.visual.accuracy
        return {"endpoints": Endpoints(vl=made["vl"], text=made["text"], reproduction=reproduction)}

    def _dirs(self, data: str) -> Path:
        return self.testbed.run_dir(self.endpoint_keys[0 if data == "vl" else 1])

    def _measure(self, testbed: Testbed, lm_dir: Path, vlm_dir: Path | None = None) -> Measured:
        started = time.perf_counter()
        sink = testbed.screen(lm_dir)
        text = testbed.measure_text_of(lm_dir)
        visual = testbed.visual_of(vlm_dir) if vlm_dir is not None else None
        return Measured(sink=sink, text=text, visual=visual, seconds=round(time.perf_counter() - started, 1))

    def _arm(
        self, name: str, title: str, measured: Measured, against: dict[str, Measured], **details: Any
    ) -> Arm:
        non_trivial = list(self.study.inputs.non_trivial)
        found = {other: contrasts(measured.text, their.text, non_trivial) for other, their in against.items()}
        return Arm(name=name, title=title, measured=measured, contrasts=found, details=details)

    def _comparators(self) -> dict[str, Measured]:
        """The base model and the VLM-LM (the re-made VL endpoint), which the pair's interventions are compared with."""
        return {"base": self.state.base, "vlm_lm": run_measured(self.state.endpoints.vl)}

    def _intervene(self, spec: Any, models: dict[str, Path], out: Path, parameters: Any = None) -> Any:
        """``spec`` (an intervention of :mod:`sinkbench.interventions`) run on ``models`` into ``out`` with
        ``parameters`` (None: its defaults); its report."""
        from sinkbench.interventions.checkpoint import write_intervention

        return write_intervention(spec, models, out, parameters, overwrite=True, progress=False)

    def _pair(self) -> dict[str, Path]:
        """The base model and its VL endpoint's language model, as the interventions' reference and VLM-LM."""
        return {"reference": self.study.inputs.base_dir, "vlm_lm": self._dirs("vl") / "lm"}

    # -- the steps -----------------------------------------------------------------------------------------------

    def _displacement(self) -> dict[str, Any]:
        from sinkbench.interventions.displacement import weight_displacement

        vl, text = self._dirs("vl") / "lm", self._dirs("text") / "lm"
        report = weight_displacement(self.study.inputs.base_dir, vl, versus=text, progress=False)
        kept = ("window", "summary", "rows", "versus_rows", "seconds")
        return {"displacement": {key: report[key] for key in kept}}

    def _control_arm(self, name: str, title: str, match: str, scope: str) -> Arm:
        """The random-dW control of the pair matched in ``match`` on ``scope``, seed 0, measured against the base
        and the VLM-LM."""
        from sinkbench.interventions.random_control import RANDOM_CONTROL
        from sinkbench.interventions.settings import RandomControlParameters

        out = self.workdir / name.replace("_", "-")
        parameters = RandomControlParameters(seed=0, match=match, scope=scope)
        record = self._intervene(RANDOM_CONTROL, self._pair(), out, parameters)
        measured = self._measure(self.testbed, out)
        shutil.rmtree(out)  # measured: the results keep its numbers, not its weights

        def median(field: str) -> float:
            return float(np.median([getattr(row, field) for row in record.tensors]))

        return self._arm(
            name,
            title,
            measured,
            self._comparators(),
            match=match,
            scope=scope,
            tensors=len(record.tensors),
            max_relative_error=record.max_relative_error,
            median_target_relative_frobenius=median("relative_frobenius"),
            median_frobenius_ratio=median("frobenius_ratio"),
            median_operator_ratio=median("operator_ratio"),
            changed=sorted({_kind(row.tensor) for row in record.tensors}),
        )

    def _random_control(self) -> dict[str, Any]:
        title, match, scope = PAPER_CONTROL
        return {"random_control": self._control_arm("random_control", title, match, scope)}

    def _random_controls(self) -> dict[str, Any]:
        return {
            "random_controls": [
                self._control_arm(name, title, match, scope)
                for name, (title, match, scope) in RANDOM_CONTROLS.items()
            ]
        }

    def _merges(self) -> dict[str, Any]:
        from sinkbench.interventions.merging import MERGE

        out = self.workdir / "merges"
        report = self._intervene(MERGE, self._pair(), out)
        comparators = self._comparators()
        arms = []
        for name, record in report.settings.items():
            identical = record["distance"]["to_vlm_lm"] == 0
            # the same weights as the VLM-LM: its measurements are this model's
            measured = comparators["vlm_lm"] if identical else self._implanted(name, out / name)
            self.log(f"merge {name}: done")
            kept = {key: record[key] for key in ("distance", "reading", "parameters", "seed")}
            details = {**kept, "identical_to_vlm_lm": identical}
            arms.append(self._arm(name, record["title"], measured, comparators, **details))
        shutil.rmtree(out)
        return {"merges": arms}

    def _implanted(self, name: str, lm_dir: Path) -> Measured:
        """``lm_dir`` (a changed VLM-LM) measured, with the visual accuracy of the VL endpoint's VLM it is put back
        into."""
        from sinkbench.extract.implant import implant_lm

        vlm_dir = self.workdir / "implanted" / name
        implant_lm(str(self._dirs("vl") / "vlm"), lm_dir, vlm_dir, overwrite=True)
        measured = self._measure(self.testbed, lm_dir, vlm_dir)
        shutil.rmtree(vlm_dir)
        return measured

    def _toward_base(self) -> dict[str, Any]:
        from sinkbench.interventions.merging import merge
        from sinkbench.interventions.settings import MergeSetting

        arms, comparators = [], self._comparators()
        for alpha in TOWARD_BASE:
            name = f"toward_base_{round(alpha * 100)}"
            title = f"VLM-LM moved {alpha:.0%} of the way back to the base"
            setting = MergeSetting(name, title, "linear", mix=1 - alpha)
            model, record = merge(self.study.inputs.base_dir, self._dirs("vl") / "lm", setting)
            out = self.workdir / "toward-base" / name
            model.model.save_pretrained(out)
            model.tokenizer.save_pretrained(out)
            measured = self._implanted(name, out)
            shutil.rmtree(out)
            self.log(f"{name}: done")
            details = {"alpha": alpha, "distance": record["distance"]}
            arms.append(self._arm(name, record["title"], measured, comparators, **details))
        return {"toward_base": arms}

    def _ablation(self, backbone: str, testbed: Testbed, model_dir: Path, template: str) -> Ablation:
        from sinkbench.interventions.ablation import CHANNEL_ABLATION

        out = self.workdir / f"ablation-{backbone}"
        report = self._intervene(CHANNEL_ABLATION, {"model": model_dir}, out)
        base = base_measured(testbed.ensure_base())
        settings, common = [], {"top_k": report.top_k, "paper_kinds_absent": report.paper_kinds_absent}
        for name, setting in report.settings.items():
            measured = self._measure(testbed, out / name)
            self.log(f"ablation {backbone} {name}: done")
            own = {key: setting[key] for key in ("kinds", "norms_changed")}
            title = " + ".join(setting["kinds"])
            settings.append(self._arm(name, title, measured, {"base": base}, **own, **common))
        shutil.rmtree(out)
        return Ablation(backbone=backbone, chat_template=template, base=base, settings=settings)

    def _ablation_smollm2(self) -> dict[str, Any]:
        ablation = self._ablation("smollm2", self.testbed, self.study.inputs.base_dir, "the model's own")
        return {"ablations": [*self.state.ablations, ablation]}

    def _ablation_gemma(self) -> dict[str, Any]:
        from transformers import AutoConfig

        folder = self.study.gemma_dir
        shape = attention_shape(AutoConfig.from_pretrained(folder))
        inputs = replace(self.study.inputs, base_dir=folder, problems=[], sink_heads=[], shape=shape)
        template = "Gemma 3's turn format (the base checkpoint ships none)"
        ablation = self._ablation("gemma", self._testbed("gemma", inputs, None), folder, template)
        return {"ablations": [*self.state.ablations, ablation]}

    def _inject(self) -> Any:
        """The QK-norm injection of the base model, written to the injected folder; its report."""
        from sinkbench.interventions.qk_norm import QK_NORM_INJECTION

        return self._intervene(QK_NORM_INJECTION, {"source": self.study.inputs.base_dir}, self.injected)

    def _injection_before(self) -> dict[str, Any]:
        record = self._inject()
        measured = self._measure(self.testbed, self.injected)
        before = self._arm(
            "injected",
            "per-head QK-RMSNorm, γ = 1, no training",
            measured,
            {"base": self.state.base},
            target_architecture=record.target_architecture,
            equivalence=record.equivalence,
        )
        return {"injection": Injection(before=before, runs=[], vanilla_seeds=[], over_seeds={})}

    def _injection_runs(self) -> dict[str, Any]:
        """The injected SmolLM2 through stage 2 for each seed, each paired with a vanilla run of its seed: the
        testbed results', the re-made VL endpoint (seed 0), or one the study makes in its own testbed. Every run is
        written to the running state as it finishes, so a killed step resumes at the run it was in."""
        if not (self.injected / "config.json").is_file():  # a work folder started from the results file
            self._inject()
        injected = replace(self.study.inputs, base_dir=self.injected, sink_heads=[])
        # Scored on the base answers the study's own testbed holds (the testbed results', or measured afresh in
        # another precision).
        seeded = self.study.testbed_results.model_copy(update={"base": self.testbed.ensure_base()})
        testbed = self._testbed("injected-runs", injected, seeded)
        for seed in self.study.injection_seeds:
            key = RunKey(data="vl", dose=self.config.compare_dose, arm="none", seed=seed)
            if seed not in self._vanilla():
                self._record_run(self.testbed, key, "vanilla_runs", "vanilla")
            if seed not in {run.key.seed for run in self.state.injection.runs}:
                self._record_run(testbed, key, "runs", "injected")
        return {"injection": self._paired(self.state.injection)}

    def _vanilla(self) -> dict[int, RunRecord]:
        """The vanilla runs by seed: the testbed results', the re-made VL endpoint, then the study's own."""
        vanilla = {
            run.key.seed: run
            for run in self.study.testbed_results.runs
            if (run.key.data, run.key.dose, run.key.arm) == ("vl", self.config.compare_dose, "none")
        }
        if self.state.endpoints is not None:  # the re-made VL endpoint is vanilla seed 0 of this very recipe
            vanilla.setdefault(0, self.state.endpoints.vl)
        if self.state.injection is not None:
            for run in self.state.injection.vanilla_runs:
                vanilla.setdefault(run.key.seed, run)
        return vanilla

    def _record_run(self, testbed: Testbed, key: RunKey, field: str, kind: str) -> None:
        """Make one run of ``testbed`` and add it to the injection's ``field`` in the running state."""
        testbed.prepare_seed(key.seed, key.label())
        self.log(f"{kind} run seed {key.seed}")
        run = testbed.run_one(key)
        injection = self.state.injection
        update = {field: [*getattr(injection, field), run]}
        self.state = self.state.model_copy(update={"injection": injection.model_copy(update=update)})
        self._write()
        self.log(f"{kind} run seed {key.seed}: done")

    def _paired(self, injection: Injection) -> Injection:
        """``injection`` with its runs paired with the vanilla runs of the same seeds."""
        vanilla = self._vanilla()
        paired = sorted(
            (run for run in injection.runs if run.key.seed in vanilla), key=lambda run: run.key.seed
        )
        seeds = [run.key.seed for run in paired]
        return injection.model_copy(
            update={"vanilla_seeds": seeds, "over_seeds": over_seeds(paired, vanilla)}
        )


def _kind(tensor: str) -> str:
    """The kind of a tensor by its qualified name: ``model.layers.3.self_attn.q_proj.weight`` -> ``q_proj``,
    ``model.embed_tokens.weight`` -> ``embed_tokens``."""
    return tensor.removesuffix(".weight").removesuffix(".bias").rsplit(".", 1)[-1]


def write_gemma_folder(out: Path) -> Path:
    """Gemma 3 270M (the embedded GGUF) as a transformers folder with :data:`GEMMA_TURNS` as its chat template and
    ``<end_of_turn>`` among its stop tokens; kept if already written."""
    from sinkbench.models import load_model

    if (out / "config.json").is_file():
        return out
    loaded = load_model("gemma3-270m")
    tokenizer = loaded.tokenizer
    tokenizer.chat_template = GEMMA_TURNS
    end_of_turn = tokenizer.convert_tokens_to_ids("<end_of_turn>")
    generation = loaded.model.generation_config
    generation.eos_token_id = sorted({tokenizer.eos_token_id, end_of_turn})
    staging = out.with_name(out.name + ".partial")
    loaded.model.save_pretrained(staging)
    tokenizer.save_pretrained(staging)
    staging.rename(out)
    return out
