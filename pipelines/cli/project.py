"""``relia project`` and ``relia whatif``: goodput at a scale, and a grid of what-if knobs."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from pipelines.cli.options import (
    DbOption,
    FormatOption,
    JsonOption,
    TrackedOption,
    exit_usage,
    is_tracked,
    load_settings,
    prefect_defaults,
    require_warehouse,
)
from pipelines.cli.render import (
    OutputFormat,
    console,
    err,
    error_text,
    output_format,
    print_csv,
    print_json,
    rows_table,
)
from pipelines.cli.root import app

if TYPE_CHECKING:
    from collections.abc import Mapping

    from models import KnobGain
    from pipelines.analysis.project import SweepResult
    from pipelines.runtime.settings import Settings

__all__ = ["project", "whatif"]

DefaultRatesOption = Annotated[
    bool,
    typer.Option(
        "--default-rates-if-none",
        help="When the fit run has no failure in any class, project from the default rates "
        "(Meta RSC-1) with a warning instead of stopping.",
    ),
]

_PROJECTION_KEYS = (
    "mtti_h",
    "mtti_h_lo",
    "mtti_h_hi",
    "expected_interruptions",
    "expected_interruptions_lo",
    "expected_interruptions_hi",
    "young_interval_min",
    "daly_interval_min",
    "checkpoint_interval_min",
    "ettr",
    "ettr_lo",
    "ettr_hi",
    "goodput",
    "goodput_lo",
    "goodput_hi",
    "daly_wall_time_h",
    "lost_gpu_h_checkpoint",
    "lost_gpu_h_rework",
    "lost_gpu_h_restart",
    "lost_gpu_h_spares_wait",
    "lost_gpu_h_drain",
    "expected_drains",
    "expected_false_alarms",
    "mtti_unpredicted_h",
    "energy_lost_mwh",
    "goodput_error_bound",
)
#: Fail-slow figures, in the projection only when slow laws are set (models.goodput_slow).
_SLOW_KEYS = (
    "goodput_fail_stop",
    "slow_share",
    "slowdown",
    "expected_evictions",
    "lost_gpu_h_fail_stop",
    "lost_gpu_h_fail_slow",
    "lost_gpu_h_slow",
    "lost_gpu_h_eviction",
)


# the knob options of `relia project`, in the order --help lists them; their help states the
# Scenario defaults (tests/pipelines/test_cli_knobs.py keeps them and models.KNOBS in step)
GpusOption = Annotated[int, typer.Option(min=1, help="GPUs in the job.")]
GpusPerNodeOption = Annotated[int, typer.Option(min=1)]
FailureDomainOption = Annotated[
    int | None, typer.Option(help="GPUs one fault takes out (default: a node).")
]
NodeFailureRateOption = Annotated[
    float | None, typer.Option(help="Hand-given node failure rate (instead of fits).")
]
CheckpointOption = Annotated[float, typer.Option(help="Blocking checkpoint write, s.")]
CheckpointIntervalOption = Annotated[
    float | None, typer.Option(help="Compute between checkpoints, s (default: Daly optimum).")
]
RestartOption = Annotated[
    float | None,
    typer.Option(
        help="Whole restart time, s: a shorthand that sets --reschedule-s to this minus "
        "detection, reload and warm-up (each at its value), and says so.",
    ),
]
DetectOption = Annotated[
    float | None, typer.Option(help="Time to detect a crash, s (default 120).")
]
DetectHangOption = Annotated[
    float | None,
    typer.Option(help="Time for the watchdog to declare a hang, s (default 600)."),
]
HangShareOption = Annotated[
    float | None,
    typer.Option(help="Share of interruptions that hang instead of crashing, 0-1 (default 0)."),
]
RescheduleOption = Annotated[
    float | None,
    typer.Option(
        help="Wait for replacement hardware from the scheduler, s (default 300; with "
        "--from-fits: the measured requeue gap less detection).",
    ),
]
ReloadOption = Annotated[
    float | None, typer.Option(help="Checkpoint reload time, s (default 180).")
]
WarmupOption = Annotated[
    float | None, typer.Option(help="Warm-up to full speed after a restart, s (default 120).")
]
StrategyOption = Annotated[str, typer.Option(help="restart, hot_spare or elastic.")]
HotSparesOption = Annotated[int, typer.Option(min=0)]
RepairOption = Annotated[
    float, typer.Option(min=0.001, help="Repair time of a failed domain, h (the median).")
]
RepairSigmaOption = Annotated[
    float | None,
    typer.Option(
        help="Log-normal sigma of repair times around the --repair-h median (default 0: "
        "every repair takes --repair-h).",
    ),
]
RepairFromWarehouseOption = Annotated[
    bool,
    typer.Option(
        help="Set --repair-h and --repair-sigma to the median and log-normal sigma of the "
        "measured repair times (closed replacement tickets in --db).",
    ),
]
RepairFromFitsOption = Annotated[
    str | None,
    typer.Option(
        metavar="latest|RUN_ID",
        help="Set --repair-h and --repair-sigma to the median exp(mu) and sigma of the "
        "pooled log-normal of a stored repair-time fit run (relia fit --lives stg_repairs, "
        "int_fault_repairs or int_node_unavailability), or of the latest one.",
    ),
]
ReplicaOption = Annotated[
    int | None,
    typer.Option(
        help="GPUs a failure removes under elastic: a model-parallel group, TP x PP GPUs "
        "(default 512).",
    ),
]
JobInterruptionsOption = Annotated[
    float | None,
    typer.Option(
        help="Job-level interruptions per hour that do not grow with GPU count (software "
        "crashes, storage stalls; default 0).",
    ),
]
NodeGroupOption = Annotated[
    list[str] | None,
    typer.Option(
        metavar="SHARE:MULTIPLIER",
        help="A group of nodes with its own failure rate, share:rate_multiplier (0.1:3 = a "
        "tenth of the nodes failing 3x as often); repeatable.",
    ),
]
WeibullShapeOption = Annotated[
    list[str] | None,
    typer.Option(
        metavar="SHAPE|CLASS=SHAPE",
        help="Lifetime Weibull shape, fleet-wide (0.7) or per class (gpu=0.7, repeatable); "
        "1 is exponential, below 1 infant mortality. Default: each class's fitted shape.",
    ),
]
JobDaysOption = Annotated[float, typer.Option(min=0.001)]
FleetAgeOption = Annotated[
    str,
    typer.Option(
        help="Unit ages at job start: steady_state, new, an age in hours, an age mix "
        "(age_h:share pairs, 0:0.5,8760:0.5), or inventory (the ages of the units in "
        "service at the end of the warehouse's data, in up to 10 bins; needs --db).",
    ),
]
FromFitsOption = Annotated[
    str | None,
    typer.Option(
        help="Fit run id for the rates, or 'latest': the newest fit of the failure process "
        "(every job-stopping failure, fct_component_lives).",
    ),
]
ProcessOption = Annotated[
    str | None,
    typer.Option(
        "--process",
        metavar="failure|replacement",
        help="What --from-fits latest projects: failure (default: the interruption rates "
        "of every job-stopping failure) or replacement (the replacement lifetimes of "
        "`relia fit --lives fct_replacement_lives`: replace tickets only).",
    ),
]
DrainRecallOption = Annotated[
    float,
    typer.Option(
        min=0.0,
        max=1.0,
        help="Share of failures a predictor warns of in time; each becomes a planned drain "
        "(a checkpoint + a migration) instead of lost work. See `relia predict train`.",
    ),
]
DrainPrecisionOption = Annotated[
    float,
    typer.Option(
        min=0.0,
        max=1.0,
        help="Share of the predictor's alarms that are real; the rest drain healthy nodes.",
    ),
]
DrainMigrationOption = Annotated[
    float, typer.Option(min=0.0, help="Moving the job off a drained node, s.")
]
StragglerDetectOption = Annotated[
    float | None,
    typer.Option(
        min=0.0,
        help="Fail-slow: time to detect a slow GPU or node and evict it, s (default: never evict).",
    ),
]
StragglerToleranceOption = Annotated[
    float | None,
    typer.Option(
        min=0.0, help="Fail-slow: slowdown tolerated, never evicted: 1 + this (default 0.05)."
    ),
]
StragglerEvictOption = Annotated[
    str | None,
    typer.Option(
        metavar="restart|hot_spare|planned",
        help="Fail-slow: how a slow unit is evicted: a restart without it, a hot-spare swap, "
        "or a planned move after a checkpoint (default restart).",
    ),
]
StragglerEvictSOption = Annotated[
    float | None,
    typer.Option(min=0.0, help="Fail-slow: detection to eviction, s; the job runs slow meanwhile."),
]
SlowRateOption = Annotated[
    float | None,
    typer.Option(
        min=0.0,
        help="Fail-slow: slow episodes per GPU-hour (one log-normal GPU law; several laws or "
        "node ones: slow_laws in a sweep YAML). Default: no fail-slow.",
    ),
]
SlowDurationOption = Annotated[
    float | None, typer.Option(min=0.0, help="Fail-slow: median episode duration, s.")
]
SlowDurationSigmaOption = Annotated[
    float | None,
    typer.Option(min=0.0, help="Fail-slow: log-normal sigma of durations (0: fixed)."),
]
SlowExcessOption = Annotated[
    float | None,
    typer.Option(min=0.0, help="Fail-slow: median slowdown less 1 (0.3: 1.3x step time)."),
]
SlowExcessSigmaOption = Annotated[
    float | None,
    typer.Option(min=0.0, help="Fail-slow: log-normal sigma of slowdown less 1 (0: fixed)."),
]
TrialsOption = Annotated[int, typer.Option(min=0, help="Monte Carlo trials to run as well.")]
SamplesOption = Annotated[int, typer.Option(min=0, help="Parameter samples for intervals.")]


@app.command()
def project(
    ctx: typer.Context,
    gpus: GpusOption = 16_384,
    gpus_per_node: GpusPerNodeOption = 8,
    failure_domain_gpus: FailureDomainOption = None,
    node_failures_per_1000_node_days: NodeFailureRateOption = None,
    checkpoint_s: CheckpointOption = 60.0,
    checkpoint_interval_s: CheckpointIntervalOption = None,
    restart_s: RestartOption = None,
    detect_s: DetectOption = None,
    detect_hang_s: DetectHangOption = None,
    hang_share: HangShareOption = None,
    reschedule_s: RescheduleOption = None,
    reload_s: ReloadOption = None,
    warmup_s: WarmupOption = None,
    strategy: StrategyOption = "restart",
    hot_spares: HotSparesOption = 0,
    repair_h: RepairOption = 24.0,
    repair_sigma: RepairSigmaOption = None,
    repair_from_warehouse: RepairFromWarehouseOption = False,
    repair_from_fits: RepairFromFitsOption = None,
    replica_gpus: ReplicaOption = None,
    job_interruptions_per_h: JobInterruptionsOption = None,
    node_group: NodeGroupOption = None,
    weibull_shape: WeibullShapeOption = None,
    job_days: JobDaysOption = 30.0,
    fleet_age: FleetAgeOption = "steady_state",
    from_fits: FromFitsOption = None,
    process: ProcessOption = None,
    default_rates_if_none: DefaultRatesOption = False,
    drain_recall: DrainRecallOption = 0.0,
    drain_precision: DrainPrecisionOption = 1.0,
    drain_migration_s: DrainMigrationOption = 300.0,
    straggler_detect_s: StragglerDetectOption = None,
    straggler_tolerance: StragglerToleranceOption = None,
    straggler_evict: StragglerEvictOption = None,
    straggler_evict_s: StragglerEvictSOption = None,
    slow_rate_per_gpu_h: SlowRateOption = None,
    slow_duration_median_s: SlowDurationOption = None,
    slow_duration_sigma: SlowDurationSigmaOption = None,
    slow_excess_median: SlowExcessOption = None,
    slow_excess_sigma: SlowExcessSigmaOption = None,
    simulate: TrialsOption = 0,
    samples: SamplesOption = 2000,
    seed: int = 0,
    db: DbOption = None,
    as_json: JsonOption = False,
    fmt: FormatOption = OutputFormat.table,
) -> None:
    """Project MTTI, checkpoint intervals, ETTR and goodput for a job at a given scale."""
    from pipelines.analysis import knobs as knob_text
    from pipelines.analysis import project as project_mod

    shown = output_format(fmt, as_json)

    # the knob options by the knob table (models.KNOBS); tests/pipelines/test_cli_knobs.py
    # keeps the options above and the table in step
    knobs = knob_text.cli_knobs(ctx.params)
    _check_rate_options(weibull_shape, from_fits=from_fits, process=process)
    settings = load_settings(db_path=db)
    if from_fits is not None or repair_from_fits is not None:
        require_warehouse(
            settings.db_path,
            "fit_runs",
            lock_timeout_s=settings.lock_timeout_s,
            absent="no fit run in the warehouse; run `relia fit` first or give rates by hand",
        )
    # a ValueError (a knob value) is one line, exit 2: see _ReliaGroup
    result = project_mod.run_projection(
        settings.db_path
        if from_fits
        or repair_from_warehouse
        or repair_from_fits
        or fleet_age.strip() == "inventory"
        else None,
        knobs,
        fit_run=from_fits,
        n_samples=samples,
        simulate_trials=simulate,
        seed=seed,
        repair_from_warehouse=repair_from_warehouse,
        repair_from_fits=repair_from_fits,
        default_rates_if_none=default_rates_if_none,
        rate_process=process,
    ).to_json_dict()
    _warn_rates(result)
    if shown is OutputFormat.json:
        print_json(result)
        return
    rows = _figure_rows(result)
    if shown is OutputFormat.csv:
        print_csv(rows + _figure_rows(result, _SLOW_KEYS))
        return
    _print_projection(
        result, rows, gpus=gpus, strategy=strategy, job_days=job_days, simulate=simulate
    )


def _print_projection(
    result: dict[str, Any],
    rows: list[dict[str, Any]],
    *,
    gpus: int,
    strategy: str,
    job_days: float,
    simulate: int,
) -> None:
    """Print a projection's tables (figures, interruptions by class) and the lines under them."""
    console.print(rows_table(f"projection: {gpus:,} GPUs, {strategy}", rows))
    console.print(
        rows_table(
            f"expected interruptions by class over {job_days:g} days (each class's 95 % interval)",
            _class_rows(result["expected_interruptions_by_class"]),
        )
    )
    if "slow_share" in result:
        console.print(
            rows_table(
                "fail-slow (the job at its slowest unit's pace; goodput above counts both)",
                _figure_rows(result, _SLOW_KEYS),
            )
        )
    _print_assumptions(result)
    _print_inputs(result)
    if "simulation" in result:
        sim = result["simulation"]
        console.print(
            f"Monte Carlo ({simulate} trials): goodput {sim['goodput']:.4f} "
            f"± {sim['goodput_se']:.4f} (s.e.)",
            highlight=False,
        )


