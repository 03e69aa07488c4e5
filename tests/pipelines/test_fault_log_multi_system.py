"""A multi-system fault log in the shape of public HPC failure traces, ingested and fitted (#12).

Shape: the LANL node-outage records of the Computer Failure Data Repository (release
LA-UR-05-7318, ``LA-UR-05-7318-failure-data-1996-2005.csv``: 22 systems, 1996-2005; described
at https://www.usenix.org/node/167207 and http://institute.lanl.gov/data/fdata/; Schroeder and
Gibson, DSN 2006). Its 26-column header and a sample row are quoted in the R scripts of
Derek-Jones/ESEUR-code-data (``reliability/LANL-node-total-fail.R``)::

    System,machine type,nodes,procstot,procsinnode,nodenum,nodenumz,node install,node prod,
    node decom,fru type,mem,cputype,memtype,num intercon,purpose,Prob Started,Prob Fixed,
    Down Time,Facilities,Hardware,Human Error,Network,Undetermined,Software,Same Event
    2,cluster,49,6152,80,0,0,5-Apr,5-Jun,current,part,80,1,1,0,graphics.fe,
    6/21/2005 10:54,6/21/2005 11:00,6,,Graphics Accel Hdwr,,,,,No

``tests/fixtures/lanl_shape_failures.csv`` has that header and eight invented records on two
systems (only the text "Graphics Accel Hdwr" is from the sample row). It loads through the
shipped mapping ``data_samples/mappings/lanl_failures.yaml`` with each system's service window
added under ``groups.values``, as the mapping's comment asks. Times are Los Alamos local (MST,
UTC-7 in January). In hours from each system's window start:

System 7, 4 nodes, window 2003-01-01 .. 01-11 (240 h):
    node 0  Hardware "Memory Dimm" [24, 30] (host_memory), then Software [30, 32]: touching,
            so one outage [24, 32] with two failures
    node 1  Facilities "Power Outage" [0, 5]: at the window start, so downtime, not a failure;
            Human Error [100, 104]
    node 2  Network [48, 49]
    node 3  never failed
System 20, 3 nodes, window 2003-01-05 .. 01-09 (96 h):
    node 5  Undetermined [12, 14] (unknown), Hardware "Graphics Accel Hdwr" [50, 51] (gpu)
    node 6  Software [20, 30]
    node 7  never failed

Every unit is at risk for the seven classes the records name (facilities, gpu, host_memory,
human_error, network, software, unknown). A unit's lives of one class split its uptime, so each
class's exposure is the summed uptime: system 7: 240 - 8 = 232, 240 - 5 - 4 = 231, 240 - 1 = 239
and 240 for node 3 (942 h); system 20: 96 - 2 - 1 = 93, 96 - 10 = 86 and 96 (275 h); 1,217 h.
"""

from __future__ import annotations

from datetime import date
from pathlib import Path
from typing import TYPE_CHECKING, Any

import polars as pl
import pytest
import yaml

from models import FewFailuresWarning
from pipelines import ingest, warehouse
from pipelines.analysis.fit import run_fit
from pipelines.ingest.sources.fault_log import mapping_from_dict

if TYPE_CHECKING:
    from collections.abc import Iterator

    import duckdb

REPO = Path(__file__).resolve().parents[2]
MAPPING = REPO / "data_samples" / "mappings" / "lanl_failures.yaml"
TRACE = REPO / "tests" / "fixtures" / "lanl_shape_failures.csv"
DATASET = "lanl_failures"
WINDOWS = {  # each system's service window (local dates), as groups.values
    7: {"window": {"start": date(2003, 1, 1), "end": date(2003, 1, 11)}},
    20: {"window": {"start": date(2003, 1, 5), "end": date(2003, 1, 9)}},
}
CLASSES = ["facilities", "gpu", "host_memory", "human_error", "network", "software", "unknown"]
EXPOSURE_H = 942.0 + 275.0


@pytest.fixture(scope="module")
def db_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    raw = yaml.safe_load(MAPPING.read_text())
    raw["groups"]["values"] = WINDOWS
    mapping = mapping_from_dict(raw, where=str(MAPPING))
    path = tmp_path_factory.mktemp("lanl_shape") / "relia.duckdb"
    counts = ingest.ingest(
        path,
        ingest.discover([TRACE], source="fault_log"),
        parser_options={"fault_log": {"mapping": mapping}},
    )
    assert [(c.n_read, c.n_loaded, c.n_quarantined, c.n_ignored) for c in counts] == [(8, 8, 0, 1)]
    return path


@pytest.fixture(scope="module")
def fit_run(db_path: Path) -> dict[str, Any]:
    """``relia fit --lives int_fault_lives --dataset lanl_failures`` on the warehouse."""
    with (
        pytest.warns(FewFailuresWarning, match="fewer than 2 failures"),
        pytest.warns(FewFailuresWarning, match="2 to 5 failures .{'component_class': 'software'}"),
    ):
        return run_fit(db_path, lives="int_fault_lives", dataset=DATASET)


@pytest.fixture(scope="module")
def con(db_path: Path, fit_run: dict[str, Any]) -> Iterator[duckdb.DuckDBPyConnection]:
    with warehouse.connect(db_path, read_only=True) as connection:
        yield connection


