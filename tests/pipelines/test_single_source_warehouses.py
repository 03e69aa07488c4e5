"""Warehouses fed by one kind of telemetry only (issue #12, section 3): a Kubernetes-only, a
torchrun-only and a DCGM-only warehouse each get an observation window from their own
timestamps, and the first two yield attempts and interruptions with causes and restart
overheads. Planned work (a drain for a scheduled firmware update) is maintenance, not an unknown
failure. The files are written here by hand and every expectation is read off them.
"""

from __future__ import annotations

import json
import os
import textwrap
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from pipelines import ingest, warehouse
from tests.pipelines.sources.test_elastic_real import GLOG_STARTS_ONLY

if TYPE_CHECKING:
    from pathlib import Path

DAY = datetime(2026, 6, 3, tzinfo=UTC)
NEXT_DAY = datetime(2026, 6, 4, tzinfo=UTC)


def _at(clock: str) -> datetime:
    return datetime.fromisoformat(f"2026-06-03T{clock}").replace(tzinfo=UTC)


def _query(db: Path, sql: str) -> list[tuple[Any, ...]]:
    with warehouse.connect(db, read_only=True) as con:
        return con.execute(sql).fetchall()


# --- Kubernetes only ---------------------------------------------------------------------------


def _pod(
    name: str,
    uid: str,
    node: str,
    status: dict[str, Any],
    *,
    conditions: list[Any] | None = None,
    job: str = "train-1",
) -> dict[str, Any]:
    labels = {
        "training.kubeflow.org/job-name": job,
        "training.kubeflow.org/replica-index": "0",
        "training.kubeflow.org/replica-type": "master",
    }
    owner = {"apiVersion": "kubeflow.org/v1", "kind": "PyTorchJob", "name": job}
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "creationTimestamp": "2026-06-03T07:59:50Z",
            "labels": labels,
            "name": name,
            "namespace": "ml",
            "ownerReferences": [owner | {"controller": True}],
            "uid": uid,
        },
        "spec": {
            "containers": [{"name": "pytorch", "resources": {"limits": {"nvidia.com/gpu": "8"}}}],
            "nodeName": node,
        },
        "status": {"conditions": conditions or [], "phase": "Running"} | status,
    }


def _container(state: dict[str, Any], last: dict[str, Any] | None = None) -> dict[str, Any]:
    return {
        "containerStatuses": [
            {
                "name": "pytorch",
                "restartCount": 1 if last else 0,
                "lastState": {"terminated": last} if last else {},
                "state": state,
            }
        ]
    }


def _terminated(code: int, reason: str, start: str, end: str) -> dict[str, Any]:
    return {"exitCode": code, "reason": reason, "startedAt": start, "finishedAt": end}


# PyTorchJob ml/train-1, one master replica:
#   run 1 (pod A on gpu0001) 08:00:00-10:00:00, ContainerStatusUnknown 137 + DisruptionTarget:
#         NODE_FAIL; a NodeNotReady event on gpu0001 at 09:59:30 is scheduler evidence
#   run 2 (pod B on gpu0002, re-created) 10:04:00-11:00:00, exit 1 reason Error: application
#   run 3 (pod B restarted in place) running since 11:01:30
PODS = [
    _pod(
        "train-1-master-0",
        "a0000000-0000-4000-8000-00000000000a",
        "gpu0001",
        _container(
            {
                "terminated": _terminated(
                    137, "ContainerStatusUnknown", "2026-06-03T08:00:00Z", "2026-06-03T10:00:00Z"
                )
            }
        )
        | {"phase": "Failed"},
        conditions=[
            {"type": "DisruptionTarget", "status": "True", "reason": "DeletionByTaintManager"}
        ],
    ),
    _pod(
        "train-1-master-0",
        "b0000000-0000-4000-8000-00000000000b",
        "gpu0002",
        _container(
            {"running": {"startedAt": "2026-06-03T11:01:30Z"}},
            last=_terminated(1, "Error", "2026-06-03T10:04:00Z", "2026-06-03T11:00:00Z"),
        ),
    ),
]
EVENTS = [
    {
        "apiVersion": "v1",
        "kind": "Event",
        "count": 1,
        "firstTimestamp": "2026-06-03T09:59:30Z",
        "lastTimestamp": "2026-06-03T09:59:30Z",
        "involvedObject": {"kind": "Node", "name": "gpu0001", "uid": "gpu0001"},
        "message": "Node gpu0001 status is now: NodeNotReady",
        "metadata": {"name": "gpu0001.1", "namespace": "default", "uid": "e-1"},
        "reason": "NodeNotReady",
        "source": {"component": "node-controller"},
        "type": "Normal",
    }
]


