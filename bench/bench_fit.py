"""Benchmark ``fit_lives`` against bare lifelines fits of the same lives.

Run from the repository root::

    python -m bench.bench_fit                # 1,000,000 lives over 7 classes
    python -m bench.bench_fit --n-lives 200000

It synthesises left-truncated, right-censored Weibull lives for 7 component classes, times
``models.fit_lives`` for every class and family (grouping, fits, intervals and table
included), then times lifelines' ``ExponentialFitter``, ``WeibullFitter``, ``LogNormalFitter``
and ``LogLogisticFitter`` on the same per-class arrays (array extraction not timed), and prints
both times and the ratio against the targets: at most 1.3x lifelines and under 10 s.
"""

from __future__ import annotations

import argparse
import math
import time
import warnings

import numpy as np
import polars as pl
from lifelines import ExponentialFitter, LogLogisticFitter, LogNormalFitter, WeibullFitter

from models import FAMILIES, fit_lives

TARGET_RATIO = 1.3
TARGET_SECONDS = 10.0
WINDOW_H = 2_160.0  # a 90-day observation window
OLDEST_AGE_H = 35_064.0  # units up to four years old at the window start
# class: (share of lives, Weibull shape, Weibull scale in hours)
CLASSES: dict[str, tuple[float, float, float]] = {
    "gpu": (0.30, 0.9, 150_000.0),
    "gpu_memory": (0.25, 0.8, 400_000.0),
    "nvlink": (0.15, 1.1, 250_000.0),
    "pcie": (0.10, 1.0, 600_000.0),
    "nic": (0.08, 1.2, 200_000.0),
    "power": (0.07, 1.4, 120_000.0),
    "host_memory": (0.05, 0.7, 900_000.0),
}
LIFELINES = {
    "exponential": ExponentialFitter,
    "weibull": WeibullFitter,
    "lognormal": LogNormalFitter,
    "loglogistic": LogLogisticFitter,
}


def synthetic_lives(n_lives: int, seed: int) -> pl.DataFrame:
    """Weibull lives per class seen through a window, with left truncation and censoring.

    A unit already in service at the window start enters at its age then (uniform up to
    ``OLDEST_AGE_H``) and its life is drawn given survival to that age, exactly as if lives
    that failed earlier had simply never been seen; a unit installed during the window
    enters at age 0. Lives still running at the window end are censored.
    """
    rng = np.random.default_rng(seed)
    frames = []
    shares = np.array([share for share, _, _ in CLASSES.values()])
    sizes = np.floor(shares / shares.sum() * n_lives).astype(int)
    sizes[0] += n_lives - sizes.sum()
    for (name, (_, shape, scale)), n in zip(CLASSES.items(), sizes, strict=True):
        new = rng.random(n) < 0.15
        entry = np.where(new, 0.0, rng.uniform(0.0, OLDEST_AGE_H, n))
        watched = np.where(new, rng.uniform(1.0, WINDOW_H, n), WINDOW_H)
        life = scale * ((entry / scale) ** shape + rng.standard_exponential(n)) ** (1.0 / shape)
        end = entry + watched
        frames.append(
            pl.DataFrame(
                {
                    "component_class": np.full(n, name),
                    "batch": rng.choice(["2022Q4", "2023Q2", "2024Q1"], n),
                    "rack": rng.integers(0, 64, n).astype(np.int32),
                    "position": rng.integers(0, 8, n).astype(np.int8),
                    "entry_h": entry,
                    "exit_h": np.minimum(life, end),
                    "failed": life <= end,
                }
            )
        )
    return pl.concat(frames).with_row_index("unit_id")


def time_fit_lives(lives: pl.DataFrame) -> tuple[float, pl.DataFrame]:
    """Time ``fit_lives`` on ``lives``; return the seconds and the fitted table."""
    start = time.perf_counter()
    table = fit_lives(lives, by=("component_class",), families=FAMILIES)
    return time.perf_counter() - start, table


def time_lifelines(lives: pl.DataFrame) -> tuple[float, dict[tuple[str, str], float]]:
    """Time bare lifelines fitters on the same lives; return seconds and log-likelihoods."""
    arrays = {
        name: (
            part.get_column("exit_h").to_numpy(),
            part.get_column("failed").to_numpy(),
            part.get_column("entry_h").to_numpy(),
        )
        for (name,), part in lives.partition_by("component_class", as_dict=True).items()
    }
    elapsed = 0.0
    log_likelihoods: dict[tuple[str, str], float] = {}
    for name, (exit_h, failed, entry_h) in arrays.items():
        for family in FAMILIES:
            fitter = LIFELINES[family]()
            start = time.perf_counter()
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                fitter.fit(exit_h, failed, entry=entry_h)
            elapsed += time.perf_counter() - start
            log_likelihoods[name, family] = float(fitter.log_likelihood_)
    return elapsed, log_likelihoods


def main() -> None:
    """Run the benchmark and print its ratio against lifelines."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n-lives", type=int, default=1_000_000)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()

    lives = synthetic_lives(args.n_lives, args.seed)
    counts = lives.group_by("component_class").agg(
        pl.len().alias("n_units"), pl.col("failed").sum().alias("n_failures")
    )
    print(f"{lives.height:,} lives, {lives['failed'].sum():,} failures, {counts.height} classes")

    ours_s, table = time_fit_lives(lives)
    base_s, base_ll = time_lifelines(lives)
    worst = max(
        abs(row["log_likelihood"] - base_ll[row["component_class"], row["family"]])
        for row in table.iter_rows(named=True)
        if math.isfinite(row["log_likelihood"])
    )
    ratio = ours_s / base_s
    print(
        table.filter(pl.col("chosen")).select(
            "component_class", "family", "n_failures", "mtbf_h", "mtbf_lo_h", "mtbf_hi_h"
        )
    )
    print(f"fit_lives, 7 classes x 4 families : {ours_s:8.2f} s   (target < {TARGET_SECONDS:g} s)")
    print(f"bare lifelines, same fits         : {base_s:8.2f} s")
    print(f"ratio fit_lives / lifelines       : {ratio:8.3f}     (target <= {TARGET_RATIO:g})")
    print(f"largest |log-likelihood difference| vs lifelines: {worst:.2e}")
    ok = ratio <= TARGET_RATIO and ours_s < TARGET_SECONDS
    print("PASS" if ok else "FAIL")


if __name__ == "__main__":
    main()
