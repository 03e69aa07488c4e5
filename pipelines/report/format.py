"""Number, time and interval formatting for the report (the Jinja filters; plain text out)."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from datetime import datetime


# --------------------------------------------------------------------------------------------
# Formatting (Jinja filters; every one returns plain text, escaped by the template)
# --------------------------------------------------------------------------------------------
def is_missing(value: Any) -> bool:
    """Whether ``value`` is None or a non-finite float (printed as a dash)."""
    return value is None or (isinstance(value, float) and not math.isfinite(value))


def fmt_num(value: Any, digits: int = 0) -> str:
    """``1,234`` / ``1,234.5``; ``–`` for a missing value."""
    if is_missing(value):
        return "–"
    return f"{float(value):,.{digits}f}"


def fmt_sig(value: Any, digits: int = 3) -> str:
    """Significant digits for small numbers, thousands separators for large ones."""
    if is_missing(value):
        return "–"
    number = float(value)
    if abs(number) >= 10 ** (digits - 1):
        return f"{number:,.0f}"
    return f"{number:.{digits}g}"


def fmt_pct(value: Any, digits: int = 1) -> str:
    """Return a fraction as a percentage, ``0.672`` -> ``67.2 %``."""
    if is_missing(value):
        return "–"
    return f"{100.0 * float(value):.{digits}f} %"


def fmt_pct_points(value: Any, digits: int = 1) -> str:
    """Return a value already in percent, ``13.4`` -> ``13.4 %``."""
    if is_missing(value):
        return "–"
    return f"{float(value):.{digits}f} %"


def fmt_hours(value: Any) -> str:
    """Hours with a readable precision: ``2.8 h``, ``27.4 h``, ``1,715 h``."""
    if is_missing(value):
        return "–"
    number = float(value)
    if number < 10:
        return f"{number:.2g} h" if number < 1 else f"{number:.1f} h"
    if number < 100:
        return f"{number:.1f} h"
    return f"{number:,.0f} h"


def fmt_interval(lo: Any, hi: Any, kind: str = "hours") -> str:
    """``lo – hi`` in the unit of ``kind``: ``hours``, ``pct``, ``pct_points``, ``num``, ``sig``."""
    fmt = {
        "hours": fmt_hours,
        "pct": fmt_pct,
        "pct_points": fmt_pct_points,
        "num": fmt_num,
        "sig": fmt_sig,
    }[kind]
    if is_missing(lo) and is_missing(hi):
        return "–"
    if is_missing(hi):
        return f"> {fmt(lo)}"
    if is_missing(lo):
        return f"< {fmt(hi)}"
    return f"{fmt(lo)} – {fmt(hi)}"


def fmt_headline(point: Any, lo: Any) -> str:
    """Return a headline MTBF: ``80,729 h``; ``≥ 16,858 h`` with no point (no failure).

    With no failure the headline has no point and no upper bound (null in the data): its answer
    is the one-sided lower bound ``lo``, written ``≥ lo`` (:data:`pipelines.analysis.fit.OPEN_END`).
    """
    if is_missing(point):
        return "–" if is_missing(lo) else f"≥ {fmt_hours(lo)}"
    return fmt_hours(point)


def fmt_time(value: datetime | None, pattern: str = "%Y-%m-%d %H:%M") -> str:
    """Return a UTC timestamp as text."""
    return "–" if value is None else value.strftime(pattern)


def fmt_minutes(value: Any) -> str:
    """Minutes with one decimal below an hour, else hours."""
    if is_missing(value):
        return "–"
    number = float(value)
    return f"{number:.1f} min" if number < 60 else f"{number / 60:.1f} h"
