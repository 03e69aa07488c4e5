"""Parse PyTorch elastic (``torchrun``) agent logs into ``raw_elastic_events`` rows.

One file is the log of one agent (one node) of one run. The agent's own messages (from
``torch/distributed/elastic/agent/server/api.py``, ``.../rendezvous/dynamic_rendezvous.py`` and
``.../multiprocessing/api.py``) mark every step of the worker group's life::

    [default] starting workers for entrypoint: python
    [default] Rendezvous'ing worker group
    The node 'gpu0001_4242_0' attempts to join the next round of the rendezvous 'llm-1042'.
    The node 'gpu0001_4242_0' has joined round 0 of the rendezvous 'llm-1042' as rank 0 in a world of size 4.
    [default] Rendezvous complete for workers. Result:
      global_world_sizes=[32, 32, 32, 32, 32, 32, 32, 32]
    [default] Starting worker group
    failed (exitcode: 1) local_rank: 3 (pid: 5555) of binary: /usr/bin/python3
    [default] Worker group FAILED. 3/3 attempts left; will restart worker group
    [default] Stopping worker group
    [default] worker group successfully finished. Waiting 300 seconds for other agents to finish.
    Received Signals.SIGTERM death signal, shutting down workers
    Sending process 5556 closing signal SIGTERM

Three log prefixes are read (``log_format``)::

    torch_bracket  [2026-06-01 00:00:00,000] torch.distributed.elastic.agent.server.api: [INFO] ...
    glog           I0601 00:00:00.000000 4242 torch/distributed/elastic/agent/server/api.py:870] ...
    elastic_v1     [INFO] 2026-06-01 00:00:00,000 api: ...

(torch 2.0-2.2, torch 2.3 and later, torchelastic 0.2 / torch 1.9.) Clocks are taken as UTC.
``glog`` prints no year: it comes from the file's mtime like traditional syslog. Only lines
holding one of the messages above are in scope; worker output and every other line are ignored.
The run (rendezvous id) and host come from the file's rendezvous lines (the node descriptor is
``<fqdn>_<pid>_<n>``), else from a file name ``<run_id>__<host>.log``.
"""  # noqa: E501

from __future__ import annotations

from datetime import datetime, timedelta
from pathlib import PurePath

import polars as pl

from pipelines.sources.common import (
    Parsed,
    empty_file_reject,
    empty_rows,
    in_future,
    parsed_from,
    split_lines,
    utc_now,
    with_reasons,
)

SCHEMA: dict[str, pl.DataType] = {
    "source_file": pl.String(),
    "line_no": pl.Int64(),
    "run_id": pl.String(),
    "host": pl.String(),
    "ts": pl.Datetime("us", "UTC"),
    "level": pl.String(),
    "logger": pl.String(),
    "event": pl.String(),
    "role": pl.String(),
    "round": pl.Int32(),
    "group_rank": pl.Int32(),
    "n_nodes": pl.Int32(),
    "world_size": pl.Int32(),
    "local_rank": pl.Int32(),
    "exit_code": pl.Int32(),
    "pid": pl.Int64(),
    "restarts_left": pl.Int32(),
    "max_restarts": pl.Int32(),
    "signal_name": pl.String(),
    "message": pl.String(),
    "log_format": pl.String(),
}

_ROLE = r"\[[^\]\s]+\] "
EVENTS: dict[str, str] = {
    "agent_start": _ROLE + r"starting workers for entrypoint: .+$",
    "rendezvous_start": _ROLE + r"Rendezvous'ing worker group$",
    "rendezvous_join_attempt": (
        r"The node '[^']+' attempts to join the next round of the rendezvous '[^']+'\.$"
    ),
    "rendezvous_joined": (
        r"The node '[^']+' has joined round [0-9]+ of the rendezvous '[^']+' as rank [0-9]+ in "
        r"a world of size [0-9]+\.$"
    ),
    "rendezvous_complete": _ROLE + r"Rendezvous complete for workers\. Result:$",
    "world_sizes": r"global_world_sizes=\[[0-9, ]*\]$",
    "workers_started": _ROLE + r"Starting worker group$",
    "worker_failed": (
        r"failed \(exitcode: -?[0-9]+\) local_rank: [0-9]+ \(pid: [0-9]+\) of binary: .+$"
    ),
    "group_restart": (
        _ROLE + r"Worker group (?:FAILED|UNHEALTHY)\. [0-9]+/[0-9]+ attempts left; will restart "
        r"worker group$"
    ),
    "group_stopping": _ROLE + r"Stopping worker group$",
    "group_succeeded": (
        _ROLE + r"worker group successfully finished\. Waiting [0-9.]+ seconds for other agents "
        r"to finish\.$"
    ),
    "membership_change": (
        _ROLE + r"Detected [0-9]+ new nodes from group_rank=[0-9]+; will restart worker group$"
    ),
    "death_signal": r"Received \S+ death signal, shutting down workers$",
    "closing_signal": r"Sending process [0-9]+ closing signal [A-Z0-9]+$",
}
"""Agent messages in scope (``event`` name → regex of the message, anchored at the line end)."""

