"""Analytical goodput projection: checkpoint equations, published figures, sweeps."""

from __future__ import annotations

import math
from dataclasses import replace
from typing import ClassVar

import numpy as np
import polars as pl
import pytest
from sklearn.base import clone

from models import (
    ApproximationWarning,
    ClassRate,
    FewFailuresWarning,
    GoodputProjector,
    Scenario,
    daly_expected_wall_time_s,
    daly_interval_s,
    ettr_meta,
    knob_gains,
    project,
    rates_from_fits,
    sweep,
    young_interval_s,
)
from models.renewal import _renewal_count

MIN = 60.0
HOUR = 3600.0
LOST_KEYS = (
    "lost_gpu_h_checkpoint",
    "lost_gpu_h_rework",
    "lost_gpu_h_restart",
    "lost_gpu_h_spares_wait",
)


class TestCheckpointEquations:
    @pytest.mark.parametrize(
        ("delta_s", "mtti_s"), [(300.0, 86_400.0), (60.0, 6_490.0), (7.0, 1e6)]
    )
    def test_young_interval_is_sqrt_two_delta_m_exactly(
        self, delta_s: float, mtti_s: float
    ) -> None:
        assert young_interval_s(delta_s, mtti_s) == math.sqrt(2.0 * delta_s * mtti_s)

    def test_daly_interval_reproduces_daly_2006_figures(self) -> None:
        # Daly 2006, figs 3-5: delta = 5 min; M = 24 h -> 117 min, 6 h -> 57 min, 15 min -> 9.1 min
        delta = 5 * MIN
        assert round(daly_interval_s(delta, 24 * HOUR) / MIN) == 117
        assert round(daly_interval_s(delta, 6 * HOUR) / MIN) == 57
        assert round(daly_interval_s(delta, 15 * MIN) / MIN, 1) == 9.1

    def test_daly_interval_is_mtti_when_checkpoint_exceeds_twice_mtti(self) -> None:
        assert daly_interval_s(3 * HOUR, 1 * HOUR) == 1 * HOUR
        assert daly_interval_s(2 * HOUR, 1 * HOUR) == 1 * HOUR

    def test_daly_interval_minimises_daly_wall_time(self) -> None:
        delta, mtti, restart = 5 * MIN, 6 * HOUR, 10 * MIN
        grid = np.linspace(10 * MIN, 200 * MIN, 20_001)
        wall = daly_expected_wall_time_s(
            500 * HOUR, delta, mtti, restart_s=restart, interval_s=grid
        )
        at_daly = daly_expected_wall_time_s(500 * HOUR, delta, mtti, restart_s=restart)
        # the perturbation solution is within 0.01 % of the numerical optimum of the same cost
        assert at_daly / wall.min() - 1 < 1e-4
        assert at_daly <= daly_expected_wall_time_s(
            500 * HOUR, delta, mtti, restart_s=restart, interval_s=young_interval_s(delta, mtti)
        )

    def test_daly_wall_time_without_failures_is_work_plus_checkpoints(self) -> None:
        wall = daly_expected_wall_time_s(100 * HOUR, 60.0, 1e15, restart_s=600.0, interval_s=1800.0)
        assert wall == pytest.approx(100 * HOUR * (1 + 60 / 1800), rel=1e-9)

    def test_equations_broadcast_over_arrays(self) -> None:
        out = daly_interval_s(np.array([60.0, 300.0]), np.array([[HOUR], [10 * HOUR]]))
        assert out.shape == (2, 2)


