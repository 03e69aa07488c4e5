"""Great Expectations suites per raw table; failing rows go to quarantine with the reason.

GX has no polars backend. By default the columns a suite reads are copied into an in-process
DuckDB and GX runs the suite on its SQL path there (:mod:`pipelines.ingest.quality_sql` makes that
path work on DuckDB: 4-8x faster than pandas, ``python -m bench.bench_validate``); checks GX cannot
run on DuckDB (regex) and every check when ``duckdb-engine`` is missing run on a pandas copy,
as before (STYLE.md §5). Both give the same rows and results. The context is ephemeral and made
once per process, progress bars and analytics are off, and nothing leaves the machine. GX is
imported lazily: it costs 3-7 s.
"""

from __future__ import annotations

import importlib.util
import logging
import os
import threading
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from functools import cache
from typing import TYPE_CHECKING, Any

import numpy as np
import polars as pl

from pipelines.ingest.sources.common import EARLIEST
from pipelines.ingest.sources.elastic import EVENTS as ELASTIC_EVENT_PATTERNS
from pipelines.ingest.sources.training import EVENTS as TRAINING_EVENTS
from pipelines.ingest.sources.training import FRAMEWORKS as TRAINING_FRAMEWORKS

if TYPE_CHECKING:
    from collections.abc import Callable

logger = logging.getLogger(__name__)

FUTURE_TOLERANCE = timedelta(days=1)

SLURM_STATES = [
    "BOOT_FAIL",
    "CANCELLED",
    "COMPLETED",
    "DEADLINE",
    "FAILED",
    "NODE_FAIL",
    "OUT_OF_MEMORY",
    "PENDING",
    "PREEMPTED",
    "RUNNING",
    "REQUEUED",
    "RESIZING",
    "REVOKED",
    "SUSPENDED",
    "TIMEOUT",
]
REPAIR_ACTIONS = ["replace", "planned_replace", "reseat", "no_fault_found"]
PCI_BUS_REGEX = r"^[0-9a-f]{4}:[0-9a-f]{2}:[0-9a-f]{2}$"
HOST_REGEX = r"^[A-Za-z0-9][A-Za-z0-9._-]{0,252}$"
"""A host or node name: an RFC 1123 host name, a Slurm node name or a Kubernetes node name.

Letters, digits, ``-``, ``.`` and ``_`` (Slurm allows it), starting with a letter or a digit; at
most 253 characters (a DNS name's bound). Anything else in a host column (spaces, markup,
quotes, control characters) is not a host and its row is quarantined.
"""
HOSTLIST_REGEX = r"^(?:[A-Za-z0-9][A-Za-z0-9._\[\],-]{0,65535}|None assigned)$"
"""A Slurm hostlist as printed (``gpu[0001-0004,0007],cpu01``), or sacct's ``None assigned``."""


@dataclass(frozen=True)
class Check:
    """One expectation: its GX class name, keyword arguments and a short human label."""

    kind: str
    kwargs: dict[str, Any]
    label: str


def _time_range(column: str, now: datetime) -> Check:
    return Check(
        "ExpectColumnValuesToBeBetween",
        {"column": column, "min_value": EARLIEST, "max_value": now + FUTURE_TOLERANCE},
        f"{column} between 2000-01-01 and now + 1 day (not in the future)",
    )


def _not_before(later: str, earlier: str) -> Check:
    return Check(
        "ExpectColumnPairValuesAToBeGreaterThanB",
        {
            "column_A": later,
            "column_B": earlier,
            "or_equal": True,
            "ignore_row_if": "either_value_is_missing",
        },
        f"{later} >= {earlier}",
    )


def _not_null(column: str) -> Check:
    return Check("ExpectColumnValuesToNotBeNull", {"column": column}, f"{column} not null")


def _in_set(column: str, values: list[Any]) -> Check:
    return Check(
        "ExpectColumnValuesToBeInSet",
        {"column": column, "value_set": values},
        f"{column} in the allowed set",
    )


