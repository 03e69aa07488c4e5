"""What every parser shares: the ``Parsed`` result, the reject schema and line splitting.

A parser turns the bytes of one landing file into ``(rows, rejects, n_ignored)``. Every line in its
scope becomes exactly one row or one reject, so ``n_read = rows.height + rejects.height``; lines out
of scope (blank lines, headers, unrelated kernel noise) are only counted in ``n_ignored``.
"""

from __future__ import annotations

import codecs
import csv
from datetime import UTC, datetime, timedelta
from pathlib import PurePath
from typing import TYPE_CHECKING, NamedTuple

import numpy as np
import polars as pl

if TYPE_CHECKING:
    from collections.abc import Sequence

UTC_TS = pl.Datetime("us", "UTC")

COMPONENT_CLASSES: tuple[str, ...] = (
    "gpu",
    "gpu_memory",
    "gpu_sram",
    "gsp",
    "nvlink",
    "pcie",
    "nic",
    "network",
    "host_cpu",
    "host_memory",
    "storage",
    "power",
    "cooling",
    "chassis",
    "driver",
    "nccl",
    "application",
    "maintenance",
    "software",
    "human_error",
    "facilities",
    "unknown",
)
"""The component taxonomy (DESIGN.md §3); ``sql/seeds/dim_component_class.csv`` lists the same
(tests/pipelines/sources/test_seeds.py). Repair tickets' classes are checked against the seed at
validation; fault-log mappings name a class of this list."""

REJECT_SCHEMA: dict[str, pl.DataType] = {
    "source_file": pl.String(),
    "line_no": pl.Int64(),
    "raw": pl.String(),
    "reason": pl.String(),
}

_UNIT_SEPARATOR = b"\x1f"

_LINE_SCHEMA: dict[str, pl.DataType] = {
    "line_no": pl.Int64(),
    "line": pl.String(),
    "utf8_ok": pl.Boolean(),
}


class Parsed(NamedTuple):
    """The outcome of parsing one file."""

    rows: pl.DataFrame
    rejects: pl.DataFrame
    n_ignored: int

    @property
    def n_read(self) -> int:
        """Lines in scope: every one of them is a row or a reject."""
        return self.rows.height + self.rejects.height


COMPRESSION_MAGIC: tuple[tuple[bytes, str], ...] = (
    (b"\x1f\x8b", "gzip"),
    (b"BZh", "bzip2"),
    (b"\xfd7zXZ\x00", "xz"),
    (b"\x28\xb5\x2f\xfd", "zstd"),
)
"""The magic bytes that open a compressed file, and its codec (:mod:`pipelines.ingest.archives`)."""


def codec_of(data: bytes) -> str | None:
    """Return the compression a file's magic bytes announce.

    ``gzip``, ``bzip2``, ``xz`` or ``zstd``.
    """
    for magic, codec in COMPRESSION_MAGIC:
        if data.startswith(magic):
            return codec
    return None


def rejects_frame(records: list[tuple[str, int, str, str]]) -> pl.DataFrame:
    """Build a reject frame from ``(source_file, line_no, raw, reason)`` tuples."""
    return pl.DataFrame(records, schema=REJECT_SCHEMA, orient="row")


def empty_file_reject(source_file: str) -> pl.DataFrame:
    """Return the single reject an empty file produces (``line_no = 0``)."""
    return rejects_frame([(source_file, 0, "", "empty file")])


_ZLIB_HEADERS = (b"\x78\x01", b"\x78\x5e", b"\x78\x9c", b"\x78\xda")
"""First bytes polars' CSV reader takes for a zlib stream (and would inflate)."""


