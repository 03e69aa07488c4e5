"""The root ``relia`` app: its group (one line per expected error), ``--debug`` and ``--version``.

Command modules register on :data:`app` (``@app.command()`` or ``app.add_typer``), as
Prefect's CLI modules register on ``prefect.cli.root.app``. They are imported lazily: the group
knows every command's module and help line from :data:`COMMANDS` and imports a module only when
one of its commands runs (or shows its own help), so ``relia project`` does not pay for
``relia ingest``'s imports and ``relia --help`` imports no command module at all. Shell
completion (``relia --install-completion`` / ``--show-completion``) is Typer's.
"""

from __future__ import annotations

import importlib
import os
from typing import TYPE_CHECKING, Annotated, Any

import typer
import typer.main
from typer.core import TyperCommand, TyperGroup

from pipelines.cli.render import console, err, error_text
from pipelines.runtime.errors import ReliaError, exit_code_of

if TYPE_CHECKING:
    # Typer 0.29 vendors click; its commands take the vendored Context (typer.Context subclasses it)
    from typer._click.core import Context
    from typer._click.formatting import HelpFormatter


__all__ = ["COMMANDS", "app"]

COMMANDS: dict[str, tuple[str, str]] = {
    "synth": (
        "synth",
        "Simulate a fleet with known lifetimes and write real-format telemetry plus ground truth.",
    ),
    "ingest": (
        "ingest",
        "Parse, validate and load telemetry files; print loaded / quarantined / held per file.",
    ),
    "summary": ("summary", "Print the fleet summary from the warehouse."),
    "goodput": (
        "goodput",
        "Print measured goodput (fleet roll-up, per job) and the back-test of the projection.",
    ),
    "fit": (
        "fit",
        "Fit each class (and cohort): interruption rates first, then lifetimes; store the run.",
    ),
    "trend": (
        "fit",
        "Repairable-system view: Crow-AMSAA and Laplace verdicts, lemon nodes, repeat offenders.",
    ),
    "project": (
        "project",
        "Project MTTI, checkpoint intervals, ETTR and goodput for a job at a given scale.",
    ),
    "whatif": (
        "project",
        "Run a what-if grid; write Parquet/CSV and plots; name the knob that buys most goodput.",
    ),
    "report": (
        "report",
        "Write the weekly reliability report (self-contained HTML) and print its headline.",
    ),
    "demo": ("demo", "Run the whole pipeline end to end on a synthetic fleet."),
    "predict": (
        "predict",
        "Failure prediction: train on earlier telemetry, test on later, score GPUs at risk.",
    ),
}
"""Every ``relia`` command, in the order ``relia --help`` lists them: the module under
``pipelines.cli`` that registers it, and the first paragraph of its help (what ``--help``
shows; ``tests/pipelines/test_cli_imports.py`` checks it against the command's own)."""


def _expected_exit_code(error: BaseException) -> int | None:
    """Return the exit code of an expected failure (one line, no traceback), or None for a bug.

    :func:`pipelines.runtime.errors.exit_code_of`: 1 when the command failed on the data (a
    missing or empty warehouse, nothing to fit, an input file that does not exist), 2 for a
    usage error (a ``ValueError`` from validating what the user gave, a file that is not YAML).
    """
    return exit_code_of(error)


def _expected_message(error: BaseException) -> str:
    missing = error if isinstance(error, FileNotFoundError) else None
    if missing is not None and missing.filename is not None and not isinstance(error, ReliaError):
        return f"no such file: {missing.filename}"
    return " ".join(str(error).split()) or type(error).__name__


def _debug(ctx: Context) -> bool:
    env = os.environ.get("RELIA_DEBUG", "").strip().lower()
    return bool(ctx.meta.get("relia.debug")) or env not in ("", "0", "false", "no")


class _Pending(TyperCommand):
    """A command whose module is not imported yet: its name and help line, for ``relia --help``."""


class _ReliaGroup(TyperGroup):
    """The ``relia`` group: the one place that turns expected failures into one line.

    An expected failure (:func:`_expected_exit_code`) prints ``error: <message>`` on stderr and
    exits 1 (2 for bad values), without a traceback unless ``--debug`` or ``RELIA_DEBUG=1``;
    anything else is a bug and keeps its traceback.

    Commands of :data:`COMMANDS` whose module is not imported yet stand as :class:`_Pending`
    entries (name and help line); looking one up imports its module, except while the group
    prints its own help.
    """

    def __init__(self, **attrs: Any) -> None:
        super().__init__(**attrs)
        loaded = dict(self.commands)
        pending = {
            name: loaded.pop(name) if name in loaded else _Pending(name=name, help=help_line)
            for name, (_, help_line) in COMMANDS.items()
        }
        self.commands = pending | loaded
        self.listing = False

    def get_command(self, ctx: Context, cmd_name: str) -> Any:
        """Return the command ``cmd_name``, importing its module on first use."""
        command = self.commands.get(cmd_name)
        if isinstance(command, _Pending) and not self.listing:
            importlib.import_module(f"pipelines.cli.{COMMANDS[cmd_name][0]}")
            command = typer.main.get_group(app).commands[cmd_name]
            self.commands[cmd_name] = command
        return command

    def format_help(self, ctx: Context, formatter: HelpFormatter) -> None:
        """Print the group's help from the help lines, without importing any command."""
        self.listing = True
        try:
            super().format_help(ctx, formatter)
        finally:
            self.listing = False

    def invoke(self, ctx: Context) -> Any:
        """Run the command; a wait for the warehouse's lock shows as a spinner on stderr."""
        from pipelines.runtime.lock_wait import busy_spinner, reporting_waits

        try:
            with busy_spinner(err) as on_wait, reporting_waits(on_wait):
                return super().invoke(ctx)
        except Exception as error:
            code = _expected_exit_code(error)
            if code is None or _debug(ctx):
                raise
            err.print(error_text("error", "red", _expected_message(error)))
            raise typer.Exit(code) from error


EXIT_CODES = (
    "Exit codes: 0 success; 1 the command failed on the data (no or an empty warehouse, "
    "nothing to fit, a missing or damaged input); 2 usage (an unknown option or value)."
)
"""The exit-code rule of every command, as ``relia --help`` ends with it."""

app = typer.Typer(
    name="relia",
    cls=_ReliaGroup,
    epilog=EXIT_CODES,
    help="Reliability analytics for GPU clusters: ingest telemetry, fit MTBF, project goodput.",
    no_args_is_help=True,
    add_completion=True,
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
    from pipelines.runtime.text import install_log_sanitiser

    install_log_sanitiser()  # log lines built from telemetry reach stderr printable
    ctx.meta["relia.debug"] = debug
