"""Survival fits recover a known truth from simulated, left-truncated and censored fleets."""

from __future__ import annotations

import json
import math

import numpy as np
import polars as pl
import pytest
from scipy import optimize, stats
from sklearn.base import clone

from models import (
    FAMILIES,
    HOURS_PER_YEAR,
    ConvergenceWarning,
    FewFailuresWarning,
    MtbfFitter,
    cox_ph,
    exponential_mtbf,
    fit_lives,
    kaplan_meier,
    nelson_aalen,
)

SHAPE = 1.5
SCALE_H = 1_000.0
TRUE_MTBF_H = SCALE_H * math.gamma(1.0 + 1.0 / SHAPE)  # 902.7 h


def arrays(lives: pl.DataFrame) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    return lives["exit_h"].to_numpy(), lives["failed"].to_numpy(), lives["entry_h"].to_numpy()


def independent_mle(
    family: str, exit_h: np.ndarray, failed: np.ndarray, entry_h: np.ndarray
) -> tuple[dict[str, float], float]:
    """MLE of the left-truncated, right-censored likelihood written with scipy.stats."""

    def frozen(log_params: np.ndarray) -> stats.rv_continuous:
        a, b = np.exp(log_params)
        if family == "weibull":
            return stats.weibull_min(c=b, scale=a)
        if family == "lognormal":
            return stats.lognorm(s=b, scale=a)
        return stats.fisk(c=b, scale=a)

    truncated = entry_h > 0

    def negative_ll(log_params: np.ndarray) -> float:
        dist = frozen(log_params)
        ll = (
            dist.logpdf(exit_h[failed]).sum()
            + dist.logsf(exit_h[~failed]).sum()
            - dist.logsf(entry_h[truncated]).sum()
        )
        return -ll if np.isfinite(ll) else np.inf

    start = np.array([np.log(np.median(exit_h)), 0.0])
    best = optimize.minimize(
        negative_ll, start, method="Nelder-Mead", options={"xatol": 1e-11, "fatol": 1e-11}
    )
    best = optimize.minimize(negative_ll, best.x, method="BFGS", options={"gtol": 1e-9})
    a, b = np.exp(best.x)
    names = {
        "weibull": {"lambda_": a, "rho_": b},
        "lognormal": {"mu_": math.log(a), "sigma_": b},
        "loglogistic": {"alpha_": a, "beta_": b},
    }
    return names[family], -float(best.fun)


class TestCheckLifetimes:
    @pytest.mark.parametrize(
        ("exit_h", "failed", "entry_h", "match"),
        [
            ([10.0, -1.0], [True, False], None, "negative"),
            ([10.0, 5.0], [True, False], [0.0, 8.0], "exit before they enter"),
            ([10.0, 5.0], [True], None, "Lengths differ"),
            ([10.0, math.nan], [True, False], None, "NaN"),
            ([10.0, 5.0], [True, False], [0.0, math.nan], "NaN"),
            ([10.0, 0.0], [True, False], None, "age 0"),
            ([10.0, 5.0], [2, 0], None, "boolean"),
            ([], [], None, "empty"),
        ],
    )
    def test_mtbf_fitter_rejects_bad_lives(self, exit_h, failed, entry_h, match) -> None:
        with pytest.raises(ValueError, match=match):
            MtbfFitter(family="exponential").fit(exit_h, failed, entry_h=entry_h)

    def test_mtbf_fitter_rejects_unknown_family(self) -> None:
        with pytest.raises(ValueError, match="Unknown family 'gamma'"):
            MtbfFitter(family="gamma").fit([1.0, 2.0], [True, True])

    def test_weibull_needs_two_failures(self) -> None:
        with pytest.raises(ValueError, match="family='exponential'"):
            MtbfFitter(family="weibull").fit([10.0, 20.0, 30.0], [True, False, False])

    def test_fit_lives_names_missing_columns(self) -> None:
        lives = pl.DataFrame({"component_class": ["gpu"], "exit_h": [1.0], "failed": [True]})
        with pytest.raises(ValueError, match=r"missing column\(s\) \['entry_h'\]"):
            fit_lives(lives)

    def test_fit_lives_rejects_exit_before_entry(self) -> None:
        lives = pl.DataFrame(
            {
                "component_class": ["gpu"] * 2,
                "entry_h": [5.0, 0.0],
                "exit_h": [1.0, 3.0],
                "failed": [True, True],
            }
        )
        with pytest.raises(ValueError, match="exit_h < entry_h"):
            fit_lives(lives)


