"""Kernel logs as they really arrive: grown between ingests, cut mid-line, rotated, compressed.

The acceptance test of issue #12 §1: every kernel log of a synthetic fleet arrives in appends
with a cut mid-line, a logrotate rename and a gzip of the old generation, ingested after each
step; the final raw, staging and incident tables must equal one ingest of the finished files.
"""

from __future__ import annotations

import bz2
import gzip
import lzma
import shutil
from datetime import UTC, datetime
from pathlib import Path

import pytest
import zstandard

from pipelines import ingest, warehouse
from pipelines.ingest import streams
from synth import SynthConfig, synthesize

LIVE = SynthConfig(
    nodes=8, gpus_per_node=8, days=20, seed=11, start=datetime(2026, 5, 4, tzinfo=UTC)
)

COMPARED = {
    "raw_xid_events": "select * from raw_xid_events",
    "stg_xid_events": "select * from stg_xid_events order by all",
    "int_incidents": "select * from int_incidents order by all",
    "raw_quarantine": "select source_file, line_no, target_table, raw, reason, stage "
    "from raw_quarantine order by all",
    "int_job_interruptions": "select * exclude (incident_id) from int_job_interruptions "
    "order by all",
}


def _tables(db: Path, landing: Path) -> dict[str, list[tuple]]:
    """The compared tables, with paths relative to the landing root (two landings compared)."""
    root = str(landing.resolve())

    def rel(value: object) -> object:
        return value.replace(root, "<landing>") if isinstance(value, str) else value

    with warehouse.connect(db, read_only=True) as con:
        return {
            name: sorted(
                (tuple(rel(v) for v in row) for row in con.execute(sql).fetchall()), key=repr
            )
            for name, sql in COMPARED.items()
        }


def _mid_line(data: bytes, fraction: float) -> int:
    """A cut near ``fraction`` of ``data`` that falls inside a line (not after a newline)."""
    cut = max(1, int(len(data) * fraction))
    while cut < len(data) and data[cut - 1 : cut] == b"\n":
        cut += 1
    return cut


def _line_boundary(data: bytes, fraction: float) -> int:
    return data.index(b"\n", int(len(data) * fraction)) + 1


