"""torchrun attempts in ``int_job_attempts``: one per worker-group start whatever rendezvous lines
precede it, and the attempts of a log that prints no time (Python's default format of torch
1.10-1.13) with their states and exit codes and null times and overheads. The logs are written
here by hand in the wording torch prints; every expectation is read off them."""

from __future__ import annotations

import textwrap
from dataclasses import replace
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from pipelines import ingest, warehouse
from synth import SynthConfig, default_classes, synthesize

if TYPE_CHECKING:
    from pathlib import Path

AGENT = "torch.distributed.elastic.agent.server.api"
MP = "torch.distributed.elastic.multiprocessing.api"


def _block(prefix: str, restart_count: int, n_workers: int) -> str:
    """A ``Rendezvous complete`` header and its result block (torch 1.9-2.2 layout)."""
    sizes = ", ".join([str(n_workers)] * n_workers)
    return f"""{prefix}[default] Rendezvous complete for workers. Result:
  restart_count={restart_count}
  master_addr=127.0.0.1
  master_port=29500
  group_rank=0
  group_world_size=1
  global_world_sizes=[{sizes}]
"""


def _ingest(tmp_path: Path, text: str, run: str) -> Path:
    landing = tmp_path / "elastic"
    landing.mkdir()
    (landing / "agent-0.log").write_text(textwrap.dedent(text).lstrip("\n"))
    db = tmp_path / "relia.duckdb"
    ingest.ingest(
        db, ingest.discover([landing]), parser_options={"elastic": {"host": "gpu0001", "run": run}}
    )
    return db


def _query(db: Path, sql: str) -> list[tuple[Any, ...]]:
    with warehouse.connect(db, read_only=True) as con:
        return con.execute(sql).fetchall()


def _at(clock: str) -> datetime:
    return datetime.fromisoformat(f"2026-06-03T{clock}").replace(tzinfo=UTC)


def _bracket(clock: str, logger: str, level: str) -> str:
    return f"[2026-06-03 {clock}] {logger}: [{level}] "


def test_three_worker_group_starts_without_a_round_0_block_are_three_attempts(
    tmp_path: Path,
) -> None:
    # the first round prints no result block; the restarts print restart_count 1 and 2. Attempt
    # 1 runs 08:00:05 to the exit 1 at 10:00:00, attempt 2 from 10:02:00.5 to the SIGKILL at
    # 12:00:00, attempt 3 from 12:03:00.5 to its success at 14:00:00
    a, m = (lambda c: _bracket(c, AGENT, "INFO")), (lambda c: _bracket(c, MP, "ERROR"))
    log = (
        f"{a('08:00:00,000')}[default] starting workers for entrypoint: python\n"
        f"{a('08:00:00,001')}[default] Rendezvous'ing worker group\n"
        f"{a('08:00:05,000')}[default] Starting worker group\n"
        f"{m('10:00:00,000')}failed (exitcode: 1) local_rank: 0 (pid: 11) of binary: python3\n"
        f"{a('10:00:01,000')}[default] Worker group FAILED. 3/3 attempts left; will restart "
        "worker group\n"
        f"{a('10:00:01,500')}[default] Stopping worker group\n"
        f"{a('10:00:02,000')}[default] Rendezvous'ing worker group\n"
        + _block(a("10:02:00,000"), 1, 8)
        + f"{a('10:02:00,500')}[default] Starting worker group\n"
        f"{m('12:00:00,000')}failed (exitcode: -9) local_rank: 5 (pid: 21) of binary: python3\n"
        f"{a('12:00:01,000')}[default] Worker group FAILED. 2/3 attempts left; will restart "
        "worker group\n"
        f"{a('12:00:01,500')}[default] Stopping worker group\n"
        f"{a('12:00:02,000')}[default] Rendezvous'ing worker group\n"
        + _block(a("12:03:00,000"), 2, 8)
        + f"{a('12:03:00,500')}[default] Starting worker group\n"
        f"{a('14:00:00,000')}[default] worker group successfully finished. Waiting 300 seconds "
        "for other agents to finish.\n"
    )
    db = _ingest(tmp_path, log, run="llm-9")
    assert _query(db, "select count(*) from raw_quarantine") == [(0,)]
    assert _query(
        db,
        "select attempt, state, start_ts, end_ts, exit_code, exit_signal, is_interruption, "
        "restart_overhead_s, n_gpus from int_job_attempts order by attempt",
    ) == [
        (1, "FAILED", _at("08:00:05"), _at("10:00:00"), 1, 0, True, 120.5, None),
        (2, "FAILED", _at("10:02:00.5"), _at("12:00:00"), None, 9, True, 180.5, 8),
        (3, "COMPLETED", _at("12:03:00.5"), _at("14:00:00"), 0, 0, False, None, 8),
    ]


