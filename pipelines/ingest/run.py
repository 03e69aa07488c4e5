"""Ingest landing files: find them, parse, validate, load (one transaction per batch).

Every in-scope line of a file ends as a loaded row, a quarantine row with a reason (parse rejects
and rows failing a Great Expectations check) or a held line (the last line of a live log, without
its newline yet), so ``n_read = n_loaded + n_quarantined + n_held`` for every read.

Two kinds of source:

- **tailed** (:data:`TAILED`: kernel logs) are streams (:mod:`pipelines.ingest.streams`): a file is
found
  again by the fingerprint of its head, whatever its name or compression, and only its new
  complete lines are read; line numbers continue, a rotated or compressed generation continues its
  stream, a rewritten one replaces its rows.
- **whole-file** sources (sacct dumps, kubectl JSON, CSVs, scrapes) are keyed by the hash of their
  plain content: the same content is never loaded twice, compressed or not.

Compressed files (gzip, bzip2, xz, zstd) are read transparently, told by their magic bytes, and
inflated within limits (:mod:`pipelines.ingest.archives`). A file a parser fails on, a binary file,
a broken archive or one past its limits becomes one quarantine row naming the problem; every other
file of the batch loads.

Finding files and their parser options is :mod:`pipelines.ingest.landing`; reading, hashing and
parsing whole files :mod:`pipelines.ingest.parse`; deciding what to read (new content, new
lines of streams) :mod:`pipelines.ingest.plan`. This module validates and loads, and re-exports
the names callers use as ``pipelines.ingest.X``.
"""

from __future__ import annotations

import dataclasses
import functools
import itertools
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

import numpy as np
import polars as pl

from pipelines import warehouse
from pipelines.ingest import quality
from pipelines.ingest.landing import (
    TIME_FROM_MTIME,
    LandingFile,
    discover,
    file_options,
    identity_options,
    landing_files,
)
from pipelines.ingest.parse import ParsedFile, parse_files
from pipelines.ingest.plan import HOLD_QUIET_S, TAILED, parsed_new_files, tailed_reads
from pipelines.ingest.sources import PARSERS
from pipelines.ingest.sources.common import REJECT_SCHEMA
from pipelines.runtime.settings import (
    DEFAULT_INGEST_BATCH_ROWS,
    DEFAULT_LOCK_TIMEOUT_S,
    DEFAULT_MAX_LINE_BYTES,
)
from pipelines.runtime.source_names import LINE_COUNTED
from pipelines.warehouse import lake

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable
    from pathlib import Path

    import duckdb

    from pipelines.runtime.archive_limits import ArchiveLimits

__all__ = [
    "BATCH_BYTES_PER_ROW",
    "BATCH_FILES",
    "HOLD_QUIET_S",
    "REFUSED",
    "TAILED",
    "TIME_FROM_MTIME",
    "LandingFile",
    "ParsedFile",
    "check_parser_options",
    "discover",
    "file_options",
    "identity_options",
    "ingest",
    "ingest_into",
    "landing_files",
    "parse_files",
    "quarantine_kinds",
]

BATCH_BYTES_PER_ROW = 256
"""A batch also closes when the bytes its files were parsed from reach ``batch_rows`` times this:
files of few rows in many bytes (kernel logs: a few Xid lines in a day of log) would otherwise
keep every file's bytes until the end of the run, so memory would grow with the landing."""
BATCH_FILES = 4096
"""...or when it holds this many files: each parsed file carries its own small frames (about
10 KB each, three times over while a batch is validated and loaded), which for thousands of
``nvidia-smi`` snapshots outweigh their rows."""

_NO_REJECTS = pl.DataFrame(schema=REJECT_SCHEMA | {"stage": pl.String()})


def _component_classes(con: duckdb.DuckDBPyConnection) -> list[str]:
    rows = con.execute("select component_class from seed_component_class").fetchall()
    return [r[0] for r in rows]


