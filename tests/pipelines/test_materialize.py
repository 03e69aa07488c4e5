"""Snapshots of the expensive views: the same rows as the views, taken again on any change.

Every ingest that changed rows ends by taking them (the fixture's warehouse has them); one with
nothing new, a fit's check of the views and a parameter set to its value keep them.
"""

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
        assert set(warehouse.materialized(con)) == set(warehouse.MATERIALIZED)  # the ingest's
        assert set(warehouse.dematerialize(con)) == set(warehouse.MATERIALIZED)
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


def _mark(con: duckdb.DuckDBPyConnection) -> None:
    """Put a comment on every snapshot: a snapshot taken again is a new table, without it."""
    for name in warehouse.MATERIALIZED:
        con.execute(f"comment on table {warehouse.identifier(name)} is 'seen'")


def _snapshot_ids(con: duckdb.DuckDBPyConnection) -> dict[str, str | None]:
    """Each snapshot's comment ('seen' when :func:`_mark` saw this one)."""
    rows = con.execute(
        "select table_name, comment from duckdb_tables() where table_name in "
        "(select unnest($names))",
        {"names": list(warehouse.MATERIALIZED)},
    ).fetchall()
    return dict(rows)


def test_an_ingest_with_new_rows_takes_the_snapshots_again_and_one_without_keeps_them(
    fleet_db: Path, tmp_path: Path
) -> None:
    with warehouse.connect(fleet_db) as con:
        _mark(con)
        assert set(_snapshot_ids(con).values()) == {"seen"}
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
        assert set(_snapshot_ids(con)) == set(warehouse.MATERIALIZED)
        assert set(_snapshot_ids(con).values()) == {None}  # every one taken again
        _mark(con)
        second = _snapshot_ids(con)
        assert con.execute("select count(*) from stg_slurm_jobs").fetchall()[0][0] == n_jobs + 1
    again = ingest.ingest(fleet_db, ingest.discover([tmp_path / "more"]))
    assert all(c.skipped for c in again)
    with warehouse.connect(fleet_db) as con:
        assert _snapshot_ids(con) == second  # nothing new: the same snapshots
        warehouse.create_views(con, only_if_changed=True)  # what `relia fit` runs first
        assert _snapshot_ids(con) == second
        # views made again by hand: the next ingest with nothing new takes the snapshots again
        warehouse.dematerialize(con)
        assert warehouse.materialized(con) == []
    ingest.ingest(fleet_db, ingest.discover([tmp_path / "more"]))
    with warehouse.connect(fleet_db) as con:
        assert set(warehouse.materialized(con)) == set(warehouse.MATERIALIZED)
        assert con.execute("select count(*) from stg_slurm_jobs").fetchall()[0][0] == n_jobs + 1


def test_a_changed_parameter_takes_the_snapshots_again_with_its_value(fleet_db: Path) -> None:
    sql = "select sum(startup_s) from fct_job_goodput where estimated"
    with warehouse.connect(fleet_db) as con:
        warehouse.materialize(con)
        # every estimated job is charged the assumed start-up (300 s by default) once
        n_estimated = con.execute(
            "select count(*) from fct_job_goodput where estimated and startup_s = 300"
        ).fetchall()[0][0]
        assert n_estimated > 0
        before = con.execute(sql).fetchall()[0][0]
        _mark(con)
        warehouse.set_param(con, "assumed_startup_s", 400)
        ids = _snapshot_ids(con)
        assert set(ids) == set(warehouse.MATERIALIZED)
        assert set(ids.values()) == {None}  # every one taken again, with the new value
        after = con.execute(sql).fetchall()[0][0]
        _mark(con)
        warehouse.set_param(con, "assumed_startup_s", 400)  # the value it has: nothing to do
        assert set(_snapshot_ids(con).values()) == {"seen"}
    assert after - before == pytest.approx(100 * n_estimated, rel=0.02)


def test_the_ingest_that_finishes_a_stopped_one_takes_the_snapshots_of_its_rows(
    fleet_db: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An ingest stopped after loading (killed before its views) left snapshots older than its
    rows; the next ingest, though it loads nothing new, takes them again."""
    with warehouse.connect(fleet_db) as con:
        n_jobs = con.execute("select count(*) from stg_slurm_jobs").fetchall()[0][0]
    landing = tmp_path / "more" / "slurm"
    landing.mkdir(parents=True)
    (landing / "extra.txt").write_text(
        "JobID|JobIDRaw|JobName|Partition|Account|User|AllocNodes|AllocTRES|NodeList|Submit|"
        "Start|End|Elapsed|State|ExitCode|Restarts\n"
        "99000002|99000002|extra|gpu|ml|ada|1|gres/gpu=8|node0001|2026-03-05T00:00:00|"
        "2026-03-05T00:10:00|2026-03-05T01:00:00|00:50:00|COMPLETED|0:0|0\n"
    )

    def killed(*_args: object, **_kwargs: object) -> None:
        raise KeyboardInterrupt  # the process stops before it makes the views

    monkeypatch.setattr(warehouse, "refresh", killed)
    with pytest.raises(KeyboardInterrupt):
        ingest.ingest(fleet_db, ingest.discover([tmp_path / "more"]))
    monkeypatch.undo()
    with warehouse.connect(fleet_db) as con:
        assert warehouse.unfinished_ingest(con) is not None
        assert con.execute("select count(*) from raw_slurm_jobs where job_id_raw = '99000002'")
        # the snapshot is the one from before the stopped ingest
        assert con.execute("select count(*) from stg_slurm_jobs").fetchall()[0][0] == n_jobs
    again = ingest.ingest(fleet_db, ingest.discover([tmp_path / "more"]))
    assert all(c.skipped for c in again)  # nothing new: the file was loaded whole before
    with warehouse.connect(fleet_db) as con:
        assert warehouse.unfinished_ingest(con) is None
        assert set(warehouse.materialized(con)) == set(warehouse.MATERIALIZED)
        assert con.execute("select count(*) from stg_slurm_jobs").fetchall()[0][0] == n_jobs + 1
