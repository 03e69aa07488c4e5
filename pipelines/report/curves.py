"""Survival curves, probability plots and the fleet's failure trend, for the weekly report."""

from __future__ import annotations

import json
import warnings
from typing import TYPE_CHECKING, Any

import numpy as np
import polars as pl

from pipelines.report.containers import ClassProbabilityPlots, SurvivalCurve
from pipelines.report.period import (
    MIN_AT_RISK,
    MIN_PLOT_FAILURES,
    MIN_SPAN_H,
    TOP_SURVIVAL_CLASSES,
    Notes,
    ReportPeriod,
    chosen_fits,
    query,
)

if TYPE_CHECKING:
    import duckdb


# --------------------------------------------------------------------------------------------
# Survival curves
# --------------------------------------------------------------------------------------------
def survival_curves(lives: pl.DataFrame, fits: pl.DataFrame, notes: Notes) -> list[SurvivalCurve]:
    """Return the Kaplan-Meier and fitted survival curves of the classes with the most failures."""
    top = (
        chosen_fits(fits)
        .filter(pl.col("n_failures") >= 2)
        .sort(["n_failures", "component_class"], descending=[True, False])
        .head(TOP_SURVIVAL_CLASSES)
    )
    curves = []
    for row in top.iter_rows(named=True):
        name = row["component_class"]
        part = lives.filter(pl.col("component_class") == name)
        params = {k: v for k, v in json.loads(row["params_json"] or "{}").items() if v is not None}
        km_parts: list[pl.DataFrame] = []
        fitted_parts: list[pl.DataFrame] = []
        spans: list[tuple[float, float]] = []
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
    notes: Notes | None = None,
) -> list[ClassProbabilityPlots]:
    """Weibull- and log-normal-paper probability plots per class with ``min_failures`` or more.

    Parameters
    ----------
    lives
        Unit lives (``component_class``, ``entry_h``, ``exit_h``, ``failed``).
    fits
        A fit table (``fit_results`` rows or :func:`pipelines.analysis.fit.fit_table`); its
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
    notes: Notes,
) -> tuple[pl.DataFrame, pl.DataFrame] | None:
    """Kaplan-Meier and fitted survival over ``[start_h, end_h]``, conditional on ``start_h``."""
    from lifelines.exceptions import StatError

    from models import kaplan_meier, survival_function

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
        survival = survival_function(family, params, age)
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
            from rpt_fleet_nodes
        ),

        observed as (select * from nodes where end_h > start_h),

        failures as (
            select node, epoch(observed_to_ts - $w0) / 3600.0 as time_h
            from rpt_unit_lives
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


def trend_analysis(
    con: duckdb.DuckDBPyConnection,
    params: dict[str, object],
    period: ReportPeriod,
    notes: Notes,
) -> tuple[pl.DataFrame, dict[str, Any]]:
    """Return the fleet's mean cumulative function and its trend tests (Laplace, Crow-AMSAA)."""
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
