"""Tiny random-init configs for any registered model type, made from the type's own defaults.

Widths, head counts, vocabulary, experts and the like are shrunk wherever the config (or a sub-config) names
them, and token ids moved inside the vocabulary; depth and every per-layer pattern are kept, so a tiny model has
the same attention layers as a real one. Defaults transformers cannot build a model from get the fields a real
checkpoint would supply (:data:`TYPE_FIXES`).
"""

from __future__ import annotations

import time
import warnings
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from sinkbench.conformance.verdicts import FAILED, REFUSED, UNTESTED, Verdict
from sinkbench.errors import described

if TYPE_CHECKING:
    from transformers import PretrainedConfig, PreTrainedTokenizerFast

VOCAB = 512
#: The tiny tokenizer's chat template: one line per turn, then the assistant prompt.
CHAT_TEMPLATE = (
    "{{ bos_token }}{% for m in messages %}<|{{ m['role'] }}|>{{ m['content'] }}</s>{% endfor %}"
    "{% if add_generation_prompt %}<|assistant|>{% endif %}"
)
#: What the tiny tokenizer is trained on.
CORPUS = [
    "Write a short note to a friend about the weather and the garden.",
    "Explain how a bicycle works. Answer in three sentences with no commas.",
    "The answer is 42. List four tips, then end with a postscript.",
]
#: Fields shrunk wherever a default config has them (the value replaces the default).
SIZES: dict[str, int] = {
    "hidden_size": 32, "intermediate_size": 64, "num_attention_heads": 4, "num_key_value_heads": 2,
    "head_dim": 8, "vocab_size": VOCAB, "max_position_embeddings": 256,
    "d_model": 32, "n_embd": 32, "n_head": 4, "n_positions": 256, "n_inner": 64, "n_ctx": 256,
    "num_heads": 4, "ffn_dim": 64, "d_ff": 64, "d_kv": 8, "rotary_dim": 4, "dim_head": 8,
    "decoder_attention_heads": 4, "decoder_ffn_dim": 64,
    "encoder_layers": 1, "encoder_attention_heads": 4, "encoder_ffn_dim": 64,
    "num_experts": 4, "num_local_experts": 4, "n_routed_experts": 4, "num_experts_per_tok": 2,
    "moe_intermediate_size": 16, "n_shared_experts": 1, "shared_expert_intermediate_size": 16,
    "n_group": 1, "topk_group": 1,
    "q_lora_rank": 24, "kv_lora_rank": 16, "qk_rope_head_dim": 8, "qk_nope_head_dim": 8, "v_head_dim": 12,
    "sliding_window": 5, "attention_chunk_size": 5,
    "linear_num_key_heads": 2, "linear_num_value_heads": 2, "linear_key_head_dim": 8,
    "linear_value_head_dim": 8, "hidden_size_per_layer_input": 8, "vocab_size_per_layer_input": VOCAB,
    "swa_head_dim": 8, "intermediate_size_mlp": 64, "mamba_n_heads": 4, "mamba_d_head": 16,
    "image_size": 28, "patch_size": 14, "dim_ff": 64, "dim_model": 32, "dff": 64, "emb_dim": 32,
    "ffn_hidden_size": 64, "expert_ffn_hidden_size": 16, "zero_expert_num": 2, "qk_head_dim": 16,
    "linear_head_dim": 8, "index_head_dim": 8, "index_n_heads": 2, "shared_experts_intermediate_size": 16,
    "mamba_d_ssm": 64, "mamba_d_state": 8, "mamba_chunk_size": 16, "feed_forward_size": 64,
    "attention_head_size": 8, "global_head_dim": 16, "n_groups": 1, "num_experts_per_token": 2, "moe_topk": 2,
    "linear_num_heads": 4, "num_expert_group": 1, "out_hidden_size": 32, "embed_dim": 32, "text_hidden_size": 32,
    "word_embed_proj_dim": 32, "depth": 2,
}  # fmt: skip
#: Window sizes, set small so that windows matter at the sweep's prompt lengths (top-level configs only).
WINDOWS = ("sliding_window", "attention_chunk_size")
#: Sub-configs shrunk like the top level.
SUBCONFIGS = (
    "text_config", "decoder", "vision_config", "audio_config", "encoder_config", "decoder_config", "global_config",
    "patcher_config", "attn_config", "ffn_config", "adapter_config", "qformer_config", "vit_config",
)  # fmt: skip
#: Fields a default config lacks before transformers can build a model from it (what a checkpoint supplies).
TYPE_FIXES: dict[str, dict[str, Any]] = {
    "mamba2": {"hidden_size": 32, "num_heads": 4, "head_dim": 16, "n_groups": 1, "expand": 2},
    "zaya": {"num_experts_per_tok": 1},
    "gemma4_assistant": {"hidden_size_per_layer_input": 0},
    "lfm2_moe": {"num_hidden_layers": 4, "layer_types": ["conv", "full_attention", "conv", "full_attention"]},
    "dbrx": {"attn_config": {"kv_n_heads": 2, "rope_theta": 10000.0, "clip_qkv": 8.0}},
    "cohere_compass_text": {
        "rope_parameters": {
            "full_attention": {"rope_type": "default", "rope_theta": 10000.0},
            "sliding_attention": {"rope_type": "default", "rope_theta": 10000.0},
        }
    },
    "reformer": {"axial_pos_shape": [16, 16], "axial_pos_embds_dim": [16, 16]},
    "xmod": {"default_language": "en_XX"},
    # hybrid stacks whose defaults have no attention layer at all (a real checkpoint names them)
    "bamba": {"attn_layer_indices": [3, 7, 11]},
    "granitemoehybrid": {
        "num_hidden_layers": 8,
        "layer_types": (["linear_attention"] * 3 + ["full_attention"]) * 2,
    },
    # Qwen2-VL and Qwen2.5-VL keep their multimodal RoPE split outside the defaults the text config shows
    "qwen2_vl": {"text_config": {"rope_parameters": {"rope_type": "default", "mrope_section": [2, 1, 1]}}},
    "qwen2_5_vl": {"text_config": {"rope_parameters": {"rope_type": "default", "mrope_section": [2, 1, 1]}}},
    "glm4v": {"text_config": {"rope_parameters": {"rope_type": "default", "mrope_section": [2, 1, 1]}}},
    "glm46v": {"text_config": {"rope_parameters": {"rope_type": "default", "mrope_section": [2, 1, 1]}}},
    "glmga": {"text_config": {"rope_parameters": {"rope_type": "default", "mrope_section": [2, 1, 1]}}},
    "glm4v_moe": {"text_config": {"rope_parameters": {"rope_type": "default", "mrope_section": [1, 1, 0]}}},
}


