"""torchrun agent logs: the three real prefixes, rounds, restarts, and hostile lines as rejects.

The messages are those of ``torch/distributed/elastic/agent/server/api.py``,
``.../rendezvous/dynamic_rendezvous.py`` and ``.../multiprocessing/api.py``.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import TYPE_CHECKING

import polars as pl

from pipelines.ingest.sources.elastic import SCHEMA, parse
from tests.pipelines.sources.helpers import assert_accounted, raw_bytes, reject_reasons, utc

if TYPE_CHECKING:
    from pipelines.ingest.sources.common import Parsed

NOW = datetime(2026, 9, 1, tzinfo=UTC)
SOURCE = "/landing/elastic/llama-70b-1042__gpu0003.log"
AGENT = "torch.distributed.elastic.agent.server.api"
RDZV = "torch.distributed.elastic.rendezvous.dynamic_rendezvous"
MP = "torch.distributed.elastic.multiprocessing.api"


def _parse(text: str, *, source_file: str = SOURCE, file_mtime: datetime | None = None) -> Parsed:
    data = raw_bytes(text)
    return parse(data, source_file=source_file, file_mtime=file_mtime, now=NOW)


TORCH_2_1_RUN = f"""
    [2026-06-01 00:00:00,101] torch.distributed.run: [WARNING] *****************************************
    [2026-06-01 00:00:00,120] {AGENT}: [INFO] [default] starting workers for entrypoint: python
    [2026-06-01 00:00:00,121] {AGENT}: [INFO] [default] Rendezvous'ing worker group
    [2026-06-01 00:00:00,140] {RDZV}: [INFO] The node 'gpu0003.cluster.local_4242_0' attempts to join the next round of the rendezvous 'llama-70b-1042'.
    [2026-06-01 00:00:21,512] {RDZV}: [INFO] The node 'gpu0003.cluster.local_4242_0' has joined round 0 of the rendezvous 'llama-70b-1042' as rank 1 in a world of size 2.
    [2026-06-01 00:00:21,530] {AGENT}: [INFO] [default] Rendezvous complete for workers. Result:
    [2026-06-01 00:00:21,530] {AGENT}: [INFO]   restart_count=0
    [2026-06-01 00:00:21,530] {AGENT}: [INFO]   master_addr=gpu0002.cluster.local
    [2026-06-01 00:00:21,530] {AGENT}: [INFO]   global_world_sizes=[16, 16, 16, 16, 16, 16, 16, 16]
    [2026-06-01 00:00:21,533] {AGENT}: [INFO] [default] Starting worker group
    step 100 | loss 2.3141 | lr 3.0e-04
    [2026-06-01 05:12:09,004] {MP}: [WARNING] Sending process 5556 closing signal SIGTERM
    [2026-06-01 05:12:09,871] {MP}: [ERROR] failed (exitcode: 1) local_rank: 3 (pid: 5555) of binary: /usr/bin/python3
    [2026-06-01 05:12:10,002] {AGENT}: [INFO] [default] Worker group FAILED. 3/3 attempts left; will restart worker group
    [2026-06-01 05:12:10,003] {AGENT}: [INFO] [default] Stopping worker group
    [2026-06-01 05:12:11,000] {AGENT}: [INFO] [default] Rendezvous'ing worker group
    [2026-06-01 05:12:11,010] {RDZV}: [INFO] The node 'gpu0003.cluster.local_4242_0' attempts to join the next round of the rendezvous 'llama-70b-1042'.
    [2026-06-01 05:13:40,100] {RDZV}: [INFO] The node 'gpu0003.cluster.local_4242_0' has joined round 1 of the rendezvous 'llama-70b-1042' as rank 1 in a world of size 2.
    [2026-06-01 05:13:40,200] {AGENT}: [INFO] [default] Starting worker group
    [2026-06-01 09:00:00,000] {AGENT}: [INFO] [default] worker group successfully finished. Waiting 300 seconds for other agents to finish.
    [2026-06-01 09:00:00,001] {AGENT}: [INFO] Local worker group finished (WorkerState.SUCCEEDED). Waiting 300 seconds for other agents to finish
