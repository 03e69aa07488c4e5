"""Proactive drains: the analytical model, the simulators, and projection over a predictor's curve.

Monte Carlo tolerances are derived, not tuned, as in ``test_simulate.py``: a mean is compared with
its expectation within ``Z`` standard errors (Z = 4: a false alarm about once in 16,000 runs),
plus a stated bound on the window-edge effects that the stationary analysis leaves out.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import replace
from typing import Any

import numpy as np
import polars as pl
import pytest
from scipy import integrate, special

from models import (
    ClassRate,
    Scenario,
    daly_interval_s,
    drain_sweep,
    knob_gains,
    project,
    simulate_job,
    simulate_job_naive,
    sweep,
)
from models.renewal import spare_wait as _spare_wait
from models.simulate import _account_drained
from models.simulate_plan import build_plan as _plan

Z = 4.0
HOUR = 3600.0
LOST_KEYS = (
    "lost_gpu_h_checkpoint",
    "lost_gpu_h_rework",
    "lost_gpu_h_restart",
    "lost_gpu_h_spares_wait",
    "lost_gpu_h_drain",
)


def _rates_s(s: Scenario, out: dict[str, Any]) -> tuple[float, float]:
    """Unwarned-fault rate and alarm rate (true and false), per second."""
    lam = 1.0 / (out["mtti_h"] * HOUR)
    return (1.0 - s.drain_recall) * lam, s.drain_recall * lam / s.drain_precision


def _edge_bound(s: Scenario, out: dict[str, Any]) -> float:
    """Bound on |E[simulated goodput] - analytical goodput| from the edges of the window.

    The simulated job starts computing at t = 0, so it gains at most one restart or drain. At the
    end it loses the compute of the segment in progress: at most one segment, and on average no
    more than the time since the last event (fault or alarm, rate Lambda), 1 / Lambda. Hot spares:
    the first S events find the pool full and skip a wait of at most repair - detect each.
    Elastic: a replica group out past the window end is not charged (at most
    frac x rate x D_max^2 / 2 for faults, frac x alarm rate x migration^2 / 2 for drains), nor
    a detection stall cut by it.
    """
    horizon_s = s.job_days * 86_400.0
    lam_u, lam_a = _rates_s(s, out)
    seg = out["checkpoint_interval_min"] * 60.0 + s.checkpoint_s
    drain_s = s.checkpoint_s + s.drain_migration_s
    restart = s.detect_s + s.reschedule_s + s.reload_s + s.warmup_s
    bound = (max(restart, drain_s) + min(seg, 1.0 / (lam_u + lam_a))) / horizon_s
    c = max(s.repair_h * HOUR - s.detect_s, 0.0)
    if s.strategy == "hot_spare":
        bound += s.hot_spares * c / horizon_s
    if s.strategy == "elastic":
        frac = max(s.replica_gpus, s.failure_domain_gpus) / s.n_gpus
        d_max = s.detect_s + c + s.reload_s + s.warmup_s
        out_s2 = lam_u * d_max**2 + lam_a * s.drain_migration_s**2
        bound = frac * out_s2 / 2.0 / horizon_s + s.detect_s / horizon_s
    return bound


class TestScenarioKnobs:
    def test_drains_are_off_by_default_and_precision_is_moot_without_recall(self) -> None:
        base = Scenario(strategy="hot_spare", hot_spares=2)
        off = replace(base, drain_precision=0.2, drain_migration_s=5000.0)
        assert base.drain_recall == 0.0
        assert project(off) == project(base)
        assert project(base)["expected_drains"] == 0.0
        assert project(base)["lost_gpu_h_drain"] == 0.0

    @pytest.mark.parametrize(
        ("kwargs", "match"),
        [
            ({"drain_recall": -0.1}, "drain_recall"),
            ({"drain_recall": 1.5}, "drain_recall"),
            ({"drain_recall": math.nan}, "drain_recall"),
            ({"drain_precision": 0.0}, "drain_precision"),
            ({"drain_precision": 1.2}, "drain_precision"),
            ({"drain_migration_s": -1.0}, "drain_migration_s"),
        ],
    )
    def test_bad_drain_knobs_fail_with_a_fix(self, kwargs: dict[str, float], match: str) -> None:
        with pytest.raises(ValueError, match=match):
            Scenario(**kwargs)  # type: ignore[arg-type]


class TestSpareWait:
    @pytest.mark.parametrize(
        ("spares", "c", "rate_out", "rate_u"),
        [
            (1, 3 * HOUR, 1 / 6480, 1 / 6480),  # no drains
            (2, 3 * HOUR, 1 / 6480, 0.5 / 6480),
            (5, 24 * HOUR, 1 / 600, 0.05 / 600),  # alarms' share above S: the log branch
            (40, 24 * HOUR, 1 / 600, 0.9 / 600),
            (0, 4 * HOUR, 1 / 3000, 0.2 / 3000),
        ],
        ids=["no-drains", "drains", "log-branch", "many-spares", "no-spares"],
    )
    def test_moments_match_quadrature(
        self, spares: int, c: float, rate_out: float, rate_u: float
    ) -> None:
        mean, laplace = _spare_wait(
            np.asarray(float(spares)), np.asarray(c), np.asarray(rate_out), np.asarray(rate_u)
        )
        if spares == 0:  # waits for its own repair
            assert mean == c
            assert laplace == pytest.approx(math.exp(-rate_u * c), rel=1e-12)
            return

        def density(g: float) -> float:  # Gamma(S, rate_out): the time back to the S-th event
            return math.exp(
                (spares - 1) * math.log(g) + spares * math.log(rate_out) - rate_out * g
            ) / math.gamma(spares)

        tail = special.gammaincc(spares, rate_out * c)  # Gamma_S > c: no wait
        want_l = tail + integrate.quad(lambda g: math.exp(-rate_u * (c - g)) * density(g), 0, c)[0]
        want_m = integrate.quad(lambda g: (c - g) * density(g), 0, c)[0]
        assert laplace == pytest.approx(want_l, abs=1e-9)
        assert mean == pytest.approx(want_m, rel=1e-7, abs=1e-6)
        if rate_u == rate_out:  # no drains: P(Poisson(c / M) <= S), the model before drains
            assert laplace == pytest.approx(special.gammaincc(spares + 1, rate_out * c), rel=1e-12)


class TestProjection:
    def test_perfect_free_warning_leaves_no_lost_work(self) -> None:
        # recall 1, precision 1, free migration: every fault is a drain costing one checkpoint
        s = Scenario(drain_recall=1.0, drain_precision=1.0, drain_migration_s=0.0)
        out = project(s)
        lam = 1.0 / (out["mtti_h"] * HOUR)
        gpu_h = s.n_gpus * s.job_days * 24
        assert out["mtti_unpredicted_h"] == math.inf
        assert out["checkpoint_interval_min"] == s.job_days * 24 * 60  # no periodic checkpoint
        assert out["lost_gpu_h_rework"] == pytest.approx(0.0, abs=1e-9 * gpu_h)
        assert out["lost_gpu_h_restart"] == 0.0
        assert out["lost_gpu_h_checkpoint"] == pytest.approx(0.0, abs=1e-9 * gpu_h)
        # alarms arriving during a drain are handled by it: a dead-time counter, lam / (1 + lam d)
        assert out["goodput"] == pytest.approx(1.0 / (1.0 + lam * s.checkpoint_s), rel=1e-12)
        horizon_s = s.job_days * 86_400
        drains = lam * horizon_s / (1.0 + lam * s.checkpoint_s)
        assert out["expected_drains"] == pytest.approx(drains, rel=1e-12)
        assert out["lost_gpu_h_drain"] == pytest.approx((1.0 - out["goodput"]) * gpu_h, rel=1e-9)
        assert project(replace(s, checkpoint_s=0.0))["goodput"] == pytest.approx(1.0, rel=1e-12)

    @pytest.mark.parametrize("recall", [0.3, 0.9])
    def test_false_alarms_lower_goodput_monotonically(self, recall: float) -> None:
        precisions = [1.0, 0.8, 0.6, 0.4, 0.2, 0.1, 0.05]
        outs = [project(Scenario(drain_recall=recall, drain_precision=p)) for p in precisions]
        goodput = [o["goodput"] for o in outs]
        false_alarms = [o["expected_false_alarms"] for o in outs]
        assert all(a > b for a, b in itertools.pairwise(goodput))
        assert false_alarms[0] == 0.0
        assert all(a < b for a, b in itertools.pairwise(false_alarms))
        # a predictor this noisy drains away more than it saves
        assert goodput[-1] < project(Scenario())["goodput"] < goodput[0]

    def test_precise_warnings_help_more_the_more_faults_they_catch(self) -> None:
        goodput = [project(Scenario(drain_recall=r))["goodput"] for r in (0, 0.25, 0.5, 0.75, 1)]
        assert all(a < b for a, b in itertools.pairwise(goodput))

    def test_interval_and_mtti_follow_the_unwarned_faults(self) -> None:
        s = Scenario(drain_recall=0.75, drain_precision=0.5)
        out = project(s)
        mtti_u_s = out["mtti_h"] * HOUR / (1 - 0.75)
        assert out["mtti_unpredicted_h"] == pytest.approx(mtti_u_s / HOUR, rel=1e-12)
        assert out["daly_interval_min"] == pytest.approx(
            daly_interval_s(s.checkpoint_s, mtti_u_s) / 60, rel=1e-12
        )
        assert out["checkpoint_interval_min"] == out["daly_interval_min"]
        # faults are counted warned of or not; false alarms at (1 - p) / p per warned fault
        assert out["expected_interruptions"] == project(Scenario())["expected_interruptions"]
        assert out["expected_false_alarms"] == pytest.approx(
            0.75 * out["expected_interruptions"], rel=1e-12
        )

    @pytest.mark.parametrize("strategy", ["restart", "hot_spare", "elastic"])
    def test_lost_hours_add_up_to_total_with_drains(self, strategy: str) -> None:
        s = Scenario(
            strategy=strategy,
            hot_spares=2,
            repair_h=4.0,
            replica_gpus=128,
            drain_recall=0.6,
            drain_precision=0.4,
        )
        out = project(s)
        gpu_h = s.n_gpus * s.job_days * 24
        assert sum(out[k] for k in LOST_KEYS) == pytest.approx(out["lost_gpu_h_total"], rel=1e-9)
        assert out["lost_gpu_h_total"] == pytest.approx((1 - out["goodput"]) * gpu_h, rel=1e-9)
        assert min(out[k] for k in LOST_KEYS) >= 0
        assert out["lost_gpu_h_drain"] > 0
        assert out["daly_wall_time_h"] == pytest.approx(30 * 24 / out["goodput"], rel=1e-9)

    def test_false_alarms_drain_the_spare_pool(self) -> None:
        # drains take spares too, so noisier alarms leave unwarned faults waiting longer
        base = Scenario(strategy="hot_spare", hot_spares=2, repair_h=6.0, drain_recall=0.5)
        waits = [
            project(replace(base, drain_precision=p))["mean_spare_wait_min"] for p in (1, 0.5, 0.2)
        ]
        assert waits[0] < waits[1] < waits[2]

    def test_ettr_agrees_with_goodput_to_first_order(self) -> None:
        # as without drains: both charge u0 + tau/2 per unwarned fault and u_d per alarm
        s = Scenario(
            n_gpus=1024,
            checkpoint_s=10.0,
            detect_s=30.0,
            reschedule_s=30.0,
            drain_recall=0.5,
            drain_precision=0.5,
            drain_migration_s=60.0,
        )
        out = project(s)
        loss = 1 - out["goodput"]
        assert out["ettr"] == pytest.approx(out["goodput"], abs=loss**2 * 2)


class TestSweeps:
    def test_sweep_matches_project_point_by_point(self) -> None:
        base = Scenario(strategy="hot_spare", hot_spares=2)
        grid = {
            "n_gpus": [4096, 32_768],
            "drain_recall": [0.0, 0.5, 1.0],
            "drain_precision": [0.3, 1.0],
            "drain_migration_s": [60.0, 600.0],
            "strategy": ["restart", "hot_spare", "elastic"],
        }
        df = sweep(base, grid)
        assert df.height == 72
        assert {"drain_recall", "drain_precision", "drain_migration_s"} <= set(df.columns)
        for row in df.iter_rows(named=True):
            expected = project(replace(base, **{k: row[k] for k in grid}))
            for key in ("goodput", "ettr", "expected_drains", "lost_gpu_h_drain"):
                if expected[key] is None:  # Meta's ETTR, not applicable at this scale
                    assert row[key] is None
                else:
                    assert row[key] == pytest.approx(expected[key], rel=1e-12)

    def test_bad_drain_value_in_a_grid_is_refused(self) -> None:
        with pytest.raises(ValueError, match="drain_precision"):
            sweep(Scenario(), {"drain_precision": [0.5, 0.0]})

    def test_knob_gains_ranks_drain_recall(self) -> None:
        grid = {"drain_recall": [0.0, 0.5, 0.9], "detect_s": [60.0, 120.0]}
        gains = knob_gains(Scenario(detect_s=120.0), grid).gains
        top = gains.row(0, named=True)
        assert top["knob"] == "drain_recall"
        assert top["best_value"] == "0.9"
        assert top["baseline_value"] == "0.0"


def _curve() -> pl.DataFrame:
    return pl.DataFrame(
        {
            "threshold": [0.1, 0.3, 0.5, 0.7, 0.99],
            "precision": [0.05, 0.3, 0.6, 0.9, None],
            "recall": [0.95, 0.9, 0.6, 0.2, 0.0],
            "lead_time_h": [6.0, 3.0, 1.0, 0.01, None],
        }
    )


class TestDrainSweep:
    def test_each_threshold_is_projected_against_no_drains(self) -> None:
        base = Scenario(strategy="hot_spare", hot_spares=8, repair_h=4.0, drain_migration_s=120.0)
        curve = _curve()
        df = drain_sweep(base, curve)
        assert df.columns[:4] == ["threshold", "precision", "recall", "lead_time_h"]
        assert df["threshold"].to_list() == curve["threshold"].to_list()
        baseline = project(base)["goodput"]
        for row in df.head(4).iter_rows(named=True):
            at = project(
                replace(base, drain_recall=row["recall"], drain_precision=row["precision"])
            )
            for key in ("goodput", "expected_drains", "expected_false_alarms", "useful_gpu_h"):
                assert row[key] == pytest.approx(at[key], rel=1e-12)
            assert row["goodput_no_drain"] == baseline
            assert row["goodput_gain"] == pytest.approx(at["goodput"] - baseline, abs=1e-15)
        # recall 0: no alarms, whatever the (missing) precision
        last = df.row(4, named=True)
        assert last["goodput_gain"] == 0.0
        assert last["expected_drains"] == 0.0
        # the noisiest threshold loses goodput, the mid ones gain
        assert df["goodput_gain"][0] < 0 < df["goodput_gain"][2]

    def test_lead_time_is_checked_against_a_checkpoint_write(self) -> None:
        df = drain_sweep(Scenario(checkpoint_s=60.0), _curve())
        assert df["lead_time_covers_checkpoint"].to_list() == [True, True, True, False, None]
        assert (
            "lead_time_covers_checkpoint"
            not in drain_sweep(Scenario(), _curve().drop("lead_time_h")).columns
        )

    @pytest.mark.parametrize(
        ("curve", "match"),
        [
            (_curve().drop("recall"), "lacks columns"),
            (_curve().with_columns(recall=pl.lit(1.2)), "recall must be"),
            (_curve().with_columns(precision=pl.lit(0.0)), "precision must be"),
            (_curve().with_columns(precision=pl.lit(None, pl.Float64)), "precision must be"),
        ],
    )
    def test_bad_curve_fails_with_a_fix(self, curve: pl.DataFrame, match: str) -> None:
        with pytest.raises(ValueError, match=match):
            drain_sweep(Scenario(), curve)


HOT_SPARE = Scenario(
    strategy="hot_spare",
    hot_spares=2,
    repair_h=1.0,
    job_days=60.0,
    drain_recall=0.5,
    drain_precision=0.8,
)
# heavy cases (thousands of events per trial, long alarm chains) take a few seconds each
AGREEMENT = [
    pytest.param(Scenario(), id="off"),
    pytest.param(Scenario(drain_recall=0.5, drain_precision=0.8), id="recall0.5-precision0.8"),
    pytest.param(Scenario(drain_recall=0.9, drain_precision=0.3), id="recall0.9-precision0.3"),
    pytest.param(
        Scenario(drain_recall=0.9, drain_precision=0.1),
        id="recall0.9-precision0.1",
        marks=pytest.mark.slow,
    ),
    pytest.param(
        Scenario(drain_recall=1.0, drain_precision=1.0, drain_migration_s=0.0), id="perfect-free"
    ),
    pytest.param(
        Scenario(n_gpus=131_072, checkpoint_s=20.0, drain_recall=0.7, drain_precision=0.5),
        id="131k-recall0.7-precision0.5",
        marks=pytest.mark.slow,
    ),
    pytest.param(HOT_SPARE, id="hot_spare"),
    pytest.param(
        Scenario(
            strategy="elastic",
            replica_gpus=128,
            hot_spares=4,
            repair_h=2.0,
            drain_recall=0.5,
            drain_precision=0.8,
        ),
        id="elastic",
    ),
]


class TestSimulation:
    @pytest.mark.parametrize("scenario", AGREEMENT)
    def test_goodput_agrees_with_analysis_within_one_percent(self, scenario: Scenario) -> None:
        analytic = project(scenario)
        # 1600 trials keep Z x SE under 0.1 % of goodput here (SE 0.05-0.2 goodput points)
        mc = simulate_job(scenario, n_trials=1600, random_state=11)
        edge = _edge_bound(scenario, analytic)
        tolerance = Z * mc.goodput_se + edge
        # the test only means something if the tolerance is itself well inside 1 %
        assert tolerance < 0.005 * analytic["goodput"]
        assert mc.goodput == pytest.approx(analytic["goodput"], abs=tolerance)
        assert abs(mc.goodput / analytic["goodput"] - 1) < 0.01
        # faults are Poisson: their count has no edge effect; the drains' has at most the
        # alarms of the one restart or drain the simulation skips at t = 0
        assert mc.interruptions == pytest.approx(
            analytic["expected_interruptions"], abs=Z * mc.interruptions_se
        )
        _, lam_a = _rates_s(scenario, analytic)
        restart = scenario.detect_s + scenario.reschedule_s + scenario.reload_s + scenario.warmup_s
        skipped = lam_a * max(restart, scenario.checkpoint_s + scenario.drain_migration_s)
        assert mc.drains == pytest.approx(
            analytic["expected_drains"], abs=Z * mc.drains_se + skipped + 1e-12
        )

    def test_loss_split_agrees_with_analysis(self) -> None:
        s = HOT_SPARE
        analytic = project(s)
        mc = simulate_job(s, n_trials=400, random_state=5)
        gpu_h = s.n_gpus * s.job_days * 24
        for key in LOST_KEYS:
            assert getattr(mc, key) == pytest.approx(analytic[key], abs=0.01 * gpu_h)
        assert sum(getattr(mc, k) for k in LOST_KEYS) == pytest.approx(
            mc.lost_gpu_h_total, rel=1e-9
        )

    def test_false_alarms_lower_simulated_goodput(self) -> None:
        noisy = Scenario(drain_recall=0.9)
        runs = [
            simulate_job(replace(noisy, drain_precision=p), n_trials=200, random_state=7)
            for p in (1.0, 0.3, 0.1)
        ]
        for better, worse in itertools.pairwise(runs):
            se = math.hypot(better.goodput_se, worse.goodput_se)
            assert better.goodput - worse.goodput > Z * se

    def test_knob_off_replays_the_same_random_stream(self) -> None:
        # with recall 0 the simulator draws no marks and no false alarms: same numbers as before
        a = simulate_job(Scenario(n_gpus=2048), n_trials=50, random_state=3)
        b = simulate_job(
            Scenario(n_gpus=2048, drain_precision=0.3, drain_migration_s=10.0),
            n_trials=50,
            random_state=3,
        )
        assert a.trials.equals(b.trials)
        assert a.drains == 0.0
        assert a.lost_gpu_h_drain == 0.0
        assert a.trials.columns[:3] == ["trial", "goodput", "n_interruptions"]
        assert "n_drains" in a.trials.columns  # beside n_job_interruptions (#13)

    @pytest.mark.parametrize(
        ("strategy", "expected", "n_drains"),
        [
            # 0-1000 computes one segment (600 + 60) and 340 s that the drain at 1000 saves; the
            # alarm at 1100 falls in that drain (to 1360); 1360-2000 is lost to the fault at
            # 2000, whose restart (to 2720) absorbs the alarm at 2500; the drain at 3000 would
            # save 280 s but the fault at 3030 strikes during its checkpoint, and that restart
            # runs past the end
            (
                "restart",
                {"goodput": 940, "checkpoint": 60, "drain": 390, "restart": 1290, "rework": 920},
                2,
            ),
            # one spare, back 1800 s after each event takes it: the fault at 2000 gets the one
            # the alarm at 1100 took (free at 2900) and waits 780 s after detection, so its
            # restart runs to 3200 and absorbs both later alarms; the fault at 3030 gets the one
            # the alarm at 3000 took (free at 4800) and waits past the end
            (
                "hot_spare",
                {
                    "goodput": 940,
                    "checkpoint": 60,
                    "drain": 360,
                    "restart": 250 + 120,
                    "spares_wait": 780 + 450,
                    "rework": 640,
                },
                1,
            ),
        ],
    )
    def test_accounting_of_a_known_sequence(
        self, strategy: str, expected: dict[str, float], n_drains: int
    ) -> None:
        # one trial, one hour: tau = 600 s, delta = 60 s, restart 720 s, drain 60 + 300 s
        s = Scenario(
            job_days=1 / 24,
            checkpoint_interval_s=600.0,
            checkpoint_s=60.0,
            strategy=strategy,
            hot_spares=1,
            repair_h=0.5,
            drain_recall=0.5,
            drain_migration_s=300.0,
        )
        plan = _plan(s)
        t = np.array([[1000.0, 1100.0, 2000.0, 2500.0, 3000.0, 3030.0, np.inf]])
        alarm = np.array([[True, True, False, True, True, False, False]])
        fault = np.array([[True, False, True, False, True, True, False]])
        out = _account_drained(plan, t, alarm, fault, np.random.default_rng(0))  # draws nothing
        assert sum(expected.values()) == pytest.approx(plan.horizon_s, rel=1e-12)
        for key in ("goodput", "checkpoint", "drain", "restart", "spares_wait", "rework"):
            seconds = expected.get(key, 0.0)
            assert out[key][0] == pytest.approx(seconds / plan.horizon_s, rel=1e-12, abs=1e-15)
        assert out["n_drains"][0] == n_drains
        assert out["n_interruptions"][0] == 4


class TestNaiveCrossCheck:
    @pytest.mark.parametrize(
        "scenario",
        [
            Scenario(n_gpus=8192, drain_recall=0.9, drain_precision=0.3),
            Scenario(
                n_gpus=8192,
                drain_recall=0.6,
                drain_precision=0.5,
                strategy="hot_spare",
                hot_spares=1,
                repair_h=3.0,
            ),
            Scenario(
                n_gpus=8192,
                drain_recall=0.6,
                drain_precision=0.5,
                strategy="elastic",
                replica_gpus=64,
                repair_h=6.0,
            ),
            Scenario(
                n_gpus=8192,
                rates=(ClassRate("gpu", "gpu", 50_000.0, weibull_shape=0.7),),
                fleet_age="new",
                drain_recall=0.7,
                drain_precision=0.6,
            ),
            Scenario(
                n_gpus=8192,
                checkpoint_s=600.0,
                drain_recall=0.8,
                drain_precision=0.2,
                drain_migration_s=3000.0,
            ),
        ],
        ids=["restart", "hot_spare", "elastic", "weibull-new", "slow-drains"],
    )
    def test_naive_and_vectorised_agree_with_drains(self, scenario: Scenario) -> None:
        fast = simulate_job(scenario, n_trials=400, random_state=21)
        slow = simulate_job_naive(scenario, n_trials=150, random_state=22)
        for key in ("goodput", "interruptions", "drains"):
            se = math.hypot(getattr(fast, f"{key}_se"), getattr(slow, f"{key}_se"))
            assert getattr(fast, key) == pytest.approx(getattr(slow, key), abs=Z * se)
        assert set(fast.to_dict()) == set(slow.to_dict())
