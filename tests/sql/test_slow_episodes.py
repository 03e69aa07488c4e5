"""Fail-slow from the step lines (int_step_pace, int_slow_episodes, int_slow_trends, the ledger's
slow_s and the fleet roll-up's split; docs/goodput.md §7), on hand-built logs in the real line
formats whose every figure is worked out below by hand, never read off the views.

Job 6001 (Megatron, 8 GPUs, one attempt 10:00:00-10:05:00 COMPLETED), 10 iterations a line:

    iteration   10   20   30   40 | 50   60  70  80   90  100  110 | 120  130 [save] 140  150  160
    ms        3500 1300 1010 1250 |1000 1020 980 1000 1010 990 1000| 1250 1300      1300 1010 1200
    iteration  170  180  190  200  210
    ms         990 1000 1300  990 1000

    warm-up: lines 1-3 (slow_warmup_lines), and line 4 (iteration 40): the median of the lines
      after the first three, iteration 140 (a save in its interval) left out, is 1000 ms, and
      1250 is 25 % off it; iteration 50 is the first within 20 %.
    baseline: iterations 50-210 but 140, 16 lines; sorted 980, 990 x3, 1000 x5, 1010 x2, 1020,
      1200, 1250, 1300 x2. Their 10th percentile (quantile_disc: the floor(15 x 0.1) + 1 = 2nd
      smallest) is 990 ms; the fast cluster, lines at most 1.05 x 990 = 1039.5 ms, is 980, 990
      x3, 1000 x5, 1010 x2, 1020 (12 lines): median 1.000 s; deviations 0 x5, 0.01 x5, 0.02 x2:
      MAD 0.01 s; theta = max(0.05, 4 x 1.4826 x 0.01 / 1) = 0.059304: slow above 1.059304 s.
    slow: 120, 130, 140 (save in its interval: printed time used, not in the baseline), 160, 190.
      150 (1.01) is one healthy line between two slow ones: merged. 170 ends the run.
    episode 1: lines 120-160 (5), steps 111-160, from the time of line 110 (10:02:25) to line 160
      (10:03:55); slowdown = median(1.25, 1.3, 1.3, 1.01, 1.2) = 1.25; slow_s = 10 x (0.25 + 0.3 +
      0.3 + 0.01 + 0.2) = 10.6 s; slow_step_s = 60.6 / 50 = 1.212 s; bound_s = 2 x 10 x 1.212.
    190 alone: one line of 13 s (10:04:15-10:04:28), under 60 s: no episode.
    ledger: F = 10:00:40 - 10 x 3.5 s = 10:00:05 (startup 5), save 10:02:50-10:03:20 (30 s), last
      line 10:04:48 (other 12): productive 283 - 30 = 253 before fail-slow, 253 - 10.6 = 242.4
      after; slow_s 10.6; wall 300 = 242.4 + 10.6 + 30 + 5 + 12.

Job 6002 (torchtitan, ts_diff pace, 8 GPUs, 11:00:00-11:05:00 COMPLETED): noisy but healthy,
    0.97-1.03 s a step, and a 90 s save after step 80. Baseline lines (steps 40-160 but 90, 12):
    sorted 0.97 x2, 0.98, 0.99 x2, 1.00 x2, 1.01 x2, 1.02, 1.03 x2; 10th percentile the 2nd, 0.97;
    fast cluster (at most 1.0185): the first 9, median 0.99, deviations 0.02 x4, 0.01 x3, 0 x2:
    MAD 0.01; theta = max(0.05, 4 x 1.4826 x 0.01 / 0.99) = 0.059903, slow above 1.0493: nothing
    slow. Step 90's interval is 100.2 s; less the 90 s save it is 1.02 s a step (without, 10.02 s
    a step over 100 s: it would be an episode).

Job 6003 (Megatron, 13:00:00-13:10:00 COMPLETED): a linear slowdown, 1.05 to 1.55 s a step over
    iterations 50-150 (after 3000, 1000, 1000, 1000 ms). The lines after the first three have
    median (1.25 + 1.30) / 2 = 1.275; iteration 40 (1.00) is 21.6 % off it, so warm-up; 50-150
    are scored: 10th percentile 1.10 (the 2nd of 11), fast cluster 1.05, 1.10, 1.15 (at most
    1.155): baseline 1.10, MAD 0.05, theta = 4 x 1.4826 x 0.05 / 1.1 = 0.2696, so 120-150
    (above 1.3966) are slow lines. The 11 lines rise in a straight line (correlation 1), by 0.5 s >=
    0.05 x 1.1: a trend over the attempt, steps 41-150, 1.05 -> 1.55 s (growth 1.476), no
    episode, slow_s 0.

Job 6004 (Megatron, 8 GPUs): attempt 1 12:00:00-12:10:00 NODE_FAIL, attempt 2 12:15:00-12:30:00
    COMPLETED after loading the save of iteration 60.
    attempt 1: 3000, then 1000 ms for iterations 20-80 (save at 60, 20 s), then 1500 ms for
      90-110. Baseline (40, 50, 60, 80, 90, 100, 110): median 1.0, MAD 0: theta 0.05. Episode:
      90-110 (steps 81-110), slowdown 1.5, slow_s = 30 x 0.5 = 15 s, 12:02:10-12:02:55. It lies
      after the save the next attempt resumed from: redone, so in wasted_s, not in slow_s. Not a
      trend: over the 8 scored lines (40-110) the correlation of pace with step is that of a
      step up after 5 of 8 points, 7.5 / sqrt(42 x 1.875) = 0.845 < 0.9, and the slow tail has
      3 lines (< 5).
    attempt 2: 3300, then 1100 ms for 80-140. Baseline 1.1 (100-140, 5 lines), theta 0.05; the
      job's other attempt runs at 1.0: 1.1 >= 1.05 x 1.0, the whole attempt is an episode
      (attempt_vs_job): steps 91-140 (5 scored lines, 50 steps), slowdown 1.1, slow_s = 50 x 0.1 =
      5 s, from 12:16:22 (line 90) to 12:17:17.
    ledger: attempt 1 F = 12:00:10 (startup 10), K = the end of the save of 60 (12:01:50),
      productive 100 - 20 = 80, checkpoint 20, wasted 12:01:50-12:02:55 = 65, detect 425;
      reschedule 300; attempt 2 F = 12:16:00 - 10 x 3.3 s = 12:15:27 (warm-up 27, the load has no
      time), productive 110, other 763. productive 190 - 5 = 185, slow_s 5; wall 1800 = 185 + 5 +
      20 + 65 + (425 + 300 + 27) + 10 + 763.

Job 6005 (8 GPUs, no log): estimated; slow_s null, slow_measured false.
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

SAMPLES = Path(__file__).resolve().parents[1] / "pipelines" / "sources" / "samples"
DATA_SAMPLE = Path(__file__).resolve().parents[2] / "data_samples" / "training" / "slurm-4242.out"
DAY = "2026-06-01"


def at(hms: str) -> datetime:
    """``DAY`` at ``hms`` (UTC)."""
    return datetime.fromisoformat(f"{DAY} {hms}").replace(tzinfo=UTC)


def _iteration(it: int, ms: float, hms: str) -> str:
    """A Megatron-LM iteration line (the format of data_samples/training/slurm-4242.out)."""
    return (
        f" [{DAY} {hms}] iteration {it:8d}/    1000 | consumed samples: {it * 256:12d} | "
        f"elapsed time per iteration (ms): {ms:.1f} | learning rate: 1.500000E-04 | "
        "global batch size:   256 | lm loss: 5.000000E+00 | loss scale: 1.0 | grad norm: 1.000 | "
        "number of skipped iterations:   0 | number of nan iterations:   0 |"
    )


def _save(it: int, max_ms: float) -> list[str]:
    """Megatron's save lines and its ``save-checkpoint`` timer (slowest rank ``max_ms``)."""
    return [
        f"saving checkpoint at iteration {it:7d} to /ckpt/gpt in torch_dist format",
        f"  successfully saved checkpoint from iteration {it:7d} to /ckpt/gpt [ t 1/1, p 1/1 ]",
        "(min, max) time across ranks (ms):",
        f"    save-checkpoint ................................: ({max_ms - 500:.2f}, {max_ms:.2f})",
    ]