_SCOPE = "|".join(f"(?:{pattern})" for pattern in EVENTS.values())
_PREFIXES: dict[str, str] = {
    "torch_bracket": (
        r"^(?:\[rank[0-9]+\]:)?\[([0-9]{4}-[0-9]{2}-[0-9]{2} [0-9:]{8},[0-9]{3})\] (\S+): "
        r"\[([A-Z]+)\] +$"
    ),
    "glog": (
        r"^(?:\[rank[0-9]+\]:)?([DIWEC])([0-9]{4} [0-9:]{8}\.[0-9]{6}) [0-9]+ (\S+):[0-9]+\] +$"
    ),
    "elastic_v1": r"^\[([A-Z]+)\] ([0-9]{4}-[0-9]{2}-[0-9]{2} [0-9:]{8},[0-9]{3}) (\S+): +$",
}
_GLOG_LEVELS = {"D": "DEBUG", "I": "INFO", "W": "WARNING", "E": "ERROR", "C": "CRITICAL"}
_NODE = r"The node '([^']+)_[0-9]+_[0-9]+' "


def parse(
    data: bytes,
    *,
    source_file: str,
    file_mtime: datetime | None = None,
    now: datetime | None = None,
) -> Parsed:
    """Parse one torchrun agent log.

    Parameters
    ----------
    data
        The file's bytes.
    source_file
        Path recorded on every row and reject; a name ``<run_id>__<host>.log`` gives the run and
        host when the file holds no rendezvous line.
    file_mtime
        The file's modification time, for the year of ``glog`` lines (which print none): the
        mtime's year, or the year before when that would put the line more than a day after it.
        Default: ``now``.
    now
        Reference time for the "not in the future" check (default: current UTC time).

    Returns
    -------
    Parsed
        ``rows`` with the ``raw_elastic_events`` columns (:data:`SCHEMA`): ``run_id``, ``host``
        (short name), ``ts``, ``level``, ``logger``, ``event`` (a key of :data:`EVENTS`),
        ``role``, ``round`` (rendezvous round the agent was in: that of the latest
        ``rendezvous_joined`` line of the file), ``group_rank`` and ``n_nodes`` (joined lines),
        ``world_size`` (workers, from ``global_world_sizes``), ``local_rank``, ``exit_code``
        (as printed: negative for a signal) and ``pid`` (failed workers), ``restarts_left`` and
        ``max_restarts`` (restart lines), ``signal_name`` (death and closing signals),
        ``message`` and ``log_format``.

    Notes
    -----
    Rejects: in-scope lines that are not UTF-8, whose prefix is none of the three formats (a
    ``global_world_sizes`` continuation may have none: it takes the time of the line before),
    whose time is impossible or in the future, or whose run and host cannot be told.

    Examples
    --------
    >>> line = (
    ...     b"[2026-06-01 00:00:05,120] torch.distributed.elastic.multiprocessing.api: [ERROR] "
    ...     b"failed (exitcode: 1) local_rank: 3 (pid: 5555) of binary: /usr/bin/python3"
    ... )
    >>> rows = parse(line, source_file="llm-7__gpu0002.log").rows
    >>> rows.select("run_id", "host", "event", "exit_code").row(0)
    ('llm-7', 'gpu0002', 'worker_failed', 1)
    """
    if not data:
        return Parsed(empty_rows(SCHEMA), empty_file_reject(source_file), 0)
    now_utc = utc_now(now)
    reference = utc_now(file_mtime) if file_mtime is not None else now_utc
    lines = split_lines(data)
    line = pl.col("line")
    in_scope = lines.filter(line.str.contains(_SCOPE))
    n_ignored = lines.height - in_scope.height
    event_at = [line.str.find(pattern).alias(name) for name, pattern in EVENTS.items()]
    frame = (
        in_scope.lazy()
        .with_columns(pl.struct(event_at).alias("found"))
        .with_columns(
            pl.coalesce(
                [
                    pl.when(pl.col("found").struct.field(name).is_not_null()).then(pl.lit(name))
                    for name in EVENTS
                ]
            ).alias("event"),
            pl.coalesce([pl.col("found").struct.field(name) for name in EVENTS]).alias("at"),
        )
        .with_columns(
            line.str.head(pl.col("at")).alias("prefix"),
            line.str.slice(pl.col("at")).alias("message"),
        )
    )
    frame = _with_prefix(frame, reference)
    frame = _with_fields(frame)
    checked = with_reasons(
        frame,
        [
            (~pl.col("utf8_ok"), "line is not valid UTF-8"),
            (
                pl.col("log_format").is_null() & ~_continuation(),
                "unrecognised log prefix: expected '[YYYY-mm-dd HH:MM:SS,mmm] <logger>: [LEVEL] ', "
                "a glog prefix 'Immdd HH:MM:SS.uuuuuu <pid> <file>:<line>] ' or "
                "'[LEVEL] YYYY-mm-dd HH:MM:SS,mmm <logger>: ' before the agent message",
            ),
            (
                pl.col("log_format").is_not_null() & pl.col("ts").is_null(),
                pl.format("impossible timestamp in '{}'", pl.col("prefix")),
            ),
            (in_future(pl.col("ts"), now_utc), pl.format("timestamp in the future: {}", "ts")),
        ],
    )
    checked = _with_context(checked, source_file)
    return parsed_from(checked, schema=SCHEMA, source_file=source_file, n_ignored=n_ignored)