class NoTinyModel(Exception):
    """transformers cannot build a model from the type's defaults, even shrunk and fixed."""

    @classmethod
    def of(cls, error: Exception) -> NoTinyModel:
        """The refusal of transformers' ``error`` (in its many forms), in one line: its type and last line."""
        return cls(f"{type(error).__name__}: {str(error).strip().splitlines()[-1][:160]}")


def checked(
    model_type: str,
    check: Callable[[], Verdict],
    refusals: tuple[type[Exception], ...],
    reason: Callable[[str], str],
) -> Verdict:
    """Run one sweep's ``check`` of ``model_type``, warnings silenced, timed: ``refusals`` are refused (with the
    one-line ``reason`` of their message), :class:`NoTinyModel` untested, anything else a failure of the sweep."""
    started = time.perf_counter()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            verdict = check()
    except refusals as refusal:
        verdict = Verdict(model_type, REFUSED, reason(str(refusal)))
    except NoTinyModel as error:
        verdict = Verdict(model_type, UNTESTED, f"no tiny model from transformers' defaults ({error})")
    except Exception as error:  # the table records what broke
        verdict = Verdict(model_type, FAILED, described(error, 160))
    return Verdict(**{**verdict.__dict__, "seconds": round(time.perf_counter() - started, 2)})


def tiny_config(model_type: str) -> PretrainedConfig:
    """A tiny config of ``model_type`` (see the module docstring); NoTinyModel when transformers refuses it."""
    from transformers import AutoConfig

    fixes = TYPE_FIXES.get(model_type, {})
    try:
        defaults = AutoConfig.for_model(model_type, **fixes).to_dict()
        fields = shrunk(defaults)
        if "is_decoder" in defaults and not defaults.get("is_encoder_decoder"):
            fields["is_decoder"] = True  # what the type's *ForCausalLM class is meant to run with
        return AutoConfig.for_model(model_type, **{**fields, **_nested(fixes, fields)})
    except Exception as error:  # transformers' own validation of incomplete defaults
        raise NoTinyModel.of(error) from error


