"""The DuckDB warehouse: connect, apply the schema, load seeds, create views, load parsed files.

This is the only module that knows where ``sql/`` is. Views come from ``sql/<layer>/<stem>.sql``
in layer order (staging, intermediate, marts), each a bare ``select`` wrapped as
``create or replace view <stem> as ...``. Loads are one transaction per batch of files, each file
keyed by its SHA-256 and recorded with its rows in that transaction, so re-ingesting the same
bytes changes nothing and a crash leaves no half-loaded file.
"""

from __future__ import annotations

import logging
import re
import time
from contextlib import contextmanager
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

import duckdb
import polars as pl

from pipelines.errors import ReliaError

if TYPE_CHECKING:
    from collections.abc import Iterator

    from pipelines.streams import StreamRead, StreamState

log = logging.getLogger(__name__)

SQL_DIR = Path(__file__).resolve().parent.parent / "sql"
VIEW_LAYERS = ("staging", "intermediate", "marts")
_IDENTIFIER = re.compile(r"^[a-z][a-z0-9_]*$")
RAW_TABLES = ("raw_slurm_jobs", "raw_xid_events", "raw_inventory", "raw_fleet", "raw_repairs")
_LINEAGE_TABLES = ("raw_quarantine", "raw_quality_results", "raw_ingest_files")
"""Lineage tables keyed by ``file_sha256`` (a file's content hash or a stream's id)."""
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


class WarehouseBusyError(ReliaError, RuntimeError):
    """Another process holds the warehouse's write lock; retry later."""


def _holder(error: Exception) -> str:
    """``PID n (program)`` when DuckDB's lock error names the holder, else ``another process``."""
    found = re.search(r"lock is held in (?P<program>.+?) \(PID (?P<pid>\d+)\)", str(error))
    if not found:
        return "another process"
    return f"PID {found['pid']} ({found['program']})"


def identifier(name: str) -> str:
    """``name`` when it is a plain lower-case SQL identifier (safe to put into SQL text)."""
    if not _IDENTIFIER.fullmatch(name):  # match() with $ would let a final newline through
        msg = f"refusing identifier {name!r}: names must match {_IDENTIFIER.pattern}"
        raise ValueError(msg)
    return name


_identifier = identifier
"""The name SQL call sites use: tests/hardening/test_security.py's scan knows it as a guard."""


def _is_lock_error(error: Exception) -> bool:
    text = str(error)
    return "lock" in text.lower() and ("Conflicting" in text or "Could not set lock" in text)


@contextmanager
def connect(
    db_path: Path | str, *, read_only: bool = False, lock_timeout_s: float = 0.0
) -> Iterator[duckdb.DuckDBPyConnection]:
    """Open the warehouse (creating it), waiting up to ``lock_timeout_s`` for another writer.

    Raises
    ------
    WarehouseBusyError
        When another process still holds the lock after ``lock_timeout_s`` seconds.
    """
    deadline = time.monotonic() + lock_timeout_s
    delay = 0.2
    while True:
        try:
            con = duckdb.connect(str(db_path), read_only=read_only)
            break
        except duckdb.IOException as error:
            if not _is_lock_error(error):
                raise
            if time.monotonic() >= deadline:
                msg = (
                    f"warehouse busy: {db_path} is locked by {_holder(error)} (DuckDB allows "
                    f"one writer); waited {lock_timeout_s:g} s; retry when it has finished, or "
                    "wait longer with RELIA_LOCK_TIMEOUT_S"
                )
                raise WarehouseBusyError(msg) from error
            time.sleep(delay)
            delay = min(delay * 2, 5.0)
    try:
        con.execute("set autoinstall_known_extensions = false")
        con.execute("set autoload_known_extensions = false")
        con.execute("set TimeZone = 'UTC'")
        yield con
    finally:
        con.close()


