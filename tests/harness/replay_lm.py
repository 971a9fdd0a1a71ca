"""The replay backend of test_backends.py: an lm-eval backend without a torch model that answers as a recorded run
did (a module of its own, so that collecting the tests does not import lm-eval)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, ClassVar

from lm_eval.api.model import LM


class ReplayLM(LM):
    """An lm-eval backend without a torch model that answers as a recorded run did.

    Args:
        pretrained: the model folder; only its tokenizer is loaded (for the chat template), as vLLM's wrapper does.
        replay: an lm-eval output folder written with ``--log_samples``.
        kwargs: further model arguments (e.g. ``tensor_parallel_size``) and lm-eval's batch and device settings.
    """

    generated: ClassVar[int] = 0  # generate_until requests served, over all instances

    def __init__(self, pretrained: str, replay: str, **kwargs: Any) -> None:
        from transformers import AutoTokenizer

        super().__init__()
        self.tokenizer = AutoTokenizer.from_pretrained(pretrained)
        self.answers = {
            _key(list(arguments.values())): sample["resps"][index][0]
            for path in Path(replay).rglob("samples_*.jsonl")
            for sample in map(json.loads, path.read_text(encoding="utf-8").splitlines())
            # arguments: {"gen_args_<i>": {"arg_<j>": ...}}, responses: [[...]] by <i>
            for index, arguments in enumerate(sample["arguments"].values())
        }

    def _answer(self, request: Any) -> Any:
        key = _key(request.args)
        if key not in self.answers:
            raise KeyError(f"the recorded run never saw this request: {key[:200]}")
        return self.answers[key]

    def generate_until(self, requests: list[Any]) -> list[str]:
        """The recorded continuation of each prompt."""
        ReplayLM.generated += len(requests)
        return [self._answer(request) for request in requests]

    def loglikelihood(self, requests: list[Any]) -> list[tuple[float, bool]]:
        """The recorded log-likelihood and greedy flag of each continuation (the samples file holds them as text)."""
        answers = [self._answer(request) for request in requests]
        return [(float(logprob), greedy == "True") for logprob, greedy in answers]

    def loglikelihood_rolling(self, requests: list[Any]) -> list[float]:
        """Not used by these tasks."""
        raise NotImplementedError

    def apply_chat_template(
        self, chat_history: list[dict[str, str]], add_generation_prompt: bool = True
    ) -> str:
        """The tokenizer's chat template, applied as lm-eval's ``hf`` and ``vllm`` wrappers apply it."""
        return self.tokenizer.apply_chat_template(
            chat_history,
            tokenize=False,
            add_generation_prompt=add_generation_prompt,
            continue_final_message=not add_generation_prompt,
        )

    def chat_template(self, chat_template: bool | str = False) -> str | None:
        """The template recorded in the results file."""
        return self.tokenizer.chat_template if chat_template else None

    @property
    def tokenizer_name(self) -> str:
        """Names the request cache."""
        return "replay"


def _key(arguments: Any) -> str:
    """A request's arguments as the samples file stores them (JSON), so live and recorded requests compare."""
    return json.dumps(list(arguments), sort_keys=True)
