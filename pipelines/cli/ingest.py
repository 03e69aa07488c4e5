"""``relia ingest``: parse, validate and load telemetry files; one row per file (or source)."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.table import Table

from pipelines.cli.options import (
    DbOption,
    FormatOption,
    JsonOption,
    TrackedOption,
    exit_for,
    is_tracked,
    load_settings,
    prefect_defaults,
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

__all__ = ["FILE_ROWS", "ingest"]

FILE_ROWS = 40
"""Most files `relia ingest` lists one by one; more are summed per source and outcome."""


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
    job: str | None = None,
    allow_outside_root: bool = False,
    archive_max_bytes: int | None = None,
    archive_max_ratio: float | None = None,
    year: int | None = None,
    boot_time: datetime | None = None,
    warnings: list[str] | None = None,
) -> list[dict[str, Any]]:
    """Ingest ``paths`` into ``db`` directly (no flow run), with a progress bar on stderr.

    ``year`` and ``boot_time`` default to ``RELIA_LOG_YEAR`` and ``RELIA_BOOT_TIME``.
    ``warnings`` receives what the landing holds that is not read (folders not named after a
    source, folders with no file), one line each.

    Returns
    -------
    list of dict
        One :class:`pipelines.warehouse.LoadCounts` per file, as a mapping, plus its ``status``.
    """
    from dataclasses import asdict

    from rich.progress import Progress

    from pipelines import ingest as ingest_mod
    from pipelines import warehouse

    settings = load_settings(
        db_path=db,
        lake_dir=lake,
        archive_max_bytes=archive_max_bytes,
        archive_max_ratio=archive_max_ratio,
        log_year=year,
        boot_time=boot_time,
    )
    files = ingest_mod.discover(
        paths,
        source=source,
        path_patterns=settings.path_patterns,
        allow_outside_root=allow_outside_root or settings.allow_outside_root,
        max_depth=settings.landing_max_depth,
        warnings=warnings,
    )
    options = ingest_mod.identity_options(
        files,
        host=host,
        run=run,
        time_from_mtime=time_from_mtime,
        job=job,
        year=settings.log_year,
        boot_time=settings.boot_time,
    )
    if mapping is not None:
        from pipelines.ingest.sources.fault_log import load_mapping

        options.setdefault("fault_log", {})["mapping"] = load_mapping(mapping)
    ingest_mod.check_parser_options(files, options)  # before the warehouse is made
    with (
        Progress(console=err, transient=True, disable=quiet) as progress,
        warehouse.connect(settings.db_path, lock_timeout_s=settings.lock_timeout_s) as con,
    ):
        bar = progress.add_task("ingesting", total=len(files))
        counts = ingest_mod.ingest_into(
            con,
            files,
            batch_rows=settings.ingest_batch_rows,
            parser_options=options,
            on_file=lambda _c: progress.advance(bar),
            lake_dir=settings.lake_dir,
            force=force,
            hold_quiet_s=ingest_mod.HOLD_QUIET_S if hold_quiet_s is None else hold_quiet_s,
            archive_limits=settings.archive_limits,
            max_line_bytes=settings.max_line_bytes,
        )
    return [asdict(c) | {"status": c.outcome} for c in counts]


def _boot_time(text: str | None) -> datetime | None:
    """Return ``--boot-time`` in UTC (None when not given); a ``ValueError`` names the option."""
    from pipelines.runtime.settings import parse_utc_time

    return None if text is None else parse_utc_time(text, "--boot-time")


def _warn_refused(counts: list[dict[str, Any]]) -> None:
    """Print one warning line on stderr per file the landing fence refused (never opened)."""
    from pipelines.ingest import REFUSED

    for c in counts:
        status = str(c.get("status") or "")
        if status.startswith(REFUSED):
            reason = status.removeprefix(REFUSED)
            err.print(error_text("warning", "yellow", f"refused {c['path']}: {reason}"))


PathsArgument = Annotated[
    list[Path], typer.Argument(help="Landing folder, source folders or files.")
]
SourceOption = Annotated[
    str | None, typer.Option(help="Source of the files when their folder does not say.")
]
MappingOption = Annotated[
    Path | None,
    typer.Option(help="Column mapping (YAML) for --source fault_log (data_samples/mappings)."),
]
LakeOption = Annotated[
    Path | None,
    typer.Option(
        help="Write raw rows as Parquet under this folder (lake/source=.../date=.../), "
        "read by the warehouse's views (default: $RELIA_LAKE; unset: raw tables)."
    ),
]
ForceOption = Annotated[
    bool,
    typer.Option(
        "--force",
        help="Re-ingest the named files, replacing in one transaction whatever they loaded "
        "before under any source (a file ingested with the wrong --source).",
    ),
]
HostOption = Annotated[
    str | None,
    typer.Option(
        help="Host of files whose lines do not name it (dmesg, torchrun, scrapes); wins over "
        "a path pattern ($RELIA_PATH_PATTERNS)."
    ),
]
RunOption = Annotated[
    str | None, typer.Option(help="Run (rendezvous) id of torchrun logs that do not print it.")
]
JobOption = Annotated[
    str | None,
    typer.Option(
        help="Slurm job id of training logs (1234, 1234_5) not named slurm-<id>.out; wins "
        "over a path pattern's {job}. Not with --tracked."
    ),
]
TimeFromMtimeOption = Annotated[
    bool,
    typer.Option(
        "--time-from-mtime",
        help="Take a DCGM scrape's modification time as the time of its samples that carry "
        "none (when the file name gives none either).",
    ),
]
YearOption = Annotated[
    int | None,
    typer.Option(
        min=1970,
        max=9999,
        help="Year kernel syslog and torchrun glog lines (which print none) end in; a line "
        "dated after the log's last line falls in the year before "
        "(default: $RELIA_LOG_YEAR, else a kernel log's own full dates of one year, else the "
        "file's modification time, with a warning).",
    ),
]
BootTimeOption = Annotated[
    str | None,
    typer.Option(
        help="When the node booted, ISO 8601 UTC (2024-01-10T08:00:00Z): dmesg lines stamped "
        "in seconds since boot ([12345.678901]) take it plus those seconds "
        "(default: $RELIA_BOOT_TIME; without it they are rejects).",
    ),
]
HoldQuietOption = Annotated[
    float | None,
    typer.Option(
        help="Seconds a live log must be quiet before its last line without a newline is "
        "read as a line, and a compressed file that ends early is quarantined (default 300)."
    ),
]
ArchiveMaxBytesOption = Annotated[
    int | None,
    typer.Option(
        min=1,
        help="Most plain bytes one compressed file may inflate to; past it the file is one "
        "quarantine row (default: $RELIA_ARCHIVE_MAX_BYTES, else 4 GiB).",
    ),
]
ArchiveMaxRatioOption = Annotated[
    float | None,
    typer.Option(
        min=1,
        help="Most plain bytes per compressed byte of a compressed file once past "
        "$RELIA_ARCHIVE_RATIO_AFTER_BYTES (64 MiB); past it the file is one quarantine row "
        "(default: $RELIA_ARCHIVE_MAX_RATIO, else 200).",
    ),
]
GpusPerNodeOption = Annotated[
    int | None,
    typer.Option(
        min=1,
        help="GPUs in each node whose GPUs no nvidia-smi snapshot or DCGM sample lists "
        "(kernel logs alone, a sacct export): sets cfg_params.gpus_per_node, so their GPUs "
        "are units at risk and their GPU failures count in the lives.",
    ),
]
VerboseOption = Annotated[
    bool,
    typer.Option(
        "--verbose",
        help=f"One row per file even when more than {FILE_ROWS} files were read "
        "(default: then one row per source and outcome).",
    ),
]
AllowOutsideRootOption = Annotated[
    bool,
    typer.Option(
        "--allow-outside-root",
        help="Read files that resolve outside their landing root (links to files elsewhere); "
        "by default they are refused, never opened, and named on stderr "
        "(default: $RELIA_ALLOW_OUTSIDE_ROOT).",
    ),
]


def _warn_time_assumptions(counts: list[dict[str, Any]]) -> None:
    """Print on stderr what files' times rest on that their lines do not print.

    One line per file (the year of syslog and glog lines from the file's modification time),
    or, past :data:`FILE_ROWS` such files, one line per source and assumption with a count.
    """
    assumed = [c for c in counts if c.get("time_assumption")]
    if len(assumed) <= FILE_ROWS:
        for c in assumed:
            err.print(error_text("warning", "yellow", f"{c['path']}: {c['time_assumption']}"))
        return
    groups: dict[tuple[str, str], int] = {}
    for c in assumed:
        key = (str(c["source"]), str(c["time_assumption"]))
        groups[key] = groups.get(key, 0) + 1
    for (source, text), n in sorted(groups.items()):
        err.print(error_text("warning", "yellow", f"{n} {source} files: {text}"))


@app.command()
def ingest(
    paths: PathsArgument,
    source: SourceOption = None,
    mapping: MappingOption = None,
    lake: LakeOption = None,
    force: ForceOption = False,
    host: HostOption = None,
    run: RunOption = None,
    job: JobOption = None,
    time_from_mtime: TimeFromMtimeOption = False,
    year: YearOption = None,
    boot_time: BootTimeOption = None,
    hold_quiet_s: HoldQuietOption = None,
    archive_max_bytes: ArchiveMaxBytesOption = None,
    archive_max_ratio: ArchiveMaxRatioOption = None,
    gpus_per_node: GpusPerNodeOption = None,
    verbose: VerboseOption = False,
    allow_outside_root: AllowOutsideRootOption = False,
    db: DbOption = None,
    tracked: TrackedOption = False,
    as_json: JsonOption = False,
    fmt: FormatOption = OutputFormat.table,
) -> None:
    """Parse, validate and load telemetry files; print loaded / quarantined / held per file.

    Kernel logs are read as streams: only new complete lines, across rotation and compression.
    A file outside its landing root, a link loop, a link to a folder, a named pipe, a socket or a
    device is refused (never opened): a row with its reason and a warning on stderr; the other
    files load and the exit code is 0.
    """
    shown = output_format(fmt, as_json)
    settings = load_settings(db_path=db, lake_dir=lake)
    landing_warnings: list[str] = []
    since = datetime.now(UTC)
    try:
        if is_tracked(tracked):
            _check_tracked(
                job=job,
                archive_limits=(archive_max_bytes, archive_max_ratio),
                times=(year, boot_time),
            )
            prefect_defaults()
            from pipelines.flows.ingest_telemetry import ingest_paths_flow

            counts = ingest_paths_flow(
                paths=paths,
                source=source,
                mapping=mapping,
                db_path=settings.db_path,
                lake_dir=settings.lake_dir,
                force=force,
                host=host,
                run=run,
                time_from_mtime=time_from_mtime,
                allow_outside_root=allow_outside_root or None,
            )
        else:
            counts = _run_ingest(
                settings.db_path,
                paths,
                source,
                mapping=mapping,
                lake=settings.lake_dir,
                quiet=shown is not OutputFormat.table,
                force=force,
                host=host,
                run=run,
                time_from_mtime=time_from_mtime,
                hold_quiet_s=hold_quiet_s,
                job=job,
                allow_outside_root=allow_outside_root,
                archive_max_bytes=archive_max_bytes,
                archive_max_ratio=archive_max_ratio,
                year=year,
                boot_time=_boot_time(boot_time),
                warnings=landing_warnings,
            )
    except ValueError as error:  # a value it cannot use: 2; a warehouse's lack (ReliaError): 1
        exit_for(error)
    for line in landing_warnings:
        err.print(error_text("warning", "yellow", line))
    _warn_refused(counts)
    _warn_time_assumptions(counts)
    if gpus_per_node is not None:
        from pipelines import warehouse

        with warehouse.connect(settings.db_path, lock_timeout_s=settings.lock_timeout_s) as con:
            warehouse.set_param(con, "gpus_per_node", gpus_per_node)
    if shown is OutputFormat.json:
        print_json(counts)
        return
    _print_counts(counts, db_path=settings.db_path, csv=shown is OutputFormat.csv, verbose=verbose)
    if shown is OutputFormat.table and any(c["n_quarantined"] for c in counts):
        _print_quarantine_kinds(settings.db_path, since, lock_timeout_s=settings.lock_timeout_s)


QUARANTINE_KINDS = 5
"""Most quarantine reasons (kinds) `relia ingest` prints after its counts."""


def _print_quarantine_kinds(db_path: Path, since: datetime, *, lock_timeout_s: float) -> None:
    """Print the reasons (kinds) this ingest quarantined lines for, most lines first."""
    from pipelines import ingest as ingest_mod
    from pipelines import warehouse

    with warehouse.connect(db_path, read_only=True, lock_timeout_s=lock_timeout_s) as con:
        kinds = ingest_mod.quarantine_kinds(con, since)
    if not kinds:
        return
    console.print("quarantined lines by reason (values in raw_quarantine.reason_value):")
    width = len(f"{kinds[0][2]:,}")
    for stage, reason, n in kinds[:QUARANTINE_KINDS]:
        console.print(
            f"  {n:>{width},}  {stage}: {reason}", markup=False, highlight=False, soft_wrap=True
        )
    if len(kinds) > QUARANTINE_KINDS:
        rest = len(kinds) - QUARANTINE_KINDS
        n_rows = sum(n for _, _, n in kinds[QUARANTINE_KINDS:])
        console.print(
            f"  … {rest} more kinds ({n_rows:,} lines): see rpt_quarantine_reasons",
            markup=False,
            highlight=False,
            soft_wrap=True,
        )


def _check_tracked(
    *,
    job: str | None,
    archive_limits: tuple[int | None, float | None],
    times: tuple[int | None, str | None],
) -> None:
    """Refuse the options a tracked ingest does not pass on (a ``ValueError``, exit 2)."""
    if job is not None:
        msg = "--job is not passed to tracked runs yet; ingest these files without --tracked"
        raise ValueError(msg)
    if archive_limits != (None, None):
        msg = (
            "--archive-max-bytes/--archive-max-ratio are not passed to tracked runs: set "
            "RELIA_ARCHIVE_MAX_BYTES / RELIA_ARCHIVE_MAX_RATIO for the flow instead"
        )
        raise ValueError(msg)
    if times != (None, None):
        msg = (
            "--year/--boot-time are not passed to tracked runs: set RELIA_LOG_YEAR / "
            "RELIA_BOOT_TIME for the flow instead"
        )
        raise ValueError(msg)


def _print_counts(counts: list[dict[str, Any]], *, db_path: Path, csv: bool, verbose: bool) -> None:
    """Print one row per file (CSV or a table), or per source and outcome past FILE_ROWS files."""
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
        if csv:
            print_csv(rows)
        else:
            console.print(rows_table(f"ingest into {db_path}", rows))
        return
    from pipelines.analysis.summary import outcomes_by_source

    summed = outcomes_by_source(rows)
    if csv:
        print_csv(summed)
        return
    summary = Table(
        title=f"ingest into {db_path}: {len(rows):,} files by source and outcome "
        "(--verbose lists every file)",
        title_justify="left",
        box=None,
        padding=(0, 1),
    )
    for name in summed[0]:
        summary.add_column(name, justify="left" if name in ("source", "status") else "right")
    for r in summed:
        summary.add_row(*[v if isinstance(v, str) else f"{v:,}" for v in r.values()])
    console.print(summary)
