"""The testbed's text outcomes of one causal LM, chosen so that a loss of any length shows.

An almost empty answer passes IFEval's negative constraints ("no commas"), so a strict score alone cannot tell lost
instruction following from one-word answers. :func:`measure_text` reports strict and loose IFEval, also on the
**non-trivial** prompts that every one of :data:`TRIVIAL_ANSWERS` fails (a collapsed answer scores 0 there), answer
lengths and whether each answer stopped before the cap, and per prompt the **teacher-forced NLL** of the base
model's own greedy answers (:class:`ReferenceAnswers`): ``nll`` per answer token (the end-of-turn token included
when the answer ended), and ``nll_continue``, which leaves the decision to stop out (each non-final token scored as
``-log p(t) + log(1 - p(stop))``), so a model that only learned to stop early is not penalised by it.
Answers are greedy, generated in ``generate_dtype`` (bfloat16 by default); the NLL is computed in float32.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from experiments.vl_testbed.ifeval_short import grade
from experiments.vl_testbed.schema import TextRecord

#: The trivial answers of the non-trivial subset: empty, one word, a digit (IFEval's language check passes a digit),
#: an empty JSON object, and "I" (an all-caps word). At report time each run's own most frequent answer joins them
#: (:func:`frequent_answers`).
TRIVIAL_ANSWERS = ("", "Red.", "1", "4", "{}", "I")


def non_trivial_prompts(
    docs: Sequence[dict[str, Any]], answers: Sequence[str] = TRIVIAL_ANSWERS
) -> list[int]:
    """Indices of the ``docs`` that every one of ``answers`` fails (prompt-level strict)."""
    from sinkbench.tasks.ifeval_strict.utils import process_results

    return [
        index
        for index, doc in enumerate(docs)
        if not any(process_results(doc, [answer])["prompt_level_strict_acc"] for answer in answers)
    ]


def trivial_scores(
    docs: Sequence[dict[str, Any]], answers: Sequence[str] = TRIVIAL_ANSWERS
) -> dict[str, dict[str, float]]:
    """What each trivial answer, given to every prompt, scores on the strict outcomes (prompt-level strict on all
    prompts, and instruction-level strict)."""
    graded = {answer: grade(docs, [answer] * len(docs), [0] * len(docs)) for answer in answers}
    return {
        answer: {"prompt_strict": g.prompt_strict, "inst_strict": g.inst_strict}
        for answer, g in graded.items()
    }


def frequent_answers(answer_lists: Iterable[Sequence[str]]) -> list[str]:
    """Each list's most frequent answer where it is given more than once, in order, each once: the answers a
    collapsed model gives to everything, which the non-trivial subset must also fail."""
    found: dict[str, None] = {}
    for answers in answer_lists:
        common = Counter(answers).most_common(1)
        if common and common[0][1] > 1:
            found.setdefault(common[0][0], None)
    return list(found)


def stop_token_ids(model: Any, tokenizer: Any) -> list[int]:
    """The token ids that end an answer: the tokenizer's end of sequence and the generation config's."""
    ids = {tokenizer.eos_token_id}
    configured = getattr(getattr(model, "generation_config", None), "eos_token_id", None)
    ids |= set(configured) if isinstance(configured, (list, tuple)) else {configured}
    return sorted(i for i in ids if i is not None)


def chat_prompt_ids(tokenizer: Any, prompt: str) -> list[int]:
    """The chat-templated user turn and the assistant header, as token ids."""
    text = tokenizer.apply_chat_template(
        [{"role": "user", "content": prompt}], tokenize=False, add_generation_prompt=True
    )
    return tokenizer(text, add_special_tokens=False).input_ids


@dataclass(frozen=True)
class Generated:
    """Greedy answers: their text, token ids (with the stop token when they stopped) and whether they stopped."""

    texts: tuple[str, ...]
    token_ids: tuple[tuple[int, ...], ...]
    stopped: tuple[bool, ...]

    @property
    def lengths(self) -> list[int]:
        """Answer lengths in tokens (the stop token counted)."""
        return [len(ids) for ids in self.token_ids]


def generate(
    model: Any, tokenizer: Any, prompts: Sequence[str], max_new_tokens: int, batch_size: int
) -> Generated:
    """Greedy chat-template answers to ``prompts``, left-padded in batches of similar length."""
    stops = set(stop_token_ids(model, tokenizer))
    tokenizer.padding_side = "left"
    model.eval()
    encoded_prompts = [chat_prompt_ids(tokenizer, p) for p in prompts]
    order = sorted(range(len(prompts)), key=lambda i: len(encoded_prompts[i]))
    texts, ids_out, stopped = [""] * len(prompts), [()] * len(prompts), [False] * len(prompts)
    device = next(model.parameters()).device
    for start in range(0, len(order), batch_size):
        batch = order[start : start + batch_size]
        width = max(len(encoded_prompts[i]) for i in batch)
        pad = tokenizer.pad_token_id
        ids = torch.tensor([[pad] * (width - len(encoded_prompts[i])) + encoded_prompts[i] for i in batch])
        mask = torch.tensor(
            [[0] * (width - len(encoded_prompts[i])) + [1] * len(encoded_prompts[i]) for i in batch]
        )
        with torch.inference_mode():
            output = model.generate(
                input_ids=ids.to(device),
                attention_mask=mask.to(device),
                max_new_tokens=max_new_tokens,
                do_sample=False,
                pad_token_id=pad,
                eos_token_id=sorted(stops),
            )
        for row, index in enumerate(batch):
            new = output[row, width:].tolist()
            end = next((k for k, token in enumerate(new) if token in stops), None)
            kept = new if end is None else new[: end + 1]
            ids_out[index] = tuple(kept)
            stopped[index] = end is not None
            texts[index] = tokenizer.decode(kept, skip_special_tokens=True)
    return Generated(tuple(texts), tuple(ids_out), tuple(stopped))


@dataclass(frozen=True)
class ReferenceAnswers:
    """The base model's greedy answers, which every other model is scored on (teacher-forced)."""

    prompts: tuple[str, ...]
    token_ids: tuple[tuple[int, ...], ...]
    stopped: tuple[bool, ...]


