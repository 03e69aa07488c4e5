"""The rank-pace model of fail-slow: closed forms, an independent Monte Carlo, the fit, goodput."""

from __future__ import annotations

import math
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from itertools import pairwise

import numpy as np
import polars as pl
import pytest
from scipy import integrate, stats

from models import (
    LogNormalLaw,
    Mitigation,
    ParetoLaw,
    Scenario,
    SlowFit,
    SlowLaws,
    combine_goodput,
    eviction_cost_s,
    fit_slow_laws,
    project,
    project_slow,
    slow_share,
    slowdown_curve,
)
from tests.models.failslow_sim import segment_max, simulate_pace

HOUR = 3600.0

# A lognormal fleet: episodes of median 20 min (sigma 1), S - 1 of median 0.1 (sigma 0.8).
DURATION = LogNormalLaw(median=1200.0, sigma=1.0)
EXCESS = LogNormalLaw(median=0.1, sigma=0.8)
RATE = 5e-5  # episodes per GPU-hour
LAWS = SlowLaws(RATE, DURATION, EXCESS)
HEAVY = ParetoLaw(scale=0.05, shape=1.2)  # S - 1 with a heavy tail
EVICT = Mitigation(detect_s=600.0, tolerance=0.1, evict_s=300.0, eviction_cost_s=900.0)


def _mean_d_h(law: LogNormalLaw) -> float:
    return law.median * math.exp(law.sigma**2 / 2) / HOUR


