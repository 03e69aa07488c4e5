"""Ingest landing files: find them, parse, validate, load (one transaction per batch).

Every in-scope line of a file ends as a loaded row, a quarantine row with a reason (parse rejects
and rows failing a Great Expectations check) or a held line (the last line of a live log, without
its newline yet), so ``n_read = n_loaded + n_quarantined + n_held`` for every read.

Two kinds of source:

- **tailed** (:data:`TAILED`: kernel logs) are streams (:mod:`pipelines.streams`): a file is found
  again by the fingerprint of its head, whatever its name or compression, and only its new
  complete lines are read; line numbers continue, a rotated or compressed generation continues its
  stream, a rewritten one replaces its rows.
- **whole-file** sources (sacct dumps, kubectl JSON, CSVs, scrapes) are keyed by the hash of their
  plain content: the same content is never loaded twice, compressed or not.

Compressed files (gzip, bzip2, xz, zstd) are read transparently, told by their magic bytes. A file
a parser fails on, a binary file or a broken archive becomes one quarantine row naming the
problem; every other file of the batch loads.
"""

from __future__ import annotations

import functools
import itertools
import logging
import os
import time
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import polars as pl

from pipelines import quality, streams, warehouse
from pipelines.sources import IDENTITY_OPTIONS, MTIME_OPTIONS, PARSERS, batch
from pipelines.sources.common import REJECT_SCHEMA, Parsed
from pipelines.warehouse import lake

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Iterator

    import duckdb

    from pipelines.path_patterns import PathPattern

log = logging.getLogger(__name__)


def _mtime(path: Path) -> dict[str, Any]:
    """Logs whose timestamps lack a year (syslog, torchrun's glog prefix) take it from the mtime."""
    return {"file_mtime": datetime.fromtimestamp(path.stat().st_mtime, tz=UTC)}


_OPTION_BUILDERS: dict[str, Callable[[Path], dict[str, Any]]] = {
    "kernel": _mtime,
    "elastic": _mtime,
}

TAILED = frozenset({"kernel"})
"""Sources read as streams of lines (new complete lines only): their parsers read each line on
its own, so a chunk of lines parses like the whole file. Others are read whole."""

HOLD_QUIET_S = 300.0
"""Default seconds after its last write when a held last line (no newline) is read as a line."""

_NO_REJECTS = pl.DataFrame(schema=REJECT_SCHEMA | {"stage": pl.String()})

BINARY_SNIFF_BYTES = 8192
"""Head bytes inspected to tell a binary file from telemetry text."""


@dataclass(frozen=True)
class LandingFile:
    """One file to ingest and the source (parser) it belongs to."""

    path: Path
    source: str
    path_options: tuple[tuple[str, str], ...] = ()
    """``host`` / ``run`` the source's path pattern captured from this file's path."""

    @functools.cached_property
    def resolved(self) -> str:
        """The absolute path with links resolved: what rows record as ``source_file``."""
        return str(self.path.resolve())


def _visible_files(folder: Path) -> list[Path]:
    return sorted(
        p
        for p in folder.rglob("*")
        if p.is_file() and not any(part.startswith(".") for part in p.relative_to(folder).parts)
    )


