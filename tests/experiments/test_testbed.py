"""The VL fine-tuning testbed: scenes and their reply formats, the text-only chats, the LLaVA it builds, the arms and
the matched control, the text outcomes, the statistics and verdicts, and the whole pipeline on tiny random models
(seconds, no real weights or data)."""

from __future__ import annotations

import gc
import json
import re
import weakref
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import pytest
from tiny_models import tiny_causal_lm, tiny_tokenizer
from tiny_testbed import TINY_DOCS, TINY_PROBLEMS, TINY_SHAPE, TINY_SINK_HEADS, refusal, tiny_testbed_config

from experiments.vl_testbed import analysis
from experiments.vl_testbed.controls import ARMS, arm_heads, band_of, frozen_units, matched_random_heads
from experiments.vl_testbed.ifeval_short import fits_short_answer, short_answer_prompts
from experiments.vl_testbed.page import PLOT_PATHS, TESTBED_FILE, read_testbed
from experiments.vl_testbed.replies import FORMATS, TURNS, ReplyMix, vl_conversation
from experiments.vl_testbed.scenes import (
    ANSWERS,
    CELLS,
    NUMBERS,
    ONE_WORD,
    caption,
    make_scene,
    question_items,
)
from experiments.vl_testbed.schema import Results
from experiments.vl_testbed.text_chats import problem_turns, solution_text, text_conversations
from experiments.vl_testbed.verdicts import sink_moved, verdict

if TYPE_CHECKING:
    from experiments.vl_testbed.vlm import VisionSpec


def _tiny_vision() -> VisionSpec:
    """The tiny vision tower the tests' VLMs get."""
    from experiments.vl_testbed.vlm import VisionSpec

    return VisionSpec(image_size=16, patch_size=8, hidden_size=16, intermediate_size=32, layers=1, heads=2)


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
    assert all(item.answer in ANSWERS[item.kind] and item.question.endswith(ONE_WORD) for item in items)


def test_shapes_are_drawn_where_the_scene_says() -> None:
    scene = make_scene(np.random.default_rng(11))
    occupied = {shape.cell for shape in scene.shapes}
    for cell in range(4):
        row, col = divmod(cell, 2)
        patch = scene.image[row * 24 : (row + 1) * 24, col * 24 : (col + 1) * 24]
        assert (patch.max() > 0.5) == (cell in occupied)


def test_the_vlm_keeps_the_lm_and_matches_the_saved_processor() -> None:
    import torch
    from PIL import Image

    from experiments.vl_testbed.vlm import IGNORE, build_vlm, encode, pixel_values, processor_for

    tokenizer, lm = tiny_tokenizer(), tiny_causal_lm("llama")
    vlm = build_vlm(lm, tokenizer, _tiny_vision())
    text = tokenizer("Write a short note", return_tensors="pt").input_ids
    with torch.no_grad():
        before, after = lm(text).logits, vlm(input_ids=text).logits
    assert torch.equal(before, after[..., : before.shape[-1]])
    scene = make_scene(np.random.default_rng(0), size=16)
    chat = vl_conversation(scene, np.random.default_rng(1), ReplyMix())
    ids, labels = encode(tokenizer, chat, _tiny_vision().image_tokens)
    image = Image.fromarray(np.round(scene.image * 255).astype(np.uint8))
    processed = processor_for(tokenizer, _tiny_vision())(
        images=image, text=tokenizer.apply_chat_template(chat, tokenize=False), return_tensors="pt"
    )
    assert processed.input_ids[0].tolist() == ids
    assert torch.allclose(processed.pixel_values, pixel_values([scene.image]), atol=1e-6)
    answers = "".join(m["content"] + "</s>" for m in chat if m["role"] == "assistant")
    assert tokenizer.decode([t for t, label in zip(ids, labels, strict=True) if label != IGNORE]) == answers


def test_a_stage_keeps_no_trainer_alive() -> None:
    """The Trainer (optimizer state, callbacks) is freed when the stage returns; its result holds the log only."""
    from transformers import TrainerCallback

    from experiments.vl_testbed.train import StageSpec, stage_data, train_stage
    from experiments.vl_testbed.vlm import build_vlm

    tokenizer, lm = tiny_tokenizer(), tiny_causal_lm("llama")
    vlm = build_vlm(lm, tokenizer, _tiny_vision())
    data = stage_data("stage1", 0, 4, tokenizer, _tiny_vision())
    seen: list[weakref.ref] = []

    def note(trainer: object) -> TrainerCallback:
        seen.append(weakref.ref(trainer))
        return TrainerCallback()

    result = train_stage(vlm, tokenizer, data, StageSpec(2, 2, 1e-3, 0.5, False), 0, callbacks=[note])
    gc.collect()
    assert len(result.loss) == 2 and seen and seen[0]() is None


