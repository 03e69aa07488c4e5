"""Snapshots of the expensive views: the same rows as the views, taken again when what they read
changes.

Every ingest that changed rows ends by taking again those whose views read a table it wrote (the
fixture's warehouse has them all); one with nothing new, a fit's check of the views and a
parameter set to its value keep them. After each change every snapshot holds its view's rows.
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


def _assert_current(con: duckdb.DuckDBPyConnection) -> None:
    """Every snapshot holds its view's rows now: the view's own SQL, run over the tables and the
    snapshots under it, gives the same rows. In view order, so each snapshot a view reads has
    been checked before it: by induction, each equals its view with no snapshot under it."""
    files = {path.stem: path for path in warehouse.view_files()}
    taken = warehouse.materialized(con)
    assert taken == [n for n in files if n in set(warehouse.MATERIALIZED)]
    for name in taken:
        body = files[name].read_text().strip().rstrip(";")
        frame = warehouse.query(con, f"select * from ({body})")
        assert_frame_equal(_rows(con, name), frame.sort(frame.columns, nulls_last=True))


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
        ids = _snapshot_ids(con)
        assert set(ids) == set(warehouse.MATERIALIZED)
        # taken again: every one whose view reads Slurm jobs; kept: the Xid lines, the
        # incidents over them and a training log's runs (none reads a Slurm table, by their SQL)
        over_jobs = set(warehouse.stale_snapshots(con, {("raw_slurm_jobs", None)}))
        assert {n for n, mark in ids.items() if mark is None} == over_jobs
        assert {"stg_slurm_jobs", "int_job_attempts", "fct_job_goodput"} <= over_jobs
        assert {n for n, mark in ids.items() if mark == "seen"} == {
            "stg_xid_events",
            "int_incidents",
            "int_training_log_runs",
        }
        _assert_current(con)
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
        # taken again with the new value: every one whose view reads cfg_params (the ledger
        # does); kept: those that read none (staging of jobs and Xid lines, the job attempts
        # and training-log views under the ledger)
        over_params = set(warehouse.stale_snapshots(con, {("cfg_params", None)}))
        assert {n for n, mark in ids.items() if mark is None} == over_params
        assert "fct_job_goodput" in over_params
        assert {n for n, mark in ids.items() if mark == "seen"} == {
            "stg_slurm_jobs",
            "stg_xid_events",
            "int_job_attempts",
            "int_training_log_runs",
            "int_training_log_ties",
            "int_training_log_attempts",
            "int_training_events",
            "int_training_attempts",
        }
        _assert_current(con)
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


def _kernel_log(folder: Path) -> Path:
    """A kernel log of a fleet node with one Xid line, in ``folder/kernel``."""
    landing = folder / "kernel"
    landing.mkdir(parents=True)
    (landing / "node0003.log").write_text(
        "2026-03-20T10:00:00+00:00 node0003 kernel: NVRM: Xid (PCI:0000:18:00): 79, "
        "pid=4242, name=python, GPU has fallen off the bus.\n"
        "2026-03-20T10:00:05+00:00 node0003 kernel: mlx5_core 0000:18:00.0: link state up\n"
    )
    return folder


def test_an_ingest_of_kernel_logs_takes_again_only_the_snapshots_over_xid_lines(
    fleet_db: Path, tmp_path: Path
) -> None:
    with warehouse.connect(fleet_db) as con:
        _mark(con)
        n_xid = con.execute("select count(*) from stg_xid_events").fetchall()[0][0]
    counts = ingest.ingest(fleet_db, ingest.discover([_kernel_log(tmp_path / "more")]))
    assert [(c.table, c.n_loaded) for c in counts] == [("raw_xid_events", 1)]
    with warehouse.connect(fleet_db) as con:
        ids = _snapshot_ids(con)
        over_xid = set(warehouse.stale_snapshots(con, {("raw_xid_events", None)}))
        # by their SQL: the Xid staging view and everything over it (incidents, failures,
        # the fleet's nodes, lives, interruptions, the ledger); the jobs, training logs and
        # their pace and slow episodes not
        assert over_xid == set(warehouse.MATERIALIZED) - {
            "stg_slurm_jobs",
            "int_job_attempts",
            "int_training_log_runs",
            "int_training_log_ties",
            "int_training_log_attempts",
            "int_training_events",
            "int_training_attempts",
            "int_step_pace",
            "int_slow_spans",
            "int_slow_episodes",
        }
        for name in warehouse.MATERIALIZED:
            # taken again: a new table, without the mark; untouched: the very table it was
            assert ids[name] == (None if name in over_xid else "seen"), name
        assert con.execute("select count(*) from stg_xid_events").fetchall()[0][0] == n_xid + 1
        _assert_current(con)
        kept = {name: _rows(con, name) for name in warehouse.MATERIALIZED}
        above = {name: _rows(con, name) for name in READ_ABOVE}
        # the same queries with no snapshot at all: the views over the raw tables
        warehouse.dematerialize(con)
        for name, frame in {**kept, **above}.items():
            assert_frame_equal(_rows(con, name), frame)


def _contents(con: duckdb.DuckDBPyConnection) -> dict[tuple[str, str | None], int]:
    """A hash of every base table's rows but the snapshots; raw_ingest_files by target table."""
    skip = set(warehouse.MATERIALIZED) | {"ingest_pending", "raw_ingest_files"}
    out: dict[tuple[str, str | None], int] = {}
    for table in sorted(warehouse.base_tables(con) - skip):
        name = warehouse.identifier(table)
        ((digest,),) = con.execute(f"select coalesce(sum(hash(t)), 0) from {name} as t").fetchall()
        out[table, None] = int(digest)
    for target, digest in con.execute(
        "select target_table, sum(hash(f)) from raw_ingest_files as f group by 1"
    ).fetchall():
        out["raw_ingest_files", target] = int(digest)
    return out


def test_what_an_ingest_reports_it_wrote_covers_every_table_it_changed(
    fleet_db: Path, tmp_path: Path
) -> None:
    """The snapshots kept are those over nothing :func:`warehouse.written_by` reports: every
    table (and Slurm lineage partition) whose rows an ingest changed must be reported."""
    slurm = tmp_path / "more" / "slurm"
    slurm.mkdir(parents=True)
    (slurm / "extra.txt").write_text(
        "JobID|JobIDRaw|JobName|Partition|Account|User|AllocNodes|AllocTRES|NodeList|Submit|"
        "Start|End|Elapsed|State|ExitCode|Restarts\n"
        "99000003|99000003|extra|gpu|ml|ada|1|gres/gpu=8|node0001|2026-03-05T00:00:00|"
        "2026-03-05T00:10:00|2026-03-05T01:00:00|00:50:00|COMPLETED|0:0|0\n"
        "not a sacct line\n"
    )
    _kernel_log(tmp_path / "more")
    for folder in (tmp_path / "more" / "kernel", slurm, tmp_path / "more"):
        with warehouse.connect(fleet_db) as con:
            before = _contents(con)
        counts = ingest.ingest(fleet_db, ingest.discover([folder]))
        with warehouse.connect(fleet_db) as con:
            now = _contents(con)
        changed = {key for key in before.keys() | now.keys() if before.get(key) != now.get(key)}
        written = warehouse.written_by(counts)
        assert changed <= written, folder
        if folder == tmp_path / "more":  # both loaded before: nothing written, nothing changed
            assert all(c.skipped for c in counts)
            assert changed == written == set()
        else:
            assert changed
