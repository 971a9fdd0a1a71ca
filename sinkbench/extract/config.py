"""The standalone causal-LM config of a VLM's language backbone: the text config's fields, except that

* multimodal RoPE rotates each frequency by one of three position streams, which are the same 1-D positions for
  text-only input: it is plain RoPE, and the ``mrope_*`` keys are dropped (``tests/extract/test_extract.py`` checks
  the cos/sin tables are identical);
* the tie flag is the VLM's top-level one, so the extracted model ties its LM head exactly when the VLM does.
"""

from __future__ import annotations

from transformers import AutoConfig, PretrainedConfig
from transformers.models.auto.modeling_auto import MODEL_FOR_CAUSAL_LM_MAPPING_NAMES

from sinkbench.extract import molmo2
from sinkbench.extract.families import VLM_TEXT_OVERRIDES, Family

#: Config keys that describe the source checkpoint (the VLM's text model), not the model written from it.
SOURCE_KEYS = frozenset({"model_type", "architectures", "transformers_version", "_name_or_path"})
#: Rope-parameter keys of multimodal RoPE; with text-only positions they have no effect.
_MROPE_KEYS = ("mrope_section", "mrope_interleaved")


def causal_lm_config(config: PretrainedConfig, family: Family) -> PretrainedConfig:
    """Build the causal-LM config of a VLM's language backbone (see the module docstring)."""
    text = config.get_text_config(decoder=True)
    architecture = MODEL_FOR_CAUSAL_LM_MAPPING_NAMES[family.causal_lm_type]
    fields = {key: value for key, value in text.to_dict().items() if key not in SOURCE_KEYS}
    if isinstance(fields.get("rope_parameters"), dict):
        fields["rope_parameters"] = _plain_rope(fields["rope_parameters"], text)
    fields.update(VLM_TEXT_OVERRIDES.get(family.model_type, {}))
    if text.model_type == molmo2.TEXT_TYPE:
        fields = molmo2.config_fields(text, fields)
    if fields.get("head_dim") is None and text.model_type != family.causal_lm_type:
        # a mapped text type (GLM-4V's) may derive its head size where the causal LM's default is a number
        fields["head_dim"] = text.hidden_size // text.num_attention_heads
    fields["tie_word_embeddings"] = bool(getattr(config, "tie_word_embeddings", False))  # the top config's
    fields["architectures"] = [architecture]
    fields["dtype"] = fields.get("dtype") or config.dtype
    return AutoConfig.for_model(family.causal_lm_type, **fields)


def _plain_rope(rope_parameters: dict, text: PretrainedConfig) -> dict:
    """Rope parameters without the multimodal keys and ``"mrope"`` markers (text-only MRoPE is 1-D RoPE). Unless the
    config says so itself, the fraction of the head the sections rotate is written as ``partial_rotary_factor``
    (GLM-4's causal LM would otherwise rotate half the head)."""
    plain = {
        key: value for key, value in rope_parameters.items() if key not in _MROPE_KEYS and value != "mrope"
    }
    plain.setdefault("rope_type", "default")
    sections = rope_parameters.get("mrope_section")
    if sections and "partial_rotary_factor" not in plain:
        head_dim = getattr(text, "head_dim", None) or text.hidden_size // text.num_attention_heads
        plain["partial_rotary_factor"] = 2 * sum(sections) / head_dim
    return plain
