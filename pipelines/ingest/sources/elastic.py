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
    Closing process 5557 via signal SIGTERM
    Unable to shutdown process 5557 via Signals.SIGTERM, forcefully exiting via Signals.SIGKILL

(the wordings torch printed from 1.9 to current 2.x: ``of fn: <name>`` for a function entrypoint,
``Received 15 death signal`` where Python formats the signal as a number), and also the exit
barrier's ``Local worker group finished (FAILED). Waiting 300 seconds for other agents to finish``
and ``Done waiting for other agents. Elapsed: 0.0007 seconds``, the rendezvous close and
heartbeat failures and a lost worker group (:data:`EVENTS`; docs/data_contract.md §7.5 tables
every wording with its torch versions). Five log prefixes are read (``log_format``)::

    torch_bracket    [2026-06-01 00:00:00,000] torch.distributed.elastic.agent.server.api: [INFO] ...
    glog             I0601 00:00:00.000000 4242 torch/distributed/elastic/agent/server/api.py:870] ...
    elastic_v1       [INFO] 2026-06-01 00:00:00,000 api: ...
    stamped_default  2026-06-01T00:00:00.000000000Z INFO:torch.distributed.elastic.agent.server.api:...
    python_default   INFO:torch.distributed.elastic.agent.server.api:...

(torch 2.0-2.2, torch 2.3 and later, torchelastic 0.2 / torch 1.9-1.10, and torch 1.x under
Python's default logging format with a collector's RFC 3339 stamp, e.g. ``kubectl logs
--timestamps``; without the stamp, ``python_default``, a line carries no time: its ``ts`` is
null, its event, exit code, restart counts and signal are read all the same.) The ``[default]``
role tag is optional (empty ``[]`` or absent in some launchers). Clocks are taken as UTC.
``glog`` prints no year: it comes from the file's mtime like traditional syslog. Only lines
holding one of the messages above are in scope; worker output and every other line are ignored.
The run (rendezvous id) and host come from the content: the file's rendezvous lines (the node
descriptor is ``<fqdn>_<pid>_<n>``), the launch configuration's ``run_id`` and the rank-0
agent's ``master_addr``; else from the ``run=`` / ``host=`` options (``relia ingest --run
--host``); else, as a documented legacy fallback, from a file name ``<run_id>__<host>.log``.
Every ``Starting worker group`` is an attempt of its own, whatever rendezvous lines precede it
(see ``_round``): logs without joined-round lines (static rendezvous, torch versions or log
levels that print none) number their rounds by the result blocks' ``restart_count``, and a first
round that printed no result block is the round before the first block's. Signals are stored by
name (``SIGTERM``), from a name, a ``Signals.`` member or a number.

