"""What the ``sink_strength`` task adds to lm-eval at run time: its request type, the check that the backend
can be probed, and its standard error.

lm-eval serves each request with ``getattr(lm, request.request_type)(requests)``. The task
installs ``sink_strength`` on ``lm_eval.api.model.LM`` so any wrapper answers; wrappers that
hold a local transformers model (``hf``, sharded or not with ``parallelize=True``) are probed in place,
without loading weights again. Every other backend (vLLM, SGLang, API models) keeps its weights out of
reach, and tensor parallelism (``tp_plan``) gives each process a slice of the heads: the run stops with one
line (:class:`BackendUnsupported`) right after lm-eval has built the tasks, before any request of any task
runs (:func:`install_backend_check`), so a long generation task listed beside ``sink_strength`` is not lost.

lm-eval computes a metric's ``_stderr`` only for aggregations it knows (mean, median, ...). S is a median
pooled over observations, so its standard error must resample whole prompts: :func:`install_stderr` lets an
aggregation function carry its own estimator (attribute ``sinkbench_stderr``), called with lm-eval's
``--bootstrap_iters``; every other aggregation keeps lm-eval's own.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import lm_eval.evaluator
import lm_eval.evaluator_utils
import torch
from lm_eval.api.model import LM, CachingLM

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


class BackendUnsupported(SystemExit):
    """The lm-eval backend cannot be probed. A ``SystemExit``, so ``lm_eval`` and ``sinkbench eval`` end with
    the one-line message (prefixed ``sinkbench:``) and exit status 1, without a traceback."""

    def __init__(self, message: str) -> None:
        super().__init__(f"sinkbench: {message}")


def install_request_handler() -> None:
    """Make every lm-eval model wrapper answer ``sink_strength`` requests. Idempotent."""
    if getattr(LM, REQUEST_TYPE, None) is not serve_sink_strength:
        setattr(LM, REQUEST_TYPE, serve_sink_strength)


def probed_model(lm: Any) -> tuple[torch.nn.Module, Any]:
    """The local transformers model and tokenizer of an lm-eval wrapper, which the probe runs on.

    Raises:
        BackendUnsupported: the wrapper holds no local transformers model (vLLM, SGLang, API backends), or its
            weights are split by tensor parallelism.
    """
    model, tokenizer = getattr(lm, "model", None), getattr(lm, "tokenizer", None)
    if not isinstance(model, torch.nn.Module) or tokenizer is None:
        backend = type(lm.lm if isinstance(lm, CachingLM) else lm).__name__
        raise BackendUnsupported(
            f"{REQUEST_TYPE} reads the attention inside the model, and the {backend} backend keeps "
            f"no local transformers model to read it from (vLLM, SGLang and API backends cannot be probed); "
            f"{_INSTEAD}"
        )
    if getattr(model, "tp_size", None) or _has_dtensor(model):
        raise BackendUnsupported(
            f"{REQUEST_TYPE} reads the attention of every head, and tensor parallelism (tp_plan) leaves each "
            f"process a slice of the heads; {_INSTEAD}"
        )
    return model, tokenizer


def _has_dtensor(model: torch.nn.Module) -> bool:
    from torch.distributed.tensor import DTensor

    return any(isinstance(parameter, DTensor) for parameter in model.parameters())


def serve_sink_strength(lm: LM, requests: list[Any]) -> list[PromptObservations]:
    """Probe the wrapper's model on the requested prompts, in request order.

    Raises:
        BackendUnsupported: the backend cannot be probed (:func:`probed_model`).
    """
    model, tokenizer = probed_model(lm)
    options = {repr(sorted(request.args[1].items())) for request in requests}
    if len(options) > 1:
        raise ValueError("sink_strength requests in one run must share one set of probe options.")
    prompts = [request.args[0] for request in requests]
    return observe(model, tokenizer, prompts, ProbeOptions.from_mapping(requests[0].args[1]), progress=True)


def _tasks_in(task_dict: Any) -> Iterator[Any]:
    """Every task object of lm-eval's task dictionary (``{"tasks": ...}`` or the older nested form)."""
    for value in task_dict.values() if isinstance(task_dict, dict) else ():
        if isinstance(value, dict):
            yield from _tasks_in(value)
        else:
            yield value


def install_backend_check() -> None:
    """Make ``lm_eval.evaluator.evaluate`` refuse a backend that cannot be probed before it runs any request,
    when the run holds ``sink_strength``. Idempotent."""
    original = lm_eval.evaluator.evaluate
    if getattr(original, "sinkbench", False):
        return

    @functools.wraps(original)
    def evaluate(*args: Any, **kwargs: Any) -> Any:
        lm = kwargs["lm"] if "lm" in kwargs else args[0]
        task_dict = kwargs["task_dict"] if "task_dict" in kwargs else args[1]
        if any(getattr(task, "OUTPUT_TYPE", None) == REQUEST_TYPE for task in _tasks_in(task_dict)):
            probed_model(lm)
        return original(*args, **kwargs)

    evaluate.sinkbench = True
    lm_eval.evaluator.evaluate = evaluate


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
