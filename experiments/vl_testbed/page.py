"""The site's Training dynamics page, rendered from the testbed's results file (``results/vl_testbed.json``) through
its schema (:class:`experiments.vl_testbed.schema.Results`) into ``page/`` (``python -m
experiments.vl_testbed.page``): one sentence per question, tables of every run group and every paired comparison,
and charts that show every run.

A file that does not fit the schema is one :class:`~experiments.page_fragment.SourceInvalid` line naming the
file, the field and the fix. Every number on the page is in the file (its ``analysis`` block holds the
statistics) or read from it in one line here; nothing is recomputed.
"""

from __future__ import annotations

from pathlib import Path

from experiments.page_fragment import (
    ResultsFile,
    SourceInvalid,
    fragment,
    page_command,
    read_results,
    render,
    shown_path,
)
from experiments.vl_testbed.analysis import OUTCOMES, PRIMARY
from experiments.vl_testbed.charts import LengthChart, PairedChart, TrajectoryChart
from experiments.vl_testbed.controls import ARMS
from experiments.vl_testbed.schema import Comparison, Effect, PilotResults, Results
from experiments.vl_testbed.verdicts import HEAD_SHIFT, RULES, S_SHIFT, VISUAL_GAIN, compare_backbones
from sinkbench.leaderboard.consistency import fact_key, model_ref
from sinkbench.leaderboard.content import PlotRef

#: The results file of ``python -m experiments.vl_testbed.run``; other backbones' runs sit beside it as
#: ``vl_testbed_<name>.json``.
TESTBED_FILE = "vl_testbed.json"
#: The mechanism pilot's results, beside the testbed's (:mod:`experiments.vl_testbed.pilot`).
PILOT_FILE = "vl_testbed_mechanism_pilot.json"
#: The same pilot on the second backbone, Gemma 3 270M.
GEMMA_PILOT_FILE = "vl_testbed_mechanism_pilot_gemma3.json"
HERE = Path(__file__).resolve().parent
RESULTS = HERE / "results"
#: Where the page's charts go, site-relative.
PLOT_PATHS = {
    "primary": "plots/testbed-nll-per-seed.svg",
    "non_trivial": "plots/testbed-nontrivial-strict-per-seed.svg",
    "damage": "plots/testbed-damage-by-training.svg",
    "lengths": "plots/testbed-answer-lengths.svg",
    "trace": "plots/testbed-s-trace.svg",
}
#: The largest results file read, in bytes.
TESTBED_SIZE_LIMIT = 40_000_000
#: Why an effect has no smallest detectable difference, by its ``undetectable`` value.
UNDETECTABLE = {
    "too_few_seeds": "with this few seeds no difference is detectable",
    "no_spread": "the no-protection arm has no spread to simulate from",
}
#: How a verdict reads at the start of a sentence.
VERDICT_WORDS = {
    "yes": "Yes",
    "no": "No",
    "reverse": "No, the reverse",
    "cannot tell": "This design cannot tell",
    "not posed": "Not posed (the sink did not move)",
    "descriptive": "Descriptive",
}
#: The day the outcomes' margins (:data:`experiments.vl_testbed.analysis.OUTCOMES`) were fixed.
MARGINS_FIXED = "2026-12-03"
#: The base model's outcomes that other pages show too, as the consistency check's fact kinds and task
#: (:mod:`sinkbench.leaderboard.consistency`): its IFEval prompt-level strict score and its S.
BASE_FACTS = {"prompt_strict": ("score", "ifeval_strict"), "sink_strength": ("s",)}
#: The outcomes each question's sentence gives: the primary one, and the strict score a trivial answer cannot pass.
SENTENCE_OUTCOMES = (PRIMARY, "non_trivial_strict")
_FIX = "rerun `python -m experiments.vl_testbed.run` to rewrite it"


