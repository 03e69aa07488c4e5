"""Inputs of a goodput projection read from the warehouse (I/O side of ``models.scenario``).

The per-class rates of a stored fit run (:func:`projection_fits`, :func:`fit_rates`), the restart
time the scheduler measured (:func:`measured_restart_s`), the repair-time law measured from the
closed replacement tickets (:func:`measured_repair`) or taken from a stored repair-time fit run
(:func:`fitted_repair`), and the ages of the fleet's units (:func:`inventory_ages`).
:mod:`pipelines.analysis.project` builds scenarios from them (and still answers to
``pipelines.analysis.project.fit_rates`` and the like).
"""

from __future__ import annotations

import dataclasses
import json
import math
import warnings
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypedDict

from pipelines.runtime.errors import empty_fit_run, no_failures, no_fit_run

if TYPE_CHECKING:
    from collections.abc import Callable
    from datetime import datetime

    import duckdb
    import polars as pl

    from models import ClassRate

# polars and pipelines.analysis.fit (DuckDB) are imported by the functions that read the warehouse,
# so pipelines.analysis.project imports this module without them (a projection from hand-given
# rates)

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

    from models import Exponential

    if "headline_mtbf_h" in fits.columns and fits["headline_mtbf_h"].is_not_null().any():
        return fits.filter(pl.col("n_failures") > 0)
    finite = pl.col("mtbf_h").is_finite() & pl.col("mtbf_lo_h").is_finite()
    keys = ["component_class", "cohort"] if "cohort" in fits.columns else ["component_class"]
    with_failures = fits.filter(pl.col("n_failures") > 0)
    chosen = with_failures.filter(pl.col("chosen") & finite)
    fallback = with_failures.filter(pl.col("family") == Exponential.name).join(
        chosen.select(keys), on=keys, how="anti"
    )
    return pl.concat([chosen, fallback.with_columns(chosen=pl.lit(True))], how="vertical_relaxed")


RATE_PROCESSES = ("failure", "replacement")
"""What a projection's rates count: ``failure`` every job-stopping failure (the failure process:
``fct_component_lives``, or a fault log's ``int_fault_lives`` given by run id), ``replacement``
the lives replace tickets cut (``fct_replacement_lives``: replacement lifetimes)."""
_PROCESS_LIVES = {"failure": "fct_component_lives", "replacement": "fct_replacement_lives"}


@dataclass(frozen=True)
class FittedRates:
    """The per-class rates a projection takes from a stored fit run.

    Attributes
    ----------
    run_id
        The fit run.
    lives
        The lives view it fitted (``fct_component_lives``, ``fct_replacement_lives`` or
        ``int_fault_lives``; ``fct_component_lives`` for a run stored before it was recorded).
    process
        ``failure`` or ``replacement`` (:data:`RATE_PROCESSES`).
    rates
        One :class:`~models.scenario.ClassRate` per class with a failure; empty when the run has
        none and the caller allowed it.
    left_out
        Classes of the run with no failure: projected at rate 0 (their one-sided bounds are in
        the fit).
    read_from
        ``fit_rates`` (the run's stored interruption rates), or ``fit_results`` for a run stored
        before runs stored their rates.
    """

    run_id: str
    lives: str
    process: str
    rates: tuple[ClassRate, ...]
    left_out: tuple[str, ...] = ()
    read_from: str = "fit_rates"

    @property
    def rate_source(self) -> str:
        """Where the rates come from, in words (the projection's ``rate_source``)."""
        what = (
            "replacement lifetimes (replace tickets)"
            if self.process == "replacement"
            else "interruption rates of the failure process (every job-stopping failure)"
        )
        classes = ", ".join(r.component_class for r in self.rates) or "none"
        return f"fit run {self.run_id}: {what}, {self.lives}; classes {classes}"


