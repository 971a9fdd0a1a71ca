"""Tests for ``sinkbench.extract`` and ``sinkbench extract-lm`` on tiny random-init VLMs of every family."""

from __future__ import annotations

import hashlib
import json
import re
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest
from commands import help_text
from tiny_models import CHAT_TEMPLATE, lm_eval_tiny_choice, tiny_tokenizer
from tiny_vlms import (
    FAMILY_TYPES,
    HEADS,
    QWEN_VISION,
    SPECIAL_IDS,
    TEXT,
    randomize,
    save_tiny_vlm,
    vlm_config,
)

import sinkbench
from sinkbench.cli import main
from sinkbench.extract.families import family_for, meta_vlm

CASES = [(model_type, model_type == "internvl") for model_type in FAMILY_TYPES] + [
    ("qwen2_vl", True),
    ("llava", True),
    ("internvl", False),
]


@pytest.fixture(scope="module")
def extracted(tmp_path_factory: pytest.TempPathFactory) -> dict[tuple[str, bool], tuple[Path, Path]]:
    """Every case extracted once with ``verify=True``: (VLM dir, extracted dir)."""
    from sinkbench.extract import extract_lm

    root = tmp_path_factory.mktemp("extract")
    result = {}
    for model_type, tie in CASES:
        name = f"{model_type}-{'tied' if tie else 'untied'}"
        source = save_tiny_vlm(root / f"{name}-vlm", model_type, tie=tie)
        result[(model_type, tie)] = (source, extract_lm(str(source), root / f"{name}-lm", verify=True).output)
    return result


@pytest.mark.slow  # the shared fixture extracts and verifies 11 VLMs (about 40 s)
@pytest.mark.parametrize(("model_type", "tie"), CASES)
def test_extracted_lm_reproduces_vlm_logits(extracted, model_type: str, tie: bool) -> None:
    import torch
    from transformers import AutoModelForCausalLM, AutoModelForImageTextToText

    from sinkbench.extract import PROVENANCE_FILE

    source, out = extracted[(model_type, tie)]
    provenance = json.loads((out / PROVENANCE_FILE).read_text())
    assert provenance["verification"]["passed"] is True
    assert provenance["verification"]["max_abs_logit_diff"] <= 1e-4
    assert provenance["vlm_model_type"] == model_type
    assert provenance["causal_lm"]["tied_embeddings"] is tie
    vlm = AutoModelForImageTextToText.from_pretrained(source, dtype=torch.float32)
    lm = AutoModelForCausalLM.from_pretrained(out, dtype=torch.float32)
    backbone, extracted_backbone = vlm.get_decoder().state_dict(), lm.model.state_dict()
    assert backbone.keys() == extracted_backbone.keys()  # q_norm/k_norm included where the family has them
    assert all(torch.equal(extracted_backbone[key], value) for key, value in backbone.items())
    assert torch.equal(lm.get_output_embeddings().weight, vlm.get_output_embeddings().weight)
    assert (lm.lm_head.weight.data_ptr() == lm.model.embed_tokens.weight.data_ptr()) is tie
    ids = torch.tensor([[4, 17, 30, 5, 8, 44, 61, 2, 12, 9, 70, 33]])
    with torch.no_grad():
        expected, actual = vlm(input_ids=ids).logits, lm(input_ids=ids).logits
    assert expected.abs().max() > 1.0  # the weights are large enough for the comparison to mean something
    torch.testing.assert_close(actual, expected, atol=1e-4, rtol=0)


@pytest.mark.slow
@pytest.mark.parametrize(("model_type", "tie"), CASES[: len(FAMILY_TYPES)])
def test_lm_eval_scores_the_extracted_lm(extracted, task_manager, model_type: str, tie: bool) -> None:
    _, out = extracted[(model_type, tie)]
    accuracy, expected = lm_eval_tiny_choice(out, task_manager)
    assert accuracy == pytest.approx(expected)


