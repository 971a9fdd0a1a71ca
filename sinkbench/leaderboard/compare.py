"""The Compare page: any two backbones or pairs side by side (S with its interval, the per-layer profile, each task's
observed and predicted delta), chosen in the browser.

Every backbone and pair becomes a :class:`CompareItem` of figures already formatted as the other pages format them,
written once into a script the page loads (:data:`COMPARE_DATA`, a file, so the site also works opened from disk,
where a page cannot fetch JSON); ``site/docs/assets/compare.js`` shows the two chosen (``?a=...&b=...`` in the URL).
The page itself shows the first two, for readers without JavaScript. Each figure is also handed to the
consistency check (:meth:`ComparePage.facts`), as it is on the page.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

from sinkbench.leaderboard.consistency import Fact, fact_key, model_ref
from sinkbench.leaderboard.content import BackboneView, HeldOut, PairView, Prediction, Shown, SiteViews
from sinkbench.leaderboard.formatting import format_billions, format_interval, format_number
from sinkbench.tables.rules import interval_sign

#: The generated script holding every item (site-relative path).
COMPARE_DATA = "assets/compare-data.js"
#: The page, as the consistency check names it.
COMPARE_PAGE = "compare.md"


@dataclass(frozen=True)
class Figure:
    """One figure of an item: what the row says, the text shown, and its fact key and basis (None: not a fact)."""

    label: str
    text: str
    key: str | None = None
    basis: str = ""


@dataclass(frozen=True)
class CompareItem:
    """A backbone or a pair as the Compare page shows it."""

    id: str  # "backbone:<slug>" or "pair:<slug>"
    kind: str
    label: str
    url: str
    figures: list[Figure]
    profile: list[tuple[int, float]] = field(default_factory=list)  # (layer, median G over heads)


def _interval_text(low: float | None, high: float | None, digits: int = 1) -> str:
    return "" if low is None or high is None else f" {format_interval((low, high), digits)}"


def _prediction_text(
    delta: float | None,
    low: float | None,
    high: float | None,
    kind: str | None,
    level: float | None,
    informative: bool,
) -> str:
    """A predicted delta with its interval and kind, or why it is not a number to read."""
    if delta is None:
        return "–"
    described = f"{kind} {100 * level:.1f}%" if kind and level else ""
    if not informative:
        side = {"negative": "; below 0", "positive": "; above 0"}.get(interval_sign(low, high) or "", "")
        return f"uninformative (interval{_interval_text(low, high)} wider than the observed range of Δ{side})"
    return f"{format_number(delta, 1, True)}{_interval_text(low, high)} {described}".rstrip()


def _profile(heatmap: object) -> list[tuple[int, float]]:
    """Per-layer median G of a sink profile (the heatmap's rows, median over heads)."""
    chart = getattr(heatmap, "chart", None)
    if chart is None:
        return []
    rows = []
    for layer, row in zip(chart.layers, chart.median_g, strict=True):
        values = sorted(value for value in row if value is not None)
        if values:
            middle = len(values) // 2
            median = values[middle] if len(values) % 2 else (values[middle - 1] + values[middle]) / 2
            rows.append((int(layer), round(float(median), 4)))
    return rows


def _text(number: Shown, signed: bool = False) -> str:
    """A :class:`Shown` number as plain text: its decimals, and † when derived from published numbers."""
    text = format_number(number.value, number.digits, signed)
    return f"{text}†" if number.derived and number.value is not None else text


def _s_figures(
    ref: str, value: Shown, interval: tuple[float, float] | None, protocol: str | None
) -> list[Figure]:
    text = _text(value, signed=True)
    return [
        Figure(
            "Sink Strength S (nats)",
            text + _interval_text(*(interval or (None, None)), 2),
            fact_key("s", ref),
            protocol or "",
        ),
        Figure("S measured by", protocol or "not recorded"),
    ]


def _backbone(view: BackboneView) -> CompareItem:
    ref = model_ref(view.model.model_id, view.model.revision)
    figures = _s_figures(ref, view.sink_strength, view.s_interval, view.s_protocol)
    figures += [
        Figure("QK-norm", view.qk_norm),
        Figure("Size", format_billions(view.model.params_b)),
        Figure("Role", view.role),
    ]
    for prediction in view.predictions:
        figures.append(_predicted_all(ref, prediction))
        observed = [
            f"{format_number(pair.delta(prediction.task), 1, True)} ({pair.vlm.label})"
            for pair in view.pairs
            if pair.delta(prediction.task) is not None
        ]
        figures.append(
            Figure(f"{prediction.label}: observed Δ of its pairs", "; ".join(observed) or "no pair yet")
        )
    for own in view.scores:
        figures.append(
            Figure(f"{own.label}: own score", _text(own.score), fact_key("score", ref, own.task), own.basis)
        )
    return CompareItem(
        f"backbone:{view.slug}",
        "backbone",
        view.label,
        f"backbones/{view.slug}.html",
        figures,
        _profile(view.heatmap),
    )


def _predicted_all(ref: str, prediction: Prediction) -> Figure:
    text = _prediction_text(
        prediction.delta,
        prediction.low,
        prediction.high,
        prediction.kind,
        prediction.level,
        prediction.informative,
    )
    return Figure(
        f"{prediction.label}: predicted Δ (fit on all pairs)",
        text,
        fact_key("predicted_all_pairs", ref, prediction.task) if prediction.informative else None,
    )


def _held_out(slug: str, label: str, task: str, held: HeldOut) -> Figure:
    text = _prediction_text(held.delta, held.low, held.high, held.kind, held.level, held.informative)
    return Figure(
        f"{label}: held-out predicted Δ (leave-one-pair-out)",
        text,
        fact_key("predicted_held_out", slug, task) if held.informative else None,
    )


def _pair(view: PairView) -> CompareItem:
    ref = model_ref(view.reference.model_id, view.reference.revision)
    figures = _s_figures(ref, view.sink_strength, view.s_interval, view.s_protocol)
    figures += [
        Figure("QK-norm", view.qk_norm),
        Figure("Size (VLM)", format_billions(view.vlm.params_b)),
        Figure("Reference LLM", view.reference.label),
    ]
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
            )
        )
        if not view.testbed:
            figures.append(_held_out(view.slug, result.label, result.task, result.predicted))
    profile = _profile(view.heatmap)
    return CompareItem(
        f"pair:{view.slug}", "pair", view.vlm.label, f"pairs/{view.slug}.html", figures, profile
    )


