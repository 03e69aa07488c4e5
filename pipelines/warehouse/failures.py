"""The warehouse's environment failures as one line each: a full disk, a read-only or corrupt file.

DuckDB reports them as ``IOException``, ``TransactionException`` or a bare ``Error`` whose text
holds the operating system's words (``No space left on device``, ``Read-only file system``,
``Operation not permitted``) or its own (``Corrupt database file: computed checksum ...``).
:func:`environment_failure` turns such an error into the
:class:`~pipelines.runtime.errors.WarehouseEnvironmentError` of its cause, with what to do;
:func:`pipelines.warehouse.connection.connect` applies it to everything run on a connection, so
every command and flow says the same.

:func:`verify` is the check every open makes (:func:`~pipelines.warehouse.connection.connect`):
DuckDB checks a block's checksum only when it reads the block, so a command that does not read a
damaged table (an ingest with nothing new) would succeed on a corrupt file. ``verify`` reads the
file's three 4 KiB headers and every block of the database header's ``block_count``, and checks
each block's checksum the way DuckDB does (the first 8 bytes of a block are a checksum of the
rest: 5381 xor-ed with every other 8-byte word times ``0xbf58476d1ce4e5b9``). It reads the whole
file (8 to 17 ms for the 7 MB demo warehouse, 0.1 to 0.3 s for 130 MB); files larger than
``RELIA_VERIFY_MAX_MB`` (default :data:`~pipelines.runtime.settings.DEFAULT_VERIFY_MAX_MB`) get
their headers checked only. A block cut off the end of the file is DuckDB's to find when it reads
it.
"""

from __future__ import annotations

import errno
import os
import struct
from pathlib import Path

import numpy as np

from pipelines.runtime.errors import (
    WarehouseCorruptError,
    WarehouseEnvironmentError,
    WarehouseFullError,
    WarehouseReadOnlyError,
)
from pipelines.runtime.settings import DEFAULT_VERIFY_MAX_MB

__all__ = ["environment_failure", "verify"]

_FULL = ("No space left on device", "Disk quota exceeded", "File too large")
_READ_ONLY = ("Read-only file system", "Permission denied", "Operation not permitted")
_CORRUPT = (
    "Corrupt database file",
    "not a valid DuckDB database file",
    "The file is not a valid DuckDB database",
    "database file is corrupt",
)
_ERRNO_FULL = {errno.ENOSPC, errno.EDQUOT, errno.EFBIG}
_ERRNO_READ_ONLY = {errno.EROFS, errno.EACCES, errno.EPERM}

HEADER_BYTES = 4096
"""DuckDB's file starts with a main header and two database headers of this size each."""
_MAGIC = b"DUCK"
_CHECKSUM_FACTOR = np.uint64(0xBF58476D1CE4E5B9)
_CHECKSUM_SEED = np.uint64(5381)
_CHUNK_BLOCKS = 32
"""Blocks read and checked at a time (8 MiB with DuckDB's default 256 KiB blocks)."""


def _cause(error: BaseException) -> str:
    text = " ".join(str(error).split())
    for prefix in ("IO Error: ", "TransactionContext Error: ", "Failed to commit: "):
        text = text.removeprefix(prefix)
    return text or type(error).__name__


def environment_failure(
    error: BaseException, db_path: Path | str
) -> WarehouseEnvironmentError | None:
    """Return the one-line error of ``error``'s cause when it is an environment failure, else None.

    Parameters
    ----------
    error
        What DuckDB (or the operating system) raised while the warehouse was open or opened.
    db_path
        The warehouse, named in the message.
    """
    if isinstance(error, WarehouseEnvironmentError):
        return error
    if isinstance(error, OSError) and not _names_warehouse(error, db_path):
        return None  # a landing file, a report: not the warehouse's failure
    text = str(error)
    code = error.errno if isinstance(error, OSError) else None
    cause = _cause(error)
    if code in _ERRNO_FULL or any(words in text for words in _FULL):
        return WarehouseFullError(
            f"no space left for the warehouse {db_path}: {cause}; what this command was writing "
            "was rolled back; free space on that disk (or move the warehouse: --db / RELIA_DB) "
            "and rerun it"
        )
    if code in _ERRNO_READ_ONLY or any(words in text for words in _READ_ONLY):
        return WarehouseReadOnlyError(
            f"cannot write the warehouse {db_path}: {cause}; it is left as it was; make the "
            "file and its folder writable (remount read-write, chattr -i, chmod) or copy it "
            "where it can be written and pass --db"
        )
    if any(words in text for words in _CORRUPT):
        return corrupt(db_path, cause)
    return None


