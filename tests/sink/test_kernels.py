"""Attention with log-sum-exp: the fused CPU kernel, the CUDA path (with a stand-in kernel on the CPU), and the
chunked reference; and the probe's attention variants against the chunked reference."""

from __future__ import annotations

import pytest
from tiny_models import model_config, tiny_tokenizer

from sinkbench.sink.options import ProbeOptions

PROMPTS = ["Write two short lines about rain.", "List three colours, lowercase only, no commas at all."]


def _inputs(seed: int, value_size: int = 8, bias: bool = True):
    import torch

    generator = torch.Generator().manual_seed(seed)
    q, k = (torch.randn(2, 3, 10, 8, generator=generator) for _ in range(2))
    v = torch.randn(2, 3, 10, value_size, generator=generator)
    mask = torch.ones(10, 10, dtype=torch.bool).tril()
    mask[:, :2] &= torch.arange(10)[:, None] < 6  # a window that hides the first keys from late queries
    mask = mask | torch.eye(10, dtype=torch.bool)
    additive = torch.zeros(2, 1, 10, 10).masked_fill(~mask, float("-inf")) + 0.1 * torch.randn(2, 1, 10, 10)
    return q, k, v, additive if bias else None


@pytest.mark.parametrize("value_size", [8, 5, 12])
@pytest.mark.parametrize("bias", [True, False])
def test_the_fused_cpu_kernel_equals_the_chunked_reference(value_size: int, bias: bool):
    import torch

    from sinkbench.sink import kernels

    q, k, v, additive = _inputs(0, value_size, bias)
    expected = kernels.chunked_with_lse(q, k, v, additive, 0.3)
    actual = kernels.cpu_flash_with_lse(q, k, v, additive, 0.3)
    assert actual[0].shape == expected[0].shape == (2, 3, 10, value_size)
    for got, want in zip(actual, expected, strict=True):
        torch.testing.assert_close(got, want, atol=1e-5, rtol=1e-5)


def test_the_cuda_path_pads_as_its_kernel_requires_and_equals_the_reference(monkeypatch):
    """The memory-efficient kernel only runs on CUDA; a stand-in with its signature and requirements checks
    what sinkbench hands it (head size a multiple of 8, bias rows 16-byte aligned) and what it takes back."""
    import torch

    from sinkbench.sink import kernels

    calls = []

    def stand_in(q, k, v, bias, compute_log_sumexp, dropout, is_causal, *, scale):
        assert compute_log_sumexp and dropout == 0.0 and q.shape[-1] % 8 == 0 == v.shape[-1] % 8
        assert bias is None or (bias.stride(-2) * bias.element_size()) % 16 == 0
        output, lse = kernels.chunked_with_lse(q, k, v, bias, scale)
        padded = torch.full((*lse.shape[:-1], 32), float("nan"))  # the kernel pads the lse to blocks of 32
        padded[..., : lse.shape[-1]] = lse
        calls.append(q.shape[-1])
        return output, padded, torch.zeros(()), torch.zeros(())

    monkeypatch.setattr(torch.ops.aten, "_scaled_dot_product_efficient_attention", stand_in)
    q, k, v, additive = _inputs(1, value_size=5)
    expected = kernels.chunked_with_lse(q, k, v, additive, 0.3)
    actual = kernels.cuda_efficient_with_lse(q, k, v, additive[..., :10], 0.3)
    for got, want in zip(actual, expected, strict=True):
        torch.testing.assert_close(got, want, atol=1e-5, rtol=1e-5)
    assert calls == [8]


def test_the_kernel_choice_follows_device_and_option():
    import torch

    from sinkbench.sink import kernels

    assert kernels.choose_kernel(torch.device("cpu"), torch.float32, True)[0] == "cpu-flash"
    assert kernels.choose_kernel(torch.device("cuda", 0), torch.bfloat16, True)[0] == "cuda-efficient"
    assert kernels.choose_kernel(torch.device("cuda", 0), torch.float64, True)[0] == "chunked"
    assert kernels.choose_kernel(torch.device("cpu"), torch.float32, False)[0] == "chunked"
    assert kernels.choose_kernel(torch.device("mps"), torch.float32, True)[0] == "chunked"


