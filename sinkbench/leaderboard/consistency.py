"""One number per fact: every figure a page marks as a fact is collected, and the build fails when two figures of
one fact disagree: on one basis they must be one number printed alike, and on two bases that really differ (a
subset, a limit, a token cap, a dtype, a source) one page must name both.

Templates mark a figure with :func:`fact_attributes` on the element whose text is the figure::

    <td class="sb-num" data-sb-fact="score|HuggingFaceTB/SmolLM2-135M-Instruct@sha256:b179…|ifeval_strict"
        data-sb-basis="all 541 documents, up to 1,280 new tokens, float32" data-sb-value="19.963">19.96</td>

The key names what the figure is of (:func:`fact_key`); the basis, also shown beside the figure, says how it was
obtained; the value, where known, is the unrounded number. The figure is the element's whole text, inline markup
included; it may carry its interval (``+1.46 [1.38, 1.52]``, read as the fact ``s_interval|…`` too), and a
``title`` inside it holding a number with decimals, other than its basis, is one more figure of the fact. Figures
of a script rather than a page (the Compare page's data) are handed over as :class:`Fact` records.

What agrees (:meth:`FactBook.problems`): two bases are one when they name the same subset sizes, limits, token
caps, dtypes, weights and sources (:func:`basis_signature`; wording aside). On one basis every figure of a fact
has the same decimals, the same unit (``%`` or not) and the same number; where the unrounded value is known, each
figure is that value rounded to its decimals. An interval's ends are in order and hold its point.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from functools import lru_cache
from html import unescape

from markupsafe import Markup, escape

from sinkbench.errors import ProblemsFound

#: The start of a marked element: ``data-sb-fact`` is written only by :func:`fact_attributes`, so the scan looks
#: for the attribute and backs up to its tag instead of parsing every tag of the page.
_MARK = 'data-sb-fact="'
#: A tag (attribute values are escaped, so none holds ``>``): closing slash, name, attributes, self-closing slash.
_TAG = re.compile(r"<(/?)([a-zA-Z][\w:-]*)([^>]*?)(/?)>")
_ATTRIBUTE = re.compile(r'([\w:-]+)="([^"]*)"')
_VOID = frozenset(
    ["area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source", "track", "wbr"]
)
_BREAK = re.compile(r"<br\s*/?>|</(?:p|div|li|td|th|tr)>", re.IGNORECASE)
_NUMBER = r"[-+]?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?%?"
_NUMBER_RE = re.compile(_NUMBER)
#: A title that holds a number with decimals states a figure (one like "95% interval" does not).
_DECIMAL = re.compile(r"\d\.\d")
_INTERVAL = re.compile(rf"\[\s*({_NUMBER})\s*,\s*({_NUMBER})\s*\]|({_NUMBER})\s+to\s+({_NUMBER})")
#: What makes two bases differ: numbers (subset sizes, limits, token caps, tables), dtypes, weights formats,
#: sources and hashes; any other word is wording.
_QUALIFIER = re.compile(
    r"\d+(?:\.\d+)?|b?float\d+|fp\d+|bf16|u?int\d+|q\d+_[a-z0-9]+|gguf|awq|gptq|transformers|safetensors"
    r"|sinkbench|testbed|lm-eval|reported|measured|arxiv|limit|v\d+|[0-9a-f]{8,}"
)
_INTERVAL_SUFFIX = "_interval"


class InconsistentFigures(ProblemsFound):
    """Figures of one fact disagree; one line per problem (:meth:`FactBook.problems`)."""

    def __init__(self, problems: Sequence[str]) -> None:
        super().__init__(problems, f"{len(problems)} problem(s) with figures of one fact; nothing was built.")


@dataclass(frozen=True)
class Fact:
    """One figure as a page shows it: what it is of (``key``), the basis it was obtained on (``""``: none stated),
    its text, the page (site-relative source path), and its unrounded value(s) where the view knows them (one
    number, or an interval's two ends for an ``*_interval`` key)."""

    key: str
    basis: str
    text: str
    page: str
    value: tuple[float, ...] | None = None

    @property
    def number(self) -> tuple[float, int] | None:
        """The figure's value and its decimals, or None when its text holds no number (an en dash)."""
        reading = _read(self.text)
        return None if reading.point is None else (reading.point.value, reading.point.digits)


@dataclass(frozen=True)
class _Printed:
    """One printed number: its value, decimals, and whether it is a percentage."""

    value: float
    digits: int
    percent: bool

    def matches(self, exact: float) -> bool:
        """Whether this is ``exact`` rounded to its decimals (either way at an exact half)."""
        return abs(self.value - exact) <= 0.5 * 10.0**-self.digits * (1 + 1e-9) + 1e-12


@dataclass(frozen=True)
class _Reading:
    point: _Printed | None
    interval: tuple[_Printed, _Printed] | None


@dataclass(frozen=True)
class _Shown:
    """One figure reduced to what is compared: its numbers (a point, or an interval's two ends)."""

    fact: Fact
    numbers: tuple[_Printed, ...]
    exact: tuple[float, ...] | None


def fact_key(kind: str, *parts: object) -> str:
    """The key of a fact: its kind (``s``, ``s_interval``, ``score``, ``delta``, ``predicted_held_out``,
    ``predicted_all_pairs``, ``rho``) and what it is of, joined by ``|`` (a model as ``id@revision``)."""
    return "|".join([kind, *("" if part is None else str(part) for part in parts)])


def interval_key(key: str) -> str:
    """The key of the interval of fact ``key`` (``s|a@`` → ``s_interval|a@``)."""
    kind, _, rest = key.partition("|")
    return key if kind.endswith(_INTERVAL_SUFFIX) else f"{kind}{_INTERVAL_SUFFIX}|{rest}"


def model_ref(model_id: str, revision: str | None) -> str:
    """A model in a fact key: ``id@revision`` (``id@`` when the revision is not recorded)."""
    return f"{model_id}@{revision or ''}"


def fact_attributes(key: str, basis: str = "", value: float | Iterable[float] | None = None) -> Markup:
    """The attributes that mark an element's text as the figure of fact ``key`` on ``basis`` (escaped), with its
    unrounded ``value`` (an interval's two ends for an ``*_interval`` key) when given and finite."""
    values = [value] if isinstance(value, (int, float)) else list(value or ())
    shown = (
        f' data-sb-value="{" ".join(format(float(v), ".10g") for v in values)}"'
        if values and all(v is not None and math.isfinite(v) for v in values)
        else ""
    )
    return Markup(f' data-sb-fact="{escape(key)}" data-sb-basis="{escape(basis)}"{shown}')


@lru_cache(maxsize=4096)  # a board has few bases, each on many figures
def basis_signature(basis: str) -> frozenset[str]:
    """What a basis names that can make a figure differ: its numbers (thousands separators dropped), dtypes,
    weights formats, sources and hashes, lower-cased. Two bases with one signature are one basis."""
    return frozenset(_QUALIFIER.findall(basis.lower().replace(",", "")))


def _printed(text: str) -> _Printed:
    digits = text.rstrip("%").partition(".")[2]
    return _Printed(float(text.rstrip("%").replace(",", "")), len(digits), text.endswith("%"))


@lru_cache(maxsize=65536)  # figures repeat across pages
def _read(text: str) -> _Reading:
    """A figure's point and interval: the first number outside an interval, and the first ``[low, high]`` or
    ``low to high``."""
    text = text.replace("\u2212", "-")
    found = _INTERVAL.search(text)
    interval = None
    if found is not None:
        low, high = (found.group(1), found.group(2)) if found.group(1) else (found.group(3), found.group(4))
        interval = (_printed(low), _printed(high))
        text = text[: found.start()] + " " + text[found.end() :]
    point = _NUMBER_RE.search(text)
    return _Reading(None if point is None else _printed(point.group(0)), interval)


def _marked(html: str) -> Iterator[tuple[dict[str, str], str, list[str]]]:
    """Each marked element of ``html``: its attributes, its text (tags stripped, line breaks as spaces) and the
    ``title`` attributes inside it. An element left open runs to the end of the page."""
    start = html.find(_MARK)
    while start != -1:
        open_at = html.rfind("<", 0, start)
        tag = _TAG.match(html, open_at)
        if tag is None:  # the attribute in text, not in a tag
            start = html.find(_MARK, start + len(_MARK))
            continue
        attributes = {name: unescape(value) for name, value in _ATTRIBUTE.findall(tag.group(3))}
        depth, position, end = 1, tag.end(), len(html)
        if tag.group(2).lower() in _VOID or tag.group(4):
            depth = 0
            end = tag.end()
        while depth:
            inner = _TAG.search(html, position)
            if inner is None:
                break
            position = inner.end()
            if inner.group(2).lower() in _VOID or inner.group(4):
                continue
            depth += -1 if inner.group(1) else 1
            if not depth:
                end = inner.start()
        body = html[tag.end() : end]
        titles = [attributes.get("title", "")] + [
            unescape(value) for value in re.findall(r'\btitle="([^"]*)"', body)
        ]
        text = " ".join(unescape(_TAG.sub("", _BREAK.sub(" ", body))).split())
        yield attributes, text, [title for title in titles if title]
        start = html.find(_MARK, tag.end())


class FactBook:
    """The facts of one build: those handed over when the pages were generated, and those read from each page."""

    def __init__(self, facts: Iterable[Fact] = ()) -> None:
        self.facts: list[Fact] = list(facts)

    def read_page(self, page: str, html: str) -> None:
        """Collect the marked figures of one rendered page (a ``title`` inside a marked element that holds a number
        with decimals and is not the figure's basis counts as one more figure of the fact)."""
        for attributes, text, titles in _marked(html):
            key, basis = attributes.get("data-sb-fact", ""), attributes.get("data-sb-basis", "")
            value = _values(attributes.get("data-sb-value", ""))
            self.facts.append(Fact(key, basis, text, page, value))
            self.facts += [
                Fact(key, basis, title, f"{page} (a tooltip)")
                for title in titles
                if title != basis and _DECIMAL.search(title)
            ]

    def problems(self) -> list[str]:
        """One line per problem: for each fact, figures on one basis that are not one number printed alike, and
        figures on bases that differ with no page naming both; and each interval out of order or without its
        point."""
        found: list[str | None] = []
        by_fact: dict[str, dict[frozenset[str], list[_Shown]]] = {}
        for shown in _shown(self.facts, found):
            by_basis = by_fact.setdefault(shown.fact.key, {})
            by_basis.setdefault(basis_signature(shown.fact.basis), []).append(shown)
        for key, by_basis in sorted(by_fact.items()):
            groups = list(by_basis.values())
            problem = next(filter(None, (_one_basis(key, group) for group in groups)), None)
            found.append(problem or _bases_named(key, groups))
        return [line for line in found if line]


def _values(text: str) -> tuple[float, ...] | None:
    try:
        return tuple(float(part) for part in text.split()) or None
    except ValueError:
        return None


def _shown(facts: Iterable[Fact], found: list[str | None]) -> Iterator[_Shown]:
    """Each figure's point and interval as :class:`_Shown` (an interval under its ``*_interval`` key); an interval
    out of order, or beside a point it does not hold, goes into ``found``."""
    for fact in facts:
        reading = _read(fact.text)
        is_interval = fact.key.partition("|")[0].endswith(_INTERVAL_SUFFIX)
        if reading.interval is not None:
            low, high = reading.interval
            if low.value > high.value:
                found.append(
                    f"{fact.key}: {fact.page} shows the interval {fact.text!r} with its ends swapped. Fix: "
                    "print [low, high]"
                )
            elif (
                reading.point is not None
                and not is_interval
                and not low.value <= reading.point.value <= high.value
            ):
                found.append(
                    f"{fact.key}: {fact.page} shows {fact.text!r}, a point outside its own interval. Fix: "
                    "print the interval of this point"
                )
            exact = fact.value if is_interval and fact.value and len(fact.value) == 2 else None
            yield _Shown(Fact(interval_key(fact.key), fact.basis, fact.text, fact.page), (low, high), exact)
        if reading.point is not None and not is_interval:
            exact = fact.value[:1] if fact.value else None
            yield _Shown(fact, (reading.point,), exact)


def _where(shown: _Shown) -> str:
    basis = f"basis: {shown.fact.basis}" if shown.fact.basis else "no basis stated"
    return f"{shown.fact.page} shows {shown.fact.text!r} ({basis})"


def _one_basis(key: str, group: list[_Shown]) -> str | None:
    """The problem of figures of ``key`` on one basis: unrounded values that differ, or a figure that is not the
    value rounded to its decimals, or not printed as the first figure is (decimals, unit, number)."""
    exact_from = next((shown for shown in group if shown.exact), None)
    first = group[0]
    for shown in group:
        if (
            exact_from
            and shown.exact
            and not all(
                math.isclose(a, b, rel_tol=1e-8, abs_tol=1e-12)
                for a, b in zip(shown.exact, exact_from.exact, strict=False)
            )
        ):
            return _two_numbers(key, exact_from, shown, "measurement")
        if exact_from and not all(
            printed.matches(value) for printed, value in zip(shown.numbers, exact_from.exact, strict=False)
        ):
            exact = ", ".join(format(value, ".6g") for value in exact_from.exact)
            source = (
                "its own unrounded value (data-sb-value)"
                if shown is exact_from
                else f"the value {exact_from.fact.page} shows as {exact_from.fact.text!r}"
            )
            return (
                f"{key}: {_where(shown)}, but {source} is {exact}. Fix: print {exact} rounded to the figure's "
                "decimals, or state the basis (subset, limit, token cap, dtype, source) that makes it differ"
            )
        if len(shown.numbers) != len(first.numbers) or any(
            (a.digits, a.percent) != (b.digits, b.percent)
            for a, b in zip(shown.numbers, first.numbers, strict=True)
        ):
            return (
                f"{key}: {_where(first)} and {_where(shown)}: one fact printed two ways. Fix: print it with "
                "the same decimals and unit on every page"
            )
        if any(
            not math.isclose(a.value, b.value, abs_tol=1e-12)
            for a, b in zip(shown.numbers, first.numbers, strict=True)
        ):
            return _two_numbers(key, first, shown, "number")
    return None


def _two_numbers(key: str, first: _Shown, second: _Shown, one: str) -> str:
    return (
        f"{key}: {_where(first)} and {_where(second)} are two numbers on one basis. Fix: show one {one}, or "
        "state on both pages the basis (subset, limit, token cap, dtype, source) that makes them differ"
    )


def _bases_named(key: str, groups: list[list[_Shown]]) -> str | None:
    """The problem of figures of ``key`` on bases that differ and can be no one number, where no page shows a
    figure on each of those bases (the page naming both, e.g. a backbone page's "Elsewhere on this board")."""
    apart = [group[0] for group in groups]
    differing = [shown for shown in apart if any(not _can_be_one(shown, other) for other in apart)]
    if not differing:
        return None
    pages: dict[str, set[frozenset[str]]] = {}
    for group in groups:
        for shown in group:
            pages.setdefault(shown.fact.page, set()).add(basis_signature(shown.fact.basis))
    unstated = next((shown for shown in differing if not basis_signature(shown.fact.basis)), None)
    if unstated is not None:
        other = next(s for s in differing if not _can_be_one(unstated, s))
        return (
            f"{key}: {_where(unstated)} and {_where(other)}; the first names no basis (subset, limit, token cap, "
            "dtype, source) that makes it differ. Fix: show one number, or state on both pages the basis that makes "
            "them differ"
        )
    wanted = {basis_signature(shown.fact.basis) for shown in differing}
    if any(wanted <= named for named in pages.values()):
        return None
    first, second = differing[0], next(s for s in differing if not _can_be_one(differing[0], s))
    return (
        f"{key}: {_where(first)} and {_where(second)}, on bases that differ, and no page names both. Fix: "
        'list every basis of this figure on one page (e.g. the backbone page\'s "Elsewhere on this board"), '
        "or show one number"
    )


def _can_be_one(first: _Shown, second: _Shown) -> bool:
    """Whether two figures can be one number printed at two precisions (their rounding ranges overlap)."""
    if len(first.numbers) != len(second.numbers):
        return False
    return all(
        a.percent == b.percent and abs(a.value - b.value) <= 0.5 * (10.0**-a.digits + 10.0**-b.digits) + 1e-12
        for a, b in zip(first.numbers, second.numbers, strict=True)
    )
