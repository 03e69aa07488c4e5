"""Ingests under way: tell an ingest that stopped half-way from a warehouse never ingested into.

An ingest commits its files batch by batch (each file whole), then rebuilds the views and drops
their snapshots in one transaction. :func:`start_ingest` adds a row to ``ingest_pending`` in the
first batch's transaction (an ingest that loads nothing leaves none); :func:`finish_ingest`
deletes it in the views' transaction. A row left
behind (the process was killed, the disk filled) is what :func:`unfinished_ingest` returns: the
views or snapshots may not show the files loaded since, and rerunning the ingest finishes it.
"""

from __future__ import annotations

import os
from datetime import UTC
from typing import TYPE_CHECKING

from pipelines.runtime.errors import IngestInterruptedError

if TYPE_CHECKING:
    from datetime import datetime

    import duckdb

__all__ = ["check_finished", "finish_ingest", "start_ingest", "unfinished_ingest"]


def start_ingest(con: duckdb.DuckDBPyConnection) -> None:
    """Record that an ingest has started loading; run it in its first batch's transaction."""
    con.execute("insert into ingest_pending values (now(), $pid)", {"pid": os.getpid()})


def finish_ingest(con: duckdb.DuckDBPyConnection) -> None:
    """Forget every ingest under way; run it in the transaction that rebuilds the views."""
    con.execute("delete from ingest_pending")


def unfinished_ingest(con: duckdb.DuckDBPyConnection) -> datetime | None:
    """Return when the earliest unfinished ingest started, or None (also with no such table).

    Call it on a connection that holds the warehouse (a writer's lock excludes readers, so a row
    seen by a reader is never an ingest still running).
    """
    (has_table,) = con.execute(
        "select count(*) from duckdb_tables() where table_name = 'ingest_pending' "
        "and schema_name = current_schema()"
    ).fetchone() or (0,)
    if not has_table:
        return None
    (started,) = con.execute("select min(started_at) from ingest_pending").fetchone() or (None,)
    return started  # type: ignore[no-any-return]


def check_finished(con: duckdb.DuckDBPyConnection, db_path: object) -> None:
    """Fail with one line when an ingest into the warehouse stopped half-way.

    Also a warehouse made before ``ingest_pending`` existed, with files recorded but no views.

    Raises
    ------
    IngestInterruptedError
        With when the ingest started and what to run.
    """
    started = unfinished_ingest(con)
    if started is not None:
        when = started.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S UTC")
        raise IngestInterruptedError(db_path, f"started at {when}")
    (n_views, n_files) = con.execute(
        "select (select count(*) from duckdb_views() where not internal), "
        "(select count(*) from duckdb_tables() where table_name = 'raw_ingest_files')"
    ).fetchone() or (0, 0)
    if n_files and not n_views:
        (recorded,) = con.execute("select count(*) from raw_ingest_files").fetchone() or (0,)
        if recorded:
            raise IngestInterruptedError(db_path, f"that recorded {recorded:,} files")
