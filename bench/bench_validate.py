"""Benchmark ``quality.validate`` (Great Expectations) against the validation it replaced.

Run from the repository root::

    python -m bench.bench_validate                          # 0.8 M sacct rows, 5 M DCGM rows
    python -m bench.bench_validate --slurm /path/to/slurm   # parse real sacct files instead
    python -m bench.bench_validate --sacct-rows 200000 --dcgm-rows 1000000

Steps, all in one run so the ratios compare like with like on this machine:

1. Great Expectations' import and its ephemeral context (once per process).
2. Two frames: sacct job rows (synthetic, or parsed from ``--slurm`` files) and DCGM samples,
   each with a few rows that fail each kind of check.
3. On each frame: the validation as it was before GX's SQL path (kept below as
   :func:`baseline_validate`: a pandas copy, int32 columns checked value by value), today's
   ``quality.validate`` on pandas, and today's default, GX's SQL path on an in-process DuckDB
   copy. The three must give the same good rows, bad rows, reasons and per-check results.
"""

from __future__ import annotations

import argparse
import os
import time
from datetime import UTC, datetime, timedelta
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl

NOW = datetime(2027, 1, 1, tzinfo=UTC)
STATES = ["COMPLETED", "FAILED", "CANCELLED", "TIMEOUT", "NODE_FAIL", "RUNNING", "PREEMPTED"]


@cache
def _baseline_batches() -> Any:
    import great_expectations as gx
    from great_expectations.data_context.types.base import ProgressBarsConfig

    context = gx.get_context(mode="ephemeral")
    context.variables.progress_bars = ProgressBarsConfig(globally=False)
    asset = context.data_sources.add_pandas(name="baseline").add_dataframe_asset(name="incoming")
    return asset.add_batch_definition_whole_dataframe("whole")


def baseline_validate(
    rows: pl.DataFrame, *, table: str, now: datetime, component_classes: list[str]
) -> Any:
    """Validate as ``pipelines.ingest.quality.validate`` did before this benchmark (baseline)."""
    import great_expectations as gx
    import great_expectations.expectations as gxe

    from pipelines.ingest import quality

    checks = quality.suite_for(table, now=now, component_classes=component_classes)
    read = {
        value
        for check in checks
        for key, value in check.kwargs.items()
        if key in ("column", "column_A", "column_B")
    }
    frame = rows.select([c for c in rows.columns if c in read]).to_pandas()
    batch = _baseline_batches().get_batch(batch_parameters={"dataframe": frame})
    suite = gx.ExpectationSuite(name=f"{table}_suite")
    for number, check in enumerate(checks):
        suite.add_expectation(getattr(gxe, check.kind)(**check.kwargs, meta={"check": number}))
    outcome = batch.validate(suite, result_format={"result_format": "COMPLETE"})
    suite_results = []
    reasons: dict[int, list[str]] = {}
    for result in outcome.results:
        check = checks[int(result.expectation_config.meta["check"])]
        failed_idx = list(result.result.get("unexpected_index_list") or [])
        for idx in failed_idx:
            reasons.setdefault(int(idx), []).append(f"{check.kind}: {check.label}")
        suite_results.append(
            {
                "table": table,
                "expectation": check.label,
                "success": bool(result.success),
                "n_unexpected": len(failed_idx),
            }
        )
    mask = pl.int_range(rows.height, eager=True).is_in(
        pl.Series(sorted(reasons), dtype=pl.Int64).implode()
    )
    bad = rows.filter(mask).with_columns(
        reason=pl.Series(["; ".join(reasons[i]) for i in sorted(reasons)], dtype=pl.String)
    )
    return quality.Validated(rows.filter(~mask), bad, suite_results)


