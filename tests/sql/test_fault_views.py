"""int_fault_lives and int_fault_repairs on hand-built fault logs and on the two real data sets."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import duckdb
import polars as pl
import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pipelines import warehouse
from pipelines.ingest.sources.fault_log import load_mapping, mapping_from_dict, parse

REPO = Path(__file__).resolve().parents[2]
MAPPINGS = REPO / "data_samples" / "mappings"
REAL = REPO.parent / "shared" / "real"
TITAN = REAL / "titan-gpu-lifetimes"
HBD = REAL / "infinitehbd-gpu-fault-trace"
HBD_WINDOW_H = 349 * 24.0
HBD_POPULATION = 400


def _connect() -> duckdb.DuckDBPyConnection:
    con = duckdb.connect()
    con.execute("set TimeZone = 'UTC'")
    warehouse.apply_schema(con)
    return con


def _load(con: duckdb.DuckDBPyConnection, rows: pl.DataFrame) -> None:
    con.register("incoming", rows.to_arrow())
    con.execute("insert into raw_fault_events by name select * from incoming")
    con.unregister("incoming")


def _inline(mapping: str, data: str) -> pl.DataFrame:
    parsed = parse(
        textwrap.dedent(data).lstrip("\n").encode(),
        source_file="hand.csv",
        mapping=mapping_from_dict(yaml.safe_load(textwrap.dedent(mapping))),
    )
    assert parsed.rejects.height == 0, parsed.rejects
    return parsed.rows


# ---------------------------------------------------------------------------------------------
# Hand-built: every life known


HAND_EVENTS_MAPPING = """
    dataset: hand_events
    kind: events
    unit: node
    time: {unit: hours, origin: 2026-06-01T00:00:00Z}
    start: down_h
    end: up_h
    categories: [part]
    classes: {column: part, map: {gpu: gpu, nic: nic}}
    population: 4
    window: {start: 0, end: 100}
"""
# node a: gpu [10, 12]; nic [20, 30] with a gpu fault inside it [25, 26]; gpu [50, still open]
# node b: nic [-5, 2] began before the window (downtime only); nic [40, 41]
HAND_EVENTS = """
    node,part,down_h,up_h
    a,gpu,10,12
    a,nic,20,30
    a,gpu,25,26
    a,gpu,50,
    b,nic,-5,2
    b,nic,40,41
"""

HAND_LIVES_MAPPING = """
    dataset: hand_lives
    kind: lives
    unit: serial
    start: inserted
    end: removed
    failed: {column: event, true_values: [DBE, OTB]}
    point_events: true
    categories: [event]
    classes: {column: event, map: {DBE: gpu_memory, OTB: pcie}, default: gpu}
    cohorts: [batch]
    window: {start: 2026-06-01T00:00:00Z, end: 2026-06-11T00:00:00Z}
"""
# g1 enters the window 10 h into its first segment, then moves and fails (DBE, and an OTB logged
# on its own line at the same removal); g2's first segment ends before the window, its second is
# still in service at the window end.
HAND_LIVES = """
    serial,batch,inserted,removed,event
    g1,old,2026-05-31T14:00:00Z,2026-06-01T05:00:00Z,
    g1,old,2026-06-02T00:00:00Z,2026-06-03T00:00:00Z,DBE
    g1,old,,2026-06-03T00:00:00Z,OTB
    g2,new,2026-05-20T00:00:00Z,2026-05-25T00:00:00Z,OTB
    g2,new,2026-06-10T00:00:00Z,,
