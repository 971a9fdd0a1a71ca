"""Options, prompts and guards of ``sinkbench.sink.observe``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from tiny_models import tiny_causal_lm, tiny_tokenizer

from sinkbench.errors import UserError
from sinkbench.sink.options import ProbeOptions
from sinkbench.sink.prompts import PACKAGED_SETS, load_calibration, load_prompts

IFEVAL = Path(__file__).resolve().parents[3] / "shared" / "data" / "ifeval_input_data.jsonl"


@pytest.mark.parametrize("name", PACKAGED_SETS)
def test_packaged_calibration_sets_have_15_distinct_prompts(name: str):
    prompts = load_prompts(name)
    assert len(prompts) == 15 and len(set(prompts)) == 15
    assert all(20 < len(p) < 400 for p in prompts)


def test_the_two_packaged_sets_share_no_prompt_and_hash_differently():
    first, second = load_calibration("v1"), load_calibration("v2")
    assert not set(first.prompts) & set(second.prompts) and first.sha256 != second.sha256
    assert load_prompts() == list(first.prompts)  # v1 is the default


@pytest.mark.skipif(not IFEVAL.is_file(), reason=f"IFEval data not found at {IFEVAL}")
def test_calibration_prompts_are_disjoint_from_ifeval():
    """No IFEval prompt is reused, and no 8-word run of any IFEval prompt appears."""
    ifeval = [json.loads(line)["prompt"] for line in IFEVAL.read_text().splitlines()]
    assert len(ifeval) == 541

    def shingles(text: str) -> set[tuple[str, ...]]:
        words = text.lower().split()
        return {tuple(words[i : i + 8]) for i in range(len(words) - 7)}

    ifeval_shingles = set().union(*map(shingles, ifeval))
    for prompt in [*load_prompts("v1"), *load_prompts("v2")]:
        assert prompt not in ifeval
        assert not shingles(prompt) & ifeval_shingles, prompt


def test_user_prompt_files(tmp_path):
    jsonl = tmp_path / "p.jsonl"
    jsonl.write_text('{"prompt": "first"}\n\n{"prompt": "second", "id": 3}\n')
    assert load_prompts(jsonl) == ["first", "second"]
    text = tmp_path / "p.txt"
    text.write_text("one\n\n two \n")
    assert load_prompts(text) == ["one", "two"]


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ('{"prompt": "ok"}\n{broken\n', r"p.jsonl:2: not valid JSON"),
        (
            '{"text": "no prompt field"}\n',
            r"p.jsonl:1: expected an object with a non-empty string \"prompt\"",
        ),
        ('{"prompt": ""}\n', r"p.jsonl:1: expected"),
        ("\n\n", r"expected 1 to 10000 prompts, found 0"),
    ],
)
def test_bad_prompt_files_name_file_and_line(tmp_path, content, message):
    path = tmp_path / "p.jsonl"
    path.write_text(content)
    with pytest.raises(ValueError, match=message):
        load_prompts(path)


@pytest.mark.parametrize("name", ["p.jsonl", "p.txt"])
def test_a_prompt_file_that_is_not_utf8_names_it_and_the_fix(tmp_path, name):
    path = tmp_path / name
    path.write_bytes(b"ok\n\xff\n")
    with pytest.raises(UserError) as refused:
        load_prompts(path)
    assert str(refused.value) == f"{path}: is not UTF-8 (byte 3). Fix: save the file as UTF-8"


def test_missing_prompt_file(tmp_path):
    with pytest.raises(FileNotFoundError, match="neither a packaged set"):
        load_prompts(tmp_path / "nope.jsonl")


def test_options_validation_and_unknown_keys():
    assert ProbeOptions.from_mapping(None) == ProbeOptions()
    assert ProbeOptions.from_mapping({"num_layers": 3}).num_layers == 3
    with pytest.raises(ValueError, match=r"'num_layer': \['num_layers'\]"):
        ProbeOptions.from_mapping({"num_layer": 3})
    with pytest.raises(ValueError, match="sink_position"):
        ProbeOptions(sink_position="middle")
    with pytest.raises(ValueError, match="num_layers"):
        ProbeOptions(num_layers=0)
    with pytest.raises(UserError) as refused:
        ProbeOptions(batch_size=0, max_tokens=1)
    assert str(refused.value) == (
        "invalid probe option(s): batch_size (--batch-size) 0: give a whole number >= 1; max_tokens 1: give a "
        "whole number >= 2"
    )


def test_chat_template_modes():
    from sinkbench.sink.observe import encode_prompts

    tokenizer = tiny_tokenizer()
    raw = encode_prompts(tokenizer, ["hello"], "off")[0]
    wrapped = encode_prompts(tokenizer, ["hello"], "auto")[0]
    assert len(wrapped) > len(raw)
    assert wrapped[0] == tokenizer.bos_token_id
    tokenizer.chat_template = None
    assert encode_prompts(tokenizer, ["hello"], "auto")[0] == raw
    with pytest.raises(ValueError, match="no chat template"):
        encode_prompts(tokenizer, ["hello"], "on")


def test_probe_mode_restores_attention_implementation():
    from sinkbench.sink.attention import probe_mode
    from sinkbench.sink.observe import observe

    model = tiny_causal_lm("llama")
    with probe_mode(model):
        assert model.config._attn_implementation == "sinkbench_probe"
    assert model.config._attn_implementation == "sdpa"
    observe(model, tiny_tokenizer(), ["a prompt"], ProbeOptions())
    assert model.config._attn_implementation == "sdpa"


def test_too_long_prompt_is_rejected():
    from sinkbench.sink.observe import observe

    with pytest.raises(ValueError, match="exceed max_tokens=4"):
        observe(
            tiny_causal_lm("llama"), tiny_tokenizer(), ["a much longer prompt"], ProbeOptions(max_tokens=4)
        )
