"""Attention that also returns the per-query log-sum-exp of its logits: fused kernels and the chunked reference.

Each kernel takes ``(q, k, v, bias, scale)`` (``q``, ``k`` of one head size, ``v`` of any; ``bias`` additive,
``-inf`` where masked, None for plain causal) and returns ``(output, lse)``: ``cpu-flash`` (PyTorch's fused CPU
flash kernel), ``cuda-efficient`` (the memory-efficient CUDA kernel, which takes a bias and float32; head sizes
padded to a multiple of 8 and bias rows to 16 bytes, with zeros that change no logit), or ``chunked`` (exact
float32 attention in query chunks, any device: the reference the fused paths are tested against).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

import torch
import torch.nn.functional as F

QUERY_CHUNK = 256
Kernel = Callable[
    [torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor | None, float], tuple[torch.Tensor, torch.Tensor]
]
_CUDA_ALIGN = 8


def causal_logits(
    q: torch.Tensor, k: torch.Tensor, bias: torch.Tensor | None, scale: float, start: int
) -> torch.Tensor:
    """Float32 logits of queries ``start:start+len(q)`` against all keys, plus ``bias`` (or the causal mask)."""
    return with_bias(torch.matmul(q.float(), k.float().transpose(-1, -2)) * scale, bias, start)


def with_bias(logits: torch.Tensor, bias: torch.Tensor | None, start: int) -> torch.Tensor:
    """``logits`` of queries ``start:start+len`` plus their rows of ``bias``; None means ``-inf`` above the
    causal diagonal."""
    if bias is not None:
        return logits + bias[..., start : start + logits.shape[-2], :].float()
    rows = torch.arange(start, start + logits.shape[-2], device=logits.device)[:, None]
    keys = torch.arange(logits.shape[-1], device=logits.device)[None, :]
    return logits.masked_fill_(keys > rows, float("-inf"))


def attend_chunks(
    chunks: Iterable[tuple[int, torch.Tensor]],
    v: torch.Tensor,
    total: Callable[[torch.Tensor, int], torch.Tensor] | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Exact attention and log-sum-exp from float32 ``(start, logits)`` query chunks; ``total(lse, start)``, when
    given, adds mass outside the keys (a learned sink) to each log-sum-exp."""
    outputs, lses = [], []
    for start, logits in chunks:
        lse = torch.logsumexp(logits, dim=-1)
        lse = lse if total is None else total(lse, start)
        probs = torch.exp(logits - lse.unsqueeze(-1)).nan_to_num_(0.0)
        outputs.append(torch.matmul(probs.to(v.dtype), v))
        lses.append(lse)
    return torch.cat(outputs, dim=-2), torch.cat(lses, dim=-1)


def chunked_with_lse(
    q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, bias: torch.Tensor | None, scale: float
) -> tuple[torch.Tensor, torch.Tensor]:
    """Exact attention and log-sum-exp in query chunks (any device, float32 logits)."""
    chunks = (
        (start, causal_logits(q[..., start : start + QUERY_CHUNK, :], k, bias, scale, start))
        for start in range(0, q.shape[-2], QUERY_CHUNK)
    )
    return attend_chunks(chunks, v)


def cpu_flash_with_lse(
    q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, bias: torch.Tensor | None, scale: float
) -> tuple[torch.Tensor, torch.Tensor]:
    """The fused CPU flash kernel; its value head size must equal the query's, so the narrower side is padded."""
    q, k, v, width = _same_head_size(q, k, v, multiple=1)
    kernel = torch.ops.aten._scaled_dot_product_flash_attention_for_cpu
    output, lse = kernel(q, k, v, 0.0, bias is None, attn_mask=bias, scale=scale)
    return output[..., :width], lse


def cuda_efficient_with_lse(
    q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, bias: torch.Tensor | None, scale: float
) -> tuple[torch.Tensor, torch.Tensor]:
    """The memory-efficient CUDA kernel with ``compute_log_sumexp``; padded as that kernel requires."""
    q, k, v, width = _same_head_size(q, k, v, multiple=_CUDA_ALIGN)
    if bias is not None:
        bias = _aligned_rows(bias.to(q.dtype).expand(q.shape[0], q.shape[1], -1, -1))
    kernel = torch.ops.aten._scaled_dot_product_efficient_attention
    output, lse = kernel(q, k, v, bias, True, 0.0, bias is None, scale=scale)[:2]
    return output[..., :width], lse[..., : q.shape[-2]]


def choose_kernel(device: torch.device, dtype: torch.dtype, fused: bool) -> tuple[str, Kernel]:
    """The kernel for tensors on ``device``: ``cpu-flash`` on the CPU, ``cuda-efficient`` on CUDA (float32,
    bfloat16, float16), else (or when ``fused`` is False) the ``chunked`` reference."""
    if fused and device.type == "cpu":
        return "cpu-flash", cpu_flash_with_lse
    if fused and device.type == "cuda" and dtype in (torch.float32, torch.bfloat16, torch.float16):
        return "cuda-efficient", cuda_efficient_with_lse
    return "chunked", chunked_with_lse


def _same_head_size(
    q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, multiple: int
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, int]:
    """Zero-pad q, k and v to one head size (a multiple of ``multiple``), which changes no dot product; returns
    them and v's own size (its extra columns are cut off again)."""
    width = v.shape[-1]
    size = -(-max(q.shape[-1], width) // multiple) * multiple
    return _pad_last(q, size), _pad_last(k, size), _pad_last(v, size), width


def _pad_last(x: torch.Tensor, size: int) -> torch.Tensor:
    return x if x.shape[-1] == size else F.pad(x, (0, size - x.shape[-1]))


def _aligned_rows(bias: torch.Tensor) -> torch.Tensor:
    """``bias`` as a view into storage whose rows are padded to a multiple of 16 bytes."""
    keys = bias.shape[-1]
    per_row = max(1, 16 // bias.element_size())
    padded = _pad_last(bias, -(-keys // per_row) * per_row)
    return padded[..., :keys]