def discover(
    paths: Iterable[Path],
    *,
    source: str | None = None,
    path_patterns: Iterable[PathPattern] = (),
) -> list[LandingFile]:
    """Expand folders and files into ``LandingFile``s.

    A folder named after a source (``slurm``, ``kernel``, ...) yields its files; any other folder
    yields the files of its source-named subfolders (a landing root). A file takes its source from
    its parent folder's name. ``source`` overrides all of that. A folder is the landing root of
    what it yields: a file under it that resolves outside it (a symbolic link to a system file) is
    refused; links inside it are fine.

    A file whose path relative to its source folder matches its source's pattern in
    ``path_patterns`` carries the values captured (``path_options``). The source folder of a
    file named on its own is its nearest folder named after its source, else its parent.

    Raises
    ------
    ValueError
        For a path that does not exist, a file whose source cannot be told, or a file that
        resolves outside the folder it was found in (naming the path).
    """
    found: list[LandingFile] = []
    roots: list[Path] = []  # the source folder of each file found
    for path in paths:
        if not path.exists():
            msg = f"{path} does not exist; give a landing folder, a source folder or files"
            raise ValueError(msg)
        if path.is_file():
            name = source or path.parent.name
            if name not in PARSERS:
                msg = (
                    f"cannot tell the source of {path}: its folder is not one of "
                    f"{sorted(PARSERS)}; pass --source"
                )
                raise ValueError(msg)
            found.append(LandingFile(path, name))
            roots.append(_source_folder(path, name))
            continue
        if source is not None or path.name in PARSERS:
            name = source or path.name
            if name not in PARSERS:
                msg = f"unknown source {name!r}; choose one of {sorted(PARSERS)}"
                raise ValueError(msg)
            inside = [LandingFile(p, name) for p in _visible_files(path)]
            roots.extend(path for _ in inside)
        else:
            inside = []
            for sub in sorted(p for p in path.iterdir() if p.is_dir() and p.name in PARSERS):
                files = [LandingFile(p, sub.name) for p in _visible_files(sub)]
                inside.extend(files)
                roots.extend(sub for _ in files)
        _refuse_escapes(path, inside)
        found.extend(inside)
    by_source = {p.source: p for p in path_patterns}
    if not by_source:
        return found
    return [
        _with_path_options(item, root, by_source.get(item.source))
        for item, root in zip(found, roots, strict=True)
    ]


def _source_folder(path: Path, source: str) -> Path:
    """The folder a file named on its own is under: its nearest folder named after its
    source, else its parent."""
    return next((p for p in path.parents if p.name == source), path.parent)


def _with_path_options(item: LandingFile, root: Path, pattern: PathPattern | None) -> LandingFile:
    if pattern is None:
        return item
    values = pattern.values(item.path.relative_to(root).as_posix())
    if not values:
        log.debug("%s does not match the %s path pattern %r", item.path, item.source,
                  pattern.pattern)  # fmt: skip
        return item
    return replace(item, path_options=tuple(values.items()))


def _refuse_escapes(root: Path, files: list[LandingFile]) -> None:
    real_root = Path(os.path.realpath(root))
    for item in files:
        resolved = Path(os.path.realpath(item.path))
        if not resolved.is_relative_to(real_root):
            msg = (
                f"refusing {item.path}: it resolves to {resolved}, outside the landing root "
                f"{real_root}"
            )
            raise ValueError(msg)


def identity_options(
    files: Iterable[LandingFile],
    *,
    host: str | None = None,
    run: str | None = None,
    time_from_mtime: bool = False,
) -> dict[str, dict[str, Any]]:
    """Parser options that name the host, run and sample time of files whose content does not
    (``relia ingest --host/--run/--time-from-mtime``), for each source of ``files`` whose parser
    takes them (:data:`pipelines.sources.IDENTITY_OPTIONS`,
    :data:`pipelines.sources.MTIME_OPTIONS`).

    ``time_from_mtime`` is kept as the option ``time_from_mtime=True``, which parsing turns into
    each file's own modification time under the parser's keyword (:func:`file_options`).
    """
    given = {k: v for k, v in {"host": host, "run": run}.items() if v is not None}
    options: dict[str, dict[str, Any]] = {}
    for source in sorted({f.source for f in files}):
        chosen = {k: v for k, v in given.items() if k in IDENTITY_OPTIONS.get(source, ())}
        if time_from_mtime and source in MTIME_OPTIONS:
            chosen[TIME_FROM_MTIME] = True
        if chosen:
            options[source] = chosen
    return options


TIME_FROM_MTIME = "time_from_mtime"
"""The parser option (set by :func:`identity_options`) that asks for the file's mtime."""


