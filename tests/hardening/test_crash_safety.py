"""Crash safety: SIGKILL the ingest at 20 seeded random points; nothing is ever half-loaded.

The ingest runs in a child process (forked from a server that imported the pipeline and Great
Expectations once, so each run costs seconds, not an import), validating in small batches so
that loads interleave with parsing, and is killed with SIGKILL after a random delay drawn over the
length of an uninterrupted run. After each kill:

- the warehouse opens;
- every file in ``raw_ingest_files`` has exactly ``n_loaded`` rows in its raw table and
  ``n_quarantined`` rows in ``raw_quarantine``, and no raw or quarantine row belongs to a file
  missing from ``raw_ingest_files``;
- the views are all there or the warehouse says an ingest did not finish (``ingest_pending``):
  never views missing or stale without a word;
- a rerun of the ingest leaves every ``raw_*`` table identical to an uninterrupted run (load
  times aside), every view made and nothing pending.
"""

from __future__ import annotations

import multiprocessing
import os
import random
import signal
import time
from datetime import UTC, datetime
from pathlib import Path

import pytest

from pipelines import ingest, warehouse
from pipelines.runtime.errors import IngestInterruptedError
from synth import SynthConfig, synthesize

pytestmark = pytest.mark.slow

N_KILLS = 20
SEED = 20260
BATCH_ROWS = 60
"""Rows per validation batch in the killed runs: many small loads spread over the run."""
TIMESTAMPS = ("loaded_at", "validated_at", "updated_at", "read_at")


def _run_ingest(db_path: str, landing: str) -> None:
    ingest.ingest(Path(db_path), ingest.landing_files(Path(landing)), batch_rows=BATCH_ROWS)


