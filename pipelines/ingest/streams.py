"""Exactly-once reading of landing files that grow, get rotated and get compressed.

Log shippers that operators trust (Vector's ``file`` source, Fluent Bit's ``tail`` input,
Filebeat's registry) identify a file by a fingerprint of its first bytes, not by its name, and
checkpoint how far they have read. This module does the same for the warehouse, on bytes alone (no
I/O, no DuckDB): the ingest reads a file, :func:`decompress` makes its content plain (within the
limits of :mod:`pipelines.ingest.archives`), :class:`StreamIndex` finds the stream the content
continues,
and :func:`plan_read` says which bytes are new, which complete lines to parse and what to hold
back.

A **stream** is one log's life across renames and compression. Its state (:class:`StreamState`)
is what the warehouse records with the rows of each read, in the same transaction:

- ``head_sha`` over the first ``head_len`` bytes (up to :data:`HEAD_BYTES`): the fingerprint that
  finds the stream again after ``kern.log`` became ``kern.log.1`` or ``kern.log.2.gz``;
- ``consumed_bytes`` and ``consumed_lines``: how far the rows go; a grown file loads only what
  follows, and line numbers continue;
- ``tail_sha`` over the last :data:`TAIL_BYTES` consumed bytes: content that is as long as the
  consumed bytes and starts with the stream's head and holds its tail at the consumed offset
  continues it, so a grown file is checked and read from the offset on (the head, one window and
  the new bytes), never in full. Content whose head matches but whose length or tail does not
  was truncated or rewritten: its stream is read again from the start and its earlier rows are
  replaced (:data:`REPLACE`), never duplicated. As in Vector, Fluent Bit and Filebeat, a change
  inside the consumed bytes that keeps the head, the tail and the length is not seen;
- ``prefix_sha``: a hash of the consumed bytes, chained read by read (the hash of the previous
  value and of each read's bytes), recorded for audit;
- ``rows_path``: the ``source_file`` its rows carry, which follows the stream when it is renamed, so
  that lineage names the file that holds the line now.

A last line without its newline is **held**: neither loaded nor quarantined, and not consumed, until
it is complete, or until its file was compressed, renamed (rotated) or has been quiet for
``quiet_s`` seconds; then it is read as a line (:attr:`StreamRead.released`).
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from pipelines.ingest.archives import (
    COMPRESSED_SUFFIXES,
    ArchiveLimitError,
    IncompleteCompressedError,
    decompress,
    read_plain,
)
from pipelines.ingest.sources.common import codec_of
from pipelines.runtime.archive_limits import ArchiveLimits
from pipelines.warehouse.records import (
    APPEND,
    NEW,
    REPLACE,
    UNCHANGED,
    StreamRead,
    StreamState,
    sha256_hex,
)

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable

HEAD_BYTES = 1024
"""Bytes of a stream's head that fingerprint it (fewer while the stream is shorter)."""
TAIL_BYTES = 1024
"""Consumed bytes before the offset whose hash tells a grown file from a rewritten one."""


__all__ = [
    "APPEND",
    "COMPRESSED_SUFFIXES",
    "HEAD_BYTES",
    "NEW",
    "REPLACE",
    "TAIL_BYTES",
    "UNCHANGED",
    "ArchiveLimitError",
    "ArchiveLimits",
    "IncompleteCompressedError",
    "Partial",
    "StreamIndex",
    "StreamRead",
    "StreamState",
    "codec_of",
    "decompress",
    "new_stream_id",
    "plan_read",
    "read_file",
    "read_partial",
    "read_plain",
    "sha256_hex",
    "unchanged_since",
]