class TestClosedForms:
    @pytest.mark.parametrize("n_gpus", [1, 1_000, 16_384, 100_000, 10**7])
    @pytest.mark.parametrize("s", [1.057, 1.5, 3.0])
    def test_fixed_slowdown_is_one_minus_exp_times_one_minus_one_over_s(
        self, n_gpus: int, s: float
    ) -> None:
        laws = SlowLaws(RATE, DURATION, LogNormalLaw(s - 1.0, 0.0))
        m = n_gpus * RATE * _mean_d_h(DURATION)
        expected = -math.expm1(-m) * (1.0 - 1.0 / s)
        assert float(slow_share(laws, n_gpus)) == pytest.approx(expected, rel=1e-12, abs=1e-300)

    def test_small_m_is_linear_in_n_with_slope_e_one_minus_one_over_s(self) -> None:
        # E[1 - 1/S] = E[X / (1 + X)] for X = S - 1 log-normal, by its own quadrature
        density = stats.lognorm(s=EXCESS.sigma, scale=EXCESS.median).pdf
        slope, _ = integrate.quad(lambda x: x / (1 + x) * density(x), 0, np.inf, limit=200)
        for n_gpus in (1, 10):
            m = n_gpus * RATE * _mean_d_h(DURATION)
            share = float(slow_share(LAWS, n_gpus))
            assert share == pytest.approx(m * slope, rel=2 * m)  # next term is O(m^2)

    @pytest.mark.parametrize("n_gpus", [1_000, 16_384, 100_000, 3_000_000])
    def test_quadrature_matches_the_integral_in_x(self, n_gpus: int) -> None:
        m = n_gpus * RATE * _mean_d_h(DURATION)

        def integrand(x: float) -> float:
            sf = stats.lognorm.sf(x - 1.0, s=EXCESS.sigma, scale=EXCESS.median)
            return -math.expm1(-m * sf) / x**2

        pieces = [1.0, 1.1, 1.5, 3.0, 30.0, np.inf]
        expected = sum(
            integrate.quad(integrand, a, b, limit=200, epsabs=0.0, epsrel=1e-12)[0]
            for a, b in pairwise(pieces)
        )
        assert float(slow_share(LAWS, n_gpus)) == pytest.approx(expected, rel=1e-9)

    @pytest.mark.parametrize(
        "law", [DURATION, LogNormalLaw(0.1, 0.3), HEAVY, ParetoLaw(60.0, 1.0), ParetoLaw(60.0, 2.5)]
    )
    @pytest.mark.parametrize("cap", [0.01, 30.0, 900.0, 1e5])
    def test_limited_mean_is_the_integral_of_the_survival_function(
        self, law: LogNormalLaw | ParetoLaw, cap: float
    ) -> None:
        # E[min(X, c)] = int_0^c P(X > x) dx
        lo, hi = law.log_range()
        breaks = sorted({0.0, cap, *(b for b in (math.exp(lo), math.exp(hi)) if b < cap)})
        expected = sum(
            integrate.quad(lambda x: float(law.sf(x)), a, b, limit=200, epsrel=1e-11)[0]
            for a, b in pairwise(breaks)
        )
        assert law.limited_mean(cap) == pytest.approx(expected, rel=1e-8)

    def test_gpu_and_node_episodes_add_their_occupancies(self) -> None:
        # m(x) = m_gpu 1{x < 1.2} + m_node 1{x < 2}; a node-level law counts ceil(N / 8) nodes
        gpu = SlowLaws(RATE, LogNormalLaw(1800.0, 0.0), LogNormalLaw(0.2, 0.0), unit="gpu")
        node = SlowLaws(4 * RATE, LogNormalLaw(3600.0, 0.0), LogNormalLaw(1.0, 0.0), unit="node")
        n_gpus = 16_380  # 2,048 nodes, the last one partly used
        m_gpu, m_node = n_gpus * RATE * 0.5, 2_048 * 4 * RATE * 1.0
        expected = -math.expm1(-(m_gpu + m_node)) * (1 - 1 / 1.2) + -math.expm1(-m_node) * (
            1 / 1.2 - 1 / 2
        )
        assert float(slow_share([gpu, node], n_gpus)) == pytest.approx(expected, rel=1e-12)

    def test_share_rises_with_n_and_saturates_below_one(self) -> None:
        sizes = np.array([8, 1_000, 16_384, 100_000, 10**6, 10**8])
        share = slow_share(LAWS, sizes)
        assert share.shape == sizes.shape
        assert np.all(np.diff(share) > 0)
        assert share[-1] < 1.0

    def test_bloom_one_slow_gpu_holds_the_job_to_its_pace(self) -> None:
        # BLOOM 176B (tests/pipelines/sources/samples/failslow/, read by hand): 105.16 s per
        # iteration at 149.10 TFLOPs, then 111.14 s with one slow GPU in the job. A job that
        # always holds such a GPU (m large) runs at that pace: share 1 - 105.16 / 111.14.
        s = 111.14 / 105.16
        laws = SlowLaws(1.0, LogNormalLaw(HOUR * 1e3, 0.0), LogNormalLaw(s - 1.0, 0.0))
        out = project_slow(laws, 384)
        assert out.share == pytest.approx(1.0 - 105.16 / 111.14, rel=1e-12)
        assert 149.10 / out.slowdown == pytest.approx(141.09, abs=0.05)  # the printed TFLOPs

    def test_fixed_laws_with_eviction_cut_acted_episodes_only(self) -> None:
        d_s, n_gpus = 7200.0, 16_384
        mit = Mitigation(detect_s=600.0, tolerance=0.2, evict_s=300.0, eviction_cost_s=1800.0)
        for s, cut_s, acted in ((1.5, 900.0, True), (1.1, d_s, False)):
            laws = SlowLaws(RATE, LogNormalLaw(d_s, 0.0), LogNormalLaw(s - 1.0, 0.0))
            out = project_slow(laws, n_gpus, mitigation=mit)
            m = n_gpus * RATE * cut_s / HOUR
            assert out.mean_slow_units == pytest.approx(m, rel=1e-12)
            assert out.share == pytest.approx(-math.expm1(-m) * (1 - 1 / s), rel=1e-12)
            evictions = n_gpus * RATE if acted else 0.0
            assert out.evictions_per_h == pytest.approx(evictions, rel=1e-12)
            stalled = evictions * 1800.0 / HOUR
            assert out.eviction_h_per_h == pytest.approx(stalled, rel=1e-12)
            assert out.slow_h_per_h == pytest.approx((1 - stalled) * out.share, rel=1e-12)
            assert out.lost_h_per_h == pytest.approx(sum(c.h_per_h for c in out.by_cause))
            tolerated = {c.cause: c.h_per_h for c in out.by_cause}["slow_tolerated"]
            assert tolerated == pytest.approx(0.0 if acted else out.slow_h_per_h, abs=1e-15)

    def test_a_tolerance_above_every_slowdown_never_acts(self) -> None:
        laws = SlowLaws(RATE, DURATION, LogNormalLaw(0.1, 0.0))
        acting = Mitigation(detect_s=60.0, tolerance=0.5, eviction_cost_s=600.0)
        out, idle = project_slow(laws, 16_384, mitigation=acting), project_slow(laws, 16_384)
        assert out.share == pytest.approx(idle.share, rel=1e-12)
        assert out.evictions_per_h == 0.0

    def test_eviction_lowers_the_slow_share(self) -> None:
        without = slow_share(LAWS, [1_000, 100_000])
        with_eviction = slow_share(LAWS, [1_000, 100_000], mitigation=EVICT)
        assert np.all(with_eviction < without)


