"""Concurrency: readers during an ingest get a consistent answer or a clear "busy, retry" error.

DuckDB allows one writer process per database file: while an ingest holds the warehouse, another
process cannot open it, and ``warehouse.connect`` turns DuckDB's lock error into
``WarehouseBusyError`` with a message saying to retry. Inside one process, connections share the
database and each query sees committed files only (one transaction per file). The flow's load
task retries on ``WarehouseBusyError`` and on nothing else.
"""

from __future__ import annotations

import multiprocessing
import subprocess
import sys
import threading
import time
from datetime import UTC, datetime
from typing import TYPE_CHECKING

import duckdb
import pytest
from prefect.states import Completed, Failed

from pipelines import ingest, warehouse
from pipelines.flows.ingest_telemetry import _warehouse_busy, load_files
from synth import SynthConfig, synthesize

if TYPE_CHECKING:
    from pathlib import Path

CONSISTENT = """
select
    (select count(*) from stg_slurm_jobs) as n_jobs,
    (select count(*) from raw_slurm_jobs)
        = (select coalesce(sum(n_loaded), 0) from raw_ingest_files
           where target_table = 'raw_slurm_jobs') as jobs_match_files,
    (select count(*) from raw_xid_events)
        = (select coalesce(sum(n_loaded), 0) from raw_ingest_files
           where target_table = 'raw_xid_events') as xids_match_files,
    (select count(*) from raw_quarantine)
        = (select coalesce(sum(n_quarantined), 0) from raw_ingest_files) as quarantine_matches
"""
"""One statement, one snapshot: raw rows and quarantine agree with the files recorded."""


@pytest.fixture
def landing(tmp_path: Path) -> Path:
    root = tmp_path / "landing"
    synthesize(root, SynthConfig(nodes=8, days=14, seed=9, start=datetime(2026, 5, 4, tzinfo=UTC)))
    return root


def _seed_warehouse(db: Path, landing: Path) -> int:
    """Load everything but the sacct files; the jobs then arrive in the concurrent ingest."""
    files = [f for f in ingest.landing_files(landing) if f.source != "slurm"]
    ingest.ingest(db, files)
    with warehouse.connect(db, read_only=True) as con:
        (n_jobs,) = con.execute("select count(*) from stg_slurm_jobs").fetchone()
    return n_jobs


def _ingest(db: Path, landing: Path) -> None:
    ingest.ingest(db, ingest.landing_files(landing), batch_rows=200)


def _writer(db: Path, landing: Path) -> multiprocessing.process.BaseProcess:
    """The ingest in another process (forked from a server that imported the pipeline once)."""
    context = multiprocessing.get_context("forkserver")
    context.set_forkserver_preload(
        ["great_expectations", "pipelines.ingest", "pipelines.ingest.quality"]
    )
    process = context.Process(target=_ingest, args=(db, landing))
    process.start()
    return process


OPEN_READ_ONLY = """
import sys, duckdb
try:
    duckdb.connect(sys.argv[1], read_only=True).close()
except duckdb.IOException as error:
    print("locked" if "lock" in str(error).lower() else str(error))
else:
    print("opened")
"""


def _other_process_opens(db: Path) -> str:
    run = subprocess.run(
        [sys.executable, "-c", OPEN_READ_ONLY, str(db)], capture_output=True, text=True, check=True
    )
    return run.stdout.strip()


def test_the_write_lock_holds_for_as_long_as_the_warehouse_is_open(tmp_path: Path) -> None:
    """Opening checks the file's checksums; that read must not drop DuckDB's lock (closing any
    descriptor of a file releases the process's POSIX locks on it), nor may a second connection
    of the same process closing before the first."""
    db = tmp_path / "relia.duckdb"
    with warehouse.connect(db) as con:
        con.execute("create table t as select 1 as a")
    assert _other_process_opens(db) == "opened"
    with warehouse.connect(db) as con:
        assert _other_process_opens(db) == "locked"
        with warehouse.connect(db) as inner:
            inner.execute("select 1").fetchall()
        assert _other_process_opens(db) == "locked"
        con.execute("insert into t values (2)")
        assert _other_process_opens(db) == "locked"
    assert _other_process_opens(db) == "opened"


