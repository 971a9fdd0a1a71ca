"""S's bootstrap over prompts (sinkbench.sink.uncertainty): exact replicates, interval, collapse, seeding."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import pytest
from tiny_models import tiny_causal_lm, tiny_tokenizer

from sinkbench.sink.options import IntervalOptions, ProbeOptions
from sinkbench.sink.prompts import load_prompts

if TYPE_CHECKING:
    from sinkbench.sink.strength import PromptObservations


def _synthetic(sizes: list[int], seed: int = 0) -> list[PromptObservations]:
    """Prompts with normal G values of the given counts (and a few NaN non-observations)."""
    import torch

    from sinkbench.sink.strength import PromptObservations

    rng = np.random.default_rng(seed)
    prompts = []
    for number, size in enumerate(sizes):
        g = torch.tensor(rng.normal(1.0 + 0.2 * number, 1.0, size=(1, 1, size)), dtype=torch.float32)
        g[0, 0, 0] = float("nan")
        prompts.append(PromptObservations([0], g, torch.zeros(1, 1), torch.zeros(1, 1, size)))
    return prompts


def test_replicates_equal_the_median_of_the_drawn_prompts_concatenated() -> None:
    import torch

    from sinkbench.sink.uncertainty import bootstrap_sink_strength

    observations = _synthetic([7, 12, 3, 9, 20])
    replicates = bootstrap_sink_strength(observations, resamples=60, seed=3)
    draws = np.random.default_rng(3).multinomial(5, np.full(5, 0.2), size=60)
    parts = [obs.g[~torch.isnan(obs.g)].double().numpy() for obs in observations]
    expected = [np.median(np.concatenate([np.tile(parts[p], c) for p, c in enumerate(row)])) for row in draws]
    assert replicates == pytest.approx(expected, abs=1e-12)


def test_interval_contains_s_on_a_real_probe() -> None:
    from sinkbench.sink.observe import observe
    from sinkbench.sink.strength import pooled_g, sink_strength
    from sinkbench.sink.uncertainty import sink_strength_interval

    observations = observe(tiny_causal_lm("llama"), tiny_tokenizer(), load_prompts(), ProbeOptions())
    s = sink_strength(pooled_g(observations))
    low, high = sink_strength_interval(observations)
    assert low <= s <= high and low < high


def test_identical_prompts_collapse_the_interval_to_s() -> None:
    from sinkbench.sink.strength import pooled_g, sink_strength
    from sinkbench.sink.uncertainty import sink_strength_interval, sink_strength_stderr

    one = _synthetic([11])[0]
    observations = [one] * 15
    s = sink_strength(pooled_g(observations))
    assert sink_strength_interval(observations) == (s, s)
    assert sink_strength_stderr(observations, resamples=100) == 0.0


def test_resampling_is_reproducible_with_a_seed_and_moves_without_it() -> None:
    from sinkbench.sink.uncertainty import sink_strength_interval

    observations = _synthetic([5, 8, 13, 21, 34, 55])
    first = sink_strength_interval(observations, IntervalOptions(resamples=300, seed=7))
    assert first == sink_strength_interval(observations, IntervalOptions(resamples=300, seed=7))
    assert first != sink_strength_interval(observations, IntervalOptions(resamples=300, seed=8))


def test_zero_resamples_turn_the_interval_off_and_bad_options_are_refused() -> None:
    from sinkbench.sink.uncertainty import sink_strength_interval, sink_strength_stderr

    assert sink_strength_interval(_synthetic([4, 4]), IntervalOptions(resamples=0)) is None
    with pytest.raises(ValueError, match="confidence"):
        IntervalOptions(confidence=1.0)
    with pytest.raises(ValueError, match="at least 2 resamples"):
        sink_strength_stderr(_synthetic([4]), resamples=1)