def test_answer_words_differ_in_their_first_token() -> None:
    from experiments.vl_testbed.visual import first_tokens

    found = first_tokens(tiny_tokenizer())
    assert all(len(set(ids.values())) == len(ids) for ids in found.values())


SINK, SHAPE = TINY_SINK_HEADS, TINY_SHAPE


def test_random_control_matches_the_sink_heads_band_by_band() -> None:
    from sinkbench.protect import protect_sink_heads

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


def _shapes_named(text: str) -> set[tuple[str, str, str]]:
    """(colour, kind, cell) triples a reply names, as "a red circle in the top left" or "... (top left)"."""
    pattern = r"(red|green|blue|yellow) (circle|square|triangle)[^.\n]*? (top left|top right|bottom left|bottom right)"
    return set(re.findall(pattern, text.lower()))


@pytest.mark.parametrize("seed", range(12))
def test_every_reply_format_is_true_of_its_scene(seed: int) -> None:
    rng = np.random.default_rng(seed)
    scene = make_scene(rng, 16)
    truth = {(s.colour, s.kind, CELLS[s.cell]) for s in scene.shapes}
    count = len(scene.shapes)
    question, reply = TURNS["word"](scene, rng)
    assert question.endswith(ONE_WORD) and len(reply.split()) == 1
    question, reply = TURNS["description"](scene, rng)
    described = set()
    for sentence in reply.split(". "):
        shape = re.search(r"(red|green|blue|yellow) (circle|square|triangle)", sentence)
        cell = re.search(r"(top left|top right|bottom left|bottom right)", sentence)
        if shape and cell:
            described.add((*shape.groups(), cell.group(1)))
    assert described == truth and NUMBERS[count - 1] in reply.split(". ")[0]
    empty = [CELLS[c] for c in range(4) if scene.shape_in(c) is None]
    assert (
        (f"{empty[-1]} {'is' if len(empty) == 1 else 'are'} empty" in reply)
        if empty
        else "empty" not in reply
    )
    _, reply = TURNS["listing"](scene, rng)
    assert len(reply.splitlines()) == count and _shapes_named(reply) == truth
    _, reply = TURNS["count_reasoning"](scene, rng)
    assert _shapes_named(reply) == truth and reply.endswith(f"the answer is {count}.")
    for _ in range(20):
        question, reply = TURNS["sentence"](scene, rng)
        if question.startswith("Is there a "):
            colour, kind = question.removeprefix("Is there a ").removesuffix(" in the image?").split()
            present = any(s.colour == colour and s.kind == kind for s in scene.shapes)
            assert reply.startswith("Yes" if present else "No")
        elif question.startswith("How many"):
            assert f" {NUMBERS[count - 1]} shape" in reply


def test_reply_shares_are_stated_and_drawn() -> None:
    mix = ReplyMix(word=2, sentence=1, description=1, listing=0, count_reasoning=0, turns=2)
    assert mix.shares == {
        "word": 0.5,
        "sentence": 0.25,
        "description": 0.25,
        "listing": 0.0,
        "count_reasoning": 0.0,
    }
    rng = np.random.default_rng(0)
    drawn = [mix.draw(rng) for _ in range(4000)]
    assert abs(drawn.count("word") / 4000 - 0.5) < 0.03 and "listing" not in drawn
    chat = vl_conversation(make_scene(rng, 16), rng, mix)
    assert (
        len(chat) == 4 and chat[0]["content"].startswith("<image>\n") and "<image>" not in chat[2]["content"]
    )
    assert set(FORMATS) == set(TURNS)
    with pytest.raises(ValueError, match="non-negative"):
        ReplyMix(word=-1)


def test_gsm8k_solutions_become_replies_and_chats_draw_without_replacement() -> None:
    answer = "Half of 48 is 48/2 = <<48/2=24>>24.\nSo 24 + 48 = <<24+48=72>>72.\n#### 72"
    assert solution_text(answer) == "Half of 48 is 48/2 = 24.\nSo 24 + 48 = 72.\nThe answer is 72."
    with pytest.raises(ValueError, match="#### <number>"):
        solution_text("no final line")
    chats = text_conversations(TINY_PROBLEMS, 5, 2, np.random.default_rng(0))
    questions = [turn["content"] for chat in chats for turn in chat if turn["role"] == "user"]
    assert len(chats) == 5 and len(set(questions)) == 10
    assert problem_turns(TINY_PROBLEMS[0])[1]["content"].endswith("The answer is 2.")
    with pytest.raises(ValueError, match="only 39 given"):
        text_conversations(TINY_PROBLEMS, 20, 2, np.random.default_rng(0))


