"""Where a newly screened model lands among the leaderboard's backbones: its rank by S, the delta each task's fit
predicts for it with the prediction interval, and whether that prediction extrapolates (and why).

It is read from a submissions folder (validated, then the pairs and screening tables built as for the board), or
from a snapshot of the seeded tables shipped in the package (the paper's reported entries, arXiv 2609.00746),
so ``sinkbench screen`` can place a model anywhere. :func:`write_snapshot` remakes the snapshot; a test keeps it
equal to the seeded entries of the repository.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

import pandas as pd

from sinkbench.submissions import Entry, load_valid_entries
from sinkbench.submissions.catalogue import TASKS
from sinkbench.submissions.facts import sinkbench_protocol
from sinkbench.tables import stats
from sinkbench.tables.pairs import pairs_table, usable_pairs
from sinkbench.tables.screening import FitDomain, screening_table

#: The packaged snapshot of the seeded tables (inside this package).
SNAPSHOT = "seeded_placement.json"
_PAIR_COLUMNS = ["task", "sink_strength", "delta", "reference_params_b", "s_protocol"]
_LLM_COLUMNS = ["model_id", "sink_strength", "params_b"]


@dataclass(frozen=True)
class PlacementData:
    """What a placement needs: the pairs behind each task's fit, and the backbones to rank against."""

    source: str
    pairs: pd.DataFrame
    llms: pd.DataFrame

    @classmethod
    def from_entries(cls, entries: tuple[Entry, ...], source: str) -> PlacementData:
        """The pairs (testbed pairs left out, as from every fit) and ranked backbones of validated entries."""
        pairs = pairs_table(entries)
        llms = (
            screening_table(entries, pairs).drop_duplicates("model_id")[_LLM_COLUMNS].reset_index(drop=True)
        )
        return cls(
            source, pairs.loc[~pairs["testbed"].astype(bool), _PAIR_COLUMNS].reset_index(drop=True), llms
        )

    @classmethod
    def from_submissions(cls, root: Path) -> PlacementData:
        """Validate and read a submissions folder (raises ``SubmissionsInvalid`` on any problem)."""
        entries = load_valid_entries(root)
        return cls.from_entries(entries, f"{root} ({len(entries)} entries)")

    @classmethod
    def packaged(cls) -> PlacementData:
        """The snapshot of the seeded tables shipped in the package."""
        data = json.loads(resources.files("sinkbench.tables").joinpath(SNAPSHOT).read_text("utf-8"))
        return cls(
            data["source"], pd.DataFrame(data["pairs"], columns=_PAIR_COLUMNS), pd.DataFrame(data["llms"])
        )

    def to_json(self) -> str:
        """The snapshot file's text."""
        records = {
            "source": self.source,
            "pairs": json.loads(self.pairs.to_json(orient="records")),
            "llms": json.loads(self.llms.to_json(orient="records")),
        }
        return json.dumps(records, indent=1) + "\n"


def write_snapshot(root: Path, citation_contains: str = "arXiv 2609.00746") -> str:
    """The snapshot text of the seeded entries of ``root``: the reported entries citing the paper."""
    seeded = tuple(
        entry
        for entry in load_valid_entries(root)
        if entry.provenance == "reported"
        and entry.metadata.citation
        and citation_contains in entry.metadata.citation.source
    )
    return PlacementData.from_entries(
        seeded, f"the seeded entries of sinkbench ({citation_contains})"
    ).to_json()


def _prediction(
    data: PlacementData, task: str, s: float, size: float | None, protocol: str
) -> dict[str, Any] | None:
    usable = usable_pairs(data.pairs, task)
    fit = stats.fit_line(usable["sink_strength"], usable["delta"])
    if fit is None or fit.n < stats.MIN_PAIRS:
        return None
    low, high = fit.prediction_interval([s])
    reasons = FitDomain.of(usable).reasons(s, size, protocol)
    return {
        "task": task,
        "predicted_delta": float(fit.predict([s])[0]),
        "interval_95": [float(low[0]), float(high[0])],
        "n_pairs": fit.n,
        "extrapolated": bool(reasons),
        "reasons": reasons,
    }


def place(report: dict[str, Any], data: PlacementData) -> dict[str, Any]:
    """The placement of a ``sinkbench screen`` report among ``data``'s backbones (the report's ``placement``).

    A backbone already on the board under the report's model id (or, for an embedded model, the hub checkpoint
    it was quantised from) is left out of the ranking, so a model is never ranked against itself.
    """
    s = float(report["sink_strength"])
    model = report.get("model", {})
    size = model.get("num_parameters", 0) / 1e9 or None
    protocol = sinkbench_protocol(
        report.get("calibration"), model.get("dtype"), model.get("weights", "")
    ).label
    itself = {model.get("id"), model.get("upstream")} - {None}
    on_board = data.llms["model_id"].isin(itself)
    others = data.llms[~on_board]
    higher = int((others["sink_strength"] > s).sum())
    predictions = [
        found for task in TASKS if (found := _prediction(data, task, s, size, protocol)) is not None
    ]
    return {
        "against": data.source,
        "rank": higher + 1,
        "of": len(others) + 1,
        "on_board_as": sorted(data.llms.loc[on_board, "model_id"]),
        "s_protocol": protocol,
        "params_b": size,
        "predictions": predictions,
    }


def format_placement(placement: dict[str, Any]) -> str:
    """The placement as a few lines of text for the terminal."""
    lines = [
        f"Where it lands, against {placement['against']}:",
        f"  rank {placement['rank']} of {placement['of']} backbones by S",
    ]
    if placement["on_board_as"]:
        lines[-1] += (
            f" (already on the board as {', '.join(placement['on_board_as'])}; ranked without that row)"
        )
    for item in placement["predictions"]:
        low, high = item["interval_95"]
        label = TASKS[item["task"]].label
        flag = f"  extrapolated: {'; '.join(item['reasons'])}" if item["extrapolated"] else ""
        lines.append(
            f"  {label:<11} predicted delta {item['predicted_delta']:+6.1f} [{low:+.1f}, {high:+.1f}] points "
            f"({item['n_pairs']} pairs){flag}"
        )
    return "\n".join(lines)


def screen_with_placement(
    model_spec: str | None, *, against: Path | None, output: Path | None = None, **screen_options: Any
) -> tuple[dict[str, Any], str]:
    """``sinkbench screen``: measure S (:func:`sinkbench.sink.screen.screen`), then place the model among the
    backbones of ``against`` (a submissions folder; None: the packaged snapshot of the seeded tables).

    Returns:
        The report (with ``placement``) and its printable text; the report is also written to ``output``.
    """
    from sinkbench.safe_io import write_json_atomic
    from sinkbench.sink.screen import screen

    report, text = screen(model_spec, output=None, **screen_options)
    data = PlacementData.packaged() if against is None else PlacementData.from_submissions(Path(against))
    report["placement"] = place(report, data)
    if output is not None:
        write_json_atomic(report, output)
    return report, f"{text}\n{format_placement(report['placement'])}"
