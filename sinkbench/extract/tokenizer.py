"""Carry the tokenizer and chat template over to the extracted LM."""

from __future__ import annotations

import json
from pathlib import Path

from transformers import AutoTokenizer, PreTrainedTokenizerBase

from sinkbench.extract.errors import ExtractError

#: Older VLM repositories keep the processor's chat template here instead of in the tokenizer.
PROCESSOR_TEMPLATE_FILE = "chat_template.json"
#: A held-out text-only probe: plain prose and a formatted instruction, no special tokens.
PROBE_TEXT = (
    "The lighthouse keeper counted ships until dawn. Write exactly three bullet points about "
    "tides, in lowercase, and end your answer with the word 'harbor'."
)


def copy_tokenizer(origin: str | Path, vocab_size: int, out_dir: Path) -> dict:
    """Save the tokenizer and chat template of ``origin`` (the VLM directory, or a reference LLM) into ``out_dir``;
    returns ``{"from": origin, "chat_template": where the template came from, or None}``.

    Without a chat template of its own, the processor's legacy ``chat_template.json`` beside it is used. The saved
    tokenizer, reloaded as users will (after ``config.json``: transformers picks some classes by model type), must
    encode a probe identically; ExtractError otherwise, or without a tokenizer, or with more tokens than
    ``vocab_size``."""
    tokenizer = load_tokenizer(origin)
    template_source = "tokenizer" if tokenizer.chat_template else None
    legacy = Path(origin) / PROCESSOR_TEMPLATE_FILE
    if template_source is None and legacy.is_file():
        tokenizer.chat_template = _legacy_template(legacy)
        template_source = PROCESSOR_TEMPLATE_FILE
    if len(tokenizer) > vocab_size:
        raise ExtractError(
            f"tokenizer from {origin} has {len(tokenizer)} tokens but the extracted LM has only {vocab_size} "
            "embedding rows; take the tokenizer from the matching model"
        )
    tokenizer.save_pretrained(out_dir)
    if load_tokenizer(out_dir)(PROBE_TEXT).input_ids != tokenizer(PROBE_TEXT).input_ids:
        raise ExtractError(
            f"tokenizer from {origin} encodes differently once saved beside the extracted config "
            "(transformers chooses the tokenizer class by model type); take it from the reference LLM"
        )
    return {"from": str(origin), "chat_template": template_source}


def _legacy_template(path: Path) -> str:
    """The ``chat_template`` string of a processor's ``chat_template.json`` (raises ExtractError)."""
    try:
        template = json.loads(path.read_text())["chat_template"]
        if not isinstance(template, str):
            raise TypeError(f"chat_template is {type(template).__name__}, not a string")
    except (ValueError, OSError, KeyError, TypeError) as error:
        raise ExtractError(
            f'{path}: not a processor chat template {{"chat_template": "..."}} ({type(error).__name__}: {error}); '
            "fix the file, or pass --tokenizer-from with the reference LLM's dir or id"
        ) from error
    return template


def load_tokenizer(origin: str | Path) -> PreTrainedTokenizerBase:
    """Load a tokenizer, transformers' failures as one ExtractError (one that encodes a word to nothing, as
    transformers builds from a directory without tokenizer files, counts as missing)."""
    hint = "pass --tokenizer-from with the reference LLM's dir or id"
    try:
        tokenizer = AutoTokenizer.from_pretrained(origin)
    except (OSError, ValueError, KeyError, TypeError) as error:
        raise ExtractError(f"{origin}: no usable tokenizer ({error}); {hint}") from error
    if not tokenizer("the", add_special_tokens=False).input_ids:
        raise ExtractError(f"{origin}: no tokenizer files (tokenizer.json, tokenizer_config.json); {hint}")
    return tokenizer
