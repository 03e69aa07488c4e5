"""Gather what the weekly reliability report needs from the warehouse, for one ISO week.

Reads views and model-output tables, hands the numbers to ``models`` (survival curves, trend
tests, lemon detection, goodput projection) and returns plain polars frames and dicts in a
:class:`ReportData`; :mod:`pipelines.report` turns those into HTML. Nothing here writes to the
warehouse: when no stored fit run matches the current unit lives, the fits are computed for the
report from ``fct_component_lives`` and the report says so.

Time conventions: the report week is ``[week_start, week_end)`` (Monday 00:00 UTC to the next
Monday); the trailing weeks are the up to four full weeks before it inside the observation
window; "to date" means from the window start to the end of the report week (``as_of``).
A *failure* is the end of a unit's life by a ``replace`` repair ticket (data contract §5).
"""

from __future__ import annotations

import json
import logging
import math
import re
import warnings
from dataclasses import asdict, dataclass, field, fields, replace
from datetime import UTC, date, datetime, timedelta
from typing import TYPE_CHECKING, Any

import numpy as np
import polars as pl

from pipelines import warehouse
from pipelines.errors import WarehouseEmptyError

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

    import duckdb

    from models.gof import ProbabilityPlot
    from models.scenario import ClassRate, Scenario

log = logging.getLogger(__name__)

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
_DAY = timedelta(days=1)
_WEEK = timedelta(days=7)
_PARAM = re.compile(r"\$([a-z_][a-z0-9_]*)")


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
        return self.week_end - _DAY

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
    """The ISO week label ``YYYY-Www`` of a date."""
    year, number, _ = day.isocalendar()
    return f"{year}-W{number:02d}"


def _midnight(day: date) -> datetime:
    return datetime(day.year, day.month, day.day, tzinfo=UTC)


def default_week(window_start: datetime, window_end: datetime) -> str:
    """The last full ISO week inside ``[window_start, window_end)``.

    A window shorter than a full week gives the week holding its last instant.
    """
    last_day = (window_end - _WEEK).date()
    monday = last_day - timedelta(days=last_day.weekday())
    if _midnight(monday) < window_start:
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
    week_start = _midnight(week_monday(label))
    week_end = week_start + _WEEK
    if week_end <= w0 or week_start >= w1:
        msg = (
            f"week {label} ({week_start:%Y-%m-%d} to {week_end:%Y-%m-%d}) lies outside the "
            f"observation window {w0:%Y-%m-%d} to {w1:%Y-%m-%d}; pick a week inside it or omit "
            f"the week for the last full one ({default_week(w0, w1)})"
        )
        raise ValueError(msg)
    n_trailing = 0
    while n_trailing < TRAILING_WEEKS and week_start - (n_trailing + 1) * _WEEK >= w0:
        n_trailing += 1
    return ReportPeriod(
        week=label,
        week_start=week_start,
        week_end=week_end,
        trailing_start=week_start - n_trailing * _WEEK,
        n_trailing_weeks=n_trailing,
        window_start=w0,
        window_end=w1,
    )


# --------------------------------------------------------------------------------------------
# Result containers
# --------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class FitInfo:
    """Which fits the report uses.

    Attributes
    ----------
    source
        ``"stored"`` (a fit run from ``fit_runs``) or ``"computed"`` (fitted for this report).
    run_id, created_at, window_start, window_end
        The stored run's id, time and data window (``None`` when computed).
    note
        One sentence saying where the fits come from, for the report's assumptions.
    """

    source: str
    run_id: str | None
    created_at: datetime | None
    window_start: datetime | None
    window_end: datetime | None
    note: str


@dataclass(frozen=True)
class SurvivalCurve:
    """Kaplan-Meier estimate and fitted parametric curve of one component class.

    Attributes
    ----------
    component_class, family
        The class and the AIC-chosen family of its fit.
    n_units, n_failures
        Lives and failures of the class.
    segments
        Age ranges ``(start_h, end_h)`` with at least ``MIN_AT_RISK`` units under observation;
        in each, both curves are conditional on surviving to its start (1 there).
    km
        ``timeline_h``, ``survival``, ``lo``, ``hi``, ``at_risk`` (Kaplan-Meier with left
        truncation) and ``segment`` (index into ``segments``).
    fitted
        ``age_h``, ``survival`` of the fitted distribution, and ``segment``.
    """

    component_class: str
    family: str
    n_units: int
    n_failures: int
    segments: list[tuple[float, float]]
    km: pl.DataFrame
    fitted: pl.DataFrame


@dataclass(frozen=True)
class ClassProbabilityPlots:
    """Probability plots of one component class and the AD statistic of every family.

    Attributes
    ----------
    component_class, n_units, n_failures
        The class, its lives and failures.
    plots
        Paper (``weibull``, ``lognormal``) -> the plot of that paper's own family
        (:func:`models.probability_plot`); a paper whose fit did not converge is left out.
    ad_statistics
        Family -> Anderson-Darling statistic (:func:`models.goodness_of_fit`), from the fit
        table's ``ad_statistic`` when it has one, else computed from its ``params_json``.
    """

    component_class: str
    n_units: int
    n_failures: int
    plots: dict[str, ProbabilityPlot]
    ad_statistics: dict[str, float]


@dataclass(frozen=True)
class ReportData:
    """Everything the weekly report shows, as frames and dicts (no HTML).

    Attributes
    ----------
    period, fit, generated_at
        The week and windows, the fits used, when the data was read.
    headline
        Scalars of the headline section (see :func:`read_report_data`).
    classes
        Per component class: failures this week, trailing weekly mean, fit results.
    weekly_failures
        ``week``, ``week_start``, ``n_failures``, ``full_week`` per ISO week of the window.
    survival
        Curves of the top classes (most failures, at least two).
    mcf, trend
        Mean cumulative failures per node since the window start, and the Laplace and
        Crow-AMSAA results with the overall verdict.
    causes, restart, interruptions
        Interruptions by root cause, restart overhead from the scheduler, the week's largest
        interruptions.
    nodes, lemon_rule
        Lemon nodes and the watch list with their evidence; the rule in words.
    goodput_curve, goodput_targets, knobs, scenario
        Goodput against scale with a 95 % band, the projection at each target scale, the
        what-if ranking and the scenario's assumptions.
    files, quarantine, quarantine_samples, checks
        Data quality: files per source, quarantine by reason, sample quarantined lines, Great
        Expectations results.
    prediction
        The latest failure predictor (``model``: id, windows, test metrics next to the two
        baselines; None when none was trained) and ``at_risk``: its latest scores at or above
        its threshold, with their evidence (:func:`_prediction`).
    notes
        Assumptions and model warnings, in words.
    probability
        Weibull- and log-normal-paper probability plots of every class with at least
        ``MIN_PLOT_FAILURES`` failures, most failures first (:func:`probability_plots`).
    """

    period: ReportPeriod
    fit: FitInfo
    generated_at: datetime
    headline: dict[str, Any]
    classes: pl.DataFrame
    weekly_failures: pl.DataFrame
    survival: list[SurvivalCurve]
    mcf: pl.DataFrame
    trend: dict[str, Any]
    causes: pl.DataFrame
    restart: pl.DataFrame
    interruptions: pl.DataFrame
    nodes: pl.DataFrame
    lemon_rule: str
    goodput_curve: pl.DataFrame
    goodput_targets: pl.DataFrame
    knobs: pl.DataFrame
    scenario: dict[str, Any]
    files: pl.DataFrame
    quarantine: pl.DataFrame
    quarantine_samples: pl.DataFrame
    checks: pl.DataFrame
    notes: list[str] = field(default_factory=list)
    prediction: dict[str, Any] = field(default_factory=dict)
    probability: list[ClassProbabilityPlots] = field(default_factory=list)