def file_options(item: LandingFile, extra: dict[str, Any] | None = None) -> dict[str, Any]:
    """The keyword arguments ``item``'s parser gets: what the path gives (the mtime for logs
    without a year, :data:`_OPTION_BUILDERS`; the values of the source's path pattern), then
    ``extra`` (the source's options: ``--host``/``--run`` win over the path pattern). The option
    ``time_from_mtime`` becomes the file's mtime under the parser's keyword
    (:data:`pipelines.sources.MTIME_OPTIONS`)."""
    options = _OPTION_BUILDERS.get(item.source, _no_options)(item.path)
    options |= dict(item.path_options) | (extra or {})
    if options.pop(TIME_FROM_MTIME, False):
        options[MTIME_OPTIONS[item.source]] = _mtime(item.path)["file_mtime"]
    return options


def _no_options(_path: Path) -> dict[str, Any]:
    return {}


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


@dataclass
class ParsedFile:
    """A parsed file waiting for validation and loading (picklable: it may come from a worker)."""

    item: LandingFile
    data: bytes
    sha256: str
    table: str
    parsed: Parsed
    stream: streams.StreamRead | None = None
    forget: bool = False  # replace whatever this path or content loaded before (--force)
    stat: tuple[int, int] | None = None  # a whole file's size and mtime (ns) before it was read


def _parse(
    item: LandingFile, data: bytes, sha256: str, extra: dict[str, Any] | None = None
) -> ParsedFile:
    table, parser = PARSERS[item.source]
    options = file_options(item, extra)
    source_file = item.resolved
    try:
        parsed = parser.parse(data, source_file=source_file, **options)
    except Exception as error:  # a parser bug or an input no rule foresaw: quarantine the file
        log.warning("parser for %s failed on %s: %r", item.source, source_file, error)
        reason = f"the {item.source} parser failed on this file: {type(error).__name__}: {error}"
        parsed = _file_reject(parser, source_file, reason)
    return ParsedFile(item, data, sha256, table, parsed)


def _parse_together(
    members: list[tuple[LandingFile, bytes, str]], extra: dict[str, dict[str, Any]]
) -> list[ParsedFile]:
    """Parse files of one source whose parser reads many files in one pass (``parse_many``:
    kernel logs), each with its own options; any failure falls back to file by file, so one bad
    file is one quarantine row."""
    if not members:
        return []
    source = members[0][0].source
    table, parser = PARSERS[source]
    inputs = [
        (data, item.resolved, file_options(item, extra.get(source))) for item, data, _ in members
    ]
    try:
        results = parser.parse_many(inputs)
    except Exception:
        return [_parse(item, data, sha, extra.get(source)) for item, data, sha in members]
    return [
        ParsedFile(item, data, sha, table, parsed)
        for (item, data, sha), parsed in zip(members, results, strict=True)
    ]


PARSE_TOGETHER_FILES = 512
"""Files parsed in one pass by a parser that takes many (``parse_many``)."""


def _file_reject(parser: Any, source_file: str, reason: str) -> Parsed:
    """A parse result of no rows and one file-level reject (``line_no = 0``)."""
    rows = pl.DataFrame(schema=parser.SCHEMA)
    rejects = pl.DataFrame(
        {"source_file": [source_file], "line_no": [0], "raw": [""], "reason": [reason[:500]]},
        schema=REJECT_SCHEMA,
    )
    return Parsed(rows, rejects, 0)


def _looks_binary(data: bytes) -> bool:
    """True when the head holds NUL bytes or is mostly control bytes: not a text log or table."""
    head = data[:BINARY_SNIFF_BYTES]
    if b"\0" not in head:
        return False
    controls = sum(head.count(bytes([b])) for b in (*range(9), *range(14, 27), *range(28, 32)))
    return controls * 10 >= len(head)


def _plain_whole(item: LandingFile, raw: bytes) -> tuple[bytes, str, str | None]:
    """A whole-file source's plain content, its key and a file-level problem (or None)."""
    try:
        data, _codec = streams.decompress(raw)
    except streams.IncompleteCompressedError as error:
        return raw, warehouse.file_sha256(raw), f"held: {error}"
    except ValueError as error:
        return raw, warehouse.file_sha256(raw), str(error)
    if _looks_binary(data):
        return (
            data,
            warehouse.file_sha256(data),
            (
                f"binary file (NUL and control bytes in its first {BINARY_SNIFF_BYTES} bytes): "
                f"not {item.source} telemetry"
            ),
        )
    return data, warehouse.file_sha256(data), None


