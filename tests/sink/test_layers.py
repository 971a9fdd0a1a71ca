"""The census forward: which layers the probe measures, hybrid stacks, and the one-line refusals."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

import numpy as np
import pytest
from tiny_models import model_config, tiny_causal_lm, tiny_tokenizer

from sinkbench.errors import ModelNotSupported, UserError
from sinkbench.sink.options import LAYER_THIRDS, ProbeOptions, band_layers

if TYPE_CHECKING:
    import torch

TOKENS = [5, 17, 30, 8, 44, 61]
SMALL = {"hidden_size": 32, "intermediate_size": 64, "num_attention_heads": 4, "vocab_size": 300}


def _model(config) -> torch.nn.Module:
    import torch
    from transformers import AutoModelForCausalLM

    torch.manual_seed(0)
    return AutoModelForCausalLM.from_config(config).eval()


def test_a_dense_model_probes_its_last_attention_layers():
    from sinkbench.sink.layers import attention_layout

    layout = attention_layout(tiny_causal_lm("llama"), TOKENS)
    assert layout.labels == [0, 1, 2, 3] and layout.heads == [4, 4, 4, 4]
    assert layout.probed(2) == [2, 3] and layout.probed(10) == [0, 1, 2, 3]
    assert not layout.hybrid and layout.variants == ()
    assert layout.describe() == "4 attention layers"


def test_a_hybrid_stack_probes_its_attention_layers_only_and_the_report_names_them():
    from transformers import JambaConfig

    from sinkbench.sink.layers import attention_layout
    from sinkbench.sink.observe import measure
    from sinkbench.sink.report import format_profile

    config = JambaConfig(
        num_hidden_layers=6, attn_layer_period=2, attn_layer_offset=1, num_key_value_heads=2, **SMALL,
        num_experts=2, expert_layer_period=6, mamba_d_state=4, mamba_dt_rank=4,
    )  # fmt: skip
    model = _model(config)
    layout = attention_layout(model, TOKENS)
    assert layout.labels == [1, 3, 5] and layout.hybrid
    assert layout.describe() == "3 of 6 layers are softmax attention"
    summary, _ = measure(model, tiny_tokenizer(), ["Say hello in five words."], ProbeOptions(num_layers=2))
    assert summary.layers == [3, 5]
    text = format_profile(summary, requested_layers=2)
    assert "probed layers 3, 5 (2 layers); 3 of the 6 decoder layers are softmax attention" in text


@pytest.mark.parametrize(
    ("depth", "thirds"),
    [
        (30, [(0, 9), (10, 19), (20, 29)]),
        (32, [(0, 10), (11, 20), (21, 31)]),
        (18, [(0, 5), (6, 11), (12, 17)]),
    ],
)
def test_the_thirds_of_a_decoder(depth: int, thirds: list[tuple[int, int]]) -> None:
    found = [band_layers(band, depth) for band in LAYER_THIRDS]
    assert [(band[0], band[-1]) for band in found] == thirds
    assert sorted(layer for band in found for layer in band) == list(range(depth))


@pytest.mark.parametrize(
    ("band", "message"),
    [
        ("5-2", "START <= END"),
        ("late", "expected one of first-third"),
        ("0-40", "the decoder has layers 0-29"),
    ],
)
def test_a_bad_band_is_refused_naming_the_fix(band: str, message: str) -> None:
    with pytest.raises(UserError, match=message):
        band_layers(band, 30)


def test_a_band_probes_exactly_its_layers_and_gives_their_s() -> None:
    from sinkbench.sink.observe import measure

    model, prompts = (
        tiny_causal_lm("llama"),
        ["Say hello in five words.", "List three colours, one per line."],
    )
    everything = measure(model, tiny_tokenizer(), prompts, ProbeOptions(num_layers=4))[1]
    for band, layers in (
        ("first-third", [0]),
        ("middle-third", [1, 2]),
        ("last-third", [3]),
        ("1-3", [1, 2, 3]),
    ):
        summary, _ = measure(model, tiny_tokenizer(), prompts, ProbeOptions(layer_band=band))
        assert summary.layers == layers
        inside = np.concatenate([obs.g[layers].flatten().numpy() for obs in everything])
        assert summary.sink_strength == pytest.approx(float(np.nanmedian(inside)), abs=1e-6)


def test_a_band_of_a_hybrid_stack_holds_its_attention_layers_or_is_refused() -> None:
    from transformers import JambaConfig

    from sinkbench.sink.layers import attention_layout

    config = JambaConfig(
        num_hidden_layers=6, attn_layer_period=2, attn_layer_offset=1, num_key_value_heads=2, **SMALL,
        num_experts=2, expert_layer_period=6, mamba_d_state=4, mamba_dt_rank=4,
    )  # fmt: skip
    layout = attention_layout(_model(config), TOKENS)
    assert layout.probed(10, "last-third") == [5] and layout.probed(10, "1-3") == [1, 3]
    with pytest.raises(
        UserError, match=r"layer band '2-2' \(layers 2-2\) holds none of the model's attention layers"
    ):
        layout.probed(10, "2-2")


@pytest.mark.parametrize(
    ("config", "reason"),
    [
        (
            lambda: model_config("mamba", num_hidden_layers=2, hidden_size=16, state_size=4, vocab_size=300),
            r"model type 'mamba': it has no softmax attention layers \(a recurrent or state-space model\)",
        ),
        (
            lambda: model_config("bloom", n_layer=2, hidden_size=16, n_head=2, vocab_size=300),
            r"model type 'bloom': its attention does not go through transformers' AttentionInterface",
        ),
        (
            lambda: model_config("bert", num_hidden_layers=2, **SMALL),
            r"model type 'bert': its attention is bidirectional \(an encoder\)",
        ),
        (
            lambda: model_config("diffllama", num_hidden_layers=2, num_key_value_heads=2, **SMALL),
            r"model type 'diffllama': each attention layer combines several softmax calls",
        ),
    ],
)
def test_models_the_probe_cannot_measure_are_refused_in_one_line(config, reason):
    from sinkbench.sink.layers import attention_layout

    with pytest.raises(ModelNotSupported, match=reason) as refused:
        attention_layout(_model(config()), TOKENS)
    assert "\n" not in str(refused.value)


def test_a_failing_forward_is_a_refusal_naming_the_error():
    from sinkbench.sink.layers import attention_layout

    model = tiny_causal_lm("llama")
    with pytest.raises(
        ModelNotSupported, match=r"model type 'llama': its text-only forward failed \(IndexError"
    ):
        attention_layout(model, [5000, 5001, 5002])  # ids beyond the vocabulary


def test_a_vlm_is_probed_on_its_language_model():
    from transformers import LlavaConfig, LlavaForConditionalGeneration

    from sinkbench.sink.layers import attention_layout

    text = {"model_type": "llama", "num_hidden_layers": 2, "num_key_value_heads": 2, **SMALL}
    vision = {
        "model_type": "clip_vision_model", "hidden_size": 16, "intermediate_size": 32, "num_hidden_layers": 2,
        "num_attention_heads": 2, "image_size": 28, "patch_size": 14,
    }  # fmt: skip
    model = LlavaForConditionalGeneration(
        LlavaConfig(text_config=text, vision_config=vision, image_token_index=299)
    )
    assert attention_layout(model.eval(), TOKENS).labels == [0, 1]


def test_layers_with_fewer_heads_give_the_probe_and_the_eager_route_the_same_shapes_and_values():
    """A model whose first layer has twice the query heads of its second (as per-layer head counts do): with only
    the narrow layer probed, both routes stack G to that layer's width and agree on every value."""
    import torch
    from transformers import LlamaConfig

    from sinkbench.sink.naive import naive_observations_tokens
    from sinkbench.sink.observe import observe_tokens

    model = _model(LlamaConfig(num_hidden_layers=2, num_key_value_heads=2, head_dim=8, **SMALL))
    wide = model.model.layers[0].self_attn
    wide.q_proj = torch.nn.Linear(32, 64, bias=False)
    wide.o_proj = torch.nn.Linear(64, 32, bias=False)
    wide.num_key_value_groups = 4
    options = ProbeOptions(num_layers=1, batch_size=2)
    prompts = [TOKENS, TOKENS[1:]]
    probe, naive = observe_tokens(model, prompts, options), naive_observations_tokens(model, prompts, options)
    for p, n in zip(probe, naive, strict=True):
        assert p.g.shape == n.g.shape == (1, 4, len(p.g[0, 0]))
        assert p.first_token_attention.shape == n.first_token_attention.shape
        assert torch.allclose(p.g, n.g, atol=1e-4, equal_nan=True)
        assert torch.equal(p.sink_position, n.sink_position)


