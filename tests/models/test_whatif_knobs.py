"""The what-if knobs of the analytical model (#13), each against a hand derivation.

The comparison with an independent event-by-event simulation lives in ``test_eventsim.py``;
here every knob is checked against what it must equal by construction or by a formula written
out in the test.
"""

from __future__ import annotations

import heapq
import math
from dataclasses import replace

import numpy as np
import pytest
from scipy import integrate, special

from models import ClassRate, Scenario, daly_interval_s, project
from models.renewal import spare_wait as _spare_wait
from models.renewal import spare_wait_random as _spare_wait_random

HOUR = 3600.0
DAY = 86_400.0


def _restart_goodput(lam: float, restarts: list[tuple[float, float]], delta: float) -> float:
    """Daly's renewal-reward goodput with Poisson interruptions at ``lam`` (per second) whose
    restart lengths are a mixture ``[(probability, seconds)]``, at Daly's interval for 1/lam."""
    tau = daly_interval_s(delta, 1.0 / lam)
    survive = sum(p * math.exp(-lam * r) for p, r in restarts)
    return tau * survive * lam / math.expm1(lam * (tau + delta))


class TestInterruptionKinds:
    def test_job_level_interruptions_join_the_renewal_reward(self) -> None:
        # 2048 nodes at 6.5 per 1000 node-days plus 0.05 job-level interruptions per hour
        s = Scenario(
            n_gpus=16_384,
            node_failures_per_1000_node_days=6.5,
            checkpoint_s=120.0,
            job_interruptions_per_h=0.05,
        )
        lam_hw = 2048 * 6.5e-3 / DAY
        lam_j = 0.05 / HOUR
        lam = lam_hw + lam_j
        hw = s.detect_s + s.reschedule_s + s.reload_s + s.warmup_s
        job = s.detect_s + s.reload_s + s.warmup_s  # in place: no rescheduling
        want = _restart_goodput(lam, [(lam_hw / lam, hw), (lam_j / lam, job)], 120.0)
        out = project(s)
        assert out["goodput"] == pytest.approx(want, rel=1e-9)
        assert out["expected_interruptions"] == pytest.approx(lam * 30 * DAY, rel=1e-12)
        assert out["goodput"] < project(replace(s, job_interruptions_per_h=0.0))["goodput"]

    def test_job_level_rate_does_not_grow_with_gpus(self) -> None:
        small = Scenario(
            n_gpus=1024, node_failures_per_1000_node_days=1e-6, job_interruptions_per_h=0.1
        )
        large = replace(small, n_gpus=131_072)
        assert project(small)["expected_interruptions"] == pytest.approx(
            project(large)["expected_interruptions"], rel=1e-3
        )

    def test_hang_detection_is_a_mixture(self) -> None:
        s = Scenario(n_gpus=16_384, detect_s=60.0, detect_hang_s=1800.0)
        lam = 2048 * 6.5e-3 / DAY
        rest = s.reschedule_s + s.reload_s + s.warmup_s
        for share in (0.0, 0.3, 1.0):
            want = _restart_goodput(
                lam, [(1 - share, 60.0 + rest), (share, 1800.0 + rest)], s.checkpoint_s
            )
            assert project(replace(s, hang_share=share))["goodput"] == pytest.approx(want, rel=1e-9)
        all_hangs = project(replace(s, hang_share=1.0))
        assert all_hangs["goodput"] == pytest.approx(
            project(replace(s, detect_s=1800.0))["goodput"], rel=1e-12
        )
        assert all_hangs["mean_restart_min"] == pytest.approx((1800.0 + rest) / 60.0)

    @pytest.mark.parametrize("strategy", ["hot_spare", "elastic"])
    def test_hangs_cost_more_under_every_strategy(self, strategy: str) -> None:
        s = Scenario(n_gpus=16_384, strategy=strategy, hot_spares=64, hang_share=0.5)
        assert project(s)["goodput"] < project(replace(s, hang_share=0.0))["goodput"]


