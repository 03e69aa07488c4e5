"""Benchmark the DCGM ingest against DuckDB's own read of the same bytes.

Run from the repository root::

    python -m bench.bench_dcgm                         # 7 days x 256 nodes x 8 GPUs, 30 s scrapes
    python -m bench.bench_dcgm --days 1                # a smaller run
    python -m bench.bench_dcgm --format prometheus --days 0.25 --nodes 64

Steps, all in one run so the ratios compare like with like on this machine:

1. Write the scrapes into a temporary folder, one file per node and day: ``dcgmi dmon`` text with
   a timestamp before every line (default; 10 fields per GPU sample) or dcgm-exporter scrapes
   (``--format prometheus``: the same fields as text exposition with millisecond timestamps).
   Values follow the generator's shapes (temperature, power, counters that grow and reset).
2. Our parser on every file: bytes to typed rows, as the ingest calls it
   (``pipelines.ingest.sources.dcgm.parse_many`` on the chunks of files the ingest reads at once).
3. Our whole ingest (``pipelines.ingest.ingest``: parse, Great Expectations, load into a fresh
   warehouse) on the same files, unless ``--no-ingest``, with the time of each step
   (:data:`PHASES`).
4. DuckDB on the same bytes: ``read_csv`` of the files as lines (the raw read), and ``read_csv``
   plus SQL that splits the lines into the same typed columns (DuckDB's own parse).

The exporter format is about 25 times the bytes of dmon for the same samples (every sample line
repeats the GPU's labels): 7 days of 30 s scrapes of 2,048 GPUs would be some 70 GB, so that
format is meant for ``--days`` well below 1.
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

import duckdb
import numpy as np

from bench import phases
from pipelines import ingest
from pipelines.ingest.parse import LOOKUP_BYTES, LOOKUP_FILES
from pipelines.ingest.sources import dcgm as dcgm_parser
from synth.dcgm import DMON_TAGS, EXPORTED, dmon_text, exposition
from synth.fleet import PCI_BUSES

START = datetime(2026, 6, 1, tzinfo=UTC)
DAY_S = 86_400

PHASES = {
    "parse": [("pipelines.ingest.parse", "parse_together")],
    "Great Expectations": [("pipelines.ingest.quality", "validate")],
    "load": [("pipelines.warehouse", "load_files")],
    "views": [("pipelines.warehouse", "create_views")],
}
"""Ingest steps timed (phase -> functions, patched where the ingest looks them up); DCGM files
are parsed by ``parse_many`` through ``parse_together``. ``tests/pipelines/sources/
test_dcgm_bench.py`` checks that every name still exists."""


def time_phases() -> dict[str, float]:
    """Wrap the ingest's steps of :data:`PHASES` with timers; returns the totals they add up."""
    return phases.time_phases(PHASES)


def chunks(files: list[Path]) -> list[list[Path]]:
    """Cut ``files`` as the ingest reads them: up to LOOKUP_FILES files or LOOKUP_BYTES bytes."""
    out: list[list[Path]] = [[]]
    size = 0
    for path in files:
        out[-1].append(path)
        size += path.stat().st_size
        if len(out[-1]) >= LOOKUP_FILES or size >= LOOKUP_BYTES:
            out.append([])
            size = 0
    return [chunk for chunk in out if chunk]


def _values(rng: np.random.Generator, m: int, g: int, state: dict[str, np.ndarray]) -> dict:
    """One node-day of samples (``m`` times x ``g`` GPUs); counters continue from ``state``."""
    busy = rng.random((m, 1)) < 0.7
    power = np.round(np.maximum(75 + 550 * busy + rng.normal(0, 20, (m, g)), 20.0), 3)
    values: dict[str, np.ndarray] = {
        "gpu_temp_c": np.round(38 + 35 * busy + rng.normal(0, 2, (m, g))).astype(np.int64),
        "power_w": power,
        "xid_last": np.where(rng.random((m, g)) < 1e-4, 79, 0).astype(np.int64),
    }
    increments = {
        "energy_mj": np.round(np.maximum(power, 0) * 30_000).astype(np.int64),
        "ecc_sbe_volatile": rng.poisson(0.002, (m, g)),
        "ecc_dbe_volatile": rng.poisson(0.00001, (m, g)),
        "retired_sbe": rng.poisson(0.0001, (m, g)),
        "retired_dbe": rng.poisson(0.00001, (m, g)),
        "nvlink_crc_flit_errors": rng.poisson(0.001, (m, g)),
        "pcie_replays": rng.poisson(0.0005, (m, g)),
    }
    reboot = rng.random(m) < 1 / 2880  # about one driver reload a node-day
    for column, inc in increments.items():
        cumulative = state.get(column, np.zeros(g, dtype=np.int64)) + np.cumsum(inc, axis=0)
        if reboot.any() and column in ("energy_mj", "ecc_sbe_volatile", "nvlink_crc_flit_errors"):
            first = int(np.flatnonzero(reboot)[0])
            cumulative[first:] -= cumulative[first - 1] if first else 0
        values[column] = cumulative
        state[column] = cumulative[-1]
    return values


