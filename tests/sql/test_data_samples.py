"""The committed data samples load, every view builds, keys are unique and counts match."""

from __future__ import annotations

import json
from pathlib import Path

import duckdb
import pytest

from pipelines import ingest, warehouse

SAMPLES = Path(__file__).resolve().parents[2] / "data_samples" / "landing"


@pytest.fixture(scope="module")
def con(tmp_path_factory: pytest.TempPathFactory) -> duckdb.DuckDBPyConnection:
    db = tmp_path_factory.mktemp("samples") / "relia.duckdb"
    ingest.ingest(db, ingest.discover([SAMPLES]))
    con = duckdb.connect(str(db), read_only=True)
    yield con
    con.close()


VIEW_KEYS: dict[str, tuple[str, ...]] = {
    "stg_slurm_jobs": ("job_id", "coalesce(step, '')", "start_ts"),
    "stg_repairs": ("ticket_id",),
    "stg_fleet": ("node",),
    # intermediate: the grain each header states (a life's unit_id carries its life number)
    "int_component_lives": ("unit_id", "component_class"),
    "int_failure_events": ("failure_id",),
    "int_failure_members": ("event_key", "signal_id"),  # evidence may belong to several failures
    "int_failure_signals": ("signal_id",),
    "int_fault_lives": ("dataset", "unit_id", "life_no", "component_class"),
    "int_fault_repairs": ("source_file", "line_no"),
    "int_fleet_gpus": ("node", "slot"),
    "int_fleet_nodes": ("node",),
    "int_gpu_health": ("host", "gpu_index", "uuid", "hour_ts"),
    "int_incidents": ("incident_id",),
    "int_job_attempts": ("job_id_raw", "attempt"),
    "int_job_interruptions": ("job_id_raw", "attempt"),
    "int_node_unavailability": ("source", "dataset", "node", "outage_no"),
    "int_repair_lives": (
        "lives_view",
        "source",
        "dataset",
        "unit_id",
        "component_class",
        "start_ts",
    ),
    "int_replacement_lives": ("unit_id", "component_class"),
    "int_slow_attribution": ("job_id_raw", "attempt", "episode_no"),
    "int_slow_episodes": ("job_id_raw", "attempt", "episode_no"),
    "int_slow_spans": ("job_id_raw", "attempt", "episode_no"),
    "int_slow_trends": ("job_id_raw", "attempt"),
    "int_step_pace": ("job_id_raw", "attempt", "step"),  # a step is one progress line
    "int_training_attempts": ("job_id_raw", "attempt"),
    "int_training_events": ("source_file", "line_no"),
    "int_training_log_attempts": ("job_id_raw", "attempt"),
    "int_training_log_runs": ("source_file", "line_no"),
    # a log holding several jobs (an appended Slurm output) has a row for each
    "int_training_log_ties": ("source_file", "job_id"),
    # marts
    "dim_xid": ("xid",),
    "fct_component_lives": ("unit_id", "component_class"),
    "fct_failure_events": ("failure_id",),
    "fct_gpu_hour_features": ("host", "gpu_index", "uuid", "hour_ts"),
    "fct_job_goodput": ("job_id_raw",),
    "fct_node_recurrence": ("node", "component_class", "failed_ts"),
    "fct_replacement_lives": ("unit_id", "component_class"),
    "rpt_class_rates": ("run_id", "component_class", "cohort"),
    "rpt_fleet_goodput": ("dimension", "value"),
    "rpt_fleet_gpus": ("node", "slot"),
    "rpt_fleet_nodes": ("node",),
    "rpt_fleet_summary": ("component_class",),
    "rpt_ingest_files": ("source", "target_table"),
    "rpt_ingest_quality": ("source", "target_table", "stage", "reason"),
    "rpt_interruptions_by_cause": ("cause_class", "attribution"),
    # job_id is the scheduler's own id (not namespaced by cluster or scheduler like job_id_raw)
    "rpt_job_interruptions": ("job_id", "attempt"),
    "rpt_observation_window": (),  # one row
    "rpt_projection_backtest": ("bucket", "period"),
    "rpt_projection_backtest_classes": ("component_class", "bucket"),
    "rpt_quality_checks": ("target_table", "expectation"),
    "rpt_quarantine_lines": ("source_file", "line_no", "target_table", "stage"),
    "rpt_quarantine_reasons": ("target_table", "stage", "reason"),
    "rpt_replacements_by_class": ("component_class",),
    "rpt_slow_units": ("host", "gpu"),
    "rpt_training_log_ties": ("source_file", "job_id"),
    "rpt_unit_failures": ("unit_level", "node", "unit"),
    "rpt_unit_lives": ("unit_id", "component_class"),
    "rpt_weekly_failures": ("week_start",),
}
"""Each view's natural key (its grain), unique on the data sample; () for a one-row view."""

