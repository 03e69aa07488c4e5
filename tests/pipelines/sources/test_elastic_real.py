"""torchrun agent logs as real users pasted them (samples/elastic/, provenance in its README),
and logs without the ``<run>__<host>.log`` naming: run and host from the content, the ``run=`` /
``host=`` options, or a reject naming the option. Expectations are read off the lines by hand.
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

import polars as pl

from pipelines.ingest.sources.elastic import parse
from tests.pipelines.sources.helpers import raw_bytes, utc

if TYPE_CHECKING:
    from pipelines.ingest.sources.common import Parsed

NOW = datetime(2026, 9, 1, tzinfo=UTC)
SAMPLES = Path(__file__).parent / "samples" / "elastic"
AGENT = "torch.distributed.elastic.agent.server.api"
MP = "torch.distributed.elastic.multiprocessing.api"
RDZV = "torch.distributed.elastic.rendezvous.dynamic_rendezvous"


def _sample(name: str, **options: object) -> Parsed:
    path = SAMPLES / name
    return parse(path.read_bytes(), source_file=f"/landing/elastic/{name}", now=NOW, **options)


def _text(text: str, **options: object) -> Parsed:
    data = raw_bytes(text)
    return parse(data, source_file="/landing/elastic/agent.log", now=NOW, **options)


def test_elastic_real_torch_1_10_run_id_from_launch_config_host_from_option() -> None:
    # kubeflow/trainer#1504: 21 lines; the launch config names run_id v2-pytorch-1208202754389,
    # lines 20-21 are the agent's "starting workers" and "Rendezvous'ing"; no line names the host
    host = "v2-pytorch-1208202754389-worker-0"
    result = _sample("kubeflow_trainer_1504_torch1_10.log", host=host)
    assert result.rejects.height == 0
    assert result.n_ignored == 19
    assert result.rows.select("line_no", "event", "ts", "run_id", "host", "role").rows() == [
        (
            20,
            "agent_start",
            utc("2021-12-08T12:28:26.101"),
            "v2-pytorch-1208202754389",
            host,
            "default",
        ),
        (
            21,
            "rendezvous_start",
            utc("2021-12-08T12:28:26.101"),
            "v2-pytorch-1208202754389",
            host,
            "default",
        ),
    ]
    assert set(result.rows["log_format"]) == {"elastic_v1"}


def test_elastic_real_torch_1_10_without_host_names_the_option() -> None:
    result = _sample("kubeflow_trainer_1504_torch1_10.log")
    assert result.rows.height == 0
    assert result.rejects["line_no"].to_list() == [20, 21]
    assert set(result.rejects["reason"]) == {
        "host unknown: pass --host, set an elastic path pattern with {host} "
        "(RELIA_PATH_PATTERNS) or name the file <run>__<host>.log"
    }


def test_elastic_real_torch_2_2_bracket_run_id_from_launch_config() -> None:
    # aws-samples/awsome-distributed-training cpu-ddp example output: 26 lines; the launch
    # config (each line with its prefix) names run_id 5982; in scope are line 16 (starting
    # workers), lines 21 and 23 (worker group successfully finished, from both agents that
    # srun merged into the file), 22 and 24 (the exit barrier's "Local worker group finished
    # (WorkerState.SUCCEEDED)") and 25-26 ("Done waiting for other agents"); the rest are ignored
    result = _sample("awsome_distributed_training_cpu_ddp_torch2_2.log", host="node-a")
    assert result.rejects.height == 0
    assert result.n_ignored == 19
    assert result.rows.select("line_no", "event", "ts", "run_id", "host", "level").rows() == [
        (16, "agent_start", utc("2024-03-12T08:22:45.552"), "5982", "node-a", "INFO"),
        (21, "group_succeeded", utc("2024-03-12T08:22:56.574"), "5982", "node-a", "INFO"),
        (22, "group_finished", utc("2024-03-12T08:22:56.574"), "5982", "node-a", "INFO"),
        (23, "group_succeeded", utc("2024-03-12T08:22:56.575"), "5982", "node-a", "INFO"),
        (24, "group_finished", utc("2024-03-12T08:22:56.575"), "5982", "node-a", "INFO"),
        (25, "exit_barrier_done", utc("2024-03-12T08:22:56.575"), "5982", "node-a", "INFO"),
        (26, "exit_barrier_done", utc("2024-03-12T08:22:56.575"), "5982", "node-a", "INFO"),
    ]
    finished = result.rows.filter(pl.col("event") == "group_finished")
    assert finished["group_state"].to_list() == ["SUCCEEDED", "SUCCEEDED"]
    # every line prints its time: the bounds are the time itself
    assert result.rows.filter(
        (pl.col("ts_lo") != pl.col("ts")) | (pl.col("ts_hi") != pl.col("ts"))
    ).is_empty()
    assert set(result.rows["ts_source"]) == {"line"}
    assert set(result.rows["log_format"]) == {"torch_bracket"}
    assert set(result.rows["logger"]) == {"torch.distributed.elastic.agent.server.api"}


def test_elastic_real_torch_2_glog_failure_and_restart() -> None:
    # pytorch/pytorch#147064 (2025-02-13): exit code 1 of local rank 0 (pid 876053), 3/3 attempts
    # left, stop, re-rendezvous; glog prints no year: the file's mtime gives 2025
    result = _sample(
        "pytorch_147064_torch2_glog.log",
        file_mtime=datetime(2025, 2, 14, tzinfo=UTC),
        host="desktop",
        run="repro",
    )
    assert result.rejects.height == 0
    assert result.n_ignored == 0
    assert result.rows.select(
        "event", "ts", "level", "exit_code", "local_rank", "pid", "restarts_left", "max_restarts"
    ).rows() == [
        ("worker_failed", utc("2025-02-13T12:07:20.086"), "ERROR", 1, 0, 876053, None, None),
        ("group_restart", utc("2025-02-13T12:07:20.086"), "INFO", None, None, None, 3, 3),
        ("group_stopping", utc("2025-02-13T12:07:20.086"), "INFO", None, None, None, None, None),
        ("rendezvous_start", utc("2025-02-13T12:07:20.087"), "INFO", None, None, None, None, None),
    ]
    assert set(result.rows["run_id"]) == {"repro"}
    assert set(result.rows["host"]) == {"desktop"}
    assert set(result.rows["log_format"]) == {"glog"}


def test_elastic_real_torch_1_9_basicconfig_lines_carry_no_time() -> None:
    # shun-zheng/Doc2EDAG#24: 17 lines; the agent lines 1-4 and 16 print no time (Python's
    # default format), line 14 (global_world_sizes) continues a block that has none either.
    # They are read with their time unknown: the restart (3/3 left), the result block of
    # restart_count 1 and the start of that round; lines 1-3 come before any start or block
    result = _sample("doc2edag_24_torch1_9_basicconfig.log", host="node0", run="doc2edag")
    assert result.rejects.height == 0
    assert result.rows.select(
        "line_no", "event", "ts", "level", "round", "restarts_left", "world_size", "log_format"
    ).rows() == [
        (1, "group_restart", None, "INFO", None, 3, None, "python_default"),
        (2, "group_stopping", None, "INFO", None, None, None, "python_default"),
        (3, "rendezvous_start", None, "INFO", None, None, None, "python_default"),
        (4, "rendezvous_complete", None, "INFO", 1, None, None, "python_default"),
        (14, "world_sizes", None, None, 1, None, 4, None),
        (16, "workers_started", None, "INFO", 1, None, None, "python_default"),
    ]
    assert set(result.rows["logger"].drop_nulls()) == {AGENT}
    assert result.n_ignored == 11


def test_elastic_real_torch_1_9_basicconfig_with_collector_stamps() -> None:
    # the same agent lines as Doc2EDAG#24, as `kubectl logs --timestamps` prints them
    result = _text(
        f"""
        2021-08-13T10:46:01.100000000Z INFO:{AGENT}:[default] Worker group FAILED. 3/3 attempts left; will restart worker group
        2021-08-13T10:46:01.200000000Z INFO:{AGENT}:[default] Rendezvous complete for workers. Result:
        2021-08-13T10:46:01.200000000Z   restart_count=1
        2021-08-13T10:46:01.200000000Z   master_addr=127.0.0.1
        2021-08-13T10:46:01.200000000Z   group_rank=0
        2021-08-13T10:46:01.200000000Z   group_world_size=1
        2021-08-13T10:46:01.200000000Z   global_world_sizes=[4, 4, 4, 4]
        2021-08-13T10:46:01.300000000Z INFO:{AGENT}:[default] Starting worker group
        """,  # noqa: E501
        host="node0",
        run="doc2edag",
    )
    assert result.rejects.height == 0
    assert result.rows.select(
        "event", "ts", "level", "round", "group_rank", "n_nodes", "world_size"
    ).rows() == [
        ("group_restart", utc("2021-08-13T10:46:01.1"), "INFO", None, None, None, None),
        ("rendezvous_complete", utc("2021-08-13T10:46:01.2"), "INFO", 1, 0, 1, None),
        ("world_sizes", utc("2021-08-13T10:46:01.2"), None, 1, None, None, 4),
        ("workers_started", utc("2021-08-13T10:46:01.3"), "INFO", 1, None, None, None),
    ]
    assert set(result.rows["log_format"]) == {"stamped_default"}
    assert result.n_ignored == 4  # restart_count, master_addr, group_rank, group_world_size


RESULT_BLOCKS = f"""
    [2026-06-01 00:00:00,120] {AGENT}: [INFO] starting workers for entrypoint: python
    [2026-06-01 00:00:00,121] {AGENT}: [INFO] Rendezvous'ing worker group
    [2026-06-01 00:00:05,000] {AGENT}: [INFO] Rendezvous complete for workers. Result:
      restart_count=0
      master_addr=gpu0007.cluster.local
      master_port=29500
      group_rank=0
      group_world_size=2
      global_world_sizes=[16, 16, 16, 16, 16, 16, 16, 16]

    [2026-06-01 00:00:05,010] {AGENT}: [INFO] Starting worker group
    [2026-06-01 03:00:00,000] {MP}: [ERROR] failed (exitcode: -6) local_rank: 2 (pid: 901) of binary: /usr/bin/python3
    [2026-06-01 03:00:01,000] {AGENT}: [INFO] Worker group FAILED. 2/3 attempts left; will restart worker group
    [2026-06-01 03:00:01,001] {AGENT}: [INFO] Stopping worker group
    [2026-06-01 03:00:02,000] {AGENT}: [INFO] Rendezvous'ing worker group
    [2026-06-01 03:02:00,000] {AGENT}: [INFO] Rendezvous complete for workers. Result:
      restart_count=1
      master_addr=gpu0007.cluster.local
      master_port=29500
      group_rank=0
      group_world_size=2
      global_world_sizes=[16, 16, 16, 16, 16, 16, 16, 16]

    [2026-06-01 03:02:00,500] {AGENT}: [INFO] Starting worker group
