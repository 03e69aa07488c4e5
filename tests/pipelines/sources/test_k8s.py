"""kubectl get events / pods -A -o json: real shapes, hostile items as rejects, and the attempts
the views build from JobSet and PyTorchJob pods."""

from __future__ import annotations

import copy
import json
import textwrap
from datetime import UTC, datetime
from typing import Any

import duckdb
import polars as pl
import pytest

from pipelines import warehouse
from pipelines.ingest.sources import k8s_events, k8s_pods
from pipelines.ingest.sources.common import REJECT_SCHEMA

NOW = datetime(2026, 9, 1, tzinfo=UTC)
EVENTS_FILE = "/landing/k8s_events/events_20260603.json"
PODS_FILE = "/landing/k8s_pods/pods_20260604T000000Z.json"

EVENTS = textwrap.dedent(
    """\
    {
        "apiVersion": "v1",
        "items": [
            {
                "apiVersion": "v1",
                "count": 1,
                "eventTime": null,
                "firstTimestamp": "2026-06-03T10:00:40Z",
                "involvedObject": {
                    "apiVersion": "v1",
                    "kind": "Node",
                    "name": "gpu0003",
                    "uid": "gpu0003"
                },
                "kind": "Event",
                "lastTimestamp": "2026-06-03T10:00:40Z",
                "message": "Node gpu0003 status is now: NodeNotReady",
                "metadata": {
                    "creationTimestamp": "2026-06-03T10:00:40Z",
                    "name": "gpu0003.17d8a6b3c1e2f4a5",
                    "namespace": "default",
                    "resourceVersion": "98122",
                    "uid": "9b0a3c4e-51f2-4d7e-a6c1-2f3e4d5c6b7a"
                },
                "reason": "NodeNotReady",
                "reportingComponent": "node-controller",
                "reportingInstance": "",
                "source": {
                    "component": "node-controller"
                },
                "type": "Normal"
            },
            {
                "action": "Binding",
                "apiVersion": "v1",
                "eventTime": "2026-06-03T09:59:55.318211Z",
                "firstTimestamp": null,
                "involvedObject": {
                    "apiVersion": "v1",
                    "kind": "Pod",
                    "name": "llm-1042-workers-0-1-x7k2p",
                    "namespace": "llm-pretrain",
                    "uid": "0e7c1d2f-3a4b-4c5d-8e9f-a0b1c2d3e4f5"
                },
                "kind": "Event",
                "lastTimestamp": null,
                "message": "Successfully assigned llm-pretrain/llm-1042-workers-0-1-x7k2p to gpu0005",
                "metadata": {
                    "creationTimestamp": "2026-06-03T09:59:55Z",
                    "name": "llm-1042-workers-0-1-x7k2p.17d8a6a2b3c4d5e6",
                    "namespace": "llm-pretrain",
                    "resourceVersion": "98101",
                    "uid": "5c6d7e8f-9a0b-4c1d-9e2f-3a4b5c6d7e8f"
                },
                "reason": "Scheduled",
                "reportingComponent": "default-scheduler",
                "reportingInstance": "default-scheduler-ctrl0001",
                "source": {},
                "type": "Normal"
            },
            {
                "apiVersion": "v1",
                "count": 3,
                "eventTime": null,
                "firstTimestamp": "2026-06-03T10:05:40Z",
                "involvedObject": {
                    "apiVersion": "v1",
                    "fieldPath": "spec.containers{pytorch}",
                    "kind": "Pod",
                    "name": "llm-1042-workers-0-0-b9c4d",
                    "namespace": "llm-pretrain",
                    "uid": "1f2e3d4c-5b6a-4978-8a6b-5c4d3e2f1a0b"
                },
                "kind": "Event",
                "lastTimestamp": "2026-06-03T10:07:10Z",
                "message": "Back-off restarting failed container pytorch in pod llm-1042-workers-0-0-b9c4d_llm-pretrain(1f2e3d4c-5b6a-4978-8a6b-5c4d3e2f1a0b)",
                "metadata": {
                    "creationTimestamp": "2026-06-03T10:05:40Z",
                    "name": "llm-1042-workers-0-0-b9c4d.17d8a6c0d1e2f3a4",
                    "namespace": "llm-pretrain",
                    "resourceVersion": "98305",
                    "uid": "7a8b9c0d-1e2f-4a3b-8c4d-5e6f7a8b9c0d"
                },
                "reason": "BackOff",
                "reportingComponent": "kubelet",
                "reportingInstance": "gpu0004",
                "source": {
                    "component": "kubelet",
                    "host": "gpu0004"
                },
                "type": "Warning"
            }
        ],
        "kind": "List",
        "metadata": {
            "resourceVersion": ""
        }
    }
    """  # noqa: E501
)


