"""Opening the DuckDB warehouse, and the few helpers every other warehouse module shares.

:func:`connect` waits for another process's write lock (DuckDB allows one writer per file) and
turns DuckDB's lock error into :class:`WarehouseBusyError`; ``on_wait`` lets a caller show the
wait (see :mod:`pipelines.warehouse.waiting`). :func:`identifier` guards every name put into SQL
text; :func:`query` is the bound-parameter helper; :func:`transaction` makes a block of writes
all or nothing, and lets a caller wrap several such blocks in one.

A full disk, a read-only or immutable file or folder and a damaged file are one line each
(:mod:`pipelines.warehouse.failures`): :func:`connect` checks the file's checksums when it opens
it and turns such an error, raised anywhere while the warehouse is open, into the
:class:`~pipelines.runtime.errors.WarehouseEnvironmentError` of its cause; a rollback that fails
after one never hides it.

DuckDB's lock is a POSIX record lock, and Linux drops every such lock a process holds on a file
when the process closes *any* descriptor of that file. The checksum read therefore goes through
one descriptor per file kept open while this process has the file open with :func:`connect`
(:func:`_kept_descriptor`), closed only after the last of those connections: a check that
opened and closed the file itself would let another process's writer in beside ours.
"""

from __future__ import annotations

import os
import re
import threading
import time
import weakref
from contextlib import contextmanager, suppress
from typing import TYPE_CHECKING, NoReturn

import duckdb

from pipelines.runtime.errors import ReliaError, WarehouseCorruptError
from pipelines.runtime.lock_wait import WAIT_REPORT_EVERY_S, WAIT_REPORTER, WaitStatus
from pipelines.runtime.settings import CONNECT_LOCK_TIMEOUT_S
from pipelines.warehouse.failures import environment_failure, verify

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator, Mapping
    from pathlib import Path

    import polars as pl

_IDENTIFIER = re.compile(r"^[a-z][a-z0-9_]*$")


class WarehouseBusyError(ReliaError, RuntimeError):
    """Another process holds the warehouse's write lock; retry later."""


_KEPT: dict[tuple[int, int], list[int]] = {}
"""(device, inode) of a warehouse file -> [descriptor, connections of this process using it]."""
_KEPT_LOCK = threading.Lock()


@contextmanager
def _kept_descriptor(db_path: Path | str) -> Iterator[int | None]:
    """Yield a read-only descriptor of ``db_path`` shared by the open connections to it.

    It is closed when the last of them ends (after DuckDB closed its own), never before: closing a
    descriptor of a file releases the process's POSIX locks on it, DuckDB's included. ``None``
    when the file does not exist (DuckDB then keeps it in memory until its first checkpoint).
    """
    try:
        fd = os.open(db_path, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0))
    except FileNotFoundError:
        yield None
        return
    info = os.fstat(fd)
    key = (info.st_dev, info.st_ino)
    with _KEPT_LOCK:
        kept = _KEPT.get(key)
        if kept is None:
            _KEPT[key] = kept = [fd, 0]
            fd = -1  # kept: this one closes when its last user ends
        kept[1] += 1
    if fd >= 0:
        # another connection of this process holds the file open: closing this duplicate would
        # drop DuckDB's lock, so it joins the kept ones and is closed with them
        kept.append(fd)
    try:
        yield kept[0]
    finally:
        with _KEPT_LOCK:
            kept[1] -= 1
            last = kept[1] == 0
            if last:
                del _KEPT[key]
        if last:
            for each in (kept[0], *kept[2:]):
                with suppress(OSError):
                    os.close(each)


def _holder(error: Exception) -> str:
    """``PID n (program)`` when DuckDB's lock error names the holder, else ``another process``."""
    found = re.search(r"lock is held in (?P<program>.+?) \(PID (?P<pid>\d+)\)", str(error))
    if not found:
        return "another process"
    return f"PID {found['pid']} ({found['program']})"


def identifier(name: str) -> str:
    """``name`` when it is a plain lower-case SQL identifier (safe to put into SQL text)."""
    if not _IDENTIFIER.fullmatch(name):  # match() with $ would let a final newline through
        msg = f"refusing identifier {name!r}: names must match {_IDENTIFIER.pattern}"
        raise ValueError(msg)
    return name


_identifier = identifier
"""The name SQL call sites use: tests/hardening/test_security.py's scan knows it as a guard."""


def _is_lock_error(error: Exception) -> bool:
    text = str(error)
    return "lock" in text.lower() and ("Conflicting" in text or "Could not set lock" in text)


