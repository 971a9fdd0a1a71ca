"""The Training dynamics page: the VL testbed's results, read, checked and shown as measured."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

from sinkbench.cli import main
from sinkbench.leaderboard import training
from sinkbench.leaderboard.pages import PageRenderer, make_environment
from sinkbench.leaderboard.project import build_site
from sinkbench.leaderboard.sources import SiteSources, SourceInvalid
from sinkbench.leaderboard.training import PLOT_PATHS, TESTBED_FILE, TrainingPage, find_testbed
from sinkbench.testbed import analysis

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results"
FIXTURES = Path(__file__).parent / "fixtures" / "submissions"
COMMITTED = RESULTS / TESTBED_FILE


def _committed() -> dict:
    if not COMMITTED.is_file():
        pytest.skip("benchmarks/results/vl_testbed.json is not in this checkout")
    return json.loads(COMMITTED.read_text(encoding="utf-8"))


def test_the_committed_analysis_is_recomputed_from_its_runs() -> None:
    """The benchmark wrote its own analysis; recomputing it from the per-run records must give the same numbers."""
    data = _committed()
    assert analysis.summarize(data) == data["analysis"]


def test_the_committed_runs_are_complete_and_matched() -> None:
    data = _committed()
    seeds = data["config"]["seeds"]
    assert len(seeds) >= 6 and [record["seed"] for record in data["seeds"]] == seeds
    for record in data["seeds"]:
        arms = {arm["arm"]: arm for arm in record["arms"]}
        assert set(arms) == set(data["config"]["arms"])
        assert arms["sink"]["frozen"]["weights"] == arms["random"]["frozen"]["weights"] > 0
        assert all(arm["extraction"]["passed"] and arm["frozen"]["rows_unchanged"] for arm in arms.values())
        indices = data["ifeval_subset"]["indices"]
        assert all(arm["ifeval"]["prompts"] == len(indices) >= 128 for arm in arms.values())


def test_the_benchmark_charts_are_the_site_charts(tmp_path: Path) -> None:
    """One drawing of every chart: the committed SVGs are what the site draws from the committed JSON."""
    _committed()
    shutil.copy(COMMITTED, tmp_path / TESTBED_FILE)
    for plot in find_testbed(tmp_path).charts().values():
        name = Path(plot.path).name
        assert (RESULTS / name).read_text(encoding="utf-8") == plot.chart.svg(), name


def _render(folder: Path) -> str:
    sources = SiteSources()
    renderer = PageRenderer(make_environment(sources.templates), sources.docs)
    return renderer.render("training.md.j2", **TrainingPage(folder, find_testbed(folder)).context())


def test_the_wall_times_say_what_else_ran_on_the_machine_as_the_results_file_records_it() -> None:
    page = re.sub(r"\s+", " ", _render(RESULTS))
    assert (
        "on a 2-core CPU machine (torch threads: 1; load average at the start not recorded; the run's own note: "
        "“shared with other agents&#39; jobs during the run”):" in page
    )


def test_each_chart_sits_under_its_own_caption() -> None:
    """The image at each chart's path shows what its caption and alt text say (the strict and S charts were
    swapped)."""
    _committed()
    figures = {
        path: (alt, caption)
        for path, alt, caption in re.findall(
            r'<img src="([^"]+)" alt="([^"]*)"[^>]*>\s*<figcaption>([^<]*)</figcaption>', _render(RESULTS)
        )
    }
    expected = {
        "strict": (
            "Dot-and-line chart of IFEval prompt-level strict",
            "IFEval prompt-level strict accuracy of",
        ),
        "s_end": ("Dot-and-line chart of S of the VLM-LM", "S of every VLM-LM after stage 2"),
        "coupling": ("Scatter of change in IFEval prompt-level strict", "Per run: change in S"),
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


@pytest.mark.parametrize(
    ("mutate", "field"),
    [
        (_drop("config", "stage2"), "config.stage2: Field required"),
        (lambda d: d.__setitem__("config", {}), "config.vision: Field required"),
        (_drop("machine", "torch_threads"), "machine.torch_threads: Field required"),
        (_drop("analysis", "arms", "none", "seconds", "stage2"), "analysis.arms.none.seconds.stage2: Field"),
        (_drop("analysis", "stage1", "visual_accuracy"), "analysis.stage1.visual_accuracy: Field required"),
        (_drop("seeds", 0, "arms", 0, "seconds", "total"), "seeds.0.arms.0.seconds.total: Field required"),
        (_drop("base", "sink", "position0_mass"), "base.sink.position0_mass: Field required"),
        (
            _drop("analysis", "paired_vs_none", "sink", "prompt_strict", "undetectable"),
            "analysis.paired_vs_none.sink.prompt_strict.undetectable: Field required",
        ),
        (
            lambda d: d["analysis"]["arms"].__setitem__("extra", d["analysis"]["arms"]["none"]),
            "<file>: analysis.arms.extra: no seed in seeds has a run of this arm",
        ),
        (lambda d: d["seeds"][0].__setitem__("arms", []), "seeds.0.arms: List should have at least 1 item"),
        (lambda d: d["base"]["sink"].__setitem__("sink_strength", float("nan")), "<file>: is not accepted"),
    ],
)
def test_a_hostile_results_file_is_one_line(tmp_path: Path, mutate, field: str) -> None:
    data = _committed()
    mutate(data)
    (tmp_path / TESTBED_FILE).write_text(json.dumps(data), encoding="utf-8")
    with pytest.raises(SourceInvalid) as raised:
        _render(tmp_path)
    message = str(raised.value)
    assert message.startswith(f"{(tmp_path / TESTBED_FILE).as_posix()}: {field}"), message
    assert "\n" not in message and message.endswith("to rewrite it")


def test_a_linked_or_oversized_results_file_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _committed()
    (tmp_path / TESTBED_FILE).symlink_to(COMMITTED)
    with pytest.raises(SourceInvalid, match=r"<file>: is a symbolic link\. Fix: replace the link"):
        _render(tmp_path)
    monkeypatch.setattr(training, "TESTBED_SIZE_LIMIT", 1000)
    with pytest.raises(
        SourceInvalid, match=r"<file>: is [0-9,]+ bytes; the cap for this kind of file is 1,000"
    ):
        _render(RESULTS)


def test_a_seed_without_a_run_of_the_arms_shown_draws_the_others(tmp_path: Path) -> None:
    data = _committed()
    for run in data["seeds"][0]["arms"]:
        run["arm"] = f"other-{run['arm']}"
    (tmp_path / TESTBED_FILE).write_text(json.dumps(data), encoding="utf-8")
    run = find_testbed(tmp_path)
    assert "seed 0: no protection missing," in run.charts()["strict"].chart.alt
    for plot in run.charts().values():
        assert plot.chart.svg().startswith("<?xml"), plot.path


def test_site_build_shows_the_testbed_and_refuses_a_broken_file(
    testbed_run, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    experiments = tmp_path / "results"
    experiments.mkdir()
    shutil.copy(testbed_run[0], experiments / TESTBED_FILE)
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
    page = re.sub(r"\s+", " ", (out / "training.html").read_text(encoding="utf-8"))
    assert "This design cannot tell: over 2 seeds, freezing the sink heads changed" in page
    assert "board-training-paired" in page and "tiny-llama" in page
    assert (
        "2-core CPU machine (torch threads: 1; load average at the start 0.5, 0.4, 0.3 over 1, 5 and 15 minutes)"
        in page
    )
    for path in PLOT_PATHS.values():
        assert (out / path).is_file(), path
    before = (out / "training.html").read_text(encoding="utf-8")
    (experiments / TESTBED_FILE).write_text("{not json", encoding="utf-8")
    capsys.readouterr()
    assert main(argv) == 1
    printed = capsys.readouterr()
    assert "Traceback" not in printed.err + printed.out
    assert f"sinkbench site build: {experiments / TESTBED_FILE}: <file>: is not valid JSON" in printed.err
    assert (out / "training.html").read_text(encoding="utf-8") == before


def test_without_results_the_page_says_so(tmp_path: Path) -> None:
    build_site(FIXTURES, tmp_path / "site", experiments_dir=tmp_path / "nothing-here")
    page = re.sub(r"\s+", " ", (tmp_path / "site" / "training.html").read_text(encoding="utf-8"))
    assert "This build found no <code>vl_testbed.json</code>" in page
    assert "board-training" not in page