def _continuation() -> pl.Expr:
    """A ``global_world_sizes`` line printed without a prefix (multi-line messages)."""
    return (pl.col("event") == "world_sizes") & (pl.col("prefix").str.strip_chars() == "")


def _with_prefix(frame: pl.LazyFrame, reference: datetime) -> pl.LazyFrame:
    """``log_format``, ``ts``, ``level`` and ``logger`` from the text before the message."""
    prefix = pl.col("prefix")
    bracket = prefix.str.extract_groups(_PREFIXES["torch_bracket"])
    glog = prefix.str.extract_groups(_PREFIXES["glog"])
    v1 = prefix.str.extract_groups(_PREFIXES["elastic_v1"])
    frame = frame.with_columns(
        bracket.alias("bracket"), glog.alias("glog"), v1.alias("v1")
    ).with_columns(
        pl.when(pl.col("bracket").struct.field("1").is_not_null())
        .then(pl.lit("torch_bracket"))
        .when(pl.col("glog").struct.field("1").is_not_null())
        .then(pl.lit("glog"))
        .when(pl.col("v1").struct.field("1").is_not_null())
        .then(pl.lit("elastic_v1"))
        .alias("log_format"),
        pl.coalesce(
            pl.col("bracket").struct.field("3"),
            pl.col("glog").struct.field("1").replace_strict(_GLOG_LEVELS, default=None),
            pl.col("v1").struct.field("1"),
        ).alias("level"),
        pl.coalesce(
            pl.col("bracket").struct.field("2"),
            pl.col("glog").struct.field("3"),
            pl.col("v1").struct.field("3"),
        ).alias("logger"),
        _dated(
            pl.coalesce(pl.col("bracket").struct.field("1"), pl.col("v1").struct.field("2"))
        ).alias("dated_ts"),
        pl.col("glog").struct.field("2").alias("glog_text"),
    )
    reference_year = reference.year
    this_year = _glog_ts(pl.col("glog_text"), reference_year)
    limit = pl.lit(reference + timedelta(days=1), dtype=pl.Datetime("us", "UTC"))
    glog_ts = (
        pl.when(this_year > limit)
        .then(_glog_ts(pl.col("glog_text"), reference_year - 1))
        .otherwise(this_year)
    )
    return frame.with_columns(pl.coalesce(pl.col("dated_ts"), glog_ts).alias("ts"))


def _dated(text: pl.Expr) -> pl.Expr:
    return text.str.strptime(
        pl.Datetime("us"), "%Y-%m-%d %H:%M:%S,%3f", strict=False
    ).dt.replace_time_zone("UTC")


def _glog_ts(text: pl.Expr, year: int) -> pl.Expr:
    return (
        (pl.lit(f"{year}") + text)
        .str.strptime(pl.Datetime("us"), "%Y%m%d %H:%M:%S%.6f", strict=False)
        .dt.replace_time_zone("UTC")
    )


