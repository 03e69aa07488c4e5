"""Benchmark the ingest of a synthetic fleet-year against DuckDB and a line-by-line parser.

Run from the repository root::

    python -m bench.bench_ingest                        # 2,048 nodes x 8 GPUs, 365 days
    python -m bench.bench_ingest --nodes 256 --days 90  # a smaller run
    python -m bench.bench_ingest --landing /tmp/fleet   # reuse (or keep) a synthesised landing
    python -m bench.bench_ingest --nodes 12500 --days 30 --days2 90 \
        --landing /tmp/l100k30 --landing2 /tmp/l100k90  # 100k GPUs: speed, and memory vs days

Steps, all in one run so the ratios compare like with like on this machine:

1. ``synth.synthesize`` writes the fleet-year into a landing folder (skipped when
   ``--landing`` already holds one with the same parameters).
2. ``pipelines.ingest.ingest`` loads it into a fresh warehouse in a child process, one call per
   source (so each source gets its own time and rows/s; the total is their sum, and each pays
   the views and snapshots at its end), and the child's peak RSS is read from ``getrusage``.
   Then the whole landing in one call in another fresh process, as ``relia ingest <landing>``
   runs it (every source, node events included; the views and snapshots once): its time
   against DuckDB's read of every source is the ratio the targets are about. The child does nothing
   first: Great Expectations' one-off start-up is in the total, as in a fresh ``relia ingest``
   (it runs on a thread of its own while the first files are parsed; timed apart too).
3. DuckDB's ``read_csv`` reads the same bytes into in-memory tables: delimited files with their
   header and type detection; kernel logs as whole lines, keeping those with ``NVRM: Xid``.
4. A line-by-line Python parser (a regex per line, ``datetime`` parsing, plain lists) reads the
   sacct and kernel files.
5. Our parsers alone (no validation, no load) on the same bytes, to show where ingest time goes.
6. Views (``create_views`` and ``count(*)`` of every view), ``run_fit``, ``build_report`` on the
   views as every ingest leaves them (the baseline), ``warehouse.materialize`` (the snapshot the
   weekly stages take first) and ``build_report`` again (issue 17: under 15 s).
7. Kernel Xid extraction (read, fingerprint-free parse of every log, as ``ingest.parse_files``
   does it: many logs in one pass) against the line-by-line parser on the same files.
8. A 15-minute tick: every kernel log grows by a quarter hour of lines (one Xid line in ten
   logs); the ingest of the whole landing must cost what the new bytes cost (a tick with
   nothing new is timed too, in the benchmark's process and as a process of its own, imports
   included). The logs are cut back to their size afterwards.
9. The snapshots an ingest of one source takes again (those over its raw table), for each
   source, against taking every one again, back to back on the ingested warehouse.

With ``--days2`` only the whole-landing ingest and DuckDB's read are run, on two landings of the
same fleet (``days`` and ``days2`` days): ingest time vs DuckDB and the ingest's peak RSS for
each, side by side, and the slope of peak RSS with days (issue 17: >= 0.5x DuckDB, < 2 GB, flat
as the landing grows).

Targets (issue 7): ingest at least 0.5x DuckDB's read_csv speed and at least 20x the line-by-line
parser's speed, peak RSS under 2 GB. Issue 12: Xid extraction at least 5x the line loop, the
whole ingest at least 0.25x DuckDB's read_csv. Since: 100k GPUs x 30 days at least 0.6x DuckDB,
peak RSS under 1.5 GB and within 5 % from 30 to 90 days (``--days2``); a tick of the
fleet-year that finds nothing new, as its own process, under 2 s. The snapshots after an ingest
of one source, summed over the five sources, cost at most 0.8x taking every one again each time.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from bench.python_parsers import is_site_dump, python_kernel, python_sacct

SOURCES = ("slurm", "kernel", "nvidia_smi", "fleet", "repairs")
TARGET_VS_DUCKDB = 0.5
TARGET_VS_PYTHON = 20.0
TARGET_RSS_GB = 2.0
TARGET_XID_VS_LOOP = 5.0
TARGET_VS_DUCKDB_12 = 0.25
TARGET_RSS_SLOPE_MB_PER_DAY = 1.0
TARGET_REPORT_S = 15.0
"""Issue 17: peak RSS flat as the landing grows; below this it is noise of a few MB a run."""
TARGET_VS_DUCKDB_100K = 0.6
"""The ingest of 100k GPUs x 30 days, at least this fraction of DuckDB's read_csv speed."""
TARGET_RSS_GB_100K = 1.5
TARGET_RSS_FLAT = 0.05
"""Peak RSS at ``--days2`` within this fraction of its value at ``--days`` (flat)."""
TARGET_IDLE_TICK_S = 2.0
"""A 15-minute tick over the fleet-year landing that finds nothing new, in seconds."""
TARGET_ONE_SOURCE_SNAPSHOTS = 0.8
"""The snapshots five ingests of one source each take again (those over the source's table), at
most this fraction of the time taking every one again five times costs (timed back to back on
the same warehouse)."""
SAMPLES = Path(__file__).resolve().parent.parent / "data_samples" / "landing"
TICK_LINES = 12
"""Lines a kernel log gains in a 15-minute tick (a busy node: link flaps, GPU resets, audit)."""


