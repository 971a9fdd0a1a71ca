"""Validation rules on an entry's metadata, its reported numbers, its submitted files' contents (local paths, the
sink profile) and, across entries, duplicates; rules on lm-eval's files are in :mod:`.lm_eval_rules`. Each rule
yields problems; the gate (:mod:`.gate`) runs them. File-level checks happen earlier, in :mod:`.read_entry`.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Sequence

from sinkbench.submissions.catalogue import (
    FOLDER_OF_KIND,
    FORMAT_TASKS,
    IFEVAL_CATEGORIES,
    IFEVAL_TASK,
    SINK_TASK,
)
from sinkbench.submissions.entry import Entry, Problem
from sinkbench.submissions.local_paths import local_paths
from sinkbench.submissions.schema import UNPINNED_REVISIONS, IfevalRegressionCounts, ModelRef

#: Reported deltas are printed to 0.1 pt and scores to 0.01 pt, so they may disagree by this much.
DELTA_TOLERANCE = 0.1
#: Published scores recovered from counts are rounded to 0.01 pt.
COUNT_SCORE_TOLERANCE = 0.01


def rule_kind_matches_folder(entry: Entry) -> Iterator[Problem]:
    """An entry sits in the folder of its kind: pairs/ for pairs, backbones/ for backbones."""
    folder = entry.directory.split("/")[-2] if "/" in entry.directory else ""
    expected = FOLDER_OF_KIND[entry.kind]
    if folder != expected:
        yield Problem(
            entry.metadata_file,
            "kind",
            f"kind is {entry.kind!r} but the entry is in {folder}/.",
            f"move the entry to {expected}/ or correct `kind`",
        )


def rule_provenance_contents(entry: Entry) -> Iterator[Problem]:
    """A ``reported`` entry carries a citation and the published numbers, and no raw files; a ``measured`` entry
    takes its numbers from its lm-eval results files, which must be there."""
    reported, numbers = entry.provenance == "reported", entry.metadata.reported is not None
    # (broken, field, message, fix): a problem on the ``provenance`` field names the entry folder, the others its
    # ``metadata.json``.
    checks = (
        (
            reported and not numbers,
            "reported",
            "a reported entry has no `reported` numbers.",
            "add the `reported` block with the published numbers and their tables",
        ),
        (
            reported and entry.metadata.citation is None,
            "citation",
            "a reported entry has no citation.",
            "add `citation.source` (authors, title, arXiv id) and `citation.url`",
        ),
        (
            reported and bool(entry.sides or entry.sink_profile is not None),
            "provenance",
            "a reported entry holds raw result files.",
            "set provenance to 'measured' and drop `reported`, or remove the files",
        ),
        (
            not reported and numbers,
            "reported",
            "a measured entry must take its numbers from its files.",
            "remove the `reported` block, or set provenance to 'reported'",
        ),
        (
            not reported and not entry.sides,
            "provenance",
            "a measured entry has no lm-eval results files.",
            "add the results files (see submissions/README.md) or set provenance to 'reported'",
        ),
    )
    for broken, field, message, fix in checks:
        if broken:
            yield Problem(
                entry.directory if field == "provenance" else entry.metadata_file, field, message, fix
            )


def rule_revisions_recorded(entry: Entry) -> Iterator[Problem]:
    """Measured entries pin the revision of every model they evaluated."""
    if entry.provenance != "measured":
        return
    refs = {"vlm": entry.vlm, "reference_llm": entry.llm} if entry.kind == "pair" else {"model": entry.llm}
    for field, ref in refs.items():
        if ref is not None and ref.revision is None:
            yield Problem(
                entry.metadata_file,
                f"{field}.revision",
                "the model revision is not recorded.",
                "add the commit hash of the weights you evaluated (or sha256:<hex> of a local file)",
            )


def rule_pair_of_two_models(entry: Entry) -> Iterator[Problem]:
    """A pair compares two models: its VLM is not its reference LLM (one Hub id, case aside, at revisions that may
    name the same weights, as :func:`rule_no_duplicates` compares them)."""
    vlm, llm = entry.vlm, entry.llm
    if entry.kind != "pair" or vlm is None or llm is None:
        return
    if _same_model(vlm, llm):
        yield Problem(
            entry.metadata_file,
            "vlm.id",
            f"the VLM {vlm.id!r} is the reference LLM itself (same id, revisions that may name the same weights).",
            "give the VLM's own id and revision: a pair measures what VL fine-tuning changed",
        )


def _required_tasks(entry: Entry) -> dict[str, tuple[str, ...]]:
    if entry.testbed:  # a testbed pair feeds no fit: S and the headline task are enough
        return {"reference": (SINK_TASK, IFEVAL_TASK), "vlm": (IFEVAL_TASK,)}
    if entry.kind == "pair":
        return {"reference": (SINK_TASK, *FORMAT_TASKS), "vlm": FORMAT_TASKS}
    return {"backbone": (SINK_TASK,)}


def rule_required_tasks(entry: Entry) -> Iterator[Problem]:
    """Measured pairs hold S and the strict suite on the reference and the strict suite on the VLM-LM (testbed
    pairs, which must be measured: S and ``ifeval_strict``, and ``ifeval_strict``); backbones S; reported pairs
    report at least the headline task, ``ifeval_strict``."""
    if entry.testbed and entry.provenance != "measured":
        yield Problem(
            entry.metadata_file,
            "testbed",
            "a testbed pair must be measured (its VLM is made by the testbed, not published).",
            "set provenance to 'measured' and add its lm-eval files, or remove `testbed`",
        )
        return
    if entry.provenance == "reported":
        if entry.kind == "pair" and IFEVAL_TASK not in entry.scores:
            yield Problem(
                entry.metadata_file,
                "reported.tasks",
                f"the headline task {IFEVAL_TASK} is missing.",
                f"add an entry with task {IFEVAL_TASK!r} and its delta",
            )
        return
    for role, tasks in _required_tasks(entry).items():
        side = entry.sides.get(role)
        missing = [task for task in tasks if side is None or side.results_for(task) is None]
        if missing:
            yield Problem(
                side.directory if side else f"{entry.directory}/{role}",
                "results",
                f"required tasks missing: {', '.join(missing)}.",
                f"run lm_eval with --tasks {','.join(missing)} and add the results file",
            )


def rule_reported_delta_matches_scores(entry: Entry) -> Iterator[Problem]:
    """A reported delta agrees with the reported scores (vlm - reference) up to rounding."""
    for task, score in entry.scores.items():
        if score.reported_delta is None or score.reference_score is None or score.vlm_score is None:
            continue
        gap = score.vlm_score - score.reference_score
        if abs(gap - score.reported_delta) > DELTA_TOLERANCE:
            yield Problem(
                entry.metadata_file,
                f"reported.tasks.{task}.delta",
                f"{score.reported_delta} but vlm_score - reference_score = {gap:.2f}.",
                "check the transcription of both",
            )


def rule_reported_regressions_consistent(entry: Entry) -> Iterator[Problem]:
    """Published IFEval counts add up, categories are known and bounded, and agree with the scores."""
    counts = entry.reported_regressions
    if counts is None:
        return
    field = "reported.ifeval_regressions"
    total = counts.both_pass + counts.lost + counts.gained + counts.both_fail
    if total != counts.n_prompts:
        yield Problem(
            entry.metadata_file,
            field,
            f"counts add up to {total}, not n_prompts={counts.n_prompts}.",
            "check the transcription of the four counts",
        )
    for category, value in counts.lost_by_category.items():
        if category not in IFEVAL_CATEGORIES:
            yield Problem(
                entry.metadata_file,
                f"{field}.lost_by_category.{category}",
                "unknown category.",
                f"use one of {', '.join(IFEVAL_CATEGORIES)}",
            )
        elif value is not None and value > counts.lost:
            yield Problem(
                entry.metadata_file,
                f"{field}.lost_by_category.{category}",
                f"{value} exceeds the {counts.lost} lost prompts.",
                "check the transcription",
            )
    yield from _scores_agree_with_counts(entry, counts)


def _scores_agree_with_counts(entry: Entry, counts: IfevalRegressionCounts) -> Iterator[Problem]:
    """IFEval scores = (both-pass + lost) / n and (both-pass + gained) / n, in points."""
    score = entry.scores.get(IFEVAL_TASK)
    if score is None:
        return
    expected = {
        "reference_score": 100 * (counts.both_pass + counts.lost) / counts.n_prompts,
        "vlm_score": 100 * (counts.both_pass + counts.gained) / counts.n_prompts,
    }
    for field, value in expected.items():
        given = getattr(score, field)
        if given is not None and abs(given - value) > COUNT_SCORE_TOLERANCE:
            yield Problem(
                entry.metadata_file,
                f"reported.tasks.{IFEVAL_TASK}.{field}",
                f"{given} disagrees with the regression counts ({value:.2f}).",
                "check the transcription",
            )


def _submitted_files(entry: Entry) -> Iterator[tuple[str, object]]:
    """(shown path, parsed content) of every lm-eval results file, ``config.json`` and profile of an entry."""
    for side in entry.sides.values():
        for item in side.results:
            yield item.path, item.data.model_dump(by_alias=True)
        if side.model_config is not None:
            yield f"{side.directory}/config.json", side.model_config
    if entry.sink_profile is not None:
        yield f"{entry.directory}/sink_profile.json", entry.sink_profile.model_dump()


def rule_no_local_paths(entry: Entry) -> Iterator[Problem]:
    """No submitted file names a folder of the contributor's machine (model paths, caches, task files)."""
    for shown, data in _submitted_files(entry):
        found = local_paths(data)
        if found:
            fields = ", ".join(field for field, _ in found[:4]) + (", ..." if len(found) > 4 else "")
            yield Problem(
                shown,
                found[0][0],
                f"holds a local path in {len(found)} field(s) ({fields}).",
                "build the entry with `sinkbench submit`, which replaces them by the model id or <local> and "
                "records each change in metadata.json",
            )


