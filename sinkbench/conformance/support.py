"""Whether sinkbench can re-measure a model of a given model type: ``screen`` for an LLM, ``extract-lm`` for a
VLM, read from the committed architecture table and the remote-code refusals (torch-free; the leaderboard's
entry pages use it)."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from typing import Any

from sinkbench.checkpoints import ORIGINAL_LLAVA, native_refusal
from sinkbench.conformance.verdicts import EQUAL, EQUAL_LOGITS_ONLY

#: The command each section of the table answers for, and what its sweep checked.
COMMANDS = {"probe": "screen", "extract": "extract-lm"}
CHECKED = {
    "probe": "the probe equals the eager route on it in the architecture sweep",
    "extract": "extracted and verified in the architecture sweep",
}


@dataclass(frozen=True)
class Support:
    """One model's answer: whether the command accepts it, and the sentence saying so or why not."""

    accepted: bool | None
    text: str


@cache
def _table() -> dict[str, Any]:
    from sinkbench.conformance.table import load

    return load()


def support(model_type: str | None, section: str, architecture: str | None = None) -> Support:
    """Whether ``COMMANDS[section]`` accepts a checkpoint of ``model_type`` (``section``: ``probe`` or
    ``extract``); None when the model type is not recorded."""
    command = COMMANDS[section]
    if not model_type:
        return Support(None, f"model type not recorded, so whether {command} accepts it is unknown")
    row = _table()[section].get(model_type)
    # A type in the table is one the installed transformers runs natively, so only the original-LLaVA layout can
    # still be refused: transformers' name table (a heavy import) is read only for types the table lacks.
    refusal = (
        native_refusal(model_type, [architecture] if architecture else [])
        if row is None or architecture in ORIGINAL_LLAVA
        else None
    )
    if refusal is not None:
        return Support(False, f"{command} refuses it: {refusal}")
    if row is None:
        return Support(None, f"model type {model_type} is not in the architecture table's {section} sweep")
    if row["verdict"] in (EQUAL, EQUAL_LOGITS_ONLY):
        return Support(True, f"{command} accepts model type {model_type} ({CHECKED[section]})")
    return Support(False, f"{command} does not accept model type {model_type}: {row['reason']}")
