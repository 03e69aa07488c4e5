"""The independent event simulation of issue #13, and both engines checked against it.

First the event simulation itself (``tests/models/eventsim.py``) on cases with a known answer:
no failures, Daly's renewal-reward goodput for Poisson interrupts, the stationary failure rate of
a steady-state Weibull fleet, the law of the first failures, and hand-checked traces. Then the
acceptance of #13: :func:`models.project` and :func:`models.simulate_job` within 1 % goodput of
the event simulation (plus 3 combined standard errors) at 16,384 / 100,000 / 131,072 GPUs,
Weibull shapes 0.7 and 1.5, new and steady-state fleets, with and without a spare pool; and
every new knob moving goodput the way the event simulation moves it, by the same amount.

The reference scenario is the issue's: 6.5 node failures per 1000 node-days, a 30-day job, a
5-minute checkpoint and a 10-minute restart (detect 120 s + reschedule 180 s + reload 180 s +
warm-up 120 s); the spare pool is 16 hot spares repaired in 24 h. Trial counts are chosen from
the standard error each comparison needs; the engines' results are cached per scenario.
"""

from __future__ import annotations

import ast
import functools
import math
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from scipy import special, stats

from models import ClassRate, Scenario, project, simulate_job
from tests.models import eventsim

Z = 3.0  # standard errors allowed
REL = 0.01  # the 1 % of goodput
HOUR = 3600.0
DAY = 86_400.0
SIZES = (16_384, 100_000, 131_072)
REFERENCE = {
    "node_failures_per_1000_node_days": 6.5,
    "job_days": 30.0,
    "checkpoint_s": 300.0,
    "detect_s": 120.0,
    "reschedule_s": 180.0,
    "reload_s": 180.0,
    "warmup_s": 120.0,
}
POOL = {"strategy": "hot_spare", "hot_spares": 16, "repair_h": 24.0}


def reference(n_gpus: int = 16_384, **knobs: Any) -> Scenario:
    """The issue's reference scenario at ``n_gpus``, with ``knobs`` changed."""
    return Scenario(n_gpus=n_gpus, **{**REFERENCE, **knobs})


def tau_s(s: Scenario) -> float:
    """The checkpoint interval the projection chooses, seconds (every engine runs at it)."""
    return project(s)["checkpoint_interval_min"] * 60.0


def n_trials(s: Scenario) -> int:
    """Event-simulation trials: about 1 ms each at 16k GPUs, 10-20 ms at 131k."""
    return 400 if s.n_gpus <= 20_000 else 80


@functools.cache
def event_sim(s: Scenario, trials: int | None = None) -> dict[str, Any]:
    return eventsim.simulate(s, tau_s=tau_s(s), n_trials=trials or n_trials(s), seed=2026)


@functools.cache
def monte_carlo(s: Scenario) -> dict[str, Any]:
    return simulate_job(s, n_trials=1000, random_state=13)


def paired_se(a: np.ndarray, b: np.ndarray) -> float:
    """Standard error of the mean of per-trial differences ``b - a`` (trials paired by index)."""
    d = np.asarray(b) - np.asarray(a)
    return float(d.std(ddof=1) / math.sqrt(d.size))


def mean_se(x: np.ndarray) -> float:
    x = np.asarray(x)
    return float(x.std(ddof=1) / math.sqrt(x.size))


def edge_bound(s: Scenario, tau: float) -> float:
    """Bound on the window-edge effect the stationary renewal-reward formula leaves out.

    The job starts computing at t = 0 with no restart (at most one restart gained) and loses the
    segment in progress at the end (at most one segment): (R + tau + delta) / T.
    """
    restart = s.detect_s + s.reschedule_s + s.reload_s + s.warmup_s
    return (restart + tau + s.checkpoint_s) / (s.job_days * DAY)


