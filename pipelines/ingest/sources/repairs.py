"""Parse repair tickets (``repairs/tickets.csv``) into ``raw_repairs`` rows.

Columns: ``ticket_id,node,component_class,slot,serial_out,serial_in,opened,closed,action,
description``; ISO 8601 times, ``closed`` empty while the ticket is open, ``slot`` ``gpu0`` to
``gpu7`` for GPU-level classes and the class name for node-level ones. The description is free
text and may be double-quoted.
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

COLUMNS: tuple[str, ...] = (
    "ticket_id",
    "node",
    "component_class",
    "slot",
    "serial_out",
    "serial_in",
    "opened",
    "closed",
    "action",
    "description",
)
"""Header names the file must carry (any order; further columns are skipped)."""

ACTIONS: tuple[str, ...] = ("replace", "planned_replace", "reseat", "no_fault_found")
"""``replace`` ends a unit's life as failed, ``planned_replace`` ends it censored, the others end
no life (data contract §1)."""

SCHEMA: dict[str, pl.DataType] = {
    "source_file": pl.String(),
    "line_no": pl.Int64(),
    "ticket_id": pl.String(),
    "node": pl.String(),
    "component_class": pl.String(),
    "slot": pl.String(),
    "serial_out": pl.String(),
    "serial_in": pl.String(),
    "opened_ts": pl.Datetime("us", "UTC"),
    "closed_ts": pl.Datetime("us", "UTC"),
    "action": pl.String(),
    "description": pl.String(),
}

_TEXT = ("ticket_id", "node", "component_class", "slot", "serial_out", "serial_in", "description")


def parse(data: bytes, *, source_file: str, now: datetime | None = None) -> Parsed:
    r"""Parse one ticket export.

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
        ``rows`` with the ``raw_repairs`` columns (:data:`SCHEMA`): ``ticket_id``, ``node``,
        ``component_class``, ``slot``, ``serial_out``, ``serial_in`` (empty text becomes
        null), ``opened_ts`` and ``closed_ts`` (UTC; null while open), ``action`` and
        ``description``. The header and blank lines are ignored.

    Notes
    -----
    Rejects: a header without the needed columns (then every line), a wrong number of fields,
    unbalanced quotes, bytes that are not UTF-8, a malformed ``opened`` or ``closed`` time, times
    in the future, and an action outside :data:`ACTIONS`. Closing before opening and unknown
    component classes are left to validation.

    Examples
    --------
    >>> text = (
    ...     "ticket_id,node,component_class,slot,serial_out,serial_in,opened,closed,action,"
    ...     "description\n"
    ...     'T1,gpu0001,nvlink,gpu3,S1,S2,2026-06-02T00:00:00Z,,replace,"Xid 74, link down"\n'
    ... )
    >>> result = parse(text.encode(), source_file="tickets.csv")
    >>> result.rows.select("ticket_id", "closed_ts", "description").row(0)
    ('T1', None, 'Xid 74, link down')
    """
    if not data:
        return Parsed(empty_rows(SCHEMA), empty_file_reject(source_file), 0)
    now_utc = utc_now(now)
    fields = delimited_fields(
        data, separator=",", columns=COLUMNS, quoted=True, what="tickets CSV header"
    )
    action = pl.col("action")
    frame = fields.frame.with_columns(
        *[empty_to_null(pl.col(c)).alias(c) for c in _TEXT],
        iso_utc(pl.col("opened")).alias("opened_ts"),
        iso_utc(pl.col("closed")).alias("closed_ts"),
    )
    checked = with_reasons(
        frame,
        [
            *fields.checks,
            *[time_check(c, pl.col(f"{c}_ts"), now_utc) for c in ("opened", "closed")],
            (
                ~action.is_in(list(ACTIONS)),
                pl.format(f"unknown action '{{}}' (expected one of {', '.join(ACTIONS)})", action),
            ),
        ],
    )
    return parsed_from(checked, schema=SCHEMA, source_file=source_file, n_ignored=fields.n_ignored)
