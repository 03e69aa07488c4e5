"""Run Great Expectations suites on DuckDB through GX's SQL path (``pipelines.quality`` uses it).

GX 1.24.1's SQL execution engine reads a query's rows after it has handed the connection back to
its pool (``SqlAlchemyExecutionEngine.execute_query``). SQLAlchemy rolls the transaction back on
that return, and a DuckDB connection keeps one pending result, which the rollback drops: every
metric comes back empty and the suite fails with "list index out of range". The dialect below is
duckdb-engine's, with cursors that read a result whole when it is executed, so the rows outlive
the connection's return. Nothing else of GX or duckdb-engine is changed.

Two more limits of that path, which :func:`pipelines.quality.validate` works around: it caps
``unexpected_index_list`` at ``partial_unexpected_count`` even with ``COMPLETE`` (the count is
set to the batch's height), and ``ExpectColumnValuesToMatchRegex`` is "not supported for dialect
duckdb" (such checks run on pandas, :data:`SQL_KINDS`).
"""

from __future__ import annotations

import atexit
import itertools
import threading
from functools import cache
from typing import TYPE_CHECKING, Any

import duckdb_engine
import polars as pl
from sqlalchemy.dialects import registry

if TYPE_CHECKING:
    from collections.abc import Sequence

SQL_KINDS = frozenset(
    {
        "ExpectColumnValuesToNotBeNull",
        "ExpectColumnValuesToBeInSet",
        "ExpectColumnValuesToBeBetween",
        "ExpectColumnPairValuesAToBeGreaterThanB",
    }
)
"""Expectation kinds whose SQL form was checked against the pandas one on DuckDB (same rows)."""

ROW_ID = "_gx_row"
"""The column that numbers the staged rows; GX reports failing rows by it."""

_DATABASE = "duckdb+relia_buffered:///:memory:relia_gx"
_LOCK = threading.Lock()
_SEQUENCE = itertools.count()


class BufferedCursor:
    """A duckdb-engine cursor that reads each result whole when it runs (see the module doc)."""

    def __init__(self, cursor: Any) -> None:
        self._cursor = cursor
        self._rows: list[Any] = []
        self._position = 0
        self.description: Any = None

    def execute(self, statement: str, parameters: Any = None, context: Any = None) -> None:
        """Run ``statement`` and keep its rows."""
        self._cursor.execute(statement, parameters, context)
        # type codes as text: DuckDB's type objects, kept by SQLAlchemy's caches until exit,
        # would be reported as leaked by DuckDB's bindings
        description = self._cursor.description
        self.description = (
            None if description is None else [(d[0], str(d[1]), *d[2:]) for d in description]
        )
        self._rows = self._cursor.fetchall() if self.description is not None else []
        self._position = 0

    def executemany(self, statement: str, parameters: Any = None, context: Any = None) -> None:
        """Run ``statement`` once per parameter set (no rows are kept)."""
        self._cursor.executemany(statement, parameters, context)
        self.description = None
        self._rows = []
        self._position = 0

    def fetchall(self) -> list[Any]:
        """Return the rows not read yet."""
        rows = self._rows[self._position :]
        self._position = len(self._rows)
        return rows

    def fetchmany(self, size: int | None = None) -> list[Any]:
        """Return up to ``size`` rows not read yet (one by default, as DB-API says)."""
        rows = self._rows[self._position : self._position + (size or 1)]
        self._position += len(rows)
        return rows

    def fetchone(self) -> Any:
        """Return the next row, or None."""
        rows = self.fetchmany(1)
        return rows[0] if rows else None

    def close(self) -> None:
        """Drop the kept rows."""
        self._rows = []

    def __getattr__(self, name: str) -> Any:
        """Pass anything else to duckdb-engine's cursor."""
        return getattr(self._cursor, name)


class BufferedConnection:
    """duckdb-engine's connection wrapper whose cursors are :class:`BufferedCursor`."""

    def __init__(self, connection: Any) -> None:
        self._connection = connection

    def cursor(self) -> BufferedCursor:
        """Return a cursor that keeps its results."""
        return BufferedCursor(self._connection.cursor())

    def __getattr__(self, name: str) -> Any:
        """Pass anything else to duckdb-engine's connection."""
        return getattr(self._connection, name)


