"""The interventions study (experiments/interventions_pair) on the tiny testbed: every step, its resumption, its
schema, its page and the committed results file."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from tiny_testbed import TINY_DOCS, TINY_PROBLEMS, TINY_SHAPE, TINY_SINK_HEADS, refusal

from experiments.interventions_pair.page import (
    FLOAT32_FILE,
    HERE,
    INTERVENTIONS_FILE,
    PAPER,
    QUESTIONS,
    RESULTS,
    STUDY_FILES,
    InterventionsPage,
    InterventionsStudies,
    page_files,
    read_study,
)
from experiments.interventions_pair.study_schema import StudyResults, contrasts
from experiments.page_fragment import SourceInvalid, committed_fragment, render
from experiments.vl_testbed.schema import Results

if TYPE_CHECKING:
    from experiments.vl_testbed.experiment import Inputs

HEADER = {
    "sinkbench_version": "0.1.0",
    "created": "2026-12-02T00:00:00+00:00",
    "command": "python -m experiments.interventions_pair.run",
    "machine": {"cpus": 2, "torch_threads": 1, "device": "cpu", "load_average_at_start": [0.5, 0.4, 0.3]},
    "testbed": {"file": "vl_testbed.json", "created": "2026-12-01", "compare_dose": "high",
                "stage2": {"steps": 2, "batch_size": 2, "lr": 0.01}},
}  # fmt: skip


def tiny_inputs(results: Path) -> Inputs:
    """The tiny testbed's inputs, its base model beside its results."""
    from experiments.vl_testbed.experiment import Inputs
    from experiments.vl_testbed.outcomes import non_trivial_prompts

    base = results.parent.parent / "base"
    return Inputs(base, TINY_DOCS, non_trivial_prompts(TINY_DOCS), TINY_PROBLEMS, TINY_SINK_HEADS, TINY_SHAPE)


@pytest.fixture(scope="module")
def tiny_study(testbed_run, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[str]]:
    """The study on the tiny testbed's results, every step but Gemma's, run twice (the second resumes)."""
    from experiments.interventions_pair.study import STEPS, Study, StudyInputs

    results, _ = testbed_run
    committed = Results.model_validate_json(results.read_text())
    inputs = tiny_inputs(results)
    work = tmp_path_factory.mktemp("study")
    out = work / INTERVENTIONS_FILE
    logged: list[str] = []
    for _ in range(2):
        study = Study(
            StudyInputs(committed, inputs, None, (0, 1)), work / "work", out, HEADER, log=logged.append
        )
        study.run(STEPS)
        logged.append("-- rerun --")
    return out, logged


@pytest.mark.slow  # the whole tiny interventions study, run twice (the tiny_study fixture)
def test_every_step_runs_once_and_a_rerun_resumes(tiny_study) -> None:
    from experiments.interventions_pair.study import STEPS

    out, logged = tiny_study
    first = logged[: logged.index("-- rerun --")]
    rerun = logged[logged.index("-- rerun --") + 1 : -1]
    ran = [f"step {step}" for step in STEPS if step != "ablation_gemma"]  # no Gemma folder given: skipped
    assert [line for line in first if line.startswith("step ")] == ran
    assert not [line for line in rerun if line.startswith("step ")]  # everything was on file
    data = StudyResults.model_validate_json(out.read_text())
    assert set(data.seconds) == set(STEPS) - {"ablation_gemma"}


