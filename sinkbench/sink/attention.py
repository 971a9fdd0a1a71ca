"""The attention function that records what Sink Strength needs, and nothing more.

``sinkbench_probe`` is registered with transformers' ``AttentionInterface``. Every decoder
layer calls it with queries and keys *after* RoPE and any QK-norm, so the probe is
architecture-agnostic. Outside a probe call (no ``sink_recorder`` keyword) it is plain SDPA.

Inside a probe call, in every layer, it computes the attention output together with the
per-query log-sum-exp of the logits (CPU: the fused flash kernel returns it for free;
elsewhere: a chunked exact computation). From that:

* all layers: the attention on the first real token, ``exp(l_first - lse)``, for Gu et
  al.'s Sink_1^eps and the paper's position-0 probe;
* probed layers only: the sink position ``p`` and ``G = l_p - logsumexp_{k != p} l_k``.
  The per-head sink (argmax of the attention mass a key receives, summed over queries) is
  the log-sum-exp of a *reversed* attention problem (keys as queries, queries as keys,
  ``-lse`` folded in as an extra coordinate), so it is one more flash call. The
  "others" log-sum-exp is a flash call in which the sink key is pushed to ``-1e5`` through
  one extra coordinate. Both are exact: no ``1 - a`` cancellation, no ``L x L`` tensor.
  The per-query-argmax variant needs the full row maximum, so it runs in query chunks.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import torch
from transformers import AttentionInterface
from transformers.integrations.sdpa_attention import repeat_kv, sdpa_attention_forward
from transformers.masking_utils import AttentionMaskInterface, sdpa_mask

ATTENTION_NAME = "sinkbench_probe"
_EXCLUDED = 1.0e5  # logit penalty (after scaling) that removes the sink key from a flash call
_QUERY_CHUNK = 256


@dataclass
class LayerObservations:
    """What one probed layer yields for one batch (kept on the CPU, float32).

    Attributes:
        g: ``(B, H, T)`` log-odds of attention on the sink; NaN where not an observation.
        sink_position: ``(B, H)`` sink key per head, or ``(B, H, T)`` per query.
    """

    g: torch.Tensor
    sink_position: torch.Tensor


@dataclass
class SinkRecorder:
    """Per-forward state handed to the attention function as the ``sink_recorder`` keyword.

    Attributes:
        probed_layers: layer indices whose sink statistics are computed.
        sink_mode: ``"head"``, ``"query"`` or ``"first"`` (see ``sinkbench.sink.observe.ProbeOptions``).
        query_valid: ``(B, T)`` bool, False at padding.
        keep_degenerate: keep queries whose only visible key is the sink, as ``G = +inf``.
        forced_sinks: layer index -> ``(B, H)`` sink positions to use instead of detecting them.
        use_flash_kernel: use the fused CPU flash kernel when the tensors live on the CPU.
    """

    probed_layers: frozenset[int]
    sink_mode: str
    query_valid: torch.Tensor
    keep_degenerate: bool = False
    forced_sinks: dict[int, torch.Tensor] | None = None
    use_flash_kernel: bool = True
    layers: dict[int, LayerObservations] = field(default_factory=dict)
    first_token_attention: dict[int, torch.Tensor] = field(default_factory=dict)

    def valid_on(self, device: torch.device) -> torch.Tensor:
        """``query_valid`` on ``device`` (layers of a ``device_map`` model live on several)."""
        return self.query_valid.to(device, non_blocking=True)

    def first_position_on(self, device: torch.device) -> torch.Tensor:
        """``(B,)`` index of the first real token of each sequence, on ``device``."""
        return self.valid_on(device).to(torch.int8).argmax(dim=1)


@dataclass(frozen=True)
class _LayerTensors:
    """One layer's float32 queries and keys (GQA-expanded), log-sum-exp, bias and kernel."""

    q: torch.Tensor
    k: torch.Tensor
    lse: torch.Tensor
    bias: torch.Tensor | None
    scale: float
    attend: Callable


def register_probe_attention() -> str:
    """Register ``sinkbench_probe`` (and SDPA-style masks for it); return its name. Idempotent."""
    AttentionInterface.register(ATTENTION_NAME, probe_attention)
    AttentionMaskInterface.register(ATTENTION_NAME, sdpa_mask)
    return ATTENTION_NAME