def test_k8s_events_become_typed_rows() -> None:
    result = k8s_events.parse(EVENTS.encode(), source_file=EVENTS_FILE, now=NOW)
    assert result.rejects.height == 0
    rows = result.rows
    assert rows["line_no"].to_list() == [4, 33, 61]  # the items' opening braces
    assert rows.select(
        "involved_kind",
        "event_reason",
        "node",
        "count",
        "first_ts",
        "event_time_ts",
        "source_component",
        "source_host",
        "event_type",
    ).rows() == [
        (
            "Node",
            "NodeNotReady",
            "gpu0003",
            1,
            datetime(2026, 6, 3, 10, 0, 40, tzinfo=UTC),
            None,
            "node-controller",
            None,
            "Normal",
        ),
        (
            "Pod",
            "Scheduled",
            None,
            None,
            None,  # the scheduler's own host is no node of the pod
            datetime(2026, 6, 3, 9, 59, 55, 318211, tzinfo=UTC),
            "default-scheduler",
            "default-scheduler-ctrl0001",
            "Normal",
        ),
        (
            "Pod",
            "BackOff",
            "gpu0004",
            3,
            datetime(2026, 6, 3, 10, 5, 40, tzinfo=UTC),
            None,
            "kubelet",
            "gpu0004",
            "Warning",
        ),
    ]
    assert rows["field_path"][2] == "spec.containers{pytorch}"
    assert rows.schema == pl.Schema(k8s_events.SCHEMA)


def test_k8s_events_hostile_items_are_rejected_with_a_reason() -> None:
    doc = json.loads(EVENTS)
    good = doc["items"][0]
    no_reason = copy.deepcopy(good) | {"reason": None}
    bad_time = copy.deepcopy(good) | {"firstTimestamp": "03/06/2026 10:00"}
    future = copy.deepcopy(good) | {"firstTimestamp": "2099-01-01T00:00:00Z"}
    no_object = {k: v for k, v in good.items() if k != "involvedObject"}
    bad_count = copy.deepcopy(good) | {"count": "many"}
    doc["items"] = [good, no_reason, bad_time, future, no_object, bad_count, "gpu0003"]
    result = k8s_events.parse(json.dumps(doc, indent=4).encode(), source_file=EVENTS_FILE, now=NOW)
    assert result.rows.height == 1
    assert result.rejects.schema == pl.Schema(REJECT_SCHEMA)
    assert sorted(result.rejects["reason"].to_list()) == sorted(
        [
            "event without a reason",
            "malformed first time '03/06/2026 10:00'",
            "first_ts in the future: 2099-01-01 00:00:00.000000+00:00",
            "event without involvedObject.kind and involvedObject.name",
            "malformed count 'many'",
            "item is not a JSON object",
        ]
    )
    assert result.rejects["raw"][0].startswith('{"apiVersion":"v1"')


