"""``sinkbench screen`` as one library call: probe a model (:mod:`sinkbench.sink.probe_model`), then place it
among the leaderboard's backbones (:mod:`sinkbench.tables.placement`), two layers that know nothing of each other.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from sinkbench.safe_io import write_json_atomic
from sinkbench.sink.probe_model import probe_model
from sinkbench.tables.placement import PlacementData, format_placement, place


def screen(
    model_spec: str | None,
    *,
    place_among: bool = True,
    against: Path | None = None,
    output: Path | None = None,
    **probe_options: Any,
) -> tuple[dict[str, Any], str]:
    """Measure S of ``model_spec`` and, with ``place_among``, place the model among the backbones of ``against``
    (a submissions folder; None: the packaged snapshot of the seeded tables).

    Args:
        model_spec: hub id, local dir, ``.gguf`` file or embedded name (None: the embedded default).
        place_among: add the placement (rank by S, predicted deltas) to the report.
        against: the submissions folder to place the model in; None for the packaged snapshot.
        output: also write the report here as JSON (atomically).
        probe_options: the keyword arguments of :func:`sinkbench.sink.probe_model.probe_model`.

    Returns:
        The report (with ``placement`` when placed) and its printable text.
    """
    data = None
    if place_among:  # read (and validate) the board first: a refusal should not wait for a probe
        data = PlacementData.packaged() if against is None else PlacementData.from_submissions(Path(against))
    report, text = probe_model(model_spec, output=None, **probe_options)
    if data is not None:
        report["placement"] = place(report, data)
        text = f"{text}\n{format_placement(report['placement'])}"
    if output is not None:
        write_json_atomic(report, output)
    return report, text
