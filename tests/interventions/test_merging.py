"""Merges of a VLM-LM with its reference (``sinkbench.interventions.merging`` on mergekit, ``.spectral``): each
setting against its closed form on small tensors, the reading of Task Arithmetic, and ``sinkbench merge``."""

from __future__ import annotations

import functools
import importlib.util
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from sinkbench.cli import main
from sinkbench.errors import UserError
from sinkbench.interventions.settings import MERGE_SETTING_NAMES, merge_setting

if TYPE_CHECKING:
    import torch

pytestmark = pytest.mark.skipif(
    importlib.util.find_spec("mergekit") is None, reason="mergekit is not installed"
)


def _tensors(seed: int, shape=(6, 4)) -> dict[str, torch.Tensor]:
    import torch

    generator = torch.Generator().manual_seed(seed)
    return {"w": torch.randn(shape, generator=generator), "g": torch.randn(shape[0], generator=generator)}


def _merged(name: str, reference, vlm, base=None, seed: int = 0) -> dict[str, torch.Tensor]:
    from sinkbench.interventions.merging import merge_state_dicts

    return merge_state_dicts(merge_setting(name), reference, vlm, base=base, seed=seed)


@functools.cache
def _endpoints() -> tuple[dict[str, torch.Tensor], dict[str, torch.Tensor], dict[str, torch.Tensor]]:
    """The reference, VLM-LM and base tensors the closed-form tests merge."""
    return _tensors(0), _tensors(1), _tensors(2)


def test_the_sweep_is_the_papers_seven_settings() -> None:
    assert MERGE_SETTING_NAMES == ("mix_95_5", "uniform", "task_arithmetic", "tsv", "star", "ties", "dare")
    assert (
        merge_setting("ties").parameters["density"] == 0.2
        and merge_setting("dare").parameters["density"] == 0.1
    )
    with pytest.raises(UserError, match="unknown merge setting 'soup'; choose from mix_95_5"):
        merge_setting("soup")


@pytest.mark.parametrize(("name", "weight"), [("mix_95_5", 0.95), ("uniform", 0.5)])
def test_linear_mixes(name: str, weight: float) -> None:
    import torch

    reference, vlm, _ = _endpoints()
    merged = _merged(name, reference, vlm)
    for key in reference:
        torch.testing.assert_close(merged[key], weight * vlm[key] + (1 - weight) * reference[key])


def test_task_arithmetic_with_the_reference_as_base_returns_the_vlm_lm() -> None:
    import torch

    reference, vlm, _ = _endpoints()
    merged = _merged("task_arithmetic", reference, vlm)  # reference + 1 * (vlm - reference)
    for key in vlm:
        torch.testing.assert_close(merged[key], vlm[key], atol=1e-6, rtol=0)


def test_task_arithmetic_over_a_base_adds_both_task_vectors() -> None:
    import torch

    reference, vlm, base = _endpoints()
    merged = _merged("task_arithmetic", reference, vlm, base=base)
    for key in vlm:
        torch.testing.assert_close(
            merged[key], base[key] + (reference[key] - base[key]) + (vlm[key] - base[key])
        )


def _trim(delta: torch.Tensor, density: float) -> torch.Tensor:
    """TIES' trim: keep the ``density`` share of entries largest in magnitude."""
    import torch

    keep = max(1, int(density * delta.numel()))
    threshold = delta.abs().flatten().sort(descending=True).values[keep - 1]
    return torch.where(delta.abs() >= threshold, delta, torch.zeros_like(delta))


def test_ties_trims_elects_signs_and_takes_the_disjoint_mean() -> None:
    import torch

    reference, vlm, base = _endpoints()
    one = _merged("ties", reference, vlm)
    torch.testing.assert_close(one["w"], reference["w"] + _trim(vlm["w"] - reference["w"], 0.2))
    two = _merged("ties", reference, vlm, base=base)
    trimmed = torch.stack([_trim(reference["w"] - base["w"], 0.2), _trim(vlm["w"] - base["w"], 0.2)])
    elected = torch.where(trimmed.sum(0) >= 0, 1.0, -1.0)
    agree = (torch.sign(trimmed) == elected) & (trimmed != 0)
    mean = (trimmed * agree).sum(0) / agree.sum(0).clamp(min=1)
    torch.testing.assert_close(two["w"], base["w"] + mean)


