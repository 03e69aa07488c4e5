"""Parse DCGM telemetry into ``raw_dcgm_samples`` rows (one row per GPU and sample time).

Two formats land in ``dcgm/`` and are told apart by content:

**dcgm-exporter scrapes** (Prometheus text exposition, ``curl <node>:9400/metrics``)::

    # HELP DCGM_FI_DEV_GPU_TEMP GPU temperature (in C).
    # TYPE DCGM_FI_DEV_GPU_TEMP gauge
    DCGM_FI_DEV_GPU_TEMP{gpu="0",UUID="GPU-...",pci_bus_id="00000000:18:00.0",device="nvidia0",modelName="NVIDIA H100 80GB HBM3",Hostname="gpu0001",DCGM_FI_DRIVER_VERSION="535.129.03"} 41 1780272000000

A file may hold many scrapes of one node, each sample with its scrape time as the exposition
format's optional millisecond timestamp; samples without one take the time in a file name ending
``_<YYYYmmddTHHMMSSZ>.prom``, else the ``scrape_ts`` option (the file's modification time with
``relia ingest --time-from-mtime``). Every distinct series (metric name and label set) is parsed by the
maintained ``prometheus_client.parser``; values and timestamps are cut and cast with polars.

**dcgmi dmon** output with a timestamp put before every line (``dcgmi dmon -e 150,155,... | ts
'%Y-%m-%dT%H:%M:%SZ'``; dmon prints none)::

    2026-06-01T00:00:00Z #Entity   TMPTR  POWER    ESVTL  EDVTL  XIDER
    2026-06-01T00:00:00Z ID        C      W
    2026-06-01T00:00:00Z GPU 0     41     312.450  0      0      0

Columns are DCGM field tags (``TMPTR`` = ``DCGM_FI_DEV_GPU_TEMP``...); ``N/A`` is a null. The host
is the file name up to its first dot.

Counters (ECC, retired pages, remapped rows, NVLink CRC, PCIe replays, energy) are kept as the
cumulative values the GPU reports; staging turns them into per-interval deltas. The Xid field
(``DCGM_FI_DEV_XID_ERRORS``) is a gauge holding the last Xid seen: it is kept as ``xid_last`` and
never counted as a failure (kernel-log Xid lines are). DCGM's blank sentinels (values of 2^47 and
above) become nulls.
"""  # noqa: E501

from __future__ import annotations

import functools
import re
from typing import TYPE_CHECKING, Any

import numpy as np
import polars as pl

from pipelines.ingest.sources.common import (
    Parsed,
    empty_file_reject,
    empty_rows,
    file_stem,
    in_future,
    iso_utc,
    parsed_from,
    pci_bus_id,
    rejects_frame,
    split_lines,
    utc_now,
    with_reasons,
)
from pipelines.ingest.sources.kube_json import snapshot_time
from pipelines.ingest.sources.training_many import split_many

if TYPE_CHECKING:
    from datetime import datetime