class StreamIndex:
    """The known streams of one source, by the path their rows carry and by head fingerprint.

    The ingest plans a run's files in two passes over the index: first every file that continues
    a stream (at its own path, or at another path by its head: a renamed or compressed
    generation, :meth:`continuation`), then the rest (:meth:`rest`), so that a new log that took a
    rotated log's name never hides where the old one went, whatever order the files come in.
    Planning a read updates the index, so a run that meets two copies of one stream reads each
    byte once.
    """

    def __init__(self, states: Iterable[StreamState] = ()) -> None:
        self._by_id: dict[str, StreamState] = {}
        self._by_path: dict[str, str] = {}
        self._by_head: dict[tuple[int, str], set[str]] = {}
        self._head_lens: set[int] = set()  # lengths of the heads ever indexed (a few distinct)
        self.claimed: set[str] = set()
        for state in states:
            self.put(state)

    def put(self, state: StreamState) -> None:
        """Add or replace a stream's state (the path now holds this stream)."""
        old = self._by_id.get(state.stream_id)
        if old is not None:
            self._by_head.get((old.head_len, old.head_sha), set()).discard(old.stream_id)
            if self._by_path.get(old.rows_path) == old.stream_id:
                del self._by_path[old.rows_path]
        self._by_id[state.stream_id] = state
        self._by_path[state.rows_path] = state.stream_id
        self._by_head.setdefault((state.head_len, state.head_sha), set()).add(state.stream_id)
        self._head_lens.add(state.head_len)

    def get(self, stream_id: str) -> StreamState | None:
        """Return a stream by id."""
        return self._by_id.get(stream_id)

    def at_path(self, path: str) -> StreamState | None:
        """Return the stream whose rows carry ``path``, if any."""
        sid = self._by_path.get(path)
        return None if sid is None else self._by_id[sid]

    def _heads(self, content: bytes) -> list[StreamState]:
        found = []
        for n in sorted((n for n in self._head_lens if n <= len(content)), reverse=True):
            for sid in sorted(self._by_head.get((n, sha256_hex(content[:n])), ())):
                found.append(self._by_id[sid])
        return found

    def has_unclaimed(self) -> bool:
        """Return whether some stream in the index is not claimed by a read of this run yet.

        When none is (a first ingest, or every stream already found at its path), no file can
        continue a stream, and new files need not be peeked at before the second pass.
        """
        return len(self.claimed) < len(self._by_id)  # claimed holds ids of indexed streams only

    def may_continue(self, head: bytes) -> bool:
        """Return whether a file starting with ``head`` could continue an unclaimed stream.

        Whether a file starting with ``head`` (its first :data:`PEEK_BYTES` plain bytes, or
        all of a shorter file) could continue an unclaimed stream: some unclaimed stream's head
        is its start. When not, the file is a new stream or meets one only in the second pass,
        and need not be read whole yet.
        """
        return any(state.stream_id not in self.claimed for state in self._heads(head))

    def continues(self, state: StreamState, content: bytes | Partial) -> bool:
        """Return whether ``content`` continues ``state``; claim the stream when it does.

        Whether ``content`` continues ``state`` (as long as its consumed bytes, with its head
        and its tail at the offset); claims the stream when it does.
        """
        if state.stream_id in self.claimed or not _continues(state, content):
            return False
        self.claimed.add(state.stream_id)
        return True

    def continuation(self, path: str, content: bytes) -> StreamState | None:
        """Return the stream ``content`` continues.

        The stream ``content`` continues: the one at ``path``, else an unclaimed one whose
        head and consumed bytes it starts with (claimed streams were found at their own path
        in this run, so a second file starting like them is a copy or an unrelated log).
        """
        here = self.at_path(path)
        if here is not None and _continues(here, content):
            return here
        for state in self._heads(content):
            if state.stream_id not in self.claimed and _continues(state, content):
                return state
        return None

    def rest(self, path: str, content: bytes) -> StreamState | None:
        """Return the stream at ``path`` that content continuing no stream rewrote in place.

        For content that continues no stream: the stream at ``path`` when the content still
        starts with that stream's head (the file was truncated or rewritten in place: replace
        its rows); None for a new stream.
        """
        here = self.at_path(path)
        if here is None or here.stream_id in self.claimed or len(content) < here.head_len:
            return None
        if sha256_hex(content[: here.head_len]) != here.head_sha:
            return None
        return here

    def copy_of(
        self, content: bytes, *, same_source: Callable[[StreamState], bool]
    ) -> tuple[StreamState, bool] | None:
        """Return the stream whose lines ``content`` repeats, and whether it adds lines to it.

        For content that continues no unclaimed stream and rewrites none at its path: a copy of
        a stream at a second path (the same log twice in a landing, or logrotate's
        ``copytruncate`` copy). It is that stream when it starts with the stream's head and
        either continues it (True when it holds complete lines past its consumed bytes: they
        are the stream's next lines) or is shorter than its consumed bytes (an earlier state of
        the stream, told by its full :data:`HEAD_BYTES` fingerprint, as log shippers tell a
        file). ``same_source`` says whether a stream's lines mean what the copy's would (the
        same host and run given by their paths): a stream that does not is never matched.
        """
        for state in self._heads(content):
            if not same_source(state):
                continue
            if _continues(state, content):
                return state, b"\n" in content[state.consumed_bytes :]
            if len(content) < state.consumed_bytes:
                return state, False
        return None

    def states(self) -> list[StreamState]:
        """Every stream in the index."""
        return list(self._by_id.values())