def split_lines(data: bytes) -> pl.DataFrame:
    r"""Split raw bytes into numbered lines.

    Returns a frame with ``line_no`` (1-based), ``line`` (decoded; undecodable bytes are kept as
    ``\xNN`` escapes) and ``utf8_ok`` (False where the line held bytes that are not UTF-8).

    Notes
    -----
    Lines are cut by polars' CSV reader (one column, no quoting, the ASCII unit separator as the
    never-seen field separator) when the file is UTF-8 without a byte-order mark or unit separator;
    otherwise the whole buffer is decoded once and split. A byte that is not UTF-8 never swallows a
    newline (``\n`` is ASCII), so lines of the decoded text are exactly the
    decoded raw lines; only lines showing a ``\x`` escape are checked against their raw bytes.
    """
    if not data:
        return pl.DataFrame(schema=_LINE_SCHEMA)
    # polars' reader would decompress bytes that start like an archive (its sniffing includes
    # zlib's two-byte headers, which text can begin with: "x^..."): text only
    if (
        not data.startswith(codecs.BOM_UTF8)
        and _UNIT_SEPARATOR not in data
        and not codec_of(data)
        and data[:2] not in _ZLIB_HEADERS
    ):
        try:
            frame = pl.read_csv(
                data,
                has_header=False,
                separator=_UNIT_SEPARATOR.decode(),
                quote_char=None,
                schema={"line": pl.String},
                encoding="utf8",
                raise_if_empty=False,
            )
        except pl.exceptions.PolarsError:
            pass  # not UTF-8: take the decoding path below
        else:
            line = pl.col("line").fill_null("")
            return frame.select(
                pl.int_range(1, pl.len() + 1, dtype=pl.Int64).alias("line_no"),
                line.str.strip_chars_end("\r") if b"\r" in data else line,
                pl.lit(True).alias("utf8_ok"),
            )
    try:
        text = data.decode("utf-8")
        all_ok = True
    except UnicodeDecodeError:
        text = data.decode("utf-8", errors="backslashreplace")
        all_ok = False
    frame = (
        pl.DataFrame({"line": [text]}, schema={"line": pl.String})
        .select(pl.col("line").str.split("\n").explode().str.strip_chars_end("\r"))
        .with_row_index("line_no", offset=1)
        .with_columns(pl.col("line_no").cast(pl.Int64))
    )
    if text.endswith("\n"):
        frame = frame.head(-1)
    if all_ok:
        ok = pl.lit(True)
    else:
        suspects = frame.filter(pl.col("line").str.contains("\\x", literal=True))["line_no"]
        raw_lines = data.split(b"\n")
        bad = [n for n in suspects.to_list() if not _is_utf8(raw_lines[n - 1])]
        ok = ~pl.col("line_no").is_in(pl.Series(bad, dtype=pl.Int64).implode())
    return frame.select("line_no", "line", ok.alias("utf8_ok"))


def lines_containing(data: bytes, marker: str) -> tuple[pl.DataFrame, int]:
    r"""Return the lines holding ``marker`` and the number of lines.

    The lines are as :func:`split_lines` gives them.

    For a log where few lines matter this never builds a frame of every line: the marker is
    searched in the bytes (``bytes.find`` runs at memory speed) and only the lines holding it are
    cut out, numbered and decoded (undecodable bytes kept as ``\xNN`` escapes, with
    ``utf8_ok`` False), exactly as :func:`split_lines` would give them.
    """
    line_nos: list[int] = []
    lines: list[str] = []
    ok: list[bool] = []
    n_lines = find_lines(data, marker.encode(), line_nos, lines, ok)
    found = pl.DataFrame({"line_no": line_nos, "line": lines, "utf8_ok": ok}, schema=_LINE_SCHEMA)
    return found, n_lines


_NUMPY_COUNT_BYTES = 4096
"""Spans at least this long have their newlines counted by numpy (several times faster than
``bytes.count`` on a long span; slower on a short one, for its call overhead)."""


def _newlines(data: bytes, start: int, end: int) -> int:
    """Return the number of newlines in ``data[start:end]``."""
    if end - start < _NUMPY_COUNT_BYTES:
        return data.count(b"\n", start, end)
    return int(np.count_nonzero(np.frombuffer(data, np.uint8, end - start, start) == 10))


def find_lines(
    data: bytes, needle: bytes, line_nos: list[int], lines: list[str], ok: list[bool]
) -> int:
    """Append the lines of ``data`` holding ``needle`` to three lists.

    Append the lines of ``data`` holding ``needle`` to the three lists (number, decoded text,
    valid UTF-8) and return the file's number of lines: :func:`lines_containing` without the
    frame, for callers that gather many files' lines into one. The marker is found by
    ``bytes.find``; only the lines holding it are cut out and decoded, and the newlines of long
    spans between them are counted by numpy.
    """
    if not data:
        return 0
    line_no, counted_to = 1, 0  # newlines are counted once, between matches and after the last
    pos = data.find(needle)
    while pos != -1:
        start = data.rfind(b"\n", 0, pos) + 1
        end = data.find(b"\n", pos)
        end = len(data) if end == -1 else end
        line_no += _newlines(data, counted_to, start)
        counted_to = start
        raw = data[start:end].rstrip(b"\r")
        try:
            lines.append(raw.decode("utf-8"))
            ok.append(True)
        except UnicodeDecodeError:
            lines.append(raw.decode("utf-8", errors="backslashreplace"))
            ok.append(False)
        line_nos.append(line_no)
        pos = data.find(needle, end)
    return line_no - 1 + _newlines(data, counted_to, len(data)) + (not data.endswith(b"\n"))