SMALL = {"hidden_size": 32, "intermediate_size": 64, "num_hidden_layers": 3, "num_attention_heads": 4}
VARIANTS = {
    "softcap": lambda v: model_config(
        "gemma2", vocab_size=v, num_key_value_heads=2, head_dim=8, sliding_window=4, attn_logit_softcapping=2.0, **SMALL
    ),
    "learned sinks": lambda v: model_config(
        "gpt_oss", vocab_size=v, num_key_value_heads=2, head_dim=8, sliding_window=4, num_local_experts=2,
        num_experts_per_tok=1, **SMALL,
    ),
    "value size": lambda v: model_config("llama", vocab_size=v, num_key_value_heads=2, head_dim=12, **SMALL),
}  # fmt: skip


@pytest.mark.parametrize("variant", VARIANTS)
def test_each_variant_gives_the_same_observations_on_every_path(variant: str):
    import torch
    from transformers import AutoModelForCausalLM

    from sinkbench.sink.observe import observe

    torch.manual_seed(0)
    model = AutoModelForCausalLM.from_config(VARIANTS[variant](len(tiny_tokenizer()))).eval()
    if variant == "learned sinks":
        for layer in model.model.layers:
            torch.nn.init.normal_(layer.self_attn.sinks, std=2.0)
    fused = observe(model, tiny_tokenizer(), PROMPTS, ProbeOptions(batch_size=2))
    chunked = observe(model, tiny_tokenizer(), PROMPTS, ProbeOptions(batch_size=1, use_flash_kernel=False))
    for a, b in zip(fused, chunked, strict=True):
        torch.testing.assert_close(a.g, b.g, equal_nan=True, atol=1e-4, rtol=1e-4)
        assert torch.equal(a.sink_position, b.sink_position)
    expected_kernel = (
        "chunked" if variant == "softcap" else "cpu-flash"
    )  # soft-capped logits are not bilinear
    assert fused[0].context["kernel"] == expected_kernel and chunked[0].context["kernel"] == "chunked"


def test_the_report_records_the_kernel_and_the_variants():
    import torch
    from transformers import AutoModelForCausalLM

    from sinkbench.models import ModelInfo
    from sinkbench.sink.observe import observe
    from sinkbench.sink.options import IntervalOptions
    from sinkbench.sink.prompts import load_calibration
    from sinkbench.sink.report import build_report
    from sinkbench.sink.strength import summarize

    torch.manual_seed(0)
    model = AutoModelForCausalLM.from_config(VARIANTS["learned sinks"](len(tiny_tokenizer()))).eval()
    summary = summarize(observe(model, tiny_tokenizer(), PROMPTS, ProbeOptions()))
    info = ModelInfo("tiny", "dir", None, None, "gpt_oss", 3, 4, "float32")
    report = build_report(
        info, ProbeOptions(), load_calibration(None), summary, seconds=0.1, interval=(IntervalOptions(), None)
    )
    assert report["options"]["attention_kernel"] == "cpu-flash"
    assert report["attention"]["variants"] == ["s_aux"] and report["attention"]["attention_layers"] == 3


def test_a_position_bias_shared_by_the_batch_gives_each_prompt_its_logit_at_the_sink():
    """A ``(1, H, T, S)`` position bias with a batch of two: the logit at a key equals that key's column of the
    full logits, for every prompt."""
    import torch

    from sinkbench.sink.attention import _scores

    torch.manual_seed(0)
    q, k = torch.randn(2, 4, 5, 8), torch.randn(2, 4, 5, 8)
    scores = _scores(q, k, None, None, {"position_bias": torch.randn(1, 4, 5, 5)})
    positions = torch.tensor([[0, 1, 0, 2], [1, 0, 0, 0]])
    full = scores.logits(0, 5)
    expected = full.gather(-1, positions[:, :, None, None].expand(-1, -1, 5, 1)).squeeze(-1)
    assert torch.allclose(scores.logit_at(positions), expected, atol=1e-5)