def fit_rates(
    con: duckdb.DuckDBPyConnection,
    run_id: str | None = None,
    *,
    at_ages: bool = False,
    if_none: bool = False,
    process: str | None = None,
) -> FittedRates:
    """Return the per-class rates of a stored fit run (:class:`FittedRates`).

    ``run_id`` ``latest`` or None: the newest run of ``process`` (default ``failure``): the
    newest run on ``fct_component_lives`` (never a replacement run, nor a fault log's run, which
    is taken only by its id), or with ``process="replacement"`` the newest run on
    ``fct_replacement_lives``. A run id gives that run, whatever it fitted (but repair times);
    ``process``, when given, must then be the run's.

    The rates are the run's ``fit_rates`` rows of the whole fleet (cohort ``all``): each class's
    headline, the interruption rate over the ages observed with its exact Poisson interval, at
    shape 1 (:func:`models.rates_from_failure_rates`). ``at_ages`` (a projection at given unit
    ages, not the steady state): each class's Weibull fit of the same run at its shape, its
    bounds those of the same headline (:func:`models.rates_from_fits` with ``at_ages=True``). A
    run stored before runs stored their rates is read from its ``fit_results`` rows as before
    (:func:`projection_fits`). Classes with no failure are left out (rate 0).

    ``if_none``: a run with no failure in any class gives no rates (``rates == ()``: the caller's
    own or default rates apply, and the caller says so) instead of an error.

    Raises
    ------
    MissingDataError
        No such fit run (saying whether there are unit lives to fit one from), a run with no
        rows, or, unless ``if_none``, a run with no failure in any class.
    ValueError
        A repair-time run, an unknown ``process``, or one that is not the given run's.
    """
    import polars as pl

    from pipelines.analysis.fit import quantity_of, read_fit, read_rates, run_lives

    if process is not None and process not in RATE_PROCESSES:
        msg = f"unknown rate process {process!r}; use one of: {', '.join(RATE_PROCESSES)}"
        raise ValueError(msg)
    run_id = None if run_id in (None, "latest") else run_id
    if run_id is None:
        wanted = process or "failure"
        run_id = _latest_run(con, _PROCESS_LIVES[wanted])
        if run_id is None:
            if wanted == "replacement":
                msg = (
                    "no fit run of replacement lives in the warehouse: run `relia fit --lives "
                    "fct_replacement_lives` first (it needs repairs/ tickets and a fleet/ register)"
                )
                raise ValueError(msg)
            raise no_fit_run(has_lives=_has_lives(con))
        lives = run_lives(con, run_id) or _PROCESS_LIVES["failure"]
    else:
        lives = run_lives(con, run_id) or _PROCESS_LIVES["failure"]
        if quantity_of(lives) == "repair_time":
            msg = (
                f"fit run {run_id} fitted repair times ({lives}), not lifetimes; give a lifetime "
                "run or 'latest' (a repair run goes to --repair-from-fits)"
            )
            raise ValueError(msg)
    run_process = "replacement" if quantity_of(lives) == "replacement" else "failure"
    if process is not None and process != run_process:
        msg = (
            f"fit run {run_id} fitted {lives} ({run_process} process), not the {process} "
            f"process; give a run of {_PROCESS_LIVES[process]} or 'latest'"
        )
        raise ValueError(msg)
    rows = read_fit(con, run_id)
    if rows.height == 0:
        raise empty_fit_run(run_id, has_lives=_has_lives(con))
    fits = rows.filter(pl.col("cohort") == "all")
    if fits.height == 0:
        msg = f"fit run {run_id} has no whole-fleet rows (cohort 'all'); refit without --by"
        raise ValueError(msg)
    stored = _read_rates_or_none(con, run_id, read_rates)
    out = FittedRates(run_id, lives, run_process, ())
    if stored is None:  # a run stored before runs stored their rates: its fit rows
        failing = projection_fits(fits)
        chosen = fits.filter(pl.col("chosen")) if "chosen" in fits.columns else fits
        left = chosen.filter(pl.col("n_failures") == 0)["component_class"].unique().sort()
        out = dataclasses.replace(out, left_out=tuple(left.to_list()), read_from="fit_results")
    else:
        failing = stored.filter(pl.col("n_failures") > 0)
        left = stored.filter(pl.col("n_failures") == 0)["component_class"].sort()
        out = dataclasses.replace(out, left_out=tuple(left.to_list()))
    if failing.height == 0:
        if if_none:
            return out
        raise no_failures(run_id)
    with warnings.catch_warnings():
        # classes fitted by a non-Weibull family are projected as exponential: said in the output
        warnings.simplefilter("ignore")
        if stored is None:
            rates = _rates_from_fit_rows(failing, at_ages=at_ages)
        else:
            rates = _rates_from_stored(failing, fits, at_ages=at_ages)
    return dataclasses.replace(out, rates=rates)


def _rates_from_fit_rows(failing: pl.DataFrame, *, at_ages: bool) -> tuple[ClassRate, ...]:
    from models import rates_from_fits

    return rates_from_fits(failing, at_ages=at_ages)


