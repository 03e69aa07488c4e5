"""InfiniteHBD node fault trace (StepFun, SIGCOMM 2025) through relia: MTBF per class, repairs.

Data: ``shared/real/infinitehbd-gpu-fault-trace`` (stepfun-ai/InfiniteHBD-Trace at 7aacdc8):
584 faults on 231 of 400 servers over 349 days. The trace lists only faulted servers; the
mapping supplies the population and the window, so the 169 servers never listed are censored
exposure. Nothing here is a published MTBF: the anchors are the trace's own statistics file and
the folder README's verified facts. Findings: ``docs/real_data.md``.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import polars as pl
import pytest

from models import FewFailuresWarning, MtbfFitter, exponential_mtbf, fit_lives, lemon_nodes
from pipelines.analysis.fit import fit_table, read_lives
from pipelines.ingest.sources.fault_log import load_mapping
from pipelines.warehouse import query

if TYPE_CHECKING:
    from tests.real.conftest import RealWarehouse

REPO = Path(__file__).resolve().parents[2]
MAPPINGS = REPO / "data_samples" / "mappings"
HBD = REPO.parent / "shared" / "real" / "infinitehbd-gpu-fault-trace"
POPULATION = 400
WINDOW_H = 349 * 24.0
TICK_H = 1e-4 * 24  # event_time is given in days to 4 decimals: 8.64 s
ENOUGH_FOR_WEIBULL = 20  # failures


@pytest.fixture(scope="module")
def lives(infinitehbd: RealWarehouse) -> pl.DataFrame:
    return read_lives(infinitehbd.con, view="int_fault_lives", dataset="infinitehbd")


@pytest.fixture(scope="module")
def repairs(infinitehbd: RealWarehouse) -> pl.DataFrame:
    return query(
        infinitehbd.con, "select * from int_fault_repairs where dataset = $d", {"d": "infinitehbd"}
    )


def _class_totals() -> dict[str, int]:
    """Faults per component class, from fault_statistics.json and the mapping's class rules."""
    mapping = load_mapping(MAPPINGS / "infinitehbd.yaml")
    by_desc, by_class = (rule.as_dict() for rule in mapping.class_rules)
    totals: dict[str, int] = {}
    for classes in json.loads((HBD / "fault_statistics.json").read_text()).values():
        for name, descs in classes.items():
            if name == "LevelTotal":
                continue
            for desc, n in descs.items():
                if desc != "ClassTotal":
                    target = by_desc.get(desc) or by_class.get(name) or mapping.default_class
                    totals[target] = totals.get(target, 0) + n
    return totals


def _repair_lives(repairs: pl.DataFrame) -> pl.DataFrame:
    """Repair durations as lives that all end (``failed``): one row per repaired fault."""
    return repairs.select(
        pl.lit("repair").alias("component_class"),
        pl.lit(0.0).alias("entry_h"),
        pl.col("repair_h").alias("exit_h"),
        pl.lit(True).alias("failed"),
    )


# ---------------------------------------------------------------------------------------------
# Ingest, population and window


def test_infinitehbd_ingest_pairs_every_fault(infinitehbd: RealWarehouse) -> None:
    load = infinitehbd.loads["infinitehbd"]
    assert (load.n_read, load.n_loaded, load.n_quarantined) == (584, 584, 0)
    assert load.n_ignored == 584  # every fault_end carried by its fault_start's row


def test_infinitehbd_all_400_servers_at_risk_over_the_window(lives: pl.DataFrame) -> None:
    per_class = lives.group_by("component_class").agg(
        pl.col("unit_id").n_unique().alias("n_units"),
        pl.col("failed").sum().alias("n_failures"),
        (pl.col("exit_h") - pl.col("entry_h")).sum().alias("exposure_h"),
    )
    assert (per_class["n_units"] == POPULATION).all()
    assert dict(zip(per_class["component_class"], per_class["n_failures"], strict=True)) == (
        _class_totals()
    )
    # uptime: the same node-hours for every class, the window less the time servers were down
    exposure = per_class["exposure_h"]
    assert exposure.max() - exposure.min() < 1e-6
    assert 0.97 * POPULATION * WINDOW_H < exposure[0] < POPULATION * WINDOW_H
    never = lives.filter(pl.col("unit_id").str.starts_with("infinitehbd-unobserved-"))
    assert never["unit_id"].n_unique() == 169
    assert not never["failed"].any()
    assert (never["exit_h"] == WINDOW_H).all()


