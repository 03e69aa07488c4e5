"""The report's week, its windows, its constants, and helpers every report module shares.

Time conventions: the report week is ``[week_start, week_end)`` (Monday 00:00 UTC to the next
Monday); the trailing weeks are the up to four full weeks before it inside the observation
window; "to date" means from the window start to the end of the report week (``as_of``).
"""

from __future__ import annotations

import re
import warnings
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from typing import TYPE_CHECKING, TypeVar

from pipelines import warehouse
from pipelines.runtime.errors import WarehouseEmptyError

if TYPE_CHECKING:
    from collections.abc import Callable

    import duckdb
    import polars as pl

WEEK_FORMAT = re.compile(r"^(\d{4})-W(\d{2})$")
TRAILING_WEEKS = 4
TOP_SURVIVAL_CLASSES = 4
MIN_PLOT_FAILURES = 3
"""Failures a class needs for its probability plots."""
MIN_AT_RISK = 20
MIN_SPAN_H = 14 * 24.0
DEFAULT_TARGET_GPUS = (16_384, 100_000)
N_SAMPLES = 1000
RANDOM_SEED = 20260
LEMON_ALPHA = 0.01
COMPARE_ALPHA = 0.05
N_WATCH_NODES = 5
N_INTERRUPTIONS_LISTED = 15
N_QUARANTINE_SAMPLES = 12
CURVE_GPUS = tuple(2**k for k in range(9, 18))
HOT_SPARE_SHARE = 0.02
DAY = timedelta(days=1)
WEEK = timedelta(days=7)
_PARAM = re.compile(r"\$([a-z_][a-z0-9_]*)")

_T = TypeVar("_T")


def query(
    con: duckdb.DuckDBPyConnection, sql: str, params: dict[str, object] | None = None
) -> pl.DataFrame:
    """Run ``sql`` with the ``$name`` values it uses out of ``params`` (DuckDB refuses extras)."""
    used = set(_PARAM.findall(sql))
    return warehouse.query(con, sql, {k: v for k, v in (params or {}).items() if k in used})


# --------------------------------------------------------------------------------------------
# The report period
# --------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class ReportPeriod:
    """The week a report covers and the windows its figures use.

    Attributes
    ----------
    week
        ISO week, ``2026-W30``.
    week_start, week_end
        Monday 00:00 UTC of the week and of the next week.
    trailing_start
        Start of the trailing weeks (``week_start`` minus ``n_trailing_weeks`` weeks).
    n_trailing_weeks
        Full weeks before the report week inside the observation window, at most four.
    window_start, window_end
        Observation window of the warehouse ``[W0, W1)``.
    """

    week: str
    week_start: datetime
    week_end: datetime
    trailing_start: datetime
    n_trailing_weeks: int
    window_start: datetime
    window_end: datetime

    @property
    def as_of(self) -> datetime:
        """End of the data the report uses: the week end, or the window end if earlier."""
        return min(self.week_end, self.window_end)

    @property
    def last_day(self) -> datetime:
        """Sunday of the report week (for display; the week ends at the next midnight)."""
        return self.week_end - DAY

    @property
    def week_hours(self) -> float:
        """Hours of the report week inside the observation window."""
        start = max(self.week_start, self.window_start)
        return max((self.as_of - start).total_seconds() / 3600.0, 0.0)

    def params(self) -> dict[str, object]:
        """Bind values for the SQL below: ``$w0 $w1 $ws $we $ts $asof``."""
        return {
            "w0": self.window_start,
            "w1": self.window_end,
            "ws": self.week_start,
            "we": self.week_end,
            "ts": self.trailing_start,
            "asof": self.as_of,
        }


def week_monday(week: str) -> date:
    """Monday of an ISO week written ``YYYY-Www``.

    Raises
    ------
    ValueError
        When ``week`` is not like ``2026-W30`` or names a week the year does not have.
    """
    match = WEEK_FORMAT.match(week.strip())
    if not match:
        msg = f"week must look like 2026-W30 (ISO year, 'W', two-digit week); got {week!r}"
        raise ValueError(msg)
    try:
        return date.fromisocalendar(int(match.group(1)), int(match.group(2)), 1)
    except ValueError as error:
        msg = f"{week!r} is not a week of that ISO year ({error})"
        raise ValueError(msg) from error


