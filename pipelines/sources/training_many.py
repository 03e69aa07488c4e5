"""Split many files into lines at once, for parsers that read many files in one pass.

:func:`pipelines.sources.training.parse_many` cuts a fleet's training logs with
:func:`split_many`: one polars CSV read for all of them instead of one per file.
"""

from __future__ import annotations

import codecs

import numpy as np
import polars as pl

from pipelines.sources.common import split_lines
from pipelines.streams import codec_of


def split_many(contents: list[bytes]) -> pl.DataFrame:
    """Split files into numbered lines as :func:`split_lines` does each, with their index ``_file``.

    Returns a frame of ``line_no``, ``line``, ``utf8_ok`` (:func:`split_lines`) and ``_file``
    (Int32: the position of the line's file in ``contents``), ordered by file then line.

    The files :func:`split_lines` reads with polars' CSV reader (UTF-8 without a byte-order mark
    or the unit separator, not starting like an archive) are read with one call, each ending with
    a newline (a line per newline: checked); the others one by one.
    """
    plain = [k for k, data in enumerate(contents) if _plain(data)] if len(contents) > 1 else []
    frames: list[pl.DataFrame] = []
    if plain:
        counts = np.array(
            [contents[k].count(b"\n") + (not contents[k].endswith(b"\n")) for k in plain],
            dtype=np.int64,
        )
        buffer = b"".join(
            contents[k] if contents[k].endswith(b"\n") else contents[k] + b"\n" for k in plain
        )
        try:
            joined = pl.read_csv(
                buffer,
                has_header=False,
                separator="\x1f",
                quote_char=None,
                schema={"line": pl.String},
                encoding="utf8",
                raise_if_empty=False,
            )
        except pl.exceptions.PolarsError:
            joined = None
        if joined is not None and joined.height == int(counts.sum()):
            starts = np.repeat(np.cumsum(counts) - counts, counts)
            frames.append(
                joined.select(
                    pl.Series("line_no", np.arange(1, joined.height + 1) - starts, pl.Int64),
                    pl.col("line").fill_null("").str.strip_chars_end("\r"),
                    pl.lit(value=True).alias("utf8_ok"),
                    pl.Series("_file", np.repeat(np.array(plain), counts), pl.Int32),
                )
            )
        else:
            plain = []
    done = set(plain)
    frames += [
        split_lines(data).with_columns(pl.lit(k, pl.Int32).alias("_file"))
        for k, data in enumerate(contents)
        if k not in done
    ]
    frame = pl.concat(frames)
    return frame.sort("_file", maintain_order=True) if len(frames) > 1 else frame


def _plain(data: bytes) -> bool:
    """Return True when :func:`split_lines` would cut ``data`` with polars' CSV reader."""
    if data.startswith((codecs.BOM_UTF8, b"x")) or b"\x1f" in data or codec_of(data):
        return False
    if data.isascii():
        return True
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True