METRICS: dict[str, tuple[str, str | None]] = {
    "gpu_temp_c": ("DCGM_FI_DEV_GPU_TEMP", "TMPTR"),
    "memory_temp_c": ("DCGM_FI_DEV_MEMORY_TEMP", "MMTMP"),
    "power_w": ("DCGM_FI_DEV_POWER_USAGE", "POWER"),
    "energy_mj": ("DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", "TOTEC"),
    "gpu_util_pct": ("DCGM_FI_DEV_GPU_UTIL", "GPUTL"),
    "ecc_sbe_volatile": ("DCGM_FI_DEV_ECC_SBE_VOL_TOTAL", "ESVTL"),
    "ecc_dbe_volatile": ("DCGM_FI_DEV_ECC_DBE_VOL_TOTAL", "EDVTL"),
    "ecc_sbe_aggregate": ("DCGM_FI_DEV_ECC_SBE_AGG_TOTAL", "ESATL"),
    "ecc_dbe_aggregate": ("DCGM_FI_DEV_ECC_DBE_AGG_TOTAL", "EDATL"),
    "retired_sbe": ("DCGM_FI_DEV_RETIRED_SBE", "RPSBE"),
    "retired_dbe": ("DCGM_FI_DEV_RETIRED_DBE", "RPDBE"),
    "retired_pending": ("DCGM_FI_DEV_RETIRED_PENDING", "RPPEN"),
    "remapped_rows_correctable": ("DCGM_FI_DEV_CORRECTABLE_REMAPPED_ROWS", None),
    "remapped_rows_uncorrectable": ("DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS", None),
    "row_remap_failure": ("DCGM_FI_DEV_ROW_REMAP_FAILURE", None),
    "nvlink_crc_flit_errors": ("DCGM_FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_TOTAL", "NFELT"),
    "nvlink_crc_data_errors": ("DCGM_FI_DEV_NVLINK_CRC_DATA_ERROR_COUNT_TOTAL", "NDELT"),
    "pcie_replays": ("DCGM_FI_DEV_PCIE_REPLAY_COUNTER", "RPCTR"),
    "xid_last": ("DCGM_FI_DEV_XID_ERRORS", "XIDER"),
    "sm_clock_mhz": ("DCGM_FI_DEV_SM_CLOCK", "SMCLK"),  # field 100
    # field 112, a bitmask (0x1 idle, 0x2 clocks setting, 0x4 SW power cap, 0x8 HW slowdown,
    # 0x10 sync boost, 0x20 SW thermal, 0x40 HW thermal, 0x80 HW power brake, 0x100 display);
    # DCGM 3.3 renamed it DCGM_FI_DEV_CLOCKS_EVENT_REASONS (METRIC_ALIASES), dmon's tag stayed
    "clock_event_reasons": ("DCGM_FI_DEV_CLOCK_THROTTLE_REASONS", "DVCCTR"),
}
"""Column → (dcgm-exporter metric name, dcgmi dmon field tag)."""

METRIC_ALIASES: dict[str, str] = {"DCGM_FI_DEV_CLOCKS_EVENT_REASONS": "clock_event_reasons"}
"""Other exporter names of a column's field (DCGM's renames)."""

BITMASKS: tuple[str, ...] = ("clock_event_reasons",)
"""Columns that hold a bitmask: Int64, and a value that is not a non-negative integer is a
reject. dcgm-exporter's ``DCGM_FI_EXP_CLOCK_THROTTLE_REASONS_COUNT`` (later
``DCGM_EXP_CLOCK_EVENTS_COUNT``: a count per reason over a window, ``throttle_reason=`` /
``clock_event=`` labels) is not read: a reason seen once in the last 300 s is no statement about
the sample's time."""

COUNTERS: tuple[str, ...] = (
    "energy_mj",
    "ecc_sbe_volatile",
    "ecc_dbe_volatile",
    "ecc_sbe_aggregate",
    "ecc_dbe_aggregate",
    "retired_sbe",
    "retired_dbe",
    "remapped_rows_correctable",
    "remapped_rows_uncorrectable",
    "nvlink_crc_flit_errors",
    "nvlink_crc_data_errors",
    "pcie_replays",
)
"""Cumulative columns (deltas, with resets, are taken in staging)."""

SCHEMA: dict[str, pl.DataType] = {
    "source_file": pl.String(),
    "line_no": pl.Int64(),
    "host": pl.String(),
    "ts": pl.Datetime("us", "UTC"),
    "gpu_index": pl.Int32(),
    "uuid": pl.String(),
    "pci_bus_id": pl.String(),
    "model_name": pl.String(),
    **{column: pl.Int64() if column in BITMASKS else pl.Float64() for column in METRICS},
    "source_format": pl.String(),
}

BLANK_FROM = 2.0**47
"""DCGM marks a missing value with sentinels at or above this (``DCGM_FP64_BLANK``; the int64
blanks are near 2^63)."""
_BY_NAME = {name: column for column, (name, _) in METRICS.items()} | METRIC_ALIASES
_BY_TAG = {tag: column for column, (_, tag) in METRICS.items() if tag}
_ISO_PREFIX = r"^([0-9]{4}-[0-9]{2}-[0-9]{2}[T ][0-9:]{8}(?:[.,][0-9]+)?(?:Z|[+-][0-9:]{2,5})?)\s+"