def _between(column: str, low: float, high: float) -> Check:
    return Check(
        "ExpectColumnValuesToBeBetween",
        {"column": column, "min_value": low, "max_value": high},
        f"{column} between {low} and {high}",
    )


def _host(column: str) -> Check:
    return Check(
        "ExpectColumnValuesToMatchRegex",
        {"column": column, "regex": HOST_REGEX},
        f"{column} is a host name (letters, digits, '-', '.', '_'; at most 253 characters)",
    )


def _hostlist(column: str) -> Check:
    return Check(
        "ExpectColumnValuesToMatchRegex",
        {"column": column, "regex": HOSTLIST_REGEX},
        f"{column} is a Slurm hostlist (host names, '[', ']', ',')",
    )


def suite_for(table: str, *, now: datetime, component_classes: list[str]) -> list[Check]:
    """Return the expectations for one raw table (dbt-style not_null / accepted_values / ranges)."""
    suites: dict[str, Callable[[], list[Check]]] = {
        "raw_slurm_jobs": lambda: [
            _not_null("job_id_raw"),
            _in_set("state", SLURM_STATES),
            _time_range("submit_ts", now),
            _time_range("start_ts", now),
            _time_range("end_ts", now),
            _not_before("end_ts", "start_ts"),
            _not_before("start_ts", "submit_ts"),
            _between("alloc_nodes", 0, 1_000_000),
            _between("exit_code", 0, 255),
            _hostlist("node_list"),
        ],
        "raw_xid_events": lambda: [
            _not_null("host"),
            _host("host"),
            _between("xid", 1, 1023),
            _time_range("ts", now),
            Check(
                "ExpectColumnValuesToMatchRegex",
                {"column": "pci_bus_id", "regex": PCI_BUS_REGEX},
                "pci_bus_id looks like 0000:3b:00",
            ),
        ],
        "raw_inventory": lambda: [
            _not_null("host"),
            _host("host"),
            # no not-null check on serial: a GPU without a board serial ([N/A]) loads, and the
            # warehouse takes its UUID as the unit id (stg_inventory.unit_id); the parser rejects
            # a GPU with neither
            _between("gpu_index", 0, 63),
            _time_range("snapshot_ts", now),
        ],
        "raw_fleet": lambda: [
            _not_null("node"),
            _host("node"),
            _not_null("installed_ts"),
            _time_range("installed_ts", now),
            _not_before("removed_ts", "installed_ts"),
        ],
        "raw_repairs": lambda: [
            _not_null("node"),
            _host("node"),
            _not_null("opened_ts"),
            _in_set("action", REPAIR_ACTIONS),
            _in_set("component_class", component_classes),
            _time_range("opened_ts", now),
            _not_before("closed_ts", "opened_ts"),
        ],
        **_more_telemetry_suites(now),
        "raw_training_events": lambda: _training_suite(now),
    }
    return suites[table]() if table in suites else []


ELASTIC_EVENTS = list(ELASTIC_EVENT_PATTERNS)
CONTAINER_STATES = ["running", "terminated", "waiting"]