Draw = Callable[[np.random.Generator, int], np.ndarray]


def _lognormal(law: LogNormalLaw, scale: float) -> Draw:
    """Draws of ``scale * X`` for X with the law's median and sigma, by numpy's own normal."""
    return lambda rng, n: law.median * scale * np.exp(law.sigma * rng.standard_normal(n))


def _pareto_excess(rng: np.random.Generator, n: int) -> np.ndarray:
    """``1 + X`` for X Pareto type I, by inversion."""
    return 1.0 + HEAVY.scale * rng.random(n) ** (-1.0 / HEAVY.shape)


@pytest.mark.slow
class TestMonteCarlo:
    """The quadrature against the independent simulation of ``tests/models/failslow_sim.py``."""

    @pytest.mark.parametrize("n_gpus", [1_000, 16_384, 100_000])
    @pytest.mark.parametrize("mitigation", [None, EVICT], ids=["no_eviction", "eviction"])
    @pytest.mark.parametrize("heavy", [False, True], ids=["lognormal", "pareto"])
    def test_share_within_three_standard_errors(
        self, n_gpus: int, mitigation: Mitigation | None, heavy: bool
    ) -> None:
        excess = HEAVY if heavy else EXCESS
        laws = SlowLaws(RATE, DURATION, excess)
        lognormal_excess = _lognormal(EXCESS, 1.0)
        draw_s: Draw = _pareto_excess if heavy else (lambda rng, n: 1.0 + lognormal_excess(rng, n))
        stream = n_gpus * RATE
        act = None
        if mitigation is not None:
            act = (mitigation.tolerance, mitigation.detect_s / HOUR, mitigation.evict_s / HOUR)
        mc = simulate_pace(
            n_units=n_gpus,
            rate_per_unit_h=RATE,
            draw_duration_h=_lognormal(DURATION, 1.0 / HOUR),
            draw_slowdown=draw_s,
            horizon_h=400.0 / stream,
            warmup_h=200.0,
            n_trials=200,
            seed=n_gpus + 7 * heavy + 5 * (mitigation is not None),
            act=act,
        )
        model_mit = mitigation or Mitigation()
        out = project_slow(laws, n_gpus, mitigation=model_mit)
        assert mc.share_se < 0.05 * mc.share  # the comparison has power
        assert abs(out.share - mc.share) < 3 * mc.share_se
        assert abs(out.share_tolerated - mc.tolerated) < 3 * mc.tolerated_se + 1e-12
        if mitigation is not None:
            assert abs(out.evictions_per_h - mc.evictions_per_h) < 3 * mc.evictions_per_h_se

    def test_segment_max_paints_ranges_by_hand(self) -> None:
        # segments 0..5; [0,3) at 2, [2,6) at 1.5, [4,5) at 3, an empty range ignored
        out = segment_max(
            6, np.array([0, 2, 4, 1]), np.array([3, 6, 5, 1]), np.array([2.0, 1.5, 3.0, 9.0])
        )
        assert out.tolist() == [2.0, 2.0, 2.0, 1.5, 3.0, 1.5]


def _episodes(seed: int, unit_hours: float) -> tuple[pl.DataFrame, int]:
    """Episodes from known laws on GPUs, cut by attempt ends; plus unattributed ones."""
    rng = np.random.default_rng(seed)
    n = rng.poisson(RATE * unit_hours)
    t0 = datetime(2026, 1, 1, tzinfo=UTC)
    start_s = rng.uniform(0, 3e7, n)
    duration = DURATION.median * np.exp(DURATION.sigma * rng.standard_normal(n))
    cut = rng.exponential(HOUR, n)  # time from the episode's start to its attempt's end
    observed = np.minimum(duration, cut)
    slowdown = 1 + EXCESS.median * np.exp(EXCESS.sigma * rng.standard_normal(n))
    n_other = 40
    start = [t0 + timedelta(seconds=float(s)) for s in start_s]
    frame = pl.DataFrame(
        {
            "start_ts": start + [t0] * n_other,
            "end_ts": [
                a + timedelta(seconds=float(d)) for a, d in zip(start, observed, strict=True)
            ]
            + [t0 + timedelta(seconds=600.0)] * n_other,
            "attempt_end_ts": [
                a + timedelta(seconds=float(c)) for a, c in zip(start, cut, strict=True)
            ]
            + [t0 + timedelta(hours=1)] * n_other,
            "slowdown": np.concatenate([slowdown, np.full(n_other, 1.3)]),
            "blamed_host": [f"node{i % 97}" for i in range(n)] + [None] * n_other,
            "blamed_gpu": [i % 8 for i in range(n)] + [None] * n_other,
            "attribution": ["per_rank"] * n + ["unattributed"] * n_other,
        }
    )
    return frame, n


