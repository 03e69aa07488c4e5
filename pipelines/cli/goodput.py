"""``relia goodput``: measured goodput per job and fleet, and the projection's back-test.

The tables are the fleet roll-up (``rpt_fleet_goodput``: goodput weighted by GPU-hours and by
job count side by side, with the measured and estimated job counts; then where the GPU-hours
went, per category) and the back-test (``rpt_projection_backtest``, and per component class
``rpt_projection_backtest_classes``). ``--json`` prints ``jobs``, ``fleet``, ``backtest`` and
``backtest_classes``, and ``slow_missing`` (why the roll-up has no fail-slow figure, or null);
``--format csv --table NAME`` one of them. Fail-slow stands beside fail-stop: the roll-up's
badput split by cause with how many jobs had their slow time measured, and each job's
``slow_s`` in ``jobs``. The rows and their order are
:mod:`pipelines.analysis.goodput_summary`'s.
"""

from __future__ import annotations

import csv
import math
import sys
from enum import StrEnum
from typing import TYPE_CHECKING, Annotated, Any

import typer

from pipelines.cli.options import (
    DbOption,
    FormatOption,
    JsonOption,
    load_settings,
    require_warehouse,
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
    from collections.abc import Callable
    from pathlib import Path

    import duckdb

__all__ = ["GoodputTable", "cause_display", "fleet_display", "goodput", "print_goodput"]


class GoodputTable(StrEnum):
    """The tables of ``relia goodput``'s result (keys of its JSON)."""

    jobs = "jobs"
    fleet = "fleet"
    backtest = "backtest"
    backtest_classes = "backtest_classes"
    logs = "logs"


_SHARES = ("productive", "checkpoint", "wasted", "restart", "startup", "other")


def _missing(value: Any) -> bool:
    return value is None or (isinstance(value, float) and not math.isfinite(value))


def _pct(value: Any) -> str:
    """``0.7123`` -> ``71.2 %``; ``-`` for a missing or non-finite value."""
    return "-" if _missing(value) else f"{100.0 * float(value):.1f} %"


def _pct2(value: Any) -> str:
    """``0.96234`` -> ``96.23 %`` (the back-test's intervals are often a tenth of a point)."""
    return "-" if _missing(value) else f"{100.0 * float(value):.2f} %"


def _num(value: Any) -> str:
    """``1234.5`` -> ``1,234``; ``-`` for a missing or non-finite value."""
    return "-" if _missing(value) else f"{float(value):,.0f}"


def _sig(value: Any) -> str:
    """Three significant digits (``0.912``, ``12.4``); ``-`` when missing or non-finite."""
    return "-" if _missing(value) else f"{float(value):.3g}"


def _interval(lo: Any, hi: Any, fmt: Callable[[Any], str]) -> str:
    """``lo to hi``; an open bound (null or infinite) is ``> lo`` or ``< hi``."""
    if _missing(lo) and _missing(hi):
        return "-"
    if _missing(hi):
        return f"> {fmt(lo)}"
    if _missing(lo):
        return f"< {fmt(hi)}"
    return f"{fmt(lo)} to {fmt(hi)}"


def fleet_display(rows: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Return the fleet roll-up as two printable tables: goodput by weighting, and shares.

    Parameters
    ----------
    rows
        :func:`pipelines.analysis.goodput_summary.fleet_rows`.

    Returns
    -------
    tuple of list of dict
        Goodput per dimension value (jobs, GPU-hours, GPU-hour and job weighted goodput side by
        side, measured and estimated job counts), and each category's share of the GPU-hours.
    """
    goodput = [
        {
            "dimension": r["dimension"],
            "value": r["value"],
            "jobs": r["n_jobs"],
            "GPU-hours": _num(r["gpu_hours"]),
            "goodput (GPU-h weighted)": _pct(r["goodput_gpu_hours"]),
            "goodput (job weighted)": _pct(r["goodput_jobs"]),
            "measured": r["n_measured"],
            "estimated": r["n_estimated"],
        }
        for r in rows
    ]
    shares = [
        {"dimension": r["dimension"], "value": r["value"]}
        | {name: _pct(r[f"{name}_share"]) for name in _SHARES}
        for r in rows
    ]
    return goodput, shares


def cause_display(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Return the roll-up's badput split by cause, fail-stop beside fail-slow, as a table.

    Parameters
    ----------
    rows
        :func:`pipelines.analysis.goodput_summary.fleet_rows` with the fail-slow columns
        (:data:`~pipelines.analysis.goodput_summary.SLOW_COLUMNS`).

    Returns
    -------
    list of dict
        Per dimension value: fail-stop and fail-slow as shares of the GPU-hours and as the mean
        of the jobs' own shares, the slow share of all GPU-hours, and the coverage (jobs whose
        slow time is measured, of all; jobs with any). A value with no slow-measured job shows
        ``-`` for fail-slow, never a 0 %.
    """
    table = []
    for r in rows:
        measured = bool(r["n_slow_measured"])
        table.append(
            {
                "dimension": r["dimension"],
                "value": r["value"],
                "fail-stop (GPU-h)": _pct(r["failstop_share"]),
                "fail-slow (GPU-h)": _pct(r["failslow_share"] if measured else None),
                "fail-stop (job mean)": _pct(r["failstop_share_jobs"]),
                "fail-slow (job mean)": _pct(r["failslow_share_jobs"] if measured else None),
                "slow share": _pct(r["slow_share"] if measured else None),
                "slow-measured": f"{int(r['n_slow_measured']):,} of {int(r['n_jobs']):,}",
                "slow jobs": r["n_slow_jobs"] if measured else "-",
            }
        )
    return table


def _print_causes(result: dict[str, Any]) -> None:
    """Print fail-stop beside fail-slow, or the one line saying why fail-slow is missing."""
    fleet = result["fleet"]
    if fleet and "n_slow_measured" in fleet[0]:
        title = (
            "badput by cause: fail-stop (wasted + restart, all jobs) and fail-slow (slow_s, "
            "slow-measured jobs only)"
        )
        console.print(rows_table(title, cause_display(fleet)))
    if result.get("slow_missing"):
        console.print(
            f"fail-slow: not measured: {result['slow_missing']}", highlight=False, soft_wrap=True
        )


def _backtest_display(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    from pipelines.analysis.goodput_summary import nothing_expected, oe_verdict

    return [
        {
            "bucket": r["bucket"],
            "period": r["period"],
            "jobs": r["n_jobs"],
            "observed": r["interruptions_observed"],
            "expected": _sig(r["interruptions_expected"]),
            "O/E": _sig(r["oe_ratio"]),
            "O/E 95 %": _interval(r["oe_lo"], r["oe_hi"], _sig),
            "verdict": oe_verdict(r),
            "goodput measured": _pct2(r["goodput_measured"]),
            "predicted": _pct2(r["goodput_predicted"]),
            "predicted 95 %": "nothing expected"
            if nothing_expected(r)
            else _interval(r["goodput_predicted_lo"], r["goodput_predicted_hi"], _pct2),
        }
        for r in rows
    ]


def _backtest_class_display(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    from pipelines.analysis.goodput_summary import oe_verdict

    return [
        {
            "class": r["component_class"],
            "bucket": r["bucket"],
            "jobs": r["n_jobs"],
            "observed": r["interruptions_observed"],
            "expected": _sig(r["interruptions_expected"]),
            "O/E": _sig(r["oe_ratio"]),
            "O/E 95 %": _interval(r["oe_lo"], r["oe_hi"], _sig),
            "verdict": oe_verdict(r),
        }
        for r in rows
    ]


def print_goodput(db_path: Path, result: dict[str, Any], *, min_gpus: int) -> None:
    """Print the fleet roll-up and the back-test as tables, and what the job list holds.

    Parameters
    ----------
    db_path
        The warehouse the rows were read from.
    result
        :func:`pipelines.analysis.goodput_summary.goodput_summary`'s rows, and ``backtest_missing``
        (why the back-test could not run now, or None).
    min_gpus
        The ``--min-gpus`` the job list was filtered with.
    """
    if result["fleet"]:
        goodput, shares = fleet_display(result["fleet"])
        console.print(rows_table("realised goodput (fct_job_goodput, rpt_fleet_goodput)", goodput))
        console.print(rows_table("where the GPU-hours went (share of GPU-hours)", shares))
        _print_causes(result)
    else:
        console.print(
            "no realised goodput yet: no training logs and no finished job in the ledger "
            "(fct_job_goodput)",
            highlight=False,
        )
    if result["backtest"]:
        console.print(
            rows_table(
                "back-test of the projection (rpt_projection_backtest)",
                _backtest_display(result["backtest"]),
            )
        )
        by_class = [r for r in result.get("backtest_classes", []) if r["bucket"] == "all"]
        if by_class:
            console.print(
                rows_table(
                    "back-test per component class, all jobs (rpt_projection_backtest_classes; "
                    "per GPU bucket: --format csv --table backtest_classes)",
                    _backtest_class_display(by_class),
                )
            )
    elif result.get("backtest_missing"):
        console.print(
            f"back-test: not run: {result['backtest_missing']}", highlight=False, soft_wrap=True
        )
    else:
        console.print("back-test: not run yet (rpt_projection_backtest has no rows)")
    _print_ties(result.get("logs", []))
    n_estimated = sum(1 for job in result["jobs"] if job.get("estimated"))
    sized = f" with at least {min_gpus:,} GPUs" if min_gpus > 1 else ""
    console.print(
        f"{len(result['jobs']):,} ledger jobs{sized}, {n_estimated:,} estimated from the "
        "scheduler alone (no training log); list them with --format csv --table jobs",
        highlight=False,
    )
    console.print(
        f"warehouse: [bold]{db_path.resolve()}[/bold] (try: duckdb {db_path})", soft_wrap=True
    )


def _print_ties(logs: list[dict[str, Any]], shown: int = 20) -> None:
    """Print how the training logs were tied to jobs, and the logs that were not."""
    if not logs:
        return
    counts = {tie: 0 for tie in ("job_id", "host_time", "ambiguous", "none")}
    for log in logs:
        counts[str(log["tie"])] = counts.get(str(log["tie"]), 0) + 1
    console.print(
        f"training logs: {len(logs):,}; tied by job id {counts['job_id']:,}, by host and time "
        f"{counts['host_time']:,}; ambiguous {counts['ambiguous']:,} and untied "
        f"{counts['none']:,} (not used)",
        highlight=False,
        soft_wrap=True,  # one line whatever the terminal's width, as the logs listed below it
    )
    unresolved = [log for log in logs if log["tie"] in ("ambiguous", "none")]
    for log in unresolved[:shown]:
        candidates = ", ".join(log.get("candidates") or []) or "no job on its host then"
        # one line per log whatever the terminal's width: the path stays whole, to copy or grep
        console.print(
            f"  {log['tie']}: {log['source_file']} ({candidates})",
            highlight=False,
            soft_wrap=True,
        )
    if len(unresolved) > shown:
        console.print(f"  ... and {len(unresolved) - shown:,} more: --format csv --table logs")


def _columns(con: duckdb.DuckDBPyConnection, table: GoodputTable) -> list[str]:
    """Return the columns of ``table`` (``fct_job_goodput``'s own for ``jobs``)."""
    from pipelines.analysis import goodput_summary as summary_mod

    if table is GoodputTable.fleet:
        return summary_mod.fleet_columns(con)
    if table is GoodputTable.backtest:
        return [*summary_mod.BACKTEST_COLUMNS, "verdict"]
    if table is GoodputTable.backtest_classes:
        return [*summary_mod.BACKTEST_CLASS_COLUMNS, "verdict"]
    if table is GoodputTable.logs:
        return list(summary_mod.LOG_COLUMNS)
    return summary_mod.job_columns(con)


def _print_header(columns: list[str]) -> None:
    writer = csv.writer(sys.stdout, lineterminator="\n")
    writer.writerow(columns)


@app.command()
def goodput(
    min_gpus: Annotated[
        int,
        typer.Option(
            "--min-gpus",
            min=0,
            help="Back-test and list only jobs with at least this many GPUs.",
        ),
    ] = 0,
    db: DbOption = None,
    as_json: JsonOption = False,
    fmt: FormatOption = OutputFormat.table,
    table: Annotated[
        GoodputTable,
        typer.Option("--table", help="The table --format csv writes (one CSV, one table)."),
    ] = GoodputTable.fleet,
    stored: Annotated[
        bool,
        typer.Option(
            "--stored",
            help="Show the stored back-test run as it is instead of back-testing the "
            "jobs of at least --min-gpus GPUs again (read-only).",
        ),
    ] = False,
) -> None:
    """Print measured goodput (fleet roll-up, per job) and the back-test of the projection.

    The back-test is run first on the jobs of at least ``--min-gpus`` GPUs (with the fits as of
    each job's start, stored as a new run in ``backtest_runs``), unless ``--stored``. A warehouse
    without unit lives or without such jobs has no back-test: the roll-up is printed and the
    back-test says what is missing (``backtest_missing`` in the JSON), exit 0.
    """
    from pipelines import warehouse
    from pipelines.analysis import goodput_summary as summary_mod
    from pipelines.runtime.errors import WarehouseEmptyError

    shown = output_format(fmt, as_json)
    settings = load_settings(db_path=db)
    db_path = settings.db_path
    require_warehouse(db_path, "rpt_observation_window", lock_timeout_s=settings.lock_timeout_s)
    with warehouse.connect(db_path, read_only=True, lock_timeout_s=settings.lock_timeout_s) as con:
        missing = summary_mod.missing_goodput_views(con)
    if missing:
        msg = (
            f"{db_path} has no {', '.join(missing)}: the warehouse predates the goodput views; "
            f"run `relia ingest LANDING --db {db_path}` to create them"
        )
        raise WarehouseEmptyError(msg)
    lack: str | None = None
    if not stored:
        from pipelines.analysis.backtest import run_backtest
        from pipelines.runtime.errors import MissingDataError

        with warehouse.connect(db_path, lock_timeout_s=settings.lock_timeout_s) as con:
            warehouse.apply_schema(con)
            # a warehouse ingested by an older relia lacks the newer views (the per-class back-test)
            warehouse.create_views(con, only_if_changed=True)
            warehouse.materialize(con)
            try:
                run_backtest(con, min_gpus=max(min_gpus, 1))
            except MissingDataError as error:  # the roll-up is still worth printing
                lack = str(error)
    header: list[str] = []
    with warehouse.connect(db_path, read_only=True, lock_timeout_s=settings.lock_timeout_s) as con:
        result: dict[str, Any] = dict(summary_mod.goodput_summary(con, min_gpus=min_gpus))
        if lack is not None:  # a stored run of other data must not pass for this one
            result["backtest"] = []
            result["backtest_classes"] = []
        result["backtest_missing"] = lack
        result["slow_missing"] = summary_mod.slow_missing(result["fleet"])
        if shown is OutputFormat.csv and not result[table.value]:
            header = _columns(con, table)
    if shown is OutputFormat.json:
        print_json(result)
    elif shown is OutputFormat.csv:
        rows = result[table.value]
        if rows:
            print_csv(rows)
        else:  # the header alone: a CSV reader still learns the columns
            _print_header(header)
    else:
        print_goodput(db_path, result, min_gpus=min_gpus)