def _rates_from_stored(
    failing: pl.DataFrame, fits: pl.DataFrame, *, at_ages: bool
) -> tuple[ClassRate, ...]:
    """Rates from a run's ``fit_rates`` rows; at given ages each class's Weibull at its shape.

    At ages, a class's rows of ``fit_results`` (its families, with the Weibull one) are read with
    the headline of its ``fit_rates`` row (the same figures, computed once), so the Weibull's
    bounds are the stored headline's exact ones carried at its shape.
    """
    import polars as pl

    from models import rates_from_failure_rates, rates_from_fits

    if not at_ages:
        return rates_from_failure_rates(failing)
    headline = (
        "headline_method",
        "headline_mtbf_h",
        "headline_mtbf_lo_h",
        "headline_mtbf_hi_h",
    )
    if not {"headline_mtbf_h", "aic_weight", "lifetime_extrapolated"} <= set(fits.columns):
        return rates_from_failure_rates(failing)
    order = failing["component_class"].to_list()
    rows = (
        fits.filter(pl.col("component_class").is_in(order))
        .drop(headline, strict=False)
        .join(
            failing.select("component_class", *headline).with_columns(
                pl.col("component_class").cast(fits.schema["component_class"])
            ),
            on="component_class",
        )
    )
    with_fits = set(rows["component_class"].to_list())
    by_class = {r.component_class: r for r in rates_from_fits(rows, at_ages=True)}
    observed = {
        r.component_class: r
        for r in rates_from_failure_rates(
            failing.filter(~pl.col("component_class").is_in(with_fits))
        )
    }
    return tuple(by_class.get(name) or observed[name] for name in order)


def _latest_run(con: duckdb.DuckDBPyConnection, lives: str) -> str | None:
    """Return the newest run on ``lives``.

    For the failure process also runs stored before a run recorded its lives view (they fitted
    ``fct_component_lives``).
    """
    from pipelines.analysis.fit import run_ids, run_lives

    if lives != _PROCESS_LIVES["failure"]:
        return next(iter(run_ids(con, lives=lives)), None)
    for run_id in run_ids(con, quantity="lifetime"):
        if run_lives(con, run_id) in (None, lives):
            return run_id
    return None


def _read_rates_or_none(
    con: duckdb.DuckDBPyConnection,
    run_id: str,
    read: Callable[[duckdb.DuckDBPyConnection, str], pl.DataFrame],
) -> pl.DataFrame | None:
    """Return the run's whole-fleet ``fit_rates`` rows; None when it stored none.

    None for a run stored before runs stored their rates, or a warehouse without ``fit_rates``.
    """
    import duckdb
    import polars as pl

    try:
        rows = read(con, run_id)
    except duckdb.CatalogException:  # a warehouse made before fit_rates existed
        return None
    rows = rows.filter(pl.col("cohort") == "all")
    return rows if rows.height else None


def _has_lives(con: duckdb.DuckDBPyConnection) -> bool:
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


class MeasuredRestart(TypedDict):
    """The restart overhead the scheduler measured (:func:`measured_restart_s`).

    ``median_s`` (None with no measured restart) and ``n`` restarts: a JSON-shaped record,
    printed as ``measured_restart`` by ``relia project --json``.
    """

    median_s: float | None
    n: int


class MeasuredRepair(TypedDict):
    """Repair times measured from closed replacement tickets (:func:`measured_repair`).

    ``median_h``, ``sigma`` (of the log-normal) and ``n`` tickets: a JSON-shaped record,
    printed as ``measured_repair`` by ``relia project --json``.
    """

    median_h: float
    sigma: float
    n: int


def measured_restart_s(con: duckdb.DuckDBPyConnection) -> MeasuredRestart:
    """Median and count of measured restart overheads after hardware interruptions."""
    row = con.execute(
        "select median(restart_overhead_s), count(restart_overhead_s) "
        "from int_job_interruptions where attribution in $kinds",
        {"kinds": list(HARDWARE_ATTRIBUTIONS)},
    ).fetchone()
    assert row is not None  # an aggregate without group by returns one row
    return {"median_s": row[0], "n": int(row[1])}


def measured_repair(con: duckdb.DuckDBPyConnection) -> MeasuredRepair:
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


