"""Fit reliability models on warehouse data and store the results (``fit_runs``, ``fit_results``).

I/O lives here; the statistics are in ``models``. A fit run reads unit lives from a view, fits every
component class (optionally split by cohort columns) with each distribution family, marks the AIC
choice, and stores one row per class x cohort x family under a fresh run id.

A run fits one of two quantities, named by its lives view (``fit_runs.lives``):

- ``lifetime`` (:data:`LIFETIME_VIEWS`): unit lives; ``mtbf_h`` is the mean time between failures.
- ``repair_time`` (:data:`REPAIR_VIEWS`): repair durations, one "life" per repair from the unit
  going down (``entry_h`` 0) to its return (``exit_h``; ``failed`` = repaired), an open repair
  right-censored at its age at the end of the data (``sql/intermediate/int_repair_lives.sql`` says
  where each source's end comes from). ``mtbf_h`` of these rows is the mean time to repair (MTTR).
  Besides the view's classes a repair run fits the pool of every repair
  (``component_class = 'all'``, :data:`POOLED_CLASS`) but planned work (class ``'planned'``), which
  is what projections take their repair-time law from. Repairs with no usable duration (open with
  no age, closed at their start, over before the window) are not fitted; the run counts them.

Projections and the report read lifetime runs only: :func:`latest_run_id` and :func:`read_fit`
default to ``quantity="lifetime"``.
"""

from __future__ import annotations

import json
import math
import uuid
import warnings
from dataclasses import dataclass
from datetime import UTC, datetime
from importlib.metadata import version
from typing import TYPE_CHECKING, Any, NotRequired, TypedDict, cast

import polars as pl

from pipelines import warehouse
from pipelines.analysis.lives_coverage import failures_outside_lives
from pipelines.runtime.errors import MissingDataError, WarehouseEmptyError, no_lives
from pipelines.runtime.settings import DEFAULT_LOCK_TIMEOUT_S, DEFAULT_READ_LOCK_TIMEOUT_S
from pipelines.warehouse import identifier as _identifier  # a SQL guard by that name
from pipelines.warehouse import query

if TYPE_CHECKING:
    from pathlib import Path

    import duckdb

LIFETIME_VIEWS = ("fct_component_lives", "fct_replacement_lives", "int_fault_lives")
"""Views of unit lives: a run on one of them fits lifetimes (MTBF)."""
REPAIR_VIEWS = ("int_fault_repairs", "int_node_unavailability", "stg_repairs")
"""Views of repairs (read through ``int_repair_lives``): a run on one fits repair times (MTTR)."""
LIVES_VIEWS = LIFETIME_VIEWS + REPAIR_VIEWS
QUANTITIES = ("lifetime", "replacement", "repair_time")
"""What a run fitted: ``lifetime`` the failure process (every job-stopping failure: times between
failures, :data:`LIFETIME_VIEWS` but ``fct_replacement_lives``), ``replacement`` the lives cut by
replace tickets (``fct_replacement_lives``: replacement AFR, spares), ``repair_time`` repairs."""
REPLACEMENT_VIEWS = ("fct_replacement_lives",)
PROCESSES = {
    "lifetime": "failure process: every job-stopping failure",
    "replacement": "replacement lifetimes: replace tickets",
    "repair_time": "repair times: from a unit going down to its return",
}
"""What a run of each quantity counts, in the words ``relia fit --json`` gives as ``process``."""
OPEN_END = (
    "an open bound is null (JSON null, SQL NULL, an empty CSV field; '≥ x' in text): with no "
    "failure the headline is the one-sided lower bound (headline_method chi_square_bound)"
)
"""How every output writes a missing point or an open interval end of a headline or rate."""
POOLED_CLASS = "all"
"""The component class of a repair run's pooled group: every repair but planned work."""
UNPOOLED_CLASSES = ("planned",)
"""Repair classes kept out of the pool (planned outages repair no failure)."""


@dataclass(frozen=True)
class FitRun:
    """A stored fit: its id, window and the result rows."""

    run_id: str
    window_start: datetime | None
    window_end: datetime | None
    results: pl.DataFrame


