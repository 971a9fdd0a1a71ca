"""The testbed's statistics: every outcome per run group, and each question asked as a paired comparison.

The seed is the unit: a comparison pairs two run groups seed by seed (same stage 1 and data order), or a group
with the base model's one value. Per outcome of :data:`OUTCOMES`: the exact sign-flip p-value
(:func:`sinkbench.stats.sign_flip_p`, all 2^n patterns: 2/256 at least with 8 seeds); the percentile-bootstrap 95%
interval of the mean difference (:func:`sinkbench.stats.mean_interval`, only approximate with this few seeds); the
smallest detectable difference (:func:`sinkbench.stats.minimum_detectable_difference`: 80% power at alpha 0.05,
simulated from the between-seed spread of the compared no-protection VL arm, **not the judged arm's**, times
sqrt 2 between two arms, rounded to the outcome's resolution and never below one step); the outcome's margin
(:attr:`Outcome.margin`, fixed before the runs); and the verdict of :mod:`experiments.vl_testbed.verdicts`.
Visual accuracy is tested against chance by a one-sided exact binomial test. No correction is made for the many
outcomes and questions; the primary outcome, named before the runs, is :data:`PRIMARY`.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from experiments.vl_testbed.replies import echo_rate
from experiments.vl_testbed.schema import (
    Analysis,
    BaseRecord,
    Comparison,
    Effect,
    GroupSummary,
    Results,
    RunRecord,
    Spread,
)
from experiments.vl_testbed.verdicts import S_SHIFT, VISUAL_GAIN, sink_moved, verdict
from sinkbench.stats import mean_interval, minimum_detectable_difference, sign_flip_p

ALPHA = 0.05
POWER = 0.8
#: The margin of the IFEval scores (points): about two prompts of a hundred, a quarter of the headroom the first
#: committed experiment's non-trivial subset left above its base model (about 9 prompts).
IFEVAL_MARGIN = 2.0
#: The margin of the template-echo rate: 5% of the answers (about 6 of 128).
ECHO_MARGIN = 0.05
#: The margin of the NLL outcomes (nats/token): 7% of the base model's own NLL of its answers (0.726).
NLL_MARGIN = 0.05


@dataclass(frozen=True)
class Outcome:
    """One outcome: its name on the page, unit, better direction (None: descriptive), how to read it from a run
    or the base model, its resolution (the smallest change one run can show; 0 when continuous), what a
    collapsed answer scores on it, and its margin (the smallest effect worth a verdict; None when descriptive)."""

    label: str
    unit: str
    higher_is_better: bool | None
    read: Callable[[Any], float]
    collapsed: str
    margin: float | None = None
    resolution: Callable[[Any], float] = lambda _: 0.0  # continuous


def _ifeval(score: str, label: str, count: str, collapsed: str) -> Outcome:
    """The IFEval ``score`` of a run (a share, in points), resolved to one of its ``count`` (prompts or
    instructions)."""
    return Outcome(
        f"IFEval {label}",
        "points",
        True,
        lambda r: 100 * getattr(r.text.ifeval, score),
        collapsed,
        IFEVAL_MARGIN,
        lambda r: 100 / getattr(r.text.ifeval, count),
    )


OUTCOMES: dict[str, Outcome] = {
    "nll_continue": Outcome(
        "NLL of the base model's answers, stopping left out",
        "nats/token",
        False,
        lambda r: r.text.nll_continue_mean,
        "not moved by a wish to stop: each token is scored against the tokens that do not end the answer",
        NLL_MARGIN,
    ),
    "nll": Outcome(
        "NLL of the base model's answers",
        "nats/token",
        False,
        lambda r: r.text.nll_mean,
        "grows without bound as the model's chance of stopping at once goes to 1",
        NLL_MARGIN,
    ),
    "non_trivial_strict": Outcome(
        "IFEval prompt-level strict, prompts a trivial answer fails",
        "points",
        True,
        lambda r: 100 * r.text.non_trivial_strict,
        "0 by construction: both an empty answer and 'Red.' fail every one of these prompts",
        IFEVAL_MARGIN,
        resolution=lambda r: 100 / r.text.non_trivial_prompts,
    ),
    "prompt_strict": _ifeval(
        "prompt_strict",
        "prompt-level strict",
        "prompts",
        "see the trivial answers' scores: an almost empty answer passes the negative constraints",
    ),
    "inst_strict": _ifeval(
        "inst_strict", "instruction-level strict", "instructions", "see the trivial answers' scores"
    ),
    "prompt_loose": _ifeval("prompt_loose", "prompt-level loose", "prompts", "at least the strict score"),
    "echo_rate": Outcome(
        "answers that echo a stage-2 reply template",
        "share",
        False,
        lambda r: echo_rate(r.text.answers),
        "0 for the trivial answers; 1 for a model that answers every prompt with a reply about a scene",
        ECHO_MARGIN,
        resolution=lambda r: 1 / len(r.text.answers),
    ),
    "distinct_answers": Outcome(
        "distinct answers", "answers", None, lambda r: len(set(r.text.answers)), "1", resolution=lambda r: 1.0
    ),
    "answer_tokens": Outcome(
        "median answer length", "tokens", None, lambda r: r.text.answer_tokens_median, "1 to 3 tokens"
    ),
    "stopped_share": Outcome(
        "answers that stop before the cap", "share", None, lambda r: r.text.stopped_share, "1.0"
    ),
    "sink_strength": Outcome(
        "S of the VLM-LM", "nats", True, lambda r: r.sink.sink_strength, "not an answer score", S_SHIFT
    ),
    "visual_accuracy": Outcome(
        "visual accuracy, held-out questions",
        "points",
        True,
        lambda r: 100 * _visual(r).accuracy,
        "not a text outcome",
        100 * VISUAL_GAIN,
        resolution=lambda r: 100 / _visual(r).n,
    ),
}
#: The primary outcome, named before the runs: continuous, paired per prompt, blind to answer length.
PRIMARY = "nll_continue"


def _visual(record: Any) -> Any:
    return record.visual_untrained if isinstance(record, BaseRecord) else record.visual


@dataclass(frozen=True)
class Question:
    """A question of the experiment: treated against control (a run group ``data/dose/arm``, or ``base``).

    ``yes`` is ``worse`` when the question asks about damage (the treated group scores worse) and ``better``
    when it asks about protection; ``protection`` questions are gated by the positive control, and questions
    ``about_sink`` (freezing heads) by the mechanism: they are posed only where the sink moved.
    """

    text: str
    treated: str
    control: str
    yes: str
    protection: bool = False
    about_sink: bool = False


def questions(compare: str, doses: Sequence[str]) -> dict[str, Question]:
    """The experiment's questions for a compared dose ``compare`` and the other doses."""
    vl, none, text = f"vl/{compare}", f"vl/{compare}/none", f"text/{compare}/none"
    matched = f"text_matched/{compare}/none"
    asked = {
        "damage": Question("Does VL fine-tuning damage the text outcomes?", none, "base", "worse"),
        "text_damage": Question(
            "Does text-only training of the same size damage them?", text, "base", "worse"
        ),
        "vl_vs_text": Question("Does VL training damage more than text-only training?", none, text, "worse"),
        "text_matched_damage": Question(
            "Does text-only training matched in supervised tokens damage them?", matched, "base", "worse"
        ),
        "vl_vs_text_matched": Question(
            "Does VL training damage more than text-only training matched in supervised tokens?",
            none,
            matched,
            "worse",
        ),
    }
    for dose in doses:
        if dose != compare:
            asked[f"dose_{dose}"] = Question(
                f"Does the {compare} dose damage more than the {dose} dose?", none, f"vl/{dose}/none", "worse"
            )
    asked["positive_control"] = Question(
        "Does the positive control (the LM frozen) protect?", f"{vl}/frozen_lm", none, "better"
    )
    for arm, what in (
        ("sink", "freezing the sink heads"),
        ("random", "freezing matched random heads"),
        ("all_qk", "freezing every head's query/key rows"),
    ):
        asked[f"protect_{arm}"] = Question(
            f"Does {what} protect?", f"{vl}/{arm}", none, "better", protection=True, about_sink=True
        )
    asked["sink_vs_random"] = Question(
        "Do the sink heads protect more than matched random heads?",
        f"{vl}/sink",
        f"{vl}/random",
        "better",
        protection=True,
        about_sink=True,
    )
    return asked