def iso_week(day: date) -> str:
    """Return the ISO week label ``YYYY-Www`` of a date."""
    year, number, _ = day.isocalendar()
    return f"{year}-W{number:02d}"


def midnight(day: date) -> datetime:
    """Return the UTC midnight that starts ``day``."""
    return datetime(day.year, day.month, day.day, tzinfo=UTC)


def default_week(window_start: datetime, window_end: datetime) -> str:
    """Return the last full ISO week inside ``[window_start, window_end)``.

    A window shorter than a full week gives the week holding its last instant.
    """
    last_day = (window_end - WEEK).date()
    monday = last_day - timedelta(days=last_day.weekday())
    if midnight(monday) < window_start:
        final = (window_end - timedelta(seconds=1)).date()
        monday = final - timedelta(days=final.weekday())
    return iso_week(monday)


def report_period(window_start: datetime, window_end: datetime, week: str | None) -> ReportPeriod:
    """Resolve the report week (default: the last full week) against the window.

    Raises
    ------
    ValueError
        When the week does not overlap the observation window.
    """
    w0, w1 = window_start.astimezone(UTC), window_end.astimezone(UTC)
    label = default_week(w0, w1) if week is None else week.strip()
    week_start = midnight(week_monday(label))
    week_end = week_start + WEEK
    if week_end <= w0 or week_start >= w1:
        msg = (
            f"week {label} ({week_start:%Y-%m-%d} to {week_end:%Y-%m-%d}) lies outside the "
            f"observation window {w0:%Y-%m-%d} to {w1:%Y-%m-%d}; pick a week inside it or omit "
            f"the week for the last full one ({default_week(w0, w1)})"
        )
        raise ValueError(msg)
    n_trailing = 0
    while n_trailing < TRAILING_WEEKS and week_start - (n_trailing + 1) * WEEK >= w0:
        n_trailing += 1
    return ReportPeriod(
        week=label,
        week_start=week_start,
        week_end=week_end,
        trailing_start=week_start - n_trailing * WEEK,
        n_trailing_weeks=n_trailing,
        window_start=w0,
        window_end=w1,
    )


class Notes:
    """Collects assumptions and the warnings the models raise, once each, in order."""

    def __init__(self) -> None:
        self.items: list[str] = []

    def add(self, text: str) -> None:
        """Keep ``text`` unless it is already there."""
        if text not in self.items:
            self.items.append(text)

    def run(self, what: str, call: Callable[[], _T]) -> _T:
        """Call ``call`` and keep its warnings as notes (prefixed by ``what``)."""
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            result = call()
        for warning in caught:
            self.add(f"{what}: {warning.message}")
        return result


def chosen_fits(fits: pl.DataFrame) -> pl.DataFrame:
    """Return the AIC-chosen row of each component class of a fit table, by class name."""
    import polars as pl

    return (
        fits.filter(pl.col("chosen").fill_null(False))
        .unique("component_class", keep="first", maintain_order=True)
        .sort("component_class")
    )


def plain(value: object) -> str:
    """Return a number without trailing noise (``1,024``, ``0.25``); anything else as text."""
    try:
        number = float(str(value))
    except ValueError:
        return str(value)
    return f"{number:,.0f}" if number == round(number) else f"{number:,.3g}"


def read_window(con: duckdb.DuckDBPyConnection) -> tuple[datetime, datetime]:
    """Return the observation window ``[W0, W1)``.

    Raises
    ------
    ValueError
        When the warehouse holds no telemetry to derive a window from.
    """
    frame = query(con, "select window_start, window_end from rpt_observation_window")
    row = frame.row(0) if frame.height else None
    if row is None or row[0] is None or row[1] is None:
        msg = "the warehouse has no telemetry (no observation window); run `relia ingest` first"
        raise WarehouseEmptyError(msg)
    return row[0].astimezone(UTC), row[1].astimezone(UTC)
