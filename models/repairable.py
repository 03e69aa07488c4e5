"""Repairable systems: recurrence of failures on nodes that are repaired and kept in service.

A node is a repairable system: each failure is repaired and the node goes on, so its failures
form a point process in the node's age (or calendar time). These functions answer "is the
rate changing?" (Crow-AMSAA, Laplace), "how many failures per node by age t?" (mean cumulative
function) and "which nodes fail more than the fleet?" (lemon detection).

Event frames (:func:`mean_cumulative_function`, :func:`crow_amsaa_fleet`) have one row per
failure event with the unit, the event time and the unit's observation window ``[start, end]``
on the same clock (hours). A unit observed without any failure appears once with a null event
time, so that its window still counts in the risk set.

The trend tests (Crow-AMSAA, Laplace) live in :mod:`models.trend`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

import numpy as np
import polars as pl
from scipy import special, stats

from models.parametric import check_alpha, exponential_mtbf

if TYPE_CHECKING:
    from collections.abc import Sequence
    from datetime import datetime

    from numpy.typing import NDArray

__all__ = [
    "lemon_nodes",
    "mean_cumulative_function",
    "period_mtbf",
]

_MAX_CELLS = 4_000_000  # units x event times held in memory at once for the MCF variance


# --------------------------------------------------------------------------------------------
# Event frames
# --------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class EventArrays:
    """Unit windows and event times as arrays; ``event_unit`` indexes ``start_h``/``end_h``."""

    units: list[Any]
    start_h: NDArray[np.float64]
    end_h: NDArray[np.float64]
    event_unit: NDArray[np.int64]
    event_h: NDArray[np.float64]


def event_arrays(
    events: pl.DataFrame, unit_col: str, time_col: str, start_col: str, end_col: str
) -> EventArrays:
    """Validate an event frame and return its unit windows and event times as arrays.

    Parameters
    ----------
    events
        One row per failure event (a unit without failures once, with a null time).
    unit_col, time_col, start_col, end_col
        The unit, the event time and the unit's observation window, hours on one clock.

    Returns
    -------
    EventArrays
        Units, windows and events; ``event_unit`` indexes the windows.

    Raises
    ------
    ValueError
        On missing columns or invalid times; the message says how to fix them.
    """
    missing = [c for c in (unit_col, time_col, start_col, end_col) if c not in events.columns]
    if missing:
        msg = (
            f"events is missing column(s) {missing}; expected one row per failure with the unit, "
            "its event time and its observation window (a unit without failures: one row with "
            "a null event time)."
        )
        raise ValueError(msg)
    frame = events.select(
        pl.col(unit_col).alias("unit"),
        pl.col(time_col).cast(pl.Float64).alias("time"),
        pl.col(start_col).cast(pl.Float64).alias("start"),
        pl.col(end_col).cast(pl.Float64).alias("end"),
    )
    if frame.height == 0:
        msg = "events is empty: pass at least one unit (with a null event time if it never failed)."
        raise ValueError(msg)
    bad = frame.select(
        pl.any_horizontal(pl.col("unit", "start", "end").is_null()).sum().alias("null"),
        (~pl.col("start").is_finite() | ~pl.col("end").is_finite()).sum().alias("nonfinite"),
        (pl.col("end") < pl.col("start")).sum().alias("backwards"),
        (pl.col("time").is_not_null() & ~pl.col("time").is_finite()).sum().alias("nan_time"),
        (
            pl.col("time").is_not_null()
            & ((pl.col("time") < pl.col("start")) | (pl.col("time") > pl.col("end")))
        )
        .sum()
        .alias("outside"),
    ).row(0, named=True)
    hints = {
        "null": "a null unit, window start or window end",
        "nonfinite": "a NaN or infinite window bound",
        "backwards": "a window that ends before it starts",
        "nan_time": "a NaN event time (use null for a unit without failures)",
        "outside": "an event outside its unit's window (check the clock or the window)",
    }
    for key, hint in hints.items():
        if bad[key]:
            msg = f"{bad[key]} row(s) with {hint}."
            raise ValueError(msg)
    windows = frame.group_by("unit", maintain_order=True).agg(
        pl.col("start").first(),
        pl.col("end").first(),
        (pl.col("start").n_unique() + pl.col("end").n_unique() - 2).alias("n_extra"),
    )
    n_inconsistent = int((windows.get_column("n_extra") > 0).sum())
    if n_inconsistent:
        msg = (
            f"{n_inconsistent} unit(s) carry more than one observation window; give every row of "
            "a unit the same start and end (split a unit observed twice into two units)."
        )
        raise ValueError(msg)
    index = windows.select("unit").with_row_index("unit_index")
    occurred = frame.filter(pl.col("time").is_not_null()).join(index, on="unit", how="left")
    return EventArrays(
        units=windows.get_column("unit").to_list(),
        start_h=windows.get_column("start").to_numpy(),
        end_h=windows.get_column("end").to_numpy(),
        event_unit=occurred.get_column("unit_index").to_numpy().astype(np.int64),
        event_h=occurred.get_column("time").to_numpy(),
    )


# --------------------------------------------------------------------------------------------
# Mean cumulative function
# --------------------------------------------------------------------------------------------
def mean_cumulative_function(
    events: pl.DataFrame,
    *,
    unit_col: str = "unit_id",
    time_col: str = "time_h",
    start_col: str = "start_h",
    end_col: str = "end_h",
    alpha: float = 0.05,
) -> pl.DataFrame:
    """Nelson's mean cumulative function with the Lawless-Nadeau variance.

    Parameters
    ----------
    events
        One row per failure: the unit, the event time and the unit's observation window
        ``[start, end]`` (hours, same clock as the events, e.g. node age). A unit with no
        failures appears once with a null event time.
    unit_col, time_col, start_col, end_col
        Column names of the unit, event time (h), window start (h) and window end (h).
    alpha
        One minus the confidence level of the pointwise band.

    Returns
    -------
    polars.DataFrame
        One row per distinct event time: ``time_h``, ``n_at_risk`` (units whose window
        contains the time), ``n_events``, ``mcf`` (expected failures per unit by that time),
        ``se``, ``lo``, ``hi``.

    Raises
    ------
    ValueError
        On missing columns, null units or windows, an event outside its unit's window or a
        unit with two different windows.

    Notes
    -----
    ``mcf(t) = sum_{t_j <= t} d_j / n_j`` with ``d_j`` events at ``t_j`` and ``n_j`` units
    under observation at ``t_j`` (``start <= t_j <= end``), so units with different windows
    are handled (Nelson 2003, ch. 5). The variance is the robust estimator of Lawless and
    Nadeau (Technometrics 37, 1995), which needs no Poisson assumption::

        var(mcf(t)) = sum_i ( sum_{t_j <= t} delta_i(t_j) (d_i(t_j) - d_j / n_j) / n_j )^2

    with ``delta_i`` the at-risk indicator and ``d_i`` unit i's events. The band is
    log-transformed, ``mcf * exp(+-z se / mcf)``, so it stays positive.
    """
    alpha = check_alpha(alpha)
    ev = event_arrays(events, unit_col, time_col, start_col, end_col)
    times, event_index = np.unique(ev.event_h, return_inverse=True)
    n_times, n_units = times.size, len(ev.units)
    schema = {
        "time_h": pl.Float64,
        "n_at_risk": pl.Int64,
        "n_events": pl.Int64,
        "mcf": pl.Float64,
        "se": pl.Float64,
        "lo": pl.Float64,
        "hi": pl.Float64,
    }
    if n_times == 0:
        return pl.DataFrame(schema=schema)
    n_events = np.bincount(event_index, minlength=n_times).astype(np.float64)
    at_risk = np.searchsorted(np.sort(ev.start_h), times, side="right") - np.searchsorted(
        np.sort(ev.end_h), times, side="left"
    )
    mcf = np.cumsum(n_events / at_risk)
    mean_increment = n_events / at_risk  # d_j / n_j
    # Lawless-Nadeau: per unit, cumulative sum over event times of its centred increments
    variance = np.zeros(n_times)
    chunk = max(1, _MAX_CELLS // n_times)
    for first in range(0, n_units, chunk):
        last = min(n_units, first + chunk)
        in_window = (ev.start_h[first:last, None] <= times[None, :]) & (
            times[None, :] <= ev.end_h[first:last, None]
        )
        own = np.zeros((last - first, n_times))
        mine = (ev.event_unit >= first) & (ev.event_unit < last)
        np.add.at(own, (ev.event_unit[mine] - first, event_index[mine]), 1.0)
        centred = np.where(in_window, (own - mean_increment[None, :]) / at_risk[None, :], 0.0)
        variance += np.sum(np.cumsum(centred, axis=1) ** 2, axis=0)
    se = np.sqrt(variance)
    z = float(special.ndtri(1.0 - alpha / 2.0))
    with np.errstate(divide="ignore", invalid="ignore"):
        spread = np.where(mcf > 0, np.exp(z * se / mcf), 1.0)
    return pl.DataFrame(
        {
            "time_h": times,
            "n_at_risk": at_risk.astype(np.int64),
            "n_events": n_events.astype(np.int64),
            "mcf": mcf,
            "se": se,
            "lo": mcf / spread,
            "hi": mcf * spread,
        },
        schema=schema,
    )


# --------------------------------------------------------------------------------------------
# Lemon nodes
# --------------------------------------------------------------------------------------------
def lemon_nodes(
    counts: pl.DataFrame,
    *,
    unit_col: str = "unit_id",
    failures_col: str = "n_failures",
    exposure_col: str = "exposure_h",
    alpha: float = 0.01,
) -> pl.DataFrame:
    """Flag nodes that fail more often than the fleet rate explains.

    Parameters
    ----------
    counts
        One row per node: failures observed and hours observed.
    unit_col, failures_col, exposure_col
        Column names of the node, its failure count and its exposure (h, > 0).
    alpha
        Family-wise error rate: the chance that any healthy node is flagged.

    Returns
    -------
    polars.DataFrame
        In input order: the unit column, ``observed``, ``exposure_h``, ``expected``
        (fleet rate x exposure), ``rate_ratio`` (observed / expected), ``p_value``
        (``P(N >= observed)`` for ``N ~ Poisson(expected)``), ``p_adjusted`` (Bonferroni:
        ``min(1, m p)`` over the ``m`` nodes), ``lemon`` (``p_adjusted < alpha``) and ``rule``
        (the rule in words, with the fleet rate).

    Raises
    ------
    ValueError
        On missing columns, nulls, negative counts or non-positive exposure.

    Notes
    -----
    Bonferroni rather than Benjamini-Hochberg: a flag sends a node to repair, so the error
    to control is flagging any healthy node (family-wise), not the share of false flags.
    The fleet rate includes the lemons themselves, which makes the test slightly
    conservative.
    """
    alpha = check_alpha(alpha)
    missing = [c for c in (unit_col, failures_col, exposure_col) if c not in counts.columns]
    if missing:
        msg = f"counts is missing column(s) {missing}; expected one row per node."
        raise ValueError(msg)
    frame = counts.select(
        pl.col(unit_col),
        pl.col(failures_col).alias("observed"),
        pl.col(exposure_col).cast(pl.Float64).alias("exposure_h"),
    )
    if frame.height == 0:
        msg = "counts is empty: pass one row per node."
        raise ValueError(msg)
    observed = frame.get_column("observed").cast(pl.Float64).to_numpy()
    exposure = frame.get_column("exposure_h").to_numpy()
    if frame.null_count().sum_horizontal().item():
        msg = "counts has nulls; a node without failures has 0, not null."
        raise ValueError(msg)
    if np.any(observed < 0) or np.any(observed != np.round(observed)):
        msg = f"{failures_col} must hold non-negative whole counts."
        raise ValueError(msg)
    if not np.all(np.isfinite(exposure) & (exposure > 0)):
        msg = f"{exposure_col} must be positive and finite hours; drop nodes never observed."
        raise ValueError(msg)
    rate = float(observed.sum() / exposure.sum())
    expected = rate * exposure
    p_value = np.where(observed > 0, stats.poisson.sf(observed - 1.0, expected), 1.0)
    m = frame.height
    p_adjusted = np.minimum(1.0, p_value * m)
    rule = (
        f"lemon if P(N >= observed | Poisson(fleet rate x exposure)) x {m} nodes < {alpha:g} "
        f"(Bonferroni); fleet rate {rate:.4g} failures/h"
    )
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = np.where(expected > 0, observed / expected, np.nan)
    return frame.with_columns(
        pl.col("observed").cast(pl.Int64),
        pl.Series("expected", expected),
        pl.Series("rate_ratio", ratio),
        pl.Series("p_value", p_value),
        pl.Series("p_adjusted", p_adjusted),
        pl.Series("lemon", p_adjusted < alpha),
        pl.lit(rule).alias("rule"),
    )


# --------------------------------------------------------------------------------------------
# System MTBF per calendar period
# --------------------------------------------------------------------------------------------
_PERIODS = {"month": "1mo", "quarter": "1q", "year": "1y"}


def _aware_utc(values: pl.Series, name: str) -> pl.Series:
    dtype = values.dtype
    if not isinstance(dtype, pl.Datetime):
        msg = f"{name} must hold timestamps (datetime), not {dtype}."
        raise ValueError(msg)
    if dtype.time_zone is None:
        msg = (
            f"{name} holds naive timestamps; give time-zone-aware ones (UTC, as the warehouse "
            "stores them), e.g. series.dt.replace_time_zone('UTC')."
        )
        raise ValueError(msg)
    return values.dt.convert_time_zone("UTC").cast(pl.Datetime("us", "UTC"))


def _period_label(start: datetime, period: str) -> str:
    if period == "quarter":
        return f"{start.year}-Q{(start.month - 1) // 3 + 1}"
    if period == "month":
        return f"{start.year}-{start.month:02d}"
    return f"{start.year}"


def period_mtbf(
    failure_times: pl.Series | Sequence[datetime],
    *,
    window: tuple[datetime, datetime],
    period: str = "quarter",
    timezone: str = "UTC",
    alpha: float = 0.05,
) -> pl.DataFrame:
    """System-level mean time between failures per calendar period, with exact bounds.

    The system (a whole cluster) is observed over ``window``; each failure anywhere in it is
    one event of the system's failure process. Per calendar period (month, quarter or year in
    ``timezone``) the MTBF is the period's observed hours over its failures, with the exact
    chi-square bounds of a homogeneous Poisson process observed for a fixed time.

    Parameters
    ----------
    failure_times
        Time-zone-aware instants of the failures (a polars ``Datetime`` series or a sequence of
        aware ``datetime``), each inside ``[window[0], window[1])``. Failures at the same
        instant count separately: pass the distinct instants to count one system interruption
        per instant.
    window
        ``(start, end)`` of observation, time-zone-aware. The first and last periods are
        clipped to it.
    period
        ``"month"``, ``"quarter"`` or ``"year"``.
    timezone
        IANA zone whose calendar cuts the periods (a site's wall clock, e.g.
        ``"America/New_York"``).
    alpha
        One minus the confidence level of the bounds.

    Returns
    -------
    polars.DataFrame
        One row per calendar period overlapping the window, in time order: ``period`` (label
        ``2015-Q4``, ``2015-11`` or ``2015``), ``start_ts`` / ``end_ts`` (the observed part of
        the period, UTC), ``exposure_h`` (its length, h), ``n_failures``, ``mtbf_h``
        (``exposure_h / n_failures``; NaN with none), ``mtbf_lo_h`` / ``mtbf_hi_h`` (two-sided
        ``1 - alpha`` bounds ``2T / chi2(1 - alpha/2; 2r + 2)`` and ``2T / chi2(alpha/2; 2r)``;
        with no failure the one-sided lower bound and ``inf``) and ``mean_gap_h`` (mean of the
        gaps between successive failures inside the period, ``(last - first) / (n - 1)``,
        NaN with fewer than 2 failures).

    Raises
    ------
    ValueError
        On naive timestamps, a window that does not move forward, failures outside the window,
        an unknown period or time zone, or ``alpha`` outside (0, 1).

    See Also
    --------
    models.parametric.exponential_mtbf : the bounds for one count and exposure.

    Notes
    -----
    ``mean_gap_h`` is the estimator of studies that average the observed gaps (e.g. the
    quarterly system MTBF of Ostrouchov et al., SC'20, on Titan). It ignores the time before
    the period's first and after its last failure, so it reads low when a period's failures
    come in a burst; ``mtbf_h`` counts the whole period. Both agree for a busy period. The
    chi-square bounds assume failures arrive as a Poisson process within the period; bursts
    (several units failing together, repeat faults) make the real uncertainty wider.

    Examples
    --------
    >>> period_mtbf(times, window=(start, end), period="quarter", timezone="America/New_York")
    """
    alpha = check_alpha(alpha)
    times, start_ts, end_ts = _checked_failures(failure_times, window, period, timezone)
    every = _PERIODS[period]
    frame = (
        _calendar_periods(start_ts, end_ts, every, timezone)
        .join(_failures_by_period(times, every, timezone), on="period_start", how="left")
        .with_columns(
            pl.max_horizontal(pl.col("period_start"), pl.lit(start_ts)).alias("start_ts"),
            pl.min_horizontal(pl.col("period_end"), pl.lit(end_ts)).alias("end_ts"),
            pl.col("n_failures").fill_null(0).cast(pl.Int64),
        )
        .with_columns(
            ((pl.col("end_ts") - pl.col("start_ts")).dt.total_microseconds() / 3.6e9).alias(
                "exposure_h"
            )
        )
    )
    bounds_h = [
        exponential_mtbf(r, t, alpha=alpha)
        for r, t in zip(frame["n_failures"].to_list(), frame["exposure_h"].to_list(), strict=True)
    ]
    labels = [
        _period_label(ts, period)
        for ts in frame["period_start"].dt.convert_time_zone(timezone).to_list()
    ]
    return frame.select(
        pl.Series("period", labels, dtype=pl.String),
        "start_ts",
        "end_ts",
        "exposure_h",
        "n_failures",
        pl.Series("mtbf_h", [b[0] for b in bounds_h], dtype=pl.Float64),
        pl.Series("mtbf_lo_h", [b[1] for b in bounds_h], dtype=pl.Float64),
        pl.Series("mtbf_hi_h", [b[2] for b in bounds_h], dtype=pl.Float64),
        pl.when(pl.col("n_failures") >= 2)
        .then(pl.col("span_h") / (pl.col("n_failures") - 1))
        .otherwise(None)
        .fill_null(math.nan)
        .alias("mean_gap_h"),
    )


def _checked_failures(
    failure_times: pl.Series | Sequence[datetime],
    window: tuple[datetime, datetime],
    period: str,
    timezone: str,
) -> tuple[pl.Series, datetime, datetime]:
    """Return the failures and the window's ends in UTC; raise on any input that is not valid."""
    if period not in _PERIODS:
        msg = f"period must be one of {sorted(_PERIODS)}; got {period!r}."
        raise ValueError(msg)
    try:
        ZoneInfo(timezone)
    except (ZoneInfoNotFoundError, ValueError) as exc:
        msg = f"timezone {timezone!r} is not an IANA zone name such as 'UTC' or 'Europe/Paris'."
        raise ValueError(msg) from exc
    start_ts, end_ts = _aware_utc(pl.Series("window", list(window)), "window")
    if len(window) != 2 or not end_ts > start_ts:
        msg = "window must be (start, end) with end later than start."
        raise ValueError(msg)
    times = failure_times if isinstance(failure_times, pl.Series) else pl.Series(failure_times)
    if times.len() and times.null_count():
        msg = f"failure_times has {times.null_count()} null(s); drop them first."
        raise ValueError(msg)
    times = (
        _aware_utc(times, "failure_times")
        if times.len()
        else pl.Series([], dtype=pl.Datetime("us", "UTC"))
    )
    n_outside = int(((times < start_ts) | (times >= end_ts)).sum())
    if n_outside:
        msg = (
            f"{n_outside} failure(s) fall outside the window [{start_ts}, {end_ts}); filter "
            "them out or widen the window."
        )
        raise ValueError(msg)
    return times, start_ts, end_ts


def _calendar_periods(
    start_ts: datetime, end_ts: datetime, every: str, timezone: str
) -> pl.DataFrame:
    """Return the calendar periods (``period_start``, ``period_end``, UTC) the window overlaps."""
    local = pl.Series([start_ts, end_ts]).dt.convert_time_zone(timezone)
    first = local.dt.truncate(every)[0]
    bounds = pl.datetime_range(
        first, local[1], interval=every, time_zone=timezone, eager=True
    ).dt.convert_time_zone("UTC")
    if bounds[-1] < end_ts:
        bounds.append(bounds.tail(1).dt.offset_by(every))
    return pl.DataFrame({"period_start": bounds.head(-1), "period_end": bounds.tail(-1)}).filter(
        pl.col("period_end") > start_ts
    )


def _failures_by_period(times: pl.Series, every: str, timezone: str) -> pl.DataFrame:
    """Return each period's failures (``n_failures``) and first-to-last span (``span_h``)."""
    return (
        times.to_frame("t")
        .with_columns(
            pl.col("t")
            .dt.convert_time_zone(timezone)
            .dt.truncate(every)
            .dt.convert_time_zone("UTC")
            .alias("period_start")
        )
        .group_by("period_start")
        .agg(
            pl.len().alias("n_failures"),
            ((pl.col("t").max() - pl.col("t").min()).dt.total_microseconds() / 3.6e9).alias(
                "span_h"
            ),
        )
    )