def test_dare_drops_ninety_percent_with_a_fixed_mask_seed_and_rescales() -> None:
    import torch

    reference, vlm = {"w": _tensors(0, (40, 50))["w"]}, {"w": _tensors(1, (40, 50))["w"]}
    delta = vlm["w"] - reference["w"]
    torch.manual_seed(5)
    mask = torch.bernoulli(torch.full_like(delta, 0.1))  # the mask mergekit draws after the seed
    kept = delta * mask
    expected = reference["w"] + kept * (
        delta.abs().sum() / kept.abs().sum()
    )  # rescaled to the L1 norm of delta
    merged = _merged("dare", reference, vlm, seed=5)["w"]
    torch.testing.assert_close(merged, expected)
    assert 0.07 < float(mask.mean()) < 0.13
    assert torch.equal(merged, _merged("dare", reference, vlm, seed=5)["w"])
    assert not torch.equal(merged, _merged("dare", reference, vlm, seed=6)["w"])


def _whitened(matrix: torch.Tensor) -> torch.Tensor:
    """``M (M^T M)^{-1/2}``, by an eigendecomposition (the paper's whitening, computed another way)."""
    import torch

    values, vectors = torch.linalg.eigh(matrix.T.double() @ matrix.double())
    return (matrix.double() @ vectors @ torch.diag(values.rsqrt()) @ vectors.T).float()