"""


@pytest.fixture(scope="module")
def hand() -> duckdb.DuckDBPyConnection:
    con = _connect()
    _load(con, _inline(HAND_EVENTS_MAPPING, HAND_EVENTS))
    _load(con, _inline(HAND_LIVES_MAPPING, HAND_LIVES))
    warehouse.create_views(con)
    return con


def _lives(con: duckdb.DuckDBPyConnection, dataset: str) -> list[tuple[object, ...]]:
    return con.execute(
        "select unit_id, component_class, life_no, round(entry_h, 6), round(exit_h, 6), failed "
        "from int_fault_lives where dataset = $d order by all",
        {"d": dataset},
    ).fetchall()


def test_events_lives_count_uptime_between_failures(hand: duckdb.DuckDBPyConnection) -> None:
    # a: outages [10,12] {gpu}, [20,30] {nic, gpu}, [50,100] {gpu}; uptime at them 10, 18, 38
    # b: outage [0,2] (no failure: it began before the window), [40,41] {nic} at uptime 38
    assert _lives(hand, "hand_events") == [
        ("a", "gpu", 1, 0.0, 10.0, True),
        ("a", "gpu", 2, 0.0, 8.0, True),
        ("a", "gpu", 3, 0.0, 20.0, True),  # no life after: its repair outlasts the window
        ("a", "nic", 1, 0.0, 18.0, True),
        ("a", "nic", 2, 0.0, 20.0, False),
        ("b", "gpu", 1, 0.0, 97.0, False),
        ("b", "nic", 1, 0.0, 38.0, True),
        ("b", "nic", 2, 0.0, 59.0, False),
        ("hand_events-unobserved-1", "gpu", 1, 0.0, 100.0, False),
        ("hand_events-unobserved-1", "nic", 1, 0.0, 100.0, False),
        ("hand_events-unobserved-2", "gpu", 1, 0.0, 100.0, False),
        ("hand_events-unobserved-2", "nic", 1, 0.0, 100.0, False),
    ]


def test_repairs_one_row_per_fault(hand: duckdb.DuckDBPyConnection) -> None:
    rows = hand.execute(
        "select unit_id, component_class, repair_h from int_fault_repairs "
        "where dataset = 'hand_events' order by unit_id, start_ts"
    ).fetchall()
    assert rows == [
        ("a", "gpu", 2.0),
        ("a", "nic", 10.0),
        ("a", "gpu", 1.0),
        ("a", "gpu", None),
        ("b", "nic", 7.0),
        ("b", "nic", 1.0),
    ]


def test_lives_age_across_moves_with_left_truncation(hand: duckdb.DuckDBPyConnection) -> None:
    assert _lives(hand, "hand_lives") == [
        ("g1", "gpu_memory", 1, 10.0, 15.0, False),
        ("g1", "gpu_memory", 2, 15.0, 39.0, True),
        ("g1", "pcie", 1, 10.0, 15.0, False),
        ("g1", "pcie", 2, 15.0, 39.0, True),  # the OTB line at the same removal
        ("g2", "gpu_memory", 2, 120.0, 144.0, False),
        ("g2", "pcie", 2, 120.0, 144.0, False),
    ]
    batches = hand.execute(
        "select distinct unit_id, batch from int_fault_lives where dataset = 'hand_lives' "
        "order by all"
    ).fetchall()
    assert batches == [("g1", "old"), ("g2", "new")]


# ---------------------------------------------------------------------------------------------
# Lives never have zero length (issue #12)

TOUCH_MAPPING = """
    dataset: hand_touch
    kind: events
    unit: node
    time: {unit: hours, origin: 2026-06-01T00:00:00Z}
    start: down_h
    end: up_h
    categories: [part]
    classes: {column: part, map: {gpu: gpu, nic: nic}}
    population: 4
    window: {start: 0, end: 100}
"""
# node t: a gpu fault exactly at the window start [0, 5] (downtime, not a failure), a gpu fault
# [10, 20] and a nic fault [20, 25] that starts the instant the gpu repair ends (one outage)
# node u: down over the whole window: no life at all
# node v: down from before the window to 10 h; a nic fault [3, 4] inside that outage fails at no
# uptime, so it is downtime too
TOUCH = """
    node,part,down_h,up_h
    t,gpu,0,5
    t,gpu,10,20
    t,nic,20,25
    u,gpu,-10,200
    v,gpu,-5,10
    v,nic,3,4
"""

TOUCH_LIVES_MAPPING = """
    dataset: hand_touch_lives
    kind: lives
    unit: serial
    start: inserted
    end: removed
    failed: {column: event, true_values: [DBE]}
    classes: {column: event, map: {DBE: gpu_memory}, default: gpu}
    window: {start: 2026-06-01T00:00:00Z, end: 2026-06-11T00:00:00Z}
"""
# h1 fails exactly at the window start (no life), then serves from 06-02 to the window end
TOUCH_LIVES = """
    serial,inserted,removed,event
    h1,2026-05-31T00:00:00Z,2026-06-01T00:00:00Z,DBE
    h1,2026-06-02T00:00:00Z,,