def probe_attention(
    module: torch.nn.Module,
    query: torch.Tensor,
    key: torch.Tensor,
    value: torch.Tensor,
    attention_mask: torch.Tensor | None,
    dropout: float = 0.0,
    scaling: float | None = None,
    sink_recorder: SinkRecorder | None = None,
    **kwargs,
) -> tuple[torch.Tensor, None]:
    """Attention forward that also feeds ``sink_recorder`` (plain SDPA when it is None)."""
    if sink_recorder is None:
        return sdpa_attention_forward(
            module, query, key, value, attention_mask, dropout=dropout, scaling=scaling, **kwargs
        )
    if kwargs.get("softcap") is not None:
        raise NotImplementedError("Sink Strength does not support attention logit soft-capping.")
    scale = float(scaling if scaling is not None else query.shape[-1] ** -0.5)
    groups = query.shape[1] // key.shape[1]
    key, value = repeat_kv(key, groups), repeat_kv(value, groups)
    bias = _additive_bias(attention_mask, query.dtype)
    attend = _flash_with_lse if _flash_applies(query, sink_recorder) else _chunked_with_lse
    output, lse = attend(query, key, value, bias, scale)
    q32, k32 = query.float(), key.float()
    if query.dtype != torch.float32:
        lse = attend(q32, k32, k32, _as_float32(bias), scale)[1]
    tensors = _LayerTensors(q32, k32, lse.float(), _as_float32(bias), scale, attend)
    _record_layer(sink_recorder, module.layer_idx, tensors)
    return output.transpose(1, 2).contiguous(), None


def _flash_applies(query: torch.Tensor, recorder: SinkRecorder) -> bool:
    return recorder.use_flash_kernel and query.device.type == "cpu"


def _additive_bias(mask: torch.Tensor | None, dtype: torch.dtype) -> torch.Tensor | None:
    """Turn transformers' boolean (True = attend) or additive mask into an additive bias."""
    if mask is None or mask.dtype != torch.bool:
        return None if mask is None else mask.to(dtype)
    return torch.zeros(mask.shape, dtype=dtype, device=mask.device).masked_fill_(~mask, float("-inf"))


def _as_float32(bias: torch.Tensor | None) -> torch.Tensor | None:
    return None if bias is None else bias.float()


def _flash_with_lse(
    q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, bias: torch.Tensor | None, scale: float
) -> tuple[torch.Tensor, torch.Tensor]:
    """Fused CPU flash attention returning ``(output, logsumexp)``; causal when ``bias`` is None."""
    kernel = torch.ops.aten._scaled_dot_product_flash_attention_for_cpu
    return kernel(q, k, v, 0.0, bias is None, attn_mask=bias, scale=scale)


def _chunk_logits(
    q: torch.Tensor, k: torch.Tensor, bias: torch.Tensor | None, scale: float, start: int
) -> torch.Tensor:
    """Float32 logits of queries ``start:start+len(q)`` against all keys, masked."""
    logits = torch.matmul(q.float(), k.float().transpose(-1, -2)) * scale
    if bias is not None:
        return logits + bias[..., start : start + q.shape[-2], :].float()
    rows = torch.arange(start, start + q.shape[-2], device=q.device)[:, None]
    return logits.masked_fill_(torch.arange(k.shape[-2], device=q.device)[None, :] > rows, float("-inf"))


def _chunked_with_lse(
    q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, bias: torch.Tensor | None, scale: float
) -> tuple[torch.Tensor, torch.Tensor]:
    """Exact attention and log-sum-exp in query chunks (any device); the reference path."""
    outputs, lses = [], []
    for start in range(0, q.shape[-2], _QUERY_CHUNK):
        logits = _chunk_logits(q[..., start : start + _QUERY_CHUNK, :], k, bias, scale, start)
        lse = torch.logsumexp(logits, dim=-1)
        probs = torch.exp(logits - lse.unsqueeze(-1)).nan_to_num_(0.0)
        outputs.append(torch.matmul(probs.to(v.dtype), v))
        lses.append(lse)
    return torch.cat(outputs, dim=-2), torch.cat(lses, dim=-1)


def _with_extra_coordinate(x: torch.Tensor, extra: torch.Tensor) -> torch.Tensor:
    """Append ``extra`` (broadcast to ``x[..., :1]``) as one more head-dim coordinate."""
    return torch.cat([x, extra.expand(*x.shape[:-1], 1).to(x.dtype)], dim=-1)


def _record_layer(recorder: SinkRecorder, layer: int, x: _LayerTensors) -> None:
    """Store first-token attention (every layer) and sink statistics (probed layers)."""
    valid = recorder.valid_on(x.q.device)
    first = recorder.first_position_on(x.q.device)[:, None].expand(-1, x.q.shape[1])
    attention = torch.exp(_logit_at(x.q, x.k, first, x.scale) - x.lse)
    attention = attention.masked_fill(~_sink_visibility(first, x.bias, x.q.shape[-2])[0], 0.0)
    recorder.first_token_attention[layer] = attention.masked_fill(~valid[:, None, :], float("nan")).cpu()
    if layer not in recorder.probed_layers:
        return
    if recorder.sink_mode == "query" and not (recorder.forced_sinks and layer in recorder.forced_sinks):
        g, sink = _per_query_sink(x.q, x.k, x.bias, x.scale)
        visible = torch.ones_like(g, dtype=torch.bool)
    else:
        sink = _head_sinks(recorder, layer, x)
        g, visible = _logodds_at(x, sink)
    g = _drop_degenerate(g, recorder.keep_degenerate)
    observed = visible & valid[:, None, :]
    recorder.layers[layer] = LayerObservations(
        g=g.masked_fill(~observed, float("nan")).cpu(), sink_position=sink.cpu()
    )