Every row carries the bounds of its time, ``ts_lo <= time <= ts_hi``: its ``ts`` where it has one;
for an untimed failure line, the ``time :`` of the launcher's ``ChildFailedError`` summary entry
with its pid and exit code becomes its ``ts``; any other untimed line lies between the nearest
lines before and after it that print a time (worker output included; see
``_with_time_bounds``).
"""  # noqa: E501

from __future__ import annotations

from datetime import datetime, timedelta
from pathlib import PurePath

import polars as pl

from pipelines.ingest.sources.common import (
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
    "group_state": pl.String(),
    "ts_lo": pl.Datetime("us", "UTC"),
    "ts_hi": pl.Datetime("us", "UTC"),
    "ts_source": pl.String(),
}

_ROLE = r"(?:\[[^\]\s]*\] )?"
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
        r"failed \(exitcode: -?[0-9]+\) local_rank: [0-9]+ \(pid: [0-9]+\) of (?:binary|fn): .+$"
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
    "closing_signal": (
        r"(?:Sending process [0-9]+ closing signal|Closing process [0-9]+ via signal) [A-Z0-9]+$"
    ),
    "forced_kill": (  # torch 1.x spells it "exitting"
        r"Unable to shutdown process [0-9]+ via \S+, forcefully exitt?ing via \S+$"
    ),
    # the exit barrier: after the last round (1.9-1.13 on failure too; from 2.0 on success only)
    "group_finished": (
        r"Local worker group finished \((?:WorkerState\.)?[A-Z]+\)\. Waiting [0-9.]+ seconds for "
        r"other agents to finish$"
    ),
    "exit_barrier_done": r"Done waiting for other agents\. Elapsed: [0-9.e+-]+ seconds$",
    "exit_barrier_error": r"Error waiting on exit barrier\. Elapsed: [0-9.e+-]+ seconds$",
    "exit_barrier_signal": r"Got termination signal: \S+$",
    "rendezvous_graceful_exit": r"Rendezvous gracefully exited: .*$",
    # dynamic rendezvous: the agent's shutdown closes the rendezvous (every version from 1.9);
    # a failed close, a failed keep-alive heartbeat (the node lost the rendezvous backend)
    "rendezvous_closed": r"The node '[^']+' has closed the rendezvous '[^']+'\.$",
    "rendezvous_close_failed": (
        r"The node '[^']+' has failed to shutdown the rendezvous '[^']+' due to an error of type "
        r"\w+\.$"
    ),
    "heartbeat_failed": (
        r"The node '[^']+' has failed to send a keep-alive heartbeat to the rendezvous '[^']+' "
        r"due to an error of type \w+\.$"
    ),
    # local_elastic_agent: the worker group lost track of its processes (state UNKNOWN, the
    # agent raises); "Expected: ..., actual: ..." from torch 1.9 on
    "worker_pids_mismatch": (
        _ROLE + r"worker pids do not match process_context pids(?:\. Expected: .*, actual: .*)?$"
    ),
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
    # Python's default logging format (torch 1.x under logging.basicConfig) carries no time; a
    # collector's RFC 3339 stamp before it (kubectl logs --timestamps, journalctl -o short-iso)
    # does. A stamped line with nothing else before the message is a continuation.
    "stamped_default": (
        r"^([0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9:]{8}(?:\.[0-9]+)?(?:Z|[+-][0-9]{2}:?[0-9]{2})) +"
        r"(?:([A-Z]+):(\S+):)? *$"
    ),
    # the same format without the stamp: the line has no time (``ts`` is null), yet its event,
    # exit code and restart count are read
    "python_default": r"^(DEBUG|INFO|WARNING|ERROR|CRITICAL):([A-Za-z_][\w.]*):$",
}
# signal numbers as Linux numbers them (x86 and ARM alike for these), for messages that print a
# number (``Received 15 death signal``) and for negative worker exit codes
SIGNAL_NAMES: dict[int, str] = {
    1: "SIGHUP",
    2: "SIGINT",
    3: "SIGQUIT",
    4: "SIGILL",
    5: "SIGTRAP",
    6: "SIGABRT",
    7: "SIGBUS",
    8: "SIGFPE",
    9: "SIGKILL",
    10: "SIGUSR1",
    11: "SIGSEGV",
    12: "SIGUSR2",
    13: "SIGPIPE",
    14: "SIGALRM",
    15: "SIGTERM",
    24: "SIGXCPU",
    25: "SIGXFSZ",
}
# a line of a result block: "  <key>=<value>" (a list value may hold spaces), with or without a
# log prefix; any key, so a field a torch version adds does not end the block
_BLOCK_LINE = r"(?:^|\s)([a-z_]+)=(\[[^\]]*\]|\S*)\s*$"
_RESULT_HEADER = r"Rendezvous complete for workers\. Result:\s*$"
_LAUNCH_RUN_ID = r"(?:^|\s)run_id +: (\S+)\s*$"
_LOOPBACK = r"^(?:localhost|127\.[0-9.]+|::1|0\.0\.0\.0|\[::1\])$"
_ANY_PREFIX = "|".join(f"(?:{pattern})" for pattern in _PREFIXES.values())
_GLOG_LEVELS = {"D": "DEBUG", "I": "INFO", "W": "WARNING", "E": "ERROR", "C": "CRITICAL"}
_NODE = r"The node '([^']+)_[0-9]+_[0-9]+' "


def parse(
    data: bytes,
    *,
    source_file: str,
    file_mtime: datetime | None = None,
    now: datetime | None = None,
    host: str | None = None,
    run: str | None = None,
    year: int | None = None,
) -> Parsed:
    """Parse one torchrun agent log.

    Parameters
    ----------
    data
        The file's bytes.
    source_file
        Path recorded on every row and reject; a name ``<run_id>__<host>.log`` gives the run and
        host when neither the content nor ``run`` / ``host`` does (legacy fallback).
    file_mtime
        The file's modification time, for the year of ``glog`` lines (which print none): the
        mtime's year, or the year before when that would put the line more than a day after it.
        Default: ``now``.
    now
        Reference time for the "not in the future" check (default: current UTC time).
    host
        The node the agent ran on, for logs that do not name it (``relia ingest --host``).
    run
        The run (rendezvous id), for logs that do not name it (``relia ingest --run``).
    year
        The year the log ends in (``relia ingest --year``, ``RELIA_LOG_YEAR``), for ``glog``
        lines; wins over ``file_mtime``. A line takes it, or the year before when that would put
        the line more than a day after the log's last ``glog`` line (a log that spans New Year).

    Returns
    -------
    Parsed
        ``rows`` with the ``raw_elastic_events`` columns (:data:`SCHEMA`): ``run_id``, ``host``
        (short name), ``ts``, ``level``, ``logger``, ``event`` (a key of :data:`EVENTS`),
        ``role``, ``round`` (the attempt round the agent was in: one per worker-group start,
        numbered by the joined-round lines, else the result blocks' ``restart_count``, else
        the starts so far minus one; see ``_round``),
        ``group_rank`` and ``n_nodes`` (joined lines, result blocks),
        ``world_size`` (workers, from ``global_world_sizes``), ``local_rank``, ``exit_code``
        (as printed: negative for a signal) and ``pid`` (failed workers), ``restarts_left`` and
        ``max_restarts`` (restart lines), ``signal_name`` (by name: death and closing signals,
        forced kills, a failed worker's negative exit code),
        ``message``, ``log_format``, ``group_state`` (the state a restart or exit-barrier line
        names), ``ts_lo`` / ``ts_hi`` (bounds of the line's time; both ``ts`` where it is known,
        null on a side without a bound) and ``ts_source`` (``line``, ``continuation``,
        ``child_failed_error``; null without ``ts``).

    Notes
    -----
    Rejects: in-scope lines that are not UTF-8, whose prefix is none of the five formats (a
    ``global_world_sizes`` continuation may have none: it takes the time of the agent line
    before, null after a ``python_default`` one),
    whose time is impossible or in the future, or whose run and host cannot be told (the reason
    names the option that fixes it).

    Run and host, first found wins: the node descriptor and rendezvous id of the file's
    rendezvous lines (dynamic rendezvous); the launch configuration's ``run_id : <id>`` line
    (not ``none``) and, for the agent of group rank 0, the ``master_addr`` of its result block
    (unless a loopback address); the ``run`` / ``host`` options; the file name
    ``<run_id>__<host>.log``. The fields of a ``Rendezvous complete`` result block
    (``restart_count``, ``master_addr``, ``group_rank``, ``group_world_size``) are read onto the
    block's ``rendezvous_complete`` row; those lines are not rows themselves (only
    ``global_world_sizes`` is, as ``world_sizes``).

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
    blocks = _result_blocks(lines)
    launch_run = _launch_run_id(lines)
    in_scope = lines.filter(line.str.contains(_SCOPE)).join(blocks, on="line_no", how="left")
    n_ignored = lines.height - in_scope.height
    frame = _with_event(in_scope)
    frame = _with_prefix(frame, reference, year)
    frame = _with_fields(frame)
    checked = with_reasons(
        frame,
        [
            (~pl.col("utf8_ok"), "line is not valid UTF-8"),
            (
                pl.col("log_format").is_null() & ~_continuation(),
                "unrecognised log prefix: expected '[YYYY-mm-dd HH:MM:SS,mmm] <logger>: [LEVEL] ', "
                "a glog prefix 'Immdd HH:MM:SS.uuuuuu <pid> <file>:<line>] ', "
                "'[LEVEL] YYYY-mm-dd HH:MM:SS,mmm <logger>: ' or an RFC 3339 time before the agent "
                "message (Python's default 'LEVEL:<logger>:' prints no time: collect the log with "
                "timestamps, e.g. kubectl logs --timestamps)",
            ),
            (
                pl.col("log_format").is_not_null()
                & (pl.col("log_format") != "python_default")
                & pl.col("ts").is_null(),
                pl.format("impossible timestamp in '{}'", pl.col("prefix")),
            ),
            (in_future(pl.col("ts"), now_utc), pl.format("timestamp in the future: {}", "ts")),
        ],
    )
    checked = _with_context(checked, source_file, launch_run=launch_run, host=host, run=run)
    checked = _with_time_bounds(checked, lines, now_utc)
    return parsed_from(checked, schema=SCHEMA, source_file=source_file, n_ignored=n_ignored)


