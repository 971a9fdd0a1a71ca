"""The Compare page: any two backbones or pairs side by side (S with its interval, the per-layer profile, each task's
observed and predicted delta), chosen in the browser.

Every backbone and pair becomes a :class:`CompareItem` of figures formatted as the other pages format them, written
into a script the page loads (:data:`COMPARE_DATA`: a file, so the site also works opened from disk);
``site/docs/assets/compare.js`` shows the two chosen (``?a=...&b=...``), the page itself the first two. Each figure
goes to the consistency check too (:meth:`ComparePage.facts`) and states its :class:`Basis`; the page says where the
two entries' figures of one quantity stand on different bases (:func:`basis_notice`, as ``compare.js`` does).
"""

from __future__ import annotations

import functools
import json
import statistics
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from sinkbench.leaderboard.consistency import Fact, fact_key, model_ref
from sinkbench.leaderboard.content import (
    BackboneView,
    HeldOut,
    PairView,
    PlotRef,
    Prediction,
    Shown,
    SiteViews,
    TaskResult,
)
from sinkbench.leaderboard.formatting import format_billions, format_interval, format_number

#: The generated script holding every item (site-relative path).
COMPARE_DATA = "assets/compare-data.js"
#: The page, as the consistency check names it.
COMPARE_PAGE = "compare.md"
#: The group of the S figures (every other group is a task's label).
S_GROUP = "Sink Strength S"


@dataclass(frozen=True)
class Basis:
    """What a figure stands on: ``text`` says who produced it and on which prompts (shown under the figure); ``key``
    is what two figures on one basis share (a publication's protocol; a measurement's whole recorded basis; for a
    prediction, its pairs' bases); ``note`` is what the notice adds to the row (a reported prompt count)."""

    text: str
    key: str
    note: str = ""


@dataclass(frozen=True)
class Figure:
    """One figure of an item: what the row says, the text shown, its fact key and fact basis (None: not a fact), the
    quantity it belongs to (``group``: :data:`S_GROUP` or a task's label; "" for descriptions) and its basis."""

    label: str
    text: str
    key: str | None = None
    basis: str = ""
    group: str = ""
    source: Basis | None = None


@dataclass(frozen=True)
class CompareItem:
    """A backbone or a pair as the Compare page shows it."""

    id: str  # "backbone:<slug>" or "pair:<slug>"
    kind: str
    label: str
    url: str
    figures: list[Figure]
    profile: list[tuple[int, float]] = field(default_factory=list)  # (layer, median G over heads)

    def bases(self, group: str) -> dict[str, list[str]]:
        """The basis keys of this item's figures of ``group``, each with the rows that stand on it, in row order."""
        found: dict[str, list[str]] = {}
        for figure in self.figures:
            if figure.group == group and figure.source is not None:
                row = figure.label.removeprefix(f"{group}: ")
                note = f" ({figure.source.note})" if figure.source.note else ""
                found.setdefault(figure.source.key, []).append(row + note)
        return found

    def said(self, group: str) -> str:
        """What ``group``'s figures of this item stand on: ``rows — basis`` for each basis, for :func:`basis_notice`."""
        return "; ".join(f"{', '.join(rows)} — {key}" for key, rows in self.bases(group).items())


def basis_notice(first: CompareItem, second: CompareItem) -> list[tuple[str, str, str]]:
    """For each quantity both items show where their figures stand on different bases (the two sets of basis keys
    differ): the quantity, and what each item's figures of it stand on (:meth:`CompareItem.said`)."""
    groups = dict.fromkeys(f.group for f in [*first.figures, *second.figures] if f.source is not None)
    return [
        (group, first.said(group), second.said(group))
        for group in groups
        if (ours := first.bases(group)) and (theirs := second.bases(group)) and ours.keys() != theirs.keys()
    ]


def _s_basis(protocol: str | None) -> Basis:
    """The basis of an S from its protocol's label (``sinkbench: <detail>`` or ``reported: <source>``)."""
    if not protocol:
        return Basis("measurement protocol not recorded", "measurement protocol not recorded")
    kind, _, detail = protocol.partition(": ")
    text = (
        f"reported by {detail} · the publication's calibration prompts"
        if kind == "reported"
        else f"measured by {kind} · {detail}"
    )
    return Basis(text, text)


def _score_basis(basis: str, reported: bool, prompts: int | None = None, testbed: bool = False) -> Basis:
    """The basis of a score or an observed Δ from the basis its entry records; ``prompts`` is a reported IFEval Δ's
    prompt count from the publication's per-prompt outcome counts (None: not stated)."""
    if reported:
        count = f"{prompts:,} prompts" if prompts else ""
        said = f"{count} (from its per-prompt outcome counts)" if count else "prompt count not stated"
        return Basis(f"{basis} · {said}", basis.partition(" (")[0], count)
    who = "sinkbench's VL testbed" if testbed else "sinkbench"
    text = f"measured by {who} · {basis or 'basis not recorded'}"
    return Basis(text, text)