def _logit_at(q: torch.Tensor, k: torch.Tensor, positions: torch.Tensor, scale: float) -> torch.Tensor:
    """``(B, H, T)`` logits of every query against key ``positions[b, h]``."""
    index = positions[:, :, None, None].expand(-1, -1, 1, k.shape[-1])
    return (q * k.gather(2, index)).sum(-1) * scale


def _head_sinks(recorder: SinkRecorder, layer: int, x: _LayerTensors) -> torch.Tensor:
    """``(B, H)`` sink key per head: forced, first real token, or argmax of received attention."""
    if recorder.forced_sinks and layer in recorder.forced_sinks:
        return recorder.forced_sinks[layer].to(x.q.device)
    if recorder.sink_mode == "first":
        return recorder.first_position_on(x.q.device)[:, None].expand(-1, x.q.shape[1]).contiguous()
    received = _log_received_attention(x, recorder.valid_on(x.q.device))
    return received.argmax(dim=-1)


def _log_received_attention(x: _LayerTensors, query_valid: torch.Tensor) -> torch.Tensor:
    """``(B, H, T)`` log of the attention each key receives, summed over valid queries.

    ``log sum_q exp(scale * q.k - lse_q)`` is the log-sum-exp of an attention problem with
    keys as queries and queries as keys (plus a coordinate carrying ``-lse_q / scale``);
    reversing the sequence turns its anti-causal mask back into a causal one.
    """
    query_term = (-x.lse / x.scale).masked_fill(~query_valid[:, None, :], -_EXCLUDED / x.scale)
    new_queries = _with_extra_coordinate(x.k, torch.ones((), device=x.k.device)).flip(-2)
    new_keys = torch.cat([x.q, query_term.unsqueeze(-1)], dim=-1).flip(-2)
    reversed_bias = None if x.bias is None else x.bias.transpose(-1, -2).flip(-1, -2).contiguous()
    received = x.attend(new_queries, new_keys, new_keys, reversed_bias, x.scale)[1].flip(-1)
    return received.masked_fill(~query_valid[:, None, :], float("-inf"))


def _logodds_at(x: _LayerTensors, sink: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """``G = l_sink - logsumexp_{k != sink} l_k`` per query, and whether the sink is visible."""
    q, k = x.q, x.k
    sink_logit = _logit_at(q, k, sink, x.scale)
    is_sink = torch.arange(k.shape[-2], device=k.device)[None, None, :] == sink[:, :, None]
    penalised_keys = torch.cat([k, ((-_EXCLUDED / x.scale) * is_sink.to(k.dtype)).unsqueeze(-1)], dim=-1)
    queries = _with_extra_coordinate(q, torch.ones((), device=q.device))
    others = x.attend(queries, penalised_keys, penalised_keys, x.bias, x.scale)[1]
    visible, alone = _sink_visibility(sink, x.bias, q.shape[-2])
    g = (sink_logit - others).masked_fill(alone, float("inf"))
    return g, visible


def _sink_visibility(
    sink: torch.Tensor, bias: torch.Tensor | None, length: int
) -> tuple[torch.Tensor, torch.Tensor]:
    """``(B, H, T)`` masks: query sees the sink; the sink is the only key it sees."""
    queries = torch.arange(length, device=sink.device)
    if bias is None:
        visible = queries[None, None, :] >= sink[:, :, None]
        alone = visible & (queries == 0)[None, None, :]
        return visible, alone
    allowed = bias[:, 0] == 0  # (B, T, T)
    index = sink[:, :, None].expand(-1, -1, length)  # (B, H, T)
    visible = allowed.transpose(1, 2)[:, None].expand(-1, sink.shape[1], -1, -1).gather(2, index[:, :, None])
    visible = visible.squeeze(2)
    alone = visible & (allowed.sum(-1) == 1)[:, None, :]
    return visible, alone


def _per_query_sink(
    q: torch.Tensor, k: torch.Tensor, bias: torch.Tensor | None, scale: float
) -> tuple[torch.Tensor, torch.Tensor]:
    """Per-query argmax key and ``G = -log sum_{k != argmax} exp(l_k - l_max)``, in query chunks."""
    gs, sinks = [], []
    for start in range(0, q.shape[-2], _QUERY_CHUNK):
        logits = _chunk_logits(q[..., start : start + _QUERY_CHUNK, :], k, bias, scale, start)
        top, position = logits.max(dim=-1, keepdim=True)
        rest = torch.exp(logits - top).nan_to_num_(0.0).scatter_(-1, position, 0.0)
        gs.append(-torch.log(rest.sum(-1)))
        sinks.append(position.squeeze(-1))
    return torch.cat(gs, dim=-1), torch.cat(sinks, dim=-1)


def _drop_degenerate(g: torch.Tensor, keep: bool) -> torch.Tensor:
    """Degenerate observations (sink is the only visible key) are ``+inf``; NaN them unless kept."""
    return g if keep else g.masked_fill(torch.isposinf(g), float("nan"))