def test_a_layer_without_a_finite_median_g_prints_its_value_and_no_bar():
    import dataclasses

    from sinkbench.sink.observe import measure
    from sinkbench.sink.report import format_profile

    summary, _ = measure(
        tiny_causal_lm("llama"), tiny_tokenizer(), ["Say hello."], ProbeOptions(num_layers=2)
    )
    odd = dataclasses.replace(summary, layer_median_g=[float("nan"), float("inf")])
    lines = format_profile(odd).splitlines()[-2:]
    assert lines == [f"{summary.layers[0]:>5}     +nan  ", f"{summary.layers[1]:>5}     +inf  "]


def test_screen_probes_a_layer_band_from_the_command_line(tiny_pair, tmp_path, capsys) -> None:
    from sinkbench.cli import main

    output = tmp_path / "s.json"
    argv = ["screen", str(tiny_pair.vlm_lm), "--layer-band", "last-third", "--against", "none", "--quiet"]
    assert main([*argv, "--bootstrap-resamples", "0", "--output", str(output)]) == 0
    assert "probed layers 2-2 (1 layers)" in capsys.readouterr().out  # 3 layers: the last third is layer 2
    report = json.loads(output.read_text())
    assert report["options"]["layer_band"] == "last-third" and report["layers_probed"] == [2]
