"""Merging a VLM-LM with its reference LLM (arXiv 2609.00746, Appendix F.4): the paper's seven settings on
mergekit's ``merge_state_dicts`` (LGPL-3.0, an optional extra: ``pip install 'sinkbench[merge]'``), with TSV and
STAR from :mod:`.spectral`.

The two linear mixes need no base: ``w * VLM-LM + (1 - w) * reference``. The other five merge *task vectors* over
a base, which the paper does not name. Without ``base`` (the default) the reference is the base and ``d = VLM-LM -
reference`` the one task vector: Task Arithmetic with lambda = 1 (and TSV with alpha = 1) is then the VLM-LM itself,
while TIES, DARE and STAR trim, drop or truncate ``d``. With ``base`` (the pretrained model both were fine-tuned
from, e.g. Qwen2.5-7B) there are two task vectors and TA is ``base + d_ref + d_vlm``, the reading that fits the
paper's "drops the unprotected pair by tens of points".

Rows the VLM-LM added to its embeddings and LM head (an image token) have no counterpart: the reference and base
first get the VLM-LM's own rows there (:func:`align_vocabulary`, counted as ``added_rows``). Each record names the
``reading`` and the ``distance`` of the merge to each input (0 to the VLM-LM: an identity merge). DARE's mask comes
from torch's generator seeded with ``seed`` (forked: the caller's is untouched); mergekit rescales the kept entries
to the task vector's L1 norm.
"""

from __future__ import annotations

import copy
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import torch
from tqdm.auto import tqdm

from sinkbench.errors import UserError
from sinkbench.interventions.checkpoint import Intervention, Output, Report, Run
from sinkbench.interventions.settings import MERGE_SETTING_NAMES, MergeParameters, MergeSetting, merge_setting
from sinkbench.models import LoadedModel, ModelLike, load_all, module_info

#: The readings of the inputs (module docstring).
ONE_TASK_VECTOR = "one task vector: VLM-LM - reference, over the reference"
TWO_TASK_VECTORS = "two task vectors: reference - base and VLM-LM - base, over the base"


def _mergekit(method: str) -> tuple[Any, Any]:
    """mergekit's ``merge_state_dicts`` and the method called ``method`` (or TSV / STAR of :mod:`.spectral`);
    UserError when mergekit is not installed."""
    try:
        from mergekit import merge_methods

        from sinkbench.interventions import spectral
    except ImportError as error:
        raise UserError(
            f"merging needs mergekit (LGPL-3.0), an optional extra: pip install 'sinkbench[merge]' ({error})"
        ) from error
    ours = {"tsv": spectral.tsv_merge, "star": spectral.star_merge}
    return merge_methods.merge_state_dicts, ours.get(method) or merge_methods.get(method)


def align_vocabulary(
    other: dict[str, torch.Tensor], vlm_lm: dict[str, torch.Tensor]
) -> tuple[dict[str, torch.Tensor], dict[str, int]]:
    """``other`` with each tensor that is the VLM-LM's cut short in its first dimension (a vocabulary the VLM
    extended) completed by the VLM-LM's extra rows; and how many rows each such tensor gained."""
    aligned, added = dict(other), {}
    for name, tensor in other.items():
        mine = vlm_lm.get(name)
        if mine is None or tensor.shape == mine.shape or tensor.dim() == 0:
            continue
        if tensor.shape[1:] == mine.shape[1:] and tensor.shape[0] < mine.shape[0]:
            aligned[name] = torch.cat([tensor, mine[tensor.shape[0] :].to(tensor.dtype)])
            added[name] = mine.shape[0] - tensor.shape[0]
    return aligned, added


def merge_state_dicts(
    chosen: MergeSetting,
    reference: dict[str, torch.Tensor],
    vlm_lm: dict[str, torch.Tensor],
    *,
    base: dict[str, torch.Tensor] | None = None,
    seed: int = 0,
) -> dict[str, torch.Tensor]:
    """The merged tensors of one setting (module docstring), through mergekit's ``merge_state_dicts``; UserError
    when mergekit is missing or the state dicts do not have the same tensors."""
    mergekit_merge, method = _mergekit(chosen.method)
    if chosen.mix is not None:
        models = {"vlm_lm": vlm_lm, "reference": reference}
        base_id, parameters = None, {"weight": {"vlm_lm": chosen.mix, "reference": 1.0 - chosen.mix}}
    elif base is None:
        models = {"reference": reference, "vlm_lm": vlm_lm}
        base_id, parameters = "reference", dict(chosen.parameters)
    else:
        models = {"base": base, "reference": reference, "vlm_lm": vlm_lm}
        base_id, parameters = "base", dict(chosen.parameters)
    with torch.random.fork_rng(devices=[]), torch.no_grad():
        torch.manual_seed(seed)
        try:
            return mergekit_merge(models, method, parameters=parameters, base=base_id)
        except ValueError as error:
            raise UserError(f"merge {chosen.name}: the models cannot be merged ({error})") from error