@pytest.mark.parametrize("model_type", ["qwen2_vl", "qwen2_5_vl", "qwen3_vl"])
def test_text_only_mrope_is_plain_rope(model_type: str) -> None:
    import torch
    from transformers import AutoModelForCausalLM, AutoModelForImageTextToText

    from sinkbench.extract.config import causal_lm_config

    config = vlm_config(model_type)
    mrope = AutoModelForImageTextToText.from_config(config).model.language_model.rotary_emb
    plain = AutoModelForCausalLM.from_config(
        causal_lm_config(config, family_for(config, meta_vlm(config, "test"), "test"))
    )
    positions = torch.arange(64)[None]
    x = torch.ones(1, 64, 8)
    expected = plain.model.rotary_emb(x, positions)
    text_only = mrope(x, positions[None].expand(3, -1, -1))
    for got, want in zip(text_only, expected, strict=True):
        torch.testing.assert_close(got, want, rtol=0, atol=0)
    image_like = torch.stack([positions, positions // 8, positions % 8])  # (3, 1, T) grid positions
    assert not torch.allclose(mrope(x, image_like)[0], expected[0])


def test_legacy_qwen2_5_vl_config_becomes_a_plain_qwen2_config() -> None:
    import torch
    from transformers import Qwen2_5_VLConfig

    from sinkbench.extract.config import causal_lm_config

    legacy = {  # the flat layout of Qwen2.5-VL's released config.json, shrunk
        "model_type": "qwen2_5_vl",
        **TEXT,
        **HEADS,
        **SPECIAL_IDS,
        "rope_theta": 1000000.0,
        "rope_scaling": {"type": "mrope", "mrope_section": [2, 1, 1]},
        "torch_dtype": "bfloat16",
        "vision_config": QWEN_VISION,
    }
    config = Qwen2_5_VLConfig.from_dict(legacy)
    target = causal_lm_config(config, family_for(config, meta_vlm(config, "test"), "test"))
    assert target.model_type == "qwen2"
    # the sections (2 + 1 + 1) x 2 cover the whole head of 8: every frequency rotates
    assert target.rope_parameters == {
        "rope_theta": 1000000.0,
        "rope_type": "default",
        "partial_rotary_factor": 1.0,
    }
    assert (target.hidden_size, target.num_key_value_heads, target.dtype) == (32, 2, torch.bfloat16)
    assert target.tie_word_embeddings is False


@pytest.mark.slow  # uses the shared fixture
def test_verification_detects_a_small_change(extracted, tmp_path: Path) -> None:
    from safetensors.torch import load_file, save_file

    from sinkbench.extract.verify import compare_logits

    source, out = extracted[("qwen3_vl", False)]
    edited = tmp_path / "edited"
    shutil.copytree(out, edited)
    tensors = load_file(edited / "model.safetensors")
    tensors["model.layers.1.self_attn.k_norm.weight"] *= 1.01
    save_file(tensors, edited / "model.safetensors", metadata={"format": "pt"})
    result = compare_logits(source, edited)
    assert result["passed"] is False
    assert result["max_abs_logit_diff"] > 1e-4
    assert compare_logits(source, out)["max_abs_logit_diff"] <= 1e-4


def test_sharded_source_gives_sharded_output(tmp_path: Path) -> None:
    from transformers import AutoModelForCausalLM

    from sinkbench.extract import extract_lm

    source = save_tiny_vlm(tmp_path / "vlm", "qwen3_vl", max_shard_size="40KB")
    assert (source / "model.safetensors.index.json").is_file()
    result = extract_lm(str(source), tmp_path / "lm", verify=True, max_shard_size="30KB")
    shards = result.provenance["causal_lm"]["shards"]
    index = json.loads((result.output / "model.safetensors.index.json").read_text())
    assert len(shards) > 1
    assert sorted(set(index["weight_map"].values())) == shards
    lm = AutoModelForCausalLM.from_pretrained(result.output)
    sizes = {shard: [] for shard in shards}
    for key, shard in index["weight_map"].items():
        sizes[shard].append(lm.get_parameter(key).nbytes)
    assert all(sum(tensors) <= 30_000 or len(tensors) == 1 for tensors in sizes.values())
    assert result.provenance["verification"]["passed"] is True
    assert set(result.provenance["source"]["files_sha256"]) >= {
        *json.loads((source / "model.safetensors.index.json").read_text())["weight_map"].values(),
        "config.json",
    }


@pytest.fixture
def existing_out(tmp_path: Path) -> Path:
    """An OUT that already holds something, to prove failed runs leave it untouched."""
    out = tmp_path / "out"
    out.mkdir()
    (out / "keep.txt").write_text("previous extraction")
    return out


def _assert_untouched(out: Path) -> None:
    assert sorted(path.name for path in out.iterdir()) == ["keep.txt"]
    assert (out / "keep.txt").read_text() == "previous extraction"
    assert not [path for path in out.parent.iterdir() if ".partial-" in path.name or ".old-" in path.name]


def _plain_llm(path: Path) -> Path:
    from transformers import AutoModelForCausalLM, LlamaConfig

    model = AutoModelForCausalLM.from_config(LlamaConfig(**TEXT, **HEADS))
    model.save_pretrained(path)
    tiny_tokenizer().save_pretrained(path)
    return path


def _truncate_weights(source: Path) -> None:
    _truncate(source / "model.safetensors")


def _drop_a_shard(source: Path) -> None:
    index = json.loads((source / "model.safetensors.index.json").read_text())
    (source / sorted(set(index["weight_map"].values()))[-1]).unlink()


def _drop_tokenizer(source: Path) -> None:
    for name in ("tokenizer.json", "tokenizer_config.json", "chat_template.jinja"):
        (source / name).unlink(missing_ok=True)


CORRUPTIONS = {
    "truncated safetensors": ({}, _truncate_weights, r"model\.safetensors: not a readable safetensors file"),
    "missing config": ({}, lambda source: (source / "config.json").unlink(), r"config\.json: missing"),
    "missing shard": (
        {"max_shard_size": "40KB"},
        _drop_a_shard,
        r"model\.safetensors\.index\.json: names shards that are missing: model-0000",
    ),
    "no tokenizer": ({}, _drop_tokenizer, r"no tokenizer files .* --tokenizer-from"),
}


@pytest.mark.parametrize("case", sorted(CORRUPTIONS))
def test_corrupt_source_is_a_clear_error_and_out_is_untouched(
    case: str, tmp_path: Path, existing_out
) -> None:
    from sinkbench.extract import ExtractError, extract_lm

    save_kwargs, corrupt, message = CORRUPTIONS[case]
    source = save_tiny_vlm(tmp_path / "vlm", "qwen2_vl", **save_kwargs)
    corrupt(source)
    with pytest.raises(ExtractError, match=message):
        extract_lm(str(source), existing_out, overwrite=True)
    _assert_untouched(existing_out)


def test_a_model_that_is_not_a_vlm_is_refused_with_a_hint(tmp_path: Path, existing_out, capsys) -> None:
    source = _plain_llm(tmp_path / "llama")
    assert main(["extract-lm", str(source), str(existing_out), "--overwrite"]) == 1
    error = capsys.readouterr().err
    assert (
        "model_type 'llama' is not a vision-language model of transformers' image-text-to-text registry"
        in error
    )
    assert "it is a causal LM already: screen or evaluate it directly" in error
    _assert_untouched(existing_out)


def test_a_remote_code_vlm_is_refused_with_the_converted_checkpoint(tmp_path: Path, capsys) -> None:
    source = tmp_path / "internvl-remote"
    source.mkdir()
    (source / "config.json").write_text(
        json.dumps({"model_type": "internvl_chat", "auto_map": {"AutoModel": "x.Y"}})
    )
    assert main(["extract-lm", str(source), str(tmp_path / "out")]) == 1
    error = capsys.readouterr().err
    assert "model type 'internvl_chat' exists only as remote code" in error and "InternVL3-8B-hf" in error
    assert len(error.strip().splitlines()) == 1 and not (tmp_path / "out").exists()


def test_failed_verification_exits_1_and_leaves_out_untouched(
    tmp_path: Path, existing_out, monkeypatch, capsys
) -> None:
    from sinkbench.extract import VerificationError, extract_lm, pipeline
    from sinkbench.extract.config import causal_lm_config

    def wrong_rope(config, family):  # a plausible bug: the extracted config loses the VLM's rope base
        target = causal_lm_config(config, family)
        target.rope_parameters = {**target.rope_parameters, "rope_theta": 500.0}
        return target

    monkeypatch.setattr(pipeline, "causal_lm_config", wrong_rope)
    source = save_tiny_vlm(tmp_path / "vlm", "qwen2_vl")
    assert main(["extract-lm", str(source), str(existing_out), "--verify", "--overwrite"]) == 1
    assert re.search(r"max \|logit diff\| \S+ > tolerance 0\.0001", capsys.readouterr().err)
    _assert_untouched(existing_out)
    with pytest.raises(VerificationError):
        extract_lm(str(source), tmp_path / "fresh", verify=True)
    assert not (tmp_path / "fresh").exists()


#: VLMs that extract, but that transformers itself cannot load or run text-only, so --verify has no reference.
UNVERIFIABLE = {
    "saved sizes disagree with the config": (
        "llava",
        ("vision_config", "intermediate_size"),
        80,
        r"vlm: transformers cannot load this llava VLM to verify against: its saved tensor sizes disagree with "
        r"config\.json \(model\.vision_tower\.encoder\.layers\.0\.mlp\.fc1\.bias \(32,\) != \(80,\), .*\); fix the "
        r"checkpoint or its config\.json, or extract without --verify$",
    ),
    "rotary sections that do not fit the head size": (
        "qwen2_vl",
        ("text_config", "rope_parameters", "mrope_section"),
        [3, 3, 3],
        r"vlm: transformers cannot run this qwen2_vl VLM on text alone, neither through its own forward nor through "
        r"its language model \(RuntimeError: split_with_sizes expects split_sizes to sum exactly to 4 .*\), so there "
        r"is nothing to verify against; fix its config\.json, or extract without --verify$",
    ),
}


@pytest.mark.parametrize("case", sorted(UNVERIFIABLE))
def test_a_vlm_transformers_cannot_run_is_one_line_under_verify(
    case: str, tmp_path: Path, existing_out, capsys
) -> None:
    model_type, field, value, message = UNVERIFIABLE[case]
    source = save_tiny_vlm(tmp_path / "vlm", model_type)
    _set_config(source, field, value)
    capsys.readouterr()
    assert main(["extract-lm", str(source), str(existing_out), "--verify", "--overwrite"]) == 1
    assert re.search(message, _error_line(capsys))
    _assert_untouched(existing_out)


def test_existing_out_needs_overwrite(tmp_path: Path, existing_out) -> None:
    from sinkbench.extract import ExtractError, extract_lm

    source = save_tiny_vlm(tmp_path / "vlm", "llava")
    with pytest.raises(ExtractError, match=r"already exists.*--overwrite"):
        extract_lm(str(source), existing_out)
    _assert_untouched(existing_out)
    extract_lm(str(source), existing_out, overwrite=True)
    assert not (existing_out / "keep.txt").exists()
    assert (existing_out / "model.safetensors").is_file()


def test_unreachable_hub_id_is_a_clear_error(tmp_path: Path, monkeypatch) -> None:
    from sinkbench.extract import ExtractError, extract_lm

    monkeypatch.setattr("huggingface_hub.constants.HF_HUB_OFFLINE", True)  # read at import time, not from env
    with pytest.raises(
        ExtractError, match="not a local directory, and the hub snapshot could not be fetched"
    ):
        extract_lm("sinkbench-tests/no-such-vlm", tmp_path / "out")
    with pytest.raises(ExtractError, match="not a directory and not a hub id"):
        extract_lm(str(tmp_path / "missing" / "dir"), tmp_path / "out")
    assert not (tmp_path / "out").exists()


def test_provenance_records_source_revision_hashes_and_tool(tmp_path: Path) -> None:
    from sinkbench.extract import PROVENANCE_FILE, extract_lm

    commit = "0123456789abcdef0123456789abcdef01234567"
    snapshot = tmp_path / "hub" / "models--org--tiny-vlm" / "snapshots" / commit
    save_tiny_vlm(snapshot, "idefics3")
    provenance = extract_lm(str(snapshot), tmp_path / "lm").provenance
    assert provenance["source"]["revision"] == commit
    assert provenance["sinkbench_version"] == sinkbench.__version__
    assert provenance["family"] == "Idefics3ForConditionalGeneration"
    assert provenance["verification"] is None
    hashes = provenance["source"]["files_sha256"]
    assert {"config.json", "model.safetensors", "tokenizer.json"} <= set(hashes)
    for name, digest in hashes.items():
        assert digest == hashlib.sha256((snapshot / name).read_bytes()).hexdigest()
    assert json.loads((tmp_path / "lm" / PROVENANCE_FILE).read_text()) == provenance


def test_tokenizer_and_template_come_from_vlm_or_reference(tmp_path: Path) -> None:
    from transformers import AutoTokenizer

    from sinkbench.extract import extract_lm

    source = save_tiny_vlm(tmp_path / "vlm", "qwen3_vl")
    from_vlm = extract_lm(str(source), tmp_path / "from-vlm")
    assert AutoTokenizer.from_pretrained(from_vlm.output).chat_template == CHAT_TEMPLATE
    assert from_vlm.provenance["tokenizer"] == {"from": str(source), "chat_template": "tokenizer"}

    reference = _plain_llm(tmp_path / "reference")
    reference_tokenizer = AutoTokenizer.from_pretrained(reference)
    reference_tokenizer.chat_template = "{{ messages[0]['content'] }} reference"
    reference_tokenizer.save_pretrained(reference)
    from_reference = extract_lm(str(source), tmp_path / "from-ref", tokenizer_from=str(reference))
    assert AutoTokenizer.from_pretrained(from_reference.output).chat_template.endswith(" reference")
    assert from_reference.provenance["tokenizer"]["from"] == str(reference)
    reference_hashes = from_reference.provenance["tokenizer"]["files_sha256"]
    assert (
        reference_hashes["tokenizer.json"]
        == hashlib.sha256((reference / "tokenizer.json").read_bytes()).hexdigest()
    )


def test_processor_chat_template_is_used_when_the_tokenizer_has_none(tmp_path: Path) -> None:
    from transformers import AutoTokenizer

    from sinkbench.extract import extract_lm

    source = save_tiny_vlm(tmp_path / "vlm", "llava_onevision")
    (source / "chat_template.jinja").unlink()
    (source / "chat_template.json").write_text(json.dumps({"chat_template": "{{ 'processor template' }}"}))
    result = extract_lm(str(source), tmp_path / "lm")
    assert AutoTokenizer.from_pretrained(result.output).chat_template == "{{ 'processor template' }}"
    assert result.provenance["tokenizer"]["chat_template"] == "chat_template.json"


def test_cli_extracts_and_verifies(tmp_path: Path, capsys) -> None:
    from transformers import AutoModelForCausalLM

    source = save_tiny_vlm(tmp_path / "vlm", "llava_next")
    assert main(["extract-lm", str(source), str(tmp_path / "lm"), "--verify"]) == 0
    printed = capsys.readouterr().out
    assert "LlavaNextForConditionalGeneration -> MistralForCausalLM" in printed
    assert "verified: max |logit diff| = 0" in printed
    assert AutoModelForCausalLM.from_pretrained(tmp_path / "lm").config.model_type == "mistral"


@pytest.mark.parametrize("size", ["lots", "-5GB"])
def test_bad_shard_size_is_a_clear_error(size: str, tmp_path: Path, capsys) -> None:
    assert main(["extract-lm", str(tmp_path), str(tmp_path / "out"), f"--max-shard-size={size}"]) == 1
    assert f"max shard size {size!r}" in capsys.readouterr().err
    assert not (tmp_path / "out").exists()


def test_help_says_which_vlms_are_accepted(capsys) -> None:
    text = help_text(["extract-lm", "--help"], capsys)
    assert "any VLM of transformers' image-text-to-text registry" in text and "architecture table" in text


def _tiny_molmo2(path: Path, **text: object) -> Path:
    """A tiny Molmo2 with the text layout ``text`` (qk_norm_type, norm_after, rope_scaling_layers), weights spread."""
    return _tiny_default_vlm(path, "molmo2", seed=3, text=text)


def _tiny_default_vlm(
    path: Path,
    model_type: str,
    *,
    seed: int = 0,
    tie: bool | None = None,
    text: dict | None = None,
    **save_kwargs,
) -> Path:
    """A tiny ``model_type`` VLM from transformers' defaults (:mod:`sinkbench.conformance.tiny`), text config
    fields ``text`` changed, head tied or not as ``tie`` says (None: the default), weights spread, saved with the
    tiny tokenizer."""
    from transformers import AutoModelForImageTextToText

    from sinkbench.conformance.tiny import tiny_config

    config = tiny_config(model_type)
    for name, value in (text or {}).items():
        setattr(config.text_config, name, value)
    if tie is not None:
        config.tie_word_embeddings = config.text_config.tie_word_embeddings = tie
    model = AutoModelForImageTextToText.from_config(config)
    randomize(model, seed=seed)
    model.save_pretrained(path, **save_kwargs)
    tiny_tokenizer().save_pretrained(path)
    return path


@pytest.mark.parametrize(
    ("layout", "architecture"),
    [({"qk_norm_type": "qwen3", "norm_after": False}, "Qwen3ForCausalLM"),
     ({"qk_norm_type": "olmo", "norm_after": True}, "Olmo2ForCausalLM")],
)  # fmt: skip
def test_molmo2_runs_as_the_causal_lm_of_its_layout(tmp_path: Path, layout: dict, architecture: str) -> None:
    from transformers import AutoModelForCausalLM

    from sinkbench.extract import extract_lm

    source = _tiny_molmo2(tmp_path / "molmo2", **layout)
    result = extract_lm(str(source), tmp_path / "lm", verify=True)
    assert result.provenance["causal_lm"]["architecture"] == architecture
    verification = result.provenance["verification"]
    assert verification["passed"] is True
    assert (verification["reference"], verification["forward_error"]) == ("vlm_forward", None)
    assert result.provenance["causal_lm"]["method"] == "loaded"
    lm = AutoModelForCausalLM.from_pretrained(tmp_path / "lm")
    assert lm.get_input_embeddings().weight.shape[0] == lm.config.vocab_size  # the image-token rows are gone


def test_molmo2_with_mixed_rope_scaling_is_refused(tmp_path: Path) -> None:
    from sinkbench.extract import ExtractError, extract_lm

    source = _tiny_molmo2(tmp_path / "molmo2", rope_scaling_layers=[0])
    with pytest.raises(
        ExtractError, match=r"Molmo2 scales RoPE in layers \[0\] only; a causal LM has one RoPE"
    ):
        extract_lm(str(source), tmp_path / "lm")
    assert not (tmp_path / "lm").exists()


def _drop_first_q_proj(source: Path) -> None:
    from safetensors.torch import load_file, save_file

    tensors = load_file(source / "model.safetensors")
    del tensors["model.language_model.layers.0.self_attn.q_proj.weight"]
    save_file(tensors, source / "model.safetensors", metadata={"format": "pt"})


def _grow_vocab(source: Path) -> None:
    config = json.loads((source / "config.json").read_text())
    config["text_config"]["vocab_size"] += 88
    (source / "config.json").write_text(json.dumps(config))


def _truncate_last_shard(source: Path) -> None:
    _truncate(sorted(source.glob("model-*.safetensors"))[-1])


def _truncate(weights: Path) -> None:
    weights.write_bytes(weights.read_bytes()[: weights.stat().st_size // 2])


#: Checkpoints that must be loaded whole (Qwen3-VL-MoE's experts are fused on load), damaged.
LOADED_CORRUPTIONS = {
    "missing q_proj": (
        {},
        _drop_first_q_proj,
        r"model/vlm: the checkpoint does not hold the language model config\.json describes \(missing: "
        r"model\.language_model\.layers\.0\.self_attn\.q_proj\.weight\); re-download",
    ),
    "vocab_size changed": (
        {},
        _grow_vocab,
        r"wrong shape: lm_head\.weight \(512, \d+\) != \(600, \d+\) \(config\.json\), "
        r"model\.language_model\.embed_tokens\.weight",
    ),
    "truncated later shard": (
        {"max_shard_size": "100KB"},
        _truncate_last_shard,
        r"model-(\d+)-of-\1\.safetensors: not a readable safetensors file",
    ),
}


@pytest.mark.parametrize("case", sorted(LOADED_CORRUPTIONS))
def test_a_damaged_checkpoint_loaded_whole_is_refused_in_one_line(
    case: str, tmp_path: Path, existing_out, capsys
) -> None:
    save_kwargs, corrupt, message = LOADED_CORRUPTIONS[case]
    source = _tiny_default_vlm(tmp_path / "model" / "vlm", "qwen3_vl_moe", **save_kwargs)
    corrupt(source)
    capsys.readouterr()
    assert main(["extract-lm", str(source), str(existing_out), "--overwrite"]) == 1
    assert re.search(message, _error_line(capsys))
    _assert_untouched(existing_out)


def _error_line(capsys: pytest.CaptureFixture) -> str:
    """The one line the CLI wrote to stderr, after any progress bars (no traceback, no multi-line report)."""
    error = capsys.readouterr().err
    assert "Traceback" not in error and "LOAD REPORT" not in error, error
    return error.strip().splitlines()[-1]


@pytest.mark.parametrize("route", ["streamed", "loaded"])
def test_provenance_counts_the_tensors_and_bytes_written(tmp_path: Path, route: str) -> None:
    from safetensors.torch import load_file

    from sinkbench.extract import extract_lm

    if route == "streamed":
        source = save_tiny_vlm(tmp_path / "vlm", "qwen2_vl", tie=True, max_shard_size="40KB")
    else:
        source = _tiny_default_vlm(tmp_path / "vlm", "qwen3_vl_moe", tie=True, max_shard_size="100KB")
    weights = extract_lm(str(source), tmp_path / "lm", max_shard_size="20KB").provenance["causal_lm"]
    assert weights["method"] == route and len(weights["shards"]) > 1
    written = {}
    for shard in weights["shards"]:
        written.update(load_file(tmp_path / "lm" / shard))
    assert "lm_head.weight" not in written  # tied: the head is the embeddings
    assert weights["tensors"] == len(written)
    assert weights["bytes"] == sum(tensor.numel() * tensor.element_size() for tensor in written.values())


def test_the_loaded_route_allocates_no_second_language_model(tmp_path: Path, monkeypatch) -> None:
    from transformers import AutoModelForCausalLM

    from sinkbench.extract import extract_lm, loaded

    built = []

    class Recording:
        @staticmethod
        def from_config(*args, **kwargs):
            model = AutoModelForCausalLM.from_config(*args, **kwargs)
            built.append(all(parameter.is_meta for parameter in model.parameters()))
            return model

    monkeypatch.setattr(loaded, "AutoModelForCausalLM", Recording)
    source = _tiny_default_vlm(tmp_path / "vlm", "qwen3_vl_moe")
    result = extract_lm(str(source), tmp_path / "lm", verify=True)
    assert built == [True]
    assert result.provenance["verification"]["passed"] is True


def _set_config(source: Path, path: tuple[str, ...], value: object) -> None:
    config = json.loads((source / "config.json").read_text())
    *parents, field = path
    node = config
    for parent in parents:
        node = node[parent]
    node[field] = value
    (source / "config.json").write_text(json.dumps(config))


def _index_names(source: Path, weight_map: dict) -> None:
    index = json.loads((source / "model.safetensors.index.json").read_text())
    (source / "model.safetensors.index.json").write_text(json.dumps({**index, "weight_map": weight_map}))


def _legacy_template(text: str) -> Callable[[Path], None]:
    def write(source: Path) -> None:
        (source / "chat_template.jinja").unlink()
        (source / "chat_template.json").write_text(text)

    return write


#: Malformed source files that must give one line naming the file, not a traceback.
BAD_FILES = {
    "text_config a string": (
        lambda source: _set_config(source, ("text_config",), "abc"),
        r"vlm/config\.json: cannot be read as a transformers config \(Validation error for field 'text_config'",
    ),
    "vocab_size a string": (
        lambda source: _set_config(source, ("text_config", "vocab_size"), "x"),
        r"vlm/config\.json: cannot be read .*Field 'vocab_size' expected int, got str",
    ),
    "index names a number": (
        lambda source: _index_names(source, {"a": 5}),
        r"model\.safetensors\.index\.json: weight_map values must be shard file names \(strings\), got 5$",
    ),
    "chat_template.json not JSON": (
        _legacy_template("{bad"),
        r"vlm/chat_template\.json: not a processor chat template .*JSONDecodeError.*fix the file, or pass "
        r"--tokenizer-from",
    ),
    "chat_template.json without the key": (
        _legacy_template('{"x": 1}'),
        r"vlm/chat_template\.json: not a processor chat template .*KeyError: 'chat_template'.*--tokenizer-from",
    ),
}


@pytest.mark.parametrize("case", sorted(BAD_FILES))
def test_a_malformed_source_file_is_one_line_naming_it(
    case: str, tmp_path: Path, existing_out, capsys
) -> None:
    corrupt, message = BAD_FILES[case]
    source = save_tiny_vlm(tmp_path / "vlm", "llava_onevision", max_shard_size="40KB")
    corrupt(source)
    capsys.readouterr()
    assert main(["extract-lm", str(source), str(existing_out), "--overwrite"]) == 1
    assert re.search(message, _error_line(capsys))
    _assert_untouched(existing_out)


@pytest.mark.parametrize("out", [".", "lm", ".."])
def test_out_may_not_overlap_the_source(out: str, tmp_path: Path, capsys) -> None:
    source = save_tiny_vlm(tmp_path / "models" / "vlm", "llava")
    before = {path.name: path.read_bytes() for path in source.iterdir()}
    assert main(["extract-lm", str(source), str(source / out), "--overwrite"]) == 1
    assert "overlaps SOURCE" in capsys.readouterr().err
    assert {path.name: path.read_bytes() for path in source.iterdir()} == before
    assert sorted(path.name for path in source.parent.iterdir()) == ["vlm"]


def test_overwrite_replaces_a_file_and_leaves_nothing_behind(tmp_path: Path) -> None:
    from sinkbench.extract import extract_lm

    source = save_tiny_vlm(tmp_path / "vlm", "llava")
    (tmp_path / "out").write_text("a file, not a folder")
    extract_lm(str(source), tmp_path / "out", overwrite=True)
    assert (tmp_path / "out" / "model.safetensors").is_file()
    assert sorted(path.name for path in tmp_path.iterdir()) == ["out", "vlm"]
