"""Sink-head protection: keep the query/key rows of selected attention heads fixed during fine-tuning.

:func:`protect_sink_heads` finds, per selected (layer, query head), its rows of the query projection (weight and
bias), its key head's rows of the key projection, and the matching ``q_norm`` / ``k_norm`` weights. ``freeze``
masks their gradients and copies them back after every optimizer step (decoupled weight decay moves weights without
a gradient), so they stay bit-identical; ``anchor`` leaves gradients alone and offers
:meth:`ProtectionHandle.penalty` to add to the loss. Under GQA a key head is protected whenever any of its query
heads is selected (the others keep trainable query rows); a norm weight shared by every head (shape ``head_dim``:
Qwen3, Gemma 3) is protected whole, a per-head one (OLMo 2) in the heads' slices. PEFT LoRA on ``q_proj`` /
``k_proj`` is refused: its shared ``lora_A`` moves every head.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable
from dataclasses import dataclass, field

import torch
from torch.optim.optimizer import register_optimizer_step_post_hook

MODES = ("freeze", "anchor")


@dataclass(frozen=True)
class ProtectedRows:
    """The protected rows (along dim 0) of one parameter, and their values when protection began."""

    name: str
    parameter: torch.nn.Parameter
    rows: torch.Tensor
    initial: torch.Tensor


@dataclass
class ProtectionHandle:
    """What :func:`protect_sink_heads` set up (``key_heads``: layer -> the key heads protected in it; ``rows``: one
    entry per protected parameter); :meth:`remove` undoes it."""

    mode: str
    weight: float
    heads: list[tuple[int, int]]
    key_heads: dict[int, list[int]]
    rows: list[ProtectedRows]
    _hooks: list = field(default_factory=list, repr=False)

    @property
    def num_protected(self) -> int:
        """Number of protected scalar weights."""
        return sum(entry.initial.numel() for entry in self.rows)

    def penalty(self) -> torch.Tensor:
        """``weight * sum((row - initial) ** 2)`` over the rows in ``anchor`` mode; zero in ``freeze`` mode."""
        if self.mode != "anchor":
            return torch.zeros(())
        terms = [(e.parameter[e.rows] - e.initial).pow(2).sum() for e in self.rows]
        return self.weight * torch.stack(terms).sum()

    def restore(self) -> None:
        """Copy the initial values back into the rows (what ``freeze`` does after every optimizer step)."""
        with torch.no_grad():
            for entry in self.rows:
                entry.parameter[entry.rows] = entry.initial

    def remove(self) -> None:
        """Remove the gradient masks and the optimizer hook; the weights keep their current values."""
        for hook in self._hooks:
            hook.remove()
        self._hooks.clear()


def protect_sink_heads(
    model: torch.nn.Module, heads: Iterable[Iterable[int]], mode: str = "freeze", weight: float = 1.0
) -> ProtectionHandle:
    """Protect the query/key rows of ``heads``, ``(layer, query head)`` pairs (e.g. ``report["selection"]["heads"]``
    of ``sinkbench heads``), in ``model``'s ``get_decoder().layers``; ``weight``: the ``anchor`` penalty's.

    Raises:
        ValueError: unknown mode, a head or layer out of range, or PEFT LoRA on a query/key projection.
    """
    if mode not in MODES:
        raise ValueError(f"Unknown protection mode {mode!r}; choose one of {', '.join(MODES)}.")
    decoder = model.get_decoder()
    pairs = sorted({(int(layer), int(head)) for layer, head in heads})
    rows, key_heads = [], {}
    for layer, group in itertools.groupby(pairs, key=lambda pair: pair[0]):
        layer_rows, key_heads[layer] = _layer_rows(decoder, layer, [head for _, head in group])
        rows.extend(layer_rows)
    handle = ProtectionHandle(mode, weight, pairs, key_heads, rows)
    if mode == "freeze":
        handle._hooks.extend(entry.parameter.register_hook(_row_mask(entry.rows)) for entry in rows)
        handle._hooks.append(register_optimizer_step_post_hook(lambda *_: handle.restore()))
    return handle


def _row_mask(rows: torch.Tensor):
    """A gradient hook that zeroes ``rows`` of the gradient."""
    return lambda grad: grad.index_fill(0, rows.to(grad.device), 0.0)


def _layer_rows(
    decoder: torch.nn.Module, layer: int, heads: list[int]
) -> tuple[list[ProtectedRows], list[int]]:
    """The protected rows of one layer's attention, and the key heads they cover."""
    num_heads = decoder.config.num_attention_heads
    num_kv = getattr(decoder.config, "num_key_value_heads", None) or num_heads
    if not 0 <= layer < len(decoder.layers):
        raise ValueError(f"Layer {layer} is out of range: the model has {len(decoder.layers)} layers.")
    bad = [head for head in heads if not 0 <= head < num_heads]
    if bad:
        raise ValueError(f"Layer {layer}: heads {bad} are out of range; the model has {num_heads} heads.")
    attention = decoder.layers[layer].self_attn
    _refuse_lora(attention, layer)
    kv_heads = sorted({head // (num_heads // num_kv) for head in heads})
    plan = {"q_proj": (heads, num_heads), "k_proj": (kv_heads, num_kv)}
    plan.update(q_norm=plan["q_proj"], k_norm=plan["k_proj"])
    rows = []
    for module_name, (selected, count) in plan.items():
        module = getattr(attention, module_name, None)
        for name, parameter in [] if module is None else module.named_parameters(recurse=False):
            index = _head_rows(selected, count, attention.head_dim, parameter.shape[0], module_name)
            index = index.to(parameter.device)
            initial = parameter.detach()[index].clone()
            full_name = f"layers.{layer}.self_attn.{module_name}.{name}"
            rows.append(ProtectedRows(full_name, parameter, index, initial))
    return rows, kv_heads


def _head_rows(heads: list[int], count: int, head_dim: int, size: int, module_name: str) -> torch.Tensor:
    """Rows of a ``(count * head_dim, ...)`` parameter that belong to ``heads``; every row of a shared norm."""
    if size == count * head_dim:
        return torch.cat([torch.arange(head * head_dim, (head + 1) * head_dim) for head in heads])
    if module_name.endswith("norm") and size == head_dim:
        return torch.arange(size)
    raise ValueError(
        f"{module_name} has {size} output rows, expected {count} heads x {head_dim}; "
        "protect_sink_heads supports standard (GQA) query/key projections only."
    )


def _refuse_lora(attention: torch.nn.Module, layer: int) -> None:
    for name in ("q_proj", "k_proj"):
        if hasattr(getattr(attention, name, None), "lora_A"):
            raise ValueError(
                f"Layer {layer}: {name} carries PEFT LoRA adapters, which protect_sink_heads does not support "
                "(their shared lora_A changes every head); leave q_proj and k_proj out of the LoRA "
                "target_modules, or protect the fully fine-tuned model."
            )