# ---------------------------------------------------------------------------------------------
# MTBF per class


def test_infinitehbd_exponential_mtbf_per_class(lives: pl.DataFrame) -> None:
    # pcie and driver have one failure each, four classes 2 to 5: Weibayes rows are chosen
    with (
        pytest.warns(FewFailuresWarning, match="fewer than 2 failures"),
        pytest.warns(FewFailuresWarning, match="4 group.s. have 2 to 5 failures"),
    ):
        table = fit_table(lives)
    exponential = table.filter(pl.col("family") == "exponential")
    assert exponential.height == 12
    for row in exponential.iter_rows(named=True):
        expected = exponential_mtbf(row["n_failures"], row["exposure_h"])
        assert (row["mtbf_h"], row["mtbf_lo_h"], row["mtbf_hi_h"]) == pytest.approx(expected)
    gpu = exponential.filter(pl.col("component_class") == "gpu").row(0, named=True)
    assert gpu["n_failures"] == 158
    # per server: one GPU-class fault every 20,700 h (2.4 years), 17,700-24,400 h at 95 %
    assert gpu["mtbf_lo_h"] < 20_714 < gpu["mtbf_hi_h"]
    assert round(gpu["mtbf_h"], -2) == 20_700
    # the 400 servers together: a fault of any class every 14 h of cluster time
    total_failures = int(exponential["n_failures"].sum())
    assert total_failures == 584
    _, lo, hi = exponential_mtbf(total_failures, gpu["exposure_h"])
    assert lo / POPULATION < 14.0 < hi / POPULATION
    assert lo / POPULATION < WINDOW_H / total_failures < hi / POPULATION  # calendar: 14.3 h


def test_infinitehbd_weibull_per_class_hazard_falls_after_repair(lives: pl.DataFrame) -> None:
    counts = lives.group_by("component_class").agg(pl.col("failed").sum())
    enough = counts.filter(pl.col("failed") >= ENOUGH_FOR_WEIBULL)["component_class"].sort()
    assert enough.to_list() == ["cooling", "gpu", "network", "nic", "power", "unknown"]
    shape = {}
    for name in enough:
        part = lives.filter(pl.col("component_class") == name)
        fitter = MtbfFitter(family="weibull").fit(
            part["exit_h"], part["failed"], entry_h=part["entry_h"]
        )
        row = fitter.fitter_.summary.loc["rho_"]
        shape[name] = (row["coef"], row["coef lower 95%"], row["coef upper 95%"])
    # uptime since the last repair of the class: shape well below 1 for every class but fans
    for name in ("gpu", "network", "nic", "power", "unknown"):
        assert shape[name][2] < 1.0, (name, shape[name])
    assert shape["cooling"][1] < 1.0 < shape["cooling"][2]  # fans: constant hazard fits
    assert shape["gpu"][0] == pytest.approx(0.58, abs=0.01)


def test_infinitehbd_servers_differ_more_than_chance(lives: pl.DataFrame) -> None:
    """Why the shapes fall below 1: some servers fail far more often than others."""
    uptime = (
        lives.filter(pl.col("component_class") == "gpu")
        .group_by("unit_id")
        .agg((pl.col("exit_h") - pl.col("entry_h")).sum().alias("exposure_h"))
    )
    faults = lives.filter(pl.col("failed")).group_by("unit_id").agg(pl.len().alias("n_failures"))
    counts = uptime.join(faults, on="unit_id", how="left").with_columns(
        pl.col("n_failures").fill_null(0)
    )
    rate = counts["n_failures"].sum() / counts["exposure_h"].sum()
    p_zero = np.exp(-rate * counts["exposure_h"].to_numpy())
    expected, sd = p_zero.sum(), math.sqrt(float(np.sum(p_zero * (1 - p_zero))))
    observed = int((counts["n_failures"] == 0).sum())
    assert observed == 169
    assert observed > expected + 5 * sd  # a homogeneous fleet would leave about 93 fault-free
    flagged = lemon_nodes(counts).filter(pl.col("lemon")).sort("observed", descending=True)
    assert flagged["observed"].to_list() == [14, 8]


# ---------------------------------------------------------------------------------------------
# Repair time (fault end - start)