def _with_event(in_scope: pl.DataFrame) -> pl.LazyFrame:
    """Return the lines with their ``event`` and the ``prefix`` and ``message`` around it.

    The role tag (``[default] ``) before the message stays with the message when the rest of
    the prefix is a known log prefix.
    """
    line = pl.col("line")
    # find each message without its optional role tag: "[INFO] Starting worker group" must not
    # read the level as a role; the tag is taken back from the prefix below
    event_at = [
        line.str.find(pattern.removeprefix(_ROLE)).alias(name) for name, pattern in EVENTS.items()
    ]
    return (
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
            line.str.head(pl.col("at")).alias("full_prefix"),
            line.str.slice(pl.col("at")).alias("core"),
        )
        .with_columns(pl.col("full_prefix").str.extract(r"(\[[^\]\s]*\] )$", 1).alias("tag"))
        .with_columns(
            pl.col("full_prefix")
            .str.head(
                pl.col("full_prefix").str.len_chars().cast(pl.Int64)
                - pl.col("tag").str.len_chars().cast(pl.Int64)
            )
            .alias("untagged")
        )
        .with_columns(
            (pl.col("tag").is_not_null() & pl.col("untagged").str.contains(_ANY_PREFIX)).alias(
                "tagged"
            )
        )
        .with_columns(
            pl.when(pl.col("tagged"))
            .then(pl.col("untagged"))
            .otherwise(pl.col("full_prefix"))
            .alias("prefix"),
            pl.when(pl.col("tagged"))
            .then(pl.col("tag") + pl.col("core"))
            .otherwise(pl.col("core"))
            .alias("message"),
        )
    )


