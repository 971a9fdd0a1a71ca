"""lm-eval task ``sink_strength``: the task class and the hooks named after the YAML keys they serve.

One document per calibration prompt, each a ``sink_strength`` request served on the model lm-eval loaded
(:func:`sinkbench.harness.request.serve_sink_strength`). The aggregation hooks pool the observations, so S is the
median over all of them; its ``_stderr`` is a bootstrap over prompts with lm-eval's ``--bootstrap_iters``.
``--limit`` does not apply (S of fewer prompts is another quantity; one warning says so). Metric names and
thresholds: :mod:`sinkbench.sink.metrics`.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from typing import Any

import datasets
from lm_eval.api.instance import Instance
from lm_eval.api.task import ConfigurableTask

from sinkbench import __version__
from sinkbench.harness.plugin import install_task_patches
from sinkbench.harness.request import REQUEST_TYPE
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

_log = logging.getLogger(__name__)


class SinkStrengthTask(ConfigurableTask):
    """A ConfigurableTask whose requests are probe passes, of the class's :attr:`OUTPUT_TYPE` (the config's
    ``output_type`` is left empty: it accepts only lm-eval's own). The results file records every effective probe
    option (``metadata.probe``) and the calibration set with its content hash (``metadata.calibration``)."""

    OUTPUT_TYPE = REQUEST_TYPE

    def __init__(self, config: dict[str, Any] | None = None) -> None:
        install_task_patches()
        config = {key: value for key, value in (config or {}).items() if key != "class"}
        super().__init__(config={**config, "output_type": None})
        metadata = dict(self.config.metadata or {})
        self.probe_options = ProbeOptions.from_mapping(metadata.get("probe"))
        metadata["probe"] = self.probe_options.to_dict()
        metadata["calibration"] = self.calibration.to_dict()
        metadata["sinkbench_version"] = __version__
        self.config.metadata = metadata

    def download(self, dataset_kwargs: dict[str, Any] | None = None, **kwargs: Any) -> None:
        """The calibration prompts named by ``metadata.calibration`` (a packaged set or a file)."""
        spec = (self.config.metadata or {}).get("calibration")
        self.calibration = load_calibration(spec.get("set") if isinstance(spec, dict) else spec)
        rows = [{"id": i, "prompt": prompt} for i, prompt in enumerate(self.calibration.prompts)]
        self.dataset = {"test": datasets.Dataset.from_list(rows)}

    def build_all_requests(self, *, limit: int | None = None, **kwargs: Any) -> None:
        """One request per calibration prompt, all of them whatever ``--limit`` says (with one warning if it is set)."""
        if limit is not None:
            _log.warning(
                "sinkbench: --limit %s does not apply to %s: S is measured on all %d prompts of calibration set %s "
                "(S of fewer prompts is another quantity)",
                limit,
                REQUEST_TYPE,
                len(self.calibration.prompts),
                self.calibration.name,
            )
        super().build_all_requests(limit=None, **kwargs)

    def doc_iterator(self, *, limit: int | None = None, **kwargs: Any) -> Iterator[tuple[int, Any]]:
        """Every calibration prompt (``limit`` does not apply; see :meth:`build_all_requests`)."""
        return super().doc_iterator(limit=None, **kwargs)

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