def _result_basis(pair: PairView, result: TaskResult) -> Basis:
    counts = pair.regressions if result.task == "ifeval_strict" else None
    prompts = sum((counts.both_pass, counts.lost, counts.gained, counts.both_fail)) if counts else None
    return _score_basis(result.basis, pair.provenance == "reported", prompts, pair.testbed)


def _fit_basis(pairs: Sequence[PairView], task: str, held_out: bool) -> Basis:
    """The basis of a prediction: the line of Δ on S through the board's pairs (testbed pairs left out), with what
    their Δ stand on; the same for every pair's held-out prediction (the line through all but that pair)."""
    fitted = [
        _result_basis(pair, result)
        for pair in pairs
        if not pair.testbed
        and pair.sink_strength.value is not None
        and (result := pair.result(task)) is not None
        and result.delta.value is not None
    ]
    count = len(fitted)
    scope = f"the other {count - 1} of the board's {count} pairs" if held_out else f"{count} pairs"
    parts = [f"{count} {text}" for text, count in Counter(b.text for b in fitted).items()]
    text = f"fit of Δ on S over {scope} (testbed pairs left out); their Δ: {'; '.join(parts)}"
    return Basis(text, " and ".join(dict.fromkeys(b.key for b in fitted)) or "no pair")


def _interval_text(low: float | None, high: float | None, digits: int = 1) -> str:
    return "" if low is None or high is None else f" {format_interval((low, high), digits)}"


def _prediction_text(found: Prediction | HeldOut) -> str:
    """A predicted delta with its interval and kind, or why it is not a number to read."""
    low, high = found.low, found.high
    if found.delta is None:
        return "–"
    if not found.informative:
        side = {"negative": "; below 0", "positive": "; above 0"}.get(found.sign or "", "")
        return f"uninformative (interval{_interval_text(low, high)} wider than the observed range of Δ{side})"
    described = f"{found.kind} {100 * found.level:.1f}%" if found.kind and found.level else ""
    return f"{format_number(found.delta, 1, True)}{_interval_text(low, high)} {described}".rstrip()


def _prediction_figure(
    found: Prediction | HeldOut, group: str, task: str, of: str, fit: Callable[..., Basis]
) -> Figure:
    """A predicted Δ of ``of`` on ``task``: a backbone's :class:`Prediction` (fit on all pairs) or a pair's
    :class:`HeldOut`, as the fact ``predicted_*``, or ``predicted_*_interval`` when uninformative."""
    held_out = isinstance(found, HeldOut)
    row, kind = (
        ("held-out predicted Δ (leave-one-pair-out)", "predicted_held_out")
        if held_out
        else ("predicted Δ (fit on all pairs)", "predicted_all_pairs")
    )
    text = _prediction_text(found)
    if isinstance(found, Prediction) and found.extrapolated and found.delta is not None:
        text += f" · extrapolated: {'; '.join(found.reasons)}"
    return Figure(
        f"{group}: {row}",
        text,
        fact_key(kind if found.informative else f"{kind}_interval", of, task),
        group=group,
        source=fit(task, held_out=held_out) if found.delta is not None else None,
    )


def _profile(heatmap: PlotRef | None) -> list[tuple[int, float]]:
    """Per-layer median G of a sink profile (the heatmap's rows, median over heads)."""
    if heatmap is None:
        return []
    chart = heatmap.chart
    return [
        (int(layer), round(float(statistics.median(values)), 4))
        for layer, row in zip(chart.layers, chart.median_g, strict=True)
        if (values := [value for value in row if value is not None])
    ]


def _text(number: Shown, signed: bool = False) -> str:
    """A :class:`Shown` number as plain text: its decimals, and † when derived from published numbers."""
    text = format_number(number.value, number.digits, signed)
    return f"{text}†" if number.derived and number.value is not None else text


def _first_figures(view: PairView | BackboneView, ref: str, *described: tuple[str, str]) -> list[Figure]:
    """S with its interval (its basis line says how it was measured), the QK-norm class, then ``described``."""
    text = _text(view.sink_strength, signed=True) + _interval_text(*(view.s_interval or (None, None)), 2)
    protocol = view.s_protocol
    strength = Figure(
        "Sink Strength S (nats)", text, fact_key("s", ref), protocol or "", S_GROUP, _s_basis(protocol)
    )
    return [strength, Figure("QK-norm", view.qk_norm), *(Figure(label, said) for label, said in described)]


def _observed_of_pairs(view: BackboneView, prediction: Prediction) -> Figure:
    """The observed Δ of the pairs a backbone is the reference LLM of, each with its basis."""
    found = [(pair, pair.result(prediction.task)) for pair in view.pairs]
    shown = [
        (pair, result) for pair, result in found if result is not None and result.delta.value is not None
    ]
    text = "; ".join(f"{_text(result.delta, signed=True)} ({pair.vlm.label})" for pair, result in shown)
    bases = list(dict.fromkeys(_result_basis(pair, result) for pair, result in shown))
    keys = dict.fromkeys(b.key for b in bases)
    source = Basis("; ".join(b.text for b in bases), " and ".join(keys)) if bases else None
    return Figure(
        f"{prediction.label}: observed Δ of its pairs",
        text or "no pair yet",
        group=prediction.label,
        source=source,
    )


