"""The outcome-bucketed probe (arXiv 2609.00746, Appendix C.3): S and the position-0 mass on the prompts a model
passed against those it failed, each with a percentile bootstrap interval over prompts.

The buckets come from an lm-eval ``--log_samples`` file: a prompt (the document's ``prompt`` field by default)
passes when its per-prompt metric (default IFEval's ``prompt_level_strict_acc``) is at least the threshold (default
0.5, the paper's rule). Prompts are encoded as S encodes its calibration prompts (a user turn with the chat template,
as lm-eval's ``--apply_chat_template`` sends them). Per bucket: S with the bootstrap of :mod:`.uncertainty`, and the
position-0 mass (per prompt the first-token attention over probed layers x heads x the last 8 queries, averaged over
prompts) with a percentile bootstrap of that mean. The pass - fail differences resample the two buckets
independently. ``per_bucket`` draws that many prompts per bucket without replacement (seeded; the paper used 100).
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np

from sinkbench.errors import UserError
from sinkbench.models import ModelLike, as_loaded
from sinkbench.numbers import finite_values
from sinkbench.provenance import report_header
from sinkbench.safe_io import UnsafeFileError, file_sha256, read_jsonl, write_json_atomic
from sinkbench.sink.metrics import POSITION0_MASS, SINK_STRENGTH
from sinkbench.sink.observe import observe
from sinkbench.sink.options import BucketRule, IntervalOptions, ProbeOptions
from sinkbench.sink.strength import PromptObservations, pooled_g, position0_per_prompt, sink_strength
from sinkbench.sink.uncertainty import bootstrap_sink_strength
from sinkbench.stats import bootstrap, percentile_interval

#: Largest samples file read (lm-eval writes one line per document and filter).
SAMPLES_LIMIT = 1 << 30
BUCKETS = ("pass", "fail")
MASS = POSITION0_MASS.name


def read_buckets(samples: Path, rule: BucketRule | None = None) -> dict[str, list[str]]:
    """The prompts of each bucket (``pass``, ``fail``), in file order; UserError, naming file, line and field,
    when the file is not readable lm-eval samples, a sample lacks the metric or prompt, or no filter was chosen."""
    rule = rule or BucketRule()
    try:
        lines = list(read_jsonl(samples, SAMPLES_LIMIT))
    except UnsafeFileError as error:
        raise UserError(f"{samples}: {error.message} Fix: {error.fix}") from error
    filters = sorted({str(sample.get("filter")) for _, sample in lines if isinstance(sample, dict)})
    chosen = rule.filter if rule.filter is not None else (filters[0] if len(filters) == 1 else None)
    if chosen is None or chosen not in filters:
        raise UserError(
            f"{samples}: samples of filter(s) {filters}; pass --filter with one of them"
            if filters
            else f"{samples}: no lm-eval samples in it; pass the samples_<task>_*.jsonl file of a --log_samples run"
        )
    buckets: dict[str, list[str]] = {name: [] for name in BUCKETS}
    for number, sample in lines:
        if sample.get("filter") == chosen:
            passed = _outcome(sample, rule, f"{samples} line {number}") >= rule.threshold
            buckets["pass" if passed else "fail"].append(_prompt(sample, rule, f"{samples} line {number}"))
    return buckets


def _outcome(sample: dict, rule: BucketRule, where: str) -> float:
    value = sample.get(rule.metric)
    if isinstance(value, bool) or (isinstance(value, (int, float)) and math.isfinite(value)):
        return float(value)
    known = sample.get("metrics") or sorted(k for k, v in sample.items() if isinstance(v, (bool, int, float)))
    what = "a list (a per-instruction metric)" if isinstance(value, list) else repr(value)
    raise UserError(
        f"{where}: field {rule.metric!r} is {what}, not a per-prompt score; pass --metric with one of {known}"
    )


def _prompt(sample: dict, rule: BucketRule, where: str) -> str:
    doc = sample.get("doc")
    text = doc.get(rule.prompt_field) if isinstance(doc, dict) else None
    if not isinstance(text, str) or not text:
        fields = sorted(doc) if isinstance(doc, dict) else []
        raise UserError(
            f"{where}: doc.{rule.prompt_field} is not a prompt string; pass --prompt-field with the document "
            f"field that holds the prompt (the document has {fields})"
        )
    return text


def draw(prompts: Sequence[str], count: int | None, seed: int) -> list[str]:
    """``count`` of ``prompts`` drawn without replacement (seeded; file order kept), or all of them."""
    if count is None or count >= len(prompts):
        return list(prompts)
    chosen = np.random.default_rng(seed).choice(len(prompts), size=count, replace=False)
    return [prompts[index] for index in sorted(chosen)]


@dataclass(frozen=True)
class BucketStatistics:
    """One bucket's numbers (None where the bucket is empty)."""

    prompts: int
    observations: int
    sink_strength: float | None
    sink_strength_ci: tuple[float, float] | None
    position0_mass: float | None
    position0_mass_ci: tuple[float, float] | None