class _Notes:
    """Collects assumptions and the warnings the models raise, once each, in order."""

    def __init__(self) -> None:
        self.items: list[str] = []

    def add(self, text: str) -> None:
        if text not in self.items:
            self.items.append(text)

    def run(self, what: str, call: Callable[[], Any]) -> Any:
        """Call ``call`` and keep its warnings as notes (prefixed by ``what``)."""
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            result = call()
        for warning in caught:
            self.add(f"{what}: {warning.message}")
        return result


# --------------------------------------------------------------------------------------------
# Reading
# --------------------------------------------------------------------------------------------
def read_window(con: duckdb.DuckDBPyConnection) -> tuple[datetime, datetime]:
    """The observation window ``[W0, W1)``.

    Raises
    ------
    ValueError
        When the warehouse holds no telemetry to derive a window from.
    """
    frame = query(con, "select window_start, window_end from stg_observation_window")
    row = frame.row(0) if frame.height else None
    if row is None or row[0] is None or row[1] is None:
        msg = "the warehouse has no telemetry (no observation window); run `relia ingest` first"
        raise WarehouseEmptyError(msg)
    return row[0].astimezone(UTC), row[1].astimezone(UTC)


def read_report_data(
    con: duckdb.DuckDBPyConnection,
    *,
    week: str | None = None,
    target_gpus: Sequence[int] = DEFAULT_TARGET_GPUS,
) -> ReportData:
    """Read and compute everything the weekly report shows.

    Parameters
    ----------
    con
        Warehouse connection (read-only is enough).
    week
        ISO week ``YYYY-Www``; ``None`` takes the last full week of the observation window.
    target_gpus
        Job scales (GPUs) the goodput projection is reported at.

    Returns
    -------
    ReportData
        Frames and dicts; ``headline`` holds ``week``, ``n_nodes``, ``n_gpus``,
        ``gpu_hours_week``, ``gpu_hours_to_date``, ``failures_week``, ``failures_trailing_mean``,
        ``interruptions_week``, ``interruptions_trailing_mean``, ``fleet_mtbf_h`` (hours between
        failures anywhere in the fleet, window start to week end) with ``fleet_mtbf_lo_h`` /
        ``fleet_mtbf_hi_h``, ``node_mtbf_h``, ``failures_to_date`` and ``goodput`` (one dict per
        target scale).

    Raises
    ------
    ValueError
        On an empty warehouse, a malformed week or a week outside the observation window.
    """
    from models import exponential_mtbf

    notes = _Notes()
    period = report_period(*read_window(con), week)
    params = period.params()
    lives = query(con, "select * from fct_component_lives")
    fits, fit = _read_fits(con, lives, notes)
    fleet = _fleet_numbers(con, params)
    classes = _class_table(con, params, fits, period)
    weekly = _weekly_failures(con, params, period)
    interruptions_counts = query(
        con,
        """
        select
            count(*) filter (where end_ts >= $ws and end_ts < $we) as n_week,
            count(*) filter (where end_ts >= $ts and end_ts < $ws) as n_trailing
        from int_job_interruptions
        """,
        params,
    ).row(0, named=True)
    n_to_date = fleet["failures_to_date"]
    hours_to_date = (period.as_of - period.window_start).total_seconds() / 3600.0
    mtbf, mtbf_lo, mtbf_hi = exponential_mtbf(n_to_date, hours_to_date)
    node_mtbf = fleet["node_hours_to_date"] / n_to_date if n_to_date else math.nan
    trailing = period.n_trailing_weeks
    headline: dict[str, Any] = {
        "week": period.week,
        "n_nodes": fleet["n_nodes"],
        "n_gpus": fleet["n_gpus"],
        "gpu_hours_week": fleet["gpu_hours_week"],
        "gpu_hours_to_date": fleet["gpu_hours_to_date"],
        "failures_week": fleet["failures_week"],
        "failures_trailing_mean": fleet["failures_trailing"] / trailing if trailing else None,
        "interruptions_week": int(interruptions_counts["n_week"]),
        "interruptions_trailing_mean": (
            int(interruptions_counts["n_trailing"]) / trailing if trailing else None
        ),
        "failures_vs_trailing": _compare(
            fleet["failures_week"], fleet["failures_trailing"], trailing
        ),
        "interruptions_vs_trailing": _compare(
            int(interruptions_counts["n_week"]), int(interruptions_counts["n_trailing"]), trailing
        ),
        "failures_to_date": n_to_date,
        "fleet_mtbf_h": mtbf,
        "fleet_mtbf_lo_h": mtbf_lo,
        "fleet_mtbf_hi_h": mtbf_hi,
        "node_mtbf_h": node_mtbf,
        "trailing_weeks": trailing,
    }
    if period.week_start < period.window_start or period.week_end > period.window_end:
        notes.add(
            f"Week {period.week} is only partly inside the observation window: its figures "
            f"cover {period.week_hours / 24:.1f} days."
        )
    if trailing < TRAILING_WEEKS:
        notes.add(
            f"Only {trailing} full week(s) precede {period.week} inside the observation window; "
            "the trailing mean uses those."
        )
    survival = _survival_curves(lives, fits, notes)
    probability = probability_plots(lives, fits, notes=notes)
    mcf, trend = _trend(con, params, period, notes)
    causes, restart, listed = _interruptions(con, params)
    nodes, rule = _nodes(con, params, notes)
    goodput = _goodput(con, params, fits, tuple(target_gpus), notes)
    headline["goodput"] = goodput["headline"]
    files, quarantine, samples, checks = _quality(con)
    prediction = _prediction(con, notes)
    return ReportData(
        period=period,
        fit=fit,
        generated_at=datetime.now(UTC),
        headline=headline,
        classes=classes,
        weekly_failures=weekly,
        survival=survival,
        mcf=mcf,
        trend=trend,
        causes=causes,
        restart=restart,
        interruptions=listed,
        nodes=nodes,
        lemon_rule=rule,
        goodput_curve=goodput["curve"],
        goodput_targets=goodput["targets"],
        knobs=goodput["knobs"],
        scenario=goodput["scenario"],
        files=files,
        quarantine=quarantine,
        quarantine_samples=samples,
        checks=checks,
        notes=notes.items,
        prediction=prediction,
        probability=probability,
    )


AT_RISK_LIMIT = 25
"""GPUs listed in the report's at-risk table (highest probability first)."""