@pytest.mark.slow  # the whole tiny interventions study, run twice (the tiny_study fixture)
def test_a_step_that_reads_the_endpoints_re_makes_them_in_a_new_work_folder(
    tiny_study, testbed_run, tmp_path: Path
) -> None:
    """The results on file hold the endpoints' numbers, not their checkpoints: a new work folder asked for the
    displacement alone re-makes the endpoints first, then measures the same displacement."""
    from experiments.interventions_pair.study import STUDY_FILE, Study, StudyInputs

    out, _ = tiny_study
    on_file = StudyResults.model_validate_json(out.read_text())
    seconds = {step: value for step, value in on_file.seconds.items() if step != "displacement"}
    work = tmp_path / "work"
    work.mkdir()
    dropped = on_file.model_copy(update={"displacement": None, "seconds": seconds})
    (work / STUDY_FILE).write_text(dropped.model_dump_json(by_alias=True), encoding="utf-8")
    committed = Results.model_validate_json(testbed_run[0].read_text())
    inputs = tiny_inputs(testbed_run[0])
    logged: list[str] = []
    study = Study(
        StudyInputs(committed, inputs, None, (0, 1)), work, tmp_path / "out.json", HEADER, log=logged.append
    )
    again = study.run(("displacement",))
    assert [line for line in logged if line.startswith("step ")] == ["step endpoints", "step displacement"]
    assert again.displacement["summary"] == on_file.displacement["summary"]


@pytest.mark.slow  # the whole tiny interventions study, run twice (the tiny_study fixture)
def test_the_re_made_pair_equals_the_testbed_runs(tiny_study) -> None:
    data = StudyResults.model_validate_json(tiny_study[0].read_text())
    assert data.endpoints.vl.key.data == "vl" and data.endpoints.text.key.data == "text"
    # Same recipe, seed and data: the re-made endpoints are the testbed's own runs.
    for name, difference in data.endpoints.reproduction.items():
        assert difference == pytest.approx(0, abs=1e-4), name


@pytest.mark.slow  # a whole study of its own
def test_a_study_in_another_precision_measures_afresh_and_makes_its_own_vanilla_runs(
    testbed_run, tmp_path: Path
) -> None:
    """The tiny testbed trains in bfloat16; the study in float32 is another recipe: it compares with none of the
    testbed's runs, measures the base again, pairs the injected seed 0 with its own re-made VL endpoint and makes a
    vanilla run for seed 1."""
    from experiments.interventions_pair.study import STUDY_FILE, Study, StudyInputs, recipe_in
    from experiments.vl_testbed.precision import precision_of

    committed = Results.model_validate_json(testbed_run[0].read_text())
    assert precision_of(committed.config) == "bfloat16" and committed.runs and committed.base is not None
    in_float32 = recipe_in(committed, "float32")
    assert precision_of(in_float32.config) == "float32"
    assert in_float32.base is None and not in_float32.runs and not in_float32.seeds
    assert in_float32.config.recipe() != committed.config.recipe()
    inputs = tiny_inputs(testbed_run[0])
    logged: list[str] = []
    study = Study(
        StudyInputs(in_float32, inputs, None, (0, 1)),
        tmp_path / "work",
        tmp_path / "out.json",
        HEADER,
        log=logged.append,
    )
    data = study.run(("endpoints", "injection_runs"))
    assert study.testbed.state.config.eval_dtype == "float32" and study.testbed.state.base is not None
    assert data.endpoints.reproduction == {}  # no run of another recipe to reproduce
    injection = data.injection
    assert injection.vanilla_seeds == [0, 1]
    assert [run.key.seed for run in injection.vanilla_runs] == [1]  # seed 0's vanilla run is the endpoint
    assert [
        line for line in logged if line.startswith(("vanilla run", "injected run")) and "done" not in line
    ] == [
        "injected run seed 0",
        "vanilla run seed 1",
        "injected run seed 1",
    ]
    vanilla = {0: data.endpoints.vl, 1: injection.vanilla_runs[0]}
    for name, value in (
        ("prompt_strict", lambda run: run.text.ifeval.prompt_strict * 100),
        ("nll_continue", lambda run: run.text.nll_continue_mean),
    ):
        expected = [value(run) - value(vanilla[run.key.seed]) for run in injection.runs]
        assert injection.over_seeds[name]["differences"] == pytest.approx(expected), name
    assert injection.runs[1].stage2.loss != injection.vanilla_runs[0].stage2.loss  # two models, two runs
    labels = [row["label"] for row in InterventionsPage(FLOAT32_FILE, data).rows()]
    assert labels[-3:] == [
        "injected, after stage 2 (seed 0)",
        "injected, after stage 2 (seed 1)",
        "vanilla, after stage 2 (seed 1)",
    ]

    # Killed after seed 1's vanilla run: a new work folder (no checkpoints) makes only the injected run of seed 1,
    # and neither re-makes the endpoints (their record is enough) nor the vanilla run on file.
    killed = data.model_copy(
        update={"injection": injection.model_copy(update={"runs": injection.runs[:1], "vanilla_seeds": [0]})}
    )
    work = tmp_path / "again"
    work.mkdir()
    (work / STUDY_FILE).write_text(killed.model_dump_json(by_alias=True), encoding="utf-8")
    logged.clear()
    resumed = Study(
        StudyInputs(in_float32, inputs, None, (0, 1)), work, tmp_path / "out2.json", HEADER, log=logged.append
    ).run(("injection_runs",))
    assert [line for line in logged if line.startswith(("step ", "vanilla run", "injected run"))] == [
        "step injection_runs",
        "injected run seed 1",
        "injected run seed 1: done",
    ]
    assert resumed.injection.vanilla_seeds == [0, 1]
    for name, entry in resumed.injection.over_seeds.items():
        assert entry["differences"] == pytest.approx(injection.over_seeds[name]["differences"], abs=1e-4), (
            name
        )

    # A new work folder holding only the results file: a step that reads the endpoints re-makes them, and the
    # testbed there measures this recipe's base again first (its answers score every NLL).
    fresh = tmp_path / "fresh"
    fresh.mkdir()
    (fresh / STUDY_FILE).write_text(data.model_dump_json(by_alias=True), encoding="utf-8")
    logged.clear()
    remade = Study(
        StudyInputs(in_float32, inputs, None, (0, 1)),
        fresh,
        tmp_path / "out3.json",
        HEADER,
        log=logged.append,
    ).run(("displacement",))
    assert [line for line in logged if line.startswith("step ")] == ["step endpoints", "step displacement"]
    for data_kind in ("vl", "text"):
        before, after = (getattr(found.endpoints, data_kind).text for found in (data, remade))
        assert after.nll_continue_mean == pytest.approx(before.nll_continue_mean, abs=1e-4), data_kind


