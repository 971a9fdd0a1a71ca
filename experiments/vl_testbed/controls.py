"""The testbed's arms (:data:`ARMS`): what each protects in stage 2; the random control matched to the sink heads.

The positive control freezes the whole LM in stage 2: its VLM-LM keeps the base weights, so an outcome on which it
does not separate from no protection cannot see a protection. The random control differs from the sink arm in which
heads only: :func:`matched_random_heads` draws, in every band of depth, as many key/value heads as the sink heads
occupy there (none shared with a sink head) and as many query heads inside them, so that ``protect_sink_heads``
freezes as many weights in each band. Its generator is seeded from the run seed and :data:`CONTROL_STREAM`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

#: Stream number of the control's generator (``numpy.random.default_rng([seed, CONTROL_STREAM])``).
CONTROL_STREAM = 7


def band_of(layer: int, num_layers: int, bands: int) -> int:
    """The band (0 .. bands - 1) of ``layer`` when ``num_layers`` layers are cut into ``bands`` equal parts."""
    return layer * bands // num_layers


def matched_random_heads(
    sink: Sequence[Sequence[int]],
    *,
    num_layers: int,
    num_heads: int,
    num_kv_heads: int,
    bands: int,
    seed: int,
) -> list[list[int]]:
    """Random ``[layer, head]`` pairs matched to ``sink`` per band in query heads and key/value heads.

    Raises:
        ValueError: a band has fewer key/value heads free of sink heads than the sink heads occupy there
            (choose fewer bands).
    """
    group = num_heads // num_kv_heads
    sink_units = {(layer, head // group) for layer, head in sink}
    rng = np.random.default_rng([seed, CONTROL_STREAM])
    chosen: list[list[int]] = []
    for band in range(bands):
        queries = [(layer, head) for layer, head in sink if band_of(layer, num_layers, bands) == band]
        units = {(layer, head // group) for layer, head in queries}
        if not queries:
            continue
        free = [
            (layer, unit)
            for layer in range(num_layers)
            if band_of(layer, num_layers, bands) == band
            for unit in range(num_kv_heads)
            if (layer, unit) not in sink_units
        ]
        if len(free) < len(units):
            raise ValueError(
                f"Band {band} of {bands}: the sink heads use {len(units)} key/value heads but only {len(free)} "
                "are free of sink heads; match over fewer, wider bands."
            )
        picked = [free[i] for i in rng.choice(len(free), size=len(units), replace=False)]
        heads = [[layer, unit * group + int(rng.integers(group))] for layer, unit in picked]
        spare = [
            [layer, unit * group + offset]
            for layer, unit in picked
            for offset in range(group)
            if [layer, unit * group + offset] not in heads
        ]
        extra = len(queries) - len(heads)
        heads += [spare[i] for i in rng.choice(len(spare), size=extra, replace=False)] if extra else []
        chosen += heads
    return sorted(chosen)


def frozen_units(heads: Sequence[Sequence[int]], num_heads: int, num_kv_heads: int) -> dict[str, int]:
    """Counts that the matching must equal: query heads and (layer, key/value head) pairs."""
    group = num_heads // num_kv_heads
    return {"query_heads": len(heads), "kv_heads": len({(layer, head // group) for layer, head in heads})}


@dataclass(frozen=True)
class ArmSpec:
    """One arm: how the page names it, whose query/key rows it freezes (``none``, ``sink``: the top sink heads,
    ``random``: matched to them, or ``all``), and whether the LM trains (not in the positive control)."""

    label: str
    heads: str
    lm_trains: bool = True


ARMS = {
    "none": ArmSpec("no protection", "none"),
    "sink": ArmSpec("freeze the top sink heads", "sink"),
    "random": ArmSpec("freeze matched random heads", "random"),
    "all_qk": ArmSpec("freeze every head's query/key rows", "all"),
    "frozen_lm": ArmSpec("positive control: the LM frozen in stage 2", "none", lm_trains=False),
}


def arm_heads(
    arm: str, seed: int, sink: Sequence[Sequence[int]], shape: dict[str, int], bands: int
) -> list[list[int]]:
    """The ``[layer, head]`` pairs whose query/key rows ``arm`` freezes in ``seed`` (``shape``: num_layers,
    num_heads, num_kv_heads)."""
    kind = ARMS[arm].heads
    if kind == "none":
        return []
    if kind == "sink":
        return [list(head) for head in sink]
    if kind == "all":
        return [[layer, head] for layer in range(shape["num_layers"]) for head in range(shape["num_heads"])]
    return matched_random_heads(sink, bands=bands, seed=seed, **shape)
