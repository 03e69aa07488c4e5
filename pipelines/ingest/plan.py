"""Plan what an ingest reads: new whole files (by content hash) and new lines of tailed logs.

Whole files already loaded (same path, size and mtime; or the same content) are not parsed
again; their counts are reported at once. Tailed sources (:data:`TAILED`) are streams
(:mod:`pipelines.ingest.streams`): only each file's new complete lines are read and parsed.
:mod:`pipelines.ingest` validates and loads what these yield.
"""

from __future__ import annotations

import functools
import time
from typing import TYPE_CHECKING, Any

import polars as pl

from pipelines import warehouse
from pipelines.ingest import streams
from pipelines.ingest.long_lines import with_long_lines
from pipelines.ingest.parse import (
    LOOKUP_BYTES,
    Growth,
    ParsedFile,
    cut_members,
    hashed_chunks,
    keyed,
    looks_binary,
    parse_file,
    parse_read,
    parse_together,
)
from pipelines.ingest.sources import PARSERS
from pipelines.ingest.sources.common import REJECT_SCHEMA, Parsed
from pipelines.runtime.settings import DEFAULT_MAX_LINE_BYTES

if TYPE_CHECKING:
    import os
    from collections.abc import Callable, Iterable, Iterator

    import duckdb

    from pipelines.ingest.landing import LandingFile

TAILED = frozenset({"kernel", "training"})
"""Sources read as streams of lines (new complete lines only): their parsers read each line on
its own, so a chunk of lines parses like the whole file. Others are read whole."""

HOLD_QUIET_S = 300.0
"""Default seconds after its last write when a held last line (no newline) is read as a line."""

PARSE_TOGETHER_FILES = 4096
"""Files parsed in one pass by a parser that takes many (``parse_many``), or fewer when their new
bytes reach ``LOOKUP_BYTES``: a tick's reads are a few KiB each, and a polars plan per chunk
costs tens of milliseconds."""


STAT_LOOKUP_FILES = 65_536
"""Files whose recorded stat is looked up in one query (a path, a source and two integers each:
a tick that finds nothing new over a fleet-year's 8,500 files makes one query, not 17)."""


def parsed_new_files(
    con: duckdb.DuckDBPyConnection,
    files: list[LandingFile],
    extra: dict[str, dict[str, Any]],
    parse_many: Callable[[list[LandingFile]], Iterable[ParsedFile]] | None,
    *,
    on_known: Callable[[list[warehouse.LoadCounts]], None],
    force: bool = False,
    limits: streams.ArchiveLimits | None = None,
    quiet_s: float = HOLD_QUIET_S,
    max_line_bytes: int = DEFAULT_MAX_LINE_BYTES,
) -> Iterator[ParsedFile]:
    """Parse the whole files whose content was not loaded before (nor seen earlier in this run).

    A line longer than ``max_line_bytes`` is quarantined with its length, not parsed
    (:mod:`pipelines.ingest.long_lines`; also in what ``parse_many`` parses).

    Files loaded before, repeats of a file's content and archives still being written (held) go
    to ``on_known`` at once. Files are read and hashed a chunk at a time (:data:`LOOKUP_FILES`,
    :data:`LOOKUP_BYTES`) and the chunk's hashes are looked up in one query. Without
    ``parse_many`` each new file is parsed as it is reached, so one chunk of files at a time is
    in memory.

    A file whose content extends what was loaded from its path before (a dump still being
    written) replaces that load (:func:`_growth`); its last line without a newline is held
    until the file has been quiet for ``quiet_s`` seconds. Such files are parsed here, not by
    ``parse_many``.

    An archive that ends early is held while it is written to, and is one quarantine row once it
    has been quiet for ``quiet_s`` seconds; an archive that inflates past ``limits`` is one
    quarantine row at once.
    """
    queued: set[tuple[str, str]] = set()
    new: list[LandingFile] = []
    stats: dict[str, tuple[int, int]] = {}
    growths: dict[str, Growth] = {}
    now_ns = time.time_ns()
    changed = _changed_files(con, files, stats, on_known, force=force)
    for chunk in hashed_chunks(changed, limits=limits):
        keys = [
            k for item, _, sha, _ in chunk for k in (sha, warehouse.no_lines_key(item.source, sha))
        ]
        before = {} if force else warehouse.loaded_before(con, keys)
        at_paths = (
            {}
            if force
            else warehouse.loads_at_paths(
                con, [(item.resolved, item.source) for item, _, _, _ in chunk]
            )
        )
        fresh = []
        by_self = []
        seen: list[tuple[str, str, int, int, str]] = []  # known content at a new path or stat
        for item, data, sha, problem in chunk:
            key = sha if sha in before else warehouse.no_lines_key(item.source, sha)
            previous = before.get(key)
            if problem is not None and problem.startswith("held:"):
                quiet_for_s = (now_ns - stats[item.resolved][1]) / 1e9
                if quiet_for_s < quiet_s:
                    on_known(
                        [_status(item, "held (compressed file still being written)", n_held=1)]
                    )
                    continue
                problem = (
                    f"{problem.removeprefix('held:').strip()} and has been quiet for "
                    f"{quiet_for_s:.0f} s (more than {quiet_s:g} s, --hold-quiet-s): not read"
                )
            growth = None
            if problem is None:
                quiet = now_ns - stats[item.resolved][1] >= quiet_s * 1e9
                growth = _growth(item, data, at_paths.get(item.resolved, []), quiet=quiet)
                if 0 < growth.n_held_bytes == len(data):  # no complete line yet: nothing to record
                    on_known([_status(item, "held (no complete line yet)", n_held=1)])
                    continue
                if growth.supersedes == sha and not growth.n_held:
                    previous = None  # its held last line is due: load it again, released
            if previous is not None or (sha, item.source) in queued:
                on_known([previous or _duplicate(item, sha)])
                if previous is not None and growth is not None and not growth.n_held:
                    seen.append((item.resolved, item.source, *stats[item.resolved], key))
                continue
            queued.add((sha, item.source))
            if growth is not None:
                growths[item.resolved] = growth
                data = data[: growth.content_bytes - growth.n_held_bytes]
            if (
                parse_many is None
                or problem is not None  # one reject here, never read again
                or (growth is not None and growth.in_place_only)
            ):
                by_self.append((item, data, sha, problem))
            else:
                fresh.append((item, data, sha, problem))
        warehouse.record_seen(con, seen)
        if parse_many is None:
            by_self, fresh = fresh + by_self, []
        for pending in parse_read(by_self, extra, max_line_bytes=max_line_bytes):
            yield _with_stat(pending, stats, growths)
        new.extend(item for item, _, _, _ in fresh)
    if new and parse_many is not None:
        for pending in parse_many(new):
            yield _with_stat(pending, stats, growths)


