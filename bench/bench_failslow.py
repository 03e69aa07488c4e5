"""Benchmark fail-slow episode detection over a fleet's training logs against reading the logs.

Run from the repository root::

    python -m bench.bench_failslow                          # 512 nodes x 8 GPUs, 365 days
    python -m bench.bench_failslow --nodes 64 --days 90     # a smaller run
    python -m bench.bench_failslow --landing /tmp/fs        # reuse (or keep) a synthesised landing

Steps, all in one run so the ratios compare like with like on this machine; every timed step
runs in a fresh child process of its own, whose peak RSS (``getrusage``) is its own:

1. ``synth.synthesize`` writes the fleet with training logs and the ``published`` fail-slow
   preset (``relia synth --training-logs --slow-preset published``) into a landing folder
   (skipped when ``--landing`` already holds one with the same parameters).
2. Every source but the training logs is ingested into a warehouse (not timed against anything:
   the scheduler's jobs and the rest are what the logs' rows join to).
3. **Ingest of the training logs with episodes**: ``pipelines.ingest.ingest`` of the landing's
   ``training/`` folder into a copy of that warehouse, as ``relia ingest`` runs it: parse,
   validate, load, and at its end the views' snapshots over the training events taken again,
   ``int_step_pace`` and ``int_slow_episodes`` among them (each snapshot timed by name).
4. **Episode detection**: on the ingested warehouse (its snapshots in place), the SQL of
   ``int_step_pace`` and then of ``int_slow_episodes`` materialised into tables of their own,
   as a snapshot takes them, in a transaction rolled back at the end. Their inputs
   (``int_training_events``, the attempts; the episodes read the ``int_step_pace`` snapshot,
   the same rows) are the snapshots the ingest took.
5. Baselines on the same bytes: DuckDB's ``read_csv`` of every training log as whole lines
   (``count(*)``), DuckDB's ``read_text`` of the same files (``sum(length(content))``), and a
   plain Python line loop (``for line in file``: count lines, and those holding ``step`` or
   ``iteration``, the words of the frameworks' progress lines), each in its own child.

Printed: seconds, rows and peak RSS (the child process's) of each, and each one's time over each
baseline's (``/ read_csv``: how many times DuckDB's read of the same bytes it takes). The
episodes found are printed beside the truth's count, not checked: their accuracy is the tests'
(tests/sql/test_slow_episodes.py), not this benchmark's.
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

EPISODE_VIEWS = ("int_step_pace", "int_slow_episodes")
"""The views of episode detection, in order: the pace per progress line, then the episodes."""
PHASES = {
    "parse": [
        ("pipelines.ingest.parse", "parse_file"),
        ("pipelines.ingest.plan", "parse_file"),
        ("pipelines.ingest.parse", "parse_together"),
        ("pipelines.ingest.plan", "parse_together"),
    ],
    "validate": [("pipelines.ingest.quality", "validate")],
    "load": [("pipelines.warehouse", "load_files")],
    "views": [("pipelines.warehouse", "refresh")],
}
"""Ingest steps timed in the ingest child (phase -> functions, patched where their callers look
them up); ``tests/test_bench_failslow.py`` checks that every name still exists."""
SNAPSHOT = ("pipelines.warehouse.schema", "snapshot_view")
"""The function that takes one view's snapshot (timed per view name in the ingest child)."""
PROGRESS_WORDS = (b"step", b"iteration")
"""What the line loop looks for: Megatron-LM prints ``iteration``, torchtitan and HF ``step``."""


# --------------------------------------------------------------------------------------------
# Landing
# --------------------------------------------------------------------------------------------
def synth_landing(landing: Path, *, nodes: int, gpus_per_node: int, days: int, seed: int) -> float:
    """Write the fleet with training logs and fail-slow (unless it is there); seconds taken.

    The window ends at midnight UTC two days before today (telemetry from the future would be
    quarantined).
    """
    from synth import SynthConfig, synthesize
    from synth.failslow import with_slow_preset

    today = datetime.now(UTC).replace(hour=0, minute=0, second=0, microsecond=0)
    config = SynthConfig(
        nodes=nodes,
        gpus_per_node=gpus_per_node,
        days=days,
        seed=seed,
        start=today - timedelta(days=days + 2),
        training_logs=True,
    )
    config = with_slow_preset(config, "published")
    truth = landing / "ground_truth.json"
    if truth.exists():
        params = json.loads(truth.read_text())["params"]
        if all(params.get(k) == v for k, v in config.to_params().items()):
            return 0.0
    started = time.perf_counter()
    synthesize(landing, config)
    return time.perf_counter() - started