def apply_schema(con: duckdb.DuckDBPyConnection) -> None:
    """Run every ``sql/schema/*.sql`` file (idempotent DDL) and (re)load the seed tables, in one
    transaction: a process killed half-way leaves the schema as it was."""
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
    """The view definitions in creation order.

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


def create_views(con: duckdb.DuckDBPyConnection) -> list[str]:
    """Create or replace every view; returns their names in creation order."""
    names = []
    for path in view_files():
        name = _identifier(path.stem)
        body = path.read_text().strip().rstrip(";")
        con.execute(f"create or replace view {name} as\n{body}")
        names.append(name)
    return names


def init(con: duckdb.DuckDBPyConnection) -> None:
    """Schema, seeds and views: everything a fresh warehouse needs."""
    apply_schema(con)
    create_views(con)


def file_sha256(data: bytes) -> str:
    """Content hash used as the ingest key."""
    import hashlib

    return hashlib.sha256(data).hexdigest()


@dataclass(frozen=True)
class LoadCounts:
    """What happened to one file."""

    path: str
    source: str
    table: str
    n_read: int
    n_loaded: int
    n_quarantined: int
    n_ignored: int
    skipped: bool  # True when the same bytes were loaded before (nothing new in a stream)
    n_held: int = 0  # a last line without its newline (or an archive still being written)
    status: str = ""  # what happened, in words (empty: loaded, or "already loaded" when skipped)

    @property
    def outcome(self) -> str:
        """``status``, or ``loaded`` / ``already loaded``."""
        return self.status or ("already loaded" if self.skipped else "loaded")


def already_loaded(con: duckdb.DuckDBPyConnection, sha256: str) -> LoadCounts | None:
    """The earlier load of these bytes, if any."""
    return loaded_before(con, [sha256]).get(sha256)


def loaded_before(con: duckdb.DuckDBPyConnection, shas: list[str]) -> dict[str, LoadCounts]:
    """The earlier loads of any of these hashes, by hash (one query for the whole list)."""
    if not shas:
        return {}
    con.complete()
    rows = con.execute(
        "select file_sha256, path, source, target_table, n_read, n_loaded, n_quarantined, "
        "n_ignored from raw_ingest_files where file_sha256 in (select unnest($shas))",
        {"shas": shas},
    ).fetchall()
    return {r[0]: LoadCounts(*r[1:], skipped=True) for r in rows}


def loaded_unchanged(
    con: duckdb.DuckDBPyConnection, stats: list[tuple[str, str, int, int]]
) -> dict[str, LoadCounts]:
    """Earlier loads of whole files by ``(path, source, size, mtime_ns)``, by path: a file whose
    path, source, size and mtime are those recorded when it was read is not read again (one
    query for the whole list)."""
    if not stats:
        return {}
    con.complete()
    frame = pl.DataFrame(
        stats, schema={"path": pl.String, "source": pl.String, "size": pl.Int64,
                       "mtime_ns": pl.Int64}, orient="row",
    )  # fmt: skip
    con.register("incoming_stats", frame.to_arrow())
    try:
        rows = con.execute(
            "select f.path, f.source, f.target_table, f.n_read, f.n_loaded, f.n_quarantined, "
            "f.n_ignored from raw_ingest_files as f join incoming_stats as s "
            "on f.path = s.path and f.source = s.source and f.file_size = s.size "
            "and f.file_mtime_ns = s.mtime_ns"
        ).fetchall()
    finally:
        con.unregister("incoming_stats")
    return {r[0]: LoadCounts(*r, skipped=True) for r in rows}


@dataclass(frozen=True)
class FileLoad:
    """One file's outcome, ready to load: its rows, its rejects and its quality results.

    ``rejects`` has ``source_file, line_no, raw, reason, stage``; ``quality_results`` has one
    mapping per expectation with ``expectation, success, n_unexpected``.
    """

    path: str
    source: str
    table: str
    sha256: str
    rows: pl.DataFrame
    rejects: pl.DataFrame
    n_ignored: int
    quality_results: tuple[dict[str, object], ...] = ()
    stream: StreamRead | None = None  # a read of a tailed stream (rows already renumbered)
    forget: bool = False  # first remove what this path or content loaded before (--force)
    stat: tuple[int, int] | None = None  # a whole file's size and mtime (ns) when it was read

    def counts(self) -> LoadCounts:
        n_held = 0 if self.stream is None else self.stream.n_held
        status = ""
        if self.stream is not None:
            status = {"new": "loaded", "append": "appended", "replace": "replaced",
                      "unchanged": "no new lines"}[self.stream.action]  # fmt: skip
            if self.stream.released:
                status += " (last line without newline read: file finished)"
            elif n_held:
                status += " (last line held: no newline yet)"
        elif self.rows.height + self.rejects.height == 0:
            status = f"no {self.source} lines"
        return LoadCounts(
            path=self.path,
            source=self.source,
            table=self.table,
            n_read=self.rows.height + self.rejects.height + n_held,
            n_loaded=self.rows.height,
            n_quarantined=self.rejects.height,
            n_ignored=self.n_ignored,
            skipped=False,
            n_held=n_held,
            status=status,
        )


class PartWriter(Protocol):
    """Writes one file's rows as lake parts: ``functools.partial(lake.write_parts, lake_dir)``."""

    def __call__(self, *, table: str, sha256: str, rows: pl.DataFrame) -> object: ...


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