def _kube_list(items: list[dict[str, Any]]) -> str:
    return json.dumps({"apiVersion": "v1", "items": items, "kind": "List", "metadata": {}})


def test_kubernetes_only_warehouse_yields_interruptions_with_causes_and_overheads(
    tmp_path: Path,
) -> None:
    (tmp_path / "k8s_pods").mkdir()
    (tmp_path / "k8s_events").mkdir()
    (tmp_path / "k8s_pods" / "pods_20260603T113000Z.json").write_text(_kube_list(PODS))
    (tmp_path / "k8s_events" / "events_20260603.json").write_text(_kube_list(EVENTS))
    db = tmp_path / "relia.duckdb"
    ingest.ingest(db, ingest.discover([tmp_path]))

    assert _query(db, "select * from stg_observation_window") == [(DAY, NEXT_DAY)]
    assert _query(
        db, "select attempt, state, start_ts, end_ts from int_job_attempts order by attempt"
    ) == [
        (1, "NODE_FAIL", _at("08:00:00"), _at("10:00:00")),
        (2, "FAILED", _at("10:04:00"), _at("11:00:00")),
        (3, "RUNNING", _at("11:01:30"), None),
    ]
    assert _query(
        db,
        "select job_id_raw, attempt, cause_class, attribution, restart_overhead_s, scheduler "
        "from int_job_interruptions order by attempt",
    ) == [
        ("k8s:ml/train-1", 1, "unknown", "scheduler-only", 240.0, "kubernetes"),  # 10:00->10:04
        ("k8s:ml/train-1", 2, "application", "application", 90.0, "kubernetes"),  # 11:00->11:01:30
    ]


# --- torchrun only -----------------------------------------------------------------------------

AGENT = "torch.distributed.elastic.agent.server.api"
MP = "torch.distributed.elastic.multiprocessing.api"
LAUNCHER = "torch.distributed.launcher.api"


def _agent_log(rank: int, starts: list[str], ends: list[str]) -> str:
    """One agent of run llm-3 (static rendezvous, 2 nodes): launch config, then per attempt a
    result block (no joined-round line, no [default] tag), a worker-group start and its end."""
    lines = [
        f"[2026-06-03 07:59:59,000] {LAUNCHER}: [INFO] Starting elastic_operator with launch "
        "configs:",
        "  entrypoint       : train.py",
        "  run_id           : llm-3",
        "  rdzv_backend     : static",
        "",
        f"[2026-06-03 08:00:00,000] {AGENT}: [INFO] starting workers for entrypoint: python",
        f"[2026-06-03 08:00:00,001] {AGENT}: [INFO] Rendezvous'ing worker group",
    ]
    for restart_count, (start, end) in enumerate(zip(starts, ends, strict=True)):
        lines += [
            f"[2026-06-03 {start[:8]},000] {AGENT}: [INFO] Rendezvous complete for workers. "
            "Result:",
            f"  restart_count={restart_count}",
            "  master_addr=gpu0001.cluster.local",
            "  master_port=29500",
            f"  group_rank={rank}",
            "  group_world_size=2",
            "  global_world_sizes=[16, 16, 16, 16, 16, 16, 16, 16]",
            "",
            f"[2026-06-03 {start}] {AGENT}: [INFO] Starting worker group",
            "step 10 | loss 2.1",
            end,
        ]
    return "\n".join(lines) + "\n"


def _failed(clock: str, code: int) -> str:
    return (
        f"[2026-06-03 {clock}] {MP}: [ERROR] failed (exitcode: {code}) local_rank: 3 (pid: 4242) "
        f"of binary: /usr/bin/python3\n[2026-06-03 {clock}] {AGENT}: [INFO] Worker group FAILED. "
        f"2/3 attempts left; will restart worker group\n[2026-06-03 {clock}] {AGENT}: [INFO] "
        "Stopping worker group"
    )


def _finished(clock: str) -> str:
    return (
        f"[2026-06-03 {clock}] {AGENT}: [INFO] worker group successfully finished. Waiting 300 "
        "seconds for other agents to finish."
    )