def open_as_null(frame: pl.DataFrame, columns: list[str] | None = None) -> pl.DataFrame:
    """``frame`` with NaN and infinite values of ``columns`` (default: every float) made null.

    The one representation of a missing point or an open interval end (:data:`OPEN_END`) in
    the tables a run stores and every reader of them: a class with no failure has no MTBF point
    and no upper bound, and its ``headline_method`` says why.
    """
    floats = [
        name
        for name, dtype in frame.schema.items()
        if dtype.is_float() and (columns is None or name in columns)
    ]
    return frame.with_columns(
        pl.when(pl.col(name).is_finite()).then(pl.col(name)).alias(name) for name in floats
    )


HEADLINE_FLOATS = (
    "mtbf_observed_h",
    "mtbf_observed_lo_h",
    "mtbf_observed_hi_h",
    "headline_mtbf_h",
    "headline_mtbf_lo_h",
    "headline_mtbf_hi_h",
)
"""The headline's columns in ``fit_results`` (the same numbers as ``fit_rates``')."""


def check_lives(view: str) -> str:
    """``view`` when it is a lives view; else a one-line ``ValueError`` listing the valid ones."""
    if view not in LIVES_VIEWS:
        msg = f"unknown lives view {view!r}; use one of: {', '.join(LIVES_VIEWS)}"
        raise ValueError(msg)
    return view


def quantity_of(lives: str | None) -> str:
    """Return what a run on ``lives`` fits: ``repair_time``, ``replacement`` or ``lifetime``.

    ``lifetime`` is the failure process; runs stored before ``lives`` was recorded are too.
    """
    if lives in REPAIR_VIEWS:
        return "repair_time"
    return "replacement" if lives in REPLACEMENT_VIEWS else "lifetime"


def read_lives(
    con: duckdb.DuckDBPyConnection, *, view: str = "fct_component_lives", dataset: str | None = None
) -> pl.DataFrame:
    """Read unit lives from ``view`` (``fct_component_lives`` or ``int_fault_lives`` for a dataset).

    For a repair view (:data:`REPAIR_VIEWS`) the rows of ``int_repair_lives`` from that view, every
    repair with its ``status``; those with no usable duration have a null ``exit_h`` (see
    :func:`repair_lives`).
    """
    check_lives(view)
    if view in REPAIR_VIEWS:
        where = "lives_view = $view" + ("" if dataset is None else " and dataset = $dataset")
        params = {"view": view} | ({} if dataset is None else {"dataset": dataset})
        return query(con, f"select * from int_repair_lives where {where}", params)
    if dataset is None:
        return query(con, f"select * from {_identifier(view)}")
    return query(
        con, f"select * from {_identifier(view)} where dataset = $dataset", {"dataset": dataset}
    )


def repair_lives(rows: pl.DataFrame) -> tuple[pl.DataFrame, dict[str, int]]:
    """Return the repairs to fit, with the pooled group, and the count of repairs by ``status``.

    Parameters
    ----------
    rows
        Rows of ``int_repair_lives`` (:func:`read_lives` on a repair view): ``component_class``,
        ``status``, ``entry_h``, ``exit_h`` (null when the repair has no usable duration),
        ``failed`` (repaired).

    Returns
    -------
    tuple
        The fittable repairs (``exit_h`` not null), then the same repairs again under
        ``component_class = 'all'`` but those of :data:`UNPOOLED_CLASSES`; and
        ``{"n_repairs", "n_repaired", "n_open", "n_open_no_age", "n_no_length",
        "n_before_window"}`` over every row, fitted or not.
    """
    statuses = ("repaired", "open", "open_no_age", "no_length", "before_window")
    counts = {"n_repairs": rows.height} | {
        f"n_{status}": int((rows.get_column("status") == status).sum()) for status in statuses
    }
    usable = rows.filter(pl.col("exit_h").is_not_null())
    pooled = usable.filter(~pl.col("component_class").is_in(UNPOOLED_CLASSES)).with_columns(
        component_class=pl.lit(POOLED_CLASS)
    )
    return pl.concat([usable, pooled]), counts


def read_window(con: duckdb.DuckDBPyConnection) -> tuple[datetime | None, datetime | None]:
    """Read the observation window of the warehouse's telemetry."""
    row = con.execute("select window_start, window_end from stg_observation_window").fetchone()
    return (row[0], row[1]) if row else (None, None)


def cohort_labels(frame: pl.DataFrame, by: list[str]) -> pl.Series:
    """``'all'`` or ``'batch=old,rack=r1'`` for each row of a fit table split by ``by``."""
    if not by:
        return pl.Series("cohort", ["all"] * frame.height, dtype=pl.String)
    parts = [pl.lit(f"{col}=") + pl.col(col).cast(pl.String).fill_null("null") for col in by]
    return frame.select(pl.concat_str(parts, separator=",").alias("cohort")).to_series()


