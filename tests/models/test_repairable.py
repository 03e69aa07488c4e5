"""Repairable-system models: MCF by hand, trend tests on simulated NHPPs, lemon detection."""

from __future__ import annotations

import math

import numpy as np
import polars as pl
import pytest
from scipy import stats

from models import (
    crow_amsaa,
    crow_amsaa_fleet,
    exposure_clock,
    fleet_trend,
    laplace_test,
    lemon_nodes,
    mean_cumulative_function,
    mil_hdbk_189_test,
)


def power_law_times(
    rng: np.random.Generator, beta: float, expected_events: float, end_h: float
) -> np.ndarray:
    """Event times of a power-law NHPP on [0, end_h] with mean ``expected_events`` events.

    Given N events the times are i.i.d. with CDF (t / end_h) ** beta.
    """
    n = rng.poisson(expected_events)
    return np.sort(end_h * rng.random(n) ** (1.0 / beta))


def fleet_events(
    rng: np.random.Generator, beta: float, lam: float, windows: list[tuple[float, float]]
) -> pl.DataFrame:
    """Power-law NHPP events for systems observed over ``[start, end]`` of their age."""
    rows = []
    for unit, (start, end) in enumerate(windows):
        n = rng.poisson(lam * (end**beta - start**beta))
        # inverse of the cumulative intensity restricted to the window
        times = (start**beta + rng.random(n) * (end**beta - start**beta)) ** (1.0 / beta)
        rows += [(unit, float(t), start, end) for t in np.sort(times)] or [(unit, None, start, end)]
    return pl.DataFrame(rows, schema=["unit_id", "time_h", "start_h", "end_h"], orient="row")


class TestMeanCumulativeFunction:
    # A observed [0, 10] with events at 2 and 6; B [0, 4] with 3; C [1, 10] with 6 and 8;
    # D [0, 10] with none (a null event time).
    EVENTS = pl.DataFrame(
        {
            "node": ["A", "A", "B", "C", "C", "D"],
            "t": [2.0, 6.0, 3.0, 6.0, 8.0, None],
            "start": [0.0, 0.0, 0.0, 1.0, 1.0, 0.0],
            "end": [10.0, 10.0, 4.0, 10.0, 10.0, 10.0],
        }
    )

    def mcf(self) -> pl.DataFrame:
        return mean_cumulative_function(
            self.EVENTS, unit_col="node", time_col="t", start_col="start", end_col="end"
        )

    def test_mcf_matches_hand_computation(self) -> None:
        result = self.mcf()
        assert result["time_h"].to_list() == [2.0, 3.0, 6.0, 8.0]
        # at risk: all four until B leaves at 4, then A, C, D
        assert result["n_at_risk"].to_list() == [4, 4, 3, 3]
        assert result["n_events"].to_list() == [1, 1, 2, 1]
        assert result["mcf"].to_list() == pytest.approx(
            [1 / 4, 1 / 2, 1 / 2 + 2 / 3, 1 / 2 + 2 / 3 + 1 / 3], rel=1e-12
        )

    def test_variance_is_lawless_nadeau_by_hand(self) -> None:
        # per unit, cumulative sums of (d_i - d/n) / n over the times it is at risk:
        #   t=2:  A (1-1/4)/4 = 3/16, B, C, D -1/16 each
        #   t=3:  B 3/16, A, C, D -1/16
        #   t=6:  A, C (1-2/3)/3 = 1/9, D -2/9 (B gone)
        #   t=8:  C (1-1/3)/3 = 2/9, A, D -1/9
        a = [3 / 16, 2 / 16, 2 / 16 + 1 / 9, 2 / 16 + 1 / 9 - 1 / 9]
        b = [-1 / 16, 2 / 16, 2 / 16, 2 / 16]
        c = [-1 / 16, -2 / 16, -2 / 16 + 1 / 9, -2 / 16 + 1 / 9 + 2 / 9]
        d = [-1 / 16, -2 / 16, -2 / 16 - 2 / 9, -2 / 16 - 2 / 9 - 1 / 9]
        variance = [sum(x[j] ** 2 for x in (a, b, c, d)) for j in range(4)]
        result = self.mcf()
        assert (result["se"] ** 2).to_list() == pytest.approx(variance, rel=1e-12)
        z = stats.norm.ppf(0.975)
        expected_hi = result["mcf"] * np.exp(z * result["se"] / result["mcf"])
        assert result["hi"].to_list() == pytest.approx(expected_hi.to_list(), rel=1e-12)

    def test_event_outside_window_is_rejected(self) -> None:
        bad = self.EVENTS.with_columns(
            pl.when(pl.col("node") == "B").then(5.0).otherwise(pl.col("t")).alias("t")
        )
        with pytest.raises(ValueError, match="outside its unit's window"):
            mean_cumulative_function(
                bad, unit_col="node", time_col="t", start_col="start", end_col="end"
            )

    def test_two_windows_for_one_unit_are_rejected(self) -> None:
        bad = self.EVENTS.with_columns(
            pl.when(pl.col("t") == 6.0).then(9.0).otherwise(pl.col("end")).alias("end")
        )
        with pytest.raises(ValueError, match="more than one observation window"):
            mean_cumulative_function(
                bad, unit_col="node", time_col="t", start_col="start", end_col="end"
            )


