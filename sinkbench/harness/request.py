"""The ``sink_strength`` request type: probing the model of an lm-eval wrapper in place.

:func:`serve_sink_strength` is every wrapper's ``LM.sink_strength`` (:mod:`sinkbench.harness.plugin`, patch 2). A
local transformers model (``hf``, with ``parallelize=True`` or not) is probed in place; other backends (vLLM,
SGLang, API models) and tensor parallelism (each process holds a slice of the heads) are refused by
:func:`probed_model` before any request of any task runs (patch 3).
"""

from __future__ import annotations

from typing import Any

import torch
from lm_eval.api.model import LM, CachingLM

from sinkbench.errors import UserError
from sinkbench.sink.metrics import SINK_TASK
from sinkbench.sink.observe import observe
from sinkbench.sink.options import ProbeOptions
from sinkbench.sink.strength import PromptObservations

REQUEST_TYPE = SINK_TASK
#: What to run instead, named by every refusal.
_INSTEAD = (
    "run it with --model hf (add --model_args parallelize=True to shard a model over several GPUs), "
    "or screen the model with `sinkbench screen MODEL`"
)


class BackendUnsupported(UserError):
    """The lm-eval backend cannot be probed: the message says why, :attr:`fix` what to run instead."""


def probed_model(lm: Any) -> tuple[torch.nn.Module, Any]:
    """The local transformers model and tokenizer of an lm-eval wrapper, which the probe runs on; BackendUnsupported
    when it holds none (vLLM, SGLang, API backends) or its weights are split by tensor parallelism."""
    model, tokenizer = getattr(lm, "model", None), getattr(lm, "tokenizer", None)
    if not isinstance(model, torch.nn.Module) or tokenizer is None:
        backend = type(lm.lm if isinstance(lm, CachingLM) else lm).__name__
        raise BackendUnsupported(
            f"{REQUEST_TYPE} reads the attention inside the model, and the {backend} backend keeps "
            f"no local transformers model to read it from (vLLM, SGLang and API backends cannot be probed).",
            _INSTEAD,
        )
    from torch.distributed.tensor import DTensor

    if getattr(model, "tp_size", None) or any(isinstance(weight, DTensor) for weight in model.parameters()):
        raise BackendUnsupported(
            f"{REQUEST_TYPE} reads the attention of every head, and tensor parallelism (tp_plan) leaves each "
            f"process a slice of the heads.",
            _INSTEAD,
        )
    return model, tokenizer


def serve_sink_strength(lm: LM, requests: list[Any]) -> list[PromptObservations]:
    """Probe the wrapper's model on the requested prompts, in request order (:func:`probed_model` may refuse it)."""
    model, tokenizer = probed_model(lm)
    options = {repr(sorted(request.args[1].items())) for request in requests}
    if len(options) > 1:
        raise ValueError("sink_strength requests in one run must share one set of probe options.")
    prompts = [request.args[0] for request in requests]
    return observe(model, tokenizer, prompts, ProbeOptions.from_mapping(requests[0].args[1]), progress=True)
