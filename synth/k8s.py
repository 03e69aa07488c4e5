"""Kubernetes telemetry of the synthetic fleet: pod snapshots and event dumps.

Jobs handed to Kubernetes (:mod:`synth.schedulers`) run one pod per node and attempt:
a JobSet (``<job>-workers-0-<i>-<suffix>``, attempt in the ``restart-attempt`` label) or a
Kubeflow PyTorchJob (``<job>-master-0``, ``<job>-worker-<i>``, re-created with the same names and
new uids). An attempt's pods start at its start (the first one exactly then) and end as follows:

=============  ===========================================================================
attempt        pods
=============  ===========================================================================
complete       every container ``Completed`` (exit 0)
time limit     pod ``DeadlineExceeded``, containers exit 137 (``Error``)
application    the failing rank exits 1 (``Error``) at the attempt's end, the others are
               stopped later (143)
out of memory  the failing rank is ``OOMKilled`` (137); a node-problem-detector ``OOMKilling``
               event on its node
GPU failure    the rank on the failed node exits 1 (CUDA error), the others 143
node failure   the pod on the lost node: ``ContainerStatusUnknown`` (137), a ``DisruptionTarget``
               condition and a ``TaintManagerEviction`` event; the others 143
=============  ===========================================================================

``kubectl get pods -A -o json`` is dumped at every midnight and at the window end; a pod is in a
dump from its start until a day after it ended (finished pods are kept that long), so every
container run is seen at least once in its final state. ``kubectl get events -A -o json`` dumps,
one per day, hold the pods' ``Scheduled`` and ``Started`` events and the node controller's
``NodeNotReady`` / ``NodeReady`` for every failure that takes its node down (:func:`_node_down`).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from synth.fleet import DAY_S, F_REBOOT, F_RESEAT
from synth.schedulers import KUBERNETES, k8s_names
from synth.truth import iso

if TYPE_CHECKING:
    from synth.config import SynthConfig
    from synth.fleet import Fleet
    from synth.workload import Attempt, Jobs

IMAGE = "nvcr.io/nvidia/pytorch:24.05-py3"
IMAGE_ID = "nvcr.io/nvidia/pytorch@sha256:" + "4f" * 32
CONTAINER = "pytorch"
NOT_READY_AFTER_S = 40  # node-monitor-grace-period
READY_AFTER_S = 30
_SUFFIX_CHARS = "bcdfghjklmnpqrstvwxz2456789"


@dataclass
class _Pod:
    namespace: str
    name: str
    uid: str
    node: str
    labels: dict[str, str]
    owner: dict[str, Any]
    created: int
    start: int
    finish: int | None  # None: still running at the window end
    exit_code: int = 0
    reason: str = "Completed"
    pod_reason: str | None = None
    pod_message: str | None = None
    disruption: bool = False
    message: str | None = None
    container_id: str = ""
    gpus: int = 8


@dataclass
class K8sOutput:
    """Files written, counts for the truth, and what each interrupted attempt looks like."""

    pods: dict[str, str] = field(default_factory=dict)
    events: dict[str, str] = field(default_factory=dict)
    n_pod_rows: int = 0
    n_event_rows: int = 0
    n_bad_pods: int = 0
    n_bad_events: int = 0
    #: (job, attempt number) -> (state the views see, application exit)
    facts: dict[tuple[int, int], tuple[str, bool]] = field(default_factory=dict)
    #: (node index, time) of every NodeNotReady event
    not_ready: list[tuple[int, int]] = field(default_factory=list)


def k8s_files(
    config: SynthConfig,
    rng: np.random.Generator,
    fleet: Fleet,
    jobs: Jobs,
    attempts: list[Attempt],
    scheduler: np.ndarray,
) -> K8sOutput:
    """Pod snapshots and event dumps of the Kubernetes jobs (file name -> JSON text)."""
    out = K8sOutput()
    w0, w1 = config.window_start_s, config.window_end_s
    pods: list[_Pod] = []
    events: list[tuple[int, dict[str, Any]]] = []
    job_uids: dict[int, str] = {}
    for a in attempts:
        if scheduler[a.job] != KUBERNETES:
            continue
        j = a.job
        job_uids.setdefault(j, _uid(rng))
        attempt_pods, state, app_exit = _attempt_pods(config, rng, fleet, jobs, a, job_uids[j])
        pods += attempt_pods
        if state:
            out.facts[(j, a.number)] = (state, app_exit)
        for pod in attempt_pods:
            events.append((pod.start - 5, _scheduled_event(rng, pod)))
            events.append((pod.start, _started_event(rng, pod)))
            if pod.disruption and pod.finish is not None:
                events.append((pod.finish, _eviction_event(rng, pod)))
            if pod.reason == "OOMKilled" and pod.finish is not None:
                events.append((pod.finish, _oom_event(rng, pod)))
    node_down = _node_down(fleet)
    for unit, opened, closed in zip(
        fleet.ev_unit[node_down].tolist(),
        fleet.ev_open[node_down].tolist(),
        fleet.ev_close[node_down].tolist(),
        strict=True,
    ):
        node = int(fleet.unit_node[unit])
        t_down = opened + NOT_READY_AFTER_S
        if w0 <= t_down < w1:
            out.not_ready.append((node, t_down))
            events.append((t_down, _node_event(rng, fleet.names[node], t_down, ready=False)))
        t_up = closed + READY_AFTER_S
        if w0 <= t_up < w1:
            events.append((t_up, _node_event(rng, fleet.names[node], t_up, ready=True)))
    _write_pod_dumps(config, pods, out)
    _write_event_dumps(config, rng, events, out)
    return out


def _node_down(fleet: Fleet) -> np.ndarray:
    """Mask of the failures that take their node down (``NodeNotReady``).

    Every node-level hardware failure, unplanned maintenance, and any failure fixed by a node
    reboot or a reseat (the node is powered off); not a GPU reset, nor a software, driver,
    NCCL or fabric fault (the node stays up, drained).
    """
    names = np.array(fleet.class_names, dtype=object)
    node_level_hw = (fleet.ev_unit >= fleet.n_gpu_units) & fleet.class_hardware[fleet.ev_class]
    maintenance = names[fleet.ev_class] == "maintenance"
    rebooted = np.isin(fleet.ev_fix, (F_REBOOT, F_RESEAT))
    mask: np.ndarray = fleet.failed & (node_level_hw | maintenance | rebooted)
    return mask


def _attempt_pods(
    config: SynthConfig,
    rng: np.random.Generator,
    fleet: Fleet,
    jobs: Jobs,
    a: Attempt,
    job_uid: str,
) -> tuple[list[_Pod], str | None, bool]:
    """Return the pods of one attempt and how the attempt ends.

    The pods of one attempt, the state the views see if it is an interruption, and whether
    its first failure is an application exit.
    """
    j = a.job
    namespace, name, kind = k8s_names(jobs, j)
    n = len(a.nodes)
    running = a.end_s >= config.window_end_s
    base = a.state.split(" ")[0]
    outcome = "running" if running else _outcome(a.reason, base)
    failing = 0
    if a.reason == "hw" and a.fail_node in a.nodes:
        failing = a.nodes.index(a.fail_node)
    elif outcome in ("app", "oom"):
        failing = int(rng.integers(0, n))
    pods = []
    for i, node in enumerate(a.nodes):
        start = a.start_s + (0 if i == 0 else int(rng.integers(0, 16)))
        pod_name, labels, owner = _identity(rng, kind, name, namespace, i, a.number, job_uid)
        pod = _Pod(
            namespace=namespace,
            name=pod_name,
            uid=_uid(rng),
            node=fleet.names[node],
            labels=labels,
            owner=owner,
            created=a.start_s - 8,
            start=start,
            finish=None,
            container_id="containerd://" + "".join(f"{x:016x}" for x in rng.integers(0, 2**62, 4)),
            gpus=fleet.gpus_per_node,
        )
        if outcome != "running":
            _terminate(rng, pod, outcome, a.end_s, is_failing=i == failing)
        pods.append(pod)
    state = {"app": "FAILED", "gpu": "FAILED", "oom": "OUT_OF_MEMORY", "node": "NODE_FAIL"}.get(
        outcome
    )
    return pods, state, outcome in ("app", "gpu")


def _outcome(reason: str, state: str) -> str:
    if reason == "hw":
        return "node" if state == "NODE_FAIL" else "gpu"
    if reason == "app":
        return "app"
    if reason == "oom":
        return "oom"
    if reason == "timeout":
        return "timeout"
    return "complete"


def _terminate(
    rng: np.random.Generator, pod: _Pod, outcome: str, end: int, *, is_failing: bool
) -> None:
    later = end + int(rng.integers(1, 31))
    if outcome == "complete":
        pod.finish, pod.exit_code, pod.reason = (
            max(end - int(rng.integers(0, 5)), pod.start),
            0,
            ("Completed"),
        )
    elif outcome == "timeout":
        pod.finish = end if is_failing else later
        pod.exit_code, pod.reason = 137, "Error"
        pod.pod_reason = "DeadlineExceeded"
        pod.pod_message = "Pod was active on the node longer than the specified deadline"
    elif not is_failing:
        pod.finish, pod.exit_code, pod.reason = later, 143, "Error"
    elif outcome == "oom":
        pod.finish, pod.exit_code, pod.reason = end, 137, "OOMKilled"
    elif outcome == "node":
        pod.finish, pod.exit_code, pod.reason = end, 137, "ContainerStatusUnknown"
        pod.message = "The container could not be located when the pod was terminated"
        pod.disruption = True
    else:  # app or gpu: a Python exception ends the rank
        pod.finish, pod.exit_code, pod.reason = end, 1, "Error"
        pod.message = (
            "RuntimeError: CUDA error: unspecified launch failure"
            if outcome == "gpu"
            else "ValueError: loss is NaN at step 48213"
        )
    pod.finish = max(pod.finish or end, pod.start)


def _identity(
    rng: np.random.Generator,
    kind: str,
    name: str,
    namespace: str,
    i: int,
    number: int,
    job_uid: str,
) -> tuple[str, dict[str, str], dict[str, Any]]:
    if kind == "JobSet":
        child = f"{name}-workers-0"
        suffix = "".join(_SUFFIX_CHARS[k] for k in rng.integers(0, len(_SUFFIX_CHARS), 5))
        labels = {
            "batch.kubernetes.io/controller-uid": job_uid,
            "batch.kubernetes.io/job-completion-index": str(i),
            "batch.kubernetes.io/job-name": child,
            "controller-uid": job_uid,
            "job-name": child,
            "jobset.sigs.k8s.io/job-index": "0",
            "jobset.sigs.k8s.io/jobset-name": name,
            "jobset.sigs.k8s.io/replicatedjob-name": "workers",
            "jobset.sigs.k8s.io/replicatedjob-replicas": "1",
            "jobset.sigs.k8s.io/restart-attempt": str(number - 1),
        }
        owner = {"apiVersion": "batch/v1", "kind": "Job", "name": child, "uid": job_uid}
        return f"{child}-{i}-{suffix}", labels, owner
    replica, index = ("master", 0) if i == 0 else ("worker", i - 1)
    labels = {
        "training.kubeflow.org/job-name": name,
        "training.kubeflow.org/operator-name": "pytorchjob-controller",
        "training.kubeflow.org/replica-index": str(index),
        "training.kubeflow.org/replica-type": replica,
    }
    if replica == "master":
        labels["training.kubeflow.org/job-role"] = "master"
    owner = {"apiVersion": "kubeflow.org/v1", "kind": "PyTorchJob", "name": name, "uid": job_uid}
    return f"{name}-{replica}-{index}", labels, owner


def _uid(rng: np.random.Generator) -> str:
    a, b, c, d = (int(x) for x in rng.integers(0, 2**32, 4, dtype=np.uint64))
    variant = f"{8 | (c >> 30):x}{(c >> 16) & 0xFFF:03x}"
    return f"{a:08x}-{b >> 16:04x}-4{b & 0xFFF:03x}-{variant}-{c & 0xFFFF:04x}{d:08x}"


def _pod_status(pod: _Pod, at: int) -> dict[str, Any]:
    """Return the pod's ``status`` at time ``at``: phase, conditions, its container's state."""
    done = pod.finish is not None and pod.finish <= at
    status_state: dict[str, Any]
    if done:
        terminated: dict[str, Any] = {
            "containerID": pod.container_id,
            "exitCode": pod.exit_code,
            "finishedAt": iso(pod.finish or at),
            "reason": pod.reason,
            "startedAt": iso(pod.start),
        }
        if pod.message:
            terminated["message"] = pod.message
        status_state = {"terminated": terminated}
        phase = "Succeeded" if pod.exit_code == 0 else "Failed"
    else:
        status_state = {"running": {"startedAt": iso(pod.start)}}
        phase = "Running"
    conditions = [
        {
            "lastProbeTime": None,
            "lastTransitionTime": iso(pod.start - 3),
            "status": "True",
            "type": "PodScheduled",
        },
        {
            "lastProbeTime": None,
            "lastTransitionTime": iso(pod.start),
            "status": str(not done),
            "type": "Ready",
        },
    ]
    if done and pod.disruption:
        conditions.append(
            {
                "lastProbeTime": None,
                "lastTransitionTime": iso(pod.finish or at),
                "message": "Taint manager: deleting due to NoExecute taint",
                "reason": "DeletionByTaintManager",
                "status": "True",
                "type": "DisruptionTarget",
            }
        )
    status: dict[str, Any] = {
        "conditions": conditions,
        "containerStatuses": [
            {
                "containerID": pod.container_id,
                "image": IMAGE,
                "imageID": IMAGE_ID,
                "lastState": {},
                "name": CONTAINER,
                "ready": not done,
                "restartCount": 0,
                "started": not done,
                "state": status_state,
            }
        ],
        "hostIP": "10.0.0.1",
        "phase": phase,
        "qosClass": "Guaranteed",
        "startTime": iso(pod.start - 3),
    }
    if done and pod.pod_reason:
        status["reason"] = pod.pod_reason
        status["message"] = pod.pod_message
    return status


def _pod_object(pod: _Pod, at: int) -> dict[str, Any]:
    """Return the pod as ``kubectl get pods -o json`` shows it at time ``at``."""
    gpu = str(pod.gpus)
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "creationTimestamp": iso(pod.created),
            "labels": pod.labels,
            "name": pod.name,
            "namespace": pod.namespace,
            "ownerReferences": [pod.owner | {"blockOwnerDeletion": True, "controller": True}],
            "resourceVersion": str(pod.start),
            "uid": pod.uid,
        },
        "spec": {
            "containers": [
                {
                    "command": ["torchrun", "--nnodes=$(WORLD_SIZE)", "train.py"],
                    "image": IMAGE,
                    "name": CONTAINER,
                    "resources": {
                        "limits": {"nvidia.com/gpu": gpu},
                        "requests": {"nvidia.com/gpu": gpu},
                    },
                }
            ],
            "nodeName": pod.node,
            "restartPolicy": "Never",
            "schedulerName": "default-scheduler",
        },
        "status": _pod_status(pod, at),
    }


def _write_pod_dumps(config: SynthConfig, pods: list[_Pod], out: K8sOutput) -> None:
    w0 = config.window_start_s
    dumps: list[list[dict[str, Any]]] = [[] for _ in range(config.days + 1)]
    for pod in pods:
        first = max(1, -(-(pod.start - w0) // DAY_S))
        last = config.days if pod.finish is None else (pod.finish + DAY_S - 1 - w0) // DAY_S
        for d in range(first, min(last, config.days) + 1):
            dumps[d].append(_pod_object(pod, w0 + d * DAY_S))
            out.n_pod_rows += 1
    for d in range(1, config.days + 1):
        items = dumps[d]
        if config.hostile and d == 1:
            broken = {
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": {"name": "debug-shell-7xq2p", "namespace": "default"},
                "spec": {"nodeName": "gpu0001"},
                "status": {"phase": "Running"},
            }
            items = [broken, *items]
            out.n_bad_pods += 1
        stamp = iso(w0 + d * DAY_S).replace("-", "").replace(":", "")
        doc = {
            "apiVersion": "v1",
            "items": items,
            "kind": "List",
            "metadata": {"resourceVersion": ""},
        }
        out.pods[f"pods_{stamp}.json"] = json.dumps(doc, indent=4, sort_keys=True) + "\n"


def _event_base(rng: np.random.Generator, name: str, namespace: str, at: int) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {
            "creationTimestamp": iso(at),
            "name": f"{name}.{int(rng.integers(0, 2**62)):016x}",
            "namespace": namespace,
            "resourceVersion": str(at),
            "uid": _uid(rng),
        },
    }


def _scheduled_event(rng: np.random.Generator, pod: _Pod) -> dict[str, Any]:
    at = pod.start - 5
    micro = f"{iso(at)[:-1]}.{int(rng.integers(0, 10**6)):06d}Z"
    return _event_base(rng, pod.name, pod.namespace, at) | {
        "action": "Binding",
        "eventTime": micro,
        "firstTimestamp": None,
        "involvedObject": {
            "apiVersion": "v1",
            "kind": "Pod",
            "name": pod.name,
            "namespace": pod.namespace,
            "uid": pod.uid,
        },
        "lastTimestamp": None,
        "message": f"Successfully assigned {pod.namespace}/{pod.name} to {pod.node}",
        "reason": "Scheduled",
        "reportingComponent": "default-scheduler",
        "reportingInstance": "default-scheduler-ctrl0001",
        "source": {},
        "type": "Normal",
    }


def _started_event(rng: np.random.Generator, pod: _Pod) -> dict[str, Any]:
    return _event_base(rng, pod.name, pod.namespace, pod.start) | {
        "count": 1,
        "eventTime": None,
        "firstTimestamp": iso(pod.start),
        "involvedObject": {
            "apiVersion": "v1",
            "fieldPath": f"spec.containers{{{CONTAINER}}}",
            "kind": "Pod",
            "name": pod.name,
            "namespace": pod.namespace,
            "uid": pod.uid,
        },
        "lastTimestamp": iso(pod.start),
        "message": f"Started container {CONTAINER}",
        "reason": "Started",
        "reportingComponent": "kubelet",
        "reportingInstance": pod.node,
        "source": {"component": "kubelet", "host": pod.node},
        "type": "Normal",
    }


def _eviction_event(rng: np.random.Generator, pod: _Pod) -> dict[str, Any]:
    at = pod.finish or pod.start
    return _event_base(rng, pod.name, pod.namespace, at) | {
        "count": 1,
        "eventTime": None,
        "firstTimestamp": iso(at),
        "involvedObject": {
            "apiVersion": "v1",
            "kind": "Pod",
            "name": pod.name,
            "namespace": pod.namespace,
            "uid": pod.uid,
        },
        "lastTimestamp": iso(at),
        "message": f"Marking for deletion Pod {pod.namespace}/{pod.name}",
        "reason": "TaintManagerEviction",
        "reportingComponent": "taint-eviction-controller",
        "reportingInstance": "",
        "source": {"component": "taint-eviction-controller"},
        "type": "Normal",
    }


def _oom_event(rng: np.random.Generator, pod: _Pod) -> dict[str, Any]:
    at = pod.finish or pod.start
    pid = int(rng.integers(1000, 4_000_000))
    return _event_base(rng, pod.node, "default", at) | {
        "count": 1,
        "eventTime": None,
        "firstTimestamp": iso(at),
        "involvedObject": {"kind": "Node", "name": pod.node, "uid": pod.node},
        "lastTimestamp": iso(at),
        "message": (
            f"Memory cgroup out of memory: Killed process {pid} (python) total-vm:812345676kB, "
            "anon-rss:503316480kB, file-rss:0kB, shmem-rss:0kB, UID:0 pgtables:985432kB "
            "oom_score_adj:-997"
        ),
        "reason": "OOMKilling",
        "reportingComponent": "kernel-monitor",
        "reportingInstance": pod.node,
        "source": {"component": "kernel-monitor", "host": pod.node},
        "type": "Warning",
    }


def _node_event(rng: np.random.Generator, node: str, at: int, *, ready: bool) -> dict[str, Any]:
    status = "NodeReady" if ready else "NodeNotReady"
    source = {"component": "kubelet", "host": node} if ready else {"component": "node-controller"}
    return _event_base(rng, node, "default", at) | {
        "count": 1,
        "eventTime": None,
        "firstTimestamp": iso(at),
        "involvedObject": {"apiVersion": "v1", "kind": "Node", "name": node, "uid": node},
        "lastTimestamp": iso(at),
        "message": f"Node {node} status is now: {status}",
        "reason": status,
        "reportingComponent": source["component"],
        "reportingInstance": node if ready else "",
        "source": source,
        "type": "Normal",
    }


def _write_event_dumps(
    config: SynthConfig,
    rng: np.random.Generator,
    events: list[tuple[int, dict[str, Any]]],
    out: K8sOutput,
) -> None:
    w0, w1 = config.window_start_s, config.window_end_s
    by_day: dict[int, list[tuple[int, dict[str, Any]]]] = {}
    for at, event in events:
        if w0 <= at < w1:
            by_day.setdefault((at - w0) // DAY_S, []).append((at, event))
    for day in sorted(by_day):
        items = [e for _, e in sorted(by_day[day], key=lambda x: (x[0], x[1]["metadata"]["name"]))]
        out.n_event_rows += len(items)
        if config.hostile and day == min(by_day):
            bad = dict(items[0])
            bad["firstTimestamp"] = "2026-13-40T99:00:00Z"
            bad["metadata"] = dict(bad["metadata"]) | {"uid": _uid(rng)}
            items = [*items, bad]
            out.n_bad_events += 1
        stamp = iso(w0 + day * DAY_S)[:10].replace("-", "")
        doc = {
            "apiVersion": "v1",
            "items": items,
            "kind": "List",
            "metadata": {"resourceVersion": ""},
        }
        out.events[f"events_{stamp}.json"] = json.dumps(doc, indent=4, sort_keys=True) + "\n"