def _with_stat(
    pending: ParsedFile, stats: dict[str, tuple[int, int]], growths: dict[str, Growth]
) -> ParsedFile:
    pending.stat = stats.get(pending.item.resolved)
    pending.growth = growths.get(pending.item.resolved)
    return pending


def _growth(
    item: LandingFile, data: bytes, earlier: list[tuple[str, int, int, int]], *, quiet: bool
) -> Growth:
    """Return how a whole file's plain ``data`` relates to the loads of its path before.

    A last line without its newline is held unless the file has been quiet or is compressed
    (finished), or is a JSON or XML document (not lines: cut short, it fails to parse, and is
    replaced once it is whole). Content whose first bytes are those an earlier load of the same
    path covered (``earlier``: key, content bytes, lines held, rows loaded), and which is longer
    or now releases that load's held line, extends it: it supersedes that load, whose rows of
    complete lines stay. Content that merely differs is a new file, keyed by its hash.
    """
    held = 0
    head = data.lstrip()
    # JSON or XML (nvidia-smi -q -x): one document, not lines (never held)
    document = head[:1] in (b"{", b"[") or head.startswith(b"<?xml")
    if data and not data.endswith(b"\n") and not quiet and not document:
        with item.path.open("rb") as handle:
            compressed = streams.codec_of(handle.read(8)) is not None
        if not compressed:
            held = len(data) - (data.rfind(b"\n") + 1)
    for key, n_bytes, old_held, n_loaded in earlier:
        longer = n_bytes < len(data) or (n_bytes == len(data) and old_held and not held)
        if not longer:
            continue
        prefix = keyed(item, warehouse.file_sha256(data[:n_bytes]))
        if key not in (prefix, warehouse.no_lines_key(item.source, prefix)):
            continue
        kept = data[:n_bytes].count(b"\n") if n_loaded else 0
        return Growth(len(data), int(held > 0), key, kept, held)
    return Growth(len(data), int(held > 0), n_held_bytes=held)


def _changed_files(
    con: duckdb.DuckDBPyConnection,
    files: list[LandingFile],
    stats: dict[str, tuple[int, int]],
    on_known: Callable[[list[warehouse.LoadCounts]], None],
    *,
    force: bool,
) -> Iterator[LandingFile]:
    """Yield the files to read.

    Not those whose path, source, size and mtime are those recorded when they were loaded (their
    counts go to ``on_known``; one query per :data:`STAT_LOOKUP_FILES`). ``stats`` receives each
    file's ``(size, mtime_ns)``, taken before it is read.
    """
    for start in range(0, len(files), STAT_LOOKUP_FILES):
        group = files[start : start + STAT_LOOKUP_FILES]
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