def spread(values: Sequence[float]) -> Spread:
    """Median and range."""
    return Spread(median=float(np.median(values)), min=float(np.min(values)), max=float(np.max(values)))


def above_chance(visual: Any) -> float:
    """One-sided exact binomial p-value of a run's visual accuracy against its (mean) chance accuracy."""
    from scipy import stats

    hits = round(visual.accuracy * visual.n)
    return float(stats.binomtest(hits, visual.n, visual.chance, alternative="greater").pvalue)


def groups_of(results: Results) -> dict[str, dict[int, RunRecord]]:
    """``data/dose/arm`` -> seed -> run."""
    found: dict[str, dict[int, RunRecord]] = {}
    for run in results.runs:
        found.setdefault(f"{run.key.data}/{run.key.dose}/{run.key.arm}", {})[run.key.seed] = run
    return found


def _summary(name: str, by_seed: dict[int, RunRecord]) -> GroupSummary:
    runs = [by_seed[seed] for seed in sorted(by_seed)]
    data, dose, arm = name.split("/")
    kinds = runs[0].visual.by_kind
    return GroupSummary(
        data=data,
        dose=dose,
        arm=arm,
        seeds=sorted(by_seed),
        outcomes={key: spread([outcome.read(run) for run in runs]) for key, outcome in OUTCOMES.items()},
        visual_by_kind={
            kind: spread([100 * run.visual.by_kind[kind].accuracy for run in runs]) for kind in kinds
        },
        visual_above_chance=sum(above_chance(run.visual) < ALPHA for run in runs),
        frozen_weights=int(np.median([run.frozen.weights for run in runs])),
        supervised_tokens=spread([run.stage2.supervised_tokens for run in runs]),
        seconds={
            stage: spread([getattr(run.seconds, stage) for run in runs])
            for stage in type(runs[0].seconds).model_fields
        },
    )


