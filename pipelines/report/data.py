"""Gather what the weekly reliability report needs from the warehouse, for one ISO week.

Reads only the report marts (``rpt_*``, ``fct_*``, ``dim_*`` views) and the model-output tables
(``fit_runs``/``fit_results``, ``projections``, ``predict_*``); the week window is applied as
``where`` filters on those views. Hands the numbers to ``models`` (survival curves, trend tests,
lemon detection) and returns plain polars frames and dicts in a :class:`ReportData`;
:mod:`pipelines.report.render` turns those into HTML. Nothing here writes to the warehouse:
when no stored fit run matches the current unit lives, the fits are computed for the report
from ``fct_component_lives`` and the report says so.

A *failure* is a job-stopping failure of a unit, whatever fixed it (a reset, a reboot, a reseat
or a replacement): a failure event of the fleet's telemetry that ends a life in
``fct_component_lives``. Replacements (repair tickets) are counted apart
(``rpt_replacements_by_class``). The class table reads the fit run's rates and headline from
``rpt_class_rates`` (:attr:`~pipelines.report.containers.FitInfo.rates`), the same rows the CLI
and the artifacts read.
"""

from __future__ import annotations

import logging
import math
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING

import polars as pl

from pipelines.report.containers import (
    FitInfo,
    GoodputSection,
    Replacements,
    ReportData,
    ReportHeadline,
)
from pipelines.report.curves import probability_plots, survival_curves, trend_analysis
from pipelines.report.failslow import read_fail_slow
from pipelines.report.goodput import read_realised_goodput
from pipelines.report.nodes import interruption_tables, nodes_to_watch, prediction_summary
from pipelines.report.period import (
    COMPARE_ALPHA,
    DEFAULT_TARGET_GPUS,
    N_QUARANTINE_SAMPLES,
    TRAILING_WEEKS,
    WEEK,
    Notes,
    ReportPeriod,
    chosen_fits,
    iso_week,
    midnight,
    query,
    read_window,
    report_period,
)

if TYPE_CHECKING:
    from collections.abc import Sequence

    import duckdb

log = logging.getLogger(__name__)


# --------------------------------------------------------------------------------------------
# Reading
# --------------------------------------------------------------------------------------------
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
        ``interruptions_week``, ``interruptions_trailing_mean``, ``failure_events_to_date``
        (every failure event from the window start to the week end, also those on units with no
        lives), ``fleet_mtbf_h`` (hours between
        failures anywhere in the fleet, window start to week end) with ``fleet_mtbf_lo_h`` /
        ``fleet_mtbf_hi_h``, ``node_mtbf_h``, ``failures_to_date`` and ``goodput`` (one dict per
        target scale).

    Raises
    ------
    ValueError
        On an empty warehouse, a malformed week or a week outside the observation window.
    """
    notes = Notes()
    period = report_period(*read_window(con), week)
    params = period.params()
    lives = query(con, "select * from fct_component_lives")
    from pipelines.report.inputs import read_fits

    fits, fit = read_fits(con, lives, notes)
    fleet = _fleet_numbers(con, params)
    classes = _class_table(con, params, fits, fit.rates, period)
    weekly = _weekly_failures(con, params, period)
    headline = _headline(con, params, period, fleet)
    _period_notes(period, notes)
    survival = survival_curves(lives, fits, notes)
    probability = probability_plots(lives, fits, notes=notes)
    mcf, trend = trend_analysis(con, params, period, notes)
    causes, restart, listed = interruption_tables(con, params)
    nodes, rule = nodes_to_watch(con, params, notes)
    goodput = read_goodput(con, period, fits, fit, tuple(target_gpus), notes)
    headline["goodput"] = goodput["headline"]
    files, quarantine, samples, checks = _quality(con)
    prediction = prediction_summary(con, notes)
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
        realised=read_realised_goodput(con, period.week),
        replacements=read_replacements(con),
        failslow=read_fail_slow(con, period.week),
    )


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


def _headline(
    con: duckdb.DuckDBPyConnection,
    params: dict[str, object],
    period: ReportPeriod,
    fleet: _FleetNumbers,
) -> ReportHeadline:
    """Return the headline's numbers (the template's ``headline``; ``goodput`` is added later)."""
    from models import exponential_mtbf

    interruptions_counts = query(
        con,
        """
        select
            count(*) filter (where end_ts >= $ws) as n_week,
            count(*) filter (where end_ts < $ws) as n_trailing
        from rpt_job_interruptions
        where end_ts >= $ts and end_ts < $we
        """,
        params,
    ).row(0, named=True)
    n_to_date = fleet.failures_to_date
    hours_to_date = (period.as_of - period.window_start).total_seconds() / 3600.0
    mtbf, mtbf_lo, mtbf_hi = exponential_mtbf(n_to_date, hours_to_date)
    node_mtbf = fleet.node_hours_to_date / n_to_date if n_to_date else math.nan
    trailing = period.n_trailing_weeks
    return {
        "week": period.week,
        "n_nodes": fleet.n_nodes,
        "n_gpus": fleet.n_gpus,
        "gpu_hours_week": fleet.gpu_hours_week,
        "gpu_hours_to_date": fleet.gpu_hours_to_date,
        "failures_week": fleet.failures_week,
        "failures_trailing_mean": fleet.failures_trailing / trailing if trailing else None,
        "interruptions_week": int(interruptions_counts["n_week"]),
        "interruptions_trailing_mean": (
            int(interruptions_counts["n_trailing"]) / trailing if trailing else None
        ),
        "failures_vs_trailing": _compare(fleet.failures_week, fleet.failures_trailing, trailing),
        "interruptions_vs_trailing": _compare(
            int(interruptions_counts["n_week"]), int(interruptions_counts["n_trailing"]), trailing
        ),
        "failures_to_date": n_to_date,
        "failure_events_to_date": fleet.failure_events_to_date,
        "fleet_mtbf_h": mtbf,
        "fleet_mtbf_lo_h": mtbf_lo,
        "fleet_mtbf_hi_h": mtbf_hi,
        "node_mtbf_h": node_mtbf,
        "trailing_weeks": trailing,
    }


def _period_notes(period: ReportPeriod, notes: Notes) -> None:
    """Note a week partly outside the observation window and a short trailing mean."""
    trailing = period.n_trailing_weeks
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


@dataclass(frozen=True)
class _FleetNumbers:
    """The fleet's size in the week, its GPU-hours and node-hours, and its failure counts."""

    n_nodes: int
    n_gpus: int
    gpu_hours_week: float
    gpu_hours_to_date: float
    node_hours_to_date: float
    failures_week: int
    failures_trailing: int  # in the trailing weeks before the week
    failures_to_date: int  # unit lives that ended in a failure, window start to week end
    failure_events_to_date: int  # every failure event, also on units with no lives


