"""The warehouse's schema and views: the only code that knows where ``sql/`` is.

Views come from ``sql/<layer>/<stem>.sql`` in layer order (staging, intermediate, marts), each a
bare ``select`` wrapped as ``create or replace view <stem> as ...``. Tables come from
``sql/schema/*.sql`` (idempotent DDL), seed tables from ``sql/seeds/``.
"""

from __future__ import annotations

import hashlib
import re
from pathlib import Path
from typing import TYPE_CHECKING

from pipelines.warehouse.connection import identifier as _identifier  # a SQL guard by that name
from pipelines.warehouse.connection import transaction

if TYPE_CHECKING:
    from collections.abc import Collection

    import duckdb

SQL_DIR = Path(__file__).resolve().parents[2] / "sql"
VIEW_LAYERS = ("staging", "intermediate", "marts")
RAW_TABLES = ("raw_slurm_jobs", "raw_xid_events", "raw_inventory", "raw_fleet", "raw_repairs")
SEEDS = {
    "seed_xid": "dim_xid.csv",
    "seed_component_class": "dim_component_class.csv",
    "seed_planned_reason": "dim_planned_reason.csv",
    "seed_node_reason": "dim_node_reason.csv",
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
    # the model-averaged lifetime mean, shown beside the headline (the observed rate)
    ("fit_results", "lifetime_method", "varchar"),
    ("fit_results", "lifetime_mtbf_h", "double"),
    ("fit_results", "lifetime_mtbf_lo_h", "double"),
    ("fit_results", "lifetime_mtbf_hi_h", "double"),
    ("fit_results", "lifetime_rmst_h", "double"),
    ("fit_results", "lifetime_extrapolated", "boolean"),
    # what a file's times rest on that its lines do not print ("year 2026 taken from the file's
    # modification time; ..."); null when nothing was assumed
    ("raw_ingest_files", "time_assumption", "varchar"),
    # torchrun lines: the worker group's state a line names, and the bounds of a line's time
    # (ts_lo <= the line's time <= ts_hi: both equal ts where the line has a time; for a line
    # that prints none, Python's default format of torch 1.x, the nearest clock marks before and
    # after it in the file, either may be null; all three null: unknown); ts_source: where ts
    # came from (line, continuation, child_failed_error), null without ts
    ("raw_elastic_events", "group_state", "varchar"),
    ("raw_elastic_events", "ts_lo", "timestamptz"),
    ("raw_elastic_events", "ts_hi", "timestamptz"),
    ("raw_elastic_events", "ts_source", "varchar"),
    # the job id a Slurm line of a training log names, and what a cancel or task exit says
    ("raw_training_events", "job_named", "varchar"),
    ("raw_training_events", "detail", "varchar"),
    # fail-slow: Megatron's global batch size, the rank a line is about (torchtitan's [rankN]:
    # tag, a straggler row's rank), and a straggler row's figure (metric) and its value
    ("raw_training_events", "global_batch", "bigint"),
    ("raw_training_events", "rank", "integer"),
    ("raw_training_events", "metric", "varchar"),
    ("raw_training_events", "value", "double"),
    # DCGM field 100 (SM clock) and field 112 (clock event / throttle reasons, a bitmask)
    ("raw_dcgm_samples", "sm_clock_mhz", "double"),
    ("raw_dcgm_samples", "clock_event_reasons", "bigint"),
    # the ledger's fail-slow time of a back-tested job (the prediction runs it as compute)
    ("backtest_jobs", "slow_s", "double"),
)
"""Columns added to a table after it first shipped: ``(table, column, type)``. A warehouse
made before gains them (empty) when its schema is applied; a raw table the lake has replaced by a
view is left alone: its new Parquet parts carry the column, and the view gives it (null) for the
parts written before (:func:`pipelines.warehouse.lake.attach`)."""


def apply_schema(con: duckdb.DuckDBPyConnection) -> None:
    """Run every ``sql/schema/*.sql`` file (idempotent DDL) and (re)load the seed tables.

    All in one transaction: a process killed half-way leaves the schema as it was.
    """
    with transaction(con):
        for path in sorted((SQL_DIR / "schema").glob("*.sql")):
            con.execute(path.read_text())
        # one look at the catalog: which tables are base tables, and the columns they have
        have = con.execute(
            "select t.table_name, c.column_name from information_schema.tables as t "
            "left join information_schema.columns as c on c.table_schema = t.table_schema "
            "and c.table_name = t.table_name where t.table_schema = current_schema() "
            "and t.table_type = 'BASE TABLE'"
        ).fetchall()
        base_tables = {table for table, _ in have}
        columns = set(have)
        for table, column, sql_type in ADDED_COLUMNS:
            if table in base_tables and (table, column) not in columns:
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


