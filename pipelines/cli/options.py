"""What ``relia`` commands share: typed options, settings, the warehouse checks, Prefect defaults.

The options are ``Annotated`` aliases (``db: DbOption = None``), so every command spells
``--db``, ``--json``, ``--format``, ``--tracked`` and the window options the same way.
"""

from __future__ import annotations

import os
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, NoReturn

import typer

from pipelines.cli.render import OutputFormat, err, error_text

if TYPE_CHECKING:
    from pipelines.runtime.settings import Settings

__all__ = [
    "DbOption",
    "FormatOption",
    "JsonOption",
    "TrackedOption",
    "WindowEndOption",
    "WindowStartOption",
    "exit_for",
    "exit_usage",
    "is_tracked",
    "load_settings",
    "prefect_defaults",
    "require_warehouse",
    "set_window",
]

DbOption = Annotated[
    Path | None,
    typer.Option("--db", help="DuckDB warehouse file (default: $RELIA_DB or relia.duckdb)."),
]
JsonOption = Annotated[bool, typer.Option("--json", help="Print results as JSON on stdout.")]
FormatOption = Annotated[
    OutputFormat,
    typer.Option(
        "--format",
        case_sensitive=False,
        help="Print the table, the result as JSON (what --json prints) or the table's rows as CSV.",
    ),
]
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


def set_window(db_path: Path, start: str | None, end: str | None) -> None:
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
        from pipelines.runtime.errors import WarehouseMissingError

        raise WarehouseMissingError(db_path)
    from pipelines import warehouse
    from pipelines.runtime.settings import DEFAULT_LOCK_TIMEOUT_S

    with warehouse.connect(db_path, lock_timeout_s=DEFAULT_LOCK_TIMEOUT_S) as con:
        for name, value in bounds.items():
            warehouse.set_param(con, name, value)


def exit_usage(message: str) -> NoReturn:
    """Print ``error: <message>`` on stderr and exit 2, as for a usage error."""
    from pipelines.runtime.errors import EXIT_USAGE

    err.print(error_text("error", "red", message))
    raise typer.Exit(EXIT_USAGE)


def exit_for(error: Exception, *, label: str = "error") -> NoReturn:
    """Print ``error: <message>`` on stderr and exit with the code of ``error``'s kind.

    The rule of every command (:func:`pipelines.runtime.errors.exit_code_of`): 1 when the
    command failed on the data (a missing or empty warehouse, nothing to fit), 2 for a usage
    error (a value the command cannot use); a failure of no known kind exits 1.
    """
    from pipelines.runtime.errors import EXIT_FAILED, exit_code_of

    err.print(error_text(label, "red", error))
    code = exit_code_of(error)
    raise typer.Exit(EXIT_FAILED if code is None else code) from error


def load_settings(**overrides: Any) -> Settings:
    """``Settings.from_env(**overrides)``; a setting that cannot be used is one line, exit 2."""
    from pipelines.runtime.settings import Settings, SettingsError

    try:
        return Settings.from_env(**overrides)
    except SettingsError as error:
        exit_usage(str(error))


def prefect_defaults() -> None:
    """Keep Prefect local and quiet: no analytics, a project-local home, a patient server start.

    The values are :data:`pipelines.runtime.settings.PREFECT_DEFAULTS`; the user's environment wins.
    """
    from pipelines.runtime.settings import apply_prefect_defaults

    apply_prefect_defaults()


def is_tracked(flag: bool) -> bool:
    """Whether to run as a tracked Prefect flow run: ``--tracked``, or a ``PREFECT_API_URL``."""
    return flag or bool(os.environ.get("PREFECT_API_URL"))


def require_warehouse(
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
    IngestInterruptedError
        When an ingest into it stopped half-way (rerun it).
    """
    from pipelines import warehouse
    from pipelines.runtime.errors import WarehouseEmptyError, WarehouseMissingError

    if not Path(db_path).exists():
        raise WarehouseMissingError(db_path)
    with warehouse.connect(db_path, read_only=True, lock_timeout_s=lock_timeout_s) as con:
        warehouse.check_finished(con, db_path)
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