def _prediction(con: duckdb.DuckDBPyConnection, notes: _Notes) -> dict[str, Any]:
    """The latest failure predictor's test metrics and the GPUs its latest scores put at risk."""
    tables = query(
        con,
        "select count(*) as n from duckdb_tables() "
        "where table_name in ('predict_models', 'predict_scores')",
    ).item()
    if tables < 2:  # a warehouse written before prediction existed (read-only: no schema change)
        return {"model": None, "at_risk": [], "n_at_risk": 0, "scored_at": None}
    row = query(
        con,
        "select model_id, trained_at, horizon_h, threshold, test_start, test_end, metrics "
        "from predict_models order by trained_at desc limit 1",
    )
    if row.height == 0:
        return {"model": None, "at_risk": [], "n_at_risk": 0, "scored_at": None}
    model = row.row(0, named=True)
    metrics = json.loads(model.pop("metrics"))
    model["metrics"] = [
        {"name": name, **{k: metrics.get(key, {}).get(k) for k in _PREDICT_METRICS}}
        for name, key in (
            ("classifier", "model"),
            ("rule: drain after N SBEs in an hour", "sbe_rule"),
            ("never predict", "never_predict"),
        )
    ]
    model["n_sbe_per_h"] = metrics.get("sbe_rule", {}).get("n_sbe_per_h")
    model["sizes"] = metrics.get("sizes", {})
    latest = query(
        con,
        "select max(prediction_ts) as at, max(scored_at) as scored_at, "
        "count(*) filter (where at_risk) as n_at_risk from predict_scores "
        "where model_id = $id and prediction_ts = "
        "(select max(prediction_ts) from predict_scores where model_id = $id)",
        {"id": model["model_id"]},
    ).row(0, named=True)
    at_risk = query(
        con,
        "select host, gpu_index, uuid, prob, evidence from predict_scores "
        "where model_id = $id and at_risk and prediction_ts = $at "
        "order by prob desc, host, gpu_index limit $limit",
        {"id": model["model_id"], "at": latest["at"], "limit": AT_RISK_LIMIT},
    )
    rows = [{**r, "evidence": _evidence_text(r["evidence"])} for r in at_risk.to_dicts()]
    if latest["at"] is None:
        notes.add(
            f"Failure predictor {model['model_id']} has not scored the fleet yet: run "
            "`relia predict score` (the weekly-report deployment does before each report)."
        )
    return {
        "model": model,
        "at_risk": rows,
        "n_at_risk": int(latest["n_at_risk"] or 0),
        "prediction_ts": latest["at"],
        "scored_at": latest["scored_at"],
    }


_PREDICT_METRICS = (
    "precision", "alarm_precision", "recall", "pr_auc", "lead_time_h", "alarms_per_day",
    "n_failures",
)  # fmt: skip


def _evidence_text(evidence: str | None) -> str:
    """A score's evidence (JSON of feature -> value) as ``name value`` pairs."""
    if not evidence:
        return ""
    try:
        parsed = json.loads(evidence)
    except ValueError:
        return evidence
    if isinstance(parsed, dict):
        return ", ".join(f"{k} {_plain(v)}" for k, v in parsed.items())
    if isinstance(parsed, list):
        return ", ".join(_plain(v) for v in parsed)
    return _plain(parsed)


def _compare(observed: int, trailing_total: int, n_trailing: int) -> str:
    """``above``, ``below`` or ``in line with`` the trailing weekly mean (Poisson, 5 % each side).

    No trailing week gives ``"not comparable"``.
    """
    from scipy import stats

    if n_trailing == 0:
        return "not comparable"
    mean = trailing_total / n_trailing
    if mean == 0:
        return "above" if observed > 0 else "in line with"
    if float(stats.poisson.sf(observed - 1, mean)) < COMPARE_ALPHA:
        return "above"
    if float(stats.poisson.cdf(observed, mean)) < COMPARE_ALPHA:
        return "below"
    return "in line with"


def _read_fits(
    con: duckdb.DuckDBPyConnection, lives: pl.DataFrame, notes: _Notes
) -> tuple[pl.DataFrame, FitInfo]:
    """The chosen per-class fit rows: the newest stored run that matches the lives, else fresh.

    Only lifetime runs count: a repair-time run (``relia fit --lives stg_repairs``...) is never
    read as the fleet's MTBF.
    """
    from pipelines.fit import run_ids

    counts = (
        lives.group_by("component_class")
        .agg(pl.len().alias("n_units"), pl.col("failed").sum().alias("n_failures"))
        .sort("component_class")
    )
    lifetime_runs = run_ids(con, quantity="lifetime")
    runs = (
        con.execute(
            """
            select run_id, created_at, window_start, window_end
            from fit_runs
            where
                run_id in (select run_id from fit_results where cohort = 'all')
                and list_contains($ids, run_id)
            order by created_at desc
            limit 5
            """,
            {"ids": lifetime_runs},
        ).fetchall()
        if lifetime_runs
        else []
    )
    stale: list[str] = []
    for run_id, created_at, start, end in runs:
        rows = query(
            con,
            "select * from fit_results where run_id = $id and cohort = 'all' "
            "order by component_class, family",
            {"id": run_id},
        )
        stored = (
            rows.group_by("component_class")
            .agg(pl.col("n_units").first(), pl.col("n_failures").first())
            .sort("component_class")
            .with_columns(pl.col("n_units", "n_failures").cast(pl.Int64))
        )
        if stored.equals(counts.with_columns(pl.col("n_units", "n_failures").cast(pl.Int64))):
            text = (
                f"Fits: stored fit run {run_id} (created {created_at:%Y-%m-%d %H:%M} UTC, data "
                f"window {start:%Y-%m-%d} to {end:%Y-%m-%d}), AIC-chosen family per class."
            )
            if stale:
                text += f" Newer runs {', '.join(stale)} do not match the current lives."
            return rows, FitInfo("stored", run_id, created_at, start, end, text)
        stale.append(run_id)
    from pipelines.fit import fit_table

    computed = notes.run("Fit", lambda: fit_table(lives))
    text = (
        "Fits: computed for this report from fct_component_lives (no stored fit run matches the "
        "current unit lives"
        + (f"; runs {', '.join(stale)} were fitted on other data" if stale else "")
        + "); run `relia fit` to store one."
    )
    return computed, FitInfo("computed", None, None, None, None, text)


def _fleet_numbers(con: duckdb.DuckDBPyConnection, params: dict[str, object]) -> dict[str, Any]:
    """Fleet size in the week, GPU-hours and failure counts (see the module docstring)."""
    row = query(
        con,
        """
        with fleet as (
            select * from stg_fleet
            where installed_ts < $we and coalesce(removed_ts, $w1) > $ws
        ),

        gpus as (
            select count(*) as n_gpus
            from (select distinct host, slot from stg_inventory)
            where host in (select node from fleet)
        ),

        gpu_lives as (
            select observed_from_ts, observed_to_ts
            from int_component_lives
            where unit_level = 'gpu' and component_class = 'gpu'
        ),

        gpu_hours as (
            select
                sum(greatest(epoch(least(observed_to_ts, $we) - greatest(observed_from_ts, $ws)),
                             0)) / 3600.0 as week_h,
                sum(greatest(epoch(least(observed_to_ts, $asof) - observed_from_ts), 0)) / 3600.0
                    as to_date_h
            from gpu_lives
        ),

        node_hours as (
            select sum(greatest(epoch(least(coalesce(removed_ts, $w1), $asof)
                                      - greatest(installed_ts, $w0)), 0)) / 3600.0 as to_date_h
            from stg_fleet
        ),

        failures as (
            select
                count(*) filter (where observed_to_ts >= $ws and observed_to_ts < $we) as n_week,
                count(*) filter (where observed_to_ts >= $ts and observed_to_ts < $ws)
                    as n_trailing,
                count(*) filter (where observed_to_ts < $asof) as n_to_date
            from int_component_lives
            where failed
        )

        select
            (select count(*) from fleet) as n_nodes,
            gpus.n_gpus,
            gpu_hours.week_h,
            gpu_hours.to_date_h,
            node_hours.to_date_h as node_hours_to_date,
            failures.n_week,
            failures.n_trailing,
            failures.n_to_date
        from gpus, gpu_hours, node_hours, failures
        """,
        params,
    ).row(0, named=True)
    return {
        "n_nodes": int(row["n_nodes"]),
        "n_gpus": int(row["n_gpus"]),
        "gpu_hours_week": float(row["week_h"] or 0.0),
        "gpu_hours_to_date": float(row["to_date_h"] or 0.0),
        "node_hours_to_date": float(row["node_hours_to_date"] or 0.0),
        "failures_week": int(row["n_week"]),
        "failures_trailing": int(row["n_trailing"]),
        "failures_to_date": int(row["n_to_date"]),
    }


