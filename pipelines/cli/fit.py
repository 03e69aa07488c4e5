"""``relia fit`` (interruption rates, then lifetime or repair-time fits) and ``relia trend``."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from pipelines.cli.options import (
    DbOption,
    FormatOption,
    JsonOption,
    TrackedOption,
    WindowEndOption,
    WindowStartOption,
    exit_usage,
    is_tracked,
    load_settings,
    prefect_defaults,
    require_warehouse,
    set_window,
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
    import polars as pl

    from pipelines.analysis.fit import FitOutcome, Trend
    from pipelines.runtime.settings import Settings

__all__ = ["FitTable", "fit", "fit_rows", "rate_rows", "trend"]

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
    """``value (lo-hi)`` for a table cell to ``digits`` decimals; open ends as ``≥ lo``."""
    from pipelines.analysis.headline import span_text

    return span_text(value, lo, hi, fmt=lambda x: f"{x:,.{digits}f}")


_HOW = {
    "model_average": "avg",
    "weibayes_lr": "weibayes",
    "chi_square": "chi2",
    "observed_rate": "observed",
    "chi_square_bound": "chi2 bound",
}


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


def _split(frame: Any) -> bool:
    """Whether a run's rows are split by cohort (a ``cohort`` column then shows)."""
    return bool(frame.height) and (
        frame["cohort"].n_unique() > 1 or frame["cohort"].first() != "all"
    )


def rate_rows(rates: Any) -> list[dict[str, Any]]:
    """One table row per class and cohort of a run's rates (``rpt_class_rates`` rows).

    Most events first. A failure-process run shows ``failures``, the exposure in node-days and
    GPU-hours, the rate per 1000 node-days and per million GPU-hours with their exact Poisson
    intervals, the headline MTBF per unit (hours; ``≥ x``: no failure, the one-sided bound)
    and the trend (verdict, Crow-AMSAA beta interval). A replacement run shows
    ``replacements``, unit-years, replacements per 1000 node-days, the replacement AFR (% per
    unit-year) and the mean time between replacements (``mtbr_h``).
    """
    from pipelines.analysis.headline import hours_text, span_text, trend_text

    if rates.height == 0:
        return []
    replacement = rates["process"].first() == "replacement" if "process" in rates.columns else False
    split = _split(rates)
    ordered = rates.sort("n_failures", "component_class", descending=[True, False])
    rows = []
    for r in ordered.iter_rows(named=True):
        row: dict[str, Any] = {"class": r["component_class"]}
        row |= {"cohort": r["cohort"]} if split else {}
        row["level"] = r["unit_level"]
        per_node_days = span_text(
            r["rate_per_1000_node_days"],
            r["rate_lo_per_1000_node_days"],
            r["rate_hi_per_1000_node_days"],
        )
        mean = span_text(
            r["headline_mtbf_h"], r["headline_mtbf_lo_h"], r["headline_mtbf_hi_h"], fmt=hours_text
        )
        if replacement:
            afr = [None if x is None else x * 876_600.0 for x in _rate_h(r)]
            row |= {
                "replacements": r["n_failures"],
                "unit_years": round(r["exposure_h"] / 8766.0, 1),
                "replacements_per_1000_node_days": per_node_days,
                "replacement_afr_pct": span_text(*afr),
                "mtbr_h": mean,
            }
        else:
            row |= {
                "failures": r["n_failures"],
                "node_days": round(r["node_days"]) if r["node_days"] is not None else None,
                "gpu_hours": round(r["gpu_hours"]) if r["gpu_hours"] is not None else None,
                "per_1000_node_days": per_node_days,
                "per_1e6_gpu_h": span_text(
                    r["rate_per_1e6_gpu_h"],
                    r["rate_lo_per_1e6_gpu_h"],
                    r["rate_hi_per_1e6_gpu_h"],
                ),
                "mtbf_h": mean,
            }
        row["trend"] = trend_text(r)
        rows.append(row)
    return rows


def _rate_h(row: dict[str, Any]) -> tuple[Any, Any, Any]:
    return row["rate_per_h"], row["rate_lo_per_h"], row["rate_hi_per_h"]


