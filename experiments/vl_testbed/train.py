"""The LLaVA training stages of the testbed, run by ``transformers.Trainer`` (stage 0, the encoder's pretraining,
by :func:`pretrain_encoder`).

Stage 1 (alignment) freezes the language model while the vision encoder and projector learn to caption scenes;
stage 2 (instruction tuning, where text skills erode in the paper) trains every weight on chats, with warmup and a
cosine decay. The loss covers the assistant turns only. A stage's examples come from ``(seed, stage)`` and its data
order from ``seed``, so every arm of one seed sees the same batches in the same order.
"""

from __future__ import annotations

import tempfile
import time
from collections.abc import Sequence
from typing import Any

import numpy as np
import torch

from experiments.vl_testbed.replies import ReplyMix, vl_conversation
from experiments.vl_testbed.scenes import CELLS, COLOURS, NUMBERS, SHAPES, caption_conversation, make_scene
from experiments.vl_testbed.schema import StageRecord
from experiments.vl_testbed.specs import StageSpec, VisionSpec
from experiments.vl_testbed.text_chats import problem_turns, text_conversations
from experiments.vl_testbed.vlm import IGNORE, encode, pixel_values

#: Stream numbers that keep the two stages' scenes (and the held-out ones) apart for one seed.
STAGE_STREAMS = {"stage0": 0, "stage1": 1, "stage2": 2, "stage2_text": 3}


Item = tuple[list[int], list[int], "np.ndarray | None"]


class ChatImages(torch.utils.data.Dataset):
    """Encoded chats: token ids, assistant-only labels and the chat's image (None for a text-only chat)."""

    def __init__(self, items: Sequence[Item]) -> None:
        self.items = list(items)

    def __len__(self) -> int:
        return len(self.items)

    def __getitem__(self, index: int) -> Item:
        return self.items[index]

    @property
    def supervised_tokens(self) -> int:
        """Tokens that enter the loss, over every chat."""
        return sum(sum(label != IGNORE for label in labels) for _, labels, _ in self.items)


def stage_data(
    stage: str,
    seed: int,
    count: int,
    tokenizer: Any,
    vision: VisionSpec,
    *,
    replies: ReplyMix | None = None,
    problems: Sequence[dict[str, str]] = (),
    text_share: float = 0.0,
    supervised_tokens: int | None = None,
) -> ChatImages:
    """``count`` chats of ``stage`` from ``seed``: ``stage1`` captions of scenes; ``stage2`` chats about scenes in
    the formats of ``replies``, a ``text_share`` of them (drawn per chat) replaced by text-only chats from
    ``problems``; ``stage2_text`` text-only chats (the text-only control), matched to ``supervised_tokens`` (the VL
    stage's) when given (:func:`token_matched`).

    Raises:
        ValueError: text chats are asked for without ``problems``, or cannot be matched in tokens.
    """
    rng = np.random.default_rng([seed, STAGE_STREAMS[stage]])
    if stage != "stage1" and (stage == "stage2_text" or text_share > 0) and not problems:
        raise ValueError(f"{stage} with text-only chats needs GSM8K problems; none were given")
    if stage == "stage2_text":
        drawn = count if supervised_tokens is None else min(len(problems), MATCH_POOL * count)
        chats = text_conversations(problems, drawn, 1, rng)
        pool = ChatImages([(*encode(tokenizer, chat, vision.image_tokens), None) for chat in chats])
        return pool if supervised_tokens is None else token_matched(pool, count, supervised_tokens)
    items: list[Item] = []
    text_rng = np.random.default_rng([seed, STAGE_STREAMS["stage2_text"]])
    for _ in range(count):
        scene = make_scene(rng, vision.image_size)
        if stage == "stage1":
            chat = caption_conversation(scene)
        elif text_share > 0 and rng.random() < text_share:
            chat = problem_turns(problems[int(text_rng.integers(len(problems)))])
            items.append((*encode(tokenizer, chat, vision.image_tokens), None))
            continue
        else:
            chat = vl_conversation(scene, rng, replies or ReplyMix())
        items.append((*encode(tokenizer, chat, vision.image_tokens), scene.image))
    return ChatImages(items)