class TestbedResults(ResultsFile[Results]):
    """What the Training dynamics page shows of one testbed results file."""

    @property
    def compare(self) -> str:
        """The dose the arms are compared at."""
        return self.data.config.compare_dose

    @property
    def arms(self) -> list[str]:
        """The arms run on VL chats at the compared dose, in :data:`ARMS` order."""
        groups = self.data.analysis.groups
        return [arm for arm in ARMS if f"vl/{self.compare}/{arm}" in groups]

    def group_label(self, name: str) -> str:
        """How the page names a run group ``data/dose/arm``."""
        data, dose, arm = name.split("/")
        label = ARMS[arm].label
        if data == "text":
            return f"text-only training, {label}"
        return label if dose == self.compare else f"{label}, {dose} dose"

    @property
    def group_names(self) -> list[str]:
        """Every run group on file: the compared arms first, then the other doses and the text-only control."""
        groups = self.data.analysis.groups
        first = [f"vl/{self.compare}/{arm}" for arm in self.arms]
        return first + sorted(name for name in groups if name not in first)

    @property
    def compared_seeds(self) -> int:
        """How many seeds the compared no-protection arm has (the spread behind every detectable difference)."""
        return len(self.data.analysis.groups[f"vl/{self.compare}/none"].seeds)

    @property
    def seeds_text(self) -> str:
        """How many seeds the run groups have, to start a sentence: one count when they agree, else each group's."""
        groups = self.data.analysis.groups
        counts = {name: len(groups[name].seeds) for name in self.group_names}
        if len(set(counts.values())) == 1:
            return f"{next(iter(counts.values()))} seeds"
        each = "; ".join(f"{self.group_label(name)} {count}" for name, count in counts.items())
        return f"Seeds per run group: {each} (of the {len(self.data.config.seeds)} planned; the others were not run)"

    def effect(self, question: str, outcome: str) -> Effect | None:
        """The paired effect of ``question`` on ``outcome``, if on file."""
        comparison = self.data.analysis.comparisons.get(question)
        return None if comparison is None else comparison.effects.get(outcome)

    @property
    def margins_fixed(self) -> str:
        """The day the margins were fixed."""
        return MARGINS_FIXED

    @property
    def margins_fixed_after(self) -> bool:
        """Whether the experiment ran before its margins were fixed (and was re-judged with them)."""
        return self.data.created[:10] < MARGINS_FIXED

    @property
    def comparisons(self) -> dict[str, Comparison]:
        """The questions the file answers, in order."""
        return self.data.analysis.comparisons

    def sentence(self, question: str) -> str:
        """The question answered in one sentence with its numbers, on :data:`SENTENCE_OUTCOMES`."""
        comparison = self.comparisons[question]
        parts = []
        for key in SENTENCE_OUTCOMES:
            effect = comparison.effects[key]
            outcome = OUTCOMES[key]
            parts.append(
                f"{VERDICT_WORDS[effect.verdict].lower()} on the {outcome.label} ({_signed(effect.mean, key)} "
                f"{outcome.unit}, 95% CI {_ci(effect, key)}; exact sign-flip p = {_p(effect.p_sign_flip)}, "
                f"{effect.positive} up, {effect.negative} down, {effect.zero} equal of {len(effect.differences)} seeds"
                + (f"; margin ±{_number(effect.margin, key)}" if effect.margin is not None else "")
                + (
                    f"; smallest detectable {_number(effect.minimum_detectable, key)}"
                    if effect.minimum_detectable is not None
                    else ""
                )
                + ")"
            )
        against = "the base model" if comparison.control == "base" else self.group_label(comparison.control)
        return (
            f"{comparison.question} {parts[0][0].upper()}{parts[0][1:]}, and {parts[1]}: "
            f"{self.group_label(comparison.treated)} against {against}."
        )

    def charts(self) -> dict[str, PlotRef]:
        """Every chart of the page by its :data:`PLOT_PATHS` key."""
        base = self.data.base
        arms = self.arms
        labels = tuple(ARMS[arm].label for arm in arms)

        def per_seed(outcome: str, names: list[str]) -> tuple[tuple[int, tuple[float | None, ...]], ...]:
            runs = {(run.key.data, run.key.dose, run.key.arm, run.key.seed): run for run in self.data.runs}
            rows = []
            for seed in self.data.config.seeds:
                values = []
                for name in names:
                    run = runs.get((*name.split("/"), seed))
                    values.append(None if run is None else OUTCOMES[outcome].read(run))
                rows.append((seed, tuple(values)))
            return tuple(row for row in rows if any(v is not None for v in row[1]))

        compared = [f"vl/{self.compare}/{arm}" for arm in arms]
        training = [name for name in self.group_names if name.endswith("/none")]
        primary, strict = OUTCOMES[PRIMARY], OUTCOMES["non_trivial_strict"]
        charts = {
            "primary": PairedChart(
                f"{primary.label} ({primary.unit})",
                labels,
                per_seed(PRIMARY, compared),
                primary.read(base),
                "base LM",
            ),
            "non_trivial": PairedChart(
                f"{strict.label} (%)",
                labels,
                per_seed("non_trivial_strict", compared),
                strict.read(base),
                "base LM",
            ),
            "damage": PairedChart(
                f"{primary.label} ({primary.unit})",
                tuple(self.group_label(name) for name in training),
                per_seed(PRIMARY, training),
                primary.read(base),
                "base LM",
            ),
            "lengths": LengthChart(
                (
                    ("base LM", tuple(base.text.ifeval.answer_tokens), base.text.stopped_share),
                    *(
                        (
                            self.group_label(name),
                            tuple(n for run in self._runs(name) for n in run.text.ifeval.answer_tokens),
                            sum(run.text.stopped_share for run in self._runs(name)) / len(self._runs(name)),
                        )
                        for name in self.group_names
                    ),
                ),
                self.data.config.max_new_tokens,
            ),
            "trace": TrajectoryChart(
                tuple(
                    (
                        self.group_label(name),
                        tuple(
                            tuple((p.step, p.sink_strength) for p in run.trace) for run in self._runs(name)
                        ),
                    )
                    for name in compared
                ),
                model_label=f"testbed LLaVA on {self.data.model.get('id', 'the base LM')} (stage 2)",
            ),
        }
        return {key: PlotRef(path, charts[key]) for key, path in PLOT_PATHS.items()}

    def _runs(self, name: str) -> list:
        data, dose, arm = name.split("/")
        return [
            run for run in self.data.runs if (run.key.data, run.key.dose, run.key.arm) == (data, dose, arm)
        ]

    @property
    def base_model(self) -> str:
        """The base model as the board's fact keys name it (:func:`model_ref`): its Hub id at the sha256 of its
        weights, as the testbed pair's metadata records the same model."""
        model = self.data.model
        sha256 = model.get("sha256")
        return model_ref(
            str(model.get("upstream") or model.get("id", "")),
            f"sha256:{sha256}" if sha256 else model.get("revision"),
        )

    @property
    def base_bases(self) -> dict[str, str]:
        """What each of :data:`BASE_FACTS` was measured on, as the page states it beside the figure: the testbed's
        own run, not lm-eval's (the testbed pair's page and the backbone page show lm-eval's)."""
        weights = self.data.model.get("weights")
        return {
            "prompt_strict": self.strict_basis(self.data.config.eval_dtype),
            "sink_strength": "the VL testbed's own screen of the base model"
            + (f" ({weights} weights)" if weights else ""),
        }

    def strict_basis(self, dtype: str) -> str:
        """The basis of the base model's IFEval prompt-level strict score answered in ``dtype`` by the testbed."""
        subset = self.data.ifeval_subset
        return (
            f"the VL testbed's short-answer prompts: {len(subset.indices)} of {subset.documents} documents · "
            f"up to {self.data.config.max_new_tokens} new tokens · {dtype} · answered and scored by the testbed "
            "itself, not by lm-eval"
        )

    def base_fact(self, outcome: str) -> tuple[str, str] | None:
        """The fact key and basis of the base model's figure of ``outcome``, or None when it is no board fact."""
        kind = BASE_FACTS.get(outcome)
        if kind is None:
            return None
        return fact_key(kind[0], self.base_model, *kind[1:]), self.base_bases[outcome]

    @property
    def largest_extraction_error(self) -> float:
        """The largest text-only logit difference between a VLM and its extracted LM, over every run."""
        return max(run.extraction.max_abs_logit_diff for run in self.data.runs)

    @property
    def recorded_minutes(self) -> float:
        """The wall times the file records (base model, stages 0 and 1 per seed, every run), in minutes."""
        base = self.data.base.seconds
        seeds = sum(record.stage0.seconds + record.stage1.seconds for record in self.data.seeds)
        return (base.screen + base.text + seeds + sum(run.seconds.total for run in self.data.runs)) / 60


