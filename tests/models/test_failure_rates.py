"""Interruption rates per class on hand-built lives, and the headline shared with fit_lives.

The hand-built fleet: two nodes of two GPU slots and a NIC each. Every expected figure below is
worked out from the rows by hand; the Poisson bounds are Garwood's published values for 1 and 2
events (Garwood, *Biometrika* 28 (1936) 437; e.g. Ulm, *Am. J. Epidemiol.* 131 (1990) 373,
table 1: 0.0253-5.5716 and 0.2422-7.2247).
"""

from __future__ import annotations

import math
import warnings
from typing import Any

import numpy as np
import polars as pl
import pytest

from models import (
    FAILURE_RATE_COLUMNS,
    FewFailuresWarning,
    failure_rates,
    fit_lives,
    rates_from_failure_rates,
    rates_from_fits,
)
from tests.models.failsim import random_law, simulate

GARWOOD = {1: (0.0253, 5.5716), 2: (0.2422, 7.2247)}


def hand_lives() -> pl.DataFrame:
    """GPU slots n1/gpu0..1, n2/gpu0..1 and a NIC per node, watched over calendar [0, 100] h."""
    rows = [
        # class, level, node, slot, entry, exit, failed, window entry, window exit
        ("gpu", "gpu", "n1", "gpu0", 0.0, 100.0, False, 0.0, 100.0),
        ("gpu", "gpu", "n1", "gpu1", 0.0, 50.0, True, 0.0, 50.0),
        ("gpu", "gpu", "n1", "gpu1", 0.0, 40.0, False, 60.0, 100.0),  # back after 10 h down
        ("gpu", "gpu", "n2", "gpu0", 10.0, 60.0, True, 0.0, 50.0),  # aged 10 h at the start
        ("gpu", "gpu", "n2", "gpu1", 0.0, 100.0, False, 0.0, 100.0),
        ("nic", "node", "n1", "nic", 0.0, 30.0, True, 0.0, 30.0),
        ("nic", "node", "n1", "nic", 0.0, 60.0, False, 40.0, 100.0),
        ("nic", "node", "n2", "nic", 0.0, 100.0, False, 0.0, 100.0),
        ("driver", "none", "n1", "driver", 0.0, 100.0, False, 0.0, 100.0),
        ("driver", "none", "n2", "driver", 0.0, 100.0, False, 0.0, 100.0),
    ]
    return pl.DataFrame(
        rows,
        schema=[
            "component_class",
            "unit_level",
            "node",
            "slot",
            "entry_h",
            "exit_h",
            "failed",
            "window_entry_h",
            "window_exit_h",
        ],
        orient="row",
    )


@pytest.fixture(scope="module")
def rates() -> dict[str, dict[str, Any]]:
    table = failure_rates(hand_lives())
    assert table.columns == ["component_class", *FAILURE_RATE_COLUMNS]
    return {r["component_class"]: r for r in table.iter_rows(named=True)}


