"""Back-test the goodput projection against the fleet's own jobs (docs/goodput.md §5).

:func:`run_backtest` reads the ledger (``fct_job_goodput``), the jobs' attempts
(``int_job_attempts``) and interruptions (``int_job_interruptions``), the unit lives in calendar
time (``int_component_lives``: ``observed_from_ts`` / ``observed_to_ts``) and the observation
window (``stg_observation_window``); :func:`models.backtest_jobs` projects every job as of its
first start and :func:`models.backtest_summary` sums per bucket and period; the run is stored
under a fresh run id in ``backtest_runs``, ``backtest_jobs`` and ``backtest_buckets``
(sql/schema/010_backtest.sql) and ``backtest_classes`` (sql/schema/012_backtest_classes.sql);
``rpt_projection_backtest`` and ``rpt_projection_backtest_classes`` show the latest run.

Decisions where the contract is silent (the prediction is made from each job's own figures):

- **Observed** interruptions are those whose ``cause_class`` is one of the fitted classes (the
  classes of ``int_component_lives``: every class of the failure process that failed, hardware
  or not, such as software, network or unplanned maintenance); ``ambiguous`` and ``unknown``
  ones are counted apart (``interruptions_unattributed``), the rest (application, planned
  maintenance with no failure of its class...) as ``interruptions_other``. Both of those enter
  the goodput prediction as a job-level rate (per job-hour, pooled over the jobs ended before
  the job's start), never the O/E. The failure process's class ``unknown`` (a node lost with no
  other signal) is left out of the fitted classes: an interruption of cause ``unknown`` cannot be
  told apart from one with no evidence at all, so it is neither observed nor expected.
- **Per class** (``backtest_classes``, :func:`models.backtest_class_summary`): the same observed
  and expected counts split by component class, per GPU bucket and ``all``, over the whole
  window; each class's expected counts add up to the bucket's.
- **Run time** of an attempt is clipped to the window's end (interruptions after it are not
  observed); units are the attempt's GPUs for GPU-level classes, its nodes for node-level ones.
- **Checkpoint interval and save** per job: a ``checkpoint_interval_s`` column of the ledger
  when it has one; else, with a save count (``n_checkpoints`` / ``n_saves`` column, or the
  ``checkpoint_save_end`` events of ``int_training_events``), ``(productive_s + slow_s) / n``
  and ``checkpoint_s / n`` (no save: the whole kept compute is one segment with no save); else, and
  for estimated ledgers, the ledger's ``assumed_checkpoint_interval_s`` /
  ``assumed_checkpoint_s`` (3600 s / 60 s when null). ``checkpoint_source`` says which.
- **Fixed overhead** ``startup_s + other_s``; **restart overhead** per interruption
  ``restart_s / n_interruptions`` (the fleet's as-of mean when the job had none), of which
  ``detect_s + reschedule_s`` is time the job holds no running nodes (no fault can strike it)
  and reload and warm-up the part Daly's model restarts when a fault strikes it. The "fleet"
  of these pooled means is the back-tested jobs (``n_gpus >= min_gpus``) ended before the start.
- **Fail-slow time** (the ledger's ``slow_s``, no longer in ``productive_s``) is compute the job
  kept at a slower pace: the prediction runs ``productive_s + slow_s`` of compute, so the
  measured slow time is in the predicted wall as in the measured one, and the measured and
  predicted goodputs (``productive_s`` over each wall) differ by the fail-stop model alone.
  ``backtest_jobs.slow_s`` keeps it. Fail-slow itself is not back-tested yet (the rank-pace
  projection needs episodes blamed on units: docs/goodput.md §5).
- **Interruptions from the ledger** (``interruption_causes``) when it lists them, else from
  ``int_job_interruptions``.
- **O/E intervals**: ``oe_lo`` / ``oe_hi`` (the view's) are Garwood's exact interval with the
  expected count taken as known, as the contract says; ``backtest_buckets`` adds
  ``interruptions_expected_sd`` and ``oe_fit_lo`` / ``oe_fit_hi``, which also carry the as-of
  fits' error (see :mod:`models.backtest_buckets`).
- A job starting before any life was observed (at the window's start) has no history: it is
  kept in ``backtest_jobs`` with ``has_history = false`` and left out of the buckets.
- A warehouse with no unit lives (nothing to predict interruptions from) or no finished job of
  ``min_gpus`` GPUs (nothing to compare with) has no back-test: :func:`run_backtest` raises
  :class:`~pipelines.runtime.errors.MissingDataError` naming what is missing and stores nothing.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import uuid
from dataclasses import dataclass
from datetime import UTC, datetime
from importlib.metadata import version
from typing import TYPE_CHECKING

import polars as pl

from models.backtest import backtest_jobs
from models.backtest_buckets import backtest_class_summary, backtest_summary
from pipelines import warehouse
from pipelines.runtime.errors import MissingDataError, WarehouseEmptyError, no_jobs, no_lives
from pipelines.warehouse import query

if TYPE_CHECKING:
    import duckdb

log = logging.getLogger(__name__)

ASSUMED_CHECKPOINT_INTERVAL_S = 3600.0
"""``assumed_checkpoint_interval_s`` default of the contract, when the ledger's is null."""
ASSUMED_CHECKPOINT_S = 60.0
"""``assumed_checkpoint_s`` default of the contract, when the ledger's is null."""
UNATTRIBUTED_CAUSES = ("ambiguous", "unknown")
SAVE_COUNT_COLUMNS = ("n_checkpoints", "n_saves", "n_checkpoint_saves")
"""Ledger columns read as the job's number of completed saves, first found first."""
LEDGER_COLUMNS = (
    *("job_id_raw", "n_gpus", "first_start_ts", "last_end_ts", "wall_s", "productive_s"),
    *("checkpoint_s", "startup_s", "other_s", "restart_s", "n_interruptions"),
)
"""Columns the ledger must have; ``slow_s`` is read when it is there (0 when not)."""