def _megatron(lines: list[tuple[int, float, str]], saves: dict[int, float]) -> list[str]:
    out: list[str] = []
    for it, ms, hms in lines:
        out.append(_iteration(it, ms, hms))
        if it in saves:
            out.extend(_save(it, saves[it]))
    return out


LOG_6001 = _megatron(
    [
        (10, 3500.0, "10:00:40"),
        (20, 1300.0, "10:00:53"),
        (30, 1010.0, "10:01:03"),
        (40, 1250.0, "10:01:15"),
        (50, 1000.0, "10:01:25"),
        (60, 1020.0, "10:01:35"),
        (70, 980.0, "10:01:45"),
        (80, 1000.0, "10:01:55"),
        (90, 1010.0, "10:02:05"),
        (100, 990.0, "10:02:15"),
        (110, 1000.0, "10:02:25"),
        (120, 1250.0, "10:02:37"),
        (130, 1300.0, "10:02:50"),
        (140, 1300.0, "10:03:33"),  # 30 s save + 13 s
        (150, 1010.0, "10:03:43"),
        (160, 1200.0, "10:03:55"),
        (170, 990.0, "10:04:05"),
        (180, 1000.0, "10:04:15"),
        (190, 1300.0, "10:04:28"),
        (200, 990.0, "10:04:38"),
        (210, 1000.0, "10:04:48"),
    ],
    {130: 30000.0},
)