def daly_goodput(tau: float, delta: float, mtti_s: float, survive: float) -> float:
    r"""Renewal-reward goodput of periodic checkpoints under Poisson interrupts.

    From a resume, segments of :math:`\tau + \delta` each complete with probability
    :math:`q = e^{-\lambda(\tau+\delta)}`, so :math:`\tau q / (1 - q)` is committed before the
    next fault, which comes :math:`1/\lambda` after the resume on average. Each restart attempt
    (a random :math:`R`) succeeds with probability :math:`e^{-\lambda R}` and takes
    :math:`E[\min(R, X)] = E[1 - e^{-\lambda R}]/\lambda`, so the restarts take
    :math:`(1 - S)/(\lambda S)` with :math:`S = E[e^{-\lambda R}]` (``survive``). The cycle is
    :math:`1/(\lambda S)` long and

    .. math:: G = \frac{\tau S}{M\,(e^{(\tau+\delta)/M} - 1)}
    """
    return tau * survive / (mtti_s * math.expm1((tau + delta) / mtti_s))


def exponential_fleet(n_gpus: int, mtbf_node_h: float, **knobs: Any) -> Scenario:
    """The reference scenario on one exponential node class of the given MTBF."""
    rates = (ClassRate("node", "node", mtbf_h=mtbf_node_h),)
    fields = {**REFERENCE, "node_failures_per_1000_node_days": None, "rates": rates, **knobs}
    return Scenario(n_gpus=n_gpus, **fields)


# --------------------------------------------------------------------------- the event simulation