def parse_weibayes_shape(text: str | None) -> float | dict[str, float] | None:
    """Parse ``--weibayes-shape``: ``1.3`` for every class, or ``gpu=1.3,nic=0.9`` per class.

    The same text as a projection's ``--weibull-shape``
    (:func:`pipelines.analysis.knobs.weibull_shape`).
    """
    from pipelines.analysis.knobs import weibull_shape

    return weibull_shape(text, where="--weibayes-shape")


def fit_table(
    lives: pl.DataFrame,
    *,
    by: list[str] | None = None,
    families: tuple[str, ...] | None = None,
    alpha: float = 0.05,
    weibayes_shape: float | dict[str, float] | None = None,
    headline: str = "observed_rate",
) -> pl.DataFrame:
    """Fit every component class (x cohort) and family; the table ``fit_results`` stores.

    ``weibayes_shape``: the known Weibull shape of groups with 1 to 5 failures (one for every
    class, or per class); ``headline``: ``observed_rate`` for lives, ``lifetime_mean`` for repair
    times (an MTTR); see :func:`models.fit_lives`.

    Besides :func:`models.fit_lives`' columns, ``ad_statistic`` is the Anderson-Darling distance
    (:func:`models.goodness_of_fit`) between each group's product limit and the row's fit: lower
    is a closer fit, for comparing families within a group. NaN where the fit has no finite
    parameters (not converged, or no failures). ``families`` defaults to every registered family
    (:data:`models.FAMILIES`).
    """
    from models import FAMILIES, fit_lives

    cohorts = list(by or [])
    missing = [c for c in ["component_class", *cohorts] if c not in lives.columns]
    if missing:
        msg = f"lives lack the column(s) {missing}; cohort columns are {sorted(lives.columns)}"
        raise ValueError(msg)
    levels = (
        lives.group_by("component_class").agg(pl.col("unit_level").first())
        if "unit_level" in lives.columns
        else lives.select("component_class")
        .unique()
        .with_columns(unit_level=pl.lit(None, pl.String))
    )
    fitted = fit_lives(
        lives,
        by=("component_class", *cohorts),
        families=FAMILIES if families is None else families,
        alpha=alpha,
        weibayes_shape=weibayes_shape,
        headline=headline,
    )
    fitted = fitted.with_columns(
        ad_statistic=ad_statistics(lives, fitted, by=["component_class", *cohorts])
    )
    fitted = open_as_null(fitted, list(HEADLINE_FLOATS))
    return (
        fitted.with_columns(cohort=cohort_labels(fitted, cohorts))
        .drop(cohorts)
        .join(levels, on="component_class", how="left")
    )


def ad_statistics(lives: pl.DataFrame, fitted: pl.DataFrame, *, by: list[str]) -> pl.Series:
    """Return the Anderson-Darling statistic of each row of a :func:`models.fit_lives` table.

    ``lives`` are grouped by the same ``by`` columns; each row's ``params_json`` is scored
    against its group's lives (:func:`models.goodness_of_fit`). NaN where a parameter is missing
    or not finite.
    """
    from models import goodness_of_fit_families

    groups = lives.partition_by(by, as_dict=True, maintain_order=True) if by else {(): lives}
    wanted: dict[tuple[Any, ...], dict[str, dict[str, float]]] = {}
    for row in fitted.iter_rows(named=True):
        params = json.loads(row["params_json"] or "{}")
        if params and all(v is not None for v in params.values()):
            wanted.setdefault(tuple(row[c] for c in by), {})[row["family"]] = params
    scores = {key: goodness_of_fit_families(groups[key], fits) for key, fits in wanted.items()}
    values = [
        scores.get(tuple(row[c] for c in by), {}).get(row["family"], math.nan)
        for row in fitted.iter_rows(named=True)
    ]
    return pl.Series("ad_statistic", values, dtype=pl.Float64)


