"""Stream tensors by name from source safetensors files into sharded safetensors output, planned from header sizes
in source order, so only one output shard is ever held in memory."""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import torch
from safetensors import safe_open
from safetensors.torch import save_file

from sinkbench.extract.keys import TensorRef
from sinkbench.extract.source import INDEX_FILE, SINGLE_FILE


def plan_shards(refs: list[TensorRef], max_shard_bytes: int) -> list[list[TensorRef]]:
    """Split tensors, in order, into shards of at most ``max_shard_bytes`` (a larger tensor gets its own)."""
    shards: list[list[TensorRef]] = [[]]
    size = 0
    for ref in refs:
        if shards[-1] and size + ref.nbytes > max_shard_bytes:
            shards.append([])
            size = 0
        shards[-1].append(ref)
        size += ref.nbytes
    return [shard for shard in shards if shard]


def write_shards(shards: list[list[TensorRef]], out_dir: Path) -> list[str]:
    """Write the planned shards (and an index when there are several) into ``out_dir``; returns their names."""
    names = [_shard_name(number, len(shards)) for number in range(1, len(shards) + 1)]
    for name, shard in zip(names, shards, strict=True):
        save_file(_read(shard), str(out_dir / name), metadata={"format": "pt"})
    if len(shards) > 1:
        index = {
            "metadata": {"total_size": sum(ref.nbytes for shard in shards for ref in shard)},
            "weight_map": {
                ref.target_key: name for name, shard in zip(names, shards, strict=True) for ref in shard
            },
        }
        (out_dir / INDEX_FILE).write_text(json.dumps(index, indent=2, sort_keys=True) + "\n")
    return names


def _read(shard: list[TensorRef]) -> dict[str, torch.Tensor]:
    """Load one shard's tensors, opening each source file once per run of its tensors."""
    tensors = {}
    for file, group in itertools.groupby(shard, key=lambda ref: ref.file):
        with safe_open(file, framework="pt") as handle:
            for ref in group:
                tensors[ref.target_key] = handle.get_tensor(ref.source_key)
    return tensors


def _shard_name(number: int, total: int) -> str:
    """transformers' shard naming: ``model.safetensors`` alone, else ``model-0000i-of-0000n.safetensors``."""
    return SINGLE_FILE if total == 1 else f"model-{number:05d}-of-{total:05d}.safetensors"
