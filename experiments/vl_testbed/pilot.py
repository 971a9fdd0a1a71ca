"""The mechanism pilot: in which affordable regime does VL training move the backbone's sink, with the visual task
learned? Run before any protected arm, on seeds the experiment never uses.

The committed experiment's sink never moved, so its protection questions could not be posed. The pilot changes one
thing real VL training differs in at a time (:data:`SETTINGS`: stage-2 length and learning rate, image tokens, the
scale of the projected image features, a text-only share), trains the no-protection arm on every pilot seed and
measures the sink's perturbation (S against the base's, the paper's B_gap from ``sinkbench margin``, each head's
first-token attention before and after stage 2 on text and image prompts: :mod:`.mechanism`), the visual gain over
the same seed's stage-1 VLM, and template echo on random short-answer IFEval prompts (:func:`.replies.echoes_template`,
distinct answers, and the NLL of the base model's own answers). :data:`RULE`, fixed before the runs, picks the
compared regime; none: the protection questions read "not posed".

    SINKBENCH_DATA_DIR=DIR python -m experiments.vl_testbed.pilot          # resumable, run by run
    python -m experiments.vl_testbed.pilot --settings recipe --seeds 200   # a subset
    python -m experiments.vl_testbed.pilot --backbone gemma3 --settings recipe   # the second backbone (point 8)
    python -m experiments.vl_testbed.pilot --quick                         # a smoke run of a few minutes

The second backbone, Gemma 3 270M (S +0.098 on the board's raw-text screen, against SmolLM2's +1.456), is the base
checkpoint asked in Gemma 3's turn format, as the interventions study asks it
(:func:`experiments.interventions_pair.study.write_gemma_folder`); its S is measured in that format here.
"""

from __future__ import annotations

import dataclasses
import json
import shutil
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch

from experiments.vl_testbed.experiment import load_base
from experiments.vl_testbed.ifeval_short import short_answer_prompts
from experiments.vl_testbed.mechanism import first_token_attention, image_prompts, sink_shift, text_prompts
from experiments.vl_testbed.outcomes import ReferenceAnswers, answer_nll, generate
from experiments.vl_testbed.page import GEMMA_PILOT_FILE, PILOT_FILE, RESULTS
from experiments.vl_testbed.replies import ReplyMix, echo_rate, echoes_template
from experiments.vl_testbed.run import FULL, IFEVAL, ROOT, gsm8k_problems, log_since, sink_heads
from experiments.vl_testbed.scenes import question_items
from experiments.vl_testbed.specs import StageSpec, VisionSpec
from experiments.vl_testbed.train import pretrain_encoder, stage_data, train_stage, vision_state
from experiments.vl_testbed.verdicts import S_SHIFT, VISUAL_GAIN, sink_moved
from experiments.vl_testbed.visual import visual_accuracy
from experiments.vl_testbed.vlm import build_vlm, save_vlm
from sinkbench.cli.parser import CommandParser
from sinkbench.safe_io import write_json_atomic


@dataclass(frozen=True)
class Backbone:
    """A language model the pilot wraps: its sinkbench model name, where its results go, and whether it is a base
    checkpoint without a chat template, asked in Gemma 3's turn format (:func:`base_folder`)."""

    model: str
    label: str
    results: Path
    gemma_turns: bool = False


BACKBONES = {
    "smollm2": Backbone("smollm2-135m-instruct", "SmolLM2-135M-Instruct", RESULTS / PILOT_FILE),
    "gemma3": Backbone("gemma3-270m", "Gemma 3 270M", RESULTS / GEMMA_PILOT_FILE, gemma_turns=True),
}

RULE = (
    f"a setting moves the sink when |S(VLM-LM) - S(base)| >= {S_SHIFT} nats with one sign on every pilot seed, and "
    f"learns the visual task when held-out accuracy - the same seed's stage-1 accuracy >= {VISUAL_GAIN:.2f} on every "
    "seed; of the settings that do both, the compared regime has the lowest median template-echo rate (ties: the "
    "fewest stage-2 steps); none: the protection questions are not posed"
)
SEEDS = (200, 201)
STAGE1 = StageSpec(steps=12, batch_size=8, lr=1e-3, warmup=0.1, train_lm=False, bf16=False)
STAGE0_STEPS = 400
ECHO_PROMPTS, ECHO_SEED, ECHO_TOKENS = 48, 4300, 48
IMAGE_QUESTIONS, VISUAL_IMAGES, VISUAL_SEED = 24, 64, 1_000_003


@dataclass(frozen=True)
class Setting:
    """One stage-2 regime of the no-protection arm (float32, batches of 8, 10% warmup, cosine decay)."""

    name: str
    what: str
    steps: int = 20
    lr: float = 3e-4
    image_size: int = 32  # 16-pixel patches: (image_size / 16) ** 2 image tokens
    projector_scale: float = 1.0
    text_share: float = 0.0

    @property
    def vision(self) -> VisionSpec:
        """The vision side this setting trains (stages 0 and 1 are made once per seed and vision)."""
        return VisionSpec(image_size=self.image_size, projector_scale=self.projector_scale)

    @property
    def stage2(self) -> StageSpec:
        """Its stage 2."""
        return StageSpec(steps=self.steps, batch_size=8, lr=self.lr, warmup=0.1, train_lm=True, bf16=False)


