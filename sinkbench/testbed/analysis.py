"""The testbed's statistics: per-arm summaries, paired effects against no protection, what the design can detect.

The unit of analysis is the seed: each protected arm's run is paired with the no-protection run of the same seed
(same stage-1 weights, same data in the same order), and the paired difference is the effect. With n seeds:

* the **sign-flip permutation test** (``scipy.stats.permutation_test``, ``permutation_type="samples"``, exact
  over all 2^n sign patterns) gives a two-sided p-value for "no effect"; with 6 seeds its smallest possible
  value is 2/64 = 0.031, reached only when all six differences share a sign;
* the **percentile bootstrap** over seeds (``scipy.stats.bootstrap``) gives a 95% interval of the mean
  difference; with 6 seeds its coverage is only approximate;
* the **minimum detectable difference** is the smallest true mean difference that the exact sign-flip test at
  alpha = 0.05 detects with 80% power, found by simulation with normal differences whose spread is the observed
  standard deviation of the paired differences (so it is itself an estimate from n seeds), and never below the
  outcome's resolution (one prompt, one instruction, one question): the test needs a non-zero difference of one
  sign in every seed, and a run's score moves in those steps.

A run's visual accuracy is tested against chance with a one-sided exact binomial test (``scipy.stats.binomtest``,
chance = the mean of its questions' chance rates).

Across all runs, the change in S from the base model is set against the change in the strict score
(Spearman's rho, exact or Monte-Carlo permutation p-value and bootstrap interval from :mod:`sinkbench.tables.stats`),
once raw and once after removing each seed's mean (so the seeds' shared stage 1 does not drive the correlation).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np
from scipy import stats

from sinkbench.numbers import finite_or_none
from sinkbench.sink.metrics import SECONDARY_METRICS, SINK_STRENGTH
from sinkbench.tables import stats as table_stats

#: Outcomes compared between arms: name -> how to read it from an arm's record (points for accuracies).
OUTCOMES = {
    "sink_strength": lambda arm: arm["sink"][SINK_STRENGTH.name],
    "prompt_strict": lambda arm: 100 * arm["ifeval"]["prompt_strict"],
    "inst_strict": lambda arm: 100 * arm["ifeval"]["inst_strict"],
    "prompt_loose": lambda arm: 100 * arm["ifeval"]["prompt_loose"],
    "inst_loose": lambda arm: 100 * arm["ifeval"]["inst_loose"],
    "visual_accuracy": lambda arm: 100 * arm["visual"]["accuracy"],
}
#: The smallest non-zero change of each outcome in one run (points), from an arm's record.
RESOLUTION = {
    "sink_strength": lambda arm: 0.0,
    "prompt_strict": lambda arm: 100 / arm["ifeval"]["prompts"],
    "inst_strict": lambda arm: 100 / arm["ifeval"]["instructions"],
    "prompt_loose": lambda arm: 100 / arm["ifeval"]["prompts"],
    "inst_loose": lambda arm: 100 / arm["ifeval"]["instructions"],
    "visual_accuracy": lambda arm: 100 / arm["visual"]["n"],
}
ALPHA = 0.05
POWER = 0.8
SEED = 0


def _mean_difference(x: np.ndarray, y: np.ndarray, axis: int = -1) -> np.ndarray:
    return np.mean(x - y, axis=axis)


def sign_flip_p(differences: Sequence[float]) -> float:
    """Exact two-sided sign-flip permutation p-value of mean(differences) = 0 (NaN below 2 differences)."""
    d = np.asarray(differences, dtype=float)
    if len(d) < 2 or not np.any(d):
        return 1.0 if len(d) >= 2 else math.nan
    result = stats.permutation_test(
        (d, np.zeros_like(d)),
        _mean_difference,
        permutation_type="samples",
        vectorized=True,
        n_resamples=np.inf,
        alternative="two-sided",
    )
    return float(result.pvalue)


def bootstrap_mean_ci(differences: Sequence[float], confidence: float = 0.95) -> tuple[float, float]:
    """Percentile bootstrap interval of the mean difference, resampling seeds (seeded)."""
    d = np.asarray(differences, dtype=float)
    if len(d) < 2 or np.ptp(d) == 0:
        return (float(d.mean()), float(d.mean())) if len(d) else (math.nan, math.nan)
    result = stats.bootstrap(
        (d,),
        np.mean,
        n_resamples=table_stats.N_RESAMPLES,
        method="percentile",
        confidence_level=confidence,
        rng=np.random.default_rng(SEED),
    )
    return float(result.confidence_interval.low), float(result.confidence_interval.high)


def _sign_flip_p_rows(samples: np.ndarray) -> np.ndarray:
    """Exact two-sided sign-flip p-values of each row of ``samples`` (vectorised over rows)."""
    n = samples.shape[1]
    signs = np.array(np.meshgrid(*[[1.0, -1.0]] * n)).reshape(n, -1)  # (n, 2^n)
    null = np.abs(samples @ signs) / n  # (rows, 2^n)
    observed = np.abs(samples.mean(axis=1, keepdims=True))
    return (null >= observed - 1e-12).mean(axis=1)


def minimum_detectable_difference(sd: float, n: int, *, draws: int = 4000) -> float:
    """Smallest mean difference the exact sign-flip test (alpha 0.05, two-sided) detects with 80% power.

    Simulated with normal paired differences of standard deviation ``sd`` over ``n`` seeds, on a grid of 0.05 sd;
    infinity when even 2^(1-n) > alpha (too few seeds: no difference is detectable), else NaN when ``sd`` is not
    positive (no spread to simulate from).
    """
    if 2.0 ** (1 - n) > ALPHA:
        return math.inf
    if not sd > 0:
        return math.nan
    noise = np.random.default_rng(SEED).standard_normal((draws, n))
    for multiple in np.arange(0.05, 10.0, 0.05):
        if (_sign_flip_p_rows(multiple + noise) <= ALPHA).mean() >= POWER:
            return float(multiple * sd)
    return math.inf


def paired_effect(
    treated: Sequence[float], control: Sequence[float], resolution: float = 0.0
) -> dict[str, Any]:
    """Paired differences (treated - control per seed), their mean, interval, p-value and detectable size.

    ``resolution`` is the smallest non-zero difference one seed can show (one prompt of an accuracy); the
    detectable size is never below it, since the sign-flip test needs a non-zero difference in every seed. When
    there is no detectable size, ``undetectable`` says why: ``too_few_seeds`` or ``no_spread``.
    """
    d = np.asarray(treated, dtype=float) - np.asarray(control, dtype=float)
    sd = float(d.std(ddof=1)) if len(d) > 1 else math.nan
    low, high = bootstrap_mean_ci(d)
    detectable = minimum_detectable_difference(sd, len(d))
    return {
        "differences": [float(x) for x in d],
        "mean": float(d.mean()),
        "median": float(np.median(d)),
        "ci95": [low, high],
        "p_sign_flip": sign_flip_p(d),
        "positive": int((d > 0).sum()),
        "negative": int((d < 0).sum()),
        "sd": sd,
        "resolution": resolution,
        "minimum_detectable": max(detectable, resolution) if math.isfinite(detectable) else detectable,
        "undetectable": "too_few_seeds"
        if math.isinf(detectable)
        else "no_spread"
        if math.isnan(detectable)
        else None,
    }


def above_chance(visual: dict[str, Any]) -> float:
    """One-sided exact binomial p-value of a run's visual accuracy against its (mean) chance accuracy."""
    hits = round(visual["accuracy"] * visual["n"])
    return float(stats.binomtest(hits, visual["n"], visual["chance"], alternative="greater").pvalue)


