"""Read, hash and parse whole landing files into ``ParsedFile``s (the step that fans out).

A file's bytes are decompressed (gzip, bzip2, xz, zstd, told by their magic bytes) and hashed;
a binary file, a broken archive or one that inflates past its limits
(:class:`pipelines.ingest.archives.ArchiveLimits`) becomes one file-level reject. Small files of one
kind are parsed joined (:mod:`pipelines.ingest.sources.batch`), files of a parser that reads many
in one pass (``parse_many``) together; a parser that fails on a file quarantines that file only.
"""

from __future__ import annotations

import hashlib
import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import polars as pl

from pipelines import warehouse
from pipelines.ingest import streams
from pipelines.ingest.landing import (
    OPTION_BUILDERS,
    LandingFile,
    content_options,
    file_options,
    time_assumption,
)
from pipelines.ingest.long_lines import cut_long_lines, with_long_lines
from pipelines.ingest.sources import PARSERS, batch
from pipelines.ingest.sources.common import REJECT_SCHEMA, Parsed
from pipelines.runtime.settings import DEFAULT_MAX_LINE_BYTES

if TYPE_CHECKING:
    from collections.abc import Iterable, Iterator

log = logging.getLogger(__name__)

BINARY_SNIFF_BYTES = 8192
"""Head bytes inspected to tell a binary file from telemetry text."""

LOOKUP_FILES = 512
"""Files read and hashed ahead, then looked up in ``raw_ingest_files`` with one query."""
LOOKUP_BYTES = 32 * 2**20
"""...or fewer, when their bytes reach this much (bounded read-ahead memory)."""

FileRead = tuple[LandingFile, bytes, str, "str | None"]
"""A whole file read: the file, its plain bytes, their hash and a file-level problem or None."""


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
    growth: Growth | None = None  # a whole file read while it may still be written
    time_assumption: str = ""  # what its times rest on that its lines do not print


@dataclass(frozen=True)
class Growth:
    """How a whole file read at a path relates to what was loaded from that path before."""

    content_bytes: int  # the plain bytes its key covers
    n_held: int = 0  # its last line has no newline yet and is held (0 or 1)
    supersedes: str | None = None  # the key of the earlier load whose content it extends
    kept_lines: int = 0  # lines of that load whose rows stay in the table
    n_held_bytes: int = 0  # bytes of the held last line

    @property
    def in_place_only(self) -> bool:
        """Return whether the file must be parsed by the ingest itself (held or extending)."""
        return bool(self.n_held or self.supersedes)


def parse_file(
    item: LandingFile, data: bytes, sha256: str, extra: dict[str, Any] | None = None
) -> ParsedFile:
    """Parse one file's plain bytes with its source's parser.

    Parameters
    ----------
    item
        The landing file (its source names the parser).
    data
        Its plain (decompressed) bytes, or a stream read's new lines.
    sha256
        Its lineage key.
    extra
        The source's extra parser options (:func:`pipelines.ingest.landing.file_options`).

    Returns
    -------
    ParsedFile
        The parse result; a parser that raises gives no rows and one file-level reject naming
        the error.
    """
    table, parser = PARSERS[item.source]
    options = content_options(item.source, data, file_options(item, extra))
    source_file = item.resolved
    try:
        parsed = parser.parse(data, source_file=source_file, **options)
    except Exception as error:  # a parser bug or an input no rule foresaw: quarantine the file
        log.warning("parser for %s failed on %s: %r", item.source, source_file, error)
        reason = f"the {item.source} parser failed on this file: {type(error).__name__}: {error}"
        parsed = _file_reject(parser, source_file, reason)
    assumed = time_assumption(options, parsed.rows)
    return ParsedFile(item, data, sha256, table, parsed, time_assumption=assumed)


def parse_together(
    members: list[tuple[LandingFile, bytes, str]], extra: dict[str, dict[str, Any]]
) -> list[ParsedFile]:
    """Parse files of one source whose parser reads many files in one pass.

    The parser is ``parse_many`` (kernel logs); each file has its own options. Any failure falls
    back to file by file, so one bad file is one quarantine row.
    """
    if not members:
        return []
    source = members[0][0].source
    table, parser = PARSERS[source]
    inputs = [
        (data, item.resolved, content_options(source, data, file_options(item, extra.get(source))))
        for item, data, _ in members
    ]
    try:
        results = parser.parse_many(inputs)
    except Exception:
        return [parse_file(item, data, sha, extra.get(source)) for item, data, sha in members]
    return [
        ParsedFile(
            item, data, sha, table, parsed, time_assumption=time_assumption(opts, parsed.rows)
        )
        for (item, data, sha), (_data, _path, opts), parsed in zip(
            members, inputs, results, strict=True
        )
    ]


