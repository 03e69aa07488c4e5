"""The warehouse's schema and views: the only code that knows where ``sql/`` is.

Views come from ``sql/<layer>/<stem>.sql`` in layer order (staging, intermediate, marts), each a
bare ``select`` wrapped as ``create or replace view <stem> as ...``. Tables come from
``sql/schema/*.sql`` (idempotent DDL), seed tables from ``sql/seeds/``.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import TYPE_CHECKING

from pipelines.warehouse.connection import identifier as _identifier  # a SQL guard by that name

if TYPE_CHECKING:
    import duckdb

SQL_DIR = Path(__file__).resolve().parents[2] / "sql"
VIEW_LAYERS = ("staging", "intermediate", "marts")
RAW_TABLES = ("raw_slurm_jobs", "raw_xid_events", "raw_inventory", "raw_fleet", "raw_repairs")
SEEDS = {
    "seed_xid": "dim_xid.csv",
    "seed_component_class": "dim_component_class.csv",
    "seed_planned_reason": "dim_planned_reason.csv",
}
ADDED_COLUMNS = (
    ("raw_fault_events", "unit_group", "varchar"),
    ("raw_slurm_jobs", "cluster", "varchar"),
    ("fit_results", "method", "varchar"),
    ("fit_results", "shape_lo", "double"),
    ("fit_results", "shape_hi", "double"),
    ("fit_results", "aic_weight", "double"),
    ("fit_results", "max_age_h", "double"),
    ("fit_results", "rmst_h", "double"),
    ("fit_results", "extrapolated", "boolean"),
    ("fit_results", "mtbf_sampled_h", "double"),
    ("fit_results", "mtbf_sampled_lo_h", "double"),
    ("fit_results", "mtbf_sampled_hi_h", "double"),
    ("fit_results", "mtbf_sampled_inf_share", "double"),
    ("fit_results", "unit_years", "double"),
    ("fit_results", "afr_observed_pct", "double"),
    ("fit_results", "afr_observed_lo_pct", "double"),
    ("fit_results", "afr_observed_hi_pct", "double"),
    ("fit_results", "mtbf_observed_h", "double"),
    ("fit_results", "mtbf_observed_lo_h", "double"),
    ("fit_results", "mtbf_observed_hi_h", "double"),
    ("fit_results", "headline_method", "varchar"),
    ("fit_results", "headline_mtbf_h", "double"),
    ("fit_results", "headline_mtbf_lo_h", "double"),
    ("fit_results", "headline_mtbf_hi_h", "double"),
    ("fit_results", "headline_rmst_h", "double"),
    ("fit_results", "headline_extrapolated", "boolean"),
    # the lives view a fit run fitted (fct_component_lives... or a repair view); null in runs
    # stored before it, which were all lifetime runs
    ("fit_runs", "lives", "varchar"),
    ("fit_results", "ad_statistic", "double"),  # Anderson-Darling distance of the family's fit
)
"""Columns added to a table after it first shipped: ``(table, column, type)``. A warehouse
made before gains them (empty) when its schema is applied; a table the lake has replaced by a
view is left alone (its new Parquet parts carry the column)."""


def apply_schema(con: duckdb.DuckDBPyConnection) -> None:
    """Run every ``sql/schema/*.sql`` file (idempotent DDL) and (re)load the seed tables.

    All in one transaction: a process killed half-way leaves the schema as it was.
    """
    con.execute("begin transaction")
    try:
        for path in sorted((SQL_DIR / "schema").glob("*.sql")):
            con.execute(path.read_text())
        for table, column, sql_type in ADDED_COLUMNS:
            kind = con.execute(
                "select table_type from information_schema.tables "
                "where table_schema = current_schema() and table_name = $table",
                {"table": table},
            ).fetchall()
            if kind == [("BASE TABLE",)]:
                con.execute(
                    f"alter table {_identifier(table)} "
                    f"add column if not exists {_identifier(column)} {sql_type}"
                )
        for table, file_name in SEEDS.items():
            seed = SQL_DIR / "seeds" / file_name
            con.execute(
                f"create or replace table {_identifier(table)} as "
                "select * from read_csv($path, header = true, auto_detect = true)",
                {"path": str(seed)},
            )
        con.execute("commit")
    except BaseException:
        con.execute("rollback")
        raise


def view_files() -> list[Path]:
    """Return the view definitions in creation order.

    Layer by layer (staging, intermediate, marts); inside a layer a view comes after the views it
    names (DuckDB binds a view's references when it is created), otherwise by file name.
    """
    ordered: list[Path] = []
    for layer in VIEW_LAYERS:
        pending = sorted((SQL_DIR / layer).glob("*.sql"))
        stems = {p.stem for p in pending}
        needs = {
            p.stem: {s for s in stems - {p.stem} if re.search(rf"\b{s}\b", p.read_text())}
            for p in pending
        }
        done: set[str] = set()
        while pending:
            ready = [p for p in pending if needs[p.stem] <= done]
            if not ready:
                msg = f"views in sql/{layer} refer to each other in a cycle: {sorted(stems - done)}"
                raise ValueError(msg)
            ordered.extend(ready)
            done.update(p.stem for p in ready)
            pending = [p for p in pending if p.stem not in done]
    return ordered


def base_tables(con: duckdb.DuckDBPyConnection) -> set[str]:
    """Return the names of the tables (not views) of the warehouse's current schema."""
    rows = con.execute(
        "select table_name from information_schema.tables "
        "where table_schema = current_schema() and table_type = 'BASE TABLE'"
    ).fetchall()
    return {r[0] for r in rows}


def create_views(con: duckdb.DuckDBPyConnection) -> list[str]:
    """Create or replace every view; returns their names in creation order.

    A view snapshotted as a table (:func:`pipelines.warehouse.materialize.materialize`) is made a
    view again: whoever creates the views has just changed what they read.
    """
    tables = base_tables(con)
    names = []
    for path in view_files():
        name = _identifier(path.stem)
        body = path.read_text().strip().rstrip(";")
        if path.stem in tables:
            con.execute(f"drop table {name}")
        con.execute(f"create or replace view {name} as\n{body}")
        names.append(name)
    return names


def init(con: duckdb.DuckDBPyConnection) -> None:
    """Create the schema, seeds and views: everything a fresh warehouse needs."""
    apply_schema(con)
    create_views(con)