def shrunk(defaults: dict[str, Any], top: bool = True) -> dict[str, Any]:
    """The overrides that shrink one (sub-)config's defaults (``top``: the model's own config, not a part)."""
    fields = {k: v for k, v in SIZES.items() if k in defaults and not isinstance(defaults[k], (dict, list))}
    if not top:  # a VLM's text model keeps its own window: some VLMs ignore the field their causal LM uses
        fields = {k: v for k, v in fields.items() if k not in WINDOWS}
    for key, value in defaults.items():  # a size given per layer (a list of ints) is shrunk in every layer
        if key in SIZES and isinstance(value, list) and value and all(isinstance(v, int) for v in value):
            fields[key] = [SIZES[key]] * len(value)
    if "kv_lora_rank" in defaults:  # multi-head latent attention: one key head per query head
        fields["num_key_value_heads"] = fields.get("num_attention_heads", SIZES["num_attention_heads"])
    if "qk_rope_head_dim" in defaults:
        fields["head_dim"] = SIZES["qk_rope_head_dim"]
    rope = defaults.get("rope_parameters")
    if isinstance(rope, dict) and "mrope_section" in rope:  # multimodal RoPE splits head_dim / 2 frequencies
        half = fields.get("head_dim", SIZES["head_dim"]) // 2
        fields["rope_parameters"] = {**rope, "mrope_section": [half - 2 * (half // 4), half // 4, half // 4]}
    vocab = fields.get("vocab_size", defaults.get("vocab_size"))
    for key, value in defaults.items():
        if key in SUBCONFIGS and isinstance(value, dict):
            fields[key] = {**value, **shrunk(value, top=False)}
        elif key == "per_layer_config" and isinstance(value, dict):  # per-layer shapes stay unlike the rest
            fields[key] = {layer: {**entry, **_per_layer(entry)} for layer, entry in value.items()}
        elif vocab and key.endswith(("_token_id", "_token_index", "_id")):
            inside = _inside_vocabulary(key, value, vocab)
            if inside is not None:
                fields[key] = inside
    return fields


def _nested(fixes: dict[str, Any], fields: dict[str, Any]) -> dict[str, Any]:
    """``fixes`` applied over the shrunk fields, merging into shrunk sub-configs rather than replacing them."""
    return {
        key: {**fields[key], **value}
        if isinstance(value, dict) and isinstance(fields.get(key), dict)
        else value
        for key, value in fixes.items()
    }


def _per_layer(entry: dict[str, Any]) -> dict[str, Any]:
    """A per-layer override shrunk to twice the tiny sizes, so that those layers still differ from the others."""
    return {key: 2 * SIZES[key] for key, value in entry.items() if key in SIZES and isinstance(value, int)}


def _inside_vocabulary(key: str, value: Any, vocab: int) -> Any:
    """A token id (or list of ids) moved inside a vocabulary of ``vocab`` tokens; None if it already is."""
    if isinstance(value, int) and not isinstance(value, bool) and value >= vocab:
        return vocab - 1 - sum(map(ord, key)) % 8
    if isinstance(value, list) and value and all(isinstance(v, int) for v in value) and max(value) >= vocab:
        return [min(v, vocab - 1) for v in value]
    return None


def tiny_tokenizer() -> PreTrainedTokenizerFast:
    """A byte-level BPE tokenizer trained in memory on ``CORPUS``, with a chat template."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    backend = Tokenizer(models.BPE())
    backend.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    backend.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=300,
        special_tokens=["<pad>", "<s>", "</s>", "<|user|>", "<|assistant|>"],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
    )
    backend.train_from_iterator(CORPUS, trainer)
    return PreTrainedTokenizerFast(
        tokenizer_object=backend,
        bos_token="<s>",
        eos_token="</s>",
        pad_token="<pad>",
        chat_template=CHAT_TEMPLATE,
    )