class TestCrowAmsaa:
    @pytest.mark.parametrize(("beta", "verdict"), [(0.5, "improving"), (1.8, "degrading")])
    def test_recovers_shape_within_its_interval(self, beta, verdict) -> None:
        times = power_law_times(np.random.default_rng(1), beta, 200.0, 8_760.0)
        result = crow_amsaa(times, 8_760.0)
        assert result.beta_lo < beta < result.beta_hi
        assert result.verdict == verdict
        assert result.lambda_ == pytest.approx(times.size / 8_760.0**result.beta, rel=1e-12)

    def test_homogeneous_process_is_stable(self) -> None:
        times = power_law_times(np.random.default_rng(2), 1.0, 200.0, 8_760.0)
        result = crow_amsaa(times, 8_760.0)
        assert result.verdict == "stable"
        assert result.beta_lo < 1.0 < result.beta_hi

    def test_time_truncated_closed_form(self) -> None:
        times = np.array([100.0, 400.0, 900.0])
        result = crow_amsaa(times, 1_000.0, alpha=0.1)
        beta = 3 / (math.log(10.0) + math.log(2.5) + math.log(1000 / 900))
        assert result.beta == pytest.approx(beta, rel=1e-12)
        assert result.beta_lo == pytest.approx(beta * stats.chi2.ppf(0.05, 6) / 6, rel=1e-12)
        assert result.beta_hi == pytest.approx(beta * stats.chi2.ppf(0.95, 6) / 6, rel=1e-12)

    def test_failure_truncated_uses_last_event_and_2n_minus_2_dof(self) -> None:
        times = np.array([100.0, 400.0, 900.0])
        result = crow_amsaa(times, 1_000.0, time_truncated=False)
        beta = 3 / (math.log(9.0) + math.log(2.25))
        assert result.beta == pytest.approx(beta, rel=1e-12)
        assert result.total_time_h == 900.0
        assert result.beta_hi == pytest.approx(beta * stats.chi2.ppf(0.975, 4) / 6, rel=1e-12)

    def test_interval_coverage_is_exact(self) -> None:
        rng = np.random.default_rng(3)
        n_replications, beta = 2_000, 0.7
        covered = 0
        for _ in range(n_replications):
            result = crow_amsaa(power_law_times(rng, beta, 30.0, 1_000.0), 1_000.0)
            covered += result.beta_lo < beta < result.beta_hi
        lo, hi = stats.binom.ppf([0.005, 0.995], n_replications, 0.95)
        assert lo <= covered <= hi

    def test_fleet_with_different_windows_recovers_shape(self) -> None:
        rng = np.random.default_rng(4)
        windows = [
            (float(s), float(s + w))
            for s, w in zip(rng.uniform(0, 5_000, 40), rng.uniform(2_000, 8_000, 40), strict=True)
        ]
        events = fleet_events(rng, 1.6, 1e-5, windows)
        result = crow_amsaa_fleet(events)
        assert result.beta_lo < 1.6 < result.beta_hi
        assert result.verdict == "degrading"
        assert result.n_events == events["time_h"].drop_nulls().len()

    def test_fleet_interval_with_late_windows_keeps_its_coverage(self) -> None:
        """Windows opening anywhere in the first half (left truncation): the chi-square bounds
        held 2.0 in about 80 % of such fleets; the profile likelihood-ratio ones in 95 %."""
        rng = np.random.default_rng(16)
        n_fleets, covered = 300, 0
        for _ in range(n_fleets):
            windows = [(float(s), 4_000.0) for s in rng.uniform(0, 2_000, 60)]
            result = crow_amsaa_fleet(fleet_events(rng, 2.0, 4e-7, windows))
            covered += result.beta_lo < 2.0 < result.beta_hi
        lo, hi = stats.binom.ppf([0.001, 0.999], n_fleets, 0.95)
        assert lo <= covered <= hi

    def test_fleet_with_equal_windows_equals_pooled_closed_form(self) -> None:
        events = fleet_events(np.random.default_rng(5), 0.8, 0.05, [(0.0, 1_000.0)] * 10)
        result = crow_amsaa_fleet(events)
        times = events["time_h"].drop_nulls().to_numpy()
        assert result.beta == pytest.approx(times.size / np.log(1_000.0 / times).sum(), rel=1e-12)
        assert result.lambda_ == pytest.approx(times.size / 10 / 1_000.0**result.beta, rel=1e-9)

    def test_one_failure_at_the_end_of_a_long_window_has_a_finite_scale(self) -> None:
        """One failure 7.6 h before the end of 816 h (a real kernel log's Xid 119): the shape
        is 1 / ln(816 / 808.4) = 106.8, and scale ** shape (816 ** 106.8) is beyond a float;
        the result is computed in logs: lambda = 1 / 816 ** beta underflows to 0, the
        instantaneous MTBF is 816 / beta (total time = scale, one failure)."""
        events = pl.DataFrame(
            {"unit_id": ["a"], "time_h": [808.4], "start_h": [0.0], "end_h": [816.0]}
        )
        result = crow_amsaa_fleet(events)
        beta = 1.0 / math.log(816.0 / 808.4)
        assert result.beta == pytest.approx(beta, rel=1e-12)
        assert result.lambda_ == pytest.approx(math.exp(-beta * math.log(816.0)), abs=1e-300)
        assert result.mtbf_instantaneous_h == pytest.approx(816.0 / beta, rel=1e-9)


