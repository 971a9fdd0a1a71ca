"""Sink-head protection: frozen rows stay bit-identical through training, the anchor penalty pulls them back."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest
from tiny_models import tiny_causal_lm

if TYPE_CHECKING:
    import torch

HEAD_DIM = 8  # the tiny models: 4 query heads and 2 key heads of 8 dimensions (hidden size 32)
HEADS = [(1, 0), (2, 3)]


def _rows(heads: list[int]) -> list[int]:
    return [row for head in heads for row in range(head * HEAD_DIM, (head + 1) * HEAD_DIM)]


def _other(rows: list[int], size: int) -> list[int]:
    return [row for row in range(size) if row not in rows]


def _attention(model: torch.nn.Module, layer: int) -> torch.nn.Module:
    return model.model.layers[layer].self_attn


def _snapshot(model: torch.nn.Module) -> dict[str, torch.Tensor]:
    return {name: parameter.detach().clone() for name, parameter in model.named_parameters()}


def test_freeze_keeps_selected_rows_bit_identical_while_the_rest_trains(tmp_path):
    import torch
    from tiny_training import make_trainer

    from sinkbench.protect import protect_sink_heads

    model = tiny_causal_lm("llama")
    before = _snapshot(model)
    handle = protect_sink_heads(model, HEADS, mode="freeze")
    make_trainer(model, tmp_path, steps=4, weight_decay=0.1).train()  # decoupled decay moves weights too
    after = _snapshot(model)
    # layer 1: query head 0 and its key head 0; layer 2: query head 3 and its key head 1 (2 query heads per key)
    for layer, q_rows, k_rows in ((1, _rows([0]), _rows([0])), (2, _rows([3]), _rows([1]))):
        for name, rows, size in (
            (f"model.layers.{layer}.self_attn.q_proj.weight", q_rows, 32),
            (f"model.layers.{layer}.self_attn.k_proj.weight", k_rows, 16),
        ):
            assert torch.equal(after[name][rows], before[name][rows]), name
            assert not torch.equal(after[name][_other(rows, size)], before[name][_other(rows, size)]), name
    assert not torch.equal(
        after["model.layers.0.self_attn.q_proj.weight"], before["model.layers.0.self_attn.q_proj.weight"]
    )
    assert handle.key_heads == {1: [0], 2: [1]}
    assert handle.num_protected == 2 * (HEAD_DIM * 32) * 2


def test_freeze_masks_the_gradient_rows_and_remove_lifts_it():
    import torch

    from sinkbench.protect import protect_sink_heads

    model = tiny_causal_lm("llama")
    handle = protect_sink_heads(model, [(1, 2)], mode="freeze")
    ids = torch.tensor([[1, 5, 6, 7, 8, 9]])
    model(input_ids=ids, labels=ids).loss.backward()
    grad = _attention(model, 1).q_proj.weight.grad
    assert torch.count_nonzero(grad[_rows([2])]) == 0 and torch.count_nonzero(grad[_rows([0, 1, 3])]) > 0
    assert torch.count_nonzero(_attention(model, 1).k_proj.weight.grad[_rows([1])]) == 0
    handle.remove()
    model.zero_grad()
    model(input_ids=ids, labels=ids).loss.backward()
    assert torch.count_nonzero(_attention(model, 1).q_proj.weight.grad[_rows([2])]) > 0


def test_anchor_penalty_is_zero_before_the_first_update_and_positive_after():
    import torch

    from sinkbench.protect import protect_sink_heads

    model = tiny_causal_lm("llama")
    handle = protect_sink_heads(model, HEADS, mode="anchor", weight=0.5)
    assert handle.penalty().item() == 0.0
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    ids = torch.tensor([[1, 5, 6, 7, 8, 9]])
    model(input_ids=ids, labels=ids).loss.backward()
    optimizer.step()
    moved = sum((e.parameter.detach()[e.rows] - e.initial).pow(2).sum().item() for e in handle.rows)
    penalty = handle.penalty()
    assert penalty.item() > 0 and penalty.item() == pytest.approx(0.5 * moved, rel=1e-5)
    optimizer.zero_grad()
    penalty.backward()  # the penalty's gradient reaches exactly the anchored rows
    grad = _attention(model, 1).q_proj.weight.grad
    assert torch.count_nonzero(grad[_rows([1, 2, 3])]) == 0 and torch.count_nonzero(grad[_rows([0])]) > 0


@pytest.mark.parametrize(
    ("model_type", "expected"),
    [
        ("qwen2", {"q_proj.weight": 8, "q_proj.bias": 8, "k_proj.weight": 8, "k_proj.bias": 8}),
        ("qwen3", {"q_proj.weight": 8, "k_proj.weight": 8, "q_norm.weight": 8, "k_norm.weight": 8}),
        ("olmo2", {"q_proj.weight": 8, "k_proj.weight": 8, "q_norm.weight": 8, "k_norm.weight": 8}),
        ("gemma3_text", {"q_proj.weight": 8, "k_proj.weight": 8, "q_norm.weight": 8, "k_norm.weight": 8}),
    ],
)
def test_biases_and_per_head_or_shared_norms_are_covered(model_type, expected):
    from sinkbench.protect import protect_sink_heads

    handle = protect_sink_heads(tiny_causal_lm(model_type), [(0, 3)])
    assert {e.name.removeprefix("layers.0.self_attn."): len(e.rows) for e in handle.rows} == expected
    rows = {e.name.removeprefix("layers.0.self_attn."): e.rows.tolist() for e in handle.rows}
    assert rows["q_proj.weight"] == _rows([3])
    if model_type == "olmo2":  # per-head norm weights: the heads' own slices
        assert rows["q_norm.weight"] == _rows([3]) and rows["k_norm.weight"] == _rows([1])
    if model_type in ("qwen3", "gemma3_text"):  # one norm weight shared by every head: all of it
        assert rows["q_norm.weight"] == list(range(HEAD_DIM))


def test_a_vlm_is_protected_in_its_language_model(tmp_path):
    from tiny_vlms import save_tiny_vlm
    from transformers import AutoModelForImageTextToText

    from sinkbench.protect import protect_sink_heads

    vlm = AutoModelForImageTextToText.from_pretrained(save_tiny_vlm(tmp_path / "vlm", "llava"))
    handle = protect_sink_heads(vlm, [(2, 1)])
    assert handle.rows[0].parameter is vlm.model.language_model.layers[2].self_attn.q_proj.weight


def test_bad_requests_are_clear_errors():
    from sinkbench.protect import protect_sink_heads

    model = tiny_causal_lm("llama")
    with pytest.raises(ValueError, match="Unknown protection mode 'thaw'"):
        protect_sink_heads(model, HEADS, mode="thaw")
    with pytest.raises(ValueError, match="Layer 9 is out of range: the model has 4 layers"):
        protect_sink_heads(model, [(9, 0)])
    with pytest.raises(ValueError, match=r"Layer 1: heads \[4\] are out of range; the model has 4 heads"):
        protect_sink_heads(model, [(1, 4)])


def test_lora_on_query_or_key_projections_is_refused():
    import torch

    from sinkbench.protect import protect_sink_heads

    model = tiny_causal_lm("llama")
    attention = _attention(model, 1)

    class LoraLinear(torch.nn.Module):  # the attributes PEFT's LoRA layer carries
        def __init__(self, base: torch.nn.Module) -> None:
            super().__init__()
            self.base_layer = base
            self.lora_A = torch.nn.ModuleDict({"default": torch.nn.Linear(32, 4, bias=False)})
            self.lora_B = torch.nn.ModuleDict({"default": torch.nn.Linear(4, 16, bias=False)})

    attention.k_proj = LoraLinear(attention.k_proj)
    with pytest.raises(ValueError, match="Layer 1: k_proj carries PEFT LoRA adapters"):
        protect_sink_heads(model, [(1, 0)])