class TestPublishedFigures:
    @pytest.mark.parametrize(("n_gpus", "mttf_h", "digits"), [(16_384, 1.8, 1), (131_072, 0.23, 2)])
    def test_meta_job_mttf_at_scale(self, n_gpus: int, mttf_h: float, digits: int) -> None:
        # Kokolis et al. 2025: RSC-1, 6.50 failures per 1000 node-days, 8 GPUs per node
        s = Scenario(n_gpus=n_gpus, gpus_per_node=8, node_failures_per_1000_node_days=6.50)
        assert round(project(s)["mtti_h"], digits) == mttf_h

    def test_llama3_rate_fed_back_gives_its_mtti(self) -> None:
        # Llama 3: 419 unexpected interruptions in 54 days on 16,384 GPUs
        gpu_hours = 16_384 * 54 * 24
        per_gpu = ClassRate("all_unexpected", "gpu", mtbf_h=gpu_hours / 419)
        out = project(Scenario(n_gpus=16_384, rates=(per_gpu,)))
        assert round(out["mtti_h"], 2) == 3.09

    def test_ettr_meta_reproduces_paper_scenario(self) -> None:
        # 16,384-GPU job on RSC-1, 5 min restart, non-blocking checkpoints: the paper reports an
        # expected ETTR of 0.7 at a 60 min interval and 0.93 at 5 min
        kw = {"restart_s": 5 * MIN, "checkpoint_s": 0.0}
        assert round(ettr_meta(2048, 6.5e-3, checkpoint_interval_s=60 * MIN, **kw), 1) == 0.7
        assert round(ettr_meta(2048, 6.5e-3, checkpoint_interval_s=5 * MIN, **kw), 2) == 0.93

    def test_ettr_meta_agrees_with_goodput_to_first_order(self) -> None:
        # both lose u0 + tau/2 per failure and delta/tau per interval; they differ at second order
        s = Scenario(n_gpus=1024, checkpoint_s=10.0, detect_s=30.0, reschedule_s=30.0)
        out = project(s)
        loss = 1 - out["goodput"]
        assert out["ettr"] == pytest.approx(out["goodput"], abs=loss**2 * 2)

    def test_ettr_meta_clipped_where_the_approximation_breaks(self) -> None:
        assert ettr_meta(100_000, 1.0, restart_s=HOUR, checkpoint_interval_s=HOUR) == 0.0


