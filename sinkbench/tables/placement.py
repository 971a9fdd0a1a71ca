"""Where a newly screened model lands among the leaderboard's backbones: its rank by S, the delta each task's fit
predicts for it with its prediction intervals and how often they held the board's own pairs, and whether that
prediction extrapolates (and why).

Against a submissions folder, or a snapshot of the seeded tables shipped in the package (the paper's reported
entries, arXiv 2609.00746), so that ``sinkbench screen`` can place a model anywhere; :func:`write_snapshot` remakes
the snapshot, and a test keeps it equal to the repository's seeded entries.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

import pandas as pd

from sinkbench.numbers import finite_or_none
from sinkbench.submissions import Entry, load_valid_entries
from sinkbench.submissions.catalogue import TASKS
from sinkbench.submissions.facts import sinkbench_protocol
from sinkbench.tables.pairs import loo_coverages, pairs_table, task_coverage, usable_pairs
from sinkbench.tables.screening import TaskFit, screening_table

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
            screening_table(entries, pairs, loo_coverages(pairs))
            .drop_duplicates("model_id")[_LLM_COLUMNS]
            .reset_index(drop=True)
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
    fitted = TaskFit.of(usable, task_coverage(usable))
    if fitted is None:
        return None
    columns = fitted.predict([s])
    reasons = fitted.domain.reasons(s, size, protocol)
    return {
        "task": task,
        "predicted_delta": float(columns["predicted_delta"][0]),
        "interval": [float(columns["interval_low"][0]), float(columns["interval_high"][0])],
        "interval_kind": columns["interval_kind"],
        "interval_level": columns["interval_level"],
        "interval_guarantee": finite_or_none(columns["interval_guarantee"]),
        "t_interval_95": [float(columns["t_interval_low"][0]), float(columns["t_interval_high"][0])],
        "held_out": {
            "level": finite_or_none(columns["interval_loo_level"]),
            "covered": columns["interval_loo_covered"],
            "checked": columns["interval_loo_checked"],
        },
        "n_pairs": fitted.fit.n,
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


def _interval_note(item: dict[str, Any]) -> str:
    """``jackknife+ 94.4%, guaranteed >= 88.9%`` (the guarantee left out where the method has none)."""
    note = f"{item['interval_kind']} {100 * item['interval_level']:.1f}%"
    guarantee = item["interval_guarantee"]
    return note if guarantee is None else f"{note}, guaranteed >= {100 * guarantee:.1f}%"


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
        low, high = item["interval"]
        held = item["held_out"]
        label = TASKS[item["task"]].label
        flag = f"  extrapolated: {'; '.join(item['reasons'])}" if item["extrapolated"] else ""
        lines.append(
            f"  {label:<11} predicted delta {item['predicted_delta']:+6.1f} [{low:+.1f}, {high:+.1f}] points "
            f"({item['n_pairs']} pairs; {_interval_note(item)}; {held['covered']} of {held['checked']} held-out "
            f"pairs inside){flag}"
        )
    if placement["predictions"]:
        lines.append("  (the 95% t interval, which assumes normal errors, is in the JSON report's placement)")
    return "\n".join(lines)
