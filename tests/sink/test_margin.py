"""Tests for ``sinkbench.sink.margin`` and ``sinkbench margin``: definitions, hand-computed values, a planted change."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import pytest
from tiny_models import CONFIGS, save_tiny_model, tiny_tokenizer

from sinkbench.cli import main
from sinkbench.models import load_model
from sinkbench.sink.options import ProbeOptions
from sinkbench.sink.prompts import load_prompts

if TYPE_CHECKING:
    from sinkbench.sink.strength import PromptObservations

NAN = math.nan
LAYERS = 4  # tiny_models' depth: probe every layer


def _observations(g: list, layers: tuple[int, ...] = (2, 3)) -> PromptObservations:
    import torch

    from sinkbench.sink.strength import PromptObservations

    values = torch.tensor(g, dtype=torch.float32)
    k, h, t = values.shape
    return PromptObservations(
        layers=list(layers),
        g=values,
        sink_position=torch.zeros((k, h), dtype=torch.long),
        first_token_attention=torch.zeros((4, h, t)),
    )


def test_margin_quantities_match_a_hand_computation() -> None:
    from sinkbench.sink.margin import margin_summary

    reference = [
        _observations([[[NAN, 1.0, 2.0]], [[NAN, 3.0, 5.0]]]),
        _observations([[[NAN, 4.0]], [[NAN, 0.0]]]),
    ]
    vlm = [
        _observations([[[NAN, 0.5, 2.0]], [[NAN, 1.0, math.inf]]]),
        _observations([[[NAN, 1.0]], [[NAN, -1.0]]]),
    ]
    summary = margin_summary(reference, vlm)
    # layer 2: G_base {1, 2, 4}, G_vlm {0.5, 2, 1} -> B_gap {0.5, 0, 3}
    # layer 3: the +inf VLM-LM value is not an observation: G_base {3, 0}, G_vlm {1, -1}, B_gap {2, 1}
    assert summary.layers == [2, 3]
    assert [row.paired_observations for row in summary.per_layer] == [3, 2]
    assert [row.g_base for row in summary.per_layer] == [2.0, 1.5]
    assert [row.b_gap for row in summary.per_layer] == [0.5, 1.5]
    assert [row.margin for row in summary.per_layer] == [1.5, 0.0]
    assert [row.g_vlm for row in summary.per_layer] == [1.0, 0.0]
    # pooled: G_base {1, 2, 4, 3, 0} -> 2; B_gap {0.5, 0, 3, 2, 1} -> 1
    assert (summary.overall.paired_observations, summary.overall.g_base, summary.overall.b_gap) == (
        5,
        2.0,
        1.0,
    )
    assert summary.overall.margin == 1.0
    rows = summary.to_dict()["per_layer"]
    assert [row["layer"] for row in rows] == [2, 3]


def test_mismatched_runs_are_rejected() -> None:
    from sinkbench.sink.margin import paired_g

    reference = [_observations([[[NAN, 1.0, 2.0]], [[NAN, 3.0, 5.0]]])]
    with pytest.raises(ValueError, match="prompt 0: reference layers"):
        paired_g(reference, [_observations([[[NAN, 1.0]], [[NAN, 3.0]]])])
    with pytest.raises(ValueError, match="one VLM-LM run per reference prompt"):
        paired_g(reference, [])


def test_b_gap_is_the_realised_part_of_the_papers_sup() -> None:
    """|G' - G| <= sup_k |delta_k - delta_p| for random attention logits and perturbations."""
    import torch

    generator = torch.Generator().manual_seed(0)
    logits = 3 * torch.randn((500, 12), generator=generator, dtype=torch.float64)
    delta = torch.randn((500, 12), generator=generator, dtype=torch.float64)
    sink = logits.argmax(-1, keepdim=True)

    def log_odds(values: torch.Tensor) -> torch.Tensor:
        others = values.scatter(-1, sink, -math.inf).logsumexp(-1)
        return values.gather(-1, sink).squeeze(-1) - others

    realised = (log_odds(logits + delta) - log_odds(logits)).abs()
    worst_case = (delta - delta.gather(-1, sink)).abs().max(-1).values
    assert bool((realised <= worst_case + 1e-12).all())
    assert float(realised.mean()) < float(worst_case.mean())


@pytest.fixture(scope="module")
def reference_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return save_tiny_model(tmp_path_factory.mktemp("reference") / "llm", "llama", seed=3)