def _titan(hms_ms: str, text: str) -> str:
    return f"[rank0]:[titan] {DAY} {hms_ms} - root - INFO - {text}"


_METRICS = "loss:  6.1000  memory: 49.66GiB(52.28%)  tps: 5,856  tflops: 339.16  mfu: 34.29%"

LOG_6002 = [
    _titan(t, f"step: {step}  {_METRICS}")
    for step, t in [
        (10, "11:00:30,000"),
        (20, "11:00:40,200"),
        (30, "11:00:50,000"),
        (40, "11:01:00,000"),
        (50, "11:01:10,300"),
        (60, "11:01:20,000"),
        (70, "11:01:30,100"),
        (80, "11:01:40,000"),
    ]
] + [
    _titan("11:01:40,000", "Saving the checkpoint (or staging if async is enabled)."),
    _titan(
        "11:03:10,000",
        "Finished saving the checkpoint (or staging if async is enabled) in 90.00 seconds.",
    ),
    *(
        _titan(t, f"step: {step}  {_METRICS}")
        for step, t in [
            (90, "11:03:20,200"),
            (100, "11:03:30,000"),
            (110, "11:03:40,300"),
            (120, "11:03:50,000"),
            (130, "11:04:00,000"),
            (140, "11:04:10,200"),
            (150, "11:04:20,100"),
            (160, "11:04:30,200"),
        ]
    ),
]

LOG_6003 = _megatron(
    [
        (10, 3000.0, "13:00:40"),
        (20, 1000.0, "13:00:50"),
        (30, 1000.0, "13:01:00"),
        (40, 1000.0, "13:01:10"),
        (50, 1050.0, "13:01:20"),
        (60, 1100.0, "13:01:31"),
        (70, 1150.0, "13:01:43"),
        (80, 1200.0, "13:01:55"),
        (90, 1250.0, "13:02:07"),
        (100, 1300.0, "13:02:20"),
        (110, 1350.0, "13:02:34"),
        (120, 1400.0, "13:02:48"),
        (130, 1450.0, "13:03:02"),
        (140, 1500.0, "13:03:17"),
        (150, 1550.0, "13:03:33"),
    ],
    {},
)

LOG_6004 = [
    *_megatron(
        [
            (10, 3000.0, "12:00:40"),
            (20, 1000.0, "12:00:50"),
            (30, 1000.0, "12:01:00"),
            (40, 1000.0, "12:01:10"),
            (50, 1000.0, "12:01:20"),
            (60, 1000.0, "12:01:30"),
            (70, 1000.0, "12:02:00"),  # 20 s save + 10 s
            (80, 1000.0, "12:02:10"),
            (90, 1500.0, "12:02:25"),
            (100, 1500.0, "12:02:40"),
            (110, 1500.0, "12:02:55"),
        ],
        {60: 20000.0},
    ),
    "loading checkpoint from /ckpt/gpt at iteration 60",
    " successfully loaded checkpoint from /ckpt/gpt [ t 0/1, p 0/1 ] at iteration 60",
    *_megatron(
        [
            (70, 3300.0, "12:16:00"),
            (80, 1100.0, "12:16:11"),
            (90, 1100.0, "12:16:22"),
            (100, 1100.0, "12:16:33"),
            (110, 1100.0, "12:16:44"),
            (120, 1100.0, "12:16:55"),
            (130, 1100.0, "12:17:06"),
            (140, 1100.0, "12:17:17"),
        ],
        {},
    ),
]


def _attempt(job: str, start: str, end: str, state: str) -> dict[str, Any]:
    return {
        "job_id": job,
        "job_id_raw": job,
        "step": None,
        "job_name": "pretrain",
        "partition": "gpu",
        "account": "llm",
        "user_name": "ada",
        "alloc_nodes": 1,
        "n_gpus": 8,
        "node_list": f"n{job}",
        "nodes": [f"n{job}"],
        "submit_ts": at(start) - timedelta(minutes=1),
        "start_ts": at(start),
        "end_ts": at(end),
        "state": state,
        "exit_code": 0,
        "exit_signal": 0,
        "restarts": 0,
    }


SLURM = [
    _attempt("6001", "10:00:00", "10:05:00", "COMPLETED"),
    _attempt("6002", "11:00:00", "11:05:00", "COMPLETED"),
    _attempt("6003", "13:00:00", "13:10:00", "COMPLETED"),
    _attempt("6004", "12:00:00", "12:10:00", "NODE_FAIL"),
    _attempt("6004", "12:15:00", "12:30:00", "COMPLETED"),
    _attempt("6005", "14:00:00", "15:00:00", "COMPLETED"),
]


