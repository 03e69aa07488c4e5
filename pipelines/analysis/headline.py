"""A class's rates and headline as every output writes them (CLI, report, artifacts).

A fit run stores its per-class rates once (``fit_rates``, read through ``rpt_class_rates``);
this module only words and formats those rows, so the CLI, the report and the artifacts cannot
disagree. The conventions:

- An open end (the MTBF of a class with no failure has no point and no upper bound) is null in
  data (SQL NULL, JSON null, an empty CSV field) and ``≥ x`` in text, where ``x`` is the
  one-sided lower bound; ``headline_method`` (``chi_square_bound``) says why
  (:data:`pipelines.analysis.fit.OPEN_END`).
- A run on replacement lives (``process`` ``replacement``) counts replacements, never failures:
  :func:`process_words` gives its nouns and :func:`replacement_names` its column names.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any, TypedDict, TypeVar

if TYPE_CHECKING:
    from collections.abc import Mapping

__all__ = [
    "NO_TICKETS",
    "PROCESS_WORDS",
    "ReplacementRow",
    "hours_text",
    "is_number",
    "process_words",
    "replacement_afr",
    "replacement_names",
    "sig_text",
    "span_text",
    "trend_text",
]

PROCESS_WORDS: dict[str, dict[str, str]] = {
    "failure": {
        "events": "failures",
        "event": "failure",
        "mean": "MTBF",
        "what": "interruption rates of the failure process (every job-stopping failure)",
    },
    "replacement": {
        "events": "replacements",
        "event": "replacement",
        "mean": "MTBR",
        "what": "replacement rates from replace tickets (replacement AFR, spares consumption)",
    },
}
"""Nouns of each process (``rpt_class_rates.process``) for titles and sentences."""


NO_TICKETS = (
    "the warehouse has no repair tickets",
    "ingest a repair-ticket CSV (repairs/: node, component class, serial out and in, opened, "
    "closed, action) with `relia ingest LANDING` to count replacements; failures need none",
)
"""What is missing without tickets, and what would supply it (replacements only)."""


class ReplacementRow(TypedDict):
    """A class's replacements and replacement AFR (:func:`replacement_afr`)."""

    component_class: str
    unit_level: str
    n_units: int
    n_replacements: int
    unit_years: float
    replacement_afr_pct: float
    replacement_afr_lo_pct: float
    replacement_afr_hi_pct: float


# reads rpt_replacements_by_class rows as the query returns them (a mart's columns)
def replacement_afr(rows: list[dict[str, Any]]) -> list[ReplacementRow]:
    """Return ``rpt_replacements_by_class`` rows with the replacement AFR; none without tickets.

    Each row keeps ``component_class``, ``unit_level``, ``n_units``, ``n_replacements`` and
    ``unit_years`` and gains the replacement AFR (% per unit-year) ``replacement_afr_pct`` with
    its exact Poisson bounds ``replacement_afr_lo_pct`` / ``replacement_afr_hi_pct``
    (:func:`models.observed_rates`). An empty list when the warehouse holds no repair ticket
    (``n_repair_tickets`` 0): a count of 0 there says nothing about replacements.
    """
    from models import observed_rates

    if not rows or not rows[0]["n_repair_tickets"]:
        return []
    out: list[ReplacementRow] = []
    for row in rows:
        afr = observed_rates(int(row["n_replacements"]), float(row["exposure_h"]))
        out.append(
            {
                "component_class": row["component_class"],
                "unit_level": row["unit_level"],
                "n_units": row["n_units"],
                "n_replacements": row["n_replacements"],
                "unit_years": row["unit_years"],
                "replacement_afr_pct": afr["afr_observed_pct"],
                "replacement_afr_lo_pct": afr["afr_observed_lo_pct"],
                "replacement_afr_hi_pct": afr["afr_observed_hi_pct"],
            }
        )
    return out


def process_words(process: str | None) -> dict[str, str]:
    """Return the nouns of ``process`` (``failure`` unless it is ``replacement``)."""
    return PROCESS_WORDS["replacement" if process == "replacement" else "failure"]


_RENAMES = (
    ("n_failures", "n_replacements"),
    ("failures", "replacements"),
    ("mtbf", "mtbr"),
    ("afr", "replacement_afr"),
    ("rate_", "replacement_rate_"),
    ("fit_per_1e9h", "replacements_per_1e9h"),
)


V = TypeVar("V")


def replacement_names(row: Mapping[str, V]) -> dict[str, V]:
    """``row`` with its column names saying replacements (``n_replacements``, ``mtbr_h``, ...).

    For the rows of a run on ``fct_replacement_lives``: ``n_failures`` becomes
    ``n_replacements``, ``mtbf`` ``mtbr`` (mean time between replacements), ``afr``
    ``replacement_afr``, ``rate_`` ``replacement_rate_``. The values are kept as they are: a
    JSON or table row (``relia fit --json``, ``--csv``, the fit artifact) is renamed at the edge.
    """
    out: dict[str, V] = {}
    for key, value in row.items():
        name = key
        for old, new in _RENAMES:
            if old in name and new not in name:
                name = name.replace(old, new, 1)
                break
        out[name] = value
    return out


def is_number(value: Any) -> bool:
    """Whether ``value`` is a finite number (None, NaN and infinities are not)."""
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def sig_text(value: Any, digits: int = 3) -> str:
    """``value`` to ``digits`` significant digits (``1,234`` from 100 up); ``-`` when missing."""
    if not is_number(value):
        return "-"
    number = float(value)
    if abs(number) >= 10 ** (digits - 1):
        return f"{number:,.0f}"
    return f"{number:.{digits}g}"


def hours_text(value: Any) -> str:
    """Hours as a whole number with separators (``80,729``); ``-`` when missing."""
    return f"{float(value):,.0f}" if is_number(value) else "-"


def span_text(value: Any, lo: Any, hi: Any, *, fmt: Any = sig_text) -> str:
    """``value (lo-hi)``; ``≥ lo`` with no point and no upper bound; ``value (≥ lo)`` open.

    ``fmt`` formats each number (:func:`sig_text`, :func:`hours_text`).
    """
    if not is_number(value) and not is_number(hi):
        return f"≥ {fmt(lo)}" if is_number(lo) else "-"
    if not is_number(hi):
        return f"{fmt(value)} (≥ {fmt(lo)})"
    return f"{fmt(value)} ({fmt(lo)}-{fmt(hi)})"


def trend_text(row: dict[str, Any]) -> str:
    """``homogeneous, β 1.17 (0.81-1.61)`` from a rates row; ``-`` with no trend test."""
    verdict = row.get("trend_verdict")
    if not verdict:
        return "-"
    beta = row.get("crow_amsaa_beta")
    if not is_number(beta):
        return str(verdict)
    lo, hi = row.get("crow_amsaa_beta_lo"), row.get("crow_amsaa_beta_hi")
    return f"{verdict}, β {span_text(beta, lo, hi, fmt=_two)}"


def _two(value: Any) -> str:
    return f"{float(value):.2f}" if is_number(value) else "-"