def write_scrapes(
    out: Path, *, days: float, nodes: int, gpus: int, interval_s: int, fmt: str
) -> tuple[int, int, int]:
    """Write the files; returns (files, GPU samples, bytes)."""
    rng = np.random.default_rng(0)
    out.mkdir(parents=True, exist_ok=True)
    w0 = int(START.timestamp())
    n_days = max(1, int(np.ceil(days)))
    per_day = DAY_S // interval_s
    last_day_samples = round((days - (n_days - 1)) * per_day)
    n_files = n_samples = n_bytes = 0
    for node in range(nodes):
        host = f"gpu{node + 1:04d}"
        state: dict[str, np.ndarray] = {}
        uuids = [
            f"GPU-{int(x):08x}-{node:04x}-4abc-8def-{s:012x}"
            for s, x in enumerate(rng.integers(0, 2**32, gpus))
        ]
        labels = np.array(
            [
                f'gpu="{s}",UUID="{uuids[s]}",pci_bus_id="00000000:{PCI_BUSES[s].upper()}:00.0",'
                f'device="nvidia{s}",modelName="NVIDIA H100 80GB HBM3",Hostname="{host}",'
                'DCGM_FI_DRIVER_VERSION="535.129.03"'
                for s in range(gpus)
            ],
            dtype=object,
        )
        for day in range(n_days):
            m = per_day if day < n_days - 1 else last_day_samples
            if m <= 0:
                continue
            times = w0 + day * DAY_S + interval_s * np.arange(m, dtype=np.int64)
            values = _values(rng, m, gpus, state)
            stamp = str(np.datetime64(int(times[0]), "s"))[:10].replace("-", "")
            if fmt == "dmon":
                text = dmon_text(times, {c: values[c] for c in DMON_TAGS})
                name = f"{host}.{stamp}.dmon"
            else:
                grid = np.broadcast_to(labels, (m, gpus))
                text = exposition(times, {c: values[c] for c, *_ in EXPORTED}, grid)
                name = f"{host}.{stamp}.prom"
            data = text.encode()
            (out / name).write_bytes(data)
            n_files += 1
            n_samples += m * gpus
            n_bytes += len(data)
    return n_files, n_samples, n_bytes


def duckdb_reads(folder: Path, fmt: str) -> tuple[float, int, float, int]:
    """DuckDB on the same bytes: (raw line read s, lines, read + parse to typed rows s, rows)."""
    pattern = str(folder / ("*.dmon" if fmt == "dmon" else "*.prom"))
    lines = (
        f"read_csv('{pattern}', columns = {{'line': 'VARCHAR'}}, header = false, "
        "delim = chr(31), quote = '', escape = '', filename = true, parallel = true)"
    )
    con = duckdb.connect()
    con.execute("set TimeZone = 'UTC'")
    start = time.perf_counter()
    n_lines = con.execute(f"select count(*) from (select line from {lines})").fetchone()[0]
    raw_s = time.perf_counter() - start
    if fmt == "dmon":
        tags = list(DMON_TAGS)
        fields = ", ".join(
            f"try_cast(nullif(parts[{4 + i}], 'N/A') as double) as {c}" for i, c in enumerate(tags)
        )
        parse = f"""
            create table samples as
            select
                regexp_replace(parse_filename(filename), '\\..*$', '') as host,
                cast(parts[1] as timestamptz) as ts,
                cast(parts[3] as integer) as gpu_index,
                {fields}
            from (
                select filename, string_split_regex(trim(line), '\\s+') as parts
                from {lines}
            )
            where parts[2] = 'GPU'
        """
    else:
        metric_columns = ", ".join(
            f"max(value) filter (where metric = '{name}') as {c}" for c, name, *_ in EXPORTED
        )
        parse = f"""
            create table samples as
            select
                regexp_extract(labels, 'Hostname="([^"]*)"', 1) as host,
                make_timestamptz(ts_ms * 1000) as ts,
                cast(regexp_extract(labels, 'gpu="([0-9]+)"', 1) as integer) as gpu_index,
                any_value(regexp_extract(labels, 'UUID="([^"]*)"', 1)) as uuid,
                {metric_columns}
            from (
                select
                    split_part(line, '{{', 1) as metric,
                    regexp_extract(line, '\\{{(.*)\\}}', 1) as labels,
                    cast(split_part(regexp_extract(line, '\\}} (.*)$', 1), ' ', 1) as double)
                        as value,
                    cast(split_part(regexp_extract(line, '\\}} (.*)$', 1), ' ', 2) as bigint)
                        as ts_ms
                from {lines}
                where not starts_with(line, '#')
            )
            group by all
        """
    start = time.perf_counter()
    con.execute(parse)
    parse_s = time.perf_counter() - start
    n_rows = con.execute("select count(*) from samples").fetchone()[0]
    return raw_s, n_lines, parse_s, n_rows


