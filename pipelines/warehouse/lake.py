"""Raw rows as a Parquet lake partitioned by source and date, read by DuckDB as the raw tables.

Layout (hive partitioning)::

    <lake>/source=<source>/date=<YYYY-MM-DD>/part-<sha8>.parquet

One part per landing file and day, named after the first 8 hex digits of the file's SHA-256, so
writing the same file again replaces its parts with the same rows: writes are idempotent, and
each part appears atomically (written aside, then renamed). A row's date is that of the table's
event time (:data:`PARTITION_TS`); rows without one go to ``date=__HIVE_DEFAULT_PARTITION__``.
Every part also carries the file's full hash in ``file_sha256``.

:func:`attach` turns the lake into views named like the raw tables (``raw_slurm_jobs``, ...), so
the staging, intermediate and mart views run over it unchanged. In the warehouse the views keep
only parts of files recorded in ``raw_ingest_files`` (and of stream reads recorded in
``raw_stream_reads`` and not superseded by a rewrite): a part written by an ingest that died before
its commit stays invisible until a rerun records the file. Quarantine and lineage tables stay in
DuckDB; so does every query (DuckDB is one process on one machine; the lake only moves the bulk
of the raw rows to files that other engines and machines can read).
"""

from __future__ import annotations

import functools
import os
from pathlib import Path
from typing import TYPE_CHECKING

import polars as pl

from pipelines.runtime.source_names import RAW_TABLES
from pipelines.warehouse.connection import identifier as _identifier  # a SQL guard by that name
from pipelines.warehouse.connection import transaction
from pipelines.warehouse.schema import ADDED_COLUMNS, apply_schema

if TYPE_CHECKING:
    import duckdb

SOURCES: dict[str, str] = {table: source for source, table in RAW_TABLES.items()}
"""Raw table -> the landing source (lake partition) that feeds it, from the sources' names;
the only table names this module puts into SQL."""

PARTITION_TS: dict[str, str] = {
    "raw_slurm_jobs": "submit_ts",
    "raw_xid_events": "ts",
    "raw_inventory": "snapshot_ts",
    "raw_fleet": "installed_ts",
    "raw_repairs": "opened_ts",
    "raw_fault_events": "start_ts",
}
"""Raw table -> the timestamp column whose UTC date partitions its rows (other tables: their
first timestamp column)."""

NO_DATE = "__HIVE_DEFAULT_PARTITION__"
"""Partition value for rows without a date (DuckDB reads it back as NULL)."""

_HIVE_TYPES = "{'source': 'VARCHAR', 'date': 'DATE'}"
_MARK = "relia lake: "
"""Prefix of the comment on a lake view; the rest is the lake's absolute path."""


def _table(name: str) -> str:
    """``name`` when it is a raw table the lake knows; the guard for every name put into SQL."""
    if name not in SOURCES:
        msg = f"{name!r} is not a raw table the lake holds; choose one of {sorted(SOURCES)}"
        raise ValueError(msg)
    return name


def _sql_string(text: str) -> str:
    """``text`` as a SQL string literal (view definitions cannot take bound parameters)."""
    return "'" + text.replace("'", "''") + "'"


def part_name(sha256: str) -> str:
    """File name of a landing file's parts: ``part-<first 8 hex digits>.parquet``."""
    if len(sha256) < 8 or not all(c in "0123456789abcdef" for c in sha256):
        msg = f"expected a lower-case hex SHA-256, got {sha256!r}"
        raise ValueError(msg)
    return f"part-{sha256[:8]}.parquet"