def _insert(
    con: duckdb.DuckDBPyConnection, table: str, frame: pl.DataFrame, *, replace: bool = False
) -> None:
    """Insert a frame by column name into a table named by the caller's fixed set (``replace``:
    rows whose primary key exists replace them)."""
    if frame.height == 0:
        return
    # one contiguous chunk: a frame concatenated from thousands of small files' rows is as many
    # Arrow record batches, which DuckDB scans batch by batch (78k rows in 9,819 chunks: 2.9 s)
    con.register("incoming_frame", frame.rechunk().to_arrow())
    try:
        if replace:
            con.execute(
                f"insert or replace into {_identifier(table)} by name select * from incoming_frame"
            )
        else:
            con.execute(f"insert into {_identifier(table)} by name select * from incoming_frame")
    finally:
        con.unregister("incoming_frame")


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
    the stream's rows follow it to the path that holds it now (:func:`_move_stream`), a rewritten
    stream's earlier rows are deleted first, and ``raw_streams`` records how far its rows go
    (:mod:`pipelines.streams`).

    With ``write_parts`` (``functools.partial(lake.write_parts, lake_dir)``, passed in so that
    :mod:`pipelines.lake`, which reads this module's schema, is not imported back) the rows are
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
        if load.rows.height + load.rejects.height
        else replace(load, sha256=no_lines_key(load.source, load.sha256))
        for load in loads
        if load.stream is None
    }
    whole = list(keyed.values())
    before = loaded_before(con, [load.sha256 for load in whole if not load.forget])
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
    files = _files_frame([_file_record(load, now) for load in fresh.values()])
    quarantine = [
        _quarantine_rows(load, load.sha256, now) for load in fresh.values() if load.rejects.height
    ]
    checks = _checks_frame(list(fresh.values()), now)
    con.execute("begin transaction")
    try:
        for load in loads:
            if load.forget:
                _forget(con, load.path, load.sha256, lake=write_parts is not None)
        if write_parts is None:
            for table in sorted(tables):
                parts = [
                    load.rows for load in fresh.values() if load.table == table and load.rows.height
                ]
                if parts:
                    _insert(con, table, pl.concat(parts, how="vertical_relaxed"))
        quarantine = [q for q in quarantine if q.height]
        if quarantine:
            _insert(con, "raw_quarantine", pl.concat(quarantine, how="vertical_relaxed"))
        _insert(con, "raw_quality_results", checks)
        _insert(con, "raw_ingest_files", files)
        _load_stream_reads(con, tailed, now, lake=write_parts is not None)
        con.execute("commit")
    except BaseException:
        con.execute("rollback")
        raise
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
                replace(load.counts(), n_read=0, n_loaded=0, n_quarantined=0, n_ignored=0,
                        skipped=True)
            )  # fmt: skip
        else:
            seen.add(load.sha256)
            out.append(load.counts())
    return out


_FILES_SCHEMA = {
    "file_sha256": pl.String,
    "path": pl.String,
    "source": pl.String,
    "target_table": pl.String,
    "n_read": pl.Int64,
    "n_loaded": pl.Int64,
    "n_quarantined": pl.Int64,
    "n_ignored": pl.Int64,
    "n_held": pl.Int64,
    "loaded_at": pl.Datetime("us", "UTC"),
    "file_size": pl.Int64,
    "file_mtime_ns": pl.Int64,
}


def no_lines_key(source: str, sha256: str) -> str:
    """The key a whole file is recorded under when ``source``'s parser found no line of its in it:
    per source, so that the same bytes still load under the right source later."""
    import hashlib

    return hashlib.sha256(f"no {source} lines:{sha256}".encode()).hexdigest()


def _file_record(load: FileLoad, now: datetime, key: str | None = None) -> dict[str, object]:
    counts = load.counts()
    return {
        "file_sha256": key or load.sha256,
        "path": load.path,
        "source": load.source,
        "target_table": load.table,
        "n_read": counts.n_read,
        "n_loaded": counts.n_loaded,
        "n_quarantined": counts.n_quarantined,
        "n_ignored": counts.n_ignored,
        "n_held": counts.n_held,
        "loaded_at": now,
        "file_size": load.stat[0] if load.stat else None,
        "file_mtime_ns": load.stat[1] if load.stat else None,
    }


