"""The VL fine-tuning testbed: scenes, the LLaVA it builds, the matched control, the statistics, and the whole
pipeline on tiny random models (seconds, no real weights or data)."""

from __future__ import annotations

import gc
import json
import weakref
from pathlib import Path

import numpy as np
import pytest
import torch
from tiny_models import TINY_SHAPE, TINY_SINK_HEADS, tiny_causal_lm, tiny_tokenizer
from transformers import TrainerCallback

from sinkbench.leaderboard.sources import SourceInvalid
from sinkbench.leaderboard.training import PLOT_PATHS, TESTBED_FILE, read_testbed
from sinkbench.protect import protect_sink_heads
from sinkbench.testbed import analysis
from sinkbench.testbed.controls import band_of, frozen_units, matched_random_heads
from sinkbench.testbed.ifeval_short import fits_short_answer, short_answer_prompts
from sinkbench.testbed.scenes import ANSWERS, CELLS, caption, make_scene, qa_conversation, question_items
from sinkbench.testbed.train import StageSpec, stage_data, train_stage
from sinkbench.testbed.visual import first_tokens
from sinkbench.testbed.vlm import IGNORE, VisionSpec, build_vlm, encode, pixel_values, processor_for

TINY_VISION = VisionSpec(image_size=16, patch_size=8, hidden_size=16, intermediate_size=32, layers=1, heads=2)


def test_scenes_are_deterministic_and_described_truthfully() -> None:
    first, again = (make_scene(np.random.default_rng(3)) for _ in range(2))
    assert np.array_equal(first.image, again.image) and first.shapes == again.shapes
    assert first.image.shape == (48, 48, 3) and first.image.min() >= 0.0 and first.image.max() <= 1.0
    text = caption(first)
    assert text.split()[0] == ANSWERS["count"][len(first.shapes) - 1]
    for shape in first.shapes:
        assert f"a {shape.colour} {shape.kind} in the {CELLS[shape.cell]}" in text
    items = question_items(seed=5, images=4)
    assert len(items) == 12 and {item.kind for item in items} == set(ANSWERS)
    assert all(item.answer in ANSWERS[item.kind] for item in items)


def test_shapes_are_drawn_where_the_scene_says() -> None:
    scene = make_scene(np.random.default_rng(11))
    occupied = {shape.cell for shape in scene.shapes}
    for cell in range(4):
        row, col = divmod(cell, 2)
        patch = scene.image[row * 24 : (row + 1) * 24, col * 24 : (col + 1) * 24]
        assert (patch.max() > 0.5) == (cell in occupied)


def test_the_vlm_keeps_the_lm_and_matches_the_saved_processor() -> None:
    from PIL import Image

    tokenizer, lm = tiny_tokenizer(), tiny_causal_lm("llama")
    vlm = build_vlm(lm, tokenizer, TINY_VISION)
    text = tokenizer("Write a short note", return_tensors="pt").input_ids
    with torch.no_grad():
        before, after = lm(text).logits, vlm(input_ids=text).logits
    assert torch.equal(before, after[..., : before.shape[-1]])
    scene = make_scene(np.random.default_rng(0), size=16)
    chat = qa_conversation(scene, np.random.default_rng(1))
    ids, labels = encode(tokenizer, chat, TINY_VISION.image_tokens)
    image = Image.fromarray(np.round(scene.image * 255).astype(np.uint8))
    processed = processor_for(tokenizer, TINY_VISION)(
        images=image, text=tokenizer.apply_chat_template(chat, tokenize=False), return_tensors="pt"
    )
    assert processed.input_ids[0].tolist() == ids
    assert torch.allclose(processed.pixel_values, pixel_values([scene.image]), atol=1e-6)
    answers = "".join(m["content"] + "</s>" for m in chat if m["role"] == "assistant")
    assert tokenizer.decode([t for t, label in zip(ids, labels, strict=True) if label != IGNORE]) == answers


def test_a_stage_keeps_no_trainer_alive() -> None:
    """The Trainer (optimizer state, callbacks) is freed when the stage returns; its result holds the log only."""
    tokenizer, lm = tiny_tokenizer(), tiny_causal_lm("llama")
    vlm = build_vlm(lm, tokenizer, TINY_VISION)
    data = stage_data("stage1", 0, 4, tokenizer, TINY_VISION)
    seen: list[weakref.ref] = []

    def note(trainer: object) -> TrainerCallback:
        seen.append(weakref.ref(trainer))
        return TrainerCallback()

    result = train_stage(vlm, tokenizer, data, StageSpec(2, 2, 1e-3, 0.5, False), 0, callbacks=[note])
    gc.collect()
    assert len(result.loss) == 2 and seen and seen[0]() is None


def test_answer_words_differ_in_their_first_token() -> None:
    found = first_tokens(tiny_tokenizer())
    assert all(len(set(ids.values())) == len(ids) for ids in found.values())