@pytest.mark.slow
def test_reader_process_gets_a_consistent_answer_or_a_clear_busy_error(
    landing: Path, tmp_path: Path
) -> None:
    db = tmp_path / "relia.duckdb"
    before = _seed_warehouse(db, landing)
    writer = _writer(db, landing)
    answers, busy = [], []
    while writer.is_alive():
        try:
            with warehouse.connect(db, read_only=True, lock_timeout_s=0) as con:
                answers.append(con.execute(CONSISTENT).fetchone())
        except warehouse.WarehouseBusyError as error:
            busy.append(str(error))
        # a read holds the reader's lock for as long as DuckDB takes to open the file (a tenth of
        # a second or more on a busy machine): the pause leaves the writer room to take it
        time.sleep(0.3)
    writer.join()
    assert writer.exitcode == 0
    with warehouse.connect(db, read_only=True) as con:
        after = con.execute(CONSISTENT).fetchone()
    assert after[0] > before
    assert all(after[1:])
    assert busy, "the reader never met the writer: the ingest was too short to test anything"
    for message in busy:
        assert message.startswith("warehouse busy:")
        assert "retry" in message
        assert str(db) in message
    for n_jobs, *consistent in answers:
        assert all(consistent)
        assert n_jobs in (before, after[0])


@pytest.mark.slow
def test_reader_in_the_writer_process_sees_whole_files_only(landing: Path, tmp_path: Path) -> None:
    db = tmp_path / "relia.duckdb"
    before = _seed_warehouse(db, landing)
    files = ingest.landing_files(landing)
    done = threading.Event()
    failures: list[BaseException] = []

    def write() -> None:
        try:
            ingest.ingest(db, files, batch_rows=100)
        except BaseException as error:  # handed to the test thread
            failures.append(error)
        finally:
            done.set()

    thread = threading.Thread(target=write)
    answers = []
    reader = duckdb.connect(str(db))  # the same database instance as the writer's connection
    try:
        thread.start()
        while not done.is_set():
            answers.append(reader.execute(CONSISTENT).fetchone())
        thread.join()
        final = reader.execute(CONSISTENT).fetchone()
    finally:
        reader.close()
    assert not failures, failures
    assert final[0] > before
    assert answers
    for _, *consistent in answers:
        assert all(consistent)
    assert len({n for n, *_ in answers} | {final[0]}) >= 2  # it read while files were arriving


def test_connect_waits_for_the_lock_then_gives_a_clear_busy_error(tmp_path: Path) -> None:
    db = tmp_path / "relia.duckdb"
    with warehouse.connect(db) as con:
        warehouse.apply_schema(con)
    hold = (
        "import sys, time, duckdb; con = duckdb.connect(sys.argv[1]); print('held', flush=True); "
        "time.sleep(float(sys.argv[2]))"
    )
    holder = subprocess.Popen(
        [sys.executable, "-c", hold, str(db), "1.5"], stdout=subprocess.PIPE, text=True
    )
    try:
        assert holder.stdout is not None
        assert holder.stdout.readline().strip() == "held"
        started = time.monotonic()
        with pytest.raises(warehouse.WarehouseBusyError, match=r"^warehouse busy: .*retry"):
            load_files.fn(db, [], 0.3)  # the flow's load task, without orchestration
        assert time.monotonic() - started >= 0.3  # it waited before giving up
        with warehouse.connect(db, read_only=True, lock_timeout_s=30) as con:  # waits it out
            assert con.execute("select count(*) from raw_ingest_files").fetchone() == (0,)
    finally:
        holder.kill()
        holder.wait()


def test_the_load_task_retries_on_a_busy_warehouse_only() -> None:
    assert load_files.retries == 3
    assert load_files.retry_condition_fn is _warehouse_busy
    busy = warehouse.WarehouseBusyError("warehouse busy: x is locked; retry")
    assert _warehouse_busy(load_files, None, Failed(data=busy))
    for error in (
        ValueError("fault_log files need a column mapping"),
        duckdb.IOException("IO Error: No space left on device"),
        duckdb.ConstraintException("Constraint Error: duplicate key"),
        RuntimeError("bug"),
    ):
        assert not _warehouse_busy(load_files, None, Failed(data=error))
    assert not _warehouse_busy(load_files, None, Completed(data=[]))
