"""Benchmark what-if grids: the analytical 10,000-point grid, and a Monte Carlo sweep (issue #13).

Run from the repository root::

    python -m bench.bench_sweep
    python -m bench.bench_sweep --repeats 5 --loop-points 500 --naive-points 10 --naive-trials 50

1. **Analytical grid**: 10 scales x 10 checkpoint costs x 10 detection times x 10 spare pools
   (10,000 points, hot-spare strategy) through ``models.sweep`` and through
   ``models.auto_sweep`` (what ``relia whatif`` runs: the same sweep plus the method and error
   columns), median of ``--repeats`` runs after a warm-up. Baseline: ``models.project`` called
   once per point, timed on ``--loop-points`` points spread evenly over the grid and scaled
   linearly to 10,000 (its cost is per point). Target: the grid under 1 s.
2. **Monte Carlo sweep**: 100 points (10 checkpoint costs x 10 spare pools) of the
   ``bench_simulate`` job (100,000 GPUs, 30 days, hot spares, Llama 3 rates with a Weibull 0.8
   GPU class, about 1,400 faults a run), 1,000 trials each, through ``models.simulate_sweep``
   (vectorised ``simulate_job`` per point; one run). Baseline: ``simulate_job_naive`` (one Python
   step per failure) on ``--naive-points`` points spread evenly over the grid, ``--naive-trials``
   trials each, scaled linearly to 100 points x 1,000 trials (cost per trial is flat, per point
   near-flat across this grid). The naive goodputs are compared with the sweep's at the same
   points (z-scores). The machine's load average is printed before and after.
"""

from __future__ import annotations

import argparse
import math
import os
import statistics
import time
from dataclasses import replace

import numpy as np

from bench.bench_simulate import SCENARIO
from models import Scenario, auto_sweep, project, simulate_job_naive, simulate_sweep, sweep
from models.mc_sweep import grid_points

TARGET_GRID_SECONDS = 1.0
GRID = {
    "n_gpus": [1_024 * 2**i for i in range(10)],
    "checkpoint_s": [5.0, 10.0, 20.0, 30.0, 45.0, 60.0, 90.0, 120.0, 180.0, 300.0],
    "detect_s": [10.0, 20.0, 30.0, 60.0, 90.0, 120.0, 180.0, 300.0, 450.0, 600.0],
    "hot_spares": list(range(0, 100, 10)),
}
MC_GRID = {
    "checkpoint_s": [5.0, 10.0, 20.0, 30.0, 45.0, 60.0, 90.0, 120.0, 180.0, 300.0],
    "hot_spares": [8, 16, 24, 32, 40, 48, 56, 64, 80, 96],
}


def _timed(fn, *args, **kwargs):  # type: ignore[no-untyped-def]
    start = time.perf_counter()
    out = fn(*args, **kwargs)
    return time.perf_counter() - start, out


def _spread(n_total: int, n_pick: int) -> list[int]:
    """``n_pick`` indices spread evenly over ``range(n_total)``."""
    return sorted({int(i) for i in np.linspace(0, n_total - 1, n_pick)})


def _load() -> str:
    one, five, _ = os.getloadavg()
    return f"load average {one:.2f} (1 min), {five:.2f} (5 min) on {os.cpu_count()} cores"