class TestNodeGroups:
    def test_a_group_of_every_unit_scales_the_mtbf(self) -> None:
        rates = (
            ClassRate("gpu", "gpu", 50_000.0, weibull_shape=0.7),
            ClassRate("nic", "node", 80_000.0),
        )
        s = Scenario(rates=rates, fleet_age="new", n_gpus=32_768)
        grouped = project(replace(s, node_groups=((1.0, 2.5),)))
        scaled = tuple(replace(r, mtbf_h=r.mtbf_h / 2.5) for r in rates)
        assert grouped["goodput"] == pytest.approx(project(replace(s, rates=scaled))["goodput"])
        assert project(replace(s, node_groups=((0.4, 1.0),)))["goodput"] == pytest.approx(
            project(s)["goodput"], rel=1e-12
        )

    def test_a_bad_batch_adds_its_excess_faults(self) -> None:
        s = Scenario(n_gpus=16_384, node_failures_per_1000_node_days=6.5)
        base = project(s)["expected_interruptions"]
        bad = project(replace(s, node_groups=({"share": 0.1, "rate_multiplier": 4.0},)))
        assert bad["expected_interruptions"] == pytest.approx(base * (0.9 + 0.1 * 4.0), rel=1e-12)
        assert bad["goodput"] < project(s)["goodput"]

    @pytest.mark.parametrize(
        "groups", [((0.7, 2.0), (0.5, 1.0)), ((0.0, 2.0),), ((0.1, -1.0),), (("x", 1),)]
    )
    def test_bad_groups_are_refused_with_the_fix(self, groups: object) -> None:
        with pytest.raises(ValueError, match=r"share|node_groups"):
            Scenario(node_groups=groups)  # type: ignore[arg-type]


class TestShapes:
    def test_fleet_wide_and_per_class_shapes(self) -> None:
        rates = (ClassRate("gpu", "gpu", 50_000.0), ClassRate("nic", "node", 80_000.0))
        s = Scenario(rates=rates, fleet_age="new")
        by_hand = replace(s, rates=(replace(rates[0], weibull_shape=0.7), rates[1]))
        assert (
            project(replace(s, weibull_shape={"gpu": 0.7}))["goodput"]
            == project(by_hand)["goodput"]
        )
        both = replace(s, rates=tuple(replace(r, weibull_shape=1.4) for r in rates))
        assert project(replace(s, weibull_shape=1.4))["goodput"] == project(both)["goodput"]
        with pytest.raises(ValueError, match="no rate"):
            replace(s, weibull_shape={"psu": 0.8}).class_rates()

    def test_shape_moves_a_new_fleet_the_expected_way(self) -> None:
        s = Scenario(n_gpus=16_384, fleet_age="new")
        infant, wear = (project(replace(s, weibull_shape=k)) for k in (0.7, 1.5))
        steady = project(s)
        assert infant["expected_interruptions"] > steady["expected_interruptions"]
        assert wear["expected_interruptions"] < steady["expected_interruptions"]
        assert infant["goodput"] < steady["goodput"] < wear["goodput"]


