"""Extraction by loading the VLM whole, for language-model tensors that need one of transformers' fused-weight
conversions on load (experts saved one per tensor): ``from_pretrained`` converts, ``save_pretrained`` writes the
layout transformers reads back. Peak memory is the VLM's size rather than one shard's."""

from __future__ import annotations

import gc
from pathlib import Path

import torch
from safetensors import SafetensorError
from transformers import AutoModelForCausalLM, AutoModelForImageTextToText, PretrainedConfig

from sinkbench.errors import one_line
from sinkbench.extract.errors import ExtractError, listed
from sinkbench.extract.families import Family, language_model, quiet_load


def write_loaded(
    source: Path, family: Family, target_config: PretrainedConfig, out_dir: Path, max_shard_bytes: int
) -> list[str]:
    """Load the VLM, move its language model and LM head into the causal LM of ``target_config`` (built on the meta
    device: no second copy of the weights), save it; returns the weight files written. ExtractError when the
    checkpoint lacks language-model tensors or they do not fit."""
    vlm = _load_vlm(source, family)
    with torch.device("meta"):  # non-persistent buffers (rotary tables) stay meta: they are not saved
        lm = AutoModelForCausalLM.from_config(target_config, dtype=next(vlm.parameters()).dtype)
    try:
        lm.get_decoder().load_state_dict(
            _adapted(language_model(vlm).state_dict(), family), strict=True, assign=True
        )
    except RuntimeError as error:
        raise ExtractError(
            f"{source}: the language model does not fit {type(lm).__name__} ({one_line(error, 300)})"
        ) from error
    if target_config.tie_word_embeddings:
        lm.tie_weights()  # loading with assign=True replaced the embeddings the head was tied to
    else:
        lm.get_output_embeddings().weight = vlm.get_output_embeddings().weight
    del vlm
    gc.collect()
    lm.save_pretrained(out_dir, max_shard_size=max_shard_bytes)
    return sorted(path.name for path in out_dir.glob("model*.safetensors"))


def _load_vlm(source: Path, family: Family) -> torch.nn.Module:
    """The VLM with its weights, refusing a checkpoint whose language model or LM head lacks tensors or has
    tensors of the wrong shape (``from_pretrained`` would initialise them at random); transformers' own
    multi-line load report is silenced, as this says what matters in one line."""
    try:
        vlm, info = quiet_load(AutoModelForImageTextToText, source, dtype="auto")
    except (RuntimeError, SafetensorError, OSError) as error:
        raise ExtractError(
            f"{source}: the VLM's weights cannot be loaded ({one_line(error, 300)}); re-download or re-save it"
        ) from error
    problems = {
        "missing": sorted(key for key in info["missing_keys"] if _ours(key, family)),
        "wrong shape": sorted(
            f"{key} {tuple(saved)} != {tuple(expected)} (config.json)"
            for key, saved, expected in info["mismatched_keys"]
            if _ours(key, family)
        ),
    }
    if listed(problems):
        raise ExtractError(
            f"{source}: the checkpoint does not hold the language model config.json describes ({listed(problems)}); "
            "re-download the checkpoint or fix config.json"
        )
    return vlm.eval()


def _ours(key: str, family: Family) -> bool:
    """Whether a canonical VLM parameter name belongs to the language model or its LM head."""
    return key == family.lm_head or key.startswith(family.text_prefix)


def _adapted(state: dict[str, torch.Tensor], family: Family) -> dict[str, torch.Tensor]:
    """The language model's tensors under the causal LM's names, embeddings cut to the rows it keeps (as the
    streamed path does, :func:`sinkbench.extract.keys.plan_tensors`)."""
    adapted = {}
    for name, tensor in state.items():
        for old, new in family.renames:
            if old in f".{name}":
                name = f".{name}".replace(old, new)[1:]
                break
        rows = family.embedding_rows if name == "embed_tokens.weight" else None
        adapted[name] = tensor if rows is None else tensor[:rows]
    return adapted
