"""Where a causal LM keeps what the interventions touch, found through the model's own structure.

The decoder layers are the ``layers`` list of the model's decoder (:func:`sinkbench.sink.layers.decoder_of`). In each,
a *projection* is a weight of two or more dimensions (a fused mixture-of-experts tensor counts as one), and a *norm
scale* the one-dimensional ``weight`` of a module whose only parameter it is and whose name ends in ``norm``
(``input_layernorm``, ``self_attn.q_norm``); its *kind* is the last part of its name. Most norms multiply by
``weight`` (Llama, Qwen3), Gemma's by ``1 + weight``: the effective scale gamma is ``offset + weight``
(:func:`scale_offset`).
"""

from __future__ import annotations

import copy
from dataclasses import dataclass

import torch

from sinkbench.errors import UserError
from sinkbench.sink.layers import decoder_of


@dataclass(frozen=True)
class LayerTensor:
    """One tensor of decoder layer ``layer``: its ``name`` inside the layer (``self_attn.q_proj.weight``) and in the
    model's state dict (``qualified``: ``model.layers.3.self_attn.q_proj.weight``)."""

    layer: int
    name: str
    qualified: str

    @property
    def kind(self) -> str:
        """The module's own name, e.g. ``q_proj`` or ``q_norm`` (``self_attn.q_proj.weight`` -> ``q_proj``)."""
        return self.name.removesuffix(".weight").rsplit(".", 1)[-1]


def decoder_layers(model: torch.nn.Module) -> tuple[str, torch.nn.ModuleList]:
    """The qualified name of the decoder's layer list (``model.layers``) and the list; UserError without one."""
    layers = getattr(decoder_of(model), "layers", None)
    if not isinstance(layers, torch.nn.ModuleList):
        raise UserError(
            f"{type(model).__name__}: no decoder layer list (a `layers` ModuleList in its decoder) to find the "
            "projections and norms in; interventions take transformers causal LMs with decoder layers"
        )
    name = next(name for name, module in model.named_modules() if module is layers)
    return name, layers


def projections(model: torch.nn.Module) -> list[tuple[LayerTensor, torch.nn.Parameter]]:
    """Every projection weight of every decoder layer with its parameter, in model order (module docstring)."""
    prefix, layers = decoder_layers(model)
    return [
        (LayerTensor(index, name, f"{prefix}.{index}.{name}"), parameter)
        for index, layer in enumerate(layers)
        for name, parameter in layer.named_parameters()
        if parameter.dim() >= 2 and name.endswith("weight")
    ]


def norm_scales(model: torch.nn.Module) -> list[tuple[LayerTensor, torch.nn.Module]]:
    """Every norm scale of every decoder layer with its norm module, in model order (module docstring)."""
    found = []
    prefix, layers = decoder_layers(model)
    for index, layer in enumerate(layers):
        for name, module in layer.named_modules():
            parameters = dict(module.named_parameters(recurse=False))
            weight = parameters.get("weight")
            if name.endswith("norm") and list(parameters) == ["weight"] and weight.dim() == 1:
                found.append(
                    (LayerTensor(index, f"{name}.weight", f"{prefix}.{index}.{name}.weight"), module)
                )
    return found


def scale_offset(norm: torch.nn.Module) -> float:
    """1.0 when ``norm`` scales by ``1 + weight`` (Gemma), 0.0 when by ``weight``: a copy of it with a zero weight
    either passes a vector of ones through (normalised) or zeroes it."""
    probe = copy.deepcopy(norm)
    with torch.no_grad():
        probe.weight.zero_()
        out = probe(torch.ones(1, probe.weight.numel(), dtype=probe.weight.dtype, device=probe.weight.device))
    return 0.0 if float(out.abs().max()) < 1e-6 else 1.0


def require_same_structure(reference: torch.nn.Module, other: torch.nn.Module, what: str) -> None:
    """Raise UserError unless ``other`` (described as ``what``) has every projection and norm scale of
    ``reference`` with the same shapes, naming the first that differs."""
    theirs = other.state_dict()
    for item, _ in [*projections(reference), *norm_scales(reference)]:
        mine = reference.get_parameter(item.qualified)
        found = theirs.get(item.qualified)
        if found is None or found.shape != mine.shape:
            shape = "missing" if found is None else f"shape {tuple(found.shape)}"
            raise UserError(
                f"{what}: {item.qualified} is {shape}, the reference's is {tuple(mine.shape)}; the two must be the "
                "same architecture and size (a VLM-LM extracted with `sinkbench extract-lm` and its reference LLM)"
            )
