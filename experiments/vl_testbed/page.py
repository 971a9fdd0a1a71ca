"""The site's Training dynamics page (``python -m experiments.vl_testbed.page``), rendered from the testbed's results
file through its schema (:class:`experiments.vl_testbed.schema.Results`) into ``page/``: one sentence per question,
tables of every run group and paired comparison, and charts that show every run. A file that does not fit the
schema is one :class:`~experiments.page_fragment.SourceInvalid` line (file, field, fix). Every number on the page
is in the file (its ``analysis`` block holds the statistics) or read from it in one line here.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

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
from experiments.vl_testbed.schema import (
    TESTBED_SIZE_LIMIT,
    Comparison,
    PilotResults,
    PilotRun,
    Results,
    RunRecord,
)
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

    @property
    def compared_groups(self) -> list[str]:
        """The run groups of those arms."""
        return [f"vl/{self.compare}/{arm}" for arm in self.arms]

    def group_label(self, name: str) -> str:
        """How the page names a run group ``data/dose/arm``."""
        data, dose, arm = name.split("/")
        label = ARMS[arm].label
        if data == "text":
            return f"text-only training, {label}"
        if data == "text_matched":
            return f"text-only training matched in tokens, {label}"
        return label if dose == self.compare else f"{label}, {dose} dose"

    @property
    def group_names(self) -> list[str]:
        """Every run group on file: the compared arms first, then the other doses and the text-only control."""
        first = self.compared_groups
        return first + sorted(name for name in self.data.analysis.groups if name not in first)

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
            effect, outcome, digits = comparison.effects[key], OUTCOMES[key], _digits(key)
            low, high = effect.ci95
            parts.append(
                f"{VERDICT_WORDS[effect.verdict].lower()} on the {outcome.label} ({_fmt(effect.mean, digits, '+')} "
                f"{outcome.unit}, 95% CI [{_fmt(low, digits, '+')}, {_fmt(high, digits, '+')}]; exact sign-flip p = "
                f"{_fmt(effect.p_sign_flip, 3)}, {effect.positive} up, {effect.negative} down, {effect.zero} equal "
                f"of {len(effect.differences)} seeds"
                + (f"; margin ±{_fmt(effect.margin, digits)}" if effect.margin is not None else "")
                + (
                    f"; smallest detectable {_fmt(effect.minimum_detectable, digits)}"
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

        def paired(outcome: str, unit: str, names: list[str]) -> PairedChart:
            """``outcome`` of the groups ``names``, one row per seed that has a run, against the base model."""
            read = OUTCOMES[outcome].read
            by_seed = [{run.key.seed: run for run in self._runs(name)} for name in names]
            rows = [
                (seed, tuple(read(runs[seed]) if seed in runs else None for runs in by_seed))
                for seed in self.data.config.seeds
            ]
            return PairedChart(
                f"{OUTCOMES[outcome].label} ({unit})",
                tuple(self.group_label(name) for name in names),
                tuple(row for row in rows if any(v is not None for v in row[1])),
                read(base),
                "base LM",
            )

        lengths = [("base LM", tuple(base.text.ifeval.answer_tokens), base.text.stopped_share)]
        for name in self.group_names:
            runs = self._runs(name)
            tokens = tuple(n for run in runs for n in run.text.ifeval.answer_tokens)
            lengths.append(
                (self.group_label(name), tokens, sum(r.text.stopped_share for r in runs) / len(runs))
            )
        primary_unit = OUTCOMES[PRIMARY].unit
        charts = {
            "primary": paired(PRIMARY, primary_unit, self.compared_groups),
            "non_trivial": paired("non_trivial_strict", "%", self.compared_groups),
            "damage": paired(PRIMARY, primary_unit, [n for n in self.group_names if n.endswith("/none")]),
            "lengths": LengthChart(tuple(lengths), self.data.config.max_new_tokens),
            "trace": TrajectoryChart(
                tuple(
                    (
                        self.group_label(name),
                        tuple(
                            tuple((p.step, p.sink_strength) for p in run.trace) for run in self._runs(name)
                        ),
                    )
                    for name in self.compared_groups
                ),
                model_label=f"testbed LLaVA on {self.data.model.get('id', 'the base LM')} (stage 2)",
            ),
        }
        return {key: PlotRef(path, charts[key]) for key, path in PLOT_PATHS.items()}

    def _runs(self, name: str) -> list[RunRecord]:
        """The runs of the group ``data/dose/arm``, in file order."""
        return [run for run in self.data.runs if f"{run.key.data}/{run.key.dose}/{run.key.arm}" == name]

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
        seeds = sum(
            stages.stage0.seconds + stages.stage1.seconds
            for record in self.data.seeds
            for stages in (record, *record.remade)
        )
        return (base.screen + base.text + seeds + sum(run.seconds.total for run in self.data.runs)) / 60

    @property
    def remade_stages(self) -> str:
        """A sentence on the seeds whose stages 0 and 1 were made again, and whether they reproduced ("" if none)."""
        remade = [(record, stages) for record in self.data.seeds for stages in record.remade]
        if not remade:
            return ""
        same = [str(record.seed) for record, stages in remade if stages.reproduced]
        other = [(record, stages) for record, stages in remade if not stages.reproduced]
        firsts = sorted({f"“{self.group_label(stages.first_run.rsplit('/', 1)[0])}”" for _, stages in remade})
        text = (
            "Stages 0 and 1 were made again (their weights were no longer in the work folder) for the runs of "
            f"{'; '.join(firsts)} and any later run of the seed"
        )
        if same:
            text += f"; they reproduced step for step on seed{'s' if len(same) > 1 else ''} {', '.join(same)}"
        if other:
            accuracies = ", ".join(
                f"{100 * stages.visual_after_stage1.accuracy:.1f}% against {100 * record.visual_after_stage1.accuracy:.1f}%"
                for record, stages in other
            )
            seeds = ", ".join(str(record.seed) for record, _ in other)
            text += (
                f"; they did not on seed{'s' if len(other) > 1 else ''} {seeds} (visual accuracy after stage 1 "
                f"{accuracies} the first time)"
            )
        return text + "."


def _digits(outcome: str) -> int:
    return 3 if OUTCOMES[outcome].unit in ("nats/token", "nats", "share") else 1


def _fmt(value: float | None, digits: int, sign: str = "") -> str:
    """``value`` to ``digits`` decimals (``sign`` "+": always signed), "n/a" for None."""
    return "n/a" if value is None else f"{value:{sign}.{digits}f}"


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
    pilots = (first, second)
    for name in (n for n in second.verdicts.settings if n in first.verdicts.settings):
        runs = [[run for run in pilot.runs if run.setting == name] for pilot in pilots]
        shift = _each(runs, lambda run: abs(run.s_shift))
        gap = _each(runs, lambda run: run.margin["b_gap"])
        text = _each(runs, lambda run: run.first_token_attention["text"])
        share = [[100 * t["heads_moved"] / t["heads"] for t in mine] for mine in text]
        heads = [[t["sink_heads"]["change"]["mean"] for t in mine] for mine in text]
        sentences.append(
            f"{name} ({what[name]}): does {b}'s sink move more than {a}'s? "
            f"{_ANSWERS[compare_backbones(*shift, S_SHIFT)]} (|S shift| "
            f"{_listed(shift[1])} against {_listed(shift[0])} nats; the rule needs every seed apart by {S_SHIFT}); "
            f"B_gap {_listed(gap[1], 2, '')} against {_listed(gap[0], 2, '')} nats; heads whose first-token "
            f"attention on text moved (by {HEAD_SHIFT} or more): {_listed(share[1], 0, '', '%')} against "
            f"{_listed(share[0], 0, '', '%')} of all; the top sink heads' first-token attention changed "
            f"{_listed(heads[1])} against {_listed(heads[0])}."
        )
        if not all("nll_continue" in pilot.base for pilot in pilots):
            continue
        margin = OUTCOMES["nll_continue"].margin or 0.0
        rise = [
            [run.nll_continue - pilot.base["nll_continue"] for run in mine]
            for mine, pilot in zip(runs, pilots, strict=True)
        ]
        echo = _each(runs, lambda run: run.echo["rate"])
        gain = _each(runs, lambda run: 100 * run.visual_gain)
        copying = [p for p in pilots if 2 * p.base.get("copies_prompt", 0) > len(p.base["answers"])]
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
            f"{_listed(echo[1], 2, '')} against {_listed(echo[0], 2, '')}; visual gain {_listed(gain[1], 1)} "
            f"against {_listed(gain[0], 1)} points."
        )
    if sentences:
        sentences.append(
            "Two backbones are a direction, not a correlation; their seeds cannot be paired, so a word needs every "
            "seed of one backbone beyond every seed of the other by the margin, else 'cannot tell'."
        )
    return sentences


#: :func:`~experiments.vl_testbed.verdicts.compare_backbones`'s words as answers to "does it ... more?".
_ANSWERS = {"more": "Yes", "less": "No, less", "cannot tell": "Cannot tell"}


def _each(runs: list[list[PilotRun]], value: Callable[[PilotRun], Any]) -> list[list[Any]]:
    return [[value(run) for run in mine] for mine in runs]


def _listed(numbers: list[float], digits: int = 3, sign: str = "+", unit: str = "") -> str:
    return ", ".join(_fmt(x, digits, sign) + unit for x in numbers)


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


def main(argv: Sequence[str] | None = None) -> None:
    """``python -m experiments.vl_testbed.page``: render the page into ``experiments/vl_testbed/page/``."""
    page_command("vl_testbed", HERE, page_files, argv)


if __name__ == "__main__":
    main()
