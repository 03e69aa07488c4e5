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
    laplace_test,
    lemon_nodes,
    mean_cumulative_function,
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

    def test_fleet_with_equal_windows_equals_pooled_closed_form(self) -> None:
        events = fleet_events(np.random.default_rng(5), 0.8, 0.05, [(0.0, 1_000.0)] * 10)
        result = crow_amsaa_fleet(events)
        times = events["time_h"].drop_nulls().to_numpy()
        assert result.beta == pytest.approx(times.size / np.log(1_000.0 / times).sum(), rel=1e-12)
        assert result.lambda_ == pytest.approx(times.size / 10 / 1_000.0**result.beta, rel=1e-9)


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