def tailed_reads(
    con: duckdb.DuckDBPyConnection,
    files: list[LandingFile],
    extra: dict[str, dict[str, Any]],
    *,
    quiet_s: float,
    on_known: Callable[[list[warehouse.LoadCounts]], None],
    forced: set[str] | frozenset[str] = frozenset(),
    limits: streams.ArchiveLimits | None = None,
    max_line_bytes: int = DEFAULT_MAX_LINE_BYTES,
) -> Iterator[ParsedFile]:
    """Plan and parse the reads of tailed files (:data:`TAILED`), one source at a time.

    A file whose size and mtime are those of its stream's last read, with no held line due, is
    not read at all. The others are matched to their streams in two passes
    (:class:`pipelines.ingest.streams.StreamIndex`): first files that continue a stream, then the
    rest, re-read (only new and rewritten logs, a few a run), so a run holds one file at a time.
    Only a read's new complete lines are parsed, many files' in one pass
    (:data:`PARSE_TOGETHER_FILES`). Streams whose rows carry a ``forced`` path are forgotten:
    their files are read as new streams. A file that is no log of lines (a binary file, an
    archive past ``limits``, broken, or cut short and quiet for ``quiet_s``) is one quarantine
    row, keyed like a whole file, and is not read again while its size and mtime stay. A line
    longer than ``max_line_bytes`` is quarantined with its length, not parsed.
    """
    planned: list[ParsedFile] = []
    size = 0
    reads = _planned_reads(
        con, files, quiet_s=quiet_s, on_known=on_known, forced=forced, limits=limits
    )
    for pending in reads:
        if pending.stream is None or not pending.data:  # a broken archive, or nothing to parse
            yield pending
            continue
        if planned and planned[0].item.source != pending.item.source:
            yield from _parse_chunks(planned, extra, max_line_bytes)  # one parser per chunk
            planned, size = [], 0
        planned.append(pending)
        size += len(pending.data)
        if len(planned) >= PARSE_TOGETHER_FILES or size >= LOOKUP_BYTES:
            yield from _parse_chunks(planned, extra, max_line_bytes)
            planned, size = [], 0
    yield from _parse_chunks(planned, extra, max_line_bytes)


def _parse_chunks(
    planned: list[ParsedFile], extra: dict[str, dict[str, Any]], max_line_bytes: int
) -> list[ParsedFile]:
    """Parse planned stream reads (their new lines) of one source together."""
    if not planned:
        return []
    members, long = cut_members([(p.item, p.data, p.sha256) for p in planned], max_line_bytes)
    parser = PARSERS[planned[0].item.source][1]
    if hasattr(parser, "parse_many"):
        done = parse_together(members, extra)
    else:
        done = [parse_file(item, data, sha, extra.get(item.source)) for item, data, sha in members]
    return [
        ParsedFile(
            p.item,
            d.data,
            p.sha256,
            p.table,
            with_long_lines(d.parsed, long.get(id(p.item))),
            p.stream,
            time_assumption=d.time_assumption,
        )
        for p, d in zip(planned, done, strict=True)
    ]


def _planned_reads(
    con: duckdb.DuckDBPyConnection,
    files: list[LandingFile],
    *,
    quiet_s: float,
    on_known: Callable[[list[warehouse.LoadCounts]], None],
    forced: set[str] | frozenset[str],
    limits: streams.ArchiveLimits | None,
) -> Iterator[ParsedFile]:
    """Return the reads of tailed files, planned but not parsed (:func:`tailed_reads`)."""
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
        path_options = {other.resolved: other.path_options for other in items}
        quarantined = _quarantined_before(con, items, index, forced, on_known)
        for item in items:
            path = item.resolved
            if path in quarantined:
                continue
            stat = item.path.stat()
            here = index.at_path(path)
            if here is not None and streams.unchanged_since(
                here,
                file_size=stat.st_size,
                file_mtime_ns=stat.st_mtime_ns,
                now_ns=now_ns,
                quiet_s=quiet_s,
            ):
                index.claimed.add(here.stream_id)
                on_known([_unchanged(item)])
                continue
            if here is not None:  # a grown log: read its head, a window and the new bytes
                partial = streams.read_partial(path, here.consumed_bytes)
                if partial is not None and index.continues(here, partial):
                    yield from _planned(
                        index, item, partial, None, stat, here, table, now_ns, quiet_s, on_known
                    )
                    continue
            if here is None and not (index.has_unclaimed() and _may_continue(index, item)):
                deferred.append((item, stat))  # read once, in the second pass
                continue
            read = _tailed_content(item, on_known, broken, limits, now_ns - int(quiet_s * 1e9))
            if read is None:
                continue
            content, codec = read
            before = index.continuation(path, content)
            if before is None:
                deferred.append((item, stat))
                continue
            yield from _planned(
                index, item, content, codec, stat, before, table, now_ns, quiet_s, on_known
            )
        for item, stat in deferred:
            read = _tailed_content(item, on_known, broken, limits, now_ns - int(quiet_s * 1e9))
            if read is None:
                continue
            content, codec = read
            path = item.resolved
            before = index.continuation(path, content) or index.rest(path, content)
            if before is None:
                copy = index.copy_of(content, same_source=_same_source(item, path_options))
                if copy is not None and not copy[1]:
                    on_known([_status(item, f"same stream as {copy[0].rows_path}")])
                    continue
                before = None if copy is None else copy[0]
            yield from _planned(
                index, item, content, codec, stat, before, table, now_ns, quiet_s, on_known
            )
    # binary files and broken archives: one quarantine row each, keyed like a whole file
    yield from parsed_new_files(
        con, broken, {}, None, on_known=on_known, limits=limits, quiet_s=quiet_s
    )