def _files_frame(records: list[dict[str, object]]) -> pl.DataFrame:
    return pl.DataFrame(records, schema=_FILES_SCHEMA)


def _quarantine_rows(load: FileLoad, key: str, now: datetime) -> pl.DataFrame:
    return load.rejects.select(
        pl.lit(key).alias("file_sha256"),
        "source_file",
        pl.col("line_no").cast(pl.Int32),
        pl.lit(load.table).alias("target_table"),
        pl.col("raw").cast(pl.String),
        "reason",
        "stage",
        pl.lit(now).alias("loaded_at"),
    )


def _checks_frame(loads: list[FileLoad], now: datetime, key: str | None = None) -> pl.DataFrame:
    return pl.DataFrame(
        [
            {
                "file_sha256": key or load.sha256,
                "target_table": load.table,
                "expectation": str(r["expectation"]),
                "success": bool(r["success"]),
                "n_unexpected": int(r["n_unexpected"]),  # type: ignore[call-overload]
                "validated_at": now,
            }
            for load in loads
            for r in load.quality_results
        ],
        schema={
            "file_sha256": pl.String,
            "target_table": pl.String,
            "expectation": pl.String,
            "success": pl.Boolean,
            "n_unexpected": pl.Int64,
            "validated_at": pl.Datetime("us", "UTC"),
        },
    )


def _forget(con: duckdb.DuckDBPyConnection, path: str, key: str, *, lake: bool) -> None:
    """Remove every earlier load of a file (by its content key, or as a stream whose rows carry
    its path): rows, quarantine, quality results and lineage, whatever source it was loaded as.
    Runs inside the caller's transaction."""
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


def stream_states(con: duckdb.DuckDBPyConnection, source: str) -> list[StreamState]:
    """The recorded streams of a tailed source (``raw_streams``)."""
    from pipelines.streams import StreamState

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
        _rename_rows(con, other, str(other_table), new_path,
                     f"{new_path} (gone; stream {str(other)[:16]})", lake=lake)  # fmt: skip
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