def test_stage_data_has_images_for_vl_chats_only() -> None:
    from experiments.vl_testbed.train import collate, stage_data
    from experiments.vl_testbed.vlm import build_vlm

    tokenizer = tiny_tokenizer()
    build_vlm(tiny_causal_lm("llama"), tokenizer, _tiny_vision())
    text = stage_data("stage2_text", 0, 4, tokenizer, _tiny_vision(), problems=TINY_PROBLEMS)
    assert all(image is None for _, _, image in text.items) and text.supervised_tokens > 0
    mixed = stage_data("stage2", 0, 40, tokenizer, _tiny_vision(), problems=TINY_PROBLEMS, text_share=0.5)
    kinds = [image is None for _, _, image in mixed.items]
    assert 5 < sum(kinds) < 35
    batch = collate(tokenizer.pad_token_id)(text.items[:2])
    assert "pixel_values" not in batch
    batch = collate(tokenizer.pad_token_id)(mixed.items[:6])
    assert batch["pixel_values"].shape[0] == sum(image is not None for _, _, image in mixed.items[:6])
    with pytest.raises(ValueError, match="needs GSM8K problems"):
        stage_data("stage2_text", 0, 4, tokenizer, _tiny_vision())
    assert (
        stage_data("stage2", 3, 4, tokenizer, _tiny_vision()).items[0][0]
        == (stage_data("stage2", 3, 4, tokenizer, _tiny_vision()).items[0][0])
    )


def test_text_control_matches_the_vl_stage_in_supervised_tokens() -> None:
    from experiments.vl_testbed.train import TOKEN_MATCH, ChatImages, stage_data, token_matched
    from experiments.vl_testbed.vlm import IGNORE, build_vlm

    tokenizer = tiny_tokenizer()
    build_vlm(tiny_causal_lm("llama"), tokenizer, _tiny_vision())
    problems = [
        {
            "question": f"What is {a} times {b}?",
            "answer": f"{a} times {b} is {a * b}. " * (1 + b % 4) + f"\n#### {a * b}",
        }
        for a in range(1, 20)
        for b in range(1, 5)
    ]
    unmatched = stage_data("stage2_text", 0, 6, tokenizer, _tiny_vision(), problems=problems)
    target = round(unmatched.supervised_tokens * 0.7)  # fewer tokens than the draw gives
    matched = stage_data(
        "stage2_text", 0, 6, tokenizer, _tiny_vision(), problems=problems, supervised_tokens=target
    )
    assert len(matched) == 6 and abs(matched.supervised_tokens - target) <= TOKEN_MATCH * target
    again = stage_data(
        "stage2_text", 0, 6, tokenizer, _tiny_vision(), problems=problems, supervised_tokens=target
    )
    assert [ids for ids, _, _ in again.items] == [ids for ids, _, _ in matched.items]  # deterministic

    def item(tokens: int) -> tuple[list[int], list[int], None]:
        return [1] * (tokens + 2), [IGNORE, IGNORE] + [1] * tokens, None

    pool = ChatImages([item(n) for n in (40, 10, 12, 90, 11)])
    assert token_matched(pool, 3, 33).supervised_tokens == 33  # the three nearest 11 tokens, in draw order
    assert [len(ids) for ids, _, _ in token_matched(pool, 3, 33).items] == [12, 14, 13]
    with pytest.raises(ValueError, match="cannot match the VL stage's 300 within 5%"):
        token_matched(pool, 3, 300)
    with pytest.raises(ValueError, match="the pool has 5"):
        token_matched(pool, 6, 60)


@pytest.mark.parametrize(
    ("answer", "echoes"),
    [
        ("I can see a red square in the top left. That makes one shape, so the answer is 1.", True),
        ("The top right holds a blue circle.", True),
        ("There are two shapes in the image.", True),
        ("This is a picture of three shapes on a two by two grid.", True),
        ("Red.", True),
        ("  four ", True),
        ("Paris is the capital of France.", False),
        ("I think the answer is yes, and the color is red.", False),
        ("Redwood trees are tall.", False),
        ("", False),
    ],
)
def test_template_echo_finds_stage2_replies_only(answer: str, echoes: bool) -> None:
    from experiments.vl_testbed.replies import echo_rate, echoes_template

    assert echoes_template(answer) is echoes
    assert echo_rate([answer, "Paris."]) == (0.5 if echoes else 0.0)


