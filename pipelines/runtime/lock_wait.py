"""Waiting for the warehouse's write lock, and showing the wait.

:func:`pipelines.warehouse.connect` reports each wait for another process's lock as a
:class:`WaitStatus` to an ``on_wait`` hook: the one it is given, else the one set for the
context with :func:`reporting_waits` (the CLI sets a :func:`busy_spinner` there once per
command, so a wait deep inside a pipeline step shows too). This module imports neither DuckDB
nor polars, so the CLI can set it up before knowing whether a command opens the warehouse.

Usage::

    with busy_spinner(console) as on_wait, reporting_waits(on_wait):
        ...  # any warehouse.connect(...) in here shows its wait as a spinner
"""

from __future__ import annotations

from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import TYPE_CHECKING

from rich.markup import escape

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator

    from rich.console import Console
    from rich.status import Status

WAIT_REPORT_EVERY_S = 1.0
"""How often (seconds) :func:`pipelines.warehouse.connect` reports a wait to its hook."""


@dataclass(frozen=True)
class WaitStatus:
    """What :func:`connect` is waiting for, as reported to its ``on_wait`` hook.

    Attributes
    ----------
    path
        The warehouse file whose lock is awaited.
    holder
        ``PID n (program)`` when DuckDB names the process holding the lock, else
        ``another process``.
    waited_s
        Seconds waited so far.
    timeout_s
        Seconds :func:`connect` waits in all before raising :class:`WarehouseBusyError`.
    done
        True in the last report of a wait that ended with the lock taken (the hook can stop
        showing the wait).
    """

    path: str
    holder: str
    waited_s: float
    timeout_s: float
    done: bool = False


WAIT_REPORTER: ContextVar[Callable[[WaitStatus], None] | None] = ContextVar(
    "relia_wait_reporter", default=None
)
"""The ``on_wait`` hook of every ``connect`` in this context that was given none."""


@contextmanager
def reporting_waits(on_wait: Callable[[WaitStatus], None]) -> Iterator[None]:
    """Make ``on_wait`` the default hook of every ``connect`` inside the block.

    Parameters
    ----------
    on_wait
        Called as ``connect``'s ``on_wait`` (e.g. the hook :func:`busy_spinner` yields).
    """
    token = WAIT_REPORTER.set(on_wait)
    try:
        yield
    finally:
        WAIT_REPORTER.reset(token)


def describe_wait(wait: WaitStatus) -> str:
    """One line saying what is awaited: ``waiting for <path> (locked by <holder>): 3 s of 60 s``."""
    return (
        f"waiting for {wait.path} (locked by {wait.holder}): "
        f"{wait.waited_s:.0f} s of {wait.timeout_s:g} s"
    )


@contextmanager
def busy_spinner(console: Console) -> Iterator[Callable[[WaitStatus], None]]:
    """Yield a hook for ``connect(on_wait=...)`` that shows the wait as a ``rich.status`` spinner.

    Parameters
    ----------
    console
        Where the spinner goes (e.g. the CLI's stderr console).

    Yields
    ------
    callable
        The ``on_wait`` hook: starts the spinner on its first call, updates its text on later
        ones and stops it when the wait is ``done``; leaving the block stops it too.
    """
    status: Status | None = None

    def on_wait(wait: WaitStatus) -> None:
        nonlocal status
        if wait.done:
            if status is not None:
                status.stop()
                status = None
            return
        text = escape(describe_wait(wait))
        if status is None:
            status = console.status(text)
            status.start()
        else:
            status.update(text)

    try:
        yield on_wait
    finally:
        if status is not None:
            status.stop()