def _load_stream_reads(
    con: duckdb.DuckDBPyConnection, loads: list[FileLoad], now: datetime, *, lake: bool
) -> None:
    """Apply reads of streams inside the caller's transaction, in order.

    Reads that move or replace rows (a rotation, a rewrite, a displaced stream) and streams read
    twice in the batch go one by one (:func:`_load_stream_read`); the rest, the new lines of
    streams that stay where they are (nearly every read of a 15-minute tick), are written with a
    handful of set-wise statements for the whole batch.
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
                _insert(con, table, pl.concat(parts, how="vertical_relaxed"))
    rejects = [_quarantine_rows(load, load.sha256, now) for load in bulk if load.rejects.height]
    if rejects:
        _insert(con, "raw_quarantine", pl.concat(rejects, how="vertical_relaxed"))
    _insert(con, "raw_quality_results", _checks_frame(bulk, now))
    states = pl.DataFrame(
        [_state_record(load, now) for load in bulk], schema=_STREAM_SCHEMA, orient="row"
    )
    _insert(con, "raw_streams", states, replace=True)
    reads = [_read_record(load, now) for load in bulk if load.stream and load.stream.chunk]
    if reads:
        _insert(con, "raw_stream_reads", pl.DataFrame(reads, schema=_READ_SCHEMA, orient="row"))
    _upsert_stream_files(con, _files_frame([_file_record(load, now) for load in bulk]))


def _upsert_stream_files(con: duckdb.DuckDBPyConnection, files: pl.DataFrame) -> None:
    con.register("incoming_streams", files.to_arrow())
    try:
        con.execute(_UPSERT_STREAM_FILES)
    finally:
        con.unregister("incoming_streams")


_STREAM_SCHEMA = {
    "stream_id": pl.String, "source": pl.String, "target_table": pl.String,
    "rows_path": pl.String, "head_len": pl.Int32, "head_sha": pl.String,
    "consumed_bytes": pl.Int64, "consumed_lines": pl.Int64, "prefix_sha": pl.String,
    "held_bytes": pl.Int64, "file_size": pl.Int64, "file_mtime_ns": pl.Int64,
    "updated_at": pl.Datetime("us", "UTC"), "tail_sha": pl.String,
}  # fmt: skip
_READ_SCHEMA = {
    "read_key": pl.String, "stream_id": pl.String, "path": pl.String, "action": pl.String,
    "codec": pl.String, "from_byte": pl.Int64, "to_byte": pl.Int64, "first_line": pl.Int64,
    "n_read": pl.Int64, "n_loaded": pl.Int64, "n_quarantined": pl.Int64, "n_held": pl.Int64,
    "n_ignored": pl.Int64, "released": pl.Boolean, "superseded": pl.Boolean,
    "read_at": pl.Datetime("us", "UTC"),
}  # fmt: skip
_UPSERT_STREAM_FILES = (
    "insert into raw_ingest_files by name select * from incoming_streams "
    "on conflict (file_sha256) do update set path = excluded.path, "
    "n_read = raw_ingest_files.n_read - raw_ingest_files.n_held + excluded.n_read, "
    "n_loaded = raw_ingest_files.n_loaded + excluded.n_loaded, "
    "n_quarantined = raw_ingest_files.n_quarantined + excluded.n_quarantined, "
    "n_ignored = raw_ingest_files.n_ignored + excluded.n_ignored, "
    "n_held = excluded.n_held, loaded_at = excluded.loaded_at"
)
"""A stream's lineage row: totals over its reads (n_held: what is held now; the line held
before is read again by this read, so it leaves ``n_read`` first)."""


def _state_record(load: FileLoad, now: datetime) -> tuple[object, ...]:
    assert load.stream is not None
    state = load.stream.after
    return (
        state.stream_id, state.source, state.table, state.rows_path, state.head_len,
        state.head_sha, state.consumed_bytes, state.consumed_lines, state.prefix_sha,
        state.held_bytes, state.file_size, state.file_mtime_ns, now, state.tail_sha,
    )  # fmt: skip


def _read_record(load: FileLoad, now: datetime) -> tuple[object, ...]:
    read = load.stream
    assert read is not None
    counts = load.counts()
    return (
        read.read_key, read.after.stream_id, read.path, read.action, read.codec,
        read.byte_offset, read.after.consumed_bytes, read.line_offset + 1, counts.n_read,
        counts.n_loaded, counts.n_quarantined, counts.n_held, counts.n_ignored, read.released,
        False, now,
    )  # fmt: skip


def _load_stream_read(
    con: duckdb.DuckDBPyConnection, load: FileLoad, now: datetime, *, lake: bool
) -> None:
    """Apply one read of a stream inside the caller's transaction (see :func:`load_files`)."""
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
        con.execute("update raw_stream_reads set superseded = true where stream_id = $id",
                    {"id": sid})  # fmt: skip
        log.warning(
            "%s was rewritten (its first %d bytes changed): replacing the %d rows it loaded before",
            read.path, read.before.consumed_bytes if read.before else 0, n_old,
        )  # fmt: skip
    _move_stream(con, sid, table, state.rows_path, lake=lake)
    if not lake and load.rows.height:
        _insert(con, table, load.rows)
    rejects = _quarantine_rows(load, sid, now)
    if rejects.height:
        _insert(con, "raw_quarantine", rejects)
    _insert(con, "raw_quality_results", _checks_frame([load], now, key=sid))
    _insert(con, "raw_streams", pl.DataFrame([_state_record(load, now)], schema=_STREAM_SCHEMA,
                                              orient="row"), replace=True)  # fmt: skip
    if read.chunk or read.action == "replace":
        record = pl.DataFrame([_read_record(load, now)], schema=_READ_SCHEMA, orient="row")
        _insert(con, "raw_stream_reads", record)
    _upsert_stream_files(con, _files_frame([_file_record(load, now)]))


def query(
    con: duckdb.DuckDBPyConnection, sql: str, params: dict[str, object] | None = None
) -> pl.DataFrame:
    """Run a query with bound ``$name`` parameters and return a polars frame."""
    # DuckDB 2.0 refuses con.sql() while an execute() result is only partly fetched (fetchone);
    # that result is done with by the time anyone calls query(), so close it.
    con.complete()
    return con.sql(sql, params=params or None).pl()


def set_param(con: duckdb.DuckDBPyConnection, name: str, value: float) -> None:
    """Set a view parameter in ``cfg_params``."""
    con.execute(
        "insert or replace into cfg_params (name, value) values ($name, $value)",
        {"name": name, "value": float(value)},
    )
