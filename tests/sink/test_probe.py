"""The probe against an independent naive reference, and against hand-computed values."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import numpy as np
import pytest
from tiny_models import tiny_causal_lm, tiny_tokenizer

from sinkbench.sink.options import ProbeOptions

if TYPE_CHECKING:
    from transformers import LlamaForCausalLM

PROMPTS = [
    "Write a short note to a friend about the weather.",
    "Explain how a bicycle works.",
    "List four tips, then end with a postscript and the answer 42 in three sentences with no commas.",
]


def _assert_same_observations(probe, naive, atol=1e-5):
    import torch

    for ours, theirs in zip(probe, naive, strict=True):
        assert torch.equal(torch.isnan(ours.g), torch.isnan(theirs.g))
        kept = ~torch.isnan(ours.g)
        torch.testing.assert_close(ours.g[kept], theirs.g[kept], atol=atol, rtol=0)
        torch.testing.assert_close(
            ours.first_token_attention, theirs.first_token_attention, atol=atol, rtol=0
        )
        assert torch.equal(ours.sink_position, theirs.sink_position)


@pytest.mark.parametrize("model_type", ["llama", "qwen3", "gemma3_text", "mistral", "qwen2", "olmo2"])
@pytest.mark.parametrize("mode", ["head", "query", "first"])
def test_probe_matches_eager_reference(model_type, mode):
    from sinkbench.sink.naive import naive_observations
    from sinkbench.sink.observe import observe
    from sinkbench.sink.strength import summarize

    model, tokenizer = tiny_causal_lm(model_type), tiny_tokenizer()
    options = ProbeOptions(num_layers=3, sink_position=mode, batch_size=2)
    probe = observe(model, tokenizer, PROMPTS, options)
    naive = naive_observations(model, tokenizer, PROMPTS, options)
    _assert_same_observations(probe, naive)
    assert abs(summarize(probe).sink_strength - summarize(naive).sink_strength) < 1e-5


def test_gemma_sliding_window_is_respected():
    """Prompts longer than the tiny Gemma's window (6) exercise the sliding-window mask."""
    from sinkbench.sink.naive import naive_observations
    from sinkbench.sink.observe import observe

    model, tokenizer = tiny_causal_lm("gemma3_text"), tiny_tokenizer()
    assert any(len(tokenizer(p).input_ids) > 12 for p in PROMPTS)
    options = ProbeOptions(num_layers=4, batch_size=3)
    _assert_same_observations(
        observe(model, tokenizer, PROMPTS, options), naive_observations(model, tokenizer, PROMPTS, options)
    )


def test_chunked_path_matches_flash_path():
    from sinkbench.sink.observe import observe

    model, tokenizer = tiny_causal_lm("qwen3"), tiny_tokenizer()
    flash = observe(model, tokenizer, PROMPTS, ProbeOptions(num_layers=4))
    chunked = observe(model, tokenizer, PROMPTS, ProbeOptions(num_layers=4, use_flash_kernel=False))
    _assert_same_observations(flash, chunked)


@pytest.mark.parametrize("padding_side", ["right", "left"])
def test_batching_and_padding_do_not_change_s(padding_side):
    from sinkbench.sink.observe import observe
    from sinkbench.sink.strength import pooled_g, sink_strength

    model, tokenizer = tiny_causal_lm("llama"), tiny_tokenizer()
    single = observe(model, tokenizer, PROMPTS, ProbeOptions(batch_size=1))
    batched = observe(model, tokenizer, PROMPTS, ProbeOptions(batch_size=3, padding_side=padding_side))
    _assert_same_observations(single, batched)
    assert abs(sink_strength(pooled_g(single)) - sink_strength(pooled_g(batched))) < 1e-5


def test_keep_degenerate_marks_first_query_infinite():
    import torch

    from sinkbench.sink.observe import observe

    model, tokenizer = tiny_causal_lm("llama"), tiny_tokenizer()
    kept = observe(model, tokenizer, PROMPTS, ProbeOptions(sink_position="first", keep_degenerate=True))
    dropped = observe(model, tokenizer, PROMPTS, ProbeOptions(sink_position="first"))
    assert torch.isposinf(kept[0].g[:, :, 0]).all()
    assert torch.isnan(dropped[0].g[:, :, 0]).all()
    assert torch.isfinite(kept[0].g[:, :, 1:]).all()