def store_fit(
    con: duckdb.DuckDBPyConnection,
    results: pl.DataFrame,
    *,
    by: list[str],
    window: tuple[datetime | None, datetime | None],
    lives: str = "fct_component_lives",
    rates: pl.DataFrame | None = None,
) -> str:
    """Write a fit run (``lives``: the view it fitted) and its rows in one transaction; its id.

    ``rates``: the run's interruption rates (:func:`rate_table`), stored in ``fit_rates`` in the
    same transaction; the one place every reader takes a class's headline from.

    Raises
    ------
    MissingDataError
        When ``results`` has no row: a run with nothing in it is never stored (every reader of
        the latest run would find nothing to read).
    """
    if results.height == 0:
        raise _no_repairs(lives) if quantity_of(lives) == "repair_time" else no_lives(lives)
    run_id = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ-") + uuid.uuid4().hex[:8]
    versions = {pkg: version(pkg) for pkg in ("relia", "lifelines", "numpy", "scipy")}
    rows = results.with_columns(run_id=pl.lit(run_id))
    with warehouse.transaction(con):
        con.execute(
            "insert into fit_runs (run_id, created_at, window_start, window_end, by_columns, "
            "versions, lives) values ($id, $now, $start, $end, $by, $versions, $lives)",
            {
                "lives": lives,
                "id": run_id,
                "now": datetime.now(UTC),
                "start": window[0],
                "end": window[1],
                "by": ",".join(by),
                "versions": json.dumps(versions),
            },
        )
        con.register("incoming_fits", rows.to_arrow())
        con.execute("insert into fit_results by name select * from incoming_fits")
        con.unregister("incoming_fits")
        if rates is not None and rates.height:
            con.register("incoming_rates", rates.with_columns(run_id=pl.lit(run_id)).to_arrow())
            con.execute("insert into fit_rates by name select * from incoming_rates")
            con.unregister("incoming_rates")
    return run_id


def rate_lives(lives: pl.DataFrame) -> pl.DataFrame:
    """Lives in the shape :func:`models.failure_rates` reads.

    ``fct_component_lives`` and ``fct_replacement_lives`` have it. A fault log's
    ``int_fault_lives`` names its units by ``unit_id`` (a node of the trace) with no level: each
    unit is a node-level unit (``node`` = ``unit_id``, one slot per class), and its calendar
    columns are the hours of ``observed_from_ts`` / ``observed_to_ts`` since the data set's first
    observation.
    """
    if {"unit_level", "node", "slot"} <= set(lives.columns):
        return lives
    out = lives.with_columns(
        unit_level=pl.lit("node"),
        node=pl.col("unit_id").cast(pl.String),
        slot=pl.col("component_class"),
    )
    if {"observed_from_ts", "observed_to_ts"} <= set(out.columns) and out.height:
        start = out["observed_from_ts"].min()
        out = out.with_columns(
            window_entry_h=(pl.col("observed_from_ts") - pl.lit(start)).dt.total_seconds() / 3600.0,
            window_exit_h=(pl.col("observed_to_ts") - pl.lit(start)).dt.total_seconds() / 3600.0,
        )
    return out


def rate_table(
    lives: pl.DataFrame, *, by: list[str] | None = None, alpha: float = 0.05
) -> pl.DataFrame:
    """Interruption rates per class (x cohort) as ``fit_rates`` stores them (no ``run_id``).

    :func:`models.failure_rates` on the lives (:func:`rate_lives`), its cohort columns folded
    into the ``cohort`` label (:func:`cohort_labels`); a missing point or open bound (the MTBF
    of a class with no failure) is null (:func:`open_as_null`).
    """
    from models import failure_rates

    cohorts = list(by or [])
    rates = failure_rates(rate_lives(lives), by=("component_class", *cohorts), alpha=alpha)
    return open_as_null(rates.with_columns(cohort=cohort_labels(rates, cohorts)).drop(cohorts))


def read_rates(con: duckdb.DuckDBPyConnection, run_id: str) -> pl.DataFrame:
    """Read the ``fit_rates`` rows of a run (none for a repair run or one stored before rates)."""
    return query(
        con,
        "select * from rpt_class_rates where run_id = $id order by component_class, cohort",
        {"id": run_id},
    )


def stored_rates(
    con: duckdb.DuckDBPyConnection, run_id: str, *, cohort: str = "all"
) -> pl.DataFrame | None:
    """Return a stored run's rates of one ``cohort`` (:func:`read_rates`).

    None when the warehouse has no ``rpt_class_rates`` view (written by a relia that stored no
    rates, opened read-only); an empty frame when the run stored none.
    """
    found = con.execute(
        "select count(*) from duckdb_views() where view_name = 'rpt_class_rates'"
    ).fetchone()
    if not found or not found[0]:
        return None
    return read_rates(con, run_id).filter(pl.col("cohort") == cohort)


