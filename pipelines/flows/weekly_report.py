"""Flow ``weekly-report``: write ``reports/<ISO week>.html`` and publish its headline."""

from __future__ import annotations

from pathlib import Path

from prefect import flow, get_run_logger
from prefect.artifacts import create_markdown_artifact

from pipelines.report import build_report
from pipelines.report_data import DEFAULT_TARGET_GPUS
from pipelines.settings import Settings


@flow(name="weekly-report")
def weekly_report(
    week: str | None = None,
    db_path: Path | None = None,
    reports_dir: Path | None = None,
    target_gpus: list[int] | None = None,
) -> str:
    """Build the reliability report for ``week`` (default: the last full week); returns its path."""
    settings = Settings.from_env(db_path=db_path, reports_dir=reports_dir)
    result = build_report(
        settings.db_path,
        week=week,
        reports_dir=settings.reports_dir,
        target_gpus=tuple(target_gpus or DEFAULT_TARGET_GPUS),
        lock_timeout_s=settings.lock_timeout_s,
    )
    create_markdown_artifact(
        key="weekly-reliability-report",
        markdown=result.markdown,
        description=f"Weekly reliability report {result.headline['week']}: {result.path}",
    )
    get_run_logger().info("report %s written in %.1f s", result.path, result.seconds)
    return str(result.path)


if __name__ == "__main__":
    weekly_report()
