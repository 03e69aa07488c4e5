"""Parse NVIDIA Xid lines out of kernel logs into ``raw_xid_events`` rows.

A node's kernel log comes in one of six styles (``log_format``)::

    dmesg_t      [Mon Jun  1 00:00:00 2026] NVRM: Xid (PCI:0000:18:00): 79, pid=..., name=..., ...
    dmesg_rel    [ 1234.567890] NVRM: Xid ...   (seconds since boot: needs the ``boot_time`` option)
    journal_iso  2026-06-01T00:00:00+0000 gpu0001 kernel: NVRM: Xid ...
    syslog       Jun  1 00:00:00 gpu0001 kernel: [ 1234.567890] NVRM: Xid ...
    rfc3339      2026-06-01T00:00:00.000000+00:00 gpu0001 kernel: NVRM: Xid ...
    dmesg_iso    kern  :warn  : 2026-06-01T00:00:00,000000+00:00 NVRM: Xid ...

Only lines holding ``NVRM: Xid`` are in scope; everything else (GSP dumps, stack traces, other
drivers) is counted as ignored. The shape of each line is checked with anchored regexes, which the
regex engine runs without captures; the values are then cut out with plain string operations, all
as polars expressions over the whole file.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import polars as pl

from pipelines.ingest.sources.common import (
    GENERIC_LOG_NAMES,
    Parsed,
    empty_file_reject,
    empty_rows,
    empty_to_null,
    find_lines,
    in_future,
    parsed_from,
    path_host,
    utc_now,
    with_reasons,
)

SCHEMA: dict[str, pl.DataType] = {
    "source_file": pl.String(),
    "line_no": pl.Int64(),
    "host": pl.String(),
    "ts": pl.Datetime("us", "UTC"),
    "pci_bus_id": pl.String(),
    "xid": pl.Int32(),
    "pid": pl.Int32(),
    "process_name": pl.String(),
    "message": pl.String(),
    "log_format": pl.String(),
}

_HOST_UNKNOWN = (
    "host unknown: this style prints none and the file name is a generic log name; pass --host, "
    "set a kernel path pattern with {host} (RELIA_PATH_PATTERNS) or put the log in a folder "
    "named after its host"
)
_NO_HOST = "-relia-no-host-"
"""Stands for the host of a journald record without ``_HOSTNAME`` until the fallback fills it."""
_JOURNAL_KEYS = (b'"__REALTIME_TIMESTAMP"', b'"MESSAGE"')

_FOLDERS = frozenset({"kernel"})
"""The landing folder of kernel logs: never a host name."""

MARKER = "NVRM: Xid"
"""Lines holding this text are in scope."""

_KMSG_STAMP = r"(?:\[ *[0-9]+\.[0-9]+\] )?"  # "[ 1234.567890] " that syslog and journald may keep
_HOST = r"[!-~]+"  # printable ASCII
_ISO_DATE_TIME = r"[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}"
_CLOCK = r"[0-9]{2}:[0-9]{2}:[0-9]{2}"
_PREFIXES: dict[str, str] = {
    "dmesg_t": rf"^\[[A-Z][a-z]{{2}} [A-Z][a-z]{{2}} [ 0-9][0-9] {_CLOCK} [0-9]{{4}}\] $",
    "dmesg_rel": r"^\[ *[0-9]{1,9}\.[0-9]{1,9}\] $",
    "journal_iso": (
        rf"^{_ISO_DATE_TIME}(?:\.[0-9]{{1,9}})?[+-][0-9]{{4}} {_HOST} kernel: {_KMSG_STAMP}$"
    ),
    "syslog": rf"^[A-Z][a-z]{{2}} [ 0-9][0-9] {_CLOCK} {_HOST} kernel: {_KMSG_STAMP}$",
    "rfc3339": (
        rf"^{_ISO_DATE_TIME}(?:\.[0-9]{{1,9}})?(?:Z|[+-][0-9]{{2}}:[0-9]{{2}}) {_HOST} kernel: "
        rf"{_KMSG_STAMP}$"
    ),
    "dmesg_iso": (
        rf"^(?:[a-z]+ *:[a-z]+ *: )?{_ISO_DATE_TIME},[0-9]{{6}}[+-][0-9]{{2}}:[0-9]{{2}} $"
    ),
}
"""What comes before ``NVRM: Xid`` in each style (anchored at both ends, ASCII only)."""

_FIRST_CHARS: dict[str, set[str]] = {
    "dmesg_t": {"["},
    "dmesg_rel": {"["},
    "journal_iso": {"digit"},
    "rfc3339": {"digit"},
    "dmesg_iso": {"digit", "lower"},
    "syslog": {"upper"},
}
"""What each style's first character can be (``digit``, ``lower``, ``upper`` or itself)."""