def parse_files(
    items: list[LandingFile], parser_options: dict[str, dict[str, Any]] | None = None
) -> list[ParsedFile]:
    """Read, hash and parse whole-file landing files (the step an ingest can fan out to
    workers); small files of one kind are parsed joined. ``parser_options`` maps a source to
    extra parser keyword arguments, as in :func:`ingest`. Archives still being written are left
    out (the ingest reports them held)."""
    extra = parser_options or {}
    return [parsed for chunk in _hashed_chunks(items) for parsed in _parse_read(chunk, extra)]


def _parse_read(read: list[_Read], extra: dict[str, dict[str, Any]]) -> Iterator[ParsedFile]:
    """Parse files already read; files :mod:`pipelines.sources.batch` can join go in groups."""
    groups: dict[tuple[str, bytes], list[_Read]] = {}
    together: dict[str, list[tuple[LandingFile, bytes, str]]] = {}
    for item, data, sha, problem in read:
        parser = PARSERS[item.source][1]
        if problem is not None:
            if not problem.startswith("held:"):
                source_file = item.resolved
                yield ParsedFile(item, data, sha, PARSERS[item.source][0],
                                 _file_reject(parser, source_file, problem))  # fmt: skip
            continue
        if hasattr(parser, "parse_many"):
            together.setdefault(item.source, []).append((item, data, sha))
            continue
        header = None
        if (
            batch.supports(parser)
            and item.source not in _OPTION_BUILDERS
            and not extra.get(item.source)
            and not item.path_options
        ):
            header = batch.groupable(data)
        if header is None:
            yield _parse(item, data, sha, extra.get(item.source))
        else:
            groups.setdefault((item.source, header), []).append((item, data, sha, problem))
    for (source, _), members in groups.items():
        table, parser = PARSERS[source]
        try:
            results = batch.parse_joined(
                parser, [(item.resolved, data) for item, data, _, _ in members]
            )
        except Exception:  # one bad member: parse them one by one, each failure its own reject
            results = [_parse(i, d, sh).parsed for i, d, sh, _ in members]
        for (item, data, sha, _), parsed in zip(members, results, strict=True):
            yield ParsedFile(item, data, sha, table, parsed)
    for items in together.values():
        yield from _parse_together(items, extra)


def _file_load(
    pending: ParsedFile, good: pl.DataFrame, bad: pl.DataFrame, results: list[dict[str, Any]]
) -> warehouse.FileLoad:
    read = pending.stream
    clean = bad.height == pending.parsed.rejects.height == 0
    if clean and (read is None or good.height == 0):
        # no reject, nothing to renumber (most small files, most reads of a tick): no frame work
        return warehouse.FileLoad(
            path=pending.item.resolved if read is None else read.path,
            source=pending.item.source, table=pending.table, sha256=pending.sha256, rows=good,
            rejects=_NO_REJECTS, n_ignored=pending.parsed.n_ignored,
            quality_results=tuple(results), stream=read, forget=pending.forget, stat=pending.stat,
        )  # fmt: skip
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
    )


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