def parse(
    data: bytes,
    *,
    source_file: str,
    now: datetime | None = None,
    host: str | None = None,
    scrape_ts: datetime | None = None,
) -> Parsed:
    r"""Parse one DCGM file (dcgm-exporter scrapes or timestamped ``dcgmi dmon`` output).

    Parameters
    ----------
    data
        The file's bytes.
    source_file
        Path recorded on every row and reject. Its name up to the first dot (less a
        ``_<YYYYmmddTHHMMSSZ>`` suffix) is the host when the samples carry no ``Hostname``
        label and ``host`` is not given; a name ending ``_<YYYYmmddTHHMMSSZ>.prom`` gives the
        scrape time of samples without a timestamp.
    now
        Reference time for the "not in the future" check (default: current UTC time).
    host
        The node the file is from (``relia ingest --host``), for samples without a
        ``Hostname`` label and for ``dmon`` output (which prints none).
    scrape_ts
        The scrape time of exposition samples without a timestamp when the file name gives
        none (``relia ingest --time-from-mtime`` passes the file's modification time). Not used
        for ``dmon`` output, whose every line must carry its time.

    Returns
    -------
    Parsed
        ``rows`` with the ``raw_dcgm_samples`` columns (:data:`SCHEMA`): ``host``, ``ts``,
        ``gpu_index``, ``uuid``, ``pci_bus_id`` (``0000:18:00``), ``model_name``, one Float64
        column per field of :data:`METRICS` (Int64 for the :data:`BITMASKS`; null where the
        sample lacks it) and
        ``source_format`` (``prometheus`` or ``dmon``). ``line_no`` is the first line of the
        GPU's sample. Comments, blank lines, dmon unit lines and metrics or entities outside
        :data:`METRICS` are only counted in ``n_ignored``.

    Notes
    -----
    Rejects (one per line): lines that are not UTF-8; for exposition text a line
    ``prometheus_client`` refuses, a malformed value or timestamp, a bitmask field whose value
    is not a non-negative integer, a sample without a ``gpu``
    label or without a time; for dmon a line without a leading timestamp, a data line before
    any ``#Entity`` header or with the wrong number of values, an unreadable value, a ``DVCCTR``
    that is not a non-negative integer; and times in
    the future. A scrape counts as one row per GPU: the lines of one GPU and time are merged.

    Examples
    --------
    >>> text = (
    ...     'DCGM_FI_DEV_GPU_TEMP{gpu="0",Hostname="gpu0001"} 41 1780272000000\n'
    ...     'DCGM_FI_DEV_XID_ERRORS{gpu="0",Hostname="gpu0001"} 79 1780272000000\n'
    ... )
    >>> rows = parse(text.encode(), source_file="gpu0001.20260601.prom").rows
    >>> rows.select("host", "gpu_index", "gpu_temp_c", "xid_last").row(0)
    ('gpu0001', 0, 41.0, 79.0)
    """
    if not data:
        return Parsed(empty_rows(SCHEMA), empty_file_reject(source_file), 0)
    now_utc = utc_now(now)
    lines = split_lines(data)
    fallback_host = host if host is not None else _host_from_name(source_file)
    if _is_dmon(data):
        frame = lines.with_columns(pl.lit(0, pl.Int32).alias("_file"))
        return _parse_dmon_many(frame, [(source_file, fallback_host)], now_utc)[0]
    scrape = snapshot_time(source_file) or scrape_ts
    return _parse_prometheus(lines, source_file, now_utc, fallback_host, scrape)


OPTIONS: frozenset[str] = frozenset({"now", "host", "scrape_ts"})
"""The keyword options of :func:`parse` (what ``parse_many`` accepts in a file's options)."""


