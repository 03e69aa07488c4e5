"""Great Expectations suites per raw table; failing rows go to quarantine with the reason.

GX has no polars backend and its DuckDB SQL path is broken upstream, so validation runs on a pandas
copy of the parsed frame at this one boundary (STYLE.md §5). The context is ephemeral, progress bars
and analytics are off, and nothing leaves the machine. GX is imported lazily: it costs 3-7 s.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from functools import cache
from typing import TYPE_CHECKING, Any

import polars as pl

from pipelines.sources.common import EARLIEST
from pipelines.sources.training import EVENTS as TRAINING_EVENTS
from pipelines.sources.training import FRAMEWORKS as TRAINING_FRAMEWORKS

if TYPE_CHECKING:
    from collections.abc import Callable

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
        ],
        "raw_xid_events": lambda: [
            _not_null("host"),
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
            _not_null("serial"),
            _between("gpu_index", 0, 63),
            _time_range("snapshot_ts", now),
        ],
        "raw_fleet": lambda: [
            _not_null("node"),
            _not_null("installed_ts"),
            _time_range("installed_ts", now),
            _not_before("removed_ts", "installed_ts"),
        ],
        "raw_repairs": lambda: [
            _not_null("node"),
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


ELASTIC_EVENTS = [
    "agent_start",
    "rendezvous_start",
    "rendezvous_join_attempt",
    "rendezvous_joined",
    "rendezvous_complete",
    "world_sizes",
    "workers_started",
    "worker_failed",
    "group_restart",
    "group_stopping",
    "group_succeeded",
    "membership_change",
    "death_signal",
    "closing_signal",
]
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
        ],
        "raw_elastic_events": lambda: [
            _not_null("run_id"),
            _not_null("host"),
            _not_null("ts"),
            _in_set("event", ELASTIC_EVENTS),
            _time_range("ts", now),
        ],
        "raw_dcgm_samples": lambda: [
            _not_null("host"),
            _not_null("ts"),
            _between("gpu_index", 0, 63),
            _time_range("ts", now),
            _between("gpu_temp_c", -40, 150),
            _between("power_w", 0, 5000),
        ],
        "raw_node_events": lambda: [
            _not_null("node_name"),
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


@cache
def _context() -> Any:
    os.environ.setdefault("GX_ANALYTICS_ENABLED", "False")
    import great_expectations as gx  # lazy: 3-7 s import)
    from great_expectations.data_context.types.base import ProgressBarsConfig

    context = gx.get_context(mode="ephemeral")
    context.variables.progress_bars = ProgressBarsConfig(globally=False)
    asset = context.data_sources.add_pandas(name="relia").add_dataframe_asset(name="incoming")
    return asset.add_batch_definition_whole_dataframe("whole")


def validate(
    rows: pl.DataFrame,
    *,
    table: str,
    now: datetime | None = None,
    component_classes: list[str] | None = None,
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
    import great_expectations as gx
    import great_expectations.expectations as gxe

    # only the columns the checks read go to pandas (strings become Python objects there: the
    # conversion of every column cost more than the checks on a fleet-year of sacct rows)
    read = {
        value
        for check in checks
        for key, value in check.kwargs.items()
        if key in ("column", "column_A", "column_B")
    }
    frame = rows.select([c for c in rows.columns if c in read]).to_pandas()
    batch = _context().get_batch(batch_parameters={"dataframe": frame})
    suite = gx.ExpectationSuite(name=f"{table}_suite")
    for number, check in enumerate(checks):
        suite.add_expectation(getattr(gxe, check.kind)(**check.kwargs, meta={"check": number}))
    outcome = batch.validate(suite, result_format={"result_format": "COMPLETE"})
    suite_results = []
    reasons: dict[int, list[str]] = {}
    for result in outcome.results:
        check = checks[int(result.expectation_config.meta["check"])]
        if result.exception_info and result.exception_info.get("raised_exception"):
            msg = f"expectation {check.label} could not run on {table}: {result.exception_info}"
            raise RuntimeError(msg)
        failed_idx = list(result.result.get("unexpected_index_list") or [])
        for idx in failed_idx:
            reasons.setdefault(int(idx), []).append(f"{check.kind}: {check.label}")
        suite_results.append(
            {
                "table": table,
                "expectation": check.label,
                "success": bool(result.success),
                "n_unexpected": len(failed_idx),
            }
        )
    mask = pl.int_range(rows.height, eager=True).is_in(pl.Series(sorted(reasons), dtype=pl.Int64))
    bad = rows.filter(mask).with_columns(
        reason=pl.Series(["; ".join(reasons[i]) for i in sorted(reasons)], dtype=pl.String)
    )
    return Validated(rows.filter(~mask), bad, suite_results)