def test_forced_sink_positions_are_used():
    import torch

    from sinkbench.sink.observe import observe

    model, tokenizer = tiny_causal_lm("qwen3"), tiny_tokenizer()
    reference = observe(model, tokenizer, PROMPTS, ProbeOptions())
    forced = [torch.full_like(obs.sink_position, 1) for obs in reference]
    again = observe(model, tokenizer, PROMPTS, ProbeOptions(), sink_positions=forced)
    assert all(torch.equal(obs.sink_position, f) for obs, f in zip(again, forced, strict=True))
    assert torch.isnan(again[0].g[:, :, 0]).all()  # query 0 cannot see key 1


class _WordTokenizer:
    """BOS (id 1) then one id-2 token per word; no chat template."""

    chat_template = None

    def __call__(self, text, add_special_tokens=True):
        return type("Encoding", (), {"input_ids": [1] + [2] * len(text.split())})()


def _planted_sink_model(logit: float) -> LlamaForCausalLM:
    """One layer, one head: every query gives the BOS key the logit ``logit`` and other keys 0.

    BOS embeds as e_0 and words as e_1 (RMS-normalised to themselves). Queries are a constant
    bias on coordinate 7 and keys read the BOS indicator into coordinate 7; the RoPE pair of
    coordinate 7 turns at rope_theta**-0.75 = 1e-9 rad per position, i.e. not at all here.
    """
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    size = 8
    config = LlamaConfig(
        vocab_size=4,
        hidden_size=size,
        intermediate_size=8,
        num_hidden_layers=1,
        num_attention_heads=1,
        num_key_value_heads=1,
        head_dim=size,
        rope_theta=1e12,
        attention_bias=True,
        tie_word_embeddings=False,
    )
    model = LlamaForCausalLM(config).eval()
    attention = model.model.layers[0].self_attn
    with torch.no_grad():
        model.model.embed_tokens.weight.zero_()
        model.model.embed_tokens.weight[1, 0] = math.sqrt(size)
        model.model.embed_tokens.weight[2, 1] = math.sqrt(size)
        model.model.layers[0].input_layernorm.weight.fill_(1.0)
        for projection in (attention.q_proj, attention.k_proj):
            projection.weight.zero_()
            projection.bias.zero_()
        attention.q_proj.bias[7] = 1.0
        attention.k_proj.weight[7, 0] = logit * math.sqrt(size) / math.sqrt(size)
    return model


@pytest.mark.parametrize("logit", [0.0, 3.0, 9.0])
def test_planted_sink_gives_hand_computed_s(logit):
    """Query t >= 1 sees the sink (logit c) and t keys at logit 0: G = c - log t."""
    from sinkbench.sink.observe import observe
    from sinkbench.sink.strength import pooled_g, sink_strength

    prompts = ["one two three four five six", "alpha beta gamma", "a b c d e f g h i j k"]
    lengths = [len(p.split()) + 1 for p in prompts]
    expected = np.median(np.concatenate([logit - np.log(np.arange(1, n)) for n in lengths]))
    observations = observe(_planted_sink_model(logit), _WordTokenizer(), prompts, ProbeOptions(batch_size=2))
    assert all(int(obs.sink_position.flatten()[0]) == 0 for obs in observations)
    assert abs(sink_strength(pooled_g(observations)) - expected) < 1e-5


def test_bfloat16_model_is_probed_with_float32_statistics():
    import torch

    from sinkbench.sink.observe import observe
    from sinkbench.sink.strength import pooled_g, sink_strength

    model, tokenizer = tiny_causal_lm("llama"), tiny_tokenizer()
    full = sink_strength(pooled_g(observe(model, tokenizer, PROMPTS, ProbeOptions())))
    half = observe(model.to(torch.bfloat16), tokenizer, PROMPTS, ProbeOptions())
    assert half[0].g.dtype == torch.float32
    assert abs(sink_strength(pooled_g(half)) - full) < 0.05


def test_bfloat16_with_the_chunked_kernel_measures_what_the_fused_kernel_measures():
    """In bfloat16 the chunked reference's own float32 log-sum-exp is used (no second pass); S agrees with the
    fused kernel's float32 re-computation."""
    import torch

    from sinkbench.sink.observe import observe
    from sinkbench.sink.strength import pooled_g, sink_strength

    model, tokenizer = tiny_causal_lm("llama").to(torch.bfloat16), tiny_tokenizer()
    fused = observe(model, tokenizer, PROMPTS, ProbeOptions())
    chunked = observe(model, tokenizer, PROMPTS, ProbeOptions(use_flash_kernel=False))
    assert chunked[0].context["kernel"] == "chunked"
    assert abs(sink_strength(pooled_g(chunked)) - sink_strength(pooled_g(fused))) < 1e-3