_PCI_PART = r"^ \((?:PCI:)?[0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}(?:\.[0-7])?\): "
_PCI_AND_CODE = _PCI_PART + r"[0-9]{1,9},"
"""What follows ``NVRM: Xid``: the PCI address in brackets, then the code and its comma."""
_WINDOW = 96
"""Characters after the marker that hold the PCI id, code, pid and name (a comm is at most 15)."""
_ISO_FORMAT = "%Y-%m-%dT%H:%M:%S%.f%#z"
_NO_BOOT_TIME = (
    "time '{}' is seconds since boot and the boot time is unknown: give --boot-time "
    "(RELIA_BOOT_TIME) or collect with dmesg -T / journalctl"
)


def parse(
    data: bytes,
    *,
    source_file: str,
    file_mtime: datetime | None = None,
    now: datetime | None = None,
    host: str | None = None,
    year: int | None = None,
    boot_time: datetime | None = None,
    dated: tuple[int, datetime, int, datetime] | None = None,
) -> Parsed:
    """Parse the Xid lines of one kernel log.

    Parameters
    ----------
    data
        The file's bytes.
    source_file
        Path recorded on every row and reject. For styles that print no host (``dmesg_t``,
        ``dmesg_iso``) and no ``host`` option, the host is its name up to the first dot, unless
        that is a generic log name (``dmesg.log``, ``kern.log.1``): then its folder
        (``kernel/gpu0001/dmesg.log``); with neither, the line is a reject naming ``--host``.
    file_mtime
        The file's modification time, for the year of traditional syslog lines (which print
        none): the mtime's year, or the year before when that would put the line more than a
        day after the mtime. Default: ``now``.
    now
        Reference time for the "not in the future" check (default: current UTC time). Lines
        more than one day after it are rejects.
    host
        The node the log is from, for styles that print no host (``relia ingest --host``); a
        host the line prints wins.
    year
        The year the log ends in (``relia ingest --year``, ``RELIA_LOG_YEAR``), for syslog lines;
        wins over ``file_mtime``. A line takes it, or the year before when that would put the
        line more than a day after the log's last line (a log that spans New Year).
    boot_time
        When the node booted (``relia ingest --boot-time``, ``RELIA_BOOT_TIME``), for ``dmesg``
        lines stamped in seconds since boot (``[ 1234.567890]``): their time is ``boot_time``
        plus those seconds. Without it such lines are rejects naming the option.
    dated
        The first and last line of the file that open with a full date, all in one year
        (``(line_no, time, line_no, time)``, :func:`pipelines.ingest.landing.dated_lines`):
        without ``year``, syslog lines take that year, wins over ``file_mtime``. A line
        before the first dated line that would be more than a day after it takes the year
        before; a line after the last one that would be more than a day before it, the year
        after.

    Returns
    -------
    Parsed
        ``rows`` with the ``raw_xid_events`` columns (:data:`SCHEMA`): ``host``, ``ts`` (UTC;
        ``dmesg -T`` and syslog clocks are taken as UTC), ``pci_bus_id`` (``0000:18:00``, lower
        case), ``xid``, ``pid`` and ``process_name`` (null where the driver printed none or
        ``<unknown>``), ``message`` (the text after them) and ``log_format``. Lines without
        ``NVRM: Xid`` are only counted in ``n_ignored``.

    Notes
    -----
    Rejects: lines with ``NVRM: Xid`` that hold bytes that are not UTF-8, have an unknown
    timestamp/host prefix, a malformed or truncated PCI id or Xid code, an impossible timestamp,
    or a timestamp in the future.

    Examples
    --------
    >>> line = b"[Mon Jun  1 00:00:00 2026] NVRM: Xid (PCI:0000:18:00): 79, pid=1, name=x, Off."
    >>> parse(line, source_file="gpu0001.log").rows.select("host", "xid", "message").row(0)
    ('gpu0001', 79, 'Off.')
    """
    options = {
        "file_mtime": file_mtime,
        "host": host,
        "year": year,
        "boot_time": boot_time,
        "dated": dated,
    }
    return parse_many([(data, source_file, options)], now=now)[0]


