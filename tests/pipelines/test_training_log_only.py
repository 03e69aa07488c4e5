"""Training logs without a scheduler record: runs, log-only attempts and their ledger
(int_training_log_runs, int_training_log_attempts, int_training_attempts, fct_job_goodput;
docs/goodput.md §1 "Runs" and §2 "Log-only attempts").

Every figure below is worked out by hand from the lines (comments), never from the views.
The real slices are in tests/pipelines/sources/samples/training/ (provenance in its README);
the appended two-job output is built by hand from torchtitan's real message formats (those of
torchtitan_1287_steps.log and newcomputebench_torchtitan_checkpoint.log) and Slurm's.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import duckdb
import polars as pl
import pytest

from pipelines import warehouse
from pipelines.ingest.sources.training import parse

SAMPLES = Path(__file__).parent / "sources" / "samples" / "training"
DATA_SAMPLE = Path(__file__).resolve().parents[2] / "data_samples" / "training" / "slurm-4242.out"

_M = "memory: 49.66GiB(52.28%)  tps: 5,856  tflops: 339.16  mfu: 34.29%"
_T = "[rank0]:[titan] 2025-06-16"
# One Slurm output written with --open-mode=append (a fixed --output name, so the file's name
# names no job): job 7001 crashes (srun's task exit), job 7002, a new submission, resumes from
# 7001's save at step 20 and completes. Each run's job script prints SLURM_JOB_ID first.
APPENDED = f"""SLURM_JOB_ID=7001
{_T} 22:00:00,000 - root - INFO - Starting job: Llama 3 8B training
{_T} 22:01:00,000 - root - INFO - Training starts at step 1.
{_T} 22:02:00,000 - root - INFO - step: 10  loss:  8.1000  {_M}
{_T} 22:03:00,000 - root - INFO - step: 20  loss:  7.2000  {_M}
{_T} 22:03:00,000 - root - INFO - Saving the checkpoint (or staging if async is enabled).
{_T} 22:03:30,000 - root - INFO - Finished saving the checkpoint (or staging if async is enabled) \
in 30.00 seconds.
{_T} 22:04:30,000 - root - INFO - step: 30  loss:  6.9000  {_M}
[rank0]: Traceback (most recent call last):
[rank0]: torch.OutOfMemoryError: CUDA out of memory.
srun: error: gpu0003: task 0: Exited with exit code 1
SLURM_JOB_ID=7002
{_T} 22:10:00,000 - root - INFO - Starting job: Llama 3 8B training
{_T} 22:10:30,000 - root - INFO - Loading the checkpoint at step 20.
{_T} 22:11:00,000 - root - INFO - Finished loading the checkpoint in 30.00 seconds.
{_T} 22:11:30,000 - root - INFO - Training starts at step 21.
{_T} 22:12:30,000 - root - INFO - step: 30  loss:  6.9000  {_M}
{_T} 22:13:30,000 - root - INFO - step: 40  loss:  6.5000  {_M}
{_T} 22:13:30,000 - root - INFO - Saving the checkpoint (or staging if async is enabled).
{_T} 22:14:00,000 - root - INFO - Finished saving the checkpoint (or staging if async is enabled) \
in 30.00 seconds.
{_T} 22:14:05,000 - root - INFO - Training completed
"""


def utc(text: str) -> datetime:
    """``YYYY-MM-DD HH:MM:SS[.ffffff]`` as UTC."""
    return datetime.fromisoformat(text).replace(tzinfo=UTC)


def _warehouse(
    logs: dict[str, bytes], slurm: list[dict[str, Any]] | None = None
) -> duckdb.DuckDBPyConnection:
    """An in-memory warehouse holding ``logs`` (path -> bytes, parsed) and ``slurm`` rows."""
    con = duckdb.connect()
    con.execute("set TimeZone = 'UTC'")
    warehouse.apply_schema(con)
    for path, data in logs.items():
        parsed = parse(data, source_file=path)
        assert parsed.rejects.height == 0
        con.register("incoming", parsed.rows.to_arrow())
        con.execute("insert into raw_training_events by name select * from incoming")
        con.unregister("incoming")
    if slurm:
        frame = pl.DataFrame(slurm, infer_schema_length=None).with_columns(
            source_file=pl.lit("sacct.txt"), line_no=pl.int_range(1, len(slurm) + 1)
        )
        con.register("incoming", frame.to_arrow())
        con.execute("insert into raw_slurm_jobs by name select * from incoming")
        con.unregister("incoming")
    warehouse.create_views(con)
    return con


def _rows(con: duckdb.DuckDBPyConnection, sql: str) -> list[dict[str, Any]]:
    return warehouse.query(con, sql).to_dicts()


LOGS = {
    "training/slurm-4242.out": DATA_SAMPLE,
    "training/run.log": SAMPLES / "megatron_bridge_1656_done_then_time_limit.log",
    "training/mcore.log": SAMPLES / "megatron_lm_1570_date_prefix.log",
    "training/bridge.log": SAMPLES / "megatron_bridge_3427_training_done.log",
}


@pytest.fixture(scope="module")
def logs_only() -> duckdb.DuckDBPyConnection:
    """The logs above and the appended output, with no scheduler record at all."""
    logs = {path: sample.read_bytes() for path, sample in LOGS.items()}
    return _warehouse(logs | {"training/train.out": APPENDED.encode()})


LEDGER = (
    "job_id_raw",
    "job_id",
    "attempt_source",
    "final_state",
    "final_end_cause",
    "n_attempts",
    "wall_s",
    "productive_s",
    "checkpoint_s",
    "wasted_s",
    "restart_s",
    "detect_s",
    "reschedule_s",
    "reload_s",
    "warmup_s",
    "startup_s",
    "other_s",
    "measured",
)
PARTS = ("productive_s", "checkpoint_s", "wasted_s", "restart_s", "startup_s", "other_s")


def _ledger(con: duckdb.DuckDBPyConnection) -> dict[str, dict[str, Any]]:
    rows = _rows(con, f"select {', '.join(LEDGER)} from fct_job_goodput order by job_id_raw")
    for row in rows:  # the ledger sums to the wall time
        assert sum(row[k] for k in PARTS) == pytest.approx(row["wall_s"])
    return {row["job_id_raw"]: row for row in rows}


def test_slurm_lines_of_real_logs_name_their_job_and_end() -> None:
    # zetta_utils #671: slurmstepd's JOB and STEP lines (host elided as "..."), DUE TO TIME LIMIT
    rows = parse(
        (SAMPLES / "zetta_utils_671_slurm_time_limit.log").read_bytes(), source_file="z.log"
    ).rows
    assert rows.select("line_no", "event", "framework", "job_named", "detail", "ts").rows() == [
        (2, "job_cancelled", "slurm", "494583", "DUE TO TIME LIMIT", utc("2024-04-20 09:09:37")),
        (3, "job_cancelled", "slurm", "494583", "DUE TO TIME LIMIT", utc("2024-04-20 09:09:37")),
    ]
    # desitarget #628: a STEP cancel (job 32233190) then three srun task lines "Terminated"; the
    # "Force Terminated", "Job step aborted" and "Terminating job step" lines are not task exits
    result = parse(
        (SAMPLES / "desitarget_628_srun_terminated.log").read_bytes(), source_file="d.log"
    )
    assert result.n_ignored == 3
    assert result.rows.select("line_no", "event", "job_named", "detail").rows() == [
        (3, "job_cancelled", "32233190", "DUE TO TIME LIMIT"),
        (4, "task_exit", None, "Terminated"),
        (6, "task_exit", None, "Terminated"),
        (7, "task_exit", None, "Terminated"),
    ]


def test_a_log_without_a_scheduler_record_gives_attempts_and_a_ledger(
    logs_only: duckdb.DuckDBPyConnection,
) -> None:
    # data_samples/training/slurm-4242.out, no sacct: job 4242 from the file's name.
    # Run 1 (lines 1-57): "[after megatron is initialized]" 08:00:00 (start), training start
    #   08:02:15 (F), saves at 50 (08:03:15 + 21.34567 s) and 100 (08:04:36 + 21.34567 s),
    #   last iteration 130 at 08:05:33 (P, the run's last printed time: its end), srun's "task 3:
    #   Exited with exit code 1" (a crash). Run 2 loads 100: kept until the save of 100 ended,
    #   K = 08:04:57.34567. startup 135; productive 162.34567 - 42.69134 = 119.65433;
    #   checkpoint 42.69134; wasted (iterations 101-130, redone) 08:04:57.34567-08:05:33 =
    #   35.65433; detect 0 (nothing after the last printed time is seen).
    # Reschedule: 08:05:33 -> 08:14:33 (run 2's "[after megatron is initialized]") = 540.
    # Run 2 (lines 58-97): the load prints no time (reload unknown): 08:14:33 -> training start
    #   08:17:21 is warm-up 168; saves at 150 (08:18:21 + 20.98712) and 200 (08:19:42 +
    #   20.98712 -> P = 08:20:02.98712); "[after training is done]" 08:20:03 (completed, the
    #   end): productive 161.98712 - 41.97424 = 120.01288, checkpoint 41.97424, other 0.01288.
    # Wall 08:00:00 -> 08:20:03 = 1203 = 239.66721 + 84.66558 + 35.65433 + 708 + 135 + 0.01288.
    con = logs_only
    ties = _rows(
        con,
        "select job_id, tie from int_training_log_ties "
        "where source_file = 'training/slurm-4242.out'",
    )
    assert ties == [{"job_id": "4242", "tie": "none"}]
    attempts = _rows(
        con,
        "select attempt, attempt_source, state, end_cause, end_reason, start_ts, end_ts "
        "from int_training_attempts where job_id_raw = 'log:4242' order by attempt",
    )
    assert [tuple(a.values()) for a in attempts] == [
        (
            1,
            "training_log",
            "FAILED",
            "crash",
            "srun: Exited with exit code 1",
            utc("2026-06-01 08:00:00"),
            utc("2026-06-01 08:05:33"),
        ),
        (
            2,
            "training_log",
            "COMPLETED",
            "completed",
            "training-end line",
            utc("2026-06-01 08:14:33"),
            utc("2026-06-01 08:20:03"),
        ),
    ]
    row = _ledger(con)["log:4242"]
    assert (row["job_id"], row["attempt_source"], row["final_state"], row["n_attempts"]) == (
        "4242",
        "training_log",
        "COMPLETED",
        2,
    )
    assert row["measured"]
    expected = {
        "wall_s": 1203.0,
        "productive_s": 119.65433 + 120.01288,
        "checkpoint_s": 42.69134 + 41.97424,
        "wasted_s": 35.65433,
        "restart_s": 540.0 + 168.0,
        "detect_s": 0.0,
        "reschedule_s": 540.0,
        "reload_s": 0.0,
        "warmup_s": 168.0,
        "startup_s": 135.0,
        "other_s": 0.01288,
    }
    assert {k: row[k] for k in expected} == pytest.approx(expected, abs=1e-6)


def test_an_appended_output_with_two_jobs_gives_two_jobs_with_their_own_ids(
    logs_only: duckdb.DuckDBPyConnection,
) -> None:
    # job 7001: start 22:00:00 ("Starting job"), F 22:01:00 (training start), steps 10, 20, 30;
    #   the save of 20 22:03:00-22:03:30; P = 22:04:30 (step 30, its last printed time, its end);
    #   crashed, so kept until its save ended: K = 22:03:30. startup 60, productive 150 - 30 =
    #   120, checkpoint 30, wasted 60 (steps 21-30); wall 270.
    # job 7002 (its own job: attempt 1, so its load is start-up): start 22:10:00, F 22:11:30,
    #   save of 40 22:13:30-22:14:00 (P), completed 22:14:05: startup 90, productive 150 - 30 =
    #   120, checkpoint 30, other 5; wall 245.
    con = logs_only
    ties = _rows(
        con,
        "select job_id, tie, n_events from int_training_log_ties "
        "where source_file = 'training/train.out' order by job_id",
    )
    # 7001: banner, launch, train start, 3 steps, save start and end, task exit = 9;
    # 7002: banner, launch, load start and end, train start, 2 steps, save start and end, end
    assert ties == [
        {"job_id": "7001", "tie": "none", "n_events": 9},
        {"job_id": "7002", "tie": "none", "n_events": 10},
    ]
    ledger = _ledger(con)
    assert {"log:7001", "log:7002"} <= set(ledger)
    first, second = ledger["log:7001"], ledger["log:7002"]
    assert (first["job_id"], first["final_state"], first["final_end_cause"]) == (
        "7001",
        "FAILED",
        "crash",
    )
    assert (second["job_id"], second["final_state"], second["final_end_cause"]) == (
        "7002",
        "COMPLETED",
        "completed",
    )
    assert {k: first[k] for k in PARTS} | {"wall_s": first["wall_s"]} == pytest.approx(
        {
            "productive_s": 120.0,
            "checkpoint_s": 30.0,
            "wasted_s": 60.0,
            "restart_s": 0.0,
            "startup_s": 60.0,
            "other_s": 0.0,
            "wall_s": 270.0,
        }
    )
    assert {k: second[k] for k in PARTS} | {"wall_s": second["wall_s"]} == pytest.approx(
        {
            "productive_s": 120.0,
            "checkpoint_s": 30.0,
            "wasted_s": 0.0,
            "restart_s": 0.0,
            "startup_s": 90.0,
            "other_s": 5.0,
            "wall_s": 245.0,
        }
    )


def test_each_job_of_an_appended_output_ties_on_its_own() -> None:
    # sacct holds 7001 (one attempt 21:59:00-22:05:00, FAILED) but not 7002: 7001's lines tie to
    # it (the scheduler's attempt), 7002 stays log-only; neither lands under the other's id
    start = utc("2025-06-16 21:59:00")
    sacct = {
        "job_id": "7001",
        "job_id_raw": "7001",
        "step": None,
        "job_name": "llama3",
        "partition": "gpu",
        "account": "llm",
        "user_name": "ada",
        "alloc_nodes": 1,
        "n_gpus": 8,
        "node_list": "gpu0003",
        "nodes": ["gpu0003"],
        "submit_ts": start - timedelta(minutes=1),
        "start_ts": start,
        "end_ts": utc("2025-06-16 22:05:00"),
        "state": "FAILED",
        "exit_code": 1,
        "exit_signal": 0,
        "restarts": 0,
    }
    con = _warehouse({"training/train.out": APPENDED.encode()}, [sacct])
    ties = _rows(con, "select job_id, tie, job_id_raw from int_training_log_ties order by job_id")
    assert ties == [
        {"job_id": "7001", "tie": "job_id", "job_id_raw": "7001"},
        {"job_id": "7002", "tie": "none", "job_id_raw": None},
    ]
    events = _rows(
        con,
        "select job_id_raw, count(*) as n, min(step) as lo, max(step) as hi "
        "from int_training_events where event = 'step' group by all order by 1",
    )
    assert events == [
        {"job_id_raw": "7001", "n": 3, "lo": 10, "hi": 30},
        {"job_id_raw": "log:7002", "n": 2, "lo": 30, "hi": 40},
    ]
    ledger = _ledger(con)
    assert ledger["7001"]["attempt_source"] == "scheduler"
    # the scheduler's wall: 21:59:00-22:05:00; its 30 s after the last step is detection
    assert ledger["7001"]["wall_s"] == 360.0
    assert ledger["7001"]["detect_s"] == 30.0
    assert ledger["log:7002"]["attempt_source"] == "training_log"


def test_a_real_completed_run_cancelled_at_its_time_limit_is_completed_and_says_so(
    logs_only: duckdb.DuckDBPyConnection,
) -> None:
    # Megatron-Bridge #1656: "[after training is done]" 14:45:03, then slurmstepd's "STEP
    # 4226796.2 ... CANCELLED AT 2025-12-03T14:53:02 DUE TO TIME LIMIT": one run of job 4226796,
    # from 14:45:03 to the cancel; training ended at its first line, so the 479 s hang after it
    # is other time (no step line: nothing productive is seen)
    con = logs_only
    (attempt,) = _rows(
        con,
        "select job_id_raw, state, end_cause, end_reason from int_training_log_attempts "
        "where source_file = 'training/run.log'",
    )
    assert attempt == {
        "job_id_raw": "log:4226796",
        "state": "COMPLETED",
        "end_cause": "completed",
        "end_reason": "training-end line, then slurmstepd CANCELLED DUE TO TIME LIMIT",
    }
    row = _ledger(con)["log:4226796"]
    assert (row["wall_s"], row["other_s"], row["productive_s"], row["startup_s"]) == (
        479.0,
        479.0,
        0.0,
        0.0,
    )


def test_a_real_log_that_shows_no_end_keeps_its_end_unknown(
    logs_only: duckdb.DuckDBPyConnection,
) -> None:
    # Megatron-LM #1570: iterations 1-3 (06:11:17, 06:11:20, 06:11:23) and nothing after: no
    # name gives a job (log:<file>), no line says how the run ended. Wall 6 s, from the first
    # iteration (F backs off 21.8479 s from it, clamped at the start) to the last (P); no save
    # kept anything, so the 6 s are wasted, as for any attempt that is not a completed one
    path = "training/mcore.log"
    con = logs_only
    (attempt,) = _rows(
        con,
        "select job_id_raw, job_id, state, end_cause, end_reason from int_training_log_attempts "
        f"where source_file = '{path}'",
    )
    assert attempt == {
        "job_id_raw": f"log:{path}",
        "job_id": None,
        "state": "UNKNOWN",
        "end_cause": "unknown",
        "end_reason": "no training-end, cancel or task-exit line in the run",
    }
    row = _ledger(con)[f"log:{path}"]
    assert (row["final_state"], row["wall_s"], row["wasted_s"], row["productive_s"]) == (
        "UNKNOWN",
        6.0,
        6.0,
        0.0,
    )


def test_a_real_completed_run_with_one_step_line(logs_only: duckdb.DuckDBPyConnection) -> None:
    # Megatron-Bridge #3427: iteration 50/50 at 03:17:07, "[after training is done]" 03:17:08:
    # one run, completed; F backs off 50 x 9.9694 s from 03:17:07, clamped at the run's start
    # (03:17:07, its first printed time), P = 03:17:07: productive 0, other 1 s
    path = "training/bridge.log"
    row = _ledger(logs_only)[f"log:{path}"]
    assert (row["final_end_cause"], row["wall_s"], row["other_s"], row["productive_s"]) == (
        "completed",
        1.0,
        1.0,
        0.0,
    )
