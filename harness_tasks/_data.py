"""Where the strict-format tasks take their documents from: the hub, or ``SINKBENCH_DATA_DIR``.

Every strict task is a :class:`DataTask` that loads its documents through :func:`load_task_data`.
Without the switch it loads the hub dataset users expect (``datasets.load_dataset``, honouring
``HF_DATASETS_OFFLINE`` and the local Hugging Face cache). With ``SINKBENCH_DATA_DIR=DIR`` it reads
the task's original release file from ``DIR`` instead and never touches the network; a missing file
is an error, never a silent fallback to the hub. Either way the task records where its documents came
from (the local file and its sha256, or the hub dataset) under ``metadata.data`` in the results file.

A task whose documents cannot be loaded ends the run with :class:`DataUnavailable`: one line naming the
file or dataset and the fix, and no traceback, under ``lm_eval`` and ``sinkbench eval`` alike.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

import datasets
from lm_eval.api.task import ConfigurableTask

from sinkbench import __version__
from sinkbench.safe_io import file_sha256

#: Environment variable that switches every strict task to local files.
DATA_DIR_ENV = "SINKBENCH_DATA_DIR"


@dataclass(frozen=True)
class DataSource:
    """Where one task's documents come from.

    Attributes:
        hub_path: Hub dataset id (``datasets.load_dataset`` path).
        hub_name: Hub configuration name, or None.
        split: Split the task evaluates; the local file is exposed under the same name.
        local_file: Name of the original release file inside ``SINKBENCH_DATA_DIR``.
        read_local: Reads that file into a list of records shaped like the hub rows.
    """

    hub_path: str
    hub_name: str | None
    split: str
    local_file: str
    read_local: Callable[[Path], list[dict]]


def read_jsonl(path: Path) -> list[dict]:
    """Read a JSON Lines file, naming the line of any malformed record."""
    records = []
    with path.open(encoding="utf-8") as handle:
        for number, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            try:
                records.append(json.loads(line))
            except json.JSONDecodeError as error:
                raise ValueError(
                    f"{path}:{number}: not valid JSON ({error.msg}); expected one object per line"
                ) from error
    return records


def local_data_dir() -> Path | None:
    """Return the directory named by ``SINKBENCH_DATA_DIR``, or None when the switch is off."""
    value = os.environ.get(DATA_DIR_ENV, "").strip()
    return Path(value).expanduser() if value else None


class DataUnavailable(SystemExit):
    """A task's documents cannot be loaded. A ``SystemExit``, so the run ends with the one-line message
    (prefixed ``sinkbench:``) and exit status 1, without a traceback."""

    def __init__(self, message: str) -> None:
        super().__init__(f"sinkbench: {message}")


def _from_hub(source: DataSource) -> datasets.DatasetDict:
    """The hub dataset, or :class:`DataUnavailable` when it cannot be reached or found."""
    try:
        return datasets.load_dataset(source.hub_path, source.hub_name)
    except OSError as error:  # offline, unreachable, not cached, not found (all OSError subclasses)
        reason = str(error).splitlines()[0] if str(error) else type(error).__name__
        raise DataUnavailable(
            f"cannot load {source.hub_path} from the Hugging Face Hub ({type(error).__name__}: {reason}). "
            f"Fix: set {DATA_DIR_ENV} to a folder holding the original '{source.local_file}', or go online."
        ) from error


def load_task_data(source: DataSource) -> tuple[datasets.DatasetDict, dict[str, Any]]:
    """Load a task's documents from the hub or, with ``SINKBENCH_DATA_DIR`` set, from local files.

    Args:
        source: The task's hub dataset and local release file.

    Returns:
        A DatasetDict holding ``source.split``, and the record of where it came from:
        ``{"source": "local", "files": [{"file", "sha256"}]}`` or ``{"source": "hub", "dataset", "name"}``.

    Raises:
        DataUnavailable: the switch is on but the directory lacks the task's file, or the hub cannot serve it.
        ValueError: the local file is malformed (naming the file and line).
    """
    data_dir = local_data_dir()
    if data_dir is None:
        record = {"source": "hub", "dataset": source.hub_path, "name": source.hub_name}
        return _from_hub(source), record
    path = data_dir / source.local_file
    if not path.is_file():
        raise DataUnavailable(
            f"{DATA_DIR_ENV}={data_dir} is set but {path} does not exist. Fix: put the original "
            f"'{source.local_file}' there, or unset {DATA_DIR_ENV} to load {source.hub_path} from the hub."
        )
    records = source.read_local(path)
    if not records:
        raise ValueError(f"{path} holds no records; expected the original '{source.local_file}' release file")
    record = {"source": "local", "files": [{"file": source.local_file, "sha256": file_sha256(path)}]}
    return datasets.DatasetDict({source.split: datasets.Dataset.from_list(records)}), record


class DataTask(ConfigurableTask):
    """A strict task whose documents come from :func:`load_task_data`; subclasses set :attr:`SOURCE`.

    The YAML names the subclass under ``class:``; the results file then records ``metadata.data``.
    """

    SOURCE: ClassVar[DataSource]

    def __init__(self, config: dict[str, Any] | None = None) -> None:
        super().__init__(config={key: value for key, value in (config or {}).items() if key != "class"})

    def download(self, dataset_kwargs: dict[str, Any] | None = None, **kwargs: Any) -> None:
        """Load the documents and record their origin in the task's metadata."""
        self.dataset, record = load_task_data(self.SOURCE)
        self.config.metadata = {
            **(self.config.metadata or {}),
            "data": record,
            "sinkbench_version": __version__,
        }


def data_task(source: DataSource) -> type[DataTask]:
    """The :class:`DataTask` subclass of one task family, loading ``source``."""
    return type(f"DataTask_{source.local_file.split('.')[0]}", (DataTask,), {"SOURCE": source})