@contextmanager
def connect(
    db_path: Path | str,
    *,
    read_only: bool = False,
    lock_timeout_s: float = CONNECT_LOCK_TIMEOUT_S,
    on_wait: Callable[[WaitStatus], None] | None = None,
) -> Iterator[duckdb.DuckDBPyConnection]:
    """Open the warehouse (creating it), waiting up to ``lock_timeout_s`` for another writer.

    Parameters
    ----------
    db_path
        The DuckDB file.
    read_only
        Open it for reading only.
    lock_timeout_s
        Seconds to wait for another process's lock before giving up (default: none).
    on_wait
        Called while the lock is awaited, at once and then about every
        :data:`WAIT_REPORT_EVERY_S` seconds, with a :class:`WaitStatus`; once more with
        ``done=True`` when the wait ends with the lock taken. Default: the hook set with
        :func:`reporting_waits`, if any.

    Raises
    ------
    WarehouseBusyError
        When another process still holds the lock after ``lock_timeout_s`` seconds.
    WarehouseEnvironmentError
        When the disk is full, the file or its folder cannot be written, or the file is damaged
        (on opening it or while it is open): its subclass names the cause.
    """
    if on_wait is None:
        on_wait = WAIT_REPORTER.get()
    started = time.monotonic()
    deadline = started + lock_timeout_s
    delay = 0.2
    last: WaitStatus | None = None
    while True:
        try:
            con = duckdb.connect(str(db_path), read_only=read_only)
            break
        except duckdb.Error as error:  # also a bare Error: "Corrupt database file" on open
            if not (isinstance(error, duckdb.IOException) and _is_lock_error(error)):
                _reraise(error, db_path)
            now = time.monotonic()
            if now >= deadline:
                msg = (
                    f"warehouse busy: {db_path} is locked by {_holder(error)} (DuckDB allows "
                    f"one writer); waited {lock_timeout_s:g} s; retry when it has finished, or "
                    "wait longer with RELIA_LOCK_TIMEOUT_S"
                )
                raise WarehouseBusyError(msg) from error
            if on_wait is not None:
                waited = now - started
                if last is None or waited - last.waited_s >= WAIT_REPORT_EVERY_S * 0.9:
                    last = WaitStatus(str(db_path), _holder(error), waited, lock_timeout_s)
                    on_wait(last)
            time.sleep(delay)
            delay = min(delay * 2, 5.0 if on_wait is None else WAIT_REPORT_EVERY_S)
    if on_wait is not None and last is not None:
        on_wait(
            WaitStatus(
                last.path, last.holder, time.monotonic() - started, lock_timeout_s, done=True
            )
        )
    with _kept_descriptor(db_path) as fd:
        try:
            if fd is not None:
                try:
                    verify(db_path, fd=fd)
                except WarehouseCorruptError:
                    # another connection of this process may have rewritten a block while it
                    # was read (other processes are kept out by the lock): damage reads the same
                    # twice
                    verify(db_path, fd=fd)
            con.execute("set autoinstall_known_extensions = false")
            con.execute("set autoload_known_extensions = false")
            con.execute("set TimeZone = 'UTC'")
            yield con
        except (duckdb.Error, OSError) as error:
            _close_quietly(con)
            _reraise(error, db_path)
        except BaseException:
            _close_quietly(con)
            raise
        try:
            con.close()  # a checkpoint: it writes, so it can fail for want of space
        except (duckdb.Error, OSError) as error:
            _reraise(error, db_path)


def _reraise(error: BaseException, db_path: Path | str) -> NoReturn:
    """Raise the one-line error of ``error``'s cause when it is an environment failure, else it."""
    failure = environment_failure(error, db_path)
    if failure is None:
        raise error
    raise failure from error


def _close_quietly(con: duckdb.DuckDBPyConnection) -> None:
    """Close ``con`` after a failure, which stays the error raised (a second one never hides it)."""
    with suppress(duckdb.Error, OSError):
        con.close()


_IN_TRANSACTION: weakref.WeakSet[duckdb.DuckDBPyConnection] = weakref.WeakSet()
"""Connections inside a :func:`transaction` block (DuckDB cannot say so itself: a second
``begin`` aborts the transaction it meets)."""


@contextmanager
def transaction(con: duckdb.DuckDBPyConnection) -> Iterator[None]:
    """Run the block in one transaction: committed when it ends, rolled back when it raises.

    A block inside another on the same connection joins it (DuckDB has no savepoints): the
    outermost block commits or rolls back everything, so a caller that stores several runs (the
    report's fit, projection and back-test) leaves all of them or none.
    """
    if con in _IN_TRANSACTION:
        yield
        return
    con.execute("begin transaction")
    _IN_TRANSACTION.add(con)
    try:
        yield
        con.execute("commit")
    except BaseException:
        # a failed commit has ended the transaction already ("cannot rollback - no transaction
        # is active"): the error raised is the one that stopped the block, never the rollback's
        with suppress(duckdb.Error):
            con.execute("rollback")
        raise
    finally:
        _IN_TRANSACTION.discard(con)


def query(
    con: duckdb.DuckDBPyConnection, sql: str, params: Mapping[str, object] | None = None
) -> pl.DataFrame:
    """Run a query with bound ``$name`` parameters and return a polars frame."""
    # DuckDB 2.0 refuses con.sql() while an execute() result is only partly fetched (fetchone);
    # that result is done with by the time anyone calls query(), so close it.
    con.complete()
    frame: pl.DataFrame = con.sql(sql, params=dict(params) if params else None).pl()
    return frame
