"""``relia``: the command line. Commands call the same pipeline functions as the flows.

Heavy imports (GX, lifelines, Prefect) happen inside the command that needs them, so
``relia --help`` is instant. Commands run directly, without Prefect's ephemeral-server start,
unless ``--tracked`` is given or ``PREFECT_API_URL`` points at a server; then they run as tracked
flow runs.
"""

from __future__ import annotations

import json
import os
import sys
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.console import Console, Group
from rich.measure import Measurement
from rich.table import Table
from rich.text import Text
from typer.core import TyperGroup

from pipelines.errors import ReliaError
from pipelines.jsonsafe import json_ready as _strict_json  # the name tests/ use

if TYPE_CHECKING:
    import click

    from pipelines.settings import Settings

console = Console()
err = Console(stderr=True, soft_wrap=True)


def _expected_exit_code(error: BaseException) -> int | None:
    """The exit code of an expected failure (one line, no traceback), or None for a bug.

    Our own :class:`~pipelines.errors.ReliaError` (missing, empty or busy warehouse) carries its
    code; a ``ValueError`` from validating what the user gave (an option value, a sweep file) and
    a file that is not valid YAML exit 2, like a usage error; an input file that does not exist
    exits 1.
    """
    if isinstance(error, ReliaError):
        return error.exit_code
    yaml = sys.modules.get("yaml")
    if isinstance(error, ValueError) or (yaml is not None and isinstance(error, yaml.YAMLError)):
        return 2
    if isinstance(error, FileNotFoundError):
        return 1
    return None


def _expected_message(error: BaseException) -> str:
    missing = error if isinstance(error, FileNotFoundError) else None
    if missing is not None and missing.filename is not None and not isinstance(error, ReliaError):
        return f"no such file: {missing.filename}"
    return " ".join(str(error).split()) or type(error).__name__


def _debug(ctx: click.Context) -> bool:
    env = os.environ.get("RELIA_DEBUG", "").strip().lower()
    return bool(ctx.meta.get("relia.debug")) or env not in ("", "0", "false", "no")


class _ReliaGroup(TyperGroup):
    """The ``relia`` group: the one place that turns expected failures into one line.

    An expected failure (:func:`_expected_exit_code`) prints ``error: <message>`` on stderr and
    exits 1 (2 for bad values), without a traceback unless ``--debug`` or ``RELIA_DEBUG=1``;
    anything else is a bug and keeps its traceback.
    """

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except Exception as error:
            code = _expected_exit_code(error)
            if code is None or _debug(ctx):
                raise
            err.print(_error("error", "red", _expected_message(error)))
            raise typer.Exit(code) from error


app = typer.Typer(
    name="relia",
    cls=_ReliaGroup,
    help="Reliability analytics for GPU clusters: ingest telemetry, fit MTBF, project goodput.",
    no_args_is_help=True,
    add_completion=False,
)


def _print_version(value: bool) -> None:
    if not value:
        return
    from importlib.metadata import PackageNotFoundError, version

    try:
        installed = version("relia")
    except PackageNotFoundError:  # run from a checkout that was never installed
        installed = "unknown (not installed; pip install -e .)"
    console.print(f"relia {installed}", highlight=False, markup=False)
    raise typer.Exit


@app.callback()
def _main(
    ctx: typer.Context,
    debug: Annotated[
        bool,
        typer.Option(
            "--debug",
            envvar="RELIA_DEBUG",
            help="Show the traceback of an expected error too (or set RELIA_DEBUG=1).",
        ),
    ] = False,
    version: Annotated[
        bool,
        typer.Option(
            "--version",
            callback=_print_version,
            is_eager=True,
            help="Print the installed relia version and exit.",
        ),
    ] = False,
) -> None:
    """Reliability analytics for GPU clusters: ingest telemetry, fit MTBF, project goodput."""
    ctx.meta["relia.debug"] = debug


DbOption = Annotated[
    Path | None,
    typer.Option("--db", help="DuckDB warehouse file (default: $RELIA_DB or relia.duckdb)."),
]
JsonOption = Annotated[bool, typer.Option("--json", help="Print results as JSON on stdout.")]
TrackedOption = Annotated[
    bool, typer.Option("--tracked", help="Run as a tracked Prefect flow run (pays a server start).")
]
WindowStartOption = Annotated[
    str | None,
    typer.Option(
        "--window-start",
        help="Observation window start, ISO date or time in UTC (default: the telemetry's span).",
    ),
]
WindowEndOption = Annotated[
    str | None,
    typer.Option(
        "--window-end",
        help="Observation window end (exclusive), ISO date or time in UTC (default: telemetry).",
    ),
]


def _window_epoch_s(option: str, text: str) -> float:
    """Seconds since the epoch of an ISO date or date-time (UTC unless it names an offset)."""
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        msg = f"{option} {text!r} is not an ISO date: write e.g. 2026-03-01 or 2026-03-01T12:00"
        raise typer.BadParameter(msg, param_hint=option) from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return moment.timestamp()


def _set_window(db_path: Path, start: str | None, end: str | None) -> None:
    """Store ``--window-start/--window-end`` as the views' window (cfg_params, kept for later)."""
    if start is None and end is None:
        return
    bounds = {
        name: _window_epoch_s(option, text)
        for name, option, text in (
            ("window_start_epoch_s", "--window-start", start),
            ("window_end_epoch_s", "--window-end", end),
        )
        if text is not None
    }
    first, last = bounds.get("window_start_epoch_s"), bounds.get("window_end_epoch_s")
    if first is not None and last is not None and last <= first:
        msg = f"--window-end {end} is not after --window-start {start}: swap or widen them"
        raise typer.BadParameter(msg, param_hint="--window-end")
    if not db_path.exists():
        from pipelines.errors import WarehouseMissingError

        raise WarehouseMissingError(db_path)
    from pipelines import warehouse

    with warehouse.connect(db_path, lock_timeout_s=30) as con:
        for name, value in bounds.items():
            warehouse.set_param(con, name, value)


def _settings(**overrides: Any) -> Settings:
    """``Settings.from_env(**overrides)``; a setting that cannot be used is one line, exit 2."""
    from pipelines.settings import Settings, SettingsError

    try:
        return Settings.from_env(**overrides)
    except SettingsError as error:
        err.print(_error("error", "red", error))
        raise typer.Exit(2) from error


def _prefect_defaults() -> None:
    """Keep Prefect local and quiet: no analytics, a project-local home, a patient server start."""
    os.environ.setdefault("PREFECT_HOME", str(Path.cwd() / ".prefect"))
    os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
    os.environ.setdefault("DO_NOT_TRACK", "1")
    os.environ.setdefault("PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS", "120")
    os.environ.setdefault("GX_ANALYTICS_ENABLED", "False")


def _tracked(flag: bool) -> bool:
    return flag or bool(os.environ.get("PREFECT_API_URL"))


def _print_json(payload: Any) -> None:
    """Print ``payload`` as strict JSON (no NaN/Infinity: they become null) on stdout."""
    text = json.dumps(_strict_json(payload), indent=2, default=str, allow_nan=False)
    sys.stdout.write(text + "\n")


