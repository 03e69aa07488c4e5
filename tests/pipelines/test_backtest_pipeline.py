"""The back-test pipeline on a tiny hand-built warehouse, with every figure derived by hand.

Window: 10 days from 2026-01-01 (mid-point at 120 h). Lives (hours from the window start):
GPU-level class ``gpu``: four GPU lives from 0 h; one fails at 48 h, one at 144 h, two are
censored at 240 h. Node-level class ``nic``: two node lives from 0 to 240 h, no failure.

Jobs (start hour, attempts):
- J1: 16 GPUs on 2 nodes, 96 -> 106 h, completed; 9 saves, 540 s of them (tau 3600, delta 60).
- J2: 8 GPUs on 1 node, estimated; 168 -> 170 (gpu), 170.5 -> 171.5 (unknown), 172 -> 177.
- J3: 4 GPUs on 1 node, 0 -> 5 h: it starts with the window, before any exposure.
- J5: 8 GPUs on 1 node, 24 -> 26 (application), 26.5 -> 28.
- J6: 2 GPUs: below ``min_gpus`` = 4.
"""

from __future__ import annotations

import dataclasses
import math
from typing import TYPE_CHECKING

import duckdb
import polars as pl
import pytest
from scipy import stats

from pipelines import ingest, warehouse
from pipelines.analysis.backtest import run_backtest
from synth import SynthConfig, synthesize

if TYPE_CHECKING:
    from collections.abc import Iterator
    from pathlib import Path

T0 = "timestamptz '2026-01-01 00:00:00+00'"


def _at(hours: float) -> str:
    return f"{T0} + to_microseconds({round(hours * 3_600_000_000)})"


LIVES = [  # class, level, entry h, exit h, failed
    ("gpu", "gpu", 0, 48, True),
    ("gpu", "gpu", 0, 144, True),
    ("gpu", "gpu", 0, 240, False),
    ("gpu", "gpu", 0, 240, False),
    ("nic", "node", 0, 240, False),
    ("nic", "node", 0, 240, False),
]
ATTEMPTS = [  # job, start h, end h, gpus, nodes
    ("J1", 96, 106, 16, 2),
    ("J2", 168, 170, 8, 1),
    ("J2", 170.5, 171.5, 8, 1),
    ("J2", 172, 177, 8, 1),
    ("J3", 0, 5, 4, 1),
    ("J5", 24, 26, 8, 1),
    ("J5", 26.5, 28, 8, 1),
    ("J6", 30, 31, 2, 1),
]
INTERRUPTIONS = [("J2", "gpu"), ("J2", "unknown"), ("J5", "application")]
# job, gpus, start h, end h, wall, productive, checkpoint, startup, other, restart, n_int,
# estimated, n_checkpoints
LEDGER = [
    ("J1", 16, 96, 106, 36000, 32400, 540, 600, 2460, 0, 0, False, 9),
    ("J2", 8, 168, 177, 32400, 25000, 360, 300, 0, 3600, 2, True, None),
    ("J3", 4, 0, 5, 18000, 17000, 0, 1000, 0, 0, 0, False, 0),
    ("J5", 8, 24, 28, 14400, 9000, 0, 300, 0, 1800, 1, False, 0),
    ("J6", 2, 30, 31, 3600, 3000, 0, 600, 0, 0, 0, False, 0),
]


def _values(rows: list[tuple[object, ...]]) -> str:
    return ", ".join("(" + ", ".join(_sql(v) for v in row) + ")" for row in rows)


