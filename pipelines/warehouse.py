"""The DuckDB warehouse: connect, apply the schema, load seeds, create views, load parsed files.

This is the only module that knows where ``sql/`` is. Views come from ``sql/<layer>/<stem>.sql``
in layer order (staging, intermediate, marts), each a bare ``select`` wrapped as
``create or replace view <stem> as ...``. Loads are one transaction per file, keyed by the file's
SHA-256, so re-ingesting the same bytes changes nothing and a crash leaves no half-loaded file.
"""

from __future__ import annotations

import logging
import re
import time
from contextlib import contextmanager
from dataclasses import dataclass
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
SEEDS = {"seed_xid": "dim_xid.csv", "seed_component_class": "dim_component_class.csv"}


class WarehouseBusyError(RuntimeError):
    """Another process holds the warehouse's write lock; retry later."""


def _identifier(name: str) -> str:
    if not _IDENTIFIER.match(name):
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
    row = con.execute(
        "select path, source, target_table, n_read, n_loaded, n_quarantined, n_ignored "
        "from raw_ingest_files where file_sha256 = $sha",
        {"sha": sha256},
    ).fetchone()
    if row is None:
        return None
    return LoadCounts(*row, skipped=True)


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
) -> LoadCounts:
    """Load one file's rows and quarantine rows in a single transaction.

    ``rejects`` has ``source_file, line_no, raw, reason, stage``. The ``raw_ingest_files`` row is
    written in the same transaction, so a file is either wholly loaded or not at all.
    """
    _identifier(table)
    previous = already_loaded(con, sha256)
    if previous is not None:
        return previous
    now = datetime.now(UTC)
    con.execute("begin transaction")
    try:
        if rows.height:
            con.register("incoming_rows", rows.to_arrow())
            con.execute(f"insert into {table} by name select * from incoming_rows")
            con.unregister("incoming_rows")
        if rejects.height:
            quarantine = rejects.select(
                pl.lit(sha256).alias("file_sha256"),
                "source_file",
                pl.col("line_no").cast(pl.Int32),
                pl.lit(table).alias("target_table"),
                "raw",
                "reason",
                "stage",
                pl.lit(now).alias("loaded_at"),
            )
            con.register("incoming_rejects", quarantine.to_arrow())
            con.execute("insert into raw_quarantine by name select * from incoming_rejects")
            con.unregister("incoming_rejects")
        if quality_results:
            checks = pl.DataFrame(
                {
                    "file_sha256": [sha256] * len(quality_results),
                    "target_table": [table] * len(quality_results),
                    "expectation": [r["expectation"] for r in quality_results],
                    "success": [bool(r["success"]) for r in quality_results],
                    "n_unexpected": [int(r["n_unexpected"]) for r in quality_results],  # type: ignore[call-overload]
                    "validated_at": [now] * len(quality_results),
                }
            )
            con.register("incoming_checks", checks.to_arrow())
            con.execute("insert into raw_quality_results by name select * from incoming_checks")
            con.unregister("incoming_checks")
        counts = LoadCounts(
            path=path,
            source=source,
            table=table,
            n_read=rows.height + rejects.height,
            n_loaded=rows.height,
            n_quarantined=rejects.height,
            n_ignored=n_ignored,
            skipped=False,
        )
        con.execute(
            "insert into raw_ingest_files values "
            "($sha, $path, $source, $table, $n_read, $n_loaded, $n_quarantined, $n_ignored, $now)",
            {
                "sha": sha256,
                "path": path,
                "source": source,
                "table": table,
                "n_read": counts.n_read,
                "n_loaded": counts.n_loaded,
                "n_quarantined": counts.n_quarantined,
                "n_ignored": n_ignored,
                "now": now,
            },
        )
        con.execute("commit")
    except BaseException:
        con.execute("rollback")
        raise
    return counts


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