def test_tsv_keeps_each_tasks_top_triplets_and_whitens_them() -> None:
    import torch

    reference, vlm, base = _endpoints()
    merged = _merged("tsv", reference, vlm, base=base)
    deltas = [reference["w"] - base["w"], vlm["w"] - base["w"]]  # 6 x 4: rank 4, two tasks keep 2 each
    parts = [torch.linalg.svd(delta, full_matrices=False) for delta in deltas]
    u = torch.cat([p.U[:, :2] for p in parts], 1)
    s = torch.cat([p.S[:2] for p in parts])
    v = torch.cat([p.Vh[:2].T for p in parts], 1)
    expected = base["w"] + _whitened(u) @ torch.diag(s) @ _whitened(v).T
    torch.testing.assert_close(merged["w"], expected, atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(
        merged["g"], (reference["g"] + vlm["g"]) / 2
    )  # not a matrix: the base plus the mean task vector


def test_tsv_of_one_task_vector_is_the_identity() -> None:
    import torch

    reference, vlm, _ = _endpoints()
    torch.testing.assert_close(_merged("tsv", reference, vlm)["w"], vlm["w"], atol=1e-5, rtol=0)


def test_star_keeps_eta_percent_of_the_nuclear_norm_and_rescales_to_all_of_it() -> None:
    import torch

    base = {"w": torch.zeros(4, 4), "g": torch.zeros(4)}
    spectrum = {"w": torch.diag(torch.tensor([4.0, 3.0, 2.0, 1.0])), "g": torch.ones(4)}
    # eta 40%: 4 >= 0.4 * 10 with one value, which is rescaled to the nuclear norm 10
    torch.testing.assert_close(
        _merged("star", base, spectrum)["w"], torch.diag(torch.tensor([10.0, 0.0, 0.0, 0.0]))
    )
    rotation = torch.linalg.qr(torch.randn(4, 4, generator=torch.Generator().manual_seed(3))).Q
    rotated = {"w": rotation @ spectrum["w"] @ rotation.T, "g": spectrum["g"]}
    expected = rotation @ torch.diag(torch.tensor([10.0, 0, 0, 0])) @ rotation.T
    torch.testing.assert_close(_merged("star", base, rotated)["w"], expected, atol=1e-5, rtol=0)


def test_star_over_a_base_averages_the_truncated_task_vectors() -> None:
    import torch

    base = {"w": torch.zeros(4, 4), "g": torch.zeros(4)}
    first = {"w": torch.diag(torch.tensor([4.0, 3.0, 2.0, 1.0])), "g": torch.ones(4)}
    second = {"w": torch.diag(torch.tensor([1.0, 1.0, 1.0, 1.0])), "g": -torch.ones(4)}
    merged = _merged("star", first, second, base=base)
    # second: 1 < 1.6 <= 2 -> two values kept, rescaled to 4: diag(2, 2, 0, 0)
    torch.testing.assert_close(
        merged["w"],
        (torch.diag(torch.tensor([10.0, 0, 0, 0])) + torch.diag(torch.tensor([2.0, 2, 0, 0]))) / 2,
    )
    torch.testing.assert_close(merged["g"], torch.zeros(4))


def test_models_of_different_shapes_are_refused_in_one_line() -> None:
    import torch

    reference, _, _ = _endpoints()
    with pytest.raises(UserError, match="merge uniform: the models cannot be merged") as error:
        _merged("uniform", reference, {"w": torch.zeros(3, 4), "g": torch.zeros(6)})
    assert "\n" not in str(error.value)


def test_rows_the_vlm_added_are_kept_and_the_shared_rows_merged() -> None:
    """A VLM-LM whose vocabulary gained tokens (an image token): every setting keeps its added rows as they are and
    merges the rows both models have."""
    import torch

    from sinkbench.interventions.merging import align_vocabulary

    reference, vlm, _ = _endpoints()
    grown = {"w": torch.cat([vlm["w"], torch.full((2, 4), 3.0)]), "g": vlm["g"]}
    aligned, added = align_vocabulary(reference, grown)
    assert added == {"w": 2} and torch.equal(aligned["g"], reference["g"])
    for name in MERGE_SETTING_NAMES:
        merged = _merged(name, aligned, grown)
        assert torch.allclose(merged["w"][6:], torch.full((2, 4), 3.0), atol=1e-5), name
    uniform = _merged("uniform", aligned, grown)["w"][:6]
    assert torch.allclose(uniform, (reference["w"] + vlm["w"]) / 2)


def test_without_mergekit_the_error_says_how_to_install_it(monkeypatch) -> None:
    reference, vlm, _ = _endpoints()
    monkeypatch.setitem(sys.modules, "mergekit", None)
    with pytest.raises(
        UserError, match=r"merging needs mergekit \(LGPL-3.0\).*pip install 'sinkbench\[merge\]'"
    ):
        _merged("uniform", reference, vlm)


def test_sweep_writes_seven_checkpoints_that_load_and_run(tiny_pair, tmp_path: Path, capsys) -> None:
    import torch
    from transformers import AutoModelForCausalLM

    out = tmp_path / "merges"
    assert (
        main(
            [
                "merge",
                str(tiny_pair.reference),
                str(tiny_pair.vlm_lm),
                str(out),
                "--sweep",
                "--skip-strength",
                "--quiet",
            ]
        )
        == 0
    )
    printed = capsys.readouterr().out
    assert "task_arithmetic: Task Arithmetic, lambda=1 (distance to VLM-LM" in printed
    report = json.loads((out / "intervention.json").read_text())
    assert (
        report["settings"]["task_arithmetic"]["distance"]["to_vlm_lm"] < 1e-5
    )  # the identity, as documented
    assert report["settings"]["uniform"]["distance"] == pytest.approx({"to_reference": 0.5, "to_vlm_lm": 0.5})
    assert list(report["settings"]) == list(MERGE_SETTING_NAMES)
    vlm = AutoModelForCausalLM.from_pretrained(tiny_pair.vlm_lm)
    ids = torch.tensor([[1, 5, 9, 13, 2]])
    for name in MERGE_SETTING_NAMES:
        model = AutoModelForCausalLM.from_pretrained(out / name)
        with torch.no_grad():
            assert torch.isfinite(model(input_ids=ids).logits).all()
        assert json.loads((out / name / "intervention.json").read_text())["setting"] == name
    identity = AutoModelForCausalLM.from_pretrained(out / "task_arithmetic")
    for (key, value), expected in zip(identity.state_dict().items(), vlm.state_dict().values(), strict=True):
        torch.testing.assert_close(value, expected, atol=1e-6, rtol=0, msg=key)
    assert report["settings"]["ties"]["reading"].startswith("one task vector")


def test_a_single_setting_over_a_base_is_one_checkpoint(tiny_pair, tmp_path: Path) -> None:
    import torch
    from transformers import AutoModelForCausalLM

    from sinkbench.interventions.merging import merge

    out = tmp_path / "ta"
    code = main(
        ["merge", str(tiny_pair.reference), str(tiny_pair.vlm_lm), str(out), "--setting", "task_arithmetic",
         "--base", str(tiny_pair.base), "--bootstrap-resamples", "20", "--quiet"]
    )  # fmt: skip
    assert code == 0 and (out / "model.safetensors").is_file()
    record = json.loads((out / "intervention.json").read_text())
    assert record["intervention"] == "merge" and record["reading"].startswith("two task vectors")
    assert (
        set(record["inputs"]) == {"reference", "vlm_lm", "base"} and record["sink_strength"]["sink_strength"]
    )
    merged, _ = merge(
        str(tiny_pair.reference), str(tiny_pair.vlm_lm), "task_arithmetic", base=str(tiny_pair.base)
    )
    models = [
        AutoModelForCausalLM.from_pretrained(path)
        for path in (tiny_pair.base, tiny_pair.reference, tiny_pair.vlm_lm)
    ]
    name = "model.layers.1.self_attn.q_proj.weight"
    base, reference, vlm = (model.get_parameter(name) for model in models)
    torch.testing.assert_close(merged.model.get_parameter(name), reference + vlm - base)