def answer_nll(
    model: Any, tokenizer: Any, reference: ReferenceAnswers, batch_size: int = 16
) -> tuple[list[float], list[float]]:
    """Per prompt, ``nll`` and ``nll_continue`` of the reference answer under ``model`` (see the module docstring).

    An answer of no non-final tokens gives NaN for ``nll_continue``.
    """
    stops = stop_token_ids(model, tokenizer)
    device = next(model.parameters()).device
    rows = [chat_prompt_ids(tokenizer, p) for p in reference.prompts]
    nll, nll_continue = [], []
    model.eval()
    for start in range(0, len(rows), batch_size):
        batch = range(start, min(start + batch_size, len(rows)))
        sequences = [rows[i] + list(reference.token_ids[i]) for i in batch]
        width = max(map(len, sequences))
        pad = tokenizer.pad_token_id
        ids = torch.tensor([s + [pad] * (width - len(s)) for s in sequences], device=device)
        mask = torch.tensor([[1] * len(s) + [0] * (width - len(s)) for s in sequences], device=device)
        with torch.inference_mode():
            logits = model(input_ids=ids, attention_mask=mask).logits
        for row, i in enumerate(batch):
            answer = list(reference.token_ids[i])
            first = len(rows[i]) - 1  # the logit row that predicts the answer's first token
            scored = torch.log_softmax(logits[row, first : first + len(answer)].float(), dim=-1)
            token_lp = scored[torch.arange(len(answer)), torch.tensor(answer, device=device)]
            nll.append(float(-token_lp.mean()))
            final_is_stop = bool(reference.stopped[i])
            body = slice(0, len(answer) - 1 if final_is_stop else len(answer))
            stop_mass = scored[body][:, stops].exp().sum(-1).clamp(max=1 - 1e-7)
            kept = token_lp[body]
            nll_continue.append(
                float(-(kept - torch.log1p(-stop_mass)).mean()) if len(kept) else float("nan")
            )
    return nll, nll_continue


def measure_text(
    model: Any,
    tokenizer: Any,
    docs: Sequence[dict[str, Any]],
    non_trivial: Sequence[int],
    reference: ReferenceAnswers,
    *,
    max_new_tokens: int,
    batch_size: int,
    generate_dtype: torch.dtype = torch.bfloat16,
    generated: Generated | None = None,
) -> TextRecord:
    """Every text outcome of ``model``, given in float32 (the NLL's precision) and then cast to ``generate_dtype``
    for generation, and left so; ``generated`` reuses answers already generated the same way (the base model's)."""
    nll, nll_continue = answer_nll(model, tokenizer, reference)
    if generated is None:
        prompts = [d["prompt"] for d in docs]
        generated = generate(model.to(generate_dtype), tokenizer, prompts, max_new_tokens, batch_size)
    scores = grade(docs, generated.texts, generated.lengths)
    strict = np.array(scores.strict_by_prompt, dtype=float)
    return TextRecord(
        ifeval=scores,
        non_trivial_strict=float(strict[list(non_trivial)].mean()) if len(non_trivial) else float("nan"),
        non_trivial_prompts=len(non_trivial),
        nll_mean=float(np.nanmean(nll)),
        nll_continue_mean=float(np.nanmean(nll_continue)),
        nll=nll,
        nll_continue=nll_continue,
        answer_tokens_median=float(np.median(generated.lengths)),
        stopped_share=float(np.mean(generated.stopped)),
        stopped=[int(s) for s in generated.stopped],
        answers=list(generated.texts),
    )


def reference_answers(
    model: Any,
    tokenizer: Any,
    docs: Sequence[dict[str, Any]],
    *,
    max_new_tokens: int,
    batch_size: int,
    generate_dtype: torch.dtype = torch.bfloat16,
) -> tuple[ReferenceAnswers, Generated]:
    """The base model's greedy answers to ``docs``, generated as :func:`measure_text` generates (from a copy cast
    to ``generate_dtype``; ``model`` is left as it was)."""
    import copy

    prompts = [d["prompt"] for d in docs]
    generated = generate(
        copy.deepcopy(model).to(generate_dtype), tokenizer, prompts, max_new_tokens, batch_size
    )
    return ReferenceAnswers(tuple(prompts), generated.token_ids, generated.stopped), generated
