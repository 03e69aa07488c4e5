"""Reads of tailed streams into the warehouse: ``raw_streams``, ``raw_stream_reads`` and rows.

A stream's rows follow it to the path that holds it now (:func:`_move_stream`), a rewritten
stream's earlier rows are deleted first, and ``raw_streams`` records how far its rows go
(:mod:`pipelines.ingest.streams`). Everything here runs inside the transaction of
:func:`pipelines.warehouse.load.load_files`.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

import polars as pl

from pipelines.warehouse.connection import identifier as _identifier  # a SQL guard by that name
from pipelines.warehouse.records import (
    StreamState,
    checks_frame,
    file_record,
    files_frame,
    insert,
    quarantine_rows,
)

if TYPE_CHECKING:
    from datetime import datetime

    import duckdb
    from polars._typing import SchemaDict

    from pipelines.warehouse.records import FileLoad

log = logging.getLogger(__name__)


def stream_states(con: duckdb.DuckDBPyConnection, source: str) -> list[StreamState]:
    """Read the recorded streams of a tailed source (``raw_streams``)."""
    con.complete()
    rows = con.execute(
        "select stream_id, source, target_table, rows_path, head_len, head_sha, consumed_bytes, "
        "consumed_lines, prefix_sha, held_bytes, file_size, file_mtime_ns, tail_sha "
        "from raw_streams "
        "where source = $source",
        {"source": source},
    ).fetchall()
    return [StreamState(*r) for r in rows]


def _rows_path(con: duckdb.DuckDBPyConnection, stream_id: str) -> str | None:
    rows = con.execute(
        "select rows_path from raw_streams where stream_id = $id", {"id": stream_id}
    ).fetchall()
    return str(rows[0][0]) if rows else None


def _move_stream(
    con: duckdb.DuckDBPyConnection, stream_id: str, table: str, new_path: str, *, lake: bool
) -> None:
    """Make ``new_path`` the ``source_file`` of the stream's rows and quarantine rows.

    Another stream whose rows still carry ``new_path`` was displaced (its file was rotated away
    and a new log took the name): its rows keep their lines under ``<path> (gone; stream
    <id>)`` until its file is met again, so two streams never share a ``source_file``. In a lake
    the Parquet rows keep the path they were read at (parts are immutable); ``raw_streams`` and
    the quarantine still follow the stream.
    """
    displaced = con.execute(
        "select stream_id, target_table from raw_streams where rows_path = $p and stream_id <> $id",
        {"p": new_path, "id": stream_id},
    ).fetchall()
    for other, other_table in displaced:
        _rename_rows(
            con,
            other,
            str(other_table),
            new_path,
            f"{new_path} (gone; stream {str(other)[:16]})",
            lake=lake,
        )
    old_path = _rows_path(con, stream_id)
    if old_path is not None and old_path != new_path:
        _rename_rows(con, stream_id, table, old_path, new_path, lake=lake)


def _rename_rows(
    con: duckdb.DuckDBPyConnection, stream_id: str, table: str, old: str, new: str, *, lake: bool
) -> None:
    if not lake:
        con.execute(
            f"update {_identifier(table)} set source_file = $new where source_file = $old",
            {"new": new, "old": old},
        )
    con.execute(
        "update raw_quarantine set source_file = $new where file_sha256 = $id",
        {"new": new, "id": stream_id},
    )
    con.execute(
        "update raw_streams set rows_path = $new where stream_id = $id",
        {"new": new, "id": stream_id},
    )
    con.execute(
        "update raw_ingest_files set path = $new where file_sha256 = $id",
        {"new": new, "id": stream_id},
    )


def load_stream_reads(
    con: duckdb.DuckDBPyConnection, loads: list[FileLoad], now: datetime, *, lake: bool
) -> None:
    """Apply reads of streams inside the caller's transaction, in order.

    Reads that move or replace rows (a rotation, a rewrite, a displaced stream) and streams read
    twice in the batch go one by one (:func:`_load_stream_read`); the rest, the new lines of
    streams that stay where they are (nearly every read of a 15-minute tick), are written with a
    handful of set-wise statements for the whole batch.

    Parameters
    ----------
    con
        The warehouse, inside the caller's transaction.
    loads
        Reads of tailed streams (each with ``stream`` set), in the order they were read.
    now
        The load time recorded on every row.
    lake
        The rows went to lake parts already (only lineage and state are written here).
    """
    times: dict[str, int] = {}
    for load in loads:
        assert load.stream is not None
        times[load.stream.after.stream_id] = times.get(load.stream.after.stream_id, 0) + 1
    bulk: list[FileLoad] = []
    for load in loads:
        assert load.stream is not None
        if load.stream.in_place and times[load.stream.after.stream_id] == 1:
            bulk.append(load)
        else:
            _load_stream_read(con, load, now, lake=lake)
    if not bulk:
        return
    tables = {load.table for load in bulk}
    if not lake:
        for table in sorted(tables):
            parts = [load.rows for load in bulk if load.table == table and load.rows.height]
            if parts:
                insert(con, table, pl.concat(parts, how="vertical_relaxed"))
    rejects = [quarantine_rows(load, load.sha256, now) for load in bulk if load.rejects.height]
    if rejects:
        insert(con, "raw_quarantine", pl.concat(rejects, how="vertical_relaxed"))
    _merge_checks(con, checks_frame(bulk, now))
    states = pl.DataFrame(
        [_state_record(load, now) for load in bulk], schema=_STREAM_SCHEMA, orient="row"
    )
    insert(con, "raw_streams", states, replace=True)
    reads = [_read_record(load, now) for load in bulk if load.stream and load.stream.chunk]
    if reads:
        insert(con, "raw_stream_reads", pl.DataFrame(reads, schema=_READ_SCHEMA, orient="row"))
    _upsert_stream_files(con, files_frame([file_record(load, now) for load in bulk]))


def _merge_checks(con: duckdb.DuckDBPyConnection, checks: pl.DataFrame) -> None:
    """Add reads' quality results to their streams' rows: one row per stream and expectation.

    A stream's row counts the unexpected lines of all its reads and succeeds while every read
    did, so a stream read many times (grown, renamed, compressed) keeps one result per check.
    """
    if checks.height == 0:
        return
    con.register("incoming_checks", checks.to_arrow())
    try:
        con.execute(_MERGE_CHECKS)
        con.execute(_ADD_CHECKS)
    finally:
        con.unregister("incoming_checks")


_MERGE_CHECKS = (
    "update raw_quality_results as q set n_unexpected = q.n_unexpected + i.n_unexpected, "
    "success = q.success and i.success, validated_at = i.validated_at "
    "from incoming_checks as i where q.file_sha256 = i.file_sha256 "
    "and q.target_table = i.target_table and q.expectation = i.expectation"
)
_ADD_CHECKS = (
    "insert into raw_quality_results by name select i.* from incoming_checks as i "
    "anti join raw_quality_results as q on q.file_sha256 = i.file_sha256 "
    "and q.target_table = i.target_table and q.expectation = i.expectation"
)


def _upsert_stream_files(con: duckdb.DuckDBPyConnection, files: pl.DataFrame) -> None:
    con.register("incoming_streams", files.to_arrow())
    try:
        con.execute(_UPSERT_STREAM_FILES)
    finally:
        con.unregister("incoming_streams")


_STREAM_SCHEMA: SchemaDict = {
    "stream_id": pl.String,
    "source": pl.String,
    "target_table": pl.String,
    "rows_path": pl.String,
    "head_len": pl.Int32,
    "head_sha": pl.String,
    "consumed_bytes": pl.Int64,
    "consumed_lines": pl.Int64,
    "prefix_sha": pl.String,
    "held_bytes": pl.Int64,
    "file_size": pl.Int64,
    "file_mtime_ns": pl.Int64,
    "updated_at": pl.Datetime("us", "UTC"),
    "tail_sha": pl.String,
}
_READ_SCHEMA: SchemaDict = {
    "read_key": pl.String,
    "stream_id": pl.String,
    "path": pl.String,
    "action": pl.String,
    "codec": pl.String,
    "from_byte": pl.Int64,
    "to_byte": pl.Int64,
    "first_line": pl.Int64,
    "n_read": pl.Int64,
    "n_loaded": pl.Int64,
    "n_quarantined": pl.Int64,
    "n_held": pl.Int64,
    "n_ignored": pl.Int64,
    "released": pl.Boolean,
    "superseded": pl.Boolean,
    "read_at": pl.Datetime("us", "UTC"),
}
_UPSERT_STREAM_FILES = (
    "insert into raw_ingest_files by name select * from incoming_streams "
    "on conflict (file_sha256) do update set path = excluded.path, "
    "n_read = raw_ingest_files.n_read - raw_ingest_files.n_held + excluded.n_read, "
    "n_loaded = raw_ingest_files.n_loaded + excluded.n_loaded, "
    "n_quarantined = raw_ingest_files.n_quarantined + excluded.n_quarantined, "
    "n_ignored = raw_ingest_files.n_ignored + excluded.n_ignored, "
    "n_held = excluded.n_held, loaded_at = excluded.loaded_at, "
    "time_assumption = coalesce(excluded.time_assumption, raw_ingest_files.time_assumption)"
)
"""A stream's lineage row: totals over its reads (n_held: what is held now; the line held
before is read again by this read, so it leaves ``n_read`` first)."""


def _state_record(load: FileLoad, now: datetime) -> tuple[object, ...]:
    assert load.stream is not None
    state = load.stream.after
    return (
        state.stream_id,
        state.source,
        state.table,
        state.rows_path,
        state.head_len,
        state.head_sha,
        state.consumed_bytes,
        state.consumed_lines,
        state.prefix_sha,
        state.held_bytes,
        state.file_size,
        state.file_mtime_ns,
        now,
        state.tail_sha,
    )


def _read_record(load: FileLoad, now: datetime) -> tuple[object, ...]:
    read = load.stream
    assert read is not None
    counts = load.counts()
    return (
        read.read_key,
        read.after.stream_id,
        read.path,
        read.action,
        read.codec,
        read.byte_offset,
        read.after.consumed_bytes,
        read.line_offset + 1,
        counts.n_read,
        counts.n_loaded,
        counts.n_quarantined,
        counts.n_held,
        counts.n_ignored,
        read.released,
        False,
        now,
    )


def _load_stream_read(
    con: duckdb.DuckDBPyConnection, load: FileLoad, now: datetime, *, lake: bool
) -> None:
    """Apply one read of a stream inside the caller's transaction.

    See :func:`pipelines.warehouse.load.load_files`.
    """
    read = load.stream
    assert read is not None
    state = read.after
    sid = state.stream_id
    table = _identifier(load.table)
    if read.action == "replace":
        old_path = _rows_path(con, sid)
        n_old = 0
        if old_path is not None and not lake:
            ((n_old,),) = con.execute(
                f"select count(*) from {table} where source_file = $p", {"p": old_path}
            ).fetchall()
            con.execute(f"delete from {table} where source_file = $p", {"p": old_path})
        con.execute("delete from raw_quarantine where file_sha256 = $id", {"id": sid})
        con.execute("delete from raw_quality_results where file_sha256 = $id", {"id": sid})
        con.execute("delete from raw_ingest_files where file_sha256 = $id", {"id": sid})
        con.execute(
            "update raw_stream_reads set superseded = true where stream_id = $id", {"id": sid}
        )
        log.warning(
            "%s was rewritten (its first %d bytes changed): replacing the %d rows it loaded before",
            read.path,
            read.before.consumed_bytes if read.before else 0,
            n_old,
        )
    _move_stream(con, sid, table, state.rows_path, lake=lake)
    if not lake and load.rows.height:
        insert(con, table, load.rows)
    rejects = quarantine_rows(load, sid, now)
    if rejects.height:
        insert(con, "raw_quarantine", rejects)
    _merge_checks(con, checks_frame([load], now, key=sid))
    insert(
        con,
        "raw_streams",
        pl.DataFrame([_state_record(load, now)], schema=_STREAM_SCHEMA, orient="row"),
        replace=True,
    )
    if read.chunk or read.action == "replace":
        record = pl.DataFrame([_read_record(load, now)], schema=_READ_SCHEMA, orient="row")
        insert(con, "raw_stream_reads", record)
    _upsert_stream_files(con, files_frame([file_record(load, now)]))
