"""The precision a source printed its numbers with, inferred per column of that source.

A transcription stores numbers, not their print: ``-5.0`` and ``-5`` are the same float, and so are ``+1.30`` and
``+1.3``. A source prints a column (S, or one task's delta) with a fixed number of decimals, so the decimals of a
reported value are the most any value of the same column of the same source shows: every S of arXiv 2609.00746
is shown with two decimals, every IFEval delta with one.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from sinkbench.leaderboard.content import MEASURED_DIGITS, Shown
from sinkbench.numbers import finite_or_none
from sinkbench.submissions.entry import Entry
from sinkbench.submissions.schema import BackboneMetadata

#: Most decimals shown for a reported number, whatever its transcription holds.
MAX_DIGITS = 3
#: A column of a source: (citation, quantity, task or "").
Column = tuple[str, str, str]


def value_digits(value: float) -> int:
    """The decimals of one transcribed value (``-5.4`` -> 1, ``83.18`` -> 2, ``2.0`` -> 0), at most 3."""
    text = repr(float(value))
    if "e" in text or "." not in text:
        return 0
    return min(len(text.split(".")[1].rstrip("0")), MAX_DIGITS)


def _reported_values(entry: Entry) -> Iterator[tuple[str, str, float]]:
    """(quantity, task, value) of every number an entry transcribes."""
    reported = entry.metadata.reported
    if reported is None:
        return
    yield "sink_strength", "", reported.sink_strength.value
    if isinstance(entry.metadata, BackboneMetadata):
        yield from (("score", item.task, item.score) for item in reported.scores)
        return
    for item in reported.tasks:
        yield "delta", item.task, item.delta
        for name in ("reference_score", "vlm_score"):
            value = getattr(item, name)
            if value is not None:
                yield "score", item.task, value


class SourcePrecision:
    """The decimals of each column of each source, from every reported entry that cites it."""

    def __init__(self, entries: Iterable[Entry]) -> None:
        self._digits: dict[Column, int] = {}
        for entry in entries:
            citation = entry.metadata.citation.source if entry.metadata.citation else ""
            for quantity, task, value in _reported_values(entry):
                key = (citation, quantity, task)
                self._digits[key] = max(self._digits.get(key, 0), value_digits(value))

    def digits(self, entry: Entry, quantity: str, task: str = "") -> int:
        """The decimals ``entry``'s source prints ``quantity`` of ``task`` with (``sink_strength``, ``delta``,
        ``score``)."""
        citation = entry.metadata.citation.source if entry.metadata.citation else ""
        return self._digits.get((citation, quantity, task), 0)

    def shown(
        self, value: object, entry: Entry, quantity: str, task: str = "", derived: bool = False
    ) -> Shown:
        """``value`` of ``entry`` for a page: measured, with two decimals; reported, with those its source prints
        ``quantity`` of ``task`` with (:meth:`digits`)."""
        digits = self.digits(entry, quantity, task) if entry.provenance == "reported" else MEASURED_DIGITS
        return Shown(finite_or_none(value), digits, derived)