def _result_blocks(lines: pl.DataFrame) -> pl.DataFrame:
    """Return the fields of every ``Rendezvous complete`` result block, keyed by its header's line.

    A block is the header and the ``key=value`` lines right after it (with or without a log
    prefix: torch 2.3+ prints the block as one multi-line message); any other line ends it.
    """
    line = pl.col("line")
    # cheap literal tests first: worker output can be millions of lines
    candidates = lines.lazy().filter(
        line.str.contains("=", literal=True) | line.str.contains("Result:", literal=True)
    )
    field = line.str.extract_groups(_BLOCK_LINE)
    marked = (
        candidates.with_columns(
            line.str.contains(_RESULT_HEADER).alias("is_header"),
            field.struct.field("1").alias("key"),
            field.struct.field("2").alias("value"),
        )
        .filter(pl.col("is_header") | pl.col("key").is_not_null())
        .with_columns(
            # a block runs over consecutive lines from its header
            (pl.col("is_header") | (pl.col("line_no").diff() != 1).fill_null(value=True))
            .cum_sum()
            .alias("segment")
        )
        .with_columns(
            pl.col("line_no").filter(pl.col("is_header")).first().over("segment").alias("block")
        )
        .filter(pl.col("block").is_not_null() & ~pl.col("is_header"))
    )

    def value(key: str) -> pl.Expr:
        return pl.col("value").filter(pl.col("key") == key).first()

    return (
        marked.group_by("block")
        .agg(
            value("restart_count").cast(pl.Int32, strict=False).alias("block_restart_count"),
            value("master_addr").alias("block_master_addr"),
            value("group_rank").cast(pl.Int32, strict=False).alias("block_group_rank"),
            value("group_world_size").cast(pl.Int32, strict=False).alias("block_world"),
        )
        .rename({"block": "line_no"})
        .with_columns(pl.col("line_no").cast(lines.schema["line_no"]))
        .collect()
    )


def _launch_run_id(lines: pl.DataFrame) -> str | None:
    """Return the run id of the launch configuration torchrun prints first (``run_id : <id>``)."""
    found = (
        lines.lazy()
        .filter(pl.col("line").str.contains("run_id", literal=True))
        .select(pl.col("line").str.extract(_LAUNCH_RUN_ID, 1).alias("run_id"))
        .filter(pl.col("run_id").is_not_null() & (pl.col("run_id") != "none"))
        .collect()
        .to_series()
    )
    return found[0] if len(found) else None


def _continuation() -> pl.Expr:
    """Return a ``global_world_sizes`` line printed without a prefix (multi-line messages)."""
    return (pl.col("event") == "world_sizes") & (pl.col("prefix").str.strip_chars() == "")