def ingest(
    db_path: Path,
    files: list[LandingFile],
    *,
    lock_timeout_s: float = 60.0,
    batch_rows: int = 500_000,
    parser_options: dict[str, dict[str, Any]] | None = None,
    on_file: Callable[[warehouse.LoadCounts], None] | None = None,
    lake_dir: Path | None = None,
    parse_many: Callable[[list[LandingFile]], Iterable[ParsedFile]] | None = None,
    force: bool = False,
    hold_quiet_s: float = HOLD_QUIET_S,
) -> list[warehouse.LoadCounts]:
    """Ingest ``files`` into the warehouse at ``db_path`` and rebuild the views.

    Files are read and hashed in chunks (one lookup of the chunk's hashes), parsed (small files
    of one kind joined, :mod:`pipelines.sources.batch`) and validated in batches of about
    ``batch_rows`` rows per raw table (one Great Expectations run per batch: its per-call overhead
    dwarfs a small file); each batch is loaded in one transaction that records every file with
    its rows, so no file is ever half-loaded. ``parser_options`` maps a source to extra parser
    keyword arguments (the fault-log ``mapping``).

    With ``lake_dir``, loaded rows go to Parquet parts under it (:mod:`pipelines.lake`) instead
    of the raw tables, which become views over the lake. ``parse_many`` takes over parsing: it
    gets the files not loaded before and yields their :class:`ParsedFile` in any order (a flow
    fans :func:`parse_files` out to its task runner); validation and loading stay here, in the
    one process that holds the warehouse's write lock.

    Tailed sources (:data:`TAILED`) are read as streams (:func:`_tailed_reads`): only new complete
    lines; a last line without its newline is held until it is complete, its file is compressed
    or renamed, or it has been quiet for ``hold_quiet_s`` seconds.

    With ``force``, whatever the named files loaded before (under any source, as a whole file or
    as a stream) is replaced by this load, in the same transaction (``relia ingest --force``: a
    file ingested under the wrong ``--source``).
    """
    extra = parser_options or {}
    if any(f.source == "fault_log" for f in files) and "mapping" not in extra.get("fault_log", {}):
        msg = "fault_log files need a column mapping: pass --mapping mapping.yaml"
        raise ValueError(msg)
    now = datetime.now(UTC)
    results: list[warehouse.LoadCounts] = []

    def emit(counts: list[warehouse.LoadCounts]) -> None:
        results.extend(counts)
        if on_file is not None:
            for c in counts:
                on_file(c)

    with warehouse.connect(db_path, lock_timeout_s=lock_timeout_s) as con:
        warehouse.apply_schema(con)
        lake.check_warehouse(con, lake_dir)
        classes = _component_classes(con)
        queues: dict[str, list[ParsedFile]] = {}
        queued_rows: dict[str, int] = {}
        whole = [f for f in files if f.source not in TAILED]
        tailed = [f for f in files if f.source in TAILED]
        forced = {str(f.path.resolve()) for f in files} if force else set()
        parsed = itertools.chain(
            _parsed_new_files(con, whole, extra, parse_many, on_known=emit, force=force),
            _tailed_reads(con, tailed, extra, quiet_s=hold_quiet_s, on_known=emit, forced=forced),
        )
        for pending in parsed:
            if force:
                pending.forget = True
            queue = queues.setdefault(pending.table, [])
            queue.append(pending)
            n_rows = queued_rows.get(pending.table, 0) + pending.parsed.rows.height
            queued_rows[pending.table] = n_rows
            if n_rows >= batch_rows:
                emit(_validate_and_load(con, queue, now=now, component_classes=classes,
                                        lake_dir=lake_dir))  # fmt: skip
                queue.clear()
                queued_rows[pending.table] = 0
        for queue in queues.values():
            if queue:
                emit(_validate_and_load(con, queue, now=now, component_classes=classes,
                                        lake_dir=lake_dir))  # fmt: skip
        if lake_dir is not None:
            lake.attach(con, lake_dir)
        warehouse.create_views(con)
    return results


LOOKUP_FILES = 512
"""Files read and hashed ahead, then looked up in ``raw_ingest_files`` with one query."""
LOOKUP_BYTES = 128 * 2**20
"""...or fewer, when their bytes reach this much (bounded read-ahead memory)."""

_Read = tuple[LandingFile, bytes, str, "str | None"]
"""A whole file read: the file, its plain bytes, their hash and a file-level problem or None."""


def _hashed_chunks(files: list[LandingFile]) -> Iterator[list[_Read]]:
    chunk: list[_Read] = []
    size = 0
    for item in files:
        data, sha, problem = _plain_whole(item, item.path.read_bytes())
        chunk.append((item, data, _keyed(item, sha), problem))
        size += len(data)
        if len(chunk) >= LOOKUP_FILES or size >= LOOKUP_BYTES:
            yield chunk
            chunk, size = [], 0
    if chunk:
        yield chunk


