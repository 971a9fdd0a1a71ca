"""The ``sink_strength`` request type: every lm-eval model wrapper answers it by probing its own model.

lm-eval serves each request with ``getattr(lm, request.request_type)(requests)``. The task
installs ``sink_strength`` on ``lm_eval.api.model.LM`` so any wrapper answers; wrappers that
hold a local transformers model (``hf``) are probed in place, without loading weights again.
"""

from __future__ import annotations

from typing import Any

import torch
from lm_eval.api.model import LM

from sinkbench.sink.observe import observe
from sinkbench.sink.options import ProbeOptions
from sinkbench.sink.strength import PromptObservations

REQUEST_TYPE = "sink_strength"


def install_request_handler() -> None:
    """Make every lm-eval model wrapper answer ``sink_strength`` requests. Idempotent."""
    if getattr(LM, REQUEST_TYPE, None) is not serve_sink_strength:
        setattr(LM, REQUEST_TYPE, serve_sink_strength)


def serve_sink_strength(lm: LM, requests: list[Any]) -> list[PromptObservations]:
    """Probe the wrapper's model on the requested prompts, in request order.

    Raises:
        TypeError: the wrapper exposes no local transformers model (API or vLLM backends).
    """
    model = getattr(lm, "model", None)
    tokenizer = getattr(lm, "tokenizer", None)
    if not isinstance(model, torch.nn.Module) or tokenizer is None:
        raise TypeError(
            f"The sink_strength task probes attention inside a local transformers model, but the "
            f"{type(lm).__name__} backend exposes none (API and vLLM backends cannot be probed). "
            "Run it with --model hf."
        )
    options = {repr(sorted(request.args[1].items())) for request in requests}
    if len(options) > 1:
        raise ValueError("sink_strength requests in one run must share one set of probe options.")
    prompts = [request.args[0] for request in requests]
    return observe(model, tokenizer, prompts, ProbeOptions.from_mapping(requests[0].args[1]), progress=True)