@pytest.mark.slow  # the whole tiny interventions study, run twice (the tiny_study fixture)
def test_each_intervention_records_what_it_did(tiny_study) -> None:
    data = StudyResults.model_validate_json(tiny_study[0].read_text())
    assert data.displacement["window"]["layers"] == [0, 1, 2, 3]
    q = data.displacement["summary"]["self_attn.q_proj.weight"]
    assert q["median_ratio"] > 0 and q["layers"] == 4
    assert data.random_control.details["max_relative_error"] < 0.01
    controls = {arm.name: arm for arm in data.random_controls}
    assert list(controls) == ["random_operator", "random_every_tensor"]
    operator, every = controls["random_operator"].details, controls["random_every_tensor"].details
    assert operator["max_relative_error"] < 0.01 and every["max_relative_error"] < 0.01
    assert (operator["match"], operator["scope"]) == ("operator", "projections")
    assert operator["changed"] == [
        "down_proj",
        "gate_proj",
        "k_proj",
        "o_proj",
        "q_proj",
        "up_proj",
        "v_proj",
    ]
    assert {"embed_tokens", "input_layernorm", "norm"} <= set(every["changed"])  # stage 2 trains the whole LM
    assert every["tensors"] > operator["tensors"] and every["median_frobenius_ratio"] == pytest.approx(
        1, rel=0.01
    )
    merges = {arm.name: arm for arm in data.merges}
    assert len(merges) == 7
    for name, arm in merges.items():
        identical = arm.details["identical_to_vlm_lm"]
        assert identical == (name in ("task_arithmetic", "tsv"))
        assert (arm.measured.visual is not None) or identical
        if identical:  # the VLM-LM's own measurements, so no difference against it
            assert all(c.difference == 0 for c in arm.contrasts["vlm_lm"])
    toward = {arm.name: arm for arm in data.toward_base}
    assert list(toward) == ["toward_base_25", "toward_base_50", "toward_base_75"]
    for arm in data.toward_base:  # α of the change undone: α of the way from the VLM-LM, 1 - α from the base
        alpha, distance = arm.details["alpha"], arm.details["distance"]
        assert distance["to_vlm_lm"] == pytest.approx(alpha, rel=1e-3)
        assert distance["to_reference"] == pytest.approx(1 - alpha, rel=1e-3)
        assert arm.measured.visual is not None
    # α = 0.5 is the uniform merge: the same weights, so the same answers
    assert toward["toward_base_50"].measured.text.answers == merges["uniform"].measured.text.answers
    (ablation,) = data.ablations
    assert ablation.backbone == "smollm2" and [arm.name for arm in ablation.settings] == ["input_layernorm"]
    assert ablation.settings[0].details["norms_changed"] == TINY_SHAPE["num_layers"]
    injection = data.injection
    assert injection.before.details["target_architecture"] == "Qwen3ForCausalLM"
    assert injection.before.details["equivalence"]["max_abs_logit_diff_without_new_norms"] < 1e-4
    assert [run.key.seed for run in injection.runs] == injection.vanilla_seeds == [0, 1]
    assert set(injection.over_seeds) == {
        "nll_continue",
        "non_trivial_strict",
        "prompt_strict",
        "visual",
        "sink_strength",
    }


