"""The DuckDB warehouse: connect, apply the schema, load seeds, create views, load parsed files.

Modules: :mod:`~pipelines.warehouse.connection` (connect, the lock wait, ``identifier``,
``query``), :mod:`~pipelines.warehouse.schema` (the only code that knows where ``sql/`` is),
:mod:`~pipelines.warehouse.records` and :mod:`~pipelines.warehouse.load` (loading parsed files,
one transaction per batch), :mod:`~pipelines.warehouse.load_streams` (reads of tailed streams),
:mod:`~pipelines.warehouse.lake` (raw rows as a Parquet lake),
:mod:`~pipelines.warehouse.materialize` (snapshots of the expensive views) and
:mod:`~pipelines.warehouse.dependencies` (which tables each view reads), and
:mod:`~pipelines.runtime.lock_wait` (a spinner while the lock is awaited). This package
re-exports what callers use, so ``from pipelines import warehouse`` then ``warehouse.connect``.
"""

from __future__ import annotations

import duckdb

from pipelines.runtime.lock_wait import (
    WAIT_REPORT_EVERY_S,
    WaitStatus,
    busy_spinner,
    describe_wait,
    reporting_waits,
)
from pipelines.warehouse.connection import (
    WarehouseBusyError,
    connect,
    identifier,
    query,
    transaction,
)
from pipelines.warehouse.dependencies import Read, reads_any, sql_reads, view_reads
from pipelines.warehouse.load import (
    already_loaded,
    load_file,
    load_files,
    loaded_before,
    loaded_unchanged,
    loads_at_paths,
    record_seen,
    written_by,
)
from pipelines.warehouse.load_streams import stream_states
from pipelines.warehouse.materialize import (
    MATERIALIZED,
    dematerialize,
    materialize,
    materialized,
    refresh,
    set_param,
    stale_snapshots,
)
from pipelines.warehouse.pending import (
    check_finished,
    finish_ingest,
    start_ingest,
    unfinished_ingest,
)
from pipelines.warehouse.ready import prepare
from pipelines.warehouse.records import FileLoad, LoadCounts, PartWriter, file_sha256, no_lines_key
from pipelines.warehouse.schema import (
    ADDED_COLUMNS,
    RAW_TABLES,
    SEEDS,
    SQL_DIR,
    VIEW_LAYERS,
    apply_schema,
    base_tables,
    create_views,
    init,
    view_files,
)

_identifier = identifier
"""The name SQL call sites use: tests/hardening/test_security.py's scan knows it as a guard."""

__all__ = [
    "ADDED_COLUMNS",
    "MATERIALIZED",
    "RAW_TABLES",
    "SEEDS",
    "SQL_DIR",
    "VIEW_LAYERS",
    "WAIT_REPORT_EVERY_S",
    "FileLoad",
    "LoadCounts",
    "PartWriter",
    "Read",
    "WaitStatus",
    "WarehouseBusyError",
    "already_loaded",
    "apply_schema",
    "base_tables",
    "busy_spinner",
    "check_finished",
    "connect",
    "create_views",
    "dematerialize",
    "describe_wait",
    "duckdb",
    "file_sha256",
    "finish_ingest",
    "identifier",
    "init",
    "load_file",
    "load_files",
    "loaded_before",
    "loaded_unchanged",
    "loads_at_paths",
    "materialize",
    "materialized",
    "no_lines_key",
    "prepare",
    "query",
    "reads_any",
    "record_seen",
    "refresh",
    "reporting_waits",
    "set_param",
    "sql_reads",
    "stale_snapshots",
    "start_ingest",
    "stream_states",
    "transaction",
    "unfinished_ingest",
    "view_files",
    "view_reads",
    "written_by",
]
