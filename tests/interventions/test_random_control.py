"""The random-dW control (``sinkbench.interventions.random_control``, ``sinkbench random-control``)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from sinkbench.cli import main


@pytest.fixture(scope="module")
def control(tiny_pair, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict]:
    """The control of the tiny pair written by the command (seed 3), and its report."""
    out = tmp_path_factory.mktemp("control") / "control"
    code = main(
        [
            "random-control",
            str(tiny_pair.reference),
            str(tiny_pair.vlm_lm),
            str(out),
            "--seed",
            "3",
            "--quiet",
        ]
    )
    assert code == 0
    return out, json.loads((out / "intervention.json").read_text())


def test_each_projection_hits_the_pairs_relative_change_within_one_percent(tiny_pair, control) -> None:
    from sinkbench.interventions.displacement import weight_displacement

    out, report = control
    real = weight_displacement(str(tiny_pair.reference), str(tiny_pair.vlm_lm), progress=False)["rows"]
    written = weight_displacement(str(tiny_pair.reference), str(out), progress=False)["rows"]
    targets = {
        (row["layer"], row["name"]): row["relative_frobenius"]
        for row in real
        if row["operator_norm"] is not None
    }
    measured = {
        (row["layer"], row["name"]): row["relative_frobenius"]
        for row in written
        if row["operator_norm"] is not None
    }
    assert measured.keys() == targets.keys() and len(targets) == 3 * 7
    for key, target in targets.items():
        assert measured[key] == pytest.approx(target, rel=0.01), key
    assert report["max_relative_error"] < 0.01 and len(report["tensors"]) == 21
    assert (report["match"], report["scope"]) == ("frobenius", "projections")
    operator = [_norms(tiny_pair.reference, folder, "operator") for folder in (out, tiny_pair.vlm_lm)]
    for row in report["tensors"]:  # the confound the operator match removes, as recorded
        assert row["frobenius_ratio"] == pytest.approx(1, rel=0.01)
        name = row["tensor"]
        assert row["operator_ratio"] == pytest.approx(operator[0][name] / operator[1][name], rel=1e-4)


def test_norm_scales_embeddings_and_head_are_untouched(tiny_pair, control) -> None:
    import torch
    from safetensors.torch import load_file

    out, _ = control
    reference, written = (
        load_file(tiny_pair.reference / "model.safetensors"),
        load_file(out / "model.safetensors"),
    )
    untouched = [name for name in reference if "norm" in name or "embed" in name or name == "lm_head.weight"]
    assert untouched and all(torch.equal(reference[name], written[name]) for name in untouched)
    changed = [name for name in reference if name.endswith("_proj.weight")]
    assert changed and not any(torch.equal(reference[name], written[name]) for name in changed)


def test_the_noise_is_seeded(tiny_pair) -> None:
    import torch

    from sinkbench.interventions.random_control import random_control

    first, _ = random_control(str(tiny_pair.reference), str(tiny_pair.vlm_lm), seed=7)
    again, _ = random_control(str(tiny_pair.reference), str(tiny_pair.vlm_lm), seed=7)
    other, _ = random_control(str(tiny_pair.reference), str(tiny_pair.vlm_lm), seed=8)
    name = "model.layers.2.mlp.down_proj.weight"
    weights = [model.model.get_parameter(name) for model in (first, again, other)]
    assert torch.equal(weights[0], weights[1]) and not torch.equal(weights[0], weights[2])


def test_the_report_records_provenance_and_s(control) -> None:
    _, report = control
    assert report["intervention"] == "random_control" and report["seed"] == 3
    assert {"sinkbench_version", "created"} <= set(report)
    assert (
        set(report["inputs"]) == {"reference", "vlm_lm"} and report["inputs"]["reference"]["source"] == "dir"
    )
    assert set(report["sink_strength"]) == {"reference", "vlm_lm", "control"}
    assert all(isinstance(found["sink_strength"], float) for found in report["sink_strength"].values())


def test_an_existing_out_is_refused_and_left_as_it_was(tiny_pair, control, capsys) -> None:
    out, report = control
    assert main(["random-control", str(tiny_pair.reference), str(tiny_pair.vlm_lm), str(out), "--quiet"]) == 1
    error = capsys.readouterr().err.strip()
    assert error.endswith("already exists; choose a new folder or pass --overwrite") and "\n" not in error
    assert json.loads((out / "intervention.json").read_text()) == report


def _norms(reference: Path, other: Path, match: str) -> dict[str, float]:
    """The ``match`` norm of each tensor's change from ``reference`` to ``other``, by name."""
    from safetensors.torch import load_file

    from sinkbench.interventions.random_control import change_norm

    before, after = load_file(reference / "model.safetensors"), load_file(other / "model.safetensors")
    return {name: change_norm(after[name].float() - before[name].float(), match) for name in before}


