"""lm-eval task ``sink_strength``: hooks named after the YAML keys they serve.

One document per calibration prompt. Each emits a ``sink_strength`` request, served by
:func:`sinkbench.harness.request.serve_sink_strength` on the model lm-eval already loaded; the
per-prompt observations are pooled by the aggregation hooks, so S is the median over *all*
observations, not a mean of per-prompt medians. Metric names and thresholds: :mod:`sinkbench.sink.metrics`.
"""

from __future__ import annotations

from typing import Any

import datasets
from lm_eval.api.instance import Instance
from lm_eval.api.task import ConfigurableTask

from sinkbench.harness.request import REQUEST_TYPE, install_request_handler
from sinkbench.sink.metrics import SINK_METRICS
from sinkbench.sink.options import ProbeOptions
from sinkbench.sink.prompts import load_prompts
from sinkbench.sink.strength import (
    PromptObservations,
    pooled_g,
    position0_mass,
    share_above,
    sink_rate,
    sink_strength,
)


class SinkStrengthTask(ConfigurableTask):
    """A ConfigurableTask whose requests are probe passes instead of generations."""

    def __init__(self, config: dict[str, Any] | None = None) -> None:
        config = {key: value for key, value in (config or {}).items() if key != "class"}
        super().__init__(config=config)
        metadata = self.config.metadata if self.config.metadata is not None else {}
        self.probe_options = ProbeOptions.from_mapping(metadata.get("probe"))
        metadata["probe"] = self.probe_options.to_dict()  # the results file records every effective option
        self.config.metadata = metadata
        install_request_handler()

    def construct_requests(self, doc: dict, ctx: Any, **kwargs: Any) -> Instance:
        """One probe request per prompt; lm-eval's chat templating of ``ctx`` is not used."""
        return Instance(
            request_type=REQUEST_TYPE,
            doc=doc,
            arguments=(doc["prompt"], self.probe_options.to_dict()),
            idx=0,
            metadata=kwargs.get("metadata", (None, None, None)),
        )


def calibration_dataset(calibration_file: str | None = None, **_: Any) -> dict[str, datasets.Dataset]:
    """The packaged 15 calibration prompts, or ``metadata.calibration_file``."""
    prompts = load_prompts(calibration_file)
    return {"test": datasets.Dataset.from_list([{"id": i, "prompt": p} for i, p in enumerate(prompts)])}


def process_results(doc: dict, results: list[PromptObservations]) -> dict[str, PromptObservations]:
    """Every metric receives the prompt's observations; aggregation pools them."""
    return dict.fromkeys((metric.name for metric in SINK_METRICS), results[0])


def aggregate_sink_strength(items: list[PromptObservations]) -> float:
    """S: median of G pooled over every observation of every prompt."""
    return sink_strength(pooled_g(items))


def aggregate_share_g_above(items: list[PromptObservations]) -> float:
    """Fraction of observations with G above the threshold."""
    return share_above(pooled_g(items))


def aggregate_position0_mass(items: list[PromptObservations]) -> float:
    """Paper C.3 probe: first-token attention over probed layers x heads x the last queries."""
    return position0_mass(items)


def aggregate_sink_rate(items: list[PromptObservations]) -> float:
    """Gu et al.'s Sink_1^eps over all layers."""
    return sink_rate(items)


def aggregate_observations(items: list[PromptObservations]) -> float:
    """Number of (prompt, layer, head, query) observations behind S."""
    return float(pooled_g(items).size)