_WINDOW_SQL = """
select
    window_start,
    window_end,
    epoch(window_start) as start_s,
    epoch(window_end) as end_s
from stg_observation_window
"""
_LEDGER_SQL = "select * from fct_job_goodput where n_gpus >= $min_gpus"
_ATTEMPTS_SQL = """
select
    attempts.job_id_raw,
    epoch(attempts.start_ts) as start_s,
    epoch(least(attempts.end_ts, observation.window_end)) as end_s,
    attempts.n_gpus,
    attempts.n_nodes
from int_job_attempts as attempts
cross join stg_observation_window as observation
where
    attempts.start_ts is not null
    and attempts.end_ts is not null
"""
_INTERRUPTIONS_SQL = """
select
    job_id_raw,
    cause_class,
    count(*) as n
from int_job_interruptions
group by job_id_raw, cause_class
"""
_LIVES_SQL = """
select
    component_class,
    unit_level,
    epoch(observed_from_ts) as entry_s,
    epoch(observed_to_ts) as exit_s,
    failed
from int_component_lives
where component_class <> 'unknown'
"""
_COLUMNS_SQL = """
select column_name
from information_schema.columns
where table_schema = current_schema() and table_name = $name
"""
_SAVES_SQL = """
select
    job_id_raw,
    count(*) filter (where event = 'checkpoint_save_end') as n_saves
from int_training_events
where job_id_raw is not null
group by job_id_raw
"""
_RUN_SQL = """
insert into backtest_runs (
    run_id, created_at, window_start, window_end, min_gpus, alpha, n_jobs, n_projected,
    classes, checkpoint_from, versions
) values (
    $run_id, $created_at, $window_start, $window_end, $min_gpus, $alpha, $n_jobs, $n_projected,
    $classes, $checkpoint_from, $versions
)
"""
_INSERT_JOBS_SQL = "insert into backtest_jobs by name select * from incoming_backtest_jobs"
_INSERT_BUCKETS_SQL = "insert into backtest_buckets by name select * from incoming_backtest_buckets"
_INSERT_CLASSES_SQL = "insert into backtest_classes by name select * from incoming_backtest_classes"
_JOB_TABLE_COLUMNS = (
    *("run_id", "job_id_raw", "n_gpus", "bucket", "period", "first_start_ts", "last_end_ts"),
    *("estimated", "has_history", "wall_s", "productive_s", "slow_s", "overhead_s", "restart_s"),
    *("n_interruptions", "checkpoint_interval_s", "checkpoint_cost_s", "checkpoint_source"),
    *("run_h", "rate_per_h", "rate_lo_per_h", "rate_hi_per_h", "job_level_rate_per_h"),
    *("interruptions_observed", "interruptions_unattributed", "interruptions_other"),
    *("interruptions_expected", "interruptions_expected_lo", "interruptions_expected_hi"),
    *("restart_per_interruption_s", "restart_source", "predicted_wall_s"),
    *("predicted_wall_lo_s", "predicted_wall_hi_s", "goodput_measured", "goodput_predicted"),
    *("goodput_predicted_lo", "goodput_predicted_hi"),
)