def _with_prefix(frame: pl.LazyFrame, reference: datetime, year: int | None) -> pl.LazyFrame:
    """``log_format``, ``ts``, ``level`` and ``logger`` from the text before the message.

    ``glog`` times take ``year`` (the last ``glog`` line dated in it is the reference), else
    ``reference``'s year; the year before for a line more than a day after the reference.
    """
    prefix = pl.col("prefix")
    bracket = prefix.str.extract_groups(_PREFIXES["torch_bracket"])
    glog = prefix.str.extract_groups(_PREFIXES["glog"])
    v1 = prefix.str.extract_groups(_PREFIXES["elastic_v1"])
    stamped = prefix.str.extract_groups(_PREFIXES["stamped_default"])
    untimed = prefix.str.extract_groups(_PREFIXES["python_default"])
    frame = frame.with_columns(
        bracket.alias("bracket"),
        glog.alias("glog"),
        v1.alias("v1"),
        stamped.alias("stamped"),
        untimed.alias("untimed"),
    ).with_columns(
        pl.when(pl.col("bracket").struct.field("1").is_not_null())
        .then(pl.lit("torch_bracket"))
        .when(pl.col("glog").struct.field("1").is_not_null())
        .then(pl.lit("glog"))
        .when(pl.col("v1").struct.field("1").is_not_null())
        .then(pl.lit("elastic_v1"))
        .when(pl.col("stamped").struct.field("1").is_not_null())
        .then(pl.lit("stamped_default"))
        .when(pl.col("untimed").struct.field("1").is_not_null())
        .then(pl.lit("python_default"))
        .alias("log_format"),
        pl.coalesce(
            pl.col("bracket").struct.field("3"),
            pl.col("glog").struct.field("1").replace_strict(_GLOG_LEVELS, default=None),
            pl.col("v1").struct.field("1"),
            pl.col("stamped").struct.field("2"),
            pl.col("untimed").struct.field("1"),
        ).alias("level"),
        pl.coalesce(
            pl.col("bracket").struct.field("2"),
            pl.col("glog").struct.field("3"),
            pl.col("v1").struct.field("3"),
            pl.col("stamped").struct.field("3"),
            pl.col("untimed").struct.field("2"),
        ).alias("logger"),
        pl.coalesce(
            _dated(
                pl.coalesce(pl.col("bracket").struct.field("1"), pl.col("v1").struct.field("2"))
            ),
            pl.col("stamped")
            .struct.field("1")
            .str.strptime(pl.Datetime("us", "UTC"), "%Y-%m-%dT%H:%M:%S%.f%#z", strict=False),
        ).alias("dated_ts"),
        pl.col("glog").struct.field("2").alias("glog_text"),
    )
    reference_year = reference.year if year is None else year
    this_year = _glog_ts(pl.col("glog_text"), reference_year)
    limit = (
        pl.lit(reference + timedelta(days=1), dtype=pl.Datetime("us", "UTC"))
        if year is None
        else this_year.drop_nulls().last() + pl.duration(days=1)
    )
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
    """Return the values each message carries (null where the event has no such value)."""
    message, event = pl.col("message"), pl.col("event")
    joined = message.str.extract_groups(
        _NODE + r"has joined round ([0-9]+) of the rendezvous '([^']+)' as rank ([0-9]+) in a "
        r"world of size ([0-9]+)\.$"
    )
    attempt = message.str.extract_groups(
        _NODE + r"(?:attempts to join the next round of|has closed|has failed to shutdown|has "
        r"failed to send a keep-alive heartbeat to) the rendezvous '([^']+)'"
    )
    failed = message.str.extract_groups(
        r"^failed \(exitcode: (-?[0-9]+)\) local_rank: ([0-9]+) \(pid: ([0-9]+)\)"
    )
    restart = message.str.extract_groups(r"Worker group \w+\. ([0-9]+)/([0-9]+) attempts left")
    group_state = pl.coalesce(
        message.str.extract(r"Worker group (\w+)\. [0-9]+/[0-9]+ attempts left", 1),
        message.str.extract(r"^Local worker group finished \((?:WorkerState\.)?([A-Z]+)\)", 1),
    )
    return frame.with_columns(
        message.str.extract(r"^\[([^\]\s]+)\] ", 1).alias("role"),  # null when absent or []
        joined.struct.field("2").cast(pl.Int32, strict=False).alias("round_joined"),
        pl.coalesce(
            joined.struct.field("4").cast(pl.Int32, strict=False), pl.col("block_group_rank")
        ).alias("group_rank"),
        pl.coalesce(
            joined.struct.field("5").cast(pl.Int32, strict=False), pl.col("block_world")
        ).alias("n_nodes"),
        pl.col("block_restart_count").alias("restart_count_here"),
        # the rank-0 agent's master_addr is its own address (torch picks its FQDN unless told)
        pl.when(
            (pl.col("block_group_rank") == 0)
            & ~pl.col("block_master_addr").str.contains(_LOOPBACK).fill_null(value=True)
        )
        .then(_short_host(pl.col("block_master_addr")))
        .alias("master_host"),
        pl.coalesce(joined.struct.field("3"), attempt.struct.field("2")).alias("line_run_id"),
        _short_host(pl.coalesce(joined.struct.field("1"), attempt.struct.field("1"))).alias(
            "line_host"
        ),
        message.str.extract(r"global_world_sizes=\[([0-9]+)", 1)
        .cast(pl.Int32, strict=False)
        .alias("world_size"),
        failed.struct.field("1").cast(pl.Int32, strict=False).alias("exit_code"),
        failed.struct.field("2").cast(pl.Int32, strict=False).alias("local_rank"),
        pl.coalesce(failed.struct.field("3"), message.str.extract(_SIGNALLED_PID, 1))
        .cast(pl.Int64, strict=False)
        .alias("pid"),
        restart.struct.field("1").cast(pl.Int32, strict=False).alias("restarts_left"),
        restart.struct.field("2").cast(pl.Int32, strict=False).alias("max_restarts"),
        group_state.alias("group_state"),
        _signal_name(
            pl.when(event == "death_signal")
            .then(message.str.extract(r"^Received (\S+) death signal", 1))
            .when(event == "closing_signal")
            .then(message.str.extract(r"(?:closing signal|via signal) (\S+)$", 1))
            .when(event == "forced_kill")
            .then(message.str.extract(r"forcefully exitt?ing via (\S+)$", 1))
            .when(event == "exit_barrier_signal")
            .then(message.str.extract(r"^Got termination signal: (\S+)$", 1))
            .when((event == "worker_failed") & failed.struct.field("1").str.starts_with("-"))
            .then(failed.struct.field("1").str.strip_prefix("-"))
        ).alias("signal_name"),
    )


_SIGNALLED_PID = r"^(?:Sending process|Closing process|Unable to shutdown process) ([0-9]+) "


def _signal_name(text: pl.Expr) -> pl.Expr:
    """Return a signal's name (``SIGTERM``) from ``Signals.SIGTERM``, ``SIGTERM`` or ``15``.

    Python prints a ``signal.Signals`` member as ``Signals.SIGTERM`` (``str`` before 3.11) or
    ``15`` (f-strings, and ``str`` from 3.11); a number with no name in :data:`SIGNAL_NAMES`
    stays a number.
    """
    bare = text.str.strip_prefix("Signals.")
    named = bare.replace_strict(
        {str(number): name for number, name in SIGNAL_NAMES.items()}, default=None
    )
    return pl.coalesce(named, bare)