def _chosen(fits: pl.DataFrame) -> pl.DataFrame:
    return (
        fits.filter(pl.col("chosen").fill_null(False))
        .unique("component_class", keep="first", maintain_order=True)
        .sort("component_class")
    )


_HEADLINE_COLUMNS = (
    "unit_years",
    "afr_observed_pct",
    "afr_observed_lo_pct",
    "afr_observed_hi_pct",
    "headline_method",
    "headline_mtbf_h",
    "headline_mtbf_lo_h",
    "headline_mtbf_hi_h",
    "headline_rmst_h",
    "headline_extrapolated",
    "max_age_h",
)
"""Columns of a fit run that carries observed rates and headlines (null for an older run)."""


def _class_table(
    con: duckdb.DuckDBPyConnection,
    params: dict[str, object],
    fits: pl.DataFrame,
    period: ReportPeriod,
) -> pl.DataFrame:
    """Per class: failures this week, trailing mean, to date, and the chosen fit's figures."""
    counts = query(
        con,
        """
        select
            classes.component_class,
            classes.category,
            count(lives.unit_id) filter (
                where lives.failed and lives.observed_to_ts >= $ws and lives.observed_to_ts < $we
            ) as failures_week,
            count(lives.unit_id) filter (
                where lives.failed and lives.observed_to_ts >= $ts and lives.observed_to_ts < $ws
            ) as failures_trailing,
            count(lives.unit_id) filter (
                where lives.failed and lives.observed_to_ts < $asof
            ) as failures_to_date
        from seed_component_class as classes
        inner join int_component_lives as lives
            on classes.component_class = lives.component_class
        group by classes.component_class, classes.category
        """,
        params,
    )
    trailing = period.n_trailing_weeks
    chosen = _chosen(fits).select(
        "component_class",
        "unit_level",
        "family",
        "n_units",
        pl.col("n_failures").alias("failures_fit"),
        "exposure_h",
        "shape",
        "mtbf_h",
        "mtbf_lo_h",
        "mtbf_hi_h",
        "afr_pct",
        *[c for c in _HEADLINE_COLUMNS if c in fits.columns],
    ).with_columns(
        pl.lit(None, pl.Float64).alias(c) for c in _HEADLINE_COLUMNS if c not in fits.columns
    )
    hours_per_year = 8766.0
    return (
        chosen.join(counts, on="component_class", how="left")
        .with_columns(
            pl.col("failures_week", "failures_trailing", "failures_to_date").fill_null(0),
            (
                pl.col("failures_trailing").fill_null(0) / trailing
                if trailing
                else pl.lit(None, pl.Float64)
            ).alias("failures_trailing_mean"),
            # AFR bounds from the MTBF bounds (AFR = hours per year / MTBF); none for an open bound
            pl.when(pl.col("mtbf_hi_h").is_finite())
            .then(hours_per_year / pl.col("mtbf_hi_h") * 100)
            .alias("afr_lo_pct"),
            pl.when(pl.col("mtbf_lo_h").is_finite() & (pl.col("mtbf_lo_h") > 0))
            .then(hours_per_year / pl.col("mtbf_lo_h") * 100)
            .alias("afr_hi_pct"),
        )
        .sort(
            ["failures_fit", "failures_to_date", "component_class"], descending=[True, True, False]
        )
    )


def _weekly_failures(
    con: duckdb.DuckDBPyConnection, params: dict[str, object], period: ReportPeriod
) -> pl.DataFrame:
    """Failures per ISO week of the window (weeks cut at the window edges are marked)."""
    counts = query(
        con,
        """
        select date_trunc('week', observed_to_ts) as week_start, count(*) as n_failures
        from int_component_lives
        where failed
        group by all
        """,
        params,
    )
    found = {
        row["week_start"].astimezone(UTC).date(): int(row["n_failures"])
        for row in counts.iter_rows(named=True)
    }
    first = period.window_start.date() - timedelta(days=period.window_start.weekday())
    rows = []
    monday = first
    while _midnight(monday) < period.window_end:
        start = _midnight(monday)
        rows.append(
            {
                "week": iso_week(monday),
                "week_start": start,
                "n_failures": found.get(monday, 0),
                "full_week": start >= period.window_start and start + _WEEK <= period.window_end,
                "is_report_week": start == period.week_start,
                "is_trailing": period.trailing_start <= start < period.week_start,
            }
        )
        monday += _WEEK
    return pl.DataFrame(rows)


# --------------------------------------------------------------------------------------------
# Survival curves
# --------------------------------------------------------------------------------------------
def fitted_survival(family: str, params: dict[str, float], age_h: np.ndarray) -> np.ndarray:
    """Survival function of a fitted family at ``age_h`` (lifelines parameter names).

    ``exponential``: ``exp(-t / lambda_)``; ``weibull``: ``exp(-(t / lambda_) ** rho_)``;
    ``lognormal``: ``1 - Phi((log t - mu_) / sigma_)``; ``loglogistic``:
    ``1 / (1 + (t / alpha_) ** beta_)`` (the table in :mod:`models.survival`).
    """
    from models import FAMILIES, survival_function

    if family not in FAMILIES:
        msg = f"unknown family {family!r}"
        raise ValueError(msg)
    return survival_function(family, params, age_h)


def _survival_curves(lives: pl.DataFrame, fits: pl.DataFrame, notes: _Notes) -> list[SurvivalCurve]:
    top = (
        _chosen(fits)
        .filter(pl.col("n_failures") >= 2)
        .sort(["n_failures", "component_class"], descending=[True, False])
        .head(TOP_SURVIVAL_CLASSES)
    )
    curves = []
    for row in top.iter_rows(named=True):
        name = row["component_class"]
        part = lives.filter(pl.col("component_class") == name)
        params = {k: v for k, v in json.loads(row["params_json"] or "{}").items() if v is not None}
        km_parts, fitted_parts, spans = [], [], []
        for start_h, end_h in _risk_segments(
            part.get_column("entry_h").to_numpy(), part.get_column("exit_h").to_numpy()
        ):
            segment = _segment_curves(part, row["family"], params, start_h, end_h, notes)
            if segment is not None:
                km_parts.append(segment[0].with_columns(segment=pl.lit(len(spans))))
                fitted_parts.append(segment[1].with_columns(segment=pl.lit(len(spans))))
                spans.append((start_h, end_h))
        if not spans:
            notes.add(f"Survival curve of {name}: no age range with {MIN_AT_RISK} units at risk.")
            continue
        curves.append(
            SurvivalCurve(
                component_class=name,
                family=row["family"],
                n_units=int(row["n_units"]),
                n_failures=int(row["n_failures"]),
                segments=spans,
                km=pl.concat(km_parts),
                fitted=pl.concat(fitted_parts),
            )
        )
    return curves


