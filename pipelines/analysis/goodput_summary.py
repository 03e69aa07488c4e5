"""Measured goodput and the back-test behind ``relia goodput`` and the report: rows from the marts.

Reads only the three marts of issue #16 (docs/goodput.md): ``fct_job_goodput`` (one ledger row
per job, §3), ``rpt_fleet_goodput`` (the roll-up by ``dimension`` and ``value``, §4) and
``rpt_projection_backtest`` (the latest back-test run per ``bucket`` and ``period``, §5), and
``rpt_projection_backtest_classes`` (the same run per component class and ``bucket``). The
views are the one home of the arithmetic; this module selects, orders and labels.

Decisions where the contract is silent:

* ``fleet`` and ``backtest`` rows carry exactly the contract's columns, in its order, whatever
  else a view adds; ``jobs`` rows carry every column of ``fct_job_goodput``.
* ``min_gpus`` filters the ``jobs`` list here. The roll-up is over every ledger job, and the
  back-test rows are those of the latest run, made with that run's own minimum size
  (``relia goodput`` back-tests with its ``--min-gpus`` first, unless ``--stored``).
* Rows come in a reading order: dimensions ``all``, ``gpu_bucket`` (small to large),
  ``account``, ``iso_week``; back-test buckets small to large then ``all``, periods ``all``,
  ``first half``, ``second half``. A value the contract does not name sorts after the named
  ones, by its text.
"""

from __future__ import annotations

import math
from decimal import Decimal
from typing import TYPE_CHECKING, Any, TypeGuard

if TYPE_CHECKING:
    import duckdb

__all__ = [
    "BACKTEST_CLASS_COLUMNS",
    "BACKTEST_COLUMNS",
    "DIMENSIONS",
    "FLEET_COLUMNS",
    "GOODPUT_VIEWS",
    "GPU_BUCKETS",
    "LOG_COLUMNS",
    "PERIODS",
    "SLOW_COLUMNS",
    "TIES",
    "backtest_class_rows",
    "backtest_rows",
    "fleet_columns",
    "fleet_rows",
    "goodput_summary",
    "job_columns",
    "job_rows",
    "log_rows",
    "missing_goodput_views",
    "nothing_expected",
    "oe_verdict",
    "slow_missing",
]

GOODPUT_VIEWS = ("fct_job_goodput", "rpt_fleet_goodput", "rpt_projection_backtest")
"""The marts ``relia goodput`` reads (docs/goodput.md §3 to §5)."""
GPU_BUCKETS = ("1-8", "9-64", "65-512", "513-4096", "4097+")
"""Job-size buckets (GPUs), small to large (docs/goodput.md §4)."""
DIMENSIONS = ("all", "gpu_bucket", "account", "iso_week")
"""Dimensions of ``rpt_fleet_goodput``, in the order they print."""
PERIODS = ("all", "first half", "second half")
"""Back-test periods (docs/goodput.md §5), in the order they print."""
FLEET_COLUMNS = (
    "dimension",
    "value",
    "n_jobs",
    "gpu_hours",
    "goodput_gpu_hours",
    "goodput_jobs",
    "productive_share",
    "checkpoint_share",
    "wasted_share",
    "restart_share",
    "startup_share",
    "other_share",
    "n_measured",
    "n_estimated",
)
"""Columns of a ``fleet`` row (docs/goodput.md §4)."""
SLOW_COLUMNS = (
    "slow_share",
    "failstop_share",
    "failslow_share",
    "failstop_share_jobs",
    "failslow_share_jobs",
    "failstop_gpu_hours",
    "failslow_gpu_hours",
    "n_slow_measured",
    "n_slow_jobs",
)
"""Columns a ``fleet`` row has after :data:`FLEET_COLUMNS`: fail-slow and the badput split by
cause (docs/goodput.md §4, §7); only those the warehouse's ``rpt_fleet_goodput`` has (one made
before fail-slow has none)."""
BACKTEST_COLUMNS = (
    "bucket",
    "period",
    "n_jobs",
    "interruptions_observed",
    "interruptions_expected",
    "oe_ratio",
    "oe_lo",
    "oe_hi",
    "goodput_measured",
    "goodput_predicted",
    "goodput_predicted_lo",
    "goodput_predicted_hi",
)
"""Columns of a ``backtest`` row (issue #16 §5, docs/goodput.md §5); :func:`backtest_rows` adds
``verdict`` after them."""
BACKTEST_CLASS_COLUMNS = (
    "component_class",
    "unit_level",
    "bucket",
    "n_jobs",
    "interruptions_observed",
    "interruptions_expected",
    "oe_ratio",
    "oe_lo",
    "oe_hi",
)
"""Columns of a ``backtest_classes`` row (``rpt_projection_backtest_classes``);
:func:`backtest_class_rows` adds ``verdict`` after them."""