def view_files() -> list[Path]:
    """Return the view definitions in creation order.

    Layer by layer (staging, intermediate, marts); inside a layer a view comes after the views it
    names (DuckDB binds a view's references when it is created), otherwise by file name.
    """
    ordered: list[Path] = []
    for layer in VIEW_LAYERS:
        pending = sorted((SQL_DIR / layer).glob("*.sql"))
        stems = {p.stem for p in pending}
        # a stem named in a file is one of its whole words (what a \bstem\b search finds)
        needs = {
            p.stem: stems.intersection(_WORD.findall(p.read_text())) - {p.stem} for p in pending
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


def create_views(
    con: duckdb.DuckDBPyConnection,
    *,
    only_if_changed: bool = False,
    snapshot: Collection[str] = (),
    keep: Collection[str] = (),
) -> list[str]:
    """Create or replace every view; returns their names in creation order.

    A view snapshotted as a table (:func:`pipelines.warehouse.materialize.materialize`) is made a
    view again, unless it is named in ``snapshot``: those are snapshotted again as they are made
    (a table of the view's rows under its name), so each view after them binds to a table, not to
    the whole tree of views under it (DuckDB inlines a view wherever it is named: binding the
    marts over views alone takes seconds even on a small fleet).

    With ``only_if_changed`` (the ingest, which runs every few minutes) the views are left as they
    are when they were made by this code from the same ``sql/`` text over the same tables and
    columns, nobody replaced one since, and every view of ``snapshot`` is a snapshot: a digest of
    all that is kept as the comment of the last view made, and checked first (a few milliseconds
    instead of binding every view). Whether the rows under a snapshot changed is the caller's to
    know: one that loaded rows calls without ``only_if_changed``, and names in ``keep`` the
    snapshots of ``snapshot`` whose rows it knows are still those of their views
    (:func:`pipelines.warehouse.materialize.refresh` asks the views' graph). Those are left as
    they are, provided they are snapshots now and the views were made from the same ``sql/``
    text over the same tables and columns (the digest above); otherwise every one is taken again.

    In one transaction (or the caller's): a process killed or a disk filled half-way leaves the
    views and snapshots as they were.
    """
    files = view_files()
    names = [_identifier(path.stem) for path in files]
    bodies = [path.read_text().strip().rstrip(";") for path in files]
    wanted = set(snapshot)
    tables = base_tables(con)
    if (
        only_if_changed
        and names
        and wanted <= tables
        and _views_digest(con, names, bodies) == _stored_digest(con, names[-1])
    ):
        return names
    if names and names[-1] in wanted:
        msg = f"the last view ({names[-1]}) keeps the views' digest: it cannot be snapshotted"
        raise ValueError(msg)
    kept = wanted.intersection(keep, tables)
    if kept and _views_digest(con, names, bodies) != _stored_digest(con, names[-1]):
        kept = set()  # made from other SQL, or over other columns: none is known to be current
    with transaction(con):  # all the views or none: a failure half-way leaves them as they were
        for path, body in zip(files, bodies, strict=True):
            name = _identifier(path.stem)
            if path.stem in kept:  # its rows are still its view's: the views above read it
                continue
            if path.stem in tables:
                con.execute(f"drop table {name}")
            con.execute(f"create or replace view {name} as\n{body}")
            if path.stem in wanted:
                snapshot_view(con, name)
        store_digest(con, names, bodies)
    return names


def snapshot_view(con: duckdb.DuckDBPyConnection, name: str) -> None:
    """Replace the view ``name`` by a table of its rows under the same name."""
    table = _identifier(f"{name}__snapshot")
    con.execute(f"create or replace table {table} as select * from {_identifier(name)}")
    con.execute(f"drop view {_identifier(name)}")
    con.execute(f"alter table {table} rename to {_identifier(name)}")


def store_digest(
    con: duckdb.DuckDBPyConnection, names: list[str] | None = None, bodies: list[str] | None = None
) -> None:
    """Keep the digest of the views as they are now as the last view's comment."""
    if names is None or bodies is None:
        files = view_files()
        names = [_identifier(path.stem) for path in files]
        bodies = [path.read_text().strip().rstrip(";") for path in files]
    if names:
        digest = _views_digest(con, names, bodies)
        # the digest is a plain name (prefix and hex digits): guarded like one
        con.execute(f"comment on view {_identifier(names[-1])} is '{_identifier(digest)}'")


_WORD = re.compile(r"\w+")
_DIGEST_PREFIX = "relia_views_"


def _views_digest(con: duckdb.DuckDBPyConnection, names: list[str], bodies: list[str]) -> str:
    """Return a digest of the views' text, their stored SQL and every other relation's columns."""
    views = dict(
        con.execute(
            "select view_name, sql from duckdb_views() where not internal "
            "and view_name in (select unnest($names))",
            {"names": names},
        ).fetchall()
    )
    columns = con.execute(
        "select schema_name, table_name, column_name, data_type from duckdb_columns() "
        "where not internal and table_name not in (select unnest($names)) "
        "order by all",
        {"names": names},
    ).fetchall()
    hashed = hashlib.sha256()
    for name, body in zip(names, bodies, strict=True):
        hashed.update(f"{name}\0{body}\0{views.get(name)}\0".encode())
    hashed.update(repr(columns).encode())
    return _DIGEST_PREFIX + hashed.hexdigest()


def _stored_digest(con: duckdb.DuckDBPyConnection, last: str) -> str | None:
    """Return the digest stored as the comment of the last view, if there is one."""
    rows = con.execute(
        "select comment from duckdb_views() where not internal and view_name = $name",
        {"name": last},
    ).fetchall()
    return rows[0][0] if rows else None


def init(con: duckdb.DuckDBPyConnection) -> None:
    """Create the schema, seeds and views: everything a fresh warehouse needs."""
    apply_schema(con)
    create_views(con)