def _keyed(item: LandingFile, sha: str) -> str:
    """A whole file's lineage key: its content hash, or for a file its path pattern gave a host
    or run, a hash of both (the same bytes under two hosts' folders are two hosts' rows, and
    the same file under the same pattern is still loaded once)."""
    if not item.path_options:
        return sha
    return warehouse.file_sha256(f"{sha} {item.path_options!r}".encode())


def _parsed_new_files(
    con: duckdb.DuckDBPyConnection,
    files: list[LandingFile],
    extra: dict[str, dict[str, Any]],
    parse_many: Callable[[list[LandingFile]], Iterable[ParsedFile]] | None,
    *,
    on_known: Callable[[list[warehouse.LoadCounts]], None],
    force: bool = False,
) -> Iterator[ParsedFile]:
    """Parse the whole files whose content was not loaded before (nor seen earlier in this run).

    Files loaded before, repeats of a file's content and archives still being written (held) go
    to ``on_known`` at once. Files are read and hashed a chunk at a time (:data:`LOOKUP_FILES`,
    :data:`LOOKUP_BYTES`) and the chunk's hashes are looked up in one query. Without
    ``parse_many`` each new file is parsed as it is reached, so one chunk of files at a time is
    in memory.
    """
    queued: set[tuple[str, str]] = set()
    new: list[LandingFile] = []
    stats: dict[str, tuple[int, int]] = {}
    for chunk in _hashed_chunks(_changed_files(con, files, stats, on_known, force=force)):
        keys = [k for item, _, sha, _ in chunk
                for k in (sha, warehouse.no_lines_key(item.source, sha))]  # fmt: skip
        before = {} if force else warehouse.loaded_before(con, keys)
        fresh = []
        for item, data, sha, problem in chunk:
            previous = before.get(sha) or before.get(warehouse.no_lines_key(item.source, sha))
            if problem is not None and problem.startswith("held:"):
                on_known([_status(item, "held (compressed file still being written)", n_held=1)])
                continue
            if previous is not None or (sha, item.source) in queued:
                on_known([previous or _duplicate(item, sha)])
                continue
            queued.add((sha, item.source))
            fresh.append((item, data, sha, problem))
        if parse_many is None:
            for pending in _parse_read(fresh, extra):
                pending.stat = stats.get(pending.item.resolved)
                yield pending
        else:
            new.extend(item for item, _, _, _ in fresh)
    if new and parse_many is not None:
        for pending in parse_many(new):
            pending.stat = stats.get(pending.item.resolved)
            yield pending


def _changed_files(
    con: duckdb.DuckDBPyConnection,
    files: list[LandingFile],
    stats: dict[str, tuple[int, int]],
    on_known: Callable[[list[warehouse.LoadCounts]], None],
    *,
    force: bool,
) -> Iterator[LandingFile]:
    """The files to read: not those whose path, source, size and mtime are those recorded when
    they were loaded (their counts go to ``on_known``; one query per :data:`LOOKUP_FILES`).
    ``stats`` receives each file's ``(size, mtime_ns)``, taken before it is read."""
    for start in range(0, len(files), LOOKUP_FILES):
        group = files[start : start + LOOKUP_FILES]
        paths = [item.resolved for item in group]
        for item, path in zip(group, paths, strict=True):
            st = item.path.stat()
            stats[path] = (st.st_size, st.st_mtime_ns)
        if force:
            yield from group
            continue
        looked_up = [
            (path, item.source, *stats[path]) for item, path in zip(group, paths, strict=True)
        ]
        known = warehouse.loaded_unchanged(con, looked_up)
        for item, path in zip(group, paths, strict=True):
            previous = known.get(path)
            if previous is not None:
                on_known([previous])
            else:
                yield item


