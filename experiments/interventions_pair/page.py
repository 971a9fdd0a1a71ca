"""The site's Interventions page, rendered into ``page/`` (``python -m experiments.interventions_pair.page``) from
the study's results files read through :class:`~experiments.interventions_pair.study_schema.StudyResults`.

Each question is answered in one sentence with its numbers, beside the paper's figure for the same question; the
tables hold every model's measurements. Nothing is recomputed here but the ratios a sentence states.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any

from markupsafe import Markup

from experiments import page_fragment
from experiments.interventions_pair.charts import LayerRatioChart, MergeChart
from experiments.interventions_pair.study_schema import (
    CONTRAST_OUTCOMES,
    STEPS,
    Arm,
    Contrast,
    Measured,
    StudyResults,
    interaction,
    run_measured,
)
from experiments.vl_testbed.page import TestbedResults, read_testbed
from sinkbench.leaderboard.consistency import fact_attributes
from sinkbench.leaderboard.content import PlotRef

#: The study's results file, beside the testbed's: the testbed's own recipe (bfloat16).
INTERVENTIONS_FILE = "interventions_pair.json"
#: The same study with the recipe in float32 (``--precision float32``, for a CPU without fast bfloat16): another
#: recipe, shown in a section of its own.
FLOAT32_FILE = "interventions_pair_float32.json"
#: Every results file the page shows, in its order.
STUDY_FILES = (INTERVENTIONS_FILE, FLOAT32_FILE)
#: The page's charts, by name; a file other than :data:`INTERVENTIONS_FILE` puts its suffix after ``interventions``.
PLOT_NAMES = ("displacement", "merges")
#: The largest results file read, in bytes.
SIZE_LIMIT = 40_000_000
#: The paper's figure for each question (../shared/paper/FACTS.md), quoted beside the miniature's answer.
PAPER = {
    "displacement": "Qwen2.5-VL-7B against its text-only endpoint: the VL endpoint moves further in every late layer, "
    "median ratio 4.44× on W_q and 3.65× on W_k (F.1).",
    "random_control": "Qwen2.5-7B-Instruct with Gaussian ΔW at Qwen2.5-VL-7B's relative norms: IFEval −61.4 points, "
    "about 6× the real VLM's −9.6 (D.4).",
    "ablation": "Qwen3-VL-8B, top-10 channels per layer: the three norms together cost 44.4 IFEval points, the three "
    "single kills add to 20.0 (super-additive) (D.3).",
    "injection": "Qwen2.5-3B with QK-RMSNorm injected (γ = 1), then VL training: it trails vanilla throughout, IFEval "
    "11 at the first checkpoint against a base of 59.9 (F.3).",
    "merges": "Qwen2.5-VL and Qwen3-VL: only the two mild mixes avoid extra loss; TA, TSV and STAR cost the unprotected "
    "pair tens of points; TIES and DARE do the most damage; no setting recovers IFEval on the low-S side (F.4).",
}
#: Each question's name in the page's first column.
QUESTIONS = {
    "displacement": "Where did the weights move? (F.1)",
    "random_control": "Would any change of that size do the same? (D.4)",
    "ablation": "Which norm channels carry the model? (D.3)",
    "injection": "Would adding QK-norm have helped? (F.3)",
    "merges": "Can merging the reference back in recover the loss? (F.4)",
}
#: Below this relative distance from the VLM-LM a merge holds its weights up to float rounding (a float32 task
#: vector added back to its base differs from the fine-tuned weights by about 1e-9).
ROUNDING = 1e-6
#: How the page names the backbones the study ablates.
BACKBONES = {"smollm2": "SmolLM2-135M-Instruct", "gemma": "Gemma 3 270M"}
_FIX = "rerun `python -m experiments.interventions_pair.run` to rewrite it"
HERE = Path(__file__).resolve().parent
RESULTS = HERE / "results"


def read_study(path: Path, shown: str) -> StudyResults:
    """The study's results through its schema.

    Raises:
        page_fragment.SourceInvalid: the file is unreadable or does not fit the schema (one line: file, field, fix).
    """
    return page_fragment.read_results(StudyResults, path, shown, SIZE_LIMIT, _FIX)


def _projection(name: str) -> str:
    """``q_proj`` of a displacement report's tensor name ``self_attn.q_proj.weight``."""
    return name.removesuffix(".weight").rsplit(".", 1)[-1]


