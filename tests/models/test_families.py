"""The family classes: each one's closed forms agree with each other, and a new family needs no
edit of the generic code (fitting, checks, plots, rates ask the family, never its name)."""

from __future__ import annotations

import math

import numpy as np
import polars as pl
import pytest
from scipy import integrate

from models import (
    FAMILIES,
    FAMILY_REGISTRY,
    ApproximationWarning,
    FewFailuresWarning,
    LogLogistic,
    MtbfFitter,
    ShapeFamily,
    family_of,
    fit_lives,
    goodness_of_fit,
    probability_plot,
    rates_from_fits,
    restricted_mean,
)

PARAMS = {
    "exponential": {"lambda_": 5000.0},
    "weibull": {"lambda_": 5000.0, "rho_": 1.7},
    "lognormal": {"mu_": 8.2, "sigma_": 0.9},
    "loglogistic": {"alpha_": 4000.0, "beta_": 2.5},
}


class Fisk(LogLogistic):
    """The log-logistic under another name (Fisk's): a family defined only in this test."""

    name = "fisk"


@pytest.fixture
def fisk(monkeypatch: pytest.MonkeyPatch) -> Fisk:
    family = Fisk()
    monkeypatch.setitem(FAMILY_REGISTRY, family.name, family)
    return family


@pytest.fixture
def lives() -> pl.DataFrame:
    """Log-logistic lives (scale 4000 h, shape 2.5), some entering late, censored 6000 h on."""
    rng = np.random.default_rng(0)
    n = 600
    entry = np.where(rng.random(n) < 0.4, rng.uniform(0.0, 3000.0, n), 0.0)
    life = 4000.0 * (1.0 / rng.random(n) - 1.0) ** (1.0 / 2.5)
    seen = life > entry  # a unit that failed before it was watched is never seen
    entry, life = entry[seen][:300], life[seen][:300]
    end = entry + 6000.0
    return pl.DataFrame({"entry_h": entry, "exit_h": np.minimum(life, end), "failed": life <= end})


def test_registry_names_the_families_in_report_order() -> None:
    assert list(FAMILY_REGISTRY) == ["exponential", "weibull", "lognormal", "loglogistic"]
    assert tuple(FAMILY_REGISTRY) == FAMILIES
    assert all(family_of(name).name == name for name in FAMILY_REGISTRY)
    assert [f.name for f in FAMILY_REGISTRY.values() if f.weibayes] == ["weibull"]
    assert [f.name for f in FAMILY_REGISTRY.values() if f.starts_others] == ["weibull"]
    assert [f.name for f in FAMILY_REGISTRY.values() if not f.has_shape] == ["exponential"]


def test_family_of_an_unknown_name_lists_the_registered_ones() -> None:
    with pytest.raises(ValueError, match="exponential, weibull, lognormal, loglogistic"):
        family_of("gamma")


@pytest.mark.parametrize("name", list(PARAMS))
def test_family_closed_forms_agree(name: str) -> None:
    family = family_of(name)
    params = PARAMS[name]
    assert tuple(params) == family.param_names
    # survival at exp(mu + sigma z) is the standard law's survival at z
    mu, sigma = family.location_scale(params)
    z = np.linspace(-4.0, 2.0, 13)
    log_s = family.log_sf_cdf_standard(z)[0]
    np.testing.assert_allclose(
        family.survival_function(params, np.exp(mu + sigma * z)), np.exp(log_s), rtol=1e-12
    )
    # the paper linearises the law: y is z itself
    np.testing.assert_allclose(family.paper_y(log_s), z, rtol=1e-9, atol=1e-9)
    # the mean is the integral of the survival, the restricted mean its integral up to tau
    whole = integrate.quad(lambda t: float(family.survival_function(params, t)), 0.0, np.inf)[0]
    assert family.mean_life_h(params) == pytest.approx(whole, rel=1e-6)
    part = integrate.quad(lambda t: float(family.survival_function(params, t)), 0.0, 3000.0)[0]
    assert family.restricted_mean(params, 3000.0) == pytest.approx(part, rel=1e-8)
    # B10: 90 % survive
    assert family.survival_function(params, np.array(family.b10_h(params))) == pytest.approx(0.9)
    # gradient of log(mean) against central differences
    grad = family.log_mean_gradient(params)
    for i, key in enumerate(family.param_names):
        step = 1e-6 * abs(params[key])
        up, down = dict(params), dict(params)
        up[key] += step
        down[key] -= step
        numeric = (math.log(family.mean_life_h(up)) - math.log(family.mean_life_h(down))) / (
            2 * step
        )
        assert grad[i] == pytest.approx(numeric, rel=1e-5)
    if isinstance(family, ShapeFamily):
        log_mean = family.log_mean_of_theta(np.array([mu]), np.array([sigma]))
        assert float(log_mean[0]) == pytest.approx(math.log(family.mean_life_h(params)))
        theta = np.array([mu, math.log(sigma)])
        back, _ = family.from_theta(theta)
        assert back == pytest.approx(params)