class TestExponentialMtbf:
    def test_exponential_mtbf_equals_chi_square_closed_form(self) -> None:
        r, total, alpha = 7, 123_456.7, 0.1
        mtbf, lo, hi = exponential_mtbf(r, total, alpha=alpha)
        assert mtbf == pytest.approx(total / r, rel=1e-12)
        assert lo == pytest.approx(2 * total / stats.chi2.ppf(1 - alpha / 2, 2 * r + 2), rel=1e-9)
        assert hi == pytest.approx(2 * total / stats.chi2.ppf(alpha / 2, 2 * r), rel=1e-9)

    def test_exponential_mtbf_zero_failures_gives_one_sided_lower_bound(self) -> None:
        mtbf, lo, hi = exponential_mtbf(0, 30_000.0, alpha=0.05)
        # chi2(0.95; 2) = -2 ln 0.05, so the bound is T / ln 20
        assert math.isnan(mtbf)
        assert lo == pytest.approx(30_000.0 / math.log(20.0), rel=1e-9)
        assert hi == math.inf

    def test_mtbf_fitter_exponential_matches_closed_form(self, fleet_lives) -> None:
        exit_h, failed, entry_h = arrays(fleet_lives)
        r, total = int(failed.sum()), float(np.sum(exit_h - entry_h))
        fitter = MtbfFitter(family="exponential", alpha=0.05).fit(exit_h, failed, entry_h=entry_h)
        mtbf, lo, hi = exponential_mtbf(r, total, alpha=0.05)
        assert fitter.mtbf_h_ == pytest.approx(mtbf, rel=1e-9)
        assert fitter.mtbf_h_ == pytest.approx(1.0 / (r / total), rel=1e-9)
        assert fitter.mtbf_ci_h_[0] == pytest.approx(lo, rel=1e-9)
        assert fitter.mtbf_ci_h_[1] == pytest.approx(hi, rel=1e-9)
        assert fitter.exposure_h_ == pytest.approx(total, rel=1e-12)
        assert fitter.afr_pct_ == pytest.approx(r / total * HOURS_PER_YEAR * 100, rel=1e-9)
        assert fitter.fit_per_1e9h_ == pytest.approx(r / total * 1e9, rel=1e-9)
        # lifelines maximises the same likelihood
        assert fitter.log_likelihood_ == pytest.approx(fitter.fitter_.log_likelihood_, abs=1e-6)

    def test_mtbf_fitter_zero_failures_is_a_bound_not_a_crash(self) -> None:
        exit_h, entry_h = np.array([500.0, 800.0, 1_200.0]), np.array([0.0, 100.0, 200.0])
        with pytest.warns(FewFailuresWarning, match="0 failure"):
            fitter = MtbfFitter(family="exponential").fit(
                exit_h, np.zeros(3, bool), entry_h=entry_h
            )
        total = 2_200.0
        assert math.isnan(fitter.mtbf_h_)
        assert fitter.mtbf_ci_h_ == (pytest.approx(total / math.log(20.0), rel=1e-9), math.inf)
        assert fitter.fitter_ is None
        assert fitter.n_failures_ == 0

    def test_fit_lives_zero_failure_class_gets_exact_bound(self, fleet_lives) -> None:
        quiet = pl.DataFrame(
            {
                "component_class": ["pcie"] * 3,
                "entry_h": [0.0, 100.0, 200.0],
                "exit_h": [500.0, 800.0, 1_200.0],
                "failed": [False] * 3,
            }
        )
        lives = pl.concat(
            [
                fleet_lives.select(
                    pl.lit("gpu").alias("component_class"), "entry_h", "exit_h", "failed"
                ),
                quiet,
            ]
        )
        with pytest.warns(FewFailuresWarning, match="'component_class': 'pcie'"):
            table = fit_lives(lives)
        pcie = table.filter(pl.col("component_class") == "pcie")
        assert pcie.height == 1
        row = pcie.row(0, named=True)
        assert row["family"] == "exponential"
        assert row["chosen"] is True
        assert row["mtbf_lo_h"] == pytest.approx(2_200.0 / math.log(20.0), rel=1e-9)
        assert row["mtbf_hi_h"] == math.inf
        assert math.isnan(row["mtbf_h"])
        assert table.filter(pl.col("component_class") == "gpu").height == len(FAMILIES)


