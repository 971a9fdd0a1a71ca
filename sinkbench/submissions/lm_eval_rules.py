"""Validation rules on the lm-eval files of measured entries (results files and IFEval samples): each takes one
entry and yields problems; the gate runs them (:data:`.gate.ENTRY_RULES`) with those of :mod:`.metadata_rules`."""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from typing import Any

from sinkbench.numbers import is_finite_number
from sinkbench.sink.metrics import SECONDARY_METRICS, SINK_STRENGTH
from sinkbench.submissions.catalogue import FORMAT_TASKS, IFEVAL_TASK, SINK_TASK, TASKS
from sinkbench.submissions.entry import Entry, Problem, ResultsFile
from sinkbench.submissions.schema import UNPINNED_REVISIONS

_LM_EVAL_VERSION = re.compile(r"\d{1,4}\.\d{1,4}(\.\d{1,4})?([.+-][A-Za-z0-9.+-]{1,40})?", re.ASCII)
_RERUN = "rerun both sides with identical lm_eval settings (see submissions/README.md)"
_SAME_RUN = "submit the samples file of the same run"
#: This project's own tasks: never groups, so their records are required whatever ``group_subtasks`` claims.
_OWN_TASKS = frozenset({SINK_TASK, *FORMAT_TASKS})
_NO_LIMIT_FIX = (
    "rerun sink_strength without --limit (a backbone's or a testbed pair's strict-suite tasks may use --limit, in "
    "a results file of their own)"
)

#: QK-norm class by Hugging Face ``model_type``; unknown types are not detected.
QK_NORM_BY_MODEL_TYPE = {
    **dict.fromkeys(("qwen3", "qwen3_moe", "qwen3_vl", "qwen3_vl_text", "gemma3", "gemma3_text"), "per-head"),
    **dict.fromkeys(("olmo2", "olmo3", "olmoe"), "layerwise"),
    **dict.fromkeys(
        ("llama", "mistral", "qwen2", "qwen2_moe", "qwen2_vl", "qwen2_5_vl", "gemma", "gemma2", "phi3"),
        "none",
    ),
}


def detect_qk_norm(config: Mapping[str, Any]) -> str | None:
    """QK-norm class from a Hugging Face ``config.json`` (its own or its ``text_config`` model type)."""
    text_config = config.get("text_config")
    for candidate in (config, text_config if isinstance(text_config, Mapping) else {}):
        found = QK_NORM_BY_MODEL_TYPE.get(str(candidate.get("model_type", "")))
        if found:
            return found
    return None


def _results(entry: Entry) -> Iterator[ResultsFile]:
    for side in entry.sides.values():
        yield from side.results


def rule_task_in_one_file(entry: Entry) -> Iterator[Problem]:
    """Within one side, each task appears in one results file only (no ambiguous reruns)."""
    for side in entry.sides.values():
        seen: dict[str, str] = {}
        for item in side.results:
            for task in item.data.results:
                if task in seen:
                    yield Problem(
                        item.path,
                        f"results.{task}",
                        f"{task} is also in {seen[task]}.",
                        "keep the results of one run per task",
                    )
                seen.setdefault(task, item.path)


def rule_no_limit(entry: Entry) -> Iterator[Problem]:
    """Full test sets wherever a statistic reads the numbers: both sides of a pair and every ``sink_strength``.

    A backbone's own strict-suite scores and a testbed pair's feed no statistic, so they may come from a ``--limit``
    run in a results file without ``sink_strength`` (the site shows their coverage); both sides of a testbed pair
    then cover the same documents (:func:`rule_pair_settings_match`)."""
    partial_allowed = entry.kind == "backbone" or entry.testbed
    for item in _results(entry):
        if item.data.config.limit is not None and not (
            partial_allowed and SINK_TASK not in item.data.results
        ):
            yield Problem(
                item.path,
                "config.limit",
                f"the run used --limit {item.data.config.limit}.",
                _NO_LIMIT_FIX if partial_allowed else "rerun without --limit",
            )
        for task, count in item.data.n_samples.items():
            if count.effective != count.original and not (partial_allowed and task != SINK_TASK):
                yield Problem(
                    item.path,
                    f"n-samples.{task}",
                    f"evaluated {count.effective} of {count.original} documents.",
                    "rerun on the full test set, without --limit",
                )


def rule_lm_eval_version(entry: Entry) -> Iterator[Problem]:
    """Every results file records the lm-eval version that wrote it."""
    for item in _results(entry):
        version = item.data.lm_eval_version
        if not version or not _LM_EVAL_VERSION.fullmatch(version):
            yield Problem(
                item.path,
                "lm_eval_version",
                f"no lm-eval version recorded (got {version!r}).",
                "submit the results file exactly as lm_eval wrote it (lm-eval >= 0.4.3)",
            )