def spread(values: Sequence[float]) -> dict[str, float]:
    """Median and range."""
    return {"median": float(np.median(values)), "min": float(np.min(values)), "max": float(np.max(values))}


def _runs(state: dict[str, Any]) -> dict[str, dict[int, dict[str, Any]]]:
    """arm -> seed -> the arm's record."""
    runs: dict[str, dict[int, dict[str, Any]]] = {}
    for record in state["seeds"]:
        for arm in record["arms"]:
            runs.setdefault(arm["arm"], {})[record["seed"]] = arm
    return runs


def _coupling(state: dict[str, Any], runs: dict[str, dict[int, dict[str, Any]]]) -> dict[str, Any]:
    """How the change in S from the base model tracks the change in prompt-level strict accuracy, over runs."""
    base_s = state["base"]["sink"][SINK_STRENGTH.name]
    base_strict = 100 * state["base"]["ifeval"]["prompt_strict"]
    rows = [
        (seed, OUTCOMES["sink_strength"](run) - base_s, OUTCOMES["prompt_strict"](run) - base_strict, name)
        for name, by_seed in runs.items()
        for seed, run in by_seed.items()
    ]
    seeds = np.array([r[0] for r in rows])
    ds, dstrict = np.array([r[1] for r in rows]), np.array([r[2] for r in rows])

    def centred(values: np.ndarray) -> np.ndarray:
        return values - np.array([values[seeds == s].mean() for s in seeds])

    out = {
        "runs": len(rows),
        "points": [
            {"arm": r[3], "seed": int(r[0]), "delta_s": r[1], "delta_prompt_strict": r[2]} for r in rows
        ],
    }
    for name, (x, y) in {"raw": (ds, dstrict), "within_seed": (centred(ds), centred(dstrict))}.items():
        out[name] = {
            "spearman": table_stats.spearman(x, y),
            "ci95": list(table_stats.spearman_bootstrap_ci(x, y, seed=SEED)),
            "p_permutation": table_stats.permutation_p_value(x, y, seed=SEED),
        }
    return out


