"""What every intervention writes and records: standard transformers checkpoints, published atomically, with the
intervention's report beside the weights, and S of each model measured by the Sink Strength probe.

A checkpoint folder holds ``config.json``, safetensors weights, the tokenizer and chat template (so that
``from_pretrained``, ``lm_eval --model hf``, ``sinkbench screen`` and ``extract-lm``'s verification all load it),
and :data:`REPORT_FILE`. A folder of several checkpoints (a sweep, the single and joint ablations) holds one such
folder per setting and the sweep's report. Everything is built beside ``out`` and swapped in whole
(:func:`sinkbench.publish.publishing`), so a failure leaves ``out`` as it was.
"""

from __future__ import annotations

import contextlib
import json
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sinkbench.errors import UserError
from sinkbench.models import LoadedModel
from sinkbench.provenance import report_header
from sinkbench.publish import publishing, refuse_overlap
from sinkbench.sink.options import IntervalOptions, ProbeOptions

#: The report written inside each checkpoint folder (and at the top of a folder of checkpoints).
REPORT_FILE = "intervention.json"


def checkpoint_record(kind: str, inputs: dict[str, LoadedModel], **fields: Any) -> dict[str, Any]:
    """The report's common head: sinkbench's version and time, the intervention, and each input model's
    provenance (:class:`~sinkbench.models.ModelInfo`)."""
    return {
        **report_header(),
        "intervention": kind,
        "inputs": {role: loaded.info.to_dict() for role, loaded in inputs.items()},
        **fields,
    }


def save_checkpoint(loaded: LoadedModel, folder: Path, record: dict[str, Any]) -> None:
    """Save the model, its tokenizer and ``record`` (as :data:`REPORT_FILE`) into ``folder``."""
    folder.mkdir(parents=True, exist_ok=True)
    loaded.model.save_pretrained(folder)
    loaded.tokenizer.save_pretrained(folder)
    write_report(folder, record)


def write_report(folder: Path, record: dict[str, Any]) -> None:
    """Write ``record`` as strict JSON into ``folder`` / :data:`REPORT_FILE`."""
    (folder / REPORT_FILE).write_text(json.dumps(record, indent=2, allow_nan=False) + "\n")


def check_out(out: str | Path, overwrite: bool) -> Path:
    """``out`` as a path, refusing an existing one unless ``overwrite`` (called before any model loads).

    Raises:
        UserError: ``out`` exists and ``overwrite`` is false.
    """
    out = Path(out)
    if out.exists() and not overwrite:
        raise UserError(f"OUT {out} already exists; choose a new folder or pass --overwrite")
    return out


@contextlib.contextmanager
def publishing_checkpoints(
    out: str | Path, *, overwrite: bool, inputs: Sequence[LoadedModel] = ()
) -> Iterator[Path]:
    """Yield a staging folder that becomes ``out`` when the block succeeds.

    Raises:
        UserError: ``out`` exists and ``overwrite`` is false, or ``out`` overlaps an input model's folder.
        PublishError: ``out`` cannot be written, or exists and was not written by sinkbench.
    """
    out = check_out(out, overwrite)
    for loaded in inputs:
        folder = Path(loaded.info.id)
        if loaded.info.source == "dir" and folder.is_dir():
            refuse_overlap(out, folder, f"model {loaded.info.id}")
    with publishing(out) as staging:
        yield staging


@dataclass(frozen=True)
class StrengthProbe:
    """How the interventions measure S of their inputs and outputs: exactly as ``sinkbench screen`` does
    (:func:`sinkbench.sink.observe.measure` and the bootstrap over prompts).

    Attributes:
        options: the probe options.
        prompts: the calibration set or prompts file (None: the default set).
        interval: the bootstrap behind S's interval.
    """

    options: ProbeOptions = field(default_factory=ProbeOptions)
    prompts: str | None = None
    interval: IntervalOptions = field(default_factory=IntervalOptions)

    def measure(self, loaded: LoadedModel, progress: bool = False) -> dict[str, Any]:
        """S of ``loaded`` with its interval, the secondary scalars, the probed layers and the calibration set."""
        from sinkbench.sink.observe import measure
        from sinkbench.sink.prompts import load_calibration
        from sinkbench.sink.uncertainty import sink_strength_interval

        calibration = load_calibration(self.prompts)
        started = time.perf_counter()
        summary, observations = measure(
            loaded.model, loaded.tokenizer, calibration.prompts, self.options, progress=progress
        )
        found = sink_strength_interval(observations, self.interval)
        return {
            "sink_strength": summary.sink_strength,
            "sink_strength_ci": list(found) if found is not None else None,
            **{key: value for key, value in summary.scalar_metrics().items() if key != "sink_strength"},
            "layers_probed": summary.layers,
            "calibration": calibration.to_dict(),
            "probe_seconds": round(time.perf_counter() - started, 3),
        }


def measured(
    probe: StrengthProbe | None, loaded: LoadedModel, progress: bool = False
) -> dict[str, Any] | None:
    """``probe.measure(loaded)``, or None when no probe is asked for."""
    return None if probe is None else probe.measure(loaded, progress)