# --------------------------------------------------------------------------------------------
# Landing
# --------------------------------------------------------------------------------------------
def synth_landing(landing: Path, *, nodes: int, gpus_per_node: int, days: int, seed: int) -> float:
    """Write the synthetic landing (unless it is there with the same parameters); seconds taken.

    The window ends at midnight UTC two days before today: telemetry from the future would be
    quarantined ("in the future"), which is not the ingest this benchmark means to time.
    """
    from synth import SynthConfig, synthesize

    today = datetime.now(UTC).replace(hour=0, minute=0, second=0, microsecond=0)
    start = today - timedelta(days=days + 2)
    config = SynthConfig(
        nodes=nodes, gpus_per_node=gpus_per_node, days=days, seed=seed, start=start
    )
    truth = landing / "ground_truth.json"
    if truth.exists():
        params = json.loads(truth.read_text())["params"]
        if all(params[k] == v for k, v in config.to_params().items()):
            return 0.0
    started = time.perf_counter()
    synthesize(landing, config)
    return time.perf_counter() - started


def landing_stats(landing: Path) -> dict[str, dict[str, int]]:
    """Files, bytes and lines per source folder."""
    stats = {}
    for source in SOURCES:
        files = sorted((landing / source).iterdir())
        n_bytes = n_lines = 0
        for path in files:
            data = path.read_bytes()
            n_bytes += len(data)
            n_lines += data.count(b"\n") + (0 if not data or data.endswith(b"\n") else 1)
        stats[source] = {"files": len(files), "bytes": n_bytes, "lines": n_lines}
    return stats


# --------------------------------------------------------------------------------------------
# Our ingest (child process)
# --------------------------------------------------------------------------------------------
PHASES = {
    "parse": [
        ("pipelines.ingest.parse", "parse_file"),
        ("pipelines.ingest.plan", "parse_file"),
        ("pipelines.ingest.sources.batch", "parse_joined"),
        ("pipelines.ingest.parse", "parse_together"),
        ("pipelines.ingest.plan", "parse_together"),
    ],
    "validate": [("pipelines.ingest.quality", "validate")],
    "load": [("pipelines.warehouse", "load_files")],
    "views": [
        ("pipelines.warehouse", "create_views"),
        ("pipelines.warehouse.schema", "create_views"),
        ("pipelines.warehouse", "refresh"),
    ],
}
"""Ingest steps timed in the child (phase -> functions, patched where their callers look them up):
where the ingest's time goes. Parsing is file by file (``parse_file``, from the ingest and from
the stream planner), joined for small files of one kind (``parse_joined``) or many files in
one pass by a parser that reads many (``parse_together``: kernel, training and DCGM logs);
views are the views made again and their snapshots taken again at the end of every ingest that
loaded rows (``refresh``); ``tests/test_bench.py`` checks that every name still exists."""


def _time_phases() -> dict[str, float]:
    """Wrap the ingest's steps with timers; returns the totals they accumulate."""
    from bench.phases import time_phases

    return time_phases(PHASES)


START_UP = {
    "took": [("pipelines.ingest.quality", "start_up")],
    "waited": [("pipelines.ingest.quality", "wait_for_start_up")],
}
"""Great Expectations' one-off start-up of a process (on a thread of its own, while the first
files are parsed) and the validation's wait for it: timed apart from :data:`PHASES`."""


def ingest_child(landing: Path, db_path: Path, out: Path) -> None:
    """Ingest ``landing`` into ``db_path`` one source at a time; write timings to ``out``.

    The process is fresh: the first source pays Great Expectations' start-up (its import and
    context, about 4 s on 2 cores), which the ingest runs on a thread of its own while it
    parses; how long it took, and how long validation waited for it, are timed apart.
    """
    from bench.phases import time_phases
    from pipelines import ingest

    files = ingest.discover([landing])
    totals = _time_phases()
    start_up = time_phases(START_UP)
    timings: dict[str, Any] = {}
    peaks = {}
    for source in SOURCES:
        chosen = [f for f in files if f.source == source]
        before = dict(totals)
        started = time.perf_counter()
        counts = ingest.ingest(db_path, chosen)
        timings[source] = {
            "seconds": time.perf_counter() - started,
            "phases": {k: totals[k] - before[k] for k in totals},
            "n_files": len(counts),
            "n_read": sum(c.n_read for c in counts),
            "n_loaded": sum(c.n_loaded for c in counts),
            "n_quarantined": sum(c.n_quarantined for c in counts),
        }
        # ru_maxrss (KiB) only grows: the peak so far, after this source
        peaks[source] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024**2
    timings["peak_gb_after"] = peaks
    timings["start_up"] = start_up
    out.write_text(json.dumps(timings))


def _child(flag: str, landing: Path, db_path: Path, out: Path) -> tuple[dict[str, Any], float]:
    """Run this module with ``flag`` (an ingest child) in a fresh interpreter.

    Returns the timings it wrote to ``out`` and the process's wall seconds.
    """
    started = time.perf_counter()
    subprocess.run(
        [sys.executable, "-m", "bench.bench_ingest", flag, *map(str, (landing, db_path, out))],
        check=True,
        cwd=Path(__file__).resolve().parent.parent,
    )
    return json.loads(out.read_text()), time.perf_counter() - started