def sacct_rows(n: int, seed: int = 0) -> pl.DataFrame:
    """``n`` sacct job rows with the parser's schema, one in 5,000 failing each kind of check."""
    from pipelines.ingest.sources import sacct

    rng = np.random.default_rng(seed)
    start = np.datetime64("2025-01-01T00:00:00", "us") + rng.integers(0, 365 * 86_400, n).astype(
        "timedelta64[s]"
    )
    wait = rng.exponential(600, n).astype("timedelta64[s]")
    run = rng.exponential(4 * 3600, n).astype("timedelta64[s]")
    i = pl.int_range(pl.len())
    frame = pl.DataFrame(
        {
            "source_file": "sacct_2025.txt",
            "line_no": np.arange(n) + 2,
            "cluster": "c1",
            "job_id": (np.arange(n) + 1000).astype(str),
            "job_name": "train",
            "partition": "gpu",
            "account": "ml",
            "user_name": "u",
            "alloc_nodes": rng.integers(1, 64, n).astype(np.int32),
            "alloc_tres": "gres/gpu=8",
            "node_list": "gpu[0001-0004]",
            "nodes": None,
            "submit_ts": pl.Series(start - wait).dt.replace_time_zone("UTC"),
            "start_ts": pl.Series(start).dt.replace_time_zone("UTC"),
            "end_ts": pl.Series(start + run).dt.replace_time_zone("UTC"),
            "state": np.array(STATES)[rng.integers(0, len(STATES), n)],
            "exit_code": rng.choice([0, 0, 0, 1, 137], n).astype(np.int32),
        }
    ).with_columns(
        job_id_raw=pl.when(i % 5000 == 5).then(None).otherwise("job_id"),
        step=pl.lit(None, pl.String),
        n_gpus=pl.col("alloc_nodes") * 8,
        elapsed_s=(pl.col("end_ts") - pl.col("start_ts")).dt.total_seconds(),
        state=pl.when(i % 5000 == 6).then(pl.lit("BOGUS")).otherwise("state"),
        state_by_uid=pl.lit(None, pl.Int64),
        exit_signal=pl.lit(0, pl.Int32),
        restarts=pl.lit(0, pl.Int32),
    )
    frame = frame.with_columns(
        end_ts=pl.when(i % 5000 == 9)
        .then(pl.col("start_ts") - pl.duration(hours=1))
        .when(i % 5000 == 10)
        .then(None)
        .otherwise("end_ts"),
        submit_ts=pl.when(i % 5000 == 7)
        .then(pl.lit(NOW + timedelta(days=30)))
        .otherwise("submit_ts"),
        exit_code=pl.when(i % 5000 == 11).then(300).otherwise("exit_code"),
    )
    return frame.cast(sacct.SCHEMA).select(list(sacct.SCHEMA))  # type: ignore[arg-type]


def parsed_sacct(folder: Path) -> pl.DataFrame:
    """Every ``*.txt`` sacct export under ``folder``, parsed and stacked."""
    from pipelines.ingest.sources import sacct

    parts = [
        sacct.parse(f.read_bytes(), source_file=str(f), now=NOW).rows
        for f in sorted(folder.glob("*.txt"))
    ]
    return pl.concat(parts, how="vertical_relaxed")


