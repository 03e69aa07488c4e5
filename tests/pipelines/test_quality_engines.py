"""``quality.validate`` on GX's SQL path (DuckDB) and on pandas: same failing rows, same reasons."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import polars as pl
import pytest
import sqlalchemy as sa

from pipelines.ingest import quality, quality_sql

NOW = datetime(2026, 6, 1, tzinfo=UTC)
T0 = datetime(2026, 1, 1, tzinfo=UTC)
ENGINES = ("sql", "pandas")


def _reasons(validated: quality.Validated) -> dict[int, str]:
    return dict(zip(validated.bad["line_no"], validated.bad["reason"], strict=True))


def _jobs() -> pl.DataFrame:
    hour = timedelta(hours=1)
    rows = [
        # line_no, job_id_raw, state, submit, start, end, alloc_nodes, exit_code
        (1, "10", "COMPLETED", T0, T0 + hour, T0 + 2 * hour, 4, 0),
        (2, None, "COMPLETED", T0, T0 + hour, T0 + 2 * hour, 4, 0),
        (3, "12", "BOGUS", T0, T0 + hour, T0 + 2 * hour, 4, 0),
        (4, "13", "FAILED", datetime(1999, 12, 31, tzinfo=UTC), T0, T0 + hour, 4, 1),
        (5, "14", "FAILED", T0, T0 + 2 * hour, T0 + hour, 4, 1),  # ends before it starts
        (6, "15", "RUNNING", T0, T0 + hour, None, 4, None),  # no end: the pair is not checked
        (7, "16", "FAILED", T0, T0 + hour, T0 + 2 * hour, -1, 256),
        (8, "17", "TIMEOUT", T0, T0, T0 + 2 * hour, 1_000_000, 255),  # every bound inclusive
        (9, "18", "COMPLETED", T0, T0 + hour, NOW + timedelta(days=2), 4, 0),  # in the future
    ]
    names = ["line_no", "job_id_raw", "state", "submit_ts", "start_ts", "end_ts"]
    hostlists = ["gpu0001", "gpu[0001-0004]", "None assigned", "gpu[0001,0003],cpu-01.a_b"]
    return pl.DataFrame(
        rows,
        schema={
            **dict.fromkeys(names),
            "alloc_nodes": pl.Int32,
            "exit_code": pl.Int32,
        },
        orient="row",
    ).with_columns(
        pl.col("^.*_ts$").cast(pl.Datetime("us", "UTC")),
        node_list=pl.Series([hostlists[i % len(hostlists)] for i in range(len(rows))]),
    )


@pytest.mark.parametrize("engine", ENGINES)
def test_validate_flags_each_kind_of_check_on_both_engines(engine: str) -> None:
    checked = quality.validate(_jobs(), table="raw_slurm_jobs", now=NOW, engine=engine)
    between = "ExpectColumnValuesToBeBetween"
    assert _reasons(checked) == {
        2: "ExpectColumnValuesToNotBeNull: job_id_raw not null",
        3: "ExpectColumnValuesToBeInSet: state in the allowed set",
        4: f"{between}: submit_ts between 2000-01-01 and now + 1 day (not in the future)",
        5: "ExpectColumnPairValuesAToBeGreaterThanB: end_ts >= start_ts",
        7: f"{between}: alloc_nodes between 0 and 1000000; {between}: exit_code between 0 and 255",
        9: f"{between}: end_ts between 2000-01-01 and now + 1 day (not in the future)",
    }
    assert checked.good["line_no"].to_list() == [1, 6, 8]
    n_unexpected = {r["expectation"]: r["n_unexpected"] for r in checked.results}
    assert n_unexpected == {
        "job_id_raw not null": 1,
        "state in the allowed set": 1,
        "submit_ts between 2000-01-01 and now + 1 day (not in the future)": 1,
        "start_ts between 2000-01-01 and now + 1 day (not in the future)": 0,
        "end_ts between 2000-01-01 and now + 1 day (not in the future)": 1,
        "end_ts >= start_ts": 1,
        "start_ts >= submit_ts": 0,
        "alloc_nodes between 0 and 1000000": 1,
        "exit_code between 0 and 255": 1,
        "node_list is a Slurm hostlist (host names, '[', ']', ',')": 0,
    }
    assert all(r["success"] == (r["n_unexpected"] == 0) for r in checked.results)


def test_results_come_in_gx_order_grouped_by_column_on_both_engines() -> None:
    # GX reports a suite grouped by column in order of first appearance, pairs as one group:
    # the suite lists submit/start/end ranges, the two pairs, then alloc_nodes and exit_code
    expected = [
        "job_id_raw not null",
        "state in the allowed set",
        "submit_ts between 2000-01-01 and now + 1 day (not in the future)",
        "start_ts between 2000-01-01 and now + 1 day (not in the future)",
        "end_ts between 2000-01-01 and now + 1 day (not in the future)",
        "end_ts >= start_ts",
        "start_ts >= submit_ts",
        "alloc_nodes between 0 and 1000000",
        "exit_code between 0 and 255",
        "node_list is a Slurm hostlist (host names, '[', ']', ',')",
    ]
    for engine in ENGINES:
        checked = quality.validate(_jobs(), table="raw_slurm_jobs", now=NOW, engine=engine)
        assert [r["expectation"] for r in checked.results] == expected


@pytest.mark.parametrize("engine", ENGINES)
def test_every_failing_row_is_reported_past_gx_partial_count(engine: str) -> None:
    # GX's SQL path cuts its index list at partial_unexpected_count (20 by default)
    n = 500
    rows = pl.DataFrame(
        {
            "line_no": range(n),
            "host": ["gpu0001"] * n,
            "ts": [T0] * n,
            "gpu_index": [70 if i % 10 == 0 else i % 8 for i in range(n)],
            "gpu_temp_c": [40.0] * n,
            "power_w": [300.0] * n,
        },
        schema_overrides={"gpu_index": pl.Int32, "ts": pl.Datetime("us", "UTC")},
    )
    checked = quality.validate(rows, table="raw_dcgm_samples", now=NOW, engine=engine)
    assert checked.bad["line_no"].to_list() == list(range(0, n, 10))
    by_label = {r["expectation"]: r["n_unexpected"] for r in checked.results}
    assert by_label["gpu_index between 0 and 63"] == 50


@pytest.mark.parametrize("engine", ENGINES)
def test_nan_is_missing_and_strict_bounds_hold_on_both_engines(engine: str) -> None:
    nan = float("nan")
    rows = pl.DataFrame(
        {
            "line_no": [1, 2, 3, 4, 5],
            "event": ["step", "step", "step", "bogus", "step"],
            "framework": ["megatron"] * 5,
            "host": ["node-1", None, "node-1", "node-1", "node-1"],  # null: no --host given
            "ts_inferred": [False] * 5,
            "step": [1, 2, 3, 4, 5],
            "ts": [T0, None, T0, T0, T0],
            "step_time_s": [nan, 0.0, 1.5, None, 2.0],
            "duration_s": [nan, 1.0, -0.5, 0.0, None],
        },
        schema_overrides={"ts": pl.Datetime("us", "UTC")},
    )
    checked = quality.validate(rows, table="raw_training_events", now=NOW, engine=engine)
    assert _reasons(checked) == {
        2: "ExpectColumnValuesToBeBetween: step_time_s > 0",
        3: "ExpectColumnValuesToBeBetween: duration_s >= 0",
        4: "ExpectColumnValuesToBeInSet: event in the allowed set",
    }


@pytest.mark.parametrize("engine", ENGINES)
def test_categorical_outside_the_set_fails_its_check(engine: str) -> None:
    rows = pl.DataFrame(
        {
            "line_no": [1, 2, 3],
            "node": ["n1", "n2", "n3"],
            "opened_ts": [T0, T0, T0],
            "closed_ts": [T0, T0 - timedelta(hours=1), None],
            "action": ["reseat", "replace", "swap"],
            "component_class": ["gpu", "psu", "gpu"],
        },
        schema_overrides={
            "opened_ts": pl.Datetime("us", "UTC"),
            "closed_ts": pl.Datetime("us", "UTC"),
            "action": pl.Categorical,
        },
    )
    checked = quality.validate(
        rows, table="raw_repairs", now=NOW, component_classes=["gpu"], engine=engine
    )
    assert _reasons(checked) == {
        2: "ExpectColumnValuesToBeInSet: component_class in the allowed set; "
        "ExpectColumnPairValuesAToBeGreaterThanB: closed_ts >= opened_ts",
        3: "ExpectColumnValuesToBeInSet: action in the allowed set",
    }


def test_regex_checks_run_on_pandas_under_the_sql_engine() -> None:
    assert "ExpectColumnValuesToMatchRegex" not in quality_sql.SQL_KINDS
    rows = pl.DataFrame(
        {
            "line_no": [1, 2, 3],
            "host": ["gpu0001", "gpu0002", None],
            "xid": [79, 2000, 13],
            "ts": [T0, T0, T0],
            "pci_bus_id": ["0000:3b:00", "0000:3B:00", "0000:86:00"],
        },
        schema_overrides={"ts": pl.Datetime("us", "UTC")},
    )
    checked = quality.validate(rows, table="raw_xid_events", now=NOW, engine="sql")
    assert _reasons(checked) == {
        2: "ExpectColumnValuesToBeBetween: xid between 1 and 1023; "
        "ExpectColumnValuesToMatchRegex: pci_bus_id looks like 0000:3b:00",
        3: "ExpectColumnValuesToNotBeNull: host not null",
    }


def test_unknown_engine_is_refused() -> None:
    with pytest.raises(ValueError, match="engine must be"):
        quality.validate(_jobs(), table="raw_slurm_jobs", now=NOW, engine="spark")


def test_kept_results_outlive_the_connection_they_came_from() -> None:
    # GX reads a result after the connection went back to the pool, whose rollback drops
    # DuckDB's pending result; the dialect reads it first
    plain = sa.create_engine("duckdb:///:memory:")
    kept = sa.create_engine("duckdb+relia_kept:///:memory:")
    rows = {}
    for name, engine in (("plain", plain), ("kept", kept)):
        with engine.connect() as connection:
            result = connection.execute(sa.text("select range as x from range(3)"))
        rows[name] = result.fetchall()
        engine.dispose()
    assert rows == {"plain": [], "kept": [(0,), (1,), (2,)]}
