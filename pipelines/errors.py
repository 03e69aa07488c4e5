"""Expected failures a user can cause and act on: the CLI prints each as one line.

A :class:`ReliaError` is not a bug: a missing or busy warehouse, a warehouse with nothing
ingested. ``relia`` prints ``error: <message>`` and exits with :attr:`ReliaError.exit_code`
(the traceback only under ``relia --debug`` or ``RELIA_DEBUG=1``). The message says what to do
next.
"""

from __future__ import annotations


class ReliaError(Exception):
    """Base class of the failures a user can fix; ``exit_code`` is what ``relia`` exits with."""

    exit_code = 1


class WarehouseMissingError(ReliaError, FileNotFoundError):
    """The warehouse file does not exist (nothing was ingested into it yet)."""

    def __init__(self, db_path: object) -> None:
        super().__init__(
            f"no warehouse at {db_path}: run `relia ingest LANDING --db {db_path}` first "
            "(or pass --db / set RELIA_DB)"
        )


class WarehouseEmptyError(ReliaError, ValueError):
    """The warehouse exists but lacks what a command reads (no views, no lives, no fit run)."""
