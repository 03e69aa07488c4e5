"""Bounded reading of compressed landing files (gzip, bzip2, xz, zstd, told by magic bytes).

An archive is inflated a piece at a time, and its plain content may not pass a limit
(:class:`ArchiveLimits`): a size limit (``max_bytes``) and a ratio limit (plain bytes per
compressed byte, ``max_ratio``, applied once the plain content passes ``ratio_after_bytes``, so a
small, very compressible file still reads). A decompression bomb (a few MB that inflate to
gigabytes) stops at the limit it hits: no more than the limit (and one decompressor step, at most
2 MiB) is ever allocated, and :class:`ArchiveLimitError` names the limit. An archive cut short (a
compressor still writing it) raises :class:`IncompleteCompressedError`; anything else that is not
a valid archive, a plain ``ValueError``.
"""

from __future__ import annotations

import bz2
import lzma
import os
import zlib
from typing import TYPE_CHECKING, Any

from pipelines.ingest.sources.common import COMPRESSION_MAGIC, codec_of
from pipelines.runtime.archive_limits import (
    ArchiveLimits,
    size_text,
)

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable

READ_BYTES = 1 << 20
"""Compressed bytes read from a file at a time."""

COMPRESSED_SUFFIXES = (".gz", ".bz2", ".xz", ".zst")


class IncompleteCompressedError(ValueError):
    """A compressed file that ends before its archive does (still being written)."""


class ArchiveLimitError(ValueError):
    """An archive whose plain content passes a limit of :class:`ArchiveLimits` (not read)."""


def decompress(data: bytes, *, limits: ArchiveLimits | None = None) -> tuple[bytes, str | None]:
    """Return the plain content of a file's bytes and their codec (None: plain).

    Compression is recognised by magic bytes, not by the file name. Several members or frames,
    as ``cat a.gz b.gz`` writes, are read as one stream; zero bytes after the last are padding.

    Raises
    ------
    ArchiveLimitError
        When the plain content passes ``limits`` (default :class:`ArchiveLimits`).
    IncompleteCompressedError
        When the archive is cut short (a compressor still writing it): try again later.
    ValueError
        When the bytes announce a codec but are not a valid archive of it.
    """
    codec = codec_of(data)
    if codec is None:
        return data, None
    pieces = (data[i : i + READ_BYTES] for i in range(0, len(data), READ_BYTES))
    return _inflate(codec, pieces, len(data), limits or ArchiveLimits()), codec


def read_plain(
    path: str | os.PathLike[str], *, limits: ArchiveLimits | None = None
) -> tuple[bytes, str | None]:
    """Return a file's plain content and codec, inflating an archive as it is read.

    A plain file is read whole; an archive :data:`READ_BYTES` at a time, so neither its
    compressed bytes nor more plain bytes than ``limits`` allow are ever held.

    Raises
    ------
    ArchiveLimitError, IncompleteCompressedError, ValueError
        As :func:`decompress`.
    """
    fd = os.open(path, os.O_RDONLY)
    try:
        head = os.pread(fd, 8, 0)
        codec = codec_of(head)
        if codec is None:
            return _read_rest(fd), None
        size = os.fstat(fd).st_size
        pieces = iter(lambda: os.read(fd, READ_BYTES), b"")
        return _inflate(codec, pieces, size, limits or ArchiveLimits()), codec
    finally:
        os.close(fd)


def _read_rest(fd: int) -> bytes:
    """Return a plain file's bytes (all of them, if it grew while it was read)."""
    size = os.fstat(fd).st_size
    parts = [os.pread(fd, size + 1, 0)]  # one byte more: a file that grew is read on
    while parts[-1] and len(parts[-1]) == (size + 1 if len(parts) == 1 else READ_BYTES):
        parts.append(os.pread(fd, READ_BYTES, sum(len(p) for p in parts)))
    return parts[0] if len(parts) == 1 else b"".join(parts)