def _check_rate_options(
    weibull_shape: list[str] | None, *, from_fits: str | None, process: str | None
) -> None:
    """Exit 2 with one line for options that contradict each other (shapes, --process)."""
    if weibull_shape and len(weibull_shape) > 1 and any("=" not in w for w in weibull_shape):
        exit_usage(
            "give one fleet-wide --weibull-shape (0.7) or per-class ones (gpu=0.7), not both"
        )
    if process is not None and from_fits is None:
        exit_usage("--process chooses the rates of --from-fits: give both")


def _figure_rows(
    result: dict[str, Any], keys: tuple[str, ...] = _PROJECTION_KEYS
) -> list[dict[str, Any]]:
    """Return the projection's figures as table rows, ``n/a`` where ETTR has no value."""
    return [
        {"figure": k, "value": "n/a (see ettr_note)" if result[k] is None else result[k]}
        for k in keys
        if k in result
    ]


def _print_assumptions(result: dict[str, Any]) -> None:
    """Print where the rates came from, the assumptions, and how exact the analytical model is."""
    keys = (
        "rate_source",
        "rate_process",
        "fleet_age_assumption",
        "uncertainty",
        "ettr_note",
        "fit_run_id",
    )
    for key in keys:
        console.print(f"{key}: {result.get(key)}", highlight=False, markup=False)
    if result.get("classes_without_failures"):
        console.print(
            "left out (no failure in the fit run, rate 0): "
            + ", ".join(result["classes_without_failures"]),
            highlight=False,
            markup=False,
        )
    if result.get("extrapolation_note"):
        err.print(error_text("note", "yellow", f"extrapolated: {result['extrapolation_note']}"))
    bound = result["goodput_error_bound"]
    console.print(
        f"analytical goodput within ±{bound:.2g} of the event-level model"
        + (
            ""
            if result["analytical_exact"]
            else " (more than 1 % of goodput: check it with --simulate TRIALS)"
        ),
        highlight=False,
    )


