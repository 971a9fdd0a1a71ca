"""What an entry says about its models beyond their scores: their size, and the protocol their S was measured
by (so that an S from one protocol is never silently compared with an S from another).

Sizes come from ``metadata.json`` (``params_b`` with its source) or, for measured entries, from the parameter
count lm-eval recorded from the weights (``config.model_num_parameters``). A reported S carries the protocol of
its publication; a measured S carries sinkbench's: the calibration set and its hash, the dtype and the weight
format, read from the ``sink_strength`` results file.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from sinkbench.submissions.catalogue import SINK_TASK
from sinkbench.submissions.entry import Entry, Side
from sinkbench.submissions.schema import ModelRef
from sinkbench.weights import weights_label


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


def _short_citation(source: str) -> str:
    """``arXiv NNNN.NNNNN`` when the citation names one, else its first 60 characters."""
    found = _ARXIV.search(source)
    return f"arXiv {found.group(1)}" if found else source[:60]


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
    pairs = (item.split("=", 1) for item in (value or "").split(",") if "=" in item)
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


def s_protocol(entry: Entry) -> SProtocol | None:
    """The protocol of the entry's S, or None when the entry has no S."""
    reported = entry.metadata.reported
    if reported is not None:
        citation = entry.metadata.citation
        return SProtocol("reported", _short_citation(citation.source) if citation else "source not stated")
    side = entry.llm_side
    found = side.results_for(SINK_TASK) if side else None
    if found is None:
        return None
    config = found.data.configs.get(SINK_TASK)
    calibration = (config.metadata or {}).get("calibration") if config else None
    weights = weights_label(model_args(found.data.config.model_args).get("gguf_file"))
    return sinkbench_protocol(calibration, found.data.config.model_dtype, weights)