#: The text-only control's supervised tokens must lie within this share of the VL stage's.
TOKEN_MATCH = 0.05
#: Candidate text chats drawn per chat kept, when matching tokens.
MATCH_POOL = 4


def token_matched(pool: ChatImages, count: int, target: int) -> ChatImages:
    """``count`` chats of ``pool`` whose supervised tokens sum to within :data:`TOKEN_MATCH` of ``target``: the
    chats whose own count is nearest ``target / count`` (ties: the earlier drawn), kept in draw order. GSM8K's
    solutions run longer than the VL replies, so this keeps the problems with shorter than typical solutions.

    Raises:
        ValueError: the pool is smaller than ``count``, or the chosen chats miss the target by more than
            :data:`TOKEN_MATCH`.
    """
    if len(pool) < count:
        raise ValueError(
            f"{count} text chats are needed to match the VL stage's tokens; the pool has {len(pool)}"
        )
    per_chat = target / count
    tokens = [sum(label != IGNORE for label in labels) for _, labels, _ in pool.items]
    nearest = sorted(range(len(pool)), key=lambda i: (abs(tokens[i] - per_chat), i))[:count]
    chosen = ChatImages([pool.items[i] for i in sorted(nearest)])
    if abs(chosen.supervised_tokens - target) > TOKEN_MATCH * target:
        raise ValueError(
            f"text chats of {chosen.supervised_tokens} supervised tokens cannot match the VL stage's {target} within "
            f"{TOKEN_MATCH:.0%}; give more GSM8K problems"
        )
    return chosen


def collate(pad_id: int):
    """A collator that right-pads a batch of :class:`ChatImages` items (images, if any, in batch order)."""

    def collate_batch(batch: Sequence[Item]) -> dict[str, torch.Tensor]:
        width = max(len(ids) for ids, _, _ in batch)
        ids = [ids + [pad_id] * (width - len(ids)) for ids, _, _ in batch]
        labels = [labels + [IGNORE] * (width - len(labels)) for _, labels, _ in batch]
        mask = [[1] * len(item[0]) + [0] * (width - len(item[0])) for item in batch]
        images = [image for _, _, image in batch if image is not None]
        return {
            "input_ids": torch.tensor(ids),
            "attention_mask": torch.tensor(mask),
            "labels": torch.tensor(labels),
            **({"pixel_values": pixel_values(images)} if images else {}),
        }

    return collate_batch


def set_language_model_trainable(vlm: torch.nn.Module, trainable: bool) -> None:
    """Freeze or unfreeze the language model (decoder and LM head); the vision side always trains."""
    for module in (vlm.model.language_model, vlm.lm_head):
        for parameter in module.parameters():
            parameter.requires_grad_(trainable)


def train_stage(
    vlm: torch.nn.Module,
    tokenizer: Any,
    data: ChatImages,
    spec: StageSpec,
    seed: int,
    callbacks: Sequence[Any] = (),
    device: str = "cpu",
) -> StageRecord:
    """Train ``vlm`` in place for one stage on ``device`` (``cpu`` or a CUDA device the model is on).
    ``callbacks`` are built from the trainer (``lambda trainer: ...``)."""
    from transformers import PrinterCallback, Trainer, TrainingArguments

    set_language_model_trainable(vlm, spec.train_lm)
    with tempfile.TemporaryDirectory() as scratch:
        args = TrainingArguments(
            output_dir=scratch,
            max_steps=spec.steps,
            per_device_train_batch_size=spec.batch_size,
            learning_rate=spec.lr,
            lr_scheduler_type="cosine",
            warmup_steps=round(spec.warmup * spec.steps),
            weight_decay=0.0,
            max_grad_norm=1.0,
            logging_steps=1,
            save_strategy="no",
            report_to=[],
            seed=seed,
            data_seed=seed,
            use_cpu=device == "cpu",
            disable_tqdm=True,
            remove_unused_columns=False,
            dataloader_num_workers=0,
            bf16=spec.bf16,
        )
        trainer = Trainer(
            model=vlm,
            args=args,
            train_dataset=data,
            data_collator=collate(tokenizer.pad_token_id),
            processing_class=tokenizer,
        )
        trainer.remove_callback(PrinterCallback)  # the caller reads the log history; no line per step
        for make in callbacks:
            trainer.add_callback(make(trainer))
        started = time.perf_counter()
        trainer.train()
        seconds = time.perf_counter() - started
    set_language_model_trainable(vlm, True)
    history = trainer.state.log_history
    return StageRecord(
        loss=[round(h["loss"], 5) for h in history if "loss" in h],
        lr=[h["learning_rate"] for h in history if "loss" in h],
        seconds=round(seconds, 1),
        supervised_tokens=data.supervised_tokens,
    )


