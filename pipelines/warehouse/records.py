"""What a load writes: one file's outcome (:class:`FileLoad`, :class:`LoadCounts`) and its rows.

Shared by :mod:`pipelines.warehouse.load` (whole files) and
:mod:`pipelines.warehouse.load_streams` (reads of tailed streams): the lineage, quarantine and
quality-result frames a load inserts, and :func:`insert`, which writes a frame into a table; and
the stream records a load consumes (:class:`StreamState`, a row of ``raw_streams``, and
:class:`StreamRead`, one planned read of a stream, which :mod:`pipelines.ingest.streams` plans).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

import polars as pl

from pipelines.runtime.source_names import LINE_COUNTED
from pipelines.warehouse.connection import identifier as _identifier  # a SQL guard by that name
from pipelines.warehouse.reasons import split_reasons

if TYPE_CHECKING:
    from datetime import datetime

    import duckdb
    from polars._typing import SchemaDict


NEW = "new"
APPEND = "append"
REPLACE = "replace"
UNCHANGED = "unchanged"
"""What a read of a stream does: its first read, new lines after the consumed ones, a read again
from the start that replaces the rows (truncated or rewritten content), or nothing new."""


@dataclass(frozen=True)
class StreamState:
    """One stream as the warehouse knows it: a row of ``raw_streams`` (see ``ingest.streams``)."""

    stream_id: str
    source: str
    table: str
    rows_path: str
    head_len: int
    head_sha: str
    consumed_bytes: int
    consumed_lines: int
    prefix_sha: str
    held_bytes: int = 0
    file_size: int = -1
    file_mtime_ns: int = -1
    tail_sha: str = ""


def sha256_hex(*parts: bytes) -> str:
    """Hex SHA-256 of the concatenated ``parts``."""
    h = hashlib.sha256()
    for part in parts:
        h.update(part)
    return h.hexdigest()


@dataclass(frozen=True)
class StreamRead:
    """The plan for one read of a file that belongs to a stream.

    ``chunk`` holds the complete lines to parse (their numbers start after ``line_offset``);
    ``before`` is the stream as the warehouse knew it (None for a new stream) and ``after`` as it
    will be once this read is loaded with its rows.
    """

    action: str
    path: str
    before: StreamState | None
    after: StreamState
    chunk: bytes
    line_offset: int
    byte_offset: int
    n_held_bytes: int
    released: bool
    codec: str | None
    displaces: bool = False  # another stream's rows carry this path: they must move first

    @property
    def in_place(self) -> bool:
        """Return the new lines of a stream that stays where its rows say.

        New lines of a stream that stays where its rows say (or a new stream at a free path):
        loading needs no row moved, replaced or renamed.
        """
        return (
            self.action in (NEW, APPEND, UNCHANGED)
            and not self.displaces
            and (self.before is None or self.before.rows_path == self.path)
        )

    @property
    def n_held(self) -> int:
        """Lines held back by this read (0 or 1: the last line without its newline)."""
        return 1 if self.n_held_bytes else 0

    @property
    def read_key(self) -> str:
        """Return the hex key of this read; it names lake parts.

        Hex key of this read (stream, the byte it starts at and the bytes consumed after it: a
        rewrite read again from byte 0 is another read); names lake parts.
        """
        return sha256_hex(
            self.after.stream_id.encode(),
            b":",
            str(self.byte_offset).encode(),
            b":",
            self.after.prefix_sha.encode(),
        )


def file_sha256(data: bytes) -> str:
    """Content hash used as the ingest key."""
    import hashlib

    return hashlib.sha256(data).hexdigest()


QUARANTINED = "quarantined"
"""The ``status`` of a read nothing was loaded from because every line of it was quarantined."""


@dataclass(frozen=True)
class LoadCounts:
    """What happened to one file."""

    path: str
    source: str
    table: str
    n_read: int
    n_loaded: int
    n_quarantined: int
    n_ignored: int
    skipped: bool  # True when the same bytes were loaded before (nothing new in a stream)
    n_held: int = 0  # a last line without its newline (or an archive still being written)
    # what happened, in words (empty: loaded, or "already loaded" when skipped; "quarantined"
    # when every line read was quarantined)
    status: str = ""
    time_assumption: str = ""  # what its times rest on that its lines do not print (a warning)

    @property
    def outcome(self) -> str:
        """``status``, or ``loaded`` / ``already loaded``."""
        return self.status or ("already loaded" if self.skipped else "loaded")


@dataclass(frozen=True)
class FileLoad:
    """One file's outcome, ready to load: its rows, its rejects and its quality results.

    ``rejects`` has ``source_file, line_no, raw, reason, stage``; ``quality_results`` has one
    mapping per expectation with ``expectation, success, n_unexpected``.
    """

    path: str
    source: str
    table: str
    sha256: str
    rows: pl.DataFrame
    rejects: pl.DataFrame
    n_ignored: int
    quality_results: tuple[dict[str, object], ...] = ()
    stream: StreamRead | None = None  # a read of a tailed stream (rows already renumbered)
    forget: bool = False  # first remove what this path or content loaded before (--force)
    stat: tuple[int, int] | None = None  # a whole file's size and mtime (ns) when it was read
    n_held: int = 0  # a whole file's last line without its newline, held back (0 or 1)
    content_bytes: int | None = None  # a whole file's plain bytes (what its key covers)
    supersedes: str | None = None  # the key of an earlier load of this path this one extends
    kept_lines: int = 0  # rows of lines up to this one are in the table from that earlier load
    time_assumption: str = ""  # what its times rest on that its lines do not print

    def counts(self) -> LoadCounts:
        """Return this load's counts, with a ``status`` in words for a stream or an empty file."""
        n_held = self.n_held if self.stream is None else self.stream.n_held
        status = ""
        if self.stream is not None:
            status = {
                "new": "loaded",
                "append": "appended",
                "replace": "replaced",
                "unchanged": "no new lines",
            }[self.stream.action]
            if self.stream.released:
                status += " (last line without newline read: file finished)"
            elif n_held:
                status += " (last line held: no newline yet)"
        elif self.rows.height + self.rejects.height + n_held == 0:
            status = f"no {self.source} lines"
        elif n_held:
            status = "loaded (last line held: no newline yet)"
        n_loaded = self.rows.height
        if self.table in LINE_COUNTED and n_loaded:  # a line may give several rows
            n_loaded = self.rows["line_no"].n_unique()
        if self.rows.height == 0 and self.rejects.height:
            # nothing loaded: every line read was quarantined (a held line keeps its note)
            status = QUARANTINED + (status[status.find(" (") :] if " (" in status else "")
        return LoadCounts(
            path=self.path,
            source=self.source,
            table=self.table,
            n_read=n_loaded + self.rejects.height + n_held,
            n_loaded=n_loaded,
            n_quarantined=self.rejects.height,
            n_ignored=self.n_ignored,
            skipped=False,
            n_held=n_held,
            status=status,
            time_assumption=self.time_assumption,
        )