def _contrast(arm: Arm, against: str, outcome: str) -> Contrast:
    return next(c for c in arm.contrasts[against] if c.outcome == outcome)


def _signed(value: float, digits: int = 2) -> str:
    return f"{value:+.{digits}f}".replace("-", "−")


#: The paired outcomes over seeds the injection sentence states: name in ``over_seeds``, label, digits, unit.
SEED_OUTCOME_LABELS = (
    ("nll_continue", "NLL", 2, " nats"),
    ("non_trivial_strict", "non-trivial strict", 1, " points"),
    ("visual", "visual accuracy", 1, " points"),
    ("sink_strength", "S", 3, ""),
)


def _over_seeds(entry: dict[str, Any], digits: int, unit: str, interval: bool = True) -> str:
    """A paired difference over seeds: its mean, and with ``interval`` its bootstrap interval and sign-flip p."""
    mean = f"{_signed(entry['mean'], digits)}{unit}"
    return f"{mean} {_bracket(*entry['ci'], digits)} (p = {entry['p_sign_flip']:.3g})" if interval else mean


def _bracket(low: float, high: float, digits: int) -> str:
    return f"[{_signed(low, digits)}, {_signed(high, digits)}]"


def change(arm: Arm, against: str) -> str:
    """The arm's change against ``against`` on the NLL and the non-trivial strict score, with intervals."""
    nll = _contrast(arm, against, "nll_continue")
    strict = _contrast(arm, against, "non_trivial_strict")
    return (
        f"NLL {_signed(nll.difference)} nats {_bracket(*nll.ci, 2)}, non-trivial strict "
        f"{_signed(strict.difference, 1)} points {_bracket(*strict.ci, 1)} ({strict.prompts} prompts)"
    )


def _cost_ratio(arm: Arm, real_nll: float) -> str:
    """The arm's NLL change against the base as a multiple of the VLM-LM's (``real_nll``)."""
    if real_nll <= 0:
        return "not defined (the VLM-LM lost nothing)"
    ratio = f"{_contrast(arm, 'base', 'nll_continue').difference / real_nll:.1f}"
    return f"{'0.0' if ratio == '-0.0' else ratio.replace('-', '−')}×"


def recovered(measured: Measured, base: Measured, vlm_lm: Measured) -> float | None:
    """The share of the VLM-LM's NLL loss (against the base) that ``measured`` wins back (1: all, 0: none)."""
    loss = vlm_lm.text.nll_continue_mean - base.text.nll_continue_mean
    if loss <= 0:
        return None
    return (vlm_lm.text.nll_continue_mean - measured.text.nll_continue_mean) / loss


#: The merges that draw random masks (their seed matters); the study passes none, so merge's default, 0.
RANDOM_MERGES = ("dare",)


def _merge_note(arm: Arm) -> str:
    """What a merge's row says: its weights are the VLM-LM's (exactly, or up to float rounding); it extrapolates past
    the VLM-LM (further from the reference than the VLM-LM is); its random mask's seed."""
    if arm.details.get("identical_to_vlm_lm"):
        return "same weights as the VLM-LM"
    distance = arm.details.get("distance", {})
    if distance.get("to_vlm_lm") is not None and distance["to_vlm_lm"] < ROUNDING:
        return f"the VLM-LM's weights up to float rounding (relative distance {distance['to_vlm_lm']:.0e})"
    notes = []
    if (distance.get("to_reference") or 0) > 1:
        notes.append(
            f"extrapolates: {distance['to_reference']:.2f}× the VLM-LM's distance from the reference, "
            f"{distance['to_vlm_lm']:.2f}× from the VLM-LM"
        )
    if arm.name in RANDOM_MERGES:
        seed = arm.details.get("seed")
        notes.append(
            f"mask seed {seed}"
            if seed is not None
            else "mask seed not recorded in this file; the study passed none, so merge's default 0"
        )
    return "; ".join(notes)


