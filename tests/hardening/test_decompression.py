"""Decompression bombs, binary kernel logs and truncated archives (issue 26, part C).

A landing file that inflates past the archive limits (``RELIA_ARCHIVE_*``), a binary file in a
tailed folder and an archive that ends early and stays quiet are each one quarantine row naming
the problem; every other file loads as it would without them, and re-ingesting adds nothing. The
limits are set low (a few MiB) so the bombs here are small; the memory test runs a 1 GiB bomb
under an address-space cap.
"""

from __future__ import annotations

import bz2
import gzip
import json
import lzma
import math
import os
import re
import shutil
import subprocess
import sys
import textwrap
import time
import zlib
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
import zstandard
from typer.testing import CliRunner

from pipelines import warehouse
from pipelines.cli import app
from pipelines.ingest.archives import (
    ArchiveLimitError,
    IncompleteCompressedError,
    decompress,
)
from pipelines.runtime.archive_limits import ArchiveLimits
from pipelines.runtime.settings import Settings, SettingsError

if TYPE_CHECKING:
    from collections.abc import Callable

SAMPLES = Path(__file__).resolve().parents[2] / "data_samples" / "landing"
MIB = 2**20
LOW_LIMITS = {
    "RELIA_ARCHIVE_MAX_BYTES": str(8 * MIB),
    "RELIA_ARCHIVE_MAX_RATIO": "100",
    "RELIA_ARCHIVE_RATIO_AFTER_BYTES": str(1 * MIB),
}
"""A file may inflate to 8 MiB, and to 100 times its size once past 1 MiB."""

runner = CliRunner()


def _zstd(data: bytes) -> bytes:
    return zstandard.ZstdCompressor().compress(data)


CODECS: dict[str, Callable[[bytes], bytes]] = {
    ".gz": gzip.compress,
    ".bz2": bz2.compress,
    ".xz": lzma.compress,
    ".zst": _zstd,
}


def _zeros_archive(suffix: str, n_mib: int) -> bytes:
    """An archive of ``n_mib`` MiB of zero bytes, built a MiB at a time (never held plain)."""
    block = bytes(MIB)
    if suffix == ".zst":
        compressor = zstandard.ZstdCompressor().compressobj()
        return b"".join([*(compressor.compress(block) for _ in range(n_mib)), compressor.flush()])
    makers: dict[str, Callable[[], Any]] = {
        ".gz": lambda: zlib.compressobj(wbits=31),  # a gzip member
        ".bz2": bz2.BZ2Compressor,
        ".xz": lzma.LZMACompressor,
    }
    streaming = makers[suffix]()
    return b"".join([*(streaming.compress(block) for _ in range(n_mib)), streaming.flush()])


def _ingest(landing: Path, db: Path, *extra: str) -> tuple[int, list[dict[str, object]]]:
    result = runner.invoke(app, ["ingest", str(landing), "--db", str(db), "--json", *extra])
    assert result.exception is None or isinstance(result.exception, SystemExit), result.output
    return result.exit_code, json.loads(result.stdout) if result.exit_code == 0 else []


def _rows(db: Path, sql: str) -> list[tuple[object, ...]]:
    with warehouse.connect(db, read_only=True) as con:
        return con.execute(sql).fetchall()


def _quarantined(db: Path) -> list[tuple[str, int, str, str]]:
    rows = _rows(db, "select source_file, line_no, raw, reason from raw_quarantine order by all")
    return [(Path(str(f)).name, int(str(n)), str(raw), str(why)) for f, n, raw, why in rows]


def _base_landing(root: Path) -> Path:
    landing = root / "landing"
    for source, names in {
        "kernel": ["gpu0001.log", "gpu0002.log"],
        "slurm": ["sacct_20260601.txt", "sacct_20260602.txt"],
    }.items():
        (landing / source).mkdir(parents=True)
        for name in names:
            shutil.copy(SAMPLES / source / name, landing / source / name)
    return landing


def _by_file(counts: list[dict[str, object]]) -> dict[str, tuple[object, ...]]:
    return {
        Path(str(c["path"])).name: (c["n_read"], c["n_loaded"], c["n_quarantined"], c["n_ignored"])
        for c in counts
    }


