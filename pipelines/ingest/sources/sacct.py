r"""Parse Slurm accounting exports (``sacct --parsable2``) into ``raw_slurm_jobs`` rows.

Sites write their dumps in many shapes; every one that holds the fields the views need is read::

    sacct --parsable2 --allusers --duplicates \
        --format=JobID,JobIDRaw,JobName,Partition,Account,User,AllocNodes,AllocTRES,NodeList,\
                 Submit,Start,End,Elapsed,State,ExitCode,Restarts

is the reference form; what is required is a header line naming ``JobID``, ``State``, ``Start``,
``End`` and ``NodeList`` (:data:`REQUIRED`), in any order, with any other sacct fields beside them
(:data:`OPTIONAL` are read when present, the rest skipped). The delimiter is whatever separates
the header's names (``|`` of ``--parsable2``, a ``--delimiter`` string; ``--parsable``'s trailing
delimiter is one more empty field); sacct's fixed-width table output is refused with a reason,
since its columns may be cut. Counts come from whichever field the dump has: nodes from
``AllocNodes``, else ``NNodes``, else the expanded node list; GPUs from ``AllocTRES``, else
``ReqTRES`` (the untyped ``gres/gpu=N`` entry, else the sum of the typed ``gres/gpu:<type>=N``
entries, so a TRES string carrying both counts its GPUs once). Multi-cluster dumps (``sacct -M``
with a ``Cluster`` column) keep the cluster on every row; staging keys a job by cluster and job id.

A ``sacct --json`` document (first byte ``{``) is read as the ``--parsable2`` lines of the same
jobs and steps (:mod:`pipelines.ingest.sources.sacct_json`); a dump whose first line is a job
record (``--noheader``) is refused line by line with a reason naming the fix.

Every field is cut and checked with polars string expressions over the whole file; only the
expansion of compressed host lists calls python-hostlist, once per distinct ``NodeList``.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

import polars as pl

from pipelines.ingest.sources import sacct_json
from pipelines.ingest.sources.common import (
    Parsed,
    delimited_fields,
    empty_file_reject,
    empty_rows,
    empty_to_null,
    parsed_from,
    rejects_frame,
    split_lines,
    time_check,
    utc_now,
    with_reasons,
)
from pipelines.ingest.sources.hostlists import expand_hostlist

if TYPE_CHECKING:
    from datetime import datetime

REQUIRED: tuple[str, ...] = ("JobID", "State", "Start", "End", "NodeList")
"""Header names a dump must carry (any order, any delimiter)."""
OPTIONAL: tuple[str, ...] = (
    "JobIDRaw",
    "Cluster",
    "JobName",
    "Partition",
    "Account",
    "User",
    "AllocNodes",
    "NNodes",
    "AllocTRES",
    "ReqTRES",
    "Submit",
    "Elapsed",
    "ElapsedRaw",
    "ExitCode",
    "Restarts",
)
"""Header names read when present; a column the dump lacks is null (or derived, see parse)."""
COLUMNS: tuple[str, ...] = (
    "JobID",
    "JobIDRaw",
    "JobName",
    "Partition",
    "Account",
    "User",
    "AllocNodes",
    "AllocTRES",
    "NodeList",
    "Submit",
    "Start",
    "End",
    "Elapsed",
    "State",
    "ExitCode",
    "Restarts",
)
"""The reference ``--format`` (what the synthetic fleet writes)."""

STATES: frozenset[str] = frozenset(
    {
        "BOOT_FAIL",
        "CANCELLED",
        "COMPLETED",
        "DEADLINE",
        "FAILED",
        "NODE_FAIL",
        "OUT_OF_MEMORY",
        "PENDING",
        "PREEMPTED",
        "REQUEUED",
        "RESIZING",
        "REVOKED",
        "RUNNING",
        "SUSPENDED",
        "TIMEOUT",
    }
)
"""Base state words ``sacct`` prints for jobs and steps (``JOB_STATE_CODES`` in sacct(1))."""

SCHEMA: dict[str, pl.DataType] = {
    "source_file": pl.String(),
    "line_no": pl.Int64(),
    "cluster": pl.String(),
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
_TS_ZONED = "%Y-%m-%dT%H:%M:%S%z"
_HEADER_NAME = re.compile(r"\s*[A-Za-z][A-Za-z0-9_]*")
_SEPARATOR = re.compile(r"[^A-Za-z0-9_]+")
_ZONED = re.compile(rb"T[0-9]{2}:[0-9]{2}:[0-9]{2}[+-][0-9]{2}")
_NO_TIME = ("Unknown", "None", "")
_NO_NODES = ("None assigned", "")
_UID_MAX = 2**32 - 1
_NO_HEADER = "no header"
_TABLE_OUTPUT = (
    "sacct table output (space-padded columns, values may be cut) cannot be read: export "
    "with --parsable2 (or --parsable / --delimiter)"
)
_HEADERLESS = (
    f"sacct header is missing columns {', '.join(REQUIRED)}: expected a first line naming "
    f"{'|'.join(REQUIRED)}, found a job record (a dump written with --noheader): run sacct with "
    "--parsable2 and without --noheader (-n), or put the --format names, joined by the "
    "delimiter, as its first line"
)


def file_columns(source_file: str) -> dict[str, str | None]:
    """Return the columns derived from the file name: none.

    No column comes from the file name: daily dumps with one header may be parsed joined
    (:mod:`pipelines.ingest.sources.batch`), which saves the per-call set-up of a few hundred files.
    """
    return {}


def joinable(data: bytes) -> bool:
    """Return whether a file may be parsed joined with others of its header: not a JSON document.

    ``sacct --json`` documents all open with the same ``{`` line, and two of them joined are not
    one document.
    """
    return not sacct_json.is_json(data)


def parse(data: bytes, *, source_file: str, now: datetime | None = None) -> Parsed:
    r"""Parse one sacct export (``--parsable2``, ``--parsable`` or any ``--delimiter``).

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
        ``rows`` with the ``raw_slurm_jobs`` columns (:data:`SCHEMA`): ``cluster`` (from a
        ``Cluster`` column, else null), ``job_id`` as printed, ``job_id_raw`` (the allocation id
        without step: ``JobIDRaw``, else from ``JobID``, see :func:`_derived_job_id_raw`), ``step`` (null for allocation
        rows), ``job_name``, ``partition``, ``account``, ``user_name``, ``alloc_nodes``
        (``AllocNodes``, else ``NNodes``, else the number of expanded nodes), ``alloc_tres`` (the
        TRES text the GPUs were counted from: ``AllocTRES``, else ``ReqTRES``), ``n_gpus`` (0 if
        there is no GPU entry), ``node_list`` (compressed, as printed), ``nodes`` (expanded; empty
        for ``None assigned``), ``submit_ts``/``start_ts``/``end_ts`` (UTC, null for
        ``Unknown``/``None``; a printed UTC offset is honoured), ``elapsed_s`` (``Elapsed``, else
        ``ElapsedRaw``, else end minus start), ``state`` (base word), ``state_by_uid`` (from
        ``CANCELLED by <uid>``), ``exit_code``, ``exit_signal``, ``restarts``. Columns the dump
        lacks are null. Blank lines and header lines are ignored; every other line is a row or a
        reject.

    Notes
    -----
    Rejects: a header without the needed columns (then every line, with the missing names),
    fixed-width table output (every line: export with ``--parsable2``), a first line that is a job
    record (every line: export without ``--noheader``), a wrong number of fields,
    bytes that are not UTF-8, a malformed JobID, JobIDRaw, timestamp, Elapsed, ElapsedRaw,
    ExitCode, AllocNodes, NNodes, Restarts or NodeList, an unknown State word, and timestamps in
    the future. End before Start is left to validation.

    Examples
    --------
    >>> text = (
    ...     "JobID|JobIDRaw|JobName|Partition|Account|User|AllocNodes|AllocTRES|NodeList|Submit|"
    ...     "Start|End|Elapsed|State|ExitCode|Restarts\n"
    ...     "7|7|train|gpu|ml|ana|2|cpu=8,gres/gpu=16|gpu[01-02]|2026-06-01T00:00:00|"
    ...     "2026-06-01T00:01:00|2026-06-01T01:01:00|01:00:00|NODE_FAIL|0:0|0\n"
    ... )
    >>> result = parse(text.encode(), source_file="sacct_20260601.txt")
    >>> result.rows.select("job_id", "n_gpus", "nodes", "state").row(0)
    ('7', 16, ['gpu01', 'gpu02'], 'NODE_FAIL')
    >>> other = "JobID;State;NodeList;Start;End\n8;TIMEOUT;gpu03;2026-06-01T00:00:00;2026-06-01T02:00:00\n"
    >>> parse(other.encode(), source_file="s.txt").rows.select("alloc_nodes", "elapsed_s").row(0)
    (1, 7200)
    """  # noqa: E501
    if not data:
        return Parsed(empty_rows(SCHEMA), empty_file_reject(source_file), 0)
    if sacct_json.is_json(data):
        return _parse_json(data, source_file=source_file, now=now)
    now_utc = utc_now(now)
    separator, names = _header(data)
    if separator is None:
        return _every_line_rejected(data, source_file, _TABLE_OUTPUT)
    if separator == _NO_HEADER:
        return _every_line_rejected(data, source_file, _HEADERLESS)
    wanted = [*REQUIRED, *(c for c in OPTIONAL if c in names)]
    fields = delimited_fields(data, separator=separator, columns=wanted, what="sacct header")
    has = set(wanted)
    text = {c: pl.col(c) if c in has else pl.lit(None, pl.String) for c in (*REQUIRED, *OPTIONAL)}
    job_id, state = pl.col("JobID"), pl.col("State")
    job_id_raw = text["JobIDRaw"] if "JobIDRaw" in has else _derived_job_id_raw(job_id)
    exit_text, elapsed = text["ExitCode"], text["Elapsed"]
    by = state.str.find(" by ", literal=True)
    colon = exit_text.str.find(":", literal=True)
    # The TRES the GPUs are counted from: the allocation's, else the request's (pending jobs and
    # dumps whose --format has only ReqTRES).
    allocated = text["AllocTRES"].fill_null("") != ""
    tres = pl.when(allocated).then(text["AllocTRES"]).otherwise(text["ReqTRES"])
    tres_name = pl.when(allocated).then(pl.lit("AllocTRES")).otherwise(pl.lit("ReqTRES"))
    typed = b"gres/gpu:" in data
    zoned = _ZONED.search(data) is not None  # SLURM_TIME_FORMAT with %z
    timestamps = {c: _timestamp(text[c], zoned=zoned) for c in ("Submit", "Start", "End")}
    # Values first, with cheap string operations; a value that does not convert is null, and the
    # checks below turn it into a reject naming the field.
    frame = fields.frame.with_columns(
        job_id.str.slice(job_id.str.find(".", literal=True) + 1).alias("step"),
        _before(job_id_raw, ".").alias("job_id_raw"),
        pl.when(by.is_null()).then(state).otherwise(state.str.head(by)).alias("state"),
        state.str.slice(by + 4).cast(pl.Int64, strict=False).alias("state_by_uid"),
        exit_text.str.head(colon).cast(pl.Int32, strict=False).alias("exit_code"),
        exit_text.str.slice(colon + 1).cast(pl.Int32, strict=False).alias("exit_signal"),
        _elapsed_s(elapsed).alias("elapsed_text_s"),
        text["ElapsedRaw"].cast(pl.Int64, strict=False).alias("elapsed_raw_s"),
        text["AllocNodes"].cast(pl.Int32, strict=False).alias("alloc_nodes_field"),
        text["NNodes"].cast(pl.Int32, strict=False).alias("n_nodes_field"),
        text["Restarts"].cast(pl.Int32, strict=False).alias("restarts"),
        tres.alias("tres"),
        *[ts.alias(f"{c.lower()}_ts") for c, ts in timestamps.items()],
    ).with_columns(
        _gpu_count(pl.col("tres"), typed=typed).alias("n_gpus"),
    )
    checked = with_reasons(
        frame,
        [
            *fields.checks,
            (~job_id.str.contains(_JOB_ID), pl.format("malformed JobID '{}'", job_id)),
            *(
                [
                    (
                        ~job_id_raw.str.contains(_JOB_ID_RAW).fill_null(value=True),
                        pl.format("malformed JobIDRaw '{}'", job_id_raw),
                    )
                ]
                if "JobIDRaw" in has
                else []
            ),
            *[
                time_check(c, pl.col(f"{c.lower()}_ts"), now_utc, no_time=_NO_TIME)
                for c in ("Submit", "Start", "End")
                if c in has
            ],
            (~pl.col("state").is_in(sorted(STATES)), pl.format("unknown State '{}'", state)),
            (
                by.is_not_null()
                & ~pl.col("state_by_uid").is_between(0, _UID_MAX).fill_null(value=False),
                pl.format("malformed uid in State '{}'", state),
            ),
            *_number_checks(has, colon),
            (
                pl.col("n_gpus").is_null(),
                pl.format("malformed {} '{}'", tres_name, pl.col("tres")),
            ),
        ],
    )
    checked = _with_output_columns(_with_nodes(checked), text)
    return parsed_from(checked, schema=SCHEMA, source_file=source_file, n_ignored=fields.n_ignored)


def _parse_json(data: bytes, *, source_file: str, now: datetime | None) -> Parsed:
    """Parse a ``sacct --json`` document as the ``--parsable2`` text of the same jobs.

    ``line_no`` is the record's place in the document: 1 for the first job, then its steps,
    then the next job. A document that does not parse is one reject.
    """
    text, reason = sacct_json.to_parsable(data)
    if reason is not None:
        first = data.lstrip()[:200].decode("utf-8", errors="replace").splitlines()[0]
        return Parsed(empty_rows(SCHEMA), rejects_frame([(source_file, 1, first, reason)]), 0)
    parsed = parse(text, source_file=source_file, now=now)
    shift = pl.col("line_no") - 1
    return Parsed(parsed.rows.with_columns(shift), parsed.rejects.with_columns(shift), 0)


def _number_checks(has: set[str], colon: pl.Expr) -> list[tuple[pl.Expr, pl.Expr]]:
    """Return the checks of the numeric fields the dump has: a malformed value is a reject."""
    return [
        _field_check(column, failed)
        for column, failed in (
            (
                "ExitCode",
                colon.is_null() | _negative_or_null("exit_code") | _negative_or_null("exit_signal"),
            ),
            ("Elapsed", _negative_or_null("elapsed_text_s")),
            ("ElapsedRaw", _negative_or_null("elapsed_raw_s")),
            ("AllocNodes", _negative_or_null("alloc_nodes_field")),
            ("NNodes", _negative_or_null("n_nodes_field")),
            ("Restarts", _negative_or_null("restarts")),
        )
        if column in has
    ]


def _with_output_columns(checked: pl.DataFrame, text: dict[str, pl.Expr]) -> pl.DataFrame:
    """Return ``checked`` with the row's columns taken from the field that gives each first."""
    start, end = pl.col("start_ts"), pl.col("end_ts")
    return checked.with_columns(
        pl.col("JobID").alias("job_id"),
        pl.coalesce(
            "alloc_nodes_field",
            "n_nodes_field",
            pl.when(pl.col("nodes").list.len() > 0).then(pl.col("nodes").list.len()),
        ).alias("alloc_nodes"),
        pl.coalesce("elapsed_text_s", "elapsed_raw_s", (end - start).dt.total_seconds()).alias(
            "elapsed_s"
        ),
        empty_to_null(pl.col("tres")).alias("alloc_tres"),
        *[
            empty_to_null(text[field]).alias(column)
            for field, column in (
                ("Cluster", "cluster"),
                ("JobName", "job_name"),
                ("Partition", "partition"),
                ("Account", "account"),
                ("User", "user_name"),
                ("NodeList", "node_list"),
            )
        ],
    )


def _header(data: bytes) -> tuple[str | None, set[str]]:
    """Return the delimiter and the names of the first non-blank line (the header, if there is one).

    The delimiter is the run of characters after the first name that cannot be part of a sacct
    field name (``|``, ``;``, a tab, ``::``...): ``|`` when the line holds a single name, None
    when the names are padded with spaces (sacct's fixed-width table output), :data:`_NO_HEADER`
    when the line starts with a digit (a job record: every JobID does; ``--noheader``).
    """
    lines = split_lines(data[:65536])
    first = lines.filter(pl.col("line").str.strip_chars() != "").head(1)["line"]
    if not first.len():
        return "|", set()
    line = first[0].rstrip("\r")
    if line.lstrip()[:1].isdigit():
        return _NO_HEADER, set()
    name = _HEADER_NAME.match(line)
    if name is None or name.end() == len(line):
        return "|", {line.strip()}
    separator = _SEPARATOR.match(line, name.end()).group(0)  # type: ignore[union-attr]
    if separator.strip(" ") == "":
        return None, set()
    return separator, {n.strip() for n in line.split(separator)}


def _every_line_rejected(data: bytes, source_file: str, reason: str) -> Parsed:
    """Every non-blank line as a reject with ``reason`` (a dump whose form cannot be read)."""
    lines = split_lines(data)
    kept = lines.filter(pl.col("line").str.strip_chars() != "")
    records = [(source_file, n, line, reason) for n, line in kept.select("line_no", "line").rows()]
    return Parsed(empty_rows(SCHEMA), rejects_frame(records), lines.height - kept.height)


def _derived_job_id_raw(job_id: pl.Expr) -> pl.Expr:
    """Return the allocation key of a dump without ``JobIDRaw``, from ``JobID`` alone.

    ``JobID`` up to its step, where Slurm makes the numeric id exact: a plain id is its own; the
    record of an array's tasks not yet started (``123_[4-7%2]``) is the array's own job, so
    ``123``; the first component of a heterogeneous job (``123+0``) is the leader, whose id is the
    het job id, ``123``. A started array task (``123_4``) or a later component (``123+1``) has a
    numeric id of its own that ``JobID`` does not show: its key is the id as printed, which
    names that one job (``scontrol``/``scancel`` accept it) and stays the same when it is requeued.
    """
    allocation = _before(job_id, ".")
    leader = allocation.str.extract(r"^(\d+)(?:_\[[^\]]*\]|\+0)$")
    return pl.coalesce(leader, allocation)


def _before(text: pl.Expr, mark: str) -> pl.Expr:
    """Text up to the first ``mark`` (all of it when there is none)."""
    pos = text.str.find(mark, literal=True)
    return pl.when(pos.is_null()).then(text).otherwise(text.str.head(pos))


def _timestamp(text: pl.Expr, *, zoned: bool = False) -> pl.Expr:
    """UTC time of sacct's ISO form; with ``zoned``, also of the form with a UTC offset."""
    naive = text.str.strptime(pl.Datetime("us"), _TS_FORMAT, strict=False)
    utc = naive.dt.replace_time_zone("UTC")
    if not zoned:
        return utc
    offset = text.str.strptime(pl.Datetime("us", "UTC"), _TS_ZONED, strict=False)
    return pl.coalesce(utc, offset)


def _field_check(column: str, failed: pl.Expr) -> tuple[pl.Expr, pl.Expr]:
    """Return a check on a field that may be empty (then it passes and its value is null)."""
    text = pl.col(column)
    return (text != "") & failed, pl.format(f"malformed {column} '{{}}'", text)


def _negative_or_null(column: str) -> pl.Expr:
    """Return where a value did not convert or came out negative.

    Null: not a number, or too large.
    """
    return pl.col(column).is_null() | (pl.col(column) < 0)


def _gpu_count(tres: pl.Expr, *, typed: bool) -> pl.Expr:
    """Return the GPUs in a TRES string.

    GPUs in a TRES string: the untyped ``gres/gpu=N``, else the sum of the typed
    ``gres/gpu:<type>=N`` entries (Slurm prints both for a typed request; they are the same GPUs),
    0 without any; null when a count is not a number.

    The untyped entry is found by plain string search, cheap enough to run on every line; the
    typed ones need a regex and are looked for only when ``typed`` (the file mentions them).
    """
    key = "gres/gpu="
    start = tres.str.find(key, literal=True)
    plain = _before(tres.str.slice(start + len(key), 12), ",").cast(pl.Int32, strict=False)
    plain = pl.when(start.is_null()).then(None).otherwise(plain.fill_null(-1))
    if typed:
        counts = tres.str.extract_all(r"(?:^|,)gres/gpu:[^=,]+=[^,]*").list.eval(
            pl.element().str.split("=").list.last().cast(pl.Int32, strict=False)
        )
        summed = pl.when(counts.list.len() > 0).then(
            pl.when(counts.list.eval(pl.element().is_null()).list.any())
            .then(-1)
            .otherwise(counts.list.sum())
        )
        plain = pl.coalesce(plain, summed)
    count = plain.fill_null(0)
    return pl.when(count < 0).then(None).otherwise(count)


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


def _expand(node_list: str) -> tuple[str, ...] | None:
    """Return expanded host names (none for ``None assigned``), or None for a malformed list."""
    if node_list in _NO_NODES:
        return ()
    return expand_hostlist(node_list)
