"""Parse Slurm accounting exports (``sacct --parsable2``) into ``raw_slurm_jobs`` rows.

The landing files come from::

    sacct --parsable2 --allusers --duplicates \\
        --format=JobID,JobIDRaw,JobName,Partition,Account,User,AllocNodes,AllocTRES,NodeList,\\
                 Submit,Start,End,Elapsed,State,ExitCode,Restarts

with a header line, ``|`` between fields and no trailing ``|``. Every field is cut and checked with
polars string expressions over the whole file; only the expansion of compressed host lists calls
python-hostlist, once per distinct ``NodeList``.
"""

from __future__ import annotations

import functools
from datetime import datetime

import hostlist
import polars as pl

from pipelines.sources.common import (
    Parsed,
    delimited_fields,
    empty_file_reject,
    empty_rows,
    empty_to_null,
    parsed_from,
    time_check,
    utc_now,
    with_reasons,
)

COLUMNS: tuple[str, ...] = (
    "JobID", "JobIDRaw", "JobName", "Partition", "Account", "User", "AllocNodes", "AllocTRES",
    "NodeList", "Submit", "Start", "End", "Elapsed", "State", "ExitCode", "Restarts",
)  # fmt: skip
"""Header names the file must carry (any order; further columns are skipped)."""

STATES: frozenset[str] = frozenset(
    {
        "BOOT_FAIL", "CANCELLED", "COMPLETED", "DEADLINE", "FAILED", "NODE_FAIL", "OUT_OF_MEMORY",
        "PENDING", "PREEMPTED", "REQUEUED", "RESIZING", "REVOKED", "RUNNING", "SUSPENDED",
        "TIMEOUT",
    }
)  # fmt: skip
"""Base state words ``sacct`` prints for jobs and steps (``JOB_STATE_CODES`` in sacct(1))."""

SCHEMA: dict[str, pl.DataType] = {
    "source_file": pl.String(),
    "line_no": pl.Int64(),
    "job_id": pl.String(),
    "job_id_raw": pl.String(),
    "step": pl.String(),
    "job_name": pl.String(),
    "partition": pl.String(),
    "account": pl.String(),
    "user_name": pl.String(),
    "alloc_nodes": pl.Int32(),
    "alloc_tres": pl.String(),
    "n_gpus": pl.Int32(),
    "node_list": pl.String(),
    "nodes": pl.List(pl.String()),
    "submit_ts": pl.Datetime("us", "UTC"),
    "start_ts": pl.Datetime("us", "UTC"),
    "end_ts": pl.Datetime("us", "UTC"),
    "elapsed_s": pl.Int64(),
    "state": pl.String(),
    "state_by_uid": pl.Int64(),
    "exit_code": pl.Int32(),
    "exit_signal": pl.Int32(),
    "restarts": pl.Int32(),
}

# 123 | 123_4 | 123_[1-10%2] | 123+0, each optionally followed by .batch / .extern / .0 / ...
_JOB_ID = r"^\d+(?:_(?:\d+|\[[^\]]+\]))?(?:\+\d+)?(?:\.[A-Za-z0-9_]+)?$"
_JOB_ID_RAW = r"^\d+(?:\.[A-Za-z0-9_]+)?$"
_TS_FORMAT = "%Y-%m-%dT%H:%M:%S"
_NO_TIME = ("Unknown", "None", "")
_NO_NODES = ("None assigned", "")
_UID_MAX = 2**32 - 1