def _quarantined_before(
    con: duckdb.DuckDBPyConnection,
    items: list[LandingFile],
    index: streams.StreamIndex,
    forced: set[str] | frozenset[str],
    on_known: Callable[[list[warehouse.LoadCounts]], None],
) -> set[str]:
    """Return the paths of files at no stream's path quarantined whole before, unchanged since.

    Their counts go to ``on_known``: a binary file or an archive past its limits is not read (nor
    inflated) again on every run.
    """
    candidates = [
        item
        for item in items
        if index.at_path(item.resolved) is None and item.resolved not in forced
    ]
    looked_up = []
    for item in candidates:
        st = item.path.stat()
        looked_up.append((item.resolved, item.source, st.st_size, st.st_mtime_ns))
    known = warehouse.loaded_unchanged(con, looked_up)
    on_known(list(known.values()))
    return set(known)


def _same_source(
    item: LandingFile, options: dict[str, tuple[tuple[str, str], ...]]
) -> Callable[[streams.StreamState], bool]:
    """Return whether a stream's lines mean what ``item``'s would.

    They do when the file the stream's rows carry got the same values from its path pattern
    (``options``: the path options of each file of this run by path; for a file not in this
    run: none) and from its name (the job of Slurm's default output name ``slurm-<id>.out``, a
    parser's ``job_from_name``) as ``item``.
    """
    named = getattr(PARSERS[item.source][1], "job_from_name", None)

    def identity(path: str, path_options: tuple[tuple[str, str], ...]) -> tuple[object, ...]:
        return (path_options, None if named is None else named(path))

    mine = identity(item.resolved, item.path_options)

    def same(state: streams.StreamState) -> bool:
        return identity(state.rows_path, options.get(state.rows_path, ())) == mine

    return same


def _may_continue(index: streams.StreamIndex, item: LandingFile) -> bool:
    """Return whether a file with no stream at its path might continue another one.

    Another one is a renamed or compressed generation; a plain file whose first bytes start no
    unclaimed stream's head cannot, and is left for the second pass without being read whole now.
    """
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
    limits: streams.ArchiveLimits | None,
    quiet_since_ns: int,
) -> tuple[bytes, str | None] | None:
    """Return a tailed file's plain bytes and codec.

    None for an empty file or an unfinished archive written to since ``quiet_since_ns``
    (reported to ``on_known``) and for a file that is no log of lines (added to ``broken``): a
    binary file, an archive past ``limits``, broken or cut short and quiet since then.
    """
    try:
        content, codec = streams.read_plain(item.path, limits=limits)
    except streams.IncompleteCompressedError:
        if item.path.stat().st_mtime_ns <= quiet_since_ns:
            broken.append(item)
        else:
            on_known([_status(item, "held (compressed file still being written)", n_held=1)])
        return None
    except (ValueError, MemoryError):
        broken.append(item)
        return None
    if looks_binary(content):
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
        index,
        before,
        source=item.source,
        table=table,
        path=path,
        content=content,
        codec=codec,
        file_size=stat.st_size,
        file_mtime_ns=stat.st_mtime_ns,
        now_ns=now_ns,
        quiet_s=quiet_s,
    )
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
    return warehouse.LoadCounts(
        item.resolved, item.source, table, 0, 0, 0, 0, True, status="no new lines"
    )


def _status(item: LandingFile, status: str, *, n_held: int = 0) -> warehouse.LoadCounts:
    """Return counts for a file nothing was loaded from, with what happened to it."""
    table, _ = PARSERS[item.source]
    return warehouse.LoadCounts(
        item.resolved, item.source, table, n_held, 0, 0, 0, False, n_held=n_held, status=status
    )


def _duplicate(item: LandingFile, sha: str) -> warehouse.LoadCounts:
    """Return counts for a file whose bytes equal another file's in the same run (loaded once)."""
    table, _ = PARSERS[item.source]
    return warehouse.LoadCounts(item.resolved, item.source, table, 0, 0, 0, 0, True)
