"""Calibration prompts: the packaged sets (``v1``, the leaderboard's unless a record says otherwise; ``v2``, a
second independently written set of 15 in the same style), or a user file (JSON Lines with ``prompt``, or one
prompt per line), with a content hash of exactly which prompts S was measured on. Neither set holds an IFEval item.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

from sinkbench.errors import UserError
from sinkbench.safe_io import read_text

#: Most prompts a calibration file may hold.
MAX_PROMPTS = 10_000
#: The packaged sets, and the one used when none is named.
PACKAGED_SETS = ("v1", "v2")
DEFAULT_SET = "v1"


@dataclass(frozen=True)
class CalibrationSet:
    """The ``prompts`` and where they came from: ``name``, the packaged set's (``v1``) or the file as given, and
    ``sha256`` of the prompts themselves (JSON list, UTF-8), independent of the file's formatting."""

    name: str
    prompts: tuple[str, ...]
    sha256: str

    def to_dict(self) -> dict[str, object]:
        """The record kept in reports: name, hash and count (the prompts are listed separately)."""
        return {"set": self.name, "sha256": self.sha256, "prompts": len(self.prompts)}


def load_calibration(spec: str | Path | None = None) -> CalibrationSet:
    """A packaged set by name (default :data:`DEFAULT_SET`) or a user file; FileNotFoundError when ``spec`` is
    neither, UserError naming the file and line of a malformed entry."""
    name = str(spec) if spec is not None else DEFAULT_SET
    if name in PACKAGED_SETS:
        text = resources.files("sinkbench.calibration").joinpath(f"{name}.jsonl").read_text("utf-8")
        prompts = _parse_prompts(text, f"<packaged {name}.jsonl>", jsonl=True)
    else:
        file = Path(name)
        if not file.is_file():
            raise FileNotFoundError(
                f"Calibration prompts {name!r} are neither a packaged set ({', '.join(PACKAGED_SETS)}) nor a file."
            )
        prompts = _parse_prompts(read_text(file), name, jsonl=file.suffix in (".jsonl", ".json"))
    digest = hashlib.sha256(json.dumps(prompts, ensure_ascii=False).encode("utf-8")).hexdigest()
    return CalibrationSet(name, tuple(prompts), digest)


def load_prompts(spec: str | Path | None = None) -> list[str]:
    """The prompts of :func:`load_calibration` (a packaged set's name, a file, or None for the default)."""
    return list(load_calibration(spec).prompts)


def _parse_prompts(text: str, name: str, *, jsonl: bool) -> list[str]:
    prompts = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        if not jsonl:
            prompts.append(line.strip())
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as error:
            raise UserError(f"{name}:{number}: not valid JSON ({error.msg}).") from error
        if not isinstance(row, dict) or not isinstance(row.get("prompt"), str) or not row["prompt"].strip():
            raise UserError(f'{name}:{number}: expected an object with a non-empty string "prompt" field.')
        prompts.append(row["prompt"])
    if not prompts or len(prompts) > MAX_PROMPTS:
        raise UserError(f"{name}: expected 1 to {MAX_PROMPTS} prompts, found {len(prompts)}.")
    return prompts
