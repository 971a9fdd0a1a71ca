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
    assert report["max_relative_error"] < 0.01 and len(report["projections"]) == 21


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