def test_every_stage2_reply_format_echoes() -> None:
    from experiments.vl_testbed.replies import TURNS, echoes_template
    from experiments.vl_testbed.scenes import make_scene

    rng = np.random.default_rng(0)
    for _ in range(20):
        scene = make_scene(rng, 32)
        for turn in TURNS.values():
            assert echoes_template(turn(scene, rng)[1])


def test_frequent_answers_are_each_runs_repeated_top_answer() -> None:
    from experiments.vl_testbed.outcomes import frequent_answers

    runs = [["a", "b", "a"], ["c", "d"], ["a", "a", "e", "e", "e"], []]
    assert frequent_answers(runs) == ["a", "e"]  # "c" is given once; each answer listed once


def test_arms_freeze_what_they_say() -> None:
    sink, shape = TINY_SINK_HEADS, TINY_SHAPE
    assert arm_heads("none", 0, sink, shape, 2) == [] == arm_heads("frozen_lm", 0, sink, shape, 2)
    assert arm_heads("sink", 0, sink, shape, 2) == sink
    assert len(arm_heads("all_qk", 0, sink, shape, 2)) == 16
    assert arm_heads("random", 0, sink, shape, 2) == matched_random_heads(sink, bands=2, seed=0, **shape)
    assert not ARMS["frozen_lm"].lm_trains and all(
        ARMS[a].lm_trains for a in ("none", "sink", "random", "all_qk")
    )


def test_nll_is_the_teacher_forced_loss_and_its_continue_form_ignores_stopping() -> None:
    import torch

    from experiments.vl_testbed.outcomes import ReferenceAnswers, answer_nll, generate, stop_token_ids

    class _StopBiased(torch.nn.Module):
        """A causal LM whose stop token's logit is raised by ``bias`` at every position."""

        def __init__(self, model: torch.nn.Module, stop: int, bias: float) -> None:
            super().__init__()
            self.model, self.stop, self.bias = model, stop, bias
            self.generation_config = model.generation_config

        def forward(self, **inputs: torch.Tensor) -> object:
            out = self.model(**inputs)
            out.logits[..., self.stop] += self.bias
            return out

    tokenizer, model = tiny_tokenizer(), tiny_causal_lm("llama")
    prompts = [d["prompt"] for d in TINY_DOCS]
    generated = generate(model, tokenizer, prompts, 6, 2)
    assert (
        generated.texts == generate(model, tokenizer, prompts, 6, 3).texts
    )  # batching does not change answers
    stops = stop_token_ids(model, tokenizer)
    answers = [(5, 9, 11, stops[0]), (7, 8), (3,)]
    reference = ReferenceAnswers(tuple(prompts), tuple(answers), (True, False, False))
    nll, nll_continue = answer_nll(model, tokenizer, reference, batch_size=2)
    from experiments.vl_testbed.outcomes import chat_prompt_ids

    for i, answer in enumerate(answers):
        prompt = chat_prompt_ids(tokenizer, prompts[i])
        with torch.no_grad():
            logits = model(torch.tensor([prompt + list(answer)])).logits[0, len(prompt) - 1 : -1]
        log_probs = torch.log_softmax(logits, -1)
        expected = -log_probs[torch.arange(len(answer)), torch.tensor(answer)].mean()
        assert nll[i] == pytest.approx(float(expected), abs=1e-5)
    biased = _StopBiased(model, stops[0], 6.0)
    nll_b, continue_b = answer_nll(biased, tokenizer, reference, batch_size=2)
    assert all(b > a + 0.5 for a, b in zip(nll[1:], nll_b[1:], strict=True))  # stopping early costs NLL
    assert continue_b == pytest.approx(nll_continue, abs=1e-4)  # ... but not its continue form


def test_trivial_answers_fail_every_non_trivial_prompt() -> None:
    from experiments.vl_testbed.outcomes import non_trivial_prompts, trivial_scores

    chosen = non_trivial_prompts(TINY_DOCS)
    assert chosen == [0, 2]  # "Red." has no comma, so it passes the second prompt
    scores = trivial_scores(TINY_DOCS)
    assert scores["Red."]["prompt_strict"] == pytest.approx(1 / 3) and scores[""]["prompt_strict"] == 0.0