def _raw_lines(data: bytes, line_nos: list[int]) -> list[str]:
    if not line_nos:  # most reads: no line failed validation (splitting the file costs)
        return []
    lines = data.split(b"\n")
    return [
        lines[n - 1].rstrip(b"\r").decode("utf-8", errors="backslashreplace")
        if 0 < n <= len(lines)
        else ""
        for n in line_nos
    ]


def _file_load(
    pending: ParsedFile, good: pl.DataFrame, bad: pl.DataFrame, results: list[dict[str, Any]]
) -> warehouse.FileLoad:
    load = _rows_load(pending, good, bad, results)
    growth = pending.growth
    if growth is None:
        return load
    return dataclasses.replace(
        load,
        n_held=growth.n_held,
        content_bytes=growth.content_bytes,
        supersedes=growth.supersedes,
        kept_lines=growth.kept_lines,
    )


def _rows_load(
    pending: ParsedFile, good: pl.DataFrame, bad: pl.DataFrame, results: list[dict[str, Any]]
) -> warehouse.FileLoad:
    read = pending.stream
    clean = bad.height == pending.parsed.rejects.height == 0
    if clean and (
        read is None
        or good.height == 0
        or (read.line_offset == 0 and read.path == pending.item.resolved)
    ):
        # no reject, nothing to renumber (most small files, most reads of a tick, a stream's
        # first read under its own path): no frame work
        return warehouse.FileLoad(
            path=pending.item.resolved if read is None else read.path,
            source=pending.item.source,
            table=pending.table,
            sha256=pending.sha256,
            rows=good,
            rejects=_NO_REJECTS,
            n_ignored=pending.parsed.n_ignored,
            quality_results=tuple(results),
            stream=read,
            forget=pending.forget,
            stat=pending.stat,
            time_assumption=pending.time_assumption,
        )
    validation_rejects = pl.DataFrame(
        {
            "source_file": bad["source_file"],
            "line_no": bad["line_no"].cast(pl.Int64),
            "raw": pl.Series(_raw_lines(pending.data, bad["line_no"].to_list()), dtype=pl.String),
            "reason": bad["reason"],
        }
    )
    rejects = pl.concat(
        [
            pending.parsed.rejects.with_columns(stage=pl.lit("parse")),
            validation_rejects.with_columns(stage=pl.lit("validate")),
        ]
    )
    path = pending.item.resolved
    if read is not None:  # a chunk of a stream: its lines continue the stream's numbering
        path = read.path
        shift = pl.col("line_no") + read.line_offset
        good = good.with_columns(shift.cast(good.schema["line_no"]), source_file=pl.lit(path))
        rejects = rejects.with_columns(
            pl.when(pl.col("line_no") > 0).then(shift).otherwise(pl.col("line_no")),
            source_file=pl.lit(path),
        )
    return warehouse.FileLoad(
        path=path,
        source=pending.item.source,
        table=pending.table,
        sha256=pending.sha256,
        rows=good,
        rejects=rejects,
        n_ignored=pending.parsed.n_ignored,
        quality_results=tuple(results),
        stream=read,
        forget=pending.forget,
        stat=pending.stat,
        time_assumption=pending.time_assumption,
    )


REFUSED = "refused: "
"""How the ``status`` of a file the landing fence refused starts; the reason follows."""


def _refusal_key(item: LandingFile) -> str:
    """Return the lineage key of a refusal: its source, path and reason (never the content)."""
    return warehouse.file_sha256(f"refused\0{item.source}\0{item.path}\0{item.refused}".encode())