def _require_warehouse(
    db_path: Path, relation: str, *, lock_timeout_s: float, absent: str | None = None
) -> None:
    """Fail with one line unless ``db_path`` exists and has the table or view ``relation``.

    ``absent`` is the message when the relation is missing (default: nothing was ingested).

    Raises
    ------
    WarehouseMissingError
        When there is no file at ``db_path`` (a command must not create an empty warehouse).
    WarehouseEmptyError
        When the file lacks ``relation``: nothing was ingested into it yet.
    """
    from pipelines import warehouse
    from pipelines.errors import WarehouseEmptyError, WarehouseMissingError

    if not Path(db_path).exists():
        raise WarehouseMissingError(db_path)
    with warehouse.connect(db_path, read_only=True, lock_timeout_s=lock_timeout_s) as con:
        found = con.execute(
            "select count(*) from information_schema.tables where table_name = $name",
            {"name": relation},
        ).fetchone()
    if not found or not found[0]:
        msg = absent or (
            f"{db_path} has no {relation}: nothing was ingested into it yet; run "
            f"`relia ingest LANDING --db {db_path}` first"
        )
        raise WarehouseEmptyError(msg)


def _table(title: str, rows: list[dict[str, Any]]) -> Table | Group:
    """Rows as a table; as one ``field  value`` block per row when the table is wider than
    the terminal (nothing is cut to "gp…")."""
    table = Table(title=title, title_justify="left")
    if not rows:
        table.add_column("(none)")
        return table
    for column in rows[0]:
        numeric = isinstance(rows[0][column], int | float)
        table.add_column(column, justify="right" if numeric else "left", overflow="fold")
    for row in rows:
        table.add_row(*[_fmt(v) for v in row.values()])
    natural = Measurement.get(console, console.options.update_width(10_000), table).maximum
    if natural <= console.width:
        return table
    blocks: list[Any] = [Text(title, style="italic")]
    for row in rows:
        block = Table.grid(padding=(0, 2))
        block.add_column(style="bold", no_wrap=True)
        block.add_column(overflow="fold")
        for column, value in row.items():
            block.add_row(column, _fmt(value))
        blocks += [Text(""), block]
    return Group(*blocks)


def _inert(text: str, *, lines: bool = False) -> Text:
    """Telemetry text for the terminal: no Rich markup, no escape sequences or C0/C1 control
    characters (``lines``: keep tabs and line breaks); see :func:`pipelines.text.printable`."""
    from pipelines.text import printable

    return Text(printable(text, lines=lines))


def _error(label: str, style: str, error: object) -> Text:
    """``label: message`` with the message (paths, values from files) kept inert."""
    return Text.assemble((f"{label}:", style), " ", _inert(str(error), lines=True))


def _fmt(value: Any) -> Text:
    return _inert(_fmt_text(value))


def _fmt_text(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:,.1f}" if abs(value) >= 100 else f"{value:.3g}"
    if isinstance(value, int):
        return f"{value:,}"
    return str(value)


@app.command()
def synth(
    out: Annotated[Path, typer.Option(help="Landing folder to write.")] = Path("landing"),
    nodes: Annotated[int, typer.Option(min=1, help="Nodes in the fleet.")] = 256,
    gpus_per_node: Annotated[int, typer.Option(min=1, max=16, help="GPUs per node.")] = 8,
    days: Annotated[int, typer.Option(min=1, help="Length of the observation window.")] = 90,
    seed: Annotated[int, typer.Option(help="Random seed.")] = 0,
    start: Annotated[str, typer.Option(help="Window start, ISO date (UTC).")] = "2026-06-01",
    k8s_share: Annotated[
        float, typer.Option(min=0.0, max=1.0, help="Share of jobs run under Kubernetes.")
    ] = 0.0,
    elastic_share: Annotated[
        float, typer.Option(min=0.0, max=1.0, help="Share of jobs run under torchrun (elastic).")
    ] = 0.0,
    node_events: Annotated[
        bool, typer.Option("--node-events", help="Write sacctmgr node down/drain events.")
    ] = False,
    dcgm_interval_s: Annotated[
        float | None, typer.Option(help="Write DCGM samples at this interval (off by default).")
    ] = None,
    precursor_share: Annotated[
        float | None,
        typer.Option(
            min=0.0,
            max=1.0,
            help="Plant warning signals (ECC, row remaps, NVLink CRC, heat, warning Xids) in the "
            "hours before this share of GPU failures and none before the others; with "
            "--dcgm-interval-s. Ground truth marks which failures got them.",
        ),
    ] = None,
    family: Annotated[
        list[str] | None,
        typer.Option(
            metavar="CLASS=FAMILY",
            help="Draw a class's lifetimes from weibull, exponential, lognormal or loglogistic "
            "at the same mean and median as its default Weibull (exponential: same mean); "
            "repeatable, all=FAMILY for every class.",
        ),
    ] = None,
    as_json: JsonOption = False,
) -> None:
    """Simulate a fleet with known lifetimes and write real-format telemetry plus ground truth."""
    from pipelines.synth import SynthConfig, synthesize

    started = time.perf_counter()
    config = SynthConfig(
        nodes=nodes,
        gpus_per_node=gpus_per_node,
        days=days,
        seed=seed,
        start=datetime.fromisoformat(start).replace(tzinfo=UTC),
        k8s_share=k8s_share,
        elastic_share=elastic_share,
        node_events=node_events,
        dcgm_interval_s=dcgm_interval_s,
        precursor_share=precursor_share,
    )
    if family:
        try:
            config = config.with_families(_class_families(family))
        except ValueError as error:
            err.print(_error("error", "red", error))
            raise typer.Exit(2) from error
    truth = synthesize(out, config)
    summary = {
        "out": str(out),
        "seconds": round(time.perf_counter() - started, 2),
        "nodes": truth["n_nodes"],
        "gpus": truth["n_gpus"],
        "window_start": truth["window_start"],
        "window_end": truth["window_end"],
        "failures_in_window": sum(v["n_failed"] for v in truth["lives_by_class"].values()),
        "interruptions": len(truth["interruptions"]),
    }
    if as_json:
        _print_json(summary)
    else:
        console.print(_table("synthetic fleet", [summary]))


def _class_families(pairs: list[str]) -> dict[str, str]:
    """``--family CLASS=FAMILY`` options as ``{class: family}``; a pair without ``=`` is refused."""
    families: dict[str, str] = {}
    for pair in pairs:
        name, sep, value = pair.partition("=")
        if not sep or not name.strip() or not value.strip():
            msg = f"--family takes CLASS=FAMILY (gpu=lognormal, all=exponential), got {pair!r}"
            raise ValueError(msg)
        families[name.strip()] = value.strip()
    return families