def _warehouse(
    logs: dict[str, bytes], slurm: list[dict[str, Any]], params: dict[str, float] | None = None
) -> duckdb.DuckDBPyConnection:
    con = duckdb.connect()
    con.execute("set TimeZone = 'UTC'")
    warehouse.apply_schema(con)
    for name, value in (params or {}).items():
        con.execute("insert or replace into cfg_params (name, value) values (?, ?)", [name, value])
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


LOGS = {
    "training/slurm-6001.out": LOG_6001,
    "training/slurm-6002.out": LOG_6002,
    "training/slurm-6003.out": LOG_6003,
    "training/slurm-6004.out": LOG_6004,
}


@pytest.fixture(scope="module")
def con() -> duckdb.DuckDBPyConnection:
    logs = {path: ("\n".join(lines) + "\n").encode() for path, lines in LOGS.items()}
    return _warehouse(logs, SLURM)


def _rows(
    con: duckdb.DuckDBPyConnection, sql: str, params: dict[str, object] | None = None
) -> list[dict[str, Any]]:
    return warehouse.query(con, sql, params).to_dicts()


def _episodes(con: duckdb.DuckDBPyConnection, job: str) -> list[dict[str, Any]]:
    return _rows(
        con,
        "select * from int_slow_episodes where job_id_raw = $job order by attempt, episode_no",
        {"job": job},
    )


def _pace(con: duckdb.DuckDBPyConnection, job: str) -> dict[int, dict[str, Any]]:
    rows = _rows(con, "select * from int_step_pace where job_id_raw = $job", {"job": job})
    return {r["step"]: r for r in rows}


def _ledger(con: duckdb.DuckDBPyConnection) -> dict[str, dict[str, Any]]:
    rows = _rows(con, "select * from fct_job_goodput order by job_id_raw")
    for row in rows:  # the ledger sums to the wall time, fail-slow included
        parts = ("productive_s", "checkpoint_s", "wasted_s", "restart_s", "startup_s", "other_s")
        total = sum(row[k] for k in parts) + (row["slow_s"] or 0.0)
        assert total == pytest.approx(row["wall_s"]), row["job_id_raw"]
    return {row["job_id_raw"]: row for row in rows}


def test_a_slow_stretch_is_one_episode_with_its_slow_time(con: duckdb.DuckDBPyConnection) -> None:
    pace = _pace(con, "6001")
    assert [s for s, r in sorted(pace.items()) if r["is_warmup"]] == [10, 20, 30, 40]
    assert pace[50]["baseline_step_s"] == pytest.approx(1.0)
    assert pace[50]["baseline_mad_s"] == pytest.approx(0.01)
    assert (pace[50]["n_baseline_lines"], pace[50]["n_fast_lines"]) == (16, 12)
    assert pace[50]["theta"] == pytest.approx(4 * 1.4826 * 0.01)
    assert (pace[140]["has_checkpoint"], pace[140]["in_baseline"]) == (True, False)
    assert pace[140]["pace_source"] == "printed"
    assert [s for s, r in sorted(pace.items()) if r["is_slow"]] == [120, 130, 140, 160, 190]
    (episode,) = _episodes(con, "6001")
    assert {k: episode[k] for k in ("job_id", "attempt", "episode_no", "pace_source")} == {
        "job_id": "6001",
        "attempt": 1,
        "episode_no": 1,
        "pace_source": "printed",
    }
    assert (episode["start_ts"], episode["end_ts"]) == (at("10:02:25"), at("10:03:55"))
    assert (episode["first_step"], episode["last_step"]) == (111, 160)
    assert (episode["n_lines"], episode["steps_per_line"]) == (5, 10)
    assert episode["baseline_step_s"] == pytest.approx(1.0)
    assert episode["slowdown"] == pytest.approx(1.25)
    assert episode["slow_s"] == pytest.approx(10.6)
    assert episode["slow_step_s"] == pytest.approx(1.212)
    assert episode["bound_s"] == pytest.approx(2 * 10 * 1.212)
    assert episode["attribution"] == "unattributed"
    assert (episode["blamed_host"], episode["blamed_gpu"], episode["blamed_rank"]) == (None,) * 3
    row = _ledger(con)["6001"]
    assert row["slow_measured"] is True
    expected = {
        "wall_s": 300.0,
        "productive_s": 242.4,
        "slow_s": 10.6,
        "checkpoint_s": 30.0,
        "startup_s": 5.0,
        "other_s": 12.0,
        "wasted_s": 0.0,
        "restart_s": 0.0,
    }
    assert {k: row[k] for k in expected} == pytest.approx(expected)
    assert row["goodput"] == pytest.approx(242.4 / 300)


