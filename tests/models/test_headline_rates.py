"""Projections from a fit table use its headline (the observed rate); ages use the Weibull fit.

Expectations come from the lives themselves: the exact Poisson bounds by root-finding on the
Poisson CDF (``tests.models.failsim.poisson_bounds``), the Weibull's expected failures over the
ages observed summed from its cumulative hazard, the projection's expected interruptions from
the units, the horizon and the rate.
"""

from __future__ import annotations

import json
import math
import warnings

import numpy as np
import polars as pl
import pytest
from scipy import special

from models import (
    ClassRate,
    Scenario,
    family_mixture,
    fit_lives,
    project,
    rates_from_fits,
)
from tests.models.failsim import poisson_bounds
from tests.models.lifesim import law, simulate_fleet


@pytest.fixture(scope="module")
def lives() -> pl.DataFrame:
    """A young fleet of a long-lived wear-out class: the families disagree about the mean."""
    rng = np.random.default_rng(21)
    return simulate_fleet(rng, "weibull", law("weibull", 90_000.0, 1.3), n_units=4_000)


@pytest.fixture(scope="module")
def table(lives: pl.DataFrame) -> pl.DataFrame:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fitted = fit_lives(lives)
    return fitted.with_columns(unit_level=pl.lit("gpu"))


def test_steady_state_rates_are_the_headline_with_its_exact_interval(
    lives: pl.DataFrame, table: pl.DataFrame
) -> None:
    (rate,) = rates_from_fits(table)
    head = table.row(0, named=True)
    r = int(lives["failed"].sum())
    exposure = float((lives["exit_h"] - lives["entry_h"]).sum())
    lo_count, hi_count = poisson_bounds(r)
    assert head["headline_method"] == "observed_rate"
    assert head["lifetime_method"] == "model_average"
    assert rate.mtbf_h == pytest.approx(exposure / r, rel=1e-12)
    assert rate.mtbf_lo_h == pytest.approx(exposure / hi_count, rel=1e-9)
    assert rate.mtbf_hi_h == pytest.approx(exposure / lo_count, rel=1e-9)
    assert (rate.weibull_shape, rate.mtbf_mixture, rate.extrapolated) == (1.0, (), False)
    # the lifetime mean is an extrapolation here; the headline is not
    assert head["lifetime_extrapolated"] is True
    assert head["headline_extrapolated"] is False


def test_the_lifetime_mixture_samples_its_tail_area_bounds(table: pl.DataFrame) -> None:
    """The model average stays available beside the headline, with its own sampling law."""
    head = table.row(0, named=True)
    rate = ClassRate(
        "c", "gpu", head["lifetime_mtbf_h"], mtbf_mixture=family_mixture(table.to_dicts())
    )
    weights = {r["family"]: r["aic_weight"] for r in table.iter_rows(named=True)}
    assert sum(c[0] for c in rate.mtbf_mixture) == pytest.approx(
        sum(w for w in weights.values() if w > 0)
    )
    draws = rate.sample_mtbf(np.random.default_rng(0), 200_000)
    lo_share = float(np.mean(draws < head["lifetime_mtbf_lo_h"]))
    assert lo_share == pytest.approx(0.025, abs=4 * math.sqrt(0.025 * 0.975 / 200_000))
    if math.isfinite(head["lifetime_mtbf_hi_h"]):
        hi_share = float(np.mean(draws > head["lifetime_mtbf_hi_h"]))
        assert hi_share == pytest.approx(0.025, abs=4 * math.sqrt(0.025 * 0.975 / 200_000))


def _weibull_failures(lives: pl.DataFrame, mean_h: float, shape: float) -> float:
    """Expected failures over the lives' ages of the Weibull with this mean and shape."""
    scale = mean_h / math.gamma(1.0 + 1.0 / shape)
    entry, exit_ = lives["entry_h"].to_numpy(), lives["exit_h"].to_numpy()
    return float(np.sum((exit_ / scale) ** shape - (entry / scale) ** shape))


def test_projection_at_ages_uses_the_weibull_fit_matched_to_the_observed_rate(
    lives: pl.DataFrame, table: pl.DataFrame
) -> None:
    (rate,) = rates_from_fits(table, at_ages=True)
    weibull = table.filter(pl.col("family") == "weibull").row(0, named=True)
    assert (rate.mtbf_h, rate.weibull_shape) == (weibull["mtbf_h"], weibull["shape"])
    assert rate.mtbf_mixture == ()
    assert rate.extrapolated is table["lifetime_extrapolated"][0] is True
    r = int(lives["failed"].sum())
    # at its maximum the Weibull expects the failures seen over the ages observed ...
    assert _weibull_failures(lives, rate.mtbf_h, rate.weibull_shape) == pytest.approx(r, rel=1e-5)
    # ... and its bounds, at the same shape, expect the exact Poisson bounds of that count
    lo_count, hi_count = poisson_bounds(r)
    assert rate.mtbf_lo_h is not None
    assert rate.mtbf_hi_h is not None
    assert _weibull_failures(lives, rate.mtbf_hi_h, rate.weibull_shape) == pytest.approx(
        lo_count, rel=1e-5
    )
    assert _weibull_failures(lives, rate.mtbf_lo_h, rate.weibull_shape) == pytest.approx(
        hi_count, rel=1e-5
    )
    params = json.loads(weibull["params_json"])
    assert rate.weibull_shape == params["rho_"]


