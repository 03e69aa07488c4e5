"""``relia report``: the weekly reliability report (self-contained HTML) and its headline."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Annotated

import typer

from pipelines.cli.options import (
    DbOption,
    JsonOption,
    TrackedOption,
    is_tracked,
    load_settings,
    prefect_defaults,
    require_warehouse,
)
from pipelines.cli.render import console, print_json
from pipelines.cli.root import app

__all__ = ["report"]


@app.command()
def report(
    week: Annotated[
        str | None, typer.Option(help="ISO week, e.g. 2026-W30 (default: last full week).")
    ] = None,
    reports_dir: Annotated[
        Path | None, typer.Option(help="Output folder (default: $RELIA_REPORTS or reports).")
    ] = None,
    target_gpus: Annotated[
        list[int] | None, typer.Option("--target-gpus", help="Scales for the goodput headline.")
    ] = None,
    db: DbOption = None,
    tracked: TrackedOption = False,
    as_json: JsonOption = False,
) -> None:
    """Write the weekly reliability report (self-contained HTML) and print its headline."""
    from rich.markdown import Markdown

    from pipelines.runtime.text import printable

    settings = load_settings(db_path=db, reports_dir=reports_dir)
    scales = tuple(target_gpus or (16_384, 100_000))
    require_warehouse(
        settings.db_path, "stg_observation_window", lock_timeout_s=settings.lock_timeout_s
    )
    # a week outside the window (ValueError) is one line, exit 2: see _ReliaGroup
    if is_tracked(tracked):
        prefect_defaults()
        from pipelines.flows.weekly_report import weekly_report

        started = time.perf_counter()
        # the flow returns the report's path; its headline is the run's markdown artifact
        path = weekly_report(
            week=week,
            db_path=settings.db_path,
            reports_dir=settings.reports_dir,
            target_gpus=list(scales),
        )
        seconds = time.perf_counter() - started
        artifact = "weekly-report-headline"
        if as_json:
            print_json({"path": path, "seconds": seconds, "headline": None, "artifact": artifact})
            return
        console.print(
            f"report: [bold]{path}[/bold] ({seconds:.1f} s; tracked flow run, headline "
            f"in its Prefect artifact {artifact})"
        )
        return
    from pipelines.report import build_report
    from pipelines.report.inputs import refresh_warehouse

    # the fit, project and back-test stages first: the report reads what they store
    refresh_warehouse(
        settings.db_path,
        week=week,
        target_gpus=scales,
        lock_timeout_s=settings.lock_timeout_s,
        backtest_min_gpus=settings.backtest_min_gpus,
    )
    result = build_report(
        settings.db_path,
        week=week,
        reports_dir=settings.reports_dir,
        target_gpus=scales,
        lock_timeout_s=settings.lock_timeout_s,
    )
    if as_json:
        print_json(
            {"path": str(result.path), "seconds": result.seconds, "headline": result.headline}
        )
        return
    console.print(Markdown(printable(result.markdown, lines=True)))  # telemetry in the tables
    console.print(f"report: [bold]{result.path}[/bold] ({result.seconds:.1f} s)", soft_wrap=True)