@pytest.mark.parametrize(
    ("mean", "ci", "margin", "protection", "separated", "moved", "expected"),
    [
        (2.0, (1.0, 3.0), 1.5, True, True, True, "yes"),  # excludes zero, the mean reaches the margin
        (-2.0, (-3.0, -1.0), 1.5, True, True, True, "reverse"),
        (0.0, (0.0, 0.0), 1.5, True, True, True, "no"),  # every difference zero: inside any margin
        (0.1, (0.05, 0.15), 1.5, True, True, True, "no"),  # a tiny consistent effect, inside the margin
        (
            1.0,
            (0.2, 1.8),
            1.5,
            True,
            True,
            True,
            "cannot tell",
        ),  # excludes zero below the margin, bound beyond it
        (1.6, (0.2, 3.0), 1.5, True, True, True, "yes"),  # ... the mean at the margin
        (0.1, (-0.5, 0.8), 1.5, True, True, True, "no"),  # mixed signs, narrow
        (0.5, (-1.0, 2.5), 1.5, True, True, True, "cannot tell"),  # mixed signs, wide
        (2.0, (1.0, 3.0), 1.5, True, True, False, "not posed"),  # the sink did not move
        (0.0, (0.0, 0.0), 1.5, True, True, False, "not posed"),
        (2.0, (1.0, 3.0), 1.5, True, False, True, "cannot tell"),  # the positive control did not separate
        (0.0, (0.0, 0.0), None, True, True, True, "cannot tell"),  # no margin fixed
        (2.0, (1.0, 3.0), 1.5, False, None, None, "yes"),  # a damage question needs neither gate
        (0.0, (0.0, 0.0), 1.5, False, None, None, "no"),
        (2.0, (float("nan"), float("nan")), 1.5, False, None, None, "cannot tell"),
    ],
)
def test_verdict_rules(mean, ci, margin, protection, separated, moved, expected) -> None:
    judged = verdict(
        mean,
        ci,
        margin,
        yes_sign=1,
        protection=protection,
        positive_control_separated=separated,
        sink_moved=moved,
    )
    assert judged == expected
    mirrored = verdict(
        -mean,
        (-ci[1], -ci[0]),
        margin,
        yes_sign=-1,
        protection=protection,
        positive_control_separated=separated,
        sink_moved=moved,
    )
    assert mirrored == expected  # the rules do not depend on which way "yes" points
    assert verdict(mean, ci, margin, yes_sign=0, protection=protection, sink_moved=moved) == "descriptive"


@pytest.mark.parametrize(
    ("shifts", "moved"),
    [
        ([0.4, 0.5, 0.33], True),
        ([-0.4, -0.9], True),
        ([0.4, -0.4], False),  # two signs
        ([0.4, 0.2], False),  # one seed inside the noise
        ([0.08, 0.1, 0.05], False),  # the first committed experiment's regime
        ([], False),
    ],
)
def test_sink_moved_needs_every_seed_beyond_the_noise_with_one_sign(shifts, moved) -> None:
    assert sink_moved(shifts) is moved