_PRESENT = (
    "select table_name from information_schema.tables "
    "where table_schema = current_schema() and table_name in ($a, $b, $c)"
)
_JOBS = (
    "select * from fct_job_goodput where n_gpus >= $min_gpus order by first_start_ts, job_id_raw"
)
_FLEET_PRESENT = (
    "select column_name from information_schema.columns "
    "where table_schema = current_schema() and table_name = 'rpt_fleet_goodput'"
)
_BACKTEST = "select " + ", ".join(BACKTEST_COLUMNS) + " from rpt_projection_backtest"
_BACKTEST_CLASSES = (
    "select " + ", ".join(BACKTEST_CLASS_COLUMNS) + " from rpt_projection_backtest_classes"
)
LOG_COLUMNS = (
    "source_file",
    "tie",
    "job_id_raw",
    "candidates",
    "job_id",
    "host",
    "framework",
    "n_events",
)
"""Columns of a ``logs`` row (``rpt_training_log_ties``, docs/goodput.md §2)."""
_LOGS = (
    "select "
    + ", ".join(LOG_COLUMNS)
    + " from rpt_training_log_ties order by tie = 'job_id', tie = 'host_time', source_file"
)
TIES = ("ambiguous", "none", "host_time", "job_id")
"""How a training log was tied to its job (``rpt_training_log_ties.tie``), the ones that need a
person's attention first."""


def _finite(value: object) -> TypeGuard[float]:
    return isinstance(value, int | float) and math.isfinite(value)


