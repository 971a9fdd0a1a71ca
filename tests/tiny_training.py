"""A CPU Trainer over the tiny corpus, for tests of what runs during training."""

from __future__ import annotations

import torch
from tiny_models import CORPUS, tiny_tokenizer
from transformers import Trainer, TrainingArguments


class TokenDataset(torch.utils.data.Dataset):
    """The tiny corpus, tokenised, cut to 10 tokens and repeated: enough for a few Trainer steps."""

    def __init__(self, tokenizer, repeats: int = 8) -> None:
        self.ids = [torch.tensor(tokenizer(text).input_ids[:10]) for text in CORPUS * repeats]

    def __len__(self) -> int:
        return len(self.ids)

    def __getitem__(self, index: int) -> dict:
        return {"input_ids": self.ids[index], "labels": self.ids[index].clone()}


def make_trainer(model, tmp_path, steps: int = 6, **extra) -> Trainer:
    """A CPU Trainer with per-step loss logging and no reporting integrations."""
    args = TrainingArguments(
        output_dir=str(tmp_path),
        max_steps=steps,
        per_device_train_batch_size=2,
        learning_rate=1e-2,
        logging_steps=1,
        save_strategy="no",
        report_to=[],
        seed=0,
        use_cpu=True,
        disable_tqdm=True,
        **extra,
    )
    return Trainer(model=model, args=args, train_dataset=TokenDataset(tiny_tokenizer()))
