"""The per-entry details that pair and backbone pages share: model facts, raw files, every metric, data files,
reproduce commands and the sink heatmap. Reads the entry model only."""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from typing import Any

from sinkbench.charts import HeatmapChart
from sinkbench.conformance.support import support
from sinkbench.leaderboard.content import DataFile, MetricRow, ModelFacts, PlotRef, RawFile
from sinkbench.leaderboard.reproduce import Reproduction, local_data_files, reproduction
from sinkbench.numbers import is_finite_number
from sinkbench.submissions.catalogue import FOLDER_OF_KIND
from sinkbench.submissions.entry import Entry, Side
from sinkbench.submissions.facts import ModelSize
from sinkbench.submissions.schema import ModelRef

#: One row of an aggregated table, as ``DataFrame.to_dict("records")`` gives it.
Row = dict[str, Any]
_UNSAFE_SLUG = re.compile(r"[^a-z0-9._-]+")
_RESULTS_STAMP = re.compile(r"results_(.+)\.json$")


def slugify(text: str) -> str:
    """A lower-case URL-safe file name from a model id (``Org/Name`` becomes ``org--name``)."""
    return _UNSAFE_SLUG.sub("-", text.lower().replace("/", "--")).strip("-.") or "model"


def label(model: ModelRef) -> str:
    """A model's display name, else its id."""
    return model.display_name or model.id


def model_facts(
    model: ModelRef, size: ModelSize | None, *, vlm: bool = False, on_hub: bool = True
) -> ModelFacts:
    """What the page shows about one model; ``size`` as :mod:`sinkbench.submissions.facts` found it, and whether
    sinkbench can re-measure it (``screen`` for an LLM, ``extract-lm`` for a VLM). A model not on the Hub (a
    testbed VLM) gets no link."""
    remeasure = support(model.model_type, "extract" if vlm else "probe", model.architecture)
    return ModelFacts(
        model_id=model.id,
        label=label(model),
        revision=model.revision,
        url=f"https://huggingface.co/{model.id}" if on_hub else None,
        params_b=size.billions if size else None,
        params_source=size.source if size else None,
        family=model.family,
        license=model.license,
        id_mapping=model.id_mapping,
        model_type=model.model_type,
        remeasurable=remeasure.accepted,
        remeasure=remeasure.text,
    )


def lm_eval_versions(sides: Iterable[Side]) -> list[str]:
    """The lm-eval versions that wrote the results files of ``sides``."""
    return sorted(
        {item.data.lm_eval_version for side in sides for item in side.results if item.data.lm_eval_version}
    )


def _size_text(size: int) -> str:
    """A file size for people: bytes, kB or MB (powers of 1,000)."""
    if size < 1000:
        return f"{size} bytes"
    return f"{size / 1000:.1f} kB" if size < 1_000_000 else f"{size / 1_000_000:.1f} MB"


def raw_files(entry: Entry) -> list[RawFile]:
    """Every file of the entry (as the loader found it), for its page to link to."""
    kind_folder = FOLDER_OF_KIND[entry.kind]
    return [
        RawFile(
            file.relative, f"raw/{kind_folder}/{entry.name}/{file.relative}", file.path, _size_text(file.size)
        )
        for file in entry.files
    ]


def heatmap(entry: Entry) -> PlotRef | None:
    """The layer x head heatmap of the entry's sink profile, if it has one."""
    profile = entry.sink_profile
    if profile is None or not profile.profile.layers:
        return None
    matrix = tuple(tuple(row) for row in profile.profile.median_g)
    chart = HeatmapChart(tuple(profile.profile.layers), matrix, label(entry.llm))
    return PlotRef(f"plots/profile-{entry.name}.svg", chart)


def _side_metrics(side: Side) -> dict[tuple[str, str], float]:
    """Every numeric metric of a side's results files, keyed by (task, metric key)."""
    return {
        (task, key): float(value)
        for item in side.results
        for task, metrics in item.data.results.items()
        for key, value in metrics.items()
        if is_finite_number(value)
    }


def all_metrics(sides: Sequence[Side | None]) -> list[MetricRow]:
    """One row per (task, metric) found on any of ``sides``, with each side's value or None."""
    found = [_side_metrics(side) if side is not None else {} for side in sides]
    keys = sorted({key for metrics in found for key in metrics})
    return [
        MetricRow(task, metric, tuple(metrics.get((task, metric)) for metrics in found))
        for task, metric in keys
    ]


def data_files(sides: Iterable[Side]) -> list[DataFile]:
    """The local data files the runs read, with their sha256, as the results files recorded them."""
    found = {
        (task, str(file.get("file"))): str(file.get("sha256"))
        for side in sides
        for item in side.results
        for task, file in local_data_files(item)
    }
    return [DataFile(task, name, sha) for (task, name), sha in sorted(found.items())]


def _sample_stamps(entry: Entry, side: Side) -> set[str]:
    """Timestamps of the side's samples files (``samples_<task>_<stamp>.jsonl``), to tell which run logged them."""
    folder = side.directory.removeprefix(entry.directory).strip("/")
    inside = [
        f.relative.removeprefix(f"{folder}/")
        for f in entry.files
        if (f.relative.startswith(f"{folder}/") if folder else "/" not in f.relative)
    ]
    return {name.rsplit("_", 1)[-1].removesuffix(".jsonl") for name in inside if name.startswith("samples_")}


def reproduce(entry: Entry, side: Side, model: ModelRef) -> list[Reproduction]:
    """One reproduce block per results file of ``side``, naming ``model`` by its id and revision."""
    stamps = _sample_stamps(entry, side)
    blocks = []
    for item in side.results:
        match = _RESULTS_STAMP.search(item.path)
        blocks.append(reproduction(item, model, logged_samples=bool(match) and match.group(1) in stamps))
    return blocks
