"""Parse ``kubectl get pods -A -o json`` snapshots into ``raw_k8s_pods`` rows (container runs).

A pod's ``status.containerStatuses[]`` tells, per container, the current run (``state``:
``running`` / ``terminated`` / ``waiting``) and the run before it (``lastState.terminated``) with
``exitCode``, ``signal``, ``reason`` (``Completed``, ``Error``, ``OOMKilled``,
``ContainerStatusUnknown``...), ``startedAt`` and ``finishedAt``. Each of them becomes one row, with
the pod's node, phase, status reason (``Evicted``, ``DeadlineExceeded``, ``NodeLost``...), the
``DisruptionTarget`` condition's reason, and the job it belongs to:

- JobSet (``jobset.sigs.k8s.io/jobset-name``; the attempt from ``jobset.sigs.k8s.io/restart-attempt``),
- Kubeflow PyTorchJob and the other training jobs (``training.kubeflow.org/job-name`` with
  ``replica-type`` / ``replica-index``),
- a plain batch Job (``batch.kubernetes.io/job-name`` or ``job-name``).

A pod without container statuses yet (``Pending``) gives one row without a run. The snapshot time
comes from a file name ending ``_<YYYYmmddTHHMMSSZ>.json``; staging keeps the latest version of
every run (same pod ``uid``, container and start) across snapshots.
"""  # noqa: E501

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import polars as pl

from pipelines.ingest.sources.common import (
    Parsed,
    empty_file_reject,
    empty_rows,
    in_future,
    parsed_from,
    rejects_frame,
    utc_now,
    with_reasons,
)
from pipelines.ingest.sources.kube_json import (
    compact,
    dig,
    kube_time,
    list_items,
    snapshot_time,
    text_or_none,
)

if TYPE_CHECKING:
    from datetime import datetime

SCHEMA: dict[str, pl.DataType] = {
    "source_file": pl.String(),
    "line_no": pl.Int64(),
    "snapshot_ts": pl.Datetime("us", "UTC"),
    "namespace": pl.String(),
    "pod_name": pl.String(),
    "pod_uid": pl.String(),
    "node_name": pl.String(),
    "phase": pl.String(),
    "pod_reason": pl.String(),
    "pod_message": pl.String(),
    "disruption_reason": pl.String(),
    "created_ts": pl.Datetime("us", "UTC"),
    "deletion_ts": pl.Datetime("us", "UTC"),
    "pod_start_ts": pl.Datetime("us", "UTC"),
    "owner_kind": pl.String(),
    "owner_name": pl.String(),
    "job_kind": pl.String(),
    "job_name": pl.String(),
    "replica_type": pl.String(),
    "replica_index": pl.Int32(),
    "completion_index": pl.Int32(),
    "restart_attempt": pl.Int32(),
    "container_name": pl.String(),
    "gpu_limit": pl.Int32(),
    "restart_count": pl.Int32(),
    "run": pl.String(),
    "container_state": pl.String(),
    "started_ts": pl.Datetime("us", "UTC"),
    "finished_ts": pl.Datetime("us", "UTC"),
    "exit_code": pl.Int32(),
    "signal": pl.Int32(),
    "termination_reason": pl.String(),
    "termination_message": pl.String(),
    "waiting_reason": pl.String(),
}

JOBSET = "jobset.sigs.k8s.io/"
KUBEFLOW = "training.kubeflow.org/"
GPU_RESOURCE = "nvidia.com/gpu"
_OPERATOR_KINDS = {
    "pytorchjob-controller": "PyTorchJob",
    "tfjob-controller": "TFJob",
    "mpijob-controller": "MPIJob",
    "xgboostjob-controller": "XGBoostJob",
    "paddlejob-controller": "PaddleJob",
    "jaxjob-controller": "JAXJob",
}
_TEXT = (
    "namespace",
    "pod_name",
    "pod_uid",
    "node_name",
    "phase",
    "pod_reason",
    "pod_message",
    "disruption_reason",
    "created_text",
    "deletion_text",
    "pod_start_text",
    "owner_kind",
    "owner_name",
    "job_kind",
    "job_name",
    "replica_type",
    "replica_index_text",
    "completion_index_text",
    "restart_attempt_text",
    "container_name",
    "gpu_limit_text",
    "restart_count_text",
    "run",
    "container_state",
    "started_text",
    "finished_text",
    "exit_code_text",
    "signal_text",
    "termination_reason",
    "termination_message",
    "waiting_reason",
)
_TIMES = {
    "created_text": "created_ts",
    "deletion_text": "deletion_ts",
    "pod_start_text": "pod_start_ts",
    "started_text": "started_ts",
    "finished_text": "finished_ts",
}
_INTS = {
    "replica_index_text": "replica_index",
    "completion_index_text": "completion_index",
    "restart_attempt_text": "restart_attempt",
    "gpu_limit_text": "gpu_limit",
    "restart_count_text": "restart_count",
    "exit_code_text": "exit_code",
    "signal_text": "signal",
}
_MESSAGE_LIMIT = 500


