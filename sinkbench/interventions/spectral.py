"""TSV and STAR, two spectral merges mergekit lacks, written as mergekit methods (one kernel per output tensor, on
the group of input tensors with the base among them). Both work on the task vectors ``d_i = theta_i - theta_base``
of the non-base inputs: matrices get the spectral treatment, other tensors the plain mean, as both papers' code does.

**TSV-Merge** (Gargiulo et al., CVPR 2025, arXiv 2412.00081; code AntoAndGar/task_singular_vectors,
``src/utils/TSVM_utils.py``): with T task vectors of a matrix of rank bound r, keep the top ``k = floor(r / T)``
singular triplets of each, concatenate them into ``U S V^T``, replace U and V by their nearest orthonormal matrices
(the polar factor ``P Q^T`` of ``U = P Sigma Q^T``: the whitening that removes interference between the tasks'
subspaces), and set ``theta = theta_base + alpha * U_perp S V_perp^T``.

**STAR** (Lee et al., NAACL 2025, arXiv 2502.10339; code IBM/STAR, ``merger/STAR.py``): each task vector keeps its
top singular components up to the smallest count whose values reach ``eta`` percent of the nuclear norm, rescaled
to the full nuclear norm (``s_j * sum(s) / sum(kept)``), and ``theta = theta_base + mean_i STAR(d_i)``.

With one task vector TSV keeps every triplet and its polar factors are U and V, so TSV alpha=1 returns the fine-tuned
model unchanged; STAR still truncates.
"""

from __future__ import annotations

from collections.abc import Callable

import torch
from mergekit.merge_methods import BasePolicy, InputContract, TensorGroup, merge_method


def _method(name: str, pretty_name: str, arxiv: str) -> Callable:
    """Register a mergekit method ``sinkbench_<name>`` that needs a base and at least one other model."""
    contract = InputContract(base=BasePolicy.REQUIRED, min_non_base=1)
    url = f"https://arxiv.org/abs/{arxiv}"
    return merge_method(
        name=f"sinkbench_{name}", pretty_name=pretty_name, reference_url=url, contract=contract
    )


def _task_vectors(group: TensorGroup) -> tuple[torch.Tensor, list[torch.Tensor]]:
    base = group.base.tensor.float()
    return base, [entry.tensor.float() - base for entry in group.non_base]


def polar_factor(matrix: torch.Tensor) -> torch.Tensor:
    """The orthonormal matrix nearest ``matrix`` in Frobenius norm: ``P Q^T`` of its thin SVD ``P Sigma Q^T``."""
    left, _, right = torch.linalg.svd(matrix, full_matrices=False)
    return left @ right


def tsv_change(deltas: list[torch.Tensor]) -> torch.Tensor:
    """TSV-Merge's merged change of one matrix from its task vectors (module docstring)."""
    if len(deltas) == 1:  # every triplet kept, and U, V are their own polar factors: the task vector itself
        return deltas[0]
    keep = min(deltas[0].shape) // len(deltas)
    if keep == 0:  # fewer singular directions than tasks: no low-rank part to keep, as in the paper's code
        return torch.zeros_like(deltas[0])
    parts = [torch.linalg.svd(delta, full_matrices=False) for delta in deltas]
    left = torch.cat([u[:, :keep] for u, _, _ in parts], dim=1)
    values = torch.cat([s[:keep] for _, s, _ in parts])
    right = torch.cat([vh[:keep] for _, _, vh in parts], dim=0)
    return polar_factor(left) @ torch.diag(values) @ polar_factor(right.T).T


def star_truncate(delta: torch.Tensor, eta: float) -> torch.Tensor:
    """STAR's truncated and rescaled task vector of one matrix (module docstring; ``eta`` in percent)."""
    left, values, right = torch.linalg.svd(delta, full_matrices=False)
    total = values.sum()
    if total == 0:
        return torch.zeros_like(delta)
    kept = int(torch.searchsorted(torch.cumsum(values, 0), total * eta / 100.0)) + 1
    scaled = values[:kept] * (total / values[:kept].sum())
    return left[:, :kept] @ torch.diag(scaled) @ right[:kept]


@_method("tsv", "TSV-Merge (Task Singular Vectors)", "2412.00081")
def tsv_merge(group: TensorGroup, alpha: float = 1.0) -> torch.Tensor:
    """TSV-Merge of one tensor: base + alpha * the merged change (mean of the task vectors for non-matrices)."""
    base, deltas = _task_vectors(group)
    change = tsv_change(deltas) if base.dim() == 2 else torch.stack(deltas).mean(0)
    return (base + alpha * change).to(group.base.tensor.dtype)


@_method("star", "STAR (Spectral Truncation and Rescale)", "2502.10339")
def star_merge(group: TensorGroup, eta: float = 40.0) -> torch.Tensor:
    """STAR of one tensor: base + the mean of the truncated task vectors (plain mean for non-matrices)."""
    base, deltas = _task_vectors(group)
    if base.dim() == 2:
        deltas = [star_truncate(delta, eta) for delta in deltas]
    return (base + torch.stack(deltas).mean(0)).to(group.base.tensor.dtype)
