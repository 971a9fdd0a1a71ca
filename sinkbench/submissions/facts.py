"""What an entry says about its models beyond their scores: their size (``params_b`` in ``metadata.json``, else
the count lm-eval recorded from the weights), the protocol their S was measured by (so that S of two protocols are
never silently compared: a publication's, or sinkbench's calibration set, dtype and weights), and the basis each
score was measured on (subset or limit, token cap, dtype, weights) as its results file records it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from typing import Any

from sinkbench.submissions.catalogue import SINK_TASK
from sinkbench.submissions.entry import Entry, ResultsFile, Side
from sinkbench.submissions.schema import ModelRef
from sinkbench.weights import TRANSFORMERS_WEIGHTS, weights_label


@dataclass(frozen=True)
class ModelSize:
    """A parameter count in billions and where it comes from (``weights``, ``source``, ``model card``,
    ``model name``)."""

    billions: float
    source: str


@dataclass(frozen=True)
class SProtocol:
    """How an S was obtained: ``reported`` (with the citation) or ``sinkbench`` (with calibration, dtype and
    weights). Two values of S are comparable only when their protocols are equal."""

    kind: str
    detail: str

    @property
    def label(self) -> str:
        """E.g. ``sinkbench: calibration v1 (523de985), float32, GGUF Q4_1``."""
        return f"{self.kind}: {self.detail}"


_ARXIV = re.compile(r"arXiv[: ]*(\d{4}\.\d{4,5})", re.IGNORECASE)


def _cited(entry: Entry) -> str:
    """The entry's citation as ``arXiv NNNN.NNNNN`` when it names one, else its first 60 characters."""
    citation = entry.metadata.citation
    if citation is None:
        return "source not stated"
    found = _ARXIV.search(citation.source)
    return f"arXiv {found.group(1)}" if found else citation.source[:60]


def _from_weights(side: Side | None) -> ModelSize | None:
    counts = [item.data.config.model_num_parameters for item in side.results] if side else []
    count = next((value for value in counts if value), None)
    return ModelSize(count / 1e9, "weights") if count else None


def _declared(model: ModelRef | None) -> ModelSize | None:
    if model is None or model.params_b is None or model.params_source is None:
        return None
    return ModelSize(model.params_b, model.params_source)


def llm_size(entry: Entry) -> ModelSize | None:
    """The size of the entry's LLM (the reference of a pair, or the backbone): declared, else counted by lm-eval."""
    return _declared(entry.llm) or _from_weights(entry.llm_side)


def vlm_size(entry: Entry) -> ModelSize | None:
    """The size of a pair's VLM as declared, else that of its extracted VLM-LM as counted by lm-eval."""
    return _declared(entry.vlm) or _from_weights(entry.sides.get("vlm"))


def model_args(value: str | dict[str, Any] | None) -> dict[str, Any]:
    """lm-eval's recorded ``model_args`` as a dict (it writes a dict, or the command-line string)."""
    if isinstance(value, dict):
        return value
    pairs = (item.split("=", 1) for item in str(value or "").split(",") if "=" in item)
    return {key.strip(): item.strip() for key, item in pairs}


def sinkbench_protocol(calibration: object, dtype: str | None, weights: str) -> SProtocol:
    """The protocol of an S measured by sinkbench: its calibration set (name and hash), dtype and weights."""
    if isinstance(calibration, dict) and isinstance(calibration.get("set"), str):
        prompts = f"calibration {calibration['set']} ({str(calibration.get('sha256', ''))[:8]})"
    else:
        prompts = "calibration not recorded"
    return SProtocol(
        "sinkbench", f"{prompts}, {(dtype or 'dtype not recorded').removeprefix('torch.')}, {weights}"
    )


@dataclass(frozen=True)
class ScoreBasis:
    """What one score was measured on, as its results file records it (or, reported, who printed it).

    ``subset`` is what the task's config names as its subset (``configs.<task>.metadata.subset``, e.g. set by
    lm-eval's ``--metadata``), else None; ``evaluated`` of ``documents`` were scored, ``limit`` is lm-eval's
    ``--limit`` (None: not limited); ``max_new_tokens`` is the generation cap (None for log-likelihood tasks).
    """

    label: str
    evaluated: int | None = None
    documents: int | None = None
    limit: float | None = None
    subset: str | None = None
    max_new_tokens: int | None = None
    dtype: str | None = None