def _digits(outcome: str) -> int:
    return 3 if OUTCOMES[outcome].unit in ("nats/token", "nats", "share") else 1


def _number(value: float | None, outcome: str) -> str:
    return "n/a" if value is None else f"{value:.{_digits(outcome)}f}"


def _signed(value: float | None, outcome: str) -> str:
    return "n/a" if value is None else f"{value:+.{_digits(outcome)}f}"


def _p(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.3f}"


def _ci(effect: Effect, outcome: str) -> str:
    low, high = effect.ci95
    return f"[{_signed(low, outcome)}, {_signed(high, outcome)}]"


def read_testbed(path: Path, shown: str) -> TestbedResults:
    """Read a testbed results file (``shown`` is how messages name it).

    Raises:
        SourceInvalid: the file is unsafe to read (a link, too large), not strict JSON, lacks a field the page
            shows, or has no analysis (an unfinished run's state file).
    """
    data = read_results(Results, path, shown, TESTBED_SIZE_LIMIT, _FIX)
    if data.analysis is None or data.base is None or not data.runs:
        raise SourceInvalid(
            f"{shown}: analysis: missing (an unfinished run's state, not its results). Fix: {_FIX}"
        )
    return TestbedResults(shown, data)


def read_pilot(path: Path) -> PilotResults | None:
    """The mechanism pilot's results beside a testbed results file, None when there are none.

    Raises:
        SourceInvalid: the file is there but unsafe to read, not strict JSON, or unfinished.
    """
    if not path.exists():
        return None
    fix = "rerun `python -m experiments.vl_testbed.pilot` to rewrite it"
    return read_results(PilotResults, path, shown_path(path), TESTBED_SIZE_LIMIT, fix)