def probability_plots(
    lives: pl.DataFrame,
    fits: pl.DataFrame,
    *,
    min_failures: int = MIN_PLOT_FAILURES,
    alpha: float = 0.05,
    notes: _Notes | None = None,
) -> list[ClassProbabilityPlots]:
    """Weibull- and log-normal-paper probability plots per class with ``min_failures`` or more.

    Parameters
    ----------
    lives
        Unit lives (``component_class``, ``entry_h``, ``exit_h``, ``failed``).
    fits
        A fit table (``fit_results`` rows or :func:`pipelines.fit.fit_table`); its
        ``cohort = 'all'`` rows give each family's AD statistic. A class without such rows
        (a fit split by cohort) is fitted here.
    min_failures
        Failures a class needs to be plotted.
    alpha
        One minus the level of the fitted line's band.
    notes
        Collects fits that did not converge (a paper left out); ``None``: drop them.

    Returns
    -------
    list of ClassProbabilityPlots
        Most failures first, then by class name.
    """
    from models import FAMILIES, fit_lives, goodness_of_fit_families, probability_plot

    counts = (
        lives.group_by("component_class")
        .agg(pl.len().alias("n_units"), pl.col("failed").cast(pl.Int64).sum().alias("n_failures"))
        .filter(pl.col("n_failures") >= min_failures)
        .sort(["n_failures", "component_class"], descending=[True, False])
    )
    pooled = fits.filter(pl.col("cohort") == "all") if "cohort" in fits.columns else fits
    out = []
    for row in counts.iter_rows(named=True):
        name = row["component_class"]
        part = lives.filter(pl.col("component_class") == name)
        plots = {}
        for paper in ("weibull", "lognormal"):
            try:
                plots[paper] = probability_plot(part, paper, paper=paper, alpha=alpha)
            except ValueError as error:
                if notes is not None:
                    notes.add(f"Probability plot of {name} on {paper} paper left out: {error}")
        rows = pooled.filter(pl.col("component_class") == name)
        if rows.height == 0:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # convergence is reported through the plots
                rows = fit_lives(part, by=())
        stored = (
            dict(zip(rows["family"], rows["ad_statistic"], strict=True))
            if "ad_statistic" in rows.columns
            else {}
        )
        params = {
            r["family"]: json.loads(r["params_json"] or "{}") for r in rows.iter_rows(named=True)
        }
        usable = {f: p for f, p in params.items() if p and all(v is not None for v in p.values())}
        missing = {f: p for f, p in usable.items() if stored.get(f) is None}
        computed = goodness_of_fit_families(part, missing) if missing else {}
        ad = {
            f: float(v)
            for f in FAMILIES
            if f in params and (v := computed.get(f, stored.get(f))) is not None
        }
        out.append(
            ClassProbabilityPlots(name, int(row["n_units"]), int(row["n_failures"]), plots, ad)
        )
    return out


def _risk_segments(entry_h: np.ndarray, exit_h: np.ndarray) -> list[tuple[float, float]]:
    """Age ranges ``[start, end)`` in which at least ``MIN_AT_RISK`` lives are under observation.

    With left truncation a fleet of two installation batches is watched at two age ranges, and
    few units (early replacements) in between; one failure among those few would drive the
    Kaplan-Meier estimate down for every later age. Ranges shorter than two weeks are dropped.
    """
    ages = np.unique(np.concatenate([[0.0], entry_h, exit_h]))
    at_risk = np.searchsorted(np.sort(entry_h), ages, side="right") - np.searchsorted(
        np.sort(exit_h), ages, side="right"
    )
    enough = at_risk >= min(MIN_AT_RISK, entry_h.size)
    spans = []
    i = 0
    while i < ages.size:
        if not enough[i]:
            i += 1
            continue
        j = i
        while j + 1 < ages.size and enough[j + 1]:
            j += 1
        end = float(ages[j + 1]) if j + 1 < ages.size else float(ages[j])
        if end - float(ages[i]) >= MIN_SPAN_H:
            spans.append((float(ages[i]), end))
        i = j + 1
    return spans


def _segment_curves(
    part: pl.DataFrame,
    family: str,
    params: dict[str, float],
    start_h: float,
    end_h: float,
    notes: _Notes,
) -> tuple[pl.DataFrame, pl.DataFrame] | None:
    """Kaplan-Meier and fitted survival over ``[start_h, end_h]``, conditional on ``start_h``."""
    from lifelines.exceptions import StatError

    from models import kaplan_meier

    inside = part.filter((pl.col("exit_h") > start_h) & (pl.col("entry_h") < end_h))
    if inside.height == 0:
        return None
    exit_h = inside.get_column("exit_h").to_numpy()
    failed = inside.get_column("failed").to_numpy() & (exit_h <= end_h)
    try:
        km = notes.run(
            "Kaplan-Meier",
            lambda: kaplan_meier(
                np.minimum(exit_h, end_h),
                failed,
                entry_h=np.maximum(inside.get_column("entry_h").to_numpy(), start_h),
            ),
        )
    except (StatError, ValueError) as error:
        notes.add(f"Kaplan-Meier over ages {start_h:.0f}-{end_h:.0f} h left out: {error}")
        return None
    age = np.linspace(start_h, end_h, 120)
    try:
        survival = fitted_survival(family, params, age)
        survival = survival / survival[0] if survival[0] > 0 else survival
    except (KeyError, ValueError):
        notes.add(f"No fitted {family} curve: parameters {params} unusable.")
        survival = np.full(age.size, np.nan)
    return (
        km.filter(pl.col("timeline_h") >= start_h),
        pl.DataFrame({"age_h": age, "survival": survival}),
    )


# --------------------------------------------------------------------------------------------
# Trend: MCF, Laplace, Crow-AMSAA
# --------------------------------------------------------------------------------------------
def _node_events(con: duckdb.DuckDBPyConnection, params: dict[str, object]) -> pl.DataFrame:
    """Failures per node, hours since the window start, and each node's observed interval.

    One row per failure (``time_h``) and one row with a null time per node without failures;
    ``start_h`` / ``end_h`` bound the node's time in service within ``[W0, as_of)``.
    """
    return query(
        con,
        """
        with nodes as (
            select
                node,
                epoch(greatest(installed_ts, $w0) - $w0) / 3600.0 as start_h,
                epoch(least(coalesce(removed_ts, $w1), $asof) - $w0) / 3600.0 as end_h
            from stg_fleet
        ),

        observed as (select * from nodes where end_h > start_h),

        failures as (
            select node, epoch(observed_to_ts - $w0) / 3600.0 as time_h
            from int_component_lives
            where failed and observed_to_ts < $asof
        )

        select observed.node as unit_id, failures.time_h, observed.start_h, observed.end_h
        from observed
        left join failures
            on observed.node = failures.node
            and failures.time_h >= observed.start_h
            and failures.time_h <= observed.end_h
        order by unit_id, failures.time_h
        """,
        params,
    )


def _exposure_clock(events: pl.DataFrame) -> tuple[np.ndarray, float]:
    """Event times on the fleet's cumulative node-hour clock, and the clock's total.

    A node in service during ``[start_h, end_h]`` adds one hour of exposure per hour, so a fleet
    that grows or shrinks does not look like a trend to a test that assumes a constant fleet.
    """
    windows = events.group_by("unit_id").agg(pl.col("start_h").first(), pl.col("end_h").first())
    start = windows.get_column("start_h").to_numpy()
    end = windows.get_column("end_h").to_numpy()
    times = events.get_column("time_h").drop_nulls().sort().to_numpy()
    clock = np.clip(times[:, None] - start[None, :], 0.0, (end - start)[None, :]).sum(axis=1)
    return clock, float(np.sum(end - start))


