"""The mechanism pilot's measurements and rule: each head's first-token attention, its paired change, the projector
scale, and the rule that picks the compared regime."""

from __future__ import annotations

import numpy as np
import pytest
from tiny_models import tiny_causal_lm, tiny_tokenizer

from experiments.vl_testbed.mechanism import sink_shift
from experiments.vl_testbed.specs import VisionSpec
from experiments.vl_testbed.verdicts import HEAD_SHIFT

TINY_VISION = VisionSpec(image_size=16, patch_size=8, hidden_size=16, intermediate_size=32, layers=1, heads=2)


def test_sink_shift_pairs_prompts_and_names_the_heads_that_moved() -> None:
    rng = np.random.default_rng(0)
    before = rng.uniform(0.2, 0.4, size=(12, 3, 4))
    after = before.copy()
    after[:, 1, 2] += 0.3  # one head gains first-token attention on every prompt
    after[:, 0, 0] += rng.normal(0, 0.05, size=12)  # one head only jitters
    shift = sink_shift(before, after, [[1, 2], [2, 3]])
    assert shift["heads_moved"] == 1 and shift["heads"] == 12 and shift["prompts"] == 12
    assert shift["largest_change"] == pytest.approx(0.3)
    assert shift["sink_heads"]["change"]["mean"] == pytest.approx(0.15, abs=1e-5)  # (0.3 + 0) / 2
    low, high = shift["sink_heads"]["change"]["ci"]
    assert low == pytest.approx(0.15, abs=1e-4) and high == pytest.approx(
        0.15, abs=1e-4
    )  # no spread over prompts
    assert shift["every_head"]["change"]["ci"][0] <= shift["every_head"]["change"]["mean"]
    assert shift["per_head_change"][1][2] == pytest.approx(0.3)
    unmoved = sink_shift(before, before + HEAD_SHIFT / 2, [[0, 0]])
    assert unmoved["heads_moved"] == 0  # a change below HEAD_SHIFT is not a move, however consistent
    with pytest.raises(ValueError, match="paired"):
        sink_shift(before, after[:5], [[0, 0]])


def test_first_token_attention_of_a_tiny_vlm_with_and_without_an_image() -> None:
    from experiments.vl_testbed.mechanism import first_token_attention, image_prompts, text_prompts
    from experiments.vl_testbed.scenes import question_items
    from experiments.vl_testbed.vlm import build_vlm

    tokenizer = tiny_tokenizer()
    lm = tiny_causal_lm("llama")
    vlm = build_vlm(lm, tokenizer, TINY_VISION)
    before = vlm.config._attn_implementation
    texts = text_prompts(tokenizer)
    images = image_prompts(tokenizer, question_items(5, 2, TINY_VISION.image_size), TINY_VISION.image_tokens)
    on_text = first_token_attention(vlm, texts)
    on_images = first_token_attention(vlm, images)
    layers, heads = lm.config.num_hidden_layers, lm.config.num_attention_heads
    assert on_text.shape == (len(texts), layers, heads) and on_images.shape == (6, layers, heads)
    assert ((on_text > 0) & (on_text <= 1)).all() and ((on_images > 0) & (on_images <= 1)).all()
    assert vlm.config._attn_implementation == before  # the eager switch is undone
    np.testing.assert_array_equal(first_token_attention(vlm, texts[:2]), on_text[:2])  # one prompt at a time


def test_projector_scale_multiplies_the_image_features_only() -> None:
    import dataclasses

    import torch

    from experiments.vl_testbed.vlm import build_vlm, pixel_values

    tokenizer = tiny_tokenizer()
    plain = build_vlm(tiny_causal_lm("llama"), tokenizer, TINY_VISION, seed=3)
    scaled = build_vlm(
        tiny_causal_lm("llama"), tokenizer, dataclasses.replace(TINY_VISION, projector_scale=10.0), seed=3
    )
    images = pixel_values([np.full((16, 16, 3), 0.5)])
    with torch.no_grad():
        features = [m.model.get_image_features(pixel_values=images) for m in (plain, scaled)]
    first, second = (f.pooler_output if hasattr(f, "pooler_output") else f for f in features)
    first, second = (torch.cat(list(f)) if isinstance(f, (list, tuple)) else f for f in (first, second))
    torch.testing.assert_close(second, 10 * first, rtol=1e-5, atol=1e-5)
    ids = torch.tensor([[1, 5, 7, 9]])
    with torch.no_grad():
        torch.testing.assert_close(
            plain(input_ids=ids).logits, scaled(input_ids=ids).logits
        )  # text unchanged


def _run(setting: str, seed: int, shift: float, gain: float, echo: float) -> dict:
    return {"setting": setting, "seed": seed, "s_shift": shift, "visual_gain": gain, "echo": {"rate": echo}}