def test_k8s_events_broken_json_keeps_the_items_before_the_break() -> None:
    text = EVENTS.replace('"reason": "BackOff",', '"reason": "BackOff"')  # a missing comma
    result = k8s_events.parse(text.encode(), source_file=EVENTS_FILE, now=NOW)
    assert result.rows.height == 2
    [reject] = result.rejects.to_dicts()
    assert reject["reason"].startswith("invalid JSON: Expecting ',' delimiter")
    assert reject["line_no"] == 85
    assert reject["raw"].strip() == '"reportingComponent": "kubelet",'


@pytest.mark.parametrize(
    ("data", "reason"),
    [
        (b'[{"kind": "Event"}]', "expected the JSON object of 'kubectl get events -o json'"),
        (b'{"kind": "Event", "reason": "x"}', "no 'items' array"),
        (b'{"items": [\xff]}', "file is not valid UTF-8"),
    ],
)
def test_k8s_events_files_that_are_not_lists(data: bytes, reason: str) -> None:
    result = k8s_events.parse(data, source_file=EVENTS_FILE, now=NOW)
    assert result.rows.height == 0
    assert result.rejects["reason"][0].startswith(reason)


def _pod(
    name: str,
    uid: str,
    node: str,
    labels: dict[str, str],
    owner: dict[str, str],
    state: dict[str, Any],
    *,
    last: dict[str, Any] | None = None,
    restarts: int = 0,
    phase: str = "Running",
    reason: str | None = None,
    conditions: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    status: dict[str, Any] = {
        "conditions": conditions or [],
        "containerStatuses": [
            {
                "containerID": "containerd://3f1c" + uid[:8],
                "image": "nvcr.io/nvidia/pytorch:24.05-py3",
                "imageID": "nvcr.io/nvidia/pytorch@sha256:4f4f",
                "lastState": {"terminated": last} if last else {},
                "name": "pytorch",
                "ready": "running" in state,
                "restartCount": restarts,
                "started": "running" in state,
                "state": state,
            }
        ],
        "phase": phase,
        "startTime": "2026-06-03T08:00:00Z",
    }
    if reason:
        status["reason"] = reason
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "creationTimestamp": "2026-06-03T07:59:55Z",
            "labels": labels,
            "name": name,
            "namespace": "llm-pretrain",
            "ownerReferences": [owner | {"blockOwnerDeletion": True, "controller": True}],
            "uid": uid,
        },
        "spec": {
            "containers": [
                {
                    "image": "nvcr.io/nvidia/pytorch:24.05-py3",
                    "name": "pytorch",
                    "resources": {"limits": {"nvidia.com/gpu": "8"}},
                }
            ],
            "nodeName": node,
        },
        "status": status,
    }


def _jobset(i: int, attempt: int) -> tuple[dict[str, str], dict[str, str]]:
    labels = {
        "batch.kubernetes.io/job-completion-index": str(i),
        "batch.kubernetes.io/job-name": "llm-1042-workers-0",
        "jobset.sigs.k8s.io/job-index": "0",
        "jobset.sigs.k8s.io/jobset-name": "llm-1042",
        "jobset.sigs.k8s.io/replicatedjob-name": "workers",
        "jobset.sigs.k8s.io/restart-attempt": str(attempt),
    }
    return labels, {"apiVersion": "batch/v1", "kind": "Job", "name": "llm-1042-workers-0"}


def _pytorchjob(replica: str, index: int) -> tuple[dict[str, str], dict[str, str]]:
    labels = {
        "training.kubeflow.org/job-name": "sft-2001",
        "training.kubeflow.org/operator-name": "pytorchjob-controller",
        "training.kubeflow.org/replica-index": str(index),
        "training.kubeflow.org/replica-type": replica,
    }
    return labels, {"apiVersion": "kubeflow.org/v1", "kind": "PyTorchJob", "name": "sft-2001"}


def _term(code: int, reason: str, start: str, end: str) -> dict[str, Any]:
    return {
        "terminated": {"exitCode": code, "reason": reason, "startedAt": start, "finishedAt": end}
    }