def test_a_noisy_but_healthy_log_gives_no_episode(con: duckdb.DuckDBPyConnection) -> None:
    pace = _pace(con, "6002")
    assert {r["pace_source"] for s, r in pace.items() if s > 10} == {"ts_diff"}
    assert pace[90]["has_checkpoint"] is True
    assert pace[90]["step_s"] == pytest.approx(1.02)  # (100.2 - 90) / 10
    assert pace[100]["baseline_step_s"] == pytest.approx(0.99)
    assert pace[100]["baseline_mad_s"] == pytest.approx(0.01)
    assert (pace[100]["n_baseline_lines"], pace[100]["n_fast_lines"]) == (12, 9)
    assert pace[100]["theta"] == pytest.approx(4 * 1.4826 * 0.01 / 0.99)
    assert not any(r["is_slow"] or r["in_trend"] for r in pace.values())
    assert _episodes(con, "6002") == []
    row = _ledger(con)["6002"]
    assert (row["slow_s"], row["slow_measured"]) == (0.0, True)


def test_a_slowdown_that_keeps_growing_is_a_trend_not_an_episode(
    con: duckdb.DuckDBPyConnection,
) -> None:
    assert _episodes(con, "6003") == []
    (trend,) = _rows(con, "select * from int_slow_trends where job_id_raw = '6003'")
    assert trend["trend_source"] == "attempt"
    assert (trend["first_step"], trend["last_step"], trend["n_lines"]) == (41, 150, 11)
    assert (trend["start_ts"], trend["end_ts"]) == (at("13:01:10"), at("13:03:33"))
    assert (trend["first_step_s"], trend["last_step_s"]) == pytest.approx((1.05, 1.55))
    assert trend["growth"] == pytest.approx(1.55 / 1.05)
    assert trend["baseline_step_s"] == pytest.approx(1.1)
    row = _ledger(con)["6003"]
    assert (row["slow_s"], row["slow_measured"]) == (0.0, True)
    assert _rows(con, "select job_id_raw from int_slow_trends") == [{"job_id_raw": "6003"}]


def test_a_slow_attempt_and_a_slow_stretch_later_redone(con: duckdb.DuckDBPyConnection) -> None:
    first, whole = _episodes(con, "6004")
    assert {k: first[k] for k in ("attempt", "episode_no", "pace_source")} == {
        "attempt": 1,
        "episode_no": 1,
        "pace_source": "printed",
    }
    assert (first["first_step"], first["last_step"], first["n_lines"]) == (81, 110, 3)
    assert (first["start_ts"], first["end_ts"]) == (at("12:02:10"), at("12:02:55"))
    assert (first["slowdown"], first["slow_s"]) == pytest.approx((1.5, 15.0))
    assert {k: whole[k] for k in ("attempt", "episode_no", "pace_source")} == {
        "attempt": 2,
        "episode_no": 1,
        "pace_source": "attempt_vs_job",
    }
    assert (whole["first_step"], whole["last_step"], whole["n_lines"]) == (91, 140, 5)
    assert (whole["start_ts"], whole["end_ts"]) == (at("12:16:22"), at("12:17:17"))
    assert (whole["baseline_step_s"], whole["slow_step_s"]) == pytest.approx((1.0, 1.1))
    assert (whole["slowdown"], whole["slow_s"]) == pytest.approx((1.1, 5.0))
    row = _ledger(con)["6004"]
    expected = {
        "wall_s": 1800.0,
        "productive_s": 185.0,
        "slow_s": 5.0,  # attempt 1's episode was redone: it is in wasted_s
        "checkpoint_s": 20.0,
        "wasted_s": 65.0,
        "detect_s": 425.0,
        "reschedule_s": 300.0,
        "warmup_s": 27.0,
        "startup_s": 10.0,
        "other_s": 763.0,
    }
    assert {k: row[k] for k in expected} == pytest.approx(expected)
    # compute time per completed save, fail-slow included
    assert row["checkpoint_interval_s"] == pytest.approx(185 + 5 + 65)