@pytest.mark.slow  # the whole tiny interventions study, run twice (the tiny_study fixture)
def test_a_model_against_itself_differs_by_nothing(tiny_study) -> None:
    from experiments.interventions_pair.study import over_seeds

    data = StudyResults.model_validate_json(tiny_study[0].read_text())
    found = contrasts(data.base.text, data.base.text, [0, 1])
    assert [(c.outcome, c.difference, c.ci) for c in found] == [
        ("nll_continue", 0.0, (0.0, 0.0)),
        ("non_trivial_strict", 0.0, (0.0, 0.0)),
        ("prompt_strict", 0.0, (0.0, 0.0)),
    ]
    runs = data.injection.runs
    same = over_seeds(runs, {run.key.seed: run for run in runs})
    assert all(entry["mean"] == 0 and entry["p_sign_flip"] == 1.0 for entry in same.values())


@pytest.mark.slow  # the whole tiny interventions study, run twice (the tiny_study fixture)
def test_the_page_answers_each_question_and_draws_its_charts(tiny_study) -> None:
    page = InterventionsPage(INTERVENTIONS_FILE, read_study(tiny_study[0], INTERVENTIONS_FILE))
    answers = page.answers()
    assert set(answers) == set(PAPER)
    assert all("\n" not in sentence and sentence.endswith(".") for sentence in answers.values())
    assert "median ratio of ‖ΔW‖₂" in answers["displacement"]
    assert "vanilla runs of the same 2 seeds" in answers["injection"]
    assert "smallest possible value with 2 seeds is 0.5" in answers["injection"]
    labels = [row["label"] for row in page.rows()]
    assert labels[:3] == [
        "SmolLM2-135M-Instruct (base)",
        "VLM-LM (VL endpoint, seed 0)",
        "text-only endpoint (seed 0)",
    ]
    for plot in page.plots():
        assert plot.chart.svg().startswith("<svg") and plot.chart.spec()["data"]["values"]
    json.dumps(page.plots()[1].chart.spec(), allow_nan=False)  # the specification is plain JSON


@pytest.mark.slow  # the whole tiny interventions study, run twice (the tiny_study fixture)
def test_a_merge_with_the_vlm_lms_weights_up_to_rounding_is_marked(tiny_study, tmp_path: Path) -> None:
    """A float32 task vector added back to its base misses the fine-tuned weights by about 1e-9: the row says so."""
    data = json.loads(tiny_study[0].read_text())
    for arm in data["merges"]:
        if arm["name"] == "tsv":
            arm["details"]["identical_to_vlm_lm"] = False
            arm["details"]["distance"]["to_vlm_lm"] = 2e-9
        if arm["name"] == "uniform":
            arm["details"]["distance"]["to_vlm_lm"] = 2e-6
    (tmp_path / INTERVENTIONS_FILE).write_text(json.dumps(data), encoding="utf-8")
    page = InterventionsPage(
        INTERVENTIONS_FILE, read_study(tmp_path / INTERVENTIONS_FILE, INTERVENTIONS_FILE)
    )
    notes = {
        row["label"].split(",")[0].split(" (")[0]: row["note"]
        for row in page.rows()
        if row["group"] == "merge"
    }
    assert notes["Task Arithmetic"] == "same weights as the VLM-LM"
    assert (
        notes["Task Singular Vectors"]
        == "the VLM-LM's weights up to float rounding (relative distance 2e-09)"
    )
    assert notes["Uniform averaging"] == ""


