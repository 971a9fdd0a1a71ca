"""S's sampling uncertainty over calibration prompts: a bootstrap of whole prompts (observations within a prompt
share its tokens and are not independent), each resample recomputing S as defined, the median of the pooled G of
the drawn prompts (:func:`sinkbench.stats.bootstrap_pooled_median`). It says how much S would move under another
draw of prompts of the same kind, nothing about another kind of prompt set (see the methodology page).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import torch

from sinkbench.sink.options import IntervalOptions
from sinkbench.sink.strength import PromptObservations
from sinkbench.stats import bootstrap_pooled_median, percentile_interval


def bootstrap_sink_strength(
    observations: Sequence[PromptObservations], *, resamples: int, seed: int
) -> np.ndarray:
    """``resamples`` bootstrap replicates of S, each over a seeded draw of whole prompts with replacement (NaN
    where the drawn prompts hold no observation)."""
    if not observations:
        raise ValueError("No observations: pass at least one calibration prompt.")
    groups = [obs.g[~torch.isnan(obs.g)].double().numpy() for obs in observations]
    return bootstrap_pooled_median(groups, resamples=resamples, seed=seed)


def sink_strength_interval(
    observations: Sequence[PromptObservations], options: IntervalOptions | None = None
) -> tuple[float, float] | None:
    """Percentile bootstrap interval of S over prompts (``options.confidence``), or None when turned off."""
    options = options or IntervalOptions()
    if options.resamples == 0:
        return None
    replicates = bootstrap_sink_strength(observations, resamples=options.resamples, seed=options.seed)
    return percentile_interval(replicates, options.confidence)


def sink_strength_stderr(
    observations: Sequence[PromptObservations], *, resamples: int, seed: int = 0
) -> float:
    """Bootstrap standard error of S over prompts: the standard deviation (ddof 1) of the replicates."""
    if resamples < 2:
        raise ValueError(f"a standard error needs at least 2 resamples, got {resamples}")
    return float(np.nanstd(bootstrap_sink_strength(observations, resamples=resamples, seed=seed), ddof=1))