class TestSparePool:
    @pytest.mark.parametrize("window_h", [2.0, 10.0, 30.0])
    def test_pool_that_starts_full_matches_quadrature(self, window_h: float) -> None:
        spares, c, rate, a = 4, 24 * HOUR, 6 / (24 * HOUR), 0.8 * 6 / (24 * HOUR)
        m = min(c, window_h * HOUR)
        mean, laplace = _spare_wait(
            np.asarray(float(spares)),
            np.asarray(c),
            np.asarray(rate),
            np.asarray(a),
            np.asarray(window_h * HOUR),
        )

        def density(g: float) -> float:  # Gamma(S, rate): time back to the S-th event
            return rate**spares * g ** (spares - 1) * math.exp(-rate * g) / math.gamma(spares)

        # W = (c - G)+ only when the S-th previous event came after the start (G <= window)
        want_m = integrate.quad(lambda g: (c - g) * density(g), 0, m)[0]
        want_l = (
            special.gammaincc(spares, rate * m)
            + integrate.quad(lambda g: math.exp(-a * (c - g)) * density(g), 0, m)[0]
        )
        assert float(mean) == pytest.approx(want_m, rel=1e-7, abs=1e-6)
        assert float(laplace) == pytest.approx(want_l, abs=1e-9)

    def test_a_full_pool_at_the_start_helps_a_hot_spare_job(self) -> None:
        s = Scenario(n_gpus=16_384, strategy="hot_spare", hot_spares=12, repair_h=48.0)
        out = project(s)
        assert out["mean_spare_wait_min"] > 0
        # over a short job the full pool covers most faults; over a long one, less
        short = project(replace(s, job_days=2.0))
        assert short["mean_spare_wait_min"] < out["mean_spare_wait_min"]

    def test_random_repairs_match_a_direct_pool_simulation(self) -> None:
        """Poisson takers, log-normal repairs, first domain back to the longest wait: the waits of
        a long stream of faults against _spare_wait_random's mean and Laplace transform."""
        spares, rate, median, sigma, detect = 6, 5 / (24 * HOUR), 24 * HOUR, 0.8, 300.0
        a = 1 / (2 * HOUR)
        rng = np.random.default_rng(11)
        n = 200_000
        times = np.cumsum(rng.exponential(1 / rate, n))
        back = times + median * np.exp(sigma * rng.standard_normal(n))
        pool = [0.0] * spares  # return times of the domains the requests will get
        heapq.heapify(pool)
        waits = np.empty(n)
        for i in range(n):  # request i is served by the i-th return overall
            heapq.heappush(pool, back[i])
            waits[i] = max(heapq.heappop(pool) - times[i] - detect, 0.0)
        # a return later than a later fault's own can serve it: check with the sorted returns
        keep = slice(n // 10, None)  # past the start: the steady state
        mean, laplace = _spare_wait_random(
            np.asarray(float(spares)),
            np.asarray(detect),
            np.asarray(median),
            np.asarray(sigma),
            np.asarray(rate),
            np.asarray(a),
            np.asarray(1e12),
        )
        w = waits[keep]
        se_mean = w.std() / math.sqrt(w.size) * 10  # waits are correlated: a generous block factor
        assert float(mean) == pytest.approx(w.mean(), abs=4 * se_mean)
        assert float(laplace) == pytest.approx(np.exp(-a * w).mean(), abs=0.01)

    def test_random_repairs_tend_to_the_fixed_answer(self) -> None:
        s = Scenario(n_gpus=16_384, strategy="hot_spare", hot_spares=16, repair_h=24.0)
        fixed = project(s)["goodput"]
        gaps = [
            abs(project(replace(s, repair_sigma=sd))["goodput"] - fixed) for sd in (0.8, 0.3, 0.05)
        ]
        assert gaps[0] > gaps[1] > gaps[2]
        assert gaps[2] < 0.01 * fixed  # the model's own 1 % claim
        # a spread of repair times with the same median: some repairs take far longer
        assert gaps[0] > 0.05


class TestStatedLimits:
    def test_ettr_not_applicable_is_said_never_zero(self) -> None:
        out = project(Scenario(n_gpus=131_072, checkpoint_s=600.0, reschedule_s=1800.0))
        assert out["ettr"] is None
        assert out["ettr_note"].startswith("not applicable at this scale")
        assert out["goodput"] > 0
        ok = project(Scenario(n_gpus=1024))
        assert 0 < ok["ettr"] < 1
        assert "first-order" in ok["ettr_note"]

    def test_contended_pool_is_not_called_exact(self) -> None:
        calm = project(Scenario(n_gpus=16_384, strategy="hot_spare", hot_spares=256))
        assert calm["analytical_exact"]
        assert calm["goodput_error_bound"] < 0.01 * calm["goodput"]
        jammed = project(Scenario(n_gpus=16_384, strategy="hot_spare", hot_spares=4))
        assert not jammed["analytical_exact"]
        assert jammed["goodput_error_bound"] > 0.01 * jammed["goodput"]


class TestRankingCarriesTheModelBound:
    def test_a_gain_the_model_error_could_make_up_is_flagged(self) -> None:
        from models import knob_gains

        # a contended pool: the analytical answer states a bound of several points
        base = Scenario(n_gpus=16_384, strategy="hot_spare", hot_spares=6, checkpoint_s=60.0)
        assert not project(base)["analytical_exact"]
        ranking = knob_gains(base, {"checkpoint_s": [60.0, 55.0], "hot_spares": [6, 512]})
        rows = {r["knob"]: r for r in ranking.gains.iter_rows(named=True)}
        small = rows["checkpoint_s"]
        assert 0 < small["gain"] <= small["gain_model_bound"]
        assert small["within_uncertainty"] is True
        big = rows["hot_spares"]  # enough spares buys far more than either bound
        assert big["gain"] > big["gain_model_bound"]
        assert big["within_uncertainty"] is None  # no MTBF interval to compare with
