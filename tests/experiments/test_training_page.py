"""The Training dynamics page: the VL testbed's results, read, checked and shown as measured."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

from experiments.page_fragment import SourceInvalid, committed_fragment, write_fragment
from experiments.vl_testbed import analysis, page
from experiments.vl_testbed.page import HERE, PLOT_PATHS, RESULTS, TESTBED_FILE, page_files, read_testbed
from experiments.vl_testbed.schema import Results, RunKey
from sinkbench.cli import main
from sinkbench.leaderboard.project import build_site

FIXTURES = Path(__file__).parents[1] / "fixtures" / "submissions"
COMMITTED = RESULTS / TESTBED_FILE


def _committed() -> dict:
    return json.loads(COMMITTED.read_text(encoding="utf-8"))


@pytest.mark.slow  # recomputes the whole committed analysis
def test_the_committed_analysis_is_recomputed_from_its_runs() -> None:
    """The benchmark wrote its own analysis; recomputing it from the per-run records must give the same numbers."""
    results = Results.model_validate(_committed())
    assert analysis.summarize(results) == results.analysis


def test_the_committed_runs_are_matched_and_the_compared_arms_have_six_seeds() -> None:
    """Every run on file is one of the plan's, once; the compared arms share at least six seeds, on which the sink
    and random arms froze equally many weights; every extraction passed and every frozen row stayed put."""
    results = Results.model_validate(_committed())
    config = results.config
    on_file = [run.key for run in results.runs]
    assert len(set(on_file)) == len(on_file) and set(on_file) <= set(config.runs())
    groups = results.analysis.groups
    compared = [f"vl/{config.compare_dose}/{arm}" for arm in ("none", "frozen_lm", "sink", "random")]
    seeds = groups[compared[0]].seeds
    assert len(seeds) >= 6 and all(groups[name].seeds == seeds for name in compared)
    assert {record.seed for record in results.seeds} >= {run.seed for run in on_file}
    for seed in seeds:
        sink = results.run(RunKey(data="vl", dose=config.compare_dose, arm="sink", seed=seed))
        random = results.run(RunKey(data="vl", dose=config.compare_dose, arm="random", seed=seed))
        assert sink.frozen.weights == random.frozen.weights > 0
    for run in results.runs:
        assert run.extraction.passed and run.frozen.rows_unchanged
        assert run.text.ifeval.prompts == len(results.ifeval_subset.indices) >= 128


def test_the_committed_page_is_what_the_committed_results_render() -> None:
    """The page the site publishes (``page/``: the Markdown and every chart) is, file for file, what
    ``python -m experiments.vl_testbed.page`` renders from the committed results: it cannot rot."""
    rendered = page_files()
    assert set(rendered) == {"training.md", *PLOT_PATHS.values()}
    committed = committed_fragment(HERE)
    assert set(committed) == set(rendered)
    for path, text in rendered.items():
        assert committed[path] == text, f"{path} is stale; rerun `python -m experiments.vl_testbed.page`"


def _render(folder: Path) -> str:
    return page_files(folder / TESTBED_FILE)["training.md"]


@pytest.fixture
def tiny_results(testbed_run, tmp_path: Path) -> Path:
    """A folder holding the tiny testbed's results file."""
    folder = tmp_path / "tiny"
    folder.mkdir()
    shutil.copy(testbed_run[0], folder / TESTBED_FILE)
    return folder


@pytest.mark.slow  # the whole tiny VL testbed, trained twice (the tiny_results fixture)
def test_the_wall_times_give_the_measured_load_and_the_note(tiny_results: Path) -> None:
    data = json.loads((tiny_results / TESTBED_FILE).read_text())
    data["machine"]["note"] = "nothing else ran"
    data["machine"]["resumed_at_load"] = []
    (tiny_results / TESTBED_FILE).write_text(json.dumps(data), encoding="utf-8")
    page = re.sub(r"\s+", " ", _render(tiny_results))
    assert (
        "On 2 CPUs with 1 torch thread (cpu); the load average (1, 5, 15 min) at the start was 0.5, 0.4, 0.3; the "
        'person running it noted: "nothing else ran".' in page
    )
    data["machine"]["resumed_at_load"] = [[1.5, 1.25, 1.0], [2.0, 1.75, 1.5]]
    (tiny_results / TESTBED_FILE).write_text(json.dumps(data), encoding="utf-8")
    page = re.sub(r"\s+", " ", _render(tiny_results))
    assert (
        "at the start was 0.5, 0.4, 0.3 (the run was resumed 2 times, at load averages 1.5, 1.25, 1.0; 2.0, 1.75, "
        '1.5); the person running it noted: "nothing else ran".' in page
    )


