"""Failures and units at risk from whatever telemetry a warehouse holds (issue #25, section 1).

A generated fleet ingested with and without its repair tickets, real kernel logs alone, and a
sacct export alone: each gives failure events, units at risk and exposure, and every failure in
the window ends one failure-process life.
"""

from __future__ import annotations

import textwrap
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

import duckdb
import pytest

from pipelines import ingest, warehouse
from synth import SynthConfig, synthesize

if TYPE_CHECKING:
    from collections.abc import Iterator

KERNEL_REAL = Path(__file__).resolve().parent / "samples" / "kernel_real"
GPU_CLASSES = ("gpu", "gpu_memory", "gpu_sram", "gsp", "nvlink", "pcie")
NODE_CLASSES = (
    "nic", "network", "host_cpu", "host_memory", "storage", "power", "cooling", "chassis"
)  # fmt: skip


def _connect(db: Path) -> Iterator[duckdb.DuckDBPyConnection]:
    con = duckdb.connect(str(db))
    con.execute("set TimeZone = 'UTC'")
    yield con
    con.close()


def _per_class(con: duckdb.DuckDBPyConnection, sql: str) -> dict[str, int]:
    return {cls: int(n) for cls, n in con.execute(sql).fetchall()}


# --- a generated fleet with and without its tickets ---------------------------------------------

FLEET = SynthConfig(
    nodes=64,
    gpus_per_node=8,
    days=60,
    seed=25,
    start=datetime(2026, 6, 1, tzinfo=UTC),
    node_events=True,
)
IN_WINDOW = (
    "select component_class, count(*) from fct_failure_events "
    "where dataset is null and in_window group by 1"
)
FAILED_LIVES = "select component_class, count(*) from fct_component_lives where failed group by 1"