def rule_sink_profile_shape(entry: Entry) -> Iterator[Problem]:
    """A sink profile's matrix has one row per probed layer and the same number of heads in each row."""
    profile = entry.sink_profile
    if profile is None:
        return
    matrix = profile.profile
    widths = {len(row) for row in matrix.median_g}
    rows_ok = len(matrix.median_g) == len(matrix.layers) == len(matrix.layer_median_g)
    if not rows_ok or len(widths) > 1:
        yield Problem(
            f"{entry.directory}/sink_profile.json",
            "profile.median_g",
            f"has {len(matrix.median_g)} rows of widths {sorted(widths)} for {len(matrix.layers)} layers.",
            "submit the file exactly as `sinkbench screen --output` wrote it",
        )


def _model(entry: Entry) -> ModelRef:
    """The model an entry is about: the VLM of a pair, the LLM of a backbone."""
    return entry.vlm or entry.llm


_COMMIT = re.compile(r"[0-9a-f]{7,40}", re.ASCII)


def _same_weights(first: str | None, second: str | None) -> bool:
    """Two revisions may name the same weights unless both are pinned and differ: an unpinned revision (none, or
    ``main``) matches any other; revisions compare case-blind; a commit matches its own abbreviation."""
    if first in UNPINNED_REVISIONS or second in UNPINNED_REVISIONS:
        return True
    first, second = str(first).lower(), str(second).lower()
    if first == second:
        return True
    both_commits = _COMMIT.fullmatch(first) and _COMMIT.fullmatch(second)
    return bool(both_commits) and (first.startswith(second) or second.startswith(first))


