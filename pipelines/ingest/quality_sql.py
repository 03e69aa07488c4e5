"""Run Great Expectations suites on DuckDB through GX's SQL path (for the ingest's quality).

GX 1.24.1's SQL execution engine reads a query's rows after it has handed the connection back to
its pool (``SqlAlchemyExecutionEngine.execute_query``). SQLAlchemy rolls the transaction back on
that return, and a DuckDB connection keeps one pending result, which the rollback drops: every
metric comes back empty and the suite fails with "list index out of range". GX connects here
through :class:`KeptResultsDialect`, duckdb-engine's dialect reading each result whole as soon as
its statement has run, so the rows outlive the connection's return. Nothing else of GX or
duckdb-engine is changed.

Two more limits of that path, which :func:`pipelines.ingest.quality.validate` works around: it caps
``unexpected_index_list`` at ``partial_unexpected_count`` even with ``COMPLETE`` (the count is
set to the batch's height), and ``ExpectColumnValuesToMatchRegex`` is "not supported for dialect
duckdb" (such checks run on pandas, :data:`SQL_KINDS`).
"""

from __future__ import annotations

import atexit
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

_DATABASE = "duckdb+relia_kept:///:memory:relia_gx"
_STAGED = "gx_incoming"
_LOCK = threading.Lock()


class KeptResultsDialect(duckdb_engine.Dialect):
    """duckdb-engine's SQLAlchemy dialect, reading each result whole as soon as it has run.

    Later fetches are answered from those rows, so a result outlives the return of its
    connection to the pool (see the module doc).
    """

    driver = "relia_kept"
    supports_statement_cache = True

    def do_execute(self, cursor: Any, statement: str, parameters: Any, context: Any = None) -> None:
        """Run the statement as duckdb-engine does, then keep its rows."""
        super().do_execute(cursor, statement, parameters, context)  # type: ignore[no-untyped-call]
        _read_whole(cursor)

    def do_execute_no_params(self, cursor: Any, statement: str, context: Any = None) -> None:
        """Run the statement as duckdb-engine does, then keep its rows."""
        super().do_execute_no_params(cursor, statement, context)  # type: ignore[no-untyped-call]
        _read_whole(cursor)


registry.register("duckdb.relia_kept", __name__, "KeptResultsDialect")


def _read_whole(cursor: Any) -> None:
    """Read ``cursor``'s result whole and answer its fetches from it.

    Type codes in the description become text: DuckDB's type objects, kept by SQLAlchemy's
    caches until exit, would be reported as leaked by its bindings.
    """
    description = cursor.description
    rows: list[Any] = cursor.fetchall() if description is not None else []
    position = 0

    def fetchmany(size: int | None = None) -> list[Any]:
        nonlocal position
        taken = rows[position : position + (size or 1)]
        position += len(taken)
        return taken

    def fetchall() -> list[Any]:
        nonlocal position
        taken = rows[position:]
        position = len(rows)
        return taken

    def fetchone() -> Any:
        taken = fetchmany(1)
        return taken[0] if taken else None

    cursor.description = (
        None if description is None else [(d[0], str(d[1]), *d[2:]) for d in description]
    )
    cursor.fetchmany = fetchmany
    cursor.fetchall = fetchall
    cursor.fetchone = fetchone


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
        engine = source.get_execution_engine().engine
        raw = engine.raw_connection()
        try:
            raw.driver_connection.register("incoming_arrow", _staged(frame).to_arrow())
            raw.driver_connection.execute(f"create table {_STAGED} as select * from incoming_arrow")
            raw.driver_connection.unregister("incoming_arrow")
            raw.commit()
            asset = source.add_table_asset(name=_STAGED, table_name=_STAGED)
            try:
                suite = gx.ExpectationSuite(name="staged_suite")
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
                source.delete_asset(_STAGED)
        finally:
            raw.driver_connection.execute(f"drop table if exists {_STAGED}")
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