@dataclass(frozen=True)
class ComparePage:
    """Every item the Compare page can show, backbones first (screening order), then pairs (leaderboard order)."""

    items: list[CompareItem]

    @classmethod
    def of(cls, views: SiteViews) -> ComparePage:
        """The items of one build's views."""
        return cls([*(_backbone(b) for b in views.backbones), *(_pair(p) for p in views.pairs)])

    @property
    def shown(self) -> list[CompareItem]:
        """The two items the page shows before a reader chooses: the first, and the first other one with a
        per-layer profile (else the second)."""
        if not self.items:
            return []
        first = self.items[0]
        other = next(
            (item for item in self.items[1:] if item.profile), self.items[1] if len(self.items) > 1 else None
        )
        return [first] if other is None else [first, other]

    def rows(self) -> list[tuple[str, list[Figure | None]]]:
        """The rows of the comparison of :attr:`shown`: each label either item has, with each item's figure."""
        labels: list[str] = []
        for item in self.shown:
            labels += [figure.label for figure in item.figures if figure.label not in labels]
        return [
            (label, [next((f for f in item.figures if f.label == label), None) for item in self.shown])
            for label in labels
        ]

    def script(self) -> str:
        """The text of :data:`COMPARE_DATA`: ``window.SB_COMPARE = [...]`` (JSON, ``<`` escaped)."""
        data = [
            {
                "id": item.id,
                "kind": item.kind,
                "label": item.label,
                "url": item.url,
                "figures": [[figure.label, figure.text] for figure in item.figures],
                "profile": item.profile,
            }
            for item in self.items
        ]
        text = json.dumps(data, ensure_ascii=False, separators=(",", ":")).replace("<", "\\u003c")
        return f"window.SB_COMPARE = {text};\n"

    def facts(self) -> list[Fact]:
        """Every figure of every item that is a fact, as the page shows it once chosen."""
        return [
            Fact(figure.key, figure.basis, figure.text, COMPARE_PAGE)
            for item in self.items
            for figure in item.figures
            if figure.key is not None
        ]