class Partial:
    """Parts of a file's plain bytes, sliced like the whole content.

    Parts of a file's plain bytes (its head, and everything from a window before an offset),
    sliced like the whole content: enough to check and read a grown file without reading the
    bytes consumed before.
    """

    def __init__(self, size: int, parts: list[tuple[int, bytes]]) -> None:
        self.size = size
        self.parts = parts

    def __len__(self) -> int:
        """Return the size in bytes."""
        return self.size

    def __getitem__(self, key: slice) -> bytes:
        """Return the bytes of a slice."""
        start, stop, _ = key.indices(self.size)
        stop = max(start, stop)
        for at, data in self.parts:
            if at <= start and stop <= at + len(data):
                return data[start - at : stop - at]
        msg = f"bytes {start}-{stop} were not read"
        raise KeyError(msg)


def read_partial(path: str, consumed: int) -> Partial | None:
    """Return the head and the tail bytes of a plain file grown to ``consumed`` bytes.

    The head and the bytes from ``TAIL_BYTES`` before ``consumed`` of a plain file grown to
    at least ``consumed`` bytes; None for a compressed or shorter file (read it whole).
    """
    fd = os.open(path, os.O_RDONLY)  # positioned reads: no buffered file object per file
    try:
        head = os.pread(fd, HEAD_BYTES, 0)
        if codec_of(head) is not None:
            return None
        size = os.fstat(fd).st_size
        if size < consumed:
            return None
        window_at = max(0, consumed - TAIL_BYTES)
        if window_at <= len(head):
            return Partial(size, [(0, _pread_all(fd, 0, size))])
        return Partial(size, [(0, head), (window_at, _pread_all(fd, window_at, size - window_at))])
    finally:
        os.close(fd)


def read_file(path: str | os.PathLike[str]) -> bytes:
    """Return a file's bytes, read with a handful of system calls (no buffered file object)."""
    fd = os.open(path, os.O_RDONLY)
    try:
        return _pread_all(fd, 0, os.fstat(fd).st_size)
    finally:
        os.close(fd)


def _pread_all(fd: int, at: int, n: int) -> bytes:
    """Return the bytes from ``at`` to the end of the file (``n`` expected; more if it grew)."""
    parts = [os.pread(fd, n + 1, at)]  # one byte more: a file that grew meanwhile is read on
    while len(parts[-1]) == (n + 1 if len(parts) == 1 else 1 << 20):
        at += len(parts[-1])
        parts.append(os.pread(fd, 1 << 20, at))
    return parts[0] if len(parts) == 1 else b"".join(parts)


def _tail(content: bytes | Partial, consumed: int) -> bytes:
    return content[max(0, consumed - TAIL_BYTES) : consumed]


def _continues(state: StreamState, content: bytes | Partial) -> bool:
    if len(content) < state.consumed_bytes:
        return False
    if sha256_hex(content[: state.head_len]) != state.head_sha:
        return False
    return sha256_hex(_tail(content, state.consumed_bytes)) == state.tail_sha


