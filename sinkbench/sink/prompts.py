"""Calibration prompts: the packaged set, or a user file (JSON Lines with ``prompt``, or plain text)."""

from __future__ import annotations

import json
from importlib import resources
from pathlib import Path

#: Most prompts a calibration file may hold.
MAX_PROMPTS = 10_000


def load_prompts(path: str | Path | None = None) -> list[str]:
    """Load calibration prompts: the packaged 15 by default, or a user file.

    A user file is JSON Lines with a ``prompt`` field per line, or plain text with one
    prompt per non-empty line.

    Raises:
        ValueError: naming the file and line of any malformed entry.
    """
    if path is None:
        text = resources.files("sinkbench.calibration").joinpath("prompts.jsonl").read_text("utf-8")
        return _parse_prompts(text, "<packaged prompts.jsonl>", jsonl=True)
    file = Path(path)
    if not file.is_file():
        raise FileNotFoundError(f"Calibration file {file} does not exist.")
    return _parse_prompts(file.read_text("utf-8"), str(file), jsonl=file.suffix in (".jsonl", ".json"))


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
            raise ValueError(f"{name}:{number}: not valid JSON ({error.msg}).") from error
        if not isinstance(row, dict) or not isinstance(row.get("prompt"), str) or not row["prompt"].strip():
            raise ValueError(f'{name}:{number}: expected an object with a non-empty string "prompt" field.')
        prompts.append(row["prompt"])
    if not prompts or len(prompts) > MAX_PROMPTS:
        raise ValueError(f"{name}: expected 1 to {MAX_PROMPTS} prompts, found {len(prompts)}.")
    return prompts
