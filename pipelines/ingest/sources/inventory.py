"""Parse ``nvidia-smi --query-gpu`` CSV snapshots into ``raw_inventory`` rows.

One file per node and time, named ``<host>__<YYYYmmddTHHMMSSZ>.csv``, written by::

    nvidia-smi --query-gpu=timestamp,index,pci.bus_id,serial,uuid,name --format=csv

The header is ``timestamp, index, pci.bus_id, serial, uuid, name`` and values are separated by
``", "``; ``nvidia-smi`` prints ``[N/A]`` for values it cannot read.
"""

from __future__ import annotations

from pathlib import PurePath
from typing import TYPE_CHECKING

import polars as pl

from pipelines.ingest.sources.common import (
    Parsed,
    delimited_fields,
    empty_file_reject,
    empty_rows,
    parsed_from,
    pci_bus_id,
    time_check,
    utc_now,
    with_reasons,
)

if TYPE_CHECKING:
    from datetime import datetime

COLUMNS: tuple[str, ...] = ("timestamp", "index", "pci.bus_id", "serial", "uuid", "name")
"""Query fields the header must name (any order)."""

SCHEMA: dict[str, pl.DataType] = {
    "source_file": pl.String(),
    "line_no": pl.Int64(),
    "host": pl.String(),
    "snapshot_ts": pl.Datetime("us", "UTC"),
    "gpu_index": pl.Int32(),
    "pci_bus_id": pl.String(),
    "serial": pl.String(),
    "uuid": pl.String(),
    "gpu_name": pl.String(),
}

_TS_FORMAT = "%Y/%m/%d %H:%M:%S%.f"
_NOT_AVAILABLE = ("[N/A]", "N/A", "[Not Supported]", "")


def host_of(source_file: str) -> str | None:
    """Return the host a snapshot file belongs to.

    Its name up to ``__`` (else up to the first dot).
    """
    name = PurePath(source_file).name
    host = name.split("__", 1)[0] if "__" in name else name.split(".", 1)[0]
    return host or None


def file_columns(source_file: str) -> dict[str, str | None]:
    """Return the columns derived from the file name.

    Columns derived from the file name: snapshots of many files may be parsed joined
    (:mod:`pipelines.ingest.sources.batch`).
    """
    return {"host": host_of(source_file)}


def parse(data: bytes, *, source_file: str, now: datetime | None = None) -> Parsed:
    r"""Parse one ``nvidia-smi --query-gpu ... --format=csv`` snapshot.

    Parameters
    ----------
    data
        The file's bytes.
    source_file
        Path recorded on every row and reject; the host is its name up to ``__``
        (``gpu0001__20260601T000000Z.csv`` → ``gpu0001``).
    now
        Reference time for the "not in the future" check (default: current UTC time).

    Returns
    -------
    Parsed
        ``rows`` with the ``raw_inventory`` columns (:data:`SCHEMA`): ``host``, ``snapshot_ts``
        (the ``timestamp`` field, taken as UTC), ``gpu_index``, ``pci_bus_id`` (``0000:18:00``,
        lower case), ``serial`` and ``uuid`` (null for ``[N/A]``) and ``gpu_name``. The header
        and blank lines are ignored.

    Notes
    -----
    Rejects: a header without the query fields (then every line), a wrong number of fields,
    bytes that are not UTF-8, a malformed timestamp, index or PCI bus id, and timestamps in the
    future.

    Examples
    --------
    >>> text = (
    ...     "timestamp, index, pci.bus_id, serial, uuid, name\n"
    ...     "2026/06/01 00:00:00.000, 0, 00000000:18:00.0, 1650124014249, GPU-5096, NVIDIA H100\n"
    ... )
    >>> result = parse(text.encode(), source_file="gpu0001__20260601T000000Z.csv")
    >>> result.rows.select("host", "gpu_index", "pci_bus_id").row(0)
    ('gpu0001', 0, '0000:18:00')
    """
    if not data:
        return Parsed(empty_rows(SCHEMA), empty_file_reject(source_file), 0)
    now_utc = utc_now(now)
    fields = delimited_fields(
        data, separator=",", columns=COLUMNS, strip=True, what="nvidia-smi CSV header"
    )
    timestamp, index, bus_id = pl.col("timestamp"), pl.col("index"), pl.col("pci.bus_id")
    frame = fields.frame.with_columns(
        pl.lit(host_of(source_file), pl.String).alias("host"),
        timestamp.str.strptime(pl.Datetime("us"), _TS_FORMAT, strict=False)
        .dt.replace_time_zone("UTC")
        .alias("snapshot_ts"),
        index.cast(pl.Int32, strict=False).alias("gpu_index"),
        pci_bus_id(bus_id).alias("pci_bus_id"),
        *[_available(pl.col(c)).alias(c) for c in ("serial", "uuid")],
        _available(pl.col("name")).alias("gpu_name"),
    )
    checked = with_reasons(
        frame,
        [
            *fields.checks,
            time_check("timestamp", pl.col("snapshot_ts"), now_utc, label="timestamp"),
            (
                pl.col("gpu_index").is_null() | (pl.col("gpu_index") < 0),
                pl.format("malformed index '{}'", index),
            ),
            (pl.col("pci_bus_id").is_null(), pl.format("malformed pci.bus_id '{}'", bus_id)),
        ],
    )
    return parsed_from(checked, schema=SCHEMA, source_file=source_file, n_ignored=fields.n_ignored)


def _available(text: pl.Expr) -> pl.Expr:
    """Null where nvidia-smi printed that it has no value."""
    return pl.when(text.is_in(list(_NOT_AVAILABLE))).then(None).otherwise(text)
