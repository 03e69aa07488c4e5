"""The goodput ledger views on hand-built jobs whose every second is accounted for by hand.

Job 5001 (two nodes, 16 GPUs) has a training log; its timeline, worked out on paper
(docs/goodput.md §3):

attempt 1, 10:00:00-10:40:00, NODE_FAIL
    first step line: step 6 at 10:06:00, 10 s per step   -> first progress F = 10:05:00
    saves at steps 60 (10:15-10:16) and 120 (10:26-10:27); last step line 150 at 10:32:00
    attempt 2 resumes from step 120                       -> kept until K = 10:27:00
    startup 300, productive 22 min - 2 saves = 1200, checkpoint 120, wasted 10:27-10:32 = 300,
    detect 10:32-10:40 = 480
requeued: 10:40:00-10:45:00                              -> reschedule 300
attempt 2, 10:45:00-11:04:00, COMPLETED
    load of step 120 ends 10:48:00 (reload 180); first step line 126 at 10:50:00
                                                          -> F = 10:49:00 (warm-up 60)
    save at step 180 (10:59-11:00); last step line 200 at 11:03:20
    productive 860 - 60 = 800, checkpoint 60, other 11:03:20-11:04:00 = 40

Job 5002 (one node, 8 GPUs) has no log: its ledger is estimated with start-up 300, restart
300, 1,200 s compute between 60 s saves (set below).
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import duckdb
import polars as pl
import pytest

from pipelines import warehouse

T0 = datetime(2026, 6, 1, 10, 0, tzinfo=UTC)


def at(hms: str) -> datetime:
    """Return 2026-06-01 at ``hms`` (UTC)."""
    h, m, s = (int(x) for x in hms.split(":"))
    return T0.replace(hour=h, minute=m, second=s)


def _insert(con: duckdb.DuckDBPyConnection, table: str, rows: list[dict[str, object]]) -> None:
    frame = pl.DataFrame(rows, infer_schema_length=None)
    if "source_file" not in frame.columns:
        frame = frame.with_columns(source_file=pl.lit("hand.txt"))
    frame = frame.with_columns(line_no=pl.int_range(1, frame.height + 1))
    con.register("incoming", frame.to_arrow())
    con.execute(f"insert into {table} by name select * from incoming")
    con.unregister("incoming")


def _attempt(
    job: str, nodes: list[str], start: datetime, end: datetime | None, state: str
) -> dict[str, object]:
    return {
        "job_id": job,
        "job_id_raw": job,
        "step": None,
        "job_name": "pretrain",
        "partition": "gpu",
        "account": "llm",
        "user_name": "ada",
        "alloc_nodes": len(nodes),
        "n_gpus": 8 * len(nodes),
        "node_list": ",".join(nodes),
        "nodes": nodes,
        "submit_ts": start - timedelta(minutes=1),
        "start_ts": start,
        "end_ts": end,
        "state": state,
        "exit_code": 0,
        "exit_signal": 0,
        "restarts": 0,
    }


def _event(
    file: str,
    event: str,
    step: int | None,
    ts: datetime | None,
    *,
    step_time_s: float | None = None,
    duration_s: float | None = None,
    inferred: bool = False,
    job: str | None = None,
    host: str | None = None,
) -> dict[str, object]:
    return {
        "source_file": file,
        "job_id": job,
        "host": host,
        "event": event,
        "framework": "torchtitan",
        "step": step,
        "ts": ts,
        "ts_inferred": inferred,
        "step_time_s": step_time_s,
        "duration_s": duration_s,
        "loss": None,
        "checkpoint_path": None,
    }


LOG = "training/slurm-5001.out"


def _log_5001() -> list[dict[str, object]]:
    def step(n: int, hms: str) -> dict[str, object]:
        return _event(LOG, "step", n, at(hms), step_time_s=10.0, job="5001")

    def save(n: int, start: str, end: str) -> list[dict[str, object]]:
        return [
            _event(LOG, "checkpoint_save_start", n, at(start), job="5001"),
            _event(LOG, "checkpoint_save_end", n, at(end), duration_s=60.0, job="5001"),
        ]

    return [
        step(6, "10:06:00"),
        step(60, "10:15:00"),
        *save(60, "10:15:00", "10:16:00"),
        step(66, "10:17:00"),
        step(66, "10:17:00"),  # the same line printed by a second rank
        step(120, "10:26:00"),
        *save(120, "10:26:00", "10:27:00"),
        step(126, "10:28:00"),
        step(150, "10:32:00"),
        # attempt 2: a load line without a time (Megatron prints none) names the step ...
        _event(LOG, "checkpoint_load_start", 120, None, job="5001"),
        _event(LOG, "checkpoint_load_end", 120, at("10:48:00"), duration_s=120.0, job="5001"),
        step(126, "10:50:00"),
        step(180, "10:59:00"),
        *save(180, "10:59:00", "11:00:00"),
        step(200, "11:03:20"),
    ]


@pytest.fixture(scope="module")
def con() -> duckdb.DuckDBPyConnection:
    con = duckdb.connect()
    con.execute("set TimeZone = 'UTC'")
    warehouse.apply_schema(con)
    for name, value in {
        "assumed_startup_s": 300,
        "assumed_restart_s": 300,
        "assumed_checkpoint_interval_s": 1200,
        "assumed_checkpoint_s": 60,
    }.items():
        con.execute("insert or replace into cfg_params (name, value) values (?, ?)", [name, value])
    _insert(
        con,
        "raw_slurm_jobs",
        [
            _attempt("5001", ["a", "b"], at("10:00:00"), at("10:40:00"), "NODE_FAIL"),
            _attempt("5001", ["c", "d"], at("10:45:00"), at("11:04:00"), "COMPLETED"),
            _attempt("5002", ["e"], at("10:00:00"), at("10:50:00"), "NODE_FAIL"),
            _attempt("5002", ["e"], at("10:55:00"), at("13:00:00"), "COMPLETED"),
            # host-time tie: one job ran on n3 while its log was written
            _attempt("5003", ["n3"], at("10:00:00"), at("12:00:00"), "COMPLETED"),
            # two jobs shared n4 when the log was written: ambiguous
            _attempt("5004", ["n4"], at("10:00:00"), at("12:00:00"), "COMPLETED"),
            _attempt("5005", ["n4", "n5"], at("11:00:00"), at("12:00:00"), "COMPLETED"),
            # still running: not in the ledger
            _attempt("5006", ["f"], at("10:00:00"), None, "RUNNING"),
            # its training started at 10:05 and it ended before printing a step
            _attempt("5007", ["g"], at("10:00:00"), at("10:06:00"), "COMPLETED"),
        ],
    )
    host_log = "training/n3/run.log"
    shared_log = "training/n4/run.log"
    _insert(
        con,
        "raw_training_events",
        [
            *_log_5001(),
            _event(host_log, "step", 10, at("10:10:00"), step_time_s=30.0, host="n3"),
            _event(host_log, "step", 200, at("11:45:00"), step_time_s=30.0, host="n3"),
            _event(shared_log, "step", 10, at("11:10:00"), step_time_s=30.0, host="n4"),
            _event(shared_log, "step", 20, at("11:15:00"), step_time_s=30.0, host="n4"),
            _event("training/slurm-5007.out", "train_start", 1, at("10:05:00"), job="5007"),
            # a line of job 5001's log after its last attempt ended: counted, never used
            _event(LOG, "step", 201, at("11:30:00"), step_time_s=10.0, job="5001"),
        ],
    )
    warehouse.create_views(con)
    return con


def _ledger(con: duckdb.DuckDBPyConnection, job: str) -> dict[str, object]:
    rows = warehouse.query(
        con, "select * from fct_job_goodput where job_id_raw = $job", {"job": job}
    )
    assert rows.height == 1
    return rows.row(0, named=True)


def test_every_second_of_the_logged_job_is_where_the_paper_puts_it(
    con: duckdb.DuckDBPyConnection,
) -> None:
    row = _ledger(con, "5001")
    expected = {
        "wall_s": 3840.0,
        "productive_s": 1200.0 + 800.0,
        "checkpoint_s": 120.0 + 60.0,
        "wasted_s": 300.0,
        "detect_s": 480.0,
        "reschedule_s": 300.0,
        "reload_s": 180.0,
        "warmup_s": 60.0,
        "restart_s": 480.0 + 300.0 + 180.0 + 60.0,
        "startup_s": 300.0,
        "other_s": 40.0,
    }
    assert {k: row[k] for k in expected} == pytest.approx(expected)
    assert row["goodput"] == pytest.approx(2000.0 / 3840.0)
    assert row["measured"] is True
    assert row["estimated"] is False
    assert row["assumed_checkpoint_interval_s"] is None
    assert row["n_saves"] == 3
    assert row["n_interruptions"] == 1
    assert row["n_events_outside"] == 1
    assert row["reload_known"] is True
    assert row["n_gpus"] == 16


def test_the_job_without_a_log_is_estimated_under_the_named_assumptions(
    con: duckdb.DuckDBPyConnection,
) -> None:
    row = _ledger(con, "5002")
    # attempt 1: 3000 s = 300 start-up + 2 cycles of 1260 s + 180 s of lost compute
    # attempt 2: 7500 s = 300 restart + 5 cycles + 900 s of kept compute (completed)
    expected = {
        "wall_s": 10800.0,
        "productive_s": 2400.0 + 6900.0,
        "checkpoint_s": 120.0 + 300.0,
        "wasted_s": 180.0,
        "restart_s": 300.0 + 300.0,
        "reschedule_s": 300.0,
        "warmup_s": 300.0,
        "detect_s": 0.0,
        "startup_s": 300.0,
        "other_s": 0.0,
    }
    assert {k: row[k] for k in expected} == pytest.approx(expected)
    assert row["estimated"] is True
    assert (row["assumed_checkpoint_interval_s"], row["assumed_checkpoint_s"]) == (1200, 60)
    assert (row["assumed_startup_s"], row["assumed_restart_s"]) == (300, 300)


def test_logs_are_tied_by_job_id_else_by_host_and_time_and_ambiguity_is_reported(
    con: duckdb.DuckDBPyConnection,
) -> None:
    ties = warehouse.query(
        con, "select source_file, tie, job_id_raw, candidates from int_training_log_ties"
    )
    by_file = {r["source_file"]: r for r in ties.iter_rows(named=True)}
    assert by_file[LOG]["tie"] == "job_id"
    assert by_file[LOG]["job_id_raw"] == "5001"
    assert by_file["training/n3/run.log"]["tie"] == "host_time"
    assert by_file["training/n3/run.log"]["job_id_raw"] == "5003"
    shared = by_file["training/n4/run.log"]
    assert (shared["tie"], shared["job_id_raw"]) == ("ambiguous", None)
    assert shared["candidates"] == ["5004", "5005"]
    assert _ledger(con, "5003")["measured"] is True
    assert _ledger(con, "5004")["measured"] is False


def test_jobs_still_running_are_not_in_the_ledger(con: duckdb.DuckDBPyConnection) -> None:
    jobs = warehouse.query(con, "select job_id_raw from fct_job_goodput order by job_id_raw")
    assert jobs["job_id_raw"].to_list() == ["5001", "5002", "5003", "5004", "5005", "5007"]


def test_a_job_that_printed_its_training_start_but_no_step(con: duckdb.DuckDBPyConnection) -> None:
    row = _ledger(con, "5007")
    assert row["measured"] is True
    # start-up to the training start line, then no progress: the rest is "other"
    assert (row["startup_s"], row["productive_s"], row["other_s"]) == (300.0, 0.0, 60.0)


def test_the_fleet_roll_up_weighs_by_gpu_hours_and_by_jobs_side_by_side(
    con: duckdb.DuckDBPyConnection,
) -> None:
    jobs = warehouse.query(con, "select n_gpus, wall_s, productive_s, goodput from fct_job_goodput")
    fleet = warehouse.query(con, "select * from rpt_fleet_goodput where dimension = 'all'").row(
        0, named=True
    )
    gpu_seconds = sum(g * w for g, w in zip(jobs["n_gpus"], jobs["wall_s"], strict=True))
    kept = sum(g * p for g, p in zip(jobs["n_gpus"], jobs["productive_s"], strict=True))
    assert fleet["n_jobs"] == 6
    assert fleet["gpu_hours"] == pytest.approx(gpu_seconds / 3600)
    assert fleet["goodput_gpu_hours"] == pytest.approx(kept / gpu_seconds)
    assert fleet["goodput_jobs"] == pytest.approx(sum(jobs["goodput"]) / 6)
    shares = [
        "productive_share",
        "checkpoint_share",
        "wasted_share",
        "restart_share",
        "startup_share",
        "other_share",
    ]
    assert sum(fleet[s] for s in shares) == pytest.approx(1.0)
    buckets = warehouse.query(
        con,
        "select value, n_jobs from rpt_fleet_goodput where dimension = 'gpu_bucket' order by value",
    )
    # 5001: 16 GPUs; 5002, 5003, 5004, 5007: 8; 5005: 16
    assert dict(buckets.iter_rows()) == {"1-8": 4, "9-64": 2}
    weeks = warehouse.query(con, "select value from rpt_fleet_goodput where dimension = 'iso_week'")
    assert weeks["value"].to_list() == ["2026-W23"]
