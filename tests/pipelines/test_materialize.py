"""Snapshots of the expensive views: the same rows as the views, and views again on any change."""

from __future__ import annotations

import shutil
from typing import TYPE_CHECKING

import pytest
from polars.testing import assert_frame_equal

from pipelines import ingest, warehouse

if TYPE_CHECKING:
    from pathlib import Path

    import duckdb
    import polars as pl

# marts above the snapshots: what the report and the back-test read
READ_ABOVE = ("rpt_job_interruptions", "rpt_fleet_goodput", "rpt_unit_lives", "rpt_node_incidents")


@pytest.fixture
def fleet_db(fleet: tuple[Path, Path, dict], tmp_path: Path) -> Path:
    db = tmp_path / "relia.duckdb"
    shutil.copy(fleet[0], db)
    return db


def _rows(con: duckdb.DuckDBPyConnection, name: str) -> pl.DataFrame:
    frame = warehouse.query(con, f"select * from {warehouse.identifier(name)}")
    return frame.sort(frame.columns, nulls_last=True)


def _kinds(con: duckdb.DuckDBPyConnection) -> dict[str, str]:
    rows = con.execute(
        "select table_name, table_type from information_schema.tables "
        "where table_schema = current_schema()"
    ).fetchall()
    return {name: kind for name, kind in rows}


def test_snapshots_hold_the_views_rows_and_the_marts_above_read_them(fleet_db: Path) -> None:
    names = (*warehouse.MATERIALIZED, *READ_ABOVE)
    with warehouse.connect(fleet_db) as con:
        before = {name: _rows(con, name) for name in names}
        assert all(_kinds(con)[n] == "VIEW" for n in warehouse.MATERIALIZED)
        seconds = warehouse.materialize(con)
        assert list(seconds) == warehouse.materialized(con)
        assert set(seconds) == set(warehouse.MATERIALIZED)
        kinds = _kinds(con)
        assert all(kinds[n] == "BASE TABLE" for n in warehouse.MATERIALIZED)
        assert all(kinds[n] == "VIEW" for n in READ_ABOVE)
        assert not [n for n in kinds if n.endswith("__snapshot")]
        for name in names:
            assert_frame_equal(_rows(con, name), before[name])
        assert before["rpt_job_interruptions"].height > 0  # the check compared real rows
        # a second call has nothing to do
        assert warehouse.materialize(con) == {}


def test_an_ingest_makes_the_snapshots_views_again_with_the_new_rows(
    fleet_db: Path, tmp_path: Path
) -> None:
    with warehouse.connect(fleet_db) as con:
        warehouse.materialize(con)
        n_jobs = con.execute("select count(*) from stg_slurm_jobs").fetchall()[0][0]
    landing = tmp_path / "more" / "slurm"
    landing.mkdir(parents=True)
    (landing / "extra.txt").write_text(
        "JobID|JobIDRaw|JobName|Partition|Account|User|AllocNodes|AllocTRES|NodeList|Submit|"
        "Start|End|Elapsed|State|ExitCode|Restarts\n"
        "99000001|99000001|extra|gpu|ml|ada|1|gres/gpu=8|node0001|2026-03-05T00:00:00|"
        "2026-03-05T00:10:00|2026-03-05T01:00:00|00:50:00|COMPLETED|0:0|0\n"
    )
    counts = ingest.ingest(fleet_db, ingest.discover([tmp_path / "more"]))
    assert sum(c.n_loaded for c in counts) == 1
    with warehouse.connect(fleet_db) as con:
        assert warehouse.materialized(con) == []
        assert all(_kinds(con)[n] == "VIEW" for n in warehouse.MATERIALIZED)
        assert con.execute("select count(*) from stg_slurm_jobs").fetchall()[0][0] == n_jobs + 1


def test_a_changed_parameter_makes_the_snapshots_views_again(fleet_db: Path) -> None:
    sql = "select sum(startup_s) from fct_job_goodput where estimated"
    with warehouse.connect(fleet_db) as con:
        warehouse.materialize(con)
        # every estimated job is charged the assumed start-up (300 s by default) once
        n_estimated = con.execute(
            "select count(*) from fct_job_goodput where estimated and startup_s = 300"
        ).fetchall()[0][0]
        assert n_estimated > 0
        before = con.execute(sql).fetchall()[0][0]
        warehouse.set_param(con, "assumed_startup_s", 400)
        assert warehouse.materialized(con) == []
        after = con.execute(sql).fetchall()[0][0]
    assert after - before == pytest.approx(100 * n_estimated, rel=0.02)
