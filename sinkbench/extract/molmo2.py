"""Molmo2's language model as a standard causal LM: the one family whose text model has no ``*ForCausalLM`` class.

``Molmo2TextModel`` (transformers 5.24) is a pre-norm decoder with Qwen3's per-head QK-norm (``qk_norm_type="qwen3"``,
``norm_after=False``), run as ``Qwen3ForCausalLM``, or a post-norm one with OLMo's full-width QK-norm (``"olmo"``,
``norm_after=True``: Molmo2-O), run as ``Olmo2ForCausalLM`` with its norms renamed (:data:`POST_NORM_RENAMES`); the
other two layouts are refused. The causal LM keeps the first ``vocab_size`` embedding rows (the rest are image
tokens), and one RoPE: a checkpoint scaling RoPE in only some layers (``rope_scaling_layers``) is refused.
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
    """``qwen3`` or ``olmo2`` (see the module docstring); ExtractError for a layout or RoPE mix no causal LM runs."""
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
