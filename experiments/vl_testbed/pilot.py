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

import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from experiments.vl_testbed.page import GEMMA_PILOT_FILE, PILOT_FILE, RESULTS
from experiments.vl_testbed.specs import StageSpec, VisionSpec
from experiments.vl_testbed.verdicts import S_SHIFT, VISUAL_GAIN, sink_moved
from sinkbench.cli.parser import CommandParser


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


#: An answer *copies the prompt* when it starts with the prompt's first this many characters (a base checkpoint asked
#: in a turn format it was not tuned on may continue the prompt instead of answering it).
COPY_PREFIX = 40


def copies_prompt(answers: Sequence[str], prompts: Sequence[str]) -> int:
    """How many ``answers`` start by repeating their prompt (its first :data:`COPY_PREFIX` characters)."""
    return sum(
        answer.strip().startswith(prompt.strip()[:COPY_PREFIX])
        for answer, prompt in zip(answers, prompts, strict=True)
    )


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
    import torch

    from experiments.vl_testbed.pilot_runs import Pilot
    from experiments.vl_testbed.run import ROOT, log_since
    from sinkbench.provenance import report_header

    backbone = BACKBONES[args.backbone]
    suffix = ("" if args.backbone == "smollm2" else f"-{args.backbone}") + ("-quick" if args.quick else "")
    workdir = args.workdir or ROOT / "out" / f"mechanism-pilot{suffix}"
    out = args.out or (workdir / "pilot.json" if args.quick else backbone.results)
    torch.set_num_threads(args.threads)
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