def parse_many(files: list[tuple[bytes, str, dict[str, Any]]]) -> list[Parsed]:
    """Parse several DCGM files; small ``dcgmi dmon`` files joined, one polars plan per run.

    Parameters
    ----------
    files
        ``(data, source_file, options)`` per file, ``options`` holding keyword options of
        :func:`parse` (:data:`OPTIONS`).

    Returns
    -------
    list[Parsed]
        One result per file, in order, equal to :func:`parse` of that file alone.

    Raises
    ------
    TypeError
        When a file's options name one :func:`parse` does not take (as calling it would).

    Notes
    -----
    The dmon files of one ``now`` are cut into runs of about :data:`JOIN_BYTES`; the lines of a
    run are one frame with the index of their file
    (:func:`pipelines.ingest.sources.training_many.split_many`), parsed by one plan. A node-day of
    30 s samples of 8 GPUs (23,040 lines, 2.5 MB) is a run of its own. Exporter scrapes are parsed
    file by file.
    """
    out: list[Parsed | None] = [None] * len(files)
    dmon: dict[datetime, list[int]] = {}
    default_now = utc_now(None)
    for i, (data, source_file, options) in enumerate(files):
        unknown = sorted(set(options) - OPTIONS)
        if unknown:
            raise TypeError(f"parse() got unexpected keyword arguments: {', '.join(unknown)}")
        if data and _is_dmon(data):
            now = options.get("now")
            dmon.setdefault(default_now if now is None else utc_now(now), []).append(i)
        else:
            out[i] = parse(data, source_file=source_file, **options)
    for now, indices in dmon.items():
        for members in _joined_runs(indices, [len(files[i][0]) for i in indices]):
            lines = split_many([files[i][0] for i in members])
            names = []
            for i in members:
                source_file, host = files[i][1], files[i][2].get("host")
                name_host = host if host is not None else _host_from_name(source_file)
                names.append((source_file, name_host))
            for i, parsed in zip(members, _parse_dmon_many(lines, names, now), strict=True):
                out[i] = parsed
    return [p for p in out if p is not None]


JOIN_BYTES = 4 * 2**20
"""dmon files are parsed joined up to about this many bytes: a plan's set-up is paid once for
many small files, while a big file alone keeps its frames in cache (one plan over sixteen
node-days took 0.98 s of CPU, sixteen plans 0.77 s, polars on one thread)."""


def _joined_runs(indices: list[int], sizes: list[int]) -> list[list[int]]:
    """Cut ``indices`` into consecutive runs of about :data:`JOIN_BYTES` (a big file alone)."""
    runs: list[list[int]] = []
    total = JOIN_BYTES
    for index, size in zip(indices, sizes, strict=True):
        if total + size > JOIN_BYTES:
            runs.append([])
            total = 0
        runs[-1].append(index)
        total += size
    return runs


def _is_dmon(data: bytes) -> bool:
    """Return True for ``dcgmi dmon`` output (a ``#Entity`` header near the top)."""
    return b"#Entity" in data[: 1 << 16]


# --- dcgm-exporter text exposition ---------------------------------------------------------------


@functools.lru_cache(maxsize=1 << 16)
def _series(text: str) -> tuple[str | None, dict[str, str] | None, str | None]:
    """``(metric name, labels, error)`` of ``name{labels}`` as ``prometheus_client`` reads it."""
    # imported here: a scheduled ingest with no dcgm-exporter text to read does not load it
    from prometheus_client.parser import text_string_to_metric_families

    try:
        families = list(text_string_to_metric_families(text + " 0\n"))
    except ValueError as error:  # the parser's only complaint type
        return None, None, f"invalid sample line: {error}" if str(error) else "invalid sample line"
    samples = [s for f in families for s in f.samples]
    if len(samples) != 1:
        return None, None, "invalid sample line"
    return samples[0].name, dict(samples[0].labels), None