def bench_grid(repeats: int, loop_points: int) -> bool:
    """Time the 10,000-point analytical grid against a per-point ``project`` loop."""
    base = Scenario(strategy="hot_spare", repair_h=8.0)
    n_points = math.prod(len(v) for v in GRID.values())
    small = {key: values[:2] for key, values in GRID.items()}
    sweep(base, small)  # warm-up
    auto_sweep(base, small)
    grid_runs = [_timed(sweep, base, GRID) for _ in range(repeats)]
    # the points the analysis flags go to Monte Carlo (at most 200): seconds, not sub-second,
    # so it runs once, beside the target
    auto_runs = [_timed(auto_sweep, base, GRID)]
    grid_s = statistics.median(t for t, _ in grid_runs)
    auto_s = auto_runs[0][0]
    table = grid_runs[0][1]

    points = grid_points(GRID)
    picked = _spread(n_points, loop_points)
    scenarios = [replace(base, **points[i]) for i in picked]
    loop_s, looped = _timed(lambda: [project(s)["goodput"] for s in scenarios])
    loop_scaled_s = loop_s * n_points / len(picked)
    diff = float(np.max(np.abs(np.asarray(looped) - table["goodput"].to_numpy()[picked])))
    methods = auto_runs[0][1]["method"].value_counts().rows()
    print(f"analytical grid: {n_points:,} points (4 knobs x 10 values, hot_spare)")
    print(
        f"  models.sweep          : {grid_s:8.4f} s  median of {repeats} "
        f"(min {min(t for t, _ in grid_runs):.4f}, max {max(t for t, _ in grid_runs):.4f}); "
        f"{n_points / grid_s:,.0f} points/s"
    )
    n_mc = sum(n for m, n in methods if m == "monte_carlo")
    n_left = sum(n for m, n in methods if m.startswith("analytical:"))
    print(
        f"  models.auto_sweep     : {auto_s:8.4f} s  once (what `relia whatif` runs): "
        f"{n_mc} flagged points by Monte Carlo, {n_left} more flagged and left analytical "
        "(the cap), the rest analytical"
    )
    print(
        f"  project() per point   : {loop_s:8.3f} s for {len(picked)} points spread over the grid; "
        f"scaled to {n_points:,}: {loop_scaled_s:.1f} s"
    )
    print(f"  max |goodput difference| sweep vs loop on those points: {diff:.2e}")
    print(
        f"  speed-up vs loop      : {loop_scaled_s / grid_s:8.0f} x (sweep), "
        f"{loop_scaled_s / auto_s:.0f} x (auto_sweep)"
    )
    print(f"  analytical grid time  : {grid_s:8.4f} s   (target < {TARGET_GRID_SECONDS:g} s)")
    return grid_s < TARGET_GRID_SECONDS and diff < 1e-9


def bench_monte_carlo(naive_points: int, naive_trials: int, n_trials: int = 1000) -> None:
    """Time a 100-point Monte Carlo sweep at 100k GPUs against the naive per-failure loop."""
    n_points = math.prod(len(v) for v in MC_GRID.values())
    analytic = project(SCENARIO)
    print(
        f"Monte Carlo sweep: {n_points} points (checkpoint_s x hot_spares) of a "
        f"{SCENARIO.n_gpus:,}-GPU, {SCENARIO.job_days:g}-day {SCENARIO.strategy} job, "
        f"{analytic['expected_interruptions']:,.0f} faults per run, {n_trials:,} trials per point"
    )
    simulate_sweep(SCENARIO, {"checkpoint_s": [60.0]}, n_trials=50, random_state=0)  # warm-up
    mc_s, table = _timed(simulate_sweep, SCENARIO, MC_GRID, n_trials=n_trials, random_state=0)
    points = grid_points(MC_GRID)
    picked = _spread(n_points, naive_points)
    naive_s = 0.0
    z = []
    for i in picked:
        seconds, slow = _timed(
            simulate_job_naive,
            replace(SCENARIO, **points[i]),
            n_trials=naive_trials,
            random_state=1000 + i,
        )
        naive_s += seconds
        fast = table.row(i, named=True)
        z.append((fast["goodput"] - slow.goodput) / math.hypot(fast["goodput_se"], slow.goodput_se))
    scale = (n_points / len(picked)) * (n_trials / naive_trials)
    naive_scaled_s = naive_s * scale
    se = table["goodput_se"]
    print(
        f"  simulate_sweep        : {mc_s:8.2f} s for {n_points} x {n_trials:,} trials "
        f"({mc_s / n_points * 1000:.0f} ms a point); goodput {table['goodput'].min():.4f} to "
        f"{table['goodput'].max():.4f}, SE {se.min():.5f} to {se.max():.5f}"
    )
    print(
        f"  simulate_job_naive    : {naive_s:8.2f} s for {len(picked)} points x {naive_trials} "
        f"trials (points {', '.join(map(str, picked))}); scaled x{scale:g} to {n_points} x "
        f"{n_trials:,}: {naive_scaled_s:.0f} s"
    )
    print(f"  naive vs sweep z at those points: {', '.join(f'{v:+.2f}' for v in z)}")
    print(f"  speed-up vs loop      : {naive_scaled_s / mc_s:8.1f} x")


def main() -> None:
    """Time the grids, print figures, ratios and PASS/FAIL."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--loop-points", type=int, default=500)
    parser.add_argument("--naive-points", type=int, default=10)
    parser.add_argument("--naive-trials", type=int, default=50)
    args = parser.parse_args()
    print(f"start: {_load()}")
    ok = bench_grid(args.repeats, args.loop_points)
    bench_monte_carlo(args.naive_points, args.naive_trials)
    print(f"end: {_load()}")
    print("PASS" if ok else "FAIL")


if __name__ == "__main__":
    main()