def truth_counts(landing: Path) -> dict[str, int]:
    """Return the generator's episodes on logged jobs and its straggling jobs (counts)."""
    truth = json.loads((landing / "ground_truth.json").read_text())
    return {
        "episodes": len(truth.get("slow_episodes", [])),
        "straggling_jobs": sum(1 for s in truth.get("slow_jobs", {}).values() if s > 0),
    }


def log_files(landing: Path) -> list[Path]:
    """Return the landing's training logs, sorted."""
    return sorted(p for p in (landing / "training").iterdir() if p.is_file())


# --------------------------------------------------------------------------------------------
# Children (each run as ``python -m bench.bench_failslow --child NAME ARGS...``)
# --------------------------------------------------------------------------------------------
def _peak_gb() -> float:
    """Return the peak RSS of the current process in GB.

    ``VmHWM`` of ``/proc/self/status`` (kB) where there is one: the high-water mark of this
    program's own memory. ``ru_maxrss`` keeps the parent's peak at the fork across ``exec`` (a
    child of a benchmark that has just synthesised a fleet would start at its size); it is the
    fallback elsewhere (KiB on Linux).
    """
    status = Path("/proc/self/status")
    if status.exists():
        for line in status.read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024**2
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024**2


def prepare_child(landing: Path, db_path: Path) -> dict[str, Any]:
    """Ingest every source of ``landing`` but its training logs into ``db_path``."""
    from pipelines import ingest

    folders = [p for p in sorted(landing.iterdir()) if p.is_dir() and p.name != "training"]
    started = time.perf_counter()
    counts = ingest.ingest(db_path, ingest.discover(folders))
    return {
        "seconds": time.perf_counter() - started,
        "n_loaded": sum(c.n_loaded for c in counts),
        "peak_gb": _peak_gb(),
    }


def ingest_child(landing: Path, db_path: Path) -> dict[str, Any]:
    """Ingest the training logs of ``landing`` into ``db_path``: phases and snapshots timed."""
    import functools
    import importlib

    from bench.phases import time_phases
    from pipelines import ingest

    totals = time_phases(PHASES)
    snapshots: dict[str, float] = {}
    module = importlib.import_module(SNAPSHOT[0])
    original = getattr(module, SNAPSHOT[1])

    @functools.wraps(original)
    def timed(con: Any, name: str) -> None:
        started = time.perf_counter()
        try:
            original(con, name)
        finally:
            snapshots[name] = snapshots.get(name, 0.0) + time.perf_counter() - started

    setattr(module, SNAPSHOT[1], timed)
    files = ingest.discover([landing / "training"])
    started = time.perf_counter()
    counts = ingest.ingest(db_path, files)
    return {
        "seconds": time.perf_counter() - started,
        "phases": dict(totals),
        "snapshots": snapshots,
        "n_files": len(counts),
        "n_loaded": sum(c.n_loaded for c in counts),
        "n_quarantined": sum(c.n_quarantined for c in counts),
        "peak_gb": _peak_gb(),
    }


def episodes_child(db_path: Path) -> dict[str, Any]:
    """Materialise the episode views' SQL on the ingested warehouse; seconds and rows of each."""
    from pipelines import warehouse

    bodies = {p.stem: p.read_text().strip().rstrip(";") for p in warehouse.view_files()}
    out: dict[str, Any] = {"views": {}}
    with warehouse.connect(db_path) as con:
        con.execute("begin transaction")
        for name in EPISODE_VIEWS:
            table = warehouse.identifier(f"bench_{name}")
            started = time.perf_counter()
            con.execute(f"create table {table} as {bodies[name]}")
            seconds = time.perf_counter() - started
            row = con.execute(f"select count(*) from {table}").fetchone()
            out["views"][name] = {"seconds": seconds, "rows": int(row[0]) if row else 0}
        con.execute("rollback")
    out["peak_gb"] = _peak_gb()
    return out


