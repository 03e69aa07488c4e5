"""Fit reliability models on warehouse data and store the results (``fit_runs``, ``fit_results``).

I/O lives here; the statistics are in ``models``. A fit run reads unit lives from a view, fits every
component class (optionally split by cohort columns) with each distribution family, marks the AIC
choice, and stores one row per class x cohort x family under a fresh run id.
"""

from __future__ import annotations

import json
import math
import uuid
import warnings
from dataclasses import dataclass
from datetime import UTC, datetime
from importlib.metadata import version
from typing import TYPE_CHECKING, Any

import polars as pl

from pipelines import warehouse
from pipelines.warehouse import _identifier, query

if TYPE_CHECKING:
    from pathlib import Path

    import duckdb

FAMILIES = ("exponential", "weibull", "lognormal", "loglogistic")
LIVES_VIEWS = ("fct_component_lives", "int_fault_lives")


@dataclass(frozen=True)
class FitRun:
    """A stored fit: its id, window and the result rows."""

    run_id: str
    window_start: datetime | None
    window_end: datetime | None
    results: pl.DataFrame


def read_lives(
    con: duckdb.DuckDBPyConnection, *, view: str = "fct_component_lives", dataset: str | None = None
) -> pl.DataFrame:
    """Unit lives from ``view`` (``fct_component_lives`` or ``int_fault_lives`` for a dataset)."""
    if view not in LIVES_VIEWS:
        msg = f"lives come from one of {LIVES_VIEWS}, not {view!r}"
        raise ValueError(msg)
    if dataset is None:
        return query(con, f"select * from {_identifier(view)}")
    return query(
        con, f"select * from {_identifier(view)} where dataset = $dataset", {"dataset": dataset}
    )


def read_window(con: duckdb.DuckDBPyConnection) -> tuple[datetime | None, datetime | None]:
    """The observation window of the warehouse's telemetry."""
    row = con.execute("select window_start, window_end from stg_observation_window").fetchone()
    return (row[0], row[1]) if row else (None, None)


def cohort_labels(frame: pl.DataFrame, by: list[str]) -> pl.Series:
    """``'all'`` or ``'batch=old,rack=r1'`` for each row of a fit table split by ``by``."""
    if not by:
        return pl.Series("cohort", ["all"] * frame.height, dtype=pl.String)
    parts = [pl.lit(f"{col}=") + pl.col(col).cast(pl.String).fill_null("null") for col in by]
    return frame.select(pl.concat_str(parts, separator=",").alias("cohort")).to_series()


def fit_table(
    lives: pl.DataFrame,
    *,
    by: list[str] | None = None,
    families: tuple[str, ...] = FAMILIES,
    alpha: float = 0.05,
) -> pl.DataFrame:
    """Fit every component class (x cohort) and family; the table ``fit_results`` stores.

    Besides :func:`models.fit_lives`' columns, ``ad_statistic`` is the Anderson-Darling distance
    (:func:`models.goodness_of_fit`) between each group's product limit and the row's fit: lower
    is a closer fit, for comparing families within a group. NaN where the fit has no finite
    parameters (not converged, or no failures).
    """
    from models import fit_lives

    cohorts = list(by or [])
    missing = [c for c in ["component_class", *cohorts] if c not in lives.columns]
    if missing:
        msg = f"lives lack the column(s) {missing}; cohort columns are {sorted(lives.columns)}"
        raise ValueError(msg)
    levels = (
        lives.group_by("component_class").agg(pl.col("unit_level").first())
        if "unit_level" in lives.columns
        else lives.select("component_class")
        .unique()
        .with_columns(unit_level=pl.lit(None, pl.String))
    )
    fitted = fit_lives(
        lives,
        by=("component_class", *cohorts),
        families=families,
        alpha=alpha,
    )
    fitted = fitted.with_columns(
        ad_statistic=ad_statistics(lives, fitted, by=["component_class", *cohorts])
    )
    return (
        fitted.with_columns(cohort=cohort_labels(fitted, cohorts))
        .drop(cohorts)
        .join(levels, on="component_class", how="left")
    )


