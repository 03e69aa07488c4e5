"""Flow ``weekly-report``: snapshot the views, fit, project, back-test, write the report."""

from __future__ import annotations

from pathlib import Path

from prefect import flow, get_run_logger, task

from pipelines import warehouse
from pipelines.flows.artifacts import publish_report
from pipelines.flows.backtest_goodput import backtest_projection
from pipelines.flows.ingest_telemetry import warehouse_busy
from pipelines.report import DEFAULT_TARGET_GPUS, build_report
from pipelines.runtime.settings import Settings


@task(retries=3, retry_delay_seconds=[5, 30, 120], retry_condition_fn=warehouse_busy)
def score_fleet(db_path: Path, lock_timeout_s: float) -> int | None:
    """Score every GPU with the latest failure predictor, if one was trained; GPUs at risk.

    Returns None (and scores nothing) when no model exists or there is no GPU telemetry.
    """
    from pipelines.analysis import predict

    with warehouse.connect(db_path, lock_timeout_s=lock_timeout_s) as con:
        warehouse.apply_schema(con)
        con.complete()
        if not con.execute("select count(*) from predict_models").fetchone()[0]:  # type: ignore[index]
            return None
        try:
            scores = predict.score(con)
        except ValueError as error:  # no DCGM telemetry in the window
            get_run_logger().warning("not scoring GPUs: %s", error)
            return None
    return int(scores.get_column("at_risk").sum())


@task(retries=3, retry_delay_seconds=[5, 30, 120], retry_condition_fn=warehouse_busy)
def materialize_views(db_path: Path, lock_timeout_s: float) -> dict[str, float]:
    """Snapshot the expensive views as tables (once per data change); seconds per view."""
    with warehouse.connect(db_path, lock_timeout_s=lock_timeout_s) as con:
        warehouse.apply_schema(con)
        return warehouse.materialize(con)


@task(retries=3, retry_delay_seconds=[5, 30, 120], retry_condition_fn=warehouse_busy)
def fit_lives(db_path: Path, lock_timeout_s: float) -> str | None:
    """Fit stage: the lifetime fit run the report reads (stored when none matches the lives).

    None, storing nothing, when the warehouse has no unit lives (the report says so).
    """
    from pipelines.report.inputs import fit_for_report

    with warehouse.connect(db_path, lock_timeout_s=lock_timeout_s) as con:
        warehouse.apply_schema(con)
        return fit_for_report(con)


@task(retries=3, retry_delay_seconds=[5, 30, 120], retry_condition_fn=warehouse_busy)
def project_goodput(
    db_path: Path, lock_timeout_s: float, week: str | None, target_gpus: tuple[int, ...]
) -> str | None:
    """Project stage: the report's goodput projection and knob ranking, stored."""
    from pipelines.report.inputs import project_for_report

    with warehouse.connect(db_path, lock_timeout_s=lock_timeout_s) as con:
        warehouse.apply_schema(con)
        return project_for_report(con, week=week, target_gpus=target_gpus)


@flow(name="weekly-report")
def weekly_report(
    week: str | None = None,
    db_path: Path | None = None,
    reports_dir: Path | None = None,
    target_gpus: list[int] | None = None,
) -> str:
    """Fit, project, back-test and build the report for ``week`` (default: the last full week).

    Returns the report's path.

    When a failure predictor was trained (``relia predict train``), the fleet is scored first so
    the report's "GPUs at risk" section is current. No warehouse file is one line naming what to
    run first; a file without views gets them; a stage with nothing to work on (no unit lives,
    no failures, no jobs) stores nothing and its report section says what is missing.
    """
    settings = Settings.from_env(db_path=db_path, reports_dir=reports_dir)
    targets = tuple(target_gpus or DEFAULT_TARGET_GPUS)
    warehouse.prepare(settings.db_path, lock_timeout_s=settings.lock_timeout_s)
    snapshots = materialize_views(settings.db_path, settings.lock_timeout_s)
    if snapshots:
        get_run_logger().info(
            "%d views snapshotted in %.1f s", len(snapshots), sum(snapshots.values())
        )
    at_risk = score_fleet(settings.db_path, settings.lock_timeout_s)
    if at_risk is not None:
        get_run_logger().info("%d GPUs at risk by the latest failure predictor", at_risk)
    fit_run_id = fit_lives(settings.db_path, settings.lock_timeout_s)
    projection = project_goodput(settings.db_path, settings.lock_timeout_s, week, targets)
    backtest = backtest_projection(
        settings.db_path, settings.lock_timeout_s, settings.backtest_min_gpus, skip_missing=True
    )
    get_run_logger().info(
        "fit run %s, projection %s, back-test %s", fit_run_id, projection, backtest
    )
    result = build_report(
        settings.db_path,
        week=week,
        reports_dir=settings.reports_dir,
        target_gpus=targets,
        lock_timeout_s=settings.lock_timeout_s,
    )
    publish_report(result.path, result.markdown, str(result.headline["week"]))
    get_run_logger().info("report %s written in %.1f s", result.path, result.seconds)
    return str(result.path)


if __name__ == "__main__":
    weekly_report()
