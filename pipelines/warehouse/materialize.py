"""Materialise the expensive views as tables until the data under them changes.

The views of ``sql/`` recompute from the raw rows on every query: on a fleet-year with training
logs, the ledger (``fct_job_goodput``) alone reads 14 M training events, and the weekly report,
the back-test and ``relia goodput`` each read it again. :func:`materialize` snapshots the views
of :data:`MATERIALIZED` in place, in creation order: each becomes a table of the same name, so
the views above it read the table, and SQL users see no difference but speed.

A snapshot is only as fresh as the data it was taken from. Everything that changes what the views
read takes the snapshots over it again. An ingest that wrote rows ends with :func:`refresh`: the
views are made again (:func:`pipelines.warehouse.schema.create_views`) and a snapshot is taken
again when its view reads a table the ingest wrote (:func:`pipelines.warehouse.load.written_by`),
as the views' SQL says (:func:`pipelines.warehouse.dependencies.view_reads`, parsed from ``sql/``
by DuckDB each time, so it cannot drift from the SQL); the others are kept as they are. Every one
is taken again when the ingest finishes one that stopped half-way or replaces files
(``--force``), or when the views' SQL, a table's columns or the set of snapshots changed since
they were taken. :func:`set_param` (the views' window and assumptions in ``cfg_params``) takes
again those that read ``cfg_params``. A hand-written ``insert`` into a raw table or
``cfg_params`` is not seen, not even by the next ingest (it takes again only what it wrote):
call :func:`dematerialize` after one.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from pipelines.warehouse.connection import identifier as _identifier  # a SQL guard by that name
from pipelines.warehouse.connection import transaction
from pipelines.warehouse.dependencies import reads_any, view_reads
from pipelines.warehouse.schema import (
    base_tables,
    create_views,
    snapshot_view,
    store_digest,
    view_files,
)

if TYPE_CHECKING:
    from collections.abc import Collection

    import duckdb

    from pipelines.warehouse.dependencies import Read

MATERIALIZED = (
    "stg_slurm_jobs",
    "stg_xid_events",
    "int_component_lives",
    "int_incidents",
    "int_job_attempts",
    "int_job_interruptions",
    "int_training_log_runs",  # read by the ties, the log-only attempts and the events
    "int_training_log_ties",
    "int_training_log_attempts",
    "int_training_events",
    "int_training_attempts",
    "int_step_pace",  # read by the episodes and the ledger
    "int_slow_spans",  # read by the attribution and the episodes
    "int_slow_episodes",
    "fct_job_goodput",
    "int_fleet_nodes",
    "int_fleet_gpus",
    "int_failure_members",  # read by int_failure_events and int_job_interruptions
    "int_failure_events",
    "fct_component_lives",
)
"""Views snapshotted by :func:`materialize`: those the report, the fit and the back-test read
more than once and that cost seconds at fleet scale. None of them reads a model output
(``fit_*``, ``backtest_*``), which change without an ingest."""


def materialized(con: duckdb.DuckDBPyConnection) -> list[str]:
    """Return the names of :data:`MATERIALIZED` that are tables now (snapshots), in view order."""
    tables = base_tables(con)
    return [name for name in _in_view_order() if name in tables]


def materialize(con: duckdb.DuckDBPyConnection) -> dict[str, float]:
    """Snapshot every view of :data:`MATERIALIZED` as a table of the same name.

    A view already snapshotted since the data last changed is left as it is (a second call costs
    nothing). All in one transaction: a process killed half-way leaves the views.

    Parameters
    ----------
    con
        A read-write warehouse connection (its views created).

    Returns
    -------
    dict[str, float]
        Seconds each view took to snapshot, in creation order (empty when all were fresh).
    """
    done = set(materialized(con))
    seconds: dict[str, float] = {}
    with transaction(con):
        for name in _in_view_order():
            if name in done:
                continue
            started = time.perf_counter()
            snapshot_view(con, _identifier(name))
            seconds[name] = time.perf_counter() - started
        if seconds:  # the views as they are now (snapshots in place) are the current ones
            store_digest(con)
    return seconds


def refresh(
    con: duckdb.DuckDBPyConnection,
    *,
    data_changed: bool,
    changed: Collection[Read] | None = None,
) -> None:
    """Make the views current and snapshot :data:`MATERIALIZED` (the end of every ingest).

    With ``data_changed`` (rows were loaded, replaced or quarantined) every view is made again
    and the snapshots that may read the changed rows are taken again: with ``changed`` (the
    tables, or partitions of tables, written: :func:`pipelines.warehouse.load.written_by`) those
    whose view reads one of them (:func:`stale_snapshots`), the others are kept as they are;
    without, every one. Without ``data_changed``, nothing is done when the views were made from
    the same ``sql/`` text over the same tables and every snapshot is in place.
    """
    if not data_changed:
        create_views(con, only_if_changed=True, snapshot=MATERIALIZED)
        return
    keep: list[str] = []
    taken = materialized(con)
    if changed is not None and taken:  # the views' graph is parsed only when there is a choice
        stale = set(stale_snapshots(con, changed))
        keep = [name for name in taken if name not in stale]
    create_views(con, snapshot=MATERIALIZED, keep=keep)


def stale_snapshots(con: duckdb.DuckDBPyConnection, changed: Collection[Read]) -> list[str]:
    """Return the views of :data:`MATERIALIZED` that read any of ``changed``, in view order.

    What a view reads comes from the views' SQL (:func:`pipelines.warehouse.dependencies.
    view_reads`): a snapshot of any other view holds the rows its view would give now.
    """
    if not changed:
        return []
    reads = view_reads(con, MATERIALIZED)
    return [name for name in _in_view_order() if reads_any(reads[name], changed)]


def dematerialize(con: duckdb.DuckDBPyConnection) -> list[str]:
    """Make every snapshot of :data:`MATERIALIZED` its view again; return the names remade.

    :func:`pipelines.warehouse.schema.create_views` does it (it replaces a snapshot by its view),
    so the views' SQL goes into the warehouse from that one place.
    """
    names = materialized(con)
    if names:
        create_views(con)
    return names


def set_param(con: duckdb.DuckDBPyConnection, name: str, value: float) -> None:
    """Set a view parameter in ``cfg_params``; snapshots of the views are taken again.

    A parameter set to the value it has already changes nothing. A warehouse with snapshots gets
    them again from the new value, as the views are made (:func:`refresh`); one without stays so.
    """
    current = con.execute(
        "select value from cfg_params where name = $name", {"name": name}
    ).fetchall()
    if current and current[0][0] == float(value):
        return
    con.execute(
        "insert or replace into cfg_params (name, value) values ($name, $value)",
        {"name": name, "value": float(value)},
    )
    if materialized(con):  # the snapshots of the views that read cfg_params
        refresh(con, data_changed=True, changed={("cfg_params", None)})


def _in_view_order() -> list[str]:
    """Return :data:`MATERIALIZED` in view creation order (a snapshot reads the ones before)."""
    wanted = set(MATERIALIZED)
    return [path.stem for path in view_files() if path.stem in wanted]
