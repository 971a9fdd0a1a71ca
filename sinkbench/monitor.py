"""Sink Strength during training: measure S every N steps on the model being trained, without disturbing it.

:class:`SinkMonitor` measures S (with the share of G above the threshold, the position-0 mass and each probed
layer's median G) on the calibration prompts, for a VLM on its language model; :class:`SinkStrengthCallback` runs it
in ``transformers.Trainer`` and logs through ``Trainer.log`` (so every reporting integration gets the values).
A measurement leaves module modes, gradients, the attention implementation and every RNG (torch, CUDA, Python,
NumPy) as it found them. Under DDP the main process measures and the stop decision is broadcast; fully sharded
parameters (FSDP, ZeRO-3) and models the probe cannot measure (``ModelNotSupported``) are refused up front.
"""

from __future__ import annotations

import json
import logging
import random
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch
from transformers import TrainerCallback

from sinkbench.numbers import finite_or_none
from sinkbench.sink.layers import attention_layout
from sinkbench.sink.metrics import POSITION0_MASS, SHARE_G_ABOVE
from sinkbench.sink.observe import encode_prompts, observe_tokens
from sinkbench.sink.options import ProbeOptions
from sinkbench.sink.prompts import load_prompts
from sinkbench.sink.strength import SinkStrengthSummary, summarize

logger = logging.getLogger(__name__)

#: Prefix of every key the monitor logs; S itself is ``sink/strength``.
LOG_PREFIX = "sink/"
STRENGTH_KEY = f"{LOG_PREFIX}strength"


@dataclass(frozen=True)
class Measurement:
    """One measurement of S at optimizer ``step``: its summary, wall time, the thresholds it crossed (one sentence
    each) and whether it crossed ``stop_below``."""

    step: int
    summary: SinkStrengthSummary
    seconds: float
    alerts: list[str] = field(default_factory=list)
    stop: bool = False

    def logs(self) -> dict[str, float]:
        """The values logged through the Trainer: S, share of G above threshold, position-0 mass, layer medians."""
        logs = {
            STRENGTH_KEY: self.summary.sink_strength,
            f"{LOG_PREFIX}{SHARE_G_ABOVE.name}": self.summary.share_g_above,
            f"{LOG_PREFIX}{POSITION0_MASS.name}": self.summary.position0_mass,
        }
        for layer, value in zip(self.summary.layers, self.summary.layer_median_g, strict=True):
            logs[f"{LOG_PREFIX}median_g/layer_{layer}"] = value
        return logs

    def trace_record(self) -> dict[str, Any]:
        """One line of the trace file: step, the scalar metrics, the layer medians, time and alerts."""
        return {
            "step": self.step,
            **{name: finite_or_none(value) for name, value in self.summary.scalar_metrics().items()},
            "layers": self.summary.layers,
            "layer_median_g": [finite_or_none(v) for v in self.summary.layer_median_g],
            "seconds": round(self.seconds, 4),
            "alerts": self.alerts,
        }


@dataclass(frozen=True)
class Thresholds:
    """When the monitor warns (S below ``warn_below``, or more than ``max_drop`` below step 0's S) or warns and
    stops (S below ``stop_below``); in nats, None: never."""

    warn_below: float | None = None
    stop_below: float | None = None
    max_drop: float | None = None

    def check(self, strength: float, baseline: float) -> tuple[list[str], bool]:
        """The alerts that S = ``strength`` raises against ``baseline``, and whether training should stop."""
        alerts = []
        if self.warn_below is not None and strength < self.warn_below:
            alerts.append(f"S = {strength:+.3f} is below warn_below = {self.warn_below:+.3f}")
        stop = self.stop_below is not None and strength < self.stop_below
        if stop:
            alerts.append(f"S = {strength:+.3f} is below stop_below = {self.stop_below:+.3f}: stopping")
        if self.max_drop is not None and baseline - strength > self.max_drop:
            alerts.append(
                f"S = {strength:+.3f} has dropped {baseline - strength:.3f} below step 0 ({baseline:+.3f}), "
                f"more than max_drop = {self.max_drop:.3f}"
            )
        return alerts, stop