SINK, SHAPE = TINY_SINK_HEADS, TINY_SHAPE


def test_random_control_matches_the_sink_heads_band_by_band() -> None:
    control = matched_random_heads(SINK, bands=2, seed=0, **SHAPE)
    for band in range(2):

        def within(heads: list[list[int]], band: int = band) -> list[list[int]]:
            return [h for h in heads if band_of(h[0], 4, 2) == band]

        assert frozen_units(within(control), 4, 2) == frozen_units(within(SINK), 4, 2)
    sink_kv = {(layer, head // 2) for layer, head in SINK}
    assert not {(layer, head // 2) for layer, head in control} & sink_kv
    assert control == matched_random_heads(SINK, bands=2, seed=0, **SHAPE)
    draws = {json.dumps(matched_random_heads(SINK, bands=2, seed=seed, **SHAPE)) for seed in range(8)}
    assert len(draws) > 1
    counts = []
    for heads in (SINK, control):
        model = tiny_causal_lm("llama")
        counts.append(protect_sink_heads(model, heads).num_protected)
    assert counts[0] == counts[1]


def test_a_band_without_enough_free_key_heads_is_refused() -> None:
    crowded = [[3, 0], [3, 2]]  # both key heads of layer 3, alone in its band of one layer
    with pytest.raises(ValueError, match="Band 3 of 4: the sink heads use 2 key/value heads but only 0"):
        matched_random_heads(crowded, bands=4, seed=0, **SHAPE)


def _doc(prompt: str, instruction: str = "punctuation:no_comma", **kwargs: object) -> dict:
    return {"key": 1, "prompt": prompt, "instruction_id_list": [instruction], "kwargs": [kwargs]}


@pytest.mark.parametrize(
    ("doc", "kept"),
    [
        (_doc("Answer without commas."), True),
        (_doc("Write.", "length_constraints:number_words", num_words=300, relation="at least"), False),
        (_doc("Write.", "length_constraints:number_words", num_words=300, relation="less than"), True),
        (_doc("Write.", "length_constraints:number_paragraphs", num_paragraphs=5), False),
        (_doc("Write.", "detectable_format:number_bullet_lists", num_bullets=3), True),
        (_doc("Write a 300-word essay without commas."), False),
        (_doc("Write a 50 word note without commas."), True),
    ],
)
def test_short_answer_rule(doc: dict, kept: bool) -> None:
    assert fits_short_answer(doc) is kept


def test_short_answer_selection_keeps_file_order() -> None:
    docs = [_doc("a"), _doc("Write a 500 word story."), _doc("b"), _doc("c")]
    assert short_answer_prompts(docs) == [0, 2, 3]


def test_sign_flip_p_value_and_detectable_difference() -> None:
    assert analysis.sign_flip_p([1, 2, 3, 4, 5, 6]) == pytest.approx(2 / 64)
    assert analysis.sign_flip_p([1, -1, 1, -1, 1, -1]) == pytest.approx(1.0)
    assert analysis.sign_flip_p([0, 0, 0]) == 1.0
    effect = analysis.paired_effect([3, 4, 5, 6, 5, 4], [1, 1, 1, 1, 1, 1])
    assert effect["mean"] == pytest.approx(3.5) and (effect["positive"], effect["negative"]) == (6, 0)
    low, high = effect["ci95"]
    assert 2.0 < low < 3.5 < high < 5.0
    # six seeds: all must share a sign; the true mean must be well above the spread for 80% power
    assert 1.0 < analysis.minimum_detectable_difference(1.0, 6) < 3.0
    assert analysis.minimum_detectable_difference(2.0, 6) == pytest.approx(
        2 * analysis.minimum_detectable_difference(1.0, 6)
    )
    assert analysis.minimum_detectable_difference(1.0, 4) == float("inf")  # 2 / 16 > 0.05: never significant
    quantised = analysis.paired_effect([1, 0, 0, 0, 0, 0], [0] * 6, resolution=1.0)
    assert quantised["minimum_detectable"] == 1.0  # the simulated 0.8 is less than one prompt


def test_pipeline_records_every_run_and_resumes(testbed_run) -> None:
    results, logged = testbed_run
    data = json.loads(results.read_text())
    rerun = logged[logged.index("-- rerun --") + 1 :]
    assert len(rerun) == 1 and rerun[0].endswith("state.json: 2 seeds on file")  # the rerun trained nothing
    arms = {(record["seed"], arm["arm"]): arm for record in data["seeds"] for arm in record["arms"]}
    assert set(arms) == {(seed, arm) for seed in (0, 1) for arm in ("none", "sink", "random")}
    for (_, name), arm in arms.items():
        assert arm["extraction"]["passed"] and arm["frozen"]["rows_unchanged"]
        assert arm["ifeval"]["prompts"] == 2 and len(arm["trace"]) == 3  # steps 0, 1, 2
        assert arm["trace"][0]["sink_strength"] == pytest.approx(
            data["base"]["sink"]["sink_strength"], abs=1e-4
        )
        assert arm["heads"] == (SINK if name == "sink" else [] if name == "none" else arm["heads"])
    assert arms[0, "sink"]["frozen"]["weights"] == arms[0, "random"]["frozen"]["weights"] > 0
    assert arms[0, "random"]["heads"] != arms[1, "random"]["heads"] or SINK  # drawn per seed
    paired = data["analysis"]["paired_vs_none"]["sink"]["prompt_strict"]
    assert (
        len(paired["differences"]) == 2
        and paired["minimum_detectable"] is None
        and paired["undetectable"] == "too_few_seeds"
    )  # two seeds detect nothing
    kept = results.parent.parent / "work" / "seed0" / "none"
    assert (kept / "vlm" / "config.json").is_file() and (kept / "lm" / "provenance.json").is_file()
    assert not (results.parent.parent / "work" / "seed1" / "sink").exists()


def test_the_page_reads_the_results_and_draws_every_run(testbed_run) -> None:
    results, _ = testbed_run
    page = read_testbed(results, "vl_testbed.json")
    assert page.arms == ["none", "sink", "random"]
    assert page.answer.startswith("This design cannot tell: over 2 seeds, freezing the sink heads changed")
    charts = {Path(plot.path).name: plot.chart for plot in page.charts().values()}
    assert set(charts) == {Path(path).name for path in PLOT_PATHS.values()}
    assert "seed 0: no protection" in charts["testbed-strict-per-seed.svg"].alt
    for chart in charts.values():
        assert chart.svg().startswith("<?xml")


def test_a_malformed_results_file_is_one_line(tmp_path: Path, testbed_run) -> None:
    data = json.loads(testbed_run[0].read_text())
    del data["seeds"][0]["arms"][0]["ifeval"]
    (tmp_path / TESTBED_FILE).write_text(json.dumps(data), encoding="utf-8")
    with pytest.raises(SourceInvalid) as raised:
        read_testbed(tmp_path / TESTBED_FILE, "results/vl_testbed.json")
    message = str(raised.value)
    assert message.startswith("results/vl_testbed.json: seeds.0.arms.0.ifeval: ") and "\n" not in message


def _effect(mean: float, ci: tuple[float, float], p: float, mde: float | None) -> object:
    from sinkbench.leaderboard.training import _Effect

    return _Effect(
        differences=[mean] * 6,
        mean=mean,
        ci95=list(ci),
        p_sign_flip=p,
        positive=6,
        negative=0,
        minimum_detectable=mde,
        undetectable=None if mde is not None else "too_few_seeds",
    )


@pytest.mark.parametrize(
    ("effect", "verdict"),
    [
        (_effect(2.0, (1.0, 3.0), 0.031, 1.5), "Yes, it helped:"),
        (_effect(-2.0, (-3.0, -1.0), 0.031, 1.5), "No, it hurt:"),
        (_effect(0.1, (-0.5, 0.8), 0.6, 1.5), "No, not by as much as this design can detect:"),
        (_effect(0.5, (-1.0, 2.5), 0.3, 1.5), "This design cannot tell:"),
        (_effect(0.1, (-0.5, 0.8), 0.6, None), "This design cannot tell:"),
    ],
)
def test_the_answer_follows_the_test_and_the_detectable_difference(effect, verdict: str) -> None:
    from sinkbench.leaderboard.training import _verdict

    assert _verdict(effect) == verdict


@pytest.mark.parametrize(
    ("treated", "why", "text"),
    [
        ([1.0, 3.0], "too_few_seeds", "with this few seeds no difference is detectable"),
        ([2.0, 2.0], "too_few_seeds", "with this few seeds no difference is detectable"),
        (
            [1.0] * 6,
            "no_spread",
            "the differences have no spread, so the smallest detectable difference cannot",
        ),
    ],
)
def test_an_undetectable_difference_says_why(treated: list[float], why: str, text: str) -> None:
    """Too few seeds and differences without spread both leave no detectable size; the page tells them apart."""
    from sinkbench.leaderboard.training import _Effect, _mde

    effect = analysis.paired_effect(treated, [0.0] * len(treated))
    assert effect["undetectable"] == why
    shown = _Effect.model_validate(analysis._json_ready(effect))
    assert shown.minimum_detectable is None and _mde(shown, "points").startswith(text)


def test_visual_accuracy_is_tested_against_chance() -> None:
    assert analysis.above_chance({"accuracy": 0.5, "n": 96, "chance": 0.28}) < 0.001
    assert analysis.above_chance({"accuracy": 0.28, "n": 96, "chance": 0.28}) > 0.4