def test_a_slow_attempt_counts_no_time_for_its_healthy_stretch() -> None:
    # Job 6006: attempt 1 is job 6004's (pace 1.0 s, its 1.5 s tail redone). Attempt 2 resumes
    # from iteration 60: 3300, 1100, 1100 ms (warm-up: its first three lines), then 1000 ms for
    # iterations 100-110 (steps 91-110: the slow unit has not joined yet) and 1100 ms for 120-160.
    # Its scored lines 100-160: 10th percentile 1.0 (the 1st of 7), fast cluster the two 1.0 s
    # lines: baseline 1.0, MAD 0, theta 0.05, so 120-160 (1.1 > 1.05) are an episode of the
    # attempt's own, steps 111-160 (5 lines): 10 x 0.1 x 5 = 5 s (not 0.1 x 70 = 7 s: the two
    # 1.0 s lines ran at the healthy pace). The attempt's baseline equals attempt 1's: no
    # attempt_vs_job episode. All of attempt 2 is kept (completed): the ledger's slow_s is 5 s.
    attempt_2 = _megatron(
        [
            (70, 3300.0, "12:16:00"),
            (80, 1100.0, "12:16:11"),
            (90, 1100.0, "12:16:22"),
            (100, 1000.0, "12:16:32"),
            (110, 1000.0, "12:16:42"),
            (120, 1100.0, "12:16:53"),
            (130, 1100.0, "12:17:04"),
            (140, 1100.0, "12:17:15"),
            (150, 1100.0, "12:17:26"),
            (160, 1100.0, "12:17:37"),
        ],
        {},
    )
    lines = [*LOG_6004[: LOG_6004.index(_iteration(70, 3300.0, "12:16:00"))], *attempt_2]
    slurm = [
        _attempt("6006", "12:00:00", "12:10:00", "NODE_FAIL"),
        _attempt("6006", "12:15:00", "12:30:00", "COMPLETED"),
    ]
    con = _warehouse({"training/slurm-6006.out": ("\n".join(lines) + "\n").encode()}, slurm)
    whole = [e for e in _episodes(con, "6006") if e["attempt"] == 2]
    assert [(e["pace_source"], e["first_step"], e["last_step"], e["n_lines"]) for e in whole] == [
        ("printed", 111, 160, 5)
    ]
    assert (whole[0]["start_ts"], whole[0]["end_ts"]) == (at("12:16:42"), at("12:17:37"))
    assert (whole[0]["baseline_step_s"], whole[0]["slow_step_s"]) == pytest.approx((1.0, 1.1))
    assert whole[0]["slow_s"] == pytest.approx(5.0)
    assert _ledger(con)["6006"]["slow_s"] == pytest.approx(5.0)


def test_a_mostly_slow_attempt_keeps_its_healthy_pace() -> None:
    # Job 6007 (Megatron, 16:00:00-16:05:00 COMPLETED), 10 iterations a line: 3000, 1500, 1500 ms
    # (warm-up: the first three lines), then 1500 ms for iterations 40-130 and 1000 ms for 140-150
    # (the slow GPU recovers). The lines after the first three have median 1500: iteration 40 is
    # within 20 %, no more warm-up. Baseline lines 40-150 (12): 10th percentile the 2nd smallest
    # (floor(11 x 0.1) + 1), 1000 ms; fast cluster (at most 1050 ms) the two 1000 ms lines:
    # baseline 1.0 s, MAD 0, theta 0.05. Lines 40-130 (83 % of the attempt) are one episode:
    # steps 31-130, 10 lines, from line 30's time (16:01:10) to line 130's (16:03:40), slowdown
    # 1.5, slow_s = 10 lines x 10 x 0.5 = 50 s. (A median baseline would be 1.5 s: no episode.)
    # Not a trend: the pace falls at the end (correlation < 0) and no slow tail follows the last
    # healthy line. Ledger: F = 16:00:40 - 10 x 3.0 s = 16:00:10 (startup 10), last line 16:04:00
    # (other 60): productive 230 - 50 = 180, slow_s 50; wall 300.
    times = ["16:00:40", "16:00:55", "16:01:10"]
    times += [f"16:0{(85 + 15 * i) // 60}:{(85 + 15 * i) % 60:02d}" for i in range(10)]
    times += ["16:03:50", "16:04:00"]
    pace = [3000.0, 1500.0, 1500.0] + [1500.0] * 10 + [1000.0, 1000.0]
    log = _megatron(
        [(10 * (i + 1), ms, hms) for i, (ms, hms) in enumerate(zip(pace, times, strict=True))], {}
    )
    assert times[12] == "16:03:40"
    slurm = [_attempt("6007", "16:00:00", "16:05:00", "COMPLETED")]
    con = _warehouse({"training/slurm-6007.out": ("\n".join(log) + "\n").encode()}, slurm)
    rows = _pace(con, "6007")
    assert [s for s, r in sorted(rows.items()) if r["is_warmup"]] == [10, 20, 30]
    assert (rows[40]["baseline_step_s"], rows[40]["baseline_mad_s"]) == pytest.approx((1.0, 0.0))
    assert (rows[40]["n_baseline_lines"], rows[40]["n_fast_lines"]) == (12, 2)
    assert rows[40]["theta"] == pytest.approx(0.05)
    (episode,) = _episodes(con, "6007")
    assert episode["pace_source"] == "printed"
    assert (episode["first_step"], episode["last_step"], episode["n_lines"]) == (31, 130, 10)
    assert (episode["start_ts"], episode["end_ts"]) == (at("16:01:10"), at("16:03:40"))
    assert (episode["slowdown"], episode["slow_s"]) == pytest.approx((1.5, 50.0))
    row = _ledger(con)["6007"]
    expected = {"wall_s": 300.0, "productive_s": 180.0, "slow_s": 50.0, "startup_s": 10.0}
    assert {k: row[k] for k in expected} == pytest.approx(expected)
    assert row["other_s"] == pytest.approx(60.0)