def _same_model(first: ModelRef, second: ModelRef) -> bool:
    """One Hub id, case aside, at revisions that may name the same weights (:func:`_same_weights`)."""
    return first.id.lower() == second.id.lower() and _same_weights(first.revision, second.revision)


def _clashes(
    entries: Sequence[Entry],
    model_of: Callable[[Entry], ModelRef],
    differ: Callable[[Entry, Entry], bool],
    apart: Callable[[Entry], str] = lambda entry: "",
) -> Iterator[tuple[Entry, Entry]]:
    """Each entry with the first earlier one (in its ``apart`` group) whose model (``model_of``) is the same
    (:func:`_same_model`; the entries are indexed by id) and for which ``differ(earlier, entry)`` holds."""
    seen: dict[tuple[str, str], list[Entry]] = {}
    for entry in entries:
        model = model_of(entry)
        earlier = seen.setdefault((apart(entry), model.id.lower()), [])
        clash = next(
            (other for other in earlier if _same_model(model_of(other), model) and differ(other, entry)), None
        )
        if clash is not None:
            yield entry, clash
        earlier.append(entry)


def rule_no_duplicates(entries: Sequence[Entry]) -> Iterator[Problem]:
    """No two entries of a kind hold the same model (the VLM of a pair, the LLM of a backbone) at revisions that
    may name the same weights: an unpinned revision (none, or ``main``) matches every other revision."""
    for entry, clash in _clashes(entries, _model, lambda first, second: True, apart=lambda entry: entry.kind):
        model = _model(entry)
        revision = f"revision {model.revision!r}" if model.revision else "an unrecorded revision"
        yield Problem(
            entry.metadata_file,
            "vlm" if entry.kind == "pair" else "model",
            f"{model.id} at {revision} is already submitted as {clash.directory} (revision "
            f"{_model(clash).revision!r}); an unpinned revision may name the same weights.",
            "update the existing entry instead of adding a new one, or pin both revisions",
        )


def _qk_norms_differ(first: Entry, second: Entry) -> bool:
    return first.metadata.qk_norm != second.metadata.qk_norm


def rule_one_qk_norm_per_llm(entries: Sequence[Entry]) -> Iterator[Problem]:
    """The entries of one LLM (a pair's reference, a backbone's model: one id at revisions that may name the same
    weights) give it one QK-norm class: the board shows an LLM's class once, and takes it from one of them."""
    for entry, clash in _clashes(entries, lambda entry: entry.llm, _qk_norms_differ):
        yield Problem(
            entry.metadata_file,
            "qk_norm",
            f"is {entry.metadata.qk_norm!r} but {clash.directory} gives {entry.llm.id} the class "
            f"{clash.metadata.qk_norm!r}.",
            "give one class for one model: the one its config.json implies",
        )