def _is_utf8(line: bytes) -> bool:
    try:
        line.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


# --- Building blocks of the parsers' vectorised checks -------------------------------------------

FUTURE_TOLERANCE = timedelta(days=1)
EARLIEST = datetime(2000, 1, 1, tzinfo=UTC)
"""The earliest plausible telemetry time; :mod:`pipelines.ingest.quality` checks raw rows by it."""


def utc_now(now: datetime | None) -> datetime:
    """``now`` as an aware UTC datetime (current time when None; naive values are taken as UTC)."""
    if now is None:
        return datetime.now(UTC)
    return now.replace(tzinfo=UTC) if now.tzinfo is None else now.astimezone(UTC)


GENERIC_LOG_NAMES = frozenset(
    {
        "dmesg",
        "kern",
        "kernel",
        "syslog",
        "messages",
        "journal",
        "system",
        "all",
        "log",
        "current",
        "daemon",
        "warn",
        "debug",
    }
)
"""File names (up to the first dot) that name a kind of log, not the host it came from."""


def path_host(source_file: str, *, source_folders: frozenset[str] = frozenset()) -> str | None:
    """Return the host a log's path names, for lines that print none.

    The host a log's path names, for lines that print none: the file name up to its first
    dot (``gpu0001.log.1`` → ``gpu0001``) unless it is a generic log name (``dmesg``,
    ``kern.log.1``, :data:`GENERIC_LOG_NAMES`), then the folder (``kernel/gpu0001/dmesg.log`` →
    ``gpu0001``) unless that is a source folder of the landing; else None.
    """
    path = PurePath(source_file)
    stem = path.name.split(".", 1)[0]
    if stem and stem.lower() not in GENERIC_LOG_NAMES:
        return stem
    folder = path.parent.name
    if folder and folder not in source_folders and folder.lower() not in GENERIC_LOG_NAMES:
        return folder
    return None


def file_stem(source_file: str) -> str:
    """Return the file name up to its first dot: ``/landing/kernel/gpu0001.log.1`` → ``gpu0001``."""
    return PurePath(source_file).name.split(".", 1)[0]


Check = tuple[pl.Expr, "pl.Expr | str"]
"""``(failed, reason)``: a boolean expression (null counts as passing) and the reason (text or a
string expression, e.g. ``pl.format("malformed State '{}'", pl.col("State"))``)."""


def first_reason(*checks: Check) -> pl.Expr:
    """Return the reason of the first failing check, or null when every check passes."""
    return pl.coalesce(
        [
            pl.when(failed).then(reason if isinstance(reason, pl.Expr) else pl.lit(reason))
            for failed, reason in checks
        ]
    )


def with_reasons(frame: pl.LazyFrame, checks: Sequence[Check]) -> pl.DataFrame:
    """Collect ``frame`` with a ``reason`` column: the reason of each line's first failing check.

    Same result as ``frame.with_columns(first_reason(*checks).alias("reason"))``, but only the
    index of the first failing check is computed for every line; reason texts are built for the
    failing lines alone, so a clean file never pays for string formatting.
    """
    first_failed = pl.coalesce(
        [pl.when(failed).then(pl.lit(i, pl.UInt16)) for i, (failed, _) in enumerate(checks)]
    )
    collected = frame.with_columns(first_failed.alias("__check")).collect()
    failing = collected.select(pl.arg_where(pl.col("__check").is_not_null())).to_series()
    reason = pl.repeat(None, collected.height, dtype=pl.String, eager=True).alias("reason")
    if failing.len():
        texts = (
            collected[failing]
            .select(
                pl.coalesce(
                    [
                        pl.when(pl.col("__check") == i).then(
                            text if isinstance(text, pl.Expr) else pl.lit(text)
                        )
                        for i, (_, text) in enumerate(checks)
                    ]
                )
            )
            .to_series()
        )
        reason = reason.scatter(failing, texts)
    return collected.drop("__check", "reason", strict=False).with_columns(reason)


def empty_to_null(expr: pl.Expr) -> pl.Expr:
    """Empty text becomes null."""
    return pl.when(expr.str.len_bytes() == 0).then(None).otherwise(expr)


