"""Parse ``nvidia-smi`` GPU inventory snapshots into ``raw_inventory`` rows.

One file per node and time, named ``<host>__<YYYYmmddTHHMMSSZ>.csv`` (any extension; the host is
the name up to ``__``, else up to its first dot), in one of three formats told apart by content:

- the query CSV, written by
  ``nvidia-smi --query-gpu=timestamp,index,pci.bus_id,serial,uuid,name --format=csv``: header
  ``timestamp, index, pci.bus_id, serial, uuid, name``, values separated by ``", "``;
- the full text dump ``nvidia-smi -q`` (first line ``==============NVSMI LOG==============``);
- the full XML dump ``nvidia-smi -q -x`` (``<nvidia_smi_log>``).

The dumps are cut into GPUs by :mod:`pipelines.ingest.sources.inventory_query`. ``nvidia-smi``
prints ``[N/A]`` (``N/A`` in the dumps) for values it cannot read: a GPU without a board serial
(consumer and many workstation boards) loads with a null ``serial``; the warehouse then takes its
UUID as the unit id (``stg_inventory.unit_id``). A GPU with neither is a reject.
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import PurePath

import polars as pl

from pipelines.ingest.sources.common import (
    Parsed,
    delimited_fields,
    empty_file_reject,
    empty_rows,
    parsed_from,
    pci_bus_id,
    rejects_frame,
    time_check,
    utc_now,
    with_reasons,
)
from pipelines.ingest.sources.inventory_query import Dump, read_text, read_xml, sniff

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
_DUMP_TS_FORMAT = "%a %b %d %H:%M:%S %Y"  # Sat Dec  1 23:45:21 2018 (blanks collapsed first)
_NOT_AVAILABLE = ("[N/A]", "N/A", "[Not Supported]", "")
NO_UNIT_ID = "serial and uuid are both [N/A]: the GPU has no unit id"
"""Reason of a GPU with neither a board serial nor a UUID (a GPU without a serial loads)."""


def host_of(source_file: str) -> str | None:
    """Return the host a snapshot file belongs to.

    Its name up to ``__`` (else up to the first dot).
    """
    name = PurePath(source_file).name
    host = name.split("__", 1)[0] if "__" in name else name.split(".", 1)[0]
    return host or None


def joinable(data: bytes) -> bool:
    """Whether a file may be parsed joined with others (:mod:`~pipelines.ingest.sources.batch`).

    Only query CSVs: a dump's GPUs take their index from their place in the whole file.
    """
    return sniff(data) == "csv"


def file_columns(source_file: str) -> dict[str, str | None]:
    """Return the columns derived from the file name.

    Columns derived from the file name: snapshots of many files may be parsed joined
    (:mod:`pipelines.ingest.sources.batch`).
    """
    return {"host": host_of(source_file)}


def parse(
    data: bytes, *, source_file: str, now: datetime | None = None, host: str | None = None
) -> Parsed:
    r"""Parse one ``nvidia-smi`` snapshot: query CSV, ``-q`` text or ``-q -x`` XML.

    Parameters
    ----------
    data
        The file's bytes.
    source_file
        Path recorded on every row and reject; the host is its name up to ``__``
        (``gpu0001__20260601T000000Z.csv`` → ``gpu0001``).
    now
        Reference time for the "not in the future" check (default: current UTC time).
    host
        The host of the snapshot (``relia ingest --host``, or the ``nvidia_smi`` path pattern's
        ``{host}``): no format prints it, so it wins over the file-name convention.

    Returns
    -------
    Parsed
        ``rows`` with the ``raw_inventory`` columns (:data:`SCHEMA`): ``host``, ``snapshot_ts``
        (the ``timestamp`` field, taken as UTC), ``gpu_index``, ``pci_bus_id`` (``0000:18:00``,
        lower case), ``serial`` and ``uuid`` (null for ``[N/A]``) and ``gpu_name``. The header
        and blank lines are ignored. A dump gives one row per GPU, on the line that opens it
        (``GPU 00000000:18:00.0``, ``<gpu id="...">``); its other lines are ignored. Its
        ``snapshot_ts`` is the dump's ``Timestamp`` (taken as UTC) and ``gpu_index`` the GPU's
        place in the dump (nvidia-smi lists GPUs in index order).

    Notes
    -----
    Rejects: a header without the query fields (then every line), a wrong number of fields,
    bytes that are not UTF-8, a malformed timestamp, index or PCI bus id, timestamps in the
    future, and a GPU with neither serial nor UUID (:data:`NO_UNIT_ID`). A dump's GPUs are
    rejects when it has no ``Timestamp`` or lists fewer or more GPUs than its ``Attached GPUs``
    (``nvidia-smi -q -i 3`` prints one GPU, whose index is then unknown). An XML dump that is
    malformed, or declares entities or a DOCTYPE internal subset, is one reject (never expanded).

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
    kind = sniff(data)
    host = host or host_of(source_file)
    if kind != "csv":
        return _parse_dump(data, xml=kind == "xml", source_file=source_file, now=now_utc, host=host)
    fields = delimited_fields(
        data, separator=",", columns=COLUMNS, strip=True, what="nvidia-smi CSV header"
    )
    timestamp, index, bus_id = pl.col("timestamp"), pl.col("index"), pl.col("pci.bus_id")
    frame = fields.frame.with_columns(
        pl.lit(host, pl.String).alias("host"),
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
            _unit_id_check(),
        ],
    )
    return parsed_from(checked, schema=SCHEMA, source_file=source_file, n_ignored=fields.n_ignored)