def _more_telemetry_suites(now: datetime) -> dict[str, Callable[[], list[Check]]]:
    """Suites of the Kubernetes, torchrun, DCGM and Slurm node-event tables."""
    return {
        "raw_k8s_events": lambda: [
            _not_null("involved_kind"),
            _not_null("event_reason"),
            _time_range("first_ts", now),
            _time_range("last_ts", now),
            _not_before("last_ts", "first_ts"),
            _between("count", 0, 1_000_000_000),
            _host("node"),
            _host("source_host"),
        ],
        "raw_k8s_pods": lambda: [
            _not_null("pod_uid"),
            _not_null("pod_name"),
            _in_set("container_state", CONTAINER_STATES),
            _time_range("started_ts", now),
            _time_range("finished_ts", now),
            _not_before("finished_ts", "started_ts"),
            _between("exit_code", 0, 255),
            _between("gpu_limit", 0, 64),
            _host("node_name"),
        ],
        "raw_elastic_events": lambda: [
            _not_null("run_id"),
            _not_null("host"),
            _host("host"),
            # no not-null check of ts: Python's default log format (torch 1.x under
            # logging.basicConfig) prints no time; the parser rejects every other untimed line
            _in_set("event", ELASTIC_EVENTS),
            _time_range("ts", now),
            _time_range("ts_lo", now),
            _time_range("ts_hi", now),
            _not_before("ts_hi", "ts_lo"),
        ],
        "raw_dcgm_samples": lambda: [
            _not_null("host"),
            _host("host"),
            _not_null("ts"),
            _between("gpu_index", 0, 63),
            _time_range("ts", now),
            _between("gpu_temp_c", -40, 150),
            _between("power_w", 0, 5000),
        ],
        "raw_node_events": lambda: [
            _not_null("node_name"),
            _hostlist("node_name"),
            _not_null("start_ts"),
            _time_range("start_ts", now),
            _time_range("end_ts", now),
            _not_before("end_ts", "start_ts"),
        ],
    }


def _training_suite(now: datetime) -> list[Check]:
    """Training-log events (docs/goodput.md §1).

    ``ts`` may be null (Megatron's lines before its ``[date]`` prefix, its load lines): such
    events are kept and counted when logs are tied to attempts, so there is no not-null check on
    it, only a range check where it is set. ``loss`` may be NaN (a diverged step) and is not
    checked.
    """
    return [
        _not_null("event"),
        _not_null("framework"),
        _not_null("ts_inferred"),
        _in_set("event", list(TRAINING_EVENTS)),
        _in_set("framework", list(TRAINING_FRAMEWORKS)),
        _host("host"),
        _between("step", 0, 10**15),
        _time_range("ts", now),
        Check(
            "ExpectColumnValuesToBeBetween",
            {"column": "step_time_s", "min_value": 0, "strict_min": True},
            "step_time_s > 0",
        ),
        Check(
            "ExpectColumnValuesToBeBetween",
            {"column": "duration_s", "min_value": 0},
            "duration_s >= 0",
        ),
    ]


@dataclass(frozen=True)
class Validated:
    """Rows that passed, rows that failed (with ``reason``), and one summary line per check."""

    good: pl.DataFrame
    bad: pl.DataFrame
    results: list[dict[str, Any]]


_START_UP_LOCK = threading.Lock()
_START_UP: list[threading.Thread] = []
"""The thread of :func:`start_up_in_background`, once started (one a process)."""


@cache
def _context() -> Any:
    os.environ.setdefault("GX_ANALYTICS_ENABLED", "False")
    import great_expectations as gx  # lazy: 3-7 s import
    from great_expectations.data_context.types.base import ProgressBarsConfig

    context = gx.get_context(mode="ephemeral")
    context.variables.progress_bars = ProgressBarsConfig(globally=False)
    return context


def start_up() -> None:
    """Pay this process's one-off Great Expectations start-up now (idempotent).

    GX's import, its context and, when the SQL path can run, its DuckDB data source and one
    validation of a one-row frame by each kind of SQL check (GX's first run of a kind builds its
    metric providers). :func:`validate` does the same work on its first call when this has not
    run; nothing here touches the rows of an ingest.
    """
    import great_expectations.expectations as gxe

    context = _context()
    if not sql_available():
        return
    from pipelines.ingest import quality_sql

    probe = [_not_null("a"), _in_set("a", [1]), _between("a", 0, 1), _not_before("a", "b")]
    quality_sql.failing_rows(
        context,
        pl.DataFrame({"a": [1], "b": [0]}),
        [getattr(gxe, check.kind)(**check.kwargs) for check in probe],
    )


