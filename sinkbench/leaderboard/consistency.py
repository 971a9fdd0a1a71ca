"""One number per fact: every figure a page marks as a fact is collected, and two pages that show one fact as two
numbers must both say why (each states the basis it was obtained on: a subset, a limit, a token cap, a dtype, a
source), else the build fails.

Templates mark a figure with :func:`fact_attributes` on the element whose text is the figure::

    <td class="sb-num" data-sb-fact="score:HuggingFaceTB/SmolLM2-135M-Instruct@sha256:b179…:ifeval_strict"
        data-sb-basis="all 541 documents, up to 1,280 new tokens, float32">19.96</td>

The key names what the figure is of (:func:`fact_key`); the basis says how it was obtained and is also shown on
the page beside the figure. Figures generated for a script rather than a page (the Compare page's data) are handed
over as :class:`Fact` records. :meth:`FactBook.problems` reports, for each key, figures on one basis that
disagree beyond their printed precision, and figures on different bases where one of them states none.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from html import unescape

from markupsafe import Markup, escape

from sinkbench.errors import UserError

#: A marked figure: the attributes (escaped, so neither holds ``"`` or ``>``; found by the attribute itself, which
#: only :func:`fact_attributes` writes, instead of by scanning every tag) and the element's text.
_MARKED = re.compile(r'data-sb-fact="([^"]*)"(?: data-sb-basis="([^"]*)")?[^>]*>([^<]*)')
_NUMBER = re.compile(r"[-+]?\d+(?:\.(\d+))?")


class InconsistentFigures(UserError):
    """Two pages show one fact as two numbers and do not both say why; the message lists every such fact."""


@dataclass(frozen=True)
class Fact:
    """One figure as a page shows it: what it is of (``key``), the basis it was obtained on (``""``: none stated),
    its text, and the page (site-relative source path)."""

    key: str
    basis: str
    text: str
    page: str

    @property
    def number(self) -> tuple[float, int] | None:
        """The figure's value and its decimals, or None when its text holds no number (an en dash)."""
        found = _NUMBER.search(self.text.replace("\u2212", "-"))
        if found is None:
            return None
        return float(found.group(0)), len(found.group(1) or "")


def fact_key(kind: str, *parts: object) -> str:
    """The key of a fact: its kind (``s``, ``s_interval``, ``score``, ``delta``, ``predicted_held_out``,
    ``predicted_all_pairs``, ``rho``) and what it is of, joined by ``|`` (a model as ``id@revision``)."""
    return "|".join([kind, *("" if part is None else str(part) for part in parts)])


def model_ref(model_id: str, revision: str | None) -> str:
    """A model in a fact key: ``id@revision`` (``id@`` when the revision is not recorded)."""
    return f"{model_id}@{revision or ''}"


def fact_attributes(key: str, basis: str = "") -> Markup:
    """The attributes that mark an element's text as the figure of fact ``key`` on ``basis`` (escaped)."""
    return Markup(f' data-sb-fact="{escape(key)}" data-sb-basis="{escape(basis)}"')


def _agree(first: tuple[float, int], second: tuple[float, int]) -> bool:
    """Whether two printed figures can be one number: equal at the coarser of their two precisions."""
    digits = min(first[1], second[1])
    return abs(first[0] - second[0]) <= 0.5 * 10.0**-digits + 1e-9


class FactBook:
    """The facts of one build: those handed over when the pages were generated, and those read from each page."""

    def __init__(self, facts: Iterable[Fact] = ()) -> None:
        self.facts: list[Fact] = list(facts)

    def read_page(self, page: str, html: str) -> None:
        """Collect the marked figures of one rendered page."""
        self.facts += [
            Fact(unescape(key), unescape(basis or ""), unescape(text).strip(), page)
            for key, basis, text in _MARKED.findall(html)
        ]

    def problems(self) -> list[str]:
        """One line per silent mismatch: two figures of one fact on one basis that are not one number, or two
        figures of one fact that differ while one of them states no basis."""
        by_key: dict[str, list[tuple[Fact, tuple[float, int]]]] = {}
        for fact in self.facts:
            number = fact.number
            if number is not None:
                by_key.setdefault(fact.key, []).append((fact, number))
        found = []
        for key, shown in sorted(by_key.items()):
            for index, (first, a) in enumerate(shown):
                clash = next(
                    (
                        second
                        for second, b in shown[index + 1 :]
                        if not _agree(a, b)
                        and (first.basis == second.basis or not (first.basis and second.basis))
                    ),
                    None,
                )
                if clash is not None:
                    found.append(_describe(key, first, clash))
                    break
        return found


def _describe(key: str, first: Fact, second: Fact) -> str:
    def where(fact: Fact) -> str:
        return f"{fact.text} on {fact.page} ({f'basis: {fact.basis}' if fact.basis else 'no basis stated'})"

    return (
        f"{key}: shown as {where(first)} and as {where(second)}. Fix: show one number, or state on both pages the "
        "basis (subset, limit, token cap, dtype, source) that makes them differ."
    )
