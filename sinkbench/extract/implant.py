"""``implant_lm``: the inverse of ``extract_lm``, a causal LM put back into its VLM.

The VLM's checkpoint is rewritten file by file with the same names and layout: every tensor ``extract_lm`` maps to
the causal LM (:func:`sinkbench.extract.keys.plan_tensors`) is taken from the causal LM, in its dtype; everything
else (vision tower, projector, config, processor, tokenizer) stays the VLM's. The causal LM must have exactly those
tensors and shapes (a merge, ablation or random control of the VLM-LM; not a QK-norm injection), and the result's
text-only logits must equal it in float32. Families ``extract_lm`` loads whole (fused experts, Molmo2) are refused.
"""

from __future__ import annotations

import json
import shutil
from dataclasses import dataclass
from pathlib import Path

from safetensors import safe_open
from safetensors.torch import save_file

from sinkbench.extract.errors import ExtractError, listed
from sinkbench.extract.keys import read_header
from sinkbench.extract.pipeline import (
    ExtractionPlan,
    check_apart,
    check_verified,
    new_output,
    plan_extraction,
    source_record,
)
from sinkbench.extract.source import INDEX_FILE, file_hashes, load_config, resolve_source, weight_files
from sinkbench.extract.verify import TOLERANCE, compare_logits
from sinkbench.provenance import report_header
from sinkbench.safe_io import building

IMPLANT_FILE = "implant.json"


@dataclass(frozen=True)
class ImplantResult:
    """What ``implant_lm`` produced: the VLM folder and the contents of its ``implant.json``."""

    output: Path
    record: dict


def implant_lm(
    vlm: str,
    lm: str | Path,
    out: str | Path,
    *,
    verify: bool = True,
    overwrite: bool = False,
    revision: str | None = None,
    tolerance: float = TOLERANCE,
) -> ImplantResult:
    """Write the VLM ``vlm`` with its language model (and LM head) replaced by the causal LM ``lm`` into ``out``.

    Everything is written beside ``out`` and moved into place only when complete and verified; on any error
    ``out`` is left as it was.

    Args:
        vlm: hub id or local directory of the VLM (as for ``extract_lm``).
        lm: the causal-LM folder to implant (e.g. an ``extract_lm`` output, merged).
        out: the output VLM folder.
        verify: compare the text-only logits of the result with the causal LM's (float32).
        overwrite, revision, tolerance: as for ``extract_lm``.

    Raises:
        ExtractError: an unsupported VLM, or a causal LM that does not fit its language model.
        VerificationError: ``verify`` found a logit difference above ``tolerance``.
    """
    out, lm = new_output(out, overwrite), Path(lm)
    plan = plan_extraction(resolve_source(vlm, revision))
    if plan.refs is None:
        raise ExtractError(
            f"{plan.family.name}: its language model needs transformers' conversions on load (fused experts or a "
            "renamed layout), which implant-lm does not undo; only checkpoints extract-lm streams can be implanted"
        )
    lm_files = _check_fit(plan, lm)
    check_apart(plan.source.path, out)
    check_apart(lm, out, "LM", "the causal LM's")
    with building(out, f".{out.name}.partial-", replace=overwrite) as staging:
        replaced = _write(plan, lm_files, staging)
        verification = compare_logits(staging, lm, tolerance) if verify else None
        check_verified(verification, tolerance, f"the implanted VLM's text-only logits differ from {lm}'s")
        record = {
            **report_header(),
            "vlm": source_record(plan),
            "lm": {"path": lm.name, "files_sha256": file_hashes(lm, sorted(set(lm_files.values())))},
            "family": plan.family.name,
            "tensors_replaced": replaced,
            "verification": verification,
        }
        (staging / IMPLANT_FILE).write_text(json.dumps(record, indent=2) + "\n")
    return ImplantResult(out, record)


def _check_fit(plan: ExtractionPlan, lm: Path) -> dict[str, Path]:
    """Where each of the causal LM's tensors lives, after checking they are exactly those the VLM's language model
    maps to, in the same shapes (ExtractError: another model type or tie setting, or tensors that differ)."""
    config = load_config(lm)
    expected_type, tied = plan.family.causal_lm_type, bool(plan.target_config.tie_word_embeddings)
    if config.model_type != expected_type or bool(config.tie_word_embeddings) != tied:
        raise ExtractError(
            f"{lm}: a {config.model_type!r} causal LM (tied embeddings: {bool(config.tie_word_embeddings)}); "
            f"{plan.family.name}'s language model runs as {expected_type!r} (tied: {tied}); implant the LM "
            "extracted from this VLM, or one made from it"
        )
    found = {key: (file, shape) for file in weight_files(lm) for key, shape, _ in read_header(file)}
    wanted = {ref.target_key: ref.shape for ref in plan.refs}
    problems = {
        "missing": sorted(set(wanted) - set(found)),
        "not in the VLM's language model": sorted(
            set(found) - set(wanted) - ({"lm_head.weight"} if tied else set())
        ),
        "wrong shape": sorted(key for key in set(wanted) & set(found) if found[key][1] != wanted[key]),
    }
    if listed(problems):
        raise ExtractError(
            f"{lm}: its tensors do not fit {plan.family.name}'s language model ({listed(problems)})"
        )
    return {key: file for key, (file, _) in found.items() if key in wanted}


def _write(plan: ExtractionPlan, lm_files: dict[str, Path], staging: Path) -> int:
    """Write the VLM's files into ``staging`` with the language-model tensors taken from the causal LM; returns
    how many tensors were replaced."""
    replacements = {(ref.file, ref.source_key): ref.target_key for ref in plan.refs}
    for file in plan.source.path.iterdir():
        if file.is_file() and file not in plan.files and file.name != INDEX_FILE:
            shutil.copy2(file, staging / file.name)
    total = 0
    for file in plan.files:
        tensors = {}
        with safe_open(file, framework="pt") as handle:
            for key in handle.keys():  # noqa: SIM118 (not iterable)
                target = replacements.get((file, key))
                if target is None:
                    tensors[key] = handle.get_tensor(key)
                else:
                    with safe_open(lm_files[target], framework="pt") as source:
                        tensors[key] = source.get_tensor(target)
        save_file(tensors, str(staging / file.name), metadata={"format": "pt"})
        total += sum(tensor.numel() * tensor.element_size() for tensor in tensors.values())
    index = plan.source.path / INDEX_FILE
    if index.is_file():
        mapping = json.loads(index.read_text())
        mapping["metadata"] = {**mapping.get("metadata", {}), "total_size": total}
        (staging / INDEX_FILE).write_text(json.dumps(mapping, indent=2, sort_keys=True) + "\n")
    return len(replacements)
