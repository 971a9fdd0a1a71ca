"""TSV and STAR, two spectral merges mergekit lacks, written as mergekit methods (its ``merge_method`` API: one
kernel per output tensor, on the group of input tensors with the base among them). Both work on task vectors
``d_i = theta_i - theta_base`` of the non-base inputs; matrices (2-D tensors) get the spectral treatment, every
other tensor the plain mean of its task vectors, as both papers' code does.

**TSV-Merge** (Gargiulo et al., "Task Singular Vectors: Reducing Task Interference in Model Merging", CVPR 2025,
arXiv 2412.00081; reference code AntoAndGar/task_singular_vectors, ``src/utils/TSVM_utils.py``): with T task vectors of a matrix of rank bound r, keep the top
``k = floor(r / T)`` singular triplets of each, ``d_i ~ U_i S_i V_i^T``; concatenate ``U = [U_1 .. U_T]``,
``S = diag(S_1 .. S_T)``, ``V = [V_1 .. V_T]``; replace U and V by their nearest orthonormal matrices (the polar
factor ``P Q^T`` of ``U = P Sigma Q^T``: the paper's whitening that removes interference between the tasks'
subspaces); the merged change is ``U_perp S V_perp^T``, and ``theta = theta_base + alpha * change``.

**STAR** (Lee et al., "STAR: Spectral Truncation and Rescale for Model Merging", NAACL 2025, arXiv 2502.10339;
reference code IBM/STAR, ``merger/STAR.py``): each task vector's matrix keeps its top singular components up to the smallest count whose singular
values reach ``eta`` percent of their sum (the nuclear norm), the kept values are rescaled to the full nuclear
norm (``s_j * sum(s) / sum(kept)``), and the truncated task vectors are averaged: ``theta = theta_base +
mean_i STAR(d_i)``.

With one task vector, TSV keeps every triplet and its polar factors are U and V themselves, so TSV alpha=1 returns
the fine-tuned model unchanged; STAR still truncates.
"""

from __future__ import annotations

import torch
from mergekit.merge_methods import BasePolicy, InputContract, TensorGroup, merge_method

_CONTRACT = InputContract(base=BasePolicy.REQUIRED, min_non_base=1)


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


@merge_method(
    name="sinkbench_tsv",
    pretty_name="TSV-Merge (Task Singular Vectors)",
    reference_url="https://arxiv.org/abs/2412.00081",
    contract=_CONTRACT,
)
def tsv_merge(group: TensorGroup, alpha: float = 1.0) -> torch.Tensor:
    """TSV-Merge of one tensor: base + alpha * the merged change (mean of the task vectors for non-matrices)."""
    base, deltas = _task_vectors(group)
    change = tsv_change(deltas) if base.dim() == 2 else torch.stack(deltas).mean(0)
    return (base + alpha * change).to(group.base.tensor.dtype)


@merge_method(
    name="sinkbench_star",
    pretty_name="STAR (Spectral Truncation and Rescale)",
    reference_url="https://arxiv.org/abs/2502.10339",
    contract=_CONTRACT,
)
def star_merge(group: TensorGroup, eta: float = 40.0) -> torch.Tensor:
    """STAR of one tensor: base + the mean of the truncated task vectors (plain mean for non-matrices)."""
    base, deltas = _task_vectors(group)
    if base.dim() == 2:
        deltas = [star_truncate(delta, eta) for delta in deltas]
    return (base + torch.stack(deltas).mean(0)).to(group.base.tensor.dtype)
