"""The testbed's numeric precision on the machine at hand.

The recipe trains in bfloat16 mixed precision and evaluates in bfloat16, as LLaVA does. A CPU without fast bfloat16
(no AVX512-BF16 or AMX) runs it tens of times slower than float32: :func:`check_precision` measures that before a
run and refuses a bfloat16 recipe there unless chosen; :func:`with_precision` gives the float32 recipe instead (a
different recipe, with results of its own).
"""

from __future__ import annotations

import dataclasses
import time

from experiments.vl_testbed.schema import TestbedConfig
from sinkbench.errors import UserError

#: The precisions a run can take: the recipe's bfloat16 (mixed-precision training, bfloat16 evaluation), or
#: float32 throughout.
PRECISIONS = ("bfloat16", "float32")
#: A CPU whose bfloat16 matmul takes more than this many times its float32 matmul has no fast bfloat16.
SLOW_FACTOR = 4.0


def precision_of(config: TestbedConfig) -> str:
    """``bfloat16`` when any stage trains or the evaluation runs in bfloat16, else ``float32``."""
    stages = [config.stage1, *config.doses.values()]
    return "bfloat16" if config.eval_dtype == "bfloat16" or any(s.bf16 for s in stages) else "float32"


def with_precision(config: TestbedConfig, precision: str) -> TestbedConfig:
    """``config`` with every stage and the evaluation in ``precision`` (one of :data:`PRECISIONS`)."""
    if precision not in PRECISIONS:
        raise ValueError(f"precision {precision!r} is not one of {', '.join(PRECISIONS)}")
    bf16 = precision == "bfloat16"
    return config.model_copy(
        update={
            "stage1": dataclasses.replace(config.stage1, bf16=bf16),
            "doses": {name: dataclasses.replace(spec, bf16=bf16) for name, spec in config.doses.items()},
            "eval_dtype": precision,
        }
    )


def bfloat16_slowdown(size: int = 256, repeats: int = 5) -> float:
    """How many times longer a ``size`` x ``size`` matmul takes in bfloat16 than in float32 on this CPU: the
    fastest of ``repeats`` timings of each, after one warm-up (the fastest, because other work on the machine can
    only slow a timing down, and a slowed float32 timing would hide the difference)."""
    import torch

    generator = torch.Generator().manual_seed(0)
    left, right = torch.randn(size, size, generator=generator), torch.randn(size, size, generator=generator)

    def seconds(dtype: torch.dtype) -> float:
        a, b = left.to(dtype), right.to(dtype)
        a @ b
        timings = []
        for _ in range(repeats):
            started = time.perf_counter()
            a @ b
            timings.append(time.perf_counter() - started)
        return min(timings)

    return seconds(torch.bfloat16) / max(seconds(torch.float32), 1e-9)


def check_precision(config: TestbedConfig, *, chosen: bool, fix: str | None = None) -> None:
    """Refuse a bfloat16 recipe on a CPU without fast bfloat16, unless the user chose bfloat16 (``chosen``).

    Raises:
        UserError: the measured slowdown, and ``fix`` (default: the testbed's ``--precision float32``).
    """
    if chosen or config.device != "cpu" or precision_of(config) != "bfloat16":
        return
    slowdown = bfloat16_slowdown()
    if slowdown > SLOW_FACTOR:
        raise UserError(
            f"this CPU runs a bfloat16 matmul {slowdown:.0f}x slower than float32 (no AVX512-BF16 or AMX), so the "
            "recipe's bfloat16 training and evaluation would take hours.",
            fix
            or "pass --precision float32 (its own results file; it does not resume or compare with bfloat16 "
            "runs), --precision bfloat16 to run it anyway, or run on a GPU",
        )