def _print_inputs(result: dict[str, Any]) -> None:
    """Print the inputs the projection measured or derived: repairs, fleet ages, restart time."""
    if "measured_repair" in result:
        repair = result["measured_repair"]
        console.print(
            f"repairs from the warehouse ({repair['n']} tickets): median "
            f"{repair['median_h']:.3g} h, log-normal sigma {repair['sigma']:.3g}",
            highlight=False,
            markup=False,
        )
    if "fitted_repair" in result:
        fitted = result["fitted_repair"]
        console.print(
            f"repairs from fit run {fitted['run_id']} ({fitted['lives']}, pooled log-normal of "
            f"{fitted['n_repairs']:,} repairs, {fitted['n_repaired']:,} closed): median "
            f"{fitted['median_h']:.3g} h, sigma {fitted['sigma']:.3g}; MTTR "
            f"{fitted['mttr_h']:.3g} h ({fitted['mttr_lo_h']:.3g}-{fitted['mttr_hi_h']:.3g})",
            highlight=False,
            markup=False,
        )
    if "inventory_ages" in result:
        inv = result["inventory_ages"]
        bins = ", ".join(f"{b['share']:.3g} at {b['age_h']:.0f} h" for b in inv["bins"])
        console.print(
            f"fleet age from the inventory: {inv['n_units']:,} units in service on "
            f"{inv['as_of']:%Y-%m-%d %H:%M} UTC, {len(inv['bins'])} age bins ({bins})",
            highlight=False,
            markup=False,
        )
    if "restart_shorthand" in result:
        set_ = result["restart_shorthand"]
        console.print(
            f"--restart-s {set_['restart_s']:g} s set reschedule_s = {set_['reschedule_s']:g} s "
            f"(detect_s {set_['detect_s']:g} + reload_s {set_['reload_s']:g} + warmup_s "
            f"{set_['warmup_s']:g} held at their values)",
            highlight=False,
            markup=False,
        )


