"""Inputs of a goodput projection read from the warehouse (I/O side of ``models.scenario``).

The per-class rates of a stored fit run (:func:`projection_fits`, :func:`fit_rates`), the restart
time the scheduler measured (:func:`measured_restart_s`), the repair-time law measured from the
closed replacement tickets (:func:`measured_repair`) or taken from a stored repair-time fit run
(:func:`fitted_repair`), and the ages of the fleet's units (:func:`inventory_ages`).
:mod:`pipelines.project` builds scenarios from them (and still answers to
``pipelines.project.fit_rates`` and the like).
"""

from __future__ import annotations

import json
import math
import warnings
from typing import TYPE_CHECKING, Any

from pipelines.errors import empty_fit_run, no_failures, no_fit_run

if TYPE_CHECKING:
    import polars as pl

# polars and pipelines.fit (DuckDB) are imported by the functions that read the warehouse, so
# pipelines.project imports this module without them (a projection from hand-given rates)

HARDWARE_ATTRIBUTIONS = ("hardware-confirmed", "scheduler-only")


def projection_fits(fits: pl.DataFrame) -> pl.DataFrame:
    """Return the fit rows to project from, per class and cohort, for classes with failures.

    A fit run that carries headlines (``headline_mtbf_h``) keeps every family row of a class:
    :func:`models.rates_from_fits` reads the headline and the families' weights from them.
    An older run keeps the AIC choice; a chosen heavy-tailed family with no finite mean (a
    log-logistic with shape <= 1) or no finite interval is replaced by its exponential row
    (exposure / failures, the steady-state rate). Classes with no failure are left out (rate 0).
    """
    import polars as pl

    if "headline_mtbf_h" in fits.columns and fits["headline_mtbf_h"].is_not_null().any():
        return fits.filter(pl.col("n_failures") > 0)
    finite = pl.col("mtbf_h").is_finite() & pl.col("mtbf_lo_h").is_finite()
    keys = ["component_class", "cohort"] if "cohort" in fits.columns else ["component_class"]
    with_failures = fits.filter(pl.col("n_failures") > 0)
    chosen = with_failures.filter(pl.col("chosen") & finite)
    fallback = with_failures.filter(pl.col("family") == "exponential").join(
        chosen.select(keys), on=keys, how="anti"
    )
    return pl.concat([chosen, fallback.with_columns(chosen=pl.lit(True))], how="vertical_relaxed")


def fit_rates(
    con: Any, run_id: str | None = None, *, at_ages: bool = False, if_none: bool = False
) -> tuple[str, tuple[Any, ...]]:
    """Return the per-class rates of a fit run as ``(run_id, rates)``.

    ``latest`` or None: the newest run.

    ``at_ages``: the projection is at given unit ages (not the steady state), so each class is
    projected from its Weibull fit's hazard rather than the model-averaged mean
    (:func:`models.rates_from_fits`).

    ``if_none``: a run with no failure in any class gives no rates (``()``: the caller's own or
    default rates apply, and the caller says so) instead of an error.

    Raises
    ------
    MissingDataError
        No fit run (saying whether there are unit lives to fit one from), a run with no rows,
        or, unless ``if_none``, a run with no failure in any class.
    """
    import polars as pl

    from models import rates_from_fits
    from pipelines.fit import latest_run_id, quantity_of, read_fit, run_lives

    run_id = None if run_id in (None, "latest") else run_id
    if run_id is not None and quantity_of(lives := run_lives(con, run_id)) != "lifetime":
        msg = (
            f"fit run {run_id} fitted repair times ({lives}), not lifetimes; give a lifetime run "
            "or 'latest' (a repair run goes to --repair-from-fits)"
        )
        raise ValueError(msg)
    run_id = run_id or latest_run_id(con, quantity="lifetime")
    if run_id is None:
        raise no_fit_run(has_lives=_has_lives(con))
    rows = read_fit(con, run_id)
    if rows.height == 0:
        raise empty_fit_run(run_id, has_lives=_has_lives(con))
    fits = rows.filter(pl.col("cohort") == "all")
    if fits.height == 0:
        msg = f"fit run {run_id} has no whole-fleet rows (cohort 'all'); refit without --by"
        raise ValueError(msg)
    failing = projection_fits(fits)
    if failing.height == 0:
        if if_none:
            return run_id, ()
        raise no_failures(run_id)
    with warnings.catch_warnings():
        # classes fitted by a non-Weibull family are projected as exponential: said in the output
        warnings.simplefilter("ignore")
        return run_id, rates_from_fits(failing, at_ages=at_ages)