def _tailed_reads(
    con: duckdb.DuckDBPyConnection,
    files: list[LandingFile],
    extra: dict[str, dict[str, Any]],
    *,
    quiet_s: float,
    on_known: Callable[[list[warehouse.LoadCounts]], None],
    forced: set[str] | frozenset[str] = frozenset(),
) -> Iterator[ParsedFile]:
    """Plan and parse the reads of tailed files (:data:`TAILED`), one source at a time.

    A file whose size and mtime are those of its stream's last read, with no held line due, is
    not read at all. The others are matched to their streams in two passes
    (:class:`pipelines.streams.StreamIndex`): first files that continue a stream, then the
    rest, re-read (only new and rewritten logs, a few a run), so a run holds one file at a time.
    Only a read's new complete lines are parsed, many files' in one pass
    (:data:`PARSE_TOGETHER_FILES`). Streams whose rows carry a ``forced`` path are forgotten:
    their files are read as new streams.
    """
    planned: list[ParsedFile] = []
    size = 0
    for pending in _planned_reads(con, files, quiet_s=quiet_s, on_known=on_known, forced=forced):
        if pending.stream is None or not pending.data:  # a broken archive, or nothing to parse
            yield pending
            continue
        planned.append(pending)
        size += len(pending.data)
        if len(planned) >= PARSE_TOGETHER_FILES or size >= LOOKUP_BYTES:
            yield from _parse_chunks(planned, extra)
            planned, size = [], 0
    yield from _parse_chunks(planned, extra)


def _parse_chunks(planned: list[ParsedFile], extra: dict[str, dict[str, Any]]) -> list[ParsedFile]:
    """Parse planned stream reads (their new lines) of one source together."""
    if not planned:
        return []
    members = [(p.item, p.data, p.sha256) for p in planned]
    parser = PARSERS[planned[0].item.source][1]
    if hasattr(parser, "parse_many"):
        done = _parse_together(members, extra)
    else:
        done = [_parse(item, data, sha, extra.get(item.source)) for item, data, sha in members]
    return [
        ParsedFile(p.item, p.data, p.sha256, p.table, d.parsed, p.stream)
        for p, d in zip(planned, done, strict=True)
    ]


def _planned_reads(
    con: duckdb.DuckDBPyConnection,
    files: list[LandingFile],
    *,
    quiet_s: float,
    on_known: Callable[[list[warehouse.LoadCounts]], None],
    forced: set[str] | frozenset[str],
) -> Iterator[ParsedFile]:
    """The reads of tailed files, planned but not parsed (:func:`_tailed_reads`)."""
    now_ns = time.time_ns()
    broken: list[LandingFile] = []
    by_source: dict[str, list[LandingFile]] = {}
    for item in files:
        by_source.setdefault(item.source, []).append(item)
    for source, items in by_source.items():
        table = PARSERS[source][0]
        known = warehouse.stream_states(con, source)
        index = streams.StreamIndex(s for s in known if s.rows_path not in forced)
        deferred: list[tuple[LandingFile, os.stat_result]] = []
        for item in items:
            path = item.resolved
            stat = item.path.stat()
            here = index.at_path(path)
            if here is not None and streams.unchanged_since(
                here, file_size=stat.st_size, file_mtime_ns=stat.st_mtime_ns, now_ns=now_ns,
                quiet_s=quiet_s,
            ):  # fmt: skip
                index.claimed.add(here.stream_id)
                on_known([_unchanged(item)])
                continue
            if here is not None:  # a grown log: read its head, a window and the new bytes
                partial = streams.read_partial(path, here.consumed_bytes)
                if partial is not None and index.continues(here, partial):
                    yield from _planned(index, item, partial, None, stat, here, table, now_ns,
                                        quiet_s, on_known)  # fmt: skip
                    continue
            if here is None and not _may_continue(index, item):
                deferred.append((item, stat))  # read once, in the second pass
                continue
            read = _tailed_content(item, on_known, broken)
            if read is None:
                continue
            content, codec = read
            before = index.continuation(path, content)
            if before is None:
                deferred.append((item, stat))
                continue
            yield from _planned(index, item, content, codec, stat, before, table, now_ns,
                                quiet_s, on_known)  # fmt: skip
        for item, stat in deferred:
            read = _tailed_content(item, on_known, broken)
            if read is None:
                continue
            content, codec = read
            path = item.resolved
            before = index.continuation(path, content) or index.rest(path, content)
            yield from _planned(index, item, content, codec, stat, before, table, now_ns,
                                quiet_s, on_known)  # fmt: skip
    # broken archives: one quarantine row each, keyed by their bytes like a whole file
    yield from _parsed_new_files(con, broken, {}, None, on_known=on_known)


