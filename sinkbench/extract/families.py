"""Which VLMs can be split: a registry of families, data only (no heavy imports).

A :class:`Family` says where the language model lives among the VLM's canonical
(transformers 5) parameter names and which ``*ForCausalLM`` runs it on its own. Historical
checkpoint key layouts are handled by transformers' own conversion mapping in
:mod:`sinkbench.extract.keys`; the config is built in :mod:`sinkbench.extract.config`.

Why each family maps where it does (read from transformers 5.24's ``modeling_*.py``):

* LLaVA, LLaVA-NeXT, LLaVA-OneVision, InternVL (3 and 3.5): ``text_config`` is the LLM's own
  config (Llama, Mistral, Qwen2, Qwen3, ...) built with ``AutoModel.from_config`` at
  ``model.language_model``, so the backbone is that config's own ``*ForCausalLM``.
* Idefics3: the same, but the text model (a Llama) is ``model.text_model``.
* Qwen2-VL / Qwen2.5-VL: ``Qwen2VLTextModel`` is Qwen2 (q/k/v bias, no QK-norm) plus
  multimodal RoPE: ``Qwen2ForCausalLM``.
* Qwen3-VL: ``Qwen3VLTextModel`` is Qwen3 (per-head ``q_norm``/``k_norm``, kept) plus
  interleaved multimodal RoPE and DeepStack visual residuals, which are absent without
  images: ``Qwen3ForCausalLM``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from sinkbench.extract.errors import ExtractError

#: Largest output shard of ``extract-lm`` unless told otherwise.
DEFAULT_MAX_SHARD_SIZE = "5GB"

if TYPE_CHECKING:
    from transformers import PretrainedConfig


@dataclass(frozen=True)
class Family:
    """A supported VLM family.

    Attributes:
        name: display name.
        model_type: the VLM config's ``model_type``.
        text_prefix: prefix of the language model's parameters in the VLM's canonical names.
        causal_lm_type: ``model_type`` of the target causal LM; None means the text config's own.
    """

    name: str
    model_type: str
    text_prefix: str
    causal_lm_type: str | None = None


FAMILIES: tuple[Family, ...] = (
    Family("LLaVA", "llava", "model.language_model."),
    Family("LLaVA-NeXT", "llava_next", "model.language_model."),
    Family("LLaVA-OneVision", "llava_onevision", "model.language_model."),
    Family("Qwen2-VL", "qwen2_vl", "model.language_model.", "qwen2"),
    Family("Qwen2.5-VL", "qwen2_5_vl", "model.language_model.", "qwen2"),
    Family("Qwen3-VL", "qwen3_vl", "model.language_model.", "qwen3"),
    Family("InternVL (3, 3.5)", "internvl", "model.language_model."),
    Family("Idefics3", "idefics3", "model.text_model."),
)
_BY_TYPE = {family.model_type: family for family in FAMILIES}


def supported_families() -> str:
    """One line naming every supported family and its ``model_type``."""
    return ", ".join(f"{family.name} ({family.model_type})" for family in FAMILIES)


def family_for(config: PretrainedConfig, where: str) -> Family:
    """Return the family of a VLM config.

    Args:
        config: the VLM's top-level config.
        where: the config's location, for the error message.

    Raises:
        ExtractError: the model type is not a supported VLM family.
    """
    family = _BY_TYPE.get(config.model_type)
    if family is None:
        raise ExtractError(
            f"{where}: model_type {config.model_type!r} is not a supported VLM family. "
            f"Supported: {supported_families()}."
        )
    return family


def ties_embeddings(config: PretrainedConfig) -> bool:
    """Whether the VLM ties its LM head to its input embeddings (transformers reads the top config)."""
    return bool(getattr(config, "tie_word_embeddings", False))
