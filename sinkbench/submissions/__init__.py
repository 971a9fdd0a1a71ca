"""Submission entries: the task catalogue, the file schemas, the entry model, loading and the validation rules
(the gate), and importing published numbers.

Modules, in the order data flows through them: :mod:`.catalogue` (tasks and folders), :mod:`.schema` (one
pydantic model per file kind), :mod:`.entry` (the in-memory entry model every later stage reads),
:mod:`.read_entry` (one entry folder, file by file), :mod:`.metadata_rules` and :mod:`.lm_eval_rules` (the
validation rules), :mod:`.gate` (finding, reading and validating every entry),
:mod:`.import_reported` (reported entries from a CSV of published numbers).
"""

from __future__ import annotations

from sinkbench.submissions.entry import Entry, EntryFile, Problem, Side, TaskScore
from sinkbench.submissions.gate import (
    Submissions,
    SubmissionsInvalid,
    load_entry,
    load_submissions,
    load_valid_entries,
)

__all__ = [
    "Entry",
    "EntryFile",
    "Problem",
    "Side",
    "Submissions",
    "SubmissionsInvalid",
    "TaskScore",
    "load_entry",
    "load_submissions",
    "load_valid_entries",
]