def run_ingest(landing: Path, db_path: Path, work: Path) -> tuple[dict[str, Any], float, float]:
    """Run :func:`ingest_child` in a fresh interpreter; (timings, wall seconds, peak RSS in GB)."""
    timings, wall = _child("--ingest-child", landing, db_path, work / "ingest_timings.json")
    # ru_maxrss is in KiB on Linux: the child's own peak (RUSAGE_CHILDREN would be the largest
    # of every child waited for so far, an earlier landing's included)
    peak_gb = max(timings["peak_gb_after"].values())
    return timings, wall, peak_gb


def whole_child(landing: Path, db_path: Path, out: Path) -> None:
    """Ingest every file of ``landing`` in one call, as ``relia ingest <landing>`` does.

    A fresh process, like :func:`ingest_child`, but one ingest: the views are made again and
    their snapshots taken again once, at its end, not once per source. Writes the timings.
    """
    from bench.phases import time_phases
    from pipelines import ingest

    files = ingest.discover([landing])
    totals = _time_phases()
    start_up = time_phases(START_UP)
    started = time.perf_counter()
    counts = ingest.ingest(db_path, files)
    seconds = time.perf_counter() - started
    timings = {
        "seconds": seconds,
        "phases": dict(totals),
        "n_files": len(counts),
        "n_read": sum(c.n_read for c in counts),
        "n_loaded": sum(c.n_loaded for c in counts),
        "n_quarantined": sum(c.n_quarantined for c in counts),
        "peak_gb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024**2,
        "start_up": start_up,
    }
    out.write_text(json.dumps(timings))


def run_whole(landing: Path, db_path: Path, work: Path) -> tuple[dict[str, Any], float]:
    """Run :func:`whole_child` in a fresh interpreter; (timings, wall seconds)."""
    return _child("--whole-child", landing, db_path, work / "whole_timings.json")


def print_whole(
    landing: Path, whole: dict[str, Any], wall: float, baseline: dict[str, dict[str, float]]
) -> float:
    """Print the one-call ingest of the whole landing against DuckDB's read; return the ratio."""
    phases = whole["phases"]
    seconds = whole["seconds"]
    rest = seconds - sum(phases.values())
    duck_s = sum(d["seconds"] for d in baseline.values())
    n_files = sum(1 for path in landing.glob("*/*") if path.is_file())
    views = phases["views"]
    print(
        f"whole landing in one ingest (as `relia ingest <landing>` runs it): {n_files:,} files, "
        f"{whole['n_read']:,} rows read, {seconds:.2f} s against DuckDB's read of every "
        f"source's bytes {duck_s:.2f} s = {duck_s / seconds:.2f}x; without the views and their "
        f"snapshots taken again at its end ({views:.1f} s): {duck_s / (seconds - views):.2f}x"
    )
    print(
        f"  parse {phases['parse']:.1f}, validate {phases['validate']:.1f}, load "
        f"{phases['load']:.1f}, views {views:.1f}, read+hash+rest {rest:.1f} s; "
        f"{whole['n_loaded']:,} rows loaded, {whole['n_quarantined']:,} quarantined; process "
        f"wall {wall:.1f} s; peak RSS {whole['peak_gb']:.2f} GB; Great Expectations' start-up "
        f"{whole['start_up']['took']:.1f} s on its own thread (validation waited "
        f"{whole['start_up']['waited']:.1f} s)",
        flush=True,
    )
    return float(duck_s / seconds)


# --------------------------------------------------------------------------------------------
# DuckDB read_csv baseline
# --------------------------------------------------------------------------------------------
def duckdb_read(landing: Path) -> dict[str, dict[str, float]]:
    """Read every source's bytes with DuckDB's ``read_csv`` into in-memory tables, timed."""
    import duckdb

    con = duckdb.connect()
    con.execute("set TimeZone = 'UTC'")
    queries = {
        "slurm": (
            "select * from read_csv($glob, delim = '|', header = true, quote = '', "
            "escape = '', ignore_errors = true, null_padding = true)"
        ),
        # whole lines (the unit separator never occurs), keeping the Xid lines
        "kernel": (
            "select line from read_csv($glob, columns = {'line': 'VARCHAR'}, header = false, "
            "delim = '\x1f', quote = '', escape = '', auto_detect = false, "
            "ignore_errors = true, strict_mode = false) where contains(line, 'NVRM: Xid')"
        ),
        "nvidia_smi": "select * from read_csv($glob, header = true, ignore_errors = true)",
        "fleet": "select * from read_csv($glob, header = true)",
        "repairs": "select * from read_csv($glob, header = true)",
        # sacctmgr show event, parsable: '|' delimited with a header
        "node_events": "select * from read_csv($glob, delim = '|', header = true)",
    }
    # the synthetic fleet writes every third sacct dump in a site format (';'): read those apart
    site = [str(p) for p in sorted((landing / "slurm").glob("*")) if is_site_dump(p)]
    ref = [str(p) for p in sorted((landing / "slurm").glob("*")) if str(p) not in set(site)]
    out = {}
    for source, select in queries.items():
        if not any((landing / source).glob("*")):
            continue  # the landing has no such source (older landings have no node events)
        globs: list[Any] = [str(landing / source / "*")]
        if source == "slurm":
            globs = [files for files in (ref, site) if files]
        seconds, n_rows = 0.0, 0
        for k, glob in enumerate(globs):
            query = select.replace("delim = '|'", "delim = ';'") if glob is site else select
            started = time.perf_counter()
            con.execute(f"create or replace table bench_{source}_{k} as {query}", {"glob": glob})
            seconds += time.perf_counter() - started
            (n,) = con.execute(f"select count(*) from bench_{source}_{k}").fetchone()  # type: ignore[misc]
            n_rows += n
            con.execute(f"drop table bench_{source}_{k}")
        out[source] = {"seconds": seconds, "rows": n_rows}
    con.close()
    return out