def _trend(
    con: duckdb.DuckDBPyConnection,
    params: dict[str, object],
    period: ReportPeriod,
    notes: _Notes,
) -> tuple[pl.DataFrame, dict[str, Any]]:
    from models import crow_amsaa_fleet, laplace_test, mean_cumulative_function

    events = _node_events(con, params)
    empty = pl.DataFrame(
        schema={"time_h": pl.Float64, "mcf": pl.Float64, "lo": pl.Float64, "hi": pl.Float64}
    )
    trend: dict[str, Any] = {"laplace": None, "crow_amsaa": None, "verdict": "not enough data"}
    n_events = events.get_column("time_h").drop_nulls().len() if events.height else 0
    if n_events == 0:
        notes.add("Trend: no failures up to the week end, so no trend test.")
        return empty, trend
    mcf = notes.run("MCF", lambda: mean_cumulative_function(events))
    clock, total = _exposure_clock(events)
    laplace = notes.run("Laplace test", lambda: laplace_test(clock, total))
    trend["laplace"] = laplace.to_dict()
    positive = events.filter(pl.col("time_h").is_null() | (pl.col("time_h") > 0))
    try:
        crow = notes.run("Crow-AMSAA", lambda: crow_amsaa_fleet(positive))
        trend["crow_amsaa"] = crow.to_dict()
    except ValueError as error:
        notes.add(f"Crow-AMSAA not fitted: {error}")
        crow = None
    verdicts = {laplace.verdict} | ({crow.verdict} if crow is not None else set())
    trend["verdict"] = verdicts.pop() if len(verdicts) == 1 else "mixed"
    trend["n_events"] = int(n_events)
    trend["node_hours"] = total
    trend["days"] = (period.as_of - period.window_start).total_seconds() / 86400.0
    return mcf, trend


# --------------------------------------------------------------------------------------------
# Interruptions
# --------------------------------------------------------------------------------------------
def _interruptions(
    con: duckdb.DuckDBPyConnection, params: dict[str, object]
) -> tuple[pl.DataFrame, pl.DataFrame, pl.DataFrame]:
    """Root-cause table, restart overhead and the week's largest interruptions."""
    causes = query(
        con,
        """
        with interruptions as (
            select * from int_job_interruptions where end_ts >= $w0 and end_ts < $asof
        ),

        by_cause as (
            select
                interruptions.cause_class,
                interruptions.attribution,
                count(*) filter (where interruptions.end_ts >= $ws) as n_week,
                count(*) as n_to_date,
                sum(interruptions.gpu_hours) as gpu_hours
            from interruptions
            group by interruptions.cause_class, interruptions.attribution
        )

        select
            coalesce(classes.category, by_cause.cause_class) as category,
            by_cause.*,
            by_cause.n_to_date / sum(by_cause.n_to_date) over () as share
        from by_cause
        left join seed_component_class as classes
            on by_cause.cause_class = classes.component_class
        order by by_cause.n_to_date desc, by_cause.cause_class, by_cause.attribution
        """,
        params,
    )
    restart = query(
        con,
        """
        with interruptions as (
            select
                interruptions.*,
                coalesce(classes.category, 'unknown') = 'hardware' as is_hardware
            from int_job_interruptions as interruptions
            left join seed_component_class as classes
                on interruptions.cause_class = classes.component_class
            where interruptions.end_ts >= $w0 and interruptions.end_ts < $asof
        ),

        grouped as (
            select
                case when is_hardware then 'hardware cause' else 'other causes' end as cause_group,
                count(*) as n_interruptions,
                count(restart_overhead_s) as n_requeued,
                median(restart_overhead_s) / 60.0 as median_min,
                quantile_cont(restart_overhead_s, 0.9) / 60.0 as p90_min,
                avg(restart_overhead_s) / 60.0 as mean_min,
                sum(gpu_hours) as gpu_hours
            from interruptions
            group by all
            union all
            select
                'all' as cause_group,
                count(*),
                count(restart_overhead_s),
                median(restart_overhead_s) / 60.0,
                quantile_cont(restart_overhead_s, 0.9) / 60.0,
                avg(restart_overhead_s) / 60.0,
                sum(gpu_hours)
            from interruptions
        )

        select * from grouped
        order by case cause_group when 'hardware cause' then 0 when 'other causes' then 1 else 2 end
        """,
        params,
    )
    listed = query(
        con,
        f"""
        select
            job_id,
            attempt,
            job_name,
            user_name,
            n_nodes,
            n_gpus,
            end_ts,
            state,
            cause_class,
            attribution,
            array_to_string(suspect_nodes, ', ') as suspect_nodes,
            restart_overhead_s / 60.0 as restart_min,
            gpu_hours
        from int_job_interruptions
        where end_ts >= $ws and end_ts < $we
        order by gpu_hours desc nulls last, end_ts
        limit {N_INTERRUPTIONS_LISTED}
        """,
        params,
    )
    return causes, restart, listed


# --------------------------------------------------------------------------------------------
# Nodes to look at
# --------------------------------------------------------------------------------------------
def _nodes(
    con: duckdb.DuckDBPyConnection, params: dict[str, object], notes: _Notes
) -> tuple[pl.DataFrame, str]:
    """Lemon test per node (failures to date against the fleet rate), with the evidence."""
    from models import lemon_nodes

    counts = query(
        con,
        """
        with nodes as (
            select
                node,
                epoch(least(coalesce(removed_ts, $w1), $asof) - greatest(installed_ts, $w0))
                / 3600.0 as exposure_h
            from stg_fleet
        ),

        failures as (
            select node, count(*) as n_failures
            from int_component_lives
            where failed and observed_to_ts < $asof
            group by node
        )

        select nodes.node, coalesce(failures.n_failures, 0) as n_failures, nodes.exposure_h
        from nodes
        left join failures on nodes.node = failures.node
        where nodes.exposure_h > 0
        order by nodes.node
        """,
        params,
    )
    if counts.height == 0 or counts.get_column("n_failures").sum() == 0:
        return pl.DataFrame(), "no failures up to the week end: no node stands out"
    tested = notes.run(
        "Lemon test", lambda: lemon_nodes(counts, unit_col="node", alpha=LEMON_ALPHA)
    )
    rule = str(tested.get_column("rule")[0])
    picked = (
        tested.filter(pl.col("observed") > 0)
        .sort(["lemon", "p_adjusted", "observed"], descending=[True, False, True])
        .filter(pl.col("lemon") | (pl.int_range(pl.len()) < N_WATCH_NODES))
    )
    evidence = query(
        con,
        """
        with picked as (select unnest($nodes::varchar[]) as node),

        failures as (
            select
                node,
                string_agg(
                    component_class || ' (' || slot || ', ' || strftime(observed_to_ts, '%Y-%m-%d')
                    || ')',
                    '; ' order by observed_to_ts
                ) as failures
            from int_component_lives
            where failed and observed_to_ts < $asof and node in (select node from picked)
            group by node
        ),

        interrupted as (
            select node, count(*) as n_interruptions
            from (
                select unnest(suspect_nodes) as node
                from int_job_interruptions
                where end_ts >= $w0 and end_ts < $asof
            )
            where node in (select node from picked)
            group by node
        ),

        incidents as (
            select
                host as node,
                count(*) filter (where is_failure) as n_failure_incidents,
                count(*) filter (where not is_failure) as n_other_incidents
            from int_incidents
            where first_ts >= $w0 and first_ts < $asof and host in (select node from picked)
            group by host
        )

        select
            picked.node,
            failures.failures,
            coalesce(interrupted.n_interruptions, 0) as n_interruptions,
            coalesce(incidents.n_failure_incidents, 0) as n_failure_incidents,
            coalesce(incidents.n_other_incidents, 0) as n_other_incidents
        from picked
        left join failures on picked.node = failures.node
        left join interrupted on picked.node = interrupted.node
        left join incidents on picked.node = incidents.node
        """,
        params | {"nodes": picked.get_column("node").to_list()},
    )
    nodes = picked.join(evidence, on="node", how="left").select(
        "node",
        "lemon",
        "observed",
        "expected",
        "rate_ratio",
        "p_adjusted",
        "exposure_h",
        "failures",
        "n_interruptions",
        "n_failure_incidents",
        "n_other_incidents",
    )
    return nodes, rule


