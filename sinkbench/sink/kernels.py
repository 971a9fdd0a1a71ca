"""Attention that also returns the per-query log-sum-exp of its logits: fused kernels and the chunked reference.

Every function here takes ``(q, k, v, bias, scale)`` with ``q`` and ``k`` of one head size, ``v`` of any, and an
additive ``bias`` (``-inf`` where a key is masked; None means plain causal), and returns ``(output, lse)``:

* ``cpu-flash``: PyTorch's fused CPU flash kernel, which returns the log-sum-exp for free;
* ``cuda-efficient``: the memory-efficient CUDA kernel asked for its log-sum-exp (it takes an additive bias and
  float32, unlike the flash kernel); head sizes are padded to a multiple of 8 and the bias's rows to a multiple
  of 16 bytes, which that kernel requires, with zeros that change no logit;
* ``chunked``: exact float32 attention in query chunks, on any device; the reference the fused paths are tested
  against, and what runs where no fused kernel applies.

:func:`choose_kernel` picks one for a device and dtype; the probe records the name in its report.
"""

from __future__ import annotations

from collections.abc import Callable

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


def chunked_with_lse(
    q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, bias: torch.Tensor | None, scale: float
) -> tuple[torch.Tensor, torch.Tensor]:
    """Exact attention and log-sum-exp in query chunks (any device, float32 logits)."""
    outputs, lses = [], []
    for start in range(0, q.shape[-2], QUERY_CHUNK):
        logits = causal_logits(q[..., start : start + QUERY_CHUNK, :], k, bias, scale, start)
        lse = torch.logsumexp(logits, dim=-1)
        probs = torch.exp(logits - lse.unsqueeze(-1)).nan_to_num_(0.0)
        outputs.append(torch.matmul(probs.to(v.dtype), v))
        lses.append(lse)
    return torch.cat(outputs, dim=-2), torch.cat(lses, dim=-1)


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
    """Zero-pad q, k and v to one head size (a multiple of ``multiple``); returns them and v's own size.

    Zeros appended to queries and keys add nothing to a dot product, and zero value columns are cut off again.
    """
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