# --------------------------------------------------------------------------------------------
# Our parsers alone, views, fit, report
# --------------------------------------------------------------------------------------------
def parse_only(landing: Path, sources: tuple[str, ...] = SOURCES) -> dict[str, float]:
    """Time our parsing per source on the same bytes; return seconds per source.

    Read and hash are included, nothing is validated or loaded, as the ingest parses:
    ``ingest.parse_files`` on chunks of 512 files.
    """
    from pipelines import ingest

    samples = Path(__file__).resolve().parent.parent / "data_samples" / "landing"
    out = {}
    for source in sources:
        ingest.parse_files(ingest.discover([samples / source]))  # first-call costs aside
        files = ingest.discover([landing / source])
        started = time.perf_counter()
        for i in range(0, len(files), 512):
            ingest.parse_files(files[i : i + 512])
        out[source] = time.perf_counter() - started
    return out


def views_and_counts(db_path: Path) -> int:
    """Create every view and count its rows; returns the number of views."""
    from pipelines import warehouse

    with warehouse.connect(db_path) as con:
        names = warehouse.create_views(con)
        for name in names:
            con.execute(f"select count(*) from {warehouse.identifier(name)}").fetchone()
    return len(names)


def run_fit(db_path: Path) -> Any:
    """``pipelines.analysis.fit.run_fit``, warnings about few failures in small classes silenced."""
    import warnings

    from pipelines.analysis import fit

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return fit.run_fit(db_path)


def build_report(db_path: Path, work: Path) -> Any:
    """``pipelines.report.build_report`` for the last full week."""
    from pipelines.report import build_report as build

    return build(db_path, week=None, reports_dir=work / "reports")


def materialize(db_path: Path) -> dict[str, float]:
    """``warehouse.materialize``: the snapshot the weekly stages take before the report."""
    from pipelines import warehouse

    with warehouse.connect(db_path) as con:
        return warehouse.materialize(con)


# --------------------------------------------------------------------------------------------
# Main
# --------------------------------------------------------------------------------------------
def _rate(n: float, seconds: float) -> str:
    return f"{n / seconds:>12,.0f}/s" if seconds > 0 else f"{'-':>14}"


def _step(name: str, run: Any) -> tuple[float | None, Any]:
    """Time ``run()``; a failure is printed (the benchmark goes on) and gives ``None``."""
    started = time.perf_counter()
    try:
        result = run()
    except Exception as error:  # a broken step is a finding to print, not a reason to stop
        print(f"{name}: FAILED after {time.perf_counter() - started:.1f} s: {error!r}")
        return None, None
    return time.perf_counter() - started, result


def tick(landing: Path, db_path: Path) -> dict[str, Any]:
    """Time a 15-minute scheduled ingest of the whole landing after every kernel log grew.

    Returns seconds of a tick with nothing new (in this process, then as a process of its own:
    :func:`idle_tick_process`) and of the tick after growth, the new bytes and lines, and the
    rows it loaded. The logs are cut back to their sizes afterwards.
    """
    from pipelines import ingest

    logs = sorted((landing / "kernel").iterdir())
    sizes = {p: p.stat().st_size for p in logs}
    files = ingest.discover([landing])
    # a scheduled ingest process has Great Expectations imported: warm it on a throw-away warehouse
    ingest.ingest(db_path.with_name("warm.duckdb"), ingest.discover([SAMPLES]))
    started = time.perf_counter()
    ingest.ingest(db_path, files)
    idle_s = time.perf_counter() - started
    idle_process = idle_tick_process(landing, db_path)  # before the logs grow: nothing new
    n_bytes = 0
    try:
        for i, log in enumerate(logs):
            host = log.name.split(".", 1)[0]
            stamp = datetime.now(UTC).replace(microsecond=0) - timedelta(hours=1)
            lines = [
                f"{(stamp + timedelta(seconds=70 * k)).isoformat()} {host} kernel: "
                f"mlx5_core 0000:{k:02x}:00.0: link state changed to up"
                for k in range(TICK_LINES)
            ]
            if i % 10 == 0:
                lines.append(
                    f"{stamp.isoformat()} {host} kernel: NVRM: Xid (PCI:0000:18:00): 79, "
                    "pid=4242, name=python, GPU has fallen off the bus."
                )
            text = ("\n".join(lines) + "\n").encode()
            n_bytes += len(text)
            with log.open("ab") as handle:
                handle.write(text)
        started = time.perf_counter()
        counts = ingest.ingest(db_path, files)
        tick_s = time.perf_counter() - started
    finally:
        for log, size in sizes.items():
            os.truncate(log, size)
    return {
        "idle_s": idle_s,
        "idle_process": idle_process,
        "tick_s": tick_s,
        "new_bytes": n_bytes,
        "logs": len(logs),
        "loaded": sum(c.n_loaded for c in counts if c.source == "kernel"),
    }