def _with_context(
    checked: pl.DataFrame,
    source_file: str,
    *,
    launch_run: str | None,
    host: str | None,
    run: str | None,
) -> pl.DataFrame:
    """Round (joined round, else restart count), run and host of every line; continuation times.

    The values of good lines are carried forward in file order (and the first one backward, to
    the lines before it). Run and host fall back on the launch configuration and the rank-0
    master address, then on the ``run`` / ``host`` options, then on the file name; lines whose
    run or host is still unknown are rejects whose reason names the option to pass.
    """
    good = pl.col("reason").is_null()
    name_run, name_host = _names_from_path(source_file)
    filled = checked.sort("line_no").with_columns(
        _round(good).alias("round"),
        _carried(pl.when(good).then(pl.col("line_run_id")), launch_run, run, name_run).alias(
            "run_id"
        ),
        _carried(
            pl.when(good).then(pl.coalesce("line_host", "master_host")), host, name_host
        ).alias("host"),
        # a continuation line without a prefix is as old as the agent line before it (which
        # may have no time either)
        pl.col("ts")
        .gather(
            pl.when(good & pl.col("log_format").is_not_null())
            .then(pl.int_range(pl.len()))
            .forward_fill()
        )
        .alias("filled_ts"),
        # an untimed (python_default) line before a continuation gives it no time, but a home
        pl.when(good & pl.col("log_format").is_not_null())
        .then(pl.lit(value=True))
        .forward_fill()
        .fill_null(value=False)
        .alias("after_agent_line"),
    )
    missing = pl.col("run_id").is_null(), pl.col("host").is_null()
    return filled.with_columns(
        pl.when(pl.col("log_format").is_null())
        .then(pl.col("filled_ts"))
        .otherwise(pl.col("ts"))
        .alias("ts")
    ).with_columns(
        pl.when(good & missing[0] & missing[1])
        .then(
            pl.lit(
                "cannot tell the run and host: the log names neither (no rendezvous line); pass "
                "--run and --host, set an elastic path pattern such as {host}/{run}.log "
                "(RELIA_PATH_PATTERNS), or name the file <run>__<host>.log"
            )
        )
        .when(good & missing[0])
        .then(pl.lit(f"run unknown: pass --run, {_PATTERN_HINT.format('run')}"))
        .when(good & missing[1])
        .then(pl.lit(f"host unknown: pass --host, {_PATTERN_HINT.format('host')}"))
        .when(
            good
            & pl.col("ts").is_null()
            & (pl.col("log_format").is_not_null() | ~pl.col("after_agent_line"))
            & (pl.col("log_format") != "python_default").fill_null(value=True)
        )
        .then(pl.lit("continuation line with no timed line before it"))
        .otherwise(pl.col("reason"))
        .alias("reason"),
    )


def _round(good: pl.Expr) -> pl.Expr:
    """Return the attempt round of every line: one per worker-group start, aligned on markers.

    A marker is a line that names its round: the joined-round lines where the log prints any,
    else the ``restart_count`` of the result blocks. From a marker on, the round is the marker's,
    plus one for each further ``Starting worker group`` before the next marker that follows the
    end of a round (a start the agent printed no rendezvous line for is an attempt all the same;
    two agents' starts that one file merges, with no end between them, are one round). Before the
    first marker, the rounds count back from it by the starts in between (a first round that
    printed no result block is round ``restart_count - 1`` of the next block); a log without
    markers counts its starts from 0. Lines before both the first marker and the first start have
    no round.
    """
    joined = pl.when(good).then(pl.col("round_joined"))
    blocks = pl.when(good).then(pl.col("restart_count_here"))
    marker = pl.when(joined.is_not_null().any()).then(joined).otherwise(blocks)
    is_marker = marker.is_not_null()
    segment = is_marker.cum_sum()
    is_start = good & (pl.col("event") == "workers_started")
    ends = (good & pl.col("event").is_in(_ROUND_ENDS)).cast(pl.Int32).cum_sum()
    # the end count and segment of the latest start before each line
    ends_at_last_start = pl.when(is_start).then(ends).forward_fill().shift(1)
    segment_at_last_start = pl.when(is_start).then(segment).forward_fill().shift(1)
    new_round = is_start & (
        ends_at_last_start.is_null()
        | (ends > ends_at_last_start)
        | (segment != segment_at_last_start)
    )
    # rounds started up to and including each line
    starts = new_round.cast(pl.Int32).cum_sum()
    starts_at_marker = pl.when(is_marker).then(starts)
    # the round before the first marker: the first marker's, less the starts before it
    first_round = (marker.drop_nulls().first() - starts_at_marker.drop_nulls().first()).fill_null(0)
    base_round = marker.forward_fill().fill_null(first_round)
    base_starts = starts_at_marker.forward_fill().fill_null(0)
    later_starts = (starts - base_starts - 1).clip(lower_bound=0)
    return pl.when((segment > 0) | (starts > 0)).then(base_round + later_starts).cast(pl.Int32)


_ROUND_ENDS = [
    "worker_failed",
    "group_restart",
    "group_stopping",
    "group_succeeded",
    "group_finished",
    "membership_change",
    "death_signal",
    "worker_pids_mismatch",
]
"""Events that end a round: a ``Starting worker group`` after one starts the next round."""


_PATTERN_HINT = (
    "set an elastic path pattern with {{{}}} (RELIA_PATH_PATTERNS) or name the file "
    "<run>__<host>.log"
)