def _sql(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return f"'{value}'"
    return repr(value)


@pytest.fixture
def con() -> Iterator[duckdb.DuckDBPyConnection]:
    """An in-memory warehouse whose back-test inputs are the hand-built rows above."""
    db = duckdb.connect(":memory:")
    db.execute("set TimeZone = 'UTC'")
    warehouse.init(db)
    db.execute(
        "create or replace view stg_observation_window as select "
        f"{T0} as window_start, {_at(240)} as window_end"
    )
    db.execute(
        "create or replace view int_component_lives as select component_class, unit_level, "
        f"{T0} + to_microseconds(cast(entry_h * 3600e6 as bigint)) as observed_from_ts, "
        f"{T0} + to_microseconds(cast(exit_h * 3600e6 as bigint)) as observed_to_ts, failed "
        f"from (values {_values(LIVES)}) "
        "as t(component_class, unit_level, entry_h, exit_h, failed)"
    )
    db.execute(
        "create or replace view int_job_attempts as select job_id_raw, "
        f"{T0} + to_microseconds(cast(s * 3600e6 as bigint)) as start_ts, "
        f"{T0} + to_microseconds(cast(e * 3600e6 as bigint)) as end_ts, n_gpus, n_nodes "
        f"from (values {_values(ATTEMPTS)}) as t(job_id_raw, s, e, n_gpus, n_nodes)"
    )
    db.execute(
        "create or replace view int_job_interruptions as select * from "
        f"(values {_values(INTERRUPTIONS)}) as t(job_id_raw, cause_class)"
    )
    db.execute(
        "create or replace view fct_job_goodput as select job_id_raw, n_gpus, "
        f"{T0} + to_microseconds(cast(s * 3600e6 as bigint)) as first_start_ts, "
        f"{T0} + to_microseconds(cast(e * 3600e6 as bigint)) as last_end_ts, "
        "wall_s, productive_s, checkpoint_s, startup_s, other_s, restart_s, n_interruptions, "
        "estimated, 3600.0 as assumed_checkpoint_interval_s, 60.0 as assumed_checkpoint_s, "
        "productive_s / wall_s as goodput, n_checkpoints "
        f"from (values {_values(LEDGER)}) as t(job_id_raw, n_gpus, s, e, wall_s, "
        "productive_s, checkpoint_s, startup_s, other_s, restart_s, n_interruptions, "
        "estimated, n_checkpoints)"
    )
    try:
        yield db
    finally:
        db.close()


def _wall(p: float, tau: float, delta: float, r: float, u: float, lam_per_h: float) -> float:
    """Daly's expected wall time plus fixed overhead, written out (rate per hour)."""
    lam = lam_per_h / 3600.0
    return u + p / tau * math.exp(lam * r) * math.expm1(lam * (tau + delta)) / lam


def test_backtest_jobs_match_hand_figures(con: duckdb.DuckDBPyConnection) -> None:
    run = run_backtest(con, min_gpus=4)
    jobs = {r["job_id_raw"]: r for r in run.jobs.iter_rows(named=True)}
    assert set(jobs) == {"J1", "J2", "J3", "J5"}  # J6 has 2 GPUs
    assert not jobs["J3"]["has_history"]  # starts at the window start: nothing observed before
    assert jobs["J3"]["interruptions_expected"] is None

    # J1 at 96 h: gpu exposure 48 + 3 x 96 = 336 GPU-h with 1 failure; nic 192 node-h, none
    j1 = jobs["J1"]
    assert j1["interruptions_expected"] == pytest.approx(10 * 16 / 336)
    assert (j1["interruptions_observed"], j1["bucket"], j1["period"]) == (0, "9-64", "first half")
    assert (j1["checkpoint_interval_s"], j1["checkpoint_cost_s"]) == (3600, 60)
    assert j1["checkpoint_source"] == "measured"
    # fleet before 96 h: J3 (5 h, no interruption) and J5 (3.5 h, one application interruption)
    assert j1["job_level_rate_per_h"] == pytest.approx(1 / 8.5)
    assert (j1["restart_per_interruption_s"], j1["restart_source"]) == (1800, "fleet_before")
    lam = 16 / 336 + 1 / 8.5
    wall = _wall(32400, 3600, 60, 1800, 600 + 2460, lam)
    assert j1["predicted_wall_s"] == pytest.approx(wall)
    assert j1["goodput_predicted"] == pytest.approx(32400 / wall)
    assert j1["goodput_measured"] == pytest.approx(0.9)
    # Fay-Feuer with gpu weight 160/336 (1 failure) and nic 20/192 (none): y^2 / v = 1
    w = 160 / 336
    assert j1["interruptions_expected_lo"] == pytest.approx(w / 2 * stats.chi2.ppf(0.025, 2))
    assert j1["interruptions_expected_hi"] == pytest.approx(w / 2 * stats.chi2.ppf(0.975, 4))
    wall_hi = _wall(32400, 3600, 60, 1800, 3060, w / 2 * stats.chi2.ppf(0.975, 4) / 10 + 1 / 8.5)
    assert j1["goodput_predicted_lo"] == pytest.approx(32400 / wall_hi)

    # J2 at 168 h: gpu exposure 48 + 144 + 2 x 168 = 528 with 2 failures; 8 h x 8 GPUs
    j2 = jobs["J2"]
    assert j2["interruptions_expected"] == pytest.approx(64 * 2 / 528)
    assert (j2["interruptions_observed"], j2["interruptions_unattributed"]) == (1, 1)
    assert (j2["checkpoint_source"], j2["checkpoint_interval_s"]) == ("assumed", 3600)
    assert (j2["restart_per_interruption_s"], j2["restart_source"]) == (1800, "job")
    assert j2["job_level_rate_per_h"] == pytest.approx(1 / 18.5)  # J1's 10 h join the pool
    assert j2["period"] == "second half"

    # J5 at 24 h: no failure yet, so nothing expected; its application exit is "other"
    j5 = jobs["J5"]
    assert j5["interruptions_expected"] == 0
    assert (j5["interruptions_other"], j5["interruptions_observed"]) == (1, 0)
    assert j5["job_level_rate_per_h"] == 0  # only J3 (no interruption) ended before 24 h


def test_backtest_buckets_and_view(con: duckdb.DuckDBPyConnection) -> None:
    run_backtest(con, min_gpus=1)  # an older run: the view shows only the latest
    run = run_backtest(con, min_gpus=4)
    view = warehouse.query(con, "select * from rpt_projection_backtest")
    assert view.columns == [
        *("bucket", "period", "n_jobs", "interruptions_observed", "interruptions_expected"),
        *("oe_ratio", "oe_lo", "oe_hi", "goodput_measured", "goodput_predicted"),
        *("goodput_predicted_lo", "goodput_predicted_hi"),
    ]
    rows = {(r["bucket"], r["period"]): r for r in view.iter_rows(named=True)}
    assert list(rows) == [
        ("1-8", "all"),
        ("1-8", "first half"),
        ("1-8", "second half"),
        ("9-64", "all"),
        ("9-64", "first half"),
        ("all", "all"),
        ("all", "first half"),
        ("all", "second half"),
    ]
    everything = rows[("all", "all")]
    expected = 160 / 336 + 128 / 528
    assert everything["n_jobs"] == 3  # J1, J2, J5 (J3 has no history)
    assert everything["interruptions_observed"] == 1
    assert everything["interruptions_expected"] == pytest.approx(expected)
    assert everything["oe_ratio"] == pytest.approx(1 / expected)
    assert everything["oe_lo"] == pytest.approx(stats.chi2.ppf(0.025, 2) / 2 / expected)
    assert everything["oe_hi"] == pytest.approx(stats.chi2.ppf(0.975, 4) / 2 / expected)
    # GPU-hour weighted: sum(productive x GPUs) / sum(wall x GPUs)
    good = 32400 * 16 + 25000 * 8 + 9000 * 8
    assert everything["goodput_measured"] == pytest.approx(
        good / (36000 * 16 + 32400 * 8 + 14400 * 8)
    )
    first = rows[("all", "first half")]
    assert (first["n_jobs"], first["interruptions_observed"]) == (2, 0)
    assert first["oe_ratio"] == 0
    assert first["oe_lo"] == 0
    assert first["oe_hi"] == pytest.approx(stats.chi2.ppf(0.975, 2) / 2 / (160 / 336))
    stored = warehouse.query(
        con,
        "select interruptions_unattributed, interruptions_other from backtest_buckets "
        "where run_id = $id and bucket = 'all' and period = 'all'",
        {"id": run.run_id},
    ).row(0)
    assert stored == (1, 1)
    # the expected count's sd: failures at 48 h (known to J1 and J2) and 144 h (J2 only)
    (sd,) = warehouse.query(
        con,
        "select interruptions_expected_sd from backtest_buckets "
        "where run_id = $id and bucket = 'all' and period = 'all'",
        {"id": run.run_id},
    ).row(0)
    w_48, w_144 = 160 / 336 + 64 / 528, 64 / 528
    assert sd == pytest.approx(math.sqrt(w_48**2 + w_144**2))
    (n_runs,) = con.execute("select count(*) from backtest_runs").fetchone() or (0,)
    assert n_runs == 2


def test_backtest_per_class_adds_up_to_the_buckets(con: duckdb.DuckDBPyConnection) -> None:
    """Per class and bucket over the whole window: gpu carries every failure, nic none."""
    run = run_backtest(con, min_gpus=4)
    view = warehouse.query(con, "select * from rpt_projection_backtest_classes")
    assert view.columns == [
        *("component_class", "unit_level", "bucket", "n_jobs", "interruptions_observed"),
        *("interruptions_expected", "oe_ratio", "oe_lo", "oe_hi"),
    ]
    rows = {(r["component_class"], r["bucket"]): r for r in view.iter_rows(named=True)}
    assert list(rows) == [
        ("gpu", "1-8"),
        ("gpu", "9-64"),
        ("gpu", "all"),
        ("nic", "1-8"),
        ("nic", "9-64"),
        ("nic", "all"),
    ]
    # J1 (9-64) expects 160 / 336 of the failure at 48 h; J2 (1-8) 64 / 528 of each of two;
    # J5 (1-8) started before any failure; J2's gpu interruption is the only one observed
    gpu = rows[("gpu", "all")]
    expected = 160 / 336 + 128 / 528
    assert (gpu["n_jobs"], gpu["interruptions_observed"]) == (3, 1)
    assert gpu["interruptions_expected"] == pytest.approx(expected)
    assert gpu["oe_lo"] == pytest.approx(stats.chi2.ppf(0.025, 2) / 2 / expected)
    assert gpu["oe_hi"] == pytest.approx(stats.chi2.ppf(0.975, 4) / 2 / expected)
    assert rows[("gpu", "9-64")]["interruptions_expected"] == pytest.approx(160 / 336)
    assert rows[("gpu", "1-8")]["interruptions_expected"] == pytest.approx(128 / 528)
    assert rows[("gpu", "1-8")]["interruptions_observed"] == 1
    nic = rows[("nic", "all")]
    assert (nic["interruptions_observed"], nic["interruptions_expected"]) == (0, 0)
    assert nic["oe_ratio"] is None  # nothing expected: no ratio
    # the classes add up to the bucket rows of the same run
    buckets = {(r["bucket"], r["period"]): r for r in run.buckets.iter_rows(named=True)}
    for bucket in ("1-8", "9-64", "all"):
        mine = [r for (_, b), r in rows.items() if b == bucket]
        total = buckets[(bucket, "all")]
        assert sum(r["interruptions_observed"] for r in mine) == total["interruptions_observed"]
        assert sum(r["interruptions_expected"] for r in mine) == pytest.approx(
            total["interruptions_expected"]
        )
    (sd,) = warehouse.query(
        con,
        "select interruptions_expected_sd from backtest_classes "
        "where run_id = $id and component_class = 'gpu' and bucket = 'all'",
        {"id": run.run_id},
    ).row(0)
    w_48, w_144 = 160 / 336 + 64 / 528, 64 / 528
    assert sd == pytest.approx(math.sqrt(w_48**2 + w_144**2))


def test_backtest_reads_causes_from_the_ledger_when_it_lists_them(
    con: duckdb.DuckDBPyConnection,
) -> None:
    # the ledger's interruption_causes stand in for int_job_interruptions (emptied here)
    con.execute("create table fct_job_goodput_base as select * from fct_job_goodput")
    con.execute(
        "create or replace view fct_job_goodput as select base.*, case base.job_id_raw "
        "when 'J2' then ['gpu', 'unknown'] when 'J5' then ['application'] else [] end "
        "as interruption_causes from fct_job_goodput_base as base"
    )
    con.execute(
        "create or replace view int_job_interruptions as select * from "
        "(values ('J2', 'nic')) as t(job_id_raw, cause_class) where false"
    )
    run = run_backtest(con, min_gpus=4)
    counts = {
        r["job_id_raw"]: (
            r["interruptions_observed"],
            r["interruptions_unattributed"],
            r["interruptions_other"],
        )
        for r in run.jobs.iter_rows(named=True)
    }
    assert counts == {"J1": (0, 0, 0), "J2": (1, 1, 0), "J3": (0, 0, 0), "J5": (0, 0, 1)}


def test_backtest_counts_saves_from_training_events(con: duckdb.DuckDBPyConnection) -> None:
    # a ledger without a save count: J1's nine save ends come from int_training_events
    con.execute("create table ledger_copy as select * exclude (n_checkpoints) from fct_job_goodput")
    con.execute("create or replace view fct_job_goodput as select * from ledger_copy")
    events = [("J1", "checkpoint_save_end")] * 9 + [("J1", "step"), ("J5", "step")]
    con.execute(
        "create or replace view int_training_events as select * from "
        f"(values {_values(events)}) as t(job_id_raw, event)"
    )
    run = run_backtest(con, min_gpus=4)
    jobs = {r["job_id_raw"]: r for r in run.jobs.iter_rows(named=True)}
    assert (jobs["J1"]["checkpoint_source"], jobs["J1"]["checkpoint_interval_s"]) == (
        "measured",
        3600,
    )
    assert jobs["J1"]["checkpoint_cost_s"] == 60
    # J5 logged steps and no save: its kept compute is one segment with no save
    assert (jobs["J5"]["checkpoint_source"], jobs["J5"]["checkpoint_interval_s"]) == (
        "no_saves",
        9000,
    )
    assert jobs["J3"]["checkpoint_source"] == "assumed"  # no event at all
    (source,) = con.execute(
        "select checkpoint_from from backtest_runs where run_id = $id", {"id": run.run_id}
    ).fetchone() or ("",)
    assert source == "int_training_events"


def test_slow_time_out_of_productive_does_not_skew_the_fail_stop_back_test(
    con: duckdb.DuckDBPyConnection,
) -> None:
    """J1 kept 32,400 s of compute; the ledger now says 28,800 s productive and 3,600 s slow.

    The job ran as long, saved as often and met the same faults: its fail-stop prediction must
    not change, only the goodputs' numerator (productive). Before, the prediction ran 28,800 s of
    compute (the slow hour left out of the predicted wall, not of the measured one) and read
    3,200 s between saves.
    """
    before = run_backtest(con, min_gpus=4)
    con.execute("create table ledger_before as select * from fct_job_goodput")
    con.execute(
        "create or replace view fct_job_goodput as select * replace ("
        "case job_id_raw when 'J1' then productive_s - 3600 else productive_s end "
        "as productive_s), case job_id_raw when 'J1' then 3600.0 when 'J2' then null "
        "else 0.0 end as slow_s from ledger_before"
    )
    after = run_backtest(con, min_gpus=4)
    old = {r["job_id_raw"]: r for r in before.jobs.iter_rows(named=True)}
    new = {r["job_id_raw"]: r for r in after.jobs.iter_rows(named=True)}
    j1 = new["J1"]
    lam = 16 / 336 + 1 / 8.5  # as in test_backtest_jobs_match_hand_figures
    wall = _wall(32400, 3600, 60, 1800, 600 + 2460, lam)  # the compute run at whatever pace
    assert j1["checkpoint_interval_s"] == 3600  # (28,800 + 3,600) / 9 saves
    assert j1["predicted_wall_s"] == pytest.approx(wall)
    assert j1["predicted_wall_s"] == pytest.approx(old["J1"]["predicted_wall_s"])
    assert (j1["productive_s"], j1["slow_s"]) == (28800, 3600)
    assert j1["goodput_measured"] == pytest.approx(28800 / 36000)
    assert j1["goodput_predicted"] == pytest.approx(28800 / wall)
    # measured over predicted is the fail-stop model's figure, as before the split
    assert j1["goodput_measured"] / j1["goodput_predicted"] == pytest.approx(
        old["J1"]["goodput_measured"] / old["J1"]["goodput_predicted"]
    )
    # a null slow_s (J2, estimated) and a 0 one are no slow time: those jobs are unchanged
    for job in ("J2", "J5"):
        assert new[job]["predicted_wall_s"] == pytest.approx(old[job]["predicted_wall_s"])
        assert new[job]["goodput_predicted"] == pytest.approx(old[job]["goodput_predicted"])
    assert new["J2"]["slow_s"] is None
    # the bucket J1 is alone in: measured and predicted both lose the slow hour's share
    bucket = {(r["bucket"], r["period"]): r for r in after.buckets.iter_rows(named=True)}[
        ("9-64", "all")
    ]
    assert bucket["goodput_measured"] == pytest.approx(28800 / 36000)
    assert bucket["goodput_predicted"] == pytest.approx(28800 / wall)


# --------------------------------------------------------------------------- synthetic fleet
@pytest.mark.slow
@pytest.mark.parametrize("factor", [1.0, 2.0])
def test_backtest_on_a_synthetic_exponential_fleet(tmp_path: Path, factor: float) -> None:
    """Issue #16's acceptance: O/E covers 1 per bucket; a doubled hazard is flagged."""
    base = SynthConfig(
        nodes=64, days=60, seed=16, jobs_per_node_day=1.0, hostile=False
    ).with_families({"all": "exponential"})
    classes = {  # five times the default rates: enough interruptions to test against
        name: dataclasses.replace(spec, scale_h=spec.scale_h / 5)
        for name, spec in base.classes.items()
    }
    config = dataclasses.replace(
        base, classes=classes, hazard_change_at_frac=0.5, hazard_change_factor=factor
    )
    landing = tmp_path / "landing"
    synthesize(landing, config)
    db = tmp_path / "relia.duckdb"
    ingest.ingest(db, ingest.discover([landing]))
    with warehouse.connect(db) as con:
        run_backtest(con, min_gpus=1)
        rows = {
            (r["bucket"], r["period"]): r
            for r in warehouse.query(con, "select * from rpt_projection_backtest").iter_rows(
                named=True
            )
        }
        by_class = warehouse.query(con, "select * from rpt_projection_backtest_classes")
    if factor == 1.0:
        for (bucket, period), row in rows.items():
            if period == "all" and row["interruptions_expected"] >= 1:
                assert row["oe_lo"] <= 1.0 <= row["oe_hi"], (bucket, row)
    else:
        assert rows[("all", "second half")]["oe_lo"] > 1.0
    # every class of the failure process that failed is a row; they add up to the bucket
    overall = by_class.filter(pl.col("bucket") == "all")
    assert overall["interruptions_observed"].sum() == rows[("all", "all")]["interruptions_observed"]
    assert overall["interruptions_expected"].sum() == pytest.approx(
        rows[("all", "all")]["interruptions_expected"]
    )
    assert {"gpu", "nvlink", "pcie", "nic", "power"} <= set(overall["component_class"])
