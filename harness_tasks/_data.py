"""The ``SINKBENCH_DATA_DIR`` switch shared by the strict-format tasks.

Every strict task loads its documents through :func:`load_task_data`. Without the switch it
loads the hub dataset users expect (``datasets.load_dataset``, honouring ``HF_DATASETS_OFFLINE``
and the local Hugging Face cache). With ``SINKBENCH_DATA_DIR=DIR`` it reads the task's original
release file from ``DIR`` instead and never touches the network; a missing file is an error,
never a silent fallback to the hub.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import datasets

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


def load_task_data(source: DataSource) -> datasets.DatasetDict:
    """Load a task's documents from the hub or, with ``SINKBENCH_DATA_DIR`` set, from local files.

    Args:
        source: The task's hub dataset and local release file.

    Returns:
        A DatasetDict holding ``source.split``.

    Raises:
        FileNotFoundError: the switch is on but the directory lacks the task's file.
    """
    import datasets

    data_dir = local_data_dir()
    if data_dir is None:
        return datasets.load_dataset(source.hub_path, source.hub_name)
    path = data_dir / source.local_file
    if not path.is_file():
        raise FileNotFoundError(
            f"{DATA_DIR_ENV}={data_dir} is set but {path} does not exist. Put the original "
            f"'{source.local_file}' there, or unset {DATA_DIR_ENV} to load {source.hub_path} from the hub."
        )
    records = source.read_local(path)
    if not records:
        raise ValueError(f"{path} holds no records; expected the original '{source.local_file}' release file")
    return datasets.DatasetDict({source.split: datasets.Dataset.from_list(records)})