def _parse_prometheus(
    lines: pl.DataFrame, source_file: str, now: datetime, stem_host: str, scrape: datetime | None
) -> Parsed:
    line = pl.col("line")
    stripped = line.str.strip_chars()
    samples = lines.filter((stripped != "") & ~stripped.str.starts_with("#"))
    n_ignored = lines.height - samples.height
    samples = _with_series_labels(_split_series(samples))
    known = pl.col("metric").is_in(list(_BY_NAME)) | pl.col("series_error").is_not_null()
    n_other = samples.select((~known).sum()).item()
    samples = samples.filter(known)
    parts = pl.col("rest").str.split(" ").list.eval(pl.element().filter(pl.element() != ""))
    frame = samples.lazy().with_columns(
        parts.list.len().alias("n_parts"),
        parts.list.get(0, null_on_oob=True).alias("value_text"),
        parts.list.get(1, null_on_oob=True).alias("ts_text"),
    )
    frame = frame.with_columns(
        pl.col("value_text").cast(pl.Float64, strict=False).alias("value"),
        pl.col("ts_text").cast(pl.Int64, strict=False).alias("ts_ms"),
        pl.col("label_gpu").cast(pl.Int32, strict=False).alias("gpu_index"),
        pl.coalesce(pl.col("label_Hostname").str.split(".").list.first(), pl.lit(stem_host)).alias(
            "host"
        ),
    ).with_columns(
        pl.coalesce(
            pl.from_epoch(pl.col("ts_ms"), time_unit="ms").dt.replace_time_zone("UTC"),
            pl.lit(scrape, dtype=pl.Datetime("us", "UTC")),
        )
        .cast(pl.Datetime("us", "UTC"))
        .alias("ts")
    )
    checked = with_reasons(frame, _sample_checks(now))
    rows = _sample_rows(checked.filter(pl.col("reason").is_null()))
    bad = checked.filter(pl.col("reason").is_not_null())
    samples = pl.concat([rows, bad.select("line_no", "line", "reason")], how="diagonal_relaxed")
    return parsed_from(
        samples.sort("line_no"),
        schema=SCHEMA,
        source_file=source_file,
        n_ignored=n_ignored + n_other,
    )


def _with_series_labels(samples: pl.DataFrame) -> pl.DataFrame:
    """Return ``samples`` with each series' metric, its error and the labels read (once each)."""
    distinct = samples.select(pl.col("series").drop_nulls().unique()).to_series().to_list()
    parsed = [_series(text) for text in distinct]
    keys = ("Hostname", "gpu", "UUID", "pci_bus_id", "modelName")
    lookup = pl.DataFrame(
        {
            "series": pl.Series(distinct, dtype=pl.String),
            "metric": pl.Series([p[0] for p in parsed], dtype=pl.String),
            "series_error": pl.Series([p[2] for p in parsed], dtype=pl.String),
            **{
                f"label_{k}": pl.Series([(p[1] or {}).get(k) for p in parsed], dtype=pl.String)
                for k in keys
            },
        }
    )
    return samples.join(lookup, on="series", how="left", maintain_order="left")


def _sample_checks(now: datetime) -> list[tuple[pl.Expr, pl.Expr | str]]:
    """Return the checks of a Prometheus sample line, first failing one is the reject reason."""
    return [
        (~pl.col("utf8_ok"), "line is not valid UTF-8"),
        (pl.col("series_error").is_not_null(), pl.col("series_error")),
        (
            ~pl.col("n_parts").is_between(1, 2),
            pl.format(
                "expected a value and an optional timestamp after the series, got '{}'", "rest"
            ),
        ),
        (pl.col("value").is_null(), pl.format("malformed value '{}'", "value_text")),
        (
            pl.col("metric").replace_strict(_BY_NAME, default=None).is_in(BITMASKS)
            & ~_is_bitmask(pl.col("value")),
            pl.format("'{}' is not a bitmask (a non-negative integer)", "value_text"),
        ),
        (
            pl.col("ts_text").is_not_null() & pl.col("ts_ms").is_null(),
            pl.format("malformed timestamp '{}'", "ts_text"),
        ),
        (
            pl.col("label_gpu").is_null() | pl.col("gpu_index").is_null(),
            pl.format("sample without a numeric gpu label: '{}'", "series"),
        ),
        (
            pl.col("ts").is_null(),
            "sample without a timestamp, and the file name gives no scrape time: pass "
            "--time-from-mtime (the file's modification time) or name the file "
            "<host>_<YYYYmmddTHHMMSSZ>.prom",
        ),
        (in_future(pl.col("ts"), now), pl.format("timestamp in the future: {}", "ts")),
    ]


