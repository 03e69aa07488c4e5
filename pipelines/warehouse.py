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
from typing import TYPE_CHECKING

import duckdb
import polars as pl

if TYPE_CHECKING:
    from collections.abc import Iterator

log = logging.getLogger(__name__)

SQL_DIR = Path(__file__).resolve().parent.parent / "sql"
VIEW_LAYERS = ("staging", "intermediate", "marts")
_IDENTIFIER = re.compile(r"^[a-z][a-z0-9_]*$")
RAW_TABLES = ("raw_slurm_jobs", "raw_xid_events", "raw_inventory", "raw_fleet", "raw_repairs")
SEEDS = {
    "seed_xid": "dim_xid.csv",
    "seed_component_class": "dim_component_class.csv",
    "seed_planned_reason": "dim_planned_reason.csv",
}


class WarehouseBusyError(RuntimeError):
    """Another process holds the warehouse's write lock; retry later."""


def _identifier(name: str) -> str:
    if not _IDENTIFIER.fullmatch(name):  # match() with $ would let a final newline through
        msg = f"refusing identifier {name!r}: names must match {_IDENTIFIER.pattern}"
        raise ValueError(msg)
    return name


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
                    f"warehouse busy: {db_path} is locked by another process (DuckDB allows one "
                    "writer); retry when the running ingest has finished"
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
    """Run every ``sql/schema/*.sql`` file (idempotent DDL) and (re)load the seed tables."""
    for path in sorted((SQL_DIR / "schema").glob("*.sql")):
        con.execute(path.read_text())
    for table, file_name in SEEDS.items():
        seed = SQL_DIR / "seeds" / file_name
        con.execute(
            f"create or replace table {_identifier(table)} as "
            "select * from read_csv($path, header = true, auto_detect = true)",
            {"path": str(seed)},
        )


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
    skipped: bool  # True when the same bytes were loaded before


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

    def counts(self) -> LoadCounts:
        return LoadCounts(
            path=self.path,
            source=self.source,
            table=self.table,
            n_read=self.rows.height + self.rejects.height,
            n_loaded=self.rows.height,
            n_quarantined=self.rejects.height,
            n_ignored=self.n_ignored,
            skipped=False,
        )


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
    lake_dir: Path | None = None,
) -> LoadCounts:
    """Load one file's rows and quarantine rows in a single transaction (see :func:`load_files`)."""
    load = FileLoad(
        path, source, table, sha256, rows, rejects, n_ignored, tuple(quality_results or ())
    )
    return load_files(con, [load], lake_dir=lake_dir)[0]


def _insert(con: duckdb.DuckDBPyConnection, table: str, frame: pl.DataFrame) -> None:
    """Insert a frame by column name into a table named by the caller's fixed set."""
    if frame.height == 0:
        return
    con.register("incoming_frame", frame.to_arrow())
    try:
        con.execute(f"insert into {_identifier(table)} by name select * from incoming_frame")
    finally:
        con.unregister("incoming_frame")


def load_files(
    con: duckdb.DuckDBPyConnection, loads: list[FileLoad], *, lake_dir: Path | None = None
) -> list[LoadCounts]:
    """Load several files (of one raw table) in a single transaction.

    Each file's rows, quarantine rows, quality results and its ``raw_ingest_files`` row are
    written in that one transaction, so after a crash every file is either wholly loaded or not
    at all; one transaction for a batch instead of one per file saves ~10 ms a file. Files
    whose bytes were loaded before (or repeat an earlier file of ``loads``) come back with
    ``skipped=True`` and change nothing.

    With ``lake_dir`` the rows are written as Parquet parts first (``pipelines.lake``; idempotent,
    and invisible to the lake views until the transaction records the file), not into the table.
    """
    if not loads:
        return []
    tables = {load.table for load in loads}
    for table in tables:
        _identifier(table)
    before = loaded_before(con, [load.sha256 for load in loads])
    fresh: dict[str, FileLoad] = {}
    for load in loads:
        if load.sha256 not in before:
            fresh.setdefault(load.sha256, load)
    if lake_dir is not None:
        from pipelines import lake

        for load in fresh.values():
            lake.write_parts(lake_dir, table=load.table, sha256=load.sha256, rows=load.rows)
    now = datetime.now(UTC)
    files = pl.DataFrame(
        [
            {
                "file_sha256": load.sha256,
                "path": load.path,
                "source": load.source,
                "target_table": load.table,
                "n_read": load.rows.height + load.rejects.height,
                "n_loaded": load.rows.height,
                "n_quarantined": load.rejects.height,
                "n_ignored": load.n_ignored,
                "loaded_at": now,
            }
            for load in fresh.values()
        ],
        schema={
            "file_sha256": pl.String,
            "path": pl.String,
            "source": pl.String,
            "target_table": pl.String,
            "n_read": pl.Int64,
            "n_loaded": pl.Int64,
            "n_quarantined": pl.Int64,
            "n_ignored": pl.Int64,
            "loaded_at": pl.Datetime("us", "UTC"),
        },
    )
    quarantine = [
        load.rejects.select(
            pl.lit(load.sha256).alias("file_sha256"),
            "source_file",
            pl.col("line_no").cast(pl.Int32),
            pl.lit(load.table).alias("target_table"),
            pl.col("raw").cast(pl.String),
            "reason",
            "stage",
            pl.lit(now).alias("loaded_at"),
        )
        for load in fresh.values()
        if load.rejects.height
    ]
    checks = pl.DataFrame(
        [
            {
                "file_sha256": load.sha256,
                "target_table": load.table,
                "expectation": str(r["expectation"]),
                "success": bool(r["success"]),
                "n_unexpected": int(r["n_unexpected"]),  # type: ignore[call-overload]
                "validated_at": now,
            }
            for load in fresh.values()
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
    con.execute("begin transaction")
    try:
        if lake_dir is None:
            for table in sorted(tables):
                parts = [
                    load.rows
                    for load in fresh.values()
                    if load.table == table and load.rows.height
                ]
                if parts:
                    _insert(con, table, pl.concat(parts, how="vertical_relaxed"))
        if quarantine:
            _insert(con, "raw_quarantine", pl.concat(quarantine, how="vertical_relaxed"))
        _insert(con, "raw_quality_results", checks)
        _insert(con, "raw_ingest_files", files)
        con.execute("commit")
    except BaseException:
        con.execute("rollback")
        raise
    out = []
    seen: set[str] = set()
    for load in loads:
        if load.sha256 in before:
            out.append(before[load.sha256])
        elif load.sha256 in seen:
            out.append(
                replace(load.counts(), n_read=0, n_loaded=0, n_quarantined=0, n_ignored=0,
                        skipped=True)
            )  # fmt: skip
        else:
            seen.add(load.sha256)
            out.append(load.counts())
    return out


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