def parse_many(
    files: list[tuple[bytes, str, dict[str, Any]]], *, now: datetime | None = None
) -> list[Parsed]:
    """Parse several kernel logs in one pass: one polars plan for all their Xid lines.

    ``files`` holds ``(data, source_file, options)`` with the keyword options of :func:`parse`
    (``file_mtime``, ``host``, ``year``, ``boot_time``, ``dated``); the results come in the same
    order and equal :func:`parse` file by file.
    A plan costs milliseconds while a log holds a few Xid lines, so a fleet's logs are parsed
    together (the marker is still searched in each file's bytes on its own).
    """
    now_utc = utc_now(now)
    out: list[Parsed | None] = [None] * len(files)
    for i, (data, source_file, _options) in enumerate(files):
        if not data:
            out[i] = Parsed(empty_rows(SCHEMA), empty_file_reject(source_file), 0)
    parsed = [i for i, (data, _source_file, _options) in enumerate(files) if data]
    if not parsed:
        return [p for p in out if p is not None]
    in_scope, ignored = _in_scope_lines([files[i] for i in parsed], now_utc)
    checked = _checked_lines(in_scope, now_utc)
    for i, result in zip(parsed, _per_file(checked, ignored), strict=True):
        out[i] = result
    return [p for p in out if p is not None]


def _in_scope_lines(
    files: list[tuple[bytes, str, dict[str, Any]]], now_utc: datetime
) -> tuple[pl.DataFrame, list[int]]:
    """Return the Xid lines of non-empty ``files`` (``_file`` indexes them) and each one's ignored.

    Each line carries its file's reference time (its mtime, else ``now_utc``), its ``year``
    option (``_year``, null without one), its ``boot_time`` (``_boot``), host from the
    options or the path (``_stem``) and source file; ``_raw`` is the JSON record of a line rebuilt
    from a journald export.
    """
    line_nos: list[int] = []
    lines: list[str] = []
    ok: list[bool] = []
    counts: list[int] = []  # in-scope lines per file
    ignored: list[int] = []
    references: list[datetime] = []
    years: list[int | None] = []
    boots: list[datetime | None] = []
    dates: list[tuple[int, datetime, int, datetime] | tuple[None, None, None, None]] = []
    stems: list[str | None] = []
    raws: list[str | None] = []  # the JSON record, for lines rebuilt from journald exports
    needle = MARKER.encode()
    for data, source_file, options in files:
        before = len(lines)
        if _is_journal_json(data):
            n_lines = _journal_lines(data, line_nos, lines, ok, raws)
        else:
            n_lines = find_lines(data, needle, line_nos, lines, ok)
            raws.extend([None] * (len(lines) - before))
        mtime = options.get("file_mtime")
        counts.append(len(lines) - before)
        ignored.append(n_lines - counts[-1])
        references.append(utc_now(mtime) if mtime is not None else now_utc)
        years.append(options.get("year"))
        boot = options.get("boot_time")
        boots.append(utc_now(boot) if boot is not None else None)
        dates.append(options.get("dated") or (None, None, None, None))
        stems.append(options.get("host") or _path_host(source_file))
    per_line = [k for k, n in enumerate(counts) for _ in range(n)]
    in_scope = pl.DataFrame(
        {"line_no": line_nos, "line": lines, "utf8_ok": ok, "_file": per_line, "_raw": raws},
        schema={
            "line_no": pl.Int64,
            "line": pl.String,
            "utf8_ok": pl.Boolean,
            "_file": pl.Int32,
            "_raw": pl.String,
        },
    )
    per_file = pl.DataFrame(
        {
            "_file": range(len(files)),
            "_reference": references,
            "_year": years,
            "_boot": boots,
            "_first_dated_line": [d[0] for d in dates],
            "_first_dated": [d[1] for d in dates],
            "_last_dated_line": [d[2] for d in dates],
            "_last_dated": [d[3] for d in dates],
            "_stem": stems,
            "_source_file": [source_file for _data, source_file, _options in files],
        },
        schema={
            "_file": pl.Int32,
            "_reference": pl.Datetime("us", "UTC"),
            "_year": pl.Int32,
            "_boot": pl.Datetime("us", "UTC"),
            "_first_dated_line": pl.Int64,
            "_first_dated": pl.Datetime("us", "UTC"),
            "_last_dated_line": pl.Int64,
            "_last_dated": pl.Datetime("us", "UTC"),
            "_stem": pl.String,
            "_source_file": pl.String,
        },
    )
    return in_scope.join(per_file, on="_file", how="left", maintain_order="left"), ignored