@pytest.mark.slow  # the whole tiny VL testbed, trained twice (the testbed_run fixture)
def test_pipeline_records_every_run_and_resumes(testbed_run) -> None:
    results, logged = testbed_run
    data = Results.model_validate_json(results.read_text())
    rerun = logged[logged.index("-- rerun --") + 1 :]
    assert len(rerun) == 1 and rerun[0].endswith("state.json: 12 runs on file")  # the rerun trained nothing
    assert data.machine.resumed_at_load == [[0.5, 0.4, 0.3]]  # the resumption and its load are recorded
    assert [software["cpu"] for software in data.machine.software] == ["tiny CPU"] * 2  # and its software
    runs = {(r.key.data, r.key.dose, r.key.arm, r.key.seed): r for r in data.runs}
    assert len(runs) == 12 and {seed.seed for seed in data.seeds} == {0, 1}
    for (_, _, arm, _), run in runs.items():
        assert run.extraction.passed and run.frozen.rows_unchanged
        assert run.text.ifeval.prompts == 3 and run.text.non_trivial_prompts == 2 and len(run.trace) == 3
        assert run.trace[0].sink_strength == pytest.approx(data.base.sink.sink_strength, abs=1e-4)
        assert run.frozen.lm_trained == (arm != "frozen_lm")
    for seed in (0, 1):
        sink, random = runs["vl", "high", "sink", seed], runs["vl", "high", "random", seed]
        assert sink.heads == TINY_SINK_HEADS and sink.frozen.weights == random.frozen.weights > 0
        frozen = runs["vl", "high", "frozen_lm", seed]
        # The LM kept the base weights; only the added image token's row (one in the tiny vocabulary of a few hundred)
        # takes a share of the softmax.
        assert frozen.text.nll == pytest.approx(data.base.text.nll, abs=1e-2)
        assert frozen.sink.sink_strength == pytest.approx(data.base.sink.sink_strength, abs=1e-3)
        assert runs["text", "high", "none", seed].stage2.supervised_tokens > 0
    comparisons = data.analysis.comparisons
    assert list(comparisons) == [
        "damage", "text_damage", "vl_vs_text", "dose_low", "positive_control", "protect_sink", "protect_random",
        "sink_vs_random",
    ]  # fmt: skip
    shifts = [
        runs["vl", "high", "none", seed].sink.sink_strength - data.base.sink.sink_strength for seed in (0, 1)
    ]
    assert data.analysis.sink_shifts == pytest.approx(shifts, abs=1e-5)
    assert data.analysis.sink_moved is sink_moved(shifts)
    for name in ("protect_sink", "protect_random", "sink_vs_random"):  # posed only where the sink moved
        judged = {e.verdict for e in comparisons[name].effects.values()} - {"descriptive"}
        assert ("not posed" in judged) is (not data.analysis.sink_moved) and len(judged) >= 1
    assert {e.verdict for e in comparisons["damage"].effects.values()} - {"descriptive"} <= {
        "yes", "reverse", "no", "cannot tell"
    }  # fmt: skip
    subset = data.ifeval_subset
    assert subset.trivial_answers == ["", "Red.", "1", "4", "{}", "I"] and set(subset.non_trivial) <= {
        0,
        1,
        2,
    }
    assert subset.base_passes_non_trivial == sum(
        data.base.text.ifeval.strict_by_prompt[i] for i in subset.non_trivial
    )
    assert (
        comparisons["protect_sink"].effects["nll"].undetectable == "too_few_seeds"
    )  # two seeds detect nothing
    kept = results.parent.parent / "work" / "seed0" / "vl-high-none"
    assert (kept / "vlm" / "config.json").is_file() and (kept / "lm" / "provenance.json").is_file()
    assert not (results.parent.parent / "work" / "seed1" / "vl-high-sink").exists()


@pytest.mark.slow  # trains the tiny testbed
def test_a_report_of_an_interrupted_run_runs_nothing_and_says_which_seeds_ran(tmp_path: Path) -> None:
    from tiny_testbed import run_tiny_testbed

    with pytest.raises(ValueError, match="holds no finished run to report"):
        run_tiny_testbed(tmp_path, print, report_only=True)
    logged: list[str] = []
    run_tiny_testbed(tmp_path, logged.append, seeds=(0,), plan=tiny_testbed_config().plan[:1])
    results = run_tiny_testbed(tmp_path, logged.append, report_only=True)  # the whole plan, two seeds
    data = Results.model_validate_json(results.read_text())
    assert len(data.runs) == 4 and data.analysis.groups["vl/high/none"].seeds == [0]
    assert data.machine.resumed_at_load == []  # a report is not a resumption


def test_a_file_from_before_the_text_matched_group_reads_and_a_matched_flag_is_refused() -> None:
    from pydantic import ValidationError

    from experiments.vl_testbed.schema import TestbedConfig

    config = tiny_testbed_config().model_dump(mode="json")
    old = TestbedConfig.model_validate(
        {**config, "match_text_tokens": False}
    )  # its text runs were not matched
    assert old == TestbedConfig.model_validate(config)
    with pytest.raises(ValidationError, match="the text_matched run group now"):
        TestbedConfig.model_validate({**config, "match_text_tokens": True})