class TestMtbfFitter:
    def test_weibull_recovers_true_mtbf_with_left_truncation(self, fleet_lives) -> None:
        exit_h, failed, entry_h = arrays(fleet_lives)
        assert (entry_h > 0).mean() > 0.3  # left-truncated ...
        assert (~failed).mean() > 0.3  # ... and right-censored
        fitter = MtbfFitter(family="weibull").fit(exit_h, failed, entry_h=entry_h)
        lo, hi = fitter.mtbf_ci_h_
        assert lo < TRUE_MTBF_H < hi
        rho_lo, rho_hi = fitter.fitter_.summary.loc["rho_", ["coef lower 95%", "coef upper 95%"]]
        assert rho_lo < SHAPE < rho_hi
        assert fitter.b10_h_ == pytest.approx(
            fitter.params_["lambda_"] * (-math.log(0.9)) ** (1 / fitter.params_["rho_"])
        )
        assert fitter.survival_function_at([fitter.b10_h_])[0] == pytest.approx(0.9)
        assert fitter.afr_pct_ == pytest.approx(HOURS_PER_YEAR / fitter.mtbf_h_ * 100)

    def test_ignoring_left_truncation_overestimates_mtbf(self, fleet_lives) -> None:
        exit_h, failed, entry_h = arrays(fleet_lives)
        honest = MtbfFitter(family="weibull").fit(exit_h, failed, entry_h=entry_h)
        naive = MtbfFitter(family="weibull").fit(exit_h, failed)  # as if seen from new
        # the truth (902.7 h) is inside the honest interval (about 865-917 h) ...
        assert honest.mtbf_ci_h_[0] < TRUE_MTBF_H < honest.mtbf_ci_h_[1]
        # ... while the naive fit only sees units that survived to the window: about 1,208 h
        assert naive.mtbf_ci_h_[0] > TRUE_MTBF_H
        assert naive.mtbf_h_ > 1.2 * honest.mtbf_h_

    def test_bootstrap_interval_covers_truth_and_is_reproducible(self, fleet_lives) -> None:
        exit_h, failed, entry_h = arrays(fleet_lives)
        fitter = MtbfFitter(ci_method="bootstrap", n_bootstrap=200, random_state=3)
        first = fitter.fit(exit_h, failed, entry_h=entry_h).mtbf_ci_h_
        again = clone(fitter).fit(exit_h, failed, entry_h=entry_h).mtbf_ci_h_
        assert first == again
        assert first[0] < TRUE_MTBF_H < first[1]
        delta = MtbfFitter().fit(exit_h, failed, entry_h=entry_h).mtbf_ci_h_
        assert first[0] == pytest.approx(delta[0], rel=0.02)
        assert first[1] == pytest.approx(delta[1], rel=0.02)

    def test_get_params_and_clone_keep_hyperparameters(self) -> None:
        fitter = MtbfFitter(family="lognormal", alpha=0.1, ci_method="bootstrap", random_state=1)
        assert clone(fitter).get_params() == {
            "alpha": 0.1,
            "ci_method": "bootstrap",
            "family": "lognormal",
            "n_bootstrap": 500,
            "random_state": 1,
        }

    @pytest.mark.parametrize("family", ["weibull", "lognormal", "loglogistic"])
    def test_mle_matches_independent_scipy_fit(self, fleet_lives, family) -> None:
        exit_h, failed, entry_h = arrays(fleet_lives.head(1_500))
        expected, expected_ll = independent_mle(family, exit_h, failed, entry_h)
        fitter = MtbfFitter(family=family).fit(exit_h, failed, entry_h=entry_h)
        assert fitter.params_ == pytest.approx(expected, rel=1e-4)
        assert fitter.log_likelihood_ == pytest.approx(expected_ll, abs=1e-4)
        row = fit_lives(
            fleet_lives.head(1_500).with_columns(pl.lit("gpu").alias("component_class")),
            families=(family,),
        ).row(0, named=True)
        assert json.loads(row["params_json"]) == pytest.approx(expected, rel=1e-4)
        assert row["log_likelihood"] == pytest.approx(expected_ll, abs=1e-4)


