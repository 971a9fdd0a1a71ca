"""Where lm-eval's and sinkbench's output files record the contributor's machine, and how that is replaced.

lm-eval writes what it was given: the model's local folder (``model_name``, ``config.model_args``, each task's
``metadata.pretrained``), the cache folder, the path of each task's YAML (``config_source``); a Hugging Face
``config.json`` keeps ``_name_or_path``; a ``sinkbench screen`` report keeps the model as it was named. An
absolute path (``/...``, ``~/...``, ``C:\\...``) with at least two parts, anywhere in a string, is local.

:func:`local_paths` finds them (the gate refuses a file holding one); :func:`redact` replaces a model's path by
its id and any other local path by :data:`PLACEHOLDER`, and returns a record of every field it changed, which
the entry keeps in ``metadata.json`` (``redactions``), so the files stay honest about being changed.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

#: What a local path that is not the model's becomes.
PLACEHOLDER = "<local>"
#: An absolute path of two or more parts, at the start of a string or after a separator (never inside a URL).
_PATH = re.compile(
    r"(?:(?<=^)|(?<=[\s=,;:\"'(\[]))"
    r"(?:/(?:[^\s/,;:\"'()\[\]<>]+/)+[^\s/,;:\"'()\[\]<>]*|~/[^\s,;:\"'()\[\]<>]+|[A-Za-z]:\\[^\s,;\"'()<>]+)"
)
#: Fields that name the model itself: a local path there becomes the model's id.
_MODEL_FIELDS = re.compile(
    r"^(model_name|config\.model_args(\.pretrained)?|configs\.[^.]+\.metadata\.pretrained|model\.id|_name_or_path)$"
)


@dataclass(frozen=True)
class Redaction:
    """One changed field: where it is (``file``, dotted ``field``) and what it says now; ``metadata.json`` keeps
    it as a dict (:func:`dataclasses.asdict`)."""

    file: str
    field: str
    replacement: str


def _strings(value: Any, field: str = "") -> Iterator[tuple[str, str]]:
    """Every string in a JSON value, with its dotted field path."""
    if isinstance(value, dict):
        for key, item in value.items():
            yield from _strings(item, f"{field}.{key}" if field else str(key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from _strings(item, f"{field}.{index}")
    elif isinstance(value, str):
        yield field, value


def _is_local(field: str, text: str) -> bool:
    # lm-eval's file-name form of a path: "/a/b" becomes "__a__b"
    return bool(_PATH.search(text)) or (field == "model_name_sanitized" and text.startswith("__"))


def local_paths(data: Any) -> list[tuple[str, str]]:
    """``(field, text)`` of every string of ``data`` (a parsed JSON file) that holds a local path."""
    return [(field, text) for field, text in _strings(data) if _is_local(field, text)]


def _replacement(field: str, text: str, model_id: str) -> str:
    if field == "model_name_sanitized":
        return model_id.replace("/", "__")
    if _MODEL_FIELDS.match(field) and _PATH.fullmatch(text):
        return model_id
    return _PATH.sub(model_id if _MODEL_FIELDS.match(field) else PLACEHOLDER, text)


def _rebuild(value: Any, field: str, change: dict[str, str]) -> Any:
    if isinstance(value, dict):
        return {
            key: _rebuild(item, f"{field}.{key}" if field else str(key), change)
            for key, item in value.items()
        }
    if isinstance(value, list):
        return [_rebuild(item, f"{field}.{index}", change) for index, item in enumerate(value)]
    return change.get(field, value) if isinstance(value, str) else value


def redact(data: Any, *, model_id: str, file: str) -> tuple[Any, list[Redaction]]:
    """``data`` with every local path replaced (the model's own path by ``model_id``), and what was changed.

    ``model_args`` written as one string (``pretrained=/x,dtype=...``) keeps its other arguments.
    """
    change = {}
    for field, text in local_paths(data):
        replacement = _replacement(field, text, model_id)
        if field.startswith("config.model_args") and "=" in text:
            replacement = re.sub(r"(^|,)pretrained=[^,]*", rf"\1pretrained={model_id}", text)
            replacement = _PATH.sub(PLACEHOLDER, replacement)
        change[field] = replacement
    records = [Redaction(file, field, replacement) for field, replacement in change.items()]
    return _rebuild(data, "", change), records