def _fleet_numbers(con: duckdb.DuckDBPyConnection, params: dict[str, object]) -> _FleetNumbers:
    """Fleet size in the week, GPU-hours and failure counts (see the module docstring)."""
    row = query(
        con,
        """
        with fleet as (
            select * from rpt_fleet_nodes
            where installed_ts < $we and coalesce(removed_ts, $w1) > $ws
        ),

        gpus as (
            select count(*) as n_gpus
            from rpt_fleet_gpus
            where node in (select node from fleet)
        ),

        gpu_lives as (
            select observed_from_ts, observed_to_ts
            from rpt_unit_lives
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
            from rpt_fleet_nodes
        ),

        failures as (
            select
                count(*) filter (where observed_to_ts >= $ws and observed_to_ts < $we) as n_week,
                count(*) filter (where observed_to_ts >= $ts and observed_to_ts < $ws)
                    as n_trailing,
                count(*) filter (where observed_to_ts < $asof) as n_to_date
            from rpt_unit_lives
            where failed
        ),

        events as (
            select coalesce(sum(n_failures), 0) as n_to_date
            from rpt_weekly_failures
            where week_start < $asof
        )

        select
            (select count(*) from fleet) as n_nodes,
            gpus.n_gpus,
            gpu_hours.week_h,
            gpu_hours.to_date_h,
            node_hours.to_date_h as node_hours_to_date,
            failures.n_week,
            failures.n_trailing,
            failures.n_to_date,
            events.n_to_date as n_events_to_date
        from gpus, gpu_hours, node_hours, failures, events
        """,
        params,
    ).row(0, named=True)
    return _FleetNumbers(
        n_nodes=int(row["n_nodes"]),
        n_gpus=int(row["n_gpus"]),
        gpu_hours_week=float(row["week_h"] or 0.0),
        gpu_hours_to_date=float(row["to_date_h"] or 0.0),
        node_hours_to_date=float(row["node_hours_to_date"] or 0.0),
        failures_week=int(row["n_week"]),
        failures_trailing=int(row["n_trailing"]),
        failures_to_date=int(row["n_to_date"]),
        failure_events_to_date=int(row["n_events_to_date"]),
    )