def fit_rows(results: Any, *, replacement: bool = False) -> list[dict[str, Any]]:
    """One row per class and cohort: the lifetime fit of the AIC-chosen family.

    Lifetimes, second to the rates (:func:`rate_rows`) and named as such: ``family`` and
    ``shape`` of the AIC choice, ``lifetime_mean_h`` the model-averaged mean life with its
    interval (``how``: a model average over the families, Weibayes for 1 to 5 failures, the
    chi-square bound for none), ``extrap`` when most of that mean lies beyond the oldest age
    observed, ``rmst_h`` the mean restricted to that age. For a replacement run the mean is
    the mean life between replacements (``mean_life_h``).
    """
    import polars as pl

    rows = []
    chosen = results.filter(pl.col("chosen")).sort(
        "n_failures", "component_class", descending=[True, False]
    )
    split = _split(chosen)
    for r in chosen.iter_rows(named=True):
        row = {"class": r["component_class"]} | ({"cohort": r["cohort"]} if split else {})
        rmst = r["lifetime_rmst_h"]
        row |= {
            "family": r["family"],
            "shape": round(r["shape"], 2),
            ("mean_life_h" if replacement else "lifetime_mean_h"): _span(
                r["lifetime_mtbf_h"], r["lifetime_mtbf_lo_h"], r["lifetime_mtbf_hi_h"], 0
            ),
            "how": _HOW.get(r["lifetime_method"], r["lifetime_method"]),
            "extrap": "yes" if r["lifetime_extrapolated"] else "",
            "rmst_h": round(rmst) if rmst is not None and rmst == rmst else None,
        }
        rows.append(row)
    return rows


RATE_CSV_COLUMNS = (
    "component_class",
    "cohort",
    "unit_level",
    "n_units",
    "n_failures",
    "exposure_h",
    "node_days",
    "gpu_hours",
    "rate_per_1000_node_days",
    "rate_lo_per_1000_node_days",
    "rate_hi_per_1000_node_days",
    "rate_per_1e6_gpu_h",
    "rate_lo_per_1e6_gpu_h",
    "rate_hi_per_1e6_gpu_h",
    "headline_method",
    "headline_mtbf_h",
    "headline_mtbf_lo_h",
    "headline_mtbf_hi_h",
    "trend_verdict",
    "crow_amsaa_beta",
    "crow_amsaa_beta_lo",
    "crow_amsaa_beta_hi",
)
"""Columns of ``relia fit --format csv`` (``--table rates``): the rates rows, numbers only."""

FIT_CSV_COLUMNS = (
    "component_class",
    "cohort",
    "unit_level",
    "family",
    "n_units",
    "n_failures",
    "shape",
    "aic",
    "chosen",
    "lifetime_method",
    "lifetime_mtbf_h",
    "lifetime_mtbf_lo_h",
    "lifetime_mtbf_hi_h",
    "lifetime_extrapolated",
    "lifetime_rmst_h",
    "b10_h",
)
"""Columns of ``relia fit --format csv --table fits``: the lifetime fits, numbers only."""


def _csv_rows(rows: list[dict[str, Any]], columns: tuple[str, ...]) -> list[dict[str, Any]]:
    return [{c: r.get(c) for c in columns if c in r} for r in rows]


