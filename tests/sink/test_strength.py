"""Pure statistics of ``sinkbench.sink.strength`` against hand-computed values."""

from __future__ import annotations

import math

import numpy as np
import pytest

NAN = float("nan")


def _obs(g, first=None, sinks=None, layers=(2, 3)):
    import torch

    from sinkbench.sink.strength import PromptObservations

    g = torch.tensor(g, dtype=torch.float32)
    k, h, t = g.shape
    first = torch.full((4, h, t), 0.5) if first is None else torch.tensor(first, dtype=torch.float32)
    sinks = torch.zeros((k, h), dtype=torch.long) if sinks is None else torch.tensor(sinks)
    return PromptObservations(layers=list(layers), g=g, sink_position=sinks, first_token_attention=first)


def test_s_is_median_pooled_over_prompts_not_mean_of_medians():
    from sinkbench.sink.strength import pooled_g, sink_strength

    a = _obs([[[NAN, 1.0, 2.0]], [[NAN, 3.0, 4.0]]])  # 4 values: 1 2 3 4
    b = _obs([[[NAN, 10.0, NAN]], [[NAN, NAN, NAN]]])  # 1 value: 10
    values = pooled_g([a, b])
    assert sorted(values.tolist()) == [1.0, 2.0, 3.0, 4.0, 10.0]
    assert sink_strength(values) == 3.0  # mean of per-prompt medians would be 6.25


def test_even_count_median_averages_middle_values():
    from sinkbench.sink.strength import sink_strength

    assert sink_strength(np.array([1.0, 2.0, 4.0, 8.0])) == 3.0


def test_infinite_degenerate_values_are_tolerated_by_the_median():
    from sinkbench.sink.strength import sink_strength

    assert sink_strength(np.array([1.0, 2.0, math.inf])) == 2.0


def test_empty_observations_raise():
    from sinkbench.sink.strength import sink_strength, summarize

    with pytest.raises(ValueError, match="No Sink Strength observation"):
        sink_strength(np.array([]))
    with pytest.raises(ValueError, match="at least one calibration prompt"):
        summarize([])


def test_share_above_threshold_is_strict():
    from sinkbench.sink.strength import share_above

    assert share_above(np.array([1.0, 2.0, 2.5, 3.0]), 2.0) == 0.5


def test_layer_head_and_layer_medians():
    from sinkbench.sink.strength import layer_head_medians, layer_medians

    a = _obs([[[NAN, 1.0, 3.0], [NAN, 5.0, 7.0]], [[NAN, -1.0, -3.0], [NAN, NAN, NAN]]])
    medians = layer_head_medians([a])
    np.testing.assert_allclose(medians[0], [2.0, 6.0])
    assert medians[1, 0] == -2.0 and np.isnan(medians[1, 1])
    np.testing.assert_allclose(layer_medians([a]), [4.0, -2.0])


def test_position0_mass_uses_probed_layers_and_last_queries():
    from sinkbench.sink.strength import position0_mass

    first = np.zeros((4, 1, 10))
    first[2, 0, -8:] = 0.5  # probed layer 2, last 8 queries
    first[3, 0, -8:] = 1.0  # probed layer 3
    first[0] = 0.9  # not probed: ignored
    first[2, 0, :2] = 0.7  # outside the last 8: ignored
    obs = _obs(np.zeros((2, 1, 10)), first=first)
    assert position0_mass([obs], last_queries=8) == pytest.approx(0.75)


def test_sink_rate_counts_heads_over_all_layers():
    from sinkbench.sink.strength import sink_rate

    first = np.zeros((4, 2, 3))
    first[0, 0] = [1.0, 0.2, 0.1]  # mean 0.433 > 0.3
    first[1, 1] = [0.3, 0.3, 0.2]  # mean 0.267, not > 0.3
    first[3, 0] = [1.0, 1.0, NAN]  # NaN (padding) ignored: mean 1.0
    obs = _obs(np.zeros((2, 2, 3)), first=first)
    assert sink_rate([obs], 0.3) == pytest.approx(2 / 8)


def test_sink_rate_thresholds_each_prompt_before_averaging_as_gu_et_al_do():
    # sail-sg/Attention-Sink: per (prompt, layer, head) the mean first-token attention over queries, thresholded,
    # then averaged. Pooling the prompts first would give head (0, 0) a mean of 0.35 > 0.3 and count it once.
    from sinkbench.sink.strength import sink_rate

    first_a, first_b = np.zeros((4, 1, 2)), np.zeros((4, 1, 2))
    first_a[0, 0] = [1.0, 0.0]  # mean 0.5 > 0.3
    first_b[0, 0] = [0.2, 0.2]  # mean 0.2
    prompts = [_obs(np.zeros((2, 1, 2)), first=first) for first in (first_a, first_b)]
    assert sink_rate(prompts, 0.3) == pytest.approx(1 / 8)  # 1 of 2 prompts x 4 layers x 1 head


def test_position0_per_prompt_gives_each_prompt_its_mean():
    from sinkbench.sink.strength import position0_per_prompt

    first = np.zeros((4, 1, 10))
    first[2:, 0, -8:] = 0.4
    values = position0_per_prompt([_obs(np.zeros((2, 1, 10)), first=first), _obs(np.zeros((2, 1, 10)))])
    np.testing.assert_allclose(values, [0.4, 0.5])


def test_sink_position_histogram_per_head_and_per_query():
    from sinkbench.sink.strength import sink_position_histogram

    per_head = _obs(np.zeros((2, 2, 3)), sinks=[[0, 0], [0, 4]])
    assert sink_position_histogram([per_head, per_head]) == {0: 6, 4: 2}
    per_query = _obs([[[NAN, 1.0, 1.0]], [[NAN, 1.0, NAN]]], sinks=[[[0, 0, 1]], [[0, 2, 2]]])
    assert sink_position_histogram([per_query]) == {0: 1, 1: 1, 2: 1}


def test_summary_scalar_metrics_and_json():
    from sinkbench.sink.strength import summarize

    obs = _obs([[[NAN, 1.0, 3.0]], [[NAN, 2.5, 0.5]]])
    summary = summarize([obs])
    assert summary.sink_strength == 1.75
    assert summary.scalar_metrics()["share_g_above_2"] == 0.5
    assert summary.to_dict()["sink_position_histogram"] == {"0": 2}
    assert '"observations": 4' in str(obs)