def _has_lives(con: Any) -> bool:
    """Whether ``fct_component_lives`` exists and holds a row (what ``relia fit`` reads)."""
    import duckdb

    try:
        row = con.execute("select count(*) from (from fct_component_lives limit 1)").fetchone()
    except duckdb.CatalogException:
        return False
    return bool(row and row[0])


def no_rates_warning(run_id: str, rate_source: str) -> str:
    """Return the warning of a projection whose fit run had no failure: the rates it used."""
    return (
        f"fit run {run_id} has no failure in any component class; projected from these rates "
        f"instead: {rate_source}"
    )


def measured_restart_s(con: Any) -> dict[str, float | int | None]:
    """Median and count of measured restart overheads after hardware interruptions."""
    row = con.execute(
        "select median(restart_overhead_s), count(restart_overhead_s) "
        "from int_job_interruptions where attribution in $kinds",
        {"kinds": list(HARDWARE_ATTRIBUTIONS)},
    ).fetchone()
    return {"median_s": row[0], "n": int(row[1])}


def measured_repair(con: Any) -> dict[str, float | int]:
    """Median and log-normal sigma of measured repair times (closed ``replace`` tickets).

    ``median_h`` is the median repair time in hours, ``sigma`` the standard deviation of the
    logarithm of the repair times (the log-normal's sigma), ``n`` the tickets used; the same
    tickets as the weekly report's repair time.
    """
    row = con.execute(
        "select median(repair_h), stddev_samp(ln(repair_h)), count(repair_h) "
        "from stg_repairs where action = 'replace' and repair_h > 0"
    ).fetchone()
    if row is None or int(row[2]) < 2:
        msg = (
            "fewer than 2 closed replacement tickets in the warehouse's repairs; "
            "give --repair-h and --repair-sigma instead"
        )
        raise ValueError(msg)
    return {"median_h": float(row[0]), "sigma": float(row[1]), "n": int(row[2])}


def fitted_repair(con: Any, run_id: str | None = "latest") -> dict[str, Any]:
    """Return the repair-time law of a stored repair run: its pooled log-normal fit.

    The run is ``run_id`` or, for ``latest`` / None, the newest repair-time run (``relia fit
    --lives stg_repairs``, ``int_fault_repairs`` or ``int_node_unavailability``). Its pooled row
    (``component_class = 'all'``, every repair but planned work, cohort ``'all'``) of the
    log-normal family gives ``median_h = exp(mu_)`` and ``sigma = sigma_``.

    Returns
    -------
    dict
        ``run_id``, ``lives`` (the view it fitted), ``median_h``, ``sigma``, ``mttr_h``,
        ``mttr_lo_h``, ``mttr_hi_h`` (the log-normal's mean and its interval), ``n_repairs``,
        ``n_repaired`` (closed; the rest were open, right-censored) and ``chosen`` (whether the
        log-normal was the AIC choice of the pool).

    Raises
    ------
    ValueError
        When there is no such run, it is a lifetime run, or it has no pooled log-normal fit.
    """
    import polars as pl

    from pipelines.fit import POOLED_CLASS, quantity_of, read_fit, run_lives

    run_id = None if run_id in (None, "latest") else run_id
    if run_id is not None and quantity_of(lives := run_lives(con, run_id)) != "repair_time":
        msg = (
            f"fit run {run_id} fitted lifetimes ({lives or 'unit lives'}), not repair times; "
            "run `relia fit --lives stg_repairs` (or another repair view) and give that run"
        )
        raise ValueError(msg)
    fits = read_fit(con, run_id, quantity="repair_time")
    if fits.height:
        first_run_id = fits.get_column("run_id").first()
        assert isinstance(first_run_id, str)  # run_id is the fit table's non-null text key
        run_id = first_run_id
    pool = fits.filter(
        (pl.col("component_class") == POOLED_CLASS)
        & (pl.col("cohort") == "all")
        & (pl.col("family") == "lognormal")
    )
    if pool.height == 0:
        msg = (
            f"repair run {run_id} has no pooled log-normal fit (fewer than 2 closed repairs, or "
            "split by --by); refit with `relia fit --lives VIEW` and no --by"
        )
        raise ValueError(msg)
    row = pool.row(0, named=True)
    params = json.loads(row["params_json"])
    if any(params.get(name) is None for name in ("mu_", "sigma_")):  # NaN: did not converge
        msg = f"repair run {run_id}: the pooled log-normal fit did not converge; refit it"
        raise ValueError(msg)
    return {
        "run_id": run_id,
        "lives": run_lives(con, str(run_id)),
        "median_h": math.exp(params["mu_"]),
        "sigma": float(params["sigma_"]),
        "mttr_h": row["mtbf_h"],
        "mttr_lo_h": row["mtbf_lo_h"],
        "mttr_hi_h": row["mtbf_hi_h"],
        "n_repairs": int(row["n_units"]),
        "n_repaired": int(row["n_failures"]),
        "chosen": bool(row["chosen"]),
    }