def parse(data: bytes, *, source_file: str, now: datetime | None = None) -> Parsed:
    """Parse one ``sacct --parsable2`` export.

    Parameters
    ----------
    data
        The file's bytes.
    source_file
        Path recorded on every row and reject.
    now
        Reference time for the "not in the future" check (default: current UTC time). A
        timestamp more than one day after it is a reject.

    Returns
    -------
    Parsed
        ``rows`` with the ``raw_slurm_jobs`` columns (:data:`SCHEMA`): ``job_id`` as printed,
        ``job_id_raw`` (the allocation id without step), ``step`` (null for allocation rows),
        ``job_name``, ``partition``, ``account``, ``user_name``, ``alloc_nodes``, ``alloc_tres``,
        ``n_gpus`` (``gres/gpu=N``, 0 if absent), ``node_list`` (compressed, as printed), ``nodes``
        (expanded; empty for ``None assigned``), ``submit_ts``/``start_ts``/``end_ts`` (UTC, null
        for ``Unknown``/``None``), ``elapsed_s`` (seconds), ``state`` (base word), ``state_by_uid``
        (from ``CANCELLED by <uid>``), ``exit_code``, ``exit_signal``, ``restarts``.
        Blank lines and the header line are ignored; every other line is a row or a reject.

    Notes
    -----
    Rejects: a header without the needed columns (then every line, with the missing names), a
    wrong number of fields, bytes that are not UTF-8, a malformed JobID, JobIDRaw, timestamp,
    Elapsed, ExitCode, AllocNodes, Restarts or NodeList, an unknown State word, and timestamps in
    the future. End before Start is left to validation.

    Examples
    --------
    >>> text = (
    ...     "JobID|JobIDRaw|JobName|Partition|Account|User|AllocNodes|AllocTRES|NodeList|Submit|"
    ...     "Start|End|Elapsed|State|ExitCode|Restarts\\n"
    ...     "7|7|train|gpu|ml|ana|2|cpu=8,gres/gpu=16|gpu[01-02]|2026-06-01T00:00:00|"
    ...     "2026-06-01T00:01:00|2026-06-01T01:01:00|01:00:00|NODE_FAIL|0:0|0\\n"
    ... )
    >>> result = parse(text.encode(), source_file="sacct_20260601.txt")
    >>> result.rows.select("job_id", "n_gpus", "nodes", "state").row(0)
    ('7', 16, ['gpu01', 'gpu02'], 'NODE_FAIL')
    """
    if not data:
        return Parsed(empty_rows(SCHEMA), empty_file_reject(source_file), 0)
    now_utc = utc_now(now)
    fields = delimited_fields(data, separator="|", columns=COLUMNS, what="sacct --parsable2 header")
    job_id, job_id_raw, state = pl.col("JobID"), pl.col("JobIDRaw"), pl.col("State")
    exit_text, elapsed = pl.col("ExitCode"), pl.col("Elapsed")
    by = state.str.find(" by ", literal=True)
    colon = exit_text.str.find(":", literal=True)
    # Values first, with cheap string operations; a value that does not convert is null, and the
    # checks below turn it into a reject naming the field.
    frame = fields.frame.with_columns(
        job_id.str.slice(job_id.str.find(".", literal=True) + 1).alias("step"),
        _before(job_id_raw, ".").alias("job_id_raw"),
        pl.when(by.is_null()).then(state).otherwise(state.str.head(by)).alias("state"),
        state.str.slice(by + 4).cast(pl.Int64, strict=False).alias("state_by_uid"),
        exit_text.str.head(colon).cast(pl.Int32, strict=False).alias("exit_code"),
        exit_text.str.slice(colon + 1).cast(pl.Int32, strict=False).alias("exit_signal"),
        _elapsed_s(elapsed).alias("elapsed_s"),
        pl.col("AllocNodes").cast(pl.Int32, strict=False).alias("alloc_nodes"),
        pl.col("Restarts").cast(pl.Int32, strict=False).alias("restarts"),
        _gpu_count_text(pl.col("AllocTRES"), typed=b"gres/gpu:" in data).alias("gpu_text"),
        *[_timestamp(pl.col(c)).alias(f"{c.lower()}_ts") for c in ("Submit", "Start", "End")],
    )
    frame = frame.with_columns(
        pl.col("gpu_text").cast(pl.Int32, strict=False).alias("n_gpus"),
    )
    checked = with_reasons(
        frame,
        [
            *fields.checks,
            (~job_id.str.contains(_JOB_ID), pl.format("malformed JobID '{}'", job_id)),
            (
                ~job_id_raw.str.contains(_JOB_ID_RAW),
                pl.format("malformed JobIDRaw '{}'", job_id_raw),
            ),
            *[
                time_check(c, pl.col(f"{c.lower()}_ts"), now_utc, no_time=_NO_TIME)
                for c in ("Submit", "Start", "End")
            ],
            (~pl.col("state").is_in(sorted(STATES)), pl.format("unknown State '{}'", state)),
            (
                by.is_not_null()
                & ~pl.col("state_by_uid").is_between(0, _UID_MAX).fill_null(value=False),
                pl.format("malformed uid in State '{}'", state),
            ),
            _field_check(
                "ExitCode",
                colon.is_null() | _negative_or_null("exit_code") | _negative_or_null("exit_signal"),
            ),
            _field_check("Elapsed", _negative_or_null("elapsed_s")),
            _field_check("AllocNodes", _negative_or_null("alloc_nodes")),
            _field_check("Restarts", _negative_or_null("restarts")),
            _field_check(
                "AllocTRES", pl.col("gpu_text").is_not_null() & _negative_or_null("n_gpus")
            ),
        ],
    )
    checked = _with_nodes(checked)
    checked = checked.with_columns(
        job_id.alias("job_id"),
        pl.col("n_gpus").fill_null(0),
        *[
            empty_to_null(pl.col(field)).alias(column)
            for field, column in (
                ("JobName", "job_name"),
                ("Partition", "partition"),
                ("Account", "account"),
                ("User", "user_name"),
                ("AllocTRES", "alloc_tres"),
                ("NodeList", "node_list"),
            )
        ],
    )
    return parsed_from(checked, schema=SCHEMA, source_file=source_file, n_ignored=fields.n_ignored)