def _sample_rows(good: pl.DataFrame) -> pl.DataFrame:
    """Return one row per host, time and GPU from the good samples, a column per metric."""
    good = good.with_columns(
        pl.col("metric").replace_strict(_BY_NAME, default=None).alias("column"),
        _blank_to_null(pl.col("value")),
    )
    sample_keys = ["host", "ts", "gpu_index"]
    rows = good.group_by(sample_keys, maintain_order=True).agg(
        pl.col("line_no").min(),
        pl.col("line").first(),
        pl.col("label_UUID").drop_nulls().last().alias("uuid"),
        pl.col("label_pci_bus_id").drop_nulls().last().alias("pci_text"),
        pl.col("label_modelName").drop_nulls().last().alias("model_name"),
    )
    if good.height:
        wide = good.pivot(on="column", index=sample_keys, values="value", aggregate_function="last")
        rows = rows.join(wide, on=sample_keys, how="left", nulls_equal=True)
    return rows.with_columns(
        *[pl.lit(None, pl.Float64).alias(c) for c in METRICS if c not in rows.columns],
        pci_bus_id(pl.col("pci_text")).alias("pci_bus_id"),
        pl.lit("prometheus").alias("source_format"),
        pl.lit(None, pl.String).alias("reason"),
    )


def _split_series(samples: pl.DataFrame) -> pl.DataFrame:
    """``series`` (``name{labels}``) and ``rest`` (value and timestamp) of every sample line.

    The series ends at the last ``}`` (a value or timestamp holds none); without labels, at the
    first blank. The last ``}`` is found by a byte offset, which slices correctly only ASCII
    lines: the rare others take a (slower) regex.
    """
    line = pl.col("line")
    ascii_only = line.str.len_bytes() == line.str.len_chars()
    fast = samples.filter(ascii_only)
    at = line.str.find(r"\}[^}]*$")
    fast = fast.with_columns(
        pl.when(at.is_null())
        .then(line.str.extract(r"^\s*(\S+)", 1))
        .otherwise(line.str.head(at + 1).str.strip_chars_start())
        .alias("series"),
        pl.when(at.is_null())
        .then(line.str.extract(r"^\s*\S+\s+(.*)$", 1))
        .otherwise(line.str.slice(at + 1))
        .str.strip_chars()
        .alias("rest"),
    )
    slow = samples.filter(~ascii_only)
    if slow.height:
        groups = line.str.extract_groups(r"^\s*(.*\}|[^{\s]+)\s*(.*)$")
        slow = slow.with_columns(
            groups.struct.field("1").alias("series"),
            groups.struct.field("2").str.strip_chars().alias("rest"),
        )
        fast = pl.concat([fast, slow]).sort("line_no")
    return fast


def _host_from_name(source_file: str) -> str:
    """``gpu0001`` from ``gpu0001.20260601.prom`` or ``gpu0001_20260601T003000Z.prom``."""
    return re.sub(r"_[0-9]{8}T[0-9]{6}Z$", "", file_stem(source_file))


def _is_bitmask(value: pl.Expr) -> pl.Expr:
    """Say whether a value is a non-negative integer, or a DCGM blank (read as null)."""
    return ((value >= 0) & (value == value.floor())) | (value.abs() >= BLANK_FROM)


def _blank_to_null(value: pl.Expr) -> pl.Expr:
    return pl.when(value.abs() >= BLANK_FROM).then(None).otherwise(value).alias("value")


# --- dcgmi dmon --------------------------------------------------------------------------------