def _no_repairs(view: str) -> MissingDataError:
    return MissingDataError(
        f"no repairs with a duration in {view}",
        "ingest repairs/ tickets, node_events/ or a fault_log/ with `relia ingest LANDING`",
    )


def _runs(con: duckdb.DuckDBPyConnection) -> list[tuple[str, str | None]]:
    """``(run_id, lives)`` of every fit run, newest first (``lives`` None before it was stored).

    None at all in a warehouse without ``fit_runs`` (a DuckDB file with no schema yet).
    """
    columns = {
        row[0]
        for row in con.execute(
            "select column_name from information_schema.columns "
            "where table_schema = current_schema() and table_name = 'fit_runs'"
        ).fetchall()
    }
    if not columns:
        return []
    lives = "lives" if "lives" in columns else "cast(null as varchar)"
    return [
        (row[0], row[1])
        for row in con.execute(
            f"select run_id, {lives} from fit_runs order by created_at desc, run_id desc"
        ).fetchall()
    ]


def run_ids(
    con: duckdb.DuckDBPyConnection, *, quantity: str | None = "lifetime", lives: str | None = None
) -> list[str]:
    """Fit runs, newest first, of one ``quantity`` (None: any) and ``lives`` view (None: any).

    A ``lives`` view fixes the quantity (``quantity`` is then ignored). Runs stored before
    ``fit_runs.lives`` existed were lifetime runs; they match no ``lives``.
    """
    if lives is not None:
        quantity = quantity_of(check_lives(lives))
    if quantity is not None and quantity not in QUANTITIES:
        msg = f"unknown quantity {quantity!r}; use one of: {', '.join(QUANTITIES)}"
        raise ValueError(msg)
    return [
        run_id
        for run_id, view in _runs(con)
        if (quantity is None or quantity_of(view) == quantity) and lives in (None, view)
    ]


def latest_run_id(
    con: duckdb.DuckDBPyConnection, *, quantity: str | None = "lifetime", lives: str | None = None
) -> str | None:
    """Return the most recent fit run of ``quantity`` (default lifetimes; None: any), if any.

    With ``lives`` the most recent run on that view (of its quantity).
    """
    ids = run_ids(con, quantity=quantity, lives=lives)
    return ids[0] if ids else None


def run_lives(con: duckdb.DuckDBPyConnection, run_id: str) -> str | None:
    """Return the lives view a stored run fitted (None for runs stored before it was recorded).

    Raises
    ------
    ValueError
        When no fit run has that id.
    """
    for found, view in _runs(con):
        if found == run_id:
            return view
    msg = (
        f"no fit run {run_id!r} in the warehouse; `relia fit` prints the ids of the runs it stores"
    )
    raise ValueError(msg)


def read_fit(
    con: duckdb.DuckDBPyConnection, run_id: str | None = None, *, quantity: str = "lifetime"
) -> pl.DataFrame:
    """Read the rows of a fit run (the latest of ``quantity`` when ``run_id`` is None)."""
    run_id = run_id or latest_run_id(con, quantity=quantity)
    if run_id is None:
        what = "repair-time fit run" if quantity == "repair_time" else "fit run"
        hint = " --lives stg_repairs (or another repair view)" if quantity == "repair_time" else ""
        msg = f"no {what} in the warehouse yet; run `relia fit{hint}` first"
        raise WarehouseEmptyError(msg)
    return query(
        con,
        "select * from fit_results where run_id = $id order by component_class, cohort, family",
        {"id": run_id},
    )


def read_node_recurrence(con: duckdb.DuckDBPyConnection) -> pl.DataFrame:
    """Failures per node on the calendar scale (``fct_node_recurrence``)."""
    return query(con, "select * from fct_node_recurrence order by node, time_h")


@dataclass(frozen=True)
class Trend:
    """Is the fleet improving or degrading, and which nodes fail too often."""

    crow_amsaa: Any
    laplace: Any
    lemons: pl.DataFrame
    mcf: pl.DataFrame
    n_nodes: int
    n_failures: int