"""  # noqa: E501


def test_elastic_result_blocks_without_joined_lines_or_role_tag() -> None:
    # static rendezvous: no joined-round line; no [default] tag. The rank-0 agent's master_addr
    # is its own host (gpu0007); the run comes from the option.
    result = _text(RESULT_BLOCKS, run="llm-3")
    assert result.rejects.height == 0
    rows = result.rows
    assert set(rows["host"]) == {"gpu0007"}
    assert set(rows["run_id"]) == {"llm-3"}
    assert rows["role"].null_count() == rows.height
    # no joined round: the round is the result blocks' restart_count
    assert rows.select("event", "round").rows() == [
        ("agent_start", None),
        ("rendezvous_start", None),
        ("rendezvous_complete", 0),
        ("world_sizes", 0),
        ("workers_started", 0),
        ("worker_failed", 0),
        ("group_restart", 0),
        ("group_stopping", 0),
        ("rendezvous_start", 0),
        ("rendezvous_complete", 1),
        ("world_sizes", 1),
        ("workers_started", 1),
    ]
    complete = rows.filter(pl.col("event") == "rendezvous_complete")
    assert complete.select("group_rank", "n_nodes").rows() == [(0, 2), (0, 2)]
    # 2 x (master_addr, master_port, group_rank, group_world_size, restart_count, blank line)
    assert result.n_ignored == 12


def test_elastic_content_beats_option_beats_file_name() -> None:
    joined = (
        "[2026-06-01 00:00:21,512] torch.distributed.elastic.rendezvous.dynamic_rendezvous: [INFO] "
        "The node 'gpu0003_4242_0' has joined round 0 of the rendezvous 'job-9' as rank 0 in a "
        "world of size 1.\n"
    )
    named = "/landing/elastic/old-run__gpu0099.log"
    from_content = parse(joined.encode(), source_file=named, now=NOW, host="x", run="y")
    assert from_content.rows.select("run_id", "host").row(0) == ("job-9", "gpu0003")
    started = f"[2026-06-01 00:00:21,533] {AGENT}: [INFO] [default] Starting worker group\n"
    from_option = parse(started.encode(), source_file=named, now=NOW, host="gpu0001", run="r1")
    assert from_option.rows.select("run_id", "host").row(0) == ("r1", "gpu0001")
    from_name = parse(started.encode(), source_file=named, now=NOW)
    assert from_name.rows.select("run_id", "host").row(0) == ("old-run", "gpu0099")
    no_run = parse(started.encode(), source_file="/landing/agent.log", now=NOW, host="gpu0001")
    assert no_run.rejects["reason"].to_list() == [
        "run unknown: pass --run, set an elastic path pattern with {run} "
        "(RELIA_PATH_PATTERNS) or name the file <run>__<host>.log"
    ]


def test_elastic_result_block_with_list_values_and_an_unknown_field() -> None:
    # list fields hold spaces and a field torch may add must not end the block before
    # restart_count; an IP master_addr is kept whole as the host
    result = _text(
        f"""
        [2026-06-01 00:00:05,000] {AGENT}: [INFO] [default] Rendezvous complete for workers. Result:
          local_ranks=[0, 1]
          some_new_field=abc
          restart_count=4
          master_addr=10.0.0.7
          group_rank=0
          group_world_size=3
          global_world_sizes=[6, 6]
        [2026-06-01 00:00:05,100] {AGENT}: [INFO] [default] Starting worker group
        """,
        run="llm-4",
    )
    assert result.rejects.height == 0
    assert result.rows.select(
        "event", "round", "group_rank", "n_nodes", "world_size", "host"
    ).rows() == [
        ("rendezvous_complete", 4, 0, 3, None, "10.0.0.7"),
        ("world_sizes", 4, None, None, 6, "10.0.0.7"),
        ("workers_started", 4, None, None, None, "10.0.0.7"),
    ]


GLOG_STARTS_ONLY = """
    I0601 08:00:00.000000 4242 torch/distributed/elastic/agent/server/api.py:870] [default] Starting worker group
    step 1 | loss 2.5
    E0601 10:00:00.000000 4242 torch/distributed/elastic/multiprocessing/api.py:869] failed (exitcode: 1) local_rank: 0 (pid: 11) of binary: /usr/bin/python3
    I0601 10:00:01.000000 4242 torch/distributed/elastic/agent/server/api.py:889] [default] Worker group FAILED. 2/3 attempts left; will restart worker group
    I0601 10:00:01.500000 4242 torch/distributed/elastic/agent/server/api.py:699] [default] Stopping worker group
    I0601 10:00:02.000000 4242 torch/distributed/elastic/agent/server/api.py:677] [default] Rendezvous'ing worker group
    I0601 10:01:30.000000 4242 torch/distributed/elastic/agent/server/api.py:870] [default] Starting worker group
    I0601 12:00:00.000000 4242 torch/distributed/elastic/agent/server/api.py:910] [default] worker group successfully finished. Waiting 300 seconds for other agents to finish.
