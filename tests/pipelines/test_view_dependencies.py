"""What each view reads (``pipelines.warehouse.dependencies``): the map the snapshots are kept by.

The map is parsed from ``sql/`` by DuckDB's parser; these tests hold it to hand-read SQL and to
DuckDB's planner (the tables a snapshot's query scans), so a view that reads a new table is
never missed, and check the partition rule and what a load reports it wrote.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

import duckdb
import pytest

from pipelines import warehouse
from pipelines.warehouse.dependencies import macro_reads

if TYPE_CHECKING:
    from collections.abc import Iterator


@pytest.fixture(scope="module")
def con() -> Iterator[duckdb.DuckDBPyConnection]:
    """An empty warehouse in memory whose snapshots are taken (tables with no rows)."""
    connection = duckdb.connect()
    warehouse.init(connection)
    warehouse.materialize(connection)
    yield connection
    connection.close()


def test_the_map_matches_the_sql_read_by_hand(con: duckdb.DuckDBPyConnection) -> None:
    reads = warehouse.view_reads(con, ["stg_xid_events", "int_incidents", "stg_slurm_jobs"])
    # stg_xid_events: from raw_xid_events, left join seed_xid
    assert reads["stg_xid_events"] == {("raw_xid_events", None), ("seed_xid", None)}
    # int_incidents: stg_xid_events, stg_params (cfg_params), stg_inventory (raw_inventory),
    # seed_xid
    assert reads["int_incidents"] == {
        ("raw_xid_events", None),
        ("seed_xid", None),
        ("cfg_params", None),
        ("raw_inventory", None),
    }
    # stg_slurm_jobs: raw_slurm_jobs, and only the Slurm files' rows of raw_ingest_files
    assert reads["stg_slurm_jobs"] == {
        ("raw_slurm_jobs", None),
        ("raw_ingest_files", "raw_slurm_jobs"),
    }
    every = warehouse.view_reads(con)
    assert set(every) == {path.stem for path in warehouse.view_files()}
    assert every["stg_xid_events"] == reads["stg_xid_events"]
    views = set(every)
    assert not {table for found in every.values() for table, _ in found} & views  # leaves only


def _scanned(plan: Any) -> Iterator[str]:
    """Yield the table names an ``explain (format json)`` plan scans."""
    if isinstance(plan, list):
        for item in plan:
            yield from _scanned(item)
    elif isinstance(plan, dict):
        table = plan.get("extra_info", {}).get("Table")
        if isinstance(table, str):
            yield table.rsplit(".", 1)[-1]
        for child in plan.get("children", []):
            yield from _scanned(child)


def test_each_snapshot_reads_what_duckdbs_planner_scans(con: duckdb.DuckDBPyConnection) -> None:
    """The planner binds a snapshot's SQL over the snapshots under it (tables here): every table
    it scans (a snapshot under it stands for what that one reads) is in the map. It may scan
    fewer: it drops a join with a table it knows is empty, as all are here."""
    reads = warehouse.view_reads(con, warehouse.MATERIALIZED)
    files = {path.stem: path for path in warehouse.view_files()}
    assert set(warehouse.materialized(con)) == set(warehouse.MATERIALIZED)
    for name in warehouse.MATERIALIZED:
        body = files[name].read_text().strip().rstrip(";")
        (row,) = con.execute(f"explain (format json) {body}").fetchall()
        scanned: set[str] = set()
        for table in _scanned(json.loads(row[1])):
            if table in reads:  # a snapshot under this one
                scanned |= {t for t, _ in reads[table]}
            else:
                scanned.add(table)
        assert scanned, name
        assert scanned <= {table for table, _ in reads[name]}, name


def test_a_partition_is_read_only_by_a_select_that_keeps_it(
    con: duckdb.DuckDBPyConnection,
) -> None:
    from pipelines.warehouse.dependencies import PARTITIONED

    assert PARTITIONED == {"raw_ingest_files": "target_table"}
    cases = {
        "select * from raw_ingest_files where target_table = 'raw_fleet'": {
            ("raw_ingest_files", "raw_fleet")
        },
        "select * from raw_ingest_files where n_loaded > 0 and 'raw_fleet' = target_table": {
            ("raw_ingest_files", "raw_fleet")
        },
        # not one partition: the whole table
        "select * from raw_ingest_files where target_table = 'raw_fleet' or n_loaded > 0": {
            ("raw_ingest_files", None)
        },
        "select * from raw_fleet join raw_ingest_files as f on f.target_table = 'raw_fleet'": {
            ("raw_fleet", None),
            ("raw_ingest_files", None),
        },
        "with f as (select * from raw_ingest_files where target_table = 'raw_fleet') "
        "select * from raw_ingest_files, f": {
            ("raw_ingest_files", "raw_fleet"),
            ("raw_ingest_files", None),
        },
    }
    for sql, expected in cases.items():
        assert warehouse.sql_reads(con, sql) == expected, sql
    with pytest.raises(ValueError, match="query_table"):
        warehouse.sql_reads(con, "select * from query_table('raw_fleet')")
    assert warehouse.sql_reads(con, "select * from range(3)") == set()


def test_a_change_meets_the_reads_of_its_table_or_partition() -> None:
    reads = {("raw_ingest_files", "raw_slurm_jobs"), ("seed_xid", None)}
    assert not warehouse.reads_any(reads, set())
    assert not warehouse.reads_any(reads, {("raw_ingest_files", "raw_xid_events")})
    assert not warehouse.reads_any(reads, {("raw_xid_events", None)})
    assert warehouse.reads_any(reads, {("raw_ingest_files", "raw_slurm_jobs")})
    assert warehouse.reads_any(reads, {("raw_ingest_files", None)})
    assert warehouse.reads_any(reads, {("seed_xid", None)})
    assert warehouse.reads_any({("seed_xid", None)}, {("seed_xid", "a value")})


def test_no_macro_hides_a_table(con: duckdb.DuckDBPyConnection) -> None:
    names = {
        row[0]
        for row in con.execute(
            "select function_name from duckdb_functions() where not internal "
            "and function_type = 'macro'"
        ).fetchall()
    }
    assert {"counter_delta", "counter_reset"} <= names  # sql/schema/015_macros.sql, read
    assert macro_reads(con) == {}
    con.execute("create or replace macro hides_a_table(x) as (select max(value) from cfg_params)")
    try:
        assert macro_reads(con) == {"hides_a_table": {"cfg_params"}}
    finally:
        con.execute("drop macro hides_a_table")


def test_what_a_load_wrote() -> None:
    def counts(table: str, *, skipped: bool) -> warehouse.LoadCounts:
        return warehouse.LoadCounts("f", "kernel", table, 1, 1, 0, 0, skipped=skipped)

    assert warehouse.written_by([counts("raw_xid_events", skipped=True)]) == set()
    assert warehouse.written_by([counts("raw_xid_events", skipped=False)]) == {
        ("raw_xid_events", None),
        ("raw_ingest_files", "raw_xid_events"),
        ("raw_quarantine", None),
        ("raw_quality_results", None),
        ("raw_streams", None),
        ("raw_stream_reads", None),
    }