@dataclass(frozen=True)
class FittedRepair:
    """The repair-time law of a stored repair run (:func:`fitted_repair`); times in hours."""

    run_id: str | None
    lives: str | None  # the view the run fitted
    median_h: float  # exp(mu_) of the pooled log-normal
    sigma: float
    mttr_h: float | None  # the log-normal's mean, with its interval
    mttr_lo_h: float | None
    mttr_hi_h: float | None
    n_repairs: int
    n_repaired: int  # closed; the rest were open, right-censored
    chosen: bool  # whether the log-normal was the AIC choice of the pool

    def to_json_dict(self) -> dict[str, Any]:
        """Return the fields by name, as ``relia project --json`` prints them."""
        # the JSON edge (relia project --json, the stored projection)
        return dataclasses.asdict(self)


def fitted_repair(con: duckdb.DuckDBPyConnection, run_id: str | None = "latest") -> FittedRepair:
    """Return the repair-time law of a stored repair run: its pooled log-normal fit.

    The run is ``run_id`` or, for ``latest`` / None, the newest repair-time run (``relia fit
    --lives stg_repairs``, ``int_fault_repairs`` or ``int_node_unavailability``). Its pooled row
    (``component_class = 'all'``, every repair but planned work, cohort ``'all'``) of the
    log-normal family gives ``median_h = exp(mu_)`` and ``sigma = sigma_``.

    Returns
    -------
    FittedRepair
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

    from models import LogNormal
    from pipelines.analysis.fit import POOLED_CLASS, quantity_of, read_fit, run_lives

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
        & (pl.col("family") == LogNormal.name)
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
    return FittedRepair(
        run_id=run_id,
        lives=run_lives(con, str(run_id)),
        median_h=math.exp(params["mu_"]),
        sigma=float(params["sigma_"]),
        mttr_h=row["mtbf_h"],
        mttr_lo_h=row["mtbf_lo_h"],
        mttr_hi_h=row["mtbf_hi_h"],
        n_repairs=int(row["n_units"]),
        n_repaired=int(row["n_failures"]),
        chosen=bool(row["chosen"]),
    )


INVENTORY_BINS = 10
"""Most age bins an inventory's fleet age is grouped into (quantile bins)."""


class AgeBin(TypedDict):
    """One quantile bin of the units in service: mean ``age_h``, ``share`` of units, ``n_units``."""

    age_h: float
    share: float
    n_units: int


@dataclass(frozen=True)
class InventoryAges:
    """The ages of the units in service at the end of the data (:func:`inventory_ages`)."""

    as_of: datetime  # the observation window's end
    n_units: int
    bins: tuple[AgeBin, ...]
    fleet_age: tuple[tuple[float, float], ...]  # (age_h, share) pairs, as Scenario takes them

    def to_json_dict(self) -> dict[str, Any]:
        """Return ``as_of``, ``n_units`` and ``bins`` as ``relia project --json`` prints them."""
        # the JSON edge (relia project --json, relia whatif --json, the stored projection)
        return {"as_of": self.as_of, "n_units": self.n_units, "bins": [dict(b) for b in self.bins]}


def inventory_ages(
    con: duckdb.DuckDBPyConnection, *, n_bins: int = INVENTORY_BINS
) -> InventoryAges:
    """Return the ages of the units in service at the end of the warehouse's data, in quantile bins.

    Units are the unit lives of ``int_component_lives`` (one per slot generation, whatever its
    component classes) still open at the observation window's end; a unit's age is the hours
    from its ``installed_ts`` (the fleet's install, or the close of its last replacement) to
    that end. The units, sorted by age, are cut into at most ``n_bins`` bins of equal count
    (``ntile``); each bin is its mean age with share = its units / all units.

    Returns ``as_of`` (the window end), ``n_units``, ``bins`` (``{"age_h", "share",
    "n_units"}`` each) and ``fleet_age`` (``((age_h, share), ...)``).

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
    bins: list[AgeBin] = [
        {"age_h": max(float(r[1]), 0.0), "share": int(r[2]) / n_units, "n_units": int(r[2])}
        for r in rows
    ]
    return InventoryAges(
        as_of=rows[0][3],
        n_units=n_units,
        bins=tuple(bins),
        fleet_age=age_mix((b["age_h"], b["share"]) for b in bins),
    )


def _inventory_bins(con: duckdb.DuckDBPyConnection, n_bins: int) -> list[tuple[Any, ...]]:
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