@pytest.fixture(scope="module")
def fleets(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("tickets")
    landing = root / "landing"
    synthesize(landing, FLEET)
    files = ingest.discover([landing])
    dbs = {"with": root / "with.duckdb", "without": root / "without.duckdb"}
    ingest.ingest(dbs["with"], files)
    ingest.ingest(dbs["without"], [f for f in files if f.source != "repairs"])
    return dbs


@pytest.mark.slow
def test_without_tickets_every_class_sees_nine_tenths_of_its_failures(
    fleets: dict[str, Path],
) -> None:
    counts = {}
    for name, db in fleets.items():
        for con in _connect(db):
            counts[name] = _per_class(con, IN_WINDOW)
            assert con.execute("select count(*) from raw_repairs").fetchone()[0] > 0 or (
                name == "without"
            )
    assert counts["with"], "the generated fleet has failures in its window"
    for cls, n in counts["with"].items():
        assert counts["without"].get(cls, 0) >= 0.9 * n, (cls, counts)


@pytest.mark.slow
def test_failure_lives_count_the_failure_events_of_each_class(fleets: dict[str, Path]) -> None:
    for db in fleets.values():
        for con in _connect(db):
            assert _per_class(con, FAILED_LIVES) == _per_class(con, IN_WINDOW)
            # and they ended the very lives that name them
            assert con.execute(
                "select count(*) from fct_failure_events as e "
                "left join fct_component_lives as l on e.failure_id = l.failure_id "
                "where e.in_window and e.dataset is null and l.failure_id is null"
            ).fetchone() == (0,)


# --- real kernel logs, nothing else ------------------------------------------------------------


@pytest.fixture(scope="module")
def kernel_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    db = tmp_path_factory.mktemp("kernel") / "relia.duckdb"
    logs = sorted(KERNEL_REAL.glob("*.log"))
    ingest.ingest(db, ingest.discover(logs, source="kernel"))
    return db


def test_real_kernel_logs_alone_give_one_gsp_failure_and_nodes_of_unknown_gpu_count(
    kernel_db: Path,
) -> None:
    for con in _connect(kernel_db):
        # five Xid 119 lines on one GPU within 6 minutes (gaps 6, 6, 162, 181 s): one failure; the
        # other log's Xid 13 and 43 are application errors, no failure
        events = con.execute(
            "select host, component_class, unit_id, failed_ts, end_status, sources, xid, "
            "in_window, in_lives from fct_failure_events"
        ).fetchall()
        assert events == [
            ("xe9680-a", "gsp", "xe9680-a/pci0000:9b:00", datetime(2025, 2, 23, 16, 24, 18,
             tzinfo=UTC), "unknown", ["xid"], 119, True, False),
        ]  # fmt: skip
        nodes = con.execute(
            "select node, n_gpus, gpu_count_known, n_gpus_seen, seen_in from int_fleet_nodes "
            "order by node"
        ).fetchall()
        assert nodes == [
            ("h100-b", None, False, 1, ["kernel"]),
            ("xe9680-a", None, False, 1, ["kernel"]),
        ]
        # no GPU units where the count is unknown; node-level units over the whole window
        # [2025-01-21, 2025-02-24): 34 days
        lives = con.execute(
            "select unit_level, count(distinct component_class), count(*), sum(exit_h - entry_h) "
            "from fct_component_lives group by 1"
        ).fetchall()
        assert lives == [("node", len(NODE_CLASSES), 2 * len(NODE_CLASSES),
                          2 * len(NODE_CLASSES) * 34 * 24.0)]  # fmt: skip


def test_real_kernel_logs_with_a_gpu_count_count_their_failure_in_the_lives(
    kernel_db: Path, tmp_path: Path
) -> None:
    db = tmp_path / "relia.duckdb"
    db.write_bytes(kernel_db.read_bytes())
    for con in _connect(db):
        warehouse.set_param(con, "gpus_per_node", 8)
        slots = con.execute(
            "select node, list(slot order by slot) from int_fleet_gpus group by 1 order by 1"
        ).fetchall()
        unseen = [f"unseen{i}" for i in range(1, 8)]
        assert slots == [
            ("h100-b", ["pci0000:38:00", *unseen]),
            ("xe9680-a", ["pci0000:9b:00", *unseen]),
        ]
        failed = con.execute(
            "select unit_id, component_class, entry_h, exit_h, age_known from fct_component_lives "
            "where failed"
        ).fetchall()
        # no install time: the life starts at the window start (2025-01-21 00:00), age unknown,
        # and ends at the first Xid 119 line, 33 days 16:24:18 later
        first_line_h = 33 * 24 + 16 + 24 / 60 + 18 / 3600
        assert failed == [("xe9680-a/pci0000:9b:00#0", "gsp", 0.0, pytest.approx(first_line_h),
                           False)]  # fmt: skip
        exposure = dict(
            con.execute(
                "select component_class, sum(exit_h - entry_h) from fct_component_lives "
                "where unit_level = 'gpu' group by 1"
            ).fetchall()
        )
        # 16 GPUs over 34 days each; the failure's end is unknown, so its unit is back at once
        assert exposure == {cls: pytest.approx(16 * 34 * 24.0) for cls in GPU_CLASSES}


# --- a sacct export, nothing else ---------------------------------------------------------------

SACCT = """\
JobID|JobIDRaw|JobName|Partition|Account|User|AllocNodes|AllocTRES|NodeList|Submit|Start|End|Elapsed|State|ExitCode|Restarts
100|100|train|gpu|ml|ada|2|billing=64,cpu=64,gres/gpu=16,mem=512G,node=2|gpu[001-002]|2026-06-01T00:00:00|2026-06-01T01:00:00|2026-06-02T01:00:00|1-00:00:00|COMPLETED|0:0|0
101|101|eval|gpu|ml|bob|1|billing=8,cpu=8,gres/gpu=4,mem=64G,node=1|gpu003|2026-06-01T00:00:00|2026-06-01T02:00:00|2026-06-01T12:00:00|10:00:00|NODE_FAIL|0:0|0
102|102|eval|gpu|ml|bob|1|billing=8,cpu=8,gres/gpu=4,mem=64G,node=1|gpu003|2026-06-01T12:00:00|2026-06-01T14:00:00|2026-06-02T20:00:00|1-06:00:00|COMPLETED|0:0|0
"""


def test_a_sacct_export_alone_gives_units_exposure_and_its_node_failure(tmp_path: Path) -> None:
    folder = tmp_path / "landing" / "slurm"
    folder.mkdir(parents=True)
    (folder / "sacct_20260601.txt").write_text(textwrap.dedent(SACCT))
    db = tmp_path / "relia.duckdb"
    ingest.ingest(db, ingest.discover([tmp_path / "landing"]))
    for con in _connect(db):
        # GPUs per node from AllocTRES: 16 on two nodes, 4 on one; window [06-01, 06-03): 48 h
        assert con.execute(
            "select node, n_gpus, gpu_count_source from int_fleet_nodes order by node"
        ).fetchall() == [("gpu001", 8, "sacct"), ("gpu002", 8, "sacct"), ("gpu003", 4, "sacct")]
        # job 101's NODE_FAIL at 12:00: a failure of unknown class, back when job 102 started
        assert con.execute(
            "select unit_id, failed_ts, ended_ts, end_source, sources from fct_failure_events"
        ).fetchall() == [
            ("gpu003/unknown", datetime(2026, 6, 1, 12, tzinfo=UTC),
             datetime(2026, 6, 1, 14, tzinfo=UTC), "next_job", ["scheduler"]),
        ]  # fmt: skip
        exposure = dict(
            con.execute(
                "select component_class, sum(exit_h - entry_h) from fct_component_lives group by 1"
            ).fetchall()
        )
        # gpu003 is down 2 h: its units are at risk 46 h of the 48
        gpu_h = 16 * 48.0 + 4 * 46.0
        node_h = 2 * 48.0 + 46.0
        assert exposure == {
            **{cls: pytest.approx(gpu_h) for cls in GPU_CLASSES},
            **{cls: pytest.approx(node_h) for cls in (*NODE_CLASSES, "unknown")},
        }
        failed = con.execute(
            "select unit_id, exit_h - entry_h from fct_component_lives where failed"
        ).fetchall()
        # from the window start to the failure at 12:00
        assert failed == [("gpu003/unknown#0", 12.0)]