def _backbone(view: BackboneView, fit: Callable[..., Basis]) -> CompareItem:
    ref = model_ref(view.model.model_id, view.model.revision)
    figures = _first_figures(view, ref, ("Size", format_billions(view.model.params_b)), ("Role", view.role))
    for p in view.predictions:
        figures += [_prediction_figure(p, p.label, p.task, ref, fit), _observed_of_pairs(view, p)]
    for own in view.scores:
        key = fact_key("score", ref, own.task)
        source = _score_basis(own.basis, reported=own.basis.startswith("reported by "))
        figures.append(Figure(f"{own.label}: own score", _text(own.score), key, own.basis, own.label, source))
    url = f"backbones/{view.slug}.html"
    return CompareItem(f"backbone:{view.slug}", "backbone", view.label, url, figures, _profile(view.heatmap))


def _pair(view: PairView, fit: Callable[..., Basis]) -> CompareItem:
    ref = model_ref(view.reference.model_id, view.reference.revision)
    described = ("Size (VLM)", format_billions(view.vlm.params_b)), ("Reference LLM", view.reference.label)
    figures = _first_figures(view, ref, *described)
    for result in view.results:
        delta = _text(result.delta, signed=True)
        ci = _interval_text(*(result.delta_interval or (None, None)))
        unpaired = ", unpaired" if result.interval_kind == "unpaired" else ""
        figures.append(
            Figure(
                f"{result.label}: observed Δ",
                delta + (f" (95% CI{ci}{unpaired})" if ci else f" (no interval: {result.interval_reason})"),
                fact_key("delta", view.slug, result.task),
                result.basis,
                result.label,
                _result_basis(view, result),
            )
        )
        if not view.testbed:
            figures.append(_prediction_figure(result.predicted, result.label, result.task, view.slug, fit))
    url = f"pairs/{view.slug}.html"
    return CompareItem(f"pair:{view.slug}", "pair", view.vlm.label, url, figures, _profile(view.heatmap))


@dataclass(frozen=True)
class ComparePage:
    """Every item the Compare page can show, backbones first (screening order), then pairs (leaderboard order)."""

    items: list[CompareItem]

    @classmethod
    def of(cls, views: SiteViews) -> ComparePage:
        """The items of one build's views."""
        # each fit's basis made once: every item quotes it
        fit = functools.cache(functools.partial(_fit_basis, views.pairs))
        return cls([*(_backbone(b, fit) for b in views.backbones), *(_pair(p, fit) for p in views.pairs)])

    @functools.cached_property
    def shown(self) -> list[CompareItem]:
        """The two items the page shows before a reader chooses: the first, and the first other one with a
        per-layer profile (else the second); found once (the page's template asks for it once per item)."""
        rest = self.items[1:]
        other = next((item for item in rest if item.profile), rest[0] if rest else None)
        return self.items[:1] + ([other] if other is not None else [])

    def rows(self) -> list[tuple[str, list[Figure | None]]]:
        """The rows of the comparison of :attr:`shown`: each label either item has, with each item's figure."""
        labels: list[str] = []
        for item in self.shown:
            labels += [figure.label for figure in item.figures if figure.label not in labels]
        return [
            (label, [next((f for f in item.figures if f.label == label), None) for item in self.shown])
            for label in labels
        ]

    def notice(self) -> list[tuple[str, str, str]]:
        """:func:`basis_notice` of the two items :attr:`shown`."""
        return basis_notice(*self.shown) if len(self.shown) == 2 else []

    def script(self) -> str:
        """The text of :data:`COMPARE_DATA`: ``window.SB_COMPARE = [...]`` (JSON, ``<`` escaped). Each figure is
        ``[label, text, group, basis]``, ``basis`` an index into the item's ``bases`` (``[text, key, note]``) or -1."""
        text = json.dumps(
            [_item_data(item) for item in self.items], ensure_ascii=False, separators=(",", ":")
        ).replace("<", "\\u003c")
        return f"window.SB_COMPARE = {text};\n"

    def facts(self) -> list[Fact]:
        """Every figure of every item that is a fact, as the page shows it once chosen."""
        return [
            Fact(figure.key, figure.basis, figure.text, COMPARE_PAGE)
            for item in self.items
            for figure in item.figures
            if figure.key is not None
        ]


def _item_data(item: CompareItem) -> dict[str, object]:
    """One item as :data:`COMPARE_DATA` holds it, each basis written once."""
    bases = list(dict.fromkeys(f.source for f in item.figures if f.source is not None))
    return {
        "id": item.id,
        "kind": item.kind,
        "label": item.label,
        "url": item.url,
        "figures": [
            [f.label, f.text, f.group, bases.index(f.source) if f.source is not None else -1]
            for f in item.figures
        ],
        "bases": [[basis.text, basis.key, basis.note] for basis in bases],
        "profile": item.profile,
    }