def _run_ingest(
    db: Path,
    paths: list[Path],
    source: str | None,
    *,
    mapping: Path | None = None,
    lake: Path | None = None,
    quiet: bool = False,
    force: bool = False,
    host: str | None = None,
    run: str | None = None,
    time_from_mtime: bool = False,
    hold_quiet_s: float | None = None,
) -> list[dict[str, Any]]:
    from dataclasses import asdict

    from rich.progress import Progress

    from pipelines import ingest as ingest_mod

    settings = _settings(db_path=db, lake_dir=lake)
    files = ingest_mod.discover(paths, source=source, path_patterns=settings.path_patterns)
    options = ingest_mod.identity_options(
        files, host=host, run=run, time_from_mtime=time_from_mtime
    )
    if mapping is not None:
        from pipelines.sources.fault_log import load_mapping

        options.setdefault("fault_log", {})["mapping"] = load_mapping(mapping)
    with Progress(console=err, transient=True, disable=quiet) as progress:
        bar = progress.add_task("ingesting", total=len(files))
        counts = ingest_mod.ingest(
            settings.db_path,
            files,
            lock_timeout_s=settings.lock_timeout_s,
            parser_options=options,
            on_file=lambda _c: progress.advance(bar),
            lake_dir=settings.lake_dir,
            force=force,
            hold_quiet_s=ingest_mod.HOLD_QUIET_S if hold_quiet_s is None else hold_quiet_s,
        )
    return [asdict(c) | {"status": c.outcome} for c in counts]


@app.command()
def ingest(
    paths: Annotated[list[Path], typer.Argument(help="Landing folder, source folders or files.")],
    source: Annotated[
        str | None, typer.Option(help="Source of the files when their folder does not say.")
    ] = None,
    mapping: Annotated[
        Path | None,
        typer.Option(help="Column mapping (YAML) for --source fault_log (data_samples/mappings)."),
    ] = None,
    lake: Annotated[
        Path | None,
        typer.Option(
            help="Write raw rows as Parquet under this folder (lake/source=.../date=.../), "
            "read by the warehouse's views (default: $RELIA_LAKE; unset: raw tables)."
        ),
    ] = None,
    force: Annotated[
        bool,
        typer.Option(
            "--force",
            help="Re-ingest the named files, replacing in one transaction whatever they loaded "
            "before under any source (a file ingested with the wrong --source).",
        ),
    ] = False,
    host: Annotated[
        str | None,
        typer.Option(
            help="Host of files whose lines do not name it (dmesg, torchrun, scrapes); wins over "
            "a path pattern ($RELIA_PATH_PATTERNS)."
        ),
    ] = None,
    run: Annotated[
        str | None, typer.Option(help="Run (rendezvous) id of torchrun logs that do not print it.")
    ] = None,
    time_from_mtime: Annotated[
        bool,
        typer.Option(
            "--time-from-mtime",
            help="Take a DCGM scrape's modification time as the time of its samples that carry "
            "none (when the file name gives none either).",
        ),
    ] = False,
    hold_quiet_s: Annotated[
        float | None,
        typer.Option(
            help="Seconds a live log must be quiet before its last line without a newline is "
            "read as a line (default 300)."
        ),
    ] = None,
    verbose: Annotated[
        bool,
        typer.Option(
            "--verbose",
            help=f"One row per file even when more than {FILE_ROWS} files were read "
            "(default: then one row per source and outcome).",
        ),
    ] = False,
    db: DbOption = None,
    tracked: TrackedOption = False,
    as_json: JsonOption = False,
) -> None:
    """Parse, validate and load telemetry files; print loaded / quarantined / held per file.

    Kernel logs are read as streams: only new complete lines, across rotation and compression.
    """
    settings = _settings(db_path=db, lake_dir=lake)
    try:
        if _tracked(tracked):
            _prefect_defaults()
            from pipelines.flows.ingest_telemetry import ingest_paths_flow

            counts = ingest_paths_flow(
                paths=paths, source=source, mapping=mapping, db_path=settings.db_path,
                lake_dir=settings.lake_dir, force=force, host=host, run=run,
                time_from_mtime=time_from_mtime,
            )  # fmt: skip
        else:
            counts = _run_ingest(
                settings.db_path, paths, source, mapping=mapping, lake=settings.lake_dir,
                quiet=as_json, force=force, host=host, run=run, time_from_mtime=time_from_mtime,
                hold_quiet_s=hold_quiet_s,
            )  # fmt: skip
    except ValueError as error:
        err.print(_error("error", "red", error))
        raise typer.Exit(2) from error
    if as_json:
        _print_json(counts)
        return
    rows = [
        {
            "file": Path(str(c["path"])).name,
            "source": c["source"],
            "read": c["n_read"],
            "loaded": c["n_loaded"],
            "quarantined": c["n_quarantined"],
            "held": c.get("n_held", 0),
            "ignored": c["n_ignored"],
            "status": c.get("status") or ("already loaded" if c["skipped"] else "loaded"),
        }
        for c in counts
    ]
    if len(rows) <= FILE_ROWS or verbose:
        console.print(_table(f"ingest into {settings.db_path}", rows))
        return
    summary = Table(
        title=f"ingest into {settings.db_path}: {len(rows):,} files by source and outcome "
        "(--verbose lists every file)",
        title_justify="left",
        box=None,
        padding=(0, 1),
    )
    summed = _by_source(rows)
    for name in summed[0]:
        summary.add_column(name, justify="left" if name in ("source", "status") else "right")
    for r in summed:
        summary.add_row(*[v if isinstance(v, str) else f"{v:,}" for v in r.values()])
    console.print(summary)


FILE_ROWS = 40
"""Most files `relia ingest` lists one by one; more are summed per source and outcome."""