def test_a_few_lines_half_slow_do_not_widen_the_threshold() -> None:
    # Job 6008 (Megatron, 17:00:00-17:05:00 COMPLETED), 10 iterations a line: 3000, 1000, 1000 ms
    # (warm-up), then 990, 1000, 1120, 1120, 1130, 1130, 1010, 1020 ms (iterations 40-110). The
    # median of the lines after the first three is 1070: iteration 40 is within 20 %. Eight
    # baseline lines, half of them slow: a median baseline would be 1.07 s with MAD 0.06 (theta
    # 4 x 1.4826 x 0.06 / 1.07 = 0.33: nothing slow). The 10th percentile is the smallest (floor(7
    # x 0.1) + 1 = 1st), 990 ms; fast cluster (at most 1039.5 ms) 990, 1000, 1010, 1020: baseline
    # 1.005 s, deviations 0.015, 0.005, 0.005, 0.015, MAD 0.01; theta = max(0.05, 4 x 1.4826 x
    # 0.01 / 1.005) = 0.059009, slow above 1.0643 s. Episode: iterations 60-90 (steps 51-90, 4
    # lines, 17:01:20 to 17:02:04), slow_s = 10 x (0.115 x 2 + 0.125 x 2) = 4.8 s, slowdown =
    # median(1.12, 1.12, 1.13, 1.13) / 1.005 = 1.125 / 1.005. Not a trend (the pace comes back:
    # correlation 0.14; no tail). Ledger: F = 17:00:40 - 30 s = 17:00:10 (startup 10), last line
    # 17:02:24 (other 156): productive 134 - 4.8 = 129.2.
    lines = [
        (10, 3000.0, "17:00:40"),
        (20, 1000.0, "17:00:50"),
        (30, 1000.0, "17:01:00"),
        (40, 990.0, "17:01:10"),
        (50, 1000.0, "17:01:20"),
        (60, 1120.0, "17:01:31"),
        (70, 1120.0, "17:01:42"),
        (80, 1130.0, "17:01:53"),
        (90, 1130.0, "17:02:04"),
        (100, 1010.0, "17:02:14"),
        (110, 1020.0, "17:02:24"),
    ]
    slurm = [_attempt("6008", "17:00:00", "17:05:00", "COMPLETED")]
    log = _megatron(lines, {})
    con = _warehouse({"training/slurm-6008.out": ("\n".join(log) + "\n").encode()}, slurm)
    rows = _pace(con, "6008")
    assert (rows[40]["baseline_step_s"], rows[40]["baseline_mad_s"]) == pytest.approx((1.005, 0.01))
    assert (rows[40]["n_baseline_lines"], rows[40]["n_fast_lines"]) == (8, 4)
    assert rows[40]["theta"] == pytest.approx(4 * 1.4826 * 0.01 / 1.005)
    assert [s for s, r in sorted(rows.items()) if r["is_slow"]] == [60, 70, 80, 90]
    assert not any(r["in_trend"] for r in rows.values())
    (episode,) = _episodes(con, "6008")
    assert (episode["first_step"], episode["last_step"], episode["n_lines"]) == (51, 90, 4)
    assert (episode["start_ts"], episode["end_ts"]) == (at("17:01:20"), at("17:02:04"))
    assert episode["slow_s"] == pytest.approx(4.8)
    assert episode["slowdown"] == pytest.approx(1.125 / 1.005)
    row = _ledger(con)["6008"]
    expected = {"wall_s": 300.0, "productive_s": 129.2, "slow_s": 4.8, "other_s": 156.0}
    assert {k: row[k] for k in expected} == pytest.approx(expected)


def test_an_estimated_job_has_no_measured_slow_time(con: duckdb.DuckDBPyConnection) -> None:
    row = _ledger(con)["6005"]
    assert (row["estimated"], row["slow_measured"], row["slow_s"]) == (True, False, None)


