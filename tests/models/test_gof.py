"""Probability plots and the Anderson-Darling statistic on simulated, truncated, censored lives."""

from __future__ import annotations

import json
import math
from typing import TYPE_CHECKING

import numpy as np
import polars as pl
import pytest
from lifelines import KaplanMeierFitter
from scipy import stats

from models import fit_lives, goodness_of_fit, paper_transform, probability_plot

if TYPE_CHECKING:
    from collections.abc import Callable


def classical_a2(sorted_x: np.ndarray, dist: object) -> float:
    """``A^2 = -n - (1/n) sum (2i - 1) [ln F(x_i) + ln(1 - F(x_{n+1-i}))]``, written directly
    (``ln F`` and ``ln(1 - F)`` from scipy's ``logcdf``/``logsf``, exact in the tails)."""
    n = sorted_x.size
    i = np.arange(1, n + 1)
    log_f = dist.logcdf(sorted_x)  # type: ignore[attr-defined]
    log_s = dist.logsf(sorted_x)  # type: ignore[attr-defined]
    return float(-n - np.sum((2 * i - 1) * (log_f + log_s[::-1])) / n)


def windowed_lives(
    rng: np.random.Generator, draw: object, n_units: int, *, window_h: float, oldest_h: float
) -> pl.DataFrame:
    """Units installed uniformly over ``[-oldest_h, window_h]``, watched over ``[0, window_h]``:
    those alive at 0 enter at their age (left truncation), those alive at the end are censored."""
    frames, seen = [], 0
    while seen < n_units:
        n = 2 * (n_units - seen) + 16
        install = rng.uniform(-oldest_h, window_h, n)
        life = draw(n)  # type: ignore[operator]
        visible = install + life > 0
        install, life = install[visible], life[visible]
        horizon = window_h - install
        frames.append(
            pl.DataFrame(
                {
                    "entry_h": np.maximum(0.0, -install),
                    "exit_h": np.minimum(life, horizon),
                    "failed": life <= horizon,
                }
            )
        )
        seen += int(visible.sum())
    return pl.concat(frames).head(n_units)


def fitted_ad(lives: pl.DataFrame) -> dict[str, float]:
    table = fit_lives(lives, by=())
    return {
        row["family"]: goodness_of_fit(lives, row["family"], json.loads(row["params_json"]))
        for row in table.iter_rows(named=True)
    }


class TestGoodnessOfFit:
    @pytest.mark.parametrize(
        ("family", "params", "frozen"),
        [
            ("weibull", {"lambda_": 900.0, "rho_": 1.4}, stats.weibull_min(c=1.4, scale=900.0)),
            ("lognormal", {"mu_": 6.5, "sigma_": 0.9}, stats.lognorm(s=0.9, scale=math.exp(6.5))),
            ("exponential", {"lambda_": 700.0}, stats.expon(scale=700.0)),
            ("loglogistic", {"alpha_": 800.0, "beta_": 2.5}, stats.fisk(c=2.5, scale=800.0)),
        ],
    )
    @pytest.mark.parametrize("seed", [0, 1])
    def test_complete_data_is_the_classical_a2(
        self, family: str, params: dict[str, float], frozen: object, seed: int
    ) -> None:
        # the integral is exact piece by piece (no discretisation), so only rounding differs
        x = np.sort(stats.weibull_min(c=1.2, scale=800.0).rvs(300, random_state=seed))
        lives = pl.DataFrame({"entry_h": np.zeros(x.size), "exit_h": x, "failed": True})
        expected = classical_a2(x, frozen)
        assert goodness_of_fit(lives, family, params) == pytest.approx(expected, rel=1e-9)

    def test_classical_a2_matches_scipy_for_a_fixed_normal(self) -> None:
        # check the test's own formula once against scipy (normal with given mean and sd)
        x = np.sort(stats.norm.rvs(size=200, random_state=3))
        ours = classical_a2(x, stats.norm)
        direct = stats.goodness_of_fit(
            stats.norm, x, known_params={"loc": 0.0, "scale": 1.0}, statistic="ad", n_mc_samples=9
        ).statistic
        assert ours == pytest.approx(direct, rel=1e-12)

    @pytest.mark.parametrize("seed", [0, 1, 2, 3])
    def test_weibull_lives_fit_weibull_best(self, seed: int, simulate_lives: Callable) -> None:
        rng = np.random.default_rng(seed)
        lives = simulate_lives(
            rng, 4_000, shape=1.6, scale_h=1_000.0, window_h=600.0, oldest_install_h=2_000.0
        )
        assert lives["entry_h"].gt(0).any()
        assert not lives["failed"].all()
        ad = fitted_ad(lives)
        assert ad["weibull"] < ad["lognormal"]
        assert ad["weibull"] < min(ad["exponential"], ad["loglogistic"])

    @pytest.mark.parametrize("seed", [0, 1, 2, 3])
    def test_lognormal_lives_fit_lognormal_best(self, seed: int) -> None:
        rng = np.random.default_rng(seed)
        lives = windowed_lives(
            rng,
            lambda n: np.exp(rng.normal(6.8, 0.8, n)),
            4_000,
            window_h=600.0,
            oldest_h=2_000.0,
        )
        assert lives["entry_h"].gt(0).any()
        assert not lives["failed"].all()
        ad = fitted_ad(lives)
        assert ad["lognormal"] < ad["weibull"]
        assert ad["lognormal"] < ad["exponential"]

    def test_non_finite_params_give_nan(self) -> None:
        lives = pl.DataFrame({"entry_h": [0.0, 0.0], "exit_h": [5.0, 9.0], "failed": [True, True]})
        assert math.isnan(goodness_of_fit(lives, "weibull", {"lambda_": math.nan, "rho_": 1.0}))

    def test_missing_params_say_what_is_needed(self) -> None:
        lives = pl.DataFrame({"entry_h": [0.0], "exit_h": [5.0], "failed": [True]})
        with pytest.raises(ValueError, match=r"need \['mu_', 'sigma_'\]"):
            goodness_of_fit(lives, "lognormal", {"lambda_": 3.0})