def _parse_dmon_many(
    lines: pl.DataFrame, files: list[tuple[str, str]], now: datetime
) -> list[Parsed]:
    """Parse the lines of several dmon files (``_file`` indexes ``files``) in one plan.

    ``files`` holds each file's ``(source_file, host)``. A header applies to the lines after it
    in its own file only; every result equals :func:`parse` of that file alone.
    """
    line = pl.col("line")
    frame = lines.with_columns(line.str.extract(_ISO_PREFIX, 1).alias("ts_text"))
    # the prefix is ASCII (its characters are bytes): drop it, then the blanks after it
    prefix = pl.col("ts_text").str.len_bytes().fill_null(0)
    frame = frame.with_columns(line.str.slice(prefix).str.strip_chars().alias("body"))
    body = pl.col("body")
    blank = pl.col("ts_text").is_null() & (body == "")
    frame = frame.with_columns(
        blank.alias("is_blank"),
        body.str.starts_with("#Entity").alias("is_header"),
        body.str.contains(r"^(?i:id)(?:\s|$)").alias("is_units"),
        body.str.contains(r"^GPU\s+[0-9]").alias("is_gpu"),
    )
    # header k applies to the lines after it in its file; lines of other entities (GPU-I,
    # NvSwitch...) and unit lines are out of scope
    header_row = pl.when(pl.col("is_header")).then(pl.int_range(pl.len())).forward_fill()
    header_file = pl.when(pl.col("is_header")).then(pl.col("_file")).forward_fill()
    frame = frame.with_columns(
        pl.when(header_file == pl.col("_file")).then(header_row).alias("header_row")
    )
    headers = (
        frame.with_row_index("_row")
        .filter(pl.col("is_header"))
        .select(
            pl.col("_row").cast(frame.schema["header_row"]).alias("header_row"),
            body.str.replace(r"^#Entity\s*", "").alias("tags_text"),
        )
    )
    out_of_scope = (
        pl.col("is_blank")
        | pl.col("is_header")
        | pl.col("is_units")
        | (
            ~pl.col("is_gpu")
            & body.str.contains(r"^[A-Za-z][A-Za-z-]*\s+[0-9]")
            & pl.col("header_row").is_not_null()
        )
    )
    frame = frame.with_columns(out_of_scope.alias("ignored"))
    n_ignored = np.bincount(
        frame.filter("ignored")["_file"].to_numpy(), minlength=len(files)
    ).tolist()
    data = frame.filter(~pl.col("ignored")).drop("is_blank", "is_header", "is_units", "ignored")
    data = data.join(headers, on="header_row", how="left", maintain_order="left").with_columns(
        body.str.extract_all(r"[^ \t]+").list.slice(2).alias("values"),
        body.str.extract(r"^GPU\s+([0-9]+)", 1).cast(pl.Int32, strict=False).alias("gpu_index"),
        _dmon_time(pl.col("ts_text")).alias("ts"),
    )
    slow = pl.col("ts").is_null() & pl.col("ts_text").is_not_null()
    if data.select(slow.any()).item():  # times in a form other than dmon's ``| ts`` default
        data = data.with_columns(
            pl.when(slow)
            .then(iso_utc(pl.col("ts_text").str.replace(",", ".", literal=True)))
            .otherwise(pl.col("ts"))
            .alias("ts")
        )
    parts = [
        _dmon_group(group, tags_text[0], now)
        for tags_text, group in data.partition_by(
            "tags_text", as_dict=True, maintain_order=True
        ).items()
    ]
    checked = (
        pl.concat(parts, how="diagonal_relaxed").sort("_file", "line_no")
        if parts
        else pl.DataFrame(schema={"_file": pl.Int32, "line_no": pl.Int64})
    )
    return _dmon_per_file(checked, files, n_ignored)


def _dmon_per_file(
    checked: pl.DataFrame, files: list[tuple[str, str]], n_ignored: list[int]
) -> list[Parsed]:
    """Return each file's result from the checked lines of all (sorted by ``_file``)."""
    sizes = np.bincount(checked["_file"].to_numpy(), minlength=len(files))
    out: list[Parsed] = []
    start = 0
    for k, (source_file, host) in enumerate(files):
        size = int(sizes[k])
        if not size:  # headers and unit lines only (dmon stopped before its first sample)
            out.append(Parsed(empty_rows(SCHEMA), rejects_frame([]), n_ignored[k]))
            continue
        part = checked.slice(start, size).with_columns(pl.lit(host).alias("host"))
        start += size
        out.append(
            parsed_from(part, schema=SCHEMA, source_file=source_file, n_ignored=n_ignored[k])
        )
    return out