class PartWriter(Protocol):
    """Writes one file's rows as lake parts: ``functools.partial(lake.write_parts, lake_dir)``."""

    def __call__(self, *, table: str, sha256: str, rows: pl.DataFrame) -> object:
        """Write ``rows`` of ``table`` as the lake parts of the file with content ``sha256``."""


def insert(
    con: duckdb.DuckDBPyConnection, table: str, frame: pl.DataFrame, *, replace: bool = False
) -> None:
    """Insert a frame by column name into a table named by the caller's fixed set.

    With ``replace``, rows whose primary key exists replace them.
    """
    if frame.height == 0:
        return
    # one contiguous chunk: a frame concatenated from thousands of small files' rows is as many
    # Arrow record batches, which DuckDB scans batch by batch (78k rows in 9,819 chunks: 2.9 s)
    con.register("incoming_frame", frame.rechunk().to_arrow())
    try:
        if replace:
            con.execute(
                f"insert or replace into {_identifier(table)} by name select * from incoming_frame"
            )
        else:
            con.execute(f"insert into {_identifier(table)} by name select * from incoming_frame")
    finally:
        con.unregister("incoming_frame")


_FILES_SCHEMA: SchemaDict = {
    "file_sha256": pl.String,
    "path": pl.String,
    "source": pl.String,
    "target_table": pl.String,
    "n_read": pl.Int64,
    "n_loaded": pl.Int64,
    "n_quarantined": pl.Int64,
    "n_ignored": pl.Int64,
    "n_held": pl.Int64,
    "loaded_at": pl.Datetime("us", "UTC"),
    "file_size": pl.Int64,
    "file_mtime_ns": pl.Int64,
    "content_bytes": pl.Int64,
    "time_assumption": pl.String,
}