def write_parts(
    lake_dir: Path,
    *,
    table: str,
    sha256: str,
    rows: pl.DataFrame,
    schema: pl.Schema | dict[str, pl.DataType] | None = None,
) -> list[Path]:
    """Write one landing file's rows as Parquet parts, one per date; returns the parts written.

    Parameters
    ----------
    lake_dir
        Root of the lake (created if needed).
    table
        The raw table the rows belong to (one of :data:`SOURCES`).
    sha256
        The landing file's SHA-256 (hex): names the parts and fills ``file_sha256``.
    rows
        The file's loaded rows, with the raw table's columns.
    schema
        Column names and types to write; default: the raw table's (:func:`raw_schema`), so the
        lake reads back with the same types as the table.

    Returns
    -------
    list of Path
        The parts, one per distinct date of ``PARTITION_TS[table]`` (none for no rows).

    Raises
    ------
    ValueError
        For an unknown table, or a part of the same name that holds another file's rows (two
        files whose hashes share their first 8 hex digits in one partition).
    """
    source = SOURCES[_table(table)]
    name = part_name(sha256)
    if rows.height == 0:
        return []
    schema = raw_schema(table) if schema is None else schema
    rows = rows.select(pl.col(c).cast(dtype) for c, dtype in schema.items())
    ts_column = PARTITION_TS.get(table) or next(
        (c for c, dtype in schema.items() if isinstance(dtype, pl.Datetime)), None
    )
    day = (
        pl.lit(NO_DATE)
        if ts_column is None
        else pl.col(ts_column).dt.convert_time_zone("UTC").dt.date().cast(pl.String)
    ).fill_null(NO_DATE)
    frame = rows.with_columns(pl.lit(sha256).alias("file_sha256"), day.alias("__date"))
    written = []
    for (date,), part in frame.partition_by("__date", as_dict=True, maintain_order=True).items():
        folder = Path(lake_dir) / f"source={source}" / f"date={date}"
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / name
        if path.exists():
            _check_owner(path, sha256)
        tmp = folder / f".{name}.{os.getpid()}.tmp"
        part.drop("__date").write_parquet(tmp, compression="zstd", statistics=True)
        tmp.replace(path)
        written.append(path)
    return written


@functools.cache
def raw_schema(table: str) -> pl.Schema:
    """Column names and polars types of a raw table as ``sql/schema`` declares it."""
    import duckdb

    con = duckdb.connect()
    try:
        con.execute("set TimeZone = 'UTC'")
        apply_schema(con)
        schema: pl.Schema = con.sql(f"select * from {_table(table)} limit 0").pl().schema
        return schema
    finally:
        con.close()


def _check_owner(path: Path, sha256: str) -> None:
    owners = pl.scan_parquet(path).select(pl.col("file_sha256").unique()).collect()["file_sha256"]
    if owners.to_list() != [sha256]:
        msg = (
            f"{path} already holds rows of file {owners.to_list()}, not {sha256}: two landing "
            "files share the first 8 hex digits of their hash in one partition"
        )
        raise ValueError(msg)


def parts(lake_dir: Path, table: str) -> list[Path]:
    """Every part of ``table`` in the lake (sorted)."""
    source = SOURCES[_table(table)]
    return sorted((Path(lake_dir) / f"source={source}").glob("date=*/part-*.parquet"))


def _kind(con: duckdb.DuckDBPyConnection, name: str) -> str | None:
    """``"table"``, ``"view"`` or None for an object of the main schema."""
    row = con.execute(
        "select 'table' from duckdb_tables() where table_name = $n and not temporary "
        "union all select 'view' from duckdb_views() where view_name = $n and not temporary",
        {"n": name},
    ).fetchone()
    return None if row is None else str(row[0])


def lake_of(con: duckdb.DuckDBPyConnection) -> Path | None:
    """Return the lake the warehouse's raw views read, or None when raw rows live in tables."""
    rows = con.execute(
        "select comment from duckdb_views() where not temporary and starts_with(comment, $mark)",
        {"mark": _MARK},
    ).fetchall()
    paths = {r[0].removeprefix(_MARK) for r in rows}
    if len(paths) > 1:
        msg = f"the warehouse's raw views read several lakes: {sorted(paths)}"
        raise ValueError(msg)
    return Path(paths.pop()) if paths else None