def _subset_name(metadata: dict[str, Any] | None) -> str | None:
    """The subset a task's metadata names: a string, or a mapping's ``name`` (else its ``rule``)."""
    value = (metadata or {}).get("subset")
    if isinstance(value, dict):
        value = value.get("name") or value.get("rule")
    return str(value)[:120] if isinstance(value, (str, int, float)) and str(value) else None


def _documents_text(basis: ScoreBasis) -> str:
    """``all 541 documents``, ``first 128 of 541 documents (--limit 128)``, a named subset, or the count alone."""
    evaluated, documents = basis.evaluated, basis.documents
    if evaluated is None or documents is None:
        return "document count not recorded"
    share = f"{evaluated:,} of {documents:,} documents"
    if basis.subset and evaluated != documents:
        return f"{basis.subset}: {share}"
    if basis.subset:
        return f"{basis.subset} ({documents:,} documents)"
    if evaluated == documents:
        return f"all {documents:,} documents"
    if basis.limit is not None:
        return f"first {share} (--limit {basis.limit:g})"
    return f"{share} (which ones is not recorded)"


def score_basis(entry: Entry, role: str, task: str) -> ScoreBasis | None:
    """The basis of ``task``'s score on side ``role`` of ``entry`` (``reference``, ``vlm`` or ``backbone``), or
    None when that side has no such score."""
    reported = entry.metadata.reported
    if reported is not None:
        score = entry.scores.get(task)
        if score is None:
            return None
        table = score.source.split(";")[0].strip()
        return ScoreBasis(f"reported by {_cited(entry)}" + (f" ({table})" if table else ""))
    side = entry.sides.get(role)
    found = side.results_for(task) if side else None
    if found is None:
        return None
    data = found.data
    config = data.configs.get(task)
    count = data.n_samples.get(task)
    generation = (config.generation_kwargs if config else None) or {}
    cap = generation.get("max_gen_toks")
    dtype = (data.config.model_dtype or str(model_args(data.config.model_args).get("dtype") or "")) or None
    basis = ScoreBasis(
        "",
        count.effective if count else None,
        count.original if count else None,
        float(data.config.limit) if isinstance(data.config.limit, (int, float)) else None,
        _subset_name(config.metadata if config else None),
        int(cap) if isinstance(cap, (int, float)) and not isinstance(cap, bool) else None,
        dtype.removeprefix("torch.") if dtype else None,
    )
    parts = [_documents_text(basis)]
    if basis.max_new_tokens is not None:
        parts.append(f"up to {basis.max_new_tokens:,} new tokens")
    parts.append(basis.dtype or "dtype not recorded")
    weights = weights_label(model_args(data.config.model_args).get("gguf_file"))
    if weights != TRANSFORMERS_WEIGHTS:
        parts.append(weights)
    return replace(basis, label=" · ".join(parts))


def _measured_sink(entry: Entry) -> tuple[ResultsFile, object] | None:
    """The ``sink_strength`` results file of a measured entry's LLM and the calibration its task config records,
    or None (a reported entry, or no such file)."""
    side = entry.llm_side if entry.metadata.reported is None else None
    found = side.results_for(SINK_TASK) if side else None
    if found is None:
        return None
    config = found.data.configs.get(SINK_TASK)
    calibration = (config.metadata or {}).get("calibration") if config else None
    return found, calibration


def calibration_set(entry: Entry) -> str | None:
    """The calibration set a measured S was taken on (``v1``, ``v2``, a file's name), or None (reported, or not
    recorded)."""
    calibration = (_measured_sink(entry) or (None, None))[1]
    value = calibration.get("set") if isinstance(calibration, dict) else None
    return value if isinstance(value, str) else None


def s_protocol(entry: Entry) -> SProtocol | None:
    """The protocol of the entry's S, or None when the entry has no S."""
    if entry.metadata.reported is not None:
        return SProtocol("reported", _cited(entry))
    sink = _measured_sink(entry)
    if sink is None:
        return None
    found, calibration = sink
    weights = weights_label(model_args(found.data.config.model_args).get("gguf_file"))
    return sinkbench_protocol(calibration, found.data.config.model_dtype, weights)
