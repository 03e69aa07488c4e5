"""``relia summary``: the fleet summary (failures, replacements, interruptions, files) as tables."""

from __future__ import annotations

from enum import StrEnum
from typing import TYPE_CHECKING, Annotated, Any

import typer

from pipelines.cli.options import (
    DbOption,
    FormatOption,
    JsonOption,
    WindowEndOption,
    WindowStartOption,
    load_settings,
    require_warehouse,
    set_window,
)
from pipelines.cli.render import (
    OutputFormat,
    console,
    output_format,
    print_csv,
    print_json,
    rows_table,
)
from pipelines.cli.root import app

if TYPE_CHECKING:
    from pathlib import Path

__all__ = ["SummaryTable", "print_summary", "summary"]


class SummaryTable(StrEnum):
    """The tables of the fleet summary, in the order they print (keys of its JSON)."""

    failures_by_class = "failures_by_class"
    replacements_by_class = "replacements_by_class"
    interruptions_by_cause = "interruptions_by_cause"
    files = "files"
    quarantine = "quarantine"


_TITLES = {
    SummaryTable.failures_by_class: (
        "job-stopping failures by component class (every failure, whatever fixed it)"
    ),
    SummaryTable.replacements_by_class: (
        "replacements by component class (replace tickets; replacement AFR %, exact 95 %)"
    ),
    SummaryTable.interruptions_by_cause: "job interruptions by cause",
    SummaryTable.files: "files ingested",
    SummaryTable.quarantine: "quarantined rows",
}


def print_summary(db_path: Path, summary: dict[str, list[dict[str, Any]]]) -> None:
    """Print the fleet summary's tables and where the warehouse is.

    Parameters
    ----------
    db_path
        The warehouse the summary was read from.
    summary
        :func:`pipelines.analysis.summary.fleet_summary`'s rows, one list per table.
    """
    for name, title in _TITLES.items():
        if name is SummaryTable.replacements_by_class and not summary[name.value]:
            from pipelines.analysis.headline import NO_TICKETS

            console.print(f"replacements: {NO_TICKETS[0]}; {NO_TICKETS[1]}", highlight=False)
            continue
        rows = summary[name.value]
        if name is SummaryTable.replacements_by_class:
            rows = [_replacement_cells(r) for r in rows]
        console.print(rows_table(title, rows))
    console.print(
        f"warehouse: [bold]{db_path.resolve()}[/bold] (try: duckdb {db_path})", soft_wrap=True
    )


# a row of the terminal's table: a dict is the edge
def _replacement_cells(row: dict[str, Any]) -> dict[str, Any]:
    """Return a replacements row for the table: the AFR and its bounds in one cell."""
    from pipelines.analysis.headline import span_text

    afr = ("replacement_afr_pct", "replacement_afr_lo_pct", "replacement_afr_hi_pct")
    cells = {k: v for k, v in row.items() if k not in afr}
    return cells | {"replacement_afr_pct": span_text(*(row[k] for k in afr))}


@app.command()
def summary(
    db: DbOption = None,
    as_json: JsonOption = False,
    window_start: WindowStartOption = None,
    window_end: WindowEndOption = None,
    fmt: FormatOption = OutputFormat.table,
    table: Annotated[
        SummaryTable,
        typer.Option("--table", help="The table --format csv writes (one CSV, one table)."),
    ] = SummaryTable.failures_by_class,
) -> None:
    """Print the fleet summary from the warehouse."""
    from pipelines import warehouse
    from pipelines.analysis import summary as summary_mod

    shown = output_format(fmt, as_json)
    settings = load_settings(db_path=db)
    set_window(settings.db_path, window_start, window_end)
    require_warehouse(settings.db_path, "rpt_fleet_summary", lock_timeout_s=settings.lock_timeout_s)
    with warehouse.connect(
        settings.db_path, read_only=True, lock_timeout_s=settings.lock_timeout_s
    ) as con:
        result = summary_mod.fleet_summary(con)
    if shown is OutputFormat.json:
        print_json(result)
    elif shown is OutputFormat.csv:
        print_csv(result[table.value])
    else:
        print_summary(settings.db_path, result)