def test_projection_flags_extrapolation_only_where_the_weibull_mean_is_used(
    table: pl.DataFrame,
) -> None:
    rates = (*rates_from_fits(table), ClassRate("nic", "node", 30_000.0))
    out = project(Scenario(n_gpus=16_384, rates=rates), n_samples=200, random_state=1)
    assert out["extrapolated_classes"] == []
    assert "model-averaged" not in out["uncertainty"]
    assert out["goodput_lo"] <= out["goodput"] <= out["goodput_hi"]
    aged = (*rates_from_fits(table, at_ages=True), ClassRate("nic", "node", 30_000.0))
    young = project(Scenario(n_gpus=16_384, rates=aged, fleet_age="new"))
    assert young["extrapolated_classes"] == ["c"]
    assert "Weibull fit's hazard" in young["extrapolation_note"]


@pytest.mark.parametrize(("r", "level"), [(30, "gpu"), (12, "node"), (400, "gpu")])
def test_sampled_expected_interruptions_match_the_exact_poisson_interval(
    r: int, level: str
) -> None:
    """One class projected from its headline: the 95 % interval of expected interruptions is
    the exact Poisson interval of its rate times the projected exposure (up to sampling)."""
    exposure_h = 3.0e6
    rows = pl.DataFrame(
        {
            "component_class": ["x"],
            "unit_level": [level],
            "entry_h": [0.0],
            "exit_h": [exposure_h],
            "failed": [False],
        }
    )
    # r failures in exposure_h unit-hours: one long censored life and r short failed ones
    failed = pl.DataFrame(
        {
            "component_class": ["x"] * r,
            "unit_level": [level] * r,
            "entry_h": [0.0] * r,
            "exit_h": [1e-3] * r,
            "failed": [True] * r,
        }
    )
    lives = pl.concat([rows, failed])
    total = float((lives["exit_h"] - lives["entry_h"]).sum())
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        table = fit_lives(lives).with_columns(unit_level=pl.lit(level))
    (rate,) = rates_from_fits(table)
    n_samples = 200_000
    scenario = Scenario(n_gpus=4_096, rates=(rate,), job_days=20.0)
    out = project(scenario, n_samples=n_samples, random_state=7)
    units = 4_096 if level == "gpu" else 4_096 / 8
    horizon_h = 20.0 * 24.0
    lo_count, hi_count = poisson_bounds(r)
    expected_lo = units * horizon_h * lo_count / total
    expected_hi = units * horizon_h * hi_count / total
    assert out["expected_interruptions"] == pytest.approx(units * horizon_h * r / total, rel=1e-9)
    # sampling error of a 2.5 % quantile of log(E): sqrt(p (1 - p) / n) / phi(z) * sigma
    sigma = math.log(hi_count / lo_count) / (2.0 * special.ndtri(0.975))
    sd = math.sqrt(0.025 * 0.975 / n_samples) / (
        math.exp(-0.5 * special.ndtri(0.975) ** 2) / math.sqrt(2.0 * math.pi)
    )
    tol = 4.0 * sd * sigma
    assert math.log(out["expected_interruptions_lo"] / expected_lo) == pytest.approx(0.0, abs=tol)
    assert math.log(out["expected_interruptions_hi"] / expected_hi) == pytest.approx(0.0, abs=tol)


def test_an_infinite_mean_family_is_a_point_at_the_cap() -> None:
    rate = ClassRate(
        "x",
        "gpu",
        50_000.0,
        mtbf_mixture=((0.5, math.log(50_000.0), 0.2, 0.2), (0.5, math.inf, 0.0, 0.0)),
    )
    draws = rate.sample_mtbf(np.random.default_rng(3), 10_000)
    at_cap = float(np.mean(draws == 1e12))
    assert at_cap == pytest.approx(0.5, abs=4 * math.sqrt(0.25 / 10_000))
    finite = np.log(draws[draws < 1e12])
    assert float(finite.std()) == pytest.approx(0.2, rel=0.05)
    assert float(np.median(finite)) == pytest.approx(math.log(50_000.0), abs=0.02)
    assert special.ndtr(0.0) == 0.5  # the median of each log-normal component is its centre