def _short_host(name: pl.Expr) -> pl.Expr:
    """Return a host name without its domain; an IP address as it is."""
    return (
        pl.when(name.str.contains(r"^[0-9.]+$"))
        .then(name)
        .otherwise(name.str.split(".").list.first())
    )


def _carried(values: pl.Expr, *fallbacks: str | None) -> pl.Expr:
    return pl.coalesce(
        values.forward_fill(),
        values.backward_fill(),
        *(pl.lit(fallback, pl.String) for fallback in fallbacks),
    )


def _names_from_path(source_file: str) -> tuple[str | None, str | None]:
    """``(run_id, host)`` from a file name ``<run_id>__<host>.log`` (None where it is not)."""
    stem = PurePath(source_file).name
    stem = stem.removesuffix(".log")
    run_id, sep, host = stem.rpartition("__")
    if not sep or not run_id or not host:
        return None, None
    return run_id, host.split(".", 1)[0]


# the fields of a failure in the ``ChildFailedError`` summary the launcher raises at the end
# (``time      : 2022-03-15_10:32:04`` from torch 1.10, ``time: ...`` in 1.9; then host, rank and
# ``exitcode  : 1 (pid: 5555)``): the failure's time (the error file's, else when the agent saw
# it), whole seconds, in the agent's local clock
_FAILURE_TIME = r"(?:^|\s)time *: ?([0-9]{4}-[0-9]{2}-[0-9]{2})_([0-9]{2}:[0-9]{2}:[0-9]{2})\s*$"
_FAILURE_EXIT = r"(?:^|\s)exitcode *: ?(-?[0-9]+) \(pid: ([0-9]+)\)\s*$"
# a line that opens with a date and time (worker output such as "2021-08-13 10:46:03 - INFO - ",
# "[2022-03-15 10:32:04,123] ...", a collector's RFC 3339 stamp): a clock mark for the bounds
_LEADING_TIME = (
    r"^[\[(]?([0-9]{4}-[0-9]{2}-[0-9]{2})[ T]([0-9]{2}:[0-9]{2}:[0-9]{2})(?:[.,]([0-9]{1,9}))?"
    r" ?(Z|[+-][0-9]{2}:?[0-9]{2})?(?:[^0-9:.,]|$)"
)
_UTC = pl.Datetime("us", "UTC")


def _failure_stamps(lines: pl.DataFrame, now_utc: datetime) -> pl.DataFrame:
    """``(pid, exit_code, stamp_ts)`` of every failure the ``ChildFailedError`` summary lists.

    A failure's ``exitcode : C (pid: P)`` line takes the ``time :`` line at most four lines
    before it (one block: time, host, rank, exitcode); a time in the future is left out.
    """
    line = pl.col("line")
    exits = (
        lines.lazy()
        .filter(line.str.contains("exitcode", literal=True))
        .select(
            "line_no",
            line.str.extract(_FAILURE_EXIT, 1).cast(pl.Int32, strict=False).alias("exit_code"),
            line.str.extract(_FAILURE_EXIT, 2).cast(pl.Int64, strict=False).alias("pid"),
        )
        .filter(pl.col("pid").is_not_null())
        .collect()
    )
    block = pl.concat([exits["line_no"] - back for back in range(1, 5)])
    times = (
        lines.lazy()
        .filter(pl.col("line_no").is_in(block.implode()))
        .select(
            "line_no",
            (line.str.extract(_FAILURE_TIME, 1) + "T" + line.str.extract(_FAILURE_TIME, 2))
            .str.strptime(pl.Datetime("us"), "%Y-%m-%dT%H:%M:%S", strict=False)
            .dt.replace_time_zone("UTC")
            .alias("stamp_ts"),
        )
        .filter(pl.col("stamp_ts").is_not_null() & (pl.col("stamp_ts") <= now_utc))
        .collect()
    )
    if times.is_empty() or exits.is_empty():
        return pl.DataFrame(schema={"pid": pl.Int64(), "exit_code": pl.Int32(), "stamp_ts": _UTC})
    return (
        exits.sort("line_no")
        .join_asof(times.sort("line_no"), on="line_no", strategy="backward", tolerance=4)
        .filter(pl.col("stamp_ts").is_not_null())
        .unique(subset=["pid", "exit_code"], keep="first", maintain_order=True)
        .select("pid", "exit_code", "stamp_ts")
    )


def _mark_times(lines: pl.DataFrame) -> pl.DataFrame:
    """``(line_no, mark_ts)`` of lines that open with a date and time (null when impossible)."""
    line = pl.col("line")
    parts = line.str.extract_groups(_LEADING_TIME)
    text = (
        parts.struct.field("1")
        + "T"
        + parts.struct.field("2")
        + "."
        + parts.struct.field("3").fill_null("0")
        + parts.struct.field("4").fill_null("Z")
    )
    return lines.select(
        "line_no", text.str.strptime(_UTC, "%Y-%m-%dT%H:%M:%S%.f%#z", strict=False).alias("mark_ts")
    )