@pytest.mark.slow  # the whole tiny interventions study, run twice (the tiny_study fixture)
def test_a_malformed_results_file_is_one_line(tiny_study, tmp_path: Path) -> None:
    message = refusal(
        read_study,
        tiny_study[0],
        lambda data: data["merges"][0].pop("measured"),
        tmp_path / INTERVENTIONS_FILE,
        "results/interventions_pair.json",
    )
    assert message.startswith("results/interventions_pair.json: merges.0.measured: Field required")


@pytest.mark.parametrize("name", STUDY_FILES)
def test_the_committed_results_fit_the_schema_and_answer_every_question(name: str) -> None:
    committed = RESULTS / name
    data = read_study(committed, committed.name)
    page = InterventionsPage(committed.name, data)
    answered = {"ablation_smollm2": "ablation", "ablation_gemma": "ablation", "injection_before": "injection",
                "displacement": "displacement", "random_control": "random_control", "merges": "merges"}  # fmt: skip
    assert set(page.answers()) == {answered[step] for step in data.seconds if step in answered}
    assert not data.merges or len(data.merges) == 7
    ablated = {step.removeprefix("ablation_") for step in data.seconds if step.startswith("ablation_")}
    assert {a.backbone for a in data.ablations} == ablated
    assert page.precision == ("float32" if name == FLOAT32_FILE else "bfloat16")
    assert all(f"<code>{step}</code>" in _render(page) for step in page.not_run())  # what is missing is said
    assert not re.search(r"(^|\s)/", data.command)  # no absolute path of the machine that ran it


def _render(*pages: InterventionsPage) -> str:
    return re.sub(r"\s+", " ", render(HERE, "interventions.md.j2", InterventionsStudies(pages).context()))


def test_the_committed_page_is_what_the_committed_results_render() -> None:
    """The page the site publishes (``page/``) is, file for file, what ``python -m experiments.interventions_pair.page``
    renders from the committed results: it cannot rot."""
    rendered = page_files()
    assert "interventions.md" in rendered and "plots/interventions-float32-merges.svg" in rendered
    committed = committed_fragment(HERE)
    assert set(committed) == set(rendered)
    for path, text in rendered.items():
        assert committed[path] == text, (
            f"{path} is stale; rerun `python -m experiments.interventions_pair.page`"
        )


@pytest.mark.slow  # the whole tiny interventions study, run twice (the tiny_study fixture)
def test_the_page_renders_every_answer_beside_the_papers_and_every_model(tiny_study, tmp_path: Path) -> None:
    page = InterventionsPage(INTERVENTIONS_FILE, read_study(tiny_study[0], INTERVENTIONS_FILE))
    html = _render(page)
    for name, sentence in page.answers().items():
        assert f"<td>{QUESTIONS[name]}</td>" in html and PAPER[name].replace("'", "&#39;") in html
        assert sentence.replace("'", "&#39;") in html
    assert html.count('<tr><td class="sb-sticky">') == len(page.rows())
    assert "None" not in html and "nan" not in html
    assert not InterventionsStudies.of(tmp_path).pages
    with pytest.raises(
        SourceInvalid, match=r"no interventions_pair\.json\. Fix: rerun `python -m experiments"
    ):
        page_files(tmp_path)


