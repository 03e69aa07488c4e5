"""Exactly once whatever a landing file does while it is ingested.

Three ways a file changes under the ingest, each with an ingest after every step, must load
exactly what one ingest of the finished files loads (raw rows, staging, quarantine and lineage):

- logrotate's ``copytruncate``: ``kern.log`` copied to ``kern.log.1``, then truncated in place,
  written again, and the copy compressed;
- a sacct dump (a whole-file source) read ten times while it is written, cut inside lines;
- the same kernel log and the same training log at two paths in one run.
"""

from __future__ import annotations

import gzip
import shutil
from pathlib import Path

import pytest

from pipelines import ingest, warehouse
from pipelines.runtime.path_patterns import parse_patterns

pytestmark = pytest.mark.slow

SAMPLES = Path(__file__).resolve().parents[2] / "data_samples"
KERNEL_LOG = SAMPLES / "landing" / "kernel" / "gpu0003.log"
"""137 lines, 18 of them Xid lines: 17 load, one dated 2099 is quarantined."""
TRAINING_LOG = SAMPLES / "training" / "slurm-4242.out"
IGNORED = {"loaded_at", "validated_at", "updated_at", "read_at", "file_size", "file_mtime_ns"}
STREAM_KEYS = {"file_sha256", "stream_id", "prefix_sha", "read_key"}
"""A stream's id names the path it was first met at, and its prefix hash chains its reads."""
TABLES = (
    "raw_xid_events",
    "stg_xid_events",
    "raw_training_events",
    "raw_slurm_jobs",
    "stg_slurm_jobs",
    "raw_quarantine",
    "raw_quality_results",
    "raw_ingest_files",
    "raw_streams",
)


def _ingest(db: Path, landing: Path, **options: object) -> list[warehouse.LoadCounts]:
    return ingest.ingest(db, ingest.landing_files(landing, **options))  # type: ignore[arg-type]


def _tables(db: Path, root: Path, *, drop: set[str] = STREAM_KEYS) -> dict[str, list[str]]:
    """Every row of the compared tables, order-free, paths relative to the landing."""
    out = {}
    with warehouse.connect(db, read_only=True) as con:
        for table in TABLES:
            columns = [r[0] for r in con.execute(f"describe {table}").fetchall()]
            kept = ", ".join(c for c in columns if c not in IGNORED | drop)
            rows = con.execute(f"select {kept} from {table}").fetchall()
            out[table] = sorted(repr(row).replace(str(root), "<landing>") for row in rows)
    return out


def _count(db: Path, sql: str) -> int:
    with warehouse.connect(db, read_only=True) as con:
        (n,) = con.execute(sql).fetchone() or (0,)
    return int(n)


def test_copytruncate_with_an_ingest_at_every_step_loads_each_line_once(tmp_path: Path) -> None:
    lines = KERNEL_LOG.read_bytes().splitlines(keepends=True)
    first, second = b"".join(lines[:70]), b"".join(lines[70:])
    n_xid = sum(b"NVRM: Xid" in line for line in lines)
    assert n_xid == 18
    live, db = tmp_path / "live", tmp_path / "live.duckdb"
    kernel = live / "kernel"
    kernel.mkdir(parents=True)
    log, copy = kernel / "kern.log", kernel / "kern.log.1"
    log.write_bytes(first)
    statuses = [[c.outcome for c in _ingest(db, live)]]
    shutil.copyfile(log, copy)  # copytruncate: copy first ...
    statuses.append([c.outcome for c in _ingest(db, live)])
    log.write_bytes(b"")  # ... then truncate in place
    statuses.append([c.outcome for c in _ingest(db, live)])
    log.write_bytes(second)  # the log is written again
    statuses.append([c.outcome for c in _ingest(db, live)])
    (kernel / "kern.log.1.gz").write_bytes(gzip.compress(copy.read_bytes()))
    copy.unlink()  # the copy compressed
    statuses.append([c.outcome for c in _ingest(db, live)])
    assert statuses[1] == ["no new lines", f"same stream as {log}"]
    assert statuses[2] == ["empty: nothing to read yet", "no new lines"]  # the copy holds it now
    assert _count(db, "select count(*) from raw_xid_events") == n_xid - 1
    assert _count(db, "select count(*) from raw_quarantine where raw like '2099-%'") == 1
    before = _tables(db, live)
    _ingest(db, live)
    assert _tables(db, live) == before  # re-ingesting changes nothing

    once, once_db = tmp_path / "once", tmp_path / "once.duckdb"
    (once / "kernel").mkdir(parents=True)
    (once / "kernel" / "kern.log").write_bytes(second)
    (once / "kernel" / "kern.log.1.gz").write_bytes(gzip.compress(first))
    _ingest(once_db, once)
    assert _tables(once_db, once) == before
    assert _count(db, "select count(*) from raw_streams") == 2
    # one quality result per stream and expectation, however many reads the stream had
    assert (
        _count(
            db,
            "select count(*) from (select file_sha256, expectation from raw_quality_results "
            "group by all having count(*) > 1)",
        )
        == 0
    )