"""


@pytest.fixture(scope="module")
def touch() -> duckdb.DuckDBPyConnection:
    con = _connect()
    _load(con, _inline(TOUCH_MAPPING, TOUCH))
    _load(con, _inline(TOUCH_LIVES_MAPPING, TOUCH_LIVES))
    warehouse.create_views(con)
    return con


def test_touching_faults_merge_and_window_start_is_no_failure_12(
    touch: duckdb.DuckDBPyConnection,
) -> None:
    # t: outages [0, 5] (no failure: at the window start) and [10, 25] {gpu, nic}: uptime 5
    # before it, 100 - 5 - 15 = 80 in all, so 75 after it; u has no uptime, so no life; v is up
    # from 10 h: 90 h; one of the 4 units is not in the file
    assert _lives(touch, "hand_touch") == [
        ("hand_touch-unobserved-1", "gpu", 1, 0.0, 100.0, False),
        ("hand_touch-unobserved-1", "nic", 1, 0.0, 100.0, False),
        ("t", "gpu", 1, 0.0, 5.0, True),
        ("t", "gpu", 2, 0.0, 75.0, False),
        ("t", "nic", 1, 0.0, 5.0, True),
        ("t", "nic", 2, 0.0, 75.0, False),
        ("v", "gpu", 1, 0.0, 90.0, False),
        ("v", "nic", 1, 0.0, 90.0, False),
    ]


def test_lives_failure_at_window_start_is_no_life_12(touch: duckdb.DuckDBPyConnection) -> None:
    # h1's first segment (24 h) ends at the window start; the second starts at age 24 h and is
    # censored at the window end, 9 days later: 24 + 216 = 240 h
    assert _lives(touch, "hand_touch_lives") == [("h1", "gpu_memory", 2, 24.0, 240.0, False)]


def test_fault_lives_have_length_and_fit_12(touch: duckdb.DuckDBPyConnection) -> None:
    from models.exceptions import FewFailuresWarning
    from pipelines.analysis.fit import fit_table, read_lives

    lives = read_lives(touch, view="int_fault_lives")
    assert (lives["exit_h"] > lives["entry_h"]).all()
    with pytest.warns(FewFailuresWarning, match="fewer than 2 failures"):
        results = fit_table(
            lives.filter(pl.col("dataset") == "hand_touch"), families=("exponential",)
        )
    assert sorted(results["component_class"].unique()) == ["gpu", "nic"]


def test_warehouse_before_groups_gains_the_column_12(touch: duckdb.DuckDBPyConnection) -> None:
    con = duckdb.connect()
    columns = touch.execute(
        "select column_name, data_type from information_schema.columns "
        "where table_name = 'raw_fault_events' and column_name != 'unit_group' "
        "order by ordinal_position"
    ).fetchall()
    con.execute(f"create table raw_fault_events ({', '.join(f'{c} {t}' for c, t in columns)})")
    _load(con, _inline(TOUCH_MAPPING, TOUCH).drop("unit_group"))
    warehouse.apply_schema(con)
    warehouse.create_views(con)
    counts = con.execute("select count(*), count(unit_group) from raw_fault_events").fetchone()
    assert counts == (6, 0)
    assert _lives(con, "hand_touch") == _lives(touch, "hand_touch")


_FAULT = st.tuples(
    st.sampled_from(["a", "b"]),  # unit
    st.sampled_from(["gpu", "nic"]),  # part
    st.integers(-3, 12),  # start, hours; the window is [0, 10]
    st.one_of(st.none(), st.integers(0, 4)),  # length (none: still open)
)


@pytest.fixture(scope="module")
def scratch() -> duckdb.DuckDBPyConnection:
    con = _connect()
    warehouse.create_views(con)
    return con


@settings(
    max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(faults=st.lists(_FAULT, min_size=1, max_size=8))
def test_fault_lives_never_have_zero_length_12(
    scratch: duckdb.DuckDBPyConnection, faults: list[tuple[str, str, int, int | None]]
) -> None:
    mapping = TOUCH_MAPPING.replace("end: 100", "end: 10")
    text = "node,part,down_h,up_h\n" + "\n".join(
        f"{unit},{part},{start},{'' if length is None else start + length}"
        for unit, part, start, length in faults
    )
    scratch.execute("delete from raw_fault_events")
    _load(scratch, _inline(mapping, text))
    counts = scratch.execute(
        "select count_if(exit_h <= entry_h), count(*) from int_fault_lives"
    ).fetchone()
    assert counts is not None
    n_empty, n_lives = counts
    assert n_empty == 0
    assert n_lives > 0  # the unobserved units at least


LIVES_WINDOW_MAPPING = """
    dataset: hand_window_lives
    kind: lives
    unit: serial
    time: {unit: hours, origin: 2026-06-01T00:00:00Z}
    start: inserted
    end: removed
    failed: {column: event, true_values: [DBE]}
    classes: {column: event, map: {DBE: gpu_memory}, default: gpu}
    window: {start: 0, end: 10}