class TestFitLives:
    def test_table_matches_mtbf_fitter_for_every_family(self, fleet_lives) -> None:
        exit_h, failed, entry_h = arrays(fleet_lives)
        table = fit_lives(fleet_lives.with_columns(pl.lit("gpu").alias("component_class")))
        assert table["family"].to_list() == list(FAMILIES)
        for row in table.iter_rows(named=True):
            fitter = MtbfFitter(family=row["family"]).fit(exit_h, failed, entry_h=entry_h)
            assert json.loads(row["params_json"]) == pytest.approx(fitter.params_, rel=1e-5)
            assert row["log_likelihood"] == pytest.approx(fitter.log_likelihood_, abs=1e-5)
            assert row["aic"] == pytest.approx(fitter.aic_, abs=1e-5)
            for column, value in [
                ("mtbf_h", fitter.mtbf_h_),
                ("mtbf_lo_h", fitter.mtbf_ci_h_[0]),
                ("mtbf_hi_h", fitter.mtbf_ci_h_[1]),
                ("b10_h", fitter.b10_h_),
                ("afr_pct", fitter.afr_pct_),
                ("fit_per_1e9h", fitter.fit_per_1e9h_),
            ]:
                assert row[column] == pytest.approx(value, rel=1e-4), column
            assert (row["n_units"], row["n_failures"]) == (fitter.n_units_, fitter.n_failures_)

    def test_chosen_is_lowest_aic_per_group(self, simulate_lives) -> None:
        rng = np.random.default_rng(5)
        lives = pl.concat(
            [
                simulate_lives(
                    rng,
                    2_000,
                    shape=shape,
                    scale_h=SCALE_H,
                    window_h=1_000.0,
                    oldest_install_h=2_000.0,
                ).with_columns(pl.lit(name).alias("component_class"), pl.lit(batch).alias("batch"))
                for name, shape in (("gpu", 0.8), ("nvlink", 2.0))
                for batch in ("a", "b")
            ]
        )
        table = fit_lives(lives, by=("component_class", "batch"))
        assert table.height == 4 * len(FAMILIES)
        assert table.schema["component_class"] == pl.String
        best = table.group_by("component_class", "batch").agg(
            pl.col("family").sort_by("aic").first(), pl.col("chosen").sum().alias("n_chosen")
        )
        assert best["n_chosen"].to_list() == [1] * 4
        chosen = table.filter(pl.col("chosen")).join(best, on=["component_class", "batch"])
        assert (chosen["family"] == chosen["family_right"]).all()
        weibull = table.filter(pl.col("family") == "weibull").sort("component_class")
        assert weibull["shape"].to_list()[:2] == pytest.approx([0.8, 0.8], rel=0.15)
        assert weibull["shape"].to_list()[2:] == pytest.approx([2.0, 2.0], rel=0.15)

    def test_exponential_row_is_the_closed_form(self, fleet_lives) -> None:
        table = fit_lives(
            fleet_lives.with_columns(pl.lit("gpu").alias("component_class")),
            families=("exponential",),
            alpha=0.1,
        )
        row = table.row(0, named=True)
        r = int(fleet_lives["failed"].sum())
        total = float((fleet_lives["exit_h"] - fleet_lives["entry_h"]).sum())
        expected = exponential_mtbf(r, total, alpha=0.1)
        assert (row["mtbf_h"], row["mtbf_lo_h"], row["mtbf_hi_h"]) == pytest.approx(
            expected, rel=1e-9
        )
        assert row["shape"] == 1.0
        assert json.loads(row["params_json"]) == {"lambda_": pytest.approx(total / r, rel=1e-12)}

    def test_unidentifiable_family_is_left_nan_and_never_chosen(self) -> None:
        # two failures, each shortly after a late entry: the log-normal and log-logistic
        # likelihoods rise towards shape -> 0 with no interior maximum (the Weibull too, but
        # with 2 to 5 failures its row is Weibayes, at a known shape)
        lives = pl.DataFrame(
            {
                "component_class": ["nic"] * 3,
                "entry_h": [1_915.8, 2_262.4, 489.8],
                "exit_h": [2_415.8, 2_345.1, 518.7],
                "failed": [False, True, True],
            }
        )
        with (
            pytest.warns(ConvergenceWarning, match="lognormal for {'component_class': 'nic'}"),
            pytest.warns(FewFailuresWarning, match="2 to 5 failures"),
        ):
            table = fit_lives(lives)
        chosen = table.filter(pl.col("chosen"))
        assert chosen["family"].to_list() == ["weibull"]
        assert chosen["method"].to_list() == ["weibayes_lr"]
        unidentified = table.filter(pl.col("family").is_in(["lognormal", "loglogistic"]))
        assert unidentified["aic"].is_nan().all()
        assert (unidentified["aic_weight"] == 0).all()
        with pytest.warns(ConvergenceWarning) as record:  # ours, then lifelines' as ours
            MtbfFitter(family="weibull").fit(
                lives["exit_h"], lives["failed"], entry_h=lives["entry_h"]
            )
        assert "no interior maximum" in str(record[0].message)

    @pytest.mark.slow
    def test_weibull_interval_coverage_is_nominal(self, simulate_lives) -> None:
        n_replications = 2_000
        rng = np.random.default_rng(11)
        lives = pl.concat(
            [
                simulate_lives(
                    rng,
                    300,
                    shape=SHAPE,
                    scale_h=SCALE_H,
                    window_h=1_000.0,
                    oldest_install_h=3_000.0,
                ).with_columns(pl.lit(i).alias("replicate"))
                for i in range(n_replications)
            ]
        )
        table = fit_lives(lives, by=("replicate",), families=("weibull",), alpha=0.05)
        assert table.height == n_replications
        covered = int(
            ((table["mtbf_lo_h"] <= TRUE_MTBF_H) & (table["mtbf_hi_h"] >= TRUE_MTBF_H)).sum()
        )
        lo, hi = stats.binom.ppf([0.005, 0.995], n_replications, 0.95)
        assert lo <= covered <= hi, f"coverage {covered / n_replications:.4f}"