def _sacct_dump() -> bytes:
    """The pipe-separated sample dumps as one: one header and every job line after it."""
    header = b""
    body = []
    for path in sorted((SAMPLES / "landing" / "slurm").glob("sacct_*.txt")):
        head, *rest = path.read_bytes().splitlines(keepends=True)
        if head.startswith(b"JobID|"):
            header = head
            body.extend(line for line in rest if line.strip())
    return header + b"".join(body)


def test_a_sacct_dump_read_while_it_is_written_loads_like_the_finished_dump(
    tmp_path: Path,
) -> None:
    dump = _sacct_dump()
    n_lines = dump.count(b"\n") - 1  # job lines, header aside
    assert n_lines > 30
    live, db = tmp_path / "live", tmp_path / "live.duckdb"
    (live / "slurm").mkdir(parents=True)
    path = live / "slurm" / "sacct_dump.txt"
    held = []
    for i in range(1, 11):
        cut = len(dump) * i // 10
        while 0 < cut < len(dump) and dump[cut - 1 : cut] == b"\n":
            cut += 1  # every chunk but the last ends inside a line
        path.write_bytes(dump[:cut])
        (counts,) = _ingest(db, live)
        held.append(counts.n_held)
        assert counts.n_read == counts.n_loaded + counts.n_quarantined + counts.n_held
        # one lineage row for the path, whatever was read of it so far
        assert _count(db, "select count(*) from raw_ingest_files") == 1
    assert held == [1] * 9 + [0]  # the cut-off line is held, never quarantined
    (counts,) = _ingest(db, live)
    assert counts.skipped

    once, once_db = tmp_path / "once", tmp_path / "once.duckdb"
    (once / "slurm").mkdir(parents=True)
    shutil.copyfile(path, once / "slurm" / "sacct_dump.txt")
    _ingest(once_db, once)
    assert _tables(db, live, drop=set()) == _tables(once_db, once, drop=set())
    loaded = _count(db, "select count(*) from raw_slurm_jobs")
    quarantined = _count(db, "select count(*) from raw_quarantine")
    assert loaded + quarantined == n_lines
    assert _count(db, "select count(distinct line_no) from raw_slurm_jobs") == loaded


def test_a_held_last_line_of_a_quiet_dump_is_read_once(tmp_path: Path) -> None:
    dump = _sacct_dump().rstrip(b"\n")  # the writer stopped before the last newline
    n_lines = dump.count(b"\n")  # job lines: the header's newline counts the unfinished one
    landing, db = tmp_path / "landing", tmp_path / "w.duckdb"
    (landing / "slurm").mkdir(parents=True)
    (landing / "slurm" / "sacct_live.txt").write_bytes(dump)
    files = ingest.landing_files(landing)
    (held,) = ingest.ingest(db, files)
    assert (held.n_held, held.n_loaded + held.n_quarantined) == (1, n_lines - 1)
    (again,) = ingest.ingest(db, files)  # not quiet yet: still held, nothing added
    assert (again.skipped, _count(db, "select count(*) from raw_ingest_files")) == (True, 1)
    (released,) = ingest.ingest(db, files, hold_quiet_s=0)  # quiet now: the line is read
    assert (released.n_held, released.n_loaded + released.n_quarantined) == (0, n_lines)
    once = tmp_path / "once.duckdb"
    ingest.ingest(once, files, hold_quiet_s=0)
    assert _tables(db, landing, drop=set()) == _tables(once, landing, drop=set())