def start_up_in_background() -> None:
    """Start :func:`start_up` on a thread of its own, once a process, and return at once.

    The ingest calls it as soon as it finds something to parse: GX's import (most of its start-up,
    about 2.5 s) is Python that runs while the parsers run in polars, which let go of the GIL.
    :func:`validate` waits for the thread before it uses GX (:func:`wait_for_start_up`). A
    failure on the thread is logged and left to :func:`validate`, which meets it again and
    raises it where the ingest can see it.
    """
    with _START_UP_LOCK:
        if _START_UP:
            return
        thread = threading.Thread(target=_start_up_quietly, name="relia-gx-start-up")
        _START_UP.append(thread)
        thread.start()


def _start_up_quietly() -> None:
    try:
        start_up()
    except Exception:  # validate() runs the same steps again and raises there
        logger.debug("Great Expectations start-up failed on its thread", exc_info=True)


def starting_up() -> bool:
    """Say whether a start-up begun by :func:`start_up_in_background` is still running."""
    return any(thread.is_alive() for thread in _START_UP)


def wait_for_start_up() -> None:
    """Wait for a start-up begun by :func:`start_up_in_background`, if one is running.

    GX's modules are then imported by one thread only: two threads importing one package at once
    can each see the other's modules half made.
    """
    for thread in _START_UP:
        if thread is not threading.current_thread():
            thread.join()


@cache
def _pandas_batches() -> Any:
    asset = _context().data_sources.add_pandas(name="relia").add_dataframe_asset(name="incoming")
    return asset.add_batch_definition_whole_dataframe("whole")


@cache
def sql_available() -> bool:
    """Say whether GX's SQL path on DuckDB can run here (``duckdb-engine`` is installed)."""
    if importlib.util.find_spec("duckdb_engine") is None:
        logger.warning("duckdb-engine is not installed: Great Expectations runs on pandas copies")
        return False
    return True


def _read_columns(checks: list[Check], rows: pl.DataFrame) -> list[str]:
    """Return the columns of ``rows`` that ``checks`` read (a missing one fails its check)."""
    read = {
        value
        for check in checks
        for key, value in check.kwargs.items()
        if key in ("column", "column_A", "column_B")
    }
    return [c for c in rows.columns if c in read]


def _pandas_failing_rows(
    rows: pl.DataFrame, read: list[str], expectations: list[Any]
) -> list[tuple[Any, list[int]]]:
    """Validate on a pandas copy of the columns read; return each result and its failing rows.

    Integers narrower than 64 bits are widened first: GX checks a range on an int64 or float64
    column with vectorised comparisons but on an int32 one with a Python call per value.
    """
    import great_expectations as gx

    narrow = (pl.Int8, pl.Int16, pl.Int32, pl.UInt8, pl.UInt16, pl.UInt32)
    frame = (
        rows.select(read)
        .with_columns([pl.col(c).cast(pl.Int64) for c in read if rows.schema[c] in narrow])
        .to_pandas()
    )
    batch = _pandas_batches().get_batch(batch_parameters={"dataframe": frame})
    suite = gx.ExpectationSuite(name="pandas_suite")
    for expectation in expectations:
        suite.add_expectation(expectation)
    outcome = batch.validate(suite, result_format={"result_format": "COMPLETE"})
    return [
        (result, [int(i) for i in result.result.get("unexpected_index_list") or []])
        for result in outcome.results
    ]