def _leaf_tasks(item: ResultsFile) -> list[str]:
    """The tasks of a results file that are not groups (a group lists its subtasks in ``group_subtasks``)."""
    groups = item.data.group_subtasks
    return [task for task in item.data.results if task in _OWN_TASKS or not groups.get(task)]


def _missing_records(item: ResultsFile) -> Iterator[tuple[str, str]]:
    """``(field, what)`` for each record lm-eval always writes that ``item`` lacks."""
    if "limit" not in item.data.config.model_fields_set:
        yield "config.limit", "the run's --limit setting (null when not used)"
    records = {
        "configs": item.data.configs,
        "versions": item.data.versions,
        "n-shot": item.data.n_shot,
        "n-samples": item.data.n_samples,
    }
    for task in _leaf_tasks(item):
        for name, record in records.items():
            if task not in record:
                yield f"{name}.{task}", f"the {name} record of {task}"
    for group, subtasks in item.data.group_subtasks.items():
        missing = [subtask for subtask in subtasks if subtask not in item.data.results]
        if group in item.data.results and missing:
            yield f"group_subtasks.{group}", f"the results of its subtask {missing[0]}"


def rule_lm_eval_records_complete(entry: Entry) -> Iterator[Problem]:
    """Every results file has the records lm-eval always writes (the run's ``limit``; per task its config, version,
    few-shot and sample counts; a group's subtasks' results): without them a --limit run would go unseen."""
    for item in _results(entry):
        for field, what in _missing_records(item):
            yield Problem(
                item.path,
                field,
                f"{what} is missing, but lm-eval writes it for every run.",
                "submit the results file exactly as lm_eval wrote it",
            )


def _metric_ranges(task: str) -> dict[str, tuple[float, float]]:
    """The headline metric of a known task (and S's secondary metrics) with their possible ranges; none for
    other tasks."""
    if task == SINK_TASK:
        return {
            metric.results_key: (metric.low, metric.high) for metric in (SINK_STRENGTH, *SECONDARY_METRICS)
        }
    spec = TASKS.get(task)
    return {spec.metric: (0.0, 100.0 / spec.scale)} if spec else {}


def rule_metrics_in_range(entry: Entry) -> Iterator[Problem]:
    """Headline metrics (and S's secondary metrics) are numbers within their possible range."""
    for item in _results(entry):
        for task, metrics in item.data.results.items():
            for key, (low, high) in _metric_ranges(task).items():
                value, field = metrics.get(key), f"results.{task}.{key}"
                if not is_finite_number(value):
                    yield Problem(
                        item.path,
                        field,
                        f"metric missing or not a number (got {value!r}; a finite number is expected).",
                        "submit the results file exactly as lm_eval wrote it",
                    )
                elif not low <= value <= high:
                    yield Problem(
                        item.path,
                        field,
                        f"{value:.6g} is outside [{low}, {high}].",
                        "check the run: this value is impossible for this metric",
                    )


#: Keys of a task's ``configs`` record that differ between the sides of a fair pair: lm-eval adds the model's
#: arguments (``pretrained``, ...) and where the documents came from to ``metadata``.
_PER_MODEL_CONFIG_KEYS = frozenset({"metadata"})


def _settings(item: ResultsFile, task: str) -> dict[str, Any]:
    """The effective settings of ``task`` in ``item``: its test set's size, its task config (but ``metadata``)
    and the run's."""
    data = item.data
    config = data.configs.get(task)
    task_config = config.model_dump() if config else {}
    count = data.n_samples.get(task)
    return {
        f"versions.{task}": data.versions.get(task),
        f"n-shot.{task}": data.n_shot.get(task),
        f"n-samples.{task}.original": count.original if count else None,
        f"n-samples.{task}.effective": count.effective if count else None,
        "config.limit": data.config.limit,
        **{
            f"configs.{task}.{key}": _without_addresses(value)
            for key, value in task_config.items()
            if key not in _PER_MODEL_CONFIG_KEYS and value is not None
        },
        "config.gen_kwargs": data.config.gen_kwargs or None,
        "chat template applied": data.chat_template is not None,
        "fewshot_as_multiturn": bool(data.fewshot_as_multiturn),
        "system_instruction": (data.model_extra or {}).get("system_instruction"),
        "system_instruction_sha": data.system_instruction_sha,
    }


_ADDRESS = re.compile(r" at 0x[0-9a-fA-F]+>")


