"""The commands that reproduce a measured entry's numbers, rebuilt from its lm-eval results files.

Each results file becomes one ``lm_eval`` command: the backend that ran it (``hf``, ``vllm``, ...), the entry's model
id and revision (never the local path the run used), the model arguments that change the numbers (dtype, GGUF file,
context length; not how the model was spread over devices), the tasks, and the flags lm-eval
recorded (chat template, few-shot as multi-turn, system instruction, generation settings, ``--limit``, batch
size, device, probe options of ``sink_strength``), preceded by the environment it needs: the lm-eval and
transformers versions, and ``SINKBENCH_DATA_DIR`` with the name and sha256 of each local data file.
"""

from __future__ import annotations

import json
import re
import shlex
from collections.abc import Iterator
from dataclasses import dataclass, fields
from typing import Any

from sinkbench.sink.metrics import SINK_TASK
from sinkbench.sink.options import ProbeOptions
from sinkbench.submissions.entry import ResultsFile
from sinkbench.submissions.facts import model_args
from sinkbench.submissions.schema import ModelRef

#: Model arguments that change the numbers and so belong in the command (paths and devices do not).
_KEPT_MODEL_ARGS = ("dtype", "gguf_file", "trust_remote_code", "add_bos_token", "max_length", "max_model_len")
#: An lm-eval backend name as ``--model`` takes it (``hf``, ``vllm``, ``sglang``, ...).
_BACKEND = re.compile(r"[a-z][a-z0-9_-]{0,40}", re.ASCII)
_DEFAULT_BOOTSTRAP_ITERS = 100_000
_PROBE_DEFAULTS = {field.name: field.default for field in fields(ProbeOptions)}
#: What a value shown in a comment line may hold as it is (versions, file names, hashes).
_PLAIN_VALUE = re.compile(r"[\w.+\-:/]{1,200}", re.ASCII)


def _one_line(value: object) -> str:
    """``value`` for a comment line: as it is when plain, else JSON-quoted on one line (no line of the copied
    block can come from a results file's text)."""
    text = str(value)
    return text if _PLAIN_VALUE.fullmatch(text) else json.dumps(text)


@dataclass(frozen=True)
class Reproduction:
    """One results file's reproduction, as the page shows it: comment lines (environment, data files), then the
    command."""

    source: str
    text: str


def _model_args(item: ResultsFile, model: ModelRef) -> str:
    given = model_args(item.data.config.model_args)
    parts = [f"pretrained={model.id}"]
    if model.revision and not model.revision.startswith("sha256:"):
        parts.append(f"revision={model.revision}")
    parts += [f"{key}={given[key]}" for key in _KEPT_MODEL_ARGS if key in given]
    return ",".join(parts)


def _tasks(item: ResultsFile) -> list[str]:
    """Groups as run (a group covers its subtasks), then the tasks outside any group."""
    groups = {name: members for name, members in item.data.group_subtasks.items() if members}
    covered = {task for members in groups.values() for task in members}
    return [*groups, *(task for task in item.data.results if task not in groups and task not in covered)]


def _metadata(item: ResultsFile) -> dict[str, Any]:
    """Non-default ``sink_strength`` options (probe options, calibration set) for ``--metadata``."""
    config = item.data.configs.get(SINK_TASK)
    recorded = (config.metadata or {}) if config else {}
    probe = {k: v for k, v in (recorded.get("probe") or {}).items() if _PROBE_DEFAULTS.get(k, v) != v}
    calibration = recorded.get("calibration")
    chosen = calibration.get("set") if isinstance(calibration, dict) else None
    return {
        **({"probe": probe} if probe else {}),
        **({"calibration": chosen} if chosen not in (None, "v1") else {}),
    }