def _unit_id_check() -> tuple[pl.Expr, str]:
    return pl.col("serial").is_null() & pl.col("uuid").is_null(), NO_UNIT_ID


def _parse_dump(
    data: bytes, *, xml: bool, source_file: str, now: datetime, host: str | None
) -> Parsed:
    """Parse an ``nvidia-smi -q`` or ``-q -x`` dump: one row per GPU it lists."""
    try:
        text, utf8_ok = data.decode("utf-8"), True
    except UnicodeDecodeError:
        text, utf8_ok = data.decode("utf-8", errors="backslashreplace"), False
    n_lines = text.count("\n") + (not text.endswith("\n"))
    dump = read_xml(data, text) if xml else read_text(text)
    if dump.problem is not None:
        lines = text.split("\n")
        at = dump.problem_line
        raw = lines[at - 1].rstrip("\r") if 1 <= at <= len(lines) else ""
        return Parsed(
            empty_rows(SCHEMA), rejects_frame([(source_file, at, raw, dump.problem)]), n_lines - 1
        )
    frame = _dump_frame(dump, host)
    n_gpus = len(dump.gpus)
    attached = dump.n_attached
    checked = with_reasons(
        frame.lazy(),
        [
            (pl.lit(not utf8_ok and not xml), "dump is not valid UTF-8"),
            (pl.col("timestamp").is_null(), "the dump has no Timestamp"),
            time_check("timestamp", pl.col("snapshot_ts"), now, label="Timestamp"),
            (
                pl.lit(attached is None or attached.strip() != str(n_gpus)),
                f"the dump lists {n_gpus} GPUs but says Attached GPUs: {attached or '(none)'} "
                "(a GPU's index is its place in a full dump; take nvidia-smi -q without -i)",
            ),
            (
                pl.col("pci_bus_id").is_null(),
                pl.format("malformed PCI bus id '{}'", pl.col("bus_text")),
            ),
            _unit_id_check(),
        ],
    )
    return parsed_from(checked, schema=SCHEMA, source_file=source_file, n_ignored=n_lines - n_gpus)


def _dump_frame(dump: Dump, host: str | None) -> pl.DataFrame:
    """Return the dump's GPUs: the row columns plus ``line``, ``timestamp`` and ``bus_text``."""
    snapshot = _dump_time(dump.timestamp)
    records = [
        {
            "line_no": gpu.line_no,
            "line": gpu.line,
            "timestamp": dump.timestamp,
            "snapshot_ts": snapshot,
            "gpu_index": index,
            "bus_text": gpu.fields.get("bus_id") or gpu.bus_id,
            "serial": gpu.fields.get("serial"),
            "uuid": gpu.fields.get("uuid"),
            "gpu_name": gpu.fields.get("name"),
        }
        for index, gpu in enumerate(dump.gpus)
    ]
    schema: dict[str, pl.DataType] = {
        "line_no": pl.Int64(),
        "line": pl.String(),
        "timestamp": pl.String(),
        "snapshot_ts": pl.Datetime("us", "UTC"),
        "gpu_index": pl.Int32(),
        "bus_text": pl.String(),
        "serial": pl.String(),
        "uuid": pl.String(),
        "gpu_name": pl.String(),
    }
    frame = pl.DataFrame(records, schema=schema)
    return frame.with_columns(
        pl.lit(host, pl.String).alias("host"),
        pci_bus_id(pl.col("bus_text")).alias("pci_bus_id"),
        *[_available(pl.col(c)).alias(c) for c in ("serial", "uuid", "gpu_name")],
    )


def _dump_time(text: str | None) -> datetime | None:
    """Return a dump's ``Timestamp`` (``Sat Dec  1 23:45:21 2018``, taken as UTC), or None."""
    if text is None:
        return None
    try:
        return datetime.strptime(" ".join(text.split()), _DUMP_TS_FORMAT).replace(tzinfo=UTC)
    except ValueError:
        return None


def _available(text: pl.Expr) -> pl.Expr:
    """Null where nvidia-smi printed that it has no value."""
    return pl.when(text.is_in(list(_NOT_AVAILABLE))).then(None).otherwise(text)
