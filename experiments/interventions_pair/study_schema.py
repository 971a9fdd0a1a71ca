"""The typed schema of the interventions study's results file: the study (``python -m
experiments.interventions_pair.run``) writes these models and the Interventions page reads them back. Every model
the study makes goes through the testbed's measurements, and every comparison is paired per prompt.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from pydantic import ConfigDict, Field

from experiments.vl_testbed.schema import Machine, Record, RunRecord, SinkRecord, TextRecord, VisualRecord
from sinkbench.stats import mean_interval

#: The study's steps, in the order it runs them (the results file's ``seconds`` has one per step run).
STEPS = (
    "ablation_smollm2",
    "injection_before",
    "ablation_gemma",
    "endpoints",
    "displacement",
    "random_control",
    "random_controls",
    "merges",
    "toward_base",
    "injection_runs",
)
#: The outcomes a contrast is computed on: name -> (label, unit).
CONTRAST_OUTCOMES: dict[str, tuple[str, str]] = {
    "nll_continue": ("NLL of the base model's answers", "nats"),
    "non_trivial_strict": ("strict accuracy on prompts a trivial answer fails", "points"),
    "prompt_strict": ("prompt-level strict accuracy", "points"),
}


class Measured(Record):
    """A causal LM through the testbed's measurements: S, the text outcomes and, where a VLM exists, visual accuracy."""

    sink: SinkRecord
    text: TextRecord
    visual: VisualRecord | None = None
    seconds: float


def run_measured(run: RunRecord) -> Measured:
    """A testbed run's VLM-LM measurements as a :class:`Measured`."""
    return Measured(sink=run.sink, text=run.text, visual=run.visual, seconds=run.seconds.total)


class Contrast(Record):
    """``treated`` minus ``comparator`` on one outcome, paired per prompt: the mean difference and its 95% percentile
    bootstrap interval over prompts (a statement about these prompts and these two models, not about seeds)."""

    outcome: str
    difference: float
    ci: tuple[float, float]
    prompts: int = Field(ge=1)


class Arm(Record):
    """One model the study made: what it is, its measurements, its contrasts against the models it is compared
    with (by the comparator's name), and the intervention's own numbers (distances, channels changed...)."""

    name: str
    title: str
    measured: Measured
    contrasts: dict[str, list[Contrast]] = Field(default_factory=dict)
    details: dict[str, Any] = Field(default_factory=dict)


class Endpoints(Record):
    """The pair the study works on, re-made by the testbed's recipe (seed 0, the compared dose, no protection):
    the VL run and the text-only run, and how far their re-made outcomes are from the committed testbed's."""

    vl: RunRecord
    text: RunRecord
    reproduction: dict[str, float]


class Ablation(Record):
    """Channel ablation of one backbone: the untouched model, then each setting (single norms and joint)."""

    backbone: str
    chat_template: str
    base: Measured
    settings: list[Arm]


class Injection(Record):
    """QK-RMSNorm injected into SmolLM2: before any training (against the base) and after the testbed's stage 2
    (against vanilla runs of the same seeds, paired over seeds). ``vanilla_runs`` are the vanilla runs the study made
    itself, for the seeds that neither the testbed results nor the re-made VL endpoint (seed 0) give."""

    before: Arm
    runs: list[RunRecord]
    vanilla_seeds: list[int]
    over_seeds: dict[str, dict[str, Any]]
    vanilla_runs: list[RunRecord] = Field(default_factory=list)


class StudyResults(Record):
    """The interventions study's results file."""

    model_config = ConfigDict(extra="forbid", frozen=True, protected_namespaces=())

    sinkbench_version: str
    created: str
    command: str
    machine: Machine
    testbed: dict[str, Any]
    base: Measured | None = None
    endpoints: Endpoints | None = None
    displacement: dict[str, Any] | None = None
    random_control: Arm | None = None
    random_controls: list[Arm] = Field(default_factory=list)
    merges: list[Arm] = Field(default_factory=list)
    toward_base: list[Arm] = Field(default_factory=list)
    ablations: list[Ablation] = Field(default_factory=list)
    injection: Injection | None = None
    seconds: dict[str, float] = Field(default_factory=dict)


def _per_prompt(text: TextRecord, outcome: str, non_trivial: list[int]) -> list[float | None]:
    strict = [float(v) * 100 for v in text.ifeval.strict_by_prompt]
    if outcome == "nll_continue":
        return list(text.nll_continue)
    if outcome == "prompt_strict":
        return strict
    return [strict[i] for i in non_trivial]


def _contrast(outcome: str, differences: list[float]) -> Contrast:
    """The mean of per-prompt ``differences`` with its 95% percentile bootstrap interval over prompts."""
    return Contrast(
        outcome=outcome,
        difference=float(np.mean(differences)),
        ci=mean_interval(differences),
        prompts=len(differences),
    )


def _finite(value: float | None) -> bool:
    return value is not None and bool(np.isfinite(value))


def contrasts(treated: TextRecord, comparator: TextRecord, non_trivial: list[int]) -> list[Contrast]:
    """``treated`` minus ``comparator`` on each of :data:`CONTRAST_OUTCOMES`, paired per prompt (prompts whose
    value is missing on either side, an NLL of an empty body, are left out)."""
    found = []
    for outcome in CONTRAST_OUTCOMES:
        ours, theirs = (_per_prompt(text, outcome, non_trivial) for text in (treated, comparator))
        kept = [a - b for a, b in zip(ours, theirs, strict=True) if _finite(a) and _finite(b)]
        found.append(_contrast(outcome, kept))
    return found


def interaction(ablation: Ablation) -> Contrast | None:
    """The joint setting's NLL change minus the sum of the single settings' changes (each against the untouched
    model), paired per prompt with its 95% bootstrap interval: above zero the channels' effects are
    super-additive. Prompts missing a value in any model are left out; None without a joint setting."""
    joint = next((arm for arm in ablation.settings if arm.name == "joint"), None)
    if joint is None:
        return None
    singles = [arm.measured.text.nll_continue for arm in ablation.settings if arm.name != "joint"]
    differences = []
    for index, untouched in enumerate(ablation.base.text.nll_continue):
        row = [untouched, joint.measured.text.nll_continue[index], *(single[index] for single in singles)]
        if all(_finite(value) for value in row):
            differences.append(row[1] - untouched - sum(value - untouched for value in row[2:]))
    return _contrast("nll_continue", differences)
