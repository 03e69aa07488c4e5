r"""How ``relia`` prints: Rich tables (or record blocks), strict JSON, CSV, one-line errors.

Every command prints through this module, so ``--format table|json|csv`` (``--json`` is
``--format json``) means the same everywhere: the table's rows, as a Rich table on a terminal,
as CSV with a header, or the command's whole result as strict JSON (no ``NaN``/``Infinity``:
they become ``null``, see :func:`pipelines.runtime.jsonsafe.json_ready`).

Whatever the format, the output is terminal-safe: telemetry text passes through
:func:`pipelines.runtime.text.printable` (no escape sequence, no C0/C1 control character, bidi
controls shown as ``<U+202E>``). Table cells and error messages are made inert before Rich lays them
out (:func:`inert`); :data:`console` and :data:`err` pass every other text they print (titles,
markdown, notes) through it too, and CSV fields go through it before the ``csv`` module quotes
them. JSON is ASCII: every non-ASCII character, bidi controls included, is a ``\uXXXX`` escape.
"""

from __future__ import annotations

import csv
import json
import sys
from enum import StrEnum
from typing import TYPE_CHECKING, Any

import typer
from rich.console import Console, Group
from rich.measure import Measurement
from rich.segment import Segment
from rich.table import Table
from rich.text import Text

from pipelines.runtime.jsonsafe import json_ready
from pipelines.runtime.text import printable, printable_values

if TYPE_CHECKING:
    from collections.abc import Iterator

    from rich.console import ConsoleOptions, RenderableType

__all__ = [
    "OutputFormat",
    "SafeConsole",
    "console",
    "err",
    "error_text",
    "inert",
    "output_format",
    "print_csv",
    "print_json",
    "rows_table",
]


class SafeConsole(Console):
    """A Rich console whose printed text all passes :func:`pipelines.runtime.text.printable`.

    Rich's own control segments (cursor moves of a progress bar) and styles are kept; the text
    of every other segment loses escape sequences and control characters (tabs and line breaks
    stay) and shows bidi controls, whatever printed it: a table title, a markdown headline, a
    note built from telemetry.
    """

    def render_str(self, text: str, **kwargs: Any) -> Text:
        """Make ``text`` printable, then turn it into Rich text as Rich does.

        Before Rich: its text drops a bell, which would leave an OSC sequence unterminated.
        """
        return super().render_str(printable(text, lines=True), **kwargs)

    def render(
        self, renderable: RenderableType, options: ConsoleOptions | None = None
    ) -> Iterator[Segment]:
        """Render as Rich does, then make each text segment printable."""
        for segment in super().render(renderable, options):
            if segment.control or not segment.text:
                yield segment
            else:
                yield Segment(printable(segment.text, lines=True), segment.style)


console = SafeConsole()
err = SafeConsole(stderr=True, soft_wrap=True)


class OutputFormat(StrEnum):
    """What a command prints on stdout: a Rich ``table``, strict ``json`` or ``csv``."""

    table = "table"
    json = "json"
    csv = "csv"


def output_format(chosen: OutputFormat, as_json: bool) -> OutputFormat:
    """Return the format a command prints in: ``--format``, or JSON under its alias ``--json``.

    Parameters
    ----------
    chosen
        The ``--format`` value (``table`` unless given).
    as_json
        Whether ``--json`` was given.

    Returns
    -------
    OutputFormat
        ``json`` with ``--json``, else ``chosen``.

    Raises
    ------
    typer.BadParameter
        For ``--json`` with ``--format csv`` (a usage error, exit 2).
    """
    if as_json and chosen is OutputFormat.csv:
        msg = "--json is --format json: give one of --json and --format csv"
        raise typer.BadParameter(msg, param_hint="--format")
    return OutputFormat.json if as_json else chosen


def print_json(payload: Any) -> None:
    """Print ``payload`` as strict JSON (no NaN/Infinity: they become null) on stdout."""
    text = json.dumps(
        json_ready(payload), indent=2, default=str, allow_nan=False, ensure_ascii=True
    )
    sys.stdout.write(text + "\n")


def print_csv(rows: list[dict[str, Any]]) -> None:
    """Print ``rows`` (a table's rows) as CSV with a header line on stdout.

    The columns are the keys of the rows in order of first appearance. The CSV is strict: a
    null, NaN or infinite value is an empty field; a list or mapping is its JSON text. Every
    field is terminal-safe (:func:`pipelines.runtime.text.printable`: no escape sequence or control
    character, line breaks become spaces, bidi controls shown as ``<U+202E>``), so each record
    is one line and the file can be ``cat`` safely; the ``csv`` module quotes what needs it.

    Parameters
    ----------
    rows
        One mapping per row, column name to value, as given to :func:`rows_table`.
    """
    ready: list[dict[str, Any]] = json_ready(rows, str)
    columns = list(dict.fromkeys(name for row in ready for name in row))
    columns = [printable(name) for name in columns]
    writer = csv.DictWriter(sys.stdout, fieldnames=columns, lineterminator="\n", restval="")
    writer.writeheader()
    for row in ready:
        writer.writerow({printable(name): _csv_field(value) for name, value in row.items()})


def _csv_field(value: Any) -> Any:
    if value is None:
        return ""
    if isinstance(value, list | dict):
        return json.dumps(printable_values(value), allow_nan=False)
    if isinstance(value, str):
        return printable(value)
    return value


def rows_table(title: str, rows: list[dict[str, Any]]) -> Table | Group:
    """Return rows as a table.

    Rows as a table; as one ``field  value`` block per row when the table is wider than
    the terminal (nothing is cut to "gp…").
    """
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
    blocks: list[Any] = [Text(printable(title), style="italic")]
    for row in rows:
        block = Table.grid(padding=(0, 2))
        block.add_column(style="bold", no_wrap=True)
        block.add_column(overflow="fold")
        for column, value in row.items():
            block.add_row(column, _fmt(value))
        blocks += [Text(""), block]
    return Group(*blocks)


def inert(text: str, *, lines: bool = False) -> Text:
    """Return telemetry text made safe for the terminal.

    Telemetry text for the terminal: no Rich markup, no escape sequences or C0/C1 control
    characters (``lines``: keep tabs and line breaks); see :func:`pipelines.runtime.text.printable`.
    """
    return Text(printable(text, lines=lines))


def error_text(label: str, style: str, error: object) -> Text:
    """``label: message`` with the message (paths, values from files) kept inert."""
    return Text.assemble((f"{label}:", style), " ", inert(str(error), lines=True))


def _fmt(value: Any) -> Text:
    return inert(_fmt_text(value))


def _fmt_text(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:,.1f}" if abs(value) >= 100 else f"{value:.3g}"
    if isinstance(value, int):
        return f"{value:,}"
    return str(value)