def parse(data: bytes, *, source_file: str, now: datetime | None = None) -> Parsed:
    """Parse one ``kubectl get pods -A -o json`` snapshot.

    Parameters
    ----------
    data
        The file's bytes.
    source_file
        Path recorded on every row and reject; a name ending ``_<YYYYmmddTHHMMSSZ>.json`` gives
        ``snapshot_ts``.
    now
        Reference time for the "not in the future" check (default: current UTC time).

    Returns
    -------
    Parsed
        ``rows`` with the ``raw_k8s_pods`` columns (:data:`SCHEMA`), one per container run:
        the pod (``namespace``, ``pod_name``, ``pod_uid``, ``node_name``, ``phase``,
        ``pod_reason``, ``pod_message``, ``disruption_reason``, ``created_ts``, ``deletion_ts``,
        ``pod_start_ts``, controller ``owner_kind`` / ``owner_name``), its job (``job_kind``:
        ``JobSet``, ``PyTorchJob``..., ``Job``; ``job_name``, ``replica_type``, ``replica_index``,
        ``completion_index``, ``restart_attempt``) and the run (``container_name``,
        ``gpu_limit`` from the container's ``nvidia.com/gpu`` limit, ``restart_count``, ``run``:
        ``current`` or ``last``; ``container_state``; ``started_ts``, ``finished_ts``,
        ``exit_code``, ``signal``, ``termination_reason``, ``termination_message`` (cut at 500
        characters) and ``waiting_reason``). ``line_no`` is the line of the pod's opening brace.

    Notes
    -----
    Rejects (one per pod and problem): a file that is not a list of pods (one reject at the
    offending line; pods read before a JSON syntax error are kept), an item that is not an
    object or has no ``metadata.name`` / ``metadata.uid``, a malformed time or integer (exit
    code, signal, restart count, indexes, GPU limit), or a time in the future.

    Examples
    --------
    >>> pod = (
    ...     '{"metadata": {"name": "llm-0", "namespace": "ml", "uid": "u1", '
    ...     '"labels": {"jobset.sigs.k8s.io/jobset-name": "llm", '
    ...     '"jobset.sigs.k8s.io/restart-attempt": "1"}}, "spec": {"nodeName": "gpu0002"}, '
    ...     '"status": {"phase": "Failed", "containerStatuses": [{"name": "trainer", '
    ...     '"restartCount": 0, "state": {"terminated": {"exitCode": 137, "reason": '
    ...     '"OOMKilled", "startedAt": "2026-06-01T00:00:00Z", '
    ...     '"finishedAt": "2026-06-01T02:00:00Z"}}}]}}'
    ... )
    >>> text = '{"kind": "List", "items": [' + pod + "]}"
    >>> rows = parse(text.encode(), source_file="pods_20260601T030000Z.json").rows
    >>> rows.select("job_kind", "restart_attempt", "termination_reason", "exit_code").row(0)
    ('JobSet', 1, 'OOMKilled', 137)
    """
    if not data:
        return Parsed(empty_rows(SCHEMA), empty_file_reject(source_file), 0)
    now_utc = utc_now(now)
    found = list_items(data, kind="Pod")
    columns: dict[str, list[str | None]] = {name: [] for name in _TEXT}
    line_nos: list[int] = []
    raws: list[str] = []
    bad_item: list[str | None] = []
    for item, line_no in zip(found.items, found.line_nos, strict=True):
        problem = _item_problem(item)
        runs = [{}] if problem else _pod_rows(item)
        pod_raw = compact(item)
        for run in runs:
            line_nos.append(line_no)
            raws.append(pod_raw)
            bad_item.append(problem)
            for name in _TEXT:
                columns[name].append(run.get(name))
    frame = pl.DataFrame(
        {
            "line_no": pl.Series(line_nos, dtype=pl.Int64),
            "line": pl.Series(raws, dtype=pl.String),
            "item_problem": pl.Series(bad_item, dtype=pl.String),
            **{name: pl.Series(values, dtype=pl.String) for name, values in columns.items()},
        }
    ).lazy()
    snapshot = snapshot_time(source_file)
    frame = frame.with_columns(
        *[kube_time(pl.col(text)).alias(ts) for text, ts in _TIMES.items()],
        *[pl.col(text).cast(pl.Int32, strict=False).alias(n) for text, n in _INTS.items()],
        pl.lit(snapshot, dtype=pl.Datetime("us", "UTC")).alias("snapshot_ts"),
        pl.col("termination_message").str.slice(0, _MESSAGE_LIMIT),
    )
    checked = with_reasons(
        frame,
        [
            (pl.col("item_problem").is_not_null(), pl.col("item_problem")),
            *[
                (
                    pl.col(text).is_not_null() & pl.col(ts).is_null(),
                    pl.format(f"malformed {text.removesuffix('_text')} time '{{}}'", pl.col(text)),
                )
                for text, ts in _TIMES.items()
            ],
            *[
                (
                    pl.col(text).is_not_null() & pl.col(n).is_null(),
                    pl.format(f"malformed {n} '{{}}'", pl.col(text)),
                )
                for text, n in _INTS.items()
            ],
            *[
                (in_future(pl.col(ts), now_utc), pl.format(f"{ts} in the future: {{}}", pl.col(ts)))
                for ts in _TIMES.values()
            ],
        ],
    )
    parsed = parsed_from(checked, schema=SCHEMA, source_file=source_file, n_ignored=0)
    rejects = parsed.rejects.unique(subset=["line_no", "reason"], keep="first", maintain_order=True)
    if found.problems:
        extra = rejects_frame([(source_file, n, raw, why) for n, raw, why in found.problems])
        rejects = pl.concat([rejects, extra])
    return Parsed(parsed.rows, rejects, parsed.n_ignored)


