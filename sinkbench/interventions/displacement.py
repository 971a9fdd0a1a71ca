"""Weight displacement of an endpoint (a VLM-LM) from its reference LLM (arXiv 2609.00746, Appendix F.1).

For every projection weight W of every decoder layer (:func:`~sinkbench.interventions.modules.projections`), with
dW = W' - W against the endpoint's W': the operator norm ||dW||_2 (for a fused expert tensor the largest over
experts), the Frobenius norm ||dW||_F and the relative ||dW||_F / ||W||_F (what the D.4 control matches); for every
norm scale the relative change ||d gamma|| / ||gamma|| of its effective scale (the paper's Assumption 1 check). All
in float32. Given a second endpoint of the same reference (``versus``, e.g. the text-only one), each layer's ratio
of the two operator norms, and per projection its median over a window of layers (the last 10, like S, or a band)
and whether the first endpoint moved further in every layer of it (the paper: "median 4.44x on W_q, 3.65x on W_k").
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch
from tqdm.auto import tqdm

from sinkbench.errors import UserError
from sinkbench.interventions.modules import norm_scales, projections, require_same_structure, scale_offset
from sinkbench.models import ModelLike, load_all
from sinkbench.numbers import finite_values
from sinkbench.provenance import report_header
from sinkbench.safe_io import write_json_atomic
from sinkbench.sink.options import ProbeOptions, band_layers

#: The window of layers summarised unless told otherwise: the probe's default (the last 10 layers).
DEFAULT_WINDOW = ProbeOptions.num_layers


@dataclass(frozen=True)
class DisplacementRow:
    """The change of one tensor (``name`` inside decoder ``layer``, of module ``kind``): ||dW||_2 (None for a norm
    scale), ||dW||_F and ||dW||_F / ||W||_F (of the effective scale, for a norm scale)."""

    layer: int
    name: str
    kind: str
    operator_norm: float | None
    frobenius_norm: float
    relative_frobenius: float


def tensor_displacement(reference: torch.Tensor, endpoint: torch.Tensor) -> tuple[float, float, float]:
    """``(||dW||_2, ||dW||_F, ||dW||_F / ||W||_F)`` of ``dW = endpoint - reference``, in float32 (the operator
    norm over the last two dimensions, the largest over any leading ones)."""
    reference, endpoint = reference.detach().float(), endpoint.detach().float()
    delta = endpoint - reference
    operator = float(torch.linalg.svdvals(delta)[..., 0].max())  # svdvals: 16x faster than matrix_norm(ord=2)
    frobenius = float(torch.linalg.vector_norm(delta))
    return operator, frobenius, _relative(frobenius, float(torch.linalg.vector_norm(reference)))


def _relative(change: float, size: float) -> float:
    """``change / size``; 0 for no change, infinite for a change of a zero tensor."""
    if size > 0:
        return change / size
    return 0.0 if change == 0 else float("inf")


def displacement_rows(
    reference: torch.nn.Module, endpoint: torch.nn.Module, *, progress: bool = False
) -> list[DisplacementRow]:
    """Every projection's and norm scale's displacement, in model order (module docstring); UserError when the
    endpoint lacks a tensor of the reference or has it in another shape."""
    require_same_structure(reference, endpoint, "endpoint")
    theirs = endpoint.state_dict()
    rows = []
    for item, weight in tqdm(
        projections(reference), desc="displacement", unit="tensor", disable=not progress
    ):
        operator, frobenius, relative = tensor_displacement(weight, theirs[item.qualified])
        rows.append(DisplacementRow(item.layer, item.name, item.kind, operator, frobenius, relative))
    for item, module in norm_scales(reference):
        offset = scale_offset(module)
        gamma, moved = module.weight.detach().float() + offset, theirs[item.qualified].float() + offset
        change = float(torch.linalg.vector_norm(moved - gamma))
        relative = _relative(change, float(torch.linalg.vector_norm(gamma)))
        rows.append(DisplacementRow(item.layer, item.name, item.kind, None, change, relative))
    return rows


def window_layers(depth: int, window: int = DEFAULT_WINDOW, band: str | None = None) -> list[int]:
    """The decoder layers a summary covers: the last ``window`` of ``depth`` layers, or a layer ``band``
    (:func:`sinkbench.sink.options.band_layers`)."""
    if band is not None:
        return list(band_layers(band, depth))
    if window < 1:
        raise UserError(f"window must be at least 1 layer, got {window}")
    return list(range(max(0, depth - window), depth))


def summarize(
    rows: Sequence[DisplacementRow], layers: Sequence[int], versus: Sequence[DisplacementRow] | None = None
) -> dict[str, dict[str, Any]]:
    """Per tensor name, over ``layers``: the median operator and relative Frobenius norms and, with ``versus`` (the
    second endpoint's rows), the median ratio of the operator norms (relative Frobenius for norm scales), its
    range, and in how many of the layers the first endpoint moved further."""
    chosen = set(layers)
    theirs = {(row.layer, row.name): row for row in versus or ()}
    summary: dict[str, dict[str, Any]] = {}
    for name in dict.fromkeys(row.name for row in rows):
        mine = [row for row in rows if row.name == name and row.layer in chosen]
        if not mine:
            continue
        entry: dict[str, Any] = {
            "layers": len(mine),
            "median_operator_norm": _median([row.operator_norm for row in mine]),
            "median_relative_frobenius": _median([row.relative_frobenius for row in mine]),
        }
        if versus is not None:
            pairs = [(_moved(row), _moved(theirs[(row.layer, name)])) for row in mine]
            ratios = [first / second for first, second in pairs if second > 0]
            further = sum(first > second for first, second in pairs)
            entry.update(
                median_ratio=_median(ratios),
                min_ratio=min(ratios, default=None),
                max_ratio=max(ratios, default=None),
                layers_further=further,
                every_layer_further=further == len(pairs),
            )
        summary[name] = entry
    return summary


def _moved(row: DisplacementRow) -> float:
    """How far a tensor moved, for the ratios: the operator norm of a projection, the relative change of a scale."""
    return row.operator_norm if row.operator_norm is not None else row.relative_frobenius


def _median(values: Sequence[float | None]) -> float | None:
    kept = [value for value in values if value is not None and np.isfinite(value)]
    return float(np.median(kept)) if kept else None


def weight_displacement(
    reference: ModelLike,
    endpoint: ModelLike,
    *,
    versus: ModelLike | None = None,
    window: int = DEFAULT_WINDOW,
    band: str | None = None,
    output: Path | None = None,
    progress: bool = True,
    **load_options: Any,
) -> dict[str, Any]:
    """The displacement report of ``endpoint`` (and ``versus``) from ``reference`` (module docstring).

    Args:
        reference: the reference LLM (a spec, folder or loaded model).
        endpoint: a model fine-tuned from it, e.g. the VLM-LM (same architecture and size).
        versus: a second endpoint of the same reference (e.g. the text-only one), for the ratios.
        window, band: summarise the last ``window`` decoder layers, or a layer band (``last-third``, ``10-19``).
        output, progress, load_options: as :func:`~sinkbench.sink.probe_model.probe_model` takes them.

    Returns ``rows`` (and ``versus_rows``) per layer and tensor, ``summary`` per tensor over the window, the window
    and each model's provenance.
    """
    started = time.perf_counter()
    versus_role = {"versus": versus} if versus is not None else {}
    loaded = load_all({"reference": reference, "endpoint": endpoint, **versus_role}, **load_options)
    reference_model = loaded["reference"].model
    rows = displacement_rows(reference_model, loaded["endpoint"].model, progress=progress)
    versus_rows = (
        displacement_rows(reference_model, loaded["versus"].model, progress=progress)
        if "versus" in loaded
        else None
    )
    depth = len({row.layer for row in rows})
    layers = window_layers(depth, window, band)
    report = {
        **report_header(),
        "models": {role: item.info.to_dict() for role, item in loaded.items()},
        "window": {"layers": layers, "band": band, "last": None if band else window},
        "summary": summarize(rows, layers, versus_rows),
        "rows": [finite_values(asdict(row)) for row in rows],  # a zero tensor's infinite change: null
        "versus_rows": [finite_values(asdict(row)) for row in versus_rows]
        if versus_rows is not None
        else None,
        "seconds": round(time.perf_counter() - started, 3),
    }
    if output is not None:
        write_json_atomic(report, output)
    return report


#: The projections a printed summary shows first (the paper's F.1 quotes W_q and W_k).
HEADLINE_KINDS = ("q_proj", "k_proj")


def format_displacement(report: dict[str, Any]) -> str:
    """The summary as a table: per tensor, the window's median norms (and ratio against ``versus``)."""
    window = report["window"]["layers"]
    versus = report["versus_rows"] is not None
    lines = [
        f"{report['models']['endpoint']['id']} against {report['models']['reference']['id']}, "
        f"layers {window[0]}-{window[-1]} ({len(window)} layers)"
        + (f"; ratio against {report['models']['versus']['id']}" if versus else ""),
        f"{'tensor':<36} {'median ||dW||_2':>16} {'median rel. F':>14}"
        + (f" {'median ratio':>13} {'further in':>11}" if versus else ""),
    ]
    names = sorted(report["summary"], key=lambda name: (name.rsplit(".", 2)[-2] not in HEADLINE_KINDS, name))
    for name in names:
        entry = report["summary"][name]
        operator = entry["median_operator_norm"]
        line = f"{name:<36} {'-' if operator is None else f'{operator:.4g}':>16} {entry['median_relative_frobenius']:>14.4g}"
        if versus:
            ratio = entry["median_ratio"]
            shown = "-" if ratio is None else f"{ratio:.3g}x"
            line += f" {shown:>13} {entry['layers_further']:>5}/{entry['layers']:<5}"
        lines.append(line)
    return "\n".join(lines)