def _with_fields(frame: pl.LazyFrame) -> pl.LazyFrame:
    """The values each message carries (null where the event has no such value)."""
    message, event = pl.col("message"), pl.col("event")
    joined = message.str.extract_groups(
        _NODE + r"has joined round ([0-9]+) of the rendezvous '([^']+)' as rank ([0-9]+) in a "
        r"world of size ([0-9]+)\.$"
    )
    attempt = message.str.extract_groups(
        _NODE + r"attempts to join the next round of the rendezvous '([^']+)'\.$"
    )
    failed = message.str.extract_groups(
        r"^failed \(exitcode: (-?[0-9]+)\) local_rank: ([0-9]+) \(pid: ([0-9]+)\)"
    )
    restart = message.str.extract_groups(r"Worker group \w+\. ([0-9]+)/([0-9]+) attempts left")
    return frame.with_columns(
        message.str.extract(r"^\[([^\]\s]+)\] ", 1).alias("role"),
        joined.struct.field("2").cast(pl.Int32, strict=False).alias("round_joined"),
        joined.struct.field("4").cast(pl.Int32, strict=False).alias("group_rank"),
        joined.struct.field("5").cast(pl.Int32, strict=False).alias("n_nodes"),
        pl.coalesce(joined.struct.field("3"), attempt.struct.field("2")).alias("line_run_id"),
        pl.coalesce(joined.struct.field("1"), attempt.struct.field("1"))
        .str.split(".")
        .list.first()
        .alias("line_host"),
        message.str.extract(r"global_world_sizes=\[([0-9]+)", 1)
        .cast(pl.Int32, strict=False)
        .alias("world_size"),
        failed.struct.field("1").cast(pl.Int32, strict=False).alias("exit_code"),
        failed.struct.field("2").cast(pl.Int32, strict=False).alias("local_rank"),
        pl.coalesce(failed.struct.field("3"), message.str.extract(r"^Sending process ([0-9]+) ", 1))
        .cast(pl.Int64, strict=False)
        .alias("pid"),
        restart.struct.field("1").cast(pl.Int32, strict=False).alias("restarts_left"),
        restart.struct.field("2").cast(pl.Int32, strict=False).alias("max_restarts"),
        pl.when(event == "death_signal")
        .then(message.str.extract(r"^Received (\S+) death signal", 1))
        .when(event == "closing_signal")
        .then(message.str.extract(r"closing signal (\S+)$", 1))
        .alias("signal_name"),
    )


def _with_context(checked: pl.DataFrame, source_file: str) -> pl.DataFrame:
    """Round, run and host of every line from the file's rendezvous lines; continuation times.

    The values of good lines are carried forward in file order (and the first one backward, to
    the lines before it); a file without any falls back on its name, else its lines are rejects.
    """
    good = pl.col("reason").is_null()
    run_name, host_name = _names_from_path(source_file)
    filled = checked.sort("line_no").with_columns(
        pl.when(good).then(pl.col("round_joined")).forward_fill().alias("round"),
        _carried(pl.when(good).then(pl.col("line_run_id")), run_name).alias("run_id"),
        _carried(pl.when(good).then(pl.col("line_host")), host_name).alias("host"),
        # a continuation line without a prefix is as old as the line before it
        pl.when(good).then(pl.col("ts")).forward_fill().alias("filled_ts"),
    )
    return filled.with_columns(
        pl.coalesce(pl.col("ts"), pl.col("filled_ts")).alias("ts")
    ).with_columns(
        pl.when(good & (pl.col("run_id").is_null() | pl.col("host").is_null()))
        .then(
            pl.lit(
                "cannot tell the run and host: the file has no rendezvous line naming them and "
                "its name is not <run_id>__<host>.log"
            )
        )
        .when(good & pl.col("ts").is_null())
        .then(pl.lit("continuation line with no timed line before it"))
        .otherwise(pl.col("reason"))
        .alias("reason"),
    )


def _carried(values: pl.Expr, fallback: str | None) -> pl.Expr:
    return pl.coalesce(values.forward_fill(), values.backward_fill(), pl.lit(fallback, pl.String))


def _names_from_path(source_file: str) -> tuple[str | None, str | None]:
    """``(run_id, host)`` from a file name ``<run_id>__<host>.log`` (None where it is not)."""
    stem = PurePath(source_file).name
    stem = stem.removesuffix(".log")
    run_id, sep, host = stem.rpartition("__")
    if not sep or not run_id or not host:
        return None, None
    return run_id, host.split(".", 1)[0]
