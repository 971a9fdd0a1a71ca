"""``extract_lm``: a VLM's language backbone as a standalone causal-LM directory, written atomically."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from transformers import GenerationConfig, PretrainedConfig
from transformers.utils.hub import convert_file_size_to_int

from sinkbench.extract.config import causal_lm_config
from sinkbench.extract.errors import ExtractError, VerificationError
from sinkbench.extract.families import DEFAULT_MAX_SHARD_SIZE, Family, family_for, meta_vlm
from sinkbench.extract.keys import NeedsConversion, TensorRef, plan_tensors, read_header
from sinkbench.extract.loaded import write_loaded
from sinkbench.extract.shards import plan_shards, write_shards
from sinkbench.extract.source import Source, file_hashes, load_config, resolve_source, weight_files
from sinkbench.extract.tokenizer import copy_tokenizer
from sinkbench.extract.verify import TOLERANCE, compare_logits
from sinkbench.provenance import report_header
from sinkbench.safe_io import building, overlap

PROVENANCE_FILE = "provenance.json"
#: How the weights were written (provenance ``causal_lm.method``), with the note recorded beside it.
STREAMED, LOADED = "streamed", "loaded"
METHOD_NOTES = {
    STREAMED: "copied by name from the safetensors files",
    LOADED: "loaded whole: transformers converts some of its tensors on load (fused experts, merged embeddings)",
}


@dataclass(frozen=True)
class ExtractionResult:
    """What ``extract_lm`` produced: the causal-LM directory and the contents of its ``provenance.json``."""

    output: Path
    provenance: dict


@dataclass(frozen=True)
class ExtractionPlan:
    """Everything known about an extraction before any tensor is read."""

    source: Source
    family: Family
    files: list[Path]
    #: None: the tensors need transformers' conversions, so the VLM is loaded whole.
    refs: list[TensorRef] | None
    target_config: PretrainedConfig


def extract_lm(
    source: str,
    out: str | Path,
    *,
    verify: bool = False,
    tokenizer_from: str | None = None,
    max_shard_size: str | int = DEFAULT_MAX_SHARD_SIZE,
    overwrite: bool = False,
    revision: str | None = None,
    tolerance: float = TOLERANCE,
) -> ExtractionResult:
    """Extract the language backbone of a VLM as a causal LM that ``from_pretrained`` and lm-eval load.

    Everything is written to a temporary directory beside ``out`` and moved into place only when
    complete (and verified, with ``verify``); on any error ``out`` is left untouched. Peak memory
    is about 1.6 times the largest output shard (``--verify`` then loads one model at a time).

    Args:
        source: hub id or local directory of a supported VLM.
        out: output directory.
        verify: compare logits on a text-only probe against the VLM's own forward (float32).
        tokenizer_from: take tokenizer and chat template from this reference LLM instead of the VLM.
        max_shard_size: largest output shard (``"5GB"`` or bytes).
        overwrite: replace an existing ``out``.
        revision: hub revision for a hub id.
        tolerance: largest acceptable max |logit difference| for ``verify``.

    Raises:
        ExtractError: bad source or output (unsupported family, missing or corrupt files).
        VerificationError: ``verify`` found a logit difference above ``tolerance``.
    """
    out = new_output(out, overwrite)
    shard_bytes = _shard_bytes(max_shard_size)
    plan = plan_extraction(resolve_source(source, revision))
    check_apart(plan.source.path, out)
    with building(out, f".{out.name}.partial-", replace=overwrite) as staging:
        tokenizer, weights = _write(plan, staging, tokenizer_from, shard_bytes)
        verification = compare_logits(plan.source.path, staging, tolerance) if verify else None
        check_verified(verification, tolerance, f"extracted LM differs from {source}'s language path")
        provenance = _provenance(plan, tokenizer, weights, verification)
        (staging / PROVENANCE_FILE).write_text(json.dumps(provenance, indent=2) + "\n")
    return ExtractionResult(out, provenance)


def new_output(out: str | Path, overwrite: bool) -> Path:
    """``out`` made absolute; ExtractError when it exists and ``overwrite`` is off."""
    out = Path(out).absolute()
    if out.exists() and not overwrite:
        raise ExtractError(f"OUT {out} already exists; choose a new directory or pass --overwrite")
    return out


def check_verified(verification: dict | None, tolerance: float, what: str) -> None:
    """Raise VerificationError, starting with ``what``, when ``verification`` found too large a logit difference."""
    if verification is not None and not verification["passed"]:
        raise VerificationError(
            f"{what}: max |logit diff| {verification['max_abs_logit_diff']:.3g} > tolerance {tolerance:g} "
            "(float32); OUT not written"
        )


def check_apart(source: Path, out: Path, name: str = "SOURCE", folder: str = "the VLM's") -> None:
    """Raise ExtractError when OUT is the ``source`` folder (``name``, ``folder``: how the message calls it),
    inside it, or holds it (``--overwrite`` would replace or change it)."""
    if overlap(source, out):
        raise ExtractError(
            f"OUT {out} overlaps {name} {source}; choose an OUT outside {folder} folder (and not above it)"
        )


def _shard_bytes(max_shard_size: str | int) -> int:
    """``max_shard_size`` in bytes (``"5GB"``, ``"500MB"`` or an int); raises ExtractError if invalid."""
    try:
        size = convert_file_size_to_int(max_shard_size)
    except ValueError as error:
        raise ExtractError(f"max shard size {max_shard_size!r}: {error}") from error
    if size <= 0:
        raise ExtractError(f"max shard size {max_shard_size!r}: must be positive, e.g. '5GB'")
    return size


def plan_extraction(source: Source) -> ExtractionPlan:
    """Read the config and weight headers and map every backbone tensor (raises ExtractError)."""
    where = str(source.path / "config.json")
    config = load_config(source.path)
    vlm = meta_vlm(config, where)
    family = family_for(config, vlm, where)
    target_config = causal_lm_config(config, family)
    files = weight_files(source.path)
    try:
        refs = plan_tensors(vlm, family, target_config, files)
    except NeedsConversion:
        refs = None
    return ExtractionPlan(source, family, files, refs, target_config)


def _write(
    plan: ExtractionPlan, staging: Path, tokenizer_from: str | None, max_shard_bytes: int
) -> tuple[dict, dict]:
    """Write config, generation config, tokenizer (first: its checks are cheap) and weight shards; returns the
    tokenizer's provenance entry and the weights' (method, files, tensors and bytes read back from the headers)."""
    plan.target_config.save_pretrained(staging)
    if (plan.source.path / "generation_config.json").is_file():
        GenerationConfig.from_pretrained(plan.source.path).save_pretrained(staging)
    tokenizer = copy_tokenizer(tokenizer_from or plan.source.path, plan.target_config.vocab_size, staging)
    if plan.refs is None:
        shards = write_loaded(plan.source.path, plan.family, plan.target_config, staging, max_shard_bytes)
        method = LOADED
    else:
        shards = write_shards(plan_shards(plan.refs, max_shard_bytes), staging)
        method = STREAMED
    written = [entry for shard in shards for entry in read_header(staging / shard)]
    return tokenizer, {
        "method": method,
        "method_note": METHOD_NOTES[method],
        "shards": shards,
        "tensors": len(written),
        "bytes": sum(nbytes for _, _, nbytes in written),
    }


def source_record(plan: ExtractionPlan) -> dict:
    """The source VLM as a record names it: its id, hub revision and files' sha256."""
    return {
        "id": plan.source.id,
        "revision": plan.source.revision,
        "files_sha256": file_hashes(plan.source.path, plan.files),
    }


def _provenance(plan: ExtractionPlan, tokenizer: dict, weights: dict, verification: dict | None) -> dict:
    """The provenance record written beside the weights (a local reference tokenizer's files hashed too)."""
    origin = Path(tokenizer["from"])
    if origin != plan.source.path and origin.is_dir():
        tokenizer = {**tokenizer, "files_sha256": file_hashes(origin, [])}
    return {
        **report_header(),
        "source": source_record(plan),
        "family": plan.family.name,
        "vlm_model_type": plan.family.model_type,
        "causal_lm": {
            "architecture": plan.target_config.architectures[0],
            "model_type": plan.target_config.model_type,
            "tied_embeddings": bool(plan.target_config.tie_word_embeddings),
            **weights,
        },
        "tokenizer": tokenizer,
        "verification": verification,
    }