#: The settings, in run order: the committed recipe first, then one change each, then the changes together.
SETTINGS = (
    Setting("recipe", "the committed experiment's compared dose: 20 steps at 3e-4, 4 image tokens"),
    Setting(
        "scale10",
        "image features 10x larger (the projector's output layer scaled at initialisation)",
        projector_scale=10.0,
    ),
    Setting("tokens16", "16 image tokens per image (64-pixel scenes in 16-pixel patches)", image_size=64),
    Setting("long", "4x the stage-2 length: 80 steps at 3e-4", steps=80),
    Setting("lr1e-3", "a 3.3x higher peak learning rate: 20 steps at 1e-3", lr=1e-3),
    Setting(
        "text25",
        "25% of the chats text-only (GSM8K), LLaVA-Mix's rehearsal share made larger",
        text_share=0.25,
    ),
    Setting(
        "long_tokens16_scale10",
        "80 steps, 16 image tokens and 10x image features together",
        steps=80,
        image_size=64,
        projector_scale=10.0,
    ),
    # added 2026-12-04, after the settings above had run: S grew with the stage-2 length (20 steps: +0.05 to +0.18;
    # 80: +0.24 and +0.35), so the README named 160 steps the next setting to try; the rule is unchanged
    Setting("long160", "8x the stage-2 length: 160 steps at 3e-4", steps=160),
)
BY_NAME = {setting.name: setting for setting in SETTINGS}


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


def verdicts(runs: Sequence[dict[str, Any]], seeds: Sequence[int]) -> dict[str, Any]:
    """:data:`RULE` applied: per setting whether the sink moved and the visual task was learned on every seed,
    and the compared regime (None when no setting does both)."""
    settings: dict[str, Any] = {}
    for name in dict.fromkeys(run["setting"] for run in runs):
        mine = [run for run in runs if run["setting"] == name and run["seed"] in seeds]
        if len(mine) < len(seeds):
            continue
        shifts = [run["s_shift"] for run in mine]
        settings[name] = {
            "sink_moved": sink_moved(shifts),
            "visual_learned": all(run["visual_gain"] >= VISUAL_GAIN for run in mine),
            "echo_rate": round(float(np.median([run["echo"]["rate"] for run in mine])), 5),
            "steps": BY_NAME[name].steps if name in BY_NAME else None,
        }
    eligible = [n for n, v in settings.items() if v["sink_moved"] and v["visual_learned"]]
    chosen = min(eligible, key=lambda n: (settings[n]["echo_rate"], settings[n]["steps"] or 0), default=None)
    return {"settings": settings, "compared_regime": chosen}


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


#: An answer *copies the prompt* when it starts with the prompt's first this many characters (a base checkpoint asked
#: in a turn format it was not tuned on may continue the prompt instead of answering it).
COPY_PREFIX = 40


def copies_prompt(answers: Sequence[str], prompts: Sequence[str]) -> int:
    """How many ``answers`` start by repeating their prompt (its first :data:`COPY_PREFIX` characters)."""
    return sum(
        answer.strip().startswith(prompt.strip()[:COPY_PREFIX])
        for answer, prompt in zip(answers, prompts, strict=True)
    )


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


def main() -> None:
    """Run or resume the pilot."""
    parser = CommandParser(prog="python -m experiments.vl_testbed.pilot", description=__doc__.splitlines()[0])
    parser.add_argument(
        "--settings", nargs="+", choices=list(BY_NAME), help="settings to run (default: all, in order)"
    )
    parser.add_argument(
        "--seeds", type=int, nargs="+", default=list(SEEDS), help="pilot seeds (default: %(default)s)"
    )
    parser.add_argument(
        "--backbone",
        choices=list(BACKBONES),
        default="smollm2",
        help="the language model wrapped into the VLM (default: %(default)s)",
    )
    parser.add_argument(
        "--quick",
        action="store_true",
        help="smoke run: 2 steps per stage, 8 echo prompts, written under the work folder only",
    )
    parser.add_argument("--threads", type=int, default=2, help="torch threads (default: %(default)s)")
    parser.add_argument(
        "--workdir",
        type=Path,
        help="state and checkpoints (default: out/mechanism-pilot[-BACKBONE][-quick])",
    )
    parser.add_argument(
        "--out", type=Path, help="results JSON (default: results/, or the work folder with --quick)"
    )
    args = parser.parse_args()
    backbone = BACKBONES[args.backbone]
    suffix = ("" if args.backbone == "smollm2" else f"-{args.backbone}") + ("-quick" if args.quick else "")
    workdir = args.workdir or ROOT / "out" / f"mechanism-pilot{suffix}"
    out = args.out or (workdir / "pilot.json" if args.quick else backbone.results)
    torch.set_num_threads(args.threads)
    from sinkbench.provenance import report_header

    started = time.perf_counter()
    settings = [BY_NAME[name] for name in args.settings] if args.settings else list(SETTINGS)
    command = "SINKBENCH_DATA_DIR=DIR python -m experiments.vl_testbed.pilot"
    if args.backbone != "smollm2":
        command += f" --backbone {args.backbone}"
    workdir.mkdir(parents=True, exist_ok=True)
    Pilot(
        workdir, out, {**report_header(), "command": command}, log_since(started), backbone, args.quick
    ).run(settings, args.seeds)
    print(f"done in {time.perf_counter() - started:.0f} s; wrote {out}")


if __name__ == "__main__":
    main()