def _file_reject(parser: Any, source_file: str, reason: str) -> Parsed:
    """Return a parse result of no rows and one file-level reject (``line_no = 0``)."""
    rows = pl.DataFrame(schema=parser.SCHEMA)
    rejects = pl.DataFrame(
        {"source_file": [source_file], "line_no": [0], "raw": [""], "reason": [reason[:500]]},
        schema=REJECT_SCHEMA,
    )
    return Parsed(rows, rejects, 0)


def looks_binary(data: bytes) -> bool:
    """Return True when the head holds NUL bytes or is mostly control bytes.

    Such a file is not a text log or table.
    """
    head = data[:BINARY_SNIFF_BYTES]
    if b"\0" not in head:
        return False
    controls = sum(head.count(bytes([b])) for b in (*range(9), *range(14, 27), *range(28, 32)))
    return controls * 10 >= len(head)


def _plain_whole(
    item: LandingFile, limits: streams.ArchiveLimits | None
) -> tuple[bytes, str, str | None]:
    """Return a whole-file source's plain content, its key and a file-level problem (or None).

    A file with a problem (an archive past its limits, cut short or broken; a file too big for
    memory) gives no bytes and is keyed by its bytes on disk (:func:`_disk_key`); an archive cut
    short has a problem that starts with ``held:``.
    """
    try:
        data, _codec = streams.read_plain(item.path, limits=limits)
    except streams.IncompleteCompressedError as error:
        return b"", _disk_key(item), f"held: {error}"
    except ValueError as error:  # past a limit of pipelines.ingest.archives, or not a valid archive
        return b"", _disk_key(item), str(error)
    except MemoryError:
        problem = "not enough memory to read this file: split it, or ingest it on a bigger host"
        return b"", _disk_key(item), problem
    if looks_binary(data):
        return (
            data,
            warehouse.file_sha256(data),
            (
                f"binary file (NUL and control bytes in its first {BINARY_SNIFF_BYTES} bytes): "
                f"not {item.source} telemetry"
            ),
        )
    return data, warehouse.file_sha256(data), None


def _disk_key(item: LandingFile) -> str:
    """Return the key of a file nothing is read from: its bytes on disk, hashed a piece at a time.

    The key is per source (like a file with no line of its source), so a copy of the same bytes
    in another source's folder is that source's own quarantine row.
    """
    with item.path.open("rb") as handle:
        sha = hashlib.file_digest(handle, "sha256").hexdigest()
    return warehouse.no_lines_key(item.source, sha)


def parse_files(
    items: list[LandingFile],
    parser_options: dict[str, dict[str, Any]] | None = None,
    *,
    limits: streams.ArchiveLimits | None = None,
    max_line_bytes: int = DEFAULT_MAX_LINE_BYTES,
) -> list[ParsedFile]:
    """Read, hash and parse whole-file landing files.

    This is the step an ingest can fan out to workers; small files of one kind are parsed joined.
    ``parser_options`` maps a source to extra parser keyword arguments, as in
    :func:`pipelines.ingest.ingest`. Archives still being written are left out (the ingest reports
    them held); an archive that inflates past ``limits`` (default
    :class:`pipelines.ingest.archives.ArchiveLimits`) is one file-level reject.
    """
    extra = parser_options or {}
    chunks = hashed_chunks(items, limits=limits)
    return [
        parsed
        for chunk in chunks
        for parsed in parse_read(chunk, extra, max_line_bytes=max_line_bytes)
    ]