def check_not_sharded(model: torch.nn.Module) -> None:
    """Raise ValueError naming the sharding found (FSDP, DeepSpeed ZeRO-3): the probe needs whole weights."""
    from torch.distributed.tensor import DTensor

    fsdp = any(type(module).__name__ == "FullyShardedDataParallel" for module in model.modules())
    fsdp = fsdp or any(isinstance(parameter, DTensor) for parameter in model.parameters())
    zero3 = any(hasattr(parameter, "ds_id") for parameter in model.parameters())
    if fsdp or zero3:
        kind = "FSDP" if fsdp else "DeepSpeed ZeRO-3"
        raise ValueError(
            f"Sink Strength monitoring does not support fully sharded parameters ({kind}): the probe needs "
            "whole weights on the main process. Use DDP or ZeRO-1/2, or screen saved checkpoints with "
            "`sinkbench screen`."
        )


def _unwrap(model: torch.nn.Module) -> torch.nn.Module:
    """The module inside a DistributedDataParallel / DataParallel wrapper."""
    wrappers = (torch.nn.parallel.DistributedDataParallel, torch.nn.DataParallel)
    return model.module if isinstance(model, wrappers) else model


@contextmanager
def undisturbed(model: torch.nn.Module) -> Iterator[None]:
    """Put ``model`` in eval mode for the block, then restore every module's mode and every RNG state."""
    modes = [(module, module.training) for module in model.modules()]
    cuda = torch.cuda.get_rng_state_all() if torch.cuda.is_initialized() else None
    states = (torch.get_rng_state(), random.getstate(), np.random.get_state())
    model.eval()
    try:
        yield
    finally:
        for module, training in modes:
            module.training = training
        torch.set_rng_state(states[0])
        random.setstate(states[1])
        np.random.set_state(states[2])
        if cuda is not None:
            torch.cuda.set_rng_state_all(cuda)


def _distributed() -> bool:
    return torch.distributed.is_available() and torch.distributed.is_initialized()


def _agree(flag: bool) -> bool:
    """The main process's ``flag``, broadcast to every process (itself when not distributed)."""
    if not _distributed():
        return flag
    on_gpu = torch.distributed.get_backend() == "nccl"
    device = torch.device("cuda", torch.cuda.current_device()) if on_gpu else torch.device("cpu")
    value = torch.tensor([int(flag)], device=device)
    torch.distributed.broadcast(value, src=0)
    return bool(value.item())


class SinkMonitor:
    """Measure S on a model during training (any training loop)::

        monitor = SinkMonitor(model, tokenizer, thresholds=Thresholds(stop_below=0.2), trace_path="sink.jsonl")
        if step % 100 == 0 and monitor.measure(step) and monitor.should_stop:
            break

    Args:
        model: the model being trained (a causal LM, a VLM, or either inside DDP).
        tokenizer: its tokenizer (a processor's ``tokenizer`` is taken when it has one).
        prompts: calibration prompts (default: the 15 packaged ones).
        options: probe options (default: :class:`~sinkbench.sink.options.ProbeOptions`).
        thresholds: when to warn and stop.
        trace_path: a JSON Lines file that receives one line per measurement (appended).
    """

    def __init__(
        self,
        model: torch.nn.Module,
        tokenizer: Any,
        prompts: Sequence[str] | None = None,
        options: ProbeOptions | None = None,
        *,
        thresholds: Thresholds | None = None,
        trace_path: str | Path | None = None,
    ) -> None:
        self.model = _unwrap(model)
        check_not_sharded(self.model)
        self.options = options or ProbeOptions()
        self.thresholds = thresholds or Thresholds()
        self.trace_path = Path(trace_path) if trace_path is not None else None
        tokenizer = getattr(tokenizer, "tokenizer", tokenizer)
        self._tokens = encode_prompts(tokenizer, prompts or load_prompts(), self.options.chat_template)
        with undisturbed(self.model):
            # refuse a model the probe cannot measure now, not at the first measurement; its layout is kept
            self._layout = attention_layout(self.model, self._tokens[0])
        self.history: list[Measurement] = []
        self.should_stop = False

    def measure(self, step: int) -> Measurement | None:
        """Measure S at ``step`` (main process), warn, trace, and set :attr:`should_stop` on every process;
        returns the measurement on the main process, None on the others."""
        main = not _distributed() or torch.distributed.get_rank() == 0
        measurement = self._measure_here(step) if main else None
        self.should_stop = _agree(measurement is not None and measurement.stop) or self.should_stop
        return measurement

    def _measure_here(self, step: int) -> Measurement:
        started = time.perf_counter()
        with undisturbed(self.model):
            summary = summarize(observe_tokens(self.model, self._tokens, self.options, layout=self._layout))
        baseline = self.history[0].summary.sink_strength if self.history else summary.sink_strength
        alerts, stop = self.thresholds.check(summary.sink_strength, baseline)
        measurement = Measurement(step, summary, time.perf_counter() - started, alerts, stop)
        self.history.append(measurement)
        for alert in alerts:
            logger.warning("Sink Strength at step %d: %s.", step, alert)
        if self.trace_path is not None:
            self.trace_path.parent.mkdir(parents=True, exist_ok=True)
            with self.trace_path.open("a", encoding="utf-8") as handle:
                handle.write(json.dumps(measurement.trace_record()) + "\n")
        return measurement