class TestLaplaceTest:
    def test_detects_increasing_rate(self) -> None:
        times = power_law_times(np.random.default_rng(6), 1.8, 100.0, 1_000.0)
        result = laplace_test(times, 1_000.0)
        assert result.p_value < 0.05
        assert result.statistic > 0
        assert result.verdict == "degrading"

    def test_does_not_flag_homogeneous_process(self) -> None:
        times = power_law_times(np.random.default_rng(7), 1.0, 100.0, 1_000.0)
        result = laplace_test(times, 1_000.0)
        assert result.p_value >= 0.05
        assert result.verdict == "stable"

    def test_statistic_by_hand(self) -> None:
        result = laplace_test([1.0, 2.0, 6.0], 4.0 * 2)
        u = (3.0 - 4.0) / (8.0 / math.sqrt(36.0))
        assert result.statistic == pytest.approx(u, rel=1e-12)
        assert result.p_value == pytest.approx(2 * stats.norm.sf(abs(u)), rel=1e-12)


class TestMilHdbk189:
    def test_statistic_and_p_value_by_hand(self) -> None:
        times = [100.0, 400.0, 900.0]
        result = mil_hdbk_189_test(times, 1_000.0)
        chi2 = 2 * (math.log(10.0) + math.log(2.5) + math.log(1000 / 900))
        assert (result.statistic, result.dof) == (pytest.approx(chi2, rel=1e-12), 6)
        # under a constant rate sum ln(T / t_i) is a sum of 3 unit exponentials: Gamma(3, 1)
        tail = stats.gamma.cdf(chi2 / 2, 3)
        assert result.p_value == pytest.approx(2 * min(tail, 1 - tail), rel=1e-9)
        # the test of beta = 1 in the power law: Crow-AMSAA's MLE is 2n / statistic
        assert crow_amsaa(times, 1_000.0).beta == pytest.approx(6 / chi2, rel=1e-12)

    def test_failure_truncated_drops_the_last_event(self) -> None:
        result = mil_hdbk_189_test([100.0, 400.0, 900.0], 1_000.0, time_truncated=False)
        assert result.statistic == pytest.approx(2 * (math.log(9.0) + math.log(2.25)), rel=1e-12)
        assert (result.dof, result.total_time_h) == (4, 900.0)

    @pytest.mark.parametrize(("beta", "verdict"), [(0.5, "improving"), (1.8, "degrading")])
    def test_detects_a_power_law_trend(self, beta: float, verdict: str) -> None:
        times = power_law_times(np.random.default_rng(11), beta, 100.0, 1_000.0)
        assert mil_hdbk_189_test(times, 1_000.0).verdict == verdict

    def test_false_alarm_rate_is_its_level(self) -> None:
        rng = np.random.default_rng(12)
        n = 2_000
        alarms = sum(
            mil_hdbk_189_test(power_law_times(rng, 1.0, 40.0, 1_000.0), 1_000.0).verdict != "stable"
            for _ in range(n)
        )
        lo, hi = stats.binom.ppf([0.001, 0.999], n, 0.05)
        assert lo <= alarms <= hi

    def test_refuses_times_outside_the_window(self) -> None:
        with pytest.raises(ValueError, match="lie in"):
            mil_hdbk_189_test([0.0, 5.0], 10.0)
        with pytest.raises(ValueError, match="at least 1"):
            mil_hdbk_189_test([], 10.0)