def fleet_trend(
    recurrence: pl.DataFrame, *, alpha: float = 0.05, lemon_alpha: float = 0.01
) -> Trend:
    """Crow-AMSAA (pooled over nodes), Laplace test, lemon nodes and MCF from node recurrences."""
    from models import crow_amsaa_fleet, laplace_test, lemon_nodes, mean_cumulative_function

    if recurrence.height == 0:
        msg = "no nodes in fct_node_recurrence; ingest telemetry first (relia ingest PATH)"
        raise WarehouseEmptyError(msg)
    events = recurrence.select(pl.col("node").alias("unit_id"), "time_h", "start_h", "end_h")
    failures = events.filter(pl.col("time_h").is_not_null())
    window_h = float(cast("float | None", events["end_h"].max()) or 0.0)
    counts = recurrence.group_by("node").agg(
        pl.col("time_h").is_not_null().sum().alias("n_failures"),
        (pl.col("end_h").first() - pl.col("start_h").first()).alias("exposure_h"),
        pl.col("component_class").drop_nulls().unique().sort().str.join(",").alias("classes"),
    )
    lemons = lemon_nodes(
        counts.rename({"node": "unit_id"}),
        unit_col="unit_id",
        failures_col="n_failures",
        exposure_col="exposure_h",
        alpha=lemon_alpha,
    ).join(counts.select(pl.col("node").alias("unit_id"), "classes"), on="unit_id", how="left")
    return Trend(
        crow_amsaa=crow_amsaa_fleet(events, alpha=alpha) if failures.height >= 2 else None,
        laplace=laplace_test(failures["time_h"].to_numpy(), window_h, alpha=alpha)
        if failures.height >= 2
        else None,
        lemons=lemons,
        mcf=mean_cumulative_function(events, alpha=alpha),
        n_nodes=counts.height,
        n_failures=failures.height,
    )


class FitOutcome(TypedDict):
    """What :func:`run_fit` stored and returns (read by the CLI and the fit-reliability flow)."""

    run_id: str
    results: pl.DataFrame  # the fit_results rows of the run, one per class x cohort x family
    lives: str  # the view the lives came from
    quantity: str  # "lifetime", "replacement" or "repair_time"
    rates: NotRequired[pl.DataFrame]  # lifetime and replacement runs: rpt_class_rates' rows
    repairs: NotRequired[dict[str, int]]  # repair runs: repairs by status (see repair_lives)
    outside_lives: NotRequired[list[dict[str, Any]]]  # failure runs: window failures in no life


def run_fit(
    db_path: Path,
    *,
    by: list[str] | None = None,
    lives: str = "fct_component_lives",
    dataset: str | None = None,
    alpha: float = 0.05,
    lock_timeout_s: float = DEFAULT_LOCK_TIMEOUT_S,
    weibayes_shape: float | dict[str, float] | None = None,
) -> FitOutcome:
    """Run :func:`fit_and_store` on the warehouse at ``db_path``, opened for this run.

    For scripts and notebooks that hold a path, not a connection; it waits ``lock_timeout_s``
    for another writer.
    """
    check_lives(lives)
    with warehouse.connect(db_path, lock_timeout_s=lock_timeout_s) as con:
        return fit_and_store(
            con, by=by, lives=lives, dataset=dataset, alpha=alpha, weibayes_shape=weibayes_shape
        )