def _record_refused(
    con: duckdb.DuckDBPyConnection, refused: list[LandingFile], lake_dir: Path | None
) -> list[warehouse.LoadCounts]:
    """Record each refused file once, with its reason and no byte of its content.

    A lineage row and a file-level quarantine row (stage ``fence``), keyed by source, path and
    reason, never by content (the file is not opened); a refusal recorded before is not recorded
    again. Returns their counts, each with the status ``refused: <reason>``.
    """
    keys = {_refusal_key(item): item for item in refused}
    before = warehouse.loaded_before(con, list(keys))
    loads = []
    for key, item in keys.items():
        if key in before:
            continue
        table, parser = PARSERS[item.source]
        rejects = pl.DataFrame(
            {
                "source_file": [str(item.path)],
                "line_no": [0],
                "raw": [""],
                "reason": [REFUSED + item.refused],
            },
            schema=REJECT_SCHEMA,
        ).with_columns(stage=pl.lit("fence"))
        loads.append(
            warehouse.FileLoad(
                path=str(item.path),
                source=item.source,
                table=table,
                sha256=key,
                rows=pl.DataFrame(schema=parser.SCHEMA),
                rejects=rejects,
                n_ignored=0,
            )
        )
    write_parts = None if lake_dir is None else functools.partial(lake.write_parts, lake_dir)
    recorded = iter(warehouse.load_files(con, loads, write_parts=write_parts) if loads else [])
    return [
        dataclasses.replace(
            before[key] if key in before else next(recorded), status=REFUSED + item.refused
        )
        for key, item in keys.items()
    ]


def _validate_and_load(
    con: duckdb.DuckDBPyConnection,
    batch: list[ParsedFile],
    *,
    now: datetime,
    component_classes: list[str],
    lake_dir: Path | None = None,
) -> list[warehouse.LoadCounts]:
    """Validate a batch of parsed files of one table in one GX run and load it in one transaction.

    Each file keeps its own rows, rejects, quality results and lineage row, so it is still
    wholly loaded or not at all.
    """
    table = batch[0].table
    heights = [p.parsed.rows.height for p in batch]
    tagged = pl.concat([p.parsed.rows for p in batch], how="vertical_relaxed").with_columns(
        pl.Series("_file", np.repeat(np.arange(len(batch), dtype=np.int32), heights))
    )
    checked = quality.validate(tagged, table=table, now=now, component_classes=component_classes)
    if table in LINE_COUNTED:
        checked = _whole_lines(checked)
    good_parts = checked.good.partition_by("_file", as_dict=True, include_key=False)
    bad_parts = checked.bad.partition_by("_file", as_dict=True, include_key=False)
    no_bad = checked.bad.head(0).drop("_file")
    loads = []
    for i, pending in enumerate(batch):
        good = good_parts.get((i,))
        if good is None:
            good = pending.parsed.rows.head(0)
        bad = bad_parts.get((i,), no_bad)
        n_bad = {r["expectation"]: 0 for r in checked.results}
        for reason in bad["reason"].to_list():
            for label in n_bad:
                n_bad[label] += label in reason
        results = [
            {**r, "success": n_bad[r["expectation"]] == 0, "n_unexpected": n_bad[r["expectation"]]}
            for r in checked.results
        ]
        loads.append(_file_load(pending, good, bad, results))
    write_parts = None if lake_dir is None else functools.partial(lake.write_parts, lake_dir)
    return warehouse.load_files(con, loads, write_parts=write_parts)


def _whole_lines(checked: quality.Validated) -> quality.Validated:
    """Quarantine a line whole, once, when one of its rows failed validation (LINE_COUNTED)."""
    if checked.bad.height == 0:
        return checked
    line = ["_file", "line_no"]
    bad = checked.bad.unique(subset=line, keep="first", maintain_order=True)
    good = checked.good.join(bad.select(line), on=line, how="anti", maintain_order="left")
    return dataclasses.replace(checked, good=good, bad=bad)


HELD_BATCHES = 2
"""Full batches the ingest parses ahead of validation while Great Expectations starts up."""