NULLABLE_KEY_COLUMNS: dict[str, set[str]] = {
    "int_gpu_health": {"uuid"},  # a DCGM export without UUIDs
    "fct_gpu_hour_features": {"uuid"},
    "int_node_unavailability": {"dataset"},  # null for Slurm node events
    "int_repair_lives": {"source", "dataset"},  # null for repair tickets
    "int_training_log_ties": {"job_id"},  # a log whose name and lines name no job
    "rpt_training_log_ties": {"job_id"},
    "rpt_slow_units": {"gpu"},  # a node blamed as a whole
    "fct_node_recurrence": {"component_class", "failed_ts"},  # the row of a node never failed
    # a (source, table) with no quarantine has no stage and reason; a reason of a table no
    # recorded file loads has no source
    "rpt_ingest_quality": {"source", "stage", "reason"},
}
"""Key columns that may be null (a null is one value of the key, as in ``group by``)."""

NO_KEY: dict[str, str] = {
    "rpt_node_incidents": (
        "node, first_ts and is_failure of each int_incidents row, without its incident_id: two "
        "GPUs of a node whose Xid incidents start in the same second (one NVLink fault seen on "
        "several GPUs) give identical rows; int_incidents is keyed by incident_id"
    ),
    "rpt_replace_repairs": (
        "opened_ts and repair_h of each replace ticket, without its ticket_id: two tickets "
        "opened at the same time with the same repair time give identical rows; stg_repairs "
        "is keyed by ticket_id"
    ),
}
"""Views with no key among their columns, and why."""

EMPTY_ON_SAMPLE = {
    "int_fault_lives",  # no fault logs in the sample
    "int_fault_repairs",
    "int_gpu_health",  # no DCGM scrapes
    "fct_gpu_hour_features",
    "int_training_attempts",  # no training logs
    "int_training_events",
    "int_training_log_attempts",
    "int_training_log_runs",
    "int_training_log_ties",
    "rpt_training_log_ties",
    "int_step_pace",
    "int_slow_spans",
    "int_slow_attribution",
    "int_slow_episodes",
    "int_slow_trends",
    "rpt_slow_units",
    "rpt_class_rates",  # no fit run (the ingest alone)
    "rpt_projection_backtest",  # no back-test run
    "rpt_projection_backtest_classes",
}
"""Views the sample gives no rows: their keys are declared but cannot be tested here."""


def test_every_intermediate_and_mart_view_declares_its_key() -> None:
    views = {
        path.stem
        for path in warehouse.view_files()
        if path.parent.name in ("intermediate", "marts")
    }
    assert not set(VIEW_KEYS) & set(NO_KEY)
    assert views <= set(VIEW_KEYS) | set(NO_KEY), "views without a declared key"
    assert set(VIEW_KEYS) | set(NO_KEY) <= views | {"stg_slurm_jobs", "stg_repairs", "stg_fleet"}


@pytest.mark.parametrize(("view", "key"), VIEW_KEYS.items(), ids=list(VIEW_KEYS))
def test_view_keys_are_unique(
    con: duckdb.DuckDBPyConnection, view: str, key: tuple[str, ...]
) -> None:
    (n_rows,) = con.execute(f"select count(*) from {view}").fetchall()[0]
    if view in EMPTY_ON_SAMPLE:
        assert n_rows == 0, f"{view} has rows now: take it out of EMPTY_ON_SAMPLE"
        return
    assert n_rows > 0
    if not key:
        assert n_rows == 1
        return
    (n_duplicated,) = con.execute(
        f"select count(*) from (select {', '.join(key)} from {view} "
        "group by all having count(*) > 1)"
    ).fetchall()[0]
    assert n_duplicated == 0
    not_null = [c for c in key if c not in NULLABLE_KEY_COLUMNS.get(view, set())]
    counts = con.execute(
        "select "
        + ", ".join(f"count(*) filter (where {c} is null)" for c in not_null)
        + f" from {view}"
    ).fetchall()[0]
    assert dict(zip(not_null, counts, strict=True)) == dict.fromkeys(not_null, 0)


@pytest.mark.parametrize("view", NO_KEY)
def test_views_without_a_key_have_rows(con: duckdb.DuckDBPyConnection, view: str) -> None:
    assert con.execute(f"select count(*) from {view}").fetchall()[0][0] > 0


def test_every_view_builds_and_answers(con: duckdb.DuckDBPyConnection) -> None:
    for path in warehouse.view_files():
        con.execute(f"select count(*) from {path.stem}").fetchall()


def test_samples_match_their_ground_truth(con: duckdb.DuckDBPyConnection) -> None:
    truth = json.loads((SAMPLES / "ground_truth.json").read_text())
    failures = dict(
        con.execute(
            "select component_class, count(*) from int_component_lives where failed group by 1"
        ).fetchall()
    )
    assert failures == {k: v for k, v in truth["failures_by_class"].items() if v}
    quarantined = dict(
        con.execute("select target_table, count(*) from raw_quarantine group by 1").fetchall()
    )
    assert quarantined == {k: v for k, v in truth["expected_quarantine"].items() if v}