_RATE_COLUMNS = (
    "component_class",
    "unit_level",
    "n_units",
    "n_failures",
    "exposure_h",
    "node_days",
    "gpu_hours",
    "rate_per_h",
    "rate_lo_per_h",
    "rate_hi_per_h",
    "rate_per_1000_node_days",
    "rate_lo_per_1000_node_days",
    "rate_hi_per_1000_node_days",
    "rate_per_1e6_gpu_h",
    "rate_lo_per_1e6_gpu_h",
    "rate_hi_per_1e6_gpu_h",
    "headline_method",
    "headline_mtbf_h",
    "headline_mtbf_lo_h",
    "headline_mtbf_hi_h",
    "trend_verdict",
    "crow_amsaa_beta",
    "crow_amsaa_beta_lo",
    "crow_amsaa_beta_hi",
    "laplace_p",
)
"""The run's rates the class table shows (``rpt_class_rates``)."""

_LIFETIME_COLUMNS = {
    "family": pl.String,
    "shape": pl.Float64,
    "afr_pct": pl.Float64,
    "lifetime_method": pl.String,
    "lifetime_mtbf_h": pl.Float64,
    "lifetime_mtbf_lo_h": pl.Float64,
    "lifetime_mtbf_hi_h": pl.Float64,
    "lifetime_rmst_h": pl.Float64,
    "lifetime_extrapolated": pl.Boolean,
    "max_age_h": pl.Float64,
}
"""The lifetime fit shown beside the rates (null in a run stored before they existed)."""

HOURS_PER_YEAR = 8766.0


def _class_table(
    con: duckdb.DuckDBPyConnection,
    params: dict[str, object],
    fits: pl.DataFrame,
    rates: pl.DataFrame | None,
    period: ReportPeriod,
) -> pl.DataFrame:
    """Per class: the fit run's rates and headline, its failures by week, the lifetime fit.

    One row per class of the run's rates (``rates``: :attr:`FitInfo.rates`): the columns of
    :data:`_RATE_COLUMNS` as the run stored them, ``failures_fit`` (its failures),
    ``afr_observed_pct`` with ``_lo_`` / ``_hi_`` (the rate per unit-year, % = rate per hour x
    876,600, exact bounds), the failures of the week, the trailing mean and to date
    (``rpt_unit_lives``), and beside them the AIC-chosen lifetime fit (:data:`_LIFETIME_COLUMNS`,
    ``lifetime_*``: a model, never the headline). Most failures first.
    """
    counts = query(
        con,
        """
        select
            component_class,
            category,
            count(unit_id) filter (
                where failed and observed_to_ts >= $ws and observed_to_ts < $we
            ) as failures_week,
            count(unit_id) filter (
                where failed and observed_to_ts >= $ts and observed_to_ts < $ws
            ) as failures_trailing,
            count(unit_id) filter (where failed and observed_to_ts < $asof) as failures_to_date
        from rpt_unit_lives
        where is_seeded_class
        group by component_class, category
        """,
        params,
    )
    if rates is None or rates.height == 0:  # no lives: the table's columns with no row
        from models.failure_rates import FAILURE_RATE_COLUMNS

        keys: dict[str, pl.DataType | type[pl.DataType]] = {
            "component_class": pl.String,
            "cohort": pl.String,
        }
        rates = pl.DataFrame(schema=keys | FAILURE_RATE_COLUMNS)
    base = rates.filter(pl.col("cohort") == "all") if "cohort" in rates.columns else rates
    base = base.select(_RATE_COLUMNS)
    chosen = chosen_fits(fits)
    lifetime = chosen.select(
        "component_class",
        *[
            pl.col(c).cast(t) if c in chosen.columns else pl.lit(None, t).alias(c)
            for c, t in _LIFETIME_COLUMNS.items()
        ],
    )
    trailing = period.n_trailing_weeks
    per_year = HOURS_PER_YEAR * 100.0  # rate per unit-hour -> % per unit-year
    return (
        base.join(lifetime, on="component_class", how="left")
        .join(counts, on="component_class", how="left")
        .with_columns(
            pl.col("n_failures").alias("failures_fit"),
            pl.col("failures_week", "failures_trailing", "failures_to_date").fill_null(0),
            (
                pl.col("failures_trailing").fill_null(0) / trailing
                if trailing
                else pl.lit(None, pl.Float64)
            ).alias("failures_trailing_mean"),
            (pl.col("rate_per_h") * per_year).alias("afr_observed_pct"),
            (pl.col("rate_lo_per_h") * per_year).alias("afr_observed_lo_pct"),
            (pl.col("rate_hi_per_h") * per_year).alias("afr_observed_hi_pct"),
        )
        .sort(["n_failures", "failures_to_date", "component_class"], descending=[True, True, False])
    )


