"""How numbers appear on the leaderboard's pages: decimals, true minus signs, no negative zero, sortable cells,
intervals, and a dagger on derived values (computed from published numbers, not printed by the source)."""

from __future__ import annotations

import re
from collections.abc import Sequence

from markupsafe import Markup

from sinkbench.leaderboard.content import HeldOut, Prediction, Shown
from sinkbench.numbers import finite_or_none

#: What the dagger on a derived value says.
DERIVED_NOTE = "derived: computed from the source's published numbers, not printed by it"
_DAGGER = f'<sup class="sb-derived" title="{DERIVED_NOTE}">†</sup>'
_MINUS = "\u2212"
_DASH = "\u2013"


def format_number(value: float | None, digits: int = 2, signed: bool = False) -> str:
    """``value`` with ``digits`` decimals, a true minus sign, ``+`` when ``signed``; an en dash if missing.

    A value that rounds to zero is shown without a sign (never ``-0.00``).
    """
    if finite_or_none(value) is None:
        return _DASH
    if round(value, digits) == 0:
        value = 0.0
        signed = False
    text = f"{value:+.{digits}f}" if signed else f"{value:.{digits}f}"
    return text.replace("-", _MINUS)


def sort_value(value: float | None) -> str:
    """The ``data-sort`` attribute of a numeric cell: plain digits, empty when missing."""
    if finite_or_none(value) is None:
        return ""
    return format(value, ".10g")


def number_cell(
    value: float | None, digits: int = 2, signed: bool = False, tone: bool = False, fact: Markup | None = None
) -> Markup:
    """A table cell of a number (:func:`format_number`) with its ``data-sort`` key, red or green by sign if ``tone``,
    marked as a fact when ``fact`` holds its attributes (:func:`sinkbench.leaderboard.consistency.fact_attributes`).

    The templates' ``num_cell`` global: a Python function renders the thousands of cells of a large site several
    times faster than a Jinja macro. The markup is safe: only formatted numbers and escaped attributes go into it.
    """
    classes = "sb-num"
    if tone and value is not None and value < 0:
        classes += " sb-loss"
    elif tone and value is not None and value > 0:
        classes += " sb-gain"
    text = format_number(value, digits, signed)
    return Markup(f'<td class="{classes}" data-sort="{sort_value(value)}"{_valued(fact, value)}>{text}</td>')


def _valued(fact: Markup | None, value: float | None) -> str:
    """A fact's attributes with its unrounded value added (the consistency check rounds it to each figure's
    decimals); nothing when the figure is no fact."""
    if not fact:
        return ""
    exact = sort_value(value)
    return f'{fact} data-sb-value="{exact}"' if exact and "data-sb-value" not in fact else str(fact)


def shown_cell(number: Shown, signed: bool = False, tone: bool = False, fact: Markup | None = None) -> Markup:
    """A table cell of a :class:`Shown` number: its own decimals, and a dagger with an explanation when derived."""
    cell = number_cell(number.value, number.digits, signed, tone, fact)
    if not number.derived or number.value is None:
        return cell
    return Markup(str(cell).replace("</td>", f"{_DAGGER}</td>", 1))


def format_shown(number: Shown, signed: bool = False, fact: Markup | None = None) -> Markup:
    """A :class:`Shown` number in running text, with the dagger when derived (marked as a fact when ``fact``
    holds its attributes)."""
    text = format_number(number.value, number.digits, signed)
    if fact:
        text = f"<span{_valued(fact, number.value)}>{text}</span>"
    dagger = _DAGGER if number.derived and number.value is not None else ""
    return Markup(f"{text}{dagger}")


def format_billions(value: float | None) -> str:
    """A parameter count in billions with up to three significant digits (``8B``, ``1.7B``, ``0.135B``)."""
    return _DASH if finite_or_none(value) is None else f"{value:.3g}B"


def format_percent(value: float | None) -> str:
    """A fraction as a signed percentage with one decimal."""
    return _DASH if value is None else f"{format_number(100 * value, 1, signed=True)}%"


def format_share(value: float | None) -> str:
    """A fraction as a percentage with one decimal, unsigned (a level or a coverage: ``94.4%``)."""
    return _DASH if finite_or_none(value) is None else f"{format_number(100 * value, 1)}%"


def format_interval(value: Prediction | HeldOut | Sequence[float | None] | None, digits: int = 1) -> str:
    """``[low, high]`` of a prediction or a pair of numbers; an en dash if missing."""
    if value is None:
        return _DASH
    low, high = (value.low, value.high) if isinstance(value, (Prediction, HeldOut)) else value
    if low is None or high is None:
        return _DASH
    return f"[{format_number(low, digits)}, {format_number(high, digits)}]"


def css_token(value: str) -> str:
    """A value reduced to ``[a-z0-9-]`` for use in a class name."""
    return re.sub(r"[^a-z0-9-]+", "-", value.lower()).strip("-") or "unknown"
