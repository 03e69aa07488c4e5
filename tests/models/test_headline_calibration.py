"""The headline answers: finite, as narrow as the exact Poisson interval, and calibrated.

Fleets come from ``tests.models.failsim`` (written here, independent of ``models`` and of the
synthetic generator): nodes of 8 GPU slots installed at random ages before a 90-day window, two
competing GPU-level classes and two node-level classes per fleet, each class's lifetime law
drawn from five kinds (exponential, Weibull with shape < 1 and > 1, log-normal, log-logistic),
renewal after each failure's repair. Each fleet is fitted through the models API
(:func:`models.failure_rates` and :func:`models.fit_lives`). The truth of a class is the MTBF
the fleet showed over the ages it was watched: exposure over the compensator (the expected
failures given the realised at-risk intervals at the true ages).
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import polars as pl
import pytest
from scipy import stats

from models import failure_rates, fit_lives
from tests.models.failsim import ClassLaw, poisson_bounds, random_law, simulate
from tests.models.lifesim import law

KINDS = ("exponential", "weibull_dfr", "weibull_ifr", "lognormal", "loglogistic")
N_FLEETS = 250
MIN_FAILURES = 10
WIDTH_LIMIT = 1.5  # the acceptance: at most 1.5x the exact Poisson width (hi / lo)


def _log_uniform(rng: np.random.Generator, lo: float, hi: float) -> float:
    return math.exp(rng.uniform(math.log(lo), math.log(hi)))


def _fleet(rng: np.random.Generator) -> tuple[list[ClassLaw], list[ClassLaw], int, float]:
    gpu = [
        random_law(rng, f"gpu_{j}", "gpu", str(rng.choice(KINDS)), _log_uniform(rng, 15e3, 4e5))
        for j in range(2)
    ]
    node = [
        random_law(rng, f"node_{j}", "node", str(rng.choice(KINDS)), _log_uniform(rng, 2e3, 6e4))
        for j in range(2)
    ]
    return gpu, node, int(rng.integers(64, 385)), float(rng.uniform(500.0, 40_000.0))


@pytest.fixture(scope="module")
def fits() -> pl.DataFrame:
    """One row per class fit with at least 10 failures: the headline, the lifetime, the truth."""
    rng = np.random.default_rng(2_025)
    rows = []
    for seed in range(N_FLEETS):
        gpu, node, n_nodes, oldest_h = _fleet(rng)
        fleet = simulate(rng, gpu, node, n_nodes=n_nodes, oldest_h=oldest_h)
        rates = failure_rates(fleet.lives)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            lifetime = fit_lives(fleet.lives).group_by("component_class").first()
        table = rates.join(
            lifetime.select(
                "component_class",
                pl.col("headline_mtbf_lo_h").alias("fit_headline_lo_h"),
                pl.col("headline_mtbf_hi_h").alias("fit_headline_hi_h"),
                "lifetime_mtbf_lo_h",
                "lifetime_mtbf_hi_h",
            ),
            on="component_class",
        )
        for row in table.filter(pl.col("n_failures") >= MIN_FAILURES).iter_rows(named=True):
            name = row["component_class"]
            lo_count, hi_count = poisson_bounds(row["n_failures"])
            rows.append(
                {
                    "fleet": seed,
                    "kind": fleet.laws[name].kind,
                    "n_failures": row["n_failures"],
                    "truth_h": fleet.truth_mtbf_h[name],
                    "lo_h": row["headline_mtbf_lo_h"],
                    "hi_h": row["headline_mtbf_hi_h"],
                    "same_in_fit": (row["fit_headline_lo_h"], row["fit_headline_hi_h"])
                    == (row["headline_mtbf_lo_h"], row["headline_mtbf_hi_h"]),
                    "poisson_ratio": hi_count / lo_count,
                    "lifetime_lo_h": row["lifetime_mtbf_lo_h"],
                    "lifetime_hi_h": row["lifetime_mtbf_hi_h"],
                }
            )
    return pl.DataFrame(rows).with_columns(
        width=(pl.col("hi_h") / pl.col("lo_h")) / pl.col("poisson_ratio"),
        covered=(pl.col("lo_h") <= pl.col("truth_h")) & (pl.col("truth_h") <= pl.col("hi_h")),
        optimistic=pl.col("truth_h") < pl.col("lo_h"),  # the interval claims a longer MTBF
        pessimistic=pl.col("truth_h") > pl.col("hi_h"),
        lifetime_finite=pl.col("lifetime_hi_h").is_finite(),
        lifetime_width=(pl.col("lifetime_hi_h") / pl.col("lifetime_lo_h"))
        / pl.col("poisson_ratio"),
        lifetime_covered=(pl.col("lifetime_lo_h") <= pl.col("truth_h"))
        & (pl.col("truth_h") <= pl.col("lifetime_hi_h")),
    )


def _table(fits: pl.DataFrame) -> pl.DataFrame:
    """Coverage and median width per kind (and overall), headline beside the lifetime mean."""
    aggs = [
        pl.len().alias("fits"),
        pl.col("covered").mean().round(3).alias("coverage"),
        pl.col("optimistic").sum().alias("miss_opt"),
        pl.col("pessimistic").sum().alias("miss_pess"),
        pl.col("width").median().round(3).alias("width_med"),
        pl.col("width").max().round(3).alias("width_max"),
        pl.col("lifetime_finite").mean().round(3).alias("lifetime_finite"),
        pl.col("lifetime_width")
        .filter(pl.col("lifetime_finite"))
        .median()
        .round(2)
        .alias("lifetime_width_med"),
        pl.col("lifetime_covered").mean().round(3).alias("lifetime_coverage"),
    ]
    per_kind = fits.group_by("kind").agg(aggs).sort("kind")
    overall = fits.select(pl.lit("all").alias("kind"), *aggs)
    return pl.concat([per_kind, overall])


@pytest.mark.slow
class TestHeadlineCalibration:
    def test_print_the_table(self, fits: pl.DataFrame) -> None:
        with pl.Config(tbl_rows=20, tbl_cols=20, tbl_width_chars=200):
            print(
                f"\n{fits['fleet'].n_unique()} fleets, {fits.height} class fits with >= 10 failures"
            )
            print(_table(fits))
        assert fits["fleet"].n_unique() >= 200
        assert fits.height >= 500  # enough fits for the binomial tolerances below

    def test_every_headline_is_finite_and_the_same_in_both_tables(self, fits: pl.DataFrame) -> None:
        assert (fits["lo_h"] > 0).all()
        assert fits["hi_h"].is_finite().all()
        assert fits["same_in_fit"].all()

    def test_width_is_the_exact_poisson_width(self, fits: pl.DataFrame) -> None:
        # the exact Poisson bounds found here by root-finding on the Poisson CDF
        assert fits["width"].max() <= WIDTH_LIMIT
        assert fits["width"].to_numpy() == pytest.approx(1.0, rel=1e-8)

    def test_coverage_is_nominal_with_misses_on_both_sides(self, fits: pl.DataFrame) -> None:
        """The interval is 95 %: over ``n`` independent fits the covered count is at least
        Binomial(n, 0.95)'s 0.1 % quantile (about 3.1 sd below 95 %, i.e. 0.93 for 800
        fits), which is above the issue's 90 %; each side misses at most Binomial(n, 0.025)'s
        99.9 % quantile (no side carries the misses) and at least once."""
        n = fits.height
        covered = int(fits["covered"].sum())
        floor = stats.binom.ppf(0.001, n, 0.95)
        assert covered >= floor >= 0.90 * n, (covered, floor, n)
        side_cap = stats.binom.ppf(0.999, n, 0.025)
        optimistic, pessimistic = int(fits["optimistic"].sum()), int(fits["pessimistic"].sum())
        assert 1 <= optimistic <= side_cap, (optimistic, side_cap)
        assert 1 <= pessimistic <= side_cap, (pessimistic, side_cap)

    def test_no_kind_of_law_is_left_behind(self, fits: pl.DataFrame) -> None:
        for (kind,), part in fits.group_by("kind"):
            n = part.height
            assert n >= 50, (kind, n)
            assert int(part["covered"].sum()) >= stats.binom.ppf(0.001, n, 0.95), kind


@pytest.mark.slow
def test_no_optimistic_failure_where_the_lifetime_mean_is_an_extrapolation() -> None:
    """The issue's failure: a long-lived class with a decreasing hazard (Weibull shape 0.6, mean
    400,000 h) on a young fleet (installed up to 4,000 h before the window). Its lifetime mean is
    an extrapolation with an open interval whose lower bound often lies above the MTBF the fleet
    showed (optimistic); the headline is finite and misses no more often on that side than a
    95 % interval may."""
    n_fleets = 40
    lifetime_optimistic = headline_optimistic = headline_covered = 0
    for seed in range(n_fleets):
        rng = np.random.default_rng(seed)
        c = ClassLaw("gpu_memory", "gpu", "weibull_dfr", "weibull", law("weibull", 4e5, 0.6))
        fleet = simulate(rng, [c], [], n_nodes=256, oldest_h=4_000.0)
        truth = fleet.truth_mtbf_h["gpu_memory"]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            head = fit_lives(fleet.lives).row(0, named=True)
        assert head["n_failures"] >= MIN_FAILURES
        assert head["lifetime_extrapolated"] is True
        assert math.isfinite(head["headline_mtbf_hi_h"])
        lifetime_optimistic += head["lifetime_mtbf_lo_h"] > truth
        headline_optimistic += head["headline_mtbf_lo_h"] > truth
        headline_covered += head["headline_mtbf_lo_h"] <= truth <= head["headline_mtbf_hi_h"]
    print(
        f"\nWeibull 0.6 young fleet, {n_fleets} fleets: lifetime mean's lower bound above the "
        f"truth in {lifetime_optimistic}; headline above it in {headline_optimistic}, covers "
        f"{headline_covered}"
    )
    assert lifetime_optimistic >= n_fleets // 4  # the old failure is there to be fixed
    assert headline_optimistic <= stats.binom.ppf(0.999, n_fleets, 0.025)
    assert headline_covered >= stats.binom.ppf(0.001, n_fleets, 0.95)