class _HeldForStartUp:
    """Full batches held back while Great Expectations starts up, then loaded in their order.

    GX's start-up (:func:`pipelines.ingest.quality.start_up_in_background`) runs while the first
    files are parsed; a batch that fills before it is done waits here (at most
    :data:`HELD_BATCHES`, so memory stays bounded by the batch size) and parsing goes on. Counts
    of files loaded before, reported meanwhile, wait behind the held batches, so every count
    reaches the caller in the order it would have without the wait. Validation and loading are
    unchanged: the same batches, in the same order, a little later.
    """

    def __init__(
        self,
        load: Callable[[list[ParsedFile]], None],
        emit: Callable[[list[warehouse.LoadCounts]], None],
    ) -> None:
        self._load = load
        self._emit = emit
        self._steps: list[tuple[list[ParsedFile] | None, list[warehouse.LoadCounts]]] = []
        self._n_batches = 0

    def report(self, counts: list[warehouse.LoadCounts]) -> None:
        """Pass counts on, behind any held batch."""
        if self._steps:
            self._steps.append((None, counts))
        else:
            self._emit(counts)

    def load(self, batch: list[ParsedFile]) -> None:
        """Validate and load a full batch, or hold it while GX starts up (room permitting)."""
        if self._n_batches < HELD_BATCHES and quality.starting_up():
            self._steps.append((batch, []))
            self._n_batches += 1
            return
        self.flush()
        self._load(batch)

    def flush_if_started(self) -> None:
        """Load the held batches once GX has started up."""
        if self._steps and not quality.starting_up():
            self.flush()

    def flush(self) -> None:
        """Load every held batch and pass on the counts behind them, in order."""
        steps, self._steps, self._n_batches = self._steps, [], 0
        for batch, counts in steps:
            if batch is None:
                self._emit(counts)
            else:
                self._load(batch)


def ingest(
    db_path: Path,
    files: list[LandingFile],
    *,
    lock_timeout_s: float = DEFAULT_LOCK_TIMEOUT_S,
    batch_rows: int = DEFAULT_INGEST_BATCH_ROWS,
    parser_options: dict[str, dict[str, Any]] | None = None,
    on_file: Callable[[warehouse.LoadCounts], None] | None = None,
    lake_dir: Path | None = None,
    parse_many: Callable[[list[LandingFile]], Iterable[ParsedFile]] | None = None,
    force: bool = False,
    hold_quiet_s: float = HOLD_QUIET_S,
    archive_limits: ArchiveLimits | None = None,
    max_line_bytes: int = DEFAULT_MAX_LINE_BYTES,
) -> list[warehouse.LoadCounts]:
    """Run :func:`ingest_into` on the warehouse at ``db_path``, opened (and created) for it.

    For scripts, tests and notebooks that hold a path, not a connection: it checks the parser
    options first (:func:`check_parser_options`, so a bad call creates no file), then waits up
    to ``lock_timeout_s`` for another writer.
    """
    check_parser_options(files, parser_options)
    with warehouse.connect(db_path, lock_timeout_s=lock_timeout_s) as con:
        return ingest_into(
            con,
            files,
            batch_rows=batch_rows,
            parser_options=parser_options,
            on_file=on_file,
            lake_dir=lake_dir,
            parse_many=parse_many,
            force=force,
            hold_quiet_s=hold_quiet_s,
            archive_limits=archive_limits,
            max_line_bytes=max_line_bytes,
        )


def check_parser_options(
    files: list[LandingFile], parser_options: dict[str, dict[str, Any]] | None
) -> None:
    """Raise ``ValueError`` when ``files`` need a parser option that is not given.

    Fault-log files need their column mapping. Callers that open the warehouse check this
    before opening it, so a bad call creates no file.
    """
    extra = parser_options or {}
    if any(f.source == "fault_log" and not f.refused for f in files) and "mapping" not in extra.get(
        "fault_log", {}
    ):
        msg = "fault_log files need a column mapping: pass --mapping mapping.yaml"
        raise ValueError(msg)