def _dmon_time(text: pl.Expr) -> pl.Expr:
    """``ts``'s default form (``2026-06-01T00:00:00Z``) read fast; null for any other."""
    naive = text.str.strptime(pl.Datetime("us"), "%Y-%m-%dT%H:%M:%SZ", strict=False)
    return naive.dt.replace_time_zone("UTC")


def _dmon_group(group: pl.DataFrame, tags_text: str | None, now: datetime) -> pl.DataFrame:
    """Check and type the data lines under one ``#Entity`` header (of any file).

    Only a line with one value per tag can become a row (any other is rejected before its values
    are read), so the values of those lines are cast in one column, ``len(tags)`` per line, and
    each tag's values taken by stride.
    """
    tags = (tags_text or "").split()
    k = len(tags)
    wanted = {column: tags.index(tag) for tag, column in _BY_TAG.items() if tag in tags}
    n_values = pl.col("values").list.len()
    full = group.filter(n_values == k)
    rest = group.filter(n_values != k)
    tokens = full["values"].list.explode(empty_as_null=False)
    numbers = tokens.cast(pl.Float64, strict=False)
    # N/A is a null; any other text that is not a number makes the line a reject
    unreadable = numbers.is_null() & (tokens != "N/A")
    columns = [
        (numbers.gather_every(k, i).alias(column), unreadable.gather_every(k, i))
        for column, i in wanted.items()
    ]
    full = full.with_columns(
        *[number for number, _ in columns],
        pl.any_horizontal([bad for _, bad in columns] or [pl.lit(value=False)]).alias("bad_value"),
    )
    frame = (
        pl.concat([full, rest], how="diagonal")
        .lazy()
        .with_columns(
            *[_blank_to_null(pl.col(column)).alias(column) for column in wanted],
            *[pl.lit(None, pl.Float64).alias(c) for c in METRICS if c not in wanted],
            pl.lit("dmon").alias("source_format"),
            pl.lit(None, pl.String).alias("uuid"),
            pl.lit(None, pl.String).alias("pci_bus_id"),
            pl.lit(None, pl.String).alias("model_name"),
        )
    )
    bad_value = pl.col("bad_value").fill_null(value=False)
    # blanks are nulls by now: a value left that is not a non-negative integer is no bitmask
    bad_mask = pl.any_horizontal(
        [
            (pl.col(c).is_not_null() & ~_is_bitmask(pl.col(c))).fill_null(value=False)
            for c in BITMASKS
        ]
    )
    return with_reasons(
        frame,
        [
            (~pl.col("utf8_ok"), "line is not valid UTF-8"),
            (
                pl.col("ts_text").is_null(),
                "dmon line without a leading timestamp (collect with "
                "\"dcgmi dmon ... | ts '%Y-%m-%dT%H:%M:%SZ'\")",
            ),
            (pl.col("ts").is_null(), pl.format("malformed timestamp '{}'", "ts_text")),
            (pl.col("header_row").is_null(), "dmon data line before any '#Entity' header"),
            (~pl.col("is_gpu") | pl.col("gpu_index").is_null(), "not a 'GPU <id> <values>' line"),
            (
                n_values != len(tags),
                pl.format(f"expected {len(tags)} values after 'GPU <id>', found {{}}", n_values),
            ),
            (bad_value, "malformed value (expected a number or N/A)"),
            (
                bad_mask,
                "clock event reasons (DVCCTR) that are not a bitmask (a non-negative integer)",
            ),
            (in_future(pl.col("ts"), now), pl.format("timestamp in the future: {}", "ts")),
        ],
    ).select(
        "_file",
        "line_no",
        "line",
        "reason",
        *[c for c in SCHEMA if c not in ("source_file", "line_no", "host")],
    )