Fitted = tuple[pl.DataFrame, int, SlowFit]


UNIT_HOURS = 3e7  # GPU-hours observed: about 1,500 episodes at RATE


@pytest.fixture(scope="module")
def fitted() -> Fitted:
    frame, n = _episodes(11, UNIT_HOURS)
    fit = fit_slow_laws(frame, unit_hours=UNIT_HOURS, job_hours=5e4, n_boot=200, random_state=3)
    return frame, n, fit


class TestFit:
    def test_rate_interval_holds_the_truth_and_has_the_exact_poisson_width(
        self, fitted: Fitted
    ) -> None:
        _, n, fit = fitted
        assert fit.n_episodes == n
        assert fit.rate_lo_per_unit_h < RATE < fit.rate_hi_per_unit_h
        # Garwood: chi2(0.025; 2n) / 2 and chi2(0.975; 2n + 2) / 2, over the exposure
        width = (stats.chi2.ppf(0.975, 2 * n + 2) - stats.chi2.ppf(0.025, 2 * n)) / 2
        got = (fit.rate_hi_per_unit_h - fit.rate_lo_per_unit_h) * UNIT_HOURS
        assert got == pytest.approx(width, rel=1e-12)
        assert fit.laws.rate_per_unit_h == n / UNIT_HOURS

    def test_censored_durations_recover_the_law_a_naive_fit_misses(self, fitted: Fitted) -> None:
        frame, _, fit = fitted
        assert 0.2 * fit.n_episodes < fit.n_censored < 0.8 * fit.n_episodes
        medians = [r.duration_s.median for r in fit.replicates]
        sigmas = [r.duration_s.sigma for r in fit.replicates]
        lo, hi = np.quantile(medians, [0.005, 0.995])
        assert lo < DURATION.median < hi
        assert np.quantile(sigmas, 0.005) < DURATION.sigma < np.quantile(sigmas, 0.995)
        blamed = frame.filter(pl.col("blamed_gpu").is_not_null())
        seconds = (blamed["end_ts"] - blamed["start_ts"]).dt.total_seconds().to_numpy()
        naive = float(np.exp(np.log(seconds).mean()))
        assert naive < lo  # ignoring the cut ends biases the median down, beyond the interval

    def test_slowdown_law_and_unattributed_reported_apart(self, fitted: Fitted) -> None:
        _, _, fit = fitted
        assert fit.laws.excess.median == pytest.approx(EXCESS.median, rel=0.1)
        assert fit.laws.excess.sigma == pytest.approx(EXCESS.sigma, rel=0.1)
        assert fit.lower_bound
        assert fit.unattributed is not None
        assert fit.unattributed.n_episodes == 40
        assert fit.unattributed.rate_per_job_h == pytest.approx(40 / 5e4)
        assert fit.unattributed.excess is not None
        assert fit.unattributed.excess.median == pytest.approx(0.3)

    def test_bootstrap_interval_carries_into_slowdown_of_n(self, fitted: Fitted) -> None:
        _, _, fit = fitted
        assert len(fit.replicates) + fit.n_boot_failed == 200
        curve = slowdown_curve(fit, [1_000, 16_384, 100_000])
        truth = slow_share(LAWS, [1_000, 16_384, 100_000])
        for p, true_share in zip(curve, truth, strict=True):
            assert p.share_lo is not None
            assert p.share_hi is not None
            assert p.share_lo < p.share < p.share_hi
            assert p.share_lo < true_share < p.share_hi
            assert p.slowdown_lo == pytest.approx(1 / (1 - p.share_lo))
        assert curve[0].slowdown < curve[1].slowdown < curve[2].slowdown

    def test_bad_rows_give_one_line_errors(self) -> None:
        t0 = datetime(2026, 1, 1, tzinfo=UTC)
        base = {
            "start_ts": [t0, t0],
            "end_ts": [t0 + timedelta(minutes=5)] * 2,
            "blamed_gpu": [1, 2],
        }
        with pytest.raises(ValueError, match="1 or less"):
            fit_slow_laws(pl.DataFrame(base | {"slowdown": [1.2, 0.9]}), unit_hours=10.0)
        with pytest.raises(ValueError, match="lacks columns"):
            fit_slow_laws(pl.DataFrame({"slowdown": [1.2]}), unit_hours=10.0)
        with pytest.raises(ValueError, match="unit_hours must be a positive"):
            fit_slow_laws(pl.DataFrame(base | {"slowdown": [1.2, 1.3]}), unit_hours=0.0)
        with pytest.raises(ValueError, match="at least two"):
            fit_slow_laws(
                pl.DataFrame(base | {"slowdown": [1.2, 1.3], "censored": [True, False]}),
                unit_hours=10.0,
            )


