"""Benchmark the goodput ledger and the projection's back-test on a synthetic fleet-year.

Run from the repository root::

    python -m bench.bench_goodput                        # 2,048 nodes x 8 GPUs, 365 days
    python -m bench.bench_goodput --nodes 256 --days 90  # a smaller run
    python -m bench.bench_goodput --landing /tmp/fy      # reuse (or keep) a synthesised landing

Steps, in one run so the figures compare like with like on this machine:

1. ``synth.synthesize`` writes the fleet with training logs (``training_logs=True``) into a
   landing folder (skipped when it holds one with the same parameters).
2. ``pipelines.ingest.ingest`` loads it into a fresh warehouse (timed; not this benchmark's
   target, the training logs' share is printed).
3. Baseline: the weekly report's stages on the views as every ingest leaves them (each query
   recomputes from the raw rows): fit, projection, back-test and ``build_report``.
4. The same stages after ``warehouse.materialize`` snapshots the expensive views (timed on its
   own): fit, projection, the ledger (``fct_job_goodput`` and ``rpt_fleet_goodput`` read in
   full, what the report's section and ``relia goodput`` read), back-test, ``build_report``.
5. The ledger against the generator's truth (``job_goodput``): per category, the share of
   logged jobs within 1 s and the largest difference (with several steps per progress line
   an interruption's wasted time is under-measured by up to that many steps: §6 of
   docs/goodput.md).

Target (issue 17): the weekly report of a 16k-GPU fleet-year under 15 s. The snapshot's cost is
printed beside it: it is paid once per change of the data (the next ingest makes the views views
again), and the weekly stages are compared with and without it.
"""

from __future__ import annotations

import argparse
import json
import shutil
import tempfile
import time
import warnings
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

TARGET_BUDGET_S = 15.0
CATEGORIES = ("productive_s", "checkpoint_s", "wasted_s", "restart_s", "startup_s", "other_s")


def synth_landing(landing: Path, *, nodes: int, gpus_per_node: int, days: int, seed: int) -> float:
    """Write the fleet with training logs (unless it is there with the same parameters)."""
    from synth import SynthConfig, synthesize

    today = datetime.now(UTC).replace(hour=0, minute=0, second=0, microsecond=0)
    config = SynthConfig(
        nodes=nodes,
        gpus_per_node=gpus_per_node,
        days=days,
        seed=seed,
        start=today - timedelta(days=days + 2),
        training_logs=True,
    )
    truth = landing / "ground_truth.json"
    if truth.exists():
        params = json.loads(truth.read_text())["params"]
        wanted = {k: v for k, v in config.to_params().items() if k != "start"}
        if all(params.get(k) == v for k, v in wanted.items()):
            return 0.0
        shutil.rmtree(landing)
    started = time.perf_counter()
    synthesize(landing, config)
    return time.perf_counter() - started


def _timed(fn: Any, *args: Any, **kwargs: Any) -> tuple[Any, float]:
    started = time.perf_counter()
    out = fn(*args, **kwargs)
    return out, time.perf_counter() - started


def _truth_check(rows: list[dict[str, Any]], truth: list[dict[str, Any]]) -> list[str]:
    ledger = {r["job_id_raw"]: r for r in rows}
    logged = [t for t in truth if t["has_training_log"] and t["job_id_raw"] in ledger]
    lines = [
        f"ledger vs truth: {len(logged):,} jobs with a training log; the bound is what the log's "
        "granularity leaves unseen: per attempt, the steps of one progress line "
        "(log interval x step time) plus a second"
    ]
    for key in CATEGORIES:
        diffs = [abs(ledger[t["job_id_raw"]][key] - t[key]) for t in logged]
        bounds = [
            t["n_attempts"] * t["log_interval_steps"] * t["step_time_s"] + 1.0 for t in logged
        ]
        within = sum(d <= 1.0 for d in diffs)
        bounded = sum(d <= b for d, b in zip(diffs, bounds, strict=True))
        worst = max(diffs, default=0.0)
        n = max(len(diffs), 1)
        lines.append(
            f"  {key:<13} within 1 s: {within / n:7.2%}   within the bound: {bounded / n:7.2%}"
            f"   largest difference {worst:,.0f} s"
        )
    return lines


def _ingest_landing(landing: Path, db: Path) -> str:
    """Ingest the landing into a fresh warehouse; return its time and the training logs' share."""
    from pipelines import ingest

    files = ingest.discover([landing])
    counts, ingest_s = _timed(ingest.ingest, db, files)
    training = [c for c in counts if c.source == "training"]
    n_bytes = sum(f.path.stat().st_size for f in files if f.source == "training")
    return (
        f"ingest: {ingest_s:.1f} s for {len(files):,} files; training logs: {len(training):,} "
        f"files, {n_bytes / 1e6:,.0f} MB, {sum(c.n_loaded for c in training):,} events loaded"
    )


