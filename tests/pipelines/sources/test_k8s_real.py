"""Kubernetes events as users pasted them in public issue threads (samples/kubectl/, provenance
in its README): scheduler events of the events.k8s.io recorder, with only ``eventTime`` set.
Expectations are read off the pastes by hand.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import pytest
import yaml

from pipelines.sources import k8s_events
from pipelines.sources.common import Parsed

NOW = datetime(2026, 9, 1, tzinfo=UTC)
SAMPLES = Path(__file__).parent / "samples" / "kubectl"
SCHEDULED = "kubernetes_90482_scheduled_k8s1.17"
FAILED_SCHEDULING = "botkube_548_failedscheduling"


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
        "line_no", "namespace", "involved_kind", "event_reason", "event_type", "count",
        "first_ts", "last_ts", "event_time_ts", "created_ts", "source_component", "source_host",
        "node",
    ).rows() == [
        (4, "montoring", "Pod", "FailedScheduling", "Warning", None, None, None,
         datetime(2021, 11, 29, 2, 56, 10, 265245, tzinfo=UTC),
         datetime(2021, 11, 29, 2, 56, 10, tzinfo=UTC), "default-scheduler",
         "default-scheduler-master03", None),
    ]  # fmt: skip
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