def _item_problem(item: Any) -> str | None:
    if not isinstance(item, dict):
        return "item is not a JSON object"
    if text_or_none(dig(item, "metadata", "name")) is None:
        return "pod without metadata.name"
    if text_or_none(dig(item, "metadata", "uid")) is None:
        return "pod without metadata.uid"
    return None


def _pod_rows(pod: dict[str, Any]) -> list[dict[str, str | None]]:
    """One dict of text fields per container run of ``pod`` (one without a run if none)."""
    meta, spec, status = pod.get("metadata") or {}, pod.get("spec") or {}, pod.get("status") or {}
    labels_raw = meta.get("labels")
    labels: dict[str, Any] = labels_raw if isinstance(labels_raw, dict) else {}
    owner = _controller(meta.get("ownerReferences"))
    conditions_raw = status.get("conditions")
    conditions: list[Any] = conditions_raw if isinstance(conditions_raw, list) else []
    disruption = next(
        (
            c.get("reason")
            for c in conditions
            if isinstance(c, dict)
            and c.get("type") == "DisruptionTarget"
            and c.get("status") == "True"
        ),
        None,
    )
    base: dict[str, str | None] = {
        "namespace": text_or_none(meta.get("namespace")),
        "pod_name": text_or_none(meta.get("name")),
        "pod_uid": text_or_none(meta.get("uid")),
        "node_name": text_or_none(spec.get("nodeName")),
        "phase": text_or_none(status.get("phase")),
        "pod_reason": text_or_none(status.get("reason")),
        "pod_message": text_or_none(status.get("message")),
        "disruption_reason": text_or_none(disruption),
        "created_text": text_or_none(meta.get("creationTimestamp")),
        "deletion_text": text_or_none(meta.get("deletionTimestamp")),
        "pod_start_text": text_or_none(status.get("startTime")),
        "owner_kind": text_or_none(owner.get("kind")),
        "owner_name": text_or_none(owner.get("name")),
        **_job_identity(labels, owner),
    }
    gpus = _gpu_limits(spec.get("containers"))
    statuses = status.get("containerStatuses")
    if not isinstance(statuses, list) or not statuses:
        return [base]
    rows = []
    for cs in statuses:
        if not isinstance(cs, dict):
            continue
        name = text_or_none(cs.get("name"))
        common = base | {
            "container_name": name,
            "gpu_limit_text": gpus.get(name or ""),
            "restart_count_text": text_or_none(cs.get("restartCount")),
        }
        state_raw = cs.get("state")
        state: dict[str, Any] = state_raw if isinstance(state_raw, dict) else {}
        kind = next((k for k in ("terminated", "running", "waiting") if k in state), None)
        current = state.get(kind) if kind else None
        rows.append(common | {"run": "current", "container_state": kind} | _run(current))
        last = dig(cs, "lastState", "terminated")
        if isinstance(last, dict):
            rows.append(common | {"run": "last", "container_state": "terminated"} | _run(last))
    return rows or [base]