def _pods_text(items: list[dict[str, Any]]) -> bytes:
    doc = {"apiVersion": "v1", "items": items, "kind": "List", "metadata": {"resourceVersion": ""}}
    return json.dumps(doc, indent=4, sort_keys=True).encode()


T0, T1, T2, T3 = (
    "2026-06-03T08:00:00Z",
    "2026-06-03T10:00:00Z",
    "2026-06-03T10:05:00Z",
    "2026-06-03T12:00:00Z",
)
POD_ITEMS = [
    # JobSet attempt 1 (restart-attempt 0): rank 1 OOMKilled, rank 0 stopped 20 s later
    _pod(
        "llm-1042-workers-0-0-b9c4d",
        "a0000000-0000-4000-8000-000000000001",
        "gpu0004",
        *_jobset(0, 0),
        _term(143, "Error", T0, "2026-06-03T10:00:20Z"),
        phase="Failed",
    ),
    _pod(
        "llm-1042-workers-0-1-x7k2p",
        "a0000000-0000-4000-8000-000000000002",
        "gpu0005",
        *_jobset(1, 0),
        _term(137, "OOMKilled", T0, T1),
        phase="Failed",
    ),
    # JobSet attempt 2 (restart-attempt 1): still running
    _pod(
        "llm-1042-workers-0-0-q2w3e",
        "a0000000-0000-4000-8000-000000000003",
        "gpu0006",
        *_jobset(0, 1),
        {"running": {"startedAt": T2}},
    ),
    # PyTorchJob: the master lost its node (attempt 1), re-created on gpu0009 (attempt 2)
    _pod(
        "sft-2001-master-0",
        "b0000000-0000-4000-8000-000000000001",
        "gpu0007",
        *_pytorchjob("master", 0),
        _term(137, "ContainerStatusUnknown", T0, T1),
        phase="Failed",
        conditions=[
            {"type": "DisruptionTarget", "status": "True", "reason": "DeletionByTaintManager"}
        ],
    ),
    _pod(
        "sft-2001-master-0",
        "b0000000-0000-4000-8000-000000000002",
        "gpu0009",
        *_pytorchjob("master", 0),
        _term(0, "Completed", T2, T3),
        phase="Succeeded",
    ),
    # the worker restarted in place: its last run ended with a Python exit at the same time
    _pod(
        "sft-2001-worker-0",
        "b0000000-0000-4000-8000-000000000003",
        "gpu0008",
        *_pytorchjob("worker", 0),
        _term(0, "Completed", T2, T3),
        restarts=1,
        last={
            "exitCode": 1,
            "reason": "Error",
            "startedAt": T0,
            "finishedAt": "2026-06-03T10:00:09Z",
        },
        phase="Succeeded",
    ),
    # a pod still pending: no container status yet
    {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": "eval-9-xk2lp",
            "namespace": "eval",
            "uid": "c0000000-0000-4000-8000-1",
            "labels": {"batch.kubernetes.io/job-name": "eval-9"},
        },
        "spec": {},
        "status": {"phase": "Pending"},
    },
]