def _before(text: pl.Expr, mark: str) -> pl.Expr:
    """Text up to the first ``mark`` (all of it when there is none)."""
    pos = text.str.find(mark, literal=True)
    return pl.when(pos.is_null()).then(text).otherwise(text.str.head(pos))


def _timestamp(text: pl.Expr) -> pl.Expr:
    return text.str.strptime(pl.Datetime("us"), _TS_FORMAT, strict=False).dt.replace_time_zone(
        "UTC"
    )


def _field_check(column: str, failed: pl.Expr) -> tuple[pl.Expr, pl.Expr]:
    """A check on a field that may be empty (then it passes and its value is null)."""
    text = pl.col(column)
    return (text != "") & failed, pl.format(f"malformed {column} '{{}}'", text)


def _negative_or_null(column: str) -> pl.Expr:
    """A value that did not convert (null: not a number, or too large) or came out negative."""
    return pl.col(column).is_null() | (pl.col(column) < 0)


def _gpu_count_text(tres: pl.Expr, *, typed: bool) -> pl.Expr:
    """The text of the GPU count in AllocTRES (null when there is no GPU entry).

    ``gres/gpu=N`` is found by plain string search, cheap enough to run on every line; the typed
    form ``gres/gpu:<type>=N`` needs a regex and is looked for only when ``typed`` (the file
    mentions it somewhere) and the plain form is absent.
    """
    key = "gres/gpu="
    start = tres.str.find(key, literal=True)
    plain = _before(tres.str.slice(start + len(key), 12), ",")
    if not typed:
        return plain
    return pl.coalesce(plain, tres.str.extract(r"(?:^|,)gres/gpu:[^=,]+=([^,]*)", 1))


def _elapsed_s(text: pl.Expr) -> pl.Expr:
    """Seconds from ``[D-]HH:MM:SS`` (null where the text does not have that shape).

    Slurm prints the clock part zero-padded and below 24 hours once a day count is there.
    """
    clock = text.str.tail(8).str.to_time("%H:%M:%S", strict=False)
    day_part = text.str.head(-8)
    days = (
        pl.when(day_part == "")
        .then(pl.lit(0, pl.Int64))
        .when(day_part.str.ends_with("-"))
        .then(day_part.str.head(-1).cast(pl.Int64, strict=False))
    )
    return days * 86_400 + clock.cast(pl.Int64) // 1_000_000_000


def _with_nodes(frame: pl.DataFrame) -> pl.DataFrame:
    """Expand each distinct NodeList once and reject lines whose NodeList does not expand."""
    good = pl.col("reason").is_null()
    distinct = frame.select(pl.col("NodeList").filter(good).unique().drop_nulls()).to_series()
    import pyarrow as pa  # lazy: only this step needs it, and the registry import stays light

    expanded = [_expand(text) for text in distinct.to_list()]
    # pyarrow builds the list column from Python lists about ten times faster than polars does
    nodes_of = pl.from_arrow(pa.array(expanded, type=pa.list_(pa.string())))
    lookup = pl.DataFrame([distinct, pl.Series("nodes", nodes_of)])
    nodes = (
        frame.select("NodeList")
        .join(lookup, on="NodeList", how="left", maintain_order="left")
        .get_column("nodes")
    )
    return frame.with_columns(nodes).with_columns(
        pl.when(good & pl.col("nodes").is_null())
        .then(pl.format("malformed NodeList '{}'", pl.col("NodeList")))
        .otherwise(pl.col("reason"))
        .alias("reason")
    )


@functools.lru_cache(maxsize=1 << 16)
def _expand(node_list: str) -> tuple[str, ...] | None:
    """Expanded host names, or None when python-hostlist cannot read the list.

    Cached across files: daily exports of one cluster repeat the same host lists.
    """
    if node_list in _NO_NODES:
        return ()
    try:
        return tuple(str(host) for host in hostlist.expand_hostlist(node_list))
    except hostlist.BadHostlist:
        return None