def _run(state: Any) -> dict[str, str | None]:
    if not isinstance(state, dict):
        return {}
    return {
        "started_text": text_or_none(state.get("startedAt")),
        "finished_text": text_or_none(state.get("finishedAt")),
        "exit_code_text": text_or_none(state.get("exitCode")),
        "signal_text": text_or_none(state.get("signal")),
        "termination_reason": text_or_none(state.get("reason")) if "exitCode" in state else None,
        "termination_message": text_or_none(state.get("message")) if "exitCode" in state else None,
        "waiting_reason": None
        if "exitCode" in state or "startedAt" in state
        else text_or_none(state.get("reason")),
    }


# a Kubernetes ownerReference as parsed from the JSON: a dict is the edge
def _controller(refs: Any) -> dict[str, Any]:
    if not isinstance(refs, list):
        return {}
    good = [r for r in refs if isinstance(r, dict)]
    return next((r for r in good if r.get("controller")), good[0] if good else {})


def _job_identity(labels: dict[str, Any], owner: dict[str, Any]) -> dict[str, str | None]:
    """Job kind, name, replica and attempt labels of the pod."""
    label = {str(k): text_or_none(v) for k, v in labels.items()}
    out: dict[str, str | None] = {
        "completion_index_text": label.get("batch.kubernetes.io/job-completion-index"),
    }
    if label.get(JOBSET + "jobset-name"):
        return out | {
            "job_kind": "JobSet",
            "job_name": label[JOBSET + "jobset-name"],
            "replica_type": label.get(JOBSET + "replicatedjob-name"),
            "replica_index_text": label.get(JOBSET + "job-index"),
            "restart_attempt_text": label.get(JOBSET + "restart-attempt"),
        }
    kf_name = label.get(KUBEFLOW + "job-name")
    legacy = label.get("group-name") == "kubeflow.org"
    if kf_name or legacy:
        owner_kind = owner.get("kind")
        operator = label.get(KUBEFLOW + "operator-name") or ""
        kind = owner_kind if owner_kind not in (None, "Job", "Pod") else None
        return out | {
            "job_kind": kind or _OPERATOR_KINDS.get(operator, "PyTorchJob"),
            "job_name": kf_name or label.get("job-name"),
            "replica_type": label.get(KUBEFLOW + "replica-type") or label.get("replica-type"),
            "replica_index_text": label.get(KUBEFLOW + "replica-index")
            or label.get("replica-index"),
        }
    job_name = label.get("batch.kubernetes.io/job-name") or label.get("job-name")
    if job_name or owner.get("kind") == "Job":
        return out | {"job_kind": "Job", "job_name": job_name or text_or_none(owner.get("name"))}
    return out | {"job_kind": None, "job_name": None}


def _gpu_limits(containers: Any) -> dict[str, str | None]:
    """Container name → its ``nvidia.com/gpu`` limit (or request) as text."""
    if not isinstance(containers, list):
        return {}
    out: dict[str, str | None] = {}
    for c in containers:
        if not isinstance(c, dict):
            continue
        resources = c.get("resources") if isinstance(c.get("resources"), dict) else {}
        value = dig(resources, "limits", GPU_RESOURCE) or dig(resources, "requests", GPU_RESOURCE)
        out[str(c.get("name"))] = text_or_none(value)
    return out
