"""The outcome-bucketed probe (``sinkbench.sink.buckets``, ``sinkbench buckets``) on a tiny model."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from tiny_models import tiny_causal_lm, tiny_tokenizer

from sinkbench.cli import main
from sinkbench.errors import UserError
from sinkbench.models import LoadedModel, module_info
from sinkbench.sink.options import BucketRule, IntervalOptions

PROMPTS = [
    "Write two sentences about rivers in lowercase.",
    "List three colours, one per line.",
    "Answer without commas: what is rain?",
    "Say hello in five words.",
    "Give a title in double angular brackets.",
]
PASSED = [True, False, True, False, False]


def _samples(path: Path, outcomes=PASSED, metric: str = "prompt_level_strict_acc", **extra) -> Path:
    lines = [
        {
            "doc_id": i,
            "doc": {"prompt": prompt},
            "filter": "none",
            "metrics": [metric],
            metric: outcome,
            **extra,
        }
        for i, (prompt, outcome) in enumerate(zip(PROMPTS, outcomes, strict=True))
    ]
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return path


@pytest.fixture(scope="module")
def tiny() -> LoadedModel:
    model = tiny_causal_lm("llama")
    return LoadedModel(model, tiny_tokenizer(), module_info(model, "tiny-llama"))


def test_prompts_split_by_the_metric_and_threshold(tmp_path: Path) -> None:
    from sinkbench.sink.buckets import read_buckets

    buckets = read_buckets(_samples(tmp_path / "s.jsonl"))
    assert buckets == {"pass": [PROMPTS[0], PROMPTS[2]], "fail": [PROMPTS[1], PROMPTS[3], PROMPTS[4]]}
    scores = _samples(tmp_path / "n.jsonl", outcomes=[0.5, 0.49, 1.0, 0.0, 0.7], metric="exact_match")
    assert read_buckets(scores, BucketRule(metric="exact_match"))["pass"] == [
        PROMPTS[0],
        PROMPTS[2],
        PROMPTS[4],
    ]
    assert read_buckets(scores, BucketRule(metric="exact_match", threshold=0.8))["pass"] == [PROMPTS[2]]


@pytest.mark.parametrize(
    ("rule", "extra", "message"),
    [
        (BucketRule(metric="inst_level_strict_acc"), {"inst_level_strict_acc": [True, False]}, "is a list"),
        (BucketRule(prompt_field="question"), {}, r"doc\.question is not a prompt string.*\['prompt'\]"),
        (BucketRule(filter="strict-match"), {}, r"filter\(s\) \['none'\]; pass --filter"),
    ],
)
def test_bad_samples_are_refused_naming_line_field_and_fix(tmp_path: Path, rule, extra, message) -> None:
    from sinkbench.sink.buckets import read_buckets

    with pytest.raises(UserError, match=message) as error:
        read_buckets(_samples(tmp_path / "s.jsonl", **extra), rule)
    assert "s.jsonl line 1" in str(error.value) or "filter" in str(error.value)
    assert "\n" not in str(error.value)


def test_a_file_that_is_not_json_lines_is_refused(tmp_path: Path) -> None:
    from sinkbench.sink.buckets import read_buckets

    (tmp_path / "bad.jsonl").write_text("not json\n")
    with pytest.raises(UserError, match=r"bad\.jsonl: line 1 is not valid JSON"):
        read_buckets(tmp_path / "bad.jsonl")


def test_each_bucket_is_measured_as_s_is_on_its_own_prompts(tiny: LoadedModel, tmp_path: Path) -> None:
    from sinkbench.sink.buckets import bucket_strength
    from sinkbench.sink.observe import observe
    from sinkbench.sink.strength import pooled_g, position0_mass, sink_strength

    report = bucket_strength(
        tiny, _samples(tmp_path / "s.jsonl"), interval=IntervalOptions(resamples=200), progress=False
    )
    for name, prompts in (("pass", [PROMPTS[0], PROMPTS[2]]), ("fail", [PROMPTS[1], PROMPTS[3], PROMPTS[4]])):
        observations = observe(tiny.model, tiny.tokenizer, prompts)
        bucket = report["buckets"][name]
        assert bucket["prompts"] == len(prompts)
        assert bucket["sink_strength"] == pytest.approx(sink_strength(pooled_g(observations)))
        assert bucket["position0_mass"] == pytest.approx(position0_mass(observations))
        low, high = bucket["sink_strength_ci"]
        assert low <= bucket["sink_strength"] <= high
    difference = report["pass_minus_fail"]
    expected = report["buckets"]["pass"]["sink_strength"] - report["buckets"]["fail"]["sink_strength"]
    assert difference["sink_strength"] == pytest.approx(expected)
    assert (
        difference["sink_strength_ci"][0] <= difference["sink_strength"] <= difference["sink_strength_ci"][1]
    )
    assert report["samples"]["file"] == "s.jsonl" and len(report["samples"]["sha256"]) == 64


def test_an_empty_bucket_has_no_numbers_and_no_difference(tiny: LoadedModel, tmp_path: Path) -> None:
    from sinkbench.sink.buckets import bucket_strength

    report = bucket_strength(tiny, _samples(tmp_path / "s.jsonl", outcomes=[True] * 5), progress=False)
    assert report["buckets"]["fail"] == {
        "prompts": 0, "observations": 0, "sink_strength": None, "sink_strength_ci": None,
        "position0_mass": None, "position0_mass_ci": None,
    }  # fmt: skip
    assert report["pass_minus_fail"]["sink_strength"] is None and report["buckets"]["pass"]["prompts"] == 5


def test_draws_are_seeded_subsets_in_file_order() -> None:
    from sinkbench.sink.buckets import draw

    drawn = draw(PROMPTS, 3, seed=4)
    assert drawn == draw(PROMPTS, 3, seed=4) and len(set(drawn)) == 3
    assert drawn == [prompt for prompt in PROMPTS if prompt in drawn]
    assert draw(PROMPTS, 10, seed=0) == PROMPTS


def test_uncertainty_helpers() -> None:
    from sinkbench.stats import bootstrap, percentile_interval

    values = np.array([0.1, 0.2, 0.9, 0.4])
    replicates = bootstrap(np.mean, values, resamples=2000, seed=0)
    assert replicates.mean() == pytest.approx(values.mean(), abs=0.01)
    low, high = percentile_interval(replicates, 0.95)
    assert low < values.mean() < high and low >= values.min() and high <= values.max()


def test_command_prints_both_buckets_and_writes_the_report(tiny_pair, tmp_path: Path, capsys) -> None:
    output = tmp_path / "buckets.json"
    code = main(
        ["buckets", str(tiny_pair.vlm_lm), "--samples", str(_samples(tmp_path / "s.jsonl")), "--per-bucket", "2",
         "--bootstrap-resamples", "100", "--output", str(output), "--quiet"]
    )  # fmt: skip
    printed = capsys.readouterr().out
    assert (
        code == 0
        and "pass    2 prompts" in printed
        and "fail    2 prompts" in printed
        and "pass - fail" in printed
    )
    report = json.loads(output.read_text())
    assert report["prompts_in_file"] == {"pass": 2, "fail": 3} and report["per_bucket"] == 2
    assert report["rule"] == {
        "metric": "prompt_level_strict_acc",
        "threshold": 0.5,
        "prompt_field": "prompt",
        "filter": None,
    }