class TestProject:
    @pytest.mark.parametrize("strategy", ["restart", "hot_spare", "elastic"])
    def test_lost_hours_add_up_to_total(self, strategy: str) -> None:
        s = Scenario(strategy=strategy, hot_spares=2, repair_h=4.0, replica_gpus=128)
        out = project(s)
        gpu_h = s.n_gpus * s.job_days * 24
        assert sum(out[k] for k in LOST_KEYS) == pytest.approx(out["lost_gpu_h_total"], rel=1e-9)
        assert out["lost_gpu_h_total"] == pytest.approx((1 - out["goodput"]) * gpu_h, rel=1e-9)
        assert out["useful_gpu_h"] + out["lost_gpu_h_total"] == pytest.approx(gpu_h)
        assert out["energy_lost_mwh"] == pytest.approx(out["lost_gpu_h_total"] * 700 * 1.2 / 1e6)
        assert min(out[k] for k in LOST_KEYS) >= 0

    def test_checkpoint_interval_defaults_to_daly_and_honours_a_given_one(self) -> None:
        out = project(Scenario())
        assert out["checkpoint_interval_min"] == out["daly_interval_min"]
        assert project(Scenario(checkpoint_interval_s=600.0))["checkpoint_interval_min"] == 10.0

    def test_daly_interval_maximises_goodput(self) -> None:
        base = Scenario()
        best = project(base)["goodput"]
        for factor in (0.7, 1.4):
            tau = project(base)["daly_interval_min"] * 60 * factor
            assert project(replace(base, checkpoint_interval_s=tau))["goodput"] < best

    def test_free_checkpoint_leaves_only_restarts(self) -> None:
        # delta = 0: checkpoint every step, nothing is redone; goodput -> exp(-R/M)
        out = project(Scenario(checkpoint_s=0.0))
        restart_s = 120 + 300 + 180 + 120
        assert out["goodput"] == pytest.approx(
            math.exp(-restart_s / (out["mtti_h"] * HOUR)), rel=1e-6
        )

    def test_daly_wall_time_is_the_job_over_goodput(self) -> None:
        out = project(Scenario())
        assert out["daly_wall_time_h"] == pytest.approx(30 * 24 / out["goodput"], rel=1e-9)

    def test_fewer_spares_and_longer_repair_lower_goodput(self) -> None:
        def goodput(spares: int, repair_h: float) -> float:
            return project(Scenario(strategy="hot_spare", hot_spares=spares, repair_h=repair_h))[
                "goodput"
            ]

        assert goodput(0, 4) < goodput(4, 4) < goodput(32, 4)
        assert goodput(4, 48) < goodput(4, 4)
        # with plenty of spares and quick repair it equals a restart without the reschedule
        no_wait = project(Scenario(reschedule_s=0.0))["goodput"]
        assert goodput(1000, 1) == pytest.approx(no_wait, rel=1e-12)

    def test_larger_failure_domain_lowers_elastic_goodput(self) -> None:
        def goodput(domain: int) -> float:
            s = Scenario(
                n_gpus=18_432, failure_domain_gpus=domain, strategy="elastic", replica_gpus=8
            )
            return project(s)["goodput"]

        assert goodput(72) < goodput(8)

    def test_steady_state_rate_ignores_the_weibull_shape(self) -> None:
        def mtti(shape: float, age: str | float) -> float:
            rates = (ClassRate("gpu", "gpu", mtbf_h=50_000.0, weibull_shape=shape),)
            return project(Scenario(rates=rates, fleet_age=age))["mtti_h"]

        assert mtti(0.6, "steady_state") == mtti(1.0, "steady_state") == 50_000 / 16_384
        assert mtti(0.6, "new") < mtti(0.6, "steady_state")  # infant mortality on a new fleet
        assert mtti(1.0, "new") == mtti(1.0, 5000.0) == mtti(1.0, "steady_state")

    def test_fleet_age_assumption_is_stated(self) -> None:
        assert "steady state" in project(Scenario())["fleet_age_assumption"]
        assert "exponential" in project(Scenario())["fleet_age_assumption"]
        rates = (ClassRate("gpu", "gpu", mtbf_h=50_000.0, weibull_shape=0.7),)
        assert (
            "new fleet" in project(Scenario(rates=rates, fleet_age="new"))["fleet_age_assumption"]
        )
        assert "1000 h" in project(Scenario(rates=rates, fleet_age=1000.0))["fleet_age_assumption"]
        assert "RSC-1" in project(Scenario())["rate_source"]

    def test_interval_from_sampled_rates(self) -> None:
        rates = (
            ClassRate("gpu", "gpu", mtbf_h=60_000.0, mtbf_lo_h=40_000.0, mtbf_hi_h=90_000.0),
            ClassRate("nic", "node", mtbf_h=30_000.0),  # no interval: held at its MTBF
        )
        s = Scenario(rates=rates)
        out = project(s, n_samples=4000, random_state=0)
        for key in ("mtti_h", "goodput", "ettr", "expected_interruptions"):
            assert out[f"{key}_lo"] < out[key] < out[f"{key}_hi"]
        # the GPU MTBF at its bounds brackets the sampled MTTI interval from outside-in
        at_lo = project(replace(s, rates=(replace(rates[0], mtbf_h=40_000.0), rates[1])))["mtti_h"]
        at_hi = project(replace(s, rates=(replace(rates[0], mtbf_h=90_000.0), rates[1])))["mtti_h"]
        assert out["mtti_h_lo"] == pytest.approx(at_lo, rel=0.03)
        assert out["mtti_h_hi"] == pytest.approx(at_hi, rel=0.03)
        assert project(s, n_samples=4000, random_state=0) == out

    def test_no_interval_without_bounds(self) -> None:
        out = project(Scenario(), n_samples=100, random_state=0)
        assert "goodput_lo" not in out
        assert out["uncertainty"].startswith("none")


class TestRenewal:
    def test_exponential_renewal_count_is_rate_times_horizon(self) -> None:
        # trapezoidal steps: error grows with the number of renewals in the window
        horizon = np.array([720.0, 720.0])
        out = _renewal_count(1.0, np.array([1000.0, 50.0]), horizon, 0.0)
        assert out[0] == pytest.approx(0.72, rel=1e-6)  # < 1 renewal: the regime of a job
        assert out[1] == pytest.approx(14.4, rel=1e-3)  # 14 renewals

    def test_aged_unit_renewal_count_matches_exponential_limit(self) -> None:
        out = _renewal_count(1.0, np.array([800.0]), np.array([100.0]), 5000.0)
        assert out == pytest.approx([100.0 / 800.0], rel=1e-6)