def _scene_targets(scenes: Sequence[Any]) -> torch.Tensor:
    """``(N, 9)`` class targets: the count, then per cell its colour and its shape (the last class: empty)."""
    colours, kinds = list(COLOURS), list(SHAPES)
    rows = []
    for scene in scenes:
        cells = [scene.shape_in(cell) for cell in range(len(CELLS))]
        colour = [colours.index(shape.colour) if shape else len(colours) for shape in cells]
        kind = [kinds.index(shape.kind) if shape else len(kinds) for shape in cells]
        rows.append([len(scene.shapes) - 1, *colour, *kind])
    return torch.tensor(rows)


def pretrain_encoder(
    vlm: torch.nn.Module, vision: VisionSpec, seed: int, steps: int, batch_size: int = 64, lr: float = 2e-3
) -> dict[str, Any]:
    """Stage 0: train the vision encoder alone to classify scenes, standing in for CLIP pretraining (no pretrained
    encoder is reachable offline). Linear heads (dropped afterwards) read the patch features the projector will
    read: the count from their mean, each cell's colour and shape from the patches inside it. Returns the loss per
    step, the last step's training accuracy and the wall time.

    Raises:
        ValueError: the patch grid cannot be cut into the scenes' 2 x 2 cells (an odd number of patches a side).
    """
    grid = vision.image_size // vision.patch_size
    if grid % 2:
        raise ValueError(f"{grid} x {grid} patches cannot be cut into 2 x 2 cells; choose an even grid.")
    encoder = vlm.model.vision_tower
    device = next(encoder.parameters()).device
    count_head = torch.nn.Linear(vision.hidden_size, len(NUMBERS)).to(device)
    cell_head = torch.nn.Linear(vision.hidden_size, len(COLOURS) + 1 + len(SHAPES) + 1).to(device)
    parameters = [*encoder.parameters(), *count_head.parameters(), *cell_head.parameters()]
    optimizer = torch.optim.AdamW(parameters, lr=lr, weight_decay=0.0)
    rng = np.random.default_rng([seed, STAGE_STREAMS["stage0"]])
    losses, started = [], time.perf_counter()
    encoder.train()
    for _ in range(steps):
        scenes = [make_scene(rng, vision.image_size) for _ in range(batch_size)]
        targets = _scene_targets(scenes).to(device)
        images = pixel_values([s.image for s in scenes]).to(device)
        hidden = encoder(images, output_hidden_states=True).hidden_states[-1]
        patches = hidden[:, 1:].reshape(batch_size, grid, grid, -1)
        half = grid // 2
        cells = torch.stack(
            [
                patches[:, r * half : (r + 1) * half, c * half : (c + 1) * half].mean((1, 2))
                for r in (0, 1)
                for c in (0, 1)
            ],
            dim=1,
        )
        colour, shape = cell_head(cells).split([len(COLOURS) + 1, len(SHAPES) + 1], dim=-1)
        logits = [count_head(patches.mean((1, 2))), *colour.unbind(1), *shape.unbind(1)]
        loss = sum(torch.nn.functional.cross_entropy(z, targets[:, i]) for i, z in enumerate(logits))
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(round(loss.item(), 5))
    hits = torch.stack([z.argmax(1) == targets[:, i] for i, z in enumerate(logits)], dim=1)
    seconds = round(time.perf_counter() - started, 1)
    return {"loss": losses, "train_accuracy": float(hits.float().mean()), "seconds": seconds}


def vision_state(vlm: torch.nn.Module) -> dict[str, torch.Tensor]:
    """The weights stage 1 trains: the vision encoder and the projector (copies)."""
    return {
        name: tensor.detach().clone()
        for name, tensor in vlm.state_dict().items()
        if name.startswith(("model.vision_tower.", "model.multi_modal_projector."))
    }
