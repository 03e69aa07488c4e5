"""Loading parsed files: one transaction per batch of files, each keyed by its SHA-256.

Each file is recorded with its rows in that transaction, so re-ingesting the same bytes changes
nothing and a crash leaves no half-loaded file. Reads of tailed streams go through
:mod:`pipelines.warehouse.load_streams` in the same transaction.
"""

from __future__ import annotations

import logging
from dataclasses import replace
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

import polars as pl

from pipelines.warehouse.connection import identifier as _identifier  # a SQL guard by that name
from pipelines.warehouse.connection import transaction
from pipelines.warehouse.dependencies import PARTITIONED
from pipelines.warehouse.load_streams import load_stream_reads
from pipelines.warehouse.records import (
    FileLoad,
    LoadCounts,
    PartWriter,
    checks_frame,
    file_record,
    files_frame,
    insert,
    no_lines_key,
    quarantine_rows,
)

if TYPE_CHECKING:
    from collections.abc import Iterable

    import duckdb

    from pipelines.warehouse.dependencies import Read

log = logging.getLogger(__name__)

_LINEAGE_TABLES = ("raw_quarantine", "raw_quality_results", "raw_ingest_files")
"""Lineage tables keyed by ``file_sha256`` (a file's content hash or a stream's id)."""
_STREAM_TABLES = ("raw_streams", "raw_stream_reads")


def written_by(counts: Iterable[LoadCounts]) -> set[Read]:
    """Return what the loads that returned ``counts`` may have written (see :func:`load_files`).

    A load not skipped (loaded, replaced, appended, quarantined, refused, or "no lines") may
    have written its raw table, that table's rows of ``raw_ingest_files`` (its
    ``target_table``: :data:`pipelines.warehouse.dependencies.PARTITIONED`), and the other
    lineage and stream tables; a skipped one wrote nothing. Not covered: ``--force``, which
    deletes what a file loaded before under any source (the caller treats it as a change of
    everything).
    """
    written: set[Read] = set()
    for c in counts:
        if c.skipped:
            continue
        written.add((c.table, None))
        for table in (*_LINEAGE_TABLES, *_STREAM_TABLES):
            written.add((table, c.table) if table in PARTITIONED else (table, None))
    return written


def already_loaded(con: duckdb.DuckDBPyConnection, sha256: str) -> LoadCounts | None:
    """Return the earlier load of these bytes, if any."""
    return loaded_before(con, [sha256]).get(sha256)


def _skipped(row: tuple[Any, ...]) -> LoadCounts:
    """Return the counts of an earlier load of the same bytes.

    ``row`` holds its ``raw_ingest_files`` columns
    ``path, source, target_table, n_read, n_loaded, n_quarantined, n_ignored``.
    """
    path, source, table, n_read, n_loaded, n_quarantined, n_ignored = row
    return LoadCounts(path, source, table, n_read, n_loaded, n_quarantined, n_ignored, skipped=True)


def loaded_before(con: duckdb.DuckDBPyConnection, shas: list[str]) -> dict[str, LoadCounts]:
    """Return the earlier loads of any of these hashes, by hash (one query for the whole list)."""
    if not shas:
        return {}
    con.complete()
    rows = con.execute(
        "select file_sha256, path, source, target_table, n_read, n_loaded, n_quarantined, "
        "n_ignored from raw_ingest_files where file_sha256 in (select unnest($shas))",
        {"shas": shas},
    ).fetchall()
    return {r[0]: _skipped(r[1:]) for r in rows}


def loaded_unchanged(
    con: duckdb.DuckDBPyConnection, stats: list[tuple[str, str, int, int]]
) -> dict[str, LoadCounts]:
    """Return earlier loads of whole files by ``(path, source, size, mtime_ns)``, by path.

    A file whose path, source, size and mtime are those recorded when it was read, or when its
    content was last found loaded before (:func:`record_seen`), is not read again (one query for
    the whole list).
    """
    if not stats:
        return {}
    con.complete()
    frame = pl.DataFrame(
        stats,
        schema={"path": pl.String, "source": pl.String, "size": pl.Int64, "mtime_ns": pl.Int64},
        orient="row",
    )
    con.register("incoming_stats", frame.to_arrow())
    try:
        rows = con.execute(
            "select f.path, f.path, f.source, f.target_table, f.n_read, f.n_loaded, "
            "f.n_quarantined, f.n_ignored from raw_ingest_files as f join incoming_stats as s "
            "on f.path = s.path and f.source = s.source and f.file_size = s.size "
            "and f.file_mtime_ns = s.mtime_ns and coalesce(f.n_held, 0) = 0 "
            "union all "
            "select s.path, f.path, f.source, f.target_table, f.n_read, f.n_loaded, "
            "f.n_quarantined, f.n_ignored from ingest_seen_files as seen join incoming_stats as s "
            "on seen.path = s.path and seen.source = s.source and seen.file_size = s.size "
            "and seen.file_mtime_ns = s.mtime_ns "
            "join raw_ingest_files as f on f.file_sha256 = seen.file_sha256 "
            "and coalesce(f.n_held, 0) = 0"
        ).fetchall()
    finally:
        con.unregister("incoming_stats")
    # by the path met; the counts name the load that holds the rows (as a hash match does)
    return {r[0]: _skipped(r[1:]) for r in rows}