def _by_source(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per-file ingest rows summed per (source, status), in order of first appearance."""
    out: dict[tuple[str, str], dict[str, Any]] = {}
    for row in rows:
        key = (str(row["source"]), str(row["status"]))
        total = out.setdefault(
            key,
            {"source": key[0], "files": 0, "read": 0, "loaded": 0, "quarantined": 0, "held": 0,
             "ignored": 0, "status": key[1]},
        )  # fmt: skip
        total["files"] += 1
        for name in ("read", "loaded", "quarantined", "held", "ignored"):
            total[name] += int(row[name] or 0)
    summed = list(out.values())
    # columns that are 0 for every source say nothing: leave them out so the table fits
    empty = {n for n in ("quarantined", "held", "ignored") if not any(r[n] for r in summed)}
    return [{k: v for k, v in r.items() if k not in empty} for r in summed]


def _summary(db_path: Path, *, lock_timeout_s: float = 30) -> dict[str, list[dict[str, Any]]]:
    from pipelines import warehouse

    with warehouse.connect(db_path, read_only=True, lock_timeout_s=lock_timeout_s) as con:
        fleet = warehouse.query(
            con,
            "select component_class, units_at_risk, n_failures, "
            "round(exposure_h, 1) as exposure_h, round(naive_mtbf_h, 0) as naive_mtbf_h, "
            "n_interruptions from rpt_fleet_summary",
        )
        causes = warehouse.query(
            con,
            "select cause_class, attribution, n_interruptions, "
            "round(gpu_hours_interrupted, 1) as gpu_hours_interrupted, "
            "median_restart_overhead_s from rpt_interruptions_by_cause",
        )
        quarantine = warehouse.query(
            con,
            "select target_table, stage, reason, count(*) as n_rows from raw_quarantine "
            "group by all order by n_rows desc",
        )
        files = warehouse.query(
            con,
            "select source, count(*) as n_files, sum(n_read)::bigint as n_read, "
            "sum(n_loaded)::bigint as n_loaded, sum(n_quarantined)::bigint as n_quarantined "
            "from raw_ingest_files group by source order by source",
        )
    return {
        "failures_by_class": fleet.to_dicts(),
        "interruptions_by_cause": causes.to_dicts(),
        "quarantine": quarantine.to_dicts(),
        "files": files.to_dicts(),
    }


def _print_summary(db_path: Path, summary: dict[str, list[dict[str, Any]]]) -> None:
    console.print(_table("units and failures by component class", summary["failures_by_class"]))
    console.print(_table("job interruptions by cause", summary["interruptions_by_cause"]))
    console.print(_table("files ingested", summary["files"]))
    console.print(_table("quarantined rows", summary["quarantine"]))
    console.print(f"warehouse: [bold]{db_path.resolve()}[/bold] (try: duckdb {db_path})")


@app.command()
def summary(
    db: DbOption = None,
    as_json: JsonOption = False,
    window_start: WindowStartOption = None,
    window_end: WindowEndOption = None,
) -> None:
    """Print the fleet summary from the warehouse."""
    settings = _settings(db_path=db)
    _set_window(settings.db_path, window_start, window_end)
    _require_warehouse(
        settings.db_path, "rpt_fleet_summary", lock_timeout_s=settings.lock_timeout_s
    )
    result = _summary(settings.db_path, lock_timeout_s=settings.lock_timeout_s)
    if as_json:
        _print_json(result)
    else:
        _print_summary(settings.db_path, result)


_REPAIR_NAMES = {
    "n_units": "n_repairs",
    "n_failures": "n_repaired",
    "exposure_h": "repair_hours",
    "mtbf_h": "mttr_h",
    "mtbf_lo_h": "mttr_lo_h",
    "mtbf_hi_h": "mttr_hi_h",
    "exp_mtbf_h": "exp_mttr_h",
    "b10_h": "b10_repair_h",
    "mtbf_observed_h": "mttr_observed_h",
    "mtbf_observed_lo_h": "mttr_observed_lo_h",
    "mtbf_observed_hi_h": "mttr_observed_hi_h",
    "headline_mtbf_h": "headline_mttr_h",
    "headline_mtbf_lo_h": "headline_mttr_lo_h",
    "headline_mtbf_hi_h": "headline_mttr_hi_h",
}
"""Column names of a repair run's rows as printed (table and JSON): the mean is the MTTR."""


def _repair_rows(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Fit rows of a repair run, renamed for repair times; no failure rates (AFR, FIT)."""
    drop = {
        "afr_pct",
        "fit_per_1e9h",
        "unit_years",
        "afr_observed_pct",
        "afr_observed_lo_pct",
        "afr_observed_hi_pct",
    }
    return [{_REPAIR_NAMES.get(k, k): v for k, v in row.items() if k not in drop} for row in rows]


def _span(value: Any, lo: Any, hi: Any, digits: int) -> str:
    """``value (lo-hi)`` for a table cell; ``-`` for a missing number, ``inf`` for an open bound."""

    def one(x: Any) -> str:
        if x is None or x != x:
            return "-"
        return "inf" if x == float("inf") else f"{x:,.{digits}f}"

    return f"{one(value)} ({one(lo)}-{one(hi)})"


_HOW = {"model_average": "avg", "weibayes_lr": "weibayes", "chi_square": "chi2"}


def _repair_table_rows(results: Any) -> list[dict[str, Any]]:
    """One row per class of a repair run: repairs, closed, headline MTTR, the chosen family."""
    import polars as pl

    chosen = results.filter(pl.col("chosen")).sort(
        "n_failures", "component_class", descending=[True, False]
    )
    return [
        {
            "class": r["component_class"],
            "repairs": r["n_units"],
            "closed": r["n_failures"],
            "mttr_h": _span(
                r["headline_mtbf_h"], r["headline_mtbf_lo_h"], r["headline_mtbf_hi_h"], 1
            ),
            "how": _HOW.get(r["headline_method"], r["headline_method"]),
            "family": r["family"],
            "shape": round(r["shape"], 2),
            "b10_h": round(r["b10_h"], 1) if r["b10_h"] == r["b10_h"] else None,
        }
        for r in chosen.iter_rows(named=True)
    ]


def _fit_rows(results: Any) -> list[dict[str, Any]]:
    """One row per class and cohort: observed rates, the headline MTBF, the chosen family.

    ``afr_obs_pct`` is failures per 100 unit-years observed (exact Poisson bounds); ``mtbf_h``
    and its bounds are the headline (``method``: a model average over the families, Weibayes
    for 1 to 5 failures, the chi-square bound for none); ``extrap`` says most of that mean lies
    beyond the oldest age observed, ``rmst_h`` is the mean restricted to that age; ``family``,
    ``shape`` and ``afr_model_pct`` (8,766 h / the family's mean) are the AIC choice's, a model
    quantity.
    """
    import polars as pl

    rows = []
    chosen = results.filter(pl.col("chosen")).sort(
        "n_failures", "component_class", descending=[True, False]
    )
    split = chosen["cohort"].n_unique() > 1 or chosen["cohort"].first() != "all"
    for r in chosen.iter_rows(named=True):
        row = {"class": r["component_class"]} | ({"cohort": r["cohort"]} if split else {})
        row |= {
            "fail": r["n_failures"],
            "unit_yr": round(r["unit_years"], 1),
            "afr_obs_pct": _span(
                r["afr_observed_pct"], r["afr_observed_lo_pct"], r["afr_observed_hi_pct"], 1
            ),
            "mtbf_h": _span(
                r["headline_mtbf_h"], r["headline_mtbf_lo_h"], r["headline_mtbf_hi_h"], 0
            ),
            "how": _HOW.get(r["headline_method"], r["headline_method"]),
            "extrap": "yes" if r["headline_extrapolated"] else "",
            "rmst_h": round(r["headline_rmst_h"])
            if r["headline_rmst_h"] == r["headline_rmst_h"]
            else None,
            "family": r["family"],
            "shape": round(r["shape"], 2),
            "afr_model_pct": round(r["afr_pct"], 1) if r["afr_pct"] == r["afr_pct"] else None,
        }
        rows.append(row)
    return rows


@app.command()
def fit(
    by: Annotated[
        list[str] | None, typer.Option("--by", help="Cohort column to split fits by (repeatable).")
    ] = None,
    cox: Annotated[
        str | None,
        typer.Option(help="Comma-separated covariates for Cox PH (e.g. batch,position)."),
    ] = None,
    lives: Annotated[
        str,
        typer.Option(
            help="Lives view: fct_component_lives or int_fault_lives (lifetimes, MTBF), or a "
            "repair view: stg_repairs (replacement tickets), int_fault_repairs or "
            "int_node_unavailability (repair times, MTTR, with a pooled class 'all').",
        ),
    ] = "fct_component_lives",
    dataset: Annotated[
        str | None,
        typer.Option(help="Dataset name within int_fault_lives / int_fault_repairs."),
    ] = None,
    alpha: Annotated[float, typer.Option(min=0.001, max=0.5, help="1 - confidence level.")] = 0.05,
    all_families: Annotated[
        bool, typer.Option("--all-families", help="Print every family, not just the AIC choice.")
    ] = False,
    weibayes_shape: Annotated[
        str | None,
        typer.Option(
            help="Known Weibull shape for classes with 1 to 5 failures (Weibayes): 1.3 for every "
            "class, or gpu=1.3,nic=0.9; default: the class's fleet-wide fit for cohorts, else 1.",
        ),
    ] = None,
    plots: Annotated[
        Path | None,
        typer.Option(
            "--plots",
            metavar="DIR",
            help="Write Weibull- and log-normal-paper probability plots (<class>_<paper>.png, "
            "classes with 3+ failures) into DIR.",
        ),
    ] = None,
    db: DbOption = None,
    tracked: TrackedOption = False,
    as_json: JsonOption = False,
    window_start: WindowStartOption = None,
    window_end: WindowEndOption = None,
) -> None:
    """Fit MTBF per component class (and cohort), store it in fit_results, print the AIC choice.

    With a repair view as --lives the same families are fitted to repair durations (open repairs
    right-censored) and the mean is the MTTR.
    """
    import warnings

    from pipelines.fit import LIVES_VIEWS, parse_weibayes_shape, quantity_of

    if lives not in LIVES_VIEWS:
        err.print(
            _error(
                "error", "red", f"unknown --lives {lives!r}; use one of: {', '.join(LIVES_VIEWS)}"
            )
        )
        raise typer.Exit(2)
    shapes = parse_weibayes_shape(weibayes_shape)
    settings = _settings(db_path=db)
    _set_window(settings.db_path, window_start, window_end)
    _require_warehouse(settings.db_path, lives, lock_timeout_s=settings.lock_timeout_s)
    cohorts = list(by or [])
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        if _tracked(tracked):
            _prefect_defaults()
            from pipelines.flows.fit_reliability import fit_reliability

            outcome = fit_reliability(
                db_path=settings.db_path, by=cohorts, lives=lives, dataset=dataset, alpha=alpha,
                weibayes_shape=shapes,
            )  # fmt: skip
        else:
            from pipelines import fit as fit_mod

            outcome = fit_mod.run_fit(
                settings.db_path,
                by=cohorts,
                lives=lives,
                dataset=dataset,
                alpha=alpha,
                lock_timeout_s=settings.lock_timeout_s,
                weibayes_shape=shapes,
            )
        run_id, results = outcome["run_id"], outcome["results"]
        cox_table = None
        if cox:
            from pipelines import fit as fit_mod

            cox_table = fit_mod.run_cox(
                settings.db_path,
                [c.strip() for c in cox.split(",") if c.strip()],
                lives=lives,
                dataset=dataset,
                alpha=alpha,
            )
        written = None
        if plots is not None:
            from pipelines.report import write_fit_plots

            written = write_fit_plots(
                settings.db_path, results, plots, lives=lives, dataset=dataset, alpha=alpha
            )
    notes = sorted({str(w.message) for w in caught})
    quantity = quantity_of(lives)
    repairs = outcome.get("repairs")
    if all_families:
        rows = results.to_dicts()
    elif quantity == "repair_time":
        rows = _repair_table_rows(results)
    else:
        rows = _fit_rows(results)
    json_rows = (results if all_families else results.filter(results["chosen"])).to_dicts()
    if quantity == "repair_time":
        json_rows = _repair_rows(json_rows)
        rows = _repair_rows(rows) if all_families else rows
    if as_json:
        _print_json(
            {
                "run_id": run_id,
                "lives": lives,
                "quantity": quantity,
                "mean": "MTTR" if quantity == "repair_time" else "MTBF",
                **({"repairs": repairs} if repairs is not None else {}),
                "fits": json_rows,
                "cox": cox_table.to_dicts() if cox_table is not None else None,
                "plots": [str(p) for p in written] if written is not None else None,
                "notes": notes,
            }
        )
        return
    if quantity == "repair_time":
        title = f"fit run {run_id}: repair times from {lives} (headline MTTR in hours)"
    elif all_families:
        title = f"fit run {run_id} (every family)"
    else:
        title = f"fit run {run_id}: observed AFR, headline MTBF (hours), AIC-chosen family"
    console.print(_table(title, rows))
    extrapolated = sorted(
        {r["component_class"] for r in results.to_dicts() if r.get("headline_extrapolated")}
    )
    if extrapolated and quantity != "repair_time":
        err.print(
            _error(
                "note",
                "yellow",
                "extrapolated: most of the mean life of "
                + ", ".join(extrapolated)
                + " lies beyond the oldest age observed (rmst_h is the mean up to that age)",
            )
        )
    if repairs is not None:
        unused = repairs["n_open_no_age"] + repairs["n_no_length"] + repairs["n_before_window"]
        console.print(
            f"{repairs['n_repairs']:,} repairs: {repairs['n_repaired']:,} closed, "
            f"{repairs['n_open']:,} open (right-censored at the end of the data); not fitted: "
            f"{unused:,} ({repairs['n_open_no_age']:,} open with no age, "
            f"{repairs['n_no_length']:,} closed at their start, {repairs['n_before_window']:,} "
            "over before the window)",
            highlight=False,
            markup=False,
        )
    if cox_table is not None:
        console.print(_table("Cox proportional hazards", cox_table.to_dicts()))
    if written is not None:
        where = plots.resolve() if plots is not None else None
        console.print(
            f"probability plots: {len(written)} PNG file(s) in [bold]{where}[/bold]"
            if written
            else f"probability plots: no class has 3+ failures; nothing written to {where}"
        )
    for note in notes:
        err.print(_error("note", "yellow", note))


@app.command()
def trend(
    alpha: Annotated[float, typer.Option(min=0.001, max=0.5)] = 0.05,
    lemon_alpha: Annotated[
        float, typer.Option(help="Family-wise level for flagging lemon nodes (Bonferroni).")
    ] = 0.01,
    db: DbOption = None,
    as_json: JsonOption = False,
) -> None:
    """Repairable-system view: Crow-AMSAA and Laplace verdicts for the fleet, lemon nodes."""
    from dataclasses import asdict

    from pipelines import fit as fit_mod
    from pipelines import warehouse

    settings = _settings(db_path=db)
    _require_warehouse(
        settings.db_path, "fct_node_recurrence", lock_timeout_s=settings.lock_timeout_s
    )
    with warehouse.connect(
        settings.db_path, read_only=True, lock_timeout_s=settings.lock_timeout_s
    ) as con:
        result = fit_mod.fleet_trend(
            fit_mod.read_node_recurrence(con), alpha=alpha, lemon_alpha=lemon_alpha
        )
    lemons = result.lemons.sort("p_value").head(10).to_dicts()
    payload = {
        "n_nodes": result.n_nodes,
        "n_failures": result.n_failures,
        "crow_amsaa": asdict(result.crow_amsaa) if result.crow_amsaa else None,
        "laplace": asdict(result.laplace) if result.laplace else None,
        "lemon_nodes": [r for r in lemons if r["lemon"]],
        "most_suspect_nodes": lemons,
    }
    if as_json:
        _print_json(payload)
        return
    summary = {"nodes": result.n_nodes, "failures": result.n_failures}
    if result.crow_amsaa:
        ca = result.crow_amsaa
        summary |= {"beta": ca.beta, "beta_lo": ca.beta_lo, "beta_hi": ca.beta_hi,
                    "crow_amsaa": ca.verdict}  # fmt: skip
    if result.laplace:
        summary |= {"laplace_U": result.laplace.statistic, "laplace_p": result.laplace.p_value,
                    "laplace": result.laplace.verdict}  # fmt: skip
    console.print(_table("fleet trend (power-law NHPP and Laplace test)", [summary]))
    console.print(
        _table(
            "nodes with the most improbable failure counts",
            [
                {
                    k: r[k]
                    for k in (
                        "unit_id",
                        "observed",
                        "expected",
                        "p_value",
                        "p_adjusted",
                        "lemon",
                        "classes",
                    )
                }
                for r in lemons
            ],
        )
    )
    if lemons:
        console.print(lemons[0]["rule"], highlight=False)


_PROJECTION_KEYS = (
    "mtti_h", "mtti_h_lo", "mtti_h_hi", "expected_interruptions", "expected_interruptions_lo",
    "expected_interruptions_hi", "young_interval_min", "daly_interval_min",
    "checkpoint_interval_min", "ettr", "ettr_lo", "ettr_hi", "goodput", "goodput_lo", "goodput_hi",
    "daly_wall_time_h", "lost_gpu_h_checkpoint", "lost_gpu_h_rework", "lost_gpu_h_restart",
    "lost_gpu_h_spares_wait", "lost_gpu_h_drain", "expected_drains", "expected_false_alarms",
    "mtti_unpredicted_h", "energy_lost_mwh", "goodput_error_bound",
)  # fmt: skip


@app.command()
def project(
    gpus: Annotated[int, typer.Option(min=1, help="GPUs in the job.")] = 16_384,
    gpus_per_node: Annotated[int, typer.Option(min=1)] = 8,
    failure_domain_gpus: Annotated[
        int | None, typer.Option(help="GPUs one fault takes out (default: a node).")
    ] = None,
    node_failures_per_1000_node_days: Annotated[
        float | None, typer.Option(help="Hand-given node failure rate (instead of fits).")
    ] = None,
    checkpoint_s: Annotated[float, typer.Option(help="Blocking checkpoint write, s.")] = 60.0,
    checkpoint_interval_s: Annotated[
        float | None, typer.Option(help="Compute between checkpoints, s (default: Daly optimum).")
    ] = None,
    restart_s: Annotated[
        float | None,
        typer.Option(
            help="Whole restart time, s: a shorthand that sets --reschedule-s to this minus "
            "detection, reload and warm-up (each at its value), and says so.",
        ),
    ] = None,
    detect_s: Annotated[
        float | None, typer.Option(help="Time to detect a crash, s (default 120).")
    ] = None,
    detect_hang_s: Annotated[
        float | None,
        typer.Option(help="Time for the watchdog to declare a hang, s (default 600)."),
    ] = None,
    hang_share: Annotated[
        float | None,
        typer.Option(help="Share of interruptions that hang instead of crashing, 0-1 (default 0)."),
    ] = None,
    reschedule_s: Annotated[
        float | None,
        typer.Option(
            help="Wait for replacement hardware from the scheduler, s (default 300; with "
            "--from-fits: the measured requeue gap less detection).",
        ),
    ] = None,
    reload_s: Annotated[
        float | None, typer.Option(help="Checkpoint reload time, s (default 180).")
    ] = None,
    warmup_s: Annotated[
        float | None, typer.Option(help="Warm-up to full speed after a restart, s (default 120).")
    ] = None,
    strategy: Annotated[str, typer.Option(help="restart, hot_spare or elastic.")] = "restart",
    hot_spares: Annotated[int, typer.Option(min=0)] = 0,
    repair_h: Annotated[
        float, typer.Option(min=0.001, help="Repair time of a failed domain, h (the median).")
    ] = 24.0,
    repair_sigma: Annotated[
        float | None,
        typer.Option(
            help="Log-normal sigma of repair times around the --repair-h median (default 0: "
            "every repair takes --repair-h).",
        ),
    ] = None,
    repair_from_warehouse: Annotated[
        bool,
        typer.Option(
            help="Set --repair-h and --repair-sigma to the median and log-normal sigma of the "
            "measured repair times (closed replacement tickets in --db).",
        ),
    ] = False,
    repair_from_fits: Annotated[
        str | None,
        typer.Option(
            metavar="latest|RUN_ID",
            help="Set --repair-h and --repair-sigma to the median exp(mu) and sigma of the "
            "pooled log-normal of a stored repair-time fit run (relia fit --lives stg_repairs, "
            "int_fault_repairs or int_node_unavailability), or of the latest one.",
        ),
    ] = None,
    replica_gpus: Annotated[
        int | None,
        typer.Option(
            help="GPUs a failure removes under elastic: a model-parallel group, TP x PP GPUs "
            "(default 512).",
        ),
    ] = None,
    job_interruptions_per_h: Annotated[
        float | None,
        typer.Option(
            help="Job-level interruptions per hour that do not grow with GPU count (software "
            "crashes, storage stalls; default 0).",
        ),
    ] = None,
    node_group: Annotated[
        list[str] | None,
        typer.Option(
            metavar="SHARE:MULTIPLIER",
            help="A group of nodes with its own failure rate, share:rate_multiplier (0.1:3 = a "
            "tenth of the nodes failing 3x as often); repeatable.",
        ),
    ] = None,
    weibull_shape: Annotated[
        list[str] | None,
        typer.Option(
            metavar="SHAPE|CLASS=SHAPE",
            help="Lifetime Weibull shape, fleet-wide (0.7) or per class (gpu=0.7, repeatable); "
            "1 is exponential, below 1 infant mortality. Default: each class's fitted shape.",
        ),
    ] = None,
    job_days: Annotated[float, typer.Option(min=0.001)] = 30.0,
    fleet_age: Annotated[
        str,
        typer.Option(
            help="Unit ages at job start: steady_state, new, an age in hours, an age mix "
            "(age_h:share pairs, 0:0.5,8760:0.5), or inventory (the ages of the units in "
            "service at the end of the warehouse's data, in up to 10 bins; needs --db).",
        ),
    ] = "steady_state",
    from_fits: Annotated[
        str | None, typer.Option(help="Fit run id for the rates, or 'latest'.")
    ] = None,
    drain_recall: Annotated[
        float,
        typer.Option(
            min=0.0,
            max=1.0,
            help="Share of failures a predictor warns of in time; each becomes a planned drain "
            "(a checkpoint + a migration) instead of lost work. See `relia predict train`.",
        ),
    ] = 0.0,
    drain_precision: Annotated[
        float,
        typer.Option(
            min=0.0,
            max=1.0,
            help="Share of the predictor's alarms that are real; the rest drain healthy nodes.",
        ),
    ] = 1.0,
    drain_migration_s: Annotated[
        float, typer.Option(min=0.0, help="Moving the job off a drained node, s.")
    ] = 300.0,
    simulate: Annotated[int, typer.Option(min=0, help="Monte Carlo trials to run as well.")] = 0,
    samples: Annotated[int, typer.Option(min=0, help="Parameter samples for intervals.")] = 2000,
    seed: int = 0,
    db: DbOption = None,
    as_json: JsonOption = False,
) -> None:
    """Project MTTI, checkpoint intervals, ETTR and goodput for a job at a given scale."""
    from pipelines import project as project_mod

    knobs: dict[str, Any] = {
        "n_gpus": gpus,
        "gpus_per_node": gpus_per_node,
        "failure_domain_gpus": failure_domain_gpus or gpus_per_node,
        "checkpoint_s": checkpoint_s,
        "checkpoint_interval_s": checkpoint_interval_s,
        "strategy": strategy,
        "hot_spares": hot_spares,
        "repair_h": repair_h,
        "job_days": job_days,
        "fleet_age": fleet_age,
        "drain_recall": drain_recall,
        "drain_precision": drain_precision,
        "drain_migration_s": drain_migration_s,
    }
    optional = {
        "node_failures_per_1000_node_days": node_failures_per_1000_node_days,
        "restart_s": restart_s,
        "detect_s": detect_s,
        "detect_hang_s": detect_hang_s,
        "hang_share": hang_share,
        "reschedule_s": reschedule_s,
        "reload_s": reload_s,
        "warmup_s": warmup_s,
        "repair_sigma": repair_sigma,
        "replica_gpus": replica_gpus,
        "job_interruptions_per_h": job_interruptions_per_h,
        "node_groups": ",".join(node_group) if node_group else None,
        "weibull_shape": ",".join(weibull_shape) if weibull_shape else None,
    }
    knobs |= {k: v for k, v in optional.items() if v is not None}
    if weibull_shape and len(weibull_shape) > 1 and any("=" not in w for w in weibull_shape):
        err.print(
            _error(
                "error", "red",
                "give one fleet-wide --weibull-shape (0.7) or per-class ones (gpu=0.7), not both",
            )
        )  # fmt: skip
        raise typer.Exit(2)
    settings = _settings(db_path=db)
    if from_fits is not None or repair_from_fits is not None:
        _require_warehouse(
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
    )
    if as_json:
        _print_json(result)
        return
    rows = [
        {"figure": k, "value": "n/a (see ettr_note)" if result[k] is None else result[k]}
        for k in _PROJECTION_KEYS
        if k in result
    ]
    console.print(_table(f"projection: {gpus:,} GPUs, {strategy}", rows))
    keys = ("rate_source", "fleet_age_assumption", "uncertainty", "ettr_note", "fit_run_id")
    for key in keys:
        console.print(f"{key}: {result.get(key)}", highlight=False)
    if result.get("extrapolation_note"):
        err.print(_error("note", "yellow", f"extrapolated: {result['extrapolation_note']}"))
    bound = result["goodput_error_bound"]
    console.print(
        f"analytical goodput within ±{bound:.2g} of the event-level model"
        + ("" if result["analytical_exact"] else
           " (more than 1 % of goodput: check it with --simulate TRIALS)"),
        highlight=False,
    )  # fmt: skip
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
    if "simulation" in result:
        sim = result["simulation"]
        console.print(
            f"Monte Carlo ({simulate} trials): goodput {sim['goodput']:.4f} "
            f"± {sim['goodput_se']:.4f} (s.e.)",
            highlight=False,
        )


def _share(x: float | None) -> str:
    return "n/a" if x is None else f"{x:.2f}"


def _gain_row(gain: dict[str, Any]) -> dict[str, Any]:
    """A gains row for the terminal: the change, the goodputs, the gain and its interval."""
    within = gain["within_uncertainty"]
    return {
        "knob": gain["knob"],
        "baseline": gain["baseline_value"],
        "best": gain["best_value"],
        "goodput_baseline": gain["goodput_baseline"],
        "goodput_best": gain["goodput_best"],
        "gain": gain["gain"],
        "gain 95 %": "-" if gain["gain_lo"] is None
        else f"{gain['gain_lo']:.4f} to {gain['gain_hi']:.4f}",
        "within_uncertainty": "-" if within is None else ("yes" if within else "no"),
        "useful GPU-h gained": gain["gain_useful_gpu_h"],
    }  # fmt: skip


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
    db: DbOption = None,
    tracked: TrackedOption = False,
    as_json: JsonOption = False,
) -> None:
    """Run a what-if grid; write Parquet/CSV and plots; name the knob that buys most goodput."""
    settings = _settings(db_path=db)
    if not sweep_file.is_file():  # before Prefect's import, and a tracked run that would fail
        raise FileNotFoundError(2, "no such file", str(sweep_file))
    _prefect_defaults()
    from pipelines.flows.what_if import what_if

    # the what-if flow either way: as a tracked run, or its function without orchestration;
    # a bad sweep file (ValueError) is one line, exit 2: see _ReliaGroup
    run = what_if if _tracked(tracked) else what_if.fn
    result = run(
        sweep_file=sweep_file, out_dir=out, db_path=settings.db_path, drain_model=drain_model,
        simulate=simulate,
    )  # fmt: skip
    if as_json:
        _print_json(result)
        return
    held = ", ".join(f"{k}={v}" for k, v in result["baseline_values"].items())
    console.print(
        f"baseline at {result['target_gpus']:,} GPUs (held for every other knob): {held}",
        highlight=False,
        markup=False,
    )
    console.print(
        _table(
            f"knobs ranked by goodput gain over the baseline at {result['target_gpus']:,} GPUs",
            [_gain_row(g) for g in result["gains"]],
        )
    )
    console.print(f"gain uncertainty: {result['gain_uncertainty']}", highlight=False, markup=False)
    if result.get("extrapolated_classes"):
        err.print(
            _error(
                "note",
                "yellow",
                "extrapolated: most of the fitted mean life of "
                + ", ".join(result["extrapolated_classes"])
                + " lies beyond the oldest age observed (relia fit shows the restricted mean)",
            )
        )
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

    settings = _settings(db_path=db, reports_dir=reports_dir)
    scales = tuple(target_gpus or (16_384, 100_000))
    _require_warehouse(
        settings.db_path, "stg_observation_window", lock_timeout_s=settings.lock_timeout_s
    )
    # a week outside the window (ValueError) is one line, exit 2: see _ReliaGroup
    if _tracked(tracked):
        _prefect_defaults()
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
            _print_json({"path": path, "seconds": seconds, "headline": None, "artifact": artifact})
            return
        console.print(f"report: [bold]{path}[/bold] ({seconds:.1f} s; tracked flow run, headline "
                      f"in its Prefect artifact {artifact})")  # fmt: skip
        return
    from pipelines.report import build_report

    result = build_report(
        settings.db_path,
        week=week,
        reports_dir=settings.reports_dir,
        target_gpus=scales,
        lock_timeout_s=settings.lock_timeout_s,
    )
    if as_json:
        _print_json({"path": str(result.path), "seconds": result.seconds,
                     "headline": result.headline})  # fmt: skip
        return
    console.print(Markdown(result.markdown))
    console.print(f"report: [bold]{result.path}[/bold] ({result.seconds:.1f} s)")


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
    """End to end: synthesise a fleet, ingest it as an ``ingest-telemetry`` flow run, summarise,
    fit MTBF per class and write the weekly report."""
    from pipelines.synth import SynthConfig, synthesize

    settings = _settings(db_path=db, landing_dir=out)
    timings: dict[str, float] = {}
    started = time.perf_counter()
    synthesize(settings.landing_dir, SynthConfig(nodes=nodes, gpus_per_node=gpus_per_node,
                                                days=days, seed=seed))  # fmt: skip
    timings["synth_s"] = time.perf_counter() - started
    _prefect_defaults()
    from pipelines.flows.ingest_telemetry import ingest_telemetry

    started = time.perf_counter()
    ingest_telemetry(landing_dir=settings.landing_dir, db_path=settings.db_path)
    timings["ingest_flow_s"] = time.perf_counter() - started
    import warnings

    from pipelines import fit as fit_mod
    from pipelines.report import build_report

    started = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # zero-failure classes: reported as bounds in the table
        fitted = fit_mod.run_fit(settings.db_path)
    timings["fit_s"] = time.perf_counter() - started
    report_result = build_report(settings.db_path, week=None, reports_dir=settings.reports_dir)
    timings["report_s"] = report_result.seconds
    result = _summary(settings.db_path)
    if as_json:
        _print_json({"timings": timings, "fit_run_id": fitted["run_id"],
                     "report": str(report_result.path), **result})  # fmt: skip
        return
    _print_summary(settings.db_path, result)
    console.print(_table("MTBF by component class (AIC choice)", _fit_rows(fitted["results"])))
    console.print(f"weekly report: [bold]{report_result.path.resolve()}[/bold]")
    console.print(
        "timings: " + ", ".join(f"{k} {v:.1f}" for k, v in timings.items()), highlight=False
    )


# --- relia predict: failure prediction (pipelines/predict.py) ---------------------------------
predict_app = typer.Typer(
    name="predict",
    help="Failure prediction: train on earlier telemetry, test on later, score GPUs at risk.",
    no_args_is_help=True,
)
app.add_typer(predict_app, name="predict")


def _predict_rows(metrics: dict[str, Any]) -> list[dict[str, Any]]:
    """The classifier and its two baselines on the test period, one row each."""
    rows = []
    for key, label in (
        ("model", "classifier"),
        ("sbe_rule", "SBE rule"),
        ("never_predict", "never predict"),
    ):
        m = metrics[key]
        threshold = m.get("n_sbe_per_h") if key == "sbe_rule" else m.get("threshold")
        rows.append(
            {
                "predictor": label,
                "threshold": "never" if threshold in (None, float("inf")) else threshold,
                "precision": m["precision"],
                "recall": m["recall"],
                "pr_auc": m["pr_auc"],
                "lead_time_h": m["lead_time_h"],
                "alarms_per_day": m["alarms_per_day"],
                "caught": f"{int(m['n_caught'] or 0)}/{m['n_failures']}",
            }
        )
    return rows


@predict_app.command("train")
def predict_train(
    horizon_h: Annotated[
        float, typer.Option(min=1.0, help="Predict failures within this many hours.")
    ] = 24.0,
    test_fraction: Annotated[
        float, typer.Option(min=0.05, max=0.6, help="Latest share of the span held out to test.")
    ] = 0.3,
    calibration_fraction: Annotated[
        float, typer.Option(min=0.05, max=0.4, help="Share before the test slice to calibrate.")
    ] = 0.15,
    target_precision: Annotated[
        float, typer.Option(min=0.05, max=1.0, help="Precision the operating threshold aims at.")
    ] = 0.9,
    max_train_rows: Annotated[
        int, typer.Option(min=1_000, help="Sample healthy training GPU-hours down to this.")
    ] = 300_000,
    as_of_checks: Annotated[
        int, typer.Option(min=0, help="Prediction times re-computed from truncated data.")
    ] = 3,
    db: DbOption = None,
    as_json: JsonOption = False,
) -> None:
    """Train a failure predictor, test it on the latest period, store it; print its precision,
    recall, PR-AUC and lead time next to the baselines (never predict; drain after N SBEs/h)."""
    from pipelines import predict as predict_mod
    from pipelines import warehouse

    settings = _settings(db_path=db)
    with warehouse.connect(settings.db_path, lock_timeout_s=settings.lock_timeout_s) as con:
        warehouse.init(con)
        try:
            result = predict_mod.train_model(
                con,
                horizon_h=horizon_h,
                calibration_fraction=calibration_fraction,
                test_fraction=test_fraction,
                target_precision=target_precision,
                max_train_rows=max_train_rows,
                as_of_checks=as_of_checks,
            )
        except ValueError as error:  # models.predict.LeakageError is one
            err.print(_error(type(error).__name__, "red", error))
            raise typer.Exit(2) from error
    windows = {k: v.isoformat() for k, v in result.bounds.items()}
    if as_json:
        _print_json(
            {
                "model_id": result.model_id,
                "windows": windows,
                "metrics": result.metrics,
                "curve": result.curve.to_dicts(),
                "as_of_rows_checked": result.as_of_rows,
                "timings_s": result.timings_s,
            }
        )
        return
    sizes = result.metrics["sizes"]
    console.print(
        _table(
            f"model {result.model_id}: failure of the GPU or its node within {horizon_h:g} h "
            f"(test {windows['test_start'][:16]} to {windows['test_end'][:16]})",
            _predict_rows(result.metrics),
        )
    )
    console.print(_table("data", [sizes]))
    checked = (
        f"{result.as_of_rows} GPU-hours recomputed from truncated telemetry agree"
        if as_of_checks
        else "skipped"
    )
    console.print(
        f"as-of check: {checked}; recall at precision >= {target_precision:g} on the test "
        f"curve: {result.metrics['model']['recall_at_target_precision']:.3g}",
        highlight=False,
    )


@predict_app.command("score")
def predict_score(
    model_id: Annotated[
        str | None, typer.Option(help="Model to use (default: the latest trained).")
    ] = None,
    at: Annotated[
        str | None,
        typer.Option(help="Prediction time, ISO (UTC; default: the latest hour of telemetry)."),
    ] = None,
    top: Annotated[int, typer.Option(min=1, help="GPUs to print, highest risk first.")] = 20,
    db: DbOption = None,
    as_json: JsonOption = False,
) -> None:
    """Score every GPU at one hour with a stored model, store the scores, print the riskiest."""
    from pipelines import predict as predict_mod
    from pipelines import warehouse

    settings = _settings(db_path=db)
    when = None if at is None else datetime.fromisoformat(at).replace(tzinfo=UTC)
    with warehouse.connect(settings.db_path, lock_timeout_s=settings.lock_timeout_s) as con:
        warehouse.init(con)
        try:
            scores = predict_mod.score(con, model_id=model_id, at=when)
        except ValueError as error:
            err.print(_error("error", "red", error))
            raise typer.Exit(2) from error
    rows = scores.head(top).drop("model_id", "scored_at").to_dicts()
    if as_json:
        _print_json(
            {
                "model_id": scores.get_column("model_id").first() if scores.height else model_id,
                "n_scored": scores.height,
                "n_at_risk": int(scores.get_column("at_risk").sum()) if scores.height else 0,
                "scores": rows,
            }
        )
        return
    n_risk = int(scores.get_column("at_risk").sum()) if scores.height else 0
    for row in rows:
        row["at_risk"] = "yes" if row["at_risk"] else ""
        row["prediction_ts"] = row["prediction_ts"].isoformat(timespec="minutes")
    console.print(_table(f"{n_risk} of {scores.height} GPUs at risk (top {top})", rows))


if __name__ == "__main__":
    app()
