"""The Architectures page: the committed verdicts of the conformance sweeps (``sinkbench/conformance/architectures.json``)
grouped by verdict, with the note on encoder types that run as causal decoders. The page's search box filters every
group at once (``site/docs/assets/tables.js``). ``site/docs/architectures.md`` stays the Markdown copy of the same
table that the README links to; the site shows this page in its place."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sinkbench.conformance.table import SECTIONS, encoder_note, load, summary
from sinkbench.conformance.verdicts import EQUAL, EQUAL_LOGITS_ONLY, FAILED, REFUSED, UNTESTED

#: The verdicts in the order the page groups them, with what each means.
VERDICTS = {
    EQUAL: "measured, and equal to the independent reference",
    EQUAL_LOGITS_ONLY: "measured; only the logits can be compared (a learned sink applied after normalising)",
    REFUSED: "refused in one line, with the reason",
    UNTESTED: "no tiny model can be built from the type's defaults",
    FAILED: "the sweep failed on it",
}


@dataclass(frozen=True)
class Group:
    """The model types of one verdict in one section, as (model type, row)."""

    verdict: str
    meaning: str
    rows: list[tuple[str, dict[str, Any]]]


def _groups(rows: dict[str, dict[str, Any]]) -> list[Group]:
    return [
        Group(verdict, meaning, [(name, row) for name, row in rows.items() if row["verdict"] == verdict])
        for verdict, meaning in VERDICTS.items()
        if any(row["verdict"] == verdict for row in rows.values())
    ]


def architectures_context() -> dict[str, object]:
    """What ``architectures.md.j2`` is given: per section its summary line and its groups, and the encoder note."""
    document = load()
    encoders = document.get("encoder_types") or {}
    return {
        "transformers": document["transformers"],
        "sections": [
            {
                "key": key,
                "commands": SECTIONS[key],
                "summary": summary(document[key]),
                "groups": _groups(document[key]),
            }
            for key in ("probe", "extract")
        ],
        "encoder_note": encoder_note(encoders),
        "not_decoders": set(encoders.get("encoder") or []) | set(encoders.get("encoder_decoder") or []),
    }
