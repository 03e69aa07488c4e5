"""Monte Carlo of the training job: agreement with the analysis, Weibull fleets, naive cross-check.

Tolerances are derived, not tuned: a Monte Carlo mean is compared with its expectation within
``Z`` standard errors (Z = 4: a false alarm about once in 16,000 runs), plus a stated bound on
the window-edge effects that the steady-state analysis leaves out.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import replace
from typing import Any

import pytest

from models import ClassRate, Scenario, project, simulate_job, simulate_job_naive

Z = 4.0
HOUR = 3600.0


def _edge_bound(s: Scenario, out: dict[str, Any]) -> float:
    """Bound on |E[simulated goodput] - analytical goodput| from the edges of the window.

    The job starts computing at t = 0 with no restart (at most one restart gained) and loses the
    segment in progress at the end (at most one segment): (R + tau + delta) / T. Hot spares: the
    first S faults find the pool full and skip a wait of at most repair - detect each. Elastic: a
    replica group out past the window end is not charged, at most frac x rate x D_max^2 / 2.
    """
    horizon_s = s.job_days * 86_400.0
    tau = out["checkpoint_interval_min"] * 60.0
    restart = s.detect_s + s.reschedule_s + s.reload_s + s.warmup_s
    bound = (restart + tau + s.checkpoint_s) / horizon_s
    c = max(s.repair_h * HOUR - s.detect_s, 0.0)
    if s.strategy == "hot_spare":
        bound += s.hot_spares * c / horizon_s
    if s.strategy == "elastic":
        frac = max(s.replica_gpus, s.failure_domain_gpus) / s.n_gpus
        d_max = s.detect_s + c + s.reload_s + s.warmup_s
        rate_s = 1.0 / (out["mtti_h"] * HOUR)
        bound = frac * rate_s * d_max**2 / 2.0 / horizon_s + s.detect_s / horizon_s
    return bound


class TestAgreementWithAnalysis:
    @pytest.mark.parametrize(
        "scenario",
        [
            Scenario(n_gpus=16_384),
            Scenario(n_gpus=131_072, checkpoint_s=20.0),
            Scenario(
                n_gpus=16_384, strategy="hot_spare", hot_spares=2, repair_h=1.0, job_days=60.0
            ),
            Scenario(
                n_gpus=16_384, strategy="elastic", replica_gpus=128, hot_spares=4, repair_h=2.0
            ),
        ],
        ids=["restart-16k", "restart-131k", "hot_spare", "elastic"],
    )
    def test_goodput_within_one_percent_for_exponential_failures(self, scenario: Scenario) -> None:
        analytic = project(scenario)
        # SE ~ sd / sqrt(n): 1600 trials keep Z x SE under 0.25 % even at goodput 0.33 (131k GPUs)
        mc = simulate_job(scenario, n_trials=1600, random_state=11)
        tolerance = Z * mc["goodput_se"] + _edge_bound(scenario, analytic)
        # the test only means something if the tolerance is itself well inside 1 %
        assert tolerance < 0.005 * analytic["goodput"]
        assert mc["goodput"] == pytest.approx(analytic["goodput"], abs=tolerance)
        assert abs(mc["goodput"] / analytic["goodput"] - 1) < 0.01
        # failures are Poisson here: the count has no edge effect at all
        assert mc["interruptions"] == pytest.approx(
            analytic["expected_interruptions"], abs=Z * mc["interruptions_se"]
        )

    def test_lost_hours_split_agrees_with_analysis(self) -> None:
        s = Scenario(strategy="hot_spare", hot_spares=2, repair_h=3.0, job_days=60.0)
        analytic = project(s)
        mc = simulate_job(s, n_trials=400, random_state=5)
        gpu_h = s.n_gpus * s.job_days * 24
        for key in (
            "lost_gpu_h_checkpoint",
            "lost_gpu_h_rework",
            "lost_gpu_h_restart",
            "lost_gpu_h_spares_wait",
        ):
            assert mc[key] == pytest.approx(analytic[key], abs=0.01 * gpu_h)
        assert mc["lost_gpu_h_total"] == pytest.approx(analytic["lost_gpu_h_total"], rel=0.02)


class TestWeibullFleets:
    def test_steady_state_weibull_fails_at_n_over_mtbf(self) -> None:
        for shape in (0.6, 1.8):
            rates = (ClassRate("gpu", "gpu", mtbf_h=40_000.0, weibull_shape=shape),)
            s = Scenario(rates=rates, fleet_age="steady_state")
            mc = simulate_job(s, n_trials=600, random_state=2)
            expected = s.n_gpus * s.job_days * 24 / 40_000.0  # n T / MTBF
            assert mc["interruptions"] == pytest.approx(expected, abs=Z * mc["interruptions_se"])
            assert "equilibrium" in mc["fleet_age_assumption"]

    def test_new_fleet_with_infant_mortality_loses_more_goodput(self) -> None:
        rates = (ClassRate("gpu", "gpu", mtbf_h=80_000.0, weibull_shape=0.7),)
        steady = Scenario(rates=rates, fleet_age="steady_state")
        new = replace(steady, fleet_age="new")
        mc_steady = simulate_job(steady, n_trials=600, random_state=3)
        mc_new = simulate_job(new, n_trials=600, random_state=4)
        an_steady, an_new = project(steady), project(new)
        # size of the effect on faults: the renewal function of a new fleet, ~4.9x the steady rate
        assert mc_new["interruptions"] == pytest.approx(
            an_new["expected_interruptions"], abs=Z * mc_new["interruptions_se"]
        )
        assert an_new["expected_interruptions"] / an_steady[
            "expected_interruptions"
        ] == pytest.approx(4.88, abs=0.01)
        # and on goodput: the new fleet loses ~20 points more, in simulation and analysis alike
        gap_mc = mc_steady["goodput"] - mc_new["goodput"]
        gap_an = an_steady["goodput"] - an_new["goodput"]
        assert gap_mc > 0.15
        assert gap_an > 0.15
        # the analysis follows the fault rate through the job piece by piece (#13): the early
        # faults are bunched at the start, where they cost less, in both
        assert an_new["goodput"] == pytest.approx(mc_new["goodput"], abs=Z * mc_new["goodput_se"])
        assert gap_mc == pytest.approx(gap_an, rel=0.05)

    def test_aged_fleet_matches_delayed_renewal_count(self) -> None:
        rates = (ClassRate("gpu", "gpu", mtbf_h=60_000.0, weibull_shape=0.7),)
        s = Scenario(rates=rates, fleet_age=3000.0)
        mc = simulate_job(s, n_trials=600, random_state=6)
        assert mc["interruptions"] == pytest.approx(
            project(s)["expected_interruptions"], abs=Z * mc["interruptions_se"]
        )


class TestSameDirectionAsAnalysis:
    def test_fewer_spares_and_longer_repair_lower_goodput(self) -> None:
        cases = [(32, 4.0), (4, 4.0), (4, 12.0), (0, 4.0)]  # from best to worst
        mc, an = [], []
        for spares, repair_h in cases:
            s = Scenario(strategy="hot_spare", hot_spares=spares, repair_h=repair_h)
            an.append(project(s)["goodput"])
            out = simulate_job(s, n_trials=200, random_state=7)
            mc.append((out["goodput"], out["goodput_se"]))
        assert an == sorted(an, reverse=True)
        for (better, se_b), (worse, se_w) in itertools.pairwise(mc):
            assert better - worse > Z * math.hypot(se_b, se_w)

    def test_larger_failure_domain_lowers_goodput(self) -> None:
        results = {}
        for domain in (8, 72):
            s = Scenario(
                n_gpus=18_432, failure_domain_gpus=domain, strategy="elastic", replica_gpus=8
            )
            results[domain] = (project(s)["goodput"], simulate_job(s, n_trials=200, random_state=8))
        (an_node, mc_node), (an_rack, mc_rack) = results[8], results[72]
        assert an_rack < an_node
        assert mc_node["goodput"] - mc_rack["goodput"] > Z * math.hypot(
            mc_node["goodput_se"], mc_rack["goodput_se"]
        )
        assert mc_node["goodput"] - mc_rack["goodput"] == pytest.approx(an_node - an_rack, rel=0.1)


class TestNaiveCrossCheck:
    @pytest.mark.parametrize(
        "scenario",
        [
            Scenario(n_gpus=8192),
            Scenario(n_gpus=8192, strategy="hot_spare", hot_spares=1, repair_h=3.0),
            Scenario(n_gpus=8192, strategy="elastic", replica_gpus=64, hot_spares=0, repair_h=6.0),
            Scenario(
                n_gpus=8192,
                rates=(
                    ClassRate("gpu", "gpu", 50_000.0, weibull_shape=0.7),
                    ClassRate("host", "node", 20_000.0),
                ),
                fleet_age="steady_state",
            ),
            Scenario(
                n_gpus=8192,
                rates=(ClassRate("gpu", "gpu", 50_000.0, weibull_shape=0.7),),
                fleet_age="new",
            ),
            Scenario(
                n_gpus=8192,
                rates=(ClassRate("gpu", "gpu", 30_000.0, weibull_shape=1.5),),
                fleet_age=5000.0,
            ),
        ],
        ids=["restart", "hot_spare", "elastic", "weibull-steady", "weibull-new", "weibull-aged"],
    )
    def test_naive_and_vectorised_agree(self, scenario: Scenario) -> None:
        fast = simulate_job(scenario, n_trials=400, random_state=21)
        slow = simulate_job_naive(scenario, n_trials=150, random_state=22)
        for key in ("goodput", "interruptions"):
            se = math.hypot(fast[f"{key}_se"], slow[f"{key}_se"])
            assert fast[key] == pytest.approx(slow[key], abs=Z * se)
        assert set(fast) == set(slow)
        assert slow["method"] == "naive"


class TestInterface:
    def test_reproducible_with_a_seed(self) -> None:
        a = simulate_job(Scenario(n_gpus=2048), n_trials=50, random_state=3)
        b = simulate_job(Scenario(n_gpus=2048), n_trials=50, random_state=3)
        assert a["goodput"] == b["goodput"]
        assert a["trials"].equals(b["trials"])

    def test_per_trial_frame_and_loss_split(self) -> None:
        s = Scenario(n_gpus=2048, strategy="hot_spare", hot_spares=1)
        out = simulate_job(s, n_trials=30, random_state=0)
        trials = out["trials"]
        assert trials.height == 30
        assert trials.columns[:3] == ["trial", "goodput", "n_interruptions"]
        gpu_h = s.n_gpus * s.job_days * 24
        lost = sum(
            out[k]
            for k in (
                "lost_gpu_h_checkpoint",
                "lost_gpu_h_rework",
                "lost_gpu_h_restart",
                "lost_gpu_h_spares_wait",
            )
        )
        assert lost == pytest.approx(out["lost_gpu_h_total"], rel=1e-9)
        assert out["lost_gpu_h_total"] == pytest.approx((1 - out["goodput"]) * gpu_h, rel=1e-9)

    def test_trials_must_be_positive(self) -> None:
        with pytest.raises(ValueError, match="n_trials"):
            simulate_job(Scenario(), n_trials=0)
