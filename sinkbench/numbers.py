"""What counts as a number: one definition for files, tables and pages (finite, and never a bool)."""

from __future__ import annotations

import math
from typing import Any


def is_finite_number(value: object) -> bool:
    """True for an int or float that is finite; False for bools, strings, None, NaN and infinities."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return False
    return math.isfinite(value)


def finite_or_none(value: object) -> float | None:
    """``value`` as a float when it is a finite number (numpy and pandas scalars included), else None (``pd.NA``,
    ``NaN`` and JSON's ``null`` too)."""
    if value is None or isinstance(value, (bool, str)):
        return None
    try:
        number = float(value)  # numpy and pandas scalars
    except (TypeError, ValueError):
        return None
    return number if math.isfinite(number) else None


def finite_values(values: dict[str, Any]) -> dict[str, Any]:
    """``values`` for JSON: a float, or each number of a tuple (an interval, as a list), by :func:`finite_or_none`;
    anything else as it is."""
    converted = {}
    for key, value in values.items():
        if isinstance(value, tuple):
            value = [finite_or_none(item) for item in value]
        elif isinstance(value, float):
            value = finite_or_none(value)
        converted[key] = value
    return converted
