"""Failure events from every source, merged by the documented rules, each with its end.

One hand-built warehouse with no fleet register and no install times: each node is one case, and
every expected row below is read off its rows by the rules of docs/data_contract.md §5 (default
windows: failure_merge_s 900 s, ticket_match_s 2 days, incident_gap_s 600 s).
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import duckdb
import pytest

from pipelines import warehouse
from pipelines.analysis.lives_coverage import failures_outside_lives
from tests.sql.test_views import _insert, _job

W0 = datetime(2026, 6, 1, tzinfo=UTC)
W1 = W0 + timedelta(days=10)
DAY = timedelta(days=1)
HOUR = timedelta(hours=1)
MINUTE = timedelta(minutes=1)
SECOND = timedelta(seconds=1)
T1 = W0 + DAY + 10 * HOUR  # n1's Xid 79
T2 = W0 + 2 * DAY  # n2 stops responding
T7 = W0 + 7 * DAY  # n7's DCGM day
T9 = W0 + 9 * DAY  # n9's NVLink failure
T10 = W0 + DAY  # n10's two Xid 79s
T11 = W0 + 3 * DAY  # n11's DCGM day


def windowed_warehouse(start: datetime, end: datetime) -> duckdb.DuckDBPyConnection:
    """An in-memory warehouse with the schema applied and the observation window set."""
    con = duckdb.connect()
    con.execute("set TimeZone = 'UTC'")
    warehouse.apply_schema(con)
    con.execute(
        "insert into cfg_params (name, value) "
        "values ('window_start_epoch_s', $a), ('window_end_epoch_s', $b)",
        {"a": start.timestamp(), "b": end.timestamp()},
    )
    return con


def _xid(host: str, ts: datetime, bus: str, code: int) -> dict[str, object]:
    return {
        "host": host,
        "ts": ts,
        "pci_bus_id": bus,
        "xid": code,
        "pid": None,
        "process_name": None,
        "message": "m",
        "log_format": "syslog",
    }


def _node_event(
    node: str, start: datetime, end: datetime | None, state: str, base: str, reason: str
) -> dict[str, object]:
    return {
        "cluster": "alpha",
        "node_name": node,
        "nodes": [node],
        "start_ts": start,
        "end_ts": end,
        "state": state,
        "state_base": base,
        "event_reason": reason,
        "user_name": "root(0)",
    }


def _k8s(uid: str, node: str, reason: str, first: datetime, last: datetime) -> dict[str, object]:
    return {
        "namespace": "default",
        "event_name": f"{node}.{uid}",
        "event_uid": uid,
        "involved_kind": "Node",
        "involved_name": node,
        "event_reason": reason,
        "message": f"Node {node} status is now: {reason}",
        "event_type": "Normal",
        "count": 1,
        "first_ts": first,
        "last_ts": last,
        "source_component": "node-controller",
        "node": node,
    }


def _snapshot(host: str, index: int, bus: str) -> dict[str, object]:
    return {
        "host": host,
        "snapshot_ts": W0,
        "gpu_index": index,
        "pci_bus_id": bus,
        "serial": f"{host}-{index}",
        "uuid": f"GPU-{host}-{index}",
        "gpu_name": "H100",
    }


def _dcgm(hour: int, dbe: float, *, host: str = "n7", uuid: str = "GPU-n7-0") -> dict[str, object]:
    return {
        "host": host,
        "ts": (T7 if host == "n7" else T11) + hour * HOUR,
        "gpu_index": 0,
        "uuid": uuid,
        "pci_bus_id": "0000:18:00",
        "ecc_dbe_volatile": dbe,
        "source_format": "prometheus",
    }


@pytest.fixture(scope="module")
def con() -> duckdb.DuckDBPyConnection:
    con = windowed_warehouse(W0, W1)
    _insert(
        con,
        "raw_inventory",
        [_snapshot(h, i, b) for h in ("n1", "n9", "n10") for i, b in enumerate(BUSES)],
    )
    _insert(
        con,
        "raw_xid_events",
        [
            _xid("n1", T1, "0000:2a:00", 79),
            _xid("n7", T7 + 3.5 * HOUR, "0000:18:00", 48),
            _xid("n9", T9 - 30 * SECOND, "0000:18:00", 74),
            _xid("n9", T9 + 5 * HOUR, "0000:2a:00", 62),
            _xid("n10", T10, "0000:18:00", 79),
            _xid("n10", T10 + 3 * HOUR, "0000:18:00", 79),
            _xid("n11", T11 + 3.75 * HOUR, "0000:18:00", 48),
        ],
    )
    _insert(
        con,
        "raw_node_events",
        [
            _node_event("n1", T1 + MINUTE, T1 + 30 * HOUR, "DRAIN", "drain", "NHC: Xid 79 fell"),
            _node_event("n2", T2, T2 + 20 * MINUTE, "DOWN*", "down", "Not responding"),
            _node_event(
                "n2", T2 + 20 * MINUTE, T2 + 10 * HOUR, "DRAIN", "drain", "PSU failure, no power"
            ),
            _node_event(
                "n3", W0 + 3 * DAY, W0 + 3 * DAY + 30 * MINUTE, "DRAIN", "drain", "Kill task failed"
            ),
            _node_event(
                "n3",
                W0 + 4 * DAY,
                W0 + 4 * DAY + 4 * HOUR,
                "DRAIN",
                "drain",
                "planned maintenance: firmware update",
            ),
            _node_event(
                "n6", W0 + 6 * DAY - 100 * SECOND, W0 + 6 * DAY + HOUR, "DOWN*", "down",
                "Not responding",
            ),
            _node_event("n9", T9, None, "DRAIN", "drain", "NHC: Xid 74 NVLink fatal error"),
        ],
    )  # fmt: skip
    _insert(
        con,
        "raw_slurm_jobs",
        [
            _job("1", ["n1"], T1 - 5 * HOUR, T1 + 2 * MINUTE, "NODE_FAIL"),
            _job("3", ["n3"], W0 + 4 * DAY - HOUR, W0 + 4 * DAY + HOUR, "NODE_FAIL"),
            _job("4", ["n5", "n4"], W0 + 5 * DAY - 3 * HOUR, W0 + 5 * DAY, "NODE_FAIL"),
            _job("5", ["n4"], W0 + 5 * DAY + 2 * HOUR, W0 + 5 * DAY + 3 * HOUR, "COMPLETED"),
            _job("6", ["n4", "n6"], W0 + 6 * DAY - 2 * HOUR, W0 + 6 * DAY, "NODE_FAIL"),
            _job("10", ["n10"], T10 + HOUR, T10 + 2 * HOUR, "COMPLETED"),
        ],
    )
    _insert(
        con,
        "raw_repairs",
        [
            {
                "ticket_id": "R1",
                "node": "n1",
                "component_class": "pcie",
                "slot": "gpu1",
                "serial_out": "a",
                "serial_in": "b",
                "opened_ts": T1 + DAY,
                "closed_ts": T1 + 29 * HOUR,
                "action": "replace",
                "description": "",
            }
        ],
    )
    _insert(
        con,
        "raw_k8s_events",
        [
            _k8s("u1", "n8", "NodeNotReady", W0 + 8 * DAY, W0 + 8 * DAY + 5 * MINUTE),
            _k8s("u2", "n8", "NodeReady", W0 + 8 * DAY + 2 * HOUR, W0 + 8 * DAY + 2 * HOUR),
        ],
    )
    # n7: hourly DCGM samples of its one GPU; the double-bit count rises at 03:00 and drops back at
    # 10:00 (a GPU reset clears the volatile counter)
    # n11: the 03:00 sample, its GPU's last, shows a DBE; the node is not scraped again until a new
    # GPU (another UUID) reports at 09:00
    _insert(
        con,
        "raw_dcgm_samples",
        [_dcgm(h, 2.0 if 3 <= h < 10 else 0.0) for h in range(13)]
        + [_dcgm(h, 1.0 if h == 3 else 0.0, host="n11", uuid="GPU-A") for h in range(4)]
        + [_dcgm(h, 0.0, host="n11", uuid="GPU-B") for h in range(9, 12)],
    )
    warehouse.create_views(con)
    return con


BUSES = ("0000:18:00", "0000:2a:00")
EVENT_COLUMNS = (
    "component_class, unit_id, failed_ts, ended_ts, end_source, end_status, sources, n_signals, "
    "xid, ticket_id, unit_inferred"
)


def _events(con: duckdb.DuckDBPyConnection, host: str) -> list[tuple[object, ...]]:
    return con.execute(
        f"select {EVENT_COLUMNS} from int_failure_events where host = $h order by failed_ts",
        {"h": host},
    ).fetchall()


def test_one_failure_seen_by_four_sources_is_one_event_ended_by_its_node_event(
    con: duckdb.DuckDBPyConnection,
) -> None:
    # Xid 79, the NHC drain a minute later, the job's NODE_FAIL, the ticket a day later (while the
    # drain is still on): one pcie failure of gpu1; the drain's end wins over the ticket's close
    assert _events(con, "n1") == [
        ("pcie", "n1/gpu1", T1, T1 + 30 * HOUR, "node_event", "ended",
         ["node_event", "scheduler", "ticket", "xid"], 4, 79, "R1", False),
    ]  # fmt: skip


def test_node_events_name_the_class_of_a_node_that_stopped_responding(
    con: duckdb.DuckDBPyConnection,
) -> None:
    # DOWN* Not responding (unknown), then the drain with the diagnosis (power) that it touches
    assert _events(con, "n2") == [
        ("power", "n2/power", T2, T2 + 10 * HOUR, "node_event", "ended", ["node_event"], 2,
         None, None, False),
    ]  # fmt: skip


def test_symptoms_and_planned_work_are_no_failures(con: duckdb.DuckDBPyConnection) -> None:
    # a Kill task failed drain, and a NODE_FAIL during a planned firmware update
    assert _events(con, "n3") == []
    assert con.execute(
        "select source, in_planned_work, is_evidence from int_failure_signals where host = 'n3' "
        "order by ts"
    ).fetchall() == [("node_event", False, True), ("scheduler", True, False)]


def test_node_lost_attempts_alone_go_to_their_first_node_else_join_a_nodes_failure(
    con: duckdb.DuckDBPyConnection,
) -> None:
    # job 4 (n5, n4) lost a node and nothing else saw it: its first node in sorted order, inferred;
    # back when job 5 started there. Job 6 (n4, n6) ended while n6 was not responding: n6's.
    assert _events(con, "n4") == [
        ("unknown", "n4/unknown", W0 + 5 * DAY, W0 + 5 * DAY + 2 * HOUR, "next_job", "ended",
         ["scheduler"], 1, None, None, True),
    ]  # fmt: skip
    assert _events(con, "n5") == []
    assert _events(con, "n6") == [
        ("unknown", "n6/unknown", W0 + 6 * DAY - 100 * SECOND, W0 + 6 * DAY + HOUR, "node_event",
         "ended", ["node_event", "scheduler"], 2, None, None, False),
    ]  # fmt: skip


def test_dcgm_double_bit_errors_and_their_xid_are_one_failure_ended_by_a_gpu_reset(
    con: duckdb.DuckDBPyConnection,
) -> None:
    # the 03:00 sample shows the DBE (seen until the 04:00 sample), Xid 48 at 03:30 falls inside;
    # the counter reset at 10:00 is the GPU back (DCGM is the node's only GPU list: slot gpu0)
    assert _events(con, "n7") == [
        ("gpu_memory", "n7/gpu0", T7 + 3 * HOUR, T7 + 10 * HOUR, "dcgm", "ended",
         ["dcgm", "xid"], 2, 48, None, False),
    ]  # fmt: skip


def test_a_gpus_last_dcgm_sample_shows_its_failure_until_the_node_reports_again(
    con: duckdb.DuckDBPyConnection,
) -> None:
    # the DBE sample at 03:00 is its GPU's last: seen until the node's next sample (09:00), so the
    # Xid 48 at 03:45 (beyond failure_merge_s of the sample) is the same failure; the new GPU's
    # first sample is its end
    assert _events(con, "n11") == [
        ("gpu_memory", "n11/gpu0", T11 + 3 * HOUR, T11 + 9 * HOUR, "dcgm", "ended",
         ["dcgm", "xid"], 2, 48, None, False),
    ]  # fmt: skip


def test_kubernetes_node_not_ready_ends_at_node_ready(con: duckdb.DuckDBPyConnection) -> None:
    assert _events(con, "n8") == [
        ("unknown", "n8/unknown", W0 + 8 * DAY, W0 + 8 * DAY + 2 * HOUR, "node_event", "ended",
         ["k8s_event"], 1, None, None, False),
    ]  # fmt: skip


def test_a_signal_while_the_node_is_down_belongs_to_that_outage(
    con: duckdb.DuckDBPyConnection,
) -> None:
    # Xid 74 on gpu0, the NHC drain still open at the end of the data, Xid 62 on gpu1 five hours
    # into it: one nvlink failure of gpu0, open
    assert _events(con, "n9") == [
        ("nvlink", "n9/gpu0", T9 - 30 * SECOND, None, "node_event", "open",
         ["node_event", "xid"], 3, 74, None, False),
    ]  # fmt: skip


def test_a_job_between_two_xids_makes_two_failures(con: duckdb.DuckDBPyConnection) -> None:
    # the second Xid 79 has no later evidence of the GPU back: end unknown
    assert _events(con, "n10") == [
        ("pcie", "n10/gpu0", T10, T10 + HOUR, "next_job", "ended", ["xid"], 1, 79, None, False),
        ("pcie", "n10/gpu0", T10 + 3 * HOUR, None, None, "unknown", ["xid"], 1, 79, None, False),
    ]  # fmt: skip


def test_repair_hours_come_from_the_ends(con: duckdb.DuckDBPyConnection) -> None:
    repairs = dict(
        con.execute(
            "select host, repair_h from int_failure_events where repair_h is not null"
        ).fetchall()
    )
    assert repairs == {
        "n1": 30.0, "n2": 10.0, "n4": 2.0, "n6": 1.0 + 100 / 3600, "n7": 7.0, "n8": 2.0,
        "n10": 1.0, "n11": 6.0,
    }  # fmt: skip


def test_the_fleet_comes_from_telemetry_with_a_gpu_count_per_node(
    con: duckdb.DuckDBPyConnection,
) -> None:
    nodes = con.execute(
        "select node, n_gpus, gpu_count_source, in_register, installed_ts from int_fleet_nodes "
        "order by node"
    ).fetchall()
    # nvidia-smi lists 2 GPUs on n1, n9, n10; DCGM 1 on n7 and n11; the others take the fleet's most
    # common count (2 on three nodes, 1 on two); no node is in a register: no install time known
    assert nodes == [
        ("n1", 2, "nvidia_smi", False, None),
        ("n10", 2, "nvidia_smi", False, None),
        ("n11", 1, "dcgm", False, None),
        ("n2", 2, "fleet_nodes", False, None),
        ("n3", 2, "fleet_nodes", False, None),
        ("n4", 2, "fleet_nodes", False, None),
        ("n5", 2, "fleet_nodes", False, None),
        ("n6", 2, "fleet_nodes", False, None),
        ("n7", 1, "dcgm", False, None),
        ("n8", 2, "fleet_nodes", False, None),
        ("n9", 2, "nvidia_smi", False, None),
    ]
    slots = con.execute(
        "select node, list(slot order by slot) from int_fleet_gpus where node in ('n2', 'n7') "
        "group by node order by node"
    ).fetchall()
    assert slots == [("n2", ["unseen1", "unseen2"]), ("n7", ["gpu0"])]


def test_every_failure_in_the_window_ends_a_life_of_unknown_age(
    con: duckdb.DuckDBPyConnection,
) -> None:
    failed = dict(
        con.execute(
            "select component_class, count(*) from int_component_lives where failed group by 1"
        ).fetchall()
    )
    assert failed == {"pcie": 3, "power": 1, "unknown": 3, "gpu_memory": 2, "nvlink": 1}
    assert con.execute(
        "select count(*) filter (where not in_lives) from fct_failure_events"
    ).fetchone() == (0,)
    assert failures_outside_lives(con) == []  # relia fit has nothing to say about them
    # no register, no failure before the window: every first life starts at W0 with age unknown
    first = con.execute(
        "select bool_and(not age_known), min(entry_h), max(entry_h) from int_component_lives "
        "where generation = 0"
    ).fetchone()
    assert first == (True, 0.0, 0.0)
    # n10/gpu0 after its second failure (end unknown: back at once) runs to the window end
    assert con.execute(
        "select generation, entry_h, exit_h, failed, age_known from int_component_lives "
        "where unit_id like 'n10/gpu0#%' and component_class = 'pcie' order by generation"
    ).fetchall() == [
        (0, 0.0, 24.0, True, False),
        (1, 0.0, 2.0, True, True),
        (2, 0.0, 9 * 24.0 - 3.0, False, True),
    ]
