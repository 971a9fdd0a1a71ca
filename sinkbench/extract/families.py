"""Where a VLM keeps its language model, found through the model's own structure (no per-family list).

The VLM is built on the meta device and asked for its language model (``get_decoder()``) and LM head
(``get_output_embeddings()``); their qualified names locate the backbone among the VLM's canonical names. The causal
LM is the ``*ForCausalLM`` of the text config's model type, or for a VLM-specific text type the one
:data:`TEXT_TYPE_CAUSAL_LM` names (per transformers 5.24's ``modeling_*.py``: Qwen2/2.5-VL's text model is Qwen2, and
Qwen3-VL's Qwen3, plus multimodal RoPE, plain RoPE on text-only positions, and DeepStack residuals, absent without
images); the key coverage check (:mod:`sinkbench.extract.keys`) and ``--verify`` prove each extraction anyway.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sinkbench.extract import molmo2
from sinkbench.extract.errors import ExtractError

#: Largest output shard of ``extract-lm`` unless told otherwise.
DEFAULT_MAX_SHARD_SIZE = "5GB"
#: Text-config model types that are not causal LMs themselves -> the causal LM that runs the same layers.
TEXT_TYPE_CAUSAL_LM = {
    "qwen2_vl_text": "qwen2",
    "qwen2_5_vl_text": "qwen2",
    "qwen3_vl_text": "qwen3",
    "qwen3_vl_moe_text": "qwen3_moe",
    "glm4v_text": "glm4",
    "glm4v_moe_text": "glm4_moe",
}
#: Where a VLM's language path differs from its causal LM's defaults, the field that makes them match: Aya
#: Vision and Command A Vision compute logits without their Cohere 2 text model's ``logit_scale``; Qwen3-VL-MoE
#: always renormalises its top-k router weights, which Qwen3-MoE does only with ``norm_topk_prob``.
VLM_TEXT_OVERRIDES = {
    "aya_vision": {"logit_scale": 1.0},
    "cohere2_vision": {"logit_scale": 1.0},
    "qwen3_vl_moe": {"norm_topk_prob": True},
}

if TYPE_CHECKING:
    import torch
    from transformers import PretrainedConfig


@dataclass(frozen=True)
class Family:
    """Where one VLM class (``name``, e.g. ``Qwen3VLForConditionalGeneration``) keeps its language model.

    ``text_prefix`` prefixes its parameters' canonical names and ``lm_head`` is the head's weight. Molmo2 only,
    applied when the VLM is loaded whole (:mod:`sinkbench.extract.loaded`): ``renames`` of the post-norm layout's
    parameters, and ``embedding_rows`` kept (the image-token rows go).
    """

    name: str
    model_type: str
    text_prefix: str
    lm_head: str
    causal_lm_type: str
    renames: tuple[tuple[str, str], ...] = ()
    embedding_rows: int | None = None


def vlm_model_types() -> list[str]:
    """The image-text-to-text model types of the installed transformers, sorted."""
    from transformers.models.auto.modeling_auto import MODEL_FOR_IMAGE_TEXT_TO_TEXT_MAPPING_NAMES

    return sorted(MODEL_FOR_IMAGE_TEXT_TO_TEXT_MAPPING_NAMES)


def meta_vlm(config: PretrainedConfig, where: str) -> torch.nn.Module:
    """The VLM of ``config`` built on the meta device (no memory, no weights); ExtractError when the model type is no
    image-text-to-text model of transformers."""
    import torch
    from transformers import AutoModelForImageTextToText
    from transformers.models.auto.modeling_auto import MODEL_FOR_CAUSAL_LM_MAPPING_NAMES

    if config.model_type not in vlm_model_types():
        hint = (
            "it is a causal LM already: screen or evaluate it directly"
            if config.model_type in MODEL_FOR_CAUSAL_LM_MAPPING_NAMES
            else "extract-lm takes a VLM of that registry"
        )
        raise ExtractError(
            f"{where}: model_type {config.model_type!r} is not a vision-language model of transformers' "
            f"image-text-to-text registry ({hint})"
        )
    with torch.device("meta"):
        return AutoModelForImageTextToText.from_config(config)


def family_for(config: PretrainedConfig, vlm: torch.nn.Module, where: str) -> Family:
    """Locate the language model of ``vlm``, built from ``config`` (found at ``where``) on the meta device;
    ExtractError when there is no language model or LM head, or no causal LM to run it."""
    from transformers.models.auto.modeling_auto import MODEL_FOR_CAUSAL_LM_MAPPING_NAMES

    from sinkbench.conformance.table import warn_if_not_swept_version  # not at --help time

    warn_if_not_swept_version()
    names = {id(module): name for name, module in vlm.named_modules()}
    decoder, head = language_model(vlm), vlm.get_output_embeddings()
    if decoder is None or id(decoder) not in names or decoder is vlm:
        raise ExtractError(
            f"{where}: model_type {config.model_type!r} has no separate language model (get_decoder()), "
            "so there is no backbone to extract"
        )
    if head is None or id(head) not in names:
        raise ExtractError(
            f"{where}: model_type {config.model_type!r} has no LM head (get_output_embeddings())"
        )
    text = (
        decoder.config
        if getattr(decoder.config, "model_type", None)
        else config.get_text_config(decoder=True)
    )
    causal_type = causal_lm_type(text, config.model_type, where)
    if MODEL_FOR_CAUSAL_LM_MAPPING_NAMES[causal_type] == type(vlm).__name__:
        raise ExtractError(
            f"{where}: model_type {config.model_type!r} is one model for text and images, with no separate "
            "language model to extract"
        )
    return Family(
        name=type(vlm).__name__,
        model_type=config.model_type,
        text_prefix=f"{names[id(decoder)]}.",
        lm_head=f"{names[id(head)]}.weight",
        causal_lm_type=causal_type,
        renames=tuple(molmo2.renames(causal_type).items()) if text.model_type == molmo2.TEXT_TYPE else (),
        embedding_rows=text.vocab_size if text.model_type == molmo2.TEXT_TYPE else None,
    )


def language_model(vlm: torch.nn.Module) -> torch.nn.Module | None:
    """The VLM's language model without a head: ``get_decoder()``; where that is a whole causal LM with its own
    head (Llama 4 keeps a ``Llama4ForCausalLM``), the model inside it."""
    from transformers import PreTrainedModel

    decoder = vlm.get_decoder()
    if decoder is None or decoder is vlm:
        return decoder
    inner = getattr(decoder, "model", None)
    if decoder.get_output_embeddings() is not None and isinstance(inner, PreTrainedModel):
        return inner
    return decoder


def causal_lm_type(text: PretrainedConfig, vlm_type: str, where: str) -> str:
    """The causal-LM model type that runs a language model whose config is ``text``; ExtractError when transformers
    has no ``*ForCausalLM`` for it."""
    from transformers.models.auto.modeling_auto import MODEL_FOR_CAUSAL_LM_MAPPING_NAMES

    text_type = text.model_type
    if text_type == molmo2.TEXT_TYPE:
        return molmo2.causal_lm_type(text, where)
    if text_type in MODEL_FOR_CAUSAL_LM_MAPPING_NAMES:
        return text_type
    if text_type in TEXT_TYPE_CAUSAL_LM:
        return TEXT_TYPE_CAUSAL_LM[text_type]
    raise ExtractError(
        f"{where}: the language model of model_type {vlm_type!r} (text model type {text_type!r}) has no "
        "standalone *ForCausalLM class in transformers, so it cannot run as a causal LM"
    )


def quiet_load(auto_class: type, source: str | Path, **kwargs: Any) -> tuple[torch.nn.Module, dict]:
    """``auto_class.from_pretrained(source)`` and its loading info (mismatched sizes kept, not raised), with
    transformers' multi-line load report silenced: the caller's refusal says what matters in one line."""
    from transformers.utils import logging

    report = logging.get_logger("transformers.modeling_utils")
    level = report.level
    report.setLevel(logging.ERROR)
    try:
        return auto_class.from_pretrained(
            source, output_loading_info=True, ignore_mismatched_sizes=True, **kwargs
        )
    finally:
        report.setLevel(level)