def _class_rows(by_class: dict[str, dict[str, Any]]) -> list[dict[str, Any]]:
    """Return the per-class table of a projection: level, units, MTBF, expected and interval."""
    return [
        {
            "class": name,
            "level": row["level"],
            "units": row["units"],
            "mtbf_h": row["mtbf_h"],
            "expected": row["expected"],
            "95 %": "-"
            if row["expected_lo"] is None
            else f"{row['expected_lo']:.3g} to {row['expected_hi']:.3g}",
        }
        for name, row in by_class.items()
    ]


def _warn_rates(result: Mapping[str, Any]) -> None:
    """Say on stderr which rates a projection used when its fit run had no failure."""
    if result.get("rates_warning"):
        err.print(error_text("warning", "yellow", result["rates_warning"]))


def _share(x: float | None) -> str:
    return "n/a" if x is None else f"{x:.2f}"


# a row of the terminal's table (and --format csv): a dict is the edge
def _gain_row(gain: KnobGain) -> dict[str, Any]:
    """Return a gains row for the terminal: the change, the goodputs, the gain and its interval."""
    within = gain["within_uncertainty"]
    return {
        "knob": gain["knob"],
        "baseline": gain["baseline_value"],
        "best": gain["best_value"],
        "goodput_baseline": gain["goodput_baseline"],
        "goodput_best": gain["goodput_best"],
        "gain": gain["gain"],
        "gain 95 %": "-"
        if gain["gain_lo"] is None
        else f"{gain['gain_lo']:.4f} to {gain['gain_hi']:.4f}",
        "within_uncertainty": "-" if within is None else ("yes" if within else "no"),
        "useful GPU-h gained": gain["gain_useful_gpu_h"],
    }