# --------------------------------------------------------------------------------------------
# Goodput projection
# --------------------------------------------------------------------------------------------
_KNOB_LABELS = {
    "checkpoint_s": ("blocking checkpoint write", " s"),
    "detect_s": ("fault detection time", " s"),
    "reschedule_s": ("time to get replacement nodes", " s"),
    "reload_s": ("checkpoint reload time", " s"),
    "strategy": ("recovery strategy", ""),
}


def _measured_restart(
    con: duckdb.DuckDBPyConnection, params: dict[str, object]
) -> dict[str, float | None]:
    row = query(
        con,
        """
        select
            (select median(repair_h) from stg_repairs
             where action = 'replace' and opened_ts < $asof) as repair_h,
            (select median(n) from (select count(distinct slot) as n from stg_inventory
                                    group by host)) as gpus_per_node
        """,
        params,
    ).row(0, named=True)
    return {k: (float(v) if v is not None else None) for k, v in row.items()}


def _scaled_rate(rate: ClassRate, factor: float) -> ClassRate:
    return replace(
        rate,
        mtbf_h=rate.mtbf_h * factor,
        mtbf_lo_h=None if rate.mtbf_lo_h is None else rate.mtbf_lo_h * factor,
        mtbf_hi_h=None if rate.mtbf_hi_h is None else rate.mtbf_hi_h * factor,
    )


def _goodput(
    con: duckdb.DuckDBPyConnection,
    params: dict[str, object],
    fits: pl.DataFrame,
    targets: tuple[int, ...],
    notes: _Notes,
) -> dict[str, Any]:
    from models import Scenario, project, rates_from_fits
    from pipelines.project import build_scenario
    from pipelines.project_inputs import measured_restart_s, projection_fits

    empty: dict[str, Any] = {
        "headline": [],
        "curve": pl.DataFrame(),
        "targets": pl.DataFrame(),
        "knobs": pl.DataFrame(),
        "scenario": {},
    }
    chosen = _chosen(fits)
    with_failures = chosen.filter(pl.col("n_failures") > 0)
    left_out = sorted(chosen.filter(pl.col("n_failures") == 0).get_column("component_class"))
    if with_failures.height == 0:
        notes.add("Goodput: no failures in the fits, so no projection.")
        return empty
    rates = notes.run("Goodput rates", lambda: rates_from_fits(projection_fits(fits)))
    # a projection at given ages (a new system) uses each class's Weibull hazard, not the mean
    rates_at_ages = notes.run(
        "Goodput rates", lambda: rates_from_fits(projection_fits(fits), at_ages=True)
    )
    if left_out:
        notes.add(
            "Goodput: classes with no failure in the fit window are left out of the projection "
            "(rate taken as 0; their one-sided MTBF bounds are in section 2): "
            f"{', '.join(left_out)}."
        )
    measured = _measured_restart(con, params)
    gpus_per_node = int(measured["gpus_per_node"] or 8)
    repair_h = measured["repair_h"]
    defaults = Scenario()
    # the same scenario as `relia project --from-fits`: the scheduler's median requeue gap after
    # hardware interruptions, less detection, is the reschedule time
    restart = measured_restart_s(con)
    restart_s = restart["median_s"]
    base = build_scenario(
        {
            "n_gpus": targets[0],
            "gpus_per_node": gpus_per_node,
            "failure_domain_gpus": gpus_per_node,
            "repair_h": max(repair_h, 1.0) if repair_h is not None else defaults.repair_h,
            "fleet_age": "steady_state",
        },
        rates=rates,
        measured=restart,
    )
    if restart_s is None:
        notes.add(
            "Goodput: no requeued hardware interruption to measure the restart gap from; the "
            f"default reschedule time of {defaults.reschedule_s:g} s is used."
        )

    def at(n_gpus: int, **changes: Any) -> dict[str, Any]:
        scenario = replace(base, n_gpus=n_gpus, **changes)
        return notes.run(
            "Goodput",
            lambda: project(scenario, n_samples=N_SAMPLES, random_state=RANDOM_SEED),
        )

    curve_rows = []
    for n_gpus in sorted({*CURVE_GPUS, *targets}):
        out = at(n_gpus)
        curve_rows.append(
            {
                "n_gpus": n_gpus,
                "goodput": out["goodput"],
                "goodput_lo": out.get("goodput_lo", out["goodput"]),
                "goodput_hi": out.get("goodput_hi", out["goodput"]),
                "mtti_h": out["mtti_h"],
                "is_target": n_gpus in targets,
            }
        )
    target_rows, headline, knob_frames = [], [], []
    knob_baselines: list[dict[str, Any]] = []
    for n_gpus in targets:
        for age in ("steady_state", "new"):
            if age == "steady_state":
                out = at(n_gpus, fleet_age=age)
            else:
                out = at(n_gpus, fleet_age=age, rates=rates_at_ages)
            row = {
                "n_gpus": n_gpus,
                "fleet_age": age,
                "mtti_h": out["mtti_h"],
                "mtti_lo_h": out.get("mtti_h_lo"),
                "mtti_hi_h": out.get("mtti_h_hi"),
                "expected_interruptions": out["expected_interruptions"],
                "checkpoint_interval_min": out["checkpoint_interval_min"],
                "goodput": out["goodput"],
                "goodput_lo": out.get("goodput_lo"),
                "goodput_hi": out.get("goodput_hi"),
                "ettr": out["ettr"],
                "lost_gpu_h_total": out["lost_gpu_h_total"],
                "energy_lost_mwh": out["energy_lost_mwh"],
                "fleet_age_assumption": out["fleet_age_assumption"],
                "uncertainty": out["uncertainty"],
            }
            target_rows.append(row)
            if age == "steady_state":
                headline.append(row)
        knobs_at, held_at = _knob_ranking(base, n_gpus, rates, notes)
        knob_frames.append(knobs_at)
        knob_baselines.append(held_at)
    scenario = {
        "gpus_per_node": gpus_per_node,
        "failure_domain_gpus": gpus_per_node,
        "job_days": base.job_days,
        "checkpoint_s": base.checkpoint_s,
        "detect_s": base.detect_s,
        "reschedule_s": base.reschedule_s,
        "reschedule_measured": restart_s is not None,
        "restart_gap_s": restart_s,
        "n_restart_gaps": restart["n"],
        "reload_s": base.reload_s,
        "warmup_s": base.warmup_s,
        "repair_h": base.repair_h,
        "repair_measured": repair_h is not None,
        "strategy": base.strategy,
        "fleet_age": base.fleet_age,
        "fleet_age_assumption": target_rows[0]["fleet_age_assumption"],
        "rates": [
            {
                "component_class": r.component_class,
                "level": r.level,
                "mtbf_h": r.mtbf_h,
                "weibull_shape": r.weibull_shape,
                "extrapolated": r.extrapolated,
            }
            for r in rates
        ],
        "extrapolated": [r.component_class for r in rates if r.extrapolated],
        "left_out": left_out,
        "n_samples": N_SAMPLES,
        "targets": list(targets),
        "hot_spare_share": HOT_SPARE_SHARE,
        "knob_baselines": knob_baselines,
        "fleet_age_matters": any(r.weibull_shape != 1.0 for r in rates),
    }
    return {
        "headline": headline,
        "curve": pl.DataFrame(curve_rows),
        "targets": pl.DataFrame(target_rows),
        "knobs": pl.concat(knob_frames, how="vertical_relaxed"),
        "scenario": scenario,
    }