class SinkStrengthCallback(TrainerCallback):
    """Measure S at step 0 and every ``every_n_steps`` steps of a ``transformers.Trainer`` run, logged through
    ``trainer.log`` (hence built with the trainer)::

        trainer.add_callback(SinkStrengthCallback(trainer, every_n_steps=100, stop_below=0.2))

    Args:
        trainer: the ``Trainer`` whose model is monitored and through which values are logged.
        every_n_steps: measure when ``global_step`` is a multiple of this (and at the start).
        prompts, options, trace_path: as :class:`SinkMonitor` takes them.
        tokenizer: default: the trainer's ``processing_class``.
        warn_below, stop_below, max_drop: the :class:`Thresholds` (nats); ``stop_below`` also stops training
            (``control.should_training_stop``).

    Raises:
        ValueError: ``every_n_steps`` < 1, no tokenizer, or the trainer shards parameters (FSDP, ZeRO-3).
    """

    def __init__(
        self,
        trainer: Any,
        *,
        every_n_steps: int = 100,
        prompts: Sequence[str] | None = None,
        options: ProbeOptions | None = None,
        tokenizer: Any = None,
        warn_below: float | None = None,
        stop_below: float | None = None,
        max_drop: float | None = None,
        trace_path: str | Path | None = None,
    ) -> None:
        if not isinstance(every_n_steps, int) or every_n_steps < 1:
            raise ValueError(f"every_n_steps must be a positive integer; got {every_n_steps!r}.")
        _check_trainer_not_sharded(trainer)
        tokenizer = tokenizer if tokenizer is not None else trainer.processing_class
        if tokenizer is None:
            raise ValueError(
                "SinkStrengthCallback needs a tokenizer: pass tokenizer=..., or give the Trainer a processing_class."
            )
        self.trainer = trainer
        self.every_n_steps = every_n_steps
        self.monitor = SinkMonitor(
            trainer.model,
            tokenizer,
            prompts,
            options,
            thresholds=Thresholds(warn_below, stop_below, max_drop),
            trace_path=trace_path,
        )

    def on_train_begin(self, args: Any, state: Any, control: Any, **kwargs: Any) -> Any:
        """Measure the starting point (step 0 of a fresh run)."""
        return self._measure(state, control)

    def on_step_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> Any:
        """Measure every ``every_n_steps`` optimizer steps."""
        if state.global_step % self.every_n_steps:
            return control
        return self._measure(state, control)

    def _measure(self, state: Any, control: Any) -> Any:
        measurement = self.monitor.measure(state.global_step)
        if measurement is not None:
            # Trainer.log clears should_log; the step's own loss log must still happen.
            should_log = control.should_log
            self.trainer.log(measurement.logs())
            control.should_log = should_log
        if self.monitor.should_stop:
            control.should_training_stop = True
        return control


def _check_trainer_not_sharded(trainer: Any) -> None:
    """Refuse a Trainer set up for FSDP or DeepSpeed ZeRO-3 (before its model is wrapped)."""
    from transformers.integrations.deepspeed import is_deepspeed_zero3_enabled

    if getattr(trainer, "is_fsdp_enabled", False) or (
        getattr(trainer, "is_deepspeed_enabled", False) and is_deepspeed_zero3_enabled()
    ):
        raise ValueError(
            "SinkStrengthCallback does not support FSDP or DeepSpeed ZeRO-3 (fully sharded parameters): "
            "use DDP or ZeRO-1/2, or screen saved checkpoints with `sinkbench screen`."
        )