def idle_tick_child(landing: Path, db_path: Path) -> None:
    """Ingest ``landing`` (loaded before: nothing new) in this fresh process; print the times."""
    started = time.perf_counter()
    from pipelines import ingest

    imported = time.perf_counter()
    counts = ingest.ingest(db_path, ingest.discover([landing]))
    done = time.perf_counter()
    n_new = sum(not c.skipped for c in counts)
    print(json.dumps({"import_s": imported - started, "ingest_s": done - imported, "new": n_new}))


def idle_tick_process(landing: Path, db_path: Path) -> dict[str, float]:
    """Time a scheduled tick that finds nothing new as its own process (``relia ingest`` does).

    Returns the process's wall seconds (interpreter start included), its imports' and the
    ingest's (discovery included).
    """
    started = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "bench.bench_ingest", "--idle-tick", str(landing), str(db_path)],
        check=True,
        capture_output=True,
        text=True,
        cwd=Path(__file__).resolve().parent.parent,
    )
    wall = time.perf_counter() - started
    return {"wall_s": wall, **json.loads(done.stdout.strip().splitlines()[-1])}


def print_ticks(
    ticked: dict[str, Any], stats: dict[str, dict[str, int]], timings: dict[str, Any]
) -> bool:
    """Print the 15-minute ticks (:func:`tick`); return whether the idle one met its target."""
    kernel_mb = stats["kernel"]["bytes"] / 1e6
    print(
        f"15-minute tick over {ticked['logs']:,} kernel logs: nothing new "
        f"{ticked['idle_s']:.2f} s; +{ticked['new_bytes'] / 1e6:.2f} MB "
        f"({ticked['loaded']} Xid rows) "
        f"{ticked['tick_s']:.2f} s, vs the first ingest of all {kernel_mb:,.0f} MB of kernel "
        f"logs {timings['kernel']['seconds']:.2f} s"
    )
    idle = ticked["idle_process"]
    idle_ok = idle["wall_s"] < TARGET_IDLE_TICK_S
    print(
        f"15-minute tick that finds nothing new, as its own process: {idle['wall_s']:.2f} s "
        f"(imports {idle['import_s']:.2f} s, the ingest of every file of the landing "
        f"{idle['ingest_s']:.2f} s, {idle['new']} files not skipped)   "
        f"(target < {TARGET_IDLE_TICK_S:g} s): " + ("met" if idle_ok else "missed")
    )
    return idle_ok


def print_ingest(
    stats: dict[str, dict[str, int]],
    timings: dict[str, Any],
    baseline: dict[str, dict[str, float]],
    ours_parse: dict[str, float] | None,
) -> tuple[float, float]:
    """Print the per-source table; return (our total ingest s, DuckDB's total read s)."""
    print(
        f"{'source':<11} {'files':>6} {'MB':>7} {'rows read':>11} {'ingest s':>9} "
        f"{'ingest rows/s':>14} {'duckdb s':>9} {'vs duckdb':>10}   where the ingest time goes"
    )
    for source in SOURCES:
        t, s, d = timings[source], stats[source], baseline[source]
        phases = t["phases"]
        other = t["seconds"] - sum(phases.values())
        print(
            f"{source:<11} {s['files']:>6,} {s['bytes'] / 1e6:>7,.1f} {t['n_read']:>11,} "
            f"{t['seconds']:>9.2f} {_rate(t['n_read'], t['seconds'])} {d['seconds']:>9.2f} "
            f"{d['seconds'] / t['seconds']:>9.2f}x   parse {phases['parse']:.1f}, validate "
            f"{phases['validate']:.1f}, load {phases['load']:.1f}, views {phases['views']:.1f}, "
            f"read+hash+rest {other:.1f}"
        )
    start_up = timings["start_up"]
    total_s = sum(timings[s]["seconds"] for s in SOURCES)
    total_rows = sum(timings[s]["n_read"] for s in SOURCES)
    duck_s = sum(baseline[s]["seconds"] for s in SOURCES)
    n_bytes = sum(s["bytes"] for s in stats.values())
    print(
        f"{'all':<11} {sum(s['files'] for s in stats.values()):>6,} {n_bytes / 1e6:>7,.1f} "
        f"{total_rows:>11,} {total_s:>9.2f} {_rate(total_rows, total_s)} {duck_s:>9.2f} "
        f"{duck_s / total_s:>9.2f}x"
    )
    print(
        "(all = the sources' ingests in one fresh process, Great Expectations' one-off start-up "
        f"included: {start_up['took']:.1f} s on its own thread while the first files were "
        f"parsed, of which validation waited {start_up['waited']:.1f} s; "
        f"{sum(timings[s]['n_loaded'] for s in SOURCES):,} rows loaded, "
        f"{sum(timings[s]['n_quarantined'] for s in SOURCES):,} quarantined; vs duckdb = "
        "DuckDB read_csv time / our ingest time"
        + (
            "; our parsers alone: " + ", ".join(f"{s} {ours_parse[s]:.1f} s" for s in SOURCES)
            if ours_parse
            else ""
        )
        + ")"
    )
    return total_s, duck_s