def test_the_roll_up_splits_badput_into_fail_stop_and_fail_slow(
    con: duckdb.DuckDBPyConnection,
) -> None:
    jobs = _ledger(con)
    fleet = _rows(con, "select * from rpt_fleet_goodput where dimension = 'all'")[0]
    # every job has 8 GPUs: the GPU-hour weights cancel
    wall = sum(j["wall_s"] for j in jobs.values())
    measured = [j for j in jobs.values() if j["slow_measured"]]
    assert [j["job_id_raw"] for j in measured] == ["6001", "6002", "6003", "6004"]
    assert fleet["n_slow_measured"] == 4
    assert fleet["n_slow_jobs"] == 2
    assert fleet["failslow_share"] == pytest.approx(15.6 / (300 + 300 + 600 + 1800))
    assert fleet["failslow_gpu_hours"] == pytest.approx(8 * 15.6 / 3600)
    assert fleet["failslow_share_jobs"] == pytest.approx((10.6 / 300 + 5 / 1800) / 4)
    stop = sum(j["wasted_s"] + j["restart_s"] for j in jobs.values())
    assert fleet["failstop_share"] == pytest.approx(stop / wall)
    assert fleet["failstop_gpu_hours"] == pytest.approx(8 * stop / 3600)
    assert fleet["slow_share"] == pytest.approx(15.6 / wall)
    shares = ("productive", "slow", "checkpoint", "wasted", "restart", "startup", "other")
    assert sum(fleet[f"{s}_share"] for s in shares) == pytest.approx(1.0)


def test_the_new_views_keys_are_unique(con: duckdb.DuckDBPyConnection) -> None:
    keys = {
        "int_step_pace": "job_id_raw, attempt, step",
        "int_slow_episodes": "job_id_raw, attempt, episode_no",
        "int_slow_trends": "job_id_raw, attempt",
    }
    for view, key in keys.items():
        assert _rows(con, f"select {key} from {view} group by all having count(*) > 1") == []
    assert _rows(con, "select * from rpt_slow_units") == []  # no episode is attributed yet


def test_the_tolerated_slowness_is_a_parameter() -> None:
    logs = {"training/slurm-6001.out": ("\n".join(LOG_6001) + "\n").encode()}
    con = _warehouse(logs, SLURM[:1], {"slow_theta_min": 0.5})
    assert _episodes(con, "6001") == []  # 1.3 s is under 1.5 x 1.0 s
    row = _ledger(con)["6001"]
    assert (row["slow_s"], row["productive_s"]) == (0.0, pytest.approx(253.0))


def test_real_logs_without_a_slow_stretch_keep_their_ledger() -> None:
    # data_samples/training/slurm-4242.out: every printed step time is 1200.0-1218.6 ms (a cycle
    # of 1215.5, 1209.3, 1203.1, 1218.6, 1212.4, 1206.2, 1200.0), so each attempt's median is at
    # least 1200 ms and no line reaches 1.05 x 1200 = 1260 ms; the two attempts' medians differ by
    # at most 1218.6 / 1200 = 1.016 < 1.05. slow_s 0, and the ledger of
    # tests/pipelines/test_training_log_only.py stands (productive 239.66721 s).
    # Megatron-LLM #22 (tests/pipelines/sources/samples/failslow/, the linear slowdown): three
    # lines without a date, 84606.2, 142474.1 and 202438.6 ms: all three are warm-up (the first
    # three lines of a run), so no baseline, no episode, no trend.
    logs = {
        "training/slurm-4242.out": DATA_SAMPLE.read_bytes(),
        "training/llm22.log": (
            SAMPLES / "failslow" / "megatron_llm_22_linear_slowdown.log"
        ).read_bytes(),
    }
    con = _warehouse(logs, [])
    row = _ledger(con)["log:4242"]
    assert (row["slow_s"], row["slow_measured"]) == (0.0, True)
    assert row["productive_s"] == pytest.approx(239.66721)
    assert _rows(con, "select * from int_slow_episodes") == []
    assert _rows(con, "select * from int_slow_trends") == []
    llm22 = _rows(
        con,
        "select step, k, step_s, pace_source, is_warmup, baseline_step_s from int_step_pace "
        "where job_id_raw = 'log:training/llm22.log' order by step",
    )
    assert llm22 == [
        {"step": 10, "k": None, "step_s": pytest.approx(84.6062), "pace_source": "printed",
         "is_warmup": True, "baseline_step_s": None},
        {"step": 15, "k": 5, "step_s": pytest.approx(142.4741), "pace_source": "printed",
         "is_warmup": True, "baseline_step_s": None},
        {"step": 20, "k": 5, "step_s": pytest.approx(202.4386), "pace_source": "printed",
         "is_warmup": True, "baseline_step_s": None},
    ]  # fmt: skip