def ingest_into(
    con: duckdb.DuckDBPyConnection,
    files: list[LandingFile],
    *,
    batch_rows: int = DEFAULT_INGEST_BATCH_ROWS,
    parser_options: dict[str, dict[str, Any]] | None = None,
    on_file: Callable[[warehouse.LoadCounts], None] | None = None,
    lake_dir: Path | None = None,
    parse_many: Callable[[list[LandingFile]], Iterable[ParsedFile]] | None = None,
    force: bool = False,
    hold_quiet_s: float = HOLD_QUIET_S,
    archive_limits: ArchiveLimits | None = None,
    max_line_bytes: int = DEFAULT_MAX_LINE_BYTES,
) -> list[warehouse.LoadCounts]:
    """Ingest ``files`` into the warehouse and rebuild the views.

    ``con`` is a writable connection to the warehouse, opened by the caller (who waits for
    another writer's lock); :func:`ingest` opens one from a path.

    Files are read and hashed in chunks (one lookup of the chunk's hashes), parsed (small files
    of one kind joined, :mod:`pipelines.ingest.sources.batch`) and validated in batches of about
    ``batch_rows`` rows per raw table, or fewer when their files' bytes reach
    :data:`BATCH_BYTES_PER_ROW` times that or they are :data:`BATCH_FILES` files (one Great
    Expectations run per batch: its per-call overhead dwarfs a small file); each batch is loaded
    in one transaction that records every file with its rows, so no file is ever half-loaded. A
    batch is let go once loaded: the ingest's memory is bounded by the batch size
    (``RELIA_INGEST_BATCH_ROWS``), not by the landing's. ``parser_options`` maps a source to
    extra parser keyword arguments (the fault-log ``mapping``).

    With ``lake_dir``, loaded rows go to Parquet parts under it
    (:mod:`pipelines.warehouse.lake`) instead of the raw tables, which become views over the lake.
    ``parse_many`` takes over parsing: it gets the files not loaded before and yields their
    :class:`ParsedFile` in any order (a flow fans :func:`parse_files` out to its task runner);
    validation and loading stay here, in the one process that holds the warehouse's write lock.

    Tailed sources (:data:`TAILED`) are read as streams
    (:func:`pipelines.ingest.plan.tailed_reads`): only new complete lines; a last line without
    its newline is held until it is complete, its file is compressed or renamed, or it has been
    quiet for ``hold_quiet_s`` seconds. An archive that ends early is held likewise, and is one
    quarantine row once it has been quiet for ``hold_quiet_s`` seconds.

    An archive that inflates past ``archive_limits`` (default
    :class:`pipelines.runtime.archive_limits.ArchiveLimits`), a binary file and a file too big for
    memory are one quarantine row each, and the run goes on: the ingest's memory is bounded by the
    batch and by the limits, not by any one file.

    A file the landing fence refused (:attr:`LandingFile.refused`: outside its landing root, a
    named pipe, a link loop...) is never opened: it comes back first with the status
    ``refused: <reason>``, recorded once as a lineage row and a file-level quarantine row (stage
    ``fence``, the reason, no content; keyed by source, path and reason).

    A line longer than ``max_line_bytes`` (``RELIA_MAX_LINE_BYTES``) is not parsed: it is
    quarantined with its length (:mod:`pipelines.ingest.long_lines`; in what ``parse_many``
    parses, only as far as its own parsing does so).

    With ``force``, whatever the named files loaded before (under any source, as a whole file or
    as a stream) is replaced by this load, in the same transaction (``relia ingest --force``: a
    file ingested under the wrong ``--source``).
    """
    check_parser_options(files, parser_options)
    refused = [f for f in files if f.refused]
    files = [f for f in files if not f.refused]
    extra = parser_options or {}
    now = datetime.now(UTC)
    results: list[warehouse.LoadCounts] = []

    def emit(counts: list[warehouse.LoadCounts]) -> None:
        results.extend(counts)
        if on_file is not None:
            for c in counts:
                on_file(c)

    warehouse.apply_schema(con)
    lake.check_warehouse(con, lake_dir)
    emit(_record_refused(con, refused, lake_dir) if refused else [])
    classes = _component_classes(con)
    # an ingest that stopped half-way loaded rows its views and snapshots never saw
    resumed = warehouse.unfinished_ingest(con) is not None
    marked = False

    def load(queue: list[ParsedFile]) -> None:
        nonlocal marked
        with warehouse.transaction(con):
            if not marked:  # the first batch commits it: until the views are made again,
                warehouse.start_ingest(con)  # commands say to rerun the ingest
            counts = _validate_and_load(
                con, queue, now=now, component_classes=classes, lake_dir=lake_dir
            )
        marked = True
        emit(counts)

    waiting = _HeldForStartUp(load, emit)
    whole = [f for f in files if f.source not in TAILED]
    tailed = [f for f in files if f.source in TAILED]
    forced = {str(f.path.resolve()) for f in files} if force else set()
    parsed = itertools.chain(
        parsed_new_files(
            con,
            whole,
            extra,
            parse_many,
            on_known=waiting.report,
            force=force,
            limits=archive_limits,
            quiet_s=hold_quiet_s,
            max_line_bytes=max_line_bytes,
        ),
        tailed_reads(
            con,
            tailed,
            extra,
            quiet_s=hold_quiet_s,
            on_known=waiting.report,
            forced=forced,
            limits=archive_limits,
            max_line_bytes=max_line_bytes,
        ),
    )
    _load_in_batches(parsed, waiting, batch_rows=batch_rows, force=force)
    with warehouse.transaction(con):  # the views, their snapshots and the marker: all or none
        if lake_dir is not None:
            lake.attach(con, lake_dir)
        # the snapshots are taken here, once per ingest that changed rows, not by every
        # reader: a query over the views alone binds the whole tree of views under it; only
        # those over the tables this ingest wrote (all of them after a stopped ingest, whose
        # writes are unknown, or --force, which deletes rows of any source)
        warehouse.refresh(
            con,
            data_changed=marked or resumed or bool(refused),
            changed=None if resumed or force else warehouse.written_by(results),
        )
        warehouse.finish_ingest(con)
    return results