TORCH_1_12 = f"""
    INFO:{AGENT}:[default] starting workers for entrypoint: python
    INFO:{AGENT}:[default] Rendezvous'ing worker group
    {{block0}}
    INFO:{AGENT}:[default] Starting worker group
    step 100 | loss 2.13
    ERROR:{MP}:failed (exitcode: 1) local_rank: 0 (pid: 1622990) of binary: /usr/bin/python
    INFO:{AGENT}:[default] Worker group FAILED. 3/3 attempts left; will restart worker group
    INFO:{AGENT}:[default] Stopping worker group
    INFO:{AGENT}:[default] Rendezvous'ing worker group
    {{block1}}
    INFO:{AGENT}:[default] Starting worker group
    WARNING:{MP}:Sending process 407728 closing signal SIGTERM
    ERROR:{MP}:failed (exitcode: -9) local_rank: 3 (pid: 407727) of binary: /usr/bin/python
    INFO:{AGENT}:[default] Worker group FAILED. 2/3 attempts left; will restart worker group
    INFO:{AGENT}:[default] Stopping worker group
    INFO:{AGENT}:[default] Rendezvous'ing worker group
    {{block2}}
    INFO:{AGENT}:[default] Starting worker group
    INFO:{AGENT}:[default] worker group successfully finished. Waiting 300 seconds for other agents to finish.
"""  # noqa: E501


def test_torch_1_12_log_without_times_gives_attempts_failures_and_null_overheads(
    tmp_path: Path,
) -> None:
    # Python's default format: no line prints a time. Three starts (restart_count 0, 1, 2): the
    # first ends in exit 1, the second in a SIGKILL (-9), the third succeeds; 4 workers
    prefix = f"INFO:{AGENT}:"
    blocks = {f"block{n}": _block(prefix, n, 4).replace("\n", "\n    ") for n in range(3)}
    db = _ingest(tmp_path, TORCH_1_12.format(**blocks), run="llm-12")
    assert _query(db, "select count(*) from raw_quarantine") == [(0,)]
    assert _query(
        db,
        "select event, round, restarts_left, max_restarts from stg_elastic_events "
        "where event in ('workers_started', 'group_restart') order by line_no",
    ) == [
        ("workers_started", 0, None, None),
        ("group_restart", 0, 3, 3),
        ("workers_started", 1, None, None),
        ("group_restart", 1, 2, 3),
        ("workers_started", 2, None, None),
    ]
    assert _query(
        db,
        "select attempt, state, exit_code, exit_signal, termination_reason, "
        "is_application_exit, n_gpus from int_job_attempts order by attempt",
    ) == [
        (1, "FAILED", 1, 0, "exitcode 1", True, 4),
        (2, "FAILED", None, 9, "exitcode -9", False, 4),
        (3, "COMPLETED", 0, 0, "succeeded", False, 4),
    ]
    # times unknown: null, never 0; a failure without a time is no interruption
    assert _query(
        db,
        "select attempt, submit_ts, start_ts, end_ts, restart_overhead_s, gpu_hours, "
        "is_interruption from int_job_attempts order by attempt",
    ) == [(n, None, None, None, None, None, False) for n in (1, 2, 3)]
    # and no line of the file prints a time to bound them by: unknown, not bounded
    assert _query(
        db,
        "select attempt, start_ts_lo, start_ts_hi, end_ts_lo, end_ts_hi from int_job_attempts "
        "order by attempt",
    ) == [(n, None, None, None, None) for n in (1, 2, 3)]