def _names_warehouse(error: OSError, db_path: Path | str) -> bool:
    """Whether an operating-system error is about the warehouse file, its WAL or its folder."""
    if error.filename is None:
        return False
    named = Path(os.fsdecode(error.filename)).resolve()
    path = Path(db_path).resolve()
    return named in (path, path.with_name(f"{path.name}.wal"), path.parent)


def corrupt(db_path: Path | str, cause: str) -> WarehouseCorruptError:
    """Return the error of a damaged warehouse file, with what to do about it."""
    return WarehouseCorruptError(
        f"the warehouse {db_path} is corrupt: {cause}; restore it from a backup, or re-ingest "
        f"the landing into a new file (`relia ingest LANDING --db NEW.duckdb`)"
    )


def _checksums(words: np.ndarray) -> np.ndarray:
    """Return DuckDB's checksum of each row of ``words`` (uint64) after its first word."""
    with np.errstate(over="ignore"):
        product = words[:, 1:] * _CHECKSUM_FACTOR
    return np.bitwise_xor.reduce(product, axis=1) ^ _CHECKSUM_SEED  # type: ignore[no-any-return]


def verify_max_bytes() -> int:
    """Return the largest file :func:`verify` reads whole (``RELIA_VERIFY_MAX_MB``)."""
    given = os.environ.get("RELIA_VERIFY_MAX_MB", "").strip()
    try:
        return int(float(given or DEFAULT_VERIFY_MAX_MB) * 1024 * 1024)
    except ValueError:
        msg = f"RELIA_VERIFY_MAX_MB must be a number of MiB, not {given!r}"
        raise ValueError(msg) from None


def verify(db_path: Path | str, *, max_bytes: int | None = None, fd: int | None = None) -> int:
    """Check the checksums of the warehouse file's headers and blocks; return the blocks checked.

    A file that is not a DuckDB file (or an empty one) is left to DuckDB. A block of zeros is a
    free block the file system was told to drop (DuckDB trims them), not a damage.

    Parameters
    ----------
    db_path
        The DuckDB file, opened by this process (so nobody else writes it meanwhile).
    max_bytes
        Read every block only when the file is at most this long (default:
        :func:`verify_max_bytes`); a longer file gets its headers and length checked.
    fd
        An open descriptor of the file to read through, left open (default: the file is opened
        and closed here). A process holding DuckDB's lock on the file must pass one it keeps
        open: closing any descriptor of a file drops the process's POSIX locks on it.

    Raises
    ------
    WarehouseCorruptError
        When a header or a block fails its checksum.
    """
    path = Path(db_path)
    limit = verify_max_bytes() if max_bytes is None else max_bytes
    if fd is None:
        handle = path.open("rb")
    else:
        handle = os.fdopen(fd, "rb", closefd=False)
        handle.seek(0)
    with handle:
        head = handle.read(3 * HEADER_BYTES)
        if len(head) < 3 * HEADER_BYTES or head[8:12] != _MAGIC:
            return 0
        headers = np.frombuffer(head, dtype="<u8").reshape(3, HEADER_BYTES // 8)
        bad = np.nonzero(_checksums(headers) != headers[:, 0])[0]
        if bad.size:
            where = int(bad[0]) * HEADER_BYTES
            msg = f"header at location {where} fails its checksum"
            raise corrupt(db_path, msg)
        # the database header of the higher iteration is the current one: iteration,
        # meta block, free list, block count, block size follow its checksum
        current = max(
            (struct.unpack_from("<6Q", head, o) for o in (4096, 8192)), key=lambda h: h[1]
        )
        block_count, block_size = int(current[4]), int(current[5])
        if block_size < 4096 or block_size % 8 or block_count == 0:
            return 0
        size = os.fstat(handle.fileno()).st_size
        if size > limit:
            return 0
        # DuckDB cuts free blocks off the end of the file without lowering the header's count
        block_count = min(block_count, (size - 3 * HEADER_BYTES) // block_size)
        words = block_size // 8
        buffer = np.empty((_CHUNK_BLOCKS, words), dtype="<u8")
        first = 0
        while first < block_count:
            n = min(_CHUNK_BLOCKS, block_count - first)
            got = handle.readinto(buffer[:n].data.cast("B"))
            if got != n * block_size:  # the file shrank while read: not this process's file
                return first
            chunk = buffer[:n]
            wrong = np.nonzero((_checksums(chunk) != chunk[:, 0]) & chunk.any(axis=1))[0]
            if wrong.size:
                block = first + int(wrong[0])
                where = 3 * HEADER_BYTES + block * block_size
                msg = f"block {block} at location {where} fails its checksum"
                raise corrupt(db_path, msg)
            first += n
    return block_count