def _backtest_line(buckets: list[dict[str, Any]]) -> str:
    """Return the back-test's summary over all jobs and periods: O/E and goodput, with bounds."""
    overall = next(r for r in buckets if (r["bucket"], r["period"]) == ("all", "all"))
    return (
        "back-test, all jobs: O/E {:.2f} ({:.2f}-{:.2f}), goodput measured {:.1%}, predicted "
        "{:.1%} ({:.1%}-{:.1%})".format(
            overall["oe_ratio"],
            overall["oe_lo"],
            overall["oe_hi"],
            overall["goodput_measured"],
            overall["goodput_predicted"],
            overall["goodput_predicted_lo"],
            overall["goodput_predicted_hi"],
        )
    )


def main() -> None:
    """Run the benchmark and print its figures."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=2048)
    parser.add_argument("--gpus-per-node", type=int, default=8)
    parser.add_argument("--days", type=int, default=365)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--landing", type=Path, default=None)
    args = parser.parse_args()

    from pipelines import warehouse
    from pipelines.analysis.backtest import run_backtest
    from pipelines.report import build_report
    from pipelines.report.inputs import fit_for_report, project_for_report

    keep = args.landing is not None
    landing = args.landing or Path(tempfile.mkdtemp(prefix="relia-goodput-")) / "landing"
    synth_s = synth_landing(
        landing, nodes=args.nodes, gpus_per_node=args.gpus_per_node, days=args.days, seed=args.seed
    )
    truth = json.loads((landing / "ground_truth.json").read_text())["job_goodput"]
    work = Path(tempfile.mkdtemp(prefix="relia-goodput-db-"))
    db = work / "relia.duckdb"
    ingested = _ingest_landing(landing, db)
    print(
        f"fleet: {args.nodes:,} nodes x {args.gpus_per_node} GPUs "
        f"({args.nodes * args.gpus_per_node:,} GPUs), {args.days} days; synth {synth_s:.1f} s"
    )
    print(ingested)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        # baseline: the views as every ingest leaves them, each query recomputing from raw rows
        with warehouse.connect(db) as con:
            warehouse.apply_schema(con)
            _, fit_s = _timed(fit_for_report, con)
            _, project_s = _timed(project_for_report, con)
            _, view_backtest_s = _timed(run_backtest, con, min_gpus=1)
        _, view_report_s = _timed(build_report, db, week=None, reports_dir=work / "reports")
        # the weekly pipeline now: snapshot the expensive views once, then the same stages
        with warehouse.connect(db) as con:
            snapshots, materialize_s = _timed(warehouse.materialize, con)
            _, fit2_s = _timed(fit_for_report, con)
            _, project2_s = _timed(project_for_report, con)
            ledger, ledger_s = _timed(
                lambda: warehouse.query(con, "select * from fct_job_goodput").to_dicts()
            )
            fleet, fleet_s = _timed(
                lambda: warehouse.query(con, "select * from rpt_fleet_goodput").to_dicts()
            )
            run, backtest_s = _timed(run_backtest, con, min_gpus=1)
        report, report_s = _timed(build_report, db, week=None, reports_dir=work / "reports")
    before = fit_s + project_s + view_backtest_s + view_report_s
    after = materialize_s + fit2_s + project2_s + backtest_s + report_s
    print(
        f"views (baseline): fit {fit_s:.1f} s, project {project_s:.1f} s, back-test "
        f"{view_backtest_s:.1f} s, build_report {view_report_s:.1f} s; weekly stages {before:.1f} s"
    )
    slowest = sorted(snapshots.items(), key=lambda kv: -kv[1])[:4]
    print(
        f"snapshots: {len(snapshots)} views materialised in {materialize_s:.1f} s ("
        + ", ".join(f"{name} {sec:.1f} s" for name, sec in slowest)
        + ")"
    )
    print(
        f"after: fit {fit2_s:.1f} s, project {project2_s:.1f} s, back-test {backtest_s:.1f} s, "
        f"build_report {report_s:.1f} s; weekly stages with the snapshot {after:.1f} s "
        f"= {after / before:.2f}x the baseline's"
    )
    print(
        f"ledger reads: fct_job_goodput {ledger_s:.2f} s ({len(ledger):,} jobs), "
        f"rpt_fleet_goodput {fleet_s:.2f} s ({len(fleet):,} rows); back-test "
        f"({run.jobs.height:,} jobs, {run.buckets.height} bucket rows)"
    )
    print(
        f"weekly report build_report {report_s:.1f} s vs {view_report_s:.1f} s on the views "
        f"({view_report_s / report_s:.1f}x faster; target < {TARGET_BUDGET_S:.0f} s): "
        f"{'met' if report_s < TARGET_BUDGET_S else 'NOT met'}"
    )
    print(f"report section 9 in {report.path.name}: {report.seconds:.1f} s for the whole report")
    for line in _truth_check(ledger, truth):
        print(line)
    print(_backtest_line(run.buckets.to_dicts()))
    shutil.rmtree(work, ignore_errors=True)
    if not keep:
        shutil.rmtree(landing.parent, ignore_errors=True)


if __name__ == "__main__":
    main()