def distances(merged: dict[str, torch.Tensor], reference: dict, vlm_lm: dict) -> dict[str, float | None]:
    """Where the merge landed: ||merged - reference|| and ||merged - VLM-LM|| over all floating tensors, each as
    a fraction of ||VLM-LM - reference|| (None when the two inputs are equal)."""
    span, to_reference, to_vlm = 0.0, 0.0, 0.0
    for name, tensor in merged.items():
        if tensor.is_floating_point():
            mine, ref, vlm = tensor.float(), reference[name].float(), vlm_lm[name].float()
            span += float((vlm - ref).pow(2).sum())
            to_reference += float((mine - ref).pow(2).sum())
            to_vlm += float((mine - vlm).pow(2).sum())
    if span == 0:
        return {"to_reference": None, "to_vlm_lm": None}
    return {"to_reference": (to_reference / span) ** 0.5, "to_vlm_lm": (to_vlm / span) ** 0.5}


def merge(
    reference: ModelLike,
    vlm_lm: ModelLike,
    name: str | MergeSetting,
    *,
    base: ModelLike | None = None,
    seed: int = 0,
    **load_options: Any,
) -> tuple[LoadedModel, dict[str, Any]]:
    """The merged model of setting ``name`` (one of the paper's by name, or a :class:`MergeSetting` of one's own,
    e.g. another linear mix) — a copy of the VLM-LM with the merged weights, its tokenizer — and its record: the
    setting, the reading, the parameters and the distances (module docstring)."""
    chosen = name if isinstance(name, MergeSetting) else merge_setting(name)
    models = {"reference": reference, "vlm_lm": vlm_lm, **({"base": base} if base is not None else {})}
    return _merged(chosen, _load(models, **load_options), seed)


def _load(models: dict[str, ModelLike], **load_options: Any) -> dict[str, LoadedModel]:
    """:func:`~sinkbench.models.load_all`, checking that every model has the VLM-LM's tensors."""
    loaded = load_all(models, **load_options)
    keys = {role: set(item.model.state_dict()) for role, item in loaded.items()}
    for role, found in keys.items():
        if found != keys["vlm_lm"]:
            extra = sorted(found ^ keys["vlm_lm"])[:3]
            raise UserError(
                f"{role} {loaded[role].info.id} does not have the VLM-LM's tensors (differs in {extra}); merging "
                "needs the same architecture and size"
            )
    return loaded


def _merged(
    chosen: MergeSetting, loaded: dict[str, LoadedModel], seed: int
) -> tuple[LoadedModel, dict[str, Any]]:
    states = {role: item.model.state_dict() for role, item in loaded.items()}
    added: dict[str, int] = {}
    for role in ("reference", "base"):
        if role in states:
            states[role], rows = align_vocabulary(states[role], states["vlm_lm"])
            added.update(rows)
    merged = merge_state_dicts(
        chosen, states["reference"], states["vlm_lm"], base=states.get("base"), seed=seed
    )
    vlm = loaded["vlm_lm"]
    model = copy.deepcopy(vlm.model)
    model.load_state_dict(merged)
    result = LoadedModel(model.eval(), vlm.tokenizer, module_info(model, f"{vlm.info.id}+{chosen.name}"))
    reading = None if chosen.mix is not None else (TWO_TASK_VECTORS if "base" in states else ONE_TASK_VECTOR)
    record = {
        "setting": chosen.name,
        "title": chosen.title,
        "method": chosen.method,
        "parameters": {"vlm_lm_weight": chosen.mix} if chosen.mix is not None else chosen.parameters,
        "reading": reading,
        "seed": seed,
        "distance": distances(merged, states["reference"], states["vlm_lm"]),
        "added_rows": added,
    }
    return result, record


@dataclass(frozen=True)
class MergeReport(Report):
    """The merge's report: S of the inputs (None: not measured) and each setting's record (with S); a single
    merge's file is its one record."""

    sweep: bool
    inputs_sink_strength: dict[str, Any] | None
    settings: dict[str, dict[str, Any]]

    def to_dict(self) -> dict[str, Any]:
        sweep = {"intervention": "merge_sweep", "inputs_sink_strength": self.inputs_sink_strength}
        return {**sweep, "settings": self.settings} if self.sweep else next(iter(self.settings.values()))

    @classmethod
    def of(cls, run: Run[MergeParameters]) -> MergeReport:
        settings = {record["setting"]: record for record in run.records.values()}
        return cls(run.parameters.setting is None, run.inputs, settings)

    def text(self) -> str:
        lines = self.strength_lines(self.inputs_sink_strength)
        for name, record in self.settings.items():
            distance = record["distance"]["to_vlm_lm"]
            moved = "" if distance is None else f" (distance to VLM-LM {distance:.3g} of the pair's)"
            lines.append(self.with_strength(f"{name}: {record['title']}{moved}", record["sink_strength"]))
        return "\n".join(lines)


def _merges(run: Run[MergeParameters]) -> Iterator[Output]:
    sweep = run.parameters.setting is None
    names = MERGE_SETTING_NAMES if sweep else (run.parameters.setting,)
    for name in tqdm(names, desc="merges", unit="setting", disable=not run.progress or not sweep):
        yield name if sweep else "", *_merged(merge_setting(name), run.loaded, run.parameters.seed)


#: The VLM-LM merged with its reference (over ``base``, if given): one setting's checkpoint, or the sweep's folder.
MERGE = Intervention(
    "merge",
    ("reference", "vlm_lm", "base"),
    MergeParameters,
    _merges,
    MergeReport,
    sweep=lambda parameters: parameters.setting is None,
    load=_load,
)
