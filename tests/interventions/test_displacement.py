"""Weight displacement (``sinkbench.interventions.displacement``): its mathematics, its report, its command."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from tiny_models import tiny_causal_lm, tiny_tokenizer

from sinkbench.cli import main
from sinkbench.errors import UserError
from sinkbench.models import LoadedModel, module_info

if TYPE_CHECKING:
    import torch


def _loaded(model: torch.nn.Module, name: str) -> LoadedModel:
    return LoadedModel(model, tiny_tokenizer(), module_info(model, name))


def _scaled(model: torch.nn.Module, factor: float) -> torch.nn.Module:
    """A copy with every projection W replaced by ``factor * W`` (norm scales untouched)."""
    import torch

    from sinkbench.interventions.modules import projections

    moved = copy.deepcopy(model)
    with torch.no_grad():
        for _, weight in projections(moved):
            weight.mul_(factor)
    return moved


def test_a_model_against_itself_has_moved_nowhere() -> None:
    from sinkbench.interventions.displacement import displacement_rows

    model = tiny_causal_lm("qwen3")
    rows = displacement_rows(model, copy.deepcopy(model))
    assert rows and all(row.frobenius_norm == 0.0 and row.relative_frobenius == 0.0 for row in rows)
    assert all(row.operator_norm in (0.0, None) for row in rows)


@pytest.mark.parametrize("c", [0.5, -2.0])
def test_w_plus_cw_moves_by_c_times_the_norms_of_w(c: float) -> None:
    import torch

    from sinkbench.interventions.displacement import displacement_rows
    from sinkbench.interventions.modules import projections

    model = tiny_causal_lm("llama")
    rows = displacement_rows(model, _scaled(model, 1.0 + c))
    weights = {(item.layer, item.name): weight for item, weight in projections(model)}
    for row in (row for row in rows if row.operator_norm is not None):
        weight = weights[(row.layer, row.name)].detach()
        assert row.operator_norm == pytest.approx(
            abs(c) * float(torch.linalg.matrix_norm(weight, ord=2)), rel=1e-5
        )
        assert row.frobenius_norm == pytest.approx(abs(c) * float(torch.linalg.vector_norm(weight)), rel=1e-5)
        assert row.relative_frobenius == pytest.approx(abs(c), rel=1e-5)


def test_operator_norm_is_the_largest_singular_value() -> None:
    import torch

    from sinkbench.interventions.displacement import tensor_displacement

    reference = torch.zeros(3, 2)
    endpoint = torch.tensor([[3.0, 0.0], [0.0, 4.0], [0.0, 0.0]])
    assert tensor_displacement(reference, endpoint)[:2] == pytest.approx((4.0, 5.0))


def test_a_gemma_norm_scale_is_compared_as_one_plus_its_weight() -> None:
    import torch

    from sinkbench.interventions.displacement import displacement_rows
    from sinkbench.interventions.modules import norm_scales

    model = tiny_causal_lm("gemma3_text")  # weights 0: effective scale 1
    moved = copy.deepcopy(model)
    with torch.no_grad():
        for _, module in norm_scales(moved):
            module.weight.fill_(0.5)  # effective scale 1.5
    rows = [row for row in displacement_rows(model, moved) if row.operator_norm is None]
    assert {row.kind for row in rows} >= {"q_norm", "k_norm", "input_layernorm"}
    assert all(row.relative_frobenius == pytest.approx(0.5) for row in rows)


def test_the_ratio_of_two_endpoints_is_the_ratio_of_their_changes() -> None:
    from sinkbench.interventions.displacement import displacement_rows, summarize, window_layers

    model = tiny_causal_lm("llama")
    far, near = displacement_rows(model, _scaled(model, 1.4)), displacement_rows(model, _scaled(model, 1.1))
    summary = summarize(far, window_layers(4, window=2), versus=near)
    q = summary["self_attn.q_proj.weight"]
    assert q["layers"] == 2 and q["median_ratio"] == pytest.approx(4.0, rel=1e-5)
    assert q["every_layer_further"] and q["layers_further"] == 2
    backwards = summarize(near, window_layers(4, band="0-1"), versus=far)["self_attn.k_proj.weight"]
    assert backwards["median_ratio"] == pytest.approx(0.25, rel=1e-5) and not backwards["every_layer_further"]


def test_windows_and_bands() -> None:
    from sinkbench.interventions.displacement import window_layers

    assert window_layers(30) == list(range(20, 30))
    assert window_layers(4, window=10) == [0, 1, 2, 3]
    assert window_layers(30, band="middle-third") == list(range(10, 20))
    with pytest.raises(UserError, match="0-3"):
        window_layers(4, band="2-7")


def test_models_of_another_shape_are_refused_in_one_line() -> None:
    import torch

    from sinkbench.interventions.displacement import displacement_rows

    other = tiny_causal_lm("llama")
    other.model.layers[1].self_attn.q_proj.weight = torch.nn.Parameter(torch.zeros(8, 32))
    with pytest.raises(
        UserError, match=r"model\.layers\.1\.self_attn\.q_proj\.weight is shape \(8, 32\)"
    ) as error:
        displacement_rows(tiny_causal_lm("llama"), other)
    assert "\n" not in str(error.value)


def test_report_of_loaded_models_names_each_model() -> None:
    from sinkbench.interventions.displacement import weight_displacement

    model = tiny_causal_lm("llama")
    report = weight_displacement(
        _loaded(model, "ref"),
        _loaded(_scaled(model, 2.0), "vl"),
        versus=_loaded(_scaled(model, 1.5), "text"),
        progress=False,
    )
    assert {role: item["id"] for role, item in report["models"].items()} == {
        "reference": "ref",
        "endpoint": "vl",
        "versus": "text",
    }
    assert report["window"]["layers"] == [0, 1, 2, 3]
    assert report["summary"]["mlp.down_proj.weight"]["median_ratio"] == pytest.approx(2.0, rel=1e-5)
    assert {"sinkbench_version", "created"} <= set(report)
    json.dumps(report, allow_nan=False)


def test_command_prints_the_table_and_writes_report_and_plot(tiny_pair, tmp_path: Path, capsys) -> None:
    pytest.importorskip("vl_convert")
    output, plot = tmp_path / "d.json", tmp_path / "d.svg"
    code = main(
        ["displacement", str(tiny_pair.reference), str(tiny_pair.vlm_lm), "--versus", str(tiny_pair.text_endpoint),
         "--output", str(output), "--plot", str(plot), "--quiet"]
    )  # fmt: skip
    printed = capsys.readouterr().out
    assert code == 0 and "self_attn.q_proj.weight" in printed and "median ratio" in printed
    report = json.loads(output.read_text())
    # the VLM-LM moved 5x further than the text endpoint (noise 0.05 against 0.01) in every layer
    q = report["summary"]["self_attn.q_proj.weight"]
    assert q["every_layer_further"] and 3.0 < q["median_ratio"] < 8.0
    assert (
        plot.read_text().startswith("<svg") and "q_proj</text>" in plot.read_text()
    )  # a panel per projection


def test_command_refuses_a_missing_model_in_one_line(tiny_pair, tmp_path: Path, capsys) -> None:
    assert main(["displacement", str(tiny_pair.reference), str(tmp_path / "nothing"), "--quiet"]) == 1
    error = capsys.readouterr().err.strip()
    assert error.startswith("sinkbench displacement: MODEL") and "\n" not in error  # before any model loads