def test_renewal_shape_keeps_the_weibull_shape_only() -> None:
    assert family_of("weibull").renewal_shape(1.7) == 1.7
    assert family_of("weibull").renewal_shape(None) == 1.0
    assert family_of("exponential").renewal_shape(None) == 1.0
    assert family_of("lognormal").renewal_shape(0.9) is None
    assert family_of("loglogistic").renewal_shape(2.5) is None


def test_a_new_family_class_is_fitted_without_editing_the_generic_code(
    fisk: Fisk, lives: pl.DataFrame
) -> None:
    table = fit_lives(lives, by=(), families=("weibull", "loglogistic", "fisk"))
    rows = {r["family"]: r for r in table.iter_rows(named=True)}
    assert set(rows) == {"weibull", "loglogistic", "fisk"}
    for column in (
        "params_json",
        "shape",
        "log_likelihood",
        "aic",
        "mtbf_h",
        "mtbf_lo_h",
        "mtbf_hi_h",
        "b10_h",
        "rmst_h",
        "mtbf_sampled_h",
    ):
        assert rows["fisk"][column] == rows["loglogistic"][column], column
    assert rows["fisk"]["method"] == "mle_delta"


def test_a_new_family_class_reaches_the_fitter_checks_and_plots(
    fisk: Fisk, lives: pl.DataFrame
) -> None:
    exit_h, failed = lives["exit_h"].to_numpy(), lives["failed"].to_numpy()
    entry_h = lives["entry_h"].to_numpy()
    new = MtbfFitter(family="fisk").fit(exit_h, failed, entry_h=entry_h)
    old = MtbfFitter(family="loglogistic").fit(exit_h, failed, entry_h=entry_h)
    assert new.params_ == old.params_
    assert (new.mtbf_h_, new.mtbf_ci_h_, new.b10_h_) == (old.mtbf_h_, old.mtbf_ci_h_, old.b10_h_)
    np.testing.assert_array_equal(
        new.survival_function_at([100.0, 4000.0]), old.survival_function_at([100.0, 4000.0])
    )
    assert goodness_of_fit(lives, "fisk", old.params_) == goodness_of_fit(
        lives, "loglogistic", old.params_
    )
    plot = probability_plot(lives, "fisk", paper="lognormal")
    reference = probability_plot(lives, "loglogistic", paper="lognormal")
    assert plot.family == "fisk"
    assert plot.line.equals(reference.line)
    assert restricted_mean("fisk", old.params_, 2000.0) == restricted_mean(
        "loglogistic", old.params_, 2000.0
    )


def test_a_new_family_is_projected_as_its_renewal_shape_says(fisk: Fisk) -> None:
    table = pl.DataFrame(
        {
            "component_class": ["gpu", "psu"],
            "unit_level": "gpu",
            "mtbf_h": [5000.0, 8000.0],
            "mtbf_lo_h": [4000.0, 6000.0],
            "mtbf_hi_h": [6000.0, 9000.0],
            "shape": [2.5, 1.4],
            "family": ["fisk", "weibull"],
        }
    )
    with pytest.warns(ApproximationWarning, match=r"gpu \(fisk\)"):
        gpu, psu = rates_from_fits(table)
    assert (gpu.weibull_shape, psu.weibull_shape) == (1.0, 1.4)


def test_few_failures_keep_the_exponential_and_weibayes_rows(fisk: Fisk) -> None:
    lives = pl.DataFrame(
        {
            "entry_h": [0.0] * 6,
            "exit_h": [100.0, 900.0, 4000.0, 4000.0, 4000.0, 4000.0],
            "failed": [True, True, False, False, False, False],
        }
    )
    with pytest.warns(FewFailuresWarning):
        table = fit_lives(lives, by=(), families=("exponential", "fisk"))
    assert table["family"].to_list() == ["exponential", "fisk", "weibull"]
    assert table.filter(pl.col("chosen"))["method"].to_list() == ["weibayes_lr"]