def pci_bus_id(expr: pl.Expr) -> pl.Expr:
    """Normalise a PCI address to ``domain:bus:device`` in lower case (``0000:18:00``).

    Accepts ``PCI:0000:18:00``, ``00000000:18:00.0`` and the like; anything else becomes null.
    """
    parts = expr.str.to_lowercase().str.extract_groups(
        r"^(?:pci:)?[0-9a-f]{0,4}?([0-9a-f]{4}):([0-9a-f]{2}):([0-9a-f]{2})(?:\.[0-7])?$"
    )
    return pl.concat_str(
        [parts.struct.field("1"), parts.struct.field("2"), parts.struct.field("3")], separator=":"
    )


def in_future(ts: pl.Expr, now: datetime) -> pl.Expr:
    """Return True where ``ts`` lies more than ``FUTURE_TOLERANCE`` after ``now``."""
    return ts > pl.lit(now + FUTURE_TOLERANCE, dtype=UTC_TS)


def iso_utc(text: pl.Expr) -> pl.Expr:
    """ISO 8601 text as a UTC timestamp: with ``Z`` or an offset, or without one (taken as UTC).

    Accepts ``T`` or a space between date and time, an optional fraction, and a bare date
    (midnight); anything else, including impossible dates, gives null.
    """
    text = text.str.replace(" ", "T", literal=True)
    zoned = text.str.strptime(UTC_TS, "%Y-%m-%dT%H:%M:%S%.f%#z", strict=False)
    naive = text.str.strptime(pl.Datetime("us"), "%Y-%m-%dT%H:%M:%S%.f", strict=False)
    day = text.str.strptime(pl.Date, "%Y-%m-%d", strict=False).cast(pl.Datetime("us"))
    return pl.coalesce(zoned, naive.dt.replace_time_zone("UTC"), day.dt.replace_time_zone("UTC"))


def time_check(
    column: str,
    ts: pl.Expr,
    now: datetime,
    *,
    no_time: Sequence[str] = ("",),
    label: str | None = None,
) -> Check:
    """Reject a time field that does not parse or lies in the future.

    Reject a time field that does not parse (unless it is one of ``no_time``) or lies in the
    future; the reason names the field (``label``, default ``"<column> time"``) and quotes it.
    """
    text, label = pl.col(column), label or f"{column} time"
    malformed = ts.is_null() & ~text.is_in(list(no_time))
    reason = (
        pl.when(malformed)
        .then(pl.format(f"malformed {label} '{{}}'", text))
        .otherwise(pl.format(f"{label} in the future: {{}}", text))
    )
    return malformed | in_future(ts, now), reason


def empty_rows(schema: dict[str, pl.DataType]) -> pl.DataFrame:
    """Return a frame with no rows and the given schema."""
    return pl.DataFrame(schema=schema)


def parsed_from(
    frame: pl.DataFrame,
    *,
    schema: dict[str, pl.DataType],
    source_file: str | pl.Expr,
    n_ignored: int,
) -> Parsed:
    """Split a checked frame into rows and rejects.

    ``frame`` holds ``line_no``, ``line``, ``reason`` (null for a good line) and the row columns
    except ``source_file`` (a path, or an expression over ``frame`` when it holds several
    files); rows are cast to ``schema`` and keep its column order.
    """
    good = pl.col("reason").is_null()
    source = source_file if isinstance(source_file, pl.Expr) else pl.lit(source_file)
    rows = frame.filter(good).select(
        [
            source.cast(dtype).alias(name) if name == "source_file" else pl.col(name).cast(dtype)
            for name, dtype in schema.items()
        ]
    )
    rejects = frame.filter(~good).select(
        source.cast(pl.String).alias("source_file"),
        pl.col("line_no").cast(pl.Int64),
        pl.col("line").alias("raw"),
        pl.col("reason"),
    )
    return Parsed(rows, rejects.cast(pl.Schema(REJECT_SCHEMA)), n_ignored)


class Fields(NamedTuple):
    """Data lines of a delimited file cut into named text fields, not yet collected.

    ``frame`` holds ``line_no``, ``line`` and one String column per wanted field (plus the
    intermediate columns the checks read); ``checks`` are the line-level checks every reader
    needs (not UTF-8, unbalanced quotes, wrong field count, or a header without the wanted
    columns), to be put first in :func:`with_reasons`. The header line, repeats of it and blank
    lines are only counted in ``n_ignored``.
    """

    frame: pl.LazyFrame
    checks: list[Check]
    n_ignored: int