def _plant(reference: Path, out: Path, projection: str, layer: int) -> Path:
    """A copy of the reference whose layer ``layer`` has a perturbed q or k projection."""
    import torch
    from safetensors.torch import load_file, save_file

    out.mkdir()
    for file in reference.iterdir():
        (out / file.name).write_bytes(file.read_bytes())
    tensors = load_file(out / "model.safetensors")
    key = f"model.layers.{layer}.self_attn.{projection}.weight"
    generator = torch.Generator().manual_seed(1)
    tensors[key] = tensors[key] + 0.3 * torch.randn(tensors[key].shape, generator=generator)
    save_file(tensors, out / "model.safetensors", metadata={"format": "pt"})
    return out


@pytest.mark.parametrize("projection", ["q_proj", "k_proj"])
def test_planted_projection_change_shows_in_its_layer_only(
    reference_dir: Path, tmp_path: Path, projection
) -> None:
    from sinkbench.sink.margin import pair_margin

    planted = _plant(reference_dir, tmp_path / "vlm-lm", projection, layer=2)
    report = pair_margin(
        str(reference_dir), str(planted), options=ProbeOptions(num_layers=LAYERS), progress=False
    )
    b_gap = {row["layer"]: row["b_gap"] for row in report["per_layer"]}
    assert list(b_gap) == [0, 1, 2, 3]
    assert b_gap[0] < 1e-5 and b_gap[1] < 1e-5  # before the edit: numerical noise only
    assert b_gap[2] > 1e-2  # the edited layer
    assert b_gap[3] > 1e-5  # after it: drift carried by the hidden states
    rows = {row["layer"]: row for row in report["per_layer"]}
    assert all(
        rows[layer]["margin"] == pytest.approx(rows[layer]["g_base"] - b_gap[layer]) for layer in b_gap
    )


def test_identical_pair_has_zero_gap_and_g_base_is_sink_strength(reference_dir: Path) -> None:
    from sinkbench.sink.margin import pair_margin
    from sinkbench.sink.observe import observe
    from sinkbench.sink.strength import summarize

    options = ProbeOptions(num_layers=LAYERS)
    report = pair_margin(str(reference_dir), str(reference_dir), options=options, progress=False)
    loaded = load_model(str(reference_dir))
    summary = summarize(observe(loaded.model, loaded.tokenizer, load_prompts(), options))
    assert report["overall"]["b_gap"] < 1e-5
    assert report["overall"]["g_base"] == pytest.approx(summary.sink_strength, abs=1e-6)
    assert report["overall"]["paired_observations"] == summary.observations
    assert [row["g_base"] for row in report["per_layer"]] == pytest.approx(summary.layer_median_g, abs=1e-6)


def test_per_query_sinks_are_refused(reference_dir: Path) -> None:
    from sinkbench.sink.margin import pair_margin

    with pytest.raises(ValueError, match="one p_sink per head"):
        pair_margin(str(reference_dir), str(reference_dir), options=ProbeOptions(sink_position="query"))


def test_cli_writes_the_report(reference_dir: Path, tmp_path: Path, capsys) -> None:
    planted = _plant(reference_dir, tmp_path / "vlm-lm", "q_proj", layer=3)
    output = tmp_path / "margin.json"
    argv = [
        "margin",
        str(reference_dir),
        str(planted),
        "--output",
        str(output),
        "--num-layers",
        "2",
        "--quiet",
    ]
    assert main(argv) == 0
    report = json.loads(output.read_text())
    assert [row["layer"] for row in report["per_layer"]] == [2, 3]
    assert report["options"]["num_layers"] == 2
    assert len(report["calibration_prompts"]) == 15
    overall = report["overall"]
    assert overall["margin"] == pytest.approx(overall["g_base"] - overall["b_gap"])
    assert np.isfinite([overall["g_base"], overall["b_gap"]]).all()
    printed = capsys.readouterr().out
    assert f"G-B {overall['margin']:+.3f} nats" in printed
    assert f"Report written to {output}" in printed


def test_cli_reports_a_pair_without_a_shared_vocabulary(reference_dir: Path, tmp_path: Path, capsys) -> None:
    from transformers import AutoModelForCausalLM

    small_vocabulary = tmp_path / "small-vocab"
    AutoModelForCausalLM.from_config(CONFIGS["llama"](64)).save_pretrained(small_vocabulary)
    tiny_tokenizer().save_pretrained(small_vocabulary)
    assert main(["margin", str(reference_dir), str(small_vocabulary), "--num-layers", "2", "--quiet"]) == 1
    error = capsys.readouterr().err
    assert "the VLM-LM embeds only 64; the pair must share a vocabulary" in error
