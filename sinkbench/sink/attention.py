"""The attention function that records what Sink Strength needs, and nothing more.

``sinkbench_probe`` is registered with transformers' ``AttentionInterface``, so every softmax-attention layer calls
it with queries and keys after RoPE and any QK-norm. It reproduces each variant the model passes along
(:class:`LayerScores`: scaling, soft-capping, any mask, a position bias, a learned sink logit, a value head size
other than the query's) and computes the output with the per-query log-sum-exp (:mod:`sinkbench.sink.kernels`).
From that it records, in every layer, the attention on the first real token ``exp(l_first - lse)``, and in probed
layers the sink position ``p`` and ``G = l_p - log(sum_{k != p} exp(l_k) + exp(s))`` (``s`` a learned sink logit,
whose share counts against the sink token; none otherwise).

With bilinear logits (no soft-capping) two more fused-kernel calls give these exactly, with no ``L x L`` tensor:
the per-head sink (argmax of the attention a key receives over queries) is the log-sum-exp of a *reversed*
attention problem (keys as queries, ``-lse`` folded in as an extra coordinate), and the "others" log-sum-exp a call
where one extra coordinate pushes the sink key to ``-1e5``. Otherwise (and per query) logits are materialised in
query chunks.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any

import torch
from transformers import AttentionInterface
from transformers.integrations.sdpa_attention import repeat_kv, sdpa_attention_forward
from transformers.masking_utils import AttentionMaskInterface, sdpa_mask

from sinkbench.conformance.table import warn_if_not_swept_version
from sinkbench.sink.kernels import (
    QUERY_CHUNK,
    Kernel,
    attend_chunks,
    causal_logits,
    choose_kernel,
    chunked_with_lse,
    with_bias,
)

ATTENTION_NAME = "sinkbench_probe"
_EXCLUDED = 1.0e5  # logit penalty (after scaling) that removes the sink key from a fused call
#: Keyword arguments the probe reproduces (the rest change no probability), and what each means for S.
VARIANTS = {
    "softcap": "logit soft-capping",
    "s_aux": "a learned sink logit per head, whose share counts against the sink token in G",
    "sinks": "a learned sink logit per query, whose share counts against the sink token in G",
    "position_bias": "an additive position bias",
}
#: The variants that are a learned sink logit (per head, or per query).
LEARNED_SINKS = ("s_aux", "sinks")
#: Keyword arguments that change nothing in a full-sequence forward without dropout.
NEUTRAL_KWARGS = frozenset(
    {
        "dropout", "sliding_window", "is_causal", "position_ids", "output_attentions", "use_cache",
        "cache_position", "cu_seq_lens_q", "cu_seq_lens_k", "max_length_q", "max_length_k", "indices",
        "layer_idx", "deterministic", "block_indices",
    }
)  # fmt: skip


@dataclass
class LayerObservations:
    """What one probed layer yields for one batch (on the CPU): ``g``, ``(B, H, T)`` float32 log-odds of
    attention on the sink (NaN where not an observation), and ``sink_position``, ``(B, H)`` or ``(B, H, T)``."""

    g: torch.Tensor
    sink_position: torch.Tensor


@dataclass
class SinkRecorder:
    """Per-forward state handed to the attention function through :func:`recording`.

    ``sink_mode`` and ``keep_degenerate`` are ``ProbeOptions``'; ``query_valid`` is ``(B, T)``, False at padding;
    ``labels`` label the attention calls in order (``sinkbench.sink.layers``); ``forced_sinks`` maps a layer to
    ``(B, H)`` sink positions to use instead of detecting them; ``kernels`` collects the kernels' names.
    """

    probed_layers: frozenset[int]
    sink_mode: str
    query_valid: torch.Tensor
    labels: list[int]
    keep_degenerate: bool = False
    forced_sinks: dict[int, torch.Tensor] | None = None
    use_flash_kernel: bool = True
    kernels: set[str] = field(default_factory=set)
    layers: dict[int, LayerObservations] = field(default_factory=dict)
    first_token_attention: dict[int, torch.Tensor] = field(default_factory=dict)
    calls: int = 0

    def next_label(self) -> int:
        """The label of the attention call being made (calls are counted in order)."""
        self.calls += 1
        if self.calls > len(self.labels):
            raise RuntimeError("The model made more attention calls than its census counted.")
        return self.labels[self.calls - 1]

    @property
    def length(self) -> int:
        """Tokens per sequence (calls over another axis are not token attention)."""
        return int(self.query_valid.shape[1])

    def valid_on(self, device: torch.device) -> torch.Tensor:
        """``query_valid`` on ``device`` (a ``device_map`` model's layers live on several)."""
        return self.query_valid.to(device, non_blocking=True)

    def first_position_on(self, device: torch.device) -> torch.Tensor:
        """``(B,)`` index of the first real token of each sequence, on ``device``."""
        return self.valid_on(device).to(torch.int8).argmax(dim=1)


@dataclass
class AttentionCall:
    """What a census learns from one attention call (see ``sinkbench.sink.layers``)."""

    module: int
    layer_idx: int | None
    num_heads: int
    causal: bool
    variants: tuple[str, ...]
    unknown: tuple[str, ...]
    extra_keys: bool = False


@dataclass
class AttentionCensus:
    """Handed to the attention function instead of a :class:`SinkRecorder`: it notes each token-attention call
    of a census forward of ``length`` tokens, in order."""

    length: int
    calls: list[AttentionCall] = field(default_factory=list)


@dataclass(frozen=True)
class LayerScores:
    """How one layer turns queries and keys into attention probabilities (float32, GQA-expanded).

    ``q`` and ``k`` are ``(B, H, T, D)`` and ``(B, H, S, D)``; ``bias`` is additive (``-inf`` where masked, plus any
    position bias; None: plain causal); ``softcap`` applies ``softcap * tanh(logit / softcap)`` before the bias;
    ``learned_sink``, broadcastable to ``(B, H, T)``, is one more softmax entry, with no value.
    """

    q: torch.Tensor
    k: torch.Tensor
    scale: float
    bias: torch.Tensor | None
    softcap: float | None
    learned_sink: torch.Tensor | None

    @property
    def bilinear(self) -> bool:
        """Whether a logit is ``scale * q.k`` plus the bias (what the fused tricks need)."""
        return self.softcap is None

    def logits(self, start: int, stop: int) -> torch.Tensor:
        """``(B, H, stop - start, S)`` logits of queries ``start:stop``, masked with ``-inf``."""
        q = self.q[..., start:stop, :]
        if self.softcap is None:
            return causal_logits(q, self.k, self.bias, self.scale, start)
        capped = torch.tanh(torch.matmul(q, self.k.transpose(-1, -2)) * (self.scale / self.softcap))
        return with_bias(capped * self.softcap, self.bias, start)

    def logit_at(self, positions: torch.Tensor) -> torch.Tensor:
        """``(B, H, T)`` logit of every query at key ``positions[b, h]`` (``-inf`` where that key is masked)."""
        index = positions[:, :, None, None].expand(-1, -1, 1, self.k.shape[-1])
        logit = (self.q * self.k.gather(2, index)).sum(-1) * self.scale
        if self.softcap is not None:
            logit = torch.tanh(logit / self.softcap) * self.softcap
        if self.bias is None:
            queries = torch.arange(self.q.shape[-2], device=logit.device)
            return logit.masked_fill(queries[None, None, :] < positions[:, :, None], float("-inf"))
        column = positions[:, :, None, None].expand(-1, -1, self.q.shape[-2], 1)
        bias = self.bias.expand(positions.shape[0], self.q.shape[1], -1, -1).gather(-1, column).squeeze(-1)
        return logit + bias

    def chunks(self) -> Iterator[tuple[int, torch.Tensor]]:
        """``(start, logits)`` for each chunk of queries, so that no ``T x S`` logits exist at once."""
        for start in range(0, self.q.shape[-2], QUERY_CHUNK):
            yield start, self.logits(start, start + QUERY_CHUNK)

    def with_learned_sink(self, lse: torch.Tensor, start: int = 0) -> torch.Tensor:
        """A token log-sum-exp of queries ``start:`` with the learned sink's logit added (if there is one)."""
        sink = self.learned_sink
        if sink is None:
            return lse
        return torch.logaddexp(lse, sink[..., start : start + lse.shape[-1]] if sink.shape[-1] > 1 else sink)


_ACTIVE: ContextVar[SinkRecorder | AttentionCensus | None] = ContextVar("sinkbench_recorder", default=None)


@contextmanager
def recording(recorder: SinkRecorder | AttentionCensus) -> Iterator[None]:
    """Hand ``recorder`` to every probe-attention call made in the block (in this thread or task); a context
    variable, as some models do not pass extra keyword arguments down to their attention layers."""
    token = _ACTIVE.set(recorder)
    try:
        yield
    finally:
        _ACTIVE.reset(token)


def register_probe_attention() -> str:
    """Register ``sinkbench_probe`` (and SDPA-style masks for it); return its name. Idempotent."""
    warn_if_not_swept_version()
    AttentionInterface.register(ATTENTION_NAME, probe_attention)
    AttentionMaskInterface.register(ATTENTION_NAME, sdpa_mask)
    return ATTENTION_NAME


@contextmanager
def attention_implementation(configs: Iterable[Any], name: str) -> Iterator[None]:
    """Set each config's (each one once) attention implementation to ``name`` for the block, then restore it."""
    saved = [(config, config._attn_implementation) for config in {id(c): c for c in configs}.values()]
    try:
        for config, _ in saved:
            config._attn_implementation = name
        yield
    finally:
        for config, previous in saved:
            config._attn_implementation = previous


@contextmanager
def probe_mode(model: torch.nn.Module) -> Iterator[None]:
    """Route the model's attention through the probe for the duration of the block."""
    name = register_probe_attention()
    with attention_implementation((model.config, model.config.get_text_config()), name):
        yield


def probe_attention(
    module: torch.nn.Module,
    query: torch.Tensor,
    key: torch.Tensor,
    value: torch.Tensor,
    attention_mask: torch.Tensor | None,
    dropout: float = 0.0,
    scaling: float | None = None,
    **kwargs,
) -> tuple[torch.Tensor, None]:
    """Attention forward that also feeds the active recorder (see :func:`recording`); without one it is the
    model's own attention."""
    sink_recorder = _ACTIVE.get()
    variants = tuple(name for name in VARIANTS if kwargs.get(name) is not None)
    if sink_recorder is not None and not _token_attention(module, query, key, sink_recorder.length):
        sink_recorder = None
    if sink_recorder is None and not variants:
        return sdpa_attention_forward(
            module, query, key, value, attention_mask, dropout=dropout, scaling=scaling, **kwargs
        )
    groups = query.shape[1] // key.shape[1]
    key, value = repeat_kv(key, groups), repeat_kv(value, groups)
    scores = _scores(query.float(), key.float(), attention_mask, scaling, kwargs)
    use_fused = not isinstance(sink_recorder, SinkRecorder) or sink_recorder.use_flash_kernel
    kernel_name, kernel = choose_kernel(query.device, query.dtype, use_fused and scores.bilinear)
    output, lse = _attend(scores, query, key, value, kernel)
    if isinstance(sink_recorder, AttentionCensus):
        sink_recorder.calls.append(_census_entry(module, scores, variants, kwargs))
    elif sink_recorder is not None:
        sink_recorder.kernels.add(kernel_name)
        _record_layer(sink_recorder, sink_recorder.next_label(), scores, lse, kernel)
    return output.transpose(1, 2).contiguous(), None


def _token_attention(module: torch.nn.Module, query: torch.Tensor, key: torch.Tensor, length: int) -> bool:
    """Whether a call is a layer's attention over the input tokens; not attention over another axis (across
    layers), nor auxiliary attention over other keys by a module without a layer index (Inkling2's residuals)."""
    if query.shape[-2] != length:
        return False
    return key.shape[-2] == length or isinstance(getattr(module, "layer_idx", None), int)


def _scores(
    q: torch.Tensor, k: torch.Tensor, mask: torch.Tensor | None, scaling: float | None, kwargs: dict
) -> LayerScores:
    """The float32 :class:`LayerScores` of one call from transformers' mask and keyword arguments."""
    scale = float(scaling if scaling is not None else q.shape[-1] ** -0.5)
    allowed = _allowed(mask)
    position_bias = kwargs.get("position_bias")
    if position_bias is not None and allowed is None:
        length, keys = q.shape[-2], k.shape[-2]
        allowed = torch.ones(length, keys, dtype=torch.bool, device=q.device).tril(keys - length)
    bias = None
    if allowed is not None:
        bias = torch.zeros(allowed.shape, device=q.device).masked_fill_(~allowed, float("-inf"))
        if position_bias is not None:
            bias = bias + position_bias.float()
        bias = bias.reshape((1,) * (4 - bias.dim()) + tuple(bias.shape))
    softcap = kwargs.get("softcap")
    return LayerScores(q, k, scale, bias, None if softcap is None else float(softcap), _learned_sink(kwargs))


def _allowed(mask: torch.Tensor | None) -> torch.Tensor | None:
    """transformers' mask as booleans (True = attend); an additive mask counts its very negative entries."""
    if mask is None or mask.dtype == torch.bool:
        return mask
    return mask > torch.finfo(mask.dtype).min / 2


def _learned_sink(kwargs: dict) -> torch.Tensor | None:
    """A learned sink logit broadcastable to ``(B, H, T)``: ``s_aux`` is one per head, ``sinks`` one per query."""
    if kwargs.get("s_aux") is not None:
        return kwargs["s_aux"].detach().float().reshape(1, -1, 1)
    if kwargs.get("sinks") is not None:
        return kwargs["sinks"].detach().float().squeeze(-1)
    return None


def _attend(
    scores: LayerScores, query: torch.Tensor, key: torch.Tensor, value: torch.Tensor, kernel: Kernel
) -> tuple[torch.Tensor, torch.Tensor]:
    """The layer's output (in the model's dtype) and the float32 log-sum-exp, learned sink included."""
    if not scores.bilinear:
        return attend_chunks(scores.chunks(), value, scores.with_learned_sink)
    if kernel is chunked_with_lse:  # float32 logits in any dtype: its log-sum-exp is already the exact one
        output, lse = kernel(query, key, value, scores.bias, scores.scale)
    else:
        bias = None if scores.bias is None else scores.bias.to(query.dtype)
        output, lse = kernel(query, key, value, bias, scores.scale)
        if query.dtype != torch.float32:
            lse = kernel(scores.q, scores.k, scores.k, scores.bias, scores.scale)[1]
    total = scores.with_learned_sink(lse.float())
    if scores.learned_sink is not None:  # the sink takes mass but gives no value: shrink each output row
        output = output * torch.exp(lse.float() - total).nan_to_num(0.0).unsqueeze(-1).to(output.dtype)
    return output, total


def _census_entry(
    module: torch.nn.Module, scores: LayerScores, variants: tuple, kwargs: dict
) -> AttentionCall:
    """One call as the census notes it: layer index, heads, whether it is causal, variants, unknown kwargs."""
    if scores.bias is not None:  # a mask decides, as in SDPA: no finite logit above the diagonal
        length, keys = scores.bias.shape[-2:]
        future = torch.ones(length, keys, dtype=torch.bool, device=scores.bias.device).triu(keys - length + 1)
        causal = not bool(torch.isfinite(scores.bias[..., future]).any())
    else:  # else the call's is_causal, or the module's, as sdpa_attention_forward reads them
        flag = kwargs.get("is_causal")
        causal = bool(getattr(module, "is_causal", True) if flag is None else flag)
    known = NEUTRAL_KWARGS.union(VARIANTS)
    unknown = tuple(sorted(name for name, value in kwargs.items() if value is not None and name not in known))
    layer_idx = getattr(module, "layer_idx", None)
    layer_idx = layer_idx if isinstance(layer_idx, int) else None
    return AttentionCall(
        module=id(module),
        layer_idx=layer_idx,
        num_heads=scores.q.shape[1],
        causal=causal,
        variants=variants,
        unknown=unknown,
        extra_keys=scores.k.shape[-2] != scores.q.shape[-2],
    )


def _record_layer(
    recorder: SinkRecorder, layer: int, scores: LayerScores, lse: torch.Tensor, kernel: Kernel
) -> None:
    """Store first-token attention (every layer) and sink statistics (probed layers)."""
    valid = recorder.valid_on(scores.q.device)
    first = recorder.first_position_on(scores.q.device)[:, None].expand(-1, scores.q.shape[1])
    attention = torch.exp(scores.logit_at(first) - lse).nan_to_num(0.0)
    recorder.first_token_attention[layer] = attention.masked_fill(~valid[:, None, :], float("nan")).cpu()
    if layer not in recorder.probed_layers:
        return
    forced = recorder.forced_sinks is not None and layer in recorder.forced_sinks
    if recorder.sink_mode == "query" and not forced:
        g, sink = _per_query_sink(scores)
        visible = torch.isfinite(g) | torch.isposinf(g)
    else:
        sink = _head_sinks(recorder, layer, scores, lse, kernel)
        g, visible = _logodds_at(scores, sink, kernel)
    g = g if recorder.keep_degenerate else g.masked_fill(torch.isposinf(g), float("nan"))
    g = g.masked_fill(~(visible & valid[:, None, :]), float("nan"))
    recorder.layers[layer] = LayerObservations(g=g.cpu(), sink_position=sink.cpu())


def _head_sinks(
    recorder: SinkRecorder, layer: int, scores: LayerScores, lse: torch.Tensor, kernel: Kernel
) -> torch.Tensor:
    """``(B, H)`` sink key per head: forced, first real token, or argmax of received attention."""
    device = scores.q.device
    if recorder.forced_sinks is not None and layer in recorder.forced_sinks:
        return recorder.forced_sinks[layer].to(device)
    if recorder.sink_mode == "first":
        return recorder.first_position_on(device)[:, None].expand(-1, scores.q.shape[1]).contiguous()
    valid = recorder.valid_on(device)
    received = _log_received_attention(scores, lse, valid, kernel)
    return received.masked_fill(~valid[:, None, :], float("-inf")).argmax(dim=-1)


def _log_received_attention(
    scores: LayerScores, lse: torch.Tensor, query_valid: torch.Tensor, kernel: Kernel
) -> torch.Tensor:
    """``(B, H, S)`` log of the attention each key receives, summed over valid queries: with bilinear logits the
    log-sum-exp of keys attending to queries (an extra coordinate carries ``-lse_q / scale``; the sequence reversed
    to make the mask causal again), else a sum over query chunks."""
    if not scores.bilinear:
        lse = lse.masked_fill(~query_valid[:, None, :], float("inf"))
        received = torch.full(scores.k.shape[:-1], float("-inf"), device=lse.device)
        for start, logits in scores.chunks():
            shifted = logits - lse[..., start : start + logits.shape[-2], None]
            received = torch.logaddexp(received, torch.logsumexp(shifted, dim=-2))
        return received
    query_term = (-lse / scores.scale).masked_fill(~query_valid[:, None, :], -_EXCLUDED / scores.scale)
    new_queries = _with_extra_coordinate(scores.k, torch.ones((), device=lse.device)).flip(-2)
    new_keys = torch.cat([scores.q, query_term.unsqueeze(-1)], dim=-1).flip(-2)
    reversed_bias = None if scores.bias is None else scores.bias.transpose(-1, -2).flip(-1, -2).contiguous()
    return kernel(new_queries, new_keys, new_keys, reversed_bias, scores.scale)[1].flip(-1)


def _logodds_at(scores: LayerScores, sink: torch.Tensor, kernel: Kernel) -> tuple[torch.Tensor, torch.Tensor]:
    """``G = l_sink - log(sum_{k != sink} exp(l_k) + exp(s))`` per query, and whether the query sees the sink; a
    query that sees only the sink has ``G = +inf``, or ``l_sink - s`` with a learned sink."""
    sink_logit = scores.logit_at(sink)
    is_sink = torch.arange(scores.k.shape[-2], device=sink.device)[None, None, :] == sink[:, :, None]
    if scores.bilinear:
        penalty = ((-_EXCLUDED / scores.scale) * is_sink.to(scores.k.dtype)).unsqueeze(-1)
        queries = _with_extra_coordinate(scores.q, torch.ones((), device=sink.device))
        keys = torch.cat([scores.k, penalty], dim=-1)
        others = kernel(queries, keys, keys, scores.bias, scores.scale)[1]
    else:
        masked = (logits.masked_fill(is_sink[:, :, None], float("-inf")) for _, logits in scores.chunks())
        others = torch.cat([torch.logsumexp(chunk, dim=-1) for chunk in masked], dim=-1)
    visible = torch.isfinite(sink_logit)
    alone = visible & (_visible_keys(scores) == 1)
    others = scores.with_learned_sink(others.masked_fill(alone, float("-inf")))
    g = (sink_logit - others).masked_fill(visible & torch.isneginf(others), float("inf"))
    return g, visible


def _visible_keys(scores: LayerScores) -> torch.Tensor:
    """How many keys each query sees, broadcastable to ``(B, H, T)``."""
    if scores.bias is None:
        return torch.arange(1, scores.q.shape[-2] + 1, device=scores.q.device)[None, None, :]
    return torch.isfinite(scores.bias).sum(-1)


def _with_extra_coordinate(x: torch.Tensor, extra: torch.Tensor) -> torch.Tensor:
    """Append ``extra`` (broadcast to ``x[..., :1]``) as one more head-dim coordinate."""
    return torch.cat([x, extra.expand(*x.shape[:-1], 1).to(x.dtype)], dim=-1)


def _per_query_sink(scores: LayerScores) -> tuple[torch.Tensor, torch.Tensor]:
    """Per-query argmax key and ``G = l_max - log(sum_{k != argmax} exp(l_k) + exp(s))``, in query chunks."""
    gs, sinks = [], []
    for start, logits in scores.chunks():
        top, position = logits.max(dim=-1, keepdim=True)
        others = torch.logsumexp(logits.scatter(-1, position, float("-inf")), dim=-1)
        gs.append(top.squeeze(-1) - scores.with_learned_sink(others, start))
        sinks.append(position.squeeze(-1))
    return torch.cat(gs, dim=-1), torch.cat(sinks, dim=-1)
