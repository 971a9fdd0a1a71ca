"""The one declaration of Sink Strength's metrics: names, thresholds, direction and possible range.

The probe's summary, the ``sink_strength`` lm-eval task, the submission schema, the reports and the monitor
all import these; the task YAML's ``metric_list`` is checked against :data:`SINK_METRICS` by a test.
Torch-free, like :mod:`sinkbench.sink.options`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

#: The lm-eval task that measures S, and the filter name lm-eval appends to its metric keys.
SINK_TASK = "sink_strength"
FILTER = "none"
#: ``share_g_above_*``: the G above which an observation counts as a strong sink (a > 0.881).
G_THRESHOLD = 2.0
#: ``position0_mass``: the last queries of each prompt whose first-token attention is averaged (paper C.3).
LAST_QUERIES = 8
#: ``sink_rate_*``: Gu et al.'s epsilon, the mean first-token attention above which a head is a sink head.
SINK_RATE_THRESHOLD = 0.3


@dataclass(frozen=True)
class SinkMetric:
    """One metric of the ``sink_strength`` task: its ``name`` in lm-eval's results, a one-line ``description``,
    lm-eval's direction ``higher_is_better`` (None for a count, not a score), and its possible range ``low`` to
    ``high``."""

    name: str
    description: str
    higher_is_better: bool | None
    low: float
    high: float

    @property
    def results_key(self) -> str:
        """The key in an lm-eval results file, e.g. ``sink_strength,none``."""
        return f"{self.name},{FILTER}"

    @property
    def stderr_key(self) -> str:
        """The key of its standard error in an lm-eval results file, e.g. ``sink_strength_stderr,none``."""
        return f"{self.name}_stderr,{FILTER}"


SINK_STRENGTH = SinkMetric(
    "sink_strength", "S: median log-odds of attention on the sink key (nats)", True, -100.0, 100.0
)
SHARE_G_ABOVE = SinkMetric(
    f"share_g_above_{G_THRESHOLD:g}", f"share of observations with G > {G_THRESHOLD:g}", True, 0.0, 1.0
)
POSITION0_MASS = SinkMetric(
    "position0_mass",
    f"attention on the first token, probed layers x heads x last {LAST_QUERIES} queries",
    True,
    0.0,
    1.0,
)
SINK_RATE = SinkMetric(
    f"sink_rate_{SINK_RATE_THRESHOLD:g}",
    f"Gu et al.'s Sink_1: share of (prompt, layer, head), all layers, whose mean first-token attention over "
    f"the prompt's queries exceeds {SINK_RATE_THRESHOLD:g}",
    True,
    0.0,
    1.0,
)
OBSERVATIONS = SinkMetric(
    "observations", "number of (prompt, layer, head, query) observations behind S", None, 0.0, math.inf
)
#: Every metric of the task, in the order lm-eval reports them.
SINK_METRICS = (SINK_STRENGTH, SHARE_G_ABOVE, POSITION0_MASS, SINK_RATE, OBSERVATIONS)
#: The secondary scalars shown beside S.
SECONDARY_METRICS = (SHARE_G_ABOVE, POSITION0_MASS, SINK_RATE)
