"""The Training dynamics page: the measured sink-drift experiment (``benchmarks/sink_drift.py``), read from the
results file it commits and shown as a chart of S against step, a table per arm, and the command that made it.

The file is read through a schema of the fields the page shows (others are ignored); a file that does not fit
is one :class:`~sinkbench.leaderboard.sources.SourceInvalid` line naming the file, the field and the fix.
"""

from __future__ import annotations

import json
import statistics
from dataclasses import dataclass
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from sinkbench.leaderboard.content import PlotRef
from sinkbench.leaderboard.plots import TrajectoryChart
from sinkbench.leaderboard.sources import SourceInvalid

#: The results file of ``benchmarks/sink_drift.py``.
SINK_DRIFT_FILE = "sink_drift.json"
#: The experiment's arms, in the order they run, with what each does.
ARM_LABELS = {
    "none": "no protection",
    "sink": "freeze the top-10% sink heads",
    "random": "freeze as many random heads",
}
_FIX = "rerun `SINKBENCH_DATA_DIR=DIR python benchmarks/sink_drift.py` to rewrite it"


class _Record(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True)


class _Point(_Record):
    step: int = Field(ge=0)
    sink_strength: float


class _Ifeval(_Record):
    prompt_strict_passed: int = Field(ge=0)
    prompts: int = Field(ge=1)


class _Arm(_Record):
    arm: str
    frozen_weights: int = Field(ge=0)
    trajectory: list[_Point] = Field(min_length=1)
    ifeval: _Ifeval
    train_seconds: float = Field(ge=0)
    eval_seconds: float = Field(ge=0)


class _Run(_Record):
    seed: int
    arms: list[_Arm]


class _Model(_Record):
    id: str


class _SinkDrift(_Record):
    created: str
    command: str
    coverage: str
    model: _Model
    settings: dict[str, float | int | str]
    base_ifeval: _Ifeval
    setup_seconds: float = Field(ge=0)
    runs: list[_Run] = Field(min_length=1)


@dataclass(frozen=True)
class ArmRow:
    """One arm over every seed: S at the start and the end of training, and the final IFEval score."""

    arm: str
    label: str
    seeds: tuple[int, ...]
    s_start: float
    s_end: tuple[float, ...]
    passed: tuple[int, ...]
    frozen_weights: tuple[int, ...]
    fell_below_zero: int  # runs in which S was negative at some measured step

    @property
    def s_end_mean(self) -> float:
        """Mean of S at the last step over seeds."""
        return statistics.fmean(self.s_end)

    @property
    def s_end_spread(self) -> float:
        """Range of S at the last step over seeds."""
        return max(self.s_end) - min(self.s_end)


@dataclass(frozen=True)
class TrainingDynamics:
    """What the Training dynamics page shows of one sink-drift results file."""

    source: str
    created: str
    command: str
    coverage: str
    model_id: str
    settings: dict[str, float | int | str]
    base_passed: int
    prompts: int
    rows: tuple[ArmRow, ...]
    recorded_seconds: float
    chart: TrajectoryChart

    def arm(self, name: str) -> ArmRow | None:
        """The row of arm ``name``, if the file has it."""
        return next((row for row in self.rows if row.arm == name), None)

    @property
    def runs(self) -> int:
        """Training runs in the file (arms × seeds)."""
        return sum(len(row.seeds) for row in self.rows)

    @property
    def fell_below_zero(self) -> int:
        """Runs in which S was negative at some measured step."""
        return sum(row.fell_below_zero for row in self.rows)

    @property
    def largest_mean_gap(self) -> float:
        """The largest difference between two arms' mean S at the last step."""
        means = [row.s_end_mean for row in self.rows]
        return max(means) - min(means)

    @property
    def largest_seed_spread(self) -> float:
        """The largest range of S at the last step over one arm's seeds."""
        return max(row.s_end_spread for row in self.rows)

    @property
    def ifeval_gap(self) -> int:
        """The largest difference in IFEval prompts passed between any two runs, the untrained model included."""
        passed = [self.base_passed, *(count for row in self.rows for count in row.passed)]
        return max(passed) - min(passed)


