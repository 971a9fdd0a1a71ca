"""Extraction by loading the VLM whole, for checkpoints whose language-model tensors need one of transformers'
fused-weight conversions on load (mixture-of-experts layers saved one expert per tensor, fused later): the
conversion runs inside ``from_pretrained``, and the causal LM is saved by ``save_pretrained``, which writes the
layout transformers reads back. Peak memory is the VLM's size rather than one shard's."""

from __future__ import annotations

import gc
from pathlib import Path

import torch
from transformers import AutoModelForCausalLM, AutoModelForImageTextToText, PretrainedConfig

from sinkbench.extract.errors import ExtractError
from sinkbench.extract.families import Family, language_model


def write_loaded(
    source: Path, family: Family, target_config: PretrainedConfig, out_dir: Path, max_shard_bytes: int
) -> tuple[list[str], int, int]:
    """Load the VLM, copy its language model and LM head into the causal LM of ``target_config``, save it.

    Returns:
        The weight files written, the number of tensors and their bytes.

    Raises:
        ExtractError: the language model's weights do not fit the causal LM.
    """
    vlm = AutoModelForImageTextToText.from_pretrained(source, dtype="auto").eval()
    lm = AutoModelForCausalLM.from_config(
        target_config, dtype=next(vlm.parameters()).dtype
    )  # buffers built too
    try:
        lm.get_decoder().load_state_dict(
            _adapted(language_model(vlm).state_dict(), family), strict=True, assign=True
        )
    except RuntimeError as error:
        raise ExtractError(
            f"{source}: the language model does not fit {type(lm).__name__} ({error})"
        ) from error
    if target_config.tie_word_embeddings:
        lm.tie_weights()  # loading with assign=True replaced the embeddings the head was tied to
    else:
        lm.get_output_embeddings().weight = vlm.get_output_embeddings().weight
    del vlm
    gc.collect()
    lm.save_pretrained(out_dir, max_shard_size=max_shard_bytes)
    state = lm.state_dict()
    files = sorted(path.name for path in out_dir.glob("model*.safetensors"))
    return files, len(state), sum(tensor.numel() * tensor.element_size() for tensor in state.values())


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