class InterventionsPage(page_fragment.ResultsFile[StudyResults]):
    """What the Interventions page shows of one of the study's results files."""

    @property
    def anchor(self) -> str:
        """The section's anchor: ``interventions`` and what the file's name adds to :data:`INTERVENTIONS_FILE`'s
        (``interventions`` or ``interventions-float32``); its charts' names start with it."""
        suffix = Path(self.source).stem.removeprefix(Path(INTERVENTIONS_FILE).stem)
        return f"interventions{suffix.replace('_', '-')}"

    @property
    def precision(self) -> str:
        """The recipe's precision, as the results file records it (a file from before the field: its stage 2)."""
        testbed = self.data.testbed
        if "precision" in testbed:
            return testbed["precision"]
        return "bfloat16" if testbed.get("stage2", {}).get("bf16", True) else "float32"

    def plot_path(self, name: str) -> str:
        """Where chart ``name`` of :data:`PLOT_NAMES` goes in the site."""
        return f"plots/{self.anchor}-{name}.svg"

    @cached_property
    def _testbed(self) -> TestbedResults | None:
        """The testbed's results file the study names (None: absent, e.g. a study made elsewhere)."""
        path = page_fragment.ROOT / str(self.data.testbed.get("file", ""))
        return read_testbed(path, page_fragment.shown_path(path)) if path.is_file() else None

    def base_bases(self) -> dict[str, str]:
        """The basis of each of :meth:`base_facts`, as the page states it under the table."""
        testbed = self._testbed
        if self.data.base is None or testbed is None:
            return {}
        return {"s": testbed.base_bases["sink_strength"], "strict": testbed.strict_basis(self.precision)}

    def base_facts(self) -> dict[str, Markup]:
        """The marks of the base model's figures that are board facts (:func:`fact_attributes`): its S (with its
        interval) and its IFEval prompt-level strict score, keyed and based as the Training dynamics page marks the
        same model's figures."""
        testbed, base, bases = self._testbed, self.data.base, self.base_bases()
        if testbed is None or base is None:
            return {}
        s_key, score_key = testbed.base_fact("sink_strength")[0], testbed.base_fact("prompt_strict")[0]
        return {
            "s": fact_attributes(s_key, bases["s"], base.sink.sink_strength),
            "strict": fact_attributes(score_key, bases["strict"], 100 * base.text.ifeval.prompt_strict),
        }

    def _vlm_lm(self) -> Measured | None:
        endpoints = self.data.endpoints
        return None if endpoints is None else run_measured(endpoints.vl)

    def answers(self) -> dict[str, str]:
        """Each question the file answers, in one sentence with its numbers."""
        sentences = {name: getattr(self, f"_{name}")() for name in PAPER}
        return {name: sentence for name, sentence in sentences.items() if sentence is not None}

    def _displacement(self) -> str | None:
        report = self.data.displacement
        if report is None:
            return None
        summary = report["summary"]
        parts = []
        for kind, label in (("q_proj", "W_q"), ("k_proj", "W_k")):
            entry = next((v for k, v in summary.items() if _projection(k) == kind), None)
            if entry is not None and entry.get("median_ratio") is not None:
                parts.append(
                    f"{entry['median_ratio']:.2f}× on {label} (range {entry['min_ratio']:.2f} to "
                    f"{entry['max_ratio']:.2f}; further in {entry['layers_further']} of {entry['layers']} layers)"
                )
        further = all(
            v.get("every_layer_further") for k, v in summary.items() if _projection(k) in ("q_proj", "k_proj")
        )
        verdict = "Yes" if further else "Not in every layer"
        return (
            f"Did the VL endpoint's weights move further from the reference than the text-only endpoint's (same "
            f"recipe, same seed)? {verdict}: over the last {len(report['window']['layers'])} layers the median ratio "
            f"of ‖ΔW‖₂ is {' and '.join(parts)}."
        )

    def _random_control(self) -> str | None:
        arm, vlm_lm = self.data.random_control, self._vlm_lm()
        if arm is None or vlm_lm is None:
            return None
        real_nll = vlm_lm.text.nll_continue_mean - self.data.base.text.nll_continue_mean
        sentence = (
            f"Would a random change of the same size do the same? Gaussian ΔW at the VLM-LM's relative norms "
            f"(largest error {100 * arm.details['max_relative_error']:.2g}%) changes, against the base, "
            f"{change(arm, 'base')}, against the VLM-LM's NLL {_signed(real_nll)} nats: the random change costs "
            f"{_cost_ratio(arm, real_nll)} the real one's NLL loss. Two confounds: the noise matches each projection's "
            "relative Frobenius norm only, and a Gaussian ΔW spreads that norm over every direction, so its operator "
            "norm (F.1's quantity) is smaller than the real change's; and the real VLM-LM also changed the tied "
            "embeddings and the norm scales, which the noise leaves alone."
        )
        controls = {control.name: control for control in self.data.random_controls}
        operator, every = controls.get("random_operator"), controls.get("random_every_tensor")
        if operator is None and every is None:
            return (
                f"{sentence} Controls matched on each matrix's operator norm, or covering every tensor the real "
                "change touched, were not run."
            )
        if operator is not None:
            sentence += (
                f" Matched on each projection's operator norm instead (its Frobenius norm then a median "
                f"{operator.details['median_frobenius_ratio']:.1f}× the real change's): {change(operator, 'base')}, "
                f"{_cost_ratio(operator, real_nll)} the real loss."
            )
        if every is not None:
            ratio = every.details["median_operator_ratio"]
            sentence += (
                f" On all {every.details['tensors']} tensors the VLM-LM changed ({', '.join(every.details['changed'])}; "
                f"Frobenius-matched, its operator norm a median {ratio:.2f}× the real change's): "
                f"{change(every, 'base')}, {_cost_ratio(every, real_nll)} the real loss."
            )
        return sentence

    def _ablation(self) -> str | None:
        if not self.data.ablations:
            return None
        parts = []
        for ablation in self.data.ablations:
            singles = [arm for arm in ablation.settings if arm.name != "joint"]
            joint = next((arm for arm in ablation.settings if arm.name == "joint"), None)
            text = "; ".join(f"{arm.title}: {change(arm, 'base')}" for arm in ablation.settings)
            excess = interaction(ablation)
            if joint is not None and excess is not None:
                summed = sum(_contrast(arm, "base", "nll_continue").difference for arm in singles)
                joint_nll = _contrast(joint, "base", "nll_continue").difference
                low, high = excess.ci
                word = (
                    "super-additive"
                    if low > 0
                    else "sub-additive"
                    if high < 0
                    else "cannot tell whether additive"
                )
                text += (
                    f" (joint NLL change {_signed(joint_nll)} nats against the singles' sum {_signed(summed)}: the "
                    f"joint exceeds the sum by {_signed(excess.difference)} {_bracket(low, high, 2)} over "
                    f"{excess.prompts} prompts, {word})"
                )
            parts.append(f"{BACKBONES.get(ablation.backbone, ablation.backbone)}: {text}")
        return (
            "Which norm channels carry the model? Setting the top-10 channels per layer of each norm scale to the "
            f"layer's mean changes, against the untouched model, {'. '.join(parts)}."
        )

    def _injection(self) -> str | None:
        injection = self.data.injection
        if injection is None:
            return None
        before = injection.before
        sentence = (
            "Would adding QK-norm have helped? Before any training the injected SmolLM2 (per-head QK-RMSNorm, γ = 1) "
            f"has S {before.measured.sink.sink_strength:.3f} against the base's {self.data.base.sink.sink_strength:.3f} "
            f"and {change(before, 'base')}"
        )
        seeds = len(injection.vanilla_seeds)
        if not seeds:
            return sentence + "."
        parts = [
            f"{label} {_over_seeds(injection.over_seeds[name], digits, unit, interval=seeds > 1)}"
            for name, label, digits, unit in SEED_OUTCOME_LABELS
        ]
        differences = f"{', '.join(parts[:-1])} and {parts[-1]}"
        if seeds == 1:
            return (
                f"{sentence}; after the testbed's stage 2 it differs from the vanilla run of the same seed "
                f"({injection.vanilla_seeds[0]}) by {differences} (one seed: no interval or test over seeds)."
            )
        return (
            f"{sentence}; after the testbed's stage 2 it differs from vanilla runs of the same {seeds} seeds by "
            f"{differences} (mean over seeds, bootstrap interval over seeds, exact sign-flip p, whose smallest "
            f"possible value with {seeds} seeds is {2 / 2**seeds:.3g})."
        )

    def _merges(self) -> str | None:
        merges, vlm_lm, base = self.data.merges, self._vlm_lm(), self.data.base
        if not merges or vlm_lm is None:
            return None
        shares = {arm.name: recovered(arm.measured, base, vlm_lm) for arm in merges}
        best = max((name for name in shares if shares[name] is not None), key=shares.get, default=None)
        if best is None:  # also when the VLM-LM lost nothing: no share to win back
            return None
        arm = next(a for a in merges if a.name == best)
        visual = arm.measured.visual
        sentence = (
            "Can merging the reference back in recover the text loss? The best of the seven settings on the NLL, "
            f"{arm.title}, wins back {100 * shares[best]:.0f}% of the VLM-LM's NLL loss "
            f"({change(arm, 'vlm_lm')} against the VLM-LM), at visual accuracy "
            f"{100 * visual.accuracy:.1f}% against the VLM's {100 * vlm_lm.visual.accuracy:.1f}% "
            f"(chance {100 * visual.chance:.1f}%)."
            if visual is not None
            else f"The best of the seven settings on the NLL, {arm.title}, is the VLM-LM itself."
        )
        graded = [
            f"α = {arm.details['alpha']:.2f}: {100 * recovered(arm.measured, base, vlm_lm):.0f}% of the NLL loss "
            f"back, non-trivial strict {_signed(strict.difference, 1)} points {_bracket(*strict.ci, 1)} "
            f"({strict.prompts} prompts), visual {100 * arm.measured.visual.accuracy:.1f}%"
            for arm in self.data.toward_base
            if arm.measured.visual is not None
            for strict in [_contrast(arm, "vlm_lm", "non_trivial_strict")]
        ]
        if graded:
            sentence += (
                " Graded positive controls of known size, the VLM-LM moved a fraction α of the way back to the "
                f"base (a linear mix, no training): {'; '.join(graded)}."
            )
        return sentence

    def rows(self) -> list[dict[str, Any]]:
        """Every model of the study as a table row: what it is, S with its interval and each outcome."""
        data = self.data
        found = []

        def add(
            group: str, label: str, measured: Measured, note: str = "", facts: dict[str, Markup] | None = None
        ) -> None:
            text = measured.text
            found.append(
                {
                    "group": group,
                    "label": label,
                    "s": measured.sink.sink_strength,
                    "s_ci": measured.sink.ci,
                    "nll": text.nll_continue_mean,
                    "non_trivial": 100 * text.non_trivial_strict,
                    "strict": 100 * text.ifeval.prompt_strict,
                    "tokens": text.answer_tokens_median,
                    "visual": None if measured.visual is None else 100 * measured.visual.accuracy,
                    "note": note,
                    "facts": facts or {},
                }
            )

        base, vlm_lm = data.base, self._vlm_lm()
        if base is not None:
            add("pair", "SmolLM2-135M-Instruct (base)", base, facts=self.base_facts())
        if vlm_lm is not None:
            add("pair", "VLM-LM (VL endpoint, seed 0)", vlm_lm)
            add("pair", "text-only endpoint (seed 0)", run_measured(data.endpoints.text))
        for arm in [data.random_control, *data.random_controls]:
            if arm is not None:
                add("random ΔW", arm.title, arm.measured)
        for arm in data.merges:
            add("merge", arm.title, arm.measured, _merge_note(arm))
        for arm in data.toward_base:
            add("toward the base", arm.title, arm.measured)
        for ablation in data.ablations:
            name = BACKBONES.get(ablation.backbone, ablation.backbone)
            if ablation.backbone != "smollm2":
                add(f"ablation ({name})", f"{name} untouched", ablation.base)
            for arm in ablation.settings:
                add(f"ablation ({name})", arm.title, arm.measured)
        if data.injection is not None:
            add("QK-norm injection", data.injection.before.title, data.injection.before.measured)
            for run in sorted(data.injection.runs, key=lambda run: run.key.seed):
                add("QK-norm injection", f"injected, after stage 2 (seed {run.key.seed})", run_measured(run))
            for run in sorted(data.injection.vanilla_runs, key=lambda run: run.key.seed):
                add("QK-norm injection", f"vanilla, after stage 2 (seed {run.key.seed})", run_measured(run))
        return found

    def plots(self) -> list[PlotRef]:
        """The section's charts."""
        found = []
        if self.data.displacement is not None:
            found.append(PlotRef(self.plot_path("displacement"), LayerRatioChart.of(self.data.displacement)))
        base, vlm_lm = self.data.base, self._vlm_lm()
        if self.data.merges and vlm_lm is not None and base is not None:
            points = [
                (arm.title, arm.measured) for arm in self.data.merges if arm.measured.visual is not None
            ]
            found.append(PlotRef(self.plot_path("merges"), MergeChart.of(points, base, vlm_lm)))
        return found

    def context(self) -> dict[str, Any]:
        """What ``interventions.md.j2`` is given of this results file."""
        names = {self.plot_path(name): name for name in PLOT_NAMES}
        return {
            "study": self.data,
            "source": self.source,
            "precision": self.precision,
            "anchor": self.anchor,
            "answers": self.answers(),
            "paper": PAPER,
            "questions": QUESTIONS,
            "rows": self.rows(),
            "plots": {names[plot.path]: plot for plot in self.plots()},
            "outcomes": CONTRAST_OUTCOMES,
            "not_run": self.not_run(),
            "base_bases": self.base_bases(),
        }

    def not_run(self) -> list[str]:
        """The study's steps that the file has no results of (a budget cut short), in the study's order."""
        return [step for step in STEPS if step not in self.data.seconds]