def test_the_rule_picks_the_least_echoing_regime_that_moves_the_sink_and_learns() -> None:
    from experiments.vl_testbed.pilot import verdicts

    runs = [
        _run("recipe", 200, 0.17, 0.26, 0.8),
        _run("recipe", 201, 0.05, 0.13, 0.8),  # one seed inside the noise
        _run("long", 200, 0.5, 0.5, 0.7),
        _run("long", 201, 0.4, 0.3, 0.7),
        _run("lr1e-3", 200, -0.9, 0.5, 0.2),
        _run("lr1e-3", 201, 0.7, 0.5, 0.2),  # moved both ways
        _run("scale10", 200, 0.5, 0.02, 0.1),  # the visual task not learned
        _run("scale10", 201, 0.5, 0.3, 0.1),
        _run("tokens16", 200, 0.5, 0.3, 0.6),  # one seed only: not judged
    ]
    found = verdicts(runs, (200, 201))
    assert found["compared_regime"] == "long"
    assert [name for name, v in found["settings"].items() if v["sink_moved"]] == ["long", "scale10"]
    assert "tokens16" not in found["settings"]
    assert verdicts(runs[:2], (200, 201))["compared_regime"] is None  # nothing moved: not posed


def test_an_answer_copies_the_prompt_when_it_starts_with_its_opening() -> None:
    from experiments.vl_testbed.pilot import COPY_PREFIX, copies_prompt

    prompt = "Write a limerick about a cat. " * 3
    assert copies_prompt([prompt + " More", " " + prompt[:COPY_PREFIX], "A cat sat."], [prompt] * 3) == 2
    assert copies_prompt([prompt[: COPY_PREFIX - 1]], [prompt]) == 0  # shorter than the opening


def test_backbones_compare_only_when_every_seed_is_apart_by_the_margin() -> None:
    from experiments.vl_testbed.verdicts import compare_backbones

    assert compare_backbones([0.1, 0.2], [0.6, 0.9], 0.33) == "more"  # 0.6 - 0.2 = 0.4 >= 0.33
    assert compare_backbones([0.6, 0.9], [0.1, 0.2], 0.33) == "less"
    assert compare_backbones([0.1, 0.2], [0.5, 0.9], 0.33) == "cannot tell"  # 0.5 - 0.2 = 0.3 < 0.33
    assert compare_backbones([0.1, 0.7], [0.5, 0.9], 0.0) == "cannot tell"  # the seeds overlap
    assert compare_backbones([], [0.5], 0.0) == "cannot tell"


def test_the_second_backbone_is_read_against_the_first_setting_by_setting() -> None:
    import json
    from pathlib import Path

    from experiments.vl_testbed.page import PILOT_FILE, backbone_answers
    from experiments.vl_testbed.schema import PilotResults

    raw = json.loads((Path("experiments/vl_testbed/results") / PILOT_FILE).read_text())
    first = PilotResults.model_validate({**raw, "base": {**raw["base"], "nll_continue": 1.0}})
    recipe = [run for run in raw["runs"] if run["setting"] == "recipe"]
    second_runs = [
        {**run, "s_shift": 1.0 + i, "nll_continue": run["nll_continue"] + 0.5} for i, run in enumerate(recipe)
    ]
    second = PilotResults.model_validate(
        {
            **raw,
            "backbone": "Second",
            "base": {**raw["base"], "nll_continue": 1.0},
            "runs": second_runs,
            "verdicts": {
                "settings": {"recipe": raw["verdicts"]["settings"]["recipe"]},
                "compared_regime": None,
            },
        }
    )
    answers = backbone_answers(first, second)
    assert len(answers) == 3  # moved, lost, the caveat
    assert (
        answers[0].startswith("recipe (")
        and "Second's sink move more than SmolLM2-135M-Instruct's? Yes" in answers[0]
    )
    assert "+1.000, +2.000 against +0.175, +0.046" in answers[0]
    assert "lose more than SmolLM2-135M-Instruct? Yes" in answers[1]  # every seed's NLL rose 0.5 more
    assert "direction, not a correlation" in answers[2]
    copying = second.model_copy(update={"base": {**second.base, "copies_prompt": 25}})  # 25 of 48: most
    (_, lost, _) = backbone_answers(first, copying)
    assert (
        "lose more than SmolLM2-135M-Instruct? Cannot tell, Second's base model repeats the prompt in 25"
        in lost
    )
    half = second.model_copy(update={"base": {**second.base, "copies_prompt": 24}})
    assert "? Yes" in backbone_answers(first, half)[1]  # half is not most
    without_base_nll = first.model_copy(
        update={"base": {k: v for k, v in raw["base"].items() if k != "nll_continue"}}
    )
    assert len(backbone_answers(without_base_nll, second)) == 2  # no base NLL: the loss is not read
    assert (
        backbone_answers(
            first, first.model_copy(update={"verdicts": second.verdicts.model_copy(update={"settings": {}})})
        )
        == []
    )