# JSON rows (relia goodput --json, Prefect artifact rows): dicts are the edge
def _plain(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    # a DECIMAL (a view's VALUES literal or a cast) would print as text in JSON: make it a float
    return [{k: float(v) if isinstance(v, Decimal) else v for k, v in row.items()} for row in rows]


def oe_verdict(row: dict[str, Any]) -> str:
    """Return what a back-test row's O/E interval says against 1.

    ``"more than predicted"`` when the whole interval lies above 1, ``"fewer than predicted"``
    when it lies below, ``"as predicted"`` when it covers 1, ``"nothing expected"`` when no
    interruption was expected (the ratio is undefined) or both bounds are missing.
    """
    lo, hi = row.get("oe_lo"), row.get("oe_hi")
    if nothing_expected(row) or (not _finite(lo) and not _finite(hi)):
        return "nothing expected"
    if _finite(lo) and lo > 1.0:
        return "more than predicted"
    if _finite(hi) and hi < 1.0:
        return "fewer than predicted"
    return "as predicted"


def _rank(value: object, order: tuple[str, ...]) -> tuple[int, str]:
    text = "" if value is None else str(value)
    return (order.index(text) if text in order else len(order), text)


def missing_goodput_views(con: duckdb.DuckDBPyConnection) -> list[str]:
    """Return the goodput marts (:data:`GOODPUT_VIEWS`) the warehouse lacks, in that order.

    A warehouse made before issue #16 lacks them until its views are created again (any
    ``relia ingest`` does that).
    """
    from pipelines import warehouse

    found = warehouse.query(con, _PRESENT, dict(zip("abc", GOODPUT_VIEWS, strict=True)))
    present = set(found.get_column("table_name").to_list())
    return [name for name in GOODPUT_VIEWS if name not in present]


# JSON rows (relia goodput --json, Prefect artifact rows): dicts are the edge
def job_rows(con: duckdb.DuckDBPyConnection, *, min_gpus: int = 0) -> list[dict[str, Any]]:
    """Return the ledger rows (every ``fct_job_goodput`` column) of jobs with ``min_gpus`` or more.

    Ordered by first start, then ``job_id_raw``.
    """
    from pipelines import warehouse

    return _plain(warehouse.query(con, _JOBS, {"min_gpus": int(min_gpus)}).to_dicts())


def job_columns(con: duckdb.DuckDBPyConnection) -> list[str]:
    """Return the column names of ``fct_job_goodput`` (the header of an empty job list)."""
    from pipelines import warehouse

    return list(warehouse.query(con, "select * from fct_job_goodput limit 0").columns)


_FLEET_ALL = (*FLEET_COLUMNS, *SLOW_COLUMNS)
"""Every column a fleet row may have, in its order: what the roll-up query may name."""


def fleet_columns(con: duckdb.DuckDBPyConnection) -> list[str]:
    """Return a ``fleet`` row's columns: :data:`FLEET_COLUMNS`, then the view's SLOW_COLUMNS."""
    from pipelines import warehouse

    found = warehouse.query(con, _FLEET_PRESENT).get_column("column_name").to_list()
    return [*FLEET_COLUMNS, *(c for c in SLOW_COLUMNS if c in found)]


# JSON rows (relia goodput --json, Prefect artifact rows): dicts are the edge
def slow_missing(fleet: list[dict[str, Any]]) -> str | None:
    """Return why the roll-up has no fail-slow figure, in one line, or None when it has one.

    None too when there is no roll-up at all (no ledger job: that is said on its own). A
    ``rpt_fleet_goodput`` made before fail-slow lacks ``n_slow_measured``; a warehouse whose
    ledger jobs have no step times has ``n_slow_measured = 0``: its ``slow_share`` of 0 is
    not a measurement.
    """
    whole = next((r for r in fleet if r["dimension"] == "all"), None)
    if whole is None:
        return None
    if "n_slow_measured" not in whole:
        return (
            "rpt_fleet_goodput predates fail-slow (no n_slow_measured): run `relia ingest` "
            "on the warehouse to create its views again"
        )
    if not whole["n_slow_measured"]:
        return (
            f"none of the {int(whole['n_jobs']):,} ledger jobs has its slow time measured "
            "(fct_job_goodput.slow_measured): training logs with step times (Megatron-LM, "
            "torchtitan) would supply it"
        )
    return None


# JSON rows (relia goodput --json, Prefect artifact rows): dicts are the edge
def fleet_rows(con: duckdb.DuckDBPyConnection) -> list[dict[str, Any]]:
    """Return the fleet roll-up rows (:func:`fleet_columns`) in reading order.

    ``dimension`` in :data:`DIMENSIONS` order; GPU buckets small to large, accounts and ISO weeks
    by their text. Shares and goodput are fractions (0 to 1); ``gpu_hours`` in hours.
    """
    from pipelines import warehouse

    present = set(fleet_columns(con))
    # the columns are those of this module's constant lists (never the view's own names)
    select = ", ".join(
        "cast(value as varchar) as value" if c == "value" else c for c in _FLEET_ALL if c in present
    )
    rows = _plain(warehouse.query(con, f"select {select} from rpt_fleet_goodput").to_dicts())

    def key(row: dict[str, Any]) -> tuple[tuple[int, str], tuple[int, str]]:
        within = GPU_BUCKETS if row["dimension"] == "gpu_bucket" else ()
        return _rank(row["dimension"], DIMENSIONS), _rank(row["value"], within)

    return sorted(rows, key=key)


def nothing_expected(row: dict[str, Any]) -> bool:
    """Whether a back-test row expected no interruption (no failure before its jobs started).

    Its predicted goodput then has no failure term from the fits, and the interval around it
    says nothing about the rates: it is shown as "nothing expected", never as an interval.
    """
    expected = row.get("interruptions_expected")
    return not (_finite(expected) and expected > 0)


# JSON rows (relia goodput --json, Prefect artifact rows): dicts are the edge
def backtest_rows(con: duckdb.DuckDBPyConnection) -> list[dict[str, Any]]:
    """Return the back-test rows, buckets small to large, then periods.

    Each row has :data:`BACKTEST_COLUMNS` then ``verdict`` (:func:`oe_verdict`). The bucket
    ``all`` comes after the GPU buckets; periods in :data:`PERIODS` order. An O/E with no
    expected interruption (or an open upper bound) is whatever the view holds (NaN or
    infinity); the CLI's JSON and CSV print it as null / an empty field. A row that expected
    nothing (:func:`nothing_expected`) has no predicted goodput interval (``None``): its
    verdict says "nothing expected".
    """
    from pipelines import warehouse

    rows = _plain(warehouse.query(con, _BACKTEST).to_dicts())
    for row in rows:
        row["verdict"] = oe_verdict(row)
        if nothing_expected(row):
            row["goodput_predicted_lo"] = row["goodput_predicted_hi"] = None
    buckets = (*GPU_BUCKETS, "all")
    return sorted(rows, key=lambda r: (_rank(r["bucket"], buckets), _rank(r["period"], PERIODS)))


# JSON rows (relia goodput --json, Prefect artifact rows): dicts are the edge
def backtest_class_rows(con: duckdb.DuckDBPyConnection) -> list[dict[str, Any]]:
    """Return the latest back-test per component class and bucket, with each row's ``verdict``.

    Classes in alphabetical order, buckets small to large then ``all``; a row that expected no
    interruption says ``nothing expected`` (:func:`oe_verdict`). Empty for a warehouse without
    ``rpt_projection_backtest_classes`` (views made before the back-test had classes) or a run
    stored before it did.
    """
    from pipelines import warehouse

    present = warehouse.query(
        con,
        "select count(*) as n from information_schema.tables where table_schema = "
        "current_schema() and table_name = 'rpt_projection_backtest_classes'",
    ).item()
    if not present:
        return []
    rows = _plain(warehouse.query(con, _BACKTEST_CLASSES).to_dicts())
    for row in rows:
        row["verdict"] = oe_verdict(row)
    buckets = (*GPU_BUCKETS, "all")
    return sorted(rows, key=lambda r: (str(r["component_class"]), _rank(r["bucket"], buckets)))


# JSON rows (relia goodput --json, Prefect artifact rows): dicts are the edge
def log_rows(con: duckdb.DuckDBPyConnection) -> list[dict[str, Any]]:
    """Return one row per training log with its tie: ambiguous and untied logs first.

    Empty for a warehouse without ``rpt_training_log_ties`` (made before training logs).
    """
    from pipelines import warehouse

    present = warehouse.query(
        con,
        "select count(*) as n from information_schema.tables "
        "where table_schema = current_schema() and table_name = 'rpt_training_log_ties'",
    ).item()
    if not present:
        return []
    return _plain(warehouse.query(con, _LOGS).to_dicts())


def goodput_summary(
    con: duckdb.DuckDBPyConnection, *, min_gpus: int = 0
) -> dict[str, list[dict[str, Any]]]:
    """Return ``relia goodput``'s result: ``jobs``, ``fleet``, ``backtest`` and more rows.

    Parameters
    ----------
    con
        A connection to the warehouse (read-only will do), opened by the caller; the warehouse
        must have every view of :data:`GOODPUT_VIEWS` (see :func:`missing_goodput_views`).
    min_gpus
        Smallest job (GPUs) listed in ``jobs``.

    Returns
    -------
    dict
        ``jobs`` (:func:`job_rows`), ``fleet`` (:func:`fleet_rows`), ``backtest``
        (:func:`backtest_rows`), ``backtest_classes`` (:func:`backtest_class_rows`) and ``logs``
        (:func:`log_rows`: every training log and how it was tied to its job).
    """
    return {
        "jobs": job_rows(con, min_gpus=min_gpus),
        "fleet": fleet_rows(con),
        "backtest": backtest_rows(con),
        "backtest_classes": backtest_class_rows(con),
        "logs": log_rows(con),
    }