class TestScenario:
    def test_rates_and_shortcut_are_exclusive(self) -> None:
        with pytest.raises(ValueError, match="not both"):
            Scenario(rates=(ClassRate("gpu", "gpu", 1e4),), node_failures_per_1000_node_days=5.0)

    @pytest.mark.parametrize(
        ("kwargs", "match"),
        [
            ({"strategy": "pray"}, "strategy"),
            ({"fleet_age": "old"}, "fleet_age"),
            ({"fleet_age": -1.0}, "fleet_age"),
            ({"n_gpus": 0}, "n_gpus"),
            ({"pue": 0.9}, "pue"),
            ({"strategy": "elastic", "replica_gpus": 100, "failure_domain_gpus": 72}, "divide"),
            ({"failure_domain_gpus": 12}, "divide"),
        ],
    )
    def test_bad_knobs_fail_with_a_fix(self, kwargs: dict[str, object], match: str) -> None:
        with pytest.raises(ValueError, match=match):
            Scenario(**kwargs)  # type: ignore[arg-type]

    def test_class_rate_checks(self) -> None:
        with pytest.raises(ValueError, match="level"):
            ClassRate("gpu", "rack", 1000.0)
        with pytest.raises(ValueError, match="mtbf_lo_h"):
            ClassRate("gpu", "gpu", 1000.0, 2000.0, 1500.0)


def _fit_table() -> pl.DataFrame:
    return pl.DataFrame(
        {
            "component_class": ["gpu", "nic", "host_memory", "psu"],
            "unit_level": ["gpu", "node", "node", "node"],
            "mtbf_h": [60_000.0, 40_000.0, 90_000.0, None],
            "mtbf_lo_h": [45_000.0, 30_000.0, 50_000.0, 200_000.0],
            "mtbf_hi_h": [80_000.0, 55_000.0, 160_000.0, float("inf")],
            "shape": [0.8, 1.3, 1.0, 1.0],
            "family": ["weibull", "lognormal", "exponential", "exponential"],
        }
    )


class TestRatesFromFits:
    def test_rows_become_class_rates(self) -> None:
        with (
            pytest.warns(ApproximationWarning, match="nic"),
            pytest.warns(FewFailuresWarning, match="psu"),
        ):
            rates = rates_from_fits(_fit_table())
        by_name = {r.component_class: r for r in rates}
        assert by_name["gpu"].weibull_shape == 0.8
        assert by_name["nic"].weibull_shape == 1.0  # a lognormal is projected as exponential
        assert by_name["psu"].mtbf_h == 200_000.0  # zero failures: projected at the lower bound
        assert by_name["psu"].mtbf_hi_h is None
        assert by_name["gpu"].has_interval
        assert not by_name["psu"].has_interval

    def test_only_chosen_rows_are_used(self) -> None:
        table = pl.concat(
            [_fit_table().head(1), _fit_table().head(1).with_columns(family=pl.lit("lognormal"))]
        )
        table = table.with_columns(chosen=pl.Series([True, False]))
        rates = rates_from_fits(table)  # the unchosen lognormal row would warn
        assert [r.component_class for r in rates] == ["gpu"]

    def test_missing_columns_are_named(self) -> None:
        with pytest.raises(ValueError, match="family"):
            rates_from_fits(_fit_table().drop("family"))

    def test_projector_estimator_wraps_fits(self) -> None:
        table = _fit_table().filter(pl.col("family") != "lognormal", pl.col("mtbf_h").is_not_null())
        est = GoodputProjector(Scenario(n_gpus=4096), n_samples=200, random_state=1)
        assert clone(est).get_params()["n_samples"] == 200
        est.fit(table)
        assert est.scenario_.rate_source == "rates: gpu, host_memory"
        assert (
            est.projection_["goodput_lo"]
            < est.projection_["goodput"]
            < est.projection_["goodput_hi"]
        )
        assert est.simulation_ is None