def backbone_answers(first: PilotResults, second: PilotResults) -> list[str]:
    """Per setting both pilots ran on every seed: does the second backbone's sink move more, and does it lose more
    (:func:`~experiments.vl_testbed.verdicts.compare_backbones`, with the outcomes' margins)? The loss is not read
    where a base model repeats the prompt in most of its answers (its NLL reference is then not an answer)."""
    sentences = []
    what = {setting["name"]: setting["what"] for setting in second.settings}
    a, b = first.backbone, second.backbone
    for name in (n for n in second.verdicts.settings if n in first.verdicts.settings):
        runs = [[run for run in pilot.runs if run.setting == name] for pilot in (first, second)]
        shift = [[abs(run.s_shift) for run in mine] for mine in runs]
        gap = [[run.margin["b_gap"] for run in mine] for mine in runs]
        texts = [[run.first_token_attention["text"] for run in mine] for mine in runs]
        share = [[100 * text["heads_moved"] / text["heads"] for text in mine] for mine in texts]
        heads = [[text["sink_heads"]["change"]["mean"] for text in mine] for mine in texts]
        sentences.append(
            f"{name} ({what[name]}): does {b}'s sink move more than {a}'s? "
            f"{_ANSWERS[compare_backbones(*shift, S_SHIFT)]} (|S shift| "
            f"{_listed(shift[1])} against {_listed(shift[0])} nats; the rule needs every seed apart by {S_SHIFT}); "
            f"B_gap {_listed(gap[1], 2, '')} against {_listed(gap[0], 2, '')} nats; heads whose first-token attention on text moved "
            f"(by {HEAD_SHIFT} or more): {_percent(share[1])} against {_percent(share[0])} of all; the top sink heads' "
            f"first-token attention changed {_listed(heads[1])} against {_listed(heads[0])}."
        )
        if all("nll_continue" in pilot.base for pilot in (first, second)):
            margin = OUTCOMES["nll_continue"].margin or 0.0
            rise = [
                [run.nll_continue - pilot.base["nll_continue"] for run in mine]
                for mine, pilot in zip(runs, (first, second), strict=True)
            ]
            echo = [[run.echo["rate"] for run in mine] for mine in runs]
            gain = [[100 * run.visual_gain for run in mine] for mine in runs]
            copying = [
                p for p in (first, second) if 2 * p.base.get("copies_prompt", 0) > len(p.base["answers"])
            ]
            answer = (
                "Cannot tell, "
                + " and ".join(
                    f"{p.backbone}'s base model repeats the prompt in {p.base['copies_prompt']} of its "
                    f"{len(p.base['answers'])} answers"
                    for p in copying
                )
                + ", so the NLL of those answers measures leaving the copy, not text damage"
                if copying
                else _ANSWERS[compare_backbones(*rise, margin)]
            )
            sentences.append(
                f"{name}: does {b} lose more than {a}? {answer}: the NLL of its base model's own answers rose "
                f"{_listed(rise[1])} against {_listed(rise[0])} nats/token (margin {margin}); echo "
                f"{_listed(echo[1], 2, '')} against {_listed(echo[0], 2, '')}; visual gain {_listed(gain[1], 1)} against "
                f"{_listed(gain[0], 1)} points."
            )
    if sentences:
        sentences.append(
            "Two backbones are a direction, not a correlation; their seeds cannot be paired, so a word needs every "
            "seed of one backbone beyond every seed of the other by the margin, else 'cannot tell'."
        )
    return sentences