def test_k8s_pods_become_container_runs() -> None:
    result = k8s_pods.parse(_pods_text(POD_ITEMS), source_file=PODS_FILE, now=NOW)
    assert result.rejects.height == 0
    rows = result.rows
    assert rows.height == 8  # 7 pods, one with a current and a last run
    assert set(rows["snapshot_ts"]) == {datetime(2026, 6, 4, tzinfo=UTC)}
    assert rows.select(
        "pod_name",
        "job_kind",
        "job_name",
        "replica_type",
        "replica_index",
        "restart_attempt",
        "run",
        "exit_code",
        "termination_reason",
        "gpu_limit",
    ).rows() == [
        (
            "llm-1042-workers-0-0-b9c4d",
            "JobSet",
            "llm-1042",
            "workers",
            0,
            0,
            "current",
            143,
            "Error",
            8,
        ),
        (
            "llm-1042-workers-0-1-x7k2p",
            "JobSet",
            "llm-1042",
            "workers",
            0,
            0,
            "current",
            137,
            "OOMKilled",
            8,
        ),
        (
            "llm-1042-workers-0-0-q2w3e",
            "JobSet",
            "llm-1042",
            "workers",
            0,
            1,
            "current",
            None,
            None,
            8,
        ),
        (
            "sft-2001-master-0",
            "PyTorchJob",
            "sft-2001",
            "master",
            0,
            None,
            "current",
            137,
            "ContainerStatusUnknown",
            8,
        ),
        (
            "sft-2001-master-0",
            "PyTorchJob",
            "sft-2001",
            "master",
            0,
            None,
            "current",
            0,
            "Completed",
            8,
        ),
        (
            "sft-2001-worker-0",
            "PyTorchJob",
            "sft-2001",
            "worker",
            0,
            None,
            "current",
            0,
            "Completed",
            8,
        ),
        ("sft-2001-worker-0", "PyTorchJob", "sft-2001", "worker", 0, None, "last", 1, "Error", 8),
        ("eval-9-xk2lp", "Job", "eval-9", None, None, None, None, None, None, None),
    ]
    assert rows["completion_index"].to_list()[:2] == [0, 1]
    assert rows["disruption_reason"][3] == "DeletionByTaintManager"
    assert rows["restart_count"][5] == 1
    assert rows["container_state"].to_list()[2] == "running"


def test_k8s_pods_hostile_items_are_rejected_with_a_reason() -> None:
    no_uid = copy.deepcopy(POD_ITEMS[0])
    del no_uid["metadata"]["uid"]
    bad_exit = copy.deepcopy(POD_ITEMS[1])
    bad_exit["status"]["containerStatuses"][0]["state"]["terminated"]["exitCode"] = "boom"
    future = copy.deepcopy(POD_ITEMS[2])
    future["status"]["containerStatuses"][0]["state"]["running"]["startedAt"] = (
        "2099-01-01T00:00:00Z"
    )
    bad_time = copy.deepcopy(POD_ITEMS[4])
    bad_time["metadata"]["creationTimestamp"] = "yesterday"
    items = [no_uid, bad_exit, future, bad_time, POD_ITEMS[5], 42]
    result = k8s_pods.parse(_pods_text(items), source_file=PODS_FILE, now=NOW)
    assert sorted(result.rejects["reason"].to_list()) == sorted(
        [
            "pod without metadata.uid",
            "malformed exit_code 'boom'",
            "started_ts in the future: 2099-01-01 00:00:00.000000+00:00",
            "malformed created time 'yesterday'",
            "item is not a JSON object",
        ]
    )
    assert result.rows["pod_name"].to_list() == ["sft-2001-worker-0", "sft-2001-worker-0"]


@pytest.fixture(scope="module")
def con() -> duckdb.DuckDBPyConnection:
    con = duckdb.connect()
    con.execute("set TimeZone = 'UTC'")
    warehouse.apply_schema(con)
    rows = k8s_pods.parse(_pods_text(POD_ITEMS), source_file=PODS_FILE, now=NOW).rows
    con.register("incoming", rows.drop("source_file").with_columns(source_file=pl.lit("x")))
    con.execute("insert into raw_k8s_pods by name select * from incoming")
    warehouse.create_views(con)
    return con