def test_a_dump_with_no_complete_line_yet_is_held_and_records_nothing(tmp_path: Path) -> None:
    header = _sacct_dump().split(b"\n", 1)[0]  # the writer has not finished the header line
    landing, db = tmp_path / "landing", tmp_path / "w.duckdb"
    (landing / "slurm").mkdir(parents=True)
    path = landing / "slurm" / "sacct_live.txt"
    path.write_bytes(header)
    (held,) = _ingest(db, landing)
    assert (held.outcome, held.n_held, held.n_quarantined) == ("held (no complete line yet)", 1, 0)
    assert _count(db, "select count(*) from raw_quarantine") == 0  # no false "empty file" row
    assert _count(db, "select count(*) from raw_ingest_files") == 0
    path.write_bytes(_sacct_dump())  # finished: loads like the dump ingested once
    _ingest(db, landing)
    once = tmp_path / "once.duckdb"
    _ingest(once, landing)
    assert _tables(db, landing) == _tables(once, landing)


def test_a_whole_file_rewritten_with_other_content_keeps_its_history(tmp_path: Path) -> None:
    dump = _sacct_dump()
    header, *jobs = dump.splitlines(keepends=True)
    landing, db = tmp_path / "landing", tmp_path / "w.duckdb"
    (landing / "slurm").mkdir(parents=True)
    path = landing / "slurm" / "sacct_today.txt"
    path.write_bytes(header + b"".join(jobs[:10]))
    _ingest(db, landing)
    path.write_bytes(header + b"".join(jobs[10:20]))  # the next day's dump under the same name
    _ingest(db, landing)
    assert _count(db, "select count(*) from raw_ingest_files") == 2
    assert (
        _count(db, "select count(*) from raw_slurm_jobs")
        + _count(db, "select count(*) from raw_quarantine")
        == 20
    )


def test_the_same_logs_at_two_paths_in_one_run_load_once(tmp_path: Path) -> None:
    live, db = tmp_path / "live", tmp_path / "live.duckdb"
    once, once_db = tmp_path / "once", tmp_path / "once.duckdb"
    for landing, copies in ((live, 2), (once, 1)):
        for source, sample in (("kernel", KERNEL_LOG), ("training", TRAINING_LOG)):
            shutil.copyfile(sample, _file(landing / source / sample.name))
            if copies == 2:
                # a second copy, met after the first (rows carry the path met first)
                shutil.copyfile(sample, _file(landing / source / "z-mirror" / sample.name))
    counts = _ingest(db, live)
    mirrored = {c.path: c.outcome for c in counts if "/z-mirror/" in c.path}
    assert sorted(mirrored.values()) == [
        f"same stream as {live / 'kernel' / KERNEL_LOG.name}",
        f"same stream as {live / 'training' / TRAINING_LOG.name}",
    ]
    _ingest(once_db, once)
    assert _tables(db, live) == _tables(once_db, once)
    assert _count(db, "select count(*) from raw_xid_events") == 17
    assert _count(db, "select count(*) from stg_xid_events") == 17
    assert _count(db, "select count(*) from raw_training_events") == _count(
        once_db, "select count(*) from raw_training_events"
    )
    before = _tables(db, live)
    _ingest(db, live)
    assert _tables(db, live) == before


def test_the_same_log_under_two_hosts_of_a_path_pattern_is_two_hosts_data(
    tmp_path: Path,
) -> None:
    landing, db = tmp_path / "landing", tmp_path / "w.duckdb"
    for host in ("node-a", "node-b"):
        shutil.copyfile(TRAINING_LOG, _file(landing / "training" / host / TRAINING_LOG.name))
    patterns = parse_patterns("training={host}/*")
    counts = _ingest(db, landing, path_patterns=patterns)
    assert [c.outcome for c in counts] == ["loaded", "loaded"]
    per_host = _count(db, "select count(*) from raw_training_events") // 2
    assert per_host > 0
    assert _count(db, "select count(distinct source_file) from raw_training_events") == 2


def _file(path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    return path