INVENTORY_BINS = 10
"""Most age bins an inventory's fleet age is grouped into (quantile bins)."""


def inventory_ages(con: Any, *, n_bins: int = INVENTORY_BINS) -> dict[str, Any]:
    """Return the ages of the units in service at the end of the warehouse's data, in quantile bins.

    Units are the unit lives of ``int_component_lives`` (one per slot generation, whatever its
    component classes) still open at the observation window's end; a unit's age is the hours
    from its ``installed_ts`` (the fleet's install, or the close of its last replacement) to
    that end. The units, sorted by age, are cut into at most ``n_bins`` bins of equal count
    (``ntile``); each bin is its mean age with share = its units / all units.

    Returns ``{"as_of": window end, "n_units", "bins": [{"age_h", "share", "n_units"}...],
    "fleet_age": ((age_h, share), ...)}``.

    Raises
    ------
    ValueError
        When no unit is in service at the window's end (no inventory).
    """
    import duckdb

    from models import age_mix

    try:
        rows = _inventory_bins(con, n_bins)
    except duckdb.CatalogException:
        rows = []  # a warehouse without the lives view has no inventory either
    n_units = sum(int(r[2]) for r in rows)
    if n_units == 0:
        msg = (
            "no units in service at the end of the warehouse's data (no inventory: ingest "
            "nvidia-smi snapshots or a fleet register); give --fleet-age new, steady_state or hours"
        )
        raise ValueError(msg)
    bins = [
        {"age_h": max(float(r[1]), 0.0), "share": int(r[2]) / n_units, "n_units": int(r[2])}
        for r in rows
    ]
    return {
        "as_of": rows[0][3],
        "n_units": n_units,
        "bins": bins,
        "fleet_age": age_mix((b["age_h"], b["share"]) for b in bins),
    }


def _inventory_bins(con: Any, n_bins: int) -> list[tuple[Any, ...]]:
    """``(bin, mean age_h, units, window end)`` of each quantile bin of the units in service."""
    rows: list[tuple[Any, ...]] = con.execute(
        """
        with observation as (select * from stg_observation_window),

        units as (
            select distinct
                lives.unit_id,
                epoch(observation.window_end - lives.installed_ts) / 3600.0 as age_h
            from int_component_lives as lives
            cross join observation
            where lives.observed_to_ts = observation.window_end
        ),

        binned as (
            select
                units.age_h,
                ntile($n_bins) over (order by units.age_h, units.unit_id) as age_bin
            from units
        )

        select
            binned.age_bin,
            avg(binned.age_h) as age_h,
            count(*) as n_units,
            (select max(observation.window_end) from observation) as as_of
        from binned
        group by binned.age_bin
        order by binned.age_bin
        """,
        {"n_bins": n_bins},
    ).fetchall()
    return rows
