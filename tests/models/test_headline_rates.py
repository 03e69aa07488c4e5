"""Projections from a fit table use its headline: model-averaged mixtures, ages, the flag."""

from __future__ import annotations

import math
import warnings

import numpy as np
import polars as pl
import pytest
from scipy import special

from models import ClassRate, Scenario, fit_lives, project, rates_from_fits
from tests.models.lifesim import law, simulate_fleet


@pytest.fixture(scope="module")
def table() -> pl.DataFrame:
    """A young fleet of a long-lived wear-out class: the families disagree about the mean."""
    rng = np.random.default_rng(21)
    lives = simulate_fleet(rng, "weibull", law("weibull", 90_000.0, 1.3), n_units=4_000)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fitted = fit_lives(lives)
    return fitted.with_columns(unit_level=pl.lit("gpu"))


def test_steady_state_rates_sample_the_model_average(table: pl.DataFrame) -> None:
    (rate,) = rates_from_fits(table)
    head = table.row(0, named=True)
    assert head["headline_method"] == "model_average"
    assert rate.mtbf_h == pytest.approx(min(head["headline_mtbf_h"], 1e12))
    assert rate.extrapolated is head["headline_extrapolated"] is True
    weights = {r["family"]: r["aic_weight"] for r in table.iter_rows(named=True)}
    assert sum(c[0] for c in rate.mtbf_mixture) == pytest.approx(
        sum(w for f, w in weights.items() if w > 0)
    )
    # the draws follow the mixture: their 2.5 and 97.5 % quantiles are the headline bounds
    draws = rate.sample_mtbf(np.random.default_rng(0), 200_000)
    lo_share = float(np.mean(draws < head["headline_mtbf_lo_h"]))
    assert lo_share == pytest.approx(0.025, abs=4 * math.sqrt(0.025 * 0.975 / 200_000))
    if math.isfinite(head["headline_mtbf_hi_h"]):
        hi_share = float(np.mean(draws > head["headline_mtbf_hi_h"]))
        assert hi_share == pytest.approx(0.025, abs=4 * math.sqrt(0.025 * 0.975 / 200_000))


def test_projection_at_ages_uses_the_weibull_fit(table: pl.DataFrame) -> None:
    (rate,) = rates_from_fits(table, at_ages=True)
    weibull = table.filter(pl.col("family") == "weibull").row(0, named=True)
    assert (rate.mtbf_h, rate.weibull_shape) == (weibull["mtbf_h"], weibull["shape"])
    assert rate.mtbf_mixture == ()
    assert rate.extrapolated


def test_projection_output_carries_the_extrapolation_flag(table: pl.DataFrame) -> None:
    rates = (*rates_from_fits(table), ClassRate("nic", "node", 30_000.0))
    out = project(Scenario(n_gpus=16_384, rates=rates), n_samples=200, random_state=1)
    assert out["extrapolated_classes"] == ["c"]
    assert "beyond the oldest age observed" in out["extrapolation_note"]
    assert "model-averaged mixtures of the fitted families for c" in out["uncertainty"]
    assert out["goodput_lo"] <= out["goodput"] <= out["goodput_hi"]
    young = project(Scenario(n_gpus=16_384, rates=rates, fleet_age="new"))
    assert "Weibull fit's hazard" in young["extrapolation_note"]


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