def memory_slope(args: argparse.Namespace) -> bool:
    """Ingest two landings of one fleet (``--days``, ``--days2``); print speed, peak RSS, slope.

    Returns whether issue 17's targets are met: ingest >= 0.5x DuckDB's read of the first
    landing, peak RSS under 2 GB for both, and a slope under
    :data:`TARGET_RSS_SLOPE_MB_PER_DAY`.
    """
    work = Path(tempfile.mkdtemp(prefix="relia-bench-"))
    rows = []
    try:
        for days, given in ((args.days, args.landing), (args.days2, args.landing2)):
            landing = given or work / f"landing-{days}"
            synth_s = synth_landing(
                landing,
                nodes=args.nodes,
                gpus_per_node=args.gpus_per_node,
                days=days,
                seed=args.seed,
            )
            stats = landing_stats(landing)
            print(
                f"{days} days: {landing}, {sum(s['files'] for s in stats.values()):,} files, "
                f"{sum(s['bytes'] for s in stats.values()) / 1e6:,.0f} MB; synthesis "
                + (f"{synth_s:.0f} s" if synth_s else "reused"),
                flush=True,
            )
            db_path = work / f"relia-{days}.duckdb"
            whole, wall = run_whole(landing, db_path, work)
            baseline = duckdb_read(landing)
            print_whole(landing, whole, wall, baseline)
            print()
            total_s, peak_gb = whole["seconds"], whole["peak_gb"]
            duck_s = sum(d["seconds"] for d in baseline.values())
            rows.append((days, total_s, duck_s, peak_gb))
            for path in work.glob("*.duckdb*"):
                path.unlink()
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print(f"{'days':>5} {'ingest s':>9} {'duckdb s':>9} {'vs duckdb':>10} {'peak RSS GB':>12}")
    for days, total_s, duck_s, peak_gb in rows:
        print(
            f"{days:>5} {total_s:>9.1f} {duck_s:>9.1f} {duck_s / total_s:>9.2f}x {peak_gb:>12.2f}"
        )
    (d1, t1, b1, p1), (d2, _, _, p2) = rows
    slope = (p2 - p1) * 1024 / (d2 - d1)
    print(
        f"peak RSS slope: {slope:+.1f} MB a day of landing ({p1:.2f} GB at {d1} days, "
        f"{p2:.2f} GB at {d2})   (target < {TARGET_RSS_SLOPE_MB_PER_DAY:g} MB/day: flat)"
    )
    ok = b1 / t1 >= TARGET_VS_DUCKDB and max(p1, p2) < TARGET_RSS_GB
    ok = ok and slope < TARGET_RSS_SLOPE_MB_PER_DAY
    print(
        f"issue 17: ingest {b1 / t1:.2f}x DuckDB at {d1} days (>= {TARGET_VS_DUCKDB:g}x), peak "
        f"RSS {max(p1, p2):.2f} GB (< {TARGET_RSS_GB:g} GB), slope {slope:+.1f} MB/day: "
        + ("met" if ok else "missed")
    )
    growth = p2 / p1 - 1
    fast = b1 / t1 >= TARGET_VS_DUCKDB_100K
    small = max(p1, p2) < TARGET_RSS_GB_100K and abs(growth) <= TARGET_RSS_FLAT
    print(
        f"ingest {b1 / t1:.2f}x DuckDB at {d1} days (target >= {TARGET_VS_DUCKDB_100K:g}x): "
        + ("met" if fast else "missed")
        + f"; peak RSS {max(p1, p2):.2f} GB (< {TARGET_RSS_GB_100K:g} GB), {growth:+.1%} from "
        f"{d1} to {d2} days (within +/- {TARGET_RSS_FLAT:.0%}): " + ("met" if small else "missed")
    )
    return ok and fast and small


def line_loop_speed(
    landing: Path, timings: dict[str, Any], ours_parse: dict[str, float]
) -> dict[str, float]:
    """Time the line-by-line Python parsers of sacct and the kernel logs against ours (seconds)."""
    py_secs: dict[str, float] = {}
    for source, parse in (("slurm", python_sacct), ("kernel", python_kernel)):
        files = sorted((landing / source).iterdir())
        started = time.perf_counter()
        rows, rejects = parse(files)
        py_secs[source] = time.perf_counter() - started
        ours = timings[source]["seconds"]
        print(
            f"line-by-line Python {source:<6}: {py_secs[source]:7.2f} s "
            f"({rows:,} rows, {rejects:,} rejects; "
            f"{_rate(rows + rejects, py_secs[source]).strip()}); our ingest {ours:.2f} s "
            f"({py_secs[source] / ours:.2f}x its speed), our parser alone "
            f"{ours_parse[source]:.2f} s ({py_secs[source] / ours_parse[source]:.1f}x)"
        )
    return py_secs