def test_the_operator_match_hits_each_projections_largest_singular_value(tiny_pair, tmp_path) -> None:
    out = tmp_path / "operator"
    pair = [str(tiny_pair.reference), str(tiny_pair.vlm_lm)]
    assert main(["random-control", *pair, str(out), "--match", "operator", "--skip-strength", "--quiet"]) == 0
    real, made = (_norms(tiny_pair.reference, folder, "operator") for folder in (tiny_pair.vlm_lm, out))
    changed = [name for name in real if name.endswith("_proj.weight")]
    assert len(changed) == 21
    for name in changed:
        assert made[name] == pytest.approx(real[name], rel=0.01), name
    frobenius = [_norms(tiny_pair.reference, folder, "frobenius") for folder in (out, tiny_pair.vlm_lm)]
    rows = json.loads((out / "intervention.json").read_text())["tensors"]
    assert sorted(row["tensor"] for row in rows) == sorted(changed)
    for row in rows:  # the Frobenius norm the operator match gives, as recorded
        name = row["tensor"]
        assert row["frobenius_ratio"] == pytest.approx(frobenius[0][name] / frobenius[1][name], rel=1e-4)
    assert all(made[name] == 0 for name in real if name not in changed)


def test_the_changed_scope_covers_every_tensor_the_vlm_lm_moved(tiny_pair, tmp_path) -> None:
    out = tmp_path / "every"
    pair = [str(tiny_pair.reference), str(tiny_pair.vlm_lm)]
    assert main(["random-control", *pair, str(out), "--scope", "changed", "--skip-strength", "--quiet"]) == 0
    real, made = (_norms(tiny_pair.reference, folder, "frobenius") for folder in (tiny_pair.vlm_lm, out))
    assert any("norm" in name for name in real) and any("embed" in name for name in real)
    for name, target in real.items():  # the tiny pair differs in every tensor
        assert made[name] == pytest.approx(target, rel=0.01), name
    report = json.loads((out / "intervention.json").read_text())
    assert len(report["tensors"]) == len(real) and report["scope"] == "changed"


def test_a_grown_vocabulary_is_compared_on_the_references_rows() -> None:
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    from sinkbench.interventions.random_control import real_changes

    config = LlamaConfig(
        vocab_size=32, hidden_size=16, intermediate_size=32, num_hidden_layers=1, num_attention_heads=2,
        num_key_value_heads=1, tie_word_embeddings=True,
    )  # fmt: skip
    torch.manual_seed(0)
    reference = LlamaForCausalLM(config)
    vlm_lm = LlamaForCausalLM(config)
    vlm_lm.load_state_dict(reference.state_dict())
    vlm_lm.resize_token_embeddings(33)
    with torch.no_grad():
        vlm_lm.model.embed_tokens.weight[3] += 1.0
    changes = real_changes(reference, vlm_lm, "changed")
    assert list(changes) == ["model.embed_tokens.weight"]
    assert changes["model.embed_tokens.weight"].frobenius == pytest.approx(
        4.0
    )  # one row moved by 1 in 16 places


def test_an_unknown_match_is_refused_with_the_choices(tiny_pair, tmp_path, capsys) -> None:
    from sinkbench.errors import UserError
    from sinkbench.interventions.settings import RandomControlParameters

    with pytest.raises(UserError, match="unknown match 'spectral'; choose from frobenius, operator"):
        RandomControlParameters(match="spectral")
    pair = [str(tiny_pair.reference), str(tiny_pair.vlm_lm)]
    with pytest.raises(SystemExit):
        main(["random-control", *pair, str(tmp_path / "x"), "--scope", "all"])
    assert "invalid choice: 'all'" in capsys.readouterr().err and not (tmp_path / "x").exists()