def _checked_lines(in_scope: pl.DataFrame, now_utc: datetime) -> pl.DataFrame:
    """Return the lines read in their log style, with a ``reason`` on those that are rejects."""
    # A file holds one style: guess them from a sample, look again only if lines were missed.
    styles = _candidate_styles(in_scope.gather_every(max(1, in_scope.height // 64)))
    checked = _checked(in_scope, styles, now_utc)
    missed = checked.filter(pl.col("log_format").is_null() & pl.col("utf8_ok"))
    more = [s for s in _candidate_styles(missed) if s not in styles]
    if more:
        checked = _checked(in_scope, styles + more, now_utc)
    journal = pl.col("_raw").is_not_null()
    checked = checked.with_columns(
        pl.when(journal)
        .then(pl.lit("journal_json"))
        .otherwise(pl.col("log_format"))
        .alias("log_format"),
        pl.when(journal & (pl.col("host") == _NO_HOST))
        .then(pl.col("_stem"))
        .otherwise(pl.col("host"))
        .alias("host"),
        pl.coalesce(pl.col("_raw"), pl.col("line")).alias("line"),
    )
    if checked.filter(pl.col("reason").is_null()).select(pl.col("host").is_null().any()).item():
        checked = checked.with_columns(
            pl.when(pl.col("reason").is_null() & pl.col("host").is_null())
            .then(pl.lit(_HOST_UNKNOWN))
            .otherwise(pl.col("reason"))
            .alias("reason")
        )
    return checked


def _per_file(checked: pl.DataFrame, ignored: list[int]) -> list[Parsed]:
    """Return each file's result: rows and rejects of all files at once, then cut per file."""
    # splitting is cheap, a plan is not
    split = parsed_from(
        checked,
        schema=SCHEMA | {"_file": pl.Int32()},
        source_file=pl.col("_source_file"),
        n_ignored=0,
    )
    reject_files = checked.filter(pl.col("reason").is_not_null())["_file"]
    row_parts = split.rows.partition_by("_file", as_dict=True, include_key=False)
    reject_parts = split.rejects.with_columns(reject_files).partition_by(
        "_file", as_dict=True, include_key=False
    )
    no_rows, no_rejects = split.rows.head(0).drop("_file"), split.rejects.head(0)
    return [
        Parsed(row_parts.get((k,), no_rows), reject_parts.get((k,), no_rejects), n_ignored)
        for k, n_ignored in enumerate(ignored)
    ]


def _path_host(source_file: str) -> str | None:
    """Return :func:`~pipelines.ingest.sources.common.path_host` of a kernel log, no path object.

    The usual name (``gpu0001.log``) gives its stem by string operations; other names take the
    general rule.
    """
    name = source_file.rpartition("/")[2]
    stem = name.split(".", 1)[0]
    if stem and stem.lower() not in GENERIC_LOG_NAMES:
        return stem
    return path_host(source_file, source_folders=_FOLDERS)


def _is_journal_json(data: bytes) -> bool:
    """``journalctl -o json`` export: one JSON object a line with journald's fields."""
    head = data[:4096].lstrip()
    return head.startswith(b"{") and all(key in head for key in _JOURNAL_KEYS)


def _message_key(head: bytes) -> bytes:
    """Return ``"MESSAGE"`` and the separator before its value as ``head`` writes them.

    ``"MESSAGE"`` and the separator before its value as ``head`` writes them (journalctl's
    ``"MESSAGE" : `` when the head shows none).
    """
    at = head.find(b'"MESSAGE"')
    if at == -1:
        return b'"MESSAGE" : '
    end = at + len(b'"MESSAGE"')
    while end < len(head) and head[end : end + 1] in b" :":
        end += 1
    return head[at:end]


def _journal_lines(
    data: bytes, line_nos: list[int], lines: list[str], ok: list[bool], raws: list[str | None]
) -> int:
    """Append the Xid records of a ``journalctl -o json`` export as kernel-log lines.

    Each record holding ``NVRM: Xid`` in its ``MESSAGE`` (a string, or an array of bytes when the
    text is not UTF-8) becomes ``<__REALTIME_TIMESTAMP as RFC 3339> <_HOSTNAME> kernel:
    <MESSAGE>``, parsed like an RFC 3339 syslog line; ``raws`` gets the JSON record itself (what a
    reject shows). Other records are out of scope; a record that is not JSON but mentions the
    marker is kept as is (it becomes a reject). Returns the number of lines.
    """
    import json

    # Only candidate lines are cut out and decoded (found by bytes.find, as for plain logs): those
    # holding the marker, and those whose MESSAGE is an array of bytes (not valid UTF-8).
    found: dict[int, str] = {}
    n_lines = 0
    # journalctl prints `"KEY" : value`; a re-serialised export may write `"KEY": value` or
    # `"KEY":value`: the byte-array needle is spelled as the head spells MESSAGE (one scan)
    for needle in (MARKER.encode(), _message_key(data[:4096]) + b"["):
        if needle != MARKER.encode() and needle not in data:
            continue
        nos: list[int] = []
        texts: list[str] = []
        n_lines = find_lines(data, needle, nos, texts, [])
        found.update(zip(nos, texts, strict=True))
    for line_no in sorted(found):
        text = found[line_no]
        try:
            record = json.loads(text)
            message = record["MESSAGE"]
            if isinstance(message, list):
                message = bytes(message).decode("utf-8", errors="backslashreplace")
            stamp = datetime.fromtimestamp(int(record["__REALTIME_TIMESTAMP"]) / 1e6, tz=UTC)
        except (ValueError, KeyError, TypeError, OverflowError):
            if MARKER in text:
                line_nos.append(line_no)
                lines.append(text)
                ok.append(True)
                raws.append(text)
            continue
        if MARKER not in message:
            continue
        host = str(record.get("_HOSTNAME") or _NO_HOST).replace(" ", "_")
        message = message.rstrip("\n").replace("\n", " ")
        line_nos.append(line_no)
        lines.append(f"{stamp.isoformat(timespec='microseconds')} {host} kernel: {message}")
        ok.append(True)
        raws.append(text)
    return n_lines


def _checked(in_scope: pl.DataFrame, styles: list[str], now: datetime) -> pl.DataFrame:
    """Parse and check the in-scope lines, assuming the prefixes are of ``styles``.

    Parse and check the in-scope lines, assuming the prefixes are of ``styles``; each line
    carries its file's ``_reference`` time (the syslog year) and ``_stem`` (host fallback).
    """
    # One lazy plan, collected once; each step is a column the next steps read, so every string
    # is cut once (nested expressions would be recomputed per use). Long text is copied once, for
    # the message; everything else is cut from the short prefix and a short window after the
    # marker. Offsets are byte offsets, which equal character offsets because the prefix regexes
    # accept ASCII only.
    line = pl.col("line")
    frame = (
        in_scope.lazy()
        .with_columns(line.str.find(MARKER, literal=True).alias("at"))
        .with_columns(
            line.str.head(pl.col("at")).alias("prefix"),
            line.str.slice(pl.col("at") + len(MARKER), _WINDOW).alias("window"),
        )
        .with_columns(
            _log_format(pl.col("prefix"), styles).alias("log_format"),
            pl.col("window").str.find("): ", literal=True).alias("pci_end"),
        )
    )
    frame = _with_xid_fields(_with_time_and_host(frame, styles))
    window = pl.col("window")
    return with_reasons(
        frame,
        [
            (~pl.col("utf8_ok"), "line is not valid UTF-8"),
            (
                pl.col("log_format").is_null(),
                "unrecognised line prefix: expected a dmesg -T, journalctl short-iso, syslog, "
                "RFC 3339 or dmesg --time-format iso timestamp before 'NVRM: Xid'",
            ),
            (
                ~window.str.contains(_PCI_AND_CODE) | pl.col("xid").is_null(),
                pl.when(window.str.contains(_PCI_PART))
                .then(pl.lit("malformed or truncated Xid code"))
                .otherwise(pl.lit("malformed or truncated PCI bus id")),
            ),
            (
                (pl.col("log_format") == "dmesg_rel") & pl.col("_boot").is_null(),
                pl.format(_NO_BOOT_TIME, pl.col("ts_text")),
            ),
            (pl.col("ts").is_null(), pl.format("unparseable timestamp '{}'", pl.col("ts_text"))),
            (pl.col("host").is_null(), _HOST_UNKNOWN),
            (
                in_future(pl.col("ts"), now),
                pl.format("timestamp in the future: {}", pl.col("ts_text")),
            ),
        ],
    )


def _candidate_styles(in_scope: pl.DataFrame) -> list[str]:
    """Styles whose prefix can start with one of the first characters seen in the file.

    A file holds one style, so this usually leaves one (three for a leading digit) and the other
    styles' regexes and timestamp formats are never run.
    """
    firsts = in_scope.select(pl.col("line").str.head(1).unique()).to_series().to_list()
    kinds = {"digit" if c.isdigit() else "lower" if c.islower() else c for c in firsts if c}
    kinds |= {"upper" for c in firsts if c and c.isupper()}
    return [style for style, starts in _FIRST_CHARS.items() if kinds & starts]


def _log_format(prefix: pl.Expr, styles: list[str]) -> pl.Expr:
    """Return the style whose prefix regex matches (null for none)."""
    chain: pl.Expr = pl.lit(None, pl.String)
    for style in reversed(styles):
        chain = pl.when(prefix.str.contains(_PREFIXES[style])).then(pl.lit(style)).otherwise(chain)
    return chain


def _with_time_and_host(frame: pl.LazyFrame, styles: list[str]) -> pl.LazyFrame:
    """Add ``ts_text`` (as printed), ``ts`` (UTC) and ``host``.

    ``dmesg -T`` and syslog clocks are taken as UTC; ISO styles carry their offset. The host is
    the token before `` kernel:`` where the style prints one, else the file's stem.
    """
    prefix, style = pl.col("prefix"), pl.col("log_format")
    texts: list[tuple[list[str], pl.Expr]] = []
    hosts: list[tuple[list[str], pl.Expr]] = []
    if "dmesg_t" in styles:
        texts.append((["dmesg_t"], prefix.str.slice(5, 20)))  # "[Mon Jun  1 00:00:00 2026] "
    if "dmesg_rel" in styles:
        texts.append((["dmesg_rel"], prefix.str.strip_chars("[] ")))  # "[ 1234.567890] "
    iso: list[str] = [s for s in ("journal_iso", "rfc3339", "dmesg_iso") if s in styles]
    if iso:
        texts.append((iso, prefix.str.extract(r"([0-9]{4}-[0-9]{2}-[0-9]{2}T[^ ]+)", 1)))
        with_host: list[str] = [s for s in iso if s != "dmesg_iso"]
        if with_host:
            hosts.append((with_host, prefix.str.splitn(" ", 3).struct.field("field_1")))
    if "syslog" in styles:
        texts.append((["syslog"], prefix.str.slice(0, 15)))  # "Jun  1 00:00:00"
        hosts.append((["syslog"], prefix.str.slice(16).str.splitn(" ", 2).struct.field("field_0")))
    frame = frame.with_columns(
        _by_style(style, texts).cast(pl.String).alias("ts_text"),
        pl.coalesce(_by_style(style, hosts).cast(pl.String), pl.col("_stem")).alias("host"),
    )
    text = pl.col("ts_text")
    values: list[tuple[list[str], pl.Expr]] = []
    if "dmesg_t" in styles:
        # "Jun  1 00:00:00 2026": the date part repeats from line to line, so the strptime cache
        # takes it; the clock is plain arithmetic
        day = _naive_utc(text.str.slice(0, 7) + text.str.slice(16, 4), "%b %e %Y")
        values.append((["dmesg_t"], day + pl.duration(seconds=_clock_s(text, 7))))
    if "dmesg_rel" in styles:
        since_boot = (text.cast(pl.Float64, strict=False) * 1e6).round().cast(pl.Int64)
        values.append((["dmesg_rel"], pl.col("_boot") + pl.duration(microseconds=since_boot)))
    if iso:
        value = text.str.replace(",", ".", literal=True).str.strptime(
            pl.Datetime("us", "UTC"), _ISO_FORMAT, strict=False
        )
        values.append((iso, value))
    if "syslog" in styles:
        by_reference = _syslog_ts(text, _syslog_reference(text, style))
        syslog = pl.when(pl.col("_first_dated").is_null()).then(by_reference)
        values.append((["syslog"], syslog.otherwise(_dated_syslog_ts(text))))
    return frame.with_columns(_by_style(style, values).cast(pl.Datetime("us", "UTC")).alias("ts"))


def _clock_s(text: pl.Expr, start: int) -> pl.Expr:
    """Seconds since midnight of the ``HH:MM:SS`` at ``start``; null unless a real clock time."""
    hours = text.str.slice(start, 2).cast(pl.Int64, strict=False)
    minutes = text.str.slice(start + 3, 2).cast(pl.Int64, strict=False)
    seconds = text.str.slice(start + 6, 2).cast(pl.Int64, strict=False)
    valid = (hours < 24) & (minutes < 60) & (seconds < 61)
    return pl.when(valid).then(hours * 3600 + minutes * 60 + seconds)


def _by_style(style: pl.Expr, branches: list[tuple[list[str], pl.Expr]]) -> pl.Expr:
    chain: pl.Expr = pl.lit(None)
    for names, value in reversed(branches):
        matches = style == names[0] if len(names) == 1 else style.is_in(names)
        chain = pl.when(matches).then(value).otherwise(chain)
    return chain


def _naive_utc(text: pl.Expr, fmt: str) -> pl.Expr:
    return text.str.strptime(pl.Datetime("us"), fmt, strict=False).dt.replace_time_zone("UTC")


def _syslog_reference(text: pl.Expr, style: pl.Expr) -> pl.Expr:
    """Return the moment a file's syslog years are told from.

    With a ``year`` option (``_year``) that is the file's last syslog line, dated in that year;
    without one, the file's ``_reference`` (its mtime, else now).
    """
    day, clock = text.str.slice(0, 6), pl.duration(seconds=_clock_s(text, 7))
    in_year = _naive_utc(day + " " + pl.col("_year").cast(pl.String), "%b %e %Y") + clock
    log_end = pl.when(style == "syslog").then(in_year).drop_nulls().last().over("_file")
    return pl.when(pl.col("_year").is_not_null()).then(log_end).otherwise(pl.col("_reference"))


def _dated_syslog_ts(text: pl.Expr) -> pl.Expr:
    """Return a year-less syslog time in the year of the file's dated lines (``dated`` option).

    A line before the first dated line more than a day after it is in the year before; a line
    after the last one more than a day before it, in the year after.
    """
    first, last, line_no = pl.col("_first_dated"), pl.col("_last_dated"), pl.col("line_no")
    year = first.dt.year()
    in_year = _in_year(text, year)
    day = pl.duration(days=1)
    return (
        pl.when((line_no < pl.col("_first_dated_line")) & (in_year > first + day))
        .then(_in_year(text, year - 1))
        .when((line_no > pl.col("_last_dated_line")) & (in_year < last - day))
        .then(_in_year(text, year + 1))
        .otherwise(in_year)
    )


def _in_year(text: pl.Expr, year: pl.Expr) -> pl.Expr:
    """Return the syslog time ``text`` (``Jun  1 00:00:00``) in ``year``."""
    day = _naive_utc(text.str.slice(0, 6) + " " + year.cast(pl.String), "%b %e %Y")
    return day + pl.duration(seconds=_clock_s(text, 7))


def _syslog_ts(text: pl.Expr, reference: pl.Expr) -> pl.Expr:
    """Return a year-less syslog time in the year that puts it near ``reference``.

    At most one day after ``reference``.
    """
    latest = reference + pl.duration(days=1)
    day = text.str.slice(0, 6)  # "Jun  1"
    year = reference.dt.year()
    clock = pl.duration(seconds=_clock_s(text, 7))
    this_year = _naive_utc(day + " " + year.cast(pl.String), "%b %e %Y") + clock
    year_before = _naive_utc(day + " " + (year - 1).cast(pl.String), "%b %e %Y") + clock
    return pl.when(this_year <= latest).then(this_year).otherwise(year_before)


def _with_xid_fields(frame: pl.LazyFrame) -> pl.LazyFrame:
    """Add ``pci_bus_id``, ``xid``, ``pid``, ``process_name`` and ``message``.

    They follow the marker: `` (PCI:0000:18:00): 79, pid=1, name=x, text``; pid and name are
    optional (older drivers print neither, some print only the pid). The short tokens are cut
    from the window after the marker; the message, the only long part, with one slice of the
    line at the offset their lengths give.
    """
    window, pci_end = pl.col("window"), pl.col("pci_end")
    frame = frame.with_columns(
        window.str.slice(2, pci_end - 2).alias("pci_text"),
        window.str.slice(pci_end + 3).str.splitn(", ", 4).alias("tokens"),
    )
    token = pl.col("tokens").struct.field
    frame = frame.with_columns(
        token("field_0").alias("code_text"),
        token("field_1").str.starts_with("pid=").alias("has_pid"),
    ).with_columns(
        pl.when(pl.col("has_pid"))
        .then(token("field_2"))
        .otherwise(token("field_1"))
        .alias("maybe_name"),
    )
    has_pid, code_text, maybe_name = pl.col("has_pid"), pl.col("code_text"), pl.col("maybe_name")
    has_name = maybe_name.str.starts_with("name=")
    name = maybe_name.str.slice(5)
    message_at = (
        pl.col("at")
        + len(MARKER)
        + pci_end
        + 3
        + code_text.str.len_chars()
        + 2
        + pl.when(has_pid).then(token("field_1").str.len_chars() + 2).otherwise(0)
        + pl.when(has_name).then(maybe_name.str.len_chars() + 2).otherwise(0)
    )
    pci = pl.col("pci_text").str.strip_prefix("PCI:")
    pci = pl.when(pci.str.slice(-2, 1) == ".").then(pci.str.head(-2)).otherwise(pci)
    return frame.with_columns(
        pci.str.tail(10).str.to_lowercase().alias("pci_bus_id"),  # 4 domain digits of 4 or 8
        code_text.cast(pl.Int32, strict=False).alias("xid"),
        pl.when(has_pid)
        .then(token("field_1").str.slice(4).str.strip_chars("'").cast(pl.Int32, strict=False))
        .alias("pid"),
        pl.when(has_name & (name != "<unknown>")).then(empty_to_null(name)).alias("process_name"),
        _nonempty(pl.col("line").str.slice(message_at)).alias("message"),
    )


def _nonempty(text: pl.Expr) -> pl.Expr:
    return pl.when(text.str.len_bytes() > 0).then(text)


def _before(text: pl.Expr, mark: str) -> pl.Expr:
    pos = text.str.find(mark, literal=True)
    return pl.when(pos.is_null()).then(text).otherwise(text.str.head(pos))