@app.command()
def whatif(
    sweep_file: Annotated[Path, typer.Argument(help="Sweep YAML: base, grid, target_gpus.")],
    out: Annotated[Path, typer.Option(help="Folder for the table and plots.")] = Path("whatif"),
    drain_model: Annotated[
        str | None,
        typer.Option(
            help="Also sweep the alarm threshold of this stored failure predictor ('latest' or a "
            "model id from `relia predict train`): goodput with proactive drains at each one."
        ),
    ] = None,
    simulate: Annotated[
        int | None,
        typer.Option(
            "--simulate",
            metavar="TRIALS",
            min=1,
            help="Evaluate every grid point by Monte Carlo with TRIALS trials (standard error in "
            "goodput_se; default: the file's simulate:, else analytical, with Monte Carlo only "
            "where the analytical error bound exceeds 1 % of goodput).",
        ),
    ] = None,
    default_rates_if_none: DefaultRatesOption = False,
    db: DbOption = None,
    tracked: TrackedOption = False,
    as_json: JsonOption = False,
    fmt: FormatOption = OutputFormat.table,
) -> None:
    """Run a what-if grid; write Parquet/CSV and plots; name the knob that buys most goodput.

    ``--format csv`` writes the table of knobs ranked by goodput gain.
    """
    shown = output_format(fmt, as_json)
    settings = load_settings(db_path=db)
    if not sweep_file.is_file():  # before Prefect's import, and a tracked run that would fail
        raise FileNotFoundError(2, "no such file", str(sweep_file))
    prefect_defaults()
    # a bad sweep file (ValueError) is one line, exit 2: see _ReliaGroup
    result = _run_sweep(
        sweep_file,
        out=out,
        settings=settings,
        tracked=is_tracked(tracked),
        drain_model=drain_model,
        simulate=simulate,
        default_rates_if_none=default_rates_if_none,
    )
    _warn_rates(result)
    if shown is OutputFormat.json:
        print_json(result)
        return
    gains = [_gain_row(g) for g in result["gains"]]
    if shown is OutputFormat.csv:
        print_csv(gains)
        return
    _print_gains(result, gains)
    _print_scenarios(result)
    _print_best(result)