def test_infinitehbd_repair_time_summary(repairs: pl.DataFrame) -> None:
    assert repairs.height == 584
    assert repairs["repair_h"].null_count() == 0
    # README: median 0.85 d, mean 5.5 d
    assert round(float(repairs["repair_h"].median()) / 24, 2) == 0.85
    assert round(float(repairs["repair_h"].mean()) / 24, 1) == 5.5
    below_tick = repairs.filter(pl.col("repair_h") < TICK_H)
    assert below_tick.height == 14  # start and end in the same 8.64 s tick
    assert (below_tick["category_l2"] == "Stress Test Failure").sum() == 12


def test_infinitehbd_repair_time_best_family(repairs: pl.DataFrame) -> None:
    positive = _repair_lives(repairs.filter(pl.col("repair_h") > 0))
    table = fit_lives(positive, by=("component_class",))
    aic = dict(zip(table["family"], table["aic"], strict=True))
    chosen = table.filter(pl.col("chosen")).row(0, named=True)
    # the lowest AIC is log-normal, but Weibull is within 2: the two are not told apart
    assert chosen["family"] == "lognormal"
    assert aic["weibull"] - aic["lognormal"] < 2.0
    assert aic["exponential"] - aic["lognormal"] > 100  # memoryless repairs are out
    weibull = MtbfFitter(family="weibull").fit(positive["exit_h"], positive["failed"])
    rho = weibull.fitter_.summary.loc["rho_"]
    assert rho["coef upper 95%"] < 0.5  # 0.45: a long tail of slow repairs
    # with the 14 sub-tick repairs at half a tick the left tail decides: Weibull wins clearly
    half_tick = _repair_lives(repairs.with_columns(pl.col("repair_h").clip(lower_bound=TICK_H / 2)))
    refit = fit_lives(half_tick, by=("component_class",))
    refit_aic = dict(zip(refit["family"], refit["aic"], strict=True))
    assert refit.filter(pl.col("chosen"))["family"].item() == "weibull"
    assert refit_aic["lognormal"] - refit_aic["weibull"] > 10
    # mean time to repair: bootstrap interval (no distribution assumed) around the sample mean
    mttr = MtbfFitter(
        family="exponential", ci_method="bootstrap", n_bootstrap=2000, random_state=0
    ).fit(positive["exit_h"], positive["failed"])
    assert mttr.mtbf_h_ == pytest.approx(float(positive["exit_h"].mean()))
    assert mttr.mtbf_ci_h_[0] < 5.5 * 24 < mttr.mtbf_ci_h_[1]  # README's 5.5 d inside
    weibull_mean = weibull.mtbf_ci_h_
    assert weibull_mean[0] < mttr.mtbf_h_ < weibull_mean[1]  # Weibull's mean fits the data
    lognormal_row = table.filter(pl.col("family") == "lognormal").row(0, named=True)
    assert lognormal_row["mtbf_lo_h"] > mttr.mtbf_ci_h_[1]  # log-normal's tail overshoots it


def test_infinitehbd_repair_fit_through_the_repair_view(infinitehbd: RealWarehouse) -> None:
    """`relia fit --lives int_fault_repairs` on the real trace: every repair counted, MTTR."""
    from pipelines.analysis.fit import repair_lives

    rows = read_lives(infinitehbd.con, view="int_fault_repairs", dataset="infinitehbd")
    frame, counts = repair_lives(rows)
    # 584 faults, all closed; 14 start and end in the same 8.64 s tick (README): not fitted
    assert counts["n_repairs"] == 584
    assert (counts["n_repaired"], counts["n_no_length"], counts["n_open"]) == (570, 14, 0)
    with pytest.warns(FewFailuresWarning):
        table = fit_table(frame, headline="lifetime_mean")  # as run_fit fits a repair view
    pooled = table.filter(
        (pl.col("component_class") == "all") & (pl.col("family") == "exponential")
    )
    row = pooled.row(0, named=True)
    assert row["n_failures"] == 570
    # the exponential MTTR is the mean repair time of the 570; README: 5.5 d over all 584
    assert row["mtbf_h"] * 570 / 584 / 24 == pytest.approx(5.5, abs=0.05)
    chosen = table.filter((pl.col("component_class") == "all") & pl.col("chosen")).row(
        0, named=True
    )
    assert chosen["headline_method"] == "model_average"
    assert chosen["headline_mtbf_lo_h"] <= chosen["headline_mtbf_h"] <= chosen["headline_mtbf_hi_h"]
