"""The ``sink_strength`` lm-eval task end to end, on a tiny model saved to a temp dir."""

from __future__ import annotations

import logging

import pytest
from tiny_models import save_tiny_model, tiny_tokenizer

from sinkbench.harness.run import lm_eval_argv, tasks_path
from sinkbench.sink.metrics import SINK_METRICS
from sinkbench.sink.options import ProbeOptions
from sinkbench.sink.prompts import load_calibration, load_prompts

METRICS = tuple(metric.name for metric in SINK_METRICS)


@pytest.fixture(scope="module")
def tiny_dir(tmp_path_factory):
    return save_tiny_model(tmp_path_factory.mktemp("tiny") / "model", "qwen3")


def _evaluate(tiny_dir, **kwargs):
    import lm_eval

    return lm_eval.simple_evaluate(
        model="hf",
        model_args=f"pretrained={tiny_dir},dtype=float32",
        tasks=["sink_strength"],
        task_manager=lm_eval.tasks.TaskManager(
            include_path=str(tasks_path()), include_defaults=False, metadata=kwargs.pop("metadata", None)
        ),
        device="cpu",
        **kwargs,
    )


def test_results_hold_s_and_secondary_metrics(tiny_dir, monkeypatch):
    import transformers

    from sinkbench.sink.observe import measure

    loads = []
    original = transformers.AutoModelForCausalLM.from_pretrained.__func__

    def counting(cls, *args, **kwargs):
        loads.append(args[0] if args else kwargs.get("pretrained_model_name_or_path"))
        return original(cls, *args, **kwargs)

    monkeypatch.setattr(transformers.AutoModelForCausalLM, "from_pretrained", classmethod(counting))
    results = _evaluate(tiny_dir)
    assert len(loads) == 1, f"weights loaded {len(loads)} times: {loads}"
    metrics = results["results"]["sink_strength"]
    direct, _ = measure(_load(tiny_dir), tiny_tokenizer(), load_prompts(), ProbeOptions())
    expected = direct.scalar_metrics()
    for name in METRICS:
        assert metrics[f"{name},none"] == pytest.approx(expected[name], abs=1e-6), name
    assert results["configs"]["sink_strength"]["metadata"]["probe"]["num_layers"] == 10
    assert results["n-samples"]["sink_strength"]["effective"] == 15


def _load(directory):
    import transformers

    return transformers.AutoModelForCausalLM.from_pretrained(directory, dtype="float32").eval()


@pytest.mark.slow  # a whole lm_eval evaluation
def test_metadata_overrides_probe_options(tiny_dir):
    from sinkbench.sink.observe import measure

    results = _evaluate(tiny_dir, metadata={"probe": {"num_layers": 2, "sink_position": "first"}})
    direct, _ = measure(
        _load(tiny_dir), tiny_tokenizer(), load_prompts(), ProbeOptions(num_layers=2, sink_position="first")
    )
    assert results["results"]["sink_strength"]["sink_strength,none"] == pytest.approx(
        direct.sink_strength, abs=1e-6
    )


@pytest.mark.slow  # a whole lm_eval evaluation of the full calibration set
def test_limit_never_shortens_the_calibration_set(tiny_dir, caplog):
    from sinkbench.sink.observe import measure

    with caplog.at_level(logging.WARNING, logger="sinkbench"):
        results = _evaluate(tiny_dir, limit=3)
    direct, _ = measure(_load(tiny_dir), tiny_tokenizer(), load_prompts(), ProbeOptions())
    assert results["results"]["sink_strength"]["sink_strength,none"] == pytest.approx(
        direct.sink_strength, abs=1e-6
    )
    assert results["n-samples"]["sink_strength"] == {"original": 15, "effective": 15}
    assert results["results"]["sink_strength"]["observations,none"] == direct.observations
    (warning,) = [record.getMessage() for record in caplog.records if "--limit" in record.getMessage()]
    assert warning == (
        "sinkbench: --limit 3 does not apply to sink_strength: S is measured on all 15 prompts of calibration set "
        "v1 (S of fewer prompts is another quantity)"
    )


def test_stderr_is_the_bootstrap_over_prompts(tiny_dir):
    from sinkbench.sink.observe import observe
    from sinkbench.sink.uncertainty import sink_strength_stderr

    results = _evaluate(tiny_dir, bootstrap_iters=200)
    observations = observe(_load(tiny_dir), tiny_tokenizer(), load_prompts(), ProbeOptions())
    expected = sink_strength_stderr(observations, resamples=200)
    assert results["results"]["sink_strength"]["sink_strength_stderr,none"] == pytest.approx(
        expected, rel=1e-9
    )
    assert expected > 0
    assert results["results"]["sink_strength"]["observations_stderr,none"] == "N/A"  # a count has none
    calibration = results["configs"]["sink_strength"]["metadata"]["calibration"]
    assert calibration == load_calibration("v1").to_dict()
    assert results["higher_is_better"]["sink_strength"]["observations"] is None


def test_zero_bootstrap_iters_leaves_the_stderr_out(tiny_dir):
    results = _evaluate(tiny_dir, bootstrap_iters=0)
    assert results["results"]["sink_strength"]["sink_strength_stderr,none"] == "N/A"
    assert isinstance(results["results"]["sink_strength"]["sink_strength,none"], float)


def test_second_packaged_set_by_name(tiny_dir):
    results = _evaluate(tiny_dir, metadata={"calibration": "v2"})
    assert results["configs"]["sink_strength"]["metadata"]["calibration"] == load_calibration("v2").to_dict()
    assert results["n-samples"]["sink_strength"] == {"original": 15, "effective": 15}


def test_unknown_probe_option_is_a_clear_error(tiny_dir):
    with pytest.raises(ValueError, match="num_layer"):
        _evaluate(tiny_dir, metadata={"probe": {"num_layer": 2}})


def test_backend_without_attention_gets_a_clear_error():
    from sinkbench.harness.request import BackendUnsupported, serve_sink_strength

    class ApiLike:
        model = "gpt-remote"
        tokenizer = None

    with pytest.raises(
        BackendUnsupported, match=r"the ApiLike backend keeps no local transformers model"
    ) as raised:
        serve_sink_strength(ApiLike(), [])
    assert "--model hf" in raised.value.fix


def test_eval_adds_include_path_once():
    assert lm_eval_argv(["--tasks", "sink_strength"])[-2:] == ["--include_path", str(tasks_path())]
    with pytest.raises(ValueError, match="accepts only one"):
        lm_eval_argv(["--include_path", "mine"])
    assert (tasks_path() / "sink_strength" / "sink_strength.yaml").is_file()
