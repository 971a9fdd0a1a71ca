"""Where a VLM checkpoint comes from: a local directory or a hub snapshot, its config and files."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path

from huggingface_hub.errors import StrictDataclassError
from transformers import AutoConfig, PretrainedConfig

from sinkbench.checkpoints import check_native, is_hub_id
from sinkbench.errors import one_line
from sinkbench.extract.errors import ExtractError
from sinkbench.safe_io import file_sha256

INDEX_FILE = "model.safetensors.index.json"
SINGLE_FILE = "model.safetensors"
#: What a snapshot download fetches: configs, safetensors weights, tokenizer and chat template files.
HUB_PATTERNS = ["*.json", "*.safetensors", "*.jinja", "*.model", "*.txt", "*.tiktoken"]
_SNAPSHOT = re.compile(r"^[0-9a-f]{40}$")


@dataclass(frozen=True)
class Source:
    """A resolved SOURCE: as the user gave it, its local directory, and its hub commit hash (None if no snapshot)."""

    id: str
    path: Path
    revision: str | None


def resolve_source(spec: str, revision: str | None = None) -> Source:
    """Resolve a local directory, or a hub id through ``snapshot_download`` (the cache with ``HF_HUB_OFFLINE=1``);
    ExtractError when neither exists."""
    path = Path(spec).expanduser()
    if path.is_dir():
        return Source(spec, path.absolute(), _snapshot_revision(path.absolute()))
    if path.exists() or not is_hub_id(spec):
        raise ExtractError(
            f"SOURCE {spec!r}: not a directory and not a hub id (expected ORG/NAME or a VLM dir)"
        )
    from huggingface_hub import snapshot_download

    try:
        local = Path(snapshot_download(spec, revision=revision, allow_patterns=HUB_PATTERNS))
    except Exception as error:  # the hub client raises many transport and lookup errors
        raise ExtractError(
            f"SOURCE {spec!r}: not a local directory, and the hub snapshot could not be fetched "
            f"({type(error).__name__}: {error}). Pass a local VLM directory, or check the id and network."
        ) from error
    return Source(spec, local, _snapshot_revision(local))


def _snapshot_revision(path: Path) -> str | None:
    """The commit hash of a hub-cache snapshot directory (``.../snapshots/<sha>``), else None."""
    return path.name if path.parent.name == "snapshots" and _SNAPSHOT.match(path.name) else None


def load_config(path: Path) -> PretrainedConfig:
    """Load a checkpoint's config: ExtractError when ``config.json`` is missing or unreadable, ModelNotSupported for
    remote code only (:mod:`sinkbench.checkpoints`)."""
    config_file = path / "config.json"
    if not config_file.is_file():
        raise ExtractError(f"{config_file}: missing; SOURCE must be a transformers model directory")
    check_native(path)
    try:
        return AutoConfig.from_pretrained(path)
    except (ValueError, KeyError, OSError, StrictDataclassError) as error:  # the last: wrong-typed fields
        raise ExtractError(
            f"{config_file}: cannot be read as a transformers config ({one_line(error, 300)})"
        ) from error


def weight_files(path: Path) -> list[Path]:
    """The checkpoint's safetensors files, in index order; ExtractError for none, an unreadable index, or a shard
    it names that is missing."""
    index = path / INDEX_FILE
    if index.is_file():
        try:
            values = set(json.loads(index.read_text())["weight_map"].values())
        except (json.JSONDecodeError, KeyError, TypeError, AttributeError) as error:
            raise ExtractError(f"{index}: not a safetensors index with a 'weight_map' ({error})") from error
        odd = [repr(value) for value in values if not isinstance(value, str)]
        if odd:
            raise ExtractError(
                f"{index}: weight_map values must be shard file names (strings), got {', '.join(sorted(odd))}"
            )
        names = sorted(values)
        nested = [name for name in names if Path(name).name != name]
        if nested:
            raise ExtractError(f"{index}: shard names must be plain file names, got {', '.join(nested)}")
        missing = [name for name in names if not (path / name).is_file()]
        if missing:
            raise ExtractError(f"{index}: names shards that are missing: {', '.join(missing)}")
        return [path / name for name in names]
    if (path / SINGLE_FILE).is_file():
        return [path / SINGLE_FILE]
    raise ExtractError(
        f"{path}: no {SINGLE_FILE} or {INDEX_FILE}; only safetensors checkpoints can be streamed "
        "(re-save the VLM with save_pretrained to convert .bin weights)"
    )


def file_hashes(path: Path, weights: list[Path]) -> dict[str, str]:
    """sha256 by name of every file the extraction may read: ``weights`` and the top-level config, tokenizer and
    chat-template files (matching ``HUB_PATTERNS``)."""
    others = [
        file
        for file in path.iterdir()
        if file.is_file() and file.suffix != ".safetensors" and any(file.match(p) for p in HUB_PATTERNS)
    ]
    return {file.name: file_sha256(file) for file in sorted([*others, *weights])}