def delimited_fields(
    data: bytes,
    *,
    separator: str,
    columns: Sequence[str],
    strip: bool = False,
    quoted: bool = False,
    what: str = "header",
    free_text: str | None = None,
) -> Fields:
    """Read a header line and cut every later line into the wanted ``columns``.

    Parameters
    ----------
    data
        The file's bytes (not empty).
    separator
        One character between fields.
    columns
        Field names the header must hold (any order; other names are allowed and skipped).
    strip
        Strip spaces around names and values (``nvidia-smi --format=csv`` prints ``", "``).
    quoted
        Honour CSV double quotes. Lines without a quote are cut by polars; the few with one go
        through :mod:`csv`, and a line whose quotes do not balance becomes a reject.
    what
        How the header is named in reasons (``"sacct header"``).
    free_text
        A column whose values may hold the separator unescaped (sacctmgr prints a ``|`` typed
        into a node's Reason as is): when the header names it, a line with more fields than the
        header gets its extra fields joined back into that column. Only one such column can be
        repaired unambiguously.

    Notes
    -----
    The first non-blank line is the header. When it lacks a wanted column every non-blank line,
    the header included, becomes a reject saying which columns are missing: the file cannot be read
    safely, and nothing is dropped silently.
    """
    lines = split_lines(data)
    wanted = list(columns)
    blank = lines.select(pl.col("line").str.strip_chars() == "").to_series()
    n_blank = int(blank.sum())
    first = blank.arg_min() if n_blank < lines.height else None  # the first non-blank line
    if first is None:
        frame = lines.lazy().filter(pl.lit(value=False))
        no_fields = [pl.lit(None, pl.String).alias(c) for c in wanted]
        return Fields(frame.with_columns(no_fields), [], n_blank)
    header_line = lines["line"][first]
    names = [n.strip() if strip else n for n in header_line.split(separator)]
    missing = [c for c in wanted if c not in names]
    if missing:
        reason = (
            f"{what} is missing columns {', '.join(missing)}: expected a first line naming "
            f"{separator.join(wanted)} (separated by {separator!r})"
        )
        frame = lines.lazy().filter(~blank)
        no_fields = [pl.lit(None, pl.String).alias(c) for c in wanted]
        return Fields(frame.with_columns(no_fields), [(pl.lit(value=True), reason)], n_blank)
    keep = ~blank & (lines["line"] != header_line)
    data_lines = lines.filter(keep)
    n_ignored = lines.height - data_lines.height
    fields = pl.col("line").str.split(separator)
    if quoted:
        has_quote = pl.col("line").str.contains('"', literal=True)
        plain = data_lines.lazy().filter(~has_quote).with_columns(fields.alias("fields"))
        tricky = data_lines.filter(has_quote)
        parsed = [_csv_fields(text, separator) for text in tricky["line"]]
        tricky = tricky.with_columns(pl.Series("fields", parsed, dtype=pl.List(pl.String)))
        cut = pl.concat([plain, tricky.lazy()]).sort("line_no")
    else:
        cut = data_lines.lazy().with_columns(fields.alias("fields"))
    n_fields = len(names)
    if free_text is not None and free_text in names:
        at = names.index(free_text)
        extra = pl.col("fields").list.len() - n_fields
        joined = pl.concat_list(
            pl.col("fields").list.head(at),
            pl.col("fields").list.slice(at, extra + 1).list.join(separator),
            pl.col("fields").list.slice(at + extra + 1),
        )
        cut = cut.with_columns(
            pl.when(extra > 0).then(joined).otherwise(pl.col("fields")).alias("fields")
        )
    n_found = pl.col("fields").list.len()
    frame = cut.with_columns(_field(names.index(c), strip=strip).alias(c) for c in wanted)
    checks: list[Check] = [
        (~pl.col("utf8_ok"), "line is not valid UTF-8"),
        (pl.col("fields").is_null(), "unbalanced double quotes"),
        (
            n_found != n_fields,
            pl.format(
                f"expected {n_fields} fields separated by {separator!r}, found {{}}", n_found
            ),
        ),
    ]
    return Fields(frame, checks, n_ignored)


def _field(index: int, *, strip: bool) -> pl.Expr:
    value = pl.col("fields").list.get(index, null_on_oob=True)
    return value.str.strip_chars(" ") if strip else value


def _csv_fields(line: str, separator: str) -> list[str] | None:
    """Fields of one CSV line with quotes, or None when its quotes do not balance."""
    try:
        rows = list(csv.reader([line], delimiter=separator, strict=True))
    except csv.Error:
        return None
    return rows[0] if len(rows) == 1 else None