@pytest.mark.slow  # trains the tiny testbed three times
def test_lost_shared_stages_are_made_again_beside_the_first_record(tmp_path: Path) -> None:
    from tiny_testbed import run_tiny_testbed

    from experiments.vl_testbed.schema import RunGroup
    from experiments.vl_testbed.train import TOKEN_MATCH

    def run(*groups: tuple[str, str], log: Callable[[str], object] = print) -> Results:
        plan = tuple(RunGroup(data=data, dose=dose, arms=("none",)) for data, dose in groups)
        made = run_tiny_testbed(tmp_path, log, seeds=(0,), plan=plan, problems=problems)
        return Results.model_validate_json(made.read_text())

    # solutions of 9 to 14 sentences, near the VL chats' replies in tokens, so that four of them can match
    problems = [
        {
            "question": f"What is {a} plus {a}?",
            "answer": f"{a} plus {a} is {2 * a}. " * (9 + a % 6) + f"\n#### {2 * a}",
        }
        for a in range(1, 41)
    ]

    first = run(("vl", "high"))
    stage1 = tmp_path / "work" / "seed0" / "stage1.pt"
    stage1.unlink()  # the weights are lost; the record stays
    logged: list[str] = []
    data = run(("vl", "high"), ("text_matched", "high"), log=logged.append)
    (record,) = data.seeds
    assert record.stage1 == first.seeds[0].stage1  # the record the first run started from is kept
    (remade,) = record.remade
    assert remade.first_run == "text_matched/high/none/seed0" and remade.reproduced
    assert any(line.endswith("seed 0: stages 0 and 1 made again, reproduced") for line in logged)
    runs = {run.key.data: run for run in data.runs}
    vl, text = runs["vl"].stage2.supervised_tokens, runs["text_matched"].stage2.supervised_tokens
    assert abs(text - vl) <= TOKEN_MATCH * vl
    assert "vl_vs_text_matched" in data.analysis.comparisons
    # a remaking that does not reproduce the first is recorded as such
    state = tmp_path / "work" / "state.json"
    changed = json.loads(state.read_text())
    changed["seeds"][0]["stage1"]["loss"][0] += 1.0
    state.write_text(json.dumps(changed))
    stage1.unlink()
    data = run(("vl", "high"), ("text_matched", "high"), ("vl", "low"))
    assert [stages.reproduced for stages in data.seeds[0].remade] == [True, False]
    assert data.seeds[0].remade[1].first_run == "vl/low/none/seed0"
    # a state file that cannot be read is one line naming it, and it is left as it was
    from experiments.page_fragment import SourceInvalid

    state.write_text('{"seeds": [', encoding="utf-8")
    with pytest.raises(SourceInvalid) as raised:
        run(("vl", "high"))
    assert str(state) in str(raised.value) and "another --workdir" in str(raised.value)
    assert "\n" not in str(raised.value) and state.read_text(encoding="utf-8") == '{"seeds": ['


@pytest.mark.slow  # the whole tiny VL testbed, trained twice (the testbed_run fixture)
def test_the_page_reads_the_results_and_draws_every_run(testbed_run) -> None:
    results, _ = testbed_run
    page = read_testbed(results, "vl_testbed.json")
    assert page.arms == ["none", "sink", "random", "frozen_lm"]
    sentence = page.sentence("protect_sink")
    said = (
        "Not posed (the sink did not move)"
        if not page.data.analysis.sink_moved
        else "This design cannot tell"
    )
    assert sentence.startswith(f"Does freezing the sink heads protect? {said} on the NLL")
    assert "; margin ±0.050" in sentence  # the NLL's margin, stated beside the verdict
    assert "of 2 seeds" in sentence and "\n" not in sentence
    charts = {Path(plot.path).name: plot.chart for plot in page.charts().values()}
    assert set(charts) == {Path(path).name for path in PLOT_PATHS.values()}
    assert "seed 0: no protection" in charts["testbed-nll-per-seed.svg"].alt
    assert "text-only training, no protection" in charts["testbed-answer-lengths.svg"].alt
    for chart in charts.values():
        assert chart.svg().startswith("<svg")
    from experiments.vl_testbed.page import page_files

    text = page_files(results)["training.md"]  # each session's software, the libraries it recorded
    assert "CPU and libraries: 2026-12-01 00:00 UTC, tiny CPU, torch 2.13.0; " in text


@pytest.mark.slow  # the whole tiny VL testbed, trained twice (the testbed_run fixture)
def test_a_malformed_or_unfinished_results_file_is_one_line(tmp_path: Path, testbed_run) -> None:
    def refused(change) -> str:
        return refusal(
            read_testbed, testbed_run[0], change, tmp_path / TESTBED_FILE, "results/vl_testbed.json"
        )

    assert refused(lambda data: data["runs"][0].pop("text")).startswith(
        "results/vl_testbed.json: runs.0.text: "
    )
    assert "analysis: missing" in refused(lambda data: data.update(analysis=None))