# attempt 1 (restart_count 0): starts 08:00:05.100 (gpu0001; gpu0002 at .300), first failure
#   gpu0001 exit 1 at 10:00:00.000 -> application; gpu0002's workers abort (-6) at 10:00:10
# attempt 2 (restart_count 1): starts 10:02:00.500 -> overhead 120.5 s; first failure gpu0002
#   killed (-9) at 12:00:00.000 (gpu0001 aborts at 12:00:05) -> no cause: unknown / unattributed
# attempt 3 (restart_count 2): starts 12:03:00.000 -> overhead 180 s; finishes at 14:00
GPU0001 = _agent_log(
    0,
    ["08:00:05,100", "10:02:00,500", "12:03:00,000"],
    [_failed("10:00:00,000", 1), _failed("12:00:05,000", -6), _finished("14:00:00,000")],
)
GPU0002 = _agent_log(
    1,
    ["08:00:05,300", "10:02:00,700", "12:03:00,200"],
    [_failed("10:00:10,000", -6), _failed("12:00:00,000", -9), _finished("14:00:01,000")],
)


def test_torchrun_only_warehouse_yields_interruptions_with_causes_and_overheads(
    tmp_path: Path,
) -> None:
    landing = tmp_path / "elastic"
    landing.mkdir()
    # collector-named files: neither follows <run>__<host>.log; the run is in the launch config,
    # gpu0001's host is its master_addr (group rank 0), gpu0002's comes from --host
    (landing / "torchrun-rank0.log").write_text(GPU0001)
    (landing / "torchrun-rank1.log").write_text(GPU0002)
    db = tmp_path / "relia.duckdb"
    ingest.ingest(db, ingest.discover([landing / "torchrun-rank0.log"]))
    ingest.ingest(
        db,
        ingest.discover([landing / "torchrun-rank1.log"]),
        parser_options={"elastic": {"host": "gpu0002"}},
    )

    assert _query(db, "select count(*) from raw_quarantine") == [(0,)]
    assert _query(db, "select * from stg_observation_window") == [(DAY, NEXT_DAY)]
    assert _query(
        db,
        "select job_id_raw, attempt, state, nodes, n_gpus, start_ts, end_ts, exit_code, "
        "exit_signal from int_job_attempts order by attempt",
    ) == [
        (
            "elastic:llm-3",
            1,
            "FAILED",
            ["gpu0001", "gpu0002"],
            16,
            _at("08:00:05.100"),
            _at("10:00:00"),
            1,
            0,
        ),
        (
            "elastic:llm-3",
            2,
            "FAILED",
            ["gpu0001", "gpu0002"],
            16,
            _at("10:02:00.500"),
            _at("12:00:00"),
            None,
            9,
        ),
        (
            "elastic:llm-3",
            3,
            "COMPLETED",
            ["gpu0001", "gpu0002"],
            16,
            _at("12:03:00"),
            _at("14:00:01"),
            0,
            0,
        ),
    ]
    assert _query(
        db,
        "select attempt, cause_class, attribution, restart_overhead_s, scheduler "
        "from int_job_interruptions order by attempt",
    ) == [
        (1, "application", "application", 120.5, "elastic"),
        (2, "unknown", "unattributed", 180.0, "elastic"),
    ]


def test_torchrun_log_with_worker_group_starts_only(tmp_path: Path) -> None:
    # one agent, glog (torch 2.3+), no result block and no joined line: attempt 1 starts at
    # 08:00:00 and fails at 10:00:00 (exit 1: application); attempt 2 starts at 10:01:30
    # (overhead 90 s) and finishes at 12:00:00
    landing = tmp_path / "elastic"
    landing.mkdir()
    log = landing / "agent-0.log"
    log.write_text(textwrap.dedent(GLOG_STARTS_ONLY).lstrip("\n"))
    mtime = datetime(2026, 6, 2, tzinfo=UTC).timestamp()  # glog prints no year: the mtime's
    os.utime(log, (mtime, mtime))
    db = tmp_path / "relia.duckdb"
    ingest.ingest(
        db,
        ingest.discover([landing]),
        parser_options={"elastic": {"host": "gpu0001", "run": "llm-5"}},
    )
    june_1 = datetime(2026, 6, 1, tzinfo=UTC)
    assert _query(
        db, "select attempt, state, start_ts, end_ts from int_job_attempts order by attempt"
    ) == [
        (1, "FAILED", june_1.replace(hour=8), june_1.replace(hour=10)),
        (2, "COMPLETED", june_1.replace(hour=10, minute=1, second=30), june_1.replace(hour=12)),
    ]
    assert _query(
        db,
        "select attempt, cause_class, attribution, restart_overhead_s from int_job_interruptions",
    ) == [(1, "application", "application", 90.0)]


# --- DCGM only ---------------------------------------------------------------------------------