def _without_addresses(value: Any) -> Any:
    """``value`` without the memory addresses lm-eval's config dump writes for functions (``<function f at
    0x..>``), which differ between any two processes."""
    if isinstance(value, str):
        return _ADDRESS.sub(">", value)
    if isinstance(value, dict):
        return {key: _without_addresses(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_without_addresses(item) for item in value]
    return value


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def rule_pair_settings_match(entry: Entry) -> Iterator[Problem]:
    """Both sides of a pair ran each task with the same task config (version, few-shot, prompts, generation,
    metrics: everything lm-eval records but the model's own ``metadata``), chat template and system instruction."""
    reference, vlm = entry.sides.get("reference"), entry.sides.get("vlm")
    if reference is None or vlm is None:
        return
    reported: set[tuple[str, str]] = set()  # file-wide settings are reported once per file
    for task in TASKS:
        left, right = reference.results_for(task), vlm.results_for(task)
        if left is None or right is None or task not in left.data.configs or task not in right.data.configs:
            continue  # a missing configs record is reported by rule_lm_eval_records_complete
        ours, theirs = _settings(left, task), _settings(right, task)
        for field in {**ours, **theirs}:
            value, other = ours.get(field), theirs.get(field)
            if other != value and (right.path, field) not in reported:
                reported.add((right.path, field))
                yield Problem(
                    right.path,
                    field,
                    f"differs between sides: reference {_shown(value)}, VLM-LM {_shown(other)}.",
                    _RERUN,
                )


def rule_revision_matches_results(entry: Entry) -> Iterator[Problem]:
    """A revision that lm-eval recorded in a results file agrees with the metadata."""
    refs = {"reference": entry.llm, "vlm": entry.vlm, "backbone": entry.llm}
    for role, side in entry.sides.items():
        expected = refs[role].revision if refs[role] else None
        for item in side.results:
            recorded = {item.data.config.model_revision, item.data.config.model_sha} - UNPINNED_REVISIONS
            if expected and recorded and expected not in recorded:
                yield Problem(
                    item.path,
                    "config.model_revision",
                    f"results record revision {sorted(recorded)} but metadata says {expected!r}.",
                    "correct the revision in metadata.json or submit the matching results",
                )


def rule_qk_norm_matches_config(entry: Entry) -> Iterator[Problem]:
    """The declared QK-norm class agrees with the one detected from a submitted ``config.json``."""
    for side in entry.sides.values():
        detected = detect_qk_norm(side.model_config) if side.model_config else None
        if detected and detected != entry.metadata.qk_norm:
            yield Problem(
                entry.metadata_file,
                "qk_norm",
                f"is {entry.metadata.qk_norm!r} but {side.directory}/config.json says {detected!r}.",
                f"set qk_norm to {detected!r}",
            )


def rule_samples_match_results(entry: Entry) -> Iterator[Problem]:
    """An IFEval samples file has one line per evaluated prompt and reproduces the headline accuracy."""
    for side in entry.sides.values():
        found = side.results_for(IFEVAL_TASK)
        if side.ifeval is None or found is None:
            continue
        count = found.data.n_samples.get(IFEVAL_TASK)
        accuracy = side.metric(IFEVAL_TASK, TASKS[IFEVAL_TASK].metric)
        passed = sum(outcome.passed for outcome in side.ifeval) / max(len(side.ifeval), 1)
        if count is not None and count.effective != len(side.ifeval):
            yield Problem(
                side.ifeval_samples_path,
                "",
                f"has {len(side.ifeval)} prompts but the results evaluated {count.effective}.",
                _SAME_RUN,
            )
        elif accuracy is not None and abs(passed - accuracy) > 1e-6:
            yield Problem(
                side.ifeval_samples_path,
                "prompt_level_strict_acc",
                f"mean {passed:.6f} differs from the results' {accuracy:.6f}.",
                _SAME_RUN,
            )


def rule_samples_cover_same_prompts(entry: Entry) -> Iterator[Problem]:
    """Both sides' IFEval samples hold the same prompts, so regressions can be matched by ``doc.key``."""
    outcomes = entry.ifeval_outcomes()
    if outcomes is None:
        return
    keys = [{outcome.key for outcome in side} for side in outcomes]
    if keys[0] != keys[1]:
        only = sorted(keys[0] ^ keys[1])[:5]
        yield Problem(
            entry.sides["vlm"].ifeval_samples_path,
            "doc.key",
            f"prompt keys differ between sides (e.g. {', '.join(only)}).",
            "evaluate both sides on the full ifeval_strict task",
        )
