"""``implant_lm`` / ``sinkbench implant-lm``: a causal LM put back into its VLM, checked by equal text-only logits."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from sinkbench.cli import main


@pytest.fixture(scope="module")
def moved_lm(tiny_pair, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The tiny pair's VLM-LM with every tensor changed (a stand-in for a merged VLM-LM)."""
    from safetensors.torch import load_file, save_file

    target = tmp_path_factory.mktemp("moved") / "lm"
    shutil.copytree(tiny_pair.vlm_lm, target)
    tensors = load_file(target / "model.safetensors")
    save_file(
        {name: tensor * 1.1 + 0.01 for name, tensor in tensors.items()}, str(target / "model.safetensors")
    )
    return target


def test_the_implanted_vlm_runs_the_lm_on_text_and_keeps_its_vision_tower(
    tiny_pair, moved_lm, tmp_path: Path
) -> None:
    import torch
    from safetensors.torch import load_file

    from sinkbench.extract import implant_lm
    from sinkbench.extract.verify import compare_logits

    assert not compare_logits(tiny_pair.vlm, moved_lm)["passed"]  # the check sees the change it must see
    result = implant_lm(str(tiny_pair.vlm), moved_lm, tmp_path / "vlm")
    assert (
        result.record["verification"]["passed"]
        and result.record["verification"]["max_abs_logit_diff"] <= 1e-4
    )
    before, after = (
        load_file(tiny_pair.vlm / "model.safetensors"),
        load_file(tmp_path / "vlm" / "model.safetensors"),
    )
    assert before.keys() == after.keys()
    vision = [name for name in before if "vision" in name or "projector" in name]
    assert vision and all(torch.equal(before[name], after[name]) for name in vision)
    assert result.record["tensors_replaced"] == len(load_file(moved_lm / "model.safetensors"))
    assert json.loads((tmp_path / "vlm" / "config.json").read_text()) == json.loads(
        (tiny_pair.vlm / "config.json").read_text()
    )


def test_an_lm_of_another_architecture_is_refused_and_nothing_written(tiny_pair, tmp_path: Path) -> None:
    from sinkbench.extract import ExtractError, implant_lm
    from sinkbench.interventions.checkpoint import write_intervention
    from sinkbench.interventions.qk_norm import QK_NORM_INJECTION

    injected = tmp_path / "injected"
    write_intervention(QK_NORM_INJECTION, {"source": str(tiny_pair.vlm_lm)}, injected, progress=False)
    with pytest.raises(ExtractError, match=r"a 'qwen3' causal LM .* runs as 'llama'") as error:
        implant_lm(str(tiny_pair.vlm), injected, tmp_path / "out")
    assert "\n" not in str(error.value) and not (tmp_path / "out").exists()


def test_out_may_not_overlap_the_lm(tiny_pair, tmp_path: Path) -> None:
    from sinkbench.extract import ExtractError, implant_lm

    lm = tmp_path / "lm"
    shutil.copytree(tiny_pair.vlm_lm, lm)
    before = {path.name: path.read_bytes() for path in lm.iterdir()}
    out = lm / "vlm"
    with pytest.raises(ExtractError) as error:
        implant_lm(str(tiny_pair.vlm), lm, out)
    assert str(error.value) == (
        f"OUT {out} overlaps LM {lm}; choose an OUT outside the causal LM's folder (and not above it)"
    )
    assert {path.name: path.read_bytes() for path in lm.iterdir()} == before


def test_an_lm_with_a_tensor_of_another_shape_is_refused(tiny_pair, tmp_path: Path) -> None:
    import torch
    from safetensors.torch import load_file, save_file

    from sinkbench.extract import ExtractError, implant_lm

    lm = tmp_path / "lm"
    shutil.copytree(tiny_pair.vlm_lm, lm)
    tensors = load_file(lm / "model.safetensors")
    tensors["model.layers.0.mlp.up_proj.weight"] = torch.zeros(8, 32)
    tensors["model.layers.9.extra.weight"] = torch.zeros(2)
    save_file(tensors, str(lm / "model.safetensors"))
    with pytest.raises(
        ExtractError,
        match=r"not in the VLM's language model: model\.layers\.9\.extra\.weight; wrong shape: model\.layers\.0\.mlp\.up_proj",
    ):
        implant_lm(str(tiny_pair.vlm), lm, tmp_path / "out")


def test_a_failed_verification_leaves_out_as_it_was(tiny_pair, moved_lm, tmp_path: Path, monkeypatch) -> None:
    from sinkbench.extract import VerificationError, implant_lm

    out = tmp_path / "vlm"
    out.mkdir()
    (out / "keep.txt").write_text("earlier")
    monkeypatch.setattr(
        "sinkbench.extract.implant.compare_logits",
        lambda *args: {"passed": False, "max_abs_logit_diff": 0.5},
    )
    with pytest.raises(VerificationError, match=r"differ from .* max \|logit diff\| 0.5 > tolerance 0.0001"):
        implant_lm(str(tiny_pair.vlm), moved_lm, out, overwrite=True)
    assert [path.name for path in out.iterdir()] == ["keep.txt"]
    assert not [path for path in tmp_path.iterdir() if path.name.startswith(".vlm.partial-")]


def test_command_implants_and_verifies(tiny_pair, moved_lm, tmp_path: Path, capsys) -> None:
    assert main(["implant-lm", str(tiny_pair.vlm), str(moved_lm), str(tmp_path / "vlm")]) == 0
    printed = capsys.readouterr().out
    assert (
        "LlavaForConditionalGeneration: 30 tensors from" in printed
        and "verified: max |logit diff|" in printed
    )
    assert main(["implant-lm", str(tiny_pair.vlm), str(moved_lm), str(tmp_path / "vlm")]) == 1
    assert "already exists; choose a new directory or pass --overwrite" in capsys.readouterr().err