"""


@settings(
    max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    segments=st.lists(
        st.tuples(
            st.sampled_from(["g1", "g2"]),
            st.integers(-4, 12),  # inserted, hours
            st.one_of(st.none(), st.integers(0, 5)),  # length (none: still in service)
            st.booleans(),  # ended in a failure
        ),
        min_size=1,
        max_size=6,
    )
)
def test_window_lives_never_have_zero_length_12(
    scratch: duckdb.DuckDBPyConnection, segments: list[tuple[str, int, int | None, bool]]
) -> None:
    text = "serial,inserted,removed,event\n" + "\n".join(
        f"{unit},{start},{'' if length is None else start + length},"
        f"{'DBE' if failed and length is not None else ''}"
        for unit, start, length, failed in segments
    )
    scratch.execute("delete from raw_fault_events")
    _load(scratch, _inline(LIVES_WINDOW_MAPPING, text))
    counts = scratch.execute(
        "select count(*) filter (where exit_h <= entry_h), count(*) filter (where exit_h <= 0) "
        "from int_fault_lives"
    ).fetchone()
    assert counts == (0, 0)


GROUPED_MAPPING = """
    dataset: grouped
    kind: events
    unit: [sys, node]
    time: {unit: hours, origin: 2026-06-01T00:00:00Z}
    start: down_h
    end: up_h
    categories: [part]
    classes: {column: part, map: {gpu: gpu, nic: nic}}
    groups:
      column: sys
      values:
        s1: {population: 3, window: {start: 0, end: 10}}
        s2: {population: 2, window: {start: 5, end: 12}}
"""


@settings(
    max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(faults=st.lists(st.tuples(st.sampled_from(["s1", "s2"]), _FAULT), min_size=1, max_size=8))
def test_grouped_lives_split_each_units_uptime_12(
    scratch: duckdb.DuckDBPyConnection,
    faults: list[tuple[str, tuple[str, str, int, int | None]]],
) -> None:
    text = "sys,node,part,down_h,up_h\n" + "\n".join(
        f"{sys},{unit},{part},{start},{'' if length is None else start + length}"
        for sys, (unit, part, start, length) in faults
    )
    scratch.execute("delete from raw_fault_events")
    _load(scratch, _inline(GROUPED_MAPPING, text))
    per_unit = scratch.sql(
        """
        with by_class as (
            select unit_group, unit_id, component_class, sum(exit_h - entry_h) as uptime_h
            from int_fault_lives
            group by all
        )

        select
            unit_group,
            unit_id,
            count(*) as n_classes,
            count(distinct round(uptime_h, 6)) as n_uptimes,
            max(uptime_h) as uptime_h
        from by_class
        group by all
        """
    ).pl()
    n_classes = len({part for _, (_, part, _, _) in faults})
    # every unit with uptime is at risk for every class, and each class's lives split it
    assert (per_unit["n_classes"] == n_classes).all()
    assert (per_unit["n_uptimes"] == 1).all()
    window_h = {"s1": 10.0, "s2": 7.0}
    assert (per_unit["uptime_h"] <= per_unit["unit_group"].replace_strict(window_h)).all()
    unobserved = per_unit.filter(pl.col("unit_id").str.contains("unobserved"))
    observed = {(sys, f"{sys}/{unit}") for sys, (unit, _, _, _) in faults}
    for group, population in (("s1", 3), ("s2", 2)):
        n_seen = sum(1 for g, _ in observed if g == group)
        # a group known only from the mapping (no record in the file) is not in the warehouse
        n_unseen = population - n_seen if n_seen else 0
        assert unobserved.filter(pl.col("unit_group") == group).height == n_unseen
        assert (
            unobserved.filter(pl.col("unit_group") == group)["uptime_h"] == window_h[group]
        ).all()


SERVICE_MAPPING = """
    dataset: service
    kind: events
    unit: [sys, node]
    time: {unit: hours, origin: 2026-06-01T00:00:00Z}
    start: down_h
    end: up_h
    categories: [part]
    classes: {column: part, map: {gpu: gpu}}
    groups:
      column: sys
      population: nodes
      window: {start: prod_h, end: decom_h, open: [current]}
    window: {end: 50}