def test_multi_system_records_take_class_from_the_blame_column(
    con: duckdb.DuckDBPyConnection,
) -> None:
    rows = con.execute(
        "select line_no, unit_id, unit_group, component_class, category_l1, category_l2, "
        "category_l3, population, epoch(window_end - window_start) / 3600 "
        "from stg_fault_events order by line_no"
    ).fetchall()
    s7, s20 = (4, 240.0), (3, 96.0)
    assert rows == [
        (2, "7/0", "7", "host_memory", "Hardware", "Memory Dimm", "part", *s7),
        (3, "7/0", "7", "software", "Software", "Parallel File System", "part", *s7),
        (4, "7/1", "7", "facilities", "Facilities", "Power Outage", "part", *s7),
        (5, "7/1", "7", "human_error", "Human Error", "Configuration", "part", *s7),
        (6, "7/2", "7", "network", "Network", "Interconnect", "part", *s7),
        (7, "20/5", "20", "unknown", "Undetermined", "Undetermined", "part", *s20),
        (8, "20/5", "20", "gpu", "Hardware", "Graphics Accel Hdwr", "part", *s20),
        (9, "20/6", "20", "software", "Software", "OS", "part", *s20),
    ]


def test_multi_system_lives_per_class(con: duckdb.DuckDBPyConnection) -> None:
    by_class = con.execute(
        """
        select
            component_class,
            count(*),
            count(distinct unit_id),
            count_if(failed),
            sum(exit_h - entry_h)
        from int_fault_lives
        where dataset = $d
        group by component_class
        order by component_class
        """,
        {"d": DATASET},
    ).fetchall()
    # 7 units at risk for every class; a failure adds a life (no repair outlasts a window)
    failures = {
        "facilities": 0,
        "gpu": 1,
        "host_memory": 1,
        "human_error": 1,
        "network": 1,
        "software": 2,
        "unknown": 1,
    }
    assert by_class == [
        (cls, 7 + failures[cls], 7, failures[cls], pytest.approx(EXPOSURE_H)) for cls in CLASSES
    ]


def test_multi_system_unit_lives(con: duckdb.DuckDBPyConnection) -> None:
    lives = con.execute(
        """
        select unit_id, component_class, life_no, exit_h, failed
        from int_fault_lives
        where dataset = $d
            and (component_class in ('host_memory', 'software', 'human_error', 'gpu')
                or unit_id = '7/1')
            and unit_id not like '%unobserved%'
        order by all
        """,
        {"d": DATASET},
    ).fetchall()
    assert lives == [
        ("20/5", "gpu", 1, 48.0, True),  # 50 h less the 2 h down at 12 h
        ("20/5", "gpu", 2, 45.0, False),  # 93 - 48
        ("20/5", "host_memory", 1, 93.0, False),
        ("20/5", "human_error", 1, 93.0, False),
        ("20/5", "software", 1, 93.0, False),
        ("20/6", "gpu", 1, 86.0, False),
        ("20/6", "host_memory", 1, 86.0, False),
        ("20/6", "human_error", 1, 86.0, False),
        ("20/6", "software", 1, 20.0, True),
        ("20/6", "software", 2, 66.0, False),
        ("7/0", "gpu", 1, 232.0, False),
        ("7/0", "host_memory", 1, 24.0, True),  # 24 h up; 232 h in all leaves 208 h
        ("7/0", "host_memory", 2, 208.0, False),
        ("7/0", "human_error", 1, 232.0, False),
        ("7/0", "software", 1, 24.0, True),  # the touching fault: same outage, same instant
        ("7/0", "software", 2, 208.0, False),
        # node 1: 5 h down from the window start (no failure), human error at 100 - 5 = 95 h
        ("7/1", "facilities", 1, 231.0, False),
        ("7/1", "gpu", 1, 231.0, False),
        ("7/1", "host_memory", 1, 231.0, False),
        ("7/1", "human_error", 1, 95.0, True),
        ("7/1", "human_error", 2, 136.0, False),
        ("7/1", "network", 1, 231.0, False),
        ("7/1", "software", 1, 231.0, False),
        ("7/1", "unknown", 1, 231.0, False),
        ("7/2", "gpu", 1, 239.0, False),
        ("7/2", "host_memory", 1, 239.0, False),
        ("7/2", "human_error", 1, 239.0, False),
        ("7/2", "software", 1, 239.0, False),
    ]


def test_multi_system_never_failed_nodes_are_censored_per_system(
    con: duckdb.DuckDBPyConnection,
) -> None:
    unobserved = con.execute(
        """
        select unit_group, unit_id, count(*), min(exit_h), max(exit_h), bool_or(failed)
        from int_fault_lives
        where dataset = $d and unit_id like '%unobserved%'
        group by all
        order by all
        """,
        {"d": DATASET},
    ).fetchall()
    # system 20: 3 nodes, 2 in the file; system 7: 4 nodes, 3 in the file
    assert unobserved == [
        ("20", "lanl_failures-20-unobserved-1", 7, 96.0, 96.0, False),
        ("7", "lanl_failures-7-unobserved-1", 7, 240.0, 240.0, False),
    ]


def test_multi_system_fits_without_zero_length_lives(
    con: duckdb.DuckDBPyConnection, fit_run: dict[str, Any]
) -> None:
    exits = con.execute(
        "select count(*), count_if(exit_h <= entry_h) from int_fault_lives where dataset = $d",
        {"d": DATASET},
    ).fetchone()
    assert exits == (7 * 7 + 7, 0)  # 7 units x 7 classes, plus one life per failure
    results = fit_run["results"]
    chosen = results.filter(pl.col("chosen")).sort("component_class")
    assert chosen["component_class"].to_list() == CLASSES
    assert chosen["exposure_h"].to_list() == pytest.approx([EXPOSURE_H] * len(CLASSES))
    # the exponential MTBF is exposure / failures
    exponential = results.filter(pl.col("family") == "exponential").sort("component_class")
    assert exponential["n_failures"].to_list() == [0, 1, 1, 1, 1, 2, 1]
    assert exponential["mtbf_h"].to_list()[1:] == pytest.approx(
        [EXPOSURE_H, EXPOSURE_H, EXPOSURE_H, EXPOSURE_H, EXPOSURE_H / 2, EXPOSURE_H]
    )