def read_replacements(con: duckdb.DuckDBPyConnection) -> Replacements:
    """Return the replacements per class from repair tickets, or what is missing without any.

    Reads ``rpt_replacements_by_class`` (replacement lives of ``fct_replacement_lives``): per
    class ``component_class``, ``unit_level``, ``n_replacements``, ``unit_years`` and the
    replacement AFR (% per unit-year) ``replacement_afr_pct`` with its exact Poisson bounds
    ``replacement_afr_lo_pct`` / ``replacement_afr_hi_pct`` (:func:`models.observed_rates`).

    Returns
    -------
    Replacements
        ``rows`` (:class:`~pipelines.analysis.headline.ReplacementRow`, most replacements first)
        and ``n_repair_tickets``, or no row and ``missing`` / ``supply``
        (:data:`pipelines.analysis.headline.NO_TICKETS`) when the warehouse holds no repair ticket.
    """
    from pipelines.analysis.headline import NO_TICKETS, replacement_afr

    rows = query(con, "select * from rpt_replacements_by_class").to_dicts()
    out = replacement_afr(rows)
    if not out:
        return {"rows": [], "missing": NO_TICKETS[0], "supply": NO_TICKETS[1]}
    return {"rows": out, "n_repair_tickets": int(rows[0]["n_repair_tickets"])}


def _weekly_failures(
    con: duckdb.DuckDBPyConnection, params: dict[str, object], period: ReportPeriod
) -> pl.DataFrame:
    """Failures per ISO week of the window (weeks cut at the window edges are marked)."""
    counts = query(
        con,
        """
        select week_start, n_failures from rpt_weekly_failures
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
    while midnight(monday) < period.window_end:
        start = midnight(monday)
        rows.append(
            {
                "week": iso_week(monday),
                "week_start": start,
                "n_failures": found.get(monday, 0),
                "full_week": start >= period.window_start and start + WEEK <= period.window_end,
                "is_report_week": start == period.week_start,
                "is_trailing": period.trailing_start <= start < period.week_start,
            }
        )
        monday += WEEK
    return pl.DataFrame(rows)


# --------------------------------------------------------------------------------------------
# Data quality
# --------------------------------------------------------------------------------------------
def _quality(
    con: duckdb.DuckDBPyConnection,
) -> tuple[pl.DataFrame, pl.DataFrame, pl.DataFrame, pl.DataFrame]:
    files = query(con, "select * from rpt_ingest_files order by source")
    quarantine = query(
        con, "select * from rpt_quarantine_reasons order by n_rows desc, target_table, reason"
    )
    samples = query(
        con,
        """
        select file_name, line_no, target_table, stage, reason_text as reason, raw
        from rpt_quarantine_lines
        order by loaded_at desc, source_file, line_no
        limit $limit
        """,
        {"limit": N_QUARANTINE_SAMPLES},
    )
    checks = query(
        con,
        "select * from rpt_quality_checks order by n_failed desc, target_table, expectation",
    )
    return files, quarantine, samples, checks


def read_goodput(
    con: duckdb.DuckDBPyConnection,
    period: ReportPeriod,
    fits: pl.DataFrame,
    fit: FitInfo,
    targets: tuple[int, ...],
    notes: Notes,
) -> GoodputSection:
    """Return the goodput section: the stored projection of the project stage, else one made now.

    The project stage (:func:`pipelines.report.inputs.refresh_inputs`, run by the
    ``weekly-report`` flow before the report) writes the projection for the fit run, week and
    target scales into ``report_projections``; it is read when its inputs still match. A
    read-only caller with no such row (``relia report`` on a warehouse nobody refreshed, or
    fits computed for this report) gets the same projection computed in memory.

    Returns
    -------
    GoodputSection
        ``headline``, ``curve``, ``targets``, ``knobs``, ``scenario``; the notes the models
        raised are added to ``notes``.
    """
    from pipelines.report.inputs import goodput_projection
    from pipelines.report.projection_store import read_report_projection

    stored = None
    if fit.run_id is not None:
        stored = read_report_projection(con, fit.run_id, period, targets)
    if stored is None:
        return goodput_projection(con, period.params(), fits, targets, notes, fit_run_id=fit.run_id)
    for text in stored["notes"]:
        notes.add(text)
    return stored
