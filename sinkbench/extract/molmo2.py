"""Molmo2's language model as a standard causal LM: the one family whose text model has no ``*ForCausalLM`` class.

``Molmo2TextModel`` (transformers 5.24, ``models/molmo2/modeling_molmo2.py``) is a pre-norm decoder with
Qwen3's per-head QK-norm (``qk_norm_type="qwen3"``, ``norm_after=False``: Molmo2's Qwen3-based models), or a
post-norm decoder with OLMo's full-width QK-norm (``qk_norm_type="olmo"``, ``norm_after=True``: Molmo2-O, built on
OLMo 3), and otherwise the same layers. So its weights run as ``Qwen3ForCausalLM`` or as ``Olmo2ForCausalLM``
(whose layers normalise each sublayer's output: Molmo2's ``input_layernorm`` becomes ``post_attention_layernorm``
and its ``post_attention_layernorm`` becomes ``post_feedforward_layernorm``). Three details carry over:

* the embeddings hold ``vocab_size + additional_vocab_size`` rows (image tokens, used only with images), the LM
  head ``vocab_size``: the causal LM keeps the first ``vocab_size`` rows;
* RoPE: layers in ``rope_scaling_layers`` use the scaled RoPE of ``rope_parameters``, the others plain RoPE of the
  same theta; a causal LM has one RoPE, so a checkpoint that mixes them is refused;
* the other two layouts (post-norm with per-head QK-norm, pre-norm with full-width) match no causal LM: refused.
"""

from __future__ import annotations

from typing import Any

from sinkbench.extract.errors import ExtractError

TEXT_TYPE = "molmo2_text"
#: (qk_norm_type, norm_after) -> the causal LM that runs the same layers.
LAYOUTS = {("qwen3", False): "qwen3", ("olmo", True): "olmo2"}
#: Layer-norm names that change for the post-norm layout (Molmo2's -> OLMo 2's).
POST_NORM_RENAMES = {
    ".input_layernorm.": ".post_attention_layernorm.",
    ".post_attention_layernorm.": ".post_feedforward_layernorm.",
}
_MOLMO2_ONLY = ("additional_vocab_size", "qk_norm_type", "norm_after", "rope_scaling_layers")


def causal_lm_type(text: Any, where: str) -> str:
    """``qwen3`` or ``olmo2`` (see the module docstring).

    Raises:
        ExtractError: a layout or a RoPE mix that no causal LM runs.
    """
    layout = (text.qk_norm_type, bool(text.norm_after))
    if layout not in LAYOUTS:
        raise ExtractError(
            f"{where}: Molmo2 with qk_norm_type {layout[0]!r} and norm_after {layout[1]} matches no transformers "
            "causal LM (Qwen3 is pre-norm with per-head QK-norm, OLMo 2 post-norm with full-width QK-norm)"
        )
    scaled = set(text.rope_scaling_layers)
    if scaled and scaled != set(range(text.num_hidden_layers)):
        raise ExtractError(
            f"{where}: Molmo2 scales RoPE in layers {sorted(scaled)} only; a causal LM has one RoPE for all layers"
        )
    return LAYOUTS[layout]


def config_fields(text: Any, fields: dict[str, Any]) -> dict[str, Any]:
    """The causal LM's config fields: Molmo2-only keys dropped, the LM head's vocabulary, one RoPE."""
    fields = {key: value for key, value in fields.items() if key not in _MOLMO2_ONLY}
    if not text.rope_scaling_layers:  # every layer runs the unscaled RoPE of the same theta
        theta = (text.rope_parameters or {}).get("rope_theta")
        fields["rope_parameters"] = {"rope_type": "default", **({"rope_theta": theta} if theta else {})}
    return fields


def renames(causal_type: str) -> dict[str, str]:
    """Parameter-name changes from Molmo2's layers to the causal LM's."""
    return POST_NORM_RENAMES if causal_type == "olmo2" else {}