def ad_statistics(lives: pl.DataFrame, fitted: pl.DataFrame, *, by: list[str]) -> pl.Series:
    """The Anderson-Darling statistic of each row of a :func:`models.fit_lives` table.

    ``lives`` are grouped by the same ``by`` columns; each row's ``params_json`` is scored
    against its group's lives (:func:`models.goodness_of_fit`). NaN where a parameter is missing
    or not finite.
    """
    from models import goodness_of_fit_families

    groups = lives.partition_by(by, as_dict=True, maintain_order=True) if by else {(): lives}
    wanted: dict[tuple[Any, ...], dict[str, dict[str, float]]] = {}
    for row in fitted.iter_rows(named=True):
        params = json.loads(row["params_json"] or "{}")
        if params and all(v is not None for v in params.values()):
            wanted.setdefault(tuple(row[c] for c in by), {})[row["family"]] = params
    scores = {key: goodness_of_fit_families(groups[key], fits) for key, fits in wanted.items()}
    values = [
        scores.get(tuple(row[c] for c in by), {}).get(row["family"], math.nan)
        for row in fitted.iter_rows(named=True)
    ]
    return pl.Series("ad_statistic", values, dtype=pl.Float64)


def store_fit(
    con: duckdb.DuckDBPyConnection,
    results: pl.DataFrame,
    *,
    by: list[str],
    window: tuple[datetime | None, datetime | None],
) -> str:
    """Write a fit run and its rows in one transaction; returns the run id."""
    run_id = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ-") + uuid.uuid4().hex[:8]
    versions = {pkg: version(pkg) for pkg in ("relia", "lifelines", "numpy", "scipy")}
    rows = results.with_columns(run_id=pl.lit(run_id))
    con.execute("begin transaction")
    try:
        con.execute(
            "insert into fit_runs values ($id, $now, $start, $end, $by, $versions)",
            {
                "id": run_id,
                "now": datetime.now(UTC),
                "start": window[0],
                "end": window[1],
                "by": ",".join(by),
                "versions": json.dumps(versions),
            },
        )
        con.register("incoming_fits", rows.to_arrow())
        con.execute("insert into fit_results by name select * from incoming_fits")
        con.unregister("incoming_fits")
        con.execute("commit")
    except BaseException:
        con.execute("rollback")
        raise
    return run_id


def latest_run_id(con: duckdb.DuckDBPyConnection) -> str | None:
    """The most recent fit run, if any."""
    row = con.execute("select run_id from fit_runs order by created_at desc limit 1").fetchone()
    return row[0] if row else None


def read_fit(con: duckdb.DuckDBPyConnection, run_id: str | None = None) -> pl.DataFrame:
    """The rows of a fit run (the latest when ``run_id`` is None)."""
    run_id = run_id or latest_run_id(con)
    if run_id is None:
        msg = "no fit run in the warehouse yet; run `relia fit` first"
        raise ValueError(msg)
    return query(
        con,
        "select * from fit_results where run_id = $id order by component_class, cohort, family",
        {"id": run_id},
    )


def read_node_recurrence(con: duckdb.DuckDBPyConnection) -> pl.DataFrame:
    """Failures per node on the calendar scale (``fct_node_recurrence``)."""
    return query(con, "select * from fct_node_recurrence order by node, time_h")


@dataclass(frozen=True)
class Trend:
    """Is the fleet improving or degrading, and which nodes fail too often."""

    crow_amsaa: Any
    laplace: Any
    lemons: pl.DataFrame
    mcf: pl.DataFrame
    n_nodes: int
    n_failures: int


