"""The open-time integrity check and the mapping of environment failures, on real DuckDB files."""

from __future__ import annotations

import errno
import subprocess
from typing import TYPE_CHECKING

import duckdb
import pytest

from pipelines.runtime.errors import (
    WarehouseCorruptError,
    WarehouseFullError,
    WarehouseReadOnlyError,
)
from pipelines.warehouse import connect, transaction
from pipelines.warehouse.failures import environment_failure, verify

if TYPE_CHECKING:
    from collections.abc import Iterator
    from pathlib import Path

HEADERS = 3 * 4096
BLOCK = 256 * 1024


@pytest.fixture
def small(tmp_path: Path) -> Path:
    """A DuckDB file of a few blocks: one table of 200,000 rows, checkpointed."""
    db = tmp_path / "small.duckdb"
    con = duckdb.connect(str(db))
    con.execute("create table t as select range as i, md5(range::varchar) as s from range(200000)")
    con.close()
    return db


def _blocks_in_use(db: Path) -> list[int]:
    con = duckdb.connect(str(db), read_only=True)
    try:
        rows = con.execute(
            "select distinct block_id from pragma_storage_info('t') where block_id >= 0 order by 1"
        ).fetchall()
    finally:
        con.close()
    return [int(r[0]) for r in rows]


def _flip(db: Path, at: int, n: int = 16) -> None:
    data = bytearray(db.read_bytes())
    data[at : at + n] = bytes(b ^ (i + 1) for i, b in enumerate(data[at : at + n]))
    db.write_bytes(bytes(data))


def test_verify_passes_a_sound_file_and_names_the_damaged_block(small: Path) -> None:
    n_blocks = (small.stat().st_size - HEADERS) // BLOCK
    assert verify(small) == n_blocks > 2
    block = _blocks_in_use(small)[1]
    _flip(small, HEADERS + block * BLOCK + 1000)
    with pytest.raises(WarehouseCorruptError, match=rf"block {block} at location "):
        verify(small)
    # DuckDB itself reads the block only when the table is read: a count does not
    con = duckdb.connect(str(small), read_only=True)
    assert con.execute("select count(*) from t").fetchone() == (200000,)
    con.close()
    with pytest.raises(WarehouseCorruptError), connect(small, read_only=True):
        pass


def test_verify_above_the_size_limit_checks_the_headers_only(small: Path) -> None:
    block = _blocks_in_use(small)[1]
    _flip(small, HEADERS + block * BLOCK + 1000)
    assert verify(small, max_bytes=0) == 0
    _flip(small, 4096 + 100)  # a database header
    with pytest.raises(WarehouseCorruptError, match="header at location 4096"):
        verify(small, max_bytes=0)


def test_a_zeroed_block_is_taken_for_a_dropped_free_block(small: Path) -> None:
    """DuckDB trims free blocks (a hole reads as zeros): a block all zeros is not checked."""
    block = _blocks_in_use(small)[1]
    data = bytearray(small.read_bytes())
    start = HEADERS + block * BLOCK
    data[start : start + BLOCK] = bytes(BLOCK)
    small.write_bytes(bytes(data))
    assert verify(small) == (len(data) - HEADERS) // BLOCK


@pytest.mark.parametrize(
    ("error", "kind", "words"),
    [
        (duckdb.IOException('IO Error: Could not write file "W.wal": No space left on device'),
         WarehouseFullError, "No space left on device"),
        (duckdb.TransactionException(
            'TransactionContext Error: Failed to commit: Could not write file "W.wal": '
            "No space left on device"), WarehouseFullError, 'Could not write file "W.wal"'),
        (duckdb.IOException('IO Error: Cannot open file "W": Read-only file system'),
         WarehouseReadOnlyError, "Read-only file system"),
        (duckdb.IOException('IO Error: Cannot open file "W": Operation not permitted'),
         WarehouseReadOnlyError, "Operation not permitted"),
        (duckdb.Error("Corrupt database file: computed checksum 1 does not match stored "
                      "checksum 2 in block at location 12288"),
         WarehouseCorruptError, "computed checksum 1 does not match"),
    ],
)  # fmt: skip
def test_duckdb_errors_map_to_their_cause(error: Exception, kind: type, words: str) -> None:
    failure = environment_failure(error, "W")
    assert isinstance(failure, kind)
    assert words in str(failure)
    assert "\n" not in str(failure)


def test_os_errors_map_only_when_they_name_the_warehouse(tmp_path: Path) -> None:
    db = tmp_path / "w.duckdb"
    own = OSError(errno.ENOSPC, "No space left on device", str(db))
    assert isinstance(environment_failure(own, db), WarehouseFullError)
    landing = OSError(errno.EACCES, "Permission denied", str(tmp_path / "landing" / "a.log"))
    assert environment_failure(landing, db) is None
    assert environment_failure(duckdb.CatalogException("Table t does not exist"), db) is None


@pytest.fixture
def tiny_disk(tmp_path: Path) -> Iterator[Path]:
    point = tmp_path / "disk"
    point.mkdir()
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(point)],
        capture_output=True,
        check=False,
    )
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.decode().strip()}")
    try:
        yield point
    finally:
        subprocess.run(["umount", "-l", str(point)], check=False)


def test_a_commit_that_fills_the_disk_raises_its_cause_not_the_rollbacks(tiny_disk: Path) -> None:
    """DuckDB ends the transaction when its commit fails: the rollback after it would say
    "cannot rollback - no transaction is active" and hide the full disk."""
    db = tiny_disk / "w.duckdb"
    with (  # noqa: PT012 - the error comes from the commit, after the block's statements
        pytest.raises(WarehouseFullError, match="No space left on device"),
        connect(db) as con,
    ):
        con.execute("create table t (s varchar)")
        with transaction(con):
            con.execute("insert into t select repeat('x', 100) from range(20000)")