def read_sink_drift(path: Path, shown: str) -> TrainingDynamics:
    """Read a ``sink_drift.json`` (``shown`` is how messages name it).

    Raises:
        SourceInvalid: the file is not JSON or lacks a field the page shows.
    """
    try:
        data = _SinkDrift.model_validate(json.loads(path.read_text(encoding="utf-8")))
    except (UnicodeDecodeError, json.JSONDecodeError) as error:
        raise SourceInvalid(f"{shown}: <file>: is not UTF-8 JSON ({error}). Fix: {_FIX}") from None
    except ValidationError as error:
        first = error.errors()[0]
        field = ".".join(str(part) for part in first["loc"]) or "<file>"
        raise SourceInvalid(f"{shown}: {field}: {first['msg']}. Fix: {_FIX}") from None
    arms: dict[str, list[tuple[int, _Arm]]] = {}
    for run in data.runs:
        for arm in run.arms:
            arms.setdefault(arm.arm, []).append((run.seed, arm))
    rows = tuple(_row(name, runs) for name, runs in arms.items())
    recorded = data.setup_seconds + sum(
        arm.train_seconds + arm.eval_seconds for run in data.runs for arm in run.arms
    )
    return TrainingDynamics(
        source=shown,
        created=data.created,
        command=data.command.strip(),
        coverage=data.coverage,
        model_id=data.model.id,
        settings=data.settings,
        base_passed=data.base_ifeval.prompt_strict_passed,
        prompts=data.base_ifeval.prompts,
        rows=rows,
        recorded_seconds=recorded,
        chart=TrajectoryChart(
            tuple(
                (
                    row.label,
                    tuple(
                        tuple((p.step, p.sink_strength) for p in arm.trajectory) for _, arm in arms[row.arm]
                    ),
                )
                for row in rows
            ),
            model_label=data.model.id,
        ),
    )


def _row(name: str, runs: list[tuple[int, _Arm]]) -> ArmRow:
    return ArmRow(
        arm=name,
        label=ARM_LABELS.get(name, name),
        seeds=tuple(seed for seed, _ in runs),
        s_start=runs[0][1].trajectory[0].sink_strength,
        s_end=tuple(arm.trajectory[-1].sink_strength for _, arm in runs),
        passed=tuple(arm.ifeval.prompt_strict_passed for _, arm in runs),
        frozen_weights=tuple(arm.frozen_weights for _, arm in runs),
        fell_below_zero=sum(any(p.sink_strength < 0 for p in arm.trajectory) for _, arm in runs),
    )


def find_sink_drift(folder: Path | None) -> TrainingDynamics | None:
    """The experiment in ``folder`` (None or a folder without the file: None, and the page says so)."""
    if folder is None or not (folder / SINK_DRIFT_FILE).is_file():
        return None
    return read_sink_drift(folder / SINK_DRIFT_FILE, (folder / SINK_DRIFT_FILE).as_posix())


@dataclass(frozen=True)
class TrainingPage:
    """The Training dynamics page: where it looked for results, and what it found there (or None)."""

    folder: Path | None
    run: TrainingDynamics | None

    #: Where the page's chart goes, site-relative.
    PLOT_PATH = "plots/training-sink-drift.svg"

    def plots(self) -> list[PlotRef]:
        """The page's chart, when there are results."""
        return [PlotRef(self.PLOT_PATH, self.run.chart)] if self.run else []

    def context(self) -> dict[str, object]:
        """What ``training.md.j2`` is given."""
        return {
            "run": self.run,
            "plot": self.plots()[0] if self.run else None,
            "results_file": SINK_DRIFT_FILE,
            "experiments_dir": self.folder.as_posix() if self.folder else "(none given)",
        }
