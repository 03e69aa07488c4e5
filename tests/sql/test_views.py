"""The views on a small hand-built fleet whose every life, incident and interruption is known."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import duckdb
import polars as pl
import pytest

from pipelines import warehouse

W0 = datetime(2026, 6, 1, tzinfo=UTC)
W1 = W0 + timedelta(days=30)
DAY = timedelta(days=1)
A_INSTALLED = W0 - 100 * DAY
B_INSTALLED = W0 + 10 * DAY


def _insert(con: duckdb.DuckDBPyConnection, table: str, rows: list[dict[str, object]]) -> None:
    frame = pl.DataFrame(rows)
    frame = frame.with_columns(
        source_file=pl.lit("hand.txt"), line_no=pl.int_range(1, frame.height + 1)
    )
    con.register("incoming", frame.to_arrow())
    con.execute(f"insert into {table} by name select * from incoming")
    con.unregister("incoming")


def _job(
    job_id: str,
    nodes: list[str],
    start: datetime,
    end: datetime | None,
    state: str,
    exit_code: int = 0,
) -> dict[str, object]:
    return {
        "job_id": job_id,
        "job_id_raw": job_id,
        "step": None,
        "job_name": "train",
        "partition": "gpu",
        "account": "ml",
        "user_name": "ada",
        "alloc_nodes": len(nodes),
        "n_gpus": 2 * len(nodes),
        "node_list": ",".join(nodes),
        "nodes": nodes,
        "submit_ts": start - timedelta(minutes=5),
        "start_ts": start,
        "end_ts": end,
        "state": state,
        "exit_code": exit_code,
        "exit_signal": 0,
        "restarts": 0,
    }


@pytest.fixture(scope="module")
def con() -> duckdb.DuckDBPyConnection:
    con = duckdb.connect()
    con.execute("set TimeZone = 'UTC'")
    warehouse.apply_schema(con)
    _insert(
        con,
        "raw_fleet",
        [
            {
                "node": "a",
                "rack": "r1",
                "cluster": "c",
                "batch": "old",
                "installed_ts": A_INSTALLED,
                "removed_ts": None,
            },
            {
                "node": "b",
                "rack": "r1",
                "cluster": "c",
                "batch": "new",
                "installed_ts": B_INSTALLED,
                "removed_ts": None,
            },
        ],
    )
    snapshots = []
    for host, ts in [("a", W0), ("a", W1), ("b", B_INSTALLED), ("b", W1)]:
        for index, bus in enumerate(["0000:18:00", "0000:2a:00"]):
            snapshots.append(
                {
                    "host": host,
                    "snapshot_ts": ts,
                    "gpu_index": index,
                    "pci_bus_id": bus,
                    "serial": f"{host}{index}",
                    "uuid": "GPU-x",
                    "gpu_name": "H100",
                }
            )
    _insert(con, "raw_inventory", snapshots)

    def ticket(tid, node, cls, slot, opened, closed, action):  # type: ignore[no-untyped-def]
        return {
            "ticket_id": tid,
            "node": node,
            "component_class": cls,
            "slot": slot,
            "serial_out": "o",
            "serial_in": "i",
            "opened_ts": opened,
            "closed_ts": closed,
            "action": action,
            "description": "",
        }

    _insert(
        con,
        "raw_repairs",
        [
            ticket("T1", "a", "gpu_memory", "gpu0", W0 - 50 * DAY, W0 - 49 * DAY, "replace"),
            ticket("T2", "a", "nvlink", "gpu0", W0 + 5 * DAY, W0 + 6 * DAY, "replace"),
            ticket(
                "T3",
                "a",
                "gpu",
                "gpu1",
                W0 + 3 * DAY,
                W0 + 3 * DAY + timedelta(hours=2),
                "planned_replace",
            ),
            ticket("T4", "a", "power", "power", W0 + 20 * DAY, None, "replace"),
            ticket(
                "T5", "b", "host_memory", "host_memory", W0 + 15 * DAY, W0 + 16 * DAY, "replace"
            ),
            ticket("T6", "a", "gpu", "gpu1", W0 + 25 * DAY, W0 + 25 * DAY, "reseat"),
            # a/gpu0's third ticket is still open at the window end: no life follows it
            ticket("T7", "a", "gpu", "gpu0", W0 + 21 * DAY, None, "replace"),
        ],
    )
    failure = W0 + 5 * DAY
    xid = [
        # an nvlink burst on a/gpu0: three lines, gaps under 600 s -> one incident
        {"host": "a", "ts": failure, "pci_bus_id": "0000:18:00", "xid": 74},
        {
            "host": "a",
            "ts": failure + timedelta(seconds=300),
            "pci_bus_id": "0000:18:00",
            "xid": 74,
        },
        {
            "host": "a",
            "ts": failure + timedelta(seconds=900),
            "pci_bus_id": "0000:18:00",
            "xid": 74,
        },
        # 601 s after the previous line: a new incident
        {
            "host": "a",
            "ts": failure + timedelta(seconds=1501),
            "pci_bus_id": "0000:18:00",
            "xid": 74,
        },
        # warning only
        {"host": "a", "ts": W0 + 10 * DAY, "pci_bus_id": "0000:2a:00", "xid": 63},
        # a pcie fault on a 100 s after b's host_memory ticket: job 104 is ambiguous
        {
            "host": "a",
            "ts": W0 + 15 * DAY + timedelta(seconds=100),
            "pci_bus_id": "0000:2a:00",
            "xid": 79,
        },
    ]
    for line in xid:
        line.update({"pid": None, "process_name": None, "message": "m", "log_format": "syslog"})
    _insert(con, "raw_xid_events", xid)
    minute = timedelta(minutes=1)
    _insert(
        con,
        "raw_slurm_jobs",
        [
            _job("100", ["a"], W0 + 4 * DAY, failure + minute, "FAILED", 1),
            _job("100", ["a"], failure + 60 * minute, failure + 120 * minute, "COMPLETED"),
            _job("101", ["a"], W0 + 19 * DAY, W0 + 20 * DAY + timedelta(seconds=30), "NODE_FAIL"),
            _job("102", ["a"], W0 + 1 * DAY, W0 + 2 * DAY, "OUT_OF_MEMORY", 0),
            _job("103", ["a"], W0 + 2 * DAY, W0 + 2 * DAY + minute, "FAILED", 1),
            _job("104", ["a", "b"], W0 + 14 * DAY, W0 + 15 * DAY + minute, "FAILED", 1),
            _job("105", ["b"], W0 + 21 * DAY, W0 + 22 * DAY, "NODE_FAIL"),
            _job("106", ["b"], W0 + 23 * DAY, None, "RUNNING"),
            _job("107", ["a"], W0 + 24 * DAY, W0 + 24 * DAY + minute, "CANCELLED"),
        ],
    )
    warehouse.create_views(con)
    return con


def test_observation_window_spans_the_snapshots(con: duckdb.DuckDBPyConnection) -> None:
    assert con.execute("select * from stg_observation_window").fetchone() == (W0, W1)


def test_incidents_split_on_the_gap_parameter(con: duckdb.DuckDBPyConnection) -> None:
    incidents = con.execute(
        "select host, slot, xid, n_lines, is_failure, component_class from int_incidents "
        "order by first_ts"
    ).fetchall()
    assert incidents == [
        ("a", "gpu0", 74, 3, True, "nvlink"),
        ("a", "gpu0", 74, 1, True, "nvlink"),
        ("a", "gpu1", 63, 1, False, "gpu_memory"),
        ("a", "gpu1", 79, 1, True, "pcie"),
    ]


def test_replacement_lives_are_cut_by_tickets_and_clipped_to_the_window(
    con: duckdb.DuckDBPyConnection,
) -> None:
    lives = con.execute(
        "select unit_id, entry_h, exit_h, failed from int_replacement_lives "
        "where component_class = 'nvlink' and node = 'a' order by unit_id"
    ).fetchall()
    assert lives == [
        # life 1 of a/gpu0 began after T1 closed (49 days before W0), failed at T2 (nvlink)
        ("a/gpu0#1", 49 * 24.0, 54 * 24.0, True),
        # life 2 began when T2 closed and ended at T7 (a gpu failure: censored for nvlink)
        ("a/gpu0#2", 0.0, 15 * 24.0, False),
        # a/gpu1's original life: installed 100 days before W0, ended by a planned replacement
        ("a/gpu1#0", 100 * 24.0, 103 * 24.0, False),
        ("a/gpu1#1", 0.0, 27 * 24.0 - 2.0, False),  # the reseat ticket ends no life
    ]
    power = con.execute(
        "select unit_id, entry_h, exit_h, failed from int_replacement_lives "
        "where component_class = 'power' order by unit_id"
    ).fetchall()
    # a's power unit failed on day 20 and is still in repair at W1: no open life after it
    assert power == [
        ("a/power#0", 100 * 24.0, 120 * 24.0, True),
        ("b/power#0", 0.0, 20 * 24.0, False),
    ]


def test_no_life_follows_a_repair_still_open_when_earlier_ones_closed(
    con: duckdb.DuckDBPyConnection,
) -> None:
    units = [
        row[0]
        for row in con.execute(
            "select distinct unit_id from int_replacement_lives where slot = 'gpu0' and node = 'a' "
            "order by unit_id"
        ).fetchall()
    ]
    assert units == ["a/gpu0#1", "a/gpu0#2"]


def test_competing_risks_fail_only_the_ticket_class(con: duckdb.DuckDBPyConnection) -> None:
    rows = dict(
        con.execute(
            "select component_class, failed from int_replacement_lives where unit_id = 'a/gpu0#1'"
        ).fetchall()
    )
    assert {"gpu", "gpu_memory", "nvlink", "pcie"} <= rows.keys()
    assert [cls for cls, failed in rows.items() if failed] == ["nvlink"]


def test_interruptions_get_the_documented_cause(con: duckdb.DuckDBPyConnection) -> None:
    rows = con.execute(
        "select job_id_raw, attempt, cause_class, attribution, restart_overhead_s "
        "from int_job_interruptions order by job_id_raw"
    ).fetchall()
    assert rows == [
        ("100", 1, "nvlink", "hardware-confirmed", 59 * 60.0),
        ("101", 1, "power", "scheduler-only", None),
        ("102", 1, "application", "application", None),
        ("103", 1, "unknown", "unattributed", None),
        ("104", 1, "ambiguous", "ambiguous", None),
        ("105", 1, "unknown", "scheduler-only", None),
    ]


def test_failure_events_merge_xid_runs_scheduler_and_tickets(
    con: duckdb.DuckDBPyConnection,
) -> None:
    """One row per physical failure, read off the fixture by hand (default windows)."""
    rows = con.execute(
        "select component_class, unit_id, failed_ts, ended_ts, end_source, end_status, "
        "sources, n_signals, xid, ticket_id, unit_inferred from int_failure_events "
        "order by failed_ts"
    ).fetchall()
    day = DAY
    assert rows == [
        # T1, before the window: a ticket alone is a failure, ended at its close
        ("gpu_memory", "a/gpu0", W0 - 50 * day, W0 - 49 * day, "ticket", "ended", ["ticket"], 1,
         None, "T1", False),
        # two Xid 74 runs 601 s apart (incident_gap_s) within failure_merge_s: one failure; T2,
        # opened at the first line, joins it and gives its end
        ("nvlink", "a/gpu0", W0 + 5 * day, W0 + 6 * day, "ticket", "ended", ["ticket", "xid"], 3,
         74, "T2", False),
        ("host_memory", "b/host_memory", W0 + 15 * day, W0 + 16 * day, "ticket", "ended",
         ["ticket"], 1, None, "T5", False),
        # Xid 79 with no ticket and no node event: back when job 101 started on a (day 19)
        ("pcie", "a/gpu1", W0 + 15 * day + timedelta(seconds=100), W0 + 19 * day, "next_job",
         "ended", ["xid"], 1, 79, None, False),
        # job 101's NODE_FAIL 30 s after T4 opened: one failure, named power by the ticket
        ("power", "a/power", W0 + 20 * day, None, "ticket", "open", ["scheduler", "ticket"], 2,
         None, "T4", False),
        # T7 (a/gpu0) is opened within a day of that failure, but a later ticket for another unit
        # is a failure of its own
        ("gpu", "a/gpu0", W0 + 21 * day, None, "ticket", "open", ["ticket"], 1, None, "T7",
         False),
        # job 105's NODE_FAIL alone: class unknown on its only node; back when job 106 started
        ("unknown", "b/unknown", W0 + 22 * day, W0 + 23 * day, "next_job", "ended",
         ["scheduler"], 1, None, None, False),
    ]  # fmt: skip


def test_failure_lives_renew_at_each_failure_end(con: duckdb.DuckDBPyConnection) -> None:
    """Lives between failures, left-truncated, censored, node downtime not at risk (by hand)."""
    lives = con.execute(
        "select unit_id, entry_h, exit_h, failed, window_entry_h, window_exit_h "
        "from int_component_lives where component_class = $cls order by unit_id",
        {"cls": "pcie"},
    ).fetchall()
    assert lives == [
        # a/gpu0: renewed by T1's close 49 days before W0, failed at day 5 (nvlink: censored for
        # pcie); renewed at T2's close (day 6), failed at day 21 (T7); the node was down from day
        # 20 (power, open): 24 h not at risk
        ("a/gpu0#1", 49 * 24.0, 54 * 24.0, False, 0.0, 120.0),
        ("a/gpu0#2", 0.0, 14 * 24.0, False, 144.0, 504.0),
        # a/gpu1: installed 100 days before W0, planned replacement at day 3 (2 h), Xid 79 at day
        # 15 + 100 s, back at day 19, node down from day 20 to the end
        ("a/gpu1#0", 100 * 24.0, 103 * 24.0, False, 0.0, 72.0),
        ("a/gpu1#1", 0.0, 12 * 24.0 - 2.0 + 100 / 3600, True, 74.0, 360.0 + 100 / 3600),
        ("a/gpu1#2", 0.0, 24.0, False, 456.0, 720.0),
        # b installed at day 10; down on days 15-16 (host_memory) and 22-23 (unknown)
        ("b/gpu0#0", 0.0, 18 * 24.0, False, 240.0, 720.0),
        ("b/gpu1#0", 0.0, 18 * 24.0, False, 240.0, 720.0),
    ]
    unknown = con.execute(
        "select unit_id, entry_h, exit_h, failed from int_component_lives "
        "where component_class = 'unknown' order by unit_id"
    ).fetchall()
    # a class of level 'none' that failed is a node-level unit on every node
    assert unknown == [
        ("a/unknown#0", 100 * 24.0, 120 * 24.0, False),
        ("b/unknown#0", 0.0, 11 * 24.0, True),
        ("b/unknown#1", 0.0, 7 * 24.0, False),
    ]


def test_failure_lives_count_every_failure_event_in_the_window(
    con: duckdb.DuckDBPyConnection,
) -> None:
    lives = dict(
        con.execute(
            "select component_class, count(*) from int_component_lives where failed group by 1"
        ).fetchall()
    )
    events = dict(
        con.execute(
            "select component_class, count(*) from fct_failure_events "
            "where in_window and in_lives group by 1"
        ).fetchall()
    )
    assert lives == events == {
        "nvlink": 1, "pcie": 1, "power": 1, "host_memory": 1, "gpu": 1, "unknown": 1
    }  # fmt: skip
    assert con.execute("select count(*) from fct_failure_events where in_window").fetchone() == (6,)


def test_fleet_summary_counts_failures_per_class(con: duckdb.DuckDBPyConnection) -> None:
    summary = dict(
        con.execute(
            "select component_class, n_failures from rpt_fleet_summary where n_failures > 0"
        ).fetchall()
    )
    # the failure process: every failure event in the window, with or without a ticket
    assert summary == {
        "nvlink": 1, "pcie": 1, "power": 1, "host_memory": 1, "gpu": 1, "unknown": 1
    }  # fmt: skip
