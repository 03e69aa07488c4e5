"""Lines too long to load: found without reading every line, blanked before parsing, quarantined.

A line longer than the ingest's limit (``RELIA_MAX_LINE_BYTES``, default 1 MiB: a 10 MB job
name, a runaway kernel message) is not parsed: :func:`cut_long_lines` blanks it (its newline
stays, so every other line keeps its number) and returns a reject naming its length
(``line over 1048576 bytes: 10485760``, a reason whose kind leaves the length out). The reject
keeps the line's first :data:`HEAD_BYTES` bytes as its ``raw``. :func:`with_long_lines` puts the
rejects into the parse result, so the line counts as quarantined, not as ignored.

Finding them costs about nothing: a file no longer than the limit has none, and a longer one is
looked at in windows of half the limit, each searched for a newline (``bytes.find``, which stops
at the first): a line longer than the limit covers a whole window with none.
JSON and XML documents (``kubectl -o json``, ``sacct --json``, ``nvidia-smi -q -x``) are not
lines and are left whole.
"""

from __future__ import annotations

import polars as pl

from pipelines.ingest.sources.common import REJECT_SCHEMA, Parsed

__all__ = ["HEAD_BYTES", "cut_long_lines", "long_line_reason", "with_long_lines"]

HEAD_BYTES = 200
"""Bytes of a long line kept as its quarantine row's ``raw`` (followed by "…")."""


def long_line_reason(max_bytes: int, n_bytes: int) -> str:
    """Return the reason of a line of ``n_bytes`` over the limit (its kind leaves them out)."""
    return f"line over {max_bytes} bytes: {n_bytes}"


def cut_long_lines(
    data: bytes, max_bytes: int, *, source_file: str
) -> tuple[bytes, pl.DataFrame | None]:
    """Return ``data`` with each line longer than ``max_bytes`` blanked, and their rejects.

    Parameters
    ----------
    data
        A file's plain bytes (or a stream read's new lines).
    max_bytes
        The longest line loaded, in bytes (its newline not counted).
    source_file
        What the rejects name as their file.

    Returns
    -------
    tuple
        The bytes to parse (``data`` itself when no line is too long) and the rejects
        (``source_file, line_no, raw, reason``; None when no line is too long).
    """
    if len(data) <= max_bytes or _is_document(data):
        return data, None
    step = max(1, max_bytes // 2)
    spans: list[tuple[int, int]] = []
    at = 0
    while at < len(data):
        if data.find(b"\n", at, at + step) != -1:
            at += step
            continue
        start = data.rfind(b"\n", 0, at) + 1
        end = data.find(b"\n", at)
        end = len(data) if end == -1 else end
        if end - start > max_bytes:
            spans.append((start, end))
        at = end + 1
    if not spans:
        return data, None
    records = []
    pieces = []
    kept_from = 0
    line_no = 1
    for start, end in spans:
        line_no += data.count(b"\n", kept_from, start)
        head = data[start : min(end, start + HEAD_BYTES)].decode("utf-8", errors="backslashreplace")
        reason = long_line_reason(max_bytes, end - start)
        records.append((source_file, line_no, head + "…", reason))
        pieces.append(data[kept_from:start])
        kept_from = end
    pieces.append(data[kept_from:])
    rejects = pl.DataFrame(records, schema=REJECT_SCHEMA, orient="row")
    return b"".join(pieces), rejects


def _is_document(data: bytes) -> bool:
    """Return whether ``data`` is one JSON or XML document (not lines)."""
    head = data[:64].lstrip()
    return head[:1] in (b"{", b"[") or head.startswith(b"<?xml")


def with_long_lines(parsed: Parsed, rejects: pl.DataFrame | None) -> Parsed:
    """Return a parse of blanked bytes with the long lines' rejects in it.

    Whatever the parser made of a blanked line (ignored it, as blank lines are; rejected it)
    gives way to the long line's reject, so each long line counts once, as quarantined.
    """
    if rejects is None:
        return parsed
    long_nos = rejects["line_no"]
    kept = parsed.rejects.filter(~pl.col("line_no").is_in(long_nos.implode()))
    n_rows = parsed.rows.height
    rows = parsed.rows
    if "line_no" in rows.columns:
        rows = rows.filter(~pl.col("line_no").cast(pl.Int64).is_in(long_nos.implode()))
    n_counted = (parsed.rejects.height - kept.height) + (n_rows - rows.height)
    n_ignored = max(0, parsed.n_ignored - (rejects.height - n_counted))
    merged = pl.concat([kept, rejects.cast(pl.Schema(kept.schema))]).sort("line_no")
    return Parsed(rows, merged, n_ignored)