def life_intervals(
    events: pl.DataFrame, windows: list[tuple[float, float]]
) -> tuple[list[float], list[float], list[bool]]:
    """Cut each unit's window at its events: lives that end in a failure, then a censored one
    (the unit renews at once)."""
    starts: list[float] = []
    ends: list[float] = []
    failed: list[bool] = []
    for unit, (start, end) in enumerate(windows):
        mine = sorted(events.filter(pl.col("unit_id") == unit)["time_h"].drop_nulls().to_list())
        edges = [start, *mine, end]
        starts += edges[:-1]
        ends += edges[1:]
        failed += [True] * len(mine) + [False]
    return starts, ends, failed


class TestFleetTrend:
    def test_exposure_clock_by_hand(self) -> None:
        # unit a at risk [0, 10] and [12, 20]; unit b [5, 20]
        clock, total = exposure_clock([0.0, 12.0, 5.0], [10.0, 20.0, 20.0], [4.0, 10.0, 15.0])
        # by 4 h: a 4; by 10 h: a 10 + b 5; by 15 h: a 10 + 3, b 10
        assert clock.tolist() == pytest.approx([4.0, 15.0, 23.0])
        assert total == 33.0

    def test_equal_windows_reduce_to_the_pooled_statistics(self) -> None:
        rng = np.random.default_rng(13)
        events = fleet_events(rng, 1.0, 0.02, [(0.0, 1_000.0)] * 20)
        times = events["time_h"].drop_nulls().to_numpy()
        n = times.size
        trend = fleet_trend(*life_intervals(events, [(0.0, 1_000.0)] * 20))
        u = (times.mean() - 500.0) / (1_000.0 / math.sqrt(12 * n))
        assert trend.laplace.statistic == pytest.approx(u, rel=1e-9)
        chi2 = 2 * float(np.log(1_000.0 / times).sum())
        assert trend.mil_hdbk_189.statistic == pytest.approx(chi2, rel=1e-9)
        assert trend.crow_amsaa is not None
        assert trend.crow_amsaa.beta == pytest.approx(2 * n / chi2, rel=1e-6)

    def test_a_degrading_fleet_is_called_degrading(self) -> None:
        rng = np.random.default_rng(14)
        windows = [(float(s), 4_000.0) for s in rng.uniform(0, 2_000, 60)]
        events = fleet_events(rng, 2.0, 4e-7, windows)
        trend = fleet_trend(*life_intervals(events, windows))
        assert trend.verdict == "degrading"
        assert trend.crow_amsaa is not None
        assert trend.crow_amsaa.beta_lo < 2.0 < trend.crow_amsaa.beta_hi

    def test_a_constant_rate_is_called_homogeneous_at_the_level(self) -> None:
        """Units at risk over staggered windows: the tests on the exposure clock keep their
        level (both must agree, so at most alpha)."""
        rng = np.random.default_rng(15)
        n_fleets, calls = 400, 0
        for _ in range(n_fleets):
            start = rng.uniform(0, 600, 30)
            end = start + rng.uniform(100, 1_000, 30)
            n = rng.poisson(0.002 * (end - start))
            starts, ends, failed = [], [], []
            for s, e, k in zip(start, end, n, strict=True):
                edges = [float(s), *np.sort(rng.uniform(s, e, k)).tolist(), float(e)]
                starts += edges[:-1]
                ends += edges[1:]
                failed += [True] * int(k) + [False]
            if any(failed):
                calls += fleet_trend(starts, ends, failed).verdict != "homogeneous"
        assert calls <= stats.binom.ppf(0.999, n_fleets, 0.05)

    def test_no_failure_has_no_trend(self) -> None:
        with pytest.raises(ValueError, match="No failures"):
            fleet_trend([0.0], [10.0], [False])


