"""What the ``sink_strength`` task adds to lm-eval at run time: its request type and its standard error.

lm-eval serves each request with ``getattr(lm, request.request_type)(requests)``. The task
installs ``sink_strength`` on ``lm_eval.api.model.LM`` so any wrapper answers; wrappers that
hold a local transformers model (``hf``) are probed in place, without loading weights again.

lm-eval computes a metric's ``_stderr`` only for aggregations it knows (mean, median, ...). S is a median
pooled over observations, so its standard error must resample whole prompts: :func:`install_stderr` lets an
aggregation function carry its own estimator (attribute ``sinkbench_stderr``), called with lm-eval's
``--bootstrap_iters``; every other aggregation keeps lm-eval's own.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import lm_eval.evaluator_utils
import torch
from lm_eval.api.model import LM

from sinkbench.sink.metrics import SINK_TASK
from sinkbench.sink.observe import observe
from sinkbench.sink.options import ProbeOptions
from sinkbench.sink.strength import PromptObservations

REQUEST_TYPE = SINK_TASK


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


def install_stderr() -> None:
    """Let aggregations that carry ``sinkbench_stderr`` compute their own ``_stderr``. Idempotent."""
    original = lm_eval.evaluator_utils.stderr_for_metric
    if getattr(original, "sinkbench", False):
        return

    def stderr_for_metric(metric: Callable, bootstrap_iters: int) -> Callable[[Sequence], float] | None:
        own = getattr(metric, "sinkbench_stderr", None)
        if own is None:
            return original(metric=metric, bootstrap_iters=bootstrap_iters)
        return None if bootstrap_iters <= 0 else (lambda items: own(items, bootstrap_iters))

    stderr_for_metric.sinkbench = True
    lm_eval.evaluator_utils.stderr_for_metric = stderr_for_metric