class TestHandBuilt:
    def test_counts_and_exposures(self, rates: dict[str, dict[str, Any]]) -> None:
        gpu, nic = rates["gpu"], rates["nic"]
        # 4 GPU units on 2 nodes, 5 lives; exposure 100 + 50 + 40 + 50 + 100 (down time left out)
        assert (gpu["n_units"], gpu["n_lives"], gpu["n_nodes"], gpu["n_failures"]) == (4, 5, 2, 2)
        assert gpu["exposure_h"] == 340.0
        assert gpu["gpus_per_node"] == 2.0
        assert gpu["node_days"] == pytest.approx(340.0 / 2 / 24)
        assert gpu["gpu_hours"] == 340.0
        # the NIC: 30 + 60 + 100 node-hours; GPU-hours at the GPU lives' 2 GPUs per node
        assert (nic["n_units"], nic["n_lives"], nic["n_failures"]) == (2, 3, 1)
        assert nic["exposure_h"] == 190.0
        assert nic["node_days"] == pytest.approx(190.0 / 24)
        assert nic["gpu_hours"] == 380.0
        assert rates["driver"]["unit_level"] == "node"  # level 'none' counts at node level

    def test_rates_carry_garwood_bounds_on_every_scale(
        self, rates: dict[str, dict[str, Any]]
    ) -> None:
        for name, r in (("gpu", 2), ("nic", 1)):
            row = rates[name]
            lo, hi = GARWOOD[r]
            scales = {
                "per_h": float(row["exposure_h"]),
                "per_1000_node_days": float(row["node_days"]) / 1_000,
                "per_1e6_gpu_h": float(row["gpu_hours"]) / 1e6,
            }
            for scale, exposure in scales.items():
                assert row[f"rate_{scale}"] == pytest.approx(r / exposure, rel=1e-12)
                assert row[f"rate_lo_{scale}"] == pytest.approx(lo / exposure, rel=2e-3)
                assert row[f"rate_hi_{scale}"] == pytest.approx(hi / exposure, rel=1e-4)
        assert rates["gpu"]["rate_per_1000_node_days"] == pytest.approx(2 / (340 / 48) * 1000)

    def test_headline_is_the_observed_mtbf_with_its_chi_square_interval(
        self, rates: dict[str, dict[str, Any]]
    ) -> None:
        gpu = rates["gpu"]
        lo, hi = GARWOOD[2]
        assert gpu["headline_method"] == "observed_rate"
        assert gpu["headline_mtbf_h"] == gpu["mtbf_observed_h"] == 170.0
        assert gpu["headline_mtbf_lo_h"] == pytest.approx(340.0 / hi, rel=1e-4)
        assert gpu["headline_mtbf_hi_h"] == pytest.approx(340.0 / lo, rel=2e-3)
        assert gpu["headline_extrapolated"] is False

    def test_no_failure_gives_the_one_sided_bound(self, rates: dict[str, dict[str, Any]]) -> None:
        driver = rates["driver"]
        assert driver["headline_method"] == "chi_square_bound"
        assert math.isnan(driver["headline_mtbf_h"])
        # P(N = 0) = 5 % at the bound: mean -ln 0.05 over 200 node-hours
        assert driver["headline_mtbf_lo_h"] == pytest.approx(200.0 / -math.log(0.05), rel=1e-9)
        assert driver["headline_mtbf_hi_h"] == math.inf
        assert driver["rate_hi_per_h"] == pytest.approx(-math.log(0.05) / 200.0, rel=1e-9)
        assert driver["trend_verdict"] is None

    def test_trend_on_the_exposure_clock(self, rates: dict[str, dict[str, Any]]) -> None:
        gpu = rates["gpu"]
        # both GPU failures at calendar 50 h, when the five lives had accrued 4 x 50 = 200 h of 340
        u = (200.0 - 170.0) / (340.0 / math.sqrt(24.0))
        assert gpu["laplace_u"] == pytest.approx(u, rel=1e-12)
        assert gpu["mil_hdbk_189_chi2"] == pytest.approx(4 * math.log(340.0 / 200.0), rel=1e-12)
        assert gpu["mil_hdbk_189_dof"] == 4
        assert gpu["trend_verdict"] == "homogeneous"
        assert gpu["crow_amsaa_beta_lo"] < gpu["crow_amsaa_beta"] < gpu["crow_amsaa_beta_hi"]

    def test_without_window_columns_no_trend(self) -> None:
        table = failure_rates(hand_lives().drop("window_entry_h", "window_exit_h"))
        assert table["trend_verdict"].null_count() == table.height
        assert table["n_failures"].to_list() == [2, 1, 0]


class TestCohorts:
    def test_cohort_rows_add_up_and_take_their_own_gpus_per_node(self) -> None:
        lives = hand_lives().with_columns(
            batch=pl.when(pl.col("node") == "n1").then(pl.lit("a")).otherwise(pl.lit("b"))
        )
        table = failure_rates(lives, by=("component_class", "batch"))
        whole = failure_rates(lives)
        for name in ("gpu", "nic"):
            part = table.filter(pl.col("component_class") == name)
            one = whole.filter(pl.col("component_class") == name)
            assert part["n_failures"].sum() == one["n_failures"].item()
            assert part["exposure_h"].sum() == pytest.approx(one["exposure_h"].item())
        nic_b = table.filter((pl.col("component_class") == "nic") & (pl.col("batch") == "b"))
        assert nic_b["gpus_per_node"].item() == 2.0
        assert nic_b["gpu_hours"].item() == 200.0

    def test_node_class_without_gpu_lives_has_no_gpu_hours(self) -> None:
        table = failure_rates(hand_lives().filter(pl.col("unit_level") != "gpu"))
        assert table["gpu_hours"].null_count() == table.height
        assert table["rate_per_1e6_gpu_h"].null_count() == table.height
        assert table["rate_per_1000_node_days"].is_not_null().all()


class TestBadInput:
    @pytest.mark.parametrize(
        ("change", "match"),
        [
            (lambda f: f.drop("slot"), "slot"),
            (lambda f: f.drop("window_exit_h"), "without its pair"),
            (lambda f: f.with_columns(unit_level=pl.lit("rack")), "not one of"),
            (
                lambda f: f.with_columns(
                    unit_level=pl.when(pl.col("slot") == "gpu1")
                    .then(pl.lit("node"))
                    .otherwise(pl.col("unit_level"))
                ),
                "mix GPU- and node-level",
            ),
            (
                lambda f: f.with_columns(window_entry_h=pl.lit(None, pl.Float64)),
                "calendar interval",
            ),
            (
                lambda f: f.with_columns(
                    exit_h=pl.when(pl.col("entry_h") > 0)
                    .then(pl.col("entry_h") - 1)
                    .otherwise(pl.col("exit_h"))
                ),
                "exit_h < entry_h",
            ),
            (lambda f: f.with_columns(node=pl.lit(None, pl.String)), "null node"),
        ],
    )
    def test_one_line_error_names_the_problem(self, change: Any, match: str) -> None:
        with pytest.raises(ValueError, match=match):
            failure_rates(change(hand_lives()))

    def test_by_must_name_the_class(self) -> None:
        with pytest.raises(ValueError, match="component_class"):
            failure_rates(hand_lives(), by=("node",))

    def test_a_group_with_no_time_at_risk(self) -> None:
        driver = pl.col("component_class") == "driver"
        lives = hand_lives().with_columns(
            entry_h=pl.when(driver).then(50.0).otherwise(pl.col("entry_h")),
            exit_h=pl.when(driver).then(50.0).otherwise(pl.col("exit_h")),
        )
        with pytest.raises(ValueError, match="no time at risk"):
            failure_rates(lives)