def _flags(item: ResultsFile, logged_samples: bool) -> list[str]:
    data, config = item.data, item.data.config
    flags = []
    if data.chat_template is not None:
        flags.append("--apply_chat_template")
    if data.fewshot_as_multiturn:
        flags.append("--fewshot_as_multiturn")
    extras = data.model_extra or {}
    if extras.get("system_instruction"):
        flags += ["--system_instruction", str(extras["system_instruction"])]
    if config.gen_kwargs:
        gen = (
            config.gen_kwargs
            if isinstance(config.gen_kwargs, str)
            else ",".join(f"{k}={v}" for k, v in config.gen_kwargs.items())
        )
        flags += ["--gen_kwargs", gen]
    if config.limit is not None:
        flags += ["--limit", f"{config.limit:g}"]
    run = config.model_extra or {}
    for name in ("batch_size", "device"):
        if run.get(name) not in (None, ""):
            flags += [f"--{name}", str(run[name])]
    if run.get("bootstrap_iters") not in (None, _DEFAULT_BOOTSTRAP_ITERS):
        flags += ["--bootstrap_iters", str(run["bootstrap_iters"])]
    if logged_samples:
        flags.append("--log_samples")
    return flags


def local_data_files(item: ResultsFile) -> Iterator[tuple[str, dict[str, Any]]]:
    """``(task, record)`` of each local data file (``SINKBENCH_DATA_DIR``) a results file's run read."""
    for task, config in item.data.configs.items():
        record = (config.metadata or {}).get("data") if config else None
        if isinstance(record, dict) and record.get("source") == "local":
            yield from ((task, file) for file in record.get("files") or [] if isinstance(file, dict))


def _data_comments(item: ResultsFile) -> list[str]:
    lines = [
        f"#   {task}: {_one_line(file.get('file'))} (sha256 {_one_line(file.get('sha256'))})"
        for task, file in local_data_files(item)
    ]
    if lines:
        return ["# Offline data: SINKBENCH_DATA_DIR must hold the original release files", *lines]
    return []


def _sinkbench_version(item: ResultsFile) -> str | None:
    recorded = {
        str((c.metadata or {}).get("sinkbench_version"))
        for c in item.data.configs.values()
        if c and c.metadata
    }
    recorded.discard("None")
    return max(recorded, default=None)


def _environment(item: ResultsFile, model: ModelRef) -> list[str]:
    extras = item.data.model_extra or {}
    versions = [f"lm-eval=={_one_line(item.data.lm_eval_version)}"] if item.data.lm_eval_version else []
    if extras.get("transformers_version"):
        versions.append(f"transformers=={_one_line(extras['transformers_version'])}")
    sinkbench = _sinkbench_version(item)
    versions.append(
        f"sinkbench=={_one_line(sinkbench)}" if sinkbench else "sinkbench  # version not recorded by this run"
    )
    lines = [f"# pip install {' '.join(versions)}"]
    if model.revision and model.revision.startswith("sha256:"):
        lines.append(
            f"# weights: a local file with {_one_line(model.revision)}; give its folder as pretrained="
        )
    return lines


def _backend(item: ResultsFile) -> str:
    """The ``--model`` the run used, as lm-eval recorded it (``hf`` when it recorded none)."""
    recorded = (item.data.config.model_extra or {}).get("model")
    return recorded if isinstance(recorded, str) and _BACKEND.fullmatch(recorded) else "hf"


def reproduction(item: ResultsFile, model: ModelRef, *, logged_samples: bool = False) -> Reproduction:
    """The command (and its environment) that reproduces one results file of an entry's model."""
    parts = [
        "lm_eval",
        "--model",
        _backend(item),
        "--model_args",
        _model_args(item, model),
        "--tasks",
        ",".join(_tasks(item)),
    ]
    metadata = _metadata(item)
    if metadata:
        parts += ["--metadata", json.dumps(metadata, separators=(",", ":"))]
    parts += [*_flags(item, logged_samples), "--output_path", "OUT"]
    comments = [*_environment(item, model), *_data_comments(item)]
    return Reproduction(item.path, "\n".join([*comments, shlex.join(parts)]))