class TestCombine:
    def test_productive_time_scaled_and_lost_hours_split_by_cause(self) -> None:
        scenario = Scenario(n_gpus=16_384)
        fail_stop = project(scenario)
        cost = eviction_cost_s(scenario, fail_stop, how="restart")
        tau = fail_stop["checkpoint_interval_min"] * 60
        assert cost == pytest.approx(300 + 180 + 120 + (tau + 60) / 2)
        assert eviction_cost_s(scenario, fail_stop, how="planned") == 60 + 300
        mit = Mitigation(detect_s=600.0, tolerance=0.1, evict_s=0.0, eviction_cost_s=cost)
        slow = project_slow(LAWS, 16_384, mitigation=mit)
        out = combine_goodput(fail_stop, slow)
        gpu_h = 16_384 * 30 * 24
        assert out.gpu_h == pytest.approx(gpu_h)
        productive = fail_stop["useful_gpu_h"]
        assert out.useful_gpu_h == pytest.approx(
            productive * (1 - slow.eviction_h_per_h) * (1 - slow.share)
        )
        assert out.goodput == pytest.approx(out.useful_gpu_h / gpu_h)
        assert out.goodput < fail_stop["goodput"] == out.goodput_fail_stop
        fail_stop_h = sum(c.gpu_h for c in out.by_cause if c.kind == "fail_stop")
        fail_slow_h = sum(c.gpu_h for c in out.by_cause if c.kind == "fail_slow")
        assert fail_stop_h == pytest.approx(fail_stop["lost_gpu_h_total"], rel=1e-9)
        assert fail_slow_h == pytest.approx(out.lost_gpu_h_fail_slow, rel=1e-9)
        assert out.lost_gpu_h_total == pytest.approx(out.gpu_h - out.useful_gpu_h)
        assert out.lost_gpu_h_total == pytest.approx(fail_stop_h + fail_slow_h)
        assert {c.cause for c in out.by_cause if c.kind == "fail_slow"} == {
            "slow_tolerated",
            "slow_above_tolerance",
            "eviction",
        }

    def test_a_fitted_slow_projection_carries_its_interval_into_goodput(
        self, fitted: Fitted
    ) -> None:
        fail_stop = project(Scenario(n_gpus=16_384))
        slow = project_slow(fitted[2], 16_384)
        out = combine_goodput(fail_stop, slow)
        assert out.goodput_lo is not None
        assert out.goodput_hi is not None
        assert out.goodput_lo < out.goodput < out.goodput_hi
        assert out.goodput_lo == pytest.approx(
            fail_stop["useful_gpu_h"] * (1 - slow.lost_hi) / out.gpu_h
        )

    def test_bad_mitigation_and_laws_say_what_to_fix(self) -> None:
        with pytest.raises(ValueError, match="tolerance"):
            Mitigation(tolerance=-0.1)
        with pytest.raises(ValueError, match="positive finite median"):
            LogNormalLaw(0.0, 1.0)
        with pytest.raises(ValueError, match="unit must be"):
            SlowLaws(RATE, DURATION, EXCESS, unit="rack")
        with pytest.raises(ValueError, match="finite mean"):
            SlowLaws(RATE, ParetoLaw(60.0, 0.9), EXCESS)
        with pytest.raises(ValueError, match="n_gpus"):
            slowdown_curve(LAWS, [0])