@dataclass(frozen=True)
class BacktestRun:
    """A stored back-test run.

    Attributes
    ----------
    run_id
        Key of its rows in ``backtest_runs`` / ``backtest_jobs`` / ``backtest_buckets``.
    jobs
        The per-job rows as stored.
    buckets
        The per (bucket, period) rows as stored.
    classes
        The per (component class, bucket) rows as stored, over the whole window.
    """

    run_id: str
    jobs: pl.DataFrame
    buckets: pl.DataFrame
    classes: pl.DataFrame = dataclasses.field(default_factory=pl.DataFrame)
    """The per (class, bucket) rows as stored (``backtest_classes``)."""


def _columns(con: duckdb.DuckDBPyConnection, name: str) -> set[str]:
    return set(query(con, _COLUMNS_SQL, {"name": name})["column_name"].to_list())


def _save_counts(
    con: duckdb.DuckDBPyConnection, ledger: pl.DataFrame
) -> tuple[pl.DataFrame | None, str]:
    """Return completed saves per job (``job_id_raw``, ``n_saves``) and where they came from."""
    for column in SAVE_COUNT_COLUMNS:
        if column in ledger.columns:
            return ledger.select("job_id_raw", pl.col(column).alias("n_saves")), column
    if {"job_id_raw", "event"} <= _columns(con, "int_training_events"):
        return query(con, _SAVES_SQL), "int_training_events"
    return None, "assumed"


def _cause_counts(con: duckdb.DuckDBPyConnection, ledger: pl.DataFrame) -> pl.DataFrame:
    """Return each job's interruptions per cause class (``job_id_raw``, ``cause_class``, ``n``).

    From the ledger's ``interruption_causes`` when it has them (the same int_job_interruptions
    rows, already read), else from ``int_job_interruptions``.
    """
    if "interruption_causes" in ledger.columns:
        return (
            ledger.select("job_id_raw", pl.col("interruption_causes").alias("cause_class"))
            .explode("cause_class")
            .filter(pl.col("cause_class").is_not_null())
            .group_by("job_id_raw", "cause_class")
            .agg(pl.len().cast(pl.Int64).alias("n"))
        )
    return query(con, _INTERRUPTIONS_SQL)


def _interruption_counts(
    con: duckdb.DuckDBPyConnection, ledger: pl.DataFrame, classes: list[str]
) -> pl.DataFrame:
    """Return per job the interruptions observed, unattributed and other (by cause class).

    From the ledger's ``interruption_causes`` when it has them (the same int_job_interruptions
    rows, already read), else from ``int_job_interruptions``. ``ambiguous`` and ``unknown``
    causes are unattributed whatever the fitted classes.
    """
    counts = _cause_counts(con, ledger)
    kind = (
        pl.when(pl.col("cause_class").is_in(UNATTRIBUTED_CAUSES) | pl.col("cause_class").is_null())
        .then(pl.lit("interruptions_unattributed"))
        .when(pl.col("cause_class").is_in(classes))
        .then(pl.lit("interruptions_observed"))
        .otherwise(pl.lit("interruptions_other"))
    )
    wide = (
        counts.with_columns(kind.alias("kind"))
        .group_by("job_id_raw", "kind")
        .agg(pl.col("n").sum())
    )
    out = pl.DataFrame(schema={"job_id_raw": pl.String})
    if wide.height:
        out = wide.pivot(on="kind", index="job_id_raw", values="n")
    for name in ("interruptions_observed", "interruptions_unattributed", "interruptions_other"):
        if name not in out.columns:
            out = out.with_columns(pl.lit(0, pl.Int64).alias(name))
    return out