def duckdb_child(landing: Path, how: str) -> dict[str, Any]:
    """Read every training log with DuckDB: ``lines`` (read_csv) or ``text`` (read_text)."""
    import duckdb

    pattern = str(landing / "training" / "*")
    con = duckdb.connect()
    if how == "lines":
        sql = (
            f"select count(*) from read_csv('{pattern}', columns = {{'line': 'VARCHAR'}}, "
            "header = false, delim = chr(31), quote = '', escape = '', parallel = true)"
        )
    else:
        sql = f"select sum(length(content)) from read_text('{pattern}')"
    started = time.perf_counter()
    row = con.execute(sql).fetchone()
    return {
        "seconds": time.perf_counter() - started,
        "rows": int(row[0]) if row and row[0] is not None else 0,
        "peak_gb": _peak_gb(),
    }


def loop_child(landing: Path) -> dict[str, Any]:
    """Loop over every training log's lines in plain Python: lines, and progress-like lines."""
    n_lines = n_progress = 0
    started = time.perf_counter()
    for path in log_files(landing):
        with path.open("rb") as handle:
            for line in handle:
                n_lines += 1
                if PROGRESS_WORDS[0] in line or PROGRESS_WORDS[1] in line:
                    n_progress += 1
    return {
        "seconds": time.perf_counter() - started,
        "rows": n_lines,
        "progress_lines": n_progress,
        "peak_gb": _peak_gb(),
    }


def run_child(name: str, *args: Path | str) -> tuple[dict[str, Any], float]:
    """Run the child ``name`` in a fresh interpreter; (what it printed as JSON, wall seconds)."""
    started = time.perf_counter()
    run = subprocess.run(
        [sys.executable, "-m", "bench.bench_failslow", "--child", name, *map(str, args)],
        check=True,
        capture_output=True,
        text=True,
        cwd=Path(__file__).resolve().parent.parent,
    )
    return json.loads(run.stdout.strip().splitlines()[-1]), time.perf_counter() - started


def child_main(name: str, args: list[str]) -> None:
    """Run one child and print its figures as one JSON line."""
    paths = [Path(a) for a in args]
    if name == "prepare":
        out = prepare_child(*paths)
    elif name == "ingest":
        out = ingest_child(*paths)
    elif name == "episodes":
        out = episodes_child(*paths)
    elif name == "loop":
        out = loop_child(*paths)
    else:
        out = duckdb_child(paths[0], args[1])
    print(json.dumps(out))


# --------------------------------------------------------------------------------------------
# The run
# --------------------------------------------------------------------------------------------
def measure(landing: Path, work: Path) -> dict[str, Any]:
    """Run every child on ``landing`` (warehouses under ``work``); return their figures."""
    base_db = work / "base.duckdb"
    prepared, _ = run_child("prepare", landing, base_db)
    db = work / "relia.duckdb"
    shutil.copyfile(base_db, db)
    ingested, ingest_wall = run_child("ingest", landing, db)
    episodes, _ = run_child("episodes", db)
    lines, _ = run_child("duckdb", landing, "lines")
    text, _ = run_child("duckdb", landing, "text")
    loop, _ = run_child("loop", landing)
    return {
        "prepared": prepared,
        "ingest": ingested,
        "ingest_wall": ingest_wall,
        "episodes": episodes,
        "baselines": {
            "DuckDB read_csv, whole lines": lines,
            "DuckDB read_text, whole files": text,
            "Python line loop": loop,
        },
    }


