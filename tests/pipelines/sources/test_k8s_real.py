"""Kubernetes objects from public repositories and issue threads (samples/kubectl/, provenance
in its README): scheduler events of the events.k8s.io recorder, with only ``eventTime`` set, and a
DaemonSet pod whose container was OOMKilled once. Expectations are read off the pastes by hand.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

import duckdb
import pytest
import yaml

from pipelines.ingest.sources import k8s_events, k8s_pods

if TYPE_CHECKING:
    from pipelines.ingest.sources.common import Parsed

NOW = datetime(2026, 9, 1, tzinfo=UTC)
SAMPLES = Path(__file__).parent / "samples" / "kubectl"
SCHEDULED = "kubernetes_90482_scheduled_k8s1.17"
FAILED_SCHEDULING = "botkube_548_failedscheduling"
OOMKILLED_POD = "kubeshark_worker_pod_oomkilled"
STG_K8S_PODS = Path(__file__).parents[3] / "sql" / "staging" / "stg_k8s_pods.sql"


def _events(stem: str) -> Parsed:
    data = (SAMPLES / f"{stem}.json").read_bytes()
    return k8s_events.parse(data, source_file=f"/landing/k8s_events/{stem}.json", now=NOW)


@pytest.mark.parametrize("stem", [SCHEDULED, FAILED_SCHEDULING])
def test_k8s_real_json_sample_holds_exactly_the_pasted_items(stem: str) -> None:
    # the pastes are `kubectl get events -o yaml`; the .json is the same list as kubectl
    # -o json prints it, which this checks
    pasted = yaml.safe_load((SAMPLES / f"{stem}.yaml").read_text())
    assert json.loads((SAMPLES / f"{stem}.json").read_text())["items"] == pasted


def test_k8s_real_scheduled_event_has_only_an_event_time_and_no_node() -> None:
    # kubernetes/kubernetes#90482 (1.17): firstTimestamp and lastTimestamp null, eventTime a
    # micro-time, reportingInstance "default-scheduler-<the scheduler's own host>"
    result = _events(SCHEDULED)
    assert result.rejects.height == 0
    row = result.rows.row(0, named=True)
    assert result.rows.height == 1
    assert row == {
        "source_file": f"/landing/k8s_events/{SCHEDULED}.json",
        "line_no": 4,
        "namespace": "magellan",
        "event_name": "alertmanager-monit-alertmanager-0.1608c507df74c9ad",
        "event_uid": "48d60a45-d1d7-44e4-98a4-8b777c1e1981",
        "involved_kind": "Pod",
        "involved_namespace": "magellan",
        "involved_name": "alertmanager-monit-alertmanager-0",
        "involved_uid": "a2340cb4-e308-4b08-b3e2-d8bea043e0e3",
        "field_path": None,
        "event_reason": "Scheduled",
        "message": "Successfully assigned magellan/alertmanager-monit-alertmanager-0 to "
        "ip-172-31-108-34.eu-west-1.compute.internal",
        "event_type": "Normal",
        "count": None,
        "first_ts": None,
        "last_ts": None,
        "event_time_ts": datetime(2020, 4, 24, 13, 38, 26, 252501, tzinfo=UTC),
        "created_ts": datetime(2020, 4, 24, 13, 38, 26, tzinfo=UTC),
        "source_component": "default-scheduler",
        "source_host": "default-scheduler-ip-172-31-181-132.eu-west-1.compute.internal",
        # not the control-plane host the scheduler runs on (it was, before the fix)
        "node": None,
    }


def test_k8s_real_failed_scheduling_with_an_empty_source() -> None:
    # kubeshop/botkube#548: `source: {}`, so the component and host come from
    # reportingComponent / reportingInstance; a quoted YAML message folded over four lines
    result = _events(FAILED_SCHEDULING)
    assert result.rejects.height == 0
    assert result.rows.select(
        "line_no",
        "namespace",
        "involved_kind",
        "event_reason",
        "event_type",
        "count",
        "first_ts",
        "last_ts",
        "event_time_ts",
        "created_ts",
        "source_component",
        "source_host",
        "node",
    ).rows() == [
        (
            4,
            "montoring",
            "Pod",
            "FailedScheduling",
            "Warning",
            None,
            None,
            None,
            datetime(2021, 11, 29, 2, 56, 10, 265245, tzinfo=UTC),
            datetime(2021, 11, 29, 2, 56, 10, tzinfo=UTC),
            "default-scheduler",
            "default-scheduler-master03",
            None,
        ),
    ]
    message = result.rows["message"][0]
    assert message.startswith("0/20 nodes are available: 10 node(s) didn't match Pod's node")
    assert message.endswith("that the pod didn't tolerate.")


def test_k8s_real_cut_dump_keeps_nothing_and_says_where() -> None:
    # a dump cut off inside the item (a full disk, a killed kubectl) just after `"metadata":
    # {...},` (line 27): one reject at line 28, where a key should follow, and no traceback
    text = (SAMPLES / f"{SCHEDULED}.json").read_text()
    cut = text[: text.index('"reason": "Scheduled"')]
    result = k8s_events.parse(cut.encode(), source_file="events.json", now=NOW)
    assert result.rows.height == 0
    assert result.rejects.select("line_no", "reason").rows() == [
        (
            28,
            "invalid JSON: Expecting property name enclosed in double quotes; "
            "the items from here on are lost",
        ),
    ]


def _oomkilled_pod() -> Parsed:
    # the snapshot time in the name is when Kubeshark captured the message that carried the pod
    # ("startTime": "2023-05-06T21:05:12.643129355Z" in the README's data document)
    data = (SAMPLES / f"{OOMKILLED_POD}.json").read_bytes()
    name = f"/landing/k8s_pods/{OOMKILLED_POD}_20230506T210512Z.json"
    return k8s_pods.parse(data, source_file=name, now=NOW)


def _utc(day: int, hour: int, minute: int, second: int) -> datetime:
    return datetime(2023, 5, day, hour, minute, second, tzinfo=UTC)


def test_k8s_real_oomkilled_daemonset_pod_gives_its_running_and_its_oomkilled_run() -> None:
    # kubeshark/scripts telemetry/assets/grafana_instructions.md: one container
    # "kubeshark-worker", restartCount 1, state.running since 21:03:58, lastState.terminated
    # OOMKilled with exitCode 137 (no "signal" key, no "message") from 16:54:42 to 21:03:57;
    # limits cpu 750m / memory 1Gi and no nvidia.com/gpu; owned by a DaemonSet, no job labels
    result = _oomkilled_pod()
    assert result.rejects.height == 0
    pod = {
        "source_file": f"/landing/k8s_pods/{OOMKILLED_POD}_20230506T210512Z.json",
        "line_no": 4,  # the item's opening brace, after `{`, `"apiVersion"`, `"items": [`
        "snapshot_ts": _utc(6, 21, 5, 12),
        "namespace": "kubeshark",
        "pod_name": "kubeshark-worker-daemon-set-hvn25",
        "pod_uid": "465142ab-e5aa-4203-a2c4-8a53763b3db8",
        "node_name": "mizu",
        "phase": "Running",
        "pod_reason": None,
        "pod_message": None,
        "disruption_reason": None,  # conditions: Initialized, Ready, ContainersReady, PodScheduled
        "created_ts": _utc(6, 16, 54, 36),
        "deletion_ts": None,
        "pod_start_ts": _utc(6, 16, 54, 37),
        "owner_kind": "DaemonSet",
        "owner_name": "kubeshark-worker-daemon-set",
        # labels app, controller-revision-hash, kubeshark-*, pod-template-generation: no job
        "job_kind": None,
        "job_name": None,
        "replica_type": None,
        "replica_index": None,
        "completion_index": None,
        "restart_attempt": None,
        "container_name": "kubeshark-worker",
        "gpu_limit": None,
        "restart_count": 1,
        "termination_message": None,
        "waiting_reason": None,
        "signal": None,
    }
    running = pod | {
        "run": "current",
        "container_state": "running",
        "started_ts": _utc(6, 21, 3, 58),
        "finished_ts": None,
        "exit_code": None,
        "termination_reason": None,
    }
    oomkilled = pod | {
        "run": "last",
        "container_state": "terminated",
        "started_ts": _utc(6, 16, 54, 42),
        "finished_ts": _utc(6, 21, 3, 57),
        "exit_code": 137,
        "termination_reason": "OOMKilled",
    }
    assert result.rows.columns == list(k8s_pods.SCHEMA)
    assert result.rows.to_dicts() == [running, oomkilled]


def test_k8s_real_oomkilled_daemonset_pod_in_staging_has_no_job_and_one_failed_run() -> None:
    # stg_k8s_pods: job_key only for a pod with a job name (a DaemonSet pod has none); the
    # OOMKilled run (exit 137) is failed, the running one is not; nothing says the node was lost
    rows = _oomkilled_pod().rows  # noqa: F841 (read by duckdb as raw_k8s_pods)
    with duckdb.connect() as con:
        con.execute("create table raw_k8s_pods as select * from rows")
        staged = con.sql(STG_K8S_PODS.read_text()).pl()
    assert staged.sort("started_ts").select(
        "job_key", "replica_key", "run", "is_failed", "node_lost"
    ).rows() == [
        (None, "///kubeshark-worker", "last", True, False),
        (None, "///kubeshark-worker", "current", False, False),
    ]