def test_visual_accuracy_is_tested_against_chance() -> None:
    from experiments.vl_testbed.schema import VisualKind

    assert analysis.above_chance(VisualKind(accuracy=0.5, n=96, chance=0.28)) < 0.001
    assert analysis.above_chance(VisualKind(accuracy=0.28, n=96, chance=0.28)) > 0.4


def test_the_recorded_command_carries_no_path_of_the_machine() -> None:
    from experiments.vl_testbed import run as driver

    argv = ["--workdir", "/scratch/testbed", "--seeds", "0", "1", "--machine-note", "it's quiet"]
    assert driver.recorded_command(argv, data_dir=True) == (
        "SINKBENCH_DATA_DIR=DIR python -m experiments.vl_testbed.run --workdir PATH --seeds 0 1 --machine-note 'it'\"'\"'s quiet'"
    )
    assert driver.recorded_command(["--out", "results.json"], data_dir=False) == (
        "python -m experiments.vl_testbed.run --out results.json"
    )


def test_groups_keep_only_the_named_run_groups_and_refuse_unknown_ones() -> None:
    from experiments.vl_testbed import run as driver

    (group,) = driver._only_groups(driver.FULL, ["vl/high"])
    assert (group.data, group.dose, group.arms) == ("vl", "high", ("none", "frozen_lm", "sink", "random"))
    kept = driver._only_groups(driver.FULL, ["text/high", "vl/low"])
    assert [(g.data, g.dose) for g in kept] == [
        ("vl", "low"),
        ("text", "high"),
    ]  # plan order, not argument order
    with pytest.raises(
        SystemExit, match=r"--groups vl/huge: the plan's groups are vl/high, vl/low, text/high"
    ):
        driver._only_groups(driver.FULL, ["vl/huge"])


def test_the_presets_say_what_the_page_and_readme_say() -> None:
    from experiments.vl_testbed import run as driver

    full, pilot, gpu = driver.FULL, driver.PILOT, driver.GPU
    assert full.compare_dose == "high" and full.doses["low"].lr < full.doses["high"].lr
    assert len(full.seeds) >= 8 and not set(pilot.seeds) & set(full.seeds)  # the pilot never reuses a seed
    planned = {(k.data, k.dose, k.arm) for k in full.runs()}
    assert {("vl", "high", arm) for arm in ("none", "frozen_lm", "sink", "random")} <= planned
    assert ("vl", "low", "none") in planned and ("text", "high", "none") in planned
    assert full.runs()[0].seed == full.seeds[0] and full.runs()[-1].seed == full.seeds[-1]  # seed by seed
    assert gpu.device == "cuda" and gpu.ifeval_rule == "all" and gpu.max_new_tokens == 1280
    gpu_planned = {(k.data, k.dose, k.arm) for k in gpu.runs()}
    assert len(gpu.seeds) >= 6 and {("vl", "high", "frozen_lm"), ("vl", "high", "all_qk")} <= gpu_planned
    assert ("text_matched", "high", "none") in gpu_planned and ("text", "high", "none") not in gpu_planned
    assert ("text_matched", "high", "none") in planned  # added to the CPU recipe after its first 36 runs
    assert len(gpu.runs()) == 36
    assert (
        gpu.doses["high"].lr == full.doses["high"].lr and gpu.doses["high"].steps > full.doses["high"].steps
    )
    assert set(driver.PRESETS) == {"full", "pilot", "quick", "gpu"}


@pytest.mark.parametrize(
    ("preset", "groups"), [("gpu", None), ("full", ["text_matched/high"]), ("full", ["vl/high"])]
)
def test_gsm8k_problems_are_loaded_for_every_plan_with_text_only_runs(
    preset: str, groups: list[str] | None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The GPU preset and ``--groups text_matched/high`` train text-only chats (token-matched ones) too."""
    from experiments.vl_testbed import run as driver

    config = driver.PRESETS[preset]
    if groups:
        config = config.model_copy(update={"plan": driver._only_groups(config, groups)})
    where = {"files": [{"file": "gsm8k_train.jsonl", "sha256": "0" * 64}]}
    loaded = {"train": [{"question": "1 + 1?", "answer": "#### 2"}]}
    monkeypatch.setattr(driver, "load_task_data", lambda source: (loaded, where))
    problems, source = driver.gsm8k_problems(config)
    text_only = any(group.data != "vl" for group in config.plan)
    assert (problems, source is not None) == ((loaded["train"], True) if text_only else ([], False))
    assert text_only == (groups != ["vl/high"])
