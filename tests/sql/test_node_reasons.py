"""The node-event reason vocabulary (sql/seeds/dim_node_reason.csv) as stg_node_events reads it."""

from __future__ import annotations

import csv
from datetime import UTC, datetime, timedelta
from pathlib import Path

import duckdb
import pytest

from pipelines import warehouse
from tests.sql.test_views import _insert

SEEDS = Path(__file__).resolve().parents[2] / "sql" / "seeds"

# reason, state -> class, failure, planned. Reasons as Slurm, NHC and sites print them (the seeds
# README names the sources), and as the brief of issue #25 lists them.
CASES = [
    ("Not responding", "DOWN*", "unknown", True, False),
    ("Node unexpectedly rebooted boot_time=1780272000 last response=1780271000", "DOWN", "unknown",
     True, False),
    ("Kill task failed", "DRAIN", "unknown", False, False),
    ("NHC: Xid 79 GPU fallen off the bus", "DRAIN", "pcie", True, False),
    ("NHC: Xid 13 graphics exception", "DRAIN", "application", False, False),
    ("PSU failure, node lost power (RT104233)", "DRAIN", "power", True, False),
    ("HCA mlx5_0 link down", "DRAIN", "nic", True, False),
    ("NHC: check_hw_ib:  No IB port mlx5_0:1 is ACTIVE (LinkUp 200 Gb/sec).", "DRAIN", "nic", True,
     False),
    ("DIMM UE on CPU1_DIMM_A2", "DRAIN", "host_memory", True, False),
    ("ECC DBE on GPU 2", "DRAIN", "gpu_memory", True, False),
    ("NCCL watchdog timeout", "DRAIN", "nccl", True, False),
    ("software fault: segfault in dataloader", "DRAIN", "software", True, False),
    ("kernel panic - not syncing", "DOWN", "software", True, False),
    ("Prolog error", "DRAIN", "software", True, False),
    ("IB cable fault port 1", "DRAIN", "network", True, False),
    ("optic degraded on leaf switch", "DRAIN", "network", True, False),
    # a reason that names the fabric says more than "unreachable" does: the fabric's class wins
    ("spine switch sw-spine-04 unreachable, fabric degraded", "DRAIN", "network", True, False),
    ("unplanned maintenance: coolant leak", "DRAIN", "maintenance", True, False),
    ("GPU driver hang", "DRAIN", "driver", True, False),
    ("GSP firmware error", "DRAIN", "gsp", True, False),
    ("gres/gpu count reported lower than configured (7 < 8)", "DRAIN", "gpu", True, False),
    ("Low RealMemory", "DRAIN", "unknown", False, False),
    ("reseat requested after link errors (RT2)", "DRAIN", "maintenance", False, False),
    ("diagnostics: no fault found (RT3)", "DRAIN", "maintenance", False, False),
    ("scheduled firmware update", "DOWN", "maintenance", False, True),
    ("planned maintenance: replace nvlink (RT1)", "DRAIN", "maintenance", False, True),
    ("Reboot ASAP", "REBOOT+DRAIN", "maintenance", False, True),
    ("waiting for rack work", "DRAIN", "unknown", False, False),
    ("waiting for rack work", "DOWN", "unknown", True, False),
]  # fmt: skip


def test_seed_node_reasons_are_well_formed() -> None:
    with (SEEDS / "dim_node_reason.csv").open(newline="", encoding="utf-8") as handle:
        rows = list(csv.reader(handle, strict=True))
    assert rows[0] == ["rank", "pattern", "component_class", "is_failure", "description"]
    body = rows[1:]
    assert all(len(row) == 5 for row in body)
    assert [int(row[0]) for row in body] == list(range(1, len(body) + 1))
    assert len({row[1] for row in body}) == len(body)
    assert {row[3] for row in body} <= {"true", "false"}
    with (SEEDS / "dim_component_class.csv").open(newline="", encoding="utf-8") as handle:
        classes = {row["component_class"] for row in csv.DictReader(handle)}
    assert {row[2] for row in body} <= classes
    con = duckdb.connect()
    for row in body:  # every pattern compiles as DuckDB (RE2) reads it
        con.execute("select regexp_matches('x', '(?i)' || $p)", {"p": row[1]}).fetchone()


@pytest.fixture(scope="module")
def classified() -> dict[tuple[str, str], tuple[str, bool, bool]]:
    con = duckdb.connect()
    con.execute("set TimeZone = 'UTC'")
    warehouse.apply_schema(con)
    start = datetime(2026, 6, 1, tzinfo=UTC)
    _insert(
        con,
        "raw_node_events",
        [
            {
                "cluster": "alpha",
                "node_name": f"n{i}",
                "nodes": [f"n{i}"],
                "start_ts": start + timedelta(minutes=i),
                "end_ts": start + timedelta(hours=1, minutes=i),
                "state": state,
                "state_base": state.split("+")[-1].rstrip("*").lower()
                if state.startswith("REBOOT")
                else state.rstrip("*").lower(),
                "event_reason": reason,
                "user_name": "root(0)",
            }
            for i, (reason, state, *_) in enumerate(CASES)
        ],
    )
    warehouse.create_views(con)
    rows = con.execute(
        "select event_reason, state, unavailability_class, is_failure, is_planned "
        "from stg_node_events"
    ).fetchall()
    return {(row[0], row[1]): (row[2], row[3], row[4]) for row in rows}


@pytest.mark.parametrize(("reason", "state", "cls", "failure", "planned"), CASES)
def test_a_reason_gives_its_class_and_whether_it_is_a_failure(
    classified: dict[tuple[str, str], tuple[str, bool, bool]],
    reason: str,
    state: str,
    cls: str,
    failure: bool,
    planned: bool,
) -> None:
    assert classified[(reason, state)] == (cls, failure, planned)