# torch 1.10-1.13 under logging.basicConfig (the agent prints no time) with a training script
# that stamps its own lines, two attempts (--max_restarts 1): the first ends in exit 1, the
# second in a SIGKILL with no restart left, and the launcher's ChildFailedError summary (1.10+
# layout) names the root cause's time; the Failures entry's pid 7811 (exit -15) has no agent
# failure line. Agent wordings from torch/distributed/elastic/agent/server/api.py and
# multiprocessing/api.py of 1.10-1.13; the worker prefix "%(asctime)s - %(levelname)s -
# %(name)s - " is Python's asctime with a comma.
TORCH_1_12_STAMPED_WORKERS = f"""
    INFO:{AGENT}:[default] starting workers for entrypoint: python
    INFO:{AGENT}:[default] Rendezvous'ing worker group
    {{block0}}
    INFO:{AGENT}:[default] Starting worker group
    2022-03-15 10:00:05,120 - INFO - train - epoch 0 step 0 loss 6.93
    2022-03-15 10:41:17,004 - INFO - train - epoch 3 step 900 loss 2.41
    WARNING:{MP}:Sending process 7702 closing signal SIGTERM
    ERROR:{MP}:failed (exitcode: 1) local_rank: 0 (pid: 7701) of binary: /usr/bin/python3
    INFO:{AGENT}:[default] Worker group FAILED. 1/1 attempts left; will restart worker group
    INFO:{AGENT}:[default] Stopping worker group
    INFO:{AGENT}:[default] Rendezvous'ing worker group
    {{block1}}
    INFO:{AGENT}:[default] Starting worker group
    2022-03-15 10:42:30,550 - INFO - train - resumed from step 800
    2022-03-15 11:05:02,901 - INFO - train - epoch 4 step 1200 loss 2.30
    WARNING:{MP}:Sending process 7811 closing signal SIGTERM
    ERROR:{MP}:failed (exitcode: -9) local_rank: 0 (pid: 7810) of binary: /usr/bin/python3
    INFO:{AGENT}:Local worker group finished (FAILED). Waiting 300 seconds for other agents to finish
    INFO:{AGENT}:Done waiting for other agents. Elapsed: 0.0006430149078369141 seconds
    torch.distributed.elastic.multiprocessing.errors.ChildFailedError:
    ============================================================
    train.py FAILED
    ------------------------------------------------------------
    Failures:
    [1]:
      time      : 2022-03-15_11:07:44
      host      : gpu0001
      rank      : 1 (local_rank: 1)
      exitcode  : -15 (pid: 7811)
      error_file: <N/A>
      traceback : Signal 15 (SIGTERM) received by PID 7811
    ------------------------------------------------------------
    Root Cause (first observed failure):
    [0]:
      time      : 2022-03-15_11:07:43
      host      : gpu0001
      rank      : 0 (local_rank: 0)
      exitcode  : -9 (pid: 7810)
      error_file: <N/A>
      traceback : Signal 9 (SIGKILL) received by PID 7810
    ============================================================
"""  # noqa: E501


def _t(clock: str) -> datetime:
    return datetime.fromisoformat(f"2022-03-15T{clock}").replace(tzinfo=UTC)


def test_untimed_torch_1_attempts_are_bounded_by_the_timed_lines_around_them(
    tmp_path: Path,
) -> None:
    prefix = f"INFO:{AGENT}:"
    blocks = {f"block{n}": _block(prefix, n, 2).replace("\n", "\n    ") for n in range(2)}
    db = _ingest(tmp_path, TORCH_1_12_STAMPED_WORKERS.format(**blocks), run="llm-22")
    assert _query(db, "select count(*) from raw_quarantine") == [(0,)]
    # by hand, line by line: a line without a time lies between the nearest stamped lines
    # before and after it; the root cause's "time :" is the time of the failure of pid 7810,
    # and from that line on a bound from below only (the closing line before it follows it)
    assert _query(
        db,
        "select event, round, ts, ts_lo, ts_hi, ts_source from stg_elastic_events "
        "where event not in ('world_sizes', 'rendezvous_complete') order by line_no",
    ) == [
        ("agent_start", None, None, None, _t("10:00:05.120"), None),
        ("rendezvous_start", None, None, None, _t("10:00:05.120"), None),
        ("workers_started", 0, None, None, _t("10:00:05.120"), None),
        ("closing_signal", 0, None, _t("10:41:17.004"), _t("10:42:30.550"), None),
        ("worker_failed", 0, None, _t("10:41:17.004"), _t("10:42:30.550"), None),
        ("group_restart", 0, None, _t("10:41:17.004"), _t("10:42:30.550"), None),
        ("group_stopping", 0, None, _t("10:41:17.004"), _t("10:42:30.550"), None),
        ("rendezvous_start", 0, None, _t("10:41:17.004"), _t("10:42:30.550"), None),
        ("workers_started", 1, None, _t("10:41:17.004"), _t("10:42:30.550"), None),
        ("closing_signal", 1, None, _t("11:05:02.901"), None, None),
        ("worker_failed", 1, _t("11:07:43"), _t("11:07:43"), _t("11:07:43"), "child_failed_error"),
        ("group_finished", 1, None, _t("11:07:43"), None, None),
        ("exit_barrier_done", 1, None, _t("11:07:43"), None, None),
    ]
    assert _query(
        db,
        "select group_state from stg_elastic_events where event = 'group_finished'",
    ) == [("FAILED",)]
    # attempt 1 started before the first stamped line and ended (exit 1) between 10:41:17.004
    # and 10:42:30.550; attempt 2 started in that same gap and ended (SIGKILL) at 11:07:43, a
    # time known: an interruption, its GPU-hours unknown (its start is not)
    assert _query(
        db,
        "select attempt, state, exit_code, exit_signal, start_ts, start_ts_lo, start_ts_hi, "
        "end_ts, end_ts_lo, end_ts_hi, is_interruption, restart_overhead_s, gpu_hours "
        "from int_job_attempts order by attempt",
    ) == [
        (
            1, "FAILED", 1, 0, None, None, _t("10:00:05.120"),
            None, _t("10:41:17.004"), _t("10:42:30.550"), False, None, None,
        ),
        (
            2, "FAILED", None, 9, None, _t("10:41:17.004"), _t("10:42:30.550"),
            _t("11:07:43"), _t("11:07:43"), _t("11:07:43"), True, None, None,
        ),
    ]  # fmt: skip


