"""Parse many small files of one source in one pass, with the same result as file by file.

A parser spends a few milliseconds per call setting up polars expressions; a fleet-year of
``nvidia-smi`` snapshots is ten thousand files of nine lines, so per-call set-up, not rows, sets
the ingest time. For a delimited source whose rows depend on the file only through
``source_file`` (and columns derived from its name), the files' bytes can be joined into one
buffer, parsed once, and the rows and rejects handed back to their files with their own line
numbers.

A parser module opts in with ``file_columns``: a function from ``source_file`` to the values of
the columns it derives from the file name (``{"host": ...}`` for snapshots). Joining is exact
only for files that share the same first line (the header: a later copy of it is ignored, as in
one file), end with a newline and carry no byte-order mark; :func:`groupable` says which files
qualify and the rest are parsed one by one. A parser may also say which of its files are not
fit for joining at all (``joinable(data)``: the inventory's ``nvidia-smi -q`` dumps).
``tests/hardening/test_fuzz_parsers.py`` checks the equivalence on random and mutated files.
"""

from __future__ import annotations

import codecs
from typing import TYPE_CHECKING, Any

import numpy as np
import polars as pl

from pipelines.ingest.sources.common import REJECT_SCHEMA, Parsed

if TYPE_CHECKING:
    from types import ModuleType

_JOINED = "<joined files>"


def supports(parser: ModuleType) -> bool:
    """Whether the parser declares that its files can be parsed joined."""
    return callable(getattr(parser, "file_columns", None))


def groupable(data: bytes, parser: ModuleType | None = None) -> bytes | None:
    """Return the header line a file can be grouped by, or None when it must be parsed alone.

    ``parser``'s ``joinable(data)``, when it has one, may keep a file apart.
    """
    joinable = getattr(parser, "joinable", None)
    if callable(joinable) and not joinable(data):
        return None
    if not data.endswith(b"\n") or data.startswith(codecs.BOM_UTF8) or b"\r" in data:
        return None
    header = data.split(b"\n", 1)[0]
    return header if header.strip() else None


def parse_joined(
    parser: ModuleType, files: list[tuple[str, bytes]], **options: Any
) -> list[Parsed]:
    """Parse ``files`` (``(source_file, data)``, all with one :func:`groupable` header) at once.

    Returns one :class:`Parsed` per file, equal to ``parser.parse(data, source_file=...)``.
    """
    if len(files) == 1:
        source_file, data = files[0]
        return [parser.parse(data, source_file=source_file, **options)]
    n_lines = np.array([data.count(b"\n") for _, data in files], dtype=np.int64)
    first_line = np.concatenate([[1], np.cumsum(n_lines)[:-1] + 1])
    joined = parser.parse(b"".join(data for _, data in files), source_file=_JOINED, **options)
    names = pl.Series("source_file", [name for name, _ in files], dtype=pl.String)
    derived = [parser.file_columns(name) for name, _ in files]

    def split(frame: pl.DataFrame, extra: list[str]) -> list[pl.DataFrame]:
        index = np.searchsorted(first_line, frame["line_no"].to_numpy(), side="right") - 1
        start = pl.Series(first_line[index])
        frame = frame.with_columns(
            (pl.col("line_no") - start + 1).cast(frame.schema["line_no"]),
            names.gather(index).cast(frame.schema["source_file"]),
            *[
                pl.Series(column, [derived[i][column] for i in index]).cast(frame.schema[column])
                for column in extra
            ],
            pl.Series("_file", index, dtype=pl.Int64),
        )
        parts = frame.partition_by("_file", as_dict=True, include_key=False, maintain_order=True)
        empty = frame.head(0).drop("_file")
        return [parts.get((i,), empty) for i in range(len(files))]

    columns = list(derived[0]) if derived else []
    rows = split(joined.rows, columns)
    rejects = split(joined.rejects.cast(REJECT_SCHEMA), [])
    return [
        Parsed(r, j, int(n) - r.height - j.height)
        for r, j, n in zip(rows, rejects, n_lines, strict=True)
    ]
