"""Repeat offenders visible per unit (issue #25 §2): ``rpt_unit_failures`` on hand-built rows.

One node, ``n1``, with two GPUs (inventory) and no fleet register, observed for 10 days. Its GPU on
bus 18 fails three times (Xid 79), each failure drained by NHC and back at the drain's end:

- day 1 10:00, back 12:00;
- day 1 15:00 (3 h after its return), back 16:00;
- day 5 10:00 (90 h after its return), back 11:00.

The other GPU never fails. Expected, read off those rows: the slot fails 3 times; the shortest
time from a return to the next failure is 3 h; two failures came within 7 days of the return
before them. The node's node-level units have no failure.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING

import pytest

from pipelines import warehouse
from tests.sql.test_failure_events import _node_event, _snapshot, _xid, windowed_warehouse
from tests.sql.test_views import _insert

if TYPE_CHECKING:
    import duckdb

W0 = datetime(2026, 6, 1, tzinfo=UTC)
W1 = W0 + timedelta(days=10)
HOUR = timedelta(hours=1)
DAY = timedelta(days=1)
FAILS = (
    (W0 + DAY + 10 * HOUR, W0 + DAY + 12 * HOUR),
    (W0 + DAY + 15 * HOUR, W0 + DAY + 16 * HOUR),
    (W0 + 5 * DAY + 10 * HOUR, W0 + 5 * DAY + 11 * HOUR),
)


@pytest.fixture(scope="module")
def con() -> duckdb.DuckDBPyConnection:
    con = windowed_warehouse(W0, W1)
    _insert(
        con,
        "raw_inventory",
        [_snapshot("n1", 0, "0000:18:00"), _snapshot("n1", 1, "0000:2a:00")],
    )
    _insert(con, "raw_xid_events", [_xid("n1", t, "0000:18:00", 79) for t, _ in FAILS])
    _insert(
        con,
        "raw_node_events",
        [
            _node_event("n1", t + timedelta(minutes=1), back, "DRAIN", "drain", "NHC: Xid 79")
            for t, back in FAILS
        ],
    )
    warehouse.create_views(con)
    return con


def test_a_gpu_that_fails_again_soon_after_its_repair_is_visible_per_unit(
    con: duckdb.DuckDBPyConnection,
) -> None:
    rows = con.execute(
        "select unit, unit_level, n_failures, classes, min_back_to_fail_h, n_repeat_7d "
        "from rpt_unit_failures where node = 'n1' order by unit_level, unit"
    ).fetchall()
    assert rows == [
        ("n1/gpu0", "gpu", 3, ["pcie"], pytest.approx(3.0), 2),
        ("n1/gpu1", "gpu", 0, [], None, 0),
        ("n1", "node", 0, [], None, 0),
    ]


def test_a_unit_is_at_risk_only_while_in_service(con: duckdb.DuckDBPyConnection) -> None:
    """The failing slot is down 2 + 1 + 1 hours of the window's 240; the other slot never."""
    hours = dict(
        con.execute(
            "select unit, exposure_h from rpt_unit_failures where unit_level = 'gpu'"
        ).fetchall()
    )
    assert hours == {"n1/gpu0": pytest.approx(240.0 - 4.0), "n1/gpu1": pytest.approx(240.0)}