def _fleet(tmp_path: Path, torch: str) -> tuple[Path, dict[str, Any]]:
    config = SynthConfig(
        nodes=8,
        days=7,
        seed=6,
        start=datetime(2026, 3, 2, tzinfo=UTC),
        # failures 25 times as frequent as the default fleet's, so a week holds some
        classes={k: replace(v, scale_h=v.scale_h / 25) for k, v in default_classes().items()},
        elastic_share=0.6,
        node_events=False,
        elastic_torch=torch,
    )
    truth = synthesize(tmp_path / "landing", config)
    db = tmp_path / "relia.duckdb"
    ingest.ingest(db, ingest.discover([tmp_path / "landing"]))
    return db, truth


def _elastic_failures(truth: dict[str, Any]) -> list[tuple[str, int]]:
    return sorted(
        (r["job_id_raw"], r["attempt"])
        for r in truth["interruptions"]
        if r["job_id_raw"].startswith("elastic:")
    )


def test_synthetic_torch_1_12_fleet_gives_the_truths_attempts_and_failures(
    tmp_path: Path,
) -> None:
    db, truth = _fleet(tmp_path, "1.12")
    assert truth["elastic_torch"] == "1.12"
    table = "raw_elastic_events"
    assert _query(db, f"select count(*) from {table}") == [(truth["expected_rows"][table],)]
    quarantined = f"select count(*) from raw_quarantine where target_table = '{table}'"
    assert _query(db, quarantined) == [(truth["expected_quarantine"][table],)]
    # no agent line prints a time; only the failures the ChildFailedError summary of a run's
    # last attempt lists take its "time :" stamp
    assert _query(
        db,
        f"select count(*) from {table} where ts is not null "
        "and (event <> 'worker_failed' or ts_source <> 'child_failed_error')",
    ) == [(0,)]
    failures = _elastic_failures(truth)
    assert failures  # the seed's week holds some
    found = _query(
        db,
        "select * exclude (state) from (select job_id_raw, attempt, "
        "attempt = max(attempt) over (partition by job_id_raw), end_ts, restart_overhead_s, "
        "is_interruption, state from int_job_attempts where scheduler = 'elastic') "
        "where state = 'FAILED'",
    )
    # every failure of the truth is a FAILED attempt; one followed by a restart has its time
    # and overhead unknown, a run's last one ends at the summary's time, the truth's end
    assert sorted((job, n) for job, n, *_ in found) == failures
    ends = {
        (r["job_id_raw"], r["attempt"]): datetime.fromisoformat(r["end_ts"])
        for r in truth["interruptions"]
    }
    restarted = [tuple(rest) for _, _, last, *rest in found if not last]
    assert restarted
    assert set(restarted) == {(None, None, False)}
    # (the seed's week ends every failed run in a later attempt; the summary's stamp is tested
    # on a hand-written log below)
    last = [(ends[(job, n)], *rest) for job, n, is_last, *rest in found if is_last]
    assert all(end == want and overhead is None and hit for want, end, overhead, hit in last)
    n_jobs = _query(
        db, "select count(distinct job_id_raw) from int_job_attempts where scheduler = 'elastic'"
    )
    assert n_jobs == [(truth["jobs_by_scheduler"]["elastic"],)]


def test_synthetic_torch_2_5_fleet_closes_workers_by_signal_name(tmp_path: Path) -> None:
    db, truth = _fleet(tmp_path, "2.5")
    assert truth["elastic_torch"] == "2.5"
    assert _query(
        db,
        "select distinct signal_name from raw_elastic_events "
        "where event in ('closing_signal', 'death_signal')",
    ) == [("SIGTERM",)]
    assert _query(
        db,
        "select count(*) from raw_elastic_events "
        "where event = 'closing_signal' and message not like 'Closing process % via signal %'",
    ) == [(0,)]
    found = _query(
        db,
        "select job_id_raw, attempt from int_job_attempts "
        "where scheduler = 'elastic' and is_interruption",
    )
    assert sorted(found) == _elastic_failures(truth)
