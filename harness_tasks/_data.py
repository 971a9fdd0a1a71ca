"""Where the strict-format tasks take their documents from: the hub, or ``SINKBENCH_DATA_DIR``.

Every strict task is a :class:`DataTask` that loads its documents through :func:`load_task_data`.
Without the switch it loads the hub dataset users expect (``datasets.load_dataset``, honouring
``HF_DATASETS_OFFLINE`` and the local Hugging Face cache). With ``SINKBENCH_DATA_DIR=DIR`` it reads
the task's original release file from ``DIR`` instead and never touches the network; a missing file
is an error, never a silent fallback to the hub. Either way the task records where its documents came
from (the local file and its sha256, or the hub dataset) under ``metadata.data`` in the results file.

A task whose documents cannot be loaded raises :class:`DataUnavailable`, an ordinary exception that a caller of
``lm_eval.simple_evaluate`` catches; its message names the file or dataset and the fix. Under ``lm_eval`` and
``sinkbench eval`` it ends the run as that one line, without a traceback (the error hook of
:mod:`sinkbench.harness.plugin`, installed by :class:`DataTask`).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

import datasets
from lm_eval.api.task import ConfigurableTask

from sinkbench import __version__
from sinkbench.errors import UserError, described, one_line
from sinkbench.harness.plugin import install_error_hook, name_gguf_cache_runs
from sinkbench.safe_io import UnsafeFileError, file_sha256, read_jsonl

#: Environment variable that switches every strict task to local files.
DATA_DIR_ENV = "SINKBENCH_DATA_DIR"
#: Largest local data file read, in bytes (the release files are at most a few megabytes).
DATA_FILE_LIMIT = 500_000_000


class DataUnavailable(UserError):
    """A task's documents cannot be loaded: the hub cannot serve them, or the local file is missing or malformed.
    The message names the dataset or file; :attr:`fix` says what to do."""


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


def read_records(path: Path) -> list[dict]:
    """The records of a JSON Lines data file (strict JSON, one object per line; a link is followed).

    Raises:
        ValueError: the file is too large or unreadable, or a line is not a JSON object (naming the line).
    """
    try:
        records = [record for _, record in read_jsonl(path, DATA_FILE_LIMIT, follow_links=True)]
    except UnsafeFileError as error:
        raise ValueError(f"{path}: {error.message}") from error
    if not all(isinstance(record, dict) for record in records):
        raise ValueError(f"{path}: holds a line that is not a JSON object")
    return records


def local_data_dir() -> Path | None:
    """Return the directory named by ``SINKBENCH_DATA_DIR``, or None when the switch is off."""
    value = os.environ.get(DATA_DIR_ENV, "").strip()
    return Path(value).expanduser() if value else None


def _from_hub(source: DataSource) -> datasets.DatasetDict:
    """The hub dataset, or :class:`DataUnavailable` when it cannot be reached or found."""
    try:
        return datasets.load_dataset(source.hub_path, source.hub_name)
    except OSError as error:  # offline, unreachable, not cached, not found (all OSError subclasses)
        raise DataUnavailable(
            f"cannot load {source.hub_path} from the Hugging Face Hub ({described(error)}).",
            f"set {DATA_DIR_ENV} to a folder holding the original '{source.local_file}', or go online.",
        ) from error


def load_task_data(source: DataSource) -> tuple[datasets.DatasetDict, dict[str, Any]]:
    """Load a task's documents from the hub or, with ``SINKBENCH_DATA_DIR`` set, from local files.

    Args:
        source: The task's hub dataset and local release file.

    Returns:
        A DatasetDict holding ``source.split``, and the record of where it came from:
        ``{"source": "local", "files": [{"file", "sha256"}]}`` or ``{"source": "hub", "dataset", "name"}``.

    Raises:
        DataUnavailable: the switch is on but the directory lacks the task's file, or the file is empty or
            malformed (naming the line); or the hub cannot serve the dataset.
    """
    data_dir = local_data_dir()
    if data_dir is None:
        record = {"source": "hub", "dataset": source.hub_path, "name": source.hub_name}
        return _from_hub(source), record
    path = data_dir / source.local_file
    if not path.is_file():
        raise DataUnavailable(
            f"{DATA_DIR_ENV}={data_dir} is set but {path} does not exist.",
            f"put the original '{source.local_file}' there, or unset {DATA_DIR_ENV} to load {source.hub_path} "
            "from the hub.",
        )
    fix = f"put the original '{source.local_file}' release file there"
    try:
        records = source.read_local(path)
    except (ValueError, OSError) as error:  # malformed or unreadable: JSON, CSV, encoding, permissions
        shown = one_line(error, 500)
        raise DataUnavailable(
            shown if str(path) in shown else f"{path}: {described(error, 500)}", fix
        ) from error
    if not records:
        raise DataUnavailable(f"{path} holds no records.", fix)
    record = {"source": "local", "files": [{"file": source.local_file, "sha256": file_sha256(path)}]}
    return datasets.DatasetDict({source.split: datasets.Dataset.from_list(records)}), record


class DataTask(ConfigurableTask):
    """A strict task whose documents come from :func:`load_task_data`; subclasses set :attr:`SOURCE`.

    The YAML names the subclass under ``class:``; the results file then records ``metadata.data``.
    """

    SOURCE: ClassVar[DataSource]

    def __init__(self, config: dict[str, Any] | None = None) -> None:
        install_error_hook()  # before super().__init__, which loads the documents
        name_gguf_cache_runs()  # a run on the embedded model writes into a readable folder
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
