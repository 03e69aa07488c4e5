"""``relia demo``: end to end, from a synthetic fleet to the weekly report, with timings."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Annotated

import typer

from pipelines.cli import fit_view
from pipelines.cli.options import DbOption, JsonOption, load_settings, prefect_defaults
from pipelines.cli.render import console, print_json
from pipelines.cli.root import app
from pipelines.cli.summary import print_summary

__all__ = ["demo"]


@app.command()
def demo(
    out: Annotated[Path, typer.Option(help="Landing folder for the synthetic fleet.")] = Path(
        "landing"
    ),
    nodes: Annotated[int, typer.Option(min=1)] = 256,
    gpus_per_node: Annotated[int, typer.Option(min=1, max=16)] = 8,
    days: Annotated[int, typer.Option(min=1)] = 90,
    seed: int = 0,
    db: DbOption = None,
    as_json: JsonOption = False,
) -> None:
    """Run the whole pipeline end to end on a synthetic fleet.

    End to end: synthesise a fleet, ingest it as an ``ingest-telemetry`` flow run, summarise,
    fit MTBF per class and write the weekly report.
    """
    from synth import SynthConfig, synthesize

    settings = load_settings(db_path=db, landing_dir=out)
    timings: dict[str, float] = {}
    started = time.perf_counter()
    synthesize(
        settings.landing_dir,
        SynthConfig(
            nodes=nodes, gpus_per_node=gpus_per_node, days=days, seed=seed, training_logs=True
        ),
    )
    timings["synth_s"] = time.perf_counter() - started
    prefect_defaults()
    from pipelines.flows.ingest_telemetry import ingest_telemetry

    started = time.perf_counter()
    ingest_telemetry(landing_dir=settings.landing_dir, db_path=settings.db_path)
    timings["ingest_flow_s"] = time.perf_counter() - started
    import warnings

    from pipelines import warehouse
    from pipelines.analysis import fit as fit_mod
    from pipelines.analysis.summary import fleet_summary
    from pipelines.report import build_report
    from pipelines.report.inputs import refresh_warehouse

    started = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # zero-failure classes: reported as bounds in the table
        fitted = fit_mod.run_fit(settings.db_path)
    timings["fit_s"] = time.perf_counter() - started
    started = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        # the report's fit, project and back-test stages: what it reads, stored
        refresh_warehouse(
            settings.db_path,
            lock_timeout_s=settings.lock_timeout_s,
            backtest_min_gpus=settings.backtest_min_gpus,
        )
    timings["project_s"] = time.perf_counter() - started
    report_result = build_report(settings.db_path, week=None, reports_dir=settings.reports_dir)
    timings["report_s"] = report_result.seconds
    with warehouse.connect(
        settings.db_path, read_only=True, lock_timeout_s=settings.read_lock_timeout_s
    ) as con:
        result = fleet_summary(con)
    if as_json:
        print_json(
            {
                "timings": timings,
                "fit_run_id": fitted["run_id"],
                "report": str(report_result.path),
                **result,
            }
        )
        return
    print_summary(settings.db_path, result)
    # the fit in ``relia fit``'s default view: one line per class, then its short notes
    rates = fitted.get("rates")
    console.print(
        f"fit run {fitted['run_id']}: interruption rates (every job-stopping failure) "
        "from fct_component_lives, exact 95 % intervals",
        highlight=False,
        markup=False,
    )
    lines = fit_view.rate_lines(rates, replacement=False) if rates is not None else []
    console.print(fit_view.table(lines))
    for note in fit_view.short_notes(
        fitted["results"], rates, quantity=fit_mod.quantity_of("fct_component_lives")
    ):
        fit_view.print_note(note)
    console.print(f"weekly report: [bold]{report_result.path.resolve()}[/bold]", soft_wrap=True)
    console.print(
        "timings: " + ", ".join(f"{k} {v:.1f}" for k, v in timings.items()), highlight=False
    )