"""
# s1 (3 nodes) serves from its earliest start, 0 h, to its latest end, 50 h (n1 is "current":
# the top-level end); s2 (2 nodes) from 10 h to 30 h
SERVICE = """
    sys,nodes,node,prod_h,decom_h,part,down_h,up_h
    s1,3,n1,0,current,gpu,20,25
    s1,3,n2,5,40,gpu,30,31
    s2,2,n3,10,30,gpu,15,16
"""


def test_group_window_spans_its_service_dates_12() -> None:
    con = _connect()
    _load(con, _inline(SERVICE_MAPPING, SERVICE))
    warehouse.create_views(con)
    # s1: n1 down [20, 25]: 20 h up, then 50 - 25 = 25 h; n2 down [30, 31]: 30 h, then 19 h;
    # one unseen node over 50 h. s2: n3 down [15, 16]: 5 h, then 14 h; one unseen over 20 h
    assert _lives(con, "service") == [
        ("s1/n1", "gpu", 1, 0.0, 20.0, True),
        ("s1/n1", "gpu", 2, 0.0, 25.0, False),
        ("s1/n2", "gpu", 1, 0.0, 30.0, True),
        ("s1/n2", "gpu", 2, 0.0, 19.0, False),
        ("s2/n3", "gpu", 1, 0.0, 5.0, True),
        ("s2/n3", "gpu", 2, 0.0, 14.0, False),
        ("service-s1-unobserved-1", "gpu", 1, 0.0, 50.0, False),
        ("service-s2-unobserved-1", "gpu", 1, 0.0, 20.0, False),
    ]


# ---------------------------------------------------------------------------------------------
# The real data sets

REAL_FILES = [
    ("titan_gc_full", TITAN / "gc_full.csv"),
    ("titan_gc_summary", TITAN / "gc_summary_loc.csv"),
    ("infinitehbd", HBD / "fault_trace.json"),
]


@pytest.fixture(scope="module")
def real() -> tuple[duckdb.DuckDBPyConnection, dict[str, pl.DataFrame]]:
    missing = [str(path) for _, path in REAL_FILES if not path.exists()]
    if missing:
        pytest.skip(f"real data not found: {missing}")
    con = _connect()
    rows = {}
    for name, path in REAL_FILES:
        parsed = parse(
            path.read_bytes(),
            source_file=str(path),
            mapping=load_mapping(MAPPINGS / f"{name}.yaml"),
        )
        assert parsed.rejects.height == 0
        _load(con, parsed.rows)
        rows[name] = parsed.rows
    warehouse.create_views(con)
    return con, rows


def _by_class(con: duckdb.DuckDBPyConnection, dataset: str) -> pl.DataFrame:
    return con.sql(
        """
        select
            component_class,
            count(*) as n_lives,
            count(distinct unit_id) as n_units,
            count_if(failed) as n_failures,
            sum(exit_h - entry_h) as exposure_h
        from int_fault_lives
        where dataset = $d
        group by component_class
        order by component_class
        """,
        params={"d": dataset},
    ).pl()


def _expected_hbd_failures() -> dict[str, int]:
    """Faults per component class from fault_statistics.json, classed as the mapping says."""
    stats = json.loads((HBD / "fault_statistics.json").read_text())
    mapping = load_mapping(MAPPINGS / "infinitehbd.yaml")
    by_desc, by_class = (rule.as_dict() for rule in mapping.class_rules)
    totals: dict[str, int] = {}
    for classes in stats.values():
        for cls, descs in classes.items():
            if cls == "LevelTotal":
                continue
            for desc, n in descs.items():
                if desc == "ClassTotal":
                    continue
                target = by_desc.get(desc) or by_class.get(cls) or mapping.default_class
                totals[target] = totals.get(target, 0) + n
    return totals


def _union_downtime_h(faults: pl.DataFrame) -> float:
    """Hours each node was down in at least one fault, summed over nodes."""
    merged = (
        faults.sort("unit_id", "start_ts")
        .with_columns(
            pl.col("end_ts").cum_max().shift(1).over("unit_id").alias("earlier_end"),
        )
        .with_columns(
            (pl.col("earlier_end").is_null() | (pl.col("start_ts") >= pl.col("earlier_end")))
            .cum_sum()
            .over("unit_id")
            .alias("outage")
        )
        .group_by("unit_id", "outage")
        .agg(pl.col("start_ts").min(), pl.col("end_ts").max())
    )
    return (merged["end_ts"] - merged["start_ts"]).dt.total_microseconds().sum() / 3.6e9


def test_infinitehbd_lives_per_class(real: tuple[duckdb.DuckDBPyConnection, dict]) -> None:
    con, rows = real
    lives = _by_class(con, "infinitehbd")
    expected = _expected_hbd_failures()
    assert sum(expected.values()) == 584
    assert dict(zip(lives["component_class"], lives["n_failures"], strict=True)) == expected
    # every unit of the population is at risk for every class; each failure starts a new life
    assert lives["n_units"].to_list() == [HBD_POPULATION] * lives.height
    assert (lives["n_lives"] == HBD_POPULATION + lives["n_failures"]).all()
    # exposure: 400 nodes x 349 days, less the time nodes were down (overlapping faults once)
    downtime_h = _union_downtime_h(rows["infinitehbd"])
    assert 3_200 * 24 < downtime_h < 3_240 * 24
    for exposure in lives["exposure_h"]:
        assert exposure == pytest.approx(HBD_POPULATION * HBD_WINDOW_H - downtime_h, rel=1e-9)


def test_infinitehbd_never_failing_nodes(real: tuple[duckdb.DuckDBPyConnection, dict]) -> None:
    con, _ = real
    units = con.execute(
        """
        select
            count(distinct unit_id) filter (where unit_id like 'infinitehbd-unobserved-%'),
            count(distinct unit_id) filter (where unit_id not like 'infinitehbd-unobserved-%'),
            min(exit_h) filter (where unit_id like 'infinitehbd-unobserved-%'),
            bool_or(failed) filter (where unit_id like 'infinitehbd-unobserved-%')
        from int_fault_lives
        where dataset = 'infinitehbd'
        """
    ).fetchone()
    assert units == (169, 231, pytest.approx(HBD_WINDOW_H), False)


def test_infinitehbd_repairs(real: tuple[duckdb.DuckDBPyConnection, dict]) -> None:
    con, _ = real
    n, n_open, median_d, mean_d, levels = con.execute(
        """
        select
            count(*),
            count(*) filter (where repair_h is null),
            median(repair_h) / 24,
            avg(repair_h) / 24,
            list(distinct category_l1 order by category_l1)
        from int_fault_repairs
        where dataset = 'infinitehbd'
        """
    ).fetchone()
    assert (n, n_open) == (584, 0)
    assert median_d == pytest.approx(0.85, abs=0.01)
    assert mean_d == pytest.approx(5.5, abs=0.05)
    assert levels == ["Hardware Failure", "Other Failure", "Software Failure"]


def test_titan_summary_lives_per_batch(real: tuple[duckdb.DuckDBPyConnection, dict]) -> None:
    con, _ = real
    batches = con.execute(
        """
        select batch, component_class, count(*), count_if(failed), sum(exit_h) / 24 / 365
        from int_fault_lives
        where dataset = 'titan_gc_summary'
        group by all
        order by batch
        """
    ).fetchall()
    assert [b[:4] for b in batches] == [("new", "gpu", 11_370, 62), ("old", "gpu", 18_837, 5_027)]
    assert sum(b[4] for b in batches) == pytest.approx(100_889.5, abs=1)


def test_titan_full_ages_add_up_to_summary(real: tuple[duckdb.DuckDBPyConnection, dict]) -> None:
    con, _ = real
    lives = _by_class(con, "titan_gc_full")
    assert lives["component_class"].to_list() == ["gpu_memory", "pcie"]
    assert lives["n_lives"].to_list() == [36_185, 36_185]
    assert lives["n_units"].to_list() == [30_207, 30_207]
    # segments ending in DBE (3,787) but one at the lights-out instant, which is the window end;
    # segments ending in OTB (1,422) plus 5 DBE segments with an OTB line at the same removal
    assert lives["n_failures"].to_list() == [3_786, 1_427]
    # a GPU keeps aging across moves: its last exit age is its total time in service
    mismatched = con.execute(
        """
        with full_ages as (
            select unit_id, max(exit_h) as age_h
            from int_fault_lives
            where dataset = 'titan_gc_full' and component_class = 'gpu_memory'
            group by unit_id
        ),

        summary_ages as (
            select unit_id, exit_h as age_h
            from int_fault_lives
            where dataset = 'titan_gc_summary'
        )

        select count(*)
        from full_ages
        full join summary_ages
            on full_ages.unit_id = summary_ages.unit_id
        where full_ages.age_h is null
            or summary_ages.age_h is null
            or abs(full_ages.age_h - summary_ages.age_h) > 1e-6
        """
    ).fetchone()
    assert mismatched == (0,)
