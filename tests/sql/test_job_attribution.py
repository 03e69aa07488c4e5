"""Interruptions attributed to the failure events on their nodes (docs/data_contract.md §5, §7.3).

One hand-built warehouse, no fleet register, no tickets: each node is one case, and each expected
cause below is read off its rows by the rule (default windows: attribution 600 s before the
attempt's end to 300 s after, failure_merge_s 900 s). The failure events these cases rest on are
tested on their own in tests/sql/test_failure_events.py.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING

import pytest

from pipelines import warehouse
from tests.sql.test_failure_events import _dcgm, _node_event, _xid, windowed_warehouse
from tests.sql.test_views import _insert, _job

if TYPE_CHECKING:
    import duckdb

W0 = datetime(2026, 6, 1, tzinfo=UTC)
W1 = W0 + timedelta(days=10)
DAY = timedelta(days=1)
HOUR = timedelta(hours=1)
MINUTE = timedelta(minutes=1)
SECOND = timedelta(seconds=1)
T = W0 + 2 * DAY  # every case's failure instant, each on its own node
T11 = W0 + 3 * DAY  # the DCGM day of _dcgm(host="n11")


@pytest.fixture(scope="module")
def con() -> duckdb.DuckDBPyConnection:
    con = windowed_warehouse(W0, W1)
    _insert(
        con,
        "raw_xid_events",
        [
            # n1: a GPU falls off the bus; the health check drains the node 20 s later
            _xid("n1", T, "0000:2a:00", 79),
            # n9: an Xid 79 twelve minutes before the job's end: outside the interval
            _xid("n9", T - 12 * MINUTE, "0000:2a:00", 79),
            # n11: the DCGM sample of 03:00 saw a double-bit error; the Xid 48 follows at 03:45
            _xid("n11", T11 + 3.75 * HOUR, "0000:18:00", 48),
        ],
    )
    _insert(
        con,
        "raw_dcgm_samples",
        [_dcgm(h, v, host="n11", uuid="GPU-n11-0") for h, v in [(0, 0.0), (3, 1.0), (6, 1.0)]],
    )
    drained = T + 15 * MINUTE
    back = T + 6 * HOUR
    _insert(
        con,
        "raw_node_events",
        [
            _node_event("n1", T + 20 * SECOND, back, "DRAIN", "drain", "NHC: Xid 79: GPU 2 off"),
            # n2: slurmctld loses the node, an administrator names the NIC 15 minutes later
            _node_event("n2", T, drained, "DOWN*", "down", "Not responding"),
            _node_event("n2", drained, back, "DRAIN", "drain", "HCA mlx5_0 link down"),
            # n3: a software fault drains the node (no hardware part, no ticket)
            _node_event("n3", T, back, "DRAIN", "drain", "software fault: segfault in dataloader"),
            # n4 and n5: one node each of a two-node attempt, two classes
            _node_event("n4", T, back, "DRAIN", "drain", "NCCL watchdog timeout"),
            _node_event("n5", T, back, "DRAIN", "drain", "PSU failure, node lost power"),
            # n6: planned work (not a failure): a candidate of class maintenance
            _node_event("n6", T, back, "DRAIN", "drain", "planned maintenance: firmware update"),
            # n7: 'Not responding' alone names no class
            _node_event("n7", T, T + HOUR, "DOWN*", "down", "Not responding"),
            # n8: an application failure whose processes would not die (not a failure)
            _node_event("n8", T + 30 * SECOND, T + HOUR, "DRAIN", "drain", "Kill task failed"),
            # n10: down 20 minutes before the end (outside the interval), diagnosed inside it
            _node_event("n10", T - 20 * MINUTE, T - 5 * MINUTE, "DOWN*", "down", "Not responding"),
            _node_event(
                "n10", T - 5 * MINUTE, back, "DRAIN", "drain", "DIMM uncorrectable error (EDAC UE)"
            ),
        ],
    )
    end = T + MINUTE
    _insert(
        con,
        "raw_slurm_jobs",
        [
            _job("1", ["n1"], T - DAY, end, "FAILED", 1),
            _job("2", ["n2"], T - DAY, T + 2 * MINUTE, "NODE_FAIL"),
            _job("3", ["n3"], T - DAY, end, "FAILED", 1),
            _job("4", ["n4", "n5"], T - DAY, end, "FAILED", 1),
            _job("6", ["n6"], T - DAY, end, "FAILED", 1),
            _job("7", ["n7"], T - DAY, end, "NODE_FAIL"),
            _job("8", ["n8"], T - DAY, T, "FAILED", 1),
            _job("9", ["n9"], T - DAY, T, "FAILED", 1),
            _job("10", ["n10"], T - DAY, T, "NODE_FAIL"),
            _job("11", ["n11"], T11, T11 + 3.75 * HOUR + MINUTE, "FAILED", 1),
            _job("12", ["n12"], T - DAY, end, "NODE_FAIL"),
            _job("13", ["n13"], T - DAY, end, "OUT_OF_MEMORY"),
        ],
    )
    warehouse.create_views(con)
    return con


def test_each_interruption_gets_the_class_of_the_failure_on_its_nodes(
    con: duckdb.DuckDBPyConnection,
) -> None:
    rows = dict(
        (job, (cause, attribution))
        for job, cause, attribution in con.execute(
            "select job_id_raw, cause_class, attribution from int_job_interruptions"
        ).fetchall()
    )
    assert rows == {
        # an Xid run among the failure's sources
        "1": ("pcie", "hardware-confirmed"),
        # the drain names the NIC; 'Not responding' (class unknown) is the same failure
        "2": ("nic", "scheduler-only"),
        # a failure with no hardware part and no ticket
        "3": ("software", "scheduler-only"),
        # two failures of two classes on the attempt's nodes
        "4": ("ambiguous", "ambiguous"),
        # planned work is no failure: a candidate of class maintenance, as before
        "6": ("maintenance", "scheduler-only"),
        # the only failure names no class: evidence, as a node event was
        "7": ("unknown", "scheduler-only"),
        # a node event that is no failure is evidence without a class, as before
        "8": ("unknown", "scheduler-only"),
        # the Xid began 12 minutes before the end: out of the interval; no node event
        "9": ("unknown", "unattributed"),
        # the failure began before the interval, but its diagnosis (one of its signals) is in it
        "10": ("host_memory", "scheduler-only"),
        # the DCGM sample came hours before the Xid: the failure is still one, hardware-confirmed
        "11": ("gpu_memory", "hardware-confirmed"),
        # a node lost with no other signal: its own failure, class unknown
        "12": ("unknown", "scheduler-only"),
        "13": ("application", "application"),
    }


def test_an_attributed_interruption_names_its_failure(con: duckdb.DuckDBPyConnection) -> None:
    rows = con.execute(
        """
        select interruptions.job_id_raw, failures.component_class, failures.host
        from int_job_interruptions as interruptions
        inner join int_failure_events as failures
            on interruptions.failure_id = failures.failure_id
        order by interruptions.job_id_raw
        """
    ).fetchall()
    assert rows == [
        ("1", "pcie", "n1"),
        ("10", "host_memory", "n10"),
        ("11", "gpu_memory", "n11"),
        ("2", "nic", "n2"),
        ("3", "software", "n3"),
    ]
    unnamed = con.execute(
        "select job_id_raw from int_job_interruptions where failure_id is null order by 1"
    ).fetchall()
    assert [r[0] for r in unnamed] == ["12", "13", "4", "6", "7", "8", "9"]