def xid_best_of_three(
    landing: Path, ours_parse: dict[str, float], py_secs: dict[str, float]
) -> float:
    """Return how many times faster our Xid extraction is than the line loop, best run of each.

    Both sides are timed three times (single runs of a quarter-second on 512 logs move by 10 %);
    the first runs are the ones already timed.
    """
    kernel_files = sorted((landing / "kernel").iterdir())
    ours_runs, loop_runs = [ours_parse["kernel"]], [py_secs["kernel"]]
    for _ in range(2):
        ours_runs.append(parse_only(landing, sources=("kernel",))["kernel"])
        started = time.perf_counter()
        python_kernel(kernel_files)
        loop_runs.append(time.perf_counter() - started)
    ours_s, loop_s = min(ours_runs), min(loop_runs)
    xid_vs_loop = loop_s / ours_s
    print(
        f"kernel Xid extraction (best of 3 runs each): ours {ours_s:.2f} s vs line loop "
        f"{loop_s:.2f} s = {xid_vs_loop:.1f}x   (target >= {TARGET_XID_VS_LOOP:g}x; "
        f"ours {', '.join(f'{r:.2f}' for r in ours_runs)} s, loop "
        f"{', '.join(f'{r:.2f}' for r in loop_runs)} s)"
    )
    return xid_vs_loop


SOURCE_TABLES = {
    "slurm": "raw_slurm_jobs",
    "kernel": "raw_xid_events",
    "nvidia_smi": "raw_inventory",
    "fleet": "raw_fleet",
    "repairs": "raw_repairs",
}
"""The raw table each source of :data:`SOURCES` loads."""


def source_snapshots(db_path: Path) -> dict[str, Any]:
    """Time the snapshots' refresh at the end of an ingest of one source, for each source.

    ``warehouse.refresh`` as the ingest calls it when it wrote that source's table (only the
    snapshots over it taken again), and as it did before it knew (every one, timed before and
    after the sources, the better kept), on the same warehouse: seconds and snapshots taken.
    """
    from pipelines import warehouse

    out: dict[str, Any] = {"all_s": [], "sources": {}}
    with warehouse.connect(db_path) as con:
        warehouse.materialize(con)
        warehouse.stale_snapshots(con, {("raw_fleet", None)})  # the views' graph, parsed once

        def timed(changed: set[warehouse.Read] | None) -> float:
            started = time.perf_counter()
            warehouse.refresh(con, data_changed=True, changed=changed)
            return time.perf_counter() - started

        out["all_s"].append(timed(None))
        for source, table in SOURCE_TABLES.items():
            written = warehouse.written_by(
                [warehouse.LoadCounts("bench", source, table, 1, 1, 0, 0, skipped=False)]
            )
            stale = warehouse.stale_snapshots(con, written)
            out["sources"][source] = {"seconds": timed(written), "stale": len(stale)}
        out["all_s"].append(timed(None))
    out["all_s"] = min(out["all_s"])
    return out


def print_source_snapshots(snap: dict[str, Any]) -> bool:
    """Print :func:`source_snapshots`; return whether it met :data:`TARGET_ONE_SOURCE_SNAPSHOTS`."""
    from pipelines import warehouse

    n_all = len(warehouse.MATERIALIZED)
    sources = snap["sources"]
    print(
        "snapshots after an ingest of one source (taken again of "
        f"{n_all}, seconds; every one: {snap['all_s']:.2f} s): "
        + ", ".join(f"{k} {v['stale']} {v['seconds']:.2f} s" for k, v in sources.items())
    )
    ratio = sum(v["seconds"] for v in sources.values()) / (len(sources) * snap["all_s"])
    ok = ratio <= TARGET_ONE_SOURCE_SNAPSHOTS
    print(
        f"snapshots after the {len(sources)} one-source ingests vs every one each time: "
        f"{ratio:.2f}x   (target <= {TARGET_ONE_SOURCE_SNAPSHOTS:g}x): "
        + ("met" if ok else "missed")
    )
    return ok


def downstream_steps(db_path: Path, work: Path) -> dict[str, float | None]:
    """Time views, fit, report, snapshot and report again; print and return them (None: failed)."""
    views_s, _ = _step("views", lambda: views_and_counts(db_path))
    fit_s, _ = _step("fit", lambda: run_fit(db_path))
    views_report_s, _ = _step("report on the views", lambda: build_report(db_path, work))
    snapshot_s, _ = _step("snapshot", lambda: materialize(db_path))
    report_s, _ = _step("report", lambda: build_report(db_path, work))
    shown = {
        "views build + count": views_s,
        "fit": fit_s,
        "report on the views (baseline)": views_report_s,
        "snapshot of the expensive views": snapshot_s,
        f"report (target < {TARGET_REPORT_S:g} s)": report_s,
    }
    print("; ".join(f"{k}: " + ("failed" if v is None else f"{v:.2f} s") for k, v in shown.items()))
    return shown