LABELS = (
    'gpu="0",UUID="GPU-604ac76c-d9cf-fef3-62e9-d92044ab6e52",pci_bus_id="00000000:18:00.0",'
    'device="nvidia0",modelName="NVIDIA H100 80GB HBM3",Hostname="gpu0001.cluster.local"'
)


def _scrape(clock: str, temp: int) -> str:
    ms = int(_at(clock).timestamp() * 1000)
    return textwrap.dedent(
        f"""\
        # HELP DCGM_FI_DEV_GPU_TEMP GPU temperature (in C).
        # TYPE DCGM_FI_DEV_GPU_TEMP gauge
        DCGM_FI_DEV_GPU_TEMP{{{LABELS}}} {temp} {ms}
        """
    )


def test_dcgm_only_warehouse_has_a_window_and_no_interruptions(tmp_path: Path) -> None:
    landing = tmp_path / "dcgm"
    landing.mkdir()
    (landing / "gpu0001.20260603T060000.prom").write_text(_scrape("06:00:00", 41))
    (landing / "gpu0001.20260603T180000.prom").write_text(_scrape("18:00:00", 44))
    db = tmp_path / "relia.duckdb"
    ingest.ingest(db, ingest.discover([landing]))

    assert _query(db, "select * from stg_observation_window") == [(DAY, NEXT_DAY)]
    assert _query(db, "select count(*) from int_job_attempts") == [(0,)]
    assert _query(db, "select count(*) from int_job_interruptions") == [(0,)]
    assert _query(db, "select host, count(*) from stg_dcgm_samples group by all") == [
        ("gpu0001", 2)
    ]


# --- planned work ------------------------------------------------------------------------------

SACCTMGR = """\
Cluster|NodeName|TimeStart|TimeEnd|State|Reason|User
alpha|gpu0001|2026-06-03T10:00:00|2026-06-03T12:00:00|DRAIN|scheduled firmware update|root(0)
alpha|gpu0002|2026-06-03T10:00:00|2026-06-03T11:00:00|DRAIN|Kill task failed|root(0)
alpha|gpu0003|2026-06-03T10:00:00|2026-06-03T10:30:00|DRAIN|GSP firmware error|root(0)
alpha|gpu0004|2026-06-03T10:00:00|2026-06-03T10:45:00|DRAIN|reseat requested after link errors|root(0)
"""  # noqa: E501


def _lost(job: str, uid: str, node: str) -> dict[str, Any]:
    """A pod whose node went away under it at 10:00:30 (NODE_FAIL)."""
    return _pod(
        f"{job}-master-0",
        uid,
        node,
        _container(
            {
                "terminated": _terminated(
                    137, "ContainerStatusUnknown", "2026-06-03T08:00:00Z", "2026-06-03T10:00:30Z"
                )
            }
        )
        | {"phase": "Failed"},
        conditions=[
            {"type": "DisruptionTarget", "status": "True", "reason": "DeletionByTaintManager"}
        ],
        job=job,
    )


def test_scheduled_firmware_update_drain_is_planned_not_an_unknown_failure(
    tmp_path: Path,
) -> None:
    for folder, name, text in (
        ("node_events", "sacctmgr_events_20260603.txt", SACCTMGR),
        (
            "k8s_pods",
            "pods_20260603T113000Z.json",
            _kube_list(
                [
                    _lost("fw-1", "c0000000-0000-4000-8000-000000000001", "gpu0001"),
                    _lost("kill-1", "c0000000-0000-4000-8000-000000000002", "gpu0002"),
                ]
            ),
        ),
    ):
        (tmp_path / folder).mkdir()
        (tmp_path / folder / name).write_text(text)
    db = tmp_path / "relia.duckdb"
    ingest.ingest(db, ingest.discover([tmp_path]))

    assert _query(
        db,
        "select node, unavailability_class, is_planned, planned_work from stg_node_events "
        "order by node",
    ) == [
        ("gpu0001", "maintenance", True, "firmware_update"),
        ("gpu0002", "unknown", False, None),
        # a firmware error is no planned work: a GSP fault (sql/seeds/dim_node_reason.csv)
        ("gpu0003", "gsp", False, None),
        ("gpu0004", "maintenance", False, "reseat"),  # corrective, not planned
    ]
    assert _query(
        db,
        "select node, unavailability_class, is_planned from int_node_unavailability order by node",
    ) == [
        ("gpu0001", "maintenance", True),
        ("gpu0002", "unknown", False),
        ("gpu0003", "gsp", False),
        ("gpu0004", "maintenance", False),
    ]
    # the job on gpu0001 lost its node to the firmware update: maintenance, not unknown
    assert _query(
        db,
        "select job_id_raw, state, cause_class, attribution from int_job_interruptions "
        "order by job_id_raw",
    ) == [
        ("k8s:ml/fw-1", "NODE_FAIL", "maintenance", "scheduler-only"),
        ("k8s:ml/kill-1", "NODE_FAIL", "unknown", "scheduler-only"),
    ]