@pytest.mark.slow  # the whole tiny interventions study, run twice (the tiny_study fixture)
def test_a_float32_study_is_a_section_of_its_own(tiny_study, tmp_path: Path) -> None:
    """The same study in float32 (its own file) is shown beside the testbed's recipe, never mixed with it: its own
    heading, table, charts and resume command."""
    data = json.loads(tiny_study[0].read_text())
    (tmp_path / INTERVENTIONS_FILE).write_text(json.dumps(data), encoding="utf-8")
    data["testbed"]["precision"] = "float32"
    del data["seconds"]["merges"]
    (tmp_path / FLOAT32_FILE).write_text(json.dumps(data), encoding="utf-8")
    studies = InterventionsStudies.of(tmp_path)
    assert [page.precision for page in studies.pages] == ["bfloat16", "float32"]
    paths = [plot.path for plot in studies.plots()]
    assert len(paths) == len(set(paths)) == 4 and "plots/interventions-float32-merges.svg" in paths
    html = _render(*studies.pages)
    assert '<h2 id="interventions">The recipe in bfloat16</h2>' in html
    assert '<h2 id="interventions-float32">The recipe in float32</h2>' in html
    assert html.count('<table id="board-interventions') == 2
    assert html.count('<tr><td class="sb-sticky">') == 2 * len(studies.pages[0].rows())
    # No Gemma here: neither ran its ablation; only the float32 file lacks the merges.
    assert "interventions_pair.run --precision float32 --steps ablation_gemma merges</code>" in html
    assert "interventions_pair.run --steps ablation_gemma</code>" in html


def test_the_ablations_interaction_is_the_joint_change_minus_the_singles_sum_per_prompt() -> None:
    from experiments.interventions_pair.study_schema import interaction

    data = read_study(RESULTS / INTERVENTIONS_FILE, INTERVENTIONS_FILE)
    ablation = next(a for a in data.ablations if a.backbone == "gemma")  # SmolLM2 has one norm kind: no joint
    found = interaction(ablation)
    base = ablation.base.text.nll_continue
    arms = {arm.name: arm.measured.text.nll_continue for arm in ablation.settings}
    expected = [
        arms["joint"][i] - base[i] - sum(arms[name][i] - base[i] for name in arms if name != "joint")
        for i in range(len(base))
    ]
    assert found.difference == pytest.approx(sum(expected) / len(expected)) and found.prompts == len(base)
    assert found.ci[0] < found.difference < found.ci[1]
    joint = next(arm for arm in ablation.settings if arm.name == "joint")
    additive = [
        base[i] + sum(arms[name][i] - base[i] for name in arms if name != "joint") for i in range(len(base))
    ]
    exactly_additive = joint.model_copy(
        update={
            "measured": joint.measured.model_copy(
                update={"text": joint.measured.text.model_copy(update={"nll_continue": additive})}
            )
        }
    )
    settings = [exactly_additive if arm.name == "joint" else arm for arm in ablation.settings]
    none = interaction(ablation.model_copy(update={"settings": settings}))
    assert none.difference == pytest.approx(0, abs=1e-9) and none.ci[1] - none.ci[0] < 1e-9
    assert interaction(ablation.model_copy(update={"settings": settings[:-1]})) is None  # no joint setting


def test_a_merge_row_says_it_extrapolates_and_names_its_mask_seed() -> None:
    data = read_study(RESULTS / FLOAT32_FILE, FLOAT32_FILE)
    page = InterventionsPage(FLOAT32_FILE, data)
    notes = {row["label"].split(",")[0]: row["note"] for row in page.rows() if row["group"] == "merge"}
    assert notes["STAR"].startswith("extrapolates: 2.29× the VLM-LM's distance from the reference")
    assert "mask seed not recorded in this file" in notes["DARE"]
    assert notes["Uniform averaging (model soup)"] == ""  # between the two: nothing to say
    dare = next(arm for arm in data.merges if arm.name == "dare")
    seeded = dare.model_copy(update={"details": {**dare.details, "seed": 7}})
    merges = [seeded if arm.name == "dare" else arm for arm in data.merges]
    page = InterventionsPage(FLOAT32_FILE, data.model_copy(update={"merges": merges}))
    (note,) = [row["note"] for row in page.rows() if row["label"].startswith("DARE")]
    assert note.endswith("; mask seed 7")