def record_seen(con: duckdb.DuckDBPyConnection, seen: list[tuple[str, str, int, int, str]]) -> None:
    """Record whole files found loaded before by their content, so they are not read again.

    ``seen`` holds ``(path, source, size, mtime_ns, key)``: the file's stat when it was read and
    the key of the earlier load that holds its rows. A path's earlier record is replaced.
    """
    if not seen:
        return
    frame = pl.DataFrame(
        seen,
        schema={
            "path": pl.String,
            "source": pl.String,
            "file_size": pl.Int64,
            "file_mtime_ns": pl.Int64,
            "file_sha256": pl.String,
        },
        orient="row",
    )
    con.register("seen_stats", frame.to_arrow())
    try:
        with transaction(con):
            con.execute(
                "delete from ingest_seen_files as r using seen_stats as s "
                "where r.path = s.path and r.source = s.source"
            )
            con.execute("insert into ingest_seen_files by name select * from seen_stats")
    finally:
        con.unregister("seen_stats")


def load_file(
    con: duckdb.DuckDBPyConnection,
    *,
    path: str,
    source: str,
    table: str,
    sha256: str,
    rows: pl.DataFrame,
    rejects: pl.DataFrame,
    n_ignored: int,
    quality_results: list[dict[str, object]] | None = None,
    write_parts: PartWriter | None = None,
) -> LoadCounts:
    """Load one file's rows and quarantine rows in a single transaction (see :func:`load_files`)."""
    load = FileLoad(
        path, source, table, sha256, rows, rejects, n_ignored, tuple(quality_results or ())
    )
    return load_files(con, [load], write_parts=write_parts)[0]


def load_files(
    con: duckdb.DuckDBPyConnection,
    loads: list[FileLoad],
    *,
    write_parts: PartWriter | None = None,
) -> list[LoadCounts]:
    """Load several files (of one raw table) in a single transaction.

    Each file's rows, quarantine rows, quality results and its ``raw_ingest_files`` row are
    written in that one transaction, so after a crash every file is either wholly loaded or not
    at all; one transaction for a batch instead of one per file saves ~10 ms a file. Files
    whose bytes were loaded before (or repeat an earlier file of ``loads``) come back with
    ``skipped=True`` and change nothing. A whole file in which its parser found no line in scope
    is not recorded ("no <source> lines"), so it never blocks a later ingest under another source.

    Reads of tailed streams (``FileLoad.stream``) are applied in order in the same transaction:
    the stream's rows follow it to the path that holds it now, a rewritten stream's earlier rows
    are deleted first, and ``raw_streams`` records how far its rows go
    (:mod:`pipelines.warehouse.load_streams`, :mod:`pipelines.ingest.streams`).

    With ``write_parts`` (``functools.partial(lake.write_parts, lake_dir)``, passed in so that
    loading needs no :mod:`pipelines.warehouse.lake`, which reads the schema) the rows are
    written as Parquet parts first (idempotent, and invisible to the lake views until the
    transaction records the file), not into the table.
    """
    if not loads:
        return []
    tables = {load.table for load in loads}
    for table in tables:
        _identifier(table)
    tailed = [load for load in loads if load.stream is not None]
    keyed = {
        id(load): load
        if load.rows.height + load.rejects.height + load.n_held
        else replace(load, sha256=no_lines_key(load.source, load.sha256))
        for load in loads
        if load.stream is None
    }
    whole = list(keyed.values())
    before = loaded_before(
        con, [load.sha256 for load in whole if not load.forget and load.supersedes != load.sha256]
    )
    fresh: dict[str, FileLoad] = {}
    for load in whole:
        if load.sha256 not in before:
            fresh.setdefault(load.sha256, load)
    if write_parts is not None:
        for load in fresh.values():
            write_parts(table=load.table, sha256=load.sha256, rows=load.rows)
        for load in tailed:
            assert load.stream is not None
            write_parts(table=load.table, sha256=load.stream.read_key, rows=load.rows)
    now = datetime.now(UTC)
    files = files_frame([file_record(load, now) for load in fresh.values()])
    quarantine = [
        quarantine_rows(load, load.sha256, now) for load in fresh.values() if load.rejects.height
    ]
    checks = checks_frame(list(fresh.values()), now)
    with transaction(con):
        for load in loads:
            if load.forget:
                _forget(con, load.path, load.sha256, lake=write_parts is not None)
        for load in fresh.values():
            if load.supersedes is not None:
                _supersede(con, load)
        if write_parts is None:
            for table in sorted(tables):
                parts = [
                    _new_rows(load)
                    for load in fresh.values()
                    if load.table == table and load.rows.height
                ]
                if parts:
                    insert(con, table, pl.concat(parts, how="vertical_relaxed"))
        quarantine = [q for q in quarantine if q.height]
        if quarantine:
            insert(con, "raw_quarantine", pl.concat(quarantine, how="vertical_relaxed"))
        insert(con, "raw_quality_results", checks)
        insert(con, "raw_ingest_files", files)
        load_stream_reads(con, tailed, now, lake=write_parts is not None)
    return _file_counts(loads, keyed, before)