def validate(
    rows: pl.DataFrame,
    *,
    table: str,
    now: datetime | None = None,
    component_classes: list[str] | None = None,
    engine: str = "auto",
) -> Validated:
    """Run the table's suite over ``rows``; split them into good and bad (bad carry ``reason``).

    Parameters
    ----------
    rows
        Parsed rows (of one file or several), with ``line_no``; any extra columns ride along.
    table
        The raw table they are bound for; it selects the suite.
    now
        The ingest time, for "not in the future" checks (default: current UTC time).
    component_classes
        The allowed component classes (from ``dim_component_class``) for repair tickets.
    engine
        Where GX computes: ``"sql"`` (GX's SQL path on an in-process DuckDB copy of the columns
        read; checks it cannot run there go to pandas), ``"pandas"`` (a pandas copy), or
        ``"auto"`` (SQL when the ``duckdb-engine`` dialect is installed).
    """
    checks = suite_for(
        table, now=now or datetime.now(UTC), component_classes=component_classes or []
    )
    if rows.height == 0 or not checks:
        # Nothing to check is a pass of every check: a file's results must not depend on
        # whether it was validated alone or in a batch with others.
        passed = [
            {"table": table, "expectation": c.label, "success": True, "n_unexpected": 0}
            for c in checks
        ]
        return Validated(rows, rows.head(0).with_columns(reason=pl.lit("")), passed)
    wait_for_start_up()
    import great_expectations.expectations as gxe

    if engine not in ("auto", "sql", "pandas"):
        msg = f"engine must be 'auto', 'sql' or 'pandas', not {engine!r}"
        raise ValueError(msg)
    on_sql = engine == "sql" or (engine == "auto" and sql_available())
    expectations = [
        getattr(gxe, check.kind)(**check.kwargs, meta={"check": number})
        for number, check in enumerate(checks)
    ]
    in_sql: list[int] = []
    if on_sql:
        from pipelines.ingest import quality_sql

        in_sql = [n for n, check in enumerate(checks) if check.kind in quality_sql.SQL_KINDS]
    on_pandas = [n for n in range(len(checks)) if n not in in_sql]
    outcomes: list[tuple[Any, list[int]]] = []
    if in_sql:
        read = _read_columns([checks[n] for n in in_sql], rows)
        outcomes += quality_sql.failing_rows(
            _context(), rows.select(read), [expectations[n] for n in in_sql]
        )
    if on_pandas:
        read = _read_columns([checks[n] for n in on_pandas], rows)
        outcomes += _pandas_failing_rows(rows, read, [expectations[n] for n in on_pandas])
    by_check = {
        int(result.expectation_config.meta["check"]): (result, failed)
        for result, failed in outcomes
    }
    suite_results = []
    reasons: dict[int, list[str]] = {}
    for number in _result_order(checks):
        check = checks[number]
        result, failed_idx = by_check[number]
        if result.exception_info and _raised(result.exception_info):
            msg = f"expectation {check.label} could not run on {table}: {result.exception_info}"
            raise RuntimeError(msg)
        for idx in failed_idx:
            reasons.setdefault(idx, []).append(f"{check.kind}: {check.label}")
        suite_results.append(
            {
                "table": table,
                "expectation": check.label,
                "success": bool(result.success),
                "n_unexpected": len(failed_idx),
            }
        )
    failed = np.zeros(rows.height, dtype=bool)
    failed[list(reasons)] = True
    mask = pl.Series(failed)
    bad = rows.filter(mask).with_columns(
        reason=pl.Series(["; ".join(reasons[i]) for i in sorted(reasons)], dtype=pl.String)
    )
    return Validated(rows.filter(~mask), bad, suite_results)


def _result_order(checks: list[Check]) -> list[int]:
    """Return the checks' numbers in the order GX reports one suite's results.

    GX groups a suite's expectations by their ``column`` (in order of first appearance; column
    pairs form one group) and reports them so; results keep that order whichever engine ran.
    """
    groups: dict[str, list[int]] = {}
    for number, check in enumerate(checks):
        column = check.kwargs.get("column")
        groups.setdefault(column if isinstance(column, str) else "", []).append(number)
    return [number for group in groups.values() for number in group]


def _raised(info: dict[str, Any]) -> bool:
    """Say whether GX's ``exception_info`` records a raised exception (flat or per metric)."""
    if info.get("raised_exception"):
        return True
    return any(isinstance(v, dict) and v.get("raised_exception") for v in info.values())