def summarize(state: dict[str, Any]) -> dict[str, Any]:
    """Per arm: outcomes (median and range over seeds) and wall times; per protected arm: paired effects."""
    runs = _runs(state)
    arms: dict[str, Any] = {}
    for name, by_seed in runs.items():
        records = [by_seed[seed] for seed in sorted(by_seed)]
        arms[name] = {
            "seeds": sorted(by_seed),
            "s_start": spread([r["trace"][0][SINK_STRENGTH.name] for r in records]),
            "s_end_monitor": spread([r["trace"][-1][SINK_STRENGTH.name] for r in records]),
            **{outcome: spread([read(r) for r in records]) for outcome, read in OUTCOMES.items()},
            "secondary": {m.name: spread([r["sink"][m.name] for r in records]) for m in SECONDARY_METRICS},
            "frozen_weights": spread([r["frozen"]["weights"] for r in records]),
            "visual_above_chance": sum(above_chance(r["visual"]) < ALPHA for r in records),
            "seconds": {
                stage: spread([r["seconds"][stage] for r in records]) for stage in records[0]["seconds"]
            },
        }
    paired = {}
    control = runs.get("none", {})
    for name, by_seed in runs.items():
        seeds = sorted(set(by_seed) & set(control))
        if name == "none" or not seeds:
            continue
        paired[name] = {
            "seeds": seeds,
            **{
                outcome: paired_effect(
                    [read(by_seed[s]) for s in seeds],
                    [read(control[s]) for s in seeds],
                    RESOLUTION[outcome](control[seeds[0]]),
                )
                for outcome, read in OUTCOMES.items()
            },
        }
    stage1 = [record["stage1"] for record in state["seeds"] if "stage1" in record]
    return _json_ready(
        {
            "arms": arms,
            "paired_vs_none": paired,
            "coupling": _coupling(state, runs) if runs else None,
            "stage1": {
                "seconds": spread([s["seconds"] for s in stage1]),
                "visual_above_chance": sum(above_chance(s["visual"]) < ALPHA for s in stage1),
                "visual_accuracy": spread([100 * s["visual"]["accuracy"] for s in stage1]),
            }
            if stage1
            else None,
        }
    )


def _json_ready(value: Any) -> Any:
    """``value`` with every NaN or infinite float replaced by None (JSON has neither)."""
    if isinstance(value, dict):
        return {key: _json_ready(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [_json_ready(item) for item in value]
    return finite_or_none(value) if isinstance(value, float) else value
