"""QK-RMSNorm injection (``sinkbench.interventions.qk_norm``, ``sinkbench inject-qk-norm``)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from tiny_models import model_config, tiny_causal_lm, tiny_tokenizer

from sinkbench.cli import main
from sinkbench.errors import ModelNotSupported
from sinkbench.models import LoadedModel, module_info

if TYPE_CHECKING:
    import torch

TEXT = "The lighthouse keeper counted ships until dawn, then wrote three lines in lowercase."


def _loaded(model: torch.nn.Module) -> LoadedModel:
    """``model`` with O(1) weights and non-zero biases, so that a wrong or dropped tensor, or the new norms,
    move the logits far above the tolerances."""
    import torch

    generator = torch.Generator().manual_seed(0)
    with torch.no_grad():
        for name, parameter in model.named_parameters():
            noise = torch.randn(parameter.shape, generator=generator)
            parameter.copy_(1.0 + 0.2 * noise if "norm" in name else 0.3 * noise)
    return LoadedModel(model.eval(), tiny_tokenizer(), module_info(model, model.config.model_type))


def _ids() -> torch.Tensor:
    return tiny_tokenizer()(TEXT, return_tensors="pt").input_ids


def _per_head_rmsnorm_forward(model: torch.nn.Module, ids: torch.Tensor) -> torch.Tensor:
    """The source model's logits with an RMSNorm (unit scale) on each head of q_proj's and k_proj's outputs, by hand."""
    import torch

    config = model.config
    head_dim = getattr(config, "head_dim", None) or config.hidden_size // config.num_attention_heads

    def normalise(_module, _inputs, output):
        heads = output.view(*output.shape[:-1], -1, head_dim).float()
        normed = heads * torch.rsqrt(heads.pow(2).mean(-1, keepdim=True) + config.rms_norm_eps)
        return normed.view(output.shape).to(output.dtype)

    hooks = [
        getattr(layer.self_attn, name).register_forward_hook(normalise)
        for layer in model.model.layers
        for name in ("q_proj", "k_proj")
    ]
    try:
        with torch.no_grad():
            return model(input_ids=ids).logits
    finally:
        for hook in hooks:
            hook.remove()


def _random(model_type: str, **fields) -> torch.nn.Module:
    """A random-init causal LM of ``model_type`` with ``fields``."""
    from transformers import AutoModelForCausalLM

    return AutoModelForCausalLM.from_config(model_config(model_type, **fields))


def _small(model_type: str, **fields) -> torch.nn.Module:
    """A two-layer random model of ``model_type`` with the tiny dimensions and ``fields``."""
    shape = {"vocab_size": 300, "hidden_size": 32, "intermediate_size": 64, "num_hidden_layers": 2,
             "num_attention_heads": 4, "num_key_value_heads": 2}  # fmt: skip
    return _random(model_type, **{**shape, **fields})


SOURCES = {
    "llama": lambda: tiny_causal_lm("llama"),
    "mistral-window": lambda: _small("mistral", sliding_window=4),
    "qwen2": lambda: tiny_causal_lm("qwen2"),
    "llama-biased": lambda: _small("llama", attention_bias=True, head_dim=16),
}


@pytest.mark.parametrize("name", sorted(SOURCES))
def test_the_injected_model_is_the_source_with_a_per_head_rmsnorm_on_q_and_k(name: str) -> None:
    import torch

    from sinkbench.interventions.qk_norm import inject_qk_norm, without_qk_norms

    torch.manual_seed(0)
    source = _loaded(SOURCES[name]())
    injected, record = inject_qk_norm(source)
    assert type(injected.model).__name__ == "Qwen3ForCausalLM" and record["gamma"] == 1.0
    ids = _ids()
    with torch.no_grad():
        logits = injected.model(input_ids=ids).logits
        plain = source.model(input_ids=ids).logits
        with without_qk_norms(injected.model):
            unnormed = injected.model(input_ids=ids).logits
    expected = _per_head_rmsnorm_forward(source.model, ids)
    torch.testing.assert_close(logits, expected, atol=1e-5, rtol=0)  # the injection is exactly that
    torch.testing.assert_close(unnormed, plain, atol=1e-5, rtol=0)  # and otherwise the same function
    assert (logits - plain).abs().max() > 0.1  # which the norms change
    assert record["equivalence"]["max_abs_logit_diff_without_new_norms"] <= 1e-4


@pytest.mark.parametrize(
    ("model", "message"),
    [
        (lambda: tiny_causal_lm("qwen3"), r"model type 'qwen3' has QK-norm already \(q_norm, k_norm\)"),
        (lambda: tiny_causal_lm("olmo2"), r"model type 'olmo2' has QK-norm already"),
        (
            lambda: _random("gpt2", n_layer=2, n_embd=32, n_head=4, vocab_size=300),
            r"model type 'gpt2': no native transformers class has per-head QK-norm .* supported: llama, mistral, qwen2",
        ),
        (lambda: _small("llama", mlp_bias=True), r"model type 'llama' with mlp_bias"),
    ],
)  # fmt: skip
def test_sources_without_a_native_target_are_refused_in_one_line(model, message: str) -> None:
    from sinkbench.interventions.qk_norm import inject_qk_norm

    with pytest.raises(ModelNotSupported, match=message) as error:
        inject_qk_norm(_loaded(model()))
    assert "\n" not in str(error.value)


def test_command_writes_a_native_checkpoint_with_s_before_and_after(
    tiny_pair, tmp_path: Path, capsys
) -> None:
    import torch
    from transformers import AutoConfig, AutoModelForCausalLM

    out = tmp_path / "injected"
    assert (
        main(["inject-qk-norm", str(tiny_pair.reference), str(out), "--bootstrap-resamples", "50", "--quiet"])
        == 0
    )
    assert "llama -> Qwen3ForCausalLM with unit q_norm/k_norm" in capsys.readouterr().out
    config = json.loads((out / "config.json").read_text())
    assert (
        config["model_type"] == "qwen3"
        and "auto_map" not in config
        and config["architectures"] == ["Qwen3ForCausalLM"]
    )
    assert AutoConfig.from_pretrained(out).head_dim == 8
    model = AutoModelForCausalLM.from_pretrained(out)  # stock transformers, no remote code
    assert all(torch.equal(layer.self_attn.q_norm.weight, torch.ones(8)) for layer in model.model.layers)
    report = json.loads((out / "intervention.json").read_text())
    assert report["source_model_type"] == "llama" and set(report["sink_strength"]) == {"source", "injected"}
    assert (
        report["sink_strength"]["source"]["sink_strength"]
        != report["sink_strength"]["injected"]["sink_strength"]
    )
