"""Where the strict-format tasks take their documents from: the hub, or ``SINKBENCH_DATA_DIR``.

Every strict task is a :class:`DataTask` (:func:`data_task`) loading its documents through :func:`load_task_data`:
the hub dataset (``datasets.load_dataset``, honouring ``HF_DATASETS_OFFLINE`` and the cache), or with
``SINKBENCH_DATA_DIR=DIR`` the task's original release file from ``DIR``, never the network (a missing file is an
error, not a fallback). The results file records the origin under ``metadata.data``. Documents that cannot be
loaded raise :class:`DataUnavailable`, naming the file or dataset and the fix (one line under ``lm_eval``).
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


def read_records(path: Path) -> list[dict]:
    """The records of a JSON Lines data file (strict JSON, one object per line; a link is followed); ValueError for
    a file too large or unreadable, or a line that is not a JSON object (naming the line)."""
    try:
        records = [record for _, record in read_jsonl(path, DATA_FILE_LIMIT, follow_links=True)]
    except UnsafeFileError as error:
        raise ValueError(f"{path}: {error.message}") from error
    if not all(isinstance(record, dict) for record in records):
        raise ValueError(f"{path}: holds a line that is not a JSON object")
    return records


@dataclass(frozen=True)
class DataSource:
    """Where one task's documents come from: the Hub dataset ``hub_path`` (configuration ``hub_name``) and its
    ``split`` the task evaluates, or the release file ``local_file`` in ``SINKBENCH_DATA_DIR``, which ``read_local``
    reads into records shaped like the hub rows (exposed under the same split)."""

    hub_path: str
    split: str
    local_file: str
    hub_name: str | None = None
    read_local: Callable[[Path], list[dict]] = read_records


def load_task_data(source: DataSource) -> tuple[datasets.DatasetDict, dict[str, Any]]:
    """Load a task's documents from the hub or, with ``SINKBENCH_DATA_DIR`` set, from local files.

    Returns:
        A DatasetDict holding ``source.split``, and where it came from: ``{"source": "local", "files": [{"file",
        "sha256"}]}`` or ``{"source": "hub", "dataset", "name"}``.

    Raises:
        DataUnavailable: the local file is missing, empty or malformed (naming the line), or the hub cannot serve
            the dataset.
    """
    value = os.environ.get(DATA_DIR_ENV, "").strip()
    if not value:
        try:
            dataset = datasets.load_dataset(source.hub_path, source.hub_name)
        except OSError as error:  # offline, unreachable, not cached, not found (all OSError subclasses)
            raise DataUnavailable(
                f"cannot load {source.hub_path} from the Hugging Face Hub ({described(error)}).",
                f"set {DATA_DIR_ENV} to a folder holding the original '{source.local_file}', or go online.",
            ) from error
        return dataset, {"source": "hub", "dataset": source.hub_path, "name": source.hub_name}
    data_dir = Path(value).expanduser()
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
    """A strict task whose documents come from :func:`load_task_data`; subclasses (:func:`data_task`) set
    :attr:`SOURCE`, and the YAML names one under ``class:``."""

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


def data_task(**fields: Any) -> type[DataTask]:
    """The :class:`DataTask` subclass of one task family, loading ``DataSource(**fields)`` (its ``SOURCE``)."""
    source = DataSource(**fields)
    return type(f"DataTask_{source.local_file.split('.')[0]}", (DataTask,), {"SOURCE": source})