class TestSweep:
    def test_sweep_matches_project_point_by_point(self) -> None:
        base = Scenario(strategy="hot_spare", hot_spares=2)
        grid = {
            "n_gpus": [4096, 32_768],
            "checkpoint_s": [10.0, 120.0],
            "checkpoint_interval_s": [None, 900.0],
            "strategy": ["restart", "hot_spare"],
            "node_failures_per_1000_node_days": [2.34, 6.5],
        }
        df = sweep(base, grid)
        assert df.height == 32
        for row in df.iter_rows(named=True):
            knobs = {k: row[k] for k in grid}
            expected = project(replace(base, **knobs))
            for key in ("goodput", "mtti_h", "ettr", "lost_gpu_h_rework", "energy_lost_mwh"):
                if expected[key] is None:  # Meta's ETTR, not applicable at this scale
                    assert row[key] is None
                else:
                    assert row[key] == pytest.approx(expected[key], rel=1e-12)

    def test_sweep_of_weibull_rates_and_fleet_ages(self) -> None:
        rates = (ClassRate("gpu", "gpu", mtbf_h=50_000.0, weibull_shape=0.7),)
        df = sweep(
            Scenario(rates=rates), {"fleet_age": ["steady_state", "new"], "job_days": [7.0, 30.0]}
        )
        new = df.filter(pl.col("fleet_age") == "new").sort("job_days")["mtti_h"].to_list()
        steady = df.filter(pl.col("fleet_age") == "steady_state")["mtti_h"].to_list()
        assert new[0] < new[1] < steady[0] == steady[1]  # infant mortality fades over a longer job

    def test_ten_thousand_point_grid(self) -> None:
        # its speed (under a second) is bench/bench_sweep.py's target, measured beside a baseline
        # in the same run: a timed test fails on a busy machine
        grid = {
            "n_gpus": [1024 * 2**i for i in range(10)],
            "checkpoint_s": list(np.linspace(5, 300, 10)),
            "detect_s": list(np.linspace(10, 600, 10)),
            "hot_spares": list(range(10)),
        }
        base = Scenario(strategy="hot_spare")
        df = sweep(base, grid)
        assert df.height == 10_000
        assert df["goodput"].is_between(0, 1).all()

    def test_unknown_knob_is_refused(self) -> None:
        with pytest.raises(ValueError, match="unknown knobs"):
            sweep(Scenario(), {"gpus": [8]})


