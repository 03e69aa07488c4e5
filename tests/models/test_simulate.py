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

from models import (
    ClassRate,
    Scenario,
    SimulationSummary,
    project,
    simulate_job,
    simulate_job_naive,
)

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
        tolerance = Z * mc.goodput_se + _edge_bound(scenario, analytic)
        # the test only means something if the tolerance is itself well inside 1 %
        assert tolerance < 0.005 * analytic["goodput"]
        assert mc.goodput == pytest.approx(analytic["goodput"], abs=tolerance)
        assert abs(mc.goodput / analytic["goodput"] - 1) < 0.01
        # failures are Poisson here: the count has no edge effect at all
        assert mc.interruptions == pytest.approx(
            analytic["expected_interruptions"], abs=Z * mc.interruptions_se
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
            assert getattr(mc, key) == pytest.approx(analytic[key], abs=0.01 * gpu_h)
        assert mc.lost_gpu_h_total == pytest.approx(analytic["lost_gpu_h_total"], rel=0.02)


class TestWeibullFleets:
    def test_steady_state_weibull_fails_at_n_over_mtbf(self) -> None:
        for shape in (0.6, 1.8):
            rates = (ClassRate("gpu", "gpu", mtbf_h=40_000.0, weibull_shape=shape),)
            s = Scenario(rates=rates, fleet_age="steady_state")
            mc = simulate_job(s, n_trials=600, random_state=2)
            expected = s.n_gpus * s.job_days * 24 / 40_000.0  # n T / MTBF
            assert mc.interruptions == pytest.approx(expected, abs=Z * mc.interruptions_se)
            assert "equilibrium" in mc.fleet_age_assumption

    def test_new_fleet_with_infant_mortality_loses_more_goodput(self) -> None:
        rates = (ClassRate("gpu", "gpu", mtbf_h=80_000.0, weibull_shape=0.7),)
        steady = Scenario(rates=rates, fleet_age="steady_state")
        new = replace(steady, fleet_age="new")
        mc_steady = simulate_job(steady, n_trials=600, random_state=3)
        mc_new = simulate_job(new, n_trials=600, random_state=4)
        an_steady, an_new = project(steady), project(new)
        # size of the effect on faults: the renewal function of a new fleet, ~4.9x the steady rate
        assert mc_new.interruptions == pytest.approx(
            an_new["expected_interruptions"], abs=Z * mc_new.interruptions_se
        )
        assert an_new["expected_interruptions"] / an_steady[
            "expected_interruptions"
        ] == pytest.approx(4.88, abs=0.01)
        # and on goodput: the new fleet loses ~20 points more, in simulation and analysis alike
        gap_mc = mc_steady.goodput - mc_new.goodput
        gap_an = an_steady["goodput"] - an_new["goodput"]
        assert gap_mc > 0.15
        assert gap_an > 0.15
        # the analysis follows the fault rate through the job piece by piece (#13): the early
        # faults are bunched at the start, where they cost less, in both
        assert an_new["goodput"] == pytest.approx(mc_new.goodput, abs=Z * mc_new.goodput_se)
        assert gap_mc == pytest.approx(gap_an, rel=0.05)

    def test_aged_fleet_matches_delayed_renewal_count(self) -> None:
        rates = (ClassRate("gpu", "gpu", mtbf_h=60_000.0, weibull_shape=0.7),)
        s = Scenario(rates=rates, fleet_age=3000.0)
        mc = simulate_job(s, n_trials=600, random_state=6)
        assert mc.interruptions == pytest.approx(
            project(s)["expected_interruptions"], abs=Z * mc.interruptions_se
        )


class TestSameDirectionAsAnalysis:
    def test_fewer_spares_and_longer_repair_lower_goodput(self) -> None:
        cases = [(32, 4.0), (4, 4.0), (4, 12.0), (0, 4.0)]  # from best to worst
        mc, an = [], []
        for spares, repair_h in cases:
            s = Scenario(strategy="hot_spare", hot_spares=spares, repair_h=repair_h)
            an.append(project(s)["goodput"])
            out = simulate_job(s, n_trials=200, random_state=7)
            mc.append((out.goodput, out.goodput_se))
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
        assert mc_node.goodput - mc_rack.goodput > Z * math.hypot(
            mc_node.goodput_se, mc_rack.goodput_se
        )
        assert mc_node.goodput - mc_rack.goodput == pytest.approx(an_node - an_rack, rel=0.1)


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
            se = math.hypot(getattr(fast, f"{key}_se"), getattr(slow, f"{key}_se"))
            assert getattr(fast, key) == pytest.approx(getattr(slow, key), abs=Z * se)
        assert set(fast.to_dict()) == set(slow.to_dict())
        assert slow.method == "naive"


class TestInterface:
    def test_reproducible_with_a_seed(self) -> None:
        a = simulate_job(Scenario(n_gpus=2048), n_trials=50, random_state=3)
        b = simulate_job(Scenario(n_gpus=2048), n_trials=50, random_state=3)
        assert a.goodput == b.goodput
        assert a.trials.equals(b.trials)

    def test_per_trial_frame_and_loss_split(self) -> None:
        s = Scenario(n_gpus=2048, strategy="hot_spare", hot_spares=1)
        out = simulate_job(s, n_trials=30, random_state=0)
        trials = out.trials
        assert trials.height == 30
        assert trials.columns[:3] == ["trial", "goodput", "n_interruptions"]
        gpu_h = s.n_gpus * s.job_days * 24
        lost = sum(
            getattr(out, k)
            for k in (
                "lost_gpu_h_checkpoint",
                "lost_gpu_h_rework",
                "lost_gpu_h_restart",
                "lost_gpu_h_spares_wait",
            )
        )
        assert lost == pytest.approx(out.lost_gpu_h_total, rel=1e-9)
        assert out.lost_gpu_h_total == pytest.approx((1 - out.goodput) * gpu_h, rel=1e-9)

    def test_trials_must_be_positive(self) -> None:
        with pytest.raises(ValueError, match="n_trials"):
            simulate_job(Scenario(), n_trials=0)


# --------------------------------------------------------------------------- the knobs of #13


def _daly_goodput(tau_s: float, delta_s: float, rate_s: float, survive: float) -> float:
    """Daly's renewal reward with a random restart: tau E[exp(-R/M)] / (M (exp(seg/M) - 1)).

    Between interruptions (Poisson, mean M) a cycle restarts for R (drawn per interruption,
    a fault during the restart starting a new one), then commits tau per whole segment
    tau + delta: E[floor(Exp / seg)] = 1 / (exp(seg/M) - 1), reached with P(gap > R) =
    E[exp(-R/M)] (``survive``).
    """
    m = 1.0 / rate_s
    return tau_s * survive / (m * math.expm1((tau_s + delta_s) / m))


def _node_rate_s(s: Scenario) -> float:
    """Fault rate of the default exponential node class over the nodes a job holds, per second."""
    nodes = math.ceil(s.n_gpus / s.gpus_per_node)
    return nodes * 6.5 / 1000.0 / 86_400.0


def _loss_fractions(out: SimulationSummary) -> dict[str, tuple[float, float]]:
    """Mean and standard error of each per-trial loss fraction."""
    trials = out.trials
    result = {}
    for column in trials.columns:
        if column.startswith("lost_frac_"):
            x = trials[column].to_numpy()
            result[column] = (float(x.mean()), float(x.std(ddof=1) / math.sqrt(x.size)))
    return result


_KNOB_SCENARIOS = {
    "hang-restart": Scenario(n_gpus=8192, hang_share=0.4),
    "hang-hot_spare": Scenario(
        n_gpus=8192, strategy="hot_spare", hot_spares=1, repair_h=3.0, hang_share=0.4
    ),
    "hang-elastic": Scenario(
        n_gpus=8192, strategy="elastic", replica_gpus=64, hot_spares=1, repair_h=3.0, hang_share=0.4
    ),
    "repair_sigma-2-spares": Scenario(
        n_gpus=8192, strategy="hot_spare", hot_spares=2, repair_h=3.0, repair_sigma=1.0
    ),
    "repair_sigma-no-spares": Scenario(
        n_gpus=8192, strategy="hot_spare", hot_spares=0, repair_h=1.0, repair_sigma=1.0
    ),
    "repair_sigma-elastic": Scenario(
        n_gpus=8192, strategy="elastic", replica_gpus=64, repair_h=3.0, repair_sigma=1.0
    ),
    "job-restart": Scenario(n_gpus=8192, job_interruptions_per_h=0.3),
    "job-hot_spare": Scenario(
        n_gpus=8192, strategy="hot_spare", repair_h=2.0, job_interruptions_per_h=0.3
    ),
    "job-elastic": Scenario(
        n_gpus=8192,
        strategy="elastic",
        replica_gpus=64,
        hot_spares=1,
        repair_h=3.0,
        job_interruptions_per_h=0.3,
    ),
    "node_groups-weibull": Scenario(
        n_gpus=8192,
        rates=(
            ClassRate("gpu", "gpu", 50_000.0, weibull_shape=0.7),
            ClassRate("host", "node", 20_000.0),
        ),
        node_groups=((0.1, 5.0),),
        fleet_age="new",
    ),
    "weibull_shape": Scenario(n_gpus=8192, weibull_shape=0.6, fleet_age="new"),
    **{
        f"all-{strategy}-drains": Scenario(
            n_gpus=8192,
            strategy=strategy,
            replica_gpus=64,
            hot_spares=1,
            repair_h=3.0,
            repair_sigma=0.8,
            hang_share=0.3,
            job_interruptions_per_h=0.2,
            node_groups=((0.2, 3.0),),
            drain_recall=0.5,
            drain_precision=0.6,
        )
        for strategy in ("restart", "hot_spare", "elastic")
    },
}


class TestKnobsNaiveCrossCheck:
    @pytest.mark.parametrize("scenario", _KNOB_SCENARIOS.values(), ids=_KNOB_SCENARIOS.keys())
    def test_naive_and_vectorised_agree_on_goodput_and_every_loss(self, scenario: Scenario) -> None:
        fast = simulate_job(scenario, n_trials=400, random_state=21)
        slow = simulate_job_naive(scenario, n_trials=150, random_state=22)
        for key in ("goodput", "interruptions", "job_interruptions"):
            se = math.hypot(getattr(fast, f"{key}_se"), getattr(slow, f"{key}_se"))
            assert getattr(fast, key) == pytest.approx(getattr(slow, key), abs=Z * se + 1e-12)
        for column, (mean, se) in _loss_fractions(fast).items():
            slow_mean, slow_se = _loss_fractions(slow)[column]
            assert mean == pytest.approx(slow_mean, abs=Z * math.hypot(se, slow_se) + 1e-12)
        assert fast.trials.columns == slow.trials.columns


class TestJobLevelInterruptions:
    @pytest.mark.parametrize(
        ("strategy", "hot_spares", "hang_share"),
        [("restart", 0, 0.0), ("restart", 0, 0.4), ("hot_spare", 100_000, 0.4)],
        ids=["restart", "restart-hangs", "hot_spare-pool-never-empty"],
    )
    def test_restart_matches_daly_with_the_combined_rate_and_mixed_restart(
        self, strategy: str, hot_spares: int, hang_share: float
    ) -> None:
        s = Scenario(
            strategy=strategy,
            hot_spares=hot_spares,
            job_interruptions_per_h=0.5,
            hang_share=hang_share,
        )
        mc = simulate_job(s, n_trials=1600, random_state=31)
        tau = mc.checkpoint_interval_min * 60.0
        rate_hw, rate_job = _node_rate_s(s), 0.5 / HOUR
        rate = rate_hw + rate_job
        reload_warm = s.reload_s + s.warmup_s
        # a fault restarts on new hardware (rescheduled, or a spare that is always there); a
        # job-level interruption restarts in place; either is a hang with P = hang_share
        hardware = reload_warm + (s.reschedule_s if strategy == "restart" else 0.0)
        survive = sum(
            share_kind * share_detect * math.exp(-rate * (detect + fixed))
            for share_kind, fixed in ((rate_hw / rate, hardware), (rate_job / rate, reload_warm))
            for share_detect, detect in ((1 - hang_share, s.detect_s), (hang_share, 600.0))
        )
        expected = _daly_goodput(tau, s.checkpoint_s, rate, survive)
        # window edges: no restart before the first interruption, the last segment lost
        horizon_s = s.job_days * 86_400.0
        edge = (600.0 + s.reschedule_s + reload_warm + tau + s.checkpoint_s) / horizon_s
        assert mc.goodput == pytest.approx(expected, abs=Z * mc.goodput_se + edge)
        assert mc.job_interruptions == pytest.approx(
            rate_job * horizon_s, abs=Z * mc.job_interruptions_se
        )
        # the knob matters far beyond the tolerance: without it goodput is ~0.1 higher
        without = _daly_goodput(tau, s.checkpoint_s, rate_hw, survive)
        assert without - expected > 10 * (Z * mc.goodput_se + edge)

    def test_elastic_rolls_the_whole_job_back(self) -> None:
        base = Scenario(strategy="elastic", replica_gpus=128, hot_spares=4, repair_h=2.0)
        with_jobs = replace(base, job_interruptions_per_h=0.5)
        mc_base = simulate_job(base, n_trials=800, random_state=32)
        mc_jobs = simulate_job(with_jobs, n_trials=800, random_state=33)
        tau = mc_jobs.checkpoint_interval_min * 60.0
        seg = tau + base.checkpoint_s
        # the checkpoint interval follows the unwarned rate, job-level interruptions included,
        # so the base runs at its own interval
        tau_base = mc_base.checkpoint_interval_min * 60.0
        seg_base = tau_base + base.checkpoint_s
        # the elastic rate of the hardware faults (running share = goodput x seg / tau) while
        # the job-level interruptions alone give a Daly restart timeline (detect, reload, warm)
        rate_job = 0.5 / HOUR
        survive = math.exp(-rate_job * (base.detect_s + base.reload_s + base.warmup_s))
        expected = (
            mc_base.goodput
            * seg_base
            / tau_base
            * _daly_goodput(tau, base.checkpoint_s, rate_job, survive)
        )
        edge = (base.detect_s + base.reload_s + base.warmup_s + seg) / (base.job_days * 86_400)
        se = math.hypot(mc_jobs.goodput_se, mc_base.goodput_se)
        assert mc_jobs.goodput == pytest.approx(expected, abs=Z * se + edge)
        assert mc_base.goodput - mc_jobs.goodput > 0.03
        assert mc_jobs.lost_gpu_h_rework > 0.0 == mc_base.lost_gpu_h_rework

    def test_more_job_interruptions_lower_goodput_for_every_strategy(self) -> None:
        for strategy in ("restart", "hot_spare", "elastic"):
            runs = [
                simulate_job(
                    Scenario(
                        strategy=strategy, hot_spares=8, repair_h=2.0, job_interruptions_per_h=rate
                    ),
                    n_trials=200,
                    random_state=34,
                )
                for rate in (0.0, 0.2, 1.0)
            ]
            for better, worse in itertools.pairwise(runs):
                se = math.hypot(better.goodput_se, worse.goodput_se)
                assert better.goodput - worse.goodput > Z * se


class TestHangs:
    @pytest.mark.parametrize(
        "scenario",
        [
            Scenario(n_gpus=8192),
            Scenario(
                n_gpus=8192, strategy="hot_spare", hot_spares=1, repair_h=3.0, repair_sigma=0.5
            ),
            Scenario(n_gpus=8192, strategy="elastic", replica_gpus=64, job_interruptions_per_h=0.2),
            Scenario(
                n_gpus=8192,
                strategy="hot_spare",
                hot_spares=2,
                repair_h=2.0,
                drain_recall=0.5,
                drain_precision=0.5,
            ),
        ],
        ids=["restart", "hot_spare", "elastic-job-level", "drains"],
    )
    def test_all_hangs_is_the_same_run_as_detect_s_set_to_the_watchdog(
        self, scenario: Scenario
    ) -> None:
        s = replace(scenario, checkpoint_interval_s=900.0)
        hangs = replace(s, hang_share=1.0, detect_hang_s=600.0)
        slow_detect = replace(s, hang_share=0.0, detect_s=600.0)
        for engine, n_trials in ((simulate_job, 100), (simulate_job_naive, 10)):
            a = engine(hangs, n_trials=n_trials, random_state=41)
            b = engine(slow_detect, n_trials=n_trials, random_state=41)
            assert a.trials.equals(b.trials)
        # and a hang detected faster than a crash gains what the slower crash loses
        assert (
            simulate_job(hangs, n_trials=100, random_state=41).goodput
            < simulate_job(s, n_trials=100, random_state=41).goodput
        )

    def test_hang_share_lowers_goodput_for_every_strategy(self) -> None:
        for strategy in ("restart", "hot_spare", "elastic"):
            runs = [
                simulate_job(
                    Scenario(strategy=strategy, hot_spares=8, repair_h=2.0, hang_share=share),
                    n_trials=200,
                    random_state=42,
                )
                for share in (0.0, 0.5, 1.0)
            ]
            for better, worse in itertools.pairwise(runs):
                se = math.hypot(better.goodput_se, worse.goodput_se)
                assert better.goodput - worse.goodput > Z * se


class TestRandomRepair:
    def test_vanishing_sigma_is_the_fixed_repair_run(self) -> None:
        # one chunk of trials: the same failure matrix, then repair factors exp(1e-9 z) ~ 1
        for spares in (0, 2):
            s = Scenario(n_gpus=8192, strategy="hot_spare", hot_spares=spares, repair_h=2.0)
            fixed = simulate_job(s, n_trials=300, random_state=51)
            tiny = simulate_job(replace(s, repair_sigma=1e-9), n_trials=300, random_state=51)
            assert tiny.goodput == pytest.approx(fixed.goodput, abs=1e-9)
            assert tiny.lost_gpu_h_spares_wait == pytest.approx(
                fixed.lost_gpu_h_spares_wait, rel=1e-6
            )

    def test_fixed_repair_anchor_and_spread_lengthens_the_waits(self) -> None:
        # rare faults (128 nodes, ~0.8 a day), no spares: with a fixed repair r each fault waits
        # r - d after detection d unless the next fault (Poisson, rate lam) comes first, so the
        # share of time waiting is lam E[min(G - d, r - d) | G > d] P(G > d)
        # = exp(-lam d) (1 - exp(-lam (r - d)))
        s = Scenario(n_gpus=1024, strategy="hot_spare", hot_spares=0, repair_h=1.0, job_days=60)
        lam = _node_rate_s(s)
        fixed = simulate_job(s, n_trials=1000, random_state=52)
        wait, se = _loss_fractions(fixed)["lost_frac_spares_wait"]
        r = s.repair_h * HOUR
        expected = math.exp(-lam * s.detect_s) * -math.expm1(-lam * (r - s.detect_s))
        assert wait == pytest.approx(expected, abs=Z * se)
        # log-normal repair of the same median: mean r exp(sigma^2 / 2), longer waits
        previous = (wait, se, fixed.goodput, fixed.goodput_se)
        for sigma in (0.5, 1.0):
            out = simulate_job(replace(s, repair_sigma=sigma), n_trials=1000, random_state=52)
            wait, se = _loss_fractions(out)["lost_frac_spares_wait"]
            assert wait - previous[0] > Z * math.hypot(se, previous[1])
            assert previous[2] - out.goodput > Z * math.hypot(out.goodput_se, previous[3])
            previous = (wait, se, out.goodput, out.goodput_se)

    def test_a_pool_that_never_runs_dry_never_waits(self) -> None:
        s = Scenario(strategy="hot_spare", hot_spares=100_000, repair_h=48.0, repair_sigma=2.0)
        assert simulate_job(s, n_trials=50, random_state=53).lost_gpu_h_spares_wait == 0.0


class TestNodeGroups:
    def test_multiplier_one_is_no_group(self) -> None:
        s = Scenario(
            n_gpus=8192,
            rates=(ClassRate("gpu", "gpu", 50_000.0, weibull_shape=0.7),),
            fleet_age="new",
            checkpoint_interval_s=900.0,
        )
        plain = simulate_job(s, n_trials=600, random_state=61)
        grouped = simulate_job(
            replace(s, node_groups=((0.3, 1.0), (0.2, 1.0))), n_trials=600, random_state=62
        )
        for key in ("goodput", "interruptions"):
            se = math.hypot(getattr(plain, f"{key}_se"), getattr(grouped, f"{key}_se"))
            assert getattr(grouped, key) == pytest.approx(getattr(plain, key), abs=Z * se)

    def test_everyone_in_one_group_is_the_mtbf_divided_by_its_multiplier(self) -> None:
        rates = (
            ClassRate("gpu", "gpu", 50_000.0, weibull_shape=0.7),
            ClassRate("host", "node", 20_000.0),
        )
        s = Scenario(n_gpus=8192, rates=rates, fleet_age=2000.0, checkpoint_interval_s=900.0)
        grouped = replace(s, node_groups=((1.0, 3.0),))
        # an aged fleet scales too: same age, lifetimes scaled by 1/3
        divided = replace(s, rates=tuple(replace(r, mtbf_h=r.mtbf_h / 3.0) for r in rates))
        # 150 trials are one chunk for both (the chunk size, from the expected count, sets the
        # order of the draws)
        for engine, n_trials in ((simulate_job, 150), (simulate_job_naive, 10)):
            a = engine(grouped, n_trials=n_trials, random_state=63)
            b = engine(divided, n_trials=n_trials, random_state=63)
            assert a.trials.equals(b.trials)  # the same units, the same draws

    def test_exponential_group_adds_its_extra_rate(self) -> None:
        # exponential lives: the superposition is Poisson at the summed rate, here
        # 0.75 n / MTBF + 0.25 n x 4 / MTBF = 1.75 n / MTBF, the plain fleet at 1.75x the rate
        s = Scenario(checkpoint_interval_s=900.0)
        grouped = simulate_job(
            replace(s, node_groups=((0.25, 4.0),)), n_trials=600, random_state=64
        )
        faster = simulate_job(
            replace(s, node_failures_per_1000_node_days=6.5 * 1.75), n_trials=600, random_state=65
        )
        plain = simulate_job(s, n_trials=600, random_state=66)
        horizon_s = s.job_days * 86_400.0
        assert grouped.interruptions == pytest.approx(
            1.75 * _node_rate_s(s) * horizon_s, abs=Z * grouped.interruptions_se
        )
        se = math.hypot(grouped.goodput_se, faster.goodput_se)
        assert grouped.goodput == pytest.approx(faster.goodput, abs=Z * se)
        assert plain.goodput - grouped.goodput > 10 * se


class TestWeibullShapeOverride:
    def test_override_is_the_per_class_shape(self) -> None:
        s = Scenario(n_gpus=8192, weibull_shape=0.6, fleet_age="new", checkpoint_interval_s=900.0)
        per_class = replace(
            s,
            weibull_shape=None,
            rates=(ClassRate("node", "node", mtbf_h=24_000.0 / 6.5, weibull_shape=0.6),),
        )
        a = simulate_job(s, n_trials=100, random_state=71)
        b = simulate_job(per_class, n_trials=100, random_state=71)
        assert a.trials.equals(b.trials)
        # infant mortality in a new fleet: more faults, less goodput than exponential lives
        exponential = simulate_job(replace(s, weibull_shape=1.0), n_trials=100, random_state=72)
        se = math.hypot(a.goodput_se, exponential.goodput_se)
        assert exponential.goodput - a.goodput > Z * se


def test_a_plan_without_unit_classes_has_no_failures() -> None:
    """``failure_matrix`` on a plan with no unit class: every trial failure-free (all inf).

    It crashed before (``sum([]).max()`` on the int 0); found by mypy --strict (issue #15).
    """
    import numpy as np

    from models.simulate_plan import build_plan, failure_matrix

    plan = replace(build_plan(Scenario()), classes=())
    matrix = failure_matrix(plan, 5, np.random.default_rng(0))
    assert matrix.shape == (5, 1)
    assert np.isinf(matrix).all()