class TestProbabilityPlot:
    def test_positions_are_the_kaplan_meier_midpoints_without_truncation(self) -> None:
        rng = np.random.default_rng(5)
        life = 1_000.0 * rng.weibull(1.3, 400)
        censor = rng.uniform(100.0, 2_500.0, 400)
        lives = pl.DataFrame(
            {"entry_h": 0.0, "exit_h": np.minimum(life, censor), "failed": life <= censor}
        )
        plot = probability_plot(lives, "weibull")
        kmf = KaplanMeierFitter().fit(lives["exit_h"].to_numpy(), lives["failed"].to_numpy())
        ages = plot.points["age_h"].to_numpy()
        after = kmf.survival_function_at_times(ages).to_numpy()
        before = np.concatenate([[1.0], after[:-1]])
        np.testing.assert_allclose(plot.points["position"], 1.0 - (before + after) / 2, rtol=1e-12)
        assert plot.segments == [(0.0, float(lives["exit_h"].max()))]

    def test_own_family_is_a_straight_line_inside_its_band(self, simulate_lives: Callable) -> None:
        rng = np.random.default_rng(2)
        lives = simulate_lives(
            rng, 3_000, shape=1.5, scale_h=1_000.0, window_h=500.0, oldest_install_h=3_000.0
        )
        for family in ("weibull", "lognormal"):
            plot = probability_plot(lives, family, paper=family)
            line = plot.line
            slope = np.diff(line["y"].to_numpy()) / np.diff(line["x"].to_numpy())
            np.testing.assert_allclose(slope, slope[0], rtol=1e-8)
            assert (line["y_lo"] < line["y"]).all()
            assert (line["y"] < line["y_hi"]).all()
            assert plot.ad_statistic == pytest.approx(
                goodness_of_fit(lives, family, plot.params), rel=1e-12
            )
        weibull = probability_plot(lives, "weibull", paper="weibull")
        assert weibull.params["rho_"] == pytest.approx(1.5, rel=0.1)
        # the truth lies inside the band at the median observed failure age
        age = float(np.median(weibull.points["age_h"]))
        inside = weibull.line.filter(pl.col("age_h") >= age).row(0, named=True)
        truth = 1.0 - math.exp(-((inside["age_h"] / 1_000.0) ** 1.5))
        assert inside["lo"] < truth < inside["hi"]

    def test_gaps_in_the_risk_set_start_anchored_segments(self) -> None:
        # new units watched at ages 0-500 h, an old batch at 3000-3500 h: nobody in between
        rng = np.random.default_rng(4)
        frame = windowed_lives(
            rng, lambda n: 2_000.0 * rng.weibull(1.8, n), 600, window_h=500.0, oldest_h=0.0
        )
        old = 2_000.0 * rng.weibull(1.8, 20_000)
        old = old[old > 3_000.0][:600]
        lives = pl.concat(
            [
                frame,
                pl.DataFrame(
                    {
                        "entry_h": np.full(old.size, 3_000.0),
                        "exit_h": np.minimum(old, 3_500.0),
                        "failed": old <= 3_500.0,
                    }
                ),
            ]
        )
        plot = probability_plot(lives, "weibull")
        assert len(plot.segments) == 2
        assert plot.segments[1][0] == 3_000.0
        late = plot.points.filter(pl.col("segment") == 1)
        anchor = 1.0 - math.exp(-((3_000.0 / plot.params["lambda_"]) ** plot.params["rho_"]))
        assert late["position"].min() > anchor  # anchored at the fitted F(3000 h)
        assert late["position"].is_sorted()
        assert plot.params["rho_"] == pytest.approx(1.8, rel=0.2)

    def test_a_zero_length_failed_life_counts_at_its_age(self) -> None:
        lives = pl.DataFrame(
            {
                "entry_h": [40.0, 50.0, 50.0, 60.0, 70.0, 80.0],
                "exit_h": [120.0, 50.0, 200.0, 200.0, 90.0, 300.0],
                "failed": [True, True, False, False, True, True],
            }
        )
        plot = probability_plot(lives, "exponential")
        # at 50 h: the life entered at 40 h and the zero-length one (not the one entering at 50)
        assert plot.points["at_risk"].to_list() == [2, 5, 4, 1]
        assert plot.points["segment"].to_list() == [0, 0, 0, 0]
        assert math.isfinite(plot.ad_statistic)

    def test_paper_transform(self) -> None:
        f = np.array([0.1, 0.5, 0.9])
        np.testing.assert_allclose(paper_transform(f, "weibull"), np.log(-np.log1p(-f)))
        np.testing.assert_allclose(paper_transform(f, "lognormal"), stats.norm.ppf(f))

    def test_too_few_failures_and_unknown_paper_raise(self) -> None:
        lives = pl.DataFrame({"entry_h": [0.0, 0.0], "exit_h": [5.0, 9.0], "failed": [True, False]})
        with pytest.raises(ValueError, match="at least 2 failures"):
            probability_plot(lives, "weibull")
        with pytest.raises(ValueError, match="Unknown paper"):
            probability_plot(lives, "weibull", paper="gamma")
