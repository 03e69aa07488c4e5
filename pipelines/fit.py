"""Fit reliability models on warehouse data and store the results (``fit_runs``, ``fit_results``).

I/O lives here; the statistics are in ``models``. A fit run reads unit lives from a view, fits every
component class (optionally split by cohort columns) with each distribution family, marks the AIC
choice, and stores one row per class x cohort x family under a fresh run id.
"""

from __future__ import annotations

import json
import uuid
from dataclasses import dataclass
from datetime import UTC, datetime
from importlib.metadata import version
from typing import TYPE_CHECKING

import polars as pl

from pipelines.warehouse import _identifier, query

if TYPE_CHECKING:
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
    """Fit every component class (x cohort) and family; the table ``fit_results`` stores."""
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
    return (
        fitted.with_columns(cohort=cohort_labels(fitted, cohorts))
        .drop(cohorts)
        .join(levels, on="component_class", how="left")
    )


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