def _with_time_bounds(frame: pl.DataFrame, lines: pl.DataFrame, now_utc: datetime) -> pl.DataFrame:
    """``ts`` of untimed failures from the ``ChildFailedError`` summary; ``ts_lo`` / ``ts_hi``.

    A ``worker_failed`` line without a time takes the ``time :`` of the summary's failure with
    its pid and exit code (``ts_source`` ``child_failed_error``): the time torch recorded for
    the failure, in whole seconds (the worker's error file, else when the agent saw it), not the
    time the line was printed. A line with a time has ``ts_lo = ts_hi = ts``; a line without one
    is bounded by the nearest clock marks before and after it in the file (the times of the
    file's timed lines, worker output included; a summary's time at its failure line bounds the
    lines after it from below only, as the closing lines printed before a failure line come
    after the failure): either bound null where there is no mark on that side, both null where
    they contradict each other (``ts_lo > ts_hi``). Logs whose lines all print a time skip the
    search.
    """
    good = pl.col("reason").is_null()
    untimed_failure = good & pl.col("ts").is_null() & (pl.col("event") == "worker_failed")
    stamp = pl.lit(None, _UTC)
    if frame.select(untimed_failure.any()).item():
        stamps = _failure_stamps(lines, now_utc)
        frame = frame.join(stamps, on=["pid", "exit_code"], how="left").sort("line_no")
        stamp = pl.col("stamp_ts")
    stamped = untimed_failure & stamp.is_not_null()
    frame = frame.with_columns(
        pl.when(stamped).then(stamp).otherwise(pl.col("ts")).alias("ts"),
        pl.when(good & pl.col("ts").is_not_null())
        .then(
            pl.when(pl.col("log_format").is_null())
            .then(pl.lit("continuation"))
            .otherwise(pl.lit("line"))
        )
        .when(stamped)
        .then(pl.lit("child_failed_error"))
        .alias("ts_source"),
    ).drop("stamp_ts", strict=False)
    untimed = frame.filter(good & pl.col("ts").is_null()).select("line_no")
    if untimed.is_empty():
        return frame.with_columns(pl.col("ts").alias("ts_lo"), pl.col("ts").alias("ts_hi"))
    bounds = _bounds(frame.filter(good & pl.col("ts").is_not_null()), untimed, lines)
    return (
        frame.join(bounds, on="line_no", how="left")
        .sort("line_no")
        .with_columns(
            pl.coalesce("ts", "ts_lo").alias("ts_lo"), pl.coalesce("ts", "ts_hi").alias("ts_hi")
        )
    )


def _bounds(timed: pl.DataFrame, untimed: pl.DataFrame, lines: pl.DataFrame) -> pl.DataFrame:
    """``(line_no, ts_lo, ts_hi)`` of the untimed rows: the nearest clock marks around each.

    Marks are the timed rows and the lines that open with a date and time; only the marks
    nearest to an untimed row have their time read.
    """
    key = lines.schema["line_no"]
    opening = (
        lines.lazy()
        .filter(pl.col("line").str.contains(_LEADING_TIME))
        .select(
            pl.col("line_no"),
            pl.lit(None, _UTC).alias("mark_ts"),
            pl.lit(value=False).alias("lower_only"),
        )
        .collect()
    )
    own = timed.select(
        pl.col("line_no").cast(key),
        pl.col("ts").alias("mark_ts"),
        (pl.col("ts_source") == "child_failed_error").alias("lower_only"),
    )
    marks = (
        pl.concat([opening, own])
        .group_by("line_no")
        .agg(pl.col("mark_ts").drop_nulls().first(), pl.col("lower_only").any())
        .with_columns(pl.col("line_no").alias("at"))
        .sort("line_no")
    )
    rows = untimed.select(pl.col("line_no").cast(key)).sort("line_no")
    before = rows.join_asof(
        marks.drop("lower_only"), on="line_no", strategy="backward", allow_exact_matches=False
    )
    # a summary's time is the failure's, which the agent's closing lines printed before its
    # failure line follow: a bound from below for the lines after that line only
    after = rows.join_asof(
        marks.filter(~pl.col("lower_only")).drop("lower_only"),
        on="line_no",
        strategy="forward",
        allow_exact_matches=False,
    )
    needed = pl.concat([before, after]).filter(pl.col("mark_ts").is_null())["at"].drop_nulls()
    read = _mark_times(lines.filter(pl.col("line_no").is_in(needed.implode())))

    def mark_time(side: pl.DataFrame, name: str) -> pl.DataFrame:
        return side.join(
            read.rename({"line_no": "at", "mark_ts": "read_ts"}), on="at", how="left"
        ).select("line_no", pl.coalesce("mark_ts", "read_ts").alias(name))

    lo, hi = mark_time(before, "lo"), mark_time(after, "hi")
    consistent = pl.col("lo").is_null() | pl.col("hi").is_null() | (pl.col("lo") <= pl.col("hi"))
    return lo.join(hi, on="line_no").select(
        pl.col("line_no"),
        pl.when(consistent).then(pl.col("lo")).alias("ts_lo"),
        pl.when(consistent).then(pl.col("hi")).alias("ts_hi"),
    )