class TestEventSimulation:
    def test_eventsim_imports_nothing_from_models_but_the_scenario_type(self) -> None:
        tree = ast.parse(Path(eventsim.__file__).read_text())
        imported = [
            (node.module, alias.name)
            for node in ast.walk(tree)
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("models")
            for alias in node.names
        ]
        plain = [
            alias.name
            for node in ast.walk(tree)
            if isinstance(node, ast.Import)
            for alias in node.names
            if alias.name.startswith("models")
        ]
        assert imported == [("models.goodput", "Scenario")]
        assert plain == []

    def test_eventsim_without_failures_commits_tau_over_tau_plus_delta(self) -> None:
        rates = (ClassRate("node", "node", mtbf_h=1e15),)
        for strategy in ("restart", "hot_spare", "elastic"):
            s = Scenario(rates=rates, strategy=strategy, checkpoint_s=300.0, job_days=30.0)
            out = eventsim.simulate(s, tau_s=1200.0, n_trials=2, seed=0)
            horizon = 30 * DAY
            whole = 1200.0 * math.floor(horizon / 1500.0) / horizon  # the last segment is lost
            expected = 0.8 if strategy == "elastic" else whole
            assert out["goodput"] == pytest.approx(expected, rel=1e-12)
            assert out["interruptions"] == 0

    @pytest.mark.parametrize(
        ("knobs", "restart_of"),
        [
            ({}, lambda s: [(1.0, s.detect_s + s.reschedule_s + s.reload_s + s.warmup_s)]),
            (
                {"hang_share": 0.4, "detect_hang_s": 900.0},
                lambda s: [
                    (0.6, s.detect_s + s.reschedule_s + s.reload_s + s.warmup_s),
                    (0.4, s.detect_hang_s + s.reschedule_s + s.reload_s + s.warmup_s),
                ],
            ),
        ],
        ids=["crash", "crash-and-hang"],
    )
    def test_eventsim_restart_matches_daly_renewal_reward(
        self, knobs: dict[str, Any], restart_of: Any
    ) -> None:
        # M = 14,400 h / 1,024 nodes = 14.1 h; a year-long window keeps the edges below 1e-4
        s = exponential_fleet(8_192, 14_400.0, job_days=365.0, **knobs)
        mtti_s = 14_400.0 * HOUR / 1_024
        tau = 3_000.0
        survive = sum(p * math.exp(-r / mtti_s) for p, r in restart_of(s))
        expected = daly_goodput(tau, s.checkpoint_s, mtti_s, survive)
        out = eventsim.simulate(s, tau_s=tau, n_trials=60, seed=1)
        tolerance = Z * out["goodput_se"] + edge_bound(s, tau)
        assert tolerance < 0.002 * expected  # the check is sharp
        assert out["goodput"] == pytest.approx(expected, abs=tolerance)
        expected_faults = 1_024 * 365 * 24 / 14_400.0
        assert out["interruptions"] == pytest.approx(
            expected_faults, abs=Z * out["interruptions_se"]
        )

    def test_eventsim_job_level_interruptions_match_daly_renewal_reward(self) -> None:
        # no hardware faults: only the job-level stream, a restart in place (detect, reload, warm)
        s = exponential_fleet(8_192, 1e15, job_days=365.0, job_interruptions_per_h=0.2)
        mtti_s = HOUR / 0.2
        tau = 1_800.0
        survive = math.exp(-(s.detect_s + s.reload_s + s.warmup_s) / mtti_s)
        expected = daly_goodput(tau, s.checkpoint_s, mtti_s, survive)
        out = eventsim.simulate(s, tau_s=tau, n_trials=60, seed=2)
        tolerance = Z * out["goodput_se"] + edge_bound(s, tau)
        assert tolerance < 0.002 * expected
        assert out["goodput"] == pytest.approx(expected, abs=tolerance)
        assert out["job_interruptions"] == pytest.approx(
            0.2 * 365 * 24, abs=Z * out["interruptions_se"]
        )
        assert out["faults"] == 0

    @pytest.mark.parametrize("shape", [0.7, 1.5])
    def test_eventsim_steady_state_weibull_fleet_fails_at_n_over_mtbf(self, shape: float) -> None:
        s = reference(16_384, weibull_shape=shape, fleet_age="steady_state")
        out = event_sim(s)
        expected = 2_048 * 30.0 * 6.5 / 1000.0  # n T / MTBF, 2,048 nodes
        assert out["interruptions"] == pytest.approx(expected, abs=Z * out["interruptions_se"])

    @pytest.mark.parametrize(
        ("shape", "fleet_age"), [(0.7, "steady_state"), (1.5, "steady_state"), (0.7, 500.0)]
    )
    def test_eventsim_first_failures_follow_their_law(
        self, shape: float, fleet_age: str | float
    ) -> None:
        eta = 1_000.0
        t = eventsim.first_failures_s(20_000, shape, eta, fleet_age, np.random.default_rng(3))
        if fleet_age == "steady_state":  # F_e(t) = P(1/k, (t/eta)^k)

            def cdf(x: np.ndarray) -> np.ndarray:
                return special.gammainc(1.0 / shape, (np.maximum(x, 0) / eta) ** shape)
        else:  # residual life at age a: 1 - exp(-((a + t)/eta)^k + (a/eta)^k)
            a = float(fleet_age) * HOUR

            def cdf(x: np.ndarray) -> np.ndarray:
                x = np.maximum(x, 0)
                return -np.expm1(-(((a + x) / eta) ** shape - (a / eta) ** shape))

        assert stats.kstest(t, cdf).pvalue > 0.01

    def test_eventsim_node_groups_scale_the_failure_rate(self) -> None:
        base = reference(16_384)
        grouped = replace(base, node_groups=((0.25, 3.0),))
        populations = eventsim.unit_populations(grouped)
        assert [units for units, _, _ in populations] == [512, 1_536]
        assert populations[0][2] == pytest.approx(populations[1][2] / 3.0)
        out = event_sim(grouped)
        expected = 2_048 * 30.0 * 6.5 / 1000.0 * (0.25 * 3.0 + 0.75)
        assert out["interruptions"] == pytest.approx(expected, abs=Z * out["interruptions_se"])

    def test_eventsim_restart_trace_by_hand(self) -> None:
        s = Scenario(
            n_gpus=8,
            checkpoint_s=100.0,
            detect_s=10.0,
            detect_hang_s=200.0,
            reschedule_s=20.0,
            reload_s=30.0,
            warmup_s=40.0,
            job_days=0.1,  # 8,640 s
        )
        events = [(2_500.0, "crash"), (2_650.0, "hang"), (2_900.0, "job_crash")]
        out = eventsim.replay(s, tau_s=1_000.0, events=events)
        # 0-2500: two segments of 1100 s committed (2000 s), 300 s lost; restart 10+20+70,
        # resumes at 2600; hang at 2650 loses 50 s, resumes at 2650+200+20+70 = 2940; the job
        # crash at 2900 (warm-up not done) detects at 2910 and reloads: resumes at 2980, then
        # floor((8640 - 2980) / 1100) = 5 segments to the end
        assert out["goodput"] == pytest.approx(7_000.0 / 8_640.0, rel=1e-12)
        assert (out["n_faults"], out["n_job_interruptions"]) == (2, 1)

    def test_eventsim_hot_spare_trace_by_hand(self) -> None:
        s = Scenario(
            n_gpus=8,
            strategy="hot_spare",
            hot_spares=1,
            repair_h=0.5,  # 1,800 s
            checkpoint_s=100.0,
            detect_s=10.0,
            detect_hang_s=200.0,
            reload_s=30.0,
            warmup_s=40.0,
            job_days=0.1,
        )
        events = [(1_000.0, "crash"), (1_500.0, "crash"), (3_000.0, "hang")]
        out = eventsim.replay(s, tau_s=1_000.0, events=events)
        # 1000: the spare is free, resume at 1080 (fault 0's domain back at 2800); 1500: the pool
        # is empty, detected at 1510, served by fault 0's domain at 2800, resumes at 2870;
        # 3000 (hang): detected at 3200, served by fault 1's domain at 3300, resumes at 3370;
        # floor((8640 - 3370) / 1100) = 4 segments. Waits after detection: 0, 1290, 100 s
        assert out["goodput"] == pytest.approx(4_000.0 / 8_640.0, rel=1e-12)
        assert out["spare_wait_s"] == pytest.approx(1_390.0)
        assert out["n_spare_requests"] == 3
        # no spares: a fault waits for its own repair (back at 2800, resume at 2870)
        alone = eventsim.replay(replace(s, hot_spares=0), tau_s=1_000.0, events=events[:1])
        assert alone["goodput"] == pytest.approx(1_000.0 * 5 / 8_640.0, rel=1e-12)

    def test_eventsim_elastic_trace_by_hand(self) -> None:
        s = Scenario(
            n_gpus=64,
            failure_domain_gpus=8,
            replica_gpus=16,  # a fault takes a quarter of the job out
            strategy="elastic",
            hot_spares=1,
            repair_h=0.5,
            checkpoint_s=100.0,
            detect_s=10.0,
            reload_s=30.0,
            warmup_s=40.0,
            job_days=0.1,
        )
        out = eventsim.replay(s, tau_s=1_000.0, events=[(1_000.0, "crash"), (1_500.0, "crash")])
        # fault 0 out 10 + 0 + 70 s; fault 1 waits for fault 0's domain (2800 - 1510 = 1290 s),
        # out 10 + 1290 + 70 s; each stalls everyone 10 s
        down = 0.25 * (80.0 + 1_370.0) / 8_640.0
        stall = 20.0 / 8_640.0
        assert out["goodput"] == pytest.approx((1 - down) * (1 - stall) * 1_000 / 1_100, rel=1e-12)

    def test_eventsim_is_fast_at_131k_gpus(self) -> None:
        import time

        s = reference(131_072)
        start = time.perf_counter()
        out = eventsim.simulate(s, tau_s=tau_s(s), n_trials=5, seed=4)
        per_trial = (time.perf_counter() - start) / 5
        assert out["interruptions"] > 2_500
        assert per_trial < 0.1

    def test_eventsim_refuses_drains(self) -> None:
        with pytest.raises(ValueError, match="drain"):
            eventsim.simulate(Scenario(drain_recall=0.5), tau_s=600.0, n_trials=2, seed=0)
