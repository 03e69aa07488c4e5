"""The root ``relia`` app: its group (one line per expected error), ``--debug`` and ``--version``.

Command modules register on :data:`app` (``@app.command()`` or ``app.add_typer``), as
Prefect's CLI modules register on ``prefect.cli.root.app``; :mod:`pipelines.cli` imports
them all. Shell completion (``relia --install-completion`` / ``--show-completion``) is Typer's.
"""

from __future__ import annotations

import os
import sys
from typing import TYPE_CHECKING, Annotated, Any

import typer
from typer.core import TyperGroup

from pipelines.cli.render import console, err, error_text
from pipelines.errors import ReliaError

if TYPE_CHECKING:
    # Typer 0.29 vendors click; its commands take the vendored Context (typer.Context subclasses it)
    from typer._click.core import Context

__all__ = ["app"]


def _expected_exit_code(error: BaseException) -> int | None:
    """Return the exit code of an expected failure (one line, no traceback), or None for a bug.

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


def _debug(ctx: Context) -> bool:
    env = os.environ.get("RELIA_DEBUG", "").strip().lower()
    return bool(ctx.meta.get("relia.debug")) or env not in ("", "0", "false", "no")


class _ReliaGroup(TyperGroup):
    """The ``relia`` group: the one place that turns expected failures into one line.

    An expected failure (:func:`_expected_exit_code`) prints ``error: <message>`` on stderr and
    exits 1 (2 for bad values), without a traceback unless ``--debug`` or ``RELIA_DEBUG=1``;
    anything else is a bug and keeps its traceback.
    """

    def invoke(self, ctx: Context) -> Any:
        """Run the command; a wait for the warehouse's lock shows as a spinner on stderr."""
        from pipelines.lock_wait import busy_spinner, reporting_waits

        try:
            with busy_spinner(err) as on_wait, reporting_waits(on_wait):
                return super().invoke(ctx)
        except Exception as error:
            code = _expected_exit_code(error)
            if code is None or _debug(ctx):
                raise
            err.print(error_text("error", "red", _expected_message(error)))
            raise typer.Exit(code) from error


app = typer.Typer(
    name="relia",
    cls=_ReliaGroup,
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
    ctx.meta["relia.debug"] = debug