@dataclass(frozen=True)
class InterventionsStudies:
    """Every results file of the study the build found, each a section of the Interventions page (none: the page says
    how to make them)."""

    pages: tuple[InterventionsPage, ...]

    @classmethod
    def of(cls, folder: Path) -> InterventionsStudies:
        """The study's results files in ``folder``, read through its schema."""
        paths = [folder / name for name in STUDY_FILES if (folder / name).is_file()]
        return cls(tuple(InterventionsPage(path.name, read_study(path, path.name)) for path in paths))

    def plots(self) -> list[PlotRef]:
        """Every section's charts."""
        return [plot for page in self.pages for plot in page.plots()]

    def context(self) -> dict[str, Any]:
        """What ``interventions.md.j2`` is given."""
        return {"studies": [page.context() for page in self.pages]}


def page_files(folder: Path = RESULTS) -> dict[str, str]:
    """The page folder's files (``interventions.md`` and its charts) from the study's results files in ``folder``.

    Raises:
        page_fragment.SourceInvalid: no results file there, or one does not fit the schema.
    """
    studies = InterventionsStudies.of(folder)
    if not studies.pages:
        raise page_fragment.SourceInvalid(
            f"{page_fragment.shown_path(folder)}: no {INTERVENTIONS_FILE}. Fix: {_FIX}"
        )
    return page_fragment.fragment(
        "interventions.md",
        page_fragment.render(HERE, "interventions.md.j2", studies.context()),
        studies.plots(),
    )


if __name__ == "__main__":  # python -m experiments.interventions_pair.page: the page into its page/ folder
    page_fragment.page_command("interventions_pair", HERE, page_files)
