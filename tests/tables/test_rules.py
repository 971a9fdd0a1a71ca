"""Tests of the board's judgement rules (sinkbench.tables.rules), each on planted numbers, and of their one
declaration: every rule is stated once and the methodology page prints each statement."""

from __future__ import annotations

import math

import pytest

from sinkbench.tables import rules
from sinkbench.tables.rules import (
    RULES,
    beats_mean,
    control_as_strong_as,
    delta_interval_kind,
    informative,
    interval_sign,
    rule,
)


def test_an_interval_wider_than_every_observed_delta_is_uninformative() -> None:
    assert informative([10.0, 24.0, 24.1, math.nan], 24.0).tolist() == [True, True, False, False]


def test_an_uninformative_interval_that_excludes_zero_still_shows_its_sign() -> None:
    low, high = -53.7, -8.1  # Llama GSM8K's interval: wider than a 40-point range of deltas, but below zero
    assert not informative(high - low, 40.0)
    assert interval_sign(low, high) == "negative"
    assert interval_sign(2.0, 9.5) == "positive"
    assert interval_sign(-3.0, 4.0) is None and interval_sign(0.0, 4.0) is None
    assert interval_sign(None, 4.0) is None and interval_sign(math.nan, -1.0) is None


def test_a_fit_only_marginally_better_than_the_mean_is_marginal() -> None:
    assert beats_mean(9.8, 10.0) == "marginal"  # 0.2 points better than a 10-point baseline: under 5%
    assert beats_mean(19.116, 19.313) == "marginal"  # EQ-Bench on the board: 0.20 points of 19.3
    assert beats_mean(9.5, 10.0) == "yes" and beats_mean(3.3, 4.9) == "yes"
    assert beats_mean(10.0, 10.0) == "no" and beats_mean(2.42, 2.40) == "no"
    assert beats_mean(math.nan, 10.0) is None and beats_mean(1.0, math.nan) is None


def test_a_control_as_strong_as_a_target_is_flagged() -> None:
    targets = {"a": 0.9, "b": -0.5, "c": math.nan}
    assert control_as_strong_as(-0.6, targets) == ["b"]  # |-0.6| >= |-0.5|, below 0.9; c has no rho
    assert control_as_strong_as(0.95, targets) == ["a", "b"]
    assert control_as_strong_as(0.1, targets) == []
    assert control_as_strong_as(math.nan, targets) == []


def test_an_observed_delta_takes_the_best_interval_its_data_allow() -> None:
    known = dict(samples=False, counts=False, proportion=True, scores=True, prompts=True)
    assert delta_interval_kind(**known | {"samples": True, "counts": True}) == "paired-samples"
    assert delta_interval_kind(**known | {"counts": True}) == "paired-counts"
    assert delta_interval_kind(**known) == "unpaired"
    for missing in ("proportion", "scores", "prompts"):
        assert delta_interval_kind(**known | {missing: False}) == "none"


def test_every_rule_is_declared_once_with_one_sentence() -> None:
    assert {"uninformative", "sign shown", "beats the mean", "control flagged", "observed Δ interval"} <= set(
        RULES
    )
    for found in RULES.values():
        assert found.statement.endswith(".") and found.statement.count(". ") == 0, found.name
        assert getattr(rules, found.function.__name__) is found.function
    with pytest.raises(ValueError, match="declared twice"):
        rule("beats the mean", "Again.")(lambda: None)
