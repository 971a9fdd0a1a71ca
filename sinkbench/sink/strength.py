"""Sink Strength S and its secondary metrics from recorded observations: pure functions.

Definitions (arXiv 2609.00746 sections 3 and C.3; Gu et al. 2025 for Sink_1^eps; thresholds in
:mod:`sinkbench.sink.metrics`): ``G = log(a / (1 - a))`` with ``a`` the attention on the sink key, one value per
(prompt, probed layer, head, query) observation; ``S`` is the median of ``G`` pooled over every observation of
every prompt; the share of observations with ``G`` above the threshold; the position-0 mass (the paper's C.3 probe:
first-token attention averaged over probed layers x heads x each prompt's last queries, then over prompts); and
the sink rate, Sink_1^eps as Gu et al.'s code computes it (sail-sg/Attention-Sink, ``eval_sink_open_source.py``):
the share of (prompt, layer, head), over all layers, whose mean first-token attention over the prompt's queries
(the first query included) exceeds epsilon.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np
import torch

from sinkbench.sink import metrics


def stack_heads(tensors: Sequence[torch.Tensor], fill: float) -> torch.Tensor:
    """Stack per-layer ``(H_l, ...)`` tensors into ``(K, H, ...)`` with ``H`` the widest, filling the heads a
    layer lacks (models with per-layer head counts)."""
    width = max(t.shape[0] for t in tensors)
    return torch.stack(
        [
            torch.cat([t, t.new_full((width - t.shape[0], *t.shape[1:]), fill)]) if t.shape[0] < width else t
            for t in tensors
        ]
    )


@dataclass
class PromptObservations:
    """Everything the probe recorded for one calibration prompt, over its K probed ``layers``: ``g``, ``(K, H, T)``
    float32 log-odds of attention on the sink (NaN where not an observation: the query cannot see the sink, is
    degenerate, or the layer lacks that head); ``sink_position``, ``(K, H)`` or per query ``(K, H, T)`` (-1: no
    such head); ``first_token_attention``, ``(L, H, T)`` in every attention layer (labels ``attention_layers``, None
    for ``0 .. L-1``); ``context``: how the probe ran (variants, kernel; empty for the naive route)."""

    layers: list[int]
    g: torch.Tensor
    sink_position: torch.Tensor
    first_token_attention: torch.Tensor
    attention_layers: list[int] | None = None
    context: dict[str, Any] = field(default_factory=dict)

    def rows_of(self, labels: Sequence[int]) -> list[int]:
        """Row indices of ``first_token_attention`` for layer ``labels``."""
        order = self.attention_layers
        if order is None:
            order = list(range(len(self.first_token_attention)))
        position = {label: row for row, label in enumerate(order)}
        return [position[label] for label in labels]

    def __str__(self) -> str:
        """Compact one-line JSON summary (what lm-eval writes into samples files)."""
        values = self.g[~torch.isnan(self.g)].numpy()
        return json.dumps(
            {
                "tokens": int(self.g.shape[-1]),
                metrics.OBSERVATIONS.name: int(values.size),
                "median_g": float(np.median(values)) if values.size else None,
            }
        )


@dataclass
class SinkStrengthSummary:
    """S and the secondary outputs of one measurement."""

    sink_strength: float
    observations: int
    share_g_above: float
    position0_mass: float
    sink_rate: float
    layers: list[int]
    median_g: list[list[float]]
    layer_median_g: list[float]
    sink_position_histogram: dict[int, int]
    attention: dict[str, Any] = field(default_factory=dict)

    def scalar_metrics(self) -> dict[str, float]:
        """The scalar metrics, keyed as in lm-eval results files."""
        return {
            metrics.SINK_STRENGTH.name: self.sink_strength,
            metrics.SHARE_G_ABOVE.name: self.share_g_above,
            metrics.POSITION0_MASS.name: self.position0_mass,
            metrics.SINK_RATE.name: self.sink_rate,
            metrics.OBSERVATIONS.name: float(self.observations),
        }

    def to_dict(self) -> dict:
        """JSON-ready dictionary (histogram keys become strings)."""
        data = asdict(self)
        data["sink_position_histogram"] = {str(k): v for k, v in self.sink_position_histogram.items()}
        return data


def pooled_g(observations: Sequence[PromptObservations]) -> np.ndarray:
    """All observed G values (NaN dropped; ``+inf`` kept) as one float64 array."""
    _require(observations)
    parts = [obs.g[~torch.isnan(obs.g)].double().numpy() for obs in observations]
    return np.concatenate(parts)


def sink_strength(g_values: np.ndarray) -> float:
    """Median of the pooled G values (numpy's: the mean of the two middle values when even); ValueError when
    there is no observation."""
    if g_values.size == 0:
        raise ValueError("No Sink Strength observation: every query was excluded (prompts too short?).")
    return float(np.median(g_values))


def share_above(g_values: np.ndarray, threshold: float = metrics.G_THRESHOLD) -> float:
    """Fraction of observations with ``G > threshold``."""
    return float(np.mean(g_values > threshold)) if g_values.size else float("nan")


def layer_head_medians(observations: Sequence[PromptObservations]) -> np.ndarray:
    """``(K, H)`` median G per probed layer and head, pooled over prompts and queries."""
    _require(observations)
    pooled = torch.cat([obs.g.double() for obs in observations], dim=-1).numpy()
    return np.array([[_median(row) for row in head_rows] for head_rows in pooled])


def layer_medians(observations: Sequence[PromptObservations]) -> np.ndarray:
    """``(K,)`` median G per probed layer, pooled over prompts, heads and queries."""
    _require(observations)
    pooled = torch.cat([obs.g.double().flatten(1) for obs in observations], dim=-1).numpy()
    return np.array([_median(row) for row in pooled])


def position0_per_prompt(
    observations: Sequence[PromptObservations], last_queries: int = metrics.LAST_QUERIES
) -> np.ndarray:
    """Paper C.3 probe, one value per prompt: first-token attention averaged over the probed layers x heads x
    the prompt's last ``last_queries`` queries."""
    _require(observations)
    last = [obs.first_token_attention[obs.rows_of(obs.layers), :, -last_queries:] for obs in observations]
    return np.array([float(torch.nanmean(attention.double())) for attention in last])


def position0_mass(
    observations: Sequence[PromptObservations], last_queries: int = metrics.LAST_QUERIES
) -> float:
    """Paper C.3 probe: :func:`position0_per_prompt`, averaged over prompts."""
    return float(np.mean(position0_per_prompt(observations, last_queries)))


def sink_rate(
    observations: Sequence[PromptObservations], threshold: float = metrics.SINK_RATE_THRESHOLD
) -> float:
    """Gu et al.'s Sink_1^eps (module docstring): the share of (prompt, layer, head) whose mean first-token
    attention over the prompt's queries exceeds ``threshold``."""
    _require(observations)
    indicators = []
    for obs in observations:
        means = torch.nanmean(obs.first_token_attention.double(), dim=-1)  # (L, H): mean over queries
        present = ~torch.isnan(means)  # heads that a layer with fewer heads does not have are left out
        indicators.append((means[present] > threshold).double())
    return float(torch.cat(indicators).mean())


def sink_position_histogram(observations: Sequence[PromptObservations]) -> dict[int, int]:
    """How often each key position was the sink, over (prompt, layer, head) or observations per query."""
    counts: Counter[int] = Counter()
    for obs in observations:
        positions = obs.sink_position
        if positions.dim() == 3:
            positions = positions[~torch.isnan(obs.g)]
        counts.update(position for position in positions.flatten().tolist() if position >= 0)
    return dict(sorted(counts.items()))


def summarize(
    observations: Sequence[PromptObservations],
    *,
    g_threshold: float = metrics.G_THRESHOLD,
    last_queries: int = metrics.LAST_QUERIES,
    rate_threshold: float = metrics.SINK_RATE_THRESHOLD,
) -> SinkStrengthSummary:
    """Compute S and every secondary output from per-prompt observations."""
    values = pooled_g(observations)
    return SinkStrengthSummary(
        sink_strength=sink_strength(values),
        observations=int(values.size),
        share_g_above=share_above(values, g_threshold),
        position0_mass=position0_mass(observations, last_queries),
        sink_rate=sink_rate(observations, rate_threshold),
        layers=list(observations[0].layers),
        median_g=layer_head_medians(observations).tolist(),
        layer_median_g=layer_medians(observations).tolist(),
        sink_position_histogram=sink_position_histogram(observations),
        attention=dict(observations[0].context),
    )


def _median(values: np.ndarray) -> float:
    """Median of the non-NaN values (NaN when there are none), same convention as ``sink_strength``."""
    kept = values[~np.isnan(values)]
    return float(np.median(kept)) if kept.size else float("nan")


def _require(observations: Sequence[PromptObservations]) -> None:
    if not observations:
        raise ValueError("No observations: pass at least one calibration prompt.")
