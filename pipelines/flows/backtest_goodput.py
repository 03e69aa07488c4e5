"""Flow ``backtest-goodput``: back-test the goodput projection on the fleet's own jobs.

For every finished job of at least ``min_gpus`` GPUs, the projection made from the fits as of
the job's start is compared with what happened (``pipelines.analysis.backtest``); the run is stored
in ``backtest_runs`` / ``backtest_jobs`` / ``backtest_buckets`` and read through
``rpt_projection_backtest``. Scheduled daily (``prefect.yaml``) and run by ``weekly-report``
before the report, so the report's calibration section is current.
"""

from __future__ import annotations

from pathlib import Path

from prefect import flow, get_run_logger, task

from pipelines import warehouse
from pipelines.flows.artifacts import publish_backtest
from pipelines.flows.ingest_telemetry import warehouse_busy
from pipelines.runtime.settings import Settings


@task(retries=3, retry_delay_seconds=[5, 30, 120], retry_condition_fn=warehouse_busy)
def backtest_projection(
    db_path: Path, lock_timeout_s: float, min_gpus: int, skip_missing: bool = False
) -> str | None:
    """Back-test stage: store a back-test run of the jobs of at least ``min_gpus`` GPUs.

    A warehouse without unit lives or such jobs raises
    :class:`~pipelines.runtime.errors.MissingDataError`; with ``skip_missing`` (the weekly report,
    whose section says what is missing) the stage logs it and returns None instead.
    """
    from pipelines.analysis.backtest import missing_inputs, run_backtest

    with warehouse.connect(db_path, lock_timeout_s=lock_timeout_s) as con:
        warehouse.apply_schema(con)
        warehouse.materialize(con)
        missing = missing_inputs(con, min_gpus=min_gpus) if skip_missing else None
        if missing is not None:
            get_run_logger().warning("back-test not run: %s", missing)
            return None
        run = run_backtest(con, min_gpus=min_gpus)
    publish_backtest(run.run_id, run.buckets.to_dicts(), min_gpus)
    return run.run_id


@flow(name="backtest-goodput")
def backtest_goodput(db_path: Path | None = None, min_gpus: int | None = None) -> str | None:
    """Back-test the projection on the jobs of at least ``min_gpus`` GPUs; returns the run id.

    ``min_gpus`` defaults to the setting ``RELIA_BACKTEST_MIN_GPUS``. A warehouse without unit
    lives or such jobs fails the run with one line naming what is missing; nothing is stored.
    """
    settings = Settings.from_env(db_path=db_path)
    smallest = settings.backtest_min_gpus if min_gpus is None else min_gpus
    warehouse.prepare(settings.db_path, lock_timeout_s=settings.lock_timeout_s)
    run_id = backtest_projection(settings.db_path, settings.lock_timeout_s, smallest)
    get_run_logger().info("back-test run %s (jobs of %d GPUs or more)", run_id, smallest)
    return run_id


if __name__ == "__main__":
    backtest_goodput()