class TestNonParametric:
    # (entry, exit, failed): A (0, 1, F), B (0, 4, F), C (2, 3, F), D (2.5, 5, censored)
    ENTRY = np.array([0.0, 0.0, 2.0, 2.5])
    EXIT = np.array([1.0, 4.0, 3.0, 5.0])
    FAILED = np.array([True, True, True, False])

    def test_kaplan_meier_uses_late_entries_only_after_they_enter(self) -> None:
        curve = kaplan_meier(self.EXIT, self.FAILED, entry_h=self.ENTRY)
        at = curve.filter(pl.col("timeline_h").is_in([1.0, 3.0, 4.0])).sort("timeline_h")
        # risk sets {A, B}, {B, C, D}, {B, D}
        assert at["at_risk"].to_list() == [2, 3, 2]
        assert at["survival"].to_list() == pytest.approx([1 / 2, 1 / 3, 1 / 6], rel=1e-12)
        assert (curve["lo"] <= curve["survival"]).all()
        assert (curve["survival"] <= curve["hi"]).all()

    def test_nelson_aalen_sums_hazard_increments(self) -> None:
        curve = nelson_aalen(self.EXIT, self.FAILED, entry_h=self.ENTRY)
        at = curve.filter(pl.col("timeline_h").is_in([1.0, 3.0, 4.0])).sort("timeline_h")
        assert at["cumulative_hazard"].to_list() == pytest.approx(
            [1 / 2, 1 / 2 + 1 / 3, 1 / 2 + 1 / 3 + 1 / 2], rel=1e-12
        )


class TestCoxPh:
    @staticmethod
    def lives_with_batch(simulate_lives, n: int, seed: int) -> pl.DataFrame:
        lives = simulate_lives(
            np.random.default_rng(seed),
            n,
            shape=SHAPE,
            scale_h=SCALE_H,
            window_h=1_000.0,
            oldest_install_h=2_000.0,
            hazard_ratio=np.array([1.0, 2.5]),
        )
        return lives.with_columns(
            pl.when(pl.col("risk") > 1).then(pl.lit("new")).otherwise(pl.lit("old")).alias("batch")
        )

    def test_recovers_planted_hazard_ratio(self, simulate_lives) -> None:
        lives = self.lives_with_batch(simulate_lives, 3_000, seed=21)
        result = cox_ph(lives, ["batch"])
        row = result.row(0, named=True)
        # sorted levels: "new" < "old", so "new" is the reference and old has ratio 1 / 2.5
        assert (row["covariate"], row["reference"]) == ("batch=old", "batch=new")
        assert row["hr_lo"] < 1 / 2.5 < row["hr_hi"]
        assert row["p_value"] < 1e-6
        assert row["time_resolution_h"] is None

    def test_enum_keeps_its_first_category_as_reference(self, simulate_lives) -> None:
        lives = self.lives_with_batch(simulate_lives, 3_000, seed=21).with_columns(
            pl.col("batch").cast(pl.Enum(["old", "new"]))
        )
        row = cox_ph(lives, ["batch"]).row(0, named=True)
        assert (row["covariate"], row["reference"]) == ("batch=new", "batch=old")
        assert row["hr_lo"] < 2.5 < row["hr_hi"]

    def test_large_truncated_data_is_discretised_automatically(self, simulate_lives) -> None:
        lives = self.lives_with_batch(simulate_lives, 8_000, seed=22).with_columns(
            pl.col("batch").cast(pl.Enum(["old", "new"]))
        )
        row = cox_ph(lives, ["batch"]).row(0, named=True)
        step = lives["exit_h"].max() / 200  # at most 200 steps up to the oldest exit
        assert step <= row["time_resolution_h"] < 2.5 * step
        assert row["hr_lo"] < 2.5 < row["hr_hi"]