def _inflate(codec: str, pieces: Iterable[bytes], size: int, limits: ArchiveLimits) -> bytes:
    """Return the plain bytes of an archive's ``pieces``, stopping one byte past its cap."""
    cap, why = limits.cap(size)
    what = f"{codec} archive of {size_text(size)}"
    magic = next(m for m, c in COMPRESSION_MAGIC if c == codec)
    stream = _STREAMS[codec]()
    parts: list[bytes] = []
    n = 0
    try:
        for piece in pieces:
            data = piece
            while True:
                if stream.eof:
                    data = stream.take_unused() + data
                    if not data:
                        break
                    if not data.startswith(magic):
                        if data.strip(b"\0"):
                            msg = f"bytes after the end of the {codec} archive"
                            raise ValueError(msg)
                        break  # zero padding after the last member
                    stream = _STREAMS[codec]()
                if not data and not stream.has_more():
                    break
                n = _kept(parts, stream.feed(data, cap - n + 1), n, cap, what, why)
                data = b""
        while not stream.eof:  # output a step left pending when its input ran out
            before = n
            n = _kept(parts, stream.feed(b"", cap - n + 1), n, cap, what, why)
            if n == before:
                break
    except (OSError, EOFError, lzma.LZMAError, zlib.error, _zstd_error()) as error:
        msg = f"not a valid {codec} archive: {error}"
        raise ValueError(msg) from error
    if not stream.eof:
        msg = f"{codec} archive of {size_text(size)} ends early"
        raise IncompleteCompressedError(msg)
    return parts[0] if len(parts) == 1 else b"".join(parts)


def _kept(parts: list[bytes], out: bytes, n: int, cap: int, what: str, why: str) -> int:
    """Keep a step's output; return the plain bytes so far, refusing more than ``cap``."""
    n += len(out)
    if n > cap:
        parts.clear()
        msg = f"{what} inflates past {size_text(cap)}, {why}: not read"
        raise ArchiveLimitError(msg)
    if out:
        parts.append(out)
    return n


def _zstd_error() -> type[Exception]:
    import zstandard

    error: type[Exception] = zstandard.ZstdError
    return error


class _Stream:
    """One member (frame) of an archive, inflated with a bound on each step's output."""

    def __init__(self, decompressor: Any) -> None:
        self.d = decompressor
        self._taken = False

    @property
    def eof(self) -> bool:
        return bool(self.d.eof)

    def take_unused(self) -> bytes:
        """Return the bytes after this member once (the next member, or padding)."""
        if self._taken:
            return b""
        self._taken = True
        return bytes(self.d.unused_data)

    def has_more(self) -> bool:
        """Return whether output is pending without more input."""
        return not self.d.eof and not self.d.needs_input

    def feed(self, data: bytes, max_out: int) -> bytes:
        out: bytes = self.d.decompress(data, max_out)
        return out


class _Zlib(_Stream):
    def __init__(self) -> None:
        super().__init__(zlib.decompressobj(wbits=31))  # a gzip member

    def has_more(self) -> bool:
        return not self.d.eof and bool(self.d.unconsumed_tail)

    def feed(self, data: bytes, max_out: int) -> bytes:
        tail = self.d.unconsumed_tail
        out: bytes = self.d.decompress(tail + data if tail else data, max_out)
        return out


ZSTD_MAX_RATIO = 1 << 15
"""Most plain bytes one compressed zstd byte can give (a 128 KiB block in 4 bytes)."""


class _Zstd(_Stream):
    """A zstd frame: its decompressor has no output bound, so its input is fed in small steps.

    Each step is at most a quarter of the room left over :data:`ZSTD_MAX_RATIO` (at least 64
    bytes: at most 2 MiB of output past the cap).
    """

    def __init__(self) -> None:
        import zstandard

        super().__init__(zstandard.ZstdDecompressor().decompressobj())
        self.buf = memoryview(b"")

    def take_unused(self) -> bytes:
        if self._taken:
            return b""
        self._taken = True
        return bytes(self.d.unused_data) + bytes(self.buf)

    def has_more(self) -> bool:
        return not self.d.eof and len(self.buf) > 0

    def feed(self, data: bytes, max_out: int) -> bytes:
        if data:
            self.buf = memoryview(bytes(self.buf) + data if self.buf else data)
        step = max(64, min(READ_BYTES, max_out // (4 * ZSTD_MAX_RATIO)))
        piece, self.buf = self.buf[:step], self.buf[step:]
        out: bytes = self.d.decompress(bytes(piece))
        return out


_STREAMS: dict[str, Callable[[], _Stream]] = {
    "gzip": _Zlib,
    "bzip2": lambda: _Stream(bz2.BZ2Decompressor()),
    "xz": lambda: _Stream(lzma.LZMADecompressor()),
    "zstd": _Zstd,
}