"""  # noqa: E501


def test_elastic_torch_2_1_run_with_a_restart() -> None:
    result = _parse(TORCH_2_1_RUN)
    rows = result.rows
    assert set(rows["run_id"]) == {"llama-70b-1042"}
    assert set(rows["host"]) == {"gpu0003"}  # the FQDN of the node descriptor, shortened
    assert set(rows["log_format"]) == {"torch_bracket"}
    events = rows.select("event", "round", "ts").rows()
    assert events == [
        ("agent_start", None, utc("2026-06-01T00:00:00.120")),
        ("rendezvous_start", None, utc("2026-06-01T00:00:00.121")),
        ("rendezvous_join_attempt", None, utc("2026-06-01T00:00:00.140")),
        ("rendezvous_joined", 0, utc("2026-06-01T00:00:21.512")),
        ("rendezvous_complete", 0, utc("2026-06-01T00:00:21.530")),
        ("world_sizes", 0, utc("2026-06-01T00:00:21.530")),
        ("workers_started", 0, utc("2026-06-01T00:00:21.533")),
        ("closing_signal", 0, utc("2026-06-01T05:12:09.004")),
        ("worker_failed", 0, utc("2026-06-01T05:12:09.871")),
        ("group_restart", 0, utc("2026-06-01T05:12:10.002")),
        ("group_stopping", 0, utc("2026-06-01T05:12:10.003")),
        ("rendezvous_start", 0, utc("2026-06-01T05:12:11")),
        ("rendezvous_join_attempt", 0, utc("2026-06-01T05:12:11.010")),
        ("rendezvous_joined", 1, utc("2026-06-01T05:13:40.100")),
        ("workers_started", 1, utc("2026-06-01T05:13:40.200")),
        ("group_succeeded", 1, utc("2026-06-01T09:00:00")),
        # the exit barrier's line (torch 1.9 to current 2.x; WorkerState.X under %s from 2.0)
        ("group_finished", 1, utc("2026-06-01T09:00:00.001")),
    ]
    finished = rows.filter(pl.col("event") == "group_finished").row(0, named=True)
    assert finished["group_state"] == "SUCCEEDED"
    joined = rows.filter(pl.col("event") == "rendezvous_joined").row(0, named=True)
    assert (joined["group_rank"], joined["n_nodes"]) == (1, 2)
    failed = rows.filter(pl.col("event") == "worker_failed").row(0, named=True)
    assert (failed["exit_code"], failed["local_rank"], failed["pid"], failed["level"]) == (
        1,
        3,
        5555,
        "ERROR",
    )
    restart = rows.filter(pl.col("event") == "group_restart").row(0, named=True)
    assert (restart["restarts_left"], restart["max_restarts"], restart["role"]) == (3, 3, "default")
    assert rows.filter(pl.col("event") == "world_sizes")["world_size"].to_list() == [16]
    assert rows.filter(pl.col("event") == "closing_signal")["signal_name"].to_list() == ["SIGTERM"]
    # the torch.distributed.run banner, restart_count/master_addr, worker output
    assert_accounted(result, SCHEMA, n_in_scope=17, n_ignored=4)


def test_elastic_glog_lines_take_their_year_from_the_file_mtime() -> None:
    result = _parse(
        """
        I1231 23:59:58.120000 4242 torch/distributed/elastic/rendezvous/dynamic_rendezvous.py:1129] The node 'gpu0001_4242_0' has joined round 3 of the rendezvous 'eval-7' as rank 0 in a world of size 4.
        I1231 23:59:59.500000 4242 torch/distributed/elastic/agent/server/api.py:870] [default] Starting worker group
        E0101 02:00:00.000000 4242 torch/distributed/elastic/multiprocessing/api.py:851] failed (exitcode: -9) local_rank: 0 (pid: 77) of binary: /opt/conda/bin/python
        W0101 02:00:01.000000 4242 torch/distributed/elastic/agent/server/api.py:704] Received Signals.SIGTERM death signal, shutting down workers
        """,  # noqa: E501
        file_mtime=datetime(2026, 1, 2, tzinfo=UTC),
    )
    assert result.rejects.height == 0
    assert result.rows.select("ts", "level", "event", "round", "exit_code").rows() == [
        (utc("2025-12-31T23:59:58.12"), "INFO", "rendezvous_joined", 3, None),
        (utc("2025-12-31T23:59:59.5"), "INFO", "workers_started", 3, None),
        (utc("2026-01-01T02:00:00"), "ERROR", "worker_failed", 3, -9),
        (utc("2026-01-01T02:00:01"), "WARNING", "death_signal", 3, None),
    ]
    assert set(result.rows["logger"]) >= {"torch/distributed/elastic/agent/server/api.py"}
    # Python 3.10 prints the signal as Signals.SIGTERM; -9 is SIGKILL
    assert result.rows["signal_name"].to_list() == [None, None, "SIGKILL", "SIGTERM"]


def test_elastic_v1_continuation_takes_the_time_of_the_line_before() -> None:
    result = _parse(
        """
        [INFO] 2021-06-29 12:05:25,634 api: [default] Rendezvous complete for workers. Result:
          restart_count=0
          master_addr=master1
          global_world_sizes=[2, 2]

        [INFO] 2021-06-29 12:05:25,640 api: [default] Starting worker group
        """,
        source_file="/landing/elastic/11__master1.log",
    )
    assert result.rows.select("event", "ts", "world_size", "run_id", "host").rows() == [
        ("rendezvous_complete", utc("2021-06-29T12:05:25.634"), None, "11", "master1"),
        ("world_sizes", utc("2021-06-29T12:05:25.634"), 2, "11", "master1"),
        ("workers_started", utc("2021-06-29T12:05:25.640"), None, "11", "master1"),
    ]
    assert set(result.rows["log_format"].drop_nulls()) == {"elastic_v1"}


def test_elastic_hostile_lines_are_rejected_with_a_reason() -> None:
    result = _parse(
        f"""
        [2026-06-01 00:00:21,512] {RDZV}: [INFO] The node 'gpu0003_4242_0' has joined round 0 of the rendezvous 'job-9' as rank 0 in a world of size 1.
        INFO:{AGENT}:[default] Starting worker group
        [2026-06-31 05:12:09,871] {MP}: [ERROR] failed (exitcode: 1) local_rank: 3 (pid: 5555) of binary: /usr/bin/python3
        [2099-06-01 05:12:09,871] {MP}: [ERROR] failed (exitcode: 1) local_rank: 3 (pid: 5555) of binary: /usr/bin/python3
        [2026-06-01 05:12:09,871] {MP}: [ERROR] failed (exitcode: 1) local_rank: 3 (pid: 5555) of binary: /usr/bin/python3
        2026-06-01 worker said: [default] Starting worker group
        stderr: INFO:{AGENT}:[default] Starting worker group
        """  # noqa: E501
    )
    reasons = reject_reasons(result)
    assert reasons[3].startswith("impossible timestamp in '[2026-06-31 05:12:09,871]")
    assert reasons[4].startswith("timestamp in the future: 2099-06-01")
    assert reasons[6].startswith("unrecognised log prefix")
    assert reasons[7].startswith("unrecognised log prefix")  # a launcher's own tag before it
    # basicConfig prints no time at all: the line is read, its time unknown
    assert result.rows.select("line_no", "ts", "log_format").rows() == [
        (1, utc("2026-06-01T00:00:21.512"), "torch_bracket"),
        (2, None, "python_default"),
        (5, utc("2026-06-01T05:12:09.871"), "torch_bracket"),
    ]
    assert_accounted(result, SCHEMA, n_in_scope=7, n_ignored=0)


def test_elastic_without_run_and_host_rejects_the_agent_lines() -> None:
    result = _parse(
        f"[2026-06-01 00:00:21,533] {AGENT}: [INFO] [default] Starting worker group\n",
        source_file="/landing/elastic/agent.log",
    )
    assert result.rows.height == 0
    assert result.rejects["reason"][0].startswith("cannot tell the run and host")


def test_elastic_empty_file_is_one_reject() -> None:
    result = parse(b"", source_file=SOURCE)
    assert result.rejects["reason"].to_list() == ["empty file"]