def _replacement_afr(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Rates rows of a replacement run with the replacement AFR (% per unit-year) added."""
    out = []
    for r in rows:
        afr = {
            f"afr_observed{part}_pct": None
            if r[f"rate{part}_per_h"] is None
            else r[f"rate{part}_per_h"] * 876_600.0
            for part in ("", "_lo", "_hi")
        }
        out.append(r | afr)
    return out


class FitTable(StrEnum):
    """The table ``relia fit --format csv`` writes."""

    rates = "rates"
    fits = "fits"


LivesOption = Annotated[
    str,
    typer.Option(
        help="Lives view: fct_component_lives (the failure process: every job-stopping "
        "failure) or int_fault_lives (a fault log's), fct_replacement_lives (replacement "
        "lifetimes from replace tickets), or a repair view: stg_repairs (ticket repair "
        "times), int_fault_repairs or int_node_unavailability (repair times, MTTR, with a "
        "pooled class 'all').",
    ),
]
WeibayesShapeOption = Annotated[
    str | None,
    typer.Option(
        help="Known Weibull shape for classes with 1 to 5 failures (Weibayes): 1.3 for every "
        "class, or gpu=1.3,nic=0.9; default: the class's fleet-wide fit for cohorts, else 1.",
    ),
]
PlotsOption = Annotated[
    Path | None,
    typer.Option(
        "--plots",
        metavar="DIR",
        help="Write Weibull- and log-normal-paper probability plots (<class>_<paper>.png, "
        "classes with 3+ failures) into DIR.",
    ),
]
FitTableOption = Annotated[
    FitTable | None,
    typer.Option(
        "--table",
        help="The table --format csv writes: rates (the interruption rates and headline, "
        "the default) or fits (the lifetime fits).",
    ),
]


@dataclass(frozen=True)
class _FitRun:
    """What one ``relia fit`` ran: the stored run, its Cox table and plots, the models' notes."""

    outcome: FitOutcome
    lives: str
    cox: pl.DataFrame | None
    plots: list[Path] | None
    notes: list[str]
    summarised: frozenset[str] = frozenset()
    """The notes the default view names classes for instead (the few-failure groups)."""


@app.command()
def fit(
    by: Annotated[
        list[str] | None, typer.Option("--by", help="Cohort column to split fits by (repeatable).")
    ] = None,
    cox: Annotated[
        str | None,
        typer.Option(help="Comma-separated covariates for Cox PH (e.g. batch,position)."),
    ] = None,
    lives: LivesOption = "fct_component_lives",
    dataset: Annotated[
        str | None,
        typer.Option(help="Dataset name within int_fault_lives / int_fault_repairs."),
    ] = None,
    alpha: Annotated[float, typer.Option(min=0.001, max=0.5, help="1 - confidence level.")] = 0.05,
    all_families: Annotated[
        bool, typer.Option("--all-families", help="Print every family, not just the AIC choice.")
    ] = False,
    weibayes_shape: WeibayesShapeOption = None,
    plots: PlotsOption = None,
    db: DbOption = None,
    tracked: TrackedOption = False,
    as_json: JsonOption = False,
    window_start: WindowStartOption = None,
    window_end: WindowEndOption = None,
    fmt: FormatOption = OutputFormat.table,
    table: FitTableOption = None,
    wide: Annotated[
        bool,
        typer.Option(
            "--wide",
            help="Print every column of the rates and the lifetime fits, and the models' notes "
            "whole (the default: one line per class and short notes, as wide as the terminal).",
        ),
    ] = False,
) -> None:
    """Fit each class (and cohort): interruption rates first, then lifetimes; store the run.

    The rates (per 1000 node-days and per million GPU-hours, exact intervals; the headline MTBF
    per unit; the trend) are stored in fit_rates and read by every consumer; the lifetime fits
    of four families (the AIC choice is printed) in fit_results. --lives fct_replacement_lives
    counts replacements (replace tickets), never failures. With a repair view as --lives the
    same families are fitted to repair durations (open repairs right-censored) and the mean is
    the MTTR. The table is one line per class (the rate per 1000 node-days and the headline
    MTBF); --wide prints every column and the lifetime fits.
    """
    from pipelines.analysis.fit import LIVES_VIEWS, parse_weibayes_shape, quantity_of

    shown = output_format(fmt, as_json)

    if lives not in LIVES_VIEWS:
        exit_usage(f"unknown --lives {lives!r}; use one of: {', '.join(LIVES_VIEWS)}")
    shapes = parse_weibayes_shape(weibayes_shape)
    settings = load_settings(db_path=db)
    set_window(settings.db_path, window_start, window_end)
    require_warehouse(settings.db_path, lives, lock_timeout_s=settings.lock_timeout_s)
    quantity = quantity_of(lives)
    run = _run_fits(
        settings,
        tracked=is_tracked(tracked),
        by=list(by or []),
        lives=lives,
        dataset=dataset,
        alpha=alpha,
        shapes=shapes,
        cox=cox,
        plots=plots,
        quantity=quantity,
    )
    results = run.outcome["results"]
    if quantity == "repair_time" and table is FitTable.rates:
        exit_usage("a repair-time run has no rates; use --table fits (or leave --table out)")
    rows = _shown_rows(results, quantity=quantity, all_families=all_families)
    json_rows = (results if all_families else results.filter(results["chosen"])).to_dicts()
    rates = run.outcome.get("rates")
    rate_dicts = rates.to_dicts() if rates is not None else []
    if quantity == "replacement":
        rate_dicts = _replacement_afr(rate_dicts)
    if quantity == "repair_time":
        json_rows = _repair_rows(json_rows)
    if shown is OutputFormat.json:
        print_json(_fit_payload(run, json_rows, rate_dicts, quantity=quantity))
    elif shown is OutputFormat.csv:
        if quantity == "repair_time":
            print_csv(rows)
        else:
            chosen = json_rows if not all_families else results.to_dicts()
            _print_fit_csv(chosen, rate_dicts, table=table, replacement=quantity == "replacement")
    elif wide or all_families:
        _print_fit_tables(run, rows, quantity=quantity, all_families=all_families)
        _print_fit_notes(run, quantity=quantity, plots=plots)
    else:
        _print_compact(run, quantity=quantity, plots=plots)


def _run_fits(
    settings: Settings,
    *,
    tracked: bool,
    by: list[str],
    lives: str,
    dataset: str | None,
    alpha: float,
    shapes: float | dict[str, float] | None,
    cox: str | None,
    plots: Path | None,
    quantity: str,
) -> _FitRun:
    """Fit and store the run (as a tracked flow run when asked), then the Cox table and plots.

    The models' warnings are caught and returned as notes, in the run's words.
    """
    import warnings

    from pipelines import warehouse
    from pipelines.analysis import fit as fit_mod

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        if tracked:
            prefect_defaults()
            from pipelines.flows.fit_reliability import fit_reliability

            outcome = fit_reliability(
                db_path=settings.db_path,
                by=by,
                lives=lives,
                dataset=dataset,
                alpha=alpha,
                weibayes_shape=shapes,
            )
            cox_table = None
            if cox:
                with warehouse.connect(
                    settings.db_path, read_only=True, lock_timeout_s=settings.read_lock_timeout_s
                ) as con:
                    cox_table = fit_mod.cox_table(
                        con, _covariates(cox), lives=lives, dataset=dataset, alpha=alpha
                    )
        else:
            # one connection for the run and its Cox table, closed before the plots read
            with warehouse.connect(settings.db_path, lock_timeout_s=settings.lock_timeout_s) as con:
                outcome = fit_mod.fit_and_store(
                    con,
                    by=by,
                    lives=lives,
                    dataset=dataset,
                    alpha=alpha,
                    weibayes_shape=shapes,
                )
                cox_table = (
                    fit_mod.cox_table(
                        con, _covariates(cox), lives=lives, dataset=dataset, alpha=alpha
                    )
                    if cox
                    else None
                )
        written = None
        if plots is not None:
            from pipelines.report import write_fit_plots

            written = write_fit_plots(
                settings.db_path,
                outcome["results"],
                plots,
                lives=lives,
                dataset=dataset,
                alpha=alpha,
            )
    from models.exceptions import FewFailuresWarning

    notes = sorted({_counted(str(w.message), quantity) for w in caught})
    summarised = frozenset(
        _counted(str(w.message), quantity)
        for w in caught
        if issubclass(w.category, FewFailuresWarning) and " group(s) have " in str(w.message)
    )
    return _FitRun(
        outcome=outcome,
        lives=lives,
        cox=cox_table,
        plots=written,
        notes=notes,
        summarised=summarised,
    )


def _covariates(cox: str) -> list[str]:
    """Return the covariates of ``--cox batch,position``."""
    return [c.strip() for c in cox.split(",") if c.strip()]


def _shown_rows(
    results: pl.DataFrame, *, quantity: str, all_families: bool
) -> list[dict[str, Any]]:
    """Return the fit rows the table (and a repair run's CSV) shows."""
    if quantity == "repair_time":
        return _repair_rows(results.to_dicts()) if all_families else _repair_table_rows(results)
    replacement = quantity == "replacement"
    if all_families:
        from pipelines.analysis.headline import replacement_names

        return [replacement_names(r) if replacement else r for r in results.to_dicts()]
    return fit_rows(results, replacement=replacement)


# the JSON relia fit --json prints: a dict is the edge
def _fit_payload(
    run: _FitRun,
    json_rows: list[dict[str, Any]],
    rate_dicts: list[dict[str, Any]],
    *,
    quantity: str,
) -> dict[str, Any]:
    """Return what ``relia fit --json`` prints: the run, its rates and fits, Cox, plots, notes."""
    from pipelines.analysis.fit import OPEN_END, PROCESSES
    from pipelines.analysis.headline import replacement_names

    outcome = run.outcome
    repairs = outcome.get("repairs")
    outside = outcome.get("outside_lives")
    rename = replacement_names if quantity == "replacement" else dict
    return {
        "run_id": outcome["run_id"],
        "lives": run.lives,
        "quantity": quantity,
        "process": PROCESSES[quantity],
        "mean": {"repair_time": "MTTR", "replacement": "MTBR"}.get(quantity, "MTBF"),
        "open_bounds": OPEN_END,
        **({"repairs": repairs} if repairs is not None else {}),
        **({"failures_outside_lives": outside} if outside is not None else {}),
        **({"rates": [rename(r) for r in rate_dicts]} if outcome.get("rates") is not None else {}),
        "fits": [rename(r) for r in json_rows],
        "cox": run.cox.to_dicts() if run.cox is not None else None,
        "plots": [str(p) for p in run.plots] if run.plots is not None else None,
        "notes": run.notes,
    }


def _print_fit_csv(
    fits: list[dict[str, Any]],
    rate_dicts: list[dict[str, Any]],
    *,
    table: FitTable | None,
    replacement: bool,
) -> None:
    """Print the ``--table`` of a lifetime or replacement run as CSV: rates (default) or fits."""
    from pipelines.analysis.headline import replacement_names

    if table is FitTable.fits:
        picked = _csv_rows(fits, FIT_CSV_COLUMNS)
    else:
        columns = RATE_CSV_COLUMNS + (
            ("afr_observed_pct", "afr_observed_lo_pct", "afr_observed_hi_pct")
            if replacement
            else ()
        )
        picked = _csv_rows(rate_dicts, columns)
    print_csv([replacement_names(r) for r in picked] if replacement else picked)


def _print_fit_tables(
    run: _FitRun, rows: list[dict[str, Any]], *, quantity: str, all_families: bool
) -> None:
    """Print a run's tables: a repair run's repair times, else the rates, then the lifetimes."""
    run_id, lives = run.outcome["run_id"], run.lives
    if quantity == "repair_time":
        title = f"fit run {run_id}: repair times from {lives} (headline MTTR in hours)"
        console.print(rows_table(title, rows))
        return
    replacement = quantity == "replacement"
    _print_rates(run_id, lives, run.outcome.get("rates"), replacement=replacement)
    if all_families:
        title = f"lifetime fits of run {run_id}, every family"
    elif replacement:
        title = (
            "replacement lifetimes (times between replacements per unit; AIC-chosen family; "
            "a model, not the headline)"
        )
    else:
        title = (
            "lifetimes (times between failures per unit; AIC-chosen family; a model, not "
            "the headline)"
        )
    console.print(rows_table(title, rows))


def _print_compact(run: _FitRun, *, quantity: str, plots: Path | None) -> None:
    """Print the default view: one line per class, then short notes wrapped to the terminal."""
    from pipelines.cli import fit_view

    run_id, lives = run.outcome["run_id"], run.lives
    rates = run.outcome.get("rates")
    if quantity == "repair_time":
        head = f"fit run {run_id}: repair times from {lives}, MTTR in hours"
        rows = fit_view.repair_lines(run.outcome["results"])
    else:
        replacement = quantity == "replacement"
        what = (
            "replacement rates (replace tickets only)"
            if replacement
            else ("interruption rates (every job-stopping failure)")
        )
        head = f"fit run {run_id}: {what} from {lives}, exact 95 % intervals"
        rows = fit_view.rate_lines(rates, replacement=replacement) if rates is not None else []
    console.print(head, highlight=False, markup=False)
    console.print(fit_view.table(rows))
    no_event = rates is not None and rates.height > 0 and int(rates["n_failures"].sum()) == 0
    if quantity != "repair_time" and no_event:
        from pipelines.analysis.headline import process_words

        words = process_words("replacement" if quantity == "replacement" else "failure")
        fit_view.print_note(
            f"no {words['event']} in any class in the window: each {words['mean']} is the "
            "one-sided 95 % lower bound (≥ x), each rate's upper bound the one-sided upper bound"
        )
    for note in fit_view.short_notes(run.outcome["results"], rates, quantity=quantity):
        fit_view.print_note(note)
    _print_fit_notes(run, quantity=quantity, plots=plots, compact=True)


def _print_fit_notes(
    run: _FitRun, *, quantity: str, plots: Path | None, compact: bool = False
) -> None:
    """Print what follows a run's tables: extrapolated means, repairs, Cox, plots and notes.

    ``compact`` (the default view): the notes it summarises by class are left out, and the
    others are wrapped to the terminal.
    """
    from pipelines.cli.fit_view import print_note

    results = run.outcome["results"]
    extrapolated = sorted(
        {r["component_class"] for r in results.to_dicts() if r.get("lifetime_extrapolated")}
    )
    if extrapolated and quantity != "repair_time" and not compact:
        err.print(
            error_text(
                "note",
                "yellow",
                "extrapolated: most of the mean life of "
                + ", ".join(extrapolated)
                + " lies beyond the oldest age observed (rmst_h is the mean up to that age)",
            )
        )
    repairs = run.outcome.get("repairs")
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
    if run.cox is not None:
        console.print(rows_table("Cox proportional hazards", run.cox.to_dicts()))
    if run.plots is not None:
        where = plots.resolve() if plots is not None else None
        console.print(
            f"probability plots: {len(run.plots)} PNG file(s) in [bold]{where}[/bold]"
            if run.plots
            else f"probability plots: no class has 3+ failures; nothing written to {where}"
        )
    for note in run.notes:
        if not compact:
            err.print(error_text("note", "yellow", note))
        elif note not in run.summarised:
            print_note(note)
    outside = run.outcome.get("outside_lives")
    if outside:
        from pipelines.analysis.lives_coverage import outside_lives_text

        for line in outside_lives_text(outside):
            if compact:
                print_note(line)
            else:
                err.print(error_text("note", "yellow", line))


def _counted(text: str, quantity: str) -> str:
    """Return a model's note in the run's words: a replacement run counts replacements."""
    if quantity != "replacement":
        return text
    return text.replace("failures", "replacements").replace("failure", "replacement")


def _print_rates(run_id: str, lives: str, rates: Any, *, replacement: bool) -> None:
    """Print a run's rates table, then one line when no class has any failure (replacement)."""
    from pipelines.analysis.headline import process_words

    words = process_words("replacement" if replacement else "failure")
    if replacement:
        title = (
            f"fit run {run_id}: replacement rates ({lives}: replace tickets only), "
            "exact 95 % intervals; mean time between replacements per unit in hours"
        )
    else:
        title = (
            f"fit run {run_id}: interruption rates ({lives}: every job-stopping failure), "
            "exact 95 % intervals; headline MTBF per unit in hours"
        )
    console.print(rows_table(title, rate_rows(rates) if rates is not None else []))
    if rates is not None and rates.height and int(rates["n_failures"].sum()) == 0:
        console.print(
            f"no {words['event']} in any class in the window: each {words['mean']} is the "
            "one-sided 95 % lower bound (≥ x), each rate's upper bound the one-sided upper bound",
            highlight=False,
            markup=False,
        )


@app.command()
def trend(
    alpha: Annotated[float, typer.Option(min=0.001, max=0.5)] = 0.05,
    lemon_alpha: Annotated[
        float, typer.Option(help="Family-wise level for flagging lemon nodes (Bonferroni).")
    ] = 0.01,
    db: DbOption = None,
    as_json: JsonOption = False,
    fmt: FormatOption = OutputFormat.table,
) -> None:
    """Repairable-system view: Crow-AMSAA and Laplace verdicts, lemon nodes, repeat offenders.

    Repeat offenders are units (GPU slots, nodes) of the failure process that fail more often
    than their level's fleet rate explains (``rpt_unit_failures``; Bonferroni at
    ``--lemon-alpha``), with how soon each failed again after a repair. ``--format csv`` writes
    the table of nodes (the most improbable failure counts first).
    """
    from dataclasses import asdict

    from pipelines import warehouse
    from pipelines.analysis import fit as fit_mod
    from pipelines.analysis import offenders as offenders_mod

    shown = output_format(fmt, as_json)
    settings = load_settings(db_path=db)
    require_warehouse(
        settings.db_path, "fct_node_recurrence", lock_timeout_s=settings.lock_timeout_s
    )
    with warehouse.connect(
        settings.db_path, read_only=True, lock_timeout_s=settings.lock_timeout_s
    ) as con:
        result = fit_mod.fleet_trend(
            fit_mod.read_node_recurrence(con), alpha=alpha, lemon_alpha=lemon_alpha
        )
        units = offenders_mod.repeat_offenders(
            offenders_mod.read_unit_failures(con), alpha=lemon_alpha
        )
    lemons = result.lemons.sort("p_value").head(10).to_dicts()
    suspects = units.filter(units["n_failures"] >= 2).head(10).to_dicts()
    payload = {
        "n_nodes": result.n_nodes,
        "n_failures": result.n_failures,
        "crow_amsaa": asdict(result.crow_amsaa) if result.crow_amsaa else None,
        "laplace": asdict(result.laplace) if result.laplace else None,
        "lemon_nodes": [r for r in lemons if r["lemon"]],
        "most_suspect_nodes": lemons,
        "repeat_offenders": [r for r in units.to_dicts() if r["repeat_offender"]],
        "units_failing_again": suspects,
    }
    if shown is OutputFormat.json:
        print_json(payload)
        return
    columns = ("unit_id", "observed", "expected", "p_value", "p_adjusted", "lemon", "classes")
    nodes = [{k: r[k] for k in columns} for r in lemons]
    if shown is OutputFormat.csv:
        print_csv(nodes)
        return
    _print_trend(result, nodes, lemons, suspects, lemon_alpha=lemon_alpha)


def _print_trend(
    result: Trend,
    nodes: list[dict[str, Any]],
    lemons: list[dict[str, Any]],
    suspects: list[dict[str, Any]],
    *,
    lemon_alpha: float,
) -> None:
    """Print the fleet's trend, the most improbable nodes and the units that failed again."""
    summary = {"nodes": result.n_nodes, "failures": result.n_failures}
    if result.crow_amsaa:
        ca = result.crow_amsaa
        summary |= {
            "beta": ca.beta,
            "beta_lo": ca.beta_lo,
            "beta_hi": ca.beta_hi,
            "crow_amsaa": ca.verdict,
        }
    if result.laplace:
        summary |= {
            "laplace_U": result.laplace.statistic,
            "laplace_p": result.laplace.p_value,
            "laplace": result.laplace.verdict,
        }
    console.print(rows_table("fleet trend (power-law NHPP and Laplace test)", [summary]))
    console.print(rows_table("nodes with the most improbable failure counts", nodes))
    if lemons:
        console.print(lemons[0]["rule"], highlight=False)
    if suspects:
        console.print(
            rows_table(
                "units that failed more than once (repeat offender: Bonferroni p < "
                f"{lemon_alpha:g} against the level's fleet rate)",
                [_suspect_row(r) for r in suspects],
            )
        )
    else:
        console.print("no unit failed more than once in the window", highlight=False)


# a row of the terminal's table: a dict is the edge
def _suspect_row(row: dict[str, Any]) -> dict[str, Any]:
    """Return a table row of a unit that failed more than once."""
    return {
        "unit": row["unit"],
        "level": row["unit_level"],
        "failures": row["n_failures"],
        "expected": row["expected"],
        "p_adjusted": row["p_adjusted"],
        "repeat_offender": "yes" if row["repeat_offender"] else "",
        "again_within_7d": row["n_repeat_7d"],
        "min_back_to_fail_h": row["min_back_to_fail_h"],
        "classes": ",".join(row["classes"] or []),
    }
