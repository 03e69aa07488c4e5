"""Pieces of :func:`pipelines.ingest.sources.training.parse_many` that need no line format.

:func:`split_many` cuts a fleet's training logs into lines with one polars CSV read for all of
them instead of one per file; :func:`pair_saves` gives checkpoint save and load ends what their
start printed, within each file (docs/goodput.md §1, the training module's docstring).
"""

from __future__ import annotations

import codecs
from functools import cache

import numpy as np
import polars as pl

from pipelines.ingest.sources.common import codec_of, split_lines


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


@cache
def pair_saves() -> tuple[list[pl.Expr], ...]:
    """Return the steps that give save and load ends their start's step, path and time.

    They run on the in-scope lines in file order with their ``reason`` and ``_file``. A group
    runs from a file's first line or just after a step line or a save or load end to the next
    one (inclusive); within it, a timer or ``Finished saving`` takes the step and path of the
    latest good save start (else of a ``successfully saved`` line), a ``Finished loading`` the
    step of its load start, and a timer the start's time plus its duration. A ``successfully
    saved`` line whose group has a timer is ``superseded`` (dropped; the caller counts it as
    ignored).
    """
    good = pl.col("reason").is_null()
    role, event, file = pl.col("role"), pl.col("event"), pl.col("_file")
    ends_group = good & ((event == "step") | role.is_in(["timer", "end", "load_end"]))
    new_file = (file != file.shift(1)).fill_null(value=True)
    group = pl.col("_group")
    start = good & (role == "start")
    anchor = good & role.is_in(["start", "saved"])

    def latest(value: pl.Expr, where: pl.Expr) -> pl.Expr:
        return pl.when(where).then(value).forward_fill().over(group)

    # carried times first: a start's own time wins, else the nearest earlier printed one
    own = pl.col("ts")
    carry = pl.col("carry") & own.is_null() & pl.col("carried").is_not_null()
    first = [
        pl.when(carry).then(pl.col("carried")).otherwise(own).alias("ts"),
        carry.alias("ts_inferred"),
        (ends_group.shift(1, fill_value=False) | new_file).cum_sum().alias("_group"),
    ]
    # the latest save start (or "successfully saved") of the group wins for step and path;
    # the time only comes from a save start
    latest_of_group = [
        latest(pl.col("step"), anchor).alias("save_step"),
        latest(pl.col("path"), anchor).alias("save_path"),
        latest(pl.col("ts"), start).alias("start_ts"),
        latest(pl.col("step"), good & (role == "load_start")).alias("load_step"),
        (good & (role == "timer")).any().over(group).alias("has_timer"),
    ]
    is_timer, is_end, is_load_end = role == "timer", role == "end", role == "load_end"
    duration = (
        pl.when(is_timer)
        .then(pl.col("dur_ms_value") / 1000.0)
        .when(is_end | is_load_end)
        .then(pl.col("dur_s_value"))
    )
    ends = [
        pl.when(is_timer | is_end)
        .then(pl.col("save_step"))
        .when(is_load_end)
        .then(pl.col("load_step"))
        .otherwise(pl.col("step"))
        .alias("step"),
        pl.when(is_timer).then(pl.col("save_path")).otherwise(pl.col("path")).alias("path"),
        pl.when(is_timer)
        .then(
            pl.col("start_ts") + pl.duration(microseconds=(duration * 1e6).round().cast(pl.Int64))
        )
        .otherwise(pl.col("ts"))
        .alias("ts"),
        (pl.col("ts_inferred") | (is_timer & pl.col("start_ts").is_not_null())).alias(
            "ts_inferred"
        ),
        duration.alias("duration_s"),
        (good & (role == "saved") & pl.col("has_timer")).alias("superseded"),
    ]
    return first, latest_of_group, ends