class BufferedDuckDBDialect(duckdb_engine.Dialect):
    """duckdb-engine's SQLAlchemy dialect with :class:`BufferedConnection` connections."""

    driver = "relia_buffered"
    supports_statement_cache = True

    def connect(self, *cargs: Any, **cparams: Any) -> Any:
        """Open a DuckDB connection as duckdb-engine does and wrap it."""
        return BufferedConnection(super().connect(*cargs, **cparams))


registry.register("duckdb.relia_buffered", __name__, "BufferedDuckDBDialect")


@cache
def _datasource(context: Any) -> Any:
    """Return the context's SQL data source on this process's in-memory DuckDB."""
    source = context.data_sources.add_sql(name="relia_duckdb", connection_string=_DATABASE)
    # close the pooled DuckDB connections before the interpreter tears the module down (else
    # DuckDB's bindings report leaked objects on stderr at exit)
    atexit.register(source.get_execution_engine().engine.dispose)
    atexit.register(source.get_engine().dispose)
    return source


def _staged(frame: pl.DataFrame) -> pl.DataFrame:
    """``frame`` as DuckDB should hold it to answer like pandas does.

    NaN is missing to pandas (GX skips it) but a number above every other to DuckDB, so NaN
    becomes null; categoricals become strings, so that a value outside the categories is a
    failed check and not a cast error.
    """
    return frame.with_columns(
        [pl.col(c).fill_nan(None) for c, t in frame.schema.items() if t.is_float()]
        + [
            pl.col(c).cast(pl.String)
            for c, t in frame.schema.items()
            if isinstance(t, pl.Categorical | pl.Enum)
        ]
    ).with_row_index(ROW_ID)


def failing_rows(
    context: Any, frame: pl.DataFrame, expectations: Sequence[Any]
) -> list[tuple[Any, list[int]]]:
    """Validate ``frame`` with ``expectations`` on DuckDB; return each result and its failing rows.

    Parameters
    ----------
    context
        The process's GX context.
    frame
        The columns the expectations read (row ``i`` of the frame is row ``i`` of the batch).
    expectations
        GX expectation objects, all of kinds in :data:`SQL_KINDS`.

    Returns
    -------
    list
        Per expectation, in GX's result order, ``(result, positions of the failing rows)``.
    """
    import great_expectations as gx

    source = _datasource(context)
    with _LOCK:
        table = f"incoming_{next(_SEQUENCE)}"
        engine = source.get_execution_engine().engine
        raw = engine.raw_connection()
        try:
            raw.driver_connection.register("incoming_arrow", _staged(frame).to_arrow())
            raw.driver_connection.execute(f"create table {table} as select * from incoming_arrow")
            raw.driver_connection.unregister("incoming_arrow")
            raw.commit()
            asset = source.add_table_asset(name=table, table_name=table)
            try:
                suite = gx.ExpectationSuite(name=f"{table}_suite")
                for expectation in expectations:
                    suite.add_expectation(expectation)
                batch = asset.add_batch_definition_whole_table("whole").get_batch()
                outcome = batch.validate(
                    suite,
                    result_format={
                        "result_format": "COMPLETE",
                        "unexpected_index_column_names": [ROW_ID],
                        # GX's SQL path cuts the index list at this count, even for COMPLETE
                        "partial_unexpected_count": frame.height,
                        "exclude_unexpected_values": True,
                        "return_unexpected_index_query": False,
                    },
                )
            finally:
                source.delete_asset(table)
        finally:
            raw.driver_connection.execute(f"drop table if exists {table}")
            raw.commit()
            raw.close()
    return [(result, _positions(result.result)) for result in outcome.results]


def _positions(result: dict[str, Any]) -> list[int]:
    """Return the failing rows' positions from a result's ``unexpected_index_list``.

    With ``exclude_unexpected_values`` GX gives one dict of lists (``{ROW_ID: [3, 9]}``),
    otherwise one dict per row (``{ROW_ID: 3, column: value}``).
    """
    positions: list[int] = []
    for item in result.get("unexpected_index_list") or []:
        value = item[ROW_ID]
        positions.extend(int(v) for v in (value if isinstance(value, list) else [value]))
    return positions