"""  # noqa: E501


def test_elastic_without_blocks_or_joined_lines_counts_worker_group_starts() -> None:
    # no result block, no joined line: the attempt is the number of "Starting worker group"
    # lines so far, minus one (lines 1-6 belong to restart 0, 7-8 to restart 1)
    data = raw_bytes(GLOG_STARTS_ONLY)
    result = parse(
        data,
        source_file="/landing/elastic/agent.log",
        now=NOW,
        file_mtime=datetime(2026, 6, 2, tzinfo=UTC),
        host="gpu0001",
        run="llm-5",
    )
    assert result.rejects.height == 0
    assert result.n_ignored == 1
    assert result.rows.select("line_no", "event", "round").rows() == [
        (1, "workers_started", 0),
        (3, "worker_failed", 0),
        (4, "group_restart", 0),
        (5, "group_stopping", 0),
        (6, "rendezvous_start", 0),
        (7, "workers_started", 1),
        (8, "group_succeeded", 1),
    ]


def test_elastic_real_torch_2_closing_process_via_signal_gives_the_signal_name() -> None:
    # NVIDIA/nvidia-resiliency-ext#18 (2025-02-27): lines 1-6 and 9 close a worker each
    # ("Closing process N via signal SIGTERM", the wording of a function entrypoint), lines 7-8
    # are two agents' "Received 15 death signal" (15 is SIGTERM)
    result = _sample(
        "nvidia_resiliency_ext_18_torch2_glog_closing.log",
        file_mtime=datetime(2025, 2, 28, tzinfo=UTC),
        host="node0",
        run="straggler",
    )
    assert result.rejects.height == 0
    assert result.n_ignored == 0
    closing = [293866, 293844, 293853, 293845, 293867, 293885]
    assert result.rows.select("line_no", "event", "pid", "signal_name").rows() == [
        *((n, "closing_signal", pid, "SIGTERM") for n, pid in enumerate(closing, start=1)),
        (7, "death_signal", None, "SIGTERM"),
        (8, "death_signal", None, "SIGTERM"),
        (9, "closing_signal", 293846, "SIGTERM"),
    ]
    assert result.rows["ts"].to_list()[-1] == utc("2025-02-27T17:39:41.937")


def test_elastic_real_torch_1_python_default_signals_by_name() -> None:
    # MCG-NJU/RTD-Action#31: Ctrl-C (signal 2, SIGINT) and the worker closed with it;
    # showlab/EgoVLP#21: a worker killed by signal 9 (SIGKILL). No line prints a time.
    interrupted = _sample("rtd_action_31_torch1_python_default_sigint.log", host="h", run="r")
    killed = _sample("egovlp_21_torch1_python_default_sigkill.log", host="h", run="r")
    assert interrupted.rejects.height == killed.rejects.height == 0
    assert interrupted.rows.select("event", "ts", "level", "pid", "signal_name").rows() == [
        ("death_signal", None, "WARNING", None, "SIGINT"),
        ("closing_signal", None, "WARNING", 4797, "SIGINT"),
    ]
    assert killed.rows.select(
        "event", "ts", "level", "logger", "exit_code", "local_rank", "pid", "signal_name"
    ).rows() == [("worker_failed", None, "ERROR", MP, -9, 3, 407727, "SIGKILL")]
    assert set(killed.rows["log_format"]) == {"python_default"}


def test_elastic_every_wording_of_the_worker_close_and_failure() -> None:
    # torch.distributed.elastic.multiprocessing.api: a binary's workers are closed with
    # "Sending process", a function's with "Closing process"; a worker that outlives the
    # timeout is killed ("Unable to shutdown", with the signals as Signals members); a failed
    # function prints "of fn:"; an unknown signal number stays a number
    result = _text(
        f"""
        [2024-03-12 08:00:00,000] {MP}: [ERROR] failed (exitcode: 1) local_rank: 0 (pid: 11) of fn: main (start_method: spawn)
        [2024-03-12 08:00:00,001] {MP}: [WARNING] Closing process 12 via signal SIGTERM
        [2024-03-12 08:00:30,001] {MP}: [WARNING] Unable to shutdown process 12 via Signals.SIGTERM, forcefully exiting via Signals.SIGKILL
        [2024-03-12 08:00:31,000] {AGENT}: [WARNING] Received 40 death signal, shutting down workers
        [2024-03-12 08:00:32,000] {MP}: [WARNING] Unable to shutdown process 13 via 15, forcefully exitting via 9
        """,  # noqa: E501
        host="h",
        run="r",
    )
    assert result.rejects.height == 0
    assert result.rows.select("event", "exit_code", "pid", "signal_name").rows() == [
        ("worker_failed", 1, 11, None),
        ("closing_signal", None, 12, "SIGTERM"),
        ("forced_kill", None, 12, "SIGKILL"),
        ("death_signal", None, None, "40"),
        ("forced_kill", None, 13, "SIGKILL"),  # torch 1.x: f-string numbers, "exitting"
    ]


def test_elastic_first_round_without_a_result_block_is_a_round_of_its_own() -> None:
    # three starts; only the restarts print a result block (restart_count 1, 2): the first
    # start and its failure are round 0, not lost
    block = "  restart_count={}\n  group_rank=0\n  group_world_size=1\n"
    result = _text(
        f"INFO:{AGENT}:[default] Starting worker group\n"
        f"ERROR:{MP}:failed (exitcode: 1) local_rank: 0 (pid: 7) of binary: python\n"
        f"INFO:{AGENT}:[default] Rendezvous complete for workers. Result:\n"
        + block.format(1)
        + f"INFO:{AGENT}:[default] Starting worker group\n"
        f"ERROR:{MP}:failed (exitcode: -9) local_rank: 1 (pid: 8) of binary: python\n"
        f"INFO:{AGENT}:[default] Rendezvous complete for workers. Result:\n"
        + block.format(2)
        + f"INFO:{AGENT}:[default] Starting worker group\n",
        host="h",
        run="r",
    )
    assert result.rejects.height == 0
    assert result.rows.select("event", "round").rows() == [
        ("workers_started", 0),
        ("worker_failed", 0),
        ("rendezvous_complete", 1),
        ("workers_started", 1),
        ("worker_failed", 1),
        ("rendezvous_complete", 2),
        ("workers_started", 2),
    ]


def test_elastic_two_agents_merged_in_one_file_start_one_round() -> None:
    # srun merges both agents' output: two joined lines of round 0, then both starts with no
    # end between them (one round), then both fail and rejoin round 1
    def joined(node: str, rnd: int, rank: int) -> str:
        return (
            f"[2026-06-01 00:00:0{rnd},000] {RDZV}: [INFO] The node '{node}_42_0' has joined "
            f"round {rnd} of the rendezvous 'llm-2' as rank {rank} in a world of size 2.\n"
        )

    def line(clock: str, logger: str, message: str) -> str:
        return f"[2026-06-01 00:00:{clock},000] {logger}: [INFO] {message}\n"

    result = _text(
        joined("gpu0001", 0, 0)
        + joined("gpu0002", 0, 1)
        + line("02", AGENT, "[default] Starting worker group")
        + line("02", AGENT, "[default] Starting worker group")
        + line("05", MP, "failed (exitcode: 1) local_rank: 0 (pid: 9) of binary: python")
        + joined("gpu0001", 1, 0)
        + joined("gpu0002", 1, 1)
        + line("07", AGENT, "[default] Starting worker group")
        + line("07", AGENT, "[default] Starting worker group"),
    )
    assert result.rejects.height == 0
    assert result.rows.select("event", "round").rows() == [
        ("rendezvous_joined", 0),
        ("rendezvous_joined", 0),
        ("workers_started", 0),
        ("workers_started", 0),
        ("worker_failed", 0),
        ("rendezvous_joined", 1),
        ("rendezvous_joined", 1),
        ("workers_started", 1),
        ("workers_started", 1),
    ]


def test_elastic_real_torch_1_exit_barrier_after_the_last_failure() -> None:
    # NVlabs/nvdiffrecmc#21: torch 1.x (Python 3.8) under Python's default format; the agent
    # closes the other workers (forced kills with the numbers of the f-string), the worker's
    # SIGSEGV (-11), then the exit barrier that torch 1.9-1.13 also ran after a failure:
    # "Local worker group finished (FAILED)" and "Done waiting for other agents". No time.
    result = _sample("nvdiffrecmc_21_torch1_python_default_barrier.log", host="h", run="r")
    assert result.rejects.height == 0
    assert result.n_ignored == 0
    assert result.rows.select(
        "event", "exit_code", "pid", "signal_name", "group_state", "ts", "ts_lo", "ts_hi"
    ).rows() == [
        ("closing_signal", None, 5527, "SIGTERM", None, None, None, None),
        ("closing_signal", None, 5529, "SIGTERM", None, None, None, None),
        ("forced_kill", None, 5527, "SIGKILL", None, None, None, None),
        ("forced_kill", None, 5529, "SIGKILL", None, None, None, None),
        ("worker_failed", -11, 5528, "SIGSEGV", None, None, None, None),
        ("group_finished", None, None, None, "FAILED", None, None, None),
        ("exit_barrier_done", None, None, None, None, None, None, None),
    ]
    # the failure and the barrier end the round of the single start the slice does not show
    assert set(result.rows["round"].to_list()) == {None}


def test_elastic_every_wording_of_the_exit_barrier_and_graceful_exit() -> None:
    # torch/distributed/elastic/agent/server/api.py: _exit_barrier's lines ("Local worker group
    # finished (%s). Waiting %s seconds for other agents to finish", "Done waiting for other
    # agents. Elapsed: %s seconds", "Got termination signal: %s", "Error waiting on exit
    # barrier. Elapsed: %s seconds": 1.9 to current 2.x, the state "FAILED" under 1.x's f-string,
    # "WorkerState.FAILED" under 2.x's %s; the signal "15" under 1.x's f-string), and run()'s
    # "Rendezvous gracefully exited: %s" (late 2.x; the message of a standby node's
    # RendezvousGracefulExitError)
    result = _text(
        f"""
        I0601 00:00:00.000000 7 torch/distributed/elastic/agent/server/api.py:932] Local worker group finished (WorkerState.FAILED). Waiting 300 seconds for other agents to finish
        W0601 00:00:09.000000 7 torch/distributed/elastic/agent/server/api.py:950] Got termination signal: Signals.SIGTERM
        E0601 00:00:10.000000 7 torch/distributed/elastic/agent/server/api.py:953] Error waiting on exit barrier. Elapsed: 300.00163674354553 seconds
        I0601 00:00:11.000000 7 torch/distributed/elastic/agent/server/api.py:885] Rendezvous gracefully exited: The rendezvous 'r' is closed, terminating pending rendezvous.
        [2024-03-12 08:00:00,000] {AGENT}: [INFO] Local worker group finished (SUCCEEDED). Waiting 30 seconds for other agents to finish
        [2024-03-12 08:00:00,001] {AGENT}: [INFO] Done waiting for other agents. Elapsed: 1.1920928955078125e-05 seconds
        WARNING:{AGENT}:Got termination signal: 15
        """,  # noqa: E501
        host="h",
        run="r",
        year=2026,
    )
    assert result.rejects.height == 0
    assert result.rows.select("event", "group_state", "signal_name", "level").rows() == [
        ("group_finished", "FAILED", None, "INFO"),
        ("exit_barrier_signal", None, "SIGTERM", "WARNING"),
        ("exit_barrier_error", None, None, "ERROR"),
        ("rendezvous_graceful_exit", None, None, "INFO"),
        ("group_finished", "SUCCEEDED", None, "INFO"),
        ("exit_barrier_done", None, None, "INFO"),
        ("exit_barrier_signal", None, "SIGTERM", "WARNING"),
    ]


def test_elastic_child_failed_error_of_torch_1_9_gives_the_failure_its_time() -> None:
    # torch 1.9's ChildFailedError layout ("Root Cause:", "time: ...", "exitcode: C (pid: P)"),
    # after an untimed failure line of the same pid and exit code; a stamped worker line
    # before it bounds the lines before the failure, the stamp the lines after it
    result = _text(
        f"""
        INFO:{AGENT}:[default] Starting worker group
        2021-08-13 10:46:03 - INFO - train - epoch 0
        ERROR:{MP}:failed (exitcode: 1) local_rank: 0 (pid: 4242) of binary: /usr/bin/python3
        INFO:{AGENT}:Local worker group finished (FAILED). Waiting 300 seconds for other agents to finish
        ***************************************
                    train.py FAILED
        =======================================
        Root Cause:
        [0]:
          time: 2021-08-13_15:21:44
          rank: 0 (local_rank: 0)
          exitcode: 1 (pid: 4242)
          error_file: <N/A>
          msg: "Process failed with exitcode 1"
        =======================================
        Other Failures:
          <NO_OTHER_FAILURES>
        ***************************************
        """,  # noqa: E501
        host="h",
        run="r",
    )
    assert result.rejects.height == 0
    assert result.rows.select("event", "ts", "ts_lo", "ts_hi", "ts_source").rows() == [
        ("workers_started", None, None, utc("2021-08-13T10:46:03"), None),
        (
            "worker_failed",
            utc("2021-08-13T15:21:44"),
            utc("2021-08-13T15:21:44"),
            utc("2021-08-13T15:21:44"),
            "child_failed_error",
        ),
        ("group_finished", None, utc("2021-08-13T15:21:44"), None, None),
    ]


def test_elastic_bounds_that_contradict_each_other_are_dropped() -> None:
    # worker lines whose clock runs backwards around an untimed agent line: no bounds (unknown)
    result = _text(
        f"""
        2021-08-13 10:46:03,500 - INFO - train - step 2
        INFO:{AGENT}:[default] Starting worker group
        2021-08-13 10:46:03,000 - INFO - train - step 1
        INFO:{AGENT}:[default] Stopping worker group
        """,
        host="h",
        run="r",
    )
    assert result.rows.select("event", "ts_lo", "ts_hi").rows() == [
        ("workers_started", None, None),
        ("group_stopping", utc("2021-08-13T10:46:03"), None),
    ]


def test_elastic_every_wording_of_the_rendezvous_close_and_lost_workers() -> None:
    # dynamic_rendezvous.py (1.9 to current 2.x): "The node '%s' has closed the rendezvous
    # '%s'." (info), "... has failed to shutdown the rendezvous '%s' due to an error of type %s."
    # and "... has failed to send a keep-alive heartbeat to the rendezvous '%s' due to an error
    # of type %s." (warnings); local_elastic_agent.py: "[%s] worker pids do not match
    # process_context pids. Expected: %s, actual: %s" (error; torchelastic 0.2 printed no
    # Expected/actual). The node descriptors name the host and the rendezvous the run.
    result = _text(
        f"""
        [2024-03-12 08:00:00,000] {AGENT}: [ERROR] [default] worker pids do not match process_context pids. Expected: {{101, 102}}, actual: {{101}}
        [2024-03-12 08:00:00,500] {AGENT}: [ERROR] [default] worker pids do not match process_context pids
        W0813 22:23:32.979031 140204091807488 torch/distributed/elastic/rendezvous/dynamic_rendezvous.py:1267] The node 'gpu0007.cluster_4242_0' has failed to send a keep-alive heartbeat to the rendezvous '100' due to an error of type RendezvousTimeoutError.
        [2024-03-12 08:00:01,000] {RDZV}: [WARNING] The node 'gpu0007.cluster_4242_0' has failed to shutdown the rendezvous '100' due to an error of type RendezvousTimeoutError.
        [2024-03-12 08:00:02,000] {RDZV}: [INFO] The node 'gpu0007.cluster_4242_0' has closed the rendezvous '100'.
        """,  # noqa: E501
        year=2024,
    )
    assert result.rejects.height == 0
    assert result.rows.select("event", "role", "run_id", "host", "level").rows() == [
        ("worker_pids_mismatch", "default", "100", "gpu0007", "ERROR"),
        ("worker_pids_mismatch", "default", "100", "gpu0007", "ERROR"),
        ("heartbeat_failed", None, "100", "gpu0007", "WARNING"),
        ("rendezvous_close_failed", None, "100", "gpu0007", "WARNING"),
        ("rendezvous_closed", None, "100", "gpu0007", "INFO"),
    ]
