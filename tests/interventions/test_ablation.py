"""Channel ablation of the norm scales (``sinkbench.interventions.ablation``, ``sinkbench ablate-norms``)."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from tiny_models import tiny_causal_lm, tiny_tokenizer

from sinkbench.cli import main
from sinkbench.errors import UserError

if TYPE_CHECKING:
    import torch


def _random_norms(model_type: str, seed: int = 0) -> torch.nn.Module:
    """A tiny model whose norm weights are spread out, some negative (random init leaves them all equal)."""
    import torch

    from sinkbench.interventions.modules import norm_scales

    model = tiny_causal_lm(model_type)
    generator = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for _, module in norm_scales(model):
            module.weight.copy_(torch.randn(module.weight.shape, generator=generator))
    return model


@pytest.mark.parametrize(("model_type", "offset"), [("qwen3", 0.0), ("gemma3_text", 1.0)])
def test_exactly_k_channels_per_layer_and_norm_become_the_channel_mean(
    model_type: str, offset: float
) -> None:
    import torch

    from sinkbench.interventions.ablation import ablated
    from sinkbench.interventions.modules import norm_scales

    model = _random_norms(model_type)
    before = {item.qualified: module.weight.detach().clone() for item, module in norm_scales(model)}
    kinds = ["input_layernorm", "q_norm", "k_norm"]
    with ablated(model, kinds, top_k=3) as records:
        assert sorted({record.kind for record in records}) == sorted(kinds) and len(records) == 4 * 3
        for item, module in norm_scales(model):
            original, now = before[item.qualified], module.weight.detach()
            changed = torch.nonzero(original != now).flatten().tolist()
            if item.kind not in kinds:
                assert changed == []
                continue
            gamma = original + offset  # Gemma's norms scale by 1 + weight
            largest = sorted(range(gamma.numel()), key=lambda c: -abs(float(gamma[c])))[:3]
            assert sorted(changed) == sorted(largest)
            assert torch.allclose(now[changed] + offset, torch.full((3,), float(gamma.mean())), atol=1e-6)
            record = next(r for r in records if r.layer == item.layer and r.kind == item.kind)
            assert record.channels == largest and record.offset == offset
    after = {item.qualified: module.weight.detach() for item, module in norm_scales(model)}
    assert all(torch.equal(before[name], after[name]) for name in before)  # restored


def test_ties_in_gamma_go_to_the_lower_channel() -> None:
    import torch

    from sinkbench.interventions.ablation import top_channels

    assert top_channels(torch.tensor([1.0, -3.0, 3.0, 0.5]), 2) == [1, 2]


def test_single_and_joint_settings() -> None:
    from sinkbench.interventions.ablation import ablation_settings

    assert ablation_settings(["input_layernorm", "q_norm"]) == {
        "input_layernorm": ("input_layernorm",), "q_norm": ("q_norm",), "joint": ("input_layernorm", "q_norm")
    }  # fmt: skip
    assert ablation_settings(["input_layernorm"]) == {
        "input_layernorm": ("input_layernorm",)
    }  # joint would repeat it
    assert ablation_settings(["a", "b"], ["joint"]) == {"joint": ("a", "b")}


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"settings": ["both"]}, "--settings both: choose from single, joint"),
        ({"settings": []}, "--settings names no setting: choose from single, joint"),
        ({"top_k": 0}, "--top-k 0: choose 1 or more channels"),
        ({"kinds": []}, "--norms names no norm; name one or more, or leave it out for the paper's"),
    ],
)
def test_parameters_no_model_could_run_are_refused_before_one_loads(changes: dict, message: str) -> None:
    from sinkbench.interventions.settings import AblationParameters

    with pytest.raises(UserError) as refused:
        AblationParameters(**changes)
    assert str(refused.value) == message


def test_the_paper_norms_the_model_has_are_the_default() -> None:
    from sinkbench.interventions.ablation import ablated, choose_kinds

    assert choose_kinds(tiny_causal_lm("llama"), None) == (["input_layernorm"], ["q_norm", "k_norm"])
    assert choose_kinds(tiny_causal_lm("gemma3_text"), None) == (["input_layernorm", "q_norm", "k_norm"], [])
    with pytest.raises(
        UserError, match=r"--norms q_norm: not a norm of this model; its norms are \['input_layernorm'"
    ):
        choose_kinds(tiny_causal_lm("llama"), ["q_norm"])
    with (
        pytest.raises(UserError, match="--top-k 99: choose 1 to 8"),
        ablated(tiny_causal_lm("qwen3"), ["q_norm"], 99),
    ):
        pass


def test_the_ablated_model_computes_what_its_changed_weights_say() -> None:
    import torch

    from sinkbench.interventions.ablation import ablated

    model = _random_norms("qwen3", seed=1)
    ids = tiny_tokenizer()("the cat sat on the mat", return_tensors="pt").input_ids
    reference = copy.deepcopy(model)
    with torch.no_grad():
        base = model(input_ids=ids).logits
        with ablated(model, ["q_norm"], top_k=2) as records:
            changed = model(input_ids=ids).logits
            for record in records:  # apply the same channels to the copy by hand
                module = reference.get_submodule(
                    f"model.layers.{record.layer}.{record.name.removesuffix('.weight')}"
                )
                module.weight[record.channels] = record.mean
            by_hand = reference(input_ids=ids).logits
    assert not torch.allclose(base, changed) and torch.allclose(changed, by_hand, atol=1e-6)


def test_command_writes_one_checkpoint_per_setting_with_s_before_and_after(tmp_path: Path, capsys) -> None:
    import torch

    source = tmp_path / "gemma"
    model = _random_norms("gemma3_text", seed=2)
    model.save_pretrained(source)
    tiny_tokenizer().save_pretrained(source)
    out = tmp_path / "ablated"
    assert (
        main(
            ["ablate-norms", str(source), str(out), "--top-k", "2", "--bootstrap-resamples", "50", "--quiet"]
        )
        == 0
    )
    printed = capsys.readouterr().out
    assert (
        "top-2 channel ablation of input_layernorm, q_norm, k_norm" in printed
        and "joint: 12 norms changed" in printed
    )
    assert sorted(path.name for path in out.iterdir() if path.is_dir()) == [
        "input_layernorm",
        "joint",
        "k_norm",
        "q_norm",
    ]
    report = json.loads((out / "intervention.json").read_text())
    assert report["kinds"] == ["input_layernorm", "q_norm", "k_norm"] and report["top_k"] == 2
    strengths = [report["sink_strength"]["sink_strength"]] + [
        setting["sink_strength"]["sink_strength"] for setting in report["settings"].values()
    ]
    assert len(set(strengths)) > 1  # the ablations move S
    joint = json.loads((out / "joint" / "intervention.json").read_text())
    assert (
        joint["setting"] == "joint"
        and len(joint["norms"]) == 12
        and all(len(n["channels"]) == 2 for n in joint["norms"])
    )
    with torch.no_grad():
        written = type(model).from_pretrained(out / "q_norm").model.layers[0].self_attn.q_norm.weight
        assert (written != model.model.layers[0].self_attn.q_norm.weight).sum() == 2