@pytest.fixture(scope="module")
def landing(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("crash") / "landing"
    config = SynthConfig(nodes=4, days=10, seed=5, start=datetime(2026, 4, 6, tzinfo=UTC))
    synthesize(root, config)
    return root


@pytest.fixture(scope="module")
def spawn() -> multiprocessing.context.ForkServerContext:
    context = multiprocessing.get_context("forkserver")
    context.set_forkserver_preload(
        ["great_expectations", "pipelines.ingest", "pipelines.ingest.quality"]
    )
    return context


def _raw_tables(con: object) -> list[str]:
    rows = con.execute(  # type: ignore[attr-defined]
        "select table_name from duckdb_tables() where starts_with(table_name, 'raw_') "
        "order by table_name"
    ).fetchall()
    return [warehouse._identifier(r[0]) for r in rows]


def fingerprints(db_path: Path) -> dict[str, tuple[int, str]]:
    """Row count and an order-free hash of every ``raw_*`` table (load times left out)."""
    out = {}
    with warehouse.connect(db_path, read_only=True) as con:
        for table in _raw_tables(con):
            columns = [r[0] for r in con.execute(f"describe {table}").fetchall()]
            kept = ", ".join(warehouse._identifier(c) for c in columns if c not in TIMESTAMPS)
            n, digest = con.execute(
                f"select count(*)::bigint, coalesce(sum(hash(t))::varchar, '0') "
                f"from (select {kept} from {table}) as t"
            ).fetchone()
            out[table] = (n, digest)
    return out


def views_state(db_path: Path) -> str:
    """``done`` (every view, nothing pending), ``pending`` (an ingest said it did not finish)."""
    names = {p.stem for p in warehouse.view_files()}
    with warehouse.connect(db_path, read_only=True) as con:
        try:
            warehouse.check_finished(con, db_path)
        except IngestInterruptedError:
            return "pending"
        made = {r[0] for r in con.execute("select view_name from duckdb_views()").fetchall()}
        made |= set(warehouse.materialized(con))  # a view the ingest keeps as its snapshot
    assert made >= names or not made & names, "some views made, no ingest pending"
    return "done" if made >= names else "none"


def assert_nothing_half_loaded(db_path: Path) -> int:
    """Check the warehouse after a kill; returns the number of files it records."""
    with warehouse.connect(db_path) as con:
        tables = set(_raw_tables(con))
        if "raw_ingest_files" not in tables:
            return 0  # killed before the schema was in place: nothing can be loaded
        files = con.execute(
            "select file_sha256, path, target_table, n_read, n_loaded, n_quarantined, n_held "
            "from raw_ingest_files"
        ).fetchall()
        for sha, path, table, n_read, n_loaded, n_quarantined, n_held in files:
            assert n_read == n_loaded + n_quarantined + n_held
            (in_table,) = con.execute(
                f"select count(*) from {warehouse._identifier(table)} where source_file = $p",
                {"p": path},
            ).fetchone()
            (quarantined,) = con.execute(
                "select count(*) from raw_quarantine where file_sha256 = $sha", {"sha": sha}
            ).fetchone()
            assert (in_table, quarantined) == (n_loaded, n_quarantined), path
        (orphans,) = con.execute(
            "select count(*) from raw_quarantine "
            "where file_sha256 not in (select file_sha256 from raw_ingest_files)"
        ).fetchone()
        assert orphans == 0
        # a stream's state, its reads and its lineage row commit together
        (unrecorded,) = con.execute(
            "select count(*) from raw_streams "
            "where stream_id not in (select file_sha256 from raw_ingest_files)"
        ).fetchone()
        assert unrecorded == 0
        lineage = {
            "raw_ingest_files",
            "raw_quarantine",
            "raw_quality_results",
            "raw_streams",
            "raw_stream_reads",
        }
        for table in tables - lineage:
            (orphans,) = con.execute(
                f"select count(*) from {table} "
                "where source_file not in (select path from raw_ingest_files)"
            ).fetchone()
            assert orphans == 0, f"{table} holds rows of a file that was never recorded"
    return len(files)


def test_sigkill_at_random_points_leaves_whole_files_and_a_rerun_matches(
    landing: Path, spawn: multiprocessing.context.ForkServerContext, tmp_path: Path
) -> None:
    reference = tmp_path / "reference.duckdb"
    process = spawn.Process(target=_run_ingest, args=(str(reference), str(landing)))
    started = time.perf_counter()
    process.start()
    process.join()
    run_s = time.perf_counter() - started
    assert process.exitcode == 0
    expected = fingerprints(reference)
    n_files = len(ingest.landing_files(landing))
    assert expected["raw_ingest_files"][0] == n_files

    rng = random.Random(SEED)
    recorded = []
    states: list[str] = []
    for i in range(N_KILLS):
        db = tmp_path / f"killed-{i}.duckdb"
        process = spawn.Process(target=_run_ingest, args=(str(db), str(landing)))
        process.start()
        time.sleep(rng.uniform(0.0, run_s))
        if process.is_alive():
            os.kill(process.pid, signal.SIGKILL)
        process.join()
        recorded.append(assert_nothing_half_loaded(db))
        if db.exists():
            states.append(views_state(db))
            if states[-1] == "none":  # no view, no pending ingest: nothing may be recorded
                assert recorded[-1] == 0, f"kill {i}: files recorded, no views, no word of it"
        ingest.ingest(db, ingest.landing_files(landing))  # the rerun after the crash
        assert fingerprints(db) == expected, f"kill {i}: rerun differs from an uninterrupted run"
        assert views_state(db) == "done"
    # the kills fell before, during and (perhaps) after the loads
    assert min(recorded) < n_files
    assert any(0 < n < n_files for n in recorded)
    assert "pending" in states  # some kills fell after the first load, before the views


def _ingest_quietly(db_path: str, landing: str) -> None:
    ingest.ingest(Path(db_path), ingest.landing_files(Path(landing)), batch_rows=BATCH_ROWS)


def _cut_inside_line(data: bytes, fraction: float) -> int:
    cut = max(1, int(len(data) * fraction))
    while cut < len(data) and data[cut - 1 : cut] == b"\n":
        cut += 1
    return cut


def _rows(db_path: Path, root: Path) -> dict[str, list[str]]:
    """Raw Xid rows, staging and incidents, paths relative to the landing (order-free)."""
    queries = {
        "raw_xid_events": "select * from raw_xid_events",
        "stg_xid_events": "select * from stg_xid_events",
        "int_incidents": "select * from int_incidents",
    }
    with warehouse.connect(db_path, read_only=True) as con:
        return {
            name: sorted(
                repr(row).replace(str(root), "<landing>") for row in con.execute(sql).fetchall()
            )
            for name, sql in queries.items()
        }


def test_sigkill_while_tailing_grown_rotated_gzipped_logs(
    spawn: multiprocessing.context.ForkServerContext, tmp_path: Path
) -> None:
    """Each kernel log grows in three appends cut mid-line, is renamed by logrotate and then
    gzipped; an ingest runs after every step and is SIGKILLed at a random point of it (or not).
    A last ingest must complete the warehouse to exactly one ingest of the finished files."""
    import gzip
    import shutil

    finished = tmp_path / "finished"
    synthesize(
        finished, SynthConfig(nodes=4, days=10, seed=9, start=datetime(2026, 4, 6, tzinfo=UTC))
    )
    logs = {}
    for log in sorted((finished / "kernel").glob("*.log")):
        data = log.read_bytes()
        k = data.index(b"\n", len(data) // 2) + 1
        logs[log.name] = (data[:k], data[k:])
        (finished / "kernel" / f"{log.name}.2.gz").write_bytes(gzip.compress(data[:k]))
        log.write_bytes(data[k:])
    once = tmp_path / "once.duckdb"
    ingest.ingest(once, ingest.landing_files(finished))
    expected = _rows(once, finished)
    assert len(expected["raw_xid_events"]) > 5

    def steps(kernel: Path) -> list[object]:
        def grow(fraction: float) -> None:
            for name, (g1, _) in logs.items():
                (kernel / name).write_bytes(g1[: _cut_inside_line(g1, fraction)])

        def rotate() -> None:
            for name, (g1, g2) in logs.items():
                (kernel / name).rename(kernel / f"{name}.1")
                (kernel / f"{name}.1").write_bytes(g1)
                (kernel / name).write_bytes(g2[: _cut_inside_line(g2, 0.4)])

        def compress() -> None:
            for name, (g1, g2) in logs.items():
                (kernel / f"{name}.2.gz").write_bytes(gzip.compress(g1))
                (kernel / f"{name}.1").unlink()
                (kernel / name).write_bytes(g2)

        return [lambda: grow(0.3), lambda: grow(0.7), lambda: grow(0.98), rotate, compress]

    rng = random.Random(SEED + 1)
    killed = 0
    for sequence in range(3):
        landing = tmp_path / f"live-{sequence}"
        shutil.copytree(finished, landing, ignore=shutil.ignore_patterns("*.log", "*.gz"))
        db = tmp_path / f"live-{sequence}.duckdb"
        for step in steps(landing / "kernel"):
            step()  # type: ignore[operator]
            process = spawn.Process(target=_ingest_quietly, args=(str(db), str(landing)))
            process.start()
            time.sleep(rng.uniform(0.0, 4.0))
            if process.is_alive():
                os.kill(process.pid, signal.SIGKILL)
                killed += 1
            process.join()
        ingest.ingest(db, ingest.landing_files(landing))
        assert _rows(db, landing) == expected, f"sequence {sequence}"
    assert killed >= 3  # most steps' ingests were cut short


def test_sigkill_while_a_dump_grows_and_a_log_is_copytruncated(
    spawn: multiprocessing.context.ForkServerContext, tmp_path: Path
) -> None:
    """A sacct dump is written in five chunks cut inside lines (each extending the load before
    it) while a kernel log is rotated by ``copytruncate`` (copied, truncated, written again, the
    copy compressed); an ingest runs after every step and is SIGKILLed at a random point of it
    (or not). Nothing is ever half-loaded, and a last ingest completes the warehouse to exactly
    one ingest of the finished files."""
    import gzip

    samples = Path(__file__).resolve().parents[2] / "data_samples"
    lines = (samples / "landing" / "kernel" / "gpu0003.log").read_bytes().splitlines(True)
    first, second = b"".join(lines[:70]), b"".join(lines[70:])
    dumps = sorted((samples / "landing" / "slurm").glob("sacct_*.txt"))
    header = dumps[0].read_bytes().splitlines(True)[0]
    dump = header + b"".join(
        line
        for path in dumps
        if path.read_bytes().startswith(b"JobID|")
        for line in path.read_bytes().splitlines(True)[1:]
    )
    finished = tmp_path / "finished"
    (finished / "kernel").mkdir(parents=True)
    (finished / "slurm").mkdir()
    (finished / "kernel" / "kern.log").write_bytes(second)
    (finished / "kernel" / "kern.log.1.gz").write_bytes(gzip.compress(first))
    (finished / "slurm" / "sacct_live.txt").write_bytes(dump)
    once = tmp_path / "once.duckdb"
    ingest.ingest(once, ingest.landing_files(finished))
    expected = _finished_rows(once, finished)

    def steps(landing: Path) -> list[object]:
        kernel, slurm = landing / "kernel", landing / "slurm"

        def write(fraction: float) -> None:
            (slurm / "sacct_live.txt").write_bytes(dump[: _cut_inside_line(dump, fraction)])

        def start() -> None:
            write(0.2)
            (kernel / "kern.log").write_bytes(first)

        def copy() -> None:
            write(0.4)
            (kernel / "kern.log.1").write_bytes(first)

        def truncate() -> None:
            write(0.6)
            (kernel / "kern.log").write_bytes(b"")

        def append() -> None:
            write(0.8)
            (kernel / "kern.log").write_bytes(second)

        def compress() -> None:
            (slurm / "sacct_live.txt").write_bytes(dump)
            (kernel / "kern.log.1.gz").write_bytes(gzip.compress(first))
            (kernel / "kern.log.1").unlink()

        return [start, copy, truncate, append, compress]

    rng = random.Random(SEED + 2)
    killed = 0
    for sequence in range(2):
        landing = tmp_path / f"live-{sequence}"
        (landing / "kernel").mkdir(parents=True)
        (landing / "slurm").mkdir()
        db = tmp_path / f"live-{sequence}.duckdb"
        for step in steps(landing):
            step()  # type: ignore[operator]
            process = spawn.Process(target=_ingest_quietly, args=(str(db), str(landing)))
            process.start()
            time.sleep(rng.uniform(0.0, 4.0))
            if process.is_alive():
                os.kill(process.pid, signal.SIGKILL)
                killed += 1
            process.join()
            assert_nothing_half_loaded(db)
        ingest.ingest(db, ingest.landing_files(landing))
        assert_nothing_half_loaded(db)
        assert _finished_rows(db, landing) == expected, f"sequence {sequence}"
    assert killed >= 2


def _finished_rows(db_path: Path, root: Path) -> dict[str, list[str]]:
    """Rows of the Xid, job and quarantine tables, order-free, paths relative to the landing."""
    queries = {
        "raw_xid_events": "select * from raw_xid_events",
        "raw_slurm_jobs": "select * from raw_slurm_jobs",
        "stg_slurm_jobs": "select * from stg_slurm_jobs",
        "raw_quarantine": "select source_file, line_no, raw, reason from raw_quarantine",
        "raw_ingest_files": "select path, n_read, n_loaded, n_quarantined, n_held "
        "from raw_ingest_files",
    }
    with warehouse.connect(db_path, read_only=True) as con:
        return {
            name: sorted(
                repr(row).replace(str(root), "<landing>") for row in con.execute(sql).fetchall()
            )
            for name, sql in queries.items()
        }
