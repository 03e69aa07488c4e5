"""Showing a wait for the warehouse's lock: a Rich spinner fed by ``connect``'s ``on_wait`` hook.

Usage::

    with busy_spinner(console) as on_wait, warehouse.connect(db, on_wait=on_wait) as con:
        ...

The spinner appears only when the lock is awaited and goes away once it is taken (or when the
block ends, e.g. on :class:`~pipelines.warehouse.connection.WarehouseBusyError`).
"""

from __future__ import annotations

from contextlib import contextmanager
from typing import TYPE_CHECKING

from rich.markup import escape

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator

    from rich.console import Console
    from rich.status import Status

    from pipelines.warehouse.connection import WaitStatus


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
