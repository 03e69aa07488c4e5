"""The scalar macros of sql/schema/015_macros.sql, on counter values read off by hand."""

from __future__ import annotations

import duckdb
import pytest

from pipelines import warehouse


@pytest.fixture(scope="module")
def con() -> duckdb.DuckDBPyConnection:
    con = duckdb.connect()
    warehouse.apply_schema(con)
    return con


@pytest.mark.parametrize(
    ("current", "previous", "delta", "reset"),
    [
        (12.0, 5.0, 7.0, False),  # a plain increase
        (5.0, 5.0, 0.0, False),  # no change
        (3.0, 40.0, 3.0, True),  # reset: restarted from zero, so its increase is its new value
        (0.0, 40.0, 0.0, True),  # reset to zero exactly
        (7.0, None, None, False),  # the first sample of a series has no delta
        (None, 7.0, None, False),  # a missing sample neither
    ],
)
def test_counter_macros_count_a_reset_as_a_restart_from_zero(
    con: duckdb.DuckDBPyConnection,
    current: float | None,
    previous: float | None,
    delta: float | None,
    reset: bool,
) -> None:
    got = con.execute(
        "select counter_delta($c::double, $p::double), counter_reset($c::double, $p::double)",
        {"c": current, "p": previous},
    ).fetchall()
    assert got == [(delta, reset)]