def _effect(
    d: np.ndarray,
    detectable: float,
    margin: float | None,
    *,
    yes_sign: int,
    protection: bool,
    separated: bool | None,
    moved: bool | None,
) -> Effect:
    low, high = mean_interval(d)
    p = sign_flip_p(d)
    finite = math.isfinite(detectable)
    return Effect(
        differences=[float(x) for x in d],
        mean=float(d.mean()),
        median=float(np.median(d)),
        ci95=(low, high),
        p_sign_flip=None if math.isnan(p) else p,
        positive=int((d > 0).sum()),
        negative=int((d < 0).sum()),
        zero=int((d == 0).sum()),
        minimum_detectable=detectable if finite else None,
        undetectable=None if finite else "too_few_seeds" if math.isinf(detectable) else "no_spread",
        margin=margin,
        verdict=verdict(
            float(d.mean()),
            (low, high),
            margin,
            yes_sign=yes_sign,
            protection=protection,
            positive_control_separated=separated,
            sink_moved=moved,
        ),
    )


def _yes_sign(outcome: Outcome, yes: str) -> int:
    if outcome.higher_is_better is None:
        return 0
    better = 1 if outcome.higher_is_better else -1
    return better if yes == "better" else -better


def summarize(results: Results) -> Analysis:
    """Every run group's summary and every question's paired comparison (for the groups that have runs)."""
    groups = groups_of(results)
    config = results.config
    compare_none = groups.get(f"vl/{config.compare_dose}/none", {})
    comparisons: dict[str, Comparison] = {}
    separated: dict[str, bool] = {}
    pool = [compare_none[s] for s in sorted(compare_none)]
    base_s = results.base.sink.sink_strength if results.base is not None else None
    shifts = [run.sink.sink_strength - base_s for run in pool] if base_s is not None else []
    moved = sink_moved(shifts) if shifts else None
    for name, question in questions(config.compare_dose, list(config.doses)).items():
        treated = groups.get(question.treated, {})
        control = groups.get(question.control, {}) if question.control != "base" else None
        seeds = sorted(set(treated) & (set(control) if control is not None else set(treated)))
        if not seeds or (control is None and results.base is None):
            continue
        effects = {}
        for key, outcome in OUTCOMES.items():
            treated_values = np.array([outcome.read(treated[s]) for s in seeds])
            control_values = (
                np.full(len(seeds), outcome.read(results.base))
                if control is None
                else np.array([outcome.read(control[s]) for s in seeds])
            )
            resolution = outcome.resolution(treated[seeds[0]])
            sd = float(np.std([outcome.read(run) for run in pool], ddof=1)) if len(pool) > 1 else math.nan
            sd = sd * (math.sqrt(2) if control is not None else 1.0)
            if resolution > 0 and math.isfinite(sd):
                sd = max(sd, resolution)
            effects[key] = _effect(
                treated_values - control_values,
                minimum_detectable_difference(sd, len(seeds), resolution, alpha=ALPHA, power=POWER),
                outcome.margin,
                yes_sign=_yes_sign(outcome, question.yes),
                protection=question.protection,
                separated=separated.get(key),
                moved=moved if question.about_sink else None,
            )
        comparisons[name] = Comparison(
            question=question.text,
            treated=question.treated,
            control=question.control,
            seeds=seeds,
            effects=effects,
        )
        if name == "positive_control":
            separated = {key: effect.verdict == "yes" for key, effect in effects.items()}
    stage1 = [100 * record.visual_after_stage1.accuracy for record in results.seeds]
    return Analysis(
        groups={name: _summary(name, by_seed) for name, by_seed in groups.items()},
        comparisons=comparisons,
        power={
            "spread_from": f"vl/{config.compare_dose}/none",
            "method": "exact sign-flip test, alpha 0.05, 80% power; normal differences with the no-protection arm's "
            "between-seed standard deviation (times sqrt 2 between two arms), rounded to one prompt or question, "
            "the spread never below one such step",
        },
        stage1_visual=spread(stage1) if stage1 else None,
        sink_shifts=[round(shift, 5) for shift in shifts],
        sink_moved=moved,
    )