def bucket_statistics(
    observations: Sequence[PromptObservations], interval: IntervalOptions
) -> tuple[BucketStatistics, np.ndarray, np.ndarray]:
    """A bucket's S and position-0 mass with their intervals, and the bootstrap replicates of each (for the
    differences between buckets)."""
    if not observations:
        empty = np.full(interval.resamples, np.nan)
        return BucketStatistics(0, 0, None, None, None, None), empty, empty
    values = pooled_g(observations)
    per_prompt = position0_per_prompt(observations)
    s_replicates = bootstrap_sink_strength(observations, resamples=interval.resamples, seed=interval.seed)
    mass_replicates = bootstrap(np.mean, per_prompt, resamples=interval.resamples, seed=interval.seed)
    statistics = BucketStatistics(
        prompts=len(observations),
        observations=int(values.size),
        sink_strength=sink_strength(values),
        sink_strength_ci=_interval(s_replicates, interval),
        position0_mass=float(per_prompt.mean()),
        position0_mass_ci=_interval(mass_replicates, interval),
    )
    return statistics, s_replicates, mass_replicates


def _interval(replicates: np.ndarray, interval: IntervalOptions) -> tuple[float, float] | None:
    if interval.resamples == 0 or np.isnan(replicates).all():
        return None
    return percentile_interval(replicates, interval.confidence)


def bucket_strength(
    model: ModelLike,
    samples: Path,
    rule: BucketRule | None = None,
    options: ProbeOptions | None = None,
    *,
    interval: IntervalOptions | None = None,
    per_bucket: int | None = None,
    output: Path | None = None,
    progress: bool = True,
    **load_options: Any,
) -> dict[str, Any]:
    """Probe ``model`` on the pass and fail prompts of an lm-eval samples file (module docstring).

    Args:
        model: a model spec (as for ``sinkbench screen``) or a loaded model.
        samples: the lm-eval ``--log_samples`` file whose outcomes define the buckets.
        rule: how samples become buckets.
        options: probe options.
        interval: the bootstraps (the second bucket's resampling uses ``seed + 1``).
        per_bucket: prompts drawn per bucket (seeded by ``interval.seed``); None: all of them.
        output, progress, load_options: as :func:`~sinkbench.sink.probe_model.probe_model` takes them.

    Returns:
        The report: per bucket its statistics, the pass - fail differences, the rule and provenance.
    """
    rule, options, interval = rule or BucketRule(), options or ProbeOptions(), interval or IntervalOptions()
    buckets = read_buckets(samples, rule)
    if per_bucket is not None and per_bucket < 1:
        raise UserError(f"per_bucket must be at least 1, got {per_bucket}")
    loaded = as_loaded(model, **load_options)
    started = time.perf_counter()
    results, replicates = {}, {}
    for offset, name in enumerate(BUCKETS):
        prompts = draw(buckets[name], per_bucket, interval.seed)
        observed = (
            observe(loaded.model, loaded.tokenizer, prompts, options, progress=progress) if prompts else []
        )
        bucket_interval = IntervalOptions(interval.resamples, interval.seed + offset, interval.confidence)
        results[name], s_replicates, mass_replicates = bucket_statistics(observed, bucket_interval)
        replicates[name] = (s_replicates, mass_replicates)
    report = {
        **report_header(),
        "model": loaded.info.to_dict(),
        "samples": {"file": Path(samples).name, "sha256": file_sha256(Path(samples))},
        "rule": asdict(rule),
        "prompts_in_file": {name: len(buckets[name]) for name in BUCKETS},
        "per_bucket": per_bucket,
        "options": {**options.to_dict(), **{f"bootstrap_{k}": v for k, v in interval.to_dict().items()}},
        "buckets": {name: finite_values(asdict(results[name])) for name in BUCKETS},
        "pass_minus_fail": _differences(results, replicates, interval),
        "probe_seconds": round(time.perf_counter() - started, 3),
    }
    if output is not None:
        write_json_atomic(report, output)
    return report


def _differences(
    results: dict[str, BucketStatistics],
    replicates: dict[str, tuple[np.ndarray, np.ndarray]],
    interval: IntervalOptions,
) -> dict[str, Any]:
    """pass - fail for S and the position-0 mass, each with the interval of the replicates' differences."""
    differences = {}
    for index, name in enumerate((SINK_STRENGTH.name, POSITION0_MASS.name)):
        passed, failed = getattr(results["pass"], name), getattr(results["fail"], name)
        value = None if passed is None or failed is None else passed - failed
        spread = replicates["pass"][index] - replicates["fail"][index]
        differences[name] = value
        differences[f"{name}_ci"] = None if value is None else _interval(spread, interval)
    return finite_values(differences)


def format_buckets(report: dict[str, Any]) -> str:
    """The report as a few lines: per bucket its prompts, S and position-0 mass with intervals, then pass - fail."""
    rule = report["rule"]
    lines = [f"{report['model']['id']}: buckets by {rule['metric']} >= {rule['threshold']:g}"]
    for name in BUCKETS:
        bucket = report["buckets"][name]
        lines.append(f"  {name:<4} {bucket['prompts']:>4} prompts  {_values(bucket)}")
    lines.append(f"  pass - fail       {_values(report['pass_minus_fail'])}")
    return "\n".join(lines)


def _values(entry: dict[str, Any]) -> str:
    """``S = ...  position-0 mass = ...`` of a bucket or of the differences, with their intervals."""
    strength = _value(entry["sink_strength"], entry["sink_strength_ci"])
    return f"S = {strength}  position-0 mass = {_value(entry[MASS], entry[f'{MASS}_ci'])}"


def _value(value: float | None, ci: list[float] | None) -> str:
    if value is None:
        return "n/a (empty bucket)"
    return f"{value:+.3f}" + (f" [{ci[0]:+.3f}, {ci[1]:+.3f}]" if ci else "")
