"""Parse Slurm node events (``sacctmgr show event --parsable2``) into ``raw_node_events`` rows.

The landing files come from::

    sacctmgr show event start=<from> end=<to> --parsable2

whose default columns are ``Cluster|NodeName|TimeStart|TimeEnd|State|Reason|User`` (a header line,
``|`` between fields, no trailing ``|``). A row is one interval during which a node was down,
drained or failing, with the reason an administrator or slurmctld gave (``Not responding``,
``Kill task failed``, ``NHC: Xid 79``...). While the event is still open ``TimeEnd`` reads
``Unknown`` (sacctmgr prints every date through ``slurm_make_time_str``, which writes
``Unknown`` for time 0; ``src/common/print_fields.c``); an empty field is read the same way.
``--parsable`` (``-p``) output, with a ``|`` after the last field, parses too.
Cluster events (no ``NodeName``) are not about a node and are only counted as ignored.
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
    parsed_from,
    split_lines,
    time_check,
    utc_now,
    with_reasons,
)
from pipelines.ingest.sources.hostlists import expand_hostlist

if TYPE_CHECKING:
    from datetime import datetime

REQUIRED: tuple[str, ...] = ("NodeName", "TimeStart", "TimeEnd", "State", "Reason")
"""Header names the file must carry (any order)."""
OPTIONAL: tuple[str, ...] = ("Cluster", "User")
"""Header names read when present (null otherwise)."""

SCHEMA: dict[str, pl.DataType] = {
    "source_file": pl.String(),
    "line_no": pl.Int64(),
    "cluster": pl.String(),
    "node_name": pl.String(),
    "nodes": pl.List(pl.String()),
    "start_ts": pl.Datetime("us", "UTC"),
    "end_ts": pl.Datetime("us", "UTC"),
    "state": pl.String(),
    "state_base": pl.String(),
    "event_reason": pl.String(),
    "user_name": pl.String(),
}

_TS_FORMAT = "%Y-%m-%dT%H:%M:%S"
_NO_END = ("", "Unknown", "None")
_STATE = r"^[A-Za-z_]+(?:[*~#!%$@^-]*)(?:\+[A-Za-z_]+[*~#!%$@^-]*)*$"


def parse(data: bytes, *, source_file: str, now: datetime | None = None) -> Parsed:
    r"""Parse one ``sacctmgr show event --parsable2`` export.

    Parameters
    ----------
    data
        The file's bytes.
    source_file
        Path recorded on every row and reject.
    now
        Reference time for the "not in the future" check (default: current UTC time).

    Returns
    -------
    Parsed
        ``rows`` with the ``raw_node_events`` columns (:data:`SCHEMA`): ``cluster``,
        ``node_name`` (as printed), ``nodes`` (expanded with python-hostlist), ``start_ts`` and
        ``end_ts`` (UTC; ``end_ts`` null while the event is open), ``state`` (as printed:
        ``DOWN``, ``IDLE+DRAIN``, ``down*``), ``state_base`` (``down``, ``fail``, ``drain``,
        ``maint`` or the lower-case first word), ``event_reason`` (the Reason field) and
        ``user_name`` (``root(0)``).
        The header, blank lines and cluster events (no node) are only counted in ``n_ignored``.

    Notes
    -----
    Rejects: a header without the needed columns (then every line), a wrong number of fields
    (too few; a ``|`` typed into a Reason, which sacctmgr prints unescaped, is joined back into
    it), bytes that are not UTF-8, a malformed TimeStart or TimeEnd,
    times in the future, a malformed State and a NodeName that python-hostlist cannot expand. An
    end before the start is left to validation.

    Examples
    --------
    >>> text = (
    ...     "Cluster|NodeName|TimeStart|TimeEnd|State|Reason|User\n"
    ...     "alpha|gpu0007|2026-06-02T10:00:00||DOWN*|Not responding|slurm(64030)\n"
    ... )
    >>> rows = parse(text.encode(), source_file="events.txt").rows
    >>> rows.select("node_name", "state_base", "end_ts").row(0)
    ('gpu0007', 'down', None)
    """
    if not data:
        return Parsed(empty_rows(SCHEMA), empty_file_reject(source_file), 0)
    now_utc = utc_now(now)
    present = _header_names(data)
    wanted = [*REQUIRED, *(c for c in OPTIONAL if c in present)]
    fields = delimited_fields(
        data,
        separator="|",
        columns=wanted,
        what="sacctmgr show event --parsable2 header",
        free_text="Reason",
    )
    state = pl.col("State")
    frame = fields.frame.with_columns(
        *[pl.lit(None, pl.String).alias(c) for c in OPTIONAL if c not in wanted],
    ).with_columns(
        _timestamp(pl.col("TimeStart")).alias("start_ts"),
        _timestamp(pl.col("TimeEnd")).alias("end_ts"),
        _state_base(state).alias("state_base"),
    )
    checked = with_reasons(
        frame,
        [
            *fields.checks,
            time_check("TimeStart", pl.col("start_ts"), now_utc, no_time=()),
            time_check("TimeEnd", pl.col("end_ts"), now_utc, no_time=_NO_END),
            (
                (pl.col("NodeName") != "") & ~state.str.contains(_STATE),
                pl.format("malformed State '{}'", state),
            ),
        ],
    )
    # ``reason`` is the reject reason of each line (null for a good one), ``Reason`` the field
    is_cluster_event = pl.col("reason").is_null() & (pl.col("NodeName") == "")
    n_cluster = checked.select(is_cluster_event.sum()).item()
    checked = checked.filter(~is_cluster_event)
    checked = _with_nodes(checked).with_columns(
        pl.col("NodeName").alias("node_name"),
        empty_to_null(pl.col("Cluster")).alias("cluster"),
        empty_to_null(pl.col("Reason")).alias("event_reason"),
        empty_to_null(pl.col("User")).alias("user_name"),
        state.alias("state"),
    )
    return parsed_from(
        checked,
        schema=SCHEMA,
        source_file=source_file,
        n_ignored=fields.n_ignored + n_cluster,
    )


def _header_names(data: bytes) -> set[str]:
    """Names on the first non-blank line (the header, if the file has one)."""
    lines = split_lines(data[:4096])
    first = lines.filter(pl.col("line").str.strip_chars() != "").head(1)["line"]
    return set(first[0].split("|")) if first.len() else set()


def _timestamp(text: pl.Expr) -> pl.Expr:
    return text.str.strptime(pl.Datetime("us"), _TS_FORMAT, strict=False).dt.replace_time_zone(
        "UTC"
    )


def _state_base(state: pl.Expr) -> pl.Expr:
    """Return the node state that matters for availability.

    From flags like ``IDLE+DRAIN`` or ``down*``.
    """
    upper = state.str.to_uppercase()
    first = upper.str.extract(r"^([A-Z_]+)", 1).str.to_lowercase()
    return (
        pl.when(upper.str.contains("DOWN", literal=True))
        .then(pl.lit("down"))
        .when(upper.str.contains("FAIL", literal=True))
        .then(pl.lit("fail"))
        .when(upper.str.contains("DRAIN", literal=True))
        .then(pl.lit("drain"))
        .when(upper.str.contains(r"MAINT|REBOOT"))
        .then(pl.lit("maint"))
        .otherwise(first)
    )


def _with_nodes(frame: pl.DataFrame) -> pl.DataFrame:
    """Expand each distinct NodeName once; a name python-hostlist cannot read is a reject."""
    good = pl.col("reason").is_null()
    distinct = frame.select(pl.col("NodeName").filter(good).unique().drop_nulls()).to_series()
    lookup = pl.DataFrame(
        {
            "NodeName": distinct,
            "nodes": pl.Series([_expand(n) for n in distinct.to_list()], dtype=pl.List(pl.String)),
        }
    )
    nodes = (
        frame.select("NodeName")
        .join(lookup, on="NodeName", how="left", maintain_order="left")
        .get_column("nodes")
    )
    return frame.with_columns(nodes).with_columns(
        pl.when(good & pl.col("nodes").is_null())
        .then(pl.format("malformed NodeName '{}'", pl.col("NodeName")))
        .otherwise(pl.col("reason"))
        .alias("reason")
    )


def _expand(node_name: str) -> tuple[str, ...] | None:
    """Return expanded host names, or None when the name is malformed or expands to no host."""
    return expand_hostlist(node_name) or None