def fit_and_store(
    con: duckdb.DuckDBPyConnection,
    *,
    by: list[str] | None = None,
    lives: str = "fct_component_lives",
    dataset: str | None = None,
    alpha: float = 0.05,
    weibayes_shape: float | dict[str, float] | None = None,
) -> FitOutcome:
    """Read lives, fit every class x cohort x family, store the run.

    ``con`` is a writable warehouse connection (the caller opens it and waits for the lock).
    Returns a :class:`FitOutcome`: ``{run_id, results, lives, quantity}``; a repair run
    (``lives`` in :data:`REPAIR_VIEWS`) also has ``repairs``, the counts of
    :func:`repair_lives`; a lifetime or replacement run ``rates``, its interruption (or
    replacement) rates as stored, read back through ``rpt_class_rates`` (:func:`read_rates`).
    In a repair run's rows ``mtbf_h`` is the MTTR and ``afr_pct`` / ``fit_per_1e9h`` are null
    (no failure rate).
    """
    check_lives(lives)
    quantity = quantity_of(lives)
    counts = None
    warehouse.apply_schema(con)
    # a warehouse ingested by an older relia lacks the newer views (rpt_class_rates, ...)
    warehouse.create_views(con, only_if_changed=True)
    frame = read_lives(con, view=lives, dataset=dataset)
    if quantity == "repair_time":
        frame, counts = repair_lives(frame)
    if frame.height == 0:
        raise _no_repairs(lives) if quantity == "repair_time" else no_lives(lives)
    results = fit_table(
        frame,
        by=by,
        alpha=alpha,
        weibayes_shape=weibayes_shape,
        # an MTTR is the mean of the repair times, not a rate over the ages observed
        headline="lifetime_mean" if quantity == "repair_time" else "observed_rate",
    )
    if quantity == "repair_time":
        results = results.with_columns(
            afr_pct=pl.lit(None, pl.Float64), fit_per_1e9h=pl.lit(None, pl.Float64)
        )
    rates = None if quantity == "repair_time" else rate_table(frame, by=by, alpha=alpha)
    windowed = (
        "fct_component_lives",
        "fct_replacement_lives",
        "stg_repairs",
        "int_node_unavailability",
    )
    window = read_window(con) if lives in windowed else (None, None)
    run_id = store_fit(con, results, by=list(by or []), window=window, lives=lives, rates=rates)
    if rates is not None:  # as every reader sees them: the stored rows, through the view
        rates = read_rates(con, run_id)
    outside = failures_outside_lives(con) if lives == "fct_component_lives" else None
    outcome: FitOutcome = {
        "run_id": run_id,
        "results": results.with_columns(run_id=pl.lit(run_id)),
        "lives": lives,
        "quantity": quantity,
    }
    if counts is not None:
        outcome["repairs"] = counts
    if rates is not None:
        outcome["rates"] = rates
    if outside is not None:
        outcome["outside_lives"] = outside
    return outcome


def run_cox(
    db_path: Path,
    covariates: list[str],
    *,
    lives: str = "fct_component_lives",
    dataset: str | None = None,
    alpha: float = 0.05,
    lock_timeout_s: float = DEFAULT_READ_LOCK_TIMEOUT_S,
) -> pl.DataFrame:
    """Open the warehouse at ``db_path`` read-only and return :func:`cox_table` of its lives."""
    with warehouse.connect(db_path, read_only=True, lock_timeout_s=lock_timeout_s) as con:
        frame = read_lives(con, view=lives, dataset=dataset)
    return _cox_of_lives(frame, covariates, lives=lives, alpha=alpha)


def cox_table(
    con: duckdb.DuckDBPyConnection,
    covariates: list[str],
    *,
    lives: str = "fct_component_lives",
    dataset: str | None = None,
    alpha: float = 0.05,
) -> pl.DataFrame:
    """Cox proportional-hazards ratios per component class with failures, on ``covariates``."""
    frame = read_lives(con, view=lives, dataset=dataset)
    return _cox_of_lives(frame, covariates, lives=lives, alpha=alpha)


def _cox_of_lives(
    frame: pl.DataFrame, covariates: list[str], *, lives: str, alpha: float
) -> pl.DataFrame:
    """Fit Cox PH per component class of ``frame`` (the lives of ``lives``) on ``covariates``."""
    from lifelines.exceptions import ConvergenceError

    from models import cox_ph
    from models.exceptions import ConvergenceWarning as ModelConvergenceWarning

    if lives in REPAIR_VIEWS:
        frame = frame.filter(pl.col("exit_h").is_not_null())
    missing = [c for c in covariates if c not in frame.columns]
    if missing:
        msg = f"unknown covariate(s) {missing}; lives have columns {sorted(frame.columns)}"
        raise ValueError(msg)
    tables = []
    for (component_class,), group in frame.group_by("component_class", maintain_order=True):
        if group["failed"].sum() < 5 or any(group[c].n_unique() < 2 for c in covariates):
            continue
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", ModelConvergenceWarning)
            try:
                table = cox_ph(group, covariates, alpha=alpha)
            except ConvergenceError as error:
                # typically a covariate level with no failures: its log hazard ratio runs to -inf
                reason = str(error).split(".")[0]
                table = pl.DataFrame({"covariate": ["(not estimable)"], "note": [reason]})
        if caught and "note" not in table.columns:
            table = table.with_columns(note=pl.lit(str(caught[0].message).split(".")[0]))
        tables.append(table.with_columns(component_class=pl.lit(component_class)))
    if not tables:
        msg = "no component class has at least 5 failures and two levels of every covariate"
        raise WarehouseEmptyError(msg)
    return pl.concat(tables, how="diagonal_relaxed").select(
        "component_class", pl.exclude("component_class")
    )