def _run_sweep(
    sweep_file: Path,
    *,
    out: Path,
    settings: Settings,
    tracked: bool,
    drain_model: str | None,
    simulate: int | None,
    default_rates_if_none: bool,
) -> SweepResult:
    """Run the what-if grid and return its result.

    As the what-if flow when tracked (or its function when a Dask address is set), else the
    pipeline function the flow runs, without importing Prefect.
    """
    if tracked or settings.dask_address:
        from pipelines.flows.what_if import what_if

        # the what-if flow: as a tracked run, or its function without orchestration (which
        # checks the Dask address it would fan out to)
        run = what_if if tracked else what_if.fn
        return run(
            sweep_file=sweep_file,
            out_dir=out,
            db_path=settings.db_path,
            drain_model=drain_model,
            simulate=simulate,
            default_rates_if_none=default_rates_if_none,
        )
    from pipelines.analysis import project as project_mod

    # what the flow's function runs untracked, without importing Prefect
    return project_mod.run_sweep_file(
        sweep_file,
        out_dir=out,
        db_path=settings.db_path,
        drain_model=drain_model,
        simulate=simulate,
        default_rates_if_none=default_rates_if_none,
    )


def _print_gains(result: SweepResult, gains: list[dict[str, Any]]) -> None:
    """Print the baseline, the knobs ranked by goodput gain, and the extrapolated classes."""
    held = ", ".join(f"{k}={v}" for k, v in result["baseline_values"].items())
    console.print(
        f"baseline at {result['target_gpus']:,} GPUs (held for every other knob): {held}",
        highlight=False,
        markup=False,
        soft_wrap=True,  # the knob=value list on one line whatever the terminal's width
    )
    console.print(
        rows_table(
            f"knobs ranked by goodput gain over the baseline at {result['target_gpus']:,} GPUs",
            gains,
        )
    )
    console.print(f"gain uncertainty: {result['gain_uncertainty']}", highlight=False, markup=False)
    if result.get("extrapolated_classes"):
        err.print(
            error_text(
                "note",
                "yellow",
                "extrapolated: most of the fitted mean life of "
                + ", ".join(result["extrapolated_classes"])
                + " lies beyond the oldest age observed (relia fit shows the restricted mean)",
            )
        )