def _may_continue(index: streams.StreamIndex, item: LandingFile) -> bool:
    """Whether a file with no stream at its path might continue another one (a renamed or
    compressed generation); a plain file whose first bytes start no unclaimed stream's head
    cannot, and is left for the second pass without being read whole now."""
    with item.path.open("rb") as handle:
        head = handle.read(PEEK_BYTES)
    if streams.codec_of(head) is not None:
        return True  # an archive's plain head is known only once it is inflated
    return index.may_continue(head)


PEEK_BYTES = 4096
"""Bytes read to tell whether a new file could continue a known stream (heads are <= 1 KiB)."""


def _tailed_content(
    item: LandingFile,
    on_known: Callable[[list[warehouse.LoadCounts]], None],
    broken: list[LandingFile],
) -> tuple[bytes, str | None] | None:
    """A tailed file's plain bytes and codec; None for an empty file or an unfinished archive
    (reported to ``on_known``) and for a broken archive (added to ``broken``)."""
    try:
        content, codec = streams.decompress(item.path.read_bytes())
    except streams.IncompleteCompressedError:
        on_known([_status(item, "held (compressed file still being written)", n_held=1)])
        return None
    except ValueError:
        broken.append(item)
        return None
    if not content:
        on_known([_status(item, "empty: nothing to read yet")])
        return None
    return content, codec


def _planned(
    index: streams.StreamIndex,
    item: LandingFile,
    content: bytes | streams.Partial,
    codec: str | None,
    stat: os.stat_result,
    before: streams.StreamState | None,
    table: str,
    now_ns: int,
    quiet_s: float,
    on_known: Callable[[list[warehouse.LoadCounts]], None],
) -> Iterator[ParsedFile]:
    path = item.resolved
    read = streams.plan_read(
        index, before, source=item.source, table=table, path=path, content=content,
        codec=codec, file_size=stat.st_size,
        file_mtime_ns=stat.st_mtime_ns, now_ns=now_ns, quiet_s=quiet_s,
    )  # fmt: skip
    if (
        read.action == streams.UNCHANGED
        and before is not None
        and before.rows_path == path
        and before.held_bytes == read.after.held_bytes
        and (before.file_size, before.file_mtime_ns) == (stat.st_size, stat.st_mtime_ns)
    ):
        on_known([_unchanged(item)])
        return
    yield ParsedFile(item, read.chunk, read.after.stream_id, table, _nothing(item.source), read)


@functools.cache
def _nothing(source: str) -> Parsed:
    """No rows and no rejects, in ``source``'s row schema (a read not parsed yet, or empty)."""
    return Parsed(
        pl.DataFrame(schema=PARSERS[source][1].SCHEMA), pl.DataFrame(schema=REJECT_SCHEMA), 0
    )


def _unchanged(item: LandingFile) -> warehouse.LoadCounts:
    table, _ = PARSERS[item.source]
    return warehouse.LoadCounts(item.resolved, item.source, table, 0, 0, 0, 0, True,
                                status="no new lines")  # fmt: skip


def _status(item: LandingFile, status: str, *, n_held: int = 0) -> warehouse.LoadCounts:
    """Counts for a file nothing was loaded from, with what happened to it."""
    table, _ = PARSERS[item.source]
    return warehouse.LoadCounts(item.resolved, item.source, table, n_held, 0, 0, 0,
                                False, n_held=n_held, status=status)  # fmt: skip


def _duplicate(item: LandingFile, sha: str) -> warehouse.LoadCounts:
    """Counts for a file whose bytes equal another file's in the same run (loaded once)."""
    table, _ = PARSERS[item.source]
    return warehouse.LoadCounts(item.resolved, item.source, table, 0, 0, 0, 0, True)


def landing_files(
    landing_dir: Path, *, path_patterns: Iterable[PathPattern] = ()
) -> list[LandingFile]:
    """Every file under a landing root, refusing links that lead outside it (with what the
    sources' ``path_patterns`` capture from each path, as in :func:`discover`)."""
    return discover([landing_dir], path_patterns=path_patterns)