def test_kubernetes_node_events_of_planned_work(tmp_path: Path) -> None:
    def event(uid: str, node: str, reason: str, message: str) -> dict[str, Any]:
        return {
            "apiVersion": "v1",
            "kind": "Event",
            "count": 1,
            "firstTimestamp": "2026-06-03T10:00:00Z",
            "lastTimestamp": "2026-06-03T10:00:00Z",
            "involvedObject": {"kind": "Node", "name": node, "uid": node},
            "message": message,
            "metadata": {"name": uid, "namespace": "default", "uid": uid},
            "reason": reason,
            "source": {"component": "ops"},
            "type": "Normal",
        }

    (tmp_path / "k8s_events").mkdir()
    (tmp_path / "k8s_events" / "events_20260603.json").write_text(
        _kube_list(
            [
                event("e-1", "gpu0005", "DrainScheduled", "Drain scheduled for node upgrade"),
                event("e-2", "gpu0006", "NodeNotReady", "Node gpu0006 status is now: NodeNotReady"),
                event("e-3", "gpu0007", "Rebooted", "Node gpu0007 has been rebooted, boot id: 42"),
            ]
        )
    )
    (tmp_path / "k8s_pods").mkdir()
    (tmp_path / "k8s_pods" / "pods_20260603T113000Z.json").write_text(
        _kube_list(
            [
                _lost("up-1", "d0000000-0000-4000-8000-000000000001", "gpu0005"),
                _lost("nr-1", "d0000000-0000-4000-8000-000000000002", "gpu0006"),
            ]
        )
    )
    db = tmp_path / "relia.duckdb"
    ingest.ingest(db, ingest.discover([tmp_path]))
    assert _query(db, "select node, node_signal from stg_k8s_events order by node") == [
        ("gpu0005", "planned_work"),
        ("gpu0006", "node_not_ready"),
        ("gpu0007", "node_rebooted"),
    ]
    # both pods lost their node at 10:00:30, 30 s after the node's event
    assert _query(
        db,
        "select job_id_raw, cause_class, attribution from int_job_interruptions "
        "order by job_id_raw",
    ) == [
        ("k8s:ml/nr-1", "unknown", "scheduler-only"),
        ("k8s:ml/up-1", "maintenance", "scheduler-only"),
    ]


def test_fleet_register_and_dcgm_without_nvidia_smi_give_gpu_lives(tmp_path: Path) -> None:
    # gpu0001 installed 2026-01-01, one GPU seen by DCGM on 2026-06-03 (06:00 and 18:00): the
    # window is that day; every life is left-truncated at 153 days (3672 h) and censored at the
    # window end (3696 h): one per GPU-level class (6) for the GPU slot, one per node-level
    # class (8) for the node
    (tmp_path / "dcgm").mkdir()
    (tmp_path / "dcgm" / "gpu0001.20260603T060000.prom").write_text(_scrape("06:00:00", 41))
    (tmp_path / "dcgm" / "gpu0001.20260603T180000.prom").write_text(_scrape("18:00:00", 44))
    (tmp_path / "fleet").mkdir()
    (tmp_path / "fleet" / "fleet.csv").write_text(
        "node,rack,cluster,batch,installed,removed\ngpu0001,r01,alpha,b1,2026-01-01,\n"
    )
    db = tmp_path / "relia.duckdb"
    ingest.ingest(db, ingest.discover([tmp_path]))

    rows = _query(
        db,
        "select unit_level, slot, count(*), min(entry_h), max(exit_h), bool_or(failed), "
        "any_value(serial) from int_replacement_lives group by all order by unit_level, slot",
    )
    gpu_rows = [r for r in rows if r[0] == "gpu"]
    node_rows = [r for r in rows if r[0] == "node"]
    assert gpu_rows == [
        ("gpu", "gpu0", 6, 3672.0, 3696.0, False, "GPU-604ac76c-d9cf-fef3-62e9-d92044ab6e52")
    ]
    assert len(node_rows) == 8
    assert {(r[2], r[3], r[4], r[5]) for r in node_rows} == {(1, 3672.0, 3696.0, False)}