class TestKnobGains:
    """Gains are one knob at a time from a baseline (issue #13), never best vs worst."""

    BASE = Scenario(n_gpus=131_072, checkpoint_s=60.0, detect_s=600.0)
    GRID: ClassVar[dict[str, list[float]]] = {
        "n_gpus": [16_384, 131_072],
        "checkpoint_s": [60.0, 5.0],
        "detect_s": [600.0, 30.0],
        "job_days": [30.0],
    }

    def test_each_gain_is_that_knob_changed_minus_the_baseline(self) -> None:
        gains = knob_gains(self.BASE, self.GRID).gains
        assert gains["knob"].to_list() == ["detect_s", "checkpoint_s"]  # job_days: one value
        baseline = project(self.BASE)
        for row in gains.iter_rows(named=True):
            changed = project(replace(self.BASE, **{row["knob"]: float(row["best_value"])}))
            assert row["gain"] == pytest.approx(changed["goodput"] - baseline["goodput"], rel=1e-12)
            assert row["goodput_baseline"] == pytest.approx(baseline["goodput"], rel=1e-12)
            gpu_h = changed["useful_gpu_h"] - baseline["useful_gpu_h"]
            assert row["gain_useful_gpu_h"] == pytest.approx(gpu_h, rel=1e-12)
        assert gains["gain"].to_list() == sorted(gains["gain"].to_list(), reverse=True)
        assert gains.row(0, named=True)["best_value"] == "30.0"

    def test_every_value_is_projected_and_the_best_is_the_argmax(self) -> None:
        grid = {"checkpoint_s": [60.0, 5.0, 30.0, 120.0]}
        row = knob_gains(self.BASE, grid).gains.row(0, named=True)
        expected = [
            project(replace(self.BASE, checkpoint_s=v))["goodput"] for v in grid["checkpoint_s"]
        ]
        assert row["values"] == ["60.0", "5.0", "30.0", "120.0"]
        assert row["goodputs"] == pytest.approx(expected, rel=1e-12)
        assert row["best_value"] == row["values"][int(np.argmax(expected))]

    def test_a_baseline_already_best_gains_nothing(self) -> None:
        base = replace(self.BASE, detect_s=30.0)
        ranking = knob_gains(base, self.GRID)
        detect = ranking.gains.filter(pl.col("knob") == "detect_s").row(0, named=True)
        assert detect["gain"] == 0.0
        assert detect["best_value"] == detect["baseline_value"] == "30.0"
        assert ranking.best_knob is not None
        assert ranking.best_knob["knob"] == "checkpoint_s"

    def test_no_best_knob_when_nothing_improves(self) -> None:
        base = replace(self.BASE, detect_s=30.0, checkpoint_s=5.0)
        assert knob_gains(base, self.GRID).best_knob is None

    def test_the_baseline_value_counts_even_when_not_listed(self) -> None:
        row = knob_gains(self.BASE, {"detect_s": [900.0]}).gains.row(0, named=True)
        assert row["values"] == ["600.0", "900.0"]
        assert row["gain"] == 0.0

    def test_interaction_of_the_two_best_knobs(self) -> None:
        ranking = knob_gains(self.BASE, self.GRID)
        pair = ranking.interaction
        assert pair is not None
        assert pair.knobs == ["detect_s", "checkpoint_s"]
        both = project(replace(self.BASE, detect_s=30.0, checkpoint_s=5.0))["goodput"]
        base = project(self.BASE)["goodput"]
        gains = dict(zip(ranking.gains["knob"], ranking.gains["gain"], strict=True))
        expected = both - base - gains["detect_s"] - gains["checkpoint_s"]
        assert pair.interaction == pytest.approx(expected, abs=1e-12)
        assert pair.goodput_both == pytest.approx(both, rel=1e-12)

    def test_without_intervals_the_gains_say_so(self) -> None:
        ranking = knob_gains(self.BASE, self.GRID, n_samples=500)
        assert ranking.gains["within_uncertainty"].is_null().all()
        assert "no rate carries an MTBF interval" in ranking.uncertainty

    def test_a_gain_inside_the_paired_interval_is_flagged(self) -> None:
        """Two checkpoint intervals either side of the optimum: which is better depends on the
        MTBF, so the gain's paired interval straddles 0; a faster detection wins every draw."""
        rates = (
            ClassRate("node", "node", mtbf_h=150_000.0, mtbf_lo_h=60_000.0, mtbf_hi_h=400_000.0),
        )
        base = Scenario(n_gpus=131_072, rates=rates, checkpoint_s=60.0, detect_s=600.0)
        optimum_s = project(base)["checkpoint_interval_min"] * 60.0
        grid = {
            "checkpoint_interval_s": [0.7 * optimum_s, 1.4 * optimum_s],
            "detect_s": [600.0, 30.0],
        }
        ranking = knob_gains(
            replace(base, checkpoint_interval_s=0.7 * optimum_s),
            grid,
            n_samples=2000,
            random_state=0,
        )
        rows = {r["knob"]: r for r in ranking.gains.iter_rows(named=True)}
        close = rows["checkpoint_interval_s"]
        assert close["gain"] > 0
        assert close["gain_lo"] < 0 < close["gain_hi"]
        assert close["within_uncertainty"] is True
        clear = rows["detect_s"]
        assert 0 < clear["gain_lo"] <= clear["gain_hi"]
        assert clear["within_uncertainty"] is False
        assert "paired" in ranking.uncertainty
        assert "node" in ranking.uncertainty

    def test_unknown_knob_is_refused(self) -> None:
        with pytest.raises(ValueError, match="unknown knobs"):
            knob_gains(self.BASE, {"gpus": [8]})
