"""Observed rates, model-averaged lifetime mean, extrapolation and Weibayes against the truth.

Every expectation here is computed independently of ``models.mtbf_summary``: Poisson intervals by
root-finding on the Poisson CDF, restricted means by quadrature of the survival function, Weibayes
by maximising the full Weibull log-likelihood numerically, and coverage against the true mean of
the law the lives were drawn from (a simulation written here, not the synthetic generator).
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import polars as pl
import pytest
from scipy import integrate, optimize, special, stats

from models import (
    aic_weights,
    fit_lives,
    model_average,
    observed_rates,
    restricted_mean,
    weibayes,
)
from tests.models.lifesim import law, simulate_fleet, true_survival

FAMILIES = ("exponential", "weibull", "lognormal", "loglogistic")


# --------------------------------------------------------------------------------------------
# Observed rates
# --------------------------------------------------------------------------------------------
@pytest.mark.parametrize(("r", "exposure_h"), [(62, 493 * 8766.0), (1, 5_000.0), (17, 1.2e6)])
def test_observed_afr_is_failures_over_unit_years_with_the_exact_poisson_interval(
    r: int, exposure_h: float
) -> None:
    got = observed_rates(r, exposure_h, alpha=0.05)
    years = exposure_h / 8766.0
    assert got["afr_observed_pct"] == 100.0 * r / (exposure_h / 8766)
    # exact (Garwood) bounds: the means at which P(N >= r) = 2.5 % and P(N <= r) = 2.5 %
    lo = optimize.brentq(
        lambda m: stats.poisson.sf(r - 1, m) - 0.025, 1e-9, 10 * r + 10, xtol=1e-14
    )
    hi = optimize.brentq(lambda m: stats.poisson.cdf(r, m) - 0.025, 1e-9, 10 * r + 10, xtol=1e-14)
    assert got["afr_observed_lo_pct"] == pytest.approx(100 * lo / years, rel=1e-9)
    assert got["afr_observed_hi_pct"] == pytest.approx(100 * hi / years, rel=1e-9)
    assert got["mtbf_observed_h"] == exposure_h / r
    assert got["mtbf_observed_lo_h"] == pytest.approx(exposure_h / hi, rel=1e-9)
    assert got["mtbf_observed_hi_h"] == pytest.approx(exposure_h / lo, rel=1e-9)


def test_zero_failures_give_a_one_sided_bound() -> None:
    got = observed_rates(0, 30_000.0)
    assert got["afr_observed_pct"] == 0.0
    assert got["afr_observed_lo_pct"] == 0.0
    assert math.isnan(got["mtbf_observed_h"])
    # P(N = 0) = 5 % at the one-sided bound: mean = -ln 0.05
    assert got["afr_observed_hi_pct"] == pytest.approx(
        100 * -math.log(0.05) / (30_000 / 8766), rel=1e-9
    )


def test_fit_table_carries_observed_rates_of_the_issue_example() -> None:
    # gpu_memory in the issue: 62 failures in 493 GPU-years is an observed AFR of 12.6 %
    assert observed_rates(62, 493 * 8766.0)["afr_observed_pct"] == pytest.approx(12.576, abs=1e-3)


# --------------------------------------------------------------------------------------------
# Restricted mean and the extrapolation flag
# --------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("family", "params"),
    [
        ("exponential", {"lambda_": 40_000.0}),
        ("weibull", {"lambda_": 140_000.0, "rho_": 0.7}),
        ("weibull", {"lambda_": 75_000.0, "rho_": 1.2}),
        ("lognormal", {"mu_": 11.0, "sigma_": 1.4}),
        ("loglogistic", {"alpha_": 60_000.0, "beta_": 1.6}),
        ("loglogistic", {"alpha_": 5_000.0, "beta_": 0.8}),
    ],
)
@pytest.mark.parametrize("tau_h", [500.0, 11_000.0, 400_000.0])
def test_restricted_mean_matches_quadrature(
    family: str, params: dict[str, float], tau_h: float
) -> None:
    direct, _ = integrate.quad(
        lambda t: float(true_survival(family, params, np.array([t]))[0]),
        0.0,
        tau_h,
        epsabs=0.0,
        epsrel=1e-11,
        limit=500,
        points=[min(tau_h, 1.0), min(tau_h, 100.0)],
    )
    assert restricted_mean(family, params, tau_h) == pytest.approx(direct, rel=1e-6)


def test_young_data_of_a_long_lived_weibull_are_flagged_as_extrapolated() -> None:
    rng = np.random.default_rng(3)
    p = law("weibull", 180_000.0, 1.3)
    lives = simulate_fleet(rng, "weibull", p, n_units=4_000)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        table = fit_lives(lives)
    row = table.filter(pl.col("family") == "weibull").row(0, named=True)
    oldest = float(lives["exit_h"].max())  # type: ignore[arg-type]
    assert row["max_age_h"] == oldest
    assert row["extrapolated"] is True
    assert row["lifetime_extrapolated"] is True
    assert row["headline_extrapolated"] is False  # the headline is the rate over these ages
    fitted = json_params(row["params_json"])
    direct, _ = integrate.quad(
        lambda t: math.exp(-((t / fitted["lambda_"]) ** fitted["rho_"])), 0.0, oldest, epsrel=1e-12
    )
    assert row["rmst_h"] == pytest.approx(direct, rel=1e-6)
    assert 1.0 - row["rmst_h"] / row["mtbf_h"] > 0.5


def test_a_class_observed_past_its_mean_is_not_extrapolated() -> None:
    rng = np.random.default_rng(4)
    p = law("weibull", 3_000.0, 1.5)
    lives = simulate_fleet(rng, "weibull", p, n_units=500, oldest_h=9_000.0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        table = fit_lives(lives)
    assert table.filter(pl.col("family") == "weibull")["extrapolated"].to_list() == [False]
    assert table["lifetime_extrapolated"].to_list()[0] is False


def json_params(text: str) -> dict[str, float]:
    import json

    return {k: float(v) for k, v in json.loads(text).items() if isinstance(v, (int, float))}


# --------------------------------------------------------------------------------------------
# Weibayes and likelihood-ratio bounds
# --------------------------------------------------------------------------------------------
def weibull_loglik(
    scale: float, shape: float, x: np.ndarray, d: np.ndarray, e: np.ndarray
) -> float:
    """Left-truncated, right-censored Weibull log-likelihood, written out term by term."""
    z = (x / scale) ** shape
    log_f = np.log(shape / scale) + (shape - 1) * np.log(x / scale) - z
    return float(np.sum(np.where(d, log_f, -z)) + np.sum((e / scale) ** shape))


@pytest.mark.parametrize("shape", [0.7, 1.0, 2.0])
@pytest.mark.parametrize("r", [1, 3, 5])
def test_weibayes_matches_a_direct_maximisation_and_its_lr_bounds(shape: float, r: int) -> None:
    rng = np.random.default_rng(r)
    n = 40
    e = rng.uniform(0, 2_000, n)
    x = e + rng.uniform(100, 3_000, n)
    d = np.zeros(n, dtype=bool)
    d[rng.choice(n, r, replace=False)] = True
    got = weibayes(x, d, e, shape, alpha=0.05)

    def neg(log_scale: float) -> float:
        return -weibull_loglik(math.exp(log_scale), shape, x, d, e)

    best = optimize.minimize_scalar(
        neg, bounds=(0.0, 30.0), method="bounded", options={"xatol": 1e-12}
    )
    assert got.scale_h == pytest.approx(math.exp(best.x), rel=1e-6)
    assert got.log_likelihood == pytest.approx(-best.fun, rel=1e-9)
    cut = -best.fun - stats.chi2.ppf(0.95, 1) / 2.0
    lo = optimize.brentq(lambda s: -neg(s) - cut, best.x - 20, best.x, xtol=1e-13)
    hi = optimize.brentq(lambda s: -neg(s) - cut, best.x, best.x + 20, xtol=1e-13)
    assert got.scale_lo_h == pytest.approx(math.exp(lo), rel=1e-7)
    assert got.scale_hi_h == pytest.approx(math.exp(hi), rel=1e-7)
    gamma = math.gamma(1 + 1 / shape)
    assert got.mtbf_h == pytest.approx(got.scale_h * gamma, rel=1e-12)
    assert (got.mtbf_lo_h, got.mtbf_hi_h) == pytest.approx(
        (math.exp(lo) * gamma, math.exp(hi) * gamma)
    )


def test_weibayes_textbook_closed_form() -> None:
    # Abernethy, The New Weibull Handbook, Weibayes: eta = (sum t^beta / r)^(1/beta). Three units
    # run 1,000, 1,500 and 2,000 h, one failure (at 1,500 h), beta = 2:
    # eta = sqrt((1e6 + 2.25e6 + 4e6) / 1) = 2,692.58 h.
    got = weibayes(
        np.array([1_000.0, 1_500.0, 2_000.0]), np.array([False, True, False]), np.zeros(3), 2.0
    )
    assert got.scale_h == pytest.approx(math.sqrt(7.25e6), rel=1e-12)


def test_few_failure_groups_are_weibayes_with_the_class_shape() -> None:
    rng = np.random.default_rng(8)
    p = law("weibull", 20_000.0, 1.8)
    big = simulate_fleet(rng, "weibull", p, n_units=1_500).with_columns(batch=pl.lit("a"))
    small = simulate_fleet(rng, "weibull", p, n_units=60).with_columns(batch=pl.lit("b"))
    lives = pl.concat([big, small])
    r_small = int(small["failed"].sum())
    assert 1 <= r_small <= 5, r_small  # the seed is chosen for a few-failure cohort
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        table = fit_lives(lives, by=("component_class", "batch"))
        pooled = fit_lives(lives, families=("weibull",))
    b = table.filter(pl.col("batch") == "b")
    chosen = b.filter(pl.col("chosen")).row(0, named=True)
    assert chosen["method"] == "weibayes_lr"
    assert chosen["lifetime_method"] == "weibayes_lr"
    assert chosen["headline_method"] == "observed_rate"
    assert chosen["shape"] == pytest.approx(pooled["shape"][0], rel=1e-9)
    small_np = small.filter(pl.col("component_class") == "c")
    direct = weibayes(
        small_np["exit_h"].to_numpy(),
        small_np["failed"].to_numpy(),
        small_np["entry_h"].to_numpy(),
        pooled["shape"][0],
    )
    assert chosen["mtbf_h"] == pytest.approx(direct.mtbf_h, rel=1e-12)
    assert table.filter(pl.col("batch") == "a")["method"].to_list() == [
        "chi_square",
        "mle_delta",
        "mle_delta",
        "mle_delta",
    ]
    assert set(b["method"].to_list()) <= {"chi_square", "weibayes_lr", "mle_delta"}


def test_every_shaped_family_reports_shape_bounds() -> None:
    rng = np.random.default_rng(5)
    lives = simulate_fleet(rng, "lognormal", law("lognormal", 20_000.0, 1.0), n_units=1_000)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        table = fit_lives(lives)
    shaped = table.filter(pl.col("family") != "exponential")
    assert (shaped["shape_lo"] < shaped["shape"]).all()
    assert (shaped["shape"] < shaped["shape_hi"]).all()
    lognormal = shaped.filter(pl.col("family") == "lognormal").row(0, named=True)
    assert lognormal["shape_lo"] <= 1.0 <= lognormal["shape_hi"]


# --------------------------------------------------------------------------------------------
# Model averaging
# --------------------------------------------------------------------------------------------
def test_one_family_averages_to_its_own_interval() -> None:
    got = model_average([1_000.0], [500.0], [2_000.0], [10.0])
    assert got.mtbf_h == pytest.approx(1_000.0)
    assert (got.lo_h, got.hi_h) == pytest.approx((500.0, 2_000.0), rel=1e-9)


def test_weight_at_an_infinite_mean_opens_the_upper_bound() -> None:
    aics = [10.0, 10.0 + 2 * math.log(3.0)]  # weights 3/4 and 1/4
    assert aic_weights(aics) == pytest.approx([0.75, 0.25])
    got = model_average([1_000.0, math.inf], [500.0, math.nan], [2_000.0, math.inf], aics)
    assert math.isinf(got.hi_h)
    # the lower bound solves 0.75 Phi((log L - log 1000) / s) = 0.025
    s = math.log(4.0) / (2 * special.ndtri(0.975))
    expected = math.exp(math.log(1_000.0) + s * special.ndtri(0.025 / 0.75))
    assert got.lo_h == pytest.approx(expected, rel=1e-9)


@pytest.mark.slow
def test_lifetime_interval_covers_the_true_mean_over_mixed_families() -> None:
    """>= 90 % over 400 fleets whose lives are drawn from any of the four families.

    The model-averaged lifetime mean (``lifetime_*``, shown beside the headline) against the
    mean of the law the lives were drawn from.
    """
    rng = np.random.default_rng(2026)
    spreads = {
        "exponential": (1.0, 1.0),
        "weibull": (0.6, 2.0),
        "lognormal": (0.5, 1.5),
        "loglogistic": (2.0, 5.0),
    }
    counts = {f: [0, 0, 0] for f in FAMILIES}  # fleets, lifetime covers, own family covers
    for i in range(400):
        family = FAMILIES[i % 4]
        mean = math.exp(rng.uniform(math.log(30e3), math.log(200e3)))
        p = law(family, mean, rng.uniform(*spreads[family]))
        lives = simulate_fleet(rng, family, p)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            table = fit_lives(lives)
        if table["n_failures"][0] < 10:
            continue
        head = table.row(0, named=True)
        own = table.filter(pl.col("family") == family).row(0, named=True)
        counts[family][0] += 1
        counts[family][1] += head["lifetime_mtbf_lo_h"] <= mean <= head["lifetime_mtbf_hi_h"]
        counts[family][2] += own["mtbf_lo_h"] <= mean <= own["mtbf_hi_h"]
    n = sum(c[0] for c in counts.values())
    lifetime = sum(c[1] for c in counts.values()) / n
    own = sum(c[2] for c in counts.values()) / n
    print(
        f"\nlifetime mean {lifetime:.3f}, true family's own delta interval {own:.3f} "
        f"over {n} fleets: {counts}"
    )
    assert n >= 200, counts
    assert lifetime >= 0.90, (lifetime, counts)
    # the true family's own interval misses more often than the model average
    assert lifetime > own, (lifetime, own, counts)