def no_lines_key(source: str, sha256: str) -> str:
    """Return the key a whole file is recorded under when ``source``'s parser found no line in it.

    The key is per source, so that the same bytes still load under the right source later.
    """
    import hashlib

    return hashlib.sha256(f"no {source} lines:{sha256}".encode()).hexdigest()


def file_record(load: FileLoad, now: datetime, key: str | None = None) -> dict[str, object]:
    """Return a load's ``raw_ingest_files`` row, keyed by ``key`` (default: its content hash)."""
    counts = load.counts()
    return {
        "file_sha256": key or load.sha256,
        "path": load.path,
        "source": load.source,
        "target_table": load.table,
        "n_read": counts.n_read,
        "n_loaded": counts.n_loaded,
        "n_quarantined": counts.n_quarantined,
        "n_ignored": counts.n_ignored,
        "n_held": counts.n_held,
        "loaded_at": now,
        "file_size": load.stat[0] if load.stat else None,
        "file_mtime_ns": load.stat[1] if load.stat else None,
        "content_bytes": load.content_bytes,
        "time_assumption": load.time_assumption or None,
    }


def files_frame(records: list[dict[str, object]]) -> pl.DataFrame:
    """:func:`file_record` rows as a frame with ``raw_ingest_files``' column types."""
    return pl.DataFrame(records, schema=_FILES_SCHEMA)


def quarantine_rows(load: FileLoad, key: str, now: datetime) -> pl.DataFrame:
    """Return a load's rejected lines as ``raw_quarantine`` rows keyed by ``key``.

    A reason's offending value goes to ``reason_value``; ``reason`` keeps its kind
    (:func:`pipelines.warehouse.reasons.split_reason`).
    """
    kinds, values = split_reasons(load.rejects["reason"])
    return load.rejects.select(
        pl.lit(key).alias("file_sha256"),
        "source_file",
        pl.col("line_no").cast(pl.Int32),
        pl.lit(load.table).alias("target_table"),
        pl.col("raw").cast(pl.String),
        kinds.alias("reason"),
        values.alias("reason_value"),
        "stage",
        pl.lit(now).alias("loaded_at"),
    )


def checks_frame(loads: list[FileLoad], now: datetime, key: str | None = None) -> pl.DataFrame:
    """Return the loads' quality results as ``raw_quality_results`` rows.

    Rows are keyed by ``key``, or by each load's content hash when ``key`` is None.
    """
    return pl.DataFrame(
        [
            {
                "file_sha256": key or load.sha256,
                "target_table": load.table,
                "expectation": str(r["expectation"]),
                "success": bool(r["success"]),
                "n_unexpected": int(r["n_unexpected"]),  # type: ignore[call-overload]
                "validated_at": now,
            }
            for load in loads
            for r in load.quality_results
        ],
        schema={
            "file_sha256": pl.String,
            "target_table": pl.String,
            "expectation": pl.String,
            "success": pl.Boolean,
            "n_unexpected": pl.Int64,
            "validated_at": pl.Datetime("us", "UTC"),
        },
    )