def test_k8s_attempts_of_jobset_and_pytorchjob(con: duckdb.DuckDBPyConnection) -> None:
    rows = con.execute(
        "select job_id_raw, attempt, state, end_ts, exit_code, exit_signal, nodes, n_gpus, "
        "is_interruption, restart_overhead_s, termination_reason, is_application_exit, scheduler "
        "from int_job_attempts order by job_id_raw, attempt"
    ).fetchall()
    t1 = datetime(2026, 6, 3, 10, tzinfo=UTC)
    t3 = datetime(2026, 6, 3, 12, tzinfo=UTC)
    assert rows == [
        (
            "k8s:llm-pretrain/llm-1042",
            1,
            "OUT_OF_MEMORY",
            t1,
            137,
            9,
            ["gpu0004", "gpu0005"],
            16,
            True,
            300.0,
            "OOMKilled",
            False,
            "kubernetes",
        ),
        (
            "k8s:llm-pretrain/llm-1042",
            2,
            "RUNNING",
            None,
            None,
            None,
            ["gpu0006"],
            8,
            False,
            None,
            None,
            False,
            "kubernetes",
        ),
        (
            "k8s:llm-pretrain/sft-2001",
            1,
            "NODE_FAIL",
            t1,
            137,
            9,
            ["gpu0007", "gpu0008"],
            16,
            True,
            300.0,
            "ContainerStatusUnknown",
            False,
            "kubernetes",
        ),
        (
            "k8s:llm-pretrain/sft-2001",
            2,
            "COMPLETED",
            t3,
            0,
            0,
            ["gpu0008", "gpu0009"],
            16,
            False,
            None,
            "Completed",
            False,
            "kubernetes",
        ),
    ]


def test_k8s_interruptions_are_attributed(con: duckdb.DuckDBPyConnection) -> None:
    con.execute(
        "insert into cfg_params values ('window_start_epoch_s', epoch(timestamptz "
        "'2026-06-01 00:00:00+00'), null), ('window_end_epoch_s', epoch(timestamptz "
        "'2026-07-01 00:00:00+00'), null)"
    )
    rows = con.execute(
        "select job_id_raw, cause_class, attribution, scheduler from int_job_interruptions "
        "order by job_id_raw"
    ).fetchall()
    assert rows == [
        ("k8s:llm-pretrain/llm-1042", "application", "application", "kubernetes"),
        ("k8s:llm-pretrain/sft-2001", "unknown", "scheduler-only", "kubernetes"),
    ]


def test_k8s_event_series_gives_count_and_last_time_when_core_fields_are_empty() -> None:
    # An event recorded through events.k8s.io/v1 (kube-scheduler, kubelet since 1.19) and read
    # through core/v1: a repeated event has count and lastTimestamp null and an EventSeries
    # (core/v1 Event.series: count, lastObservedTime; API reference).
    text = """{"apiVersion": "v1", "kind": "List", "items": [
      {"kind": "Event", "involvedObject": {"kind": "Pod", "namespace": "ml", "name": "w-0"},
       "reason": "FailedScheduling", "type": "Warning", "count": null,
       "firstTimestamp": null, "lastTimestamp": null,
       "eventTime": "2026-06-03T10:00:40.123456Z",
       "series": {"count": 7, "lastObservedTime": "2026-06-03T10:09:41.000001Z"},
       "reportingComponent": "default-scheduler", "reportingInstance": "default-scheduler-cp1",
       "metadata": {"name": "w-0.1", "namespace": "ml", "uid": "u-1",
                    "creationTimestamp": "2026-06-03T10:00:40Z"}},
      {"kind": "Event", "involvedObject": {"kind": "Pod", "namespace": "ml", "name": "w-1"},
       "reason": "Scheduled", "type": "Normal", "count": 2,
       "lastTimestamp": "2026-06-03T11:00:00Z",
       "series": {"count": 9, "lastObservedTime": "2026-06-03T12:00:00Z"},
       "metadata": {"name": "w-1.1", "namespace": "ml", "uid": "u-2",
                    "creationTimestamp": "2026-06-03T10:00:40Z"}}]}"""
    result = k8s_events.parse(text.encode(), source_file="events.json", now=NOW)
    assert result.rejects.height == 0
    got = result.rows.select("event_uid", "count", "last_ts").rows()
    assert got == [
        ("u-1", 7, datetime(2026, 6, 3, 10, 9, 41, 1, tzinfo=UTC)),
        # the core fields win where they are set
        ("u-2", 2, datetime(2026, 6, 3, 11, 0, tzinfo=UTC)),
    ]
