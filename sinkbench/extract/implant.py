"""``implant_lm``: the inverse of ``extract_lm``, a causal LM put back into its VLM.

The VLM's checkpoint is rewritten file by file with the same tensor names and layout: every tensor that
``extract_lm`` maps to the causal LM (:func:`sinkbench.extract.keys.plan_tensors`: the language model, and the LM
head unless tied) is taken from the causal LM instead, in the causal LM's dtype; the vision tower, the projector
and every other file (config, processor, tokenizer, chat template) are the VLM's. The causal LM must be of the
model type that runs the VLM's language model, with the same tensors and shapes (a merge, an ablation or a
random control of the VLM-LM; not a QK-norm injection, which adds tensors). The result is checked as an extraction
is: its text-only logits (the VLM's own forward) must equal the causal LM's, in float32.

Families whose language model needs transformers' conversions on load (fused experts, Molmo2) are refused:
``extract_lm`` loads them whole, and implanting would have to undo those conversions.
"""

from __future__ import annotations

import json
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path

from safetensors import safe_open
from safetensors.torch import save_file

from sinkbench.extract.errors import ExtractError, VerificationError
from sinkbench.extract.keys import read_header
from sinkbench.extract.pipeline import ExtractionPlan, check_apart, plan_extraction
from sinkbench.extract.source import INDEX_FILE, file_hashes, load_config, resolve_source, weight_files
from sinkbench.extract.verify import TOLERANCE, compare_logits
from sinkbench.provenance import report_header
from sinkbench.safe_io import install_directory, overlap

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
        overwrite: replace an existing ``out``.
        revision: hub revision for a hub id.
        tolerance: largest acceptable max |logit difference| for ``verify``.

    Raises:
        ExtractError: an unsupported VLM, or a causal LM that does not fit its language model.
        VerificationError: ``verify`` found a logit difference above ``tolerance``.
    """
    out, lm = Path(out).absolute(), Path(lm)
    if out.exists() and not overwrite:
        raise ExtractError(f"OUT {out} already exists; choose a new directory or pass --overwrite")
    plan = plan_extraction(resolve_source(vlm, revision))
    if plan.refs is None:
        raise ExtractError(
            f"{plan.family.name}: its language model needs transformers' conversions on load (fused experts or a "
            "renamed layout), which implant-lm does not undo; only checkpoints extract-lm streams can be implanted"
        )
    lm_files = _check_fit(plan, lm)
    check_apart(plan.source.path, out)
    if overlap(lm, out):
        raise ExtractError(
            f"OUT {out} overlaps LM {lm}; choose an OUT outside the causal LM's folder (and not above it)"
        )
    out.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{out.name}.partial-", dir=out.parent))
    try:
        replaced = _write(plan, lm_files, staging)
        verification = compare_logits(staging, lm, tolerance) if verify else None
        if verification is not None and not verification["passed"]:
            raise VerificationError(
                f"the implanted VLM's text-only logits differ from {lm}'s: max |logit diff| "
                f"{verification['max_abs_logit_diff']:.3g} > tolerance {tolerance:g} (float32); OUT not written"
            )
        record = {
            **report_header(),
            "vlm": {
                "id": plan.source.id,
                "revision": plan.source.revision,
                "files_sha256": file_hashes(plan.source.path, plan.files),
            },
            "lm": {"path": lm.name, "files_sha256": file_hashes(lm, sorted(set(lm_files.values())))},
            "family": plan.family.name,
            "tensors_replaced": replaced,
            "verification": verification,
        }
        (staging / IMPLANT_FILE).write_text(json.dumps(record, indent=2) + "\n")
        install_directory(staging, out, replace=overwrite)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return ImplantResult(out, record)


def _check_fit(plan: ExtractionPlan, lm: Path) -> dict[str, Path]:
    """Where each of the causal LM's tensors lives, after checking that they are exactly the tensors the VLM's
    language model maps to, in the same shapes.

    Raises:
        ExtractError: another model type or tie setting, or tensors missing, extra or of another shape.
    """
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
    messages = [f"{kind}: {', '.join(keys[:5])}" for kind, keys in problems.items() if keys]
    if messages:
        raise ExtractError(
            f"{lm}: its tensors do not fit {plan.family.name}'s language model (" + "; ".join(messages) + ")"
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