def quarantine_kinds(con: duckdb.DuckDBPyConnection, since: datetime) -> list[tuple[str, str, int]]:
    """Return the reasons (kinds) of the rows quarantined at or after ``since``, most rows first.

    Each is ``(stage, reason, n_rows)``: what an ingest that started at ``since`` quarantined.
    """
    rows = con.execute(
        "select stage, reason, count(*) as n_rows from raw_quarantine "
        "where loaded_at >= $since group by stage, reason "
        "order by n_rows desc, stage, reason",
        {"since": since},
    ).fetchall()
    return [(str(stage), str(reason), int(n)) for stage, reason, n in rows]


def _load_in_batches(
    parsed: Iterable[ParsedFile],
    waiting: _HeldForStartUp,
    *,
    batch_rows: int,
    force: bool,
) -> None:
    """Queue parsed files per raw table and load each queue once it makes a batch.

    A batch is about ``batch_rows`` rows, :data:`BATCH_BYTES_PER_ROW` times that in bytes, or
    :data:`BATCH_FILES` files, whichever comes first; what is left is loaded at the end. The
    first file with rows to validate starts Great Expectations up in the background; batches
    that fill meanwhile wait in ``waiting`` (in order) while parsing goes on.
    """
    queues: dict[str, list[ParsedFile]] = {}
    queued_rows: dict[str, int] = {}
    queued_bytes: dict[str, int] = {}
    batch_bytes = batch_rows * BATCH_BYTES_PER_ROW
    for pending in parsed:
        if force:
            pending.forget = True
        if pending.parsed.rows.height:  # rows to validate: GX starts up while parsing goes on
            quality.start_up_in_background()
        waiting.flush_if_started()
        queue = queues.setdefault(pending.table, [])
        queue.append(pending)
        n_rows = queued_rows.get(pending.table, 0) + pending.parsed.rows.height
        n_bytes = queued_bytes.get(pending.table, 0) + len(pending.data)
        queued_rows[pending.table], queued_bytes[pending.table] = n_rows, n_bytes
        if n_rows >= batch_rows or n_bytes >= batch_bytes or len(queue) >= BATCH_FILES:
            waiting.load(list(queue))
            queue.clear()
            queued_rows[pending.table] = queued_bytes[pending.table] = 0
    waiting.flush()
    for queue in queues.values():
        if queue:
            waiting.load(list(queue))
    waiting.flush()