def _knob_ranking(
    base: Scenario,
    n_gpus: int,
    rates: tuple[ClassRate, ...],
    notes: _Notes,
) -> tuple[pl.DataFrame, dict[str, Any]]:
    """Gains over the report's baseline at ``n_gpus`` (as ``relia whatif`` defines them), plus
    doubling the worst class's MTBF; and the sweep that reproduces the ranking.

    The baseline is the report's scenario at ``n_gpus``, with a pool of hot spares of
    ``HOT_SPARE_SHARE`` of the job's domains (used when a knob switches the strategy to
    ``hot_spare`` or ``elastic``); every other knob is held at it. The returned sweep
    (``base``, ``baseline``, ``grid``, ``target_gpus``) run by ``relia whatif`` gives the same
    gains.
    """
    from models import knob_gains, knob_label, project

    n_domains = math.ceil(n_gpus / base.failure_domain_gpus)
    at_scale = replace(base, n_gpus=n_gpus, hot_spares=max(1, round(HOT_SPARE_SHARE * n_domains)))
    grid = {
        "checkpoint_s": [at_scale.checkpoint_s, 10.0],
        "detect_s": [at_scale.detect_s, 30.0],
        "reschedule_s": [at_scale.reschedule_s, min(at_scale.reschedule_s, 60.0)],
        "reload_s": [at_scale.reload_s, 60.0],
        "strategy": ["restart", "hot_spare", "elastic"],
    }
    grid = {k: list(dict.fromkeys(v)) for k, v in grid.items()}
    ranking = notes.run(
        "What-if ranking",
        lambda: knob_gains(at_scale, grid, n_samples=N_SAMPLES, random_state=RANDOM_SEED),
    )
    rows = []
    for row in ranking.gains.iter_rows(named=True):
        label, unit = _KNOB_LABELS.get(row["knob"], (row["knob"], ""))
        best = row["best_value"]
        if row["knob"] == "strategy" and best == "hot_spare":
            best = f"hot_spare ({at_scale.hot_spares} spare nodes)"
        change = f"{_plain(row['baseline_value'])}{unit} → {_plain(best)}{unit}".strip()
        if row["gain"] == 0:
            change = f"{_plain(row['baseline_value'])}{unit} (already the best)".strip()
        rows.append(
            {
                "n_gpus": n_gpus,
                "knob_name": row["knob"],
                "knob": label,
                "change": change,
                "goodput_baseline": row["goodput_baseline"],
                "goodput_best": row["goodput_best"],
                "gain": row["gain"],
                "gain_lo": row["gain_lo"],
                "gain_hi": row["gain_hi"],
                "within_uncertainty": row["within_uncertainty"],
                "gain_useful_gpu_h": row["gain_useful_gpu_h"],
            }
        )
    # which class costs the most interruptions at this scale: units x failures per unit-hour
    nodes = math.ceil(n_gpus / at_scale.gpus_per_node)
    worst = max(rates, key=lambda r: (n_gpus if r.level == "gpu" else nodes) / r.mtbf_h)
    better = tuple(_scaled_rate(r, 2.0) if r is worst else r for r in rates)
    reference = notes.run("Goodput", lambda: project(at_scale))
    improved = notes.run("Goodput", lambda: project(replace(at_scale, rates=better)))
    rows.append(
        {
            "n_gpus": n_gpus,
            "knob_name": None,
            "knob": f"{worst.component_class} reliability",
            "change": f"MTBF {worst.mtbf_h:,.0f} h → {2 * worst.mtbf_h:,.0f} h",
            "goodput_baseline": reference["goodput"],
            "goodput_best": improved["goodput"],
            "gain": improved["goodput"] - reference["goodput"],
            "gain_lo": None,
            "gain_hi": None,
            "within_uncertainty": None,
            "gain_useful_gpu_h": improved["useful_gpu_h"] - reference["useful_gpu_h"],
        }
    )
    held = {k: knob_label(k, getattr(at_scale, k)) for k in grid}
    fixed = {
        f.name: getattr(at_scale, f.name)
        for f in fields(at_scale)
        if f.name not in grid and f.name not in ("n_gpus", "rates")
    }
    fixed["rates"] = [asdict(r) for r in at_scale.rates]
    fixed["node_groups"] = [list(g) for g in at_scale.node_groups]
    sweep_spec = {
        "target_gpus": n_gpus,
        "base": fixed,
        "baseline": {k: getattr(at_scale, k) for k in grid},
        "grid": grid,
    }
    baseline = {
        "n_gpus": n_gpus,
        "held": ", ".join(
            f"{_KNOB_LABELS.get(k, (k, ''))[0]} {_plain(v)}{_KNOB_LABELS.get(k, (k, ''))[1]}"
            for k, v in held.items()
        )
        + f"; {at_scale.hot_spares} hot spare nodes, repairs {at_scale.repair_h:.3g} h",
        "uncertainty": ranking.uncertainty,
        "sweep": sweep_spec,
    }
    frame = pl.DataFrame(rows, schema_overrides={"knob_name": pl.String, "gain_lo": pl.Float64,
                                                 "gain_hi": pl.Float64,
                                                 "within_uncertainty": pl.Boolean})  # fmt: skip
    return frame.sort("gain", descending=True, maintain_order=True), baseline


def _plain(value: object) -> str:
    try:
        number = float(str(value))
    except ValueError:
        return str(value)
    return f"{number:,.0f}" if number == round(number) else f"{number:,.3g}"


# --------------------------------------------------------------------------------------------
# Data quality
# --------------------------------------------------------------------------------------------
def _quality(
    con: duckdb.DuckDBPyConnection,
) -> tuple[pl.DataFrame, pl.DataFrame, pl.DataFrame, pl.DataFrame]:
    files = query(
        con,
        """
        select
            source,
            target_table,
            count(*) as n_files,
            sum(n_read)::bigint as n_read,
            sum(n_loaded)::bigint as n_loaded,
            sum(n_quarantined)::bigint as n_quarantined,
            sum(n_ignored)::bigint as n_ignored,
            max(loaded_at) as last_loaded_at
        from raw_ingest_files
        group by source, target_table
        order by source
        """,
    )
    quarantine = query(
        con,
        """
        select target_table, stage, reason, count(*) as n_rows
        from raw_quarantine
        group by all
        order by n_rows desc, target_table, reason
        """,
    )
    samples = query(
        con,
        f"""
        select
            regexp_extract(source_file, '[^/\\\\]+$') as file_name,
            line_no,
            target_table,
            stage,
            reason,
            raw
        from raw_quarantine
        order by loaded_at desc, source_file, line_no
        limit {N_QUARANTINE_SAMPLES}
        """,
    )
    checks = query(
        con,
        """
        select
            target_table,
            expectation,
            count(*) as n_files,
            count(*) filter (where not success) as n_failed,
            sum(n_unexpected)::bigint as n_unexpected
        from raw_quality_results
        group by target_table, expectation
        order by n_failed desc, target_table, expectation
        """,
    )
    return files, quarantine, samples, checks


SECTIONS: tuple[tuple[str, str], ...] = (
    ("headline", "Headline"),
    ("failures", "Failures by component class"),
    ("survival", "Survival curves"),
    ("trend", "Trend"),
    ("interruptions", "Job interruptions by root cause"),
    ("nodes", "Nodes to look at"),
    ("prediction", "GPUs at risk"),
    ("goodput", "Goodput projection"),
    ("quality", "Data quality"),
)
"""Section anchors and headings, in report order (the tests and the template share them)."""
