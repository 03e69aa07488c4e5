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
    assert _query(db, f"select count(*) from {table} where ts is not null") == [(0,)]
    failures = _elastic_failures(truth)
    assert failures  # the seed's week holds some
    found = _query(
        db,
        "select job_id_raw, attempt, end_ts, restart_overhead_s, is_interruption "
        "from int_job_attempts where scheduler = 'elastic' and state = 'FAILED'",
    )
    # every failure of the truth is a FAILED attempt, its time and overhead unknown
    assert sorted((job, n) for job, n, *_ in found) == failures
    assert {tuple(rest) for _, _, *rest in found} == {(None, None, False)}
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
