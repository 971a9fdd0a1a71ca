"""Map a VLM checkpoint's tensor names onto the standalone causal LM's, from safetensors headers alone.

Each key (in any historical layout: ``language_model.model.layers.*``, ``model.layers.*``, the native
``model.language_model.*``) is renamed to the VLM's canonical name with the conversion mapping ``from_pretrained``
applies, then its language-model prefix is swapped for the causal LM's ``model.``; the result must cover every
parameter of a meta-device causal LM once, with the right shape.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import torch
from safetensors import SafetensorError, safe_open
from transformers import AutoModelForCausalLM, PretrainedConfig
from transformers.conversion_mapping import get_model_conversion_mapping
from transformers.core_model_loading import WeightConverter, WeightRenaming, rename_source_key

from sinkbench.extract.errors import ExtractError, listed
from sinkbench.extract.families import Family

LM_HEAD = "lm_head.weight"
_BITS = re.compile(r"\d+")


@dataclass(frozen=True)
class TensorRef:
    """One tensor to copy: its source file and name there, its causal-LM name, shape and size in bytes."""

    file: Path
    source_key: str
    target_key: str
    shape: tuple[int, ...]
    nbytes: int


def plan_tensors(
    vlm: torch.nn.Module, family: Family, target_config: PretrainedConfig, files: list[Path]
) -> list[TensorRef]:
    """The language-backbone tensors of a VLM checkpoint's ``files`` under their causal-LM names, in source order
    (``vlm``: on the meta device, :func:`sinkbench.extract.families.meta_vlm`).

    Raises:
        ExtractError: a corrupt file, or keys that do not cover the causal LM.
        NeedsConversion: a language-model tensor needs a fused-weight conversion.
    """
    headers = [(file, read_header(file)) for file in files]  # every file checked before any key is named
    canonical = _canonical_namer(vlm, family)
    refs = []
    for file, header in headers:
        for key, shape, nbytes in header:
            target_key = _target_key(canonical(key, file), family)
            if target_key is not None and not (target_key == LM_HEAD and target_config.tie_word_embeddings):
                refs.append(TensorRef(file, key, target_key, shape, nbytes))
    _check_coverage(refs, target_config, family)
    return refs


def read_header(file: Path) -> list[tuple[str, tuple[int, ...], int]]:
    """(key, shape, nbytes) of every tensor in a safetensors file, from its header only."""
    try:
        with safe_open(file, framework="pt") as handle:
            slices = {key: handle.get_slice(key) for key in handle.keys()}  # noqa: SIM118 (not iterable)
            return [
                (key, tuple(s.get_shape()), _nbytes(s.get_shape(), s.get_dtype()))
                for key, s in slices.items()
            ]
    except (SafetensorError, OSError) as error:
        raise ExtractError(
            f"{file}: not a readable safetensors file ({error}); re-download or re-save it"
        ) from error


def _nbytes(shape: list[int], dtype: str) -> int:
    """Bytes of a tensor from its safetensors dtype name (``F32``, ``BF16``, ``F8_E4M3``; ``BOOL`` is 1 byte)."""
    bits = 8 if dtype == "BOOL" else int(_BITS.search(dtype).group())
    return int(torch.Size(shape).numel()) * bits // 8


class NeedsConversion(Exception):
    """A language-model tensor needs one of transformers' fused-weight conversions: stream nothing, load whole."""


def _canonical_namer(vlm: torch.nn.Module, family: Family) -> Callable[[str, Path], str]:
    """``name(key, file) -> canonical VLM parameter name``, as ``from_pretrained`` renames keys; it raises
    NeedsConversion for a language-model tensor fused on load (other towers' conversions do not matter)."""
    mapping = get_model_conversion_mapping(vlm)
    renamings = [entry for entry in mapping if isinstance(entry, WeightRenaming)]
    converters = [entry for entry in mapping if isinstance(entry, WeightConverter)]
    known = vlm.state_dict()
    prefix = vlm.base_model_prefix

    def name(key: str, file: Path) -> str:
        renamed, converter = rename_source_key(key, renamings, converters, prefix, known)
        if renamed not in known and key in known:
            renamed, converter = key, None
        if converter is not None and _target_key(renamed, family) is not None:
            raise NeedsConversion(f"{file}: {key!r} needs a fused-weight conversion on load")
        return renamed

    return name


def _target_key(canonical: str, family: Family) -> str | None:
    """The causal-LM name of a canonical VLM parameter, or None if it is not part of the language model."""
    if canonical == family.lm_head:
        return LM_HEAD
    if not canonical.startswith(family.text_prefix):
        return None
    return "model." + canonical.removeprefix(family.text_prefix)


def _check_coverage(refs: list[TensorRef], target_config: PretrainedConfig, family: Family) -> None:
    """Raise unless the tensors cover every causal-LM parameter exactly once, with matching shapes."""
    with torch.device("meta"):
        model = AutoModelForCausalLM.from_config(target_config)
    expected = {key: tuple(value.shape) for key, value in model.state_dict().items()}
    for tied in model.get_expanded_tied_weights_keys(all_submodels=True):
        expected.pop(tied, None)
    found = Counter(ref.target_key for ref in refs)
    problems = {
        "missing": sorted(set(expected) - set(found)),
        "unexpected": sorted(set(found) - set(expected)),
        "duplicated": sorted(key for key, count in found.items() if count > 1),
        "wrong shape": [
            f"{ref.target_key} {ref.shape} != {expected[ref.target_key]}"
            for ref in refs
            if ref.target_key in expected and ref.shape != expected[ref.target_key]
        ],
    }
    if listed(problems):
        raise ExtractError(
            f"{family.name} checkpoint does not map onto {type(model).__name__}: {listed(problems)}"
        )