@pytest.mark.slow
def test_bombs_are_one_quarantine_row_each_and_every_other_file_loads(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name, value in LOW_LIMITS.items():
        monkeypatch.setenv(name, value)
    plain = _base_landing(tmp_path / "plain")
    code, plain_counts = _ingest(plain, tmp_path / "plain.duckdb")
    assert code == 0

    landing = _base_landing(tmp_path / "bombs")
    bombs = []
    for suffix in CODECS:
        for source, stem in (("kernel", "gpu0009.log"), ("slurm", "sacct_20260609.txt")):
            # 16 MiB of zeros in a few KiB: past 100 times its size once past 1 MiB
            (landing / source / f"{stem}{suffix}").write_bytes(_zeros_archive(suffix, 16))
            bombs.append(f"{stem}{suffix}")
    # 9 MiB that hardly compress: under the ratio limit, past the 8 MiB size limit
    (landing / "slurm" / "sacct_20260610.txt.gz").write_bytes(
        gzip.compress(os.urandom(9 * MIB), compresslevel=1)
    )
    binary = bytes(range(256)) * 64  # NUL and control bytes: no kernel log
    (landing / "kernel" / "core.bin").write_bytes(binary)

    code, counts = _ingest(landing, tmp_path / "w.duckdb")
    assert code == 0
    got = _by_file(counts)
    for name, expected in _by_file(plain_counts).items():
        assert got[name] == expected
    quarantined = _quarantined(tmp_path / "w.duckdb")
    rows_of = {name: [q for q in quarantined if q[0] == name] for name in got}
    for name in bombs:
        ((_, line_no, raw, reason),) = rows_of[name]
        assert (line_no, raw) == (0, "")
        codec = {"gz": "gzip", "bz2": "bzip2", "xz": "xz", "zst": "zstd"}[name.rsplit(".")[-1]]
        assert reason.startswith(f"{codec} archive of ")
        assert "the ratio limit (100 plain bytes per compressed byte once past 1.0 MiB" in reason
        assert got[name] == (1, 0, 1, 0)
    ((_, _, raw, reason),) = rows_of["sacct_20260610.txt.gz"]
    assert "inflates past 8.0 MiB" in reason
    assert "size limit" in reason
    ((_, _, raw, reason),) = rows_of["core.bin"]
    assert reason.startswith("binary file")
    assert got["core.bin"] == (1, 0, 1, 0)
    plain_tables = {
        t: _rows(tmp_path / "plain.duckdb", f"select count(*) from {t}")
        for t in ("raw_xid_events", "raw_slurm_jobs")
    }
    for table, n in plain_tables.items():
        assert _rows(tmp_path / "w.duckdb", f"select count(*) from {table}") == n
    assert len(quarantined) == len(_quarantined(tmp_path / "plain.duckdb")) + len(bombs) + 2

    code, again = _ingest(landing, tmp_path / "w.duckdb")
    assert code == 0
    assert all(c["skipped"] for c in again)  # bombs too: not inflated again
    assert _quarantined(tmp_path / "w.duckdb") == quarantined


@pytest.mark.slow
def test_a_compressed_log_under_the_limits_loads_as_its_plain_version(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name, value in LOW_LIMITS.items():
        monkeypatch.setenv(name, value)
    plain = tmp_path / "plain"
    packed = tmp_path / "packed"
    kernel = ["gpu0001.log", "gpu0002.log", "gpu0003.log", "gpu0004.log"]
    slurm = ["sacct_20260601.txt", "sacct_20260602.txt", "sacct_20260603.txt", "sacct_20260604.txt"]
    for source, names in (("kernel", kernel), ("slurm", slurm)):
        (plain / source).mkdir(parents=True)
        (packed / source).mkdir(parents=True)
        for name, (suffix, compress) in zip(names, CODECS.items(), strict=True):
            data = (SAMPLES / source / name).read_bytes()
            (plain / source / name).write_bytes(data)
            (packed / source / f"{name}{suffix}").write_bytes(compress(data))
    assert _ingest(plain, tmp_path / "plain.duckdb")[0] == 0
    assert _ingest(packed, tmp_path / "packed.duckdb")[0] == 0

    def rows(db: Path, table: str) -> list[tuple[object, ...]]:
        got = _rows(db, f"select * exclude (source_file) from {table} order by all")
        assert got
        return got

    for table in ("raw_xid_events", "raw_slurm_jobs"):
        assert rows(tmp_path / "packed.duckdb", table) == rows(tmp_path / "plain.duckdb", table)


CUT = (("kernel", "gpu0001.log"), ("slurm", "sacct_20260602.txt"))


@pytest.mark.slow
def test_a_truncated_archive_is_held_while_fresh_and_quarantined_once_when_quiet(
    tmp_path: Path,
) -> None:
    landing = tmp_path / "landing"
    db = tmp_path / "w.duckdb"
    whole = {}
    for source, name in CUT:
        (landing / source).mkdir(parents=True)
        whole[source] = gzip.compress((SAMPLES / source / name).read_bytes())
        (landing / source / f"{name}.gz").write_bytes(whole[source][: len(whole[source]) // 2])
    cut = {"gpu0001.log.gz", "sacct_20260602.txt.gz"}

    code, counts = _ingest(landing, db)
    assert code == 0
    assert {Path(str(c["path"])).name: (c["n_held"], c["n_loaded"]) for c in counts} == {
        name: (1, 0) for name in cut
    }
    assert _quarantined(db) == []

    quiet_since = time.time() - 1000  # 1000 s ago: past the 300 s hold-quiet default
    for path in landing.glob("*/*.gz"):
        os.utime(path, (quiet_since, quiet_since))
    code, counts = _ingest(landing, db)
    # the quiet time is measured when the ingest reads the file: 1000 s plus the seconds the
    # ingest took to get there (more than one on a loaded machine)
    waited = math.ceil(time.time() - quiet_since)
    assert code == 0
    quarantined = _quarantined(db)
    assert sorted(name for name, *_ in quarantined) == sorted(cut)
    for _, line_no, raw, reason in quarantined:
        assert (line_no, raw) == (0, "")
        assert "gzip archive of" in reason
        quiet = re.search(r"ends early and has been quiet for (\d+) s \(more than 300 s", reason)
        assert quiet is not None, reason
        assert 1000 <= int(quiet.group(1)) <= waited
    assert all(c["n_quarantined"] == 1 and c["n_held"] == 0 for c in counts)

    assert _ingest(landing, db)[0] == 0
    assert _quarantined(db) == quarantined

    for source, name in CUT:
        (landing / source / f"{name}.gz").write_bytes(whole[source])  # written to the end
    code, counts = _ingest(landing, db)
    assert code == 0
    loaded = {Path(str(c["path"])).name: c["n_loaded"] for c in counts}
    # gpu0001.log holds 10 Xid lines; sacct_20260602.txt 4 job rows under its header
    assert loaded == {"gpu0001.log.gz": 10, "sacct_20260602.txt.gz": 4}
    assert _rows(db, "select count(*) from raw_xid_events") == [(10,)]
    assert _rows(db, "select count(*) from raw_slurm_jobs") == [(4,)]


MEMORY_PROBE = textwrap.dedent(
    """
    import os, resource, runpy, sys
    cap = int(sys.argv[1])
    if cap:
        resource.setrlimit(resource.RLIMIT_AS, (cap, cap))
    def peak():
        for line in open("/proc/self/status"):
            if line.startswith("VmPeak:"):
                print("VmPeak", int(line.split()[1]) * 1024, file=sys.stderr)
    import atexit
    atexit.register(peak)
    sys.argv = ["relia", "ingest", *sys.argv[2:]]
    runpy.run_module("pipelines.cli", run_name="__main__")
    """
)


def _probe(cap: int, landing: Path, db: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "RELIA_ARCHIVE_MAX_BYTES": str(16 * MIB), "COLUMNS": "200"}
    env["PYTHONPATH"] = str(Path(__file__).resolve().parents[2])
    return subprocess.run(
        [sys.executable, "-c", MEMORY_PROBE, str(cap), str(landing), "--db", str(db), "--json"],
        capture_output=True,
        text=True,
        env=env,
        check=False,
    )


def _vm_peak(done: subprocess.CompletedProcess[str]) -> int:
    lines = [line for line in done.stderr.splitlines() if line.startswith("VmPeak ")]
    return int(lines[-1].split()[1])


@pytest.mark.slow
@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="needs /proc (Linux)")
def test_a_bomb_is_read_within_a_bounded_address_space(tmp_path: Path) -> None:
    """A 1 GiB-zeros gzip with a 16 MiB limit, under an address-space cap 256 MiB above what
    ingesting a normal landing takes: the run ends normally with the bomb's quarantine row naming
    the limit (inflating it whole needs the 1 GiB: a MemoryError under this cap)."""
    small = _base_landing(tmp_path / "small")
    baseline = _probe(0, small, tmp_path / "small.duckdb")
    assert baseline.returncode == 0, baseline.stderr[-2000:]

    landing = _base_landing(tmp_path / "bomb")
    member = _zeros_archive(".gz", 64)
    with (landing / "slurm" / "sacct_20260609.txt.gz").open("wb") as bomb:
        for _ in range(16):  # 16 gzip members of 64 MiB of zeros: 1 GiB, as `cat` joins them
            bomb.write(member)
    cap = _vm_peak(baseline) + 256 * MIB
    done = _probe(cap, landing, tmp_path / "w.duckdb")
    assert done.returncode == 0, done.stderr[-2000:]
    assert "Traceback" not in done.stderr
    counts = {Path(str(c["path"])).name: c for c in json.loads(done.stdout)}
    assert counts["sacct_20260609.txt.gz"]["n_quarantined"] == 1
    ((reason,),) = _rows(
        tmp_path / "w.duckdb",
        "select reason from raw_quarantine where source_file like '%sacct_20260609.txt.gz'",
    )
    assert "inflates past 16.0 MiB" in str(reason)


@pytest.mark.parametrize("suffix", list(CODECS))
def test_an_archive_past_the_size_limit_is_refused_and_one_at_it_reads(suffix: str) -> None:
    """4 MiB of zeros with a 1 MiB size limit: refused, naming the size limit; 1 MiB passes."""
    bomb = _zeros_archive(suffix, 4)
    limits = ArchiveLimits(max_bytes=MIB, max_ratio=1e9, ratio_after_bytes=MIB)
    with pytest.raises(ArchiveLimitError, match=r"inflates past 1\.0 MiB, the size limit"):
        decompress(bomb, limits=limits)
    assert decompress(_zeros_archive(suffix, 1), limits=limits)[0] == bytes(MIB)


@pytest.mark.parametrize("suffix", list(CODECS))
def test_members_padding_and_cuts_of_every_codec(suffix: str) -> None:
    compress = CODECS[suffix]
    one, two = b"first line\n" * 5000, b"second line\n" * 3000
    joined = compress(one) + compress(two)  # as `cat a.gz b.gz` writes
    assert decompress(joined)[0] == one + two
    assert decompress(compress(one) + bytes(512))[0] == one  # zero padding after the last
    with pytest.raises(IncompleteCompressedError, match=r"archive of .* ends early"):
        decompress(joined[:-7])
    with pytest.raises(ValueError, match="bytes after the end of the"):
        decompress(compress(one) + b"trailing text")


def test_the_ratio_limit_applies_only_past_its_floor() -> None:
    """100 KiB of one repeated line compresses about 1,000x: under a 2x ratio it still reads
    while under the floor (1 MiB), and is refused once the floor is lower than its content."""
    text = b"2026-06-01T00:00:00+00:00 gpu0001 kernel: eth0: link up\n" * 1800
    packed = gzip.compress(text)
    assert len(text) > 100 * len(packed)
    floor_above = ArchiveLimits(max_bytes=8 * MIB, max_ratio=2, ratio_after_bytes=MIB)
    assert decompress(packed, limits=floor_above)[0] == text
    floor_below = ArchiveLimits(max_bytes=8 * MIB, max_ratio=2, ratio_after_bytes=4096)
    with pytest.raises(ArchiveLimitError, match="the ratio limit"):
        decompress(packed, limits=floor_below)


def test_archive_limits_come_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    assert Settings.from_env().archive_limits == ArchiveLimits(4 * 2**30, 200.0, 64 * MIB)
    for name, value in LOW_LIMITS.items():
        monkeypatch.setenv(name, value)
    assert Settings.from_env().archive_limits == ArchiveLimits(8 * MIB, 100.0, MIB)
    monkeypatch.setenv("RELIA_ARCHIVE_MAX_RATIO", "lots")
    with pytest.raises(SettingsError, match="RELIA_ARCHIVE_MAX_RATIO='lots'"):
        Settings.from_env()


@pytest.mark.slow
def test_the_cli_options_set_the_limits(tmp_path: Path) -> None:
    """``--archive-max-bytes`` wins over the default: 3 MiB of text in a 2 MiB limit is refused."""
    landing = _base_landing(tmp_path)
    text = (SAMPLES / "slurm" / "sacct_20260602.txt").read_bytes()
    big = text + text.split(b"\n", 1)[1] * (3 * MIB // len(text))
    (landing / "slurm" / "sacct_20260611.txt.xz").write_bytes(lzma.compress(big))
    code, counts = _ingest(landing, tmp_path / "w.duckdb", "--archive-max-bytes", str(2 * MIB))
    assert code == 0
    (row,) = [c for c in counts if str(c["path"]).endswith("sacct_20260611.txt.xz")]
    assert (row["n_loaded"], row["n_quarantined"]) == (0, 1)
    ((reason,),) = _rows(
        tmp_path / "w.duckdb",
        "select reason from raw_quarantine where source_file like '%sacct_20260611.txt.xz'",
    )
    assert str(reason).startswith("xz archive of ")
    assert "inflates past 2.0 MiB, the size limit" in str(reason)


def test_the_cli_limits_are_refused_with_tracked_runs(tmp_path: Path) -> None:
    """A tracked run reads its limits from the environment: the options would be ignored."""
    result = runner.invoke(app, ["ingest", str(tmp_path), "--tracked", "--archive-max-ratio", "50"])
    assert result.exit_code == 2
    assert "not passed to tracked runs: set RELIA_ARCHIVE_MAX_BYTES" in result.stderr
    assert "Traceback" not in result.output