def _job_inputs(
    con: duckdb.DuckDBPyConnection, ledger: pl.DataFrame, classes: list[str]
) -> tuple[pl.DataFrame, str]:
    """Return the ledger shaped as :func:`models.backtest_jobs` reads, and the saves' source."""
    missing = [c for c in LEDGER_COLUMNS if c not in ledger.columns]
    if missing:
        msg = f"fct_job_goodput lacks columns {missing}: rebuild the views (relia ingest)"
        raise WarehouseEmptyError(msg)
    saves, saves_from = _save_counts(con, ledger)
    jobs = ledger.with_columns(
        pl.col("first_start_ts").dt.epoch("us").truediv(1e6).alias("first_start_s"),
        pl.col("last_end_ts").dt.epoch("us").truediv(1e6).alias("last_end_s"),
        (pl.col("startup_s").fill_null(0) + pl.col("other_s").fill_null(0)).alias("overhead_s"),
        (
            pl.col("detect_s").fill_null(0) + pl.col("reschedule_s").fill_null(0)
            if {"detect_s", "reschedule_s"} <= set(ledger.columns)
            else pl.lit(0.0)
        ).alias("restart_unexposed_s"),
        *(
            pl.lit(None, pl.Float64).alias(c)
            for c in ("assumed_checkpoint_interval_s", "assumed_checkpoint_s")
            if c not in ledger.columns
        ),
        *([] if "estimated" in ledger.columns else [pl.lit(False).alias("estimated")]),
    )
    if saves is not None and "n_saves" not in jobs.columns:
        jobs = jobs.join(saves, on="job_id_raw", how="left")
    if "n_saves" not in jobs.columns:
        jobs = jobs.with_columns(pl.lit(None, pl.Int64).alias("n_saves"))
    if "slow_s" not in jobs.columns:  # a ledger made before fail-slow
        jobs = jobs.with_columns(pl.lit(None, pl.Float64).alias("slow_s"))
    estimated = pl.col("estimated").fill_null(False)
    n = pl.col("n_saves").cast(pl.Float64)
    compute = pl.col("productive_s") + pl.col("slow_s").fill_null(0)  # at whatever pace
    tau_assumed = pl.col("assumed_checkpoint_interval_s").fill_null(ASSUMED_CHECKPOINT_INTERVAL_S)
    delta_assumed = pl.col("assumed_checkpoint_s").fill_null(ASSUMED_CHECKPOINT_S)
    given = (
        pl.col("checkpoint_interval_s")
        if "checkpoint_interval_s" in ledger.columns
        else pl.lit(None, pl.Float64)
    )
    jobs = jobs.with_columns(
        pl.when(estimated)
        .then(pl.lit("assumed"))
        .when(given.is_not_null())
        .then(pl.lit("column"))
        .when(n > 0)
        .then(pl.lit("measured"))
        .when(n == 0)
        .then(pl.lit("no_saves"))
        .otherwise(pl.lit("assumed"))
        .alias("checkpoint_source"),
    ).with_columns(
        pl.when(pl.col("checkpoint_source") == "assumed")
        .then(tau_assumed)
        .when(pl.col("checkpoint_source") == "column")
        .then(given)
        .when(pl.col("checkpoint_source") == "measured")
        .then(compute / n)
        .otherwise(compute)
        .cast(pl.Float64)
        .alias("checkpoint_interval_s"),
        pl.when(pl.col("checkpoint_source") == "assumed")
        .then(delta_assumed)
        .when(pl.col("checkpoint_source").is_in(["measured", "column"]) & (n > 0))
        .then(pl.col("checkpoint_s") / n)
        .when(pl.col("checkpoint_source") == "column")
        .then(delta_assumed)
        .otherwise(pl.lit(0.0))
        .cast(pl.Float64)
        .alias("checkpoint_cost_s"),
    )
    counts = _interruption_counts(con, ledger, classes)
    jobs = jobs.join(counts, on="job_id_raw", how="left").with_columns(
        pl.col("interruptions_observed", "interruptions_unattributed", "interruptions_other")
        .fill_null(0)
        .cast(pl.Int64)
    )
    return jobs, saves_from


def missing_inputs(con: duckdb.DuckDBPyConnection, *, min_gpus: int = 1) -> MissingDataError | None:
    """Return what the back-test lacks (no unit lives; no finished job of ``min_gpus``), or None.

    :func:`run_backtest` raises it; the report's section says it when no run is stored. It reads
    what the back-test reads (``int_component_lives``, ``fct_job_goodput``).
    """
    (n_lives,) = con.execute(
        "select count(*) from (select 1 from int_component_lives limit 1)"
    ).fetchone() or (0,)
    if not n_lives:
        return no_lives()
    (n_jobs,) = con.execute(
        "select count(*) from (select 1 from fct_job_goodput where n_gpus >= $min_gpus limit 1)",
        {"min_gpus": int(min_gpus)},
    ).fetchone() or (0,)
    return None if n_jobs else no_jobs(min_gpus)


