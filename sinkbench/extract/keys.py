"""Map a VLM checkpoint's tensor names onto the standalone causal LM's, from headers alone.

Checkpoint keys come in several historical layouts (``language_model.model.layers.*`` for the
LLaVA family, ``model.layers.*`` for Qwen2-VL, the native ``model.language_model.*``). Each key
is first renamed to the VLM's canonical transformers-5 name with the conversion mapping that
``from_pretrained`` itself applies, then the language-model prefix is swapped for the causal
LM's ``model.``. Nothing is read but safetensors headers, and the result is checked against a
meta-device causal LM: every parameter covered once, with the right shape.
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

from sinkbench.extract.errors import ExtractError
from sinkbench.extract.families import Family

LM_HEAD = "lm_head.weight"
_BITS = re.compile(r"\d+")
_SHOWN = 5


@dataclass(frozen=True)
class TensorRef:
    """One tensor to copy.

    Attributes:
        file: source safetensors file.
        source_key: name in the source file.
        target_key: name in the causal LM.
        shape: tensor shape.
        nbytes: size in bytes.
    """

    file: Path
    source_key: str
    target_key: str
    shape: tuple[int, ...]
    nbytes: int


def plan_tensors(
    vlm: torch.nn.Module, family: Family, target_config: PretrainedConfig, files: list[Path]
) -> list[TensorRef]:
    """List the language-backbone tensors of a VLM checkpoint under their causal-LM names.

    Args:
        vlm: the VLM on the meta device (:func:`sinkbench.extract.families.meta_vlm`).
        family: where it keeps its language model.
        target_config: the causal-LM config built from it.
        files: the checkpoint's safetensors files.

    Returns:
        The tensors in source order (file by file), vision tower and projector left out.

    Raises:
        ExtractError: a corrupt file, a fused-weight conversion, or keys that do not cover the causal LM.
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
    """Return ``name(key, file) -> canonical VLM parameter name``, as ``from_pretrained`` renames keys.

    Raises (from the returned function):
        NeedsConversion: a language-model tensor is fused on load (other towers' conversions do not matter).
    """
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
    messages = [f"{kind}: {', '.join(keys[:_SHOWN])}" for kind, keys in problems.items() if keys]
    if messages:
        raise ExtractError(
            f"{family.name} checkpoint does not map onto {type(model).__name__}: " + "; ".join(messages)
        )
