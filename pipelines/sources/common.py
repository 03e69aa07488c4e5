"""What every parser shares: the ``Parsed`` result, the reject schema and line splitting.

A parser turns the bytes of one landing file into ``(rows, rejects, n_ignored)``. Every line in its
scope becomes exactly one row or one reject, so ``n_read = rows.height + rejects.height``; lines out
of scope (blank lines, headers, unrelated kernel noise) are only counted in ``n_ignored``.
"""

from __future__ import annotations

from typing import NamedTuple

import polars as pl

UTC_TS = pl.Datetime("us", "UTC")

REJECT_SCHEMA: dict[str, pl.DataType] = {
    "source_file": pl.String(),
    "line_no": pl.Int64(),
    "raw": pl.String(),
    "reason": pl.String(),
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


def rejects_frame(records: list[tuple[str, int, str, str]]) -> pl.DataFrame:
    """Build a reject frame from ``(source_file, line_no, raw, reason)`` tuples."""
    return pl.DataFrame(records, schema=REJECT_SCHEMA, orient="row")


def empty_file_reject(source_file: str) -> pl.DataFrame:
    """The single reject an empty file produces (``line_no = 0``)."""
    return rejects_frame([(source_file, 0, "", "empty file")])


def split_lines(data: bytes) -> pl.DataFrame:
    """Split raw bytes into numbered lines.

    Returns a frame with ``line_no`` (1-based), ``line`` (decoded; undecodable bytes are kept as
    ``\\xNN`` escapes) and ``utf8_ok`` (False where the line held bytes that are not UTF-8).
    """
    raw_lines = data.split(b"\n")
    if raw_lines and raw_lines[-1] == b"":
        raw_lines.pop()
    text = [line.rstrip(b"\r").decode("utf-8", errors="backslashreplace") for line in raw_lines]
    try:
        data.decode("utf-8")
        ok = [True] * len(text)
    except UnicodeDecodeError:
        ok = [_is_utf8(line) for line in raw_lines]
    return pl.DataFrame(
        {
            "line_no": pl.Series(range(1, len(text) + 1), dtype=pl.Int64),
            "line": pl.Series(text, dtype=pl.String),
            "utf8_ok": pl.Series(ok, dtype=pl.Boolean),
        }
    )


def _is_utf8(line: bytes) -> bool:
    try:
        line.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True
