"""The Training dynamics page: the committed sink-drift results, read, checked and shown as measured."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

from sinkbench.cli import main
from sinkbench.leaderboard.project import build_site
from sinkbench.leaderboard.sources import SourceInvalid
from sinkbench.leaderboard.training import SINK_DRIFT_FILE, find_sink_drift, read_sink_drift

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results"
FIXTURES = Path(__file__).parent / "fixtures" / "submissions"


def _experiment(steps: tuple[int, ...] = (0, 5, 10)) -> dict:
    """A small sink-drift file: two seeds, three arms, S falling in the unprotected arm only."""

    def arm(name: str, seed: int, end: float, passed: int) -> dict:
        trajectory = [{"step": step, "sink_strength": 1.5 + (end - 1.5) * step / steps[-1]} for step in steps]
        return {
            "arm": name,
            "frozen_weights": {"none": 0, "sink": 1000, "random": 1200}[name],
            "trajectory": trajectory,
            "ifeval": {"prompt_strict_passed": passed, "prompts": 8},
            "train_seconds": 60.0,
            "eval_seconds": 30.0,
        }

    ends = {"none": (-0.5, 0.5), "sink": (1.4, 1.2), "random": (0.9, 1.1)}
    return {
        "created": "2026-12-01T00:00:00+00:00",
        "command": "SINKBENCH_DATA_DIR=DIR python benchmarks/sink_drift.py --steps 10",
        "coverage": "IFEval: first 8 of 541 prompts",
        "model": {"id": "tiny-model"},
        "settings": {"steps": 10, "lr": 0.001, "batch_size": 2, "every": 5},
        "base_ifeval": {"prompt_strict_passed": 2, "prompts": 8},
        "setup_seconds": 120.0,
        "runs": [
            {
                "seed": seed,
                "arms": [arm(name, seed, ends[name][seed], 2 + seed) for name in ("none", "sink", "random")],
            }
            for seed in (0, 1)
        ],
    }


def test_the_committed_results_agree_with_their_own_summary() -> None:
    """The page recomputes each arm from the runs; the benchmark wrote its own summary: the two must agree."""
    if not (RESULTS / SINK_DRIFT_FILE).is_file():
        pytest.skip("benchmarks/results/sink_drift.json is not in this checkout")
    run = find_sink_drift(RESULTS)
    summary = json.loads((RESULTS / SINK_DRIFT_FILE).read_text(encoding="utf-8"))["summary"]
    assert [row.arm for row in run.rows] == ["none", "sink", "random"]
    for row in run.rows:
        expected = summary[row.arm]
        assert row.s_end == pytest.approx(expected["s_end"]) and row.s_start == pytest.approx(
            expected["s_start"]
        )
        assert list(row.passed) == expected["ifeval_prompt_strict_passed"]
        assert row.s_end_mean == pytest.approx(expected["s_end_mean"])


def test_findings_are_computed_from_the_runs(tmp_path: Path) -> None:
    (tmp_path / SINK_DRIFT_FILE).write_text(json.dumps(_experiment()), encoding="utf-8")
    run = read_sink_drift(tmp_path / SINK_DRIFT_FILE, "x.json")
    assert (run.runs, run.fell_below_zero) == (6, 1)
    assert run.arm("none").s_end_mean == pytest.approx(0.0) and run.arm("sink").s_end_mean == pytest.approx(
        1.3
    )
    assert run.largest_mean_gap == pytest.approx(1.3) and run.largest_seed_spread == pytest.approx(1.0)
    assert run.ifeval_gap == 1  # 2 (untrained), 2 and 3 (seeds)
    assert run.recorded_seconds == pytest.approx(120 + 6 * 90)
    svg = run.chart.svg()
    assert (
        svg.count("(mean of 2)") == 3
        and "no protection: mean S +0.00 at step 10 over 2 seeds" in run.chart.alt
    )


@pytest.mark.parametrize(
    ("mutate", "field"),
    [
        (lambda data: data.pop("runs"), "runs"),
        (lambda data: data["runs"][1]["arms"][0]["trajectory"].clear(), "runs.1.arms.0.trajectory"),
        (
            lambda data: data["runs"][0]["arms"][2]["ifeval"].update(prompts="many"),
            "runs.0.arms.2.ifeval.prompts",
        ),
    ],
)
def test_a_malformed_file_is_one_line_naming_file_and_field(tmp_path: Path, mutate, field: str) -> None:
    data = _experiment()
    mutate(data)
    (tmp_path / SINK_DRIFT_FILE).write_text(json.dumps(data), encoding="utf-8")
    with pytest.raises(SourceInvalid) as raised:
        read_sink_drift(tmp_path / SINK_DRIFT_FILE, "results/sink_drift.json")
    message = str(raised.value)
    assert message.startswith(f"results/sink_drift.json: {field}: ") and "Fix: rerun" in message
    assert "\n" not in message


def test_site_build_refuses_a_broken_results_file_and_keeps_the_old_site(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    experiments = tmp_path / "results"
    experiments.mkdir()
    (experiments / SINK_DRIFT_FILE).write_text(json.dumps(_experiment()), encoding="utf-8")
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
    page = (out / "training.html").read_text(encoding="utf-8")
    assert "measured" in page and "tiny-model" in page and "+0.00" in page and "2 / 3" in page
    assert "S fell below zero at some measured step in 1 of 6 runs" in re.sub(r"\s+", " ", page)
    assert (out / "plots" / "training-sink-drift.svg").is_file()
    before = page
    (experiments / SINK_DRIFT_FILE).write_text("{not json", encoding="utf-8")
    capsys.readouterr()
    assert main(argv) == 1
    printed = capsys.readouterr()
    assert "Traceback" not in printed.err + printed.out
    assert f"sinkbench site build: {experiments / SINK_DRIFT_FILE}: <file>: is not UTF-8 JSON" in printed.err
    assert (out / "training.html").read_text(encoding="utf-8") == before


def test_without_results_the_page_says_so(tmp_path: Path) -> None:
    build_site(FIXTURES, tmp_path / "site", experiments_dir=tmp_path / "nothing-here")
    page = re.sub(r"\s+", " ", (tmp_path / "site" / "training.html").read_text(encoding="utf-8"))
    assert "This build found no <code>sink_drift.json</code>" in page
    assert "board-training" not in page


def test_the_benchmark_plot_is_the_site_chart(tmp_path: Path) -> None:
    """One drawing of the trajectories: the committed SVG is what the site's chart draws from the JSON."""
    if not (RESULTS / SINK_DRIFT_FILE).is_file():
        pytest.skip("benchmarks/results/sink_drift.json is not in this checkout")
    shutil.copy(RESULTS / SINK_DRIFT_FILE, tmp_path / SINK_DRIFT_FILE)
    drawn = find_sink_drift(tmp_path).chart.svg()
    assert (RESULTS / "sink_drift.svg").read_text(encoding="utf-8") == drawn