def parse_ours(files: list[Path]) -> tuple[float, int, int]:
    """Run our parser over the files, a chunk at a time; return seconds, rows and rejects."""
    start = time.perf_counter()
    n_rows = n_rejects = 0
    for chunk in chunks(files):
        read = [(path.read_bytes(), str(path), {}) for path in chunk]
        for parsed in dcgm_parser.parse_many(read):
            n_rows += parsed.rows.height
            n_rejects += parsed.rejects.height
        del read
    return time.perf_counter() - start, n_rows, n_rejects


def timed_ingest(root: Path, folder: Path, n_samples: int) -> list[tuple[str, float, int]]:
    """Ingest the scrapes into a fresh warehouse under ``root``; return the table's ingest rows.

    The first row is the whole ingest (seconds, rows loaded), the others its timed phases.
    """
    db = root / "bench.duckdb"
    for stale in (db, db.with_name(db.name + ".wal")):  # a kept folder's earlier run
        stale.unlink(missing_ok=True)
    totals = time_phases()
    start = time.perf_counter()
    counts = ingest.ingest(db, ingest.discover([folder]))
    ingest_s = time.perf_counter() - start
    loaded = sum(c.n_loaded for c in counts)
    assert loaded == n_samples, (loaded, n_samples)
    rows = [("relia ingest (parse + Great Expectations + load)", ingest_s, loaded)]
    totals["other (read, hash, lookups, batching)"] = ingest_s - sum(totals.values())
    rows += [(f"  of which {phase}", s, loaded) for phase, s in totals.items()]
    return rows


def main() -> None:
    """Write the scrapes, time our parser and ingest next to DuckDB, print the figures."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--days", type=float, default=7.0)
    parser.add_argument("--nodes", type=int, default=256)
    parser.add_argument("--gpus", type=int, default=8)
    parser.add_argument("--interval", type=int, default=30, help="seconds between scrapes")
    parser.add_argument("--format", choices=("dmon", "prometheus"), default="dmon")
    parser.add_argument("--no-ingest", action="store_true", help="skip the full ingest (GX + load)")
    parser.add_argument(
        "--keep", type=Path, default=None, help="write the files here and keep them"
    )
    args = parser.parse_args()

    root = args.keep or Path(tempfile.mkdtemp(prefix="relia-bench-dcgm-"))
    folder = root / "dcgm"
    try:
        start = time.perf_counter()
        n_files, n_samples, n_bytes = write_scrapes(
            folder,
            days=args.days,
            nodes=args.nodes,
            gpus=args.gpus,
            interval_s=args.interval,
            fmt=args.format,
        )
        gen_s = time.perf_counter() - start
        mb = n_bytes / 1e6
        print(
            f"{args.format}: {args.days:g} days x {args.nodes} nodes x {args.gpus} GPUs every "
            f"{args.interval} s = {n_samples:,} GPU samples in {n_files:,} files, {mb:,.0f} MB "
            f"(written in {gen_s:.0f} s)"
        )
        ours_s, n_rows, n_rejects = parse_ours(sorted(folder.iterdir()))
        assert n_rows == n_samples, (n_rows, n_samples)
        assert n_rejects == 0, n_rejects
        raw_s, n_lines, duck_s, duck_rows = duckdb_reads(folder, args.format)
        assert duck_rows == n_samples, (duck_rows, n_samples)
        ingest_s = 0.0
        rows = [
            ("DuckDB read_csv, lines only", raw_s, n_lines),
            ("DuckDB read_csv + SQL parse to typed rows", duck_s, duck_rows),
            ("relia parser (pipelines.ingest.sources.dcgm.parse_many)", ours_s, n_rows),
        ]
        if not args.no_ingest:
            ingest_rows = timed_ingest(root, folder, n_samples)
            ingest_s = ingest_rows[0][1]
            rows += ingest_rows
        print(f"{'step':<50} {'seconds':>8} {'rows':>13} {'rows/s':>12} {'MB/s':>7}")
        for name, seconds, count in rows:
            if name.startswith("  of which"):  # a step of the ingest: its share, not a speed
                print(f"{name:<50} {seconds:>8.1f} {seconds / ingest_s:>13.0%} of the ingest")
                continue
            print(
                f"{name:<50} {seconds:>8.1f} {count:>13,} {count / seconds:>12,.0f} "
                f"{mb / seconds:>7.1f}"
            )
        print(
            f"parser vs DuckDB parse: {duck_s / ours_s:.2f}x DuckDB's speed "
            f"({ours_s / duck_s:.1f}x its time)"
        )
        if not args.no_ingest:
            print(f"ingest vs DuckDB parse: {duck_s / ingest_s:.2f}x DuckDB's speed")
    finally:
        if args.keep is None:
            shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