@pytest.fixture(scope="module")
def fleet_lives() -> pl.DataFrame:
    rng = np.random.default_rng(2_505)
    gpu = [
        random_law(rng, "gpu", "gpu", "weibull_dfr", 40_000.0),
        random_law(rng, "gpu_memory", "gpu", "lognormal", 30_000.0),
    ]
    node = [random_law(rng, "nic", "node", "weibull_ifr", 9_000.0)]
    return simulate(rng, gpu, node, n_nodes=128, oldest_h=20_000.0).lives


class TestOneHeadline:
    def test_fit_lives_and_failure_rates_give_the_same_headline(
        self, fleet_lives: pl.DataFrame
    ) -> None:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            fits = fit_lives(fleet_lives)
        rates = failure_rates(fleet_lives)
        heads = [c for c in FAILURE_RATE_COLUMNS if c.startswith("headline_")]
        per_class = fits.group_by("component_class", maintain_order=True).first()
        joined = rates.select("component_class", *heads).join(
            per_class.select("component_class", *heads), on="component_class", suffix="_fit"
        )
        assert joined.height == rates.height == 3
        for h in heads:  # the same numbers to the last bit
            assert joined[h].to_list() == joined[f"{h}_fit"].to_list(), h

    def test_rates_table_and_fit_table_project_the_same_rates(
        self, fleet_lives: pl.DataFrame
    ) -> None:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            fits = fit_lives(fleet_lives).join(
                fleet_lives.group_by("component_class").agg(pl.col("unit_level").first()),
                on="component_class",
            )
        assert rates_from_failure_rates(failure_rates(fleet_lives)) == rates_from_fits(fits)


class TestLifetimeMeanHeadline:
    def test_durations_can_headline_their_lifetime_mean(self, fleet_lives: pl.DataFrame) -> None:
        """Repair times: the MTTR is the mean duration, so the headline repeats lifetime_*."""
        nic = fleet_lives.filter(pl.col("component_class") == "nic")
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            rate = fit_lives(nic)
            mean = fit_lives(nic, headline="lifetime_mean")
        assert mean.drop("^headline_.*$").equals(rate.drop("^headline_.*$"))
        row = mean.row(0, named=True)
        for column in ("method", "mtbf_h", "mtbf_lo_h", "mtbf_hi_h", "rmst_h", "extrapolated"):
            assert row[f"headline_{column}"] == row[f"lifetime_{column}"], column
        assert row["headline_method"] == "model_average"
        assert rate.row(0, named=True)["headline_method"] == "observed_rate"

    def test_unknown_headline_is_refused(self, fleet_lives: pl.DataFrame) -> None:
        with pytest.raises(ValueError, match="headline must be one of"):
            fit_lives(fleet_lives, headline="median")


class TestRatesFromFailureRates:
    def test_headline_with_exact_bounds_and_level_none_at_node(self) -> None:
        lives = hand_lives().with_columns(
            unit_level=pl.when(pl.col("component_class") == "nic")
            .then(pl.lit("none"))
            .otherwise(pl.col("unit_level"))
        )
        table = failure_rates(lives)
        with pytest.warns(FewFailuresWarning, match="driver"):
            rates = {r.component_class: r for r in rates_from_failure_rates(table)}
        gpu = table.row(0, named=True)
        assert (rates["gpu"].mtbf_h, rates["gpu"].mtbf_lo_h, rates["gpu"].mtbf_hi_h) == (
            gpu["headline_mtbf_h"],
            gpu["headline_mtbf_lo_h"],
            gpu["headline_mtbf_hi_h"],
        )
        assert rates["gpu"].weibull_shape == 1.0
        assert rates["nic"].level == "node"
        driver = rates["driver"]  # no failure: held at its lower bound, no interval
        assert driver.mtbf_h == driver.mtbf_lo_h == pytest.approx(200.0 / -math.log(0.05))
        assert driver.mtbf_hi_h is None

    def test_cohort_rows_must_be_picked_first(self) -> None:
        lives = hand_lives().with_columns(batch=pl.col("node"))
        table = failure_rates(lives, by=("component_class", "batch"))
        with pytest.raises(ValueError, match="one per cohort"):
            rates_from_failure_rates(table)

    def test_missing_columns_are_named(self) -> None:
        with pytest.raises(ValueError, match="headline_mtbf_lo_h"):
            rates_from_failure_rates(failure_rates(hand_lives()).drop("headline_mtbf_lo_h"))