def new_stream_id(source: str, content: bytes | Partial, path: str) -> str:
    """Return a new stream's id: its source, its first bytes and the path it was first met at."""
    return sha256_hex(
        b"relia-stream\0", source.encode(), b"\0", content[:HEAD_BYTES], b"\0", path.encode()
    )


def plan_read(
    index: StreamIndex,
    before: StreamState | None,
    *,
    source: str,
    table: str,
    path: str,
    content: bytes | Partial,
    codec: str | None,
    file_size: int,
    file_mtime_ns: int,
    now_ns: int,
    quiet_s: float,
) -> StreamRead:
    """Plan the read of one file of a tailed source that continues, rewrites or starts a stream.

    Parameters
    ----------
    index
        Known streams (:class:`StreamIndex`); updated with the state this read leads to.
    before
        The stream the file belongs to (:meth:`StreamIndex.continuation` or
        :meth:`StreamIndex.rest`), None for a new stream. When ``content`` does not start with
        its consumed bytes, the stream is read again from the start and its rows replaced.
    content
        The file's plain bytes (after :func:`decompress`); not empty.
    codec
        The compression the file had (a compressed file is finished: its last line is released).
    file_size, file_mtime_ns
        ``stat`` of the file as read (kept to skip an unchanged file cheaply next time).
    now_ns, quiet_s
        A last line without its newline is released once the file has been quiet this long.
    """
    if before is None:
        action, start, first_line = NEW, 0, 0
        stream_id = new_stream_id(source, content, path)
    elif _continues(before, content):
        action, start, first_line = APPEND, before.consumed_bytes, before.consumed_lines
        stream_id = before.stream_id
    else:
        action, start, first_line = REPLACE, 0, 0
        stream_id = before.stream_id
    new = content[start : len(content)]
    cut = new.rfind(b"\n") + 1
    held = len(new) - cut
    renamed = before is not None and before.rows_path != path
    quiet = (now_ns - file_mtime_ns) >= quiet_s * 1e9
    released = held > 0 and (codec is not None or renamed or quiet)
    if released:
        cut, held = len(new), 0
    chunk = new[:cut]
    consumed = start + cut
    head_len = min(consumed or len(content), HEAD_BYTES)
    after = StreamState(
        stream_id=stream_id,
        source=source,
        table=table,
        rows_path=path,
        head_len=head_len,
        head_sha=sha256_hex(content[:head_len]),
        consumed_bytes=consumed,
        consumed_lines=first_line + chunk.count(b"\n") + (1 if released else 0),
        prefix_sha=(
            sha256_hex(content[:consumed])
            if action != APPEND or before is None
            else sha256_hex(before.prefix_sha.encode(), b":", sha256_hex(chunk).encode())
            if chunk
            else before.prefix_sha
        ),
        held_bytes=held,
        file_size=file_size,
        file_mtime_ns=file_mtime_ns,
        tail_sha=sha256_hex(_tail(content, consumed)),
    )
    if action == APPEND and not chunk:
        action = UNCHANGED
    holder = index.at_path(path)
    displaces = holder is not None and holder.stream_id != stream_id
    index.put(after)
    index.claimed.add(stream_id)
    return StreamRead(
        action=action,
        path=path,
        before=before,
        after=after,
        chunk=chunk,
        line_offset=first_line,
        byte_offset=start,
        n_held_bytes=held,
        released=released,
        codec=codec,
        displaces=displaces,
    )


def unchanged_since(
    state: StreamState, *, file_size: int, file_mtime_ns: int, now_ns: int, quiet_s: float
) -> bool:
    """Return True when the file at the stream's path need not be read again.

    True when a file at the stream's path has the size and mtime of its last read and has no
    held line that is due for release: it need not be read again.
    """
    if state.file_size != file_size or state.file_mtime_ns != file_mtime_ns:
        return False
    return state.held_bytes == 0 or (now_ns - file_mtime_ns) < quiet_s * 1e9