def _file_counts(
    loads: list[FileLoad], keyed: dict[int, FileLoad], before: dict[str, LoadCounts]
) -> list[LoadCounts]:
    """Return what each of ``loads`` did, in order: loaded, replaced, or skipped as a repeat.

    ``keyed`` holds the whole files' loads by the ``id`` of the given ones (a file with no line
    in scope under its "no lines" key), ``before`` the counts of files loaded by earlier runs.
    """
    out = []
    seen: set[str] = set()
    for original in loads:
        load = keyed.get(id(original), original)
        if load.stream is not None:
            out.append(load.counts())
        elif load.sha256 in before:
            out.append(before[load.sha256])
        elif load.forget and load.sha256 not in seen:
            seen.add(load.sha256)
            out.append(replace(load.counts(), status=f"replaced ({load.counts().outcome})"))
        elif load.sha256 in seen:
            out.append(
                replace(
                    load.counts(), n_read=0, n_loaded=0, n_quarantined=0, n_ignored=0, skipped=True
                )
            )
        else:
            seen.add(load.sha256)
            out.append(load.counts())
    return out


def _new_rows(load: FileLoad) -> pl.DataFrame:
    """Return the rows a load adds: an extended file's earlier lines are in the table already."""
    if load.supersedes is None or not load.kept_lines:
        return load.rows
    return load.rows.filter(pl.col("line_no") > load.kept_lines)


def _supersede(con: duckdb.DuckDBPyConnection, load: FileLoad) -> None:
    """Remove the lineage, quarantine and quality rows of the load ``load`` extends.

    Its rows of complete lines stay: they are this load's first ``kept_lines`` lines, which
    this load does not insert again (:func:`_new_rows`). Runs inside the caller's transaction.
    """
    for lineage in _LINEAGE_TABLES:
        con.execute(f"delete from {lineage} where file_sha256 = $k", {"k": load.supersedes})
    log.info("%s grew since it was read: its earlier load is replaced", load.path)


def loads_at_paths(
    con: duckdb.DuckDBPyConnection, paths: list[tuple[str, str]]
) -> dict[str, list[tuple[str, int, int, int]]]:
    """Return earlier whole-file loads by path: ``(key, content_bytes, n_held, n_loaded)``.

    Only loads that recorded the plain bytes their key covers, for the ``(path, source)`` pairs
    given (one query for the list).
    """
    if not paths:
        return {}
    con.complete()
    frame = pl.DataFrame(paths, schema={"path": pl.String, "source": pl.String}, orient="row")
    con.register("incoming_paths", frame.to_arrow())
    try:
        rows = con.execute(
            "select f.path, f.file_sha256, f.content_bytes, f.n_held, f.n_loaded "
            "from raw_ingest_files as f join incoming_paths as p "
            "on f.path = p.path and f.source = p.source where f.content_bytes is not null"
        ).fetchall()
    finally:
        con.unregister("incoming_paths")
    out: dict[str, list[tuple[str, int, int, int]]] = {}
    for path, key, n_bytes, n_held, n_loaded in rows:
        out.setdefault(path, []).append((key, n_bytes, n_held or 0, n_loaded))
    return out


def _forget(con: duckdb.DuckDBPyConnection, path: str, key: str, *, lake: bool) -> None:
    """Remove every earlier load of a file, whatever source it was loaded as.

    The loads are found by the file's content key, or as a stream whose rows carry its path;
    their rows, quarantine, quality results and lineage go. Runs inside the caller's transaction.
    """
    loads = con.execute(
        "select file_sha256, path, target_table from raw_ingest_files "
        "where file_sha256 = $key or path = $path or file_sha256 in "
        "(select stream_id from raw_streams where rows_path = $path)",
        {"key": key, "path": path},
    ).fetchall()
    for old_key, old_path, old_table in loads:
        n = 0
        if not lake:
            table = _identifier(str(old_table))
            ((n,),) = con.execute(
                f"select count(*) from {table} where source_file = $p", {"p": old_path}
            ).fetchall()
            con.execute(f"delete from {table} where source_file = $p", {"p": old_path})
        for lineage in _LINEAGE_TABLES:
            con.execute(f"delete from {lineage} where file_sha256 = $k", {"k": old_key})
        con.execute("delete from raw_streams where stream_id = $k", {"k": old_key})
        con.execute("delete from raw_stream_reads where stream_id = $k", {"k": old_key})
        log.warning("--force: %s loaded %d %s rows before; replacing them", old_path, n, old_table)
