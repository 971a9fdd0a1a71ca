"""What every intervention is and writes: one :class:`Intervention` spec per intervention (typed parameters, the
transform, a typed :class:`Report`), run by :func:`write_intervention`: load, transform, measure S of inputs and
outputs, and save standard transformers checkpoints (config, safetensors, tokenizer and chat template, so that
``from_pretrained``, lm-eval, ``sinkbench screen`` and ``extract-lm`` load them) with :data:`REPORT_FILE` beside the
weights. A sweep's folder holds one checkpoint folder per setting and the sweep's report. Everything is built beside
``out`` and swapped in whole (:func:`sinkbench.publish.publishing`), so a failure leaves ``out`` as it was.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Generic, TypeVar

from sinkbench.errors import UserError
from sinkbench.models import LoadedModel, ModelLike, load_all
from sinkbench.provenance import report_header
from sinkbench.publish import publishing, refuse_overlap
from sinkbench.sink.options import IntervalOptions, ProbeOptions

#: The report written inside each checkpoint folder (and at the top of a folder of checkpoints).
REPORT_FILE = "intervention.json"


@dataclass(frozen=True)
class StrengthProbe:
    """How the interventions measure S of their inputs and outputs: as ``sinkbench screen`` does, with these probe
    ``options``, calibration ``prompts`` (None: the default set) and bootstrap ``interval``."""

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


P = TypeVar("P")


@dataclass
class Run(Generic[P]):
    """One run of an intervention: its parameters, the loaded inputs by role, whether progress bars show, S of
    the inputs by role (None: not measured) and each output's record by folder (its S added as it is made)."""

    parameters: P
    loaded: dict[str, LoadedModel]
    progress: bool
    inputs: dict[str, Any] | None = None
    records: dict[str, dict[str, Any]] = field(default_factory=dict)


@dataclass(frozen=True)
class Report:
    """An intervention's typed report: the fields of its ``intervention.json`` after the common head (version,
    time, the intervention, each input's provenance)."""

    def to_dict(self) -> dict[str, Any]:
        """The fields as JSON."""
        return asdict(self)

    @classmethod
    def of(cls, run: Run) -> Report:
        """The report of a finished run."""
        raise NotImplementedError

    def text(self) -> str:
        """What the command prints."""
        raise NotImplementedError

    @staticmethod
    def strength(found: dict, label: str = "") -> str:
        """``S of LABEL = +1.456 [+1.382, +1.518]`` (``S = ...`` without a label) of a measured strength."""
        ci = found.get("sink_strength_ci")
        interval = f" [{ci[0]:+.3f}, {ci[1]:+.3f}]" if ci else ""
        return f"S{f' of {label}' if label else ''} = {found['sink_strength']:+.3f}{interval}"

    @staticmethod
    def strength_lines(found: Mapping[str, dict | None] | None) -> list[str]:
        """A line ``  S of ROLE = ...`` per measured role of ``found`` (none when S was not measured)."""
        return [
            f"  {Report.strength(value, role)}" for role, value in (found or {}).items() if value is not None
        ]

    @staticmethod
    def with_strength(text: str, found: dict | None) -> str:
        """``text`` followed by ``; S = ...`` when S was measured."""
        return f"{text}; {Report.strength(found)}" if found is not None else text


R = TypeVar("R", bound=Report)


#: One model an intervention made: its folder inside OUT ("" for OUT itself), the model and its record.
Output = tuple[str, LoadedModel, dict[str, Any]]


@dataclass(frozen=True)
class Intervention(Generic[P, R]):
    """One intervention, declared once; :func:`write_intervention` runs it.

    ``kind`` names it in reports; ``roles`` are its input models (an optional one may be left out); ``parameters``
    a dataclass whose defaults are the paper's; ``transform`` yields the outputs one at a time (each measured and
    saved before the next); ``report.of(run)`` makes its report; ``sweep`` says whether OUT is a folder of
    checkpoints with the report beside them (else the one output's checkpoint, the report its record); ``load``
    loads the inputs (:func:`sinkbench.models.load_all`'s signature).
    """

    kind: str
    roles: tuple[str, ...]
    parameters: type[P]
    transform: Callable[[Run[P]], Iterator[Output]]
    report: type[R]
    sweep: Callable[[P], bool] = lambda parameters: False
    load: Callable[..., dict[str, LoadedModel]] = load_all


def write_intervention(
    spec: Intervention[P, R],
    models: Mapping[str, ModelLike | None],
    out: str | Path,
    parameters: P | None = None,
    *,
    probe: StrengthProbe | None = None,
    overwrite: bool = False,
    progress: bool = True,
    **load_options: Any,
) -> R:
    """Run ``spec`` on ``models`` and write what it made into ``out``, published as a whole.

    Args:
        spec: the intervention.
        models: its input models by role (spec, folder or loaded model; None: a role left out).
        out: the checkpoint folder, or with a sweep the folder of checkpoints (``out/<setting>/``).
        parameters: the intervention's parameters (None: its defaults).
        probe: also measure S of the inputs and of each output (None: do not).
        overwrite, progress: replace an earlier ``out``; show progress bars.
        load_options: how specs are loaded (:func:`sinkbench.models.load_model`).

    Returns the typed report, written as ``intervention.json`` after the head (and ``seconds``). Raises UserError
    when ``out`` exists without ``overwrite`` (before any model loads) or overlaps an input's folder, PublishError
    when it cannot be written or exists and was not written by sinkbench.
    """
    started, out = time.perf_counter(), Path(out)
    if out.exists() and not overwrite:
        raise UserError(f"OUT {out} already exists; choose a new folder or pass --overwrite")
    parameters = spec.parameters() if parameters is None else parameters
    loaded = spec.load({role: model for role, model in models.items() if model is not None}, **load_options)
    for item in loaded.values():
        if item.info.source == "dir" and Path(item.info.id).is_dir():
            refuse_overlap(out, Path(item.info.id), f"model {item.info.id}")
    measured = (lambda item: None) if probe is None else (lambda item: probe.measure(item, progress))
    head = {**report_header(), "intervention": spec.kind}
    head["inputs"] = {role: item.info.to_dict() for role, item in loaded.items()}
    sweep = spec.sweep(parameters)
    with publishing(out, "checkpoints") as staging:
        inputs = None if probe is None else {role: measured(item) for role, item in loaded.items()}
        run = Run(parameters, loaded, progress, inputs)
        for folder, model, record in spec.transform(run):
            record["sink_strength"] = measured(model)
            run.records[folder] = record
            if sweep:
                _save(model, staging / folder, {**head, **record})
                del model  # freed before the next output is made
        report = spec.report.of(run)
        record = {**head, **report.to_dict(), "seconds": round(time.perf_counter() - started, 3)}
        if sweep:
            _write_report(staging, record)
        else:
            _save(model, staging, record)
    return report


def _save(loaded: LoadedModel, folder: Path, record: dict[str, Any]) -> None:
    """Save the model, its tokenizer and ``record`` (as :data:`REPORT_FILE`) into ``folder``."""
    folder.mkdir(parents=True, exist_ok=True)
    loaded.model.save_pretrained(folder)
    loaded.tokenizer.save_pretrained(folder)
    _write_report(folder, record)


def _write_report(folder: Path, record: dict[str, Any]) -> None:
    (folder / REPORT_FILE).write_text(json.dumps(record, indent=2, allow_nan=False) + "\n")
