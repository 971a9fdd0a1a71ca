"""lm-eval task ``sink_strength``: the task class and the hooks named after the YAML keys they serve.

One document per calibration prompt. Each emits a ``sink_strength`` request, served by
:func:`sinkbench.harness.request.serve_sink_strength` on the model lm-eval already loaded (a backend that
holds no local transformers model stops the run with one line before any request runs); the
per-prompt observations are pooled by the aggregation hooks, so S is the median over *all*
observations, not a mean of per-prompt medians. ``sink_strength_stderr`` is the bootstrap standard
error over prompts (:mod:`sinkbench.sink.uncertainty`) with lm-eval's ``--bootstrap_iters`` resamples.
Metric names and thresholds: :mod:`sinkbench.sink.metrics`.
"""

from __future__ import annotations

from typing import Any

import datasets
from lm_eval.api.instance import Instance
from lm_eval.api.task import ConfigurableTask

from sinkbench import __version__
from sinkbench.harness.request import (
    REQUEST_TYPE,
    install_backend_check,
    install_request_handler,
    install_stderr,
)
from sinkbench.sink.metrics import SINK_METRICS
from sinkbench.sink.options import ProbeOptions
from sinkbench.sink.prompts import load_calibration
from sinkbench.sink.strength import (
    PromptObservations,
    pooled_g,
    position0_mass,
    share_above,
    sink_rate,
    sink_strength,
)
from sinkbench.sink.uncertainty import sink_strength_stderr


class SinkStrengthTask(ConfigurableTask):
    """A ConfigurableTask whose requests are probe passes instead of generations.

    The results file records every effective probe option (``metadata.probe``) and the calibration set with
    its content hash (``metadata.calibration``).
    """

    def __init__(self, config: dict[str, Any] | None = None) -> None:
        config = {key: value for key, value in (config or {}).items() if key != "class"}
        # Built as a log-likelihood task so that lm-eval does not ask for generation settings; the requests it
        # sends are of this task's own type.
        super().__init__(config={**config, "output_type": "loglikelihood"})
        self.OUTPUT_TYPE = self.config.output_type = REQUEST_TYPE
        metadata = dict(self.config.metadata or {})
        self.probe_options = ProbeOptions.from_mapping(metadata.get("probe"))
        metadata["probe"] = self.probe_options.to_dict()
        metadata["calibration"] = self.calibration.to_dict()
        metadata["sinkbench_version"] = __version__
        self.config.metadata = metadata
        install_request_handler()
        install_backend_check()
        install_stderr()

    def download(self, dataset_kwargs: dict[str, Any] | None = None, **kwargs: Any) -> None:
        """The calibration prompts named by ``metadata.calibration`` (a packaged set or a file)."""
        spec = (self.config.metadata or {}).get("calibration")
        self.calibration = load_calibration(spec.get("set") if isinstance(spec, dict) else spec)
        rows = [{"id": i, "prompt": prompt} for i, prompt in enumerate(self.calibration.prompts)]
        self.dataset = {"test": datasets.Dataset.from_list(rows)}

    def construct_requests(self, doc: dict, ctx: Any, **kwargs: Any) -> Instance:
        """One probe request per prompt; lm-eval's chat templating of ``ctx`` is not used."""
        return Instance(
            request_type=REQUEST_TYPE,
            doc=doc,
            arguments=(doc["prompt"], self.probe_options.to_dict()),
            idx=0,
            metadata=kwargs.get("metadata", (None, None, None)),
        )


def process_results(doc: dict, results: list[PromptObservations]) -> dict[str, PromptObservations]:
    """Every metric receives the prompt's observations; aggregation pools them."""
    return dict.fromkeys((metric.name for metric in SINK_METRICS), results[0])


def aggregate_sink_strength(items: list[PromptObservations]) -> float:
    """S: median of G pooled over every observation of every prompt."""
    return sink_strength(pooled_g(items))


def _stderr_over_prompts(items: list[PromptObservations], resamples: int) -> float:
    """Bootstrap standard error of S over prompts (lm-eval's ``--bootstrap_iters`` resamples, seed 0)."""
    return sink_strength_stderr(items, resamples=resamples)


aggregate_sink_strength.sinkbench_stderr = _stderr_over_prompts  # read by sinkbench.harness.request


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
