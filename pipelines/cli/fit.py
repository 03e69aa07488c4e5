"""``relia fit`` and ``relia trend``: lifetime (or repair-time) fits per class, fleet trend."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from pipelines.cli.options import (
    DbOption,
    FormatOption,
    JsonOption,
    TrackedOption,
    WindowEndOption,
    WindowStartOption,
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

__all__ = ["fit", "fit_rows", "trend"]

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


def fit_rows(results: Any) -> list[dict[str, Any]]:
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
    fmt: FormatOption = OutputFormat.table,
) -> None:
    """Fit MTBF per component class (and cohort), store it in fit_results, print the AIC choice.

    With a repair view as --lives the same families are fitted to repair durations (open repairs
    right-censored) and the mean is the MTTR.
    """
    import warnings

    from pipelines.fit import LIVES_VIEWS, parse_weibayes_shape, quantity_of

    shown = output_format(fmt, as_json)

    if lives not in LIVES_VIEWS:
        err.print(
            error_text(
                "error", "red", f"unknown --lives {lives!r}; use one of: {', '.join(LIVES_VIEWS)}"
            )
        )
        raise typer.Exit(2)
    shapes = parse_weibayes_shape(weibayes_shape)
    settings = load_settings(db_path=db)
    set_window(settings.db_path, window_start, window_end)
    require_warehouse(settings.db_path, lives, lock_timeout_s=settings.lock_timeout_s)
    cohorts = list(by or [])
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        if is_tracked(tracked):
            prefect_defaults()
            from pipelines.flows.fit_reliability import fit_reliability

            outcome = fit_reliability(
                db_path=settings.db_path,
                by=cohorts,
                lives=lives,
                dataset=dataset,
                alpha=alpha,
                weibayes_shape=shapes,
            )
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
        rows = fit_rows(results)
    json_rows = (results if all_families else results.filter(results["chosen"])).to_dicts()
    if quantity == "repair_time":
        json_rows = _repair_rows(json_rows)
        rows = _repair_rows(rows) if all_families else rows
    if shown is OutputFormat.json:
        print_json(
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
    if shown is OutputFormat.csv:
        print_csv(rows)
        return
    if quantity == "repair_time":
        title = f"fit run {run_id}: repair times from {lives} (headline MTTR in hours)"
    elif all_families:
        title = f"fit run {run_id} (every family)"
    else:
        title = f"fit run {run_id}: observed AFR, headline MTBF (hours), AIC-chosen family"
    console.print(rows_table(title, rows))
    extrapolated = sorted(
        {r["component_class"] for r in results.to_dicts() if r.get("headline_extrapolated")}
    )
    if extrapolated and quantity != "repair_time":
        err.print(
            error_text(
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
        console.print(rows_table("Cox proportional hazards", cox_table.to_dicts()))
    if written is not None:
        where = plots.resolve() if plots is not None else None
        console.print(
            f"probability plots: {len(written)} PNG file(s) in [bold]{where}[/bold]"
            if written
            else f"probability plots: no class has 3+ failures; nothing written to {where}"
        )
    for note in notes:
        err.print(error_text("note", "yellow", note))


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
    """Repairable-system view: Crow-AMSAA and Laplace verdicts for the fleet, lemon nodes.

    ``--format csv`` writes the table of nodes (the most improbable failure counts first).
    """
    from dataclasses import asdict

    from pipelines import fit as fit_mod
    from pipelines import warehouse

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
    lemons = result.lemons.sort("p_value").head(10).to_dicts()
    payload = {
        "n_nodes": result.n_nodes,
        "n_failures": result.n_failures,
        "crow_amsaa": asdict(result.crow_amsaa) if result.crow_amsaa else None,
        "laplace": asdict(result.laplace) if result.laplace else None,
        "lemon_nodes": [r for r in lemons if r["lemon"]],
        "most_suspect_nodes": lemons,
    }
    if shown is OutputFormat.json:
        print_json(payload)
        return
    columns = ("unit_id", "observed", "expected", "p_value", "p_adjusted", "lemon", "classes")
    nodes = [{k: r[k] for k in columns} for r in lemons]
    if shown is OutputFormat.csv:
        print_csv(nodes)
        return
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