def run_backtest(
    con: duckdb.DuckDBPyConnection, *, min_gpus: int = 1, alpha: float = 0.05
) -> BacktestRun:
    """Back-test the projection on every ledger job of at least ``min_gpus`` and store the run.

    Parameters
    ----------
    con
        A writable warehouse connection with the views built.
    min_gpus
        Smallest job (GPUs) back-tested (``relia goodput --min-gpus``).
    alpha
        The intervals cover ``1 - alpha``.

    Returns
    -------
    BacktestRun
        The run id and the rows stored (see sql/schema/010_backtest.sql for the columns).

    Raises
    ------
    ValueError
        ``fct_job_goodput`` lacks a contract column, or ``alpha`` is not in (0, 1).
    MissingDataError
        The warehouse has no unit lives, or no finished job of ``min_gpus`` GPUs or more.
    """
    if not 0.0 < alpha < 1.0:
        msg = f"alpha must lie in (0, 1), got {alpha}: e.g. 0.05 for 95 % intervals"
        raise ValueError(msg)
    missing = missing_inputs(con, min_gpus=min_gpus)
    if missing is not None:
        raise missing
    params = {"min_gpus": int(min_gpus)}
    window = query(con, _WINDOW_SQL).row(0, named=True)
    lives = query(con, _LIVES_SQL)
    classes = sorted(lives["component_class"].unique().to_list())
    ledger = query(con, _LEDGER_SQL, params)
    jobs, saves_from = _job_inputs(con, ledger, classes)
    attempts = query(con, _ATTEMPTS_SQL)  # backtest_jobs keeps those of the ledger's jobs
    rows = backtest_jobs(jobs, attempts, lives, alpha=alpha)
    mid_s = (window["start_s"] + window["end_s"]) / 2.0
    run_id = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ-") + uuid.uuid4().hex[:8]
    rows = rows.with_columns(
        pl.lit(run_id).alias("run_id"),
        pl.when(pl.col("first_start_s") < mid_s)
        .then(pl.lit("first half"))
        .otherwise(pl.lit("second half"))
        .alias("period"),
    )
    buckets = backtest_summary(
        rows, lives, window_start_s=window["start_s"], window_end_s=window["end_s"], alpha=alpha
    ).with_columns(pl.lit(run_id).alias("run_id"))
    by_class = backtest_class_summary(
        rows,
        lives,
        _cause_counts(con, ledger).rename({"cause_class": "component_class"}),
        alpha=alpha,
    ).with_columns(pl.lit(run_id).alias("run_id"))
    rows = rows.select(_JOB_TABLE_COLUMNS)
    versions = {pkg: version(pkg) for pkg in ("relia", "numpy", "scipy", "polars")}
    with warehouse.transaction(con):
        con.execute(
            _RUN_SQL,
            {
                "run_id": run_id,
                "created_at": datetime.now(UTC),
                "window_start": window["window_start"],
                "window_end": window["window_end"],
                "min_gpus": int(min_gpus),
                "alpha": float(alpha),
                "n_jobs": rows.height,
                "n_projected": int(rows["has_history"].sum()),
                "classes": ",".join(classes),
                "checkpoint_from": saves_from,
                "versions": json.dumps(versions),
            },
        )
        con.register("incoming_backtest_jobs", rows.to_arrow())
        con.execute(_INSERT_JOBS_SQL)
        con.unregister("incoming_backtest_jobs")
        con.register("incoming_backtest_buckets", buckets.to_arrow())
        con.execute(_INSERT_BUCKETS_SQL)
        con.unregister("incoming_backtest_buckets")
        if by_class.height:
            con.register("incoming_backtest_classes", by_class.to_arrow())
            con.execute(_INSERT_CLASSES_SQL)
            con.unregister("incoming_backtest_classes")
    return BacktestRun(
        run_id=run_id,
        jobs=rows,
        buckets=buckets.select("run_id", *buckets.columns[:-1]),
        classes=by_class.select("run_id", *by_class.columns[:-1]),
    )


def backtest_unless_missing(
    con: duckdb.DuckDBPyConnection, *, min_gpus: int = 1, alpha: float = 0.05
) -> BacktestRun | None:
    """:func:`run_backtest`, or None (nothing stored) when the warehouse lacks what it needs.

    The weekly report's back-test stage: its section then says what is missing
    (:func:`missing_inputs`); the ``backtest-goodput`` flow, whose only job this is, calls
    :func:`run_backtest` and fails with that line instead.
    """
    try:
        return run_backtest(con, min_gpus=min_gpus, alpha=alpha)
    except MissingDataError as error:
        log.info("back-test not run: %s", error)
        return None