def report(landing: Path, figures: dict[str, Any]) -> list[str]:
    """Return the benchmark's printed lines, from :func:`measure`'s figures."""
    files = log_files(landing)
    mb = sum(p.stat().st_size for p in files) / 1e6
    base = figures["baselines"]
    read_s = base["DuckDB read_csv, whole lines"]["seconds"]
    text_s = base["DuckDB read_text, whole files"]["seconds"]
    loop_s = base["Python line loop"]["seconds"]
    ing, eps = figures["ingest"], figures["episodes"]
    detect_s = sum(v["seconds"] for v in eps["views"].values())
    snaps = ing["snapshots"]
    in_ingest = sum(snaps.get(v, 0.0) for v in EPISODE_VIEWS)

    def row(name: str, seconds: float, rows: int | None, peak_gb: float | None) -> str:
        shown_rows = f"{rows:12,}" if rows is not None else f"{'':>12}"
        shown_peak = f"{peak_gb:8.2f}" if peak_gb is not None else f"{'':>8}"
        return (
            f"{name:<44} {seconds:8.2f} {shown_rows} {shown_peak} {seconds / read_s:9.2f}x "
            f"{seconds / text_s:9.2f}x {seconds / loop_s:9.2f}x"
        )

    out = [
        f"{'step (each its own process)':<44} {'seconds':>8} {'rows':>12} {'peak GB':>8} "
        f"{'/ read_csv':>10} {'/ read_text':>10} {'/ line loop':>10}",
    ]
    for name, fig in base.items():
        out.append(row(name, fig["seconds"], fig["rows"], fig["peak_gb"]))
    for name, fig in eps["views"].items():
        out.append(row(f"  {name} (SQL to a table)", fig["seconds"], fig["rows"], None))
    out.append(row("episode detection (the two views)", detect_s, None, eps["peak_gb"]))
    out.append(
        row(
            "ingest of the training logs, episodes incl.",
            ing["seconds"],
            ing["n_loaded"],
            ing["peak_gb"],
        )
    )
    phases = ing["phases"]
    rest = ing["seconds"] - sum(phases.values())
    top = sorted(snaps.items(), key=lambda kv: -kv[1])[:5]
    out.append(
        f"  ingest phases: parse {phases['parse']:.1f}, validate {phases['validate']:.1f}, "
        f"load {phases['load']:.1f}, views and snapshots {phases['views']:.1f}, "
        f"read+hash+rest {rest:.1f} s; {ing['n_files']:,} files, {ing['n_quarantined']:,} "
        f"rows quarantined; process wall {figures['ingest_wall']:.1f} s"
    )
    out.append(
        f"  snapshots taken in the ingest: {len(snaps)}, {sum(snaps.values()):.1f} s; the "
        f"episode views {in_ingest:.1f} s of them; largest: "
        + ", ".join(f"{k} {v:.1f} s" for k, v in top)
    )
    out.append(
        f"training logs: {len(files):,} files, {mb:,.0f} MB, "
        f"{base['Python line loop']['rows']:,} lines "
        f"({base['Python line loop']['progress_lines']:,} with 'step' or 'iteration'); "
        f"the other sources' ingest first (not compared): {figures['prepared']['seconds']:.1f} s"
    )
    return out


def main() -> None:
    """Synthesise (or reuse) the landing, run the children, print figures and ratios."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=512)
    parser.add_argument("--gpus-per-node", type=int, default=8)
    parser.add_argument("--days", type=int, default=365)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--landing", type=Path, help="landing folder to reuse or keep")
    parser.add_argument("--child", nargs="+", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child_main(args.child[0], args.child[1:])
        return
    began = time.perf_counter()
    work = Path(tempfile.mkdtemp(prefix="relia-bench-failslow-"))
    landing = args.landing or work / "landing"
    try:
        synth_s = synth_landing(
            landing,
            nodes=args.nodes,
            gpus_per_node=args.gpus_per_node,
            days=args.days,
            seed=args.seed,
        )
        truth = truth_counts(landing)
        print(
            f"fleet: {args.nodes:,} nodes x {args.gpus_per_node} GPUs = "
            f"{args.nodes * args.gpus_per_node:,} GPUs, {args.days} days, seed {args.seed}, "
            f"fail-slow preset 'published' ({truth['episodes']:,} episodes on logged jobs, "
            f"{truth['straggling_jobs']:,} straggling jobs in the truth); synthesis "
            + (f"{synth_s:.0f} s" if synth_s else "reused")
            + f"; {os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f} at the start",
            flush=True,
        )
        figures = measure(landing, work)
        for line in report(landing, figures):
            print(line)
        print(
            f"benchmark wall time {time.perf_counter() - began:.0f} s; "
            f"load average {os.getloadavg()[0]:.1f} at the end"
        )
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