@pytest.fixture(scope="module")
def finished(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """(landing of finished files, warehouse of one ingest of them)."""
    root = tmp_path_factory.mktemp("finished")
    landing = root / "landing"
    synthesize(landing, LIVE)
    for log in sorted((landing / "kernel").glob("*.log")):
        data = log.read_bytes()
        k = _line_boundary(data, 0.55)
        old = log.with_name(log.name + ".2.gz")
        old.write_bytes(gzip.compress(data[:k]))
        log.write_bytes(data[k:])
    db = root / "once.duckdb"
    ingest.ingest(db, ingest.discover([landing]))
    return landing, db


def test_live_rotated_compressed_logs_load_exactly_once(
    finished: tuple[Path, Path], tmp_path: Path
) -> None:
    done, once_db = finished
    landing = tmp_path / "landing"
    shutil.copytree(done, landing, ignore=shutil.ignore_patterns("*.log", "*.gz"))
    (landing / "kernel").mkdir(exist_ok=True)
    db = tmp_path / "live.duckdb"
    logs = {}
    for old in sorted((done / "kernel").glob("*.log.2.gz")):
        host_log = old.name.removesuffix(".2.gz")
        logs[host_log] = (
            gzip.decompress(old.read_bytes()),
            (done / "kernel" / host_log).read_bytes(),
        )

    def step(write: dict[str, bytes]) -> list[warehouse.LoadCounts]:
        for name, data in write.items():
            (landing / "kernel" / name).write_bytes(data)
        return ingest.ingest(db, ingest.discover([landing]))

    # 1-3: the first generation grows in three appends, each ending inside a line
    for fraction in (0.3, 0.6, 0.97):
        counts = step({n: g1[: _mid_line(g1, fraction)] for n, (g1, _) in logs.items()})
        kernel = [c for c in counts if c.source == "kernel"]
        assert all(c.n_held == 1 for c in kernel), [c.status for c in kernel]
        assert all(c.n_read == c.n_loaded + c.n_quarantined + c.n_held for c in counts)
    # 4: logrotate renames the log; the writer finishes its last line in the renamed file, and
    # the new log starts with a cut line
    for name, (g1, _) in logs.items():
        (landing / "kernel" / name).rename(landing / "kernel" / f"{name}.1")
        (landing / "kernel" / f"{name}.1").write_bytes(g1)
    step({n: g2[: _mid_line(g2, 0.5)] for n, (_, g2) in logs.items()})
    # 5: the old generation is compressed (and the uncompressed copy removed); the new log is
    # complete
    for name, (g1, _) in logs.items():
        (landing / "kernel" / f"{name}.2.gz").write_bytes(gzip.compress(g1))
        (landing / "kernel" / f"{name}.1").unlink()
    step({n: g2 for n, (_, g2) in logs.items()})

    live, once = _tables(db, landing), _tables(once_db, done)
    for name in COMPARED:
        assert live[name] == once[name], name
    assert len(once["raw_xid_events"]) > 20
    # a rerun changes nothing, and the stream lineage adds up
    again = ingest.ingest(db, ingest.discover([landing]))
    assert all(c.skipped or c.outcome == "no slurm lines" for c in again), [
        (Path(c.path).name, c.outcome) for c in again if not c.skipped
    ]
    assert sum(c.n_loaded + c.n_quarantined for c in again if not c.skipped) == 0
    assert _tables(db, landing) == live
    with warehouse.connect(db, read_only=True) as con:
        bad = con.execute(
            "select count(*) from raw_stream_reads "
            "where n_read <> n_loaded + n_quarantined + n_held"
        ).fetchone()
        per_stream = con.execute(
            "select count(*), count(distinct rows_path) from raw_streams where source = 'kernel'"
        ).fetchone()
    assert bad == (0,)
    assert per_stream == (2 * len(logs), 2 * len(logs))


def _xid_line(second: int, xid: int = 79, host: str = "gpu0001") -> bytes:
    return (
        f"2026-06-01T00:00:{second:02d}.000000+00:00 {host} kernel: NVRM: Xid "
        f"(PCI:0000:3b:00): {xid}, pid=1234, name=python, GPU has fallen off the bus.\n"
    ).encode()


def _noise(second: int, host: str = "gpu0001") -> bytes:
    return f"2026-06-01T00:00:{second:02d}.000000+00:00 {host} kernel: eth0: link up\n".encode()


def _xid_rows(db: Path) -> list[tuple[str, int, int]]:
    with warehouse.connect(db, read_only=True) as con:
        rows = con.execute(
            "select source_file, line_no, xid from raw_xid_events order by source_file, line_no"
        ).fetchall()
    return [(Path(f).name, n, x) for f, n, x in rows]


def test_grown_log_loads_only_new_lines_with_continued_numbers(tmp_path: Path) -> None:
    log = tmp_path / "kernel" / "kern.log"
    log.parent.mkdir()
    db = tmp_path / "w.duckdb"
    log.write_bytes(_noise(1) + _xid_line(2) + _noise(3))
    (first,) = ingest.ingest(db, ingest.discover([log.parent]))
    assert (first.n_read, first.n_loaded, first.n_ignored) == (1, 1, 2)
    log.write_bytes(log.read_bytes() + _xid_line(4, xid=48) + _noise(5) + _xid_line(6, xid=31))
    (second,) = ingest.ingest(db, ingest.discover([log.parent]))
    assert (second.n_read, second.n_loaded, second.n_ignored) == (2, 2, 1)
    assert second.status == "appended"
    assert _xid_rows(db) == [("kern.log", 2, 79), ("kern.log", 4, 48), ("kern.log", 6, 31)]


def test_a_last_line_without_newline_is_held_until_complete_or_quiet(tmp_path: Path) -> None:
    log = tmp_path / "kernel" / "kern.log"
    log.parent.mkdir()
    db = tmp_path / "w.duckdb"
    full = _xid_line(2)
    log.write_bytes(_noise(1) + full[:40])  # the Xid line is cut mid-write
    (c,) = ingest.ingest(db, ingest.discover([log.parent]))
    assert (c.n_read, c.n_loaded, c.n_quarantined, c.n_held) == (1, 0, 0, 1)
    assert _xid_rows(db) == []
    log.write_bytes(_noise(1) + full)
    (c,) = ingest.ingest(db, ingest.discover([log.parent]))
    assert (c.n_read, c.n_loaded, c.n_held) == (1, 1, 0)
    assert _xid_rows(db) == [("kern.log", 2, 79)]
    # a cut line in a file that stays quiet is read as a line once the quiet time has passed
    log.write_bytes(log.read_bytes() + _xid_line(3, xid=48).rstrip(b"\n"))
    (c,) = ingest.ingest(db, ingest.discover([log.parent]), hold_quiet_s=3600)
    assert c.n_held == 1
    (c,) = ingest.ingest(db, ingest.discover([log.parent]), hold_quiet_s=0)
    assert (c.n_loaded, c.n_held) == (1, 0)
    assert "finished" in c.status
    assert _xid_rows(db) == [("kern.log", 2, 79), ("kern.log", 3, 48)]


def test_rewritten_log_replaces_its_rows(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    log = tmp_path / "kernel" / "kern.log"
    log.parent.mkdir()
    db = tmp_path / "w.duckdb"
    head = _noise(1) * 20  # the first bytes (fingerprint) stay the same
    log.write_bytes(head + _xid_line(2) + _xid_line(3))
    ingest.ingest(db, ingest.discover([log.parent]))
    log.write_bytes(head + _xid_line(4, xid=31))  # truncated and rewritten in place
    with caplog.at_level("WARNING"):
        (c,) = ingest.ingest(db, ingest.discover([log.parent]))
    assert c.status == "replaced"
    assert _xid_rows(db) == [("kern.log", 21, 31)]
    assert "rewritten" in caplog.text
    with warehouse.connect(db, read_only=True) as con:
        (n,) = con.execute("select n_loaded from raw_ingest_files").fetchone()  # type: ignore[misc]
    assert n == 1


def test_rotation_with_a_new_log_under_the_old_name_keeps_both(tmp_path: Path) -> None:
    folder = tmp_path / "kernel"
    folder.mkdir()
    db = tmp_path / "w.duckdb"
    (folder / "kern.log").write_bytes(_noise(1) + _xid_line(2))
    ingest.ingest(db, ingest.discover([folder]))
    (folder / "kern.log").rename(folder / "kern.log.1")
    (folder / "kern.log").write_bytes(_noise(10) + _xid_line(11, xid=48))
    counts = {Path(c.path).name: c for c in ingest.ingest(db, ingest.discover([folder]))}
    assert counts["kern.log.1"].skipped is False  # the stream moved: its rows follow it
    assert counts["kern.log.1"].n_loaded == 0
    assert counts["kern.log"].n_loaded == 1
    assert _xid_rows(db) == [("kern.log", 2, 48), ("kern.log.1", 2, 79)]
    # copytruncate: the log is copied, then emptied and written again
    shutil.copy(folder / "kern.log", folder / "kern.log.2")
    (folder / "kern.log").write_bytes(_xid_line(20, xid=13))
    counts = {Path(c.path).name: c for c in ingest.ingest(db, ingest.discover([folder]))}
    assert _xid_rows(db) == [("kern.log", 1, 13), ("kern.log.1", 2, 79), ("kern.log.2", 2, 48)]


@pytest.mark.parametrize(
    ("suffix", "compress"),
    [
        (".gz", gzip.compress),
        (".bz2", bz2.compress),
        (".xz", lzma.compress),
        (".zst", lambda b: zstandard.ZstdCompressor().compress(b)),
    ],
)
def test_compressed_logs_are_read_by_their_magic_bytes(
    tmp_path: Path, suffix: str, compress: object
) -> None:
    folder = tmp_path / "kernel"
    folder.mkdir()
    data = _noise(1) + _xid_line(2) + _xid_line(3, xid=48)
    (folder / f"kern.log.3{suffix}").write_bytes(compress(data))  # type: ignore[operator]
    (c,) = ingest.ingest(tmp_path / "w.duckdb", ingest.discover([folder]))
    assert (c.n_read, c.n_loaded) == (2, 2)
    assert streams.decompress(compress(data))[0] == data  # type: ignore[operator]


def test_a_gzip_still_being_written_is_held_not_lost(tmp_path: Path) -> None:
    folder = tmp_path / "kernel"
    folder.mkdir()
    db = tmp_path / "w.duckdb"
    packed = gzip.compress(_noise(1) * 50 + _xid_line(2))
    (folder / "kern.log.2.gz").write_bytes(packed[: len(packed) // 2])
    (c,) = ingest.ingest(db, ingest.discover([folder]))
    assert (c.n_held, c.n_loaded) == (1, 0)
    assert "still being written" in c.status
    (folder / "kern.log.2.gz").write_bytes(packed)
    (c,) = ingest.ingest(db, ingest.discover([folder]))
    assert c.n_loaded == 1
    assert _xid_rows(db) == [("kern.log.2.gz", 51, 79)]


def test_incomplete_archives_are_told_from_broken_ones() -> None:
    packed = gzip.compress(b"line\n" * 1000)
    with pytest.raises(streams.IncompleteCompressedError):
        streams.decompress(packed[:-10])
    with pytest.raises(ValueError, match="not a valid gzip"):
        streams.decompress(b"\x1f\x8b" + b"garbage" * 10)
    assert streams.decompress(b"plain\n") == (b"plain\n", None)


def test_a_tick_with_nothing_new_reads_no_file(
    finished: tuple[Path, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A scheduled ingest over an unchanged landing costs a stat per file: no file is read."""
    done, _ = finished
    landing = tmp_path / "landing"
    shutil.copytree(done, landing)
    db = tmp_path / "w.duckdb"
    first = ingest.ingest(db, ingest.discover([landing]))
    assert sum(c.n_loaded for c in first) > 100

    def refuse(self: Path) -> bytes:
        raise AssertionError(f"{self} was read although it has not changed")

    monkeypatch.setattr(Path, "read_bytes", refuse)
    again = ingest.ingest(db, ingest.discover([landing]))
    assert len(again) == len(first)
    assert all(c.skipped for c in again)


def test_a_grown_log_is_read_from_its_offset_not_in_full(tmp_path: Path) -> None:
    """A tick costs what the new bytes cost: the head, one window and the new lines are read."""
    log = tmp_path / "kernel" / "kern.log"
    log.parent.mkdir()
    db = tmp_path / "w.duckdb"
    log.write_bytes(_noise(1) * 4000 + _xid_line(2))  # ~290 KB
    ingest.ingest(db, ingest.discover([log.parent]))
    [state] = [s for s in warehouse_states(db) if s.rows_path == str(log.resolve())]
    new = _xid_line(3, xid=48)
    log.write_bytes(log.read_bytes() + new)
    partial = streams.read_partial(str(log), state.consumed_bytes)
    assert partial is not None
    assert sum(
        len(part) for _, part in partial.parts
    ) == streams.HEAD_BYTES + streams.TAIL_BYTES + len(new)
    (c,) = ingest.ingest(db, ingest.discover([log.parent]))
    assert (c.status, c.n_loaded) == ("appended", 1)
    assert _xid_rows(db) == [("kern.log", 4001, 79), ("kern.log", 4002, 48)]


def warehouse_states(db: Path) -> list[streams.StreamState]:
    with warehouse.connect(db, read_only=True) as con:
        return warehouse.stream_states(con, "kernel")