@pytest.mark.slow  # the whole tiny VL testbed, trained twice (the tiny_results fixture)
def test_groups_with_fewer_seeds_are_named_with_their_counts(tiny_results: Path) -> None:
    """A results file whose text-only control lacks a seed says so per group, and the floor of the sign-flip test
    is the compared arms'."""
    results = Results.model_validate(json.loads((tiny_results / TESTBED_FILE).read_text()))
    runs = [run for run in results.runs if not (run.key.data == "text" and run.key.seed == 1)]
    cut = results.model_copy(update={"runs": runs})
    cut = cut.model_copy(update={"analysis": analysis.summarize(cut)})
    (tiny_results / TESTBED_FILE).write_text(cut.model_dump_json(by_alias=True), encoding="utf-8")
    page = re.sub(r"\s+", " ", _render(tiny_results))
    assert "Seeds per run group: no protection 2; " in page
    assert (
        "; text-only training, no protection 1" in page
        and "(of the 2 planned; the others were not run);" in page
    )
    assert "(0.5000 with the compared arms' 2: every difference of one sign)" in page
    assert "2 seeds; within a seed" not in page


@pytest.mark.slow  # the whole tiny VL testbed, trained twice (the testbed_run fixture)
def test_a_rerun_records_the_load_it_resumed_at(testbed_run) -> None:
    """The fixture's second run resumed the first: its load average is on file, the first one's is kept."""
    machine = json.loads(testbed_run[0].read_text(encoding="utf-8"))["machine"]
    assert machine["load_average_at_start"] == [0.5, 0.4, 0.3]
    assert len(machine["resumed_at_load"]) == 1 and len(machine["resumed_at_load"][0]) == 3


@pytest.mark.slow  # the whole tiny VL testbed, trained twice (the tiny_results fixture)
def test_each_chart_sits_under_its_own_caption(tiny_results: Path) -> None:
    """The image at each chart's path shows what its caption and alt text say."""
    figures = {
        path: (alt, caption)
        for path, alt, caption in re.findall(
            r'<img src="([^"]+)" alt="([^"]*)"[^>]*>\s*<figcaption>([^<]*)</figcaption>',
            _render(tiny_results),
        )
    }
    expected = {
        "primary": (
            "Dot-and-line chart of NLL of the base model&#39;s answers, stopping",
            "The primary outcome for",
        ),
        "non_trivial": (
            "Dot-and-line chart of IFEval prompt-level strict, prompts a trivial",
            "IFEval prompt-level",
        ),
        "damage": ("Dot-and-line chart of NLL", "The primary outcome without protection by training"),
        "lengths": ("Box plot of answer lengths", "Answer lengths: every answer"),
        "trace": ("Line chart of Sink Strength S", "Sink Strength S of the language model during stage 2"),
    }
    assert set(figures) == set(PLOT_PATHS.values())
    for key, (alt, caption) in expected.items():
        shown_alt, shown_caption = figures[PLOT_PATHS[key]]
        assert shown_alt.startswith(alt) and shown_caption.startswith(caption), key


def _drop(*keys: str | int):
    def mutate(data: dict) -> None:
        for key in keys[:-1]:
            data = data[key]
        del data[keys[-1]]

    return mutate


@pytest.mark.slow  # the whole tiny VL testbed, trained twice (the tiny_results fixture)
@pytest.mark.parametrize(
    ("mutate", "field"),
    [
        (_drop("config", "doses"), "config.doses: Field required"),
        (lambda d: d.__setitem__("config", {}), "config.stage1: Field required"),
        (_drop("machine", "torch_threads"), "machine.torch_threads: Field required"),
        (
            _drop("analysis", "groups", "vl/high/none", "seconds"),
            "analysis.groups.vl/high/none.seconds: Field",
        ),
        (_drop("runs", 0, "seconds", "total"), "runs.0.seconds.total: Field required"),
        (_drop("base", "sink", "secondary"), "base.sink.secondary: Field required"),
        (
            _drop("analysis", "comparisons", "protect_sink", "effects", "nll", "undetectable"),
            "analysis.comparisons.protect_sink.effects.nll.undetectable: Field required",
        ),
        (
            lambda d: d["runs"][0].__setitem__("surprise", 1),
            "runs.0.surprise: Extra inputs are not permitted",
        ),
        (lambda d: d["runs"][0].__setitem__("trace", []), "runs.0.trace: List should have at least 1 item"),
        (
            lambda d: d["config"].__setitem__("compare_dose", "max"),
            "config: Value error, compare_dose 'max' is not",
        ),
        (lambda d: d["base"]["sink"].__setitem__("sink_strength", float("nan")), "<file>: is not accepted"),
    ],
)
def test_a_hostile_results_file_is_one_line(tiny_results: Path, mutate, field: str) -> None:
    data = json.loads((tiny_results / TESTBED_FILE).read_text())
    mutate(data)
    (tiny_results / TESTBED_FILE).write_text(json.dumps(data), encoding="utf-8")
    with pytest.raises(SourceInvalid) as raised:
        _render(tiny_results)
    message = str(raised.value)
    assert message.startswith(f"{TESTBED_FILE}: {field}"), message
    assert "\n" not in message and message.endswith("to rewrite it")