def fleet_trend(
    recurrence: pl.DataFrame, *, alpha: float = 0.05, lemon_alpha: float = 0.01
) -> Trend:
    """Crow-AMSAA (pooled over nodes), Laplace test, lemon nodes and MCF from node recurrences."""
    from models import crow_amsaa_fleet, laplace_test, lemon_nodes, mean_cumulative_function

    events = recurrence.select(pl.col("node").alias("unit_id"), "time_h", "start_h", "end_h")
    failures = events.filter(pl.col("time_h").is_not_null())
    window_h = float(events["end_h"].max() or 0.0)
    counts = recurrence.group_by("node").agg(
        pl.col("time_h").is_not_null().sum().alias("n_failures"),
        (pl.col("end_h").first() - pl.col("start_h").first()).alias("exposure_h"),
        pl.col("component_class").drop_nulls().unique().sort().str.join(",").alias("classes"),
    )
    lemons = lemon_nodes(
        counts.rename({"node": "unit_id"}),
        unit_col="unit_id",
        failures_col="n_failures",
        exposure_col="exposure_h",
        alpha=lemon_alpha,
    ).join(counts.select(pl.col("node").alias("unit_id"), "classes"), on="unit_id", how="left")
    return Trend(
        crow_amsaa=crow_amsaa_fleet(events, alpha=alpha) if failures.height >= 2 else None,
        laplace=laplace_test(failures["time_h"].to_numpy(), window_h, alpha=alpha)
        if failures.height >= 2
        else None,
        lemons=lemons,
        mcf=mean_cumulative_function(events, alpha=alpha),
        n_nodes=counts.height,
        n_failures=failures.height,
    )


def run_fit(
    db_path: Path,
    *,
    by: list[str] | None = None,
    lives: str = "fct_component_lives",
    dataset: str | None = None,
    alpha: float = 0.05,
    lock_timeout_s: float = 60.0,
) -> dict[str, Any]:
    """Read lives, fit every class x cohort x family, store the run; ``{run_id, results}``."""
    with warehouse.connect(db_path, lock_timeout_s=lock_timeout_s) as con:
        warehouse.apply_schema(con)
        frame = read_lives(con, view=lives, dataset=dataset)
        if frame.height == 0:
            msg = f"no unit lives in {lives}; ingest telemetry first (relia ingest PATH)"
            raise ValueError(msg)
        results = fit_table(frame, by=by, alpha=alpha)
        window = read_window(con) if lives == "fct_component_lives" else (None, None)
        run_id = store_fit(con, results, by=list(by or []), window=window)
    return {"run_id": run_id, "results": results.with_columns(run_id=pl.lit(run_id))}


def run_cox(
    db_path: Path,
    covariates: list[str],
    *,
    lives: str = "fct_component_lives",
    dataset: str | None = None,
    alpha: float = 0.05,
) -> pl.DataFrame:
    """Cox proportional-hazards ratios per component class with failures, on ``covariates``."""
    from lifelines.exceptions import ConvergenceError

    from models import cox_ph
    from models.exceptions import ConvergenceWarning as ModelConvergenceWarning

    with warehouse.connect(db_path, read_only=True, lock_timeout_s=30) as con:
        frame = read_lives(con, view=lives, dataset=dataset)
    missing = [c for c in covariates if c not in frame.columns]
    if missing:
        msg = f"unknown covariate(s) {missing}; lives have columns {sorted(frame.columns)}"
        raise ValueError(msg)
    tables = []
    for (component_class,), group in frame.group_by("component_class", maintain_order=True):
        if group["failed"].sum() < 5 or any(group[c].n_unique() < 2 for c in covariates):
            continue
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", ModelConvergenceWarning)
            try:
                table = cox_ph(group, covariates, alpha=alpha)
            except ConvergenceError as error:
                # typically a covariate level with no failures: its log hazard ratio runs to -inf
                reason = str(error).split(".")[0]
                table = pl.DataFrame({"covariate": ["(not estimable)"], "note": [reason]})
        if caught and "note" not in table.columns:
            table = table.with_columns(note=pl.lit(str(caught[0].message).split(".")[0]))
        tables.append(table.with_columns(component_class=pl.lit(component_class)))
    if not tables:
        msg = "no component class has at least 5 failures and two levels of every covariate"
        raise ValueError(msg)
    return pl.concat(tables, how="diagonal_relaxed").select(
        "component_class", pl.exclude("component_class")
    )