def parse_read(
    read: list[FileRead],
    extra: dict[str, dict[str, Any]],
    *,
    max_line_bytes: int = DEFAULT_MAX_LINE_BYTES,
) -> Iterator[ParsedFile]:
    """Parse files already read; files :mod:`~pipelines.ingest.sources.batch` joins go in groups.

    A line longer than ``max_line_bytes`` is not parsed but quarantined with its length
    (:mod:`pipelines.ingest.long_lines`).
    """
    cut: list[FileRead] = []
    long: dict[int, pl.DataFrame] = {}
    for item, data, sha, problem in read:
        if problem is None:
            data, rejects = cut_long_lines(data, max_line_bytes, source_file=item.resolved)
            if rejects is not None:
                long[id(item)] = rejects
        cut.append((item, data, sha, problem))
    for pending in _parse_read(cut, extra):
        rejects = long.get(id(pending.item))
        if rejects is not None:
            pending.parsed = with_long_lines(pending.parsed, rejects)
        yield pending


def cut_members(
    members: list[tuple[LandingFile, bytes, str]], max_line_bytes: int
) -> tuple[list[tuple[LandingFile, bytes, str]], dict[int, pl.DataFrame]]:
    """Return reads with their long lines blanked, and each blanked read's rejects by ``id``.

    See :mod:`pipelines.ingest.long_lines`; :func:`with_long_lines` puts the rejects back.
    """
    cut = []
    long: dict[int, pl.DataFrame] = {}
    for item, data, sha in members:
        data, rejects = cut_long_lines(data, max_line_bytes, source_file=item.resolved)
        if rejects is not None:
            long[id(item)] = rejects
        cut.append((item, data, sha))
    return cut, long


def _parse_read(read: list[FileRead], extra: dict[str, dict[str, Any]]) -> Iterator[ParsedFile]:
    groups: dict[tuple[str, bytes], list[FileRead]] = {}
    together: dict[str, list[tuple[LandingFile, bytes, str]]] = {}
    for item, data, sha, problem in read:
        parser = PARSERS[item.source][1]
        if problem is not None:
            if not problem.startswith("held:"):
                source_file = item.resolved
                yield ParsedFile(
                    item,
                    data,
                    sha,
                    PARSERS[item.source][0],
                    _file_reject(parser, source_file, problem),
                )
            continue
        if hasattr(parser, "parse_many"):
            together.setdefault(item.source, []).append((item, data, sha))
            continue
        header = None
        if (
            batch.supports(parser)
            and item.source not in OPTION_BUILDERS
            and not extra.get(item.source)
            and not item.path_options
        ):
            header = batch.groupable(data, parser)
        if header is None:
            yield parse_file(item, data, sha, extra.get(item.source))
        else:
            groups.setdefault((item.source, header), []).append((item, data, sha, problem))
    for (source, _), members in groups.items():
        table, parser = PARSERS[source]
        try:
            results = batch.parse_joined(
                parser, [(item.resolved, data) for item, data, _, _ in members]
            )
        except Exception:  # one bad member: parse them one by one, each failure its own reject
            results = [parse_file(i, d, sh).parsed for i, d, sh, _ in members]
        for (item, data, sha, _), parsed in zip(members, results, strict=True):
            yield ParsedFile(item, data, sha, table, parsed)
    for items in together.values():
        yield from parse_together(items, extra)


def hashed_chunks(
    files: Iterable[LandingFile], *, limits: streams.ArchiveLimits | None = None
) -> Iterator[list[FileRead]]:
    """Read, decompress and key whole files, a chunk at a time.

    Parameters
    ----------
    files
        Whole-file landing files.
    limits
        How far an archive may inflate (default :class:`pipelines.ingest.archives.ArchiveLimits`).

    Yields
    ------
    list[FileRead]
        Up to :data:`LOOKUP_FILES` reads, fewer when their bytes reach :data:`LOOKUP_BYTES`:
        each file, its plain bytes, its lineage key and a file-level problem or None.
    """
    chunk: list[FileRead] = []
    size = 0
    for item in files:
        data, sha, problem = _plain_whole(item, limits)
        chunk.append((item, data, keyed(item, sha), problem))
        size += len(data)
        if len(chunk) >= LOOKUP_FILES or size >= LOOKUP_BYTES:
            yield chunk
            chunk, size = [], 0
    if chunk:
        yield chunk


def keyed(item: LandingFile, sha: str) -> str:
    """Return a whole file's lineage key.

    The key is its content hash, or for a file its path pattern gave a host or run, a hash of both
    (the same bytes under two hosts' folders are two hosts' rows, and the same file under the same
    pattern is still loaded once).
    """
    if not item.path_options:
        return sha
    return warehouse.file_sha256(f"{sha} {item.path_options!r}".encode())