@pytest.mark.slow  # the whole tiny VL testbed, trained twice (the tiny_results fixture)
def test_a_linked_or_oversized_results_file_is_refused(
    tiny_results: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    linked = tmp_path / "linked"
    linked.mkdir()
    (linked / TESTBED_FILE).symlink_to(tiny_results / TESTBED_FILE)
    with pytest.raises(SourceInvalid, match=r"<file>: is a symbolic link\. Fix: replace the link"):
        _render(linked)
    monkeypatch.setattr(page, "TESTBED_SIZE_LIMIT", 1000)
    with pytest.raises(
        SourceInvalid, match=r"<file>: is [0-9,]+ bytes; the cap for this kind of file is 1,000"
    ):
        _render(tiny_results)


@pytest.mark.slow  # the whole tiny VL testbed, trained twice (the tiny_results fixture)
def test_a_seed_without_a_run_of_an_arm_draws_the_others(tiny_results: Path) -> None:
    data = json.loads((tiny_results / TESTBED_FILE).read_text())
    data["runs"] = [r for r in data["runs"] if not (r["key"]["seed"] == 0 and r["key"]["arm"] == "sink")]
    (tiny_results / TESTBED_FILE).write_text(json.dumps(data), encoding="utf-8")
    run = read_testbed(tiny_results / TESTBED_FILE, TESTBED_FILE)
    assert "seed 0: no protection" in run.charts()["primary"].chart.alt
    assert "freeze the top sink heads missing" in run.charts()["primary"].chart.alt
    for plot in run.charts().values():
        assert plot.chart.svg().startswith("<svg"), plot.path


@pytest.mark.slow  # the whole tiny VL testbed, trained twice (the tiny_results fixture)
def test_site_build_publishes_the_rendered_page(tiny_results: Path, tmp_path: Path) -> None:
    """The page rendered into an experiment's ``page/`` folder is published as the site's Training dynamics page,
    with its charts, by a build given that experiments folder."""
    experiments = tmp_path / "experiments"
    write_fragment(experiments / "vl_testbed", page_files(tiny_results / TESTBED_FILE))
    out = tmp_path / "site"
    argv = [
        "site",
        "build",
        "--submissions",
        str(FIXTURES),
        "--experiments",
        str(experiments),
        "--out",
        str(out),
    ]
    assert main(argv) == 0
    shown = re.sub(r"\s+", " ", (out / "training.html").read_text(encoding="utf-8"))
    assert "Does freezing the sink heads protect? Not posed (the sink did not move) on the NLL" in shown
    assert "Did the sink move?</strong> No" in shown
    assert "board-training-paired" in shown and "tiny-llama" in shown
    assert "the load average (1, 5, 15 min) at the start was 0.5, 0.4, 0.3" in shown
    for path in PLOT_PATHS.values():
        assert (out / path).read_text(encoding="utf-8") == (
            experiments / "vl_testbed" / "page" / path
        ).read_text(encoding="utf-8"), path


@pytest.mark.slow  # the whole tiny VL testbed, trained twice (the tiny_results fixture)
def test_a_broken_results_file_is_one_line_and_renders_nothing(
    tiny_results: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tiny_results / TESTBED_FILE).write_text("{not json", encoding="utf-8")
    monkeypatch.setattr(page, "page_files", lambda: page_files(tiny_results / TESTBED_FILE))
    monkeypatch.setattr(page, "HERE", tiny_results)
    with pytest.raises(SystemExit) as raised:
        page.main([])
    assert str(raised.value).startswith(f"vl_testbed page: {TESTBED_FILE}: <file>: is not valid JSON")
    assert "\n" not in str(raised.value) and not (tiny_results / "page").exists()


def test_without_the_experiments_each_page_says_so(tmp_path: Path) -> None:
    build_site(FIXTURES, tmp_path / "site", experiments_dir=tmp_path / "nothing-here")
    for name in ("training", "interventions"):
        shown = re.sub(r"\s+", " ", (tmp_path / "site" / f"{name}.html").read_text(encoding="utf-8"))
        assert f"This build found no experiment page <code>{name}.md</code>" in shown, name
        assert "board-training" not in shown


def test_the_s_trace_chart_declares_every_seed_and_the_mean_of_their_common_steps() -> None:
    """Per arm, each seed a faint line (toggled with its arm), and the mean over the seeds' common steps."""
    from experiments.vl_testbed.charts import TrajectoryChart

    spec = TrajectoryChart((("arm", (((0, 1.0), (10, 2.0)), ((0, 3.0), (10, 4.0), (20, 5.0)))),), "M").spec()
    runs, mean = spec["layer"]
    assert [(r["run"], r["step"], r["S"]) for r in runs["data"]["values"]] == [
        ("arm (mean of 2), run 1", 0, 1.0),
        ("arm (mean of 2), run 1", 10, 2.0),
        ("arm (mean of 2), run 2", 0, 3.0),
        ("arm (mean of 2), run 2", 10, 4.0),
        ("arm (mean of 2), run 2", 20, 5.0),
    ]
    assert [(r["step"], r["S"]) for r in mean["data"]["values"]] == [(0, 2.0), (10, 3.0)]
    assert (
        mean["params"][0]["bind"] == "legend" and runs["encoding"]["opacity"]["condition"]["param"] == "shown"
    )
