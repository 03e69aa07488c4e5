"""Parse the fleet register (``fleet/fleet.csv``) into ``raw_fleet`` rows.

The register lists every node ever installed: ``node,rack,cluster,batch,installed,removed``, with
ISO 8601 times (``2026-06-01T00:00:00Z``) and ``removed`` empty while the node is in service.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import polars as pl

from pipelines.ingest.sources.common import (
    Parsed,
    delimited_fields,
    empty_file_reject,
    empty_rows,
    empty_to_null,
    iso_utc,
    parsed_from,
    time_check,
    utc_now,
    with_reasons,
)

if TYPE_CHECKING:
    from datetime import datetime

COLUMNS: tuple[str, ...] = ("node", "rack", "cluster", "batch", "installed", "removed")
"""Header names the file must carry (any order; further columns are skipped)."""

SCHEMA: dict[str, pl.DataType] = {
    "source_file": pl.String(),
    "line_no": pl.Int64(),
    "node": pl.String(),
    "rack": pl.String(),
    "cluster": pl.String(),
    "batch": pl.String(),
    "installed_ts": pl.Datetime("us", "UTC"),
    "removed_ts": pl.Datetime("us", "UTC"),
}


def parse(data: bytes, *, source_file: str, now: datetime | None = None) -> Parsed:
    r"""Parse the fleet register.

    Parameters
    ----------
    data
        The file's bytes (CSV with a header line; double quotes are honoured).
    source_file
        Path recorded on every row and reject.
    now
        Reference time for the "not in the future" check (default: current UTC time).

    Returns
    -------
    Parsed
        ``rows`` with the ``raw_fleet`` columns (:data:`SCHEMA`): ``node``, ``rack``,
        ``cluster``, ``batch`` (empty text becomes null), ``installed_ts`` and ``removed_ts``
        (UTC; null while in service). The header and blank lines are ignored.

    Notes
    -----
    Rejects: a header without the needed columns (then every line), a wrong number of fields,
    unbalanced quotes, bytes that are not UTF-8, a malformed ``installed`` or ``removed`` time,
    and times in the future. A missing node or install time, and removal before installation,
    are left to validation.

    Examples
    --------
    >>> text = (
    ...     "node,rack,cluster,batch,installed,removed\n"
    ...     "gpu0001,r01,c1,b1,2026-01-01T00:00:00Z,\n"
    ... )
    >>> parse(text.encode(), source_file="fleet.csv").rows.select("node", "removed_ts").row(0)
    ('gpu0001', None)
    """
    if not data:
        return Parsed(empty_rows(SCHEMA), empty_file_reject(source_file), 0)
    now_utc = utc_now(now)
    fields = delimited_fields(
        data, separator=",", columns=COLUMNS, quoted=True, what="fleet CSV header"
    )
    frame = fields.frame.with_columns(
        *[empty_to_null(pl.col(c)).alias(c) for c in ("node", "rack", "cluster", "batch")],
        iso_utc(pl.col("installed")).alias("installed_ts"),
        iso_utc(pl.col("removed")).alias("removed_ts"),
    )
    checked = with_reasons(
        frame,
        [
            *fields.checks,
            *[time_check(c, pl.col(f"{c}_ts"), now_utc) for c in ("installed", "removed")],
        ],
    )
    return parsed_from(checked, schema=SCHEMA, source_file=source_file, n_ignored=fields.n_ignored)