class TestLemonNodes:
    def test_flags_planted_lemons_and_few_healthy_nodes(self) -> None:
        rng = np.random.default_rng(8)
        n_nodes, rate = 500, 1e-3
        exposure = rng.uniform(500.0, 2_000.0, n_nodes)
        multiplier = np.ones(n_nodes)
        lemons = rng.choice(n_nodes, 5, replace=False)
        multiplier[lemons] = 10.0
        exposure[lemons] = 2_000.0
        counts = pl.DataFrame(
            {
                "node": [f"gpu{i:04d}" for i in range(n_nodes)],
                "n_failures": rng.poisson(rate * exposure * multiplier),
                "exposure_h": exposure,
            }
        )
        result = lemon_nodes(counts, unit_col="node")
        flagged = set(result.filter(pl.col("lemon"))["node"].to_list())
        planted = {f"gpu{i:04d}" for i in lemons}
        assert planted <= flagged
        assert len(flagged - planted) <= 1
        assert "Bonferroni" in result["rule"][0]

    def test_p_value_is_poisson_upper_tail_bonferroni_adjusted(self) -> None:
        counts = pl.DataFrame(
            {"unit_id": ["a", "b", "c"], "n_failures": [0, 2, 12], "exposure_h": [100.0] * 3}
        )
        result = lemon_nodes(counts, alpha=0.05)
        expected = 14 / 300 * 100.0
        assert result["expected"].to_list() == pytest.approx([expected] * 3, rel=1e-12)
        assert result["p_value"].to_list() == pytest.approx(
            [1.0, stats.poisson.sf(1, expected), stats.poisson.sf(11, expected)], rel=1e-12
        )
        assert result["p_adjusted"][2] == pytest.approx(3 * stats.poisson.sf(11, expected))
        assert result["lemon"].to_list() == [False, False, True]

    def test_rejects_zero_exposure(self) -> None:
        counts = pl.DataFrame({"unit_id": ["a"], "n_failures": [1], "exposure_h": [0.0]})
        with pytest.raises(ValueError, match="positive and finite"):
            lemon_nodes(counts)
