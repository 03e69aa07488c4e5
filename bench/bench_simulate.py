"""Benchmark the vectorised job simulator against the per-event loop, and the what-if grid.

Run from the repository root::

    python -m bench.bench_simulate
    python -m bench.bench_simulate --n-trials 1000 --naive-trials 100 --repeats 5

The job: 100,000 GPUs (8 per node) for 30 days, hot-spare strategy with 32 spare nodes and an
8 h repair. Rates follow Llama 3's interruption breakdown (268 of 419 unexpected interruptions
on 16,384 GPUs in 54 days blamed on GPUs, the rest on hosts): a per-GPU class with Weibull
shape 0.8 (steady-state fleet) and an exponential per-node class, about 1,400 faults a run.

``simulate_job`` runs all ``--n-trials`` trials (median of ``--repeats`` runs, after one
warm-up); ``simulate_job_naive`` runs ``--naive-trials`` trials in the same process and its
time is scaled linearly to ``--n-trials`` (its cost is per trial, so linear scaling is exact up
to noise). Targets: vectorised under 10 s and at least 50x faster than the loop. Then a
10,000-point analytical grid through ``sweep`` (target under 1 s).
"""

from __future__ import annotations

import argparse
import math
import statistics
import time

from models import ClassRate, Scenario, project, simulate_job, simulate_job_naive, sweep

TARGET_SIM_SECONDS = 10.0
TARGET_RATIO = 50.0
TARGET_GRID_SECONDS = 1.0
LLAMA3_GPU_H = 16_384 * 54 * 24  # GPU-hours of the Llama 3 snapshot
LLAMA3_NODE_H = 2_048 * 54 * 24

SCENARIO = Scenario(
    n_gpus=100_000,
    gpus_per_node=8,
    failure_domain_gpus=8,
    rates=(
        ClassRate("gpu", "gpu", mtbf_h=LLAMA3_GPU_H / 268, weibull_shape=0.8),
        ClassRate("host", "node", mtbf_h=LLAMA3_NODE_H / 151),
    ),
    strategy="hot_spare",
    hot_spares=32,
    repair_h=8.0,
    job_days=30.0,
    fleet_age="steady_state",
)

GRID = {
    "n_gpus": [1_024 * 2**i for i in range(10)],
    "checkpoint_s": [5.0, 10.0, 20.0, 30.0, 45.0, 60.0, 90.0, 120.0, 180.0, 300.0],
    "detect_s": [10.0, 20.0, 30.0, 60.0, 90.0, 120.0, 180.0, 300.0, 450.0, 600.0],
    "hot_spares": list(range(0, 100, 10)),
}


def _timed(fn, *args, **kwargs):  # type: ignore[no-untyped-def]
    start = time.perf_counter()
    out = fn(*args, **kwargs)
    return time.perf_counter() - start, out


def main() -> None:
    """Time the simulators and the grid, print figures, ratios and PASS/FAIL."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n-trials", type=int, default=1000)
    parser.add_argument("--naive-trials", type=int, default=100)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()

    analytic = project(SCENARIO)
    print(
        f"job: {SCENARIO.n_gpus:,} GPUs, {SCENARIO.job_days:g} days, {SCENARIO.strategy}, "
        f"{SCENARIO.hot_spares} spares, repair {SCENARIO.repair_h:g} h; "
        f"MTTI {analytic['mtti_h'] * 60:.1f} min, "
        f"{analytic['expected_interruptions']:,.0f} faults per run"
    )

    simulate_job(SCENARIO, n_trials=min(args.n_trials, 100), random_state=0)  # warm-up
    runs = [
        _timed(simulate_job, SCENARIO, n_trials=args.n_trials, random_state=seed)
        for seed in range(1, args.repeats + 1)
    ]
    fast_s = statistics.median(t for t, _ in runs)
    fast = runs[0][1]
    naive_s, slow = _timed(
        simulate_job_naive, SCENARIO, n_trials=args.naive_trials, random_state=100
    )
    naive_scaled_s = naive_s * args.n_trials / args.naive_trials
    ratio = naive_scaled_s / fast_s
    z = (fast.goodput - slow.goodput) / math.hypot(fast.goodput_se, slow.goodput_se)

    print(
        f"simulate_job        {args.n_trials:>5} trials: {fast_s:8.3f} s  median of "
        f"{args.repeats} (min {min(t for t, _ in runs):.3f}, max {max(t for t, _ in runs):.3f})"
        f"   goodput {fast.goodput:.4f} ± {fast.goodput_se:.4f}"
    )
    print(
        f"simulate_job_naive  {args.naive_trials:>5} trials: {naive_s:8.3f} s  measured; scaled "
        f"linearly to {args.n_trials} trials: {naive_scaled_s:.2f} s"
        f"   goodput {slow.goodput:.4f} ± {slow.goodput_se:.4f}"
    )
    print(f"analytical goodput {analytic['goodput']:.4f}; naive vs vectorised z = {z:+.2f}")
    print(f"vectorised time    : {fast_s:8.3f} s   (target < {TARGET_SIM_SECONDS:g} s)")
    print(f"speed-up vs loop   : {ratio:8.1f} x   (target >= {TARGET_RATIO:g} x)")

    n_points = math.prod(len(v) for v in GRID.values())
    base = Scenario(strategy="hot_spare", repair_h=8.0)
    sweep(base, {key: values[:2] for key, values in GRID.items()})  # warm-up
    grid_runs = [_timed(sweep, base, GRID) for _ in range(args.repeats)]
    grid_s = statistics.median(t for t, _ in grid_runs)
    frame = grid_runs[0][1]
    print(
        f"what-if grid       : {n_points:,} points ({frame.height:,} rows) in {grid_s:.3f} s, "
        f"median of {args.repeats}   (target < {TARGET_GRID_SECONDS:g} s); "
        f"{n_points / grid_s:,.0f} points/s"
    )
    ok = fast_s < TARGET_SIM_SECONDS and ratio >= TARGET_RATIO and grid_s < TARGET_GRID_SECONDS
    print("PASS" if ok else "FAIL")


if __name__ == "__main__":
    main()