def _print_scenarios(result: SweepResult) -> None:
    """Print how many scenarios ran, where their table and plots are, which were simulated."""
    console.print(f"{result['n_points']} scenarios; table {result['table']}; plots:")
    for plot in result["plots"]:
        console.print(f"  {plot}", highlight=False)
    if result.get("n_monte_carlo"):
        how = (
            f"{result['simulate_trials']} trials each, as asked"
            if result["simulate_trials"]
            else "on their own: the analytical error bound exceeds 1 % of goodput there"
        )
        console.print(
            f"{result['n_monte_carlo']} of the scenarios by Monte Carlo ({how}; standard error in "
            "goodput_se)",
            highlight=False,
            markup=False,
        )
    if result.get("n_not_simulated"):
        console.print(
            f"{result['n_not_simulated']} more scenarios have an analytical error bound above 1 % "
            "of goodput but were left analytical (method column says so): run with --simulate "
            "TRIALS to simulate every point",
            highlight=False,
            markup=False,
        )


def _print_best(result: SweepResult) -> None:
    """Print the knob with the largest gain, the pair's interaction, the best drain threshold."""
    best = result["best_knob"]
    if best:
        caveat = " (within the projection's uncertainty)" if best["within_uncertainty"] else ""
        console.print(
            f"largest gain: {best['knob']} = {best['best_value']} (+{best['gain']:.4f} goodput "
            f"vs {best['baseline_value']} at the baseline){caveat}",
            highlight=False,
            markup=False,
        )
    else:
        console.print("no knob improves on the baseline at this scale", highlight=False)
    pair = result["interaction"]
    if pair:
        console.print(
            f"both {pair['knobs'][0]} = {pair['values'][0]} and {pair['knobs'][1]} = "
            f"{pair['values'][1]}: {pair['gain_both']:+.4f} goodput; interaction "
            f"{pair['interaction']:+.4f} (both changed - baseline - the two gains)",
            highlight=False,
            markup=False,
        )
    if "drain" in result:
        drain = result["drain"]["best"]
        console.print(
            f"proactive drains ({result['drain']['n_thresholds']} thresholds of model "
            f"{result['drain']['model_id']}, table {result['drain']['table']}): best threshold "
            f"{drain['threshold']:.3g} (precision {_share(drain['precision'])}, recall "
            f"{_share(drain['recall'])}) gives goodput {drain['goodput']:.4f} vs "
            f"{drain['goodput_no_drain']:.4f} without drains at {result['target_gpus']:,} GPUs",
            highlight=False,
            markup=False,
        )