def check_warehouse(con: duckdb.DuckDBPyConnection, lake_dir: Path | None) -> None:
    """Refuse to mix table and lake storage of raw rows in one warehouse.

    Raises
    ------
    ValueError
        When ``lake_dir`` is None but the warehouse reads a lake, when it reads another lake, or
        when ``lake_dir`` is given but a raw table already holds rows.
    """
    current = lake_of(con)
    if lake_dir is None:
        if current is not None:
            msg = f"this warehouse keeps its raw rows in the lake {current}; pass --lake {current}"
            raise ValueError(msg)
        return
    wanted = Path(lake_dir).resolve()
    if current is not None and current != wanted:
        msg = f"this warehouse reads the lake {current}, not {wanted}; pass --lake {current}"
        raise ValueError(msg)
    for table in SOURCES:
        if _kind(con, table) == "table":
            (n,) = con.execute(f"select count(*) from {_table(table)}").fetchone()  # type: ignore[misc]
            if n:
                msg = (
                    f"{table} holds {n} rows in the warehouse; a lake warehouse keeps every raw "
                    "row in the lake: ingest into a new warehouse with --lake"
                )
                raise ValueError(msg)


def attach(
    con: duckdb.DuckDBPyConnection,
    lake_dir: Path,
    *,
    temporary: bool = False,
    recorded_only: bool | None = None,
) -> list[str]:
    """Make every raw table with parts in the lake a view over them; returns the views made.

    Parameters
    ----------
    con
        A connection where the raw tables exist (``warehouse.apply_schema``).
    lake_dir
        Root of the lake.
    temporary
        Create connection-local views that shadow the tables (nothing is stored; for reading a
        lake from any connection). Otherwise the (empty) raw tables are replaced by stored views,
        so every later reader of the warehouse reads the lake.
    recorded_only
        Show only parts of files recorded in the connection's ``raw_ingest_files`` (what the
        warehouse committed); default: when not ``temporary``.

    Notes
    -----
    Views read ``read_parquet(<lake>/source=<s>/*/*.parquet, hive_partitioning = true,
    hive_types = {'source': 'VARCHAR', 'date': 'DATE'}, union_by_name = true)`` and drop the
    partition columns and ``file_sha256``; a column the table gained after its first parts were
    written (``ADDED_COLUMNS``) is null in those parts. A table with no parts yet stays a table.

    Raises
    ------
    ValueError
        When ``temporary`` is False and a raw table to replace holds rows.
    """
    root = Path(lake_dir).resolve()
    if not temporary:
        check_warehouse(con, root)
    lineage = not temporary if recorded_only is None else recorded_only
    if temporary:
        return _create_views(con, root, temporary=temporary, lineage=lineage)
    with transaction(con):
        return _create_views(con, root, temporary=temporary, lineage=lineage)


def _create_views(
    con: duckdb.DuckDBPyConnection, root: Path, *, temporary: bool, lineage: bool
) -> list[str]:
    made = []
    for table, source in SOURCES.items():
        if not parts(root, table):
            continue
        name = _table(table)
        glob = _sql_string(str(root / f"source={source}" / "*" / "*.parquet"))
        recorded = (
            " where file_sha256 in (select file_sha256 from raw_ingest_files union all "
            "select read_key from raw_stream_reads where not superseded)"
            if lineage
            else ""
        )
        body = (
            f"select * exclude (file_sha256, source, date) from read_parquet({glob}, "
            f"hive_partitioning = true, hive_types = {_HIVE_TYPES}, union_by_name = true)"
            f"{recorded}"
        )
        # columns the table gained after parts were written: null for those parts, never missing
        added = ", ".join(
            f"cast(null as {sql_type}) as {_identifier(column)}"
            for added_to, column, sql_type in ADDED_COLUMNS
            if added_to == table
        )
        if added:
            body = f"({body}) union all by name (select {added} where false)"
        if temporary:
            con.execute(f"create or replace temp view {name} as {body}")
        else:
            if _kind(con, name) == "table":
                con.execute(f"drop table {name}")
            con.execute(f"create or replace view {name} as {body}")
            con.execute(f"comment on view {name} is {_sql_string(_MARK + str(root))}")
        made.append(name)
    return made
