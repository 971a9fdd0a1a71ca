"""What a local checkpoint folder holds, read from its ``config.json`` before anything heavy loads: whether
transformers runs its model type natively. sinkbench never runs a repository's own code (``trust_remote_code``): a
model that exists only as remote code is refused in one line, naming a converted checkpoint where one is known."""

from __future__ import annotations

import json
import re
from pathlib import Path

from sinkbench.errors import ModelNotSupported, UserError

_HUB_ID = re.compile(r"[\w.-]+/[\w.-]+")


def is_hub_id(spec: str) -> bool:
    """Whether ``spec`` reads as a hub repository id (ORG/NAME), not a relative or home path such as ``./a/b``."""
    return bool(_HUB_ID.fullmatch(spec)) and not spec.startswith((".", "~"))


#: Remote-code model types -> where transformers-native conversions of them live.
CONVERTED_TYPES = {
    "internvl_chat": "OpenGVLab publishes transformers-native copies with an -hf suffix, e.g. "
    "OpenGVLab/InternVL3-8B-hf",
    "minicpmv": "no transformers-native conversion of MiniCPM-V is known to sinkbench",
    "molmo": "no transformers-native conversion of Molmo / MolmoE is known to sinkbench (transformers has Molmo2)",
    "ovis": "transformers has Ovis2 (model type ovis2), which needs a converted checkpoint; none is known to "
    "sinkbench",
}
#: Classes of the original LLaVA repository, whose checkpoints share model type ``llava`` but not its layout.
ORIGINAL_LLAVA = {
    "LlavaQwenForCausalLM": "llava-hf/llava-onevision-qwen2-7b-ov-hf",
    "LlavaMistralForCausalLM": "llava-hf/llava-v1.6-mistral-7b-hf",
    "LlavaLlamaForCausalLM": "llava-hf/llava-1.5-7b-hf",
}


def check_native(folder: Path) -> str:
    """The model type of ``folder/config.json`` if transformers runs it with its own classes; UserError without a
    readable ``config.json``, ModelNotSupported for remote code only or an original-repository layout."""
    config_file = folder / "config.json"
    try:
        config = json.loads(config_file.read_text(encoding="utf-8"))
        model_type = str(config["model_type"])
    except (OSError, ValueError, KeyError, TypeError) as error:
        raise UserError(
            f"{config_file}: not a readable transformers config with a model_type ({error}); "
            "pass a transformers model folder"
        ) from error
    reason = native_refusal(model_type, config.get("architectures") or [], bool(config.get("auto_map")))
    if reason is not None:
        raise ModelNotSupported(f"{config_file}: {reason}")
    return model_type


def native_refusal(model_type: str, architectures: list[str], auto_map: bool = False) -> str | None:
    """Why transformers cannot run a checkpoint of ``model_type`` with its own classes (None if it can): remote
    code only, or the original LLaVA layout; the reason names a converted checkpoint where one is known.

    Known cases are answered without transformers' name table (seconds to import; the site asks this of every
    remote-code model); ``tests/core/test_models.py`` checks none of :data:`CONVERTED_TYPES` is native."""
    original = next((name for name in architectures if name in ORIGINAL_LLAVA), None)
    if original is not None:
        return (
            f"{original} is the original LLaVA repository's layout, which transformers does not load; use its "
            f"transformers conversion, e.g. {ORIGINAL_LLAVA[original]}"
        )
    if model_type not in CONVERTED_TYPES:
        from transformers.models.auto.configuration_auto import CONFIG_MAPPING_NAMES

        if model_type in CONFIG_MAPPING_NAMES:
            return None
    if auto_map or model_type in CONVERTED_TYPES:
        remote = " (its config.json names remote code in auto_map)" if auto_map else ""
        what = f"exists only as remote code{remote}"
    else:  # unknown here: remote code, or a newer transformers
        import transformers

        what = (
            f"is not one that transformers {transformers.__version__} runs with its own classes (it exists only "
            "as remote code, or needs a newer transformers)"
        )
    where = CONVERTED_TYPES.get(model_type, "look for a converted checkpoint (often named with -hf)")
    return f"model type {model_type!r} {what}, and sinkbench runs transformers' own classes only; {where}"