def dcgm_rows(n: int, seed: int = 0) -> pl.DataFrame:
    """``n`` DCGM samples (256 nodes x 8 GPUs, 30 s apart), one in 5,000 failing each check."""
    from pipelines.ingest.sources import dcgm

    rng = np.random.default_rng(seed)
    busy = rng.random(n) < 0.7
    k = np.arange(n)
    i = pl.int_range(pl.len())
    frame = pl.DataFrame(
        {
            "line_no": k + 1,
            "node": (k // 8) % 256 + 1,
            "ts": pl.Series(
                np.datetime64("2026-06-01T00:00:00", "us") + (k // 2048 * 30).astype("m8[s]")
            ).dt.replace_time_zone("UTC"),
            "gpu_index": (k % 8).astype(np.int32),
            "gpu_temp_c": np.round(38 + 35 * busy + rng.normal(0, 2, n)),
            "power_w": np.round(np.maximum(75 + 550 * busy + rng.normal(0, 20, n), 20), 3),
        }
    ).with_columns(
        host=pl.format("gpu{}", pl.col("node").cast(pl.String).str.zfill(4)),
        source_format=pl.lit("dmon"),
    )
    frame = frame.with_columns(
        source_file=pl.format("/landing/dcgm/{}.20260601.dmon", "host"),
        uuid=pl.format("GPU-{}-{}", "node", "gpu_index"),
        host=pl.when(i % 5000 == 5).then(None).otherwise("host"),
        ts=pl.when(i % 5000 == 6)
        .then(None)
        .when(i % 5000 == 7)
        .then(pl.lit(NOW + timedelta(days=30)))
        .otherwise("ts"),
        gpu_index=pl.when(i % 5000 == 8).then(64).otherwise("gpu_index"),
        gpu_temp_c=pl.when(i % 5000 == 9).then(999.0).otherwise("gpu_temp_c"),
        power_w=pl.when(i % 5000 == 10)
        .then(-1.0)
        .when(i % 5000 == 11)
        .then(float("nan"))
        .otherwise("power_w"),
    )
    missing = [c for c in dcgm.SCHEMA if c not in frame.columns]
    frame = frame.with_columns([pl.lit(None).alias(c) for c in missing])
    return frame.cast(dcgm.SCHEMA).select(list(dcgm.SCHEMA))  # type: ignore[arg-type]


def _timed(fn: Any) -> tuple[Any, float]:
    started = time.perf_counter()
    out = fn()
    return out, time.perf_counter() - started


def compare(name: str, rows: pl.DataFrame, table: str) -> None:
    """Time the baseline, today's pandas path and today's SQL path on ``rows``; print ratios."""
    from pipelines.ingest import quality

    base, base_s = _timed(
        lambda: baseline_validate(rows, table=table, now=NOW, component_classes=[])
    )
    pandas, pandas_s = _timed(lambda: quality.validate(rows, table=table, now=NOW, engine="pandas"))
    sql, sql_s = _timed(lambda: quality.validate(rows, table=table, now=NOW, engine="sql"))
    for label, got in (("pandas", pandas), ("sql", sql)):
        same = (
            got.results == base.results
            and got.bad.fill_nan(None).equals(base.bad.fill_nan(None))
            and got.good.fill_nan(None).equals(base.good.fill_nan(None))
        )
        if not same:
            msg = f"{name}: the {label} path differs from the baseline"
            raise SystemExit(msg)
    print(
        f"{name:<14}{rows.height:>11,}{base.bad.height:>7,}{base_s:>11.2f}{pandas_s:>10.2f}"
        f"{sql_s:>9.2f}{base_s / pandas_s:>12.2f}x{base_s / sql_s:>10.2f}x",
        flush=True,
    )


def main() -> None:
    """Build the frames, time the three validations, print the figures."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sacct-rows", type=int, default=800_000)
    parser.add_argument("--dcgm-rows", type=int, default=5_000_000)
    parser.add_argument("--slurm", type=Path, default=None, help="parse these sacct files")
    args = parser.parse_args()
    os.environ.setdefault("GX_ANALYTICS_ENABLED", "False")

    started = time.perf_counter()
    import great_expectations  # noqa: F401

    import_s = time.perf_counter() - started
    from pipelines.ingest import quality

    _, context_s = _timed(
        lambda: quality.validate(sacct_rows(1_000), table="raw_slurm_jobs", engine="pandas")
    )
    _, sql_setup_s = _timed(
        lambda: quality.validate(sacct_rows(1_000), table="raw_slurm_jobs", engine="sql")
    )
    _baseline_batches()
    print(
        f"Great Expectations import {import_s:.2f} s, context + first pandas run (1,000 rows) "
        f"{context_s:.2f} s, first SQL run "
        f"(DuckDB data source, 1,000 rows) {sql_setup_s:.2f} s: once per process"
    )
    sacct = parsed_sacct(args.slurm) if args.slurm else sacct_rows(args.sacct_rows)
    dcgm = dcgm_rows(args.dcgm_rows)
    print(
        f"{'frame':<14}{'rows':>11}{'bad':>7}{'baseline s':>11}{'pandas s':>10}{'sql s':>9}"
        f"{'vs pandas':>13}{'vs sql':>11}"
    )
    compare("sacct", sacct, "raw_slurm_jobs")
    compare("dcgm", dcgm, "raw_dcgm_samples")
    print(
        "(baseline = the validation before this change, pandas copy; pandas = quality.validate "
        "on pandas, int32 widened; sql = quality.validate on GX's SQL path over DuckDB, the "
        "default; ratios = baseline time / time; all three give the same rows and results)"
    )


if __name__ == "__main__":
    main()
