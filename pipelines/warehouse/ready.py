"""Make a warehouse file ready for a pipeline stage, or say in one line what to run first.

The scheduled flows (``fit-reliability``, ``backtest-goodput``, ``weekly-report``) may run on a
machine where nothing was ingested yet. :func:`prepare` is their first step: no file is a
:class:`~pipelines.runtime.errors.WarehouseMissingError` (a flow never creates an empty warehouse);
a file without the views (a schema only, or an empty DuckDB file) gets the schema and the views
over its empty tables, so every stage after it finds its views and says which data is missing
instead of failing on a missing table.
"""

from __future__ import annotations

from pathlib import Path

from pipelines.runtime.errors import WarehouseMissingError
from pipelines.runtime.settings import DEFAULT_LOCK_TIMEOUT_S
from pipelines.warehouse.connection import connect
from pipelines.warehouse.pending import check_finished
from pipelines.warehouse.schema import init, view_files

__all__ = ["prepare"]


def prepare(db_path: Path | str, *, lock_timeout_s: float = DEFAULT_LOCK_TIMEOUT_S) -> bool:
    """Check the warehouse at ``db_path`` and create its schema and views when it has none.

    Parameters
    ----------
    db_path
        The DuckDB warehouse file.
    lock_timeout_s
        How long to wait for another writer (an ingest) to release it.

    Returns
    -------
    bool
        Whether the schema and views were created now.

    Raises
    ------
    WarehouseMissingError
        When there is no file at ``db_path``.
    IngestInterruptedError
        When an ingest into it stopped half-way (rerun it).
    """
    if not Path(db_path).exists():
        raise WarehouseMissingError(db_path)
    last_view = view_files()[-1].stem
    with connect(db_path, lock_timeout_s=lock_timeout_s) as con:
        check_finished(con, db_path)
        (found,) = con.execute(
            "select count(*) from information_schema.tables where table_name = $name",
            {"name": last_view},
        ).fetchone() or (0,)
        if found:
            return False
        init(con)
    return True