#: :func:`~experiments.vl_testbed.verdicts.compare_backbones`'s words as answers to "does it ... more?".
_ANSWERS = {"more": "Yes", "less": "No, less", "cannot tell": "Cannot tell"}


def _percent(numbers: list[float]) -> str:
    return ", ".join(f"{x:.0f}%" for x in numbers)


def _listed(numbers: list[float], digits: int = 3, sign: str = "+") -> str:
    return ", ".join(f"{x:{sign}.{digits}f}" for x in numbers)


def page_files(results: Path = RESULTS / TESTBED_FILE) -> dict[str, str]:
    """The page folder's files (``training.md`` and its charts) from ``results`` (and the mechanism pilots'
    :data:`PILOT_FILE` and :data:`GEMMA_PILOT_FILE` beside it, where they are)."""
    run = read_testbed(results, shown_path(results))
    pilot, second = read_pilot(results.parent / PILOT_FILE), read_pilot(results.parent / GEMMA_PILOT_FILE)
    charts = run.charts()
    context = {
        "run": run,
        "plots": charts,
        "outcomes": OUTCOMES,
        "primary": PRIMARY,
        "arms": ARMS,
        "rules": RULES,
        "verdict_words": VERDICT_WORDS,
        "undetectable": UNDETECTABLE,
        "pilot": pilot,
        "pilot_file": PILOT_FILE,
        "second_pilot": second,
        "second_pilot_file": GEMMA_PILOT_FILE,
        "backbone_answers": backbone_answers(pilot, second) if pilot and second else [],
        "s_shift": S_SHIFT,
        "visual_gain": VISUAL_GAIN,
    }
    markdown = render(HERE, "training.md.j2", context)
    return fragment("training.md", markdown, list(charts.values()))


def main() -> None:
    """``python -m experiments.vl_testbed.page``: render the page into ``experiments/vl_testbed/page/``."""
    page_command("vl_testbed", HERE, page_files)


if __name__ == "__main__":
    main()