def targets_met(
    peak_gb: float,
    vs_duckdb: float,
    vs_python: float,
    xid_vs_loop: float,
    shown: dict[str, float | None],
) -> bool:
    """Print the figures against their targets and the issue-12 verdict; True when all are met."""
    print(f"peak RSS of the ingest: {peak_gb:.2f} GB   (target < {TARGET_RSS_GB:g} GB)")
    print(f"ingest speed vs DuckDB read_csv: {vs_duckdb:.2f}x   (target >= {TARGET_VS_DUCKDB:g}x)")
    print(
        f"ingest speed vs line-by-line Python (sacct + kernel): {vs_python:.2f}x   "
        f"(target >= {TARGET_VS_PYTHON:g}x)"
    )
    ok = (
        peak_gb < TARGET_RSS_GB
        and vs_duckdb >= TARGET_VS_DUCKDB
        and vs_python >= TARGET_VS_PYTHON
        and xid_vs_loop >= TARGET_XID_VS_LOOP
        and None not in shown.values()
    )
    print(
        f"issue 12: Xid extraction {xid_vs_loop:.1f}x the loop (>= {TARGET_XID_VS_LOOP:g}x), "
        f"ingest {vs_duckdb:.2f}x DuckDB (>= {TARGET_VS_DUCKDB_12:g}x): "
        + (
            "met"
            if xid_vs_loop >= TARGET_XID_VS_LOOP and vs_duckdb >= TARGET_VS_DUCKDB_12
            else "missed"
        )
    )
    return ok


def main() -> None:
    """Run every step and print figures, ratios against the targets and PASS/FAIL."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=2048)
    parser.add_argument("--gpus-per-node", type=int, default=8)
    parser.add_argument("--days", type=int, default=365)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--landing", type=Path, help="landing folder to reuse or keep")
    parser.add_argument(
        "--days2", type=int, help="only ingest vs DuckDB and peak RSS, at --days and at this"
    )
    parser.add_argument("--landing2", type=Path, help="landing folder of the --days2 fleet")
    parser.add_argument("--ingest-child", nargs=3, type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--idle-tick", nargs=2, type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--whole-child", nargs=3, type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.whole_child:
        whole_child(*args.whole_child)
        return
    if args.ingest_child:
        ingest_child(*args.ingest_child)
        return
    if args.idle_tick:
        idle_tick_child(*args.idle_tick)
        return
    if args.days2 is not None:
        print("PASS" if memory_slope(args) else "FAIL")
        return

    began = time.perf_counter()
    work = Path(tempfile.mkdtemp(prefix="relia-bench-"))
    landing = args.landing or work / "landing"
    try:
        synth_s = synth_landing(
            landing,
            nodes=args.nodes,
            gpus_per_node=args.gpus_per_node,
            days=args.days,
            seed=args.seed,
        )
        stats = landing_stats(landing)
        print(
            f"fleet: {args.nodes:,} nodes x {args.gpus_per_node} GPUs = "
            f"{args.nodes * args.gpus_per_node:,} GPUs, {args.days} days, seed {args.seed}; "
            f"{os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f} at the start"
        )
        print(
            f"landing: {sum(s['files'] for s in stats.values()):,} files, "
            f"{sum(s['bytes'] for s in stats.values()) / 1e6:,.0f} MB, "
            f"{sum(s['lines'] for s in stats.values()):,} lines; synthesis "
            + (f"{synth_s:.0f} s" if synth_s else "reused"),
            flush=True,
        )
        db_path = work / "relia.duckdb"
        timings, ingest_wall, peak_gb = run_ingest(landing, db_path, work)
        baseline = duckdb_read(landing)
        ours_parse = parse_only(landing)
        print()
        print_ingest(stats, timings, baseline, ours_parse)
        print(f"ingest child wall time {ingest_wall:.1f} s (interpreter start included)")
        whole_db = work / "whole.duckdb"
        whole, whole_wall = run_whole(landing, whole_db, work)
        vs_duckdb = print_whole(landing, whole, whole_wall, baseline)
        print(flush=True)

        py_secs = line_loop_speed(landing, timings, ours_parse)
        print(flush=True)
        xid_vs_loop = xid_best_of_three(landing, ours_parse, py_secs)
        # on the warehouse of the whole landing: a tick finds nothing new there (the per-source
        # ingests above leave out the sources outside SOURCES, node events among them)
        idle_ok = print_ticks(tick(landing, whole_db), stats, timings)
        snapshots_ok = print_source_snapshots(source_snapshots(db_path))
        print(flush=True)
        shown = downstream_steps(db_path, work)
        vs_python = (py_secs["slurm"] + py_secs["kernel"]) / (
            timings["slurm"]["seconds"] + timings["kernel"]["seconds"]
        )
        peak_gb = max(peak_gb, whole["peak_gb"])
        ok = targets_met(peak_gb, vs_duckdb, vs_python, xid_vs_loop, shown)
        ok = ok and idle_ok and snapshots_ok
        print(
            f"benchmark wall time {time.perf_counter() - began:.0f} s; "
            f"load average {os.getloadavg()[0]:.1f} at the end"
        )
        print("PASS" if ok else "FAIL")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
