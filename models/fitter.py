"""MtbfFitter: one lifetime family fitted to the lives of one component class, with intervals.

:class:`MtbfFitter` wraps the lifelines fitter itself (kept on ``fitter_``); the class-level
table :func:`~models.survival.fit_lives` maximises the same likelihood with
:func:`~models.mle.fit_family_fast`, and the tests check both agree.
"""

from __future__ import annotations

import math
import warnings
from typing import TYPE_CHECKING, Any

import numpy as np
from lifelines import exceptions as lifelines_exceptions
from sklearn.base import BaseEstimator
from sklearn.utils.validation import check_is_fitted

from models.exceptions import ConvergenceWarning, FewFailuresWarning
from models.families import family_of
from models.lifetimes import Lifetimes, LogLives, check_lifetimes
from models.mle import fit_family_fast
from models.parametric import (
    MIN_FAILURES,
    annual_rates,
    check_alpha,
    check_family,
    delta_interval,
    exponential_log_likelihood,
    exponential_mtbf,
)

if TYPE_CHECKING:
    from numpy.typing import ArrayLike, NDArray

    from models.families import Family

__all__ = ["MtbfFitter"]


# --------------------------------------------------------------------------------------------
# MtbfFitter
# --------------------------------------------------------------------------------------------
def reemit_warnings(caught: list[warnings.WarningMessage], where: str, stacklevel: int = 4) -> None:
    """Re-raise warnings caught around a lifelines call: its fit diagnostics as ours.

    Shared with :mod:`models.nonparametric` and :mod:`models.cox`.

    Parameters
    ----------
    caught
        The warnings recorded by ``warnings.catch_warnings(record=True)``.
    where
        Prefix of each re-raised message, e.g. ``"lifelines WeibullFitter"``.
    stacklevel
        Counts from here to the caller of the public function.
    """
    for item in caught:
        if issubclass(
            item.category,
            (
                lifelines_exceptions.StatisticalWarning,
                lifelines_exceptions.ApproximationWarning,
                lifelines_exceptions.ConvergenceWarning,
            ),
        ):
            text = " ".join(str(item.message).split())
            warnings.warn(f"{where}: {text}", ConvergenceWarning, stacklevel=stacklevel)
        else:
            warnings.warn(item.message, item.category, stacklevel=stacklevel)


def _lifelines_fit(
    family: Family, lives: Lifetimes, alpha: float, initial_point: NDArray[np.float64] | None
) -> Any:
    fitter = family.lifelines_fitter()(alpha=alpha)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        fitter.fit(
            lives.exit_h,
            lives.failed,
            entry=lives.entry_h if lives.truncated else None,
            initial_point=initial_point,
        )
    reemit_warnings(caught, f"lifelines {type(fitter).__name__}")
    return fitter


# sklearn ships no type information, so BaseEstimator is Any to mypy
class MtbfFitter(BaseEstimator):  # type: ignore[misc]
    """Fit a ``family`` lifetime distribution to the lives of one component class.

    Parameters
    ----------
    family
        ``"exponential"``, ``"weibull"``, ``"lognormal"`` or ``"loglogistic"``.
    alpha
        One minus the confidence level of every interval (0.05 gives 95 %).
    ci_method
        ``"delta"``: delta method on log(MTBF) with the lifelines fitter's variance matrix (for
        the exponential family the exact chi-square bounds of :func:`exponential_mtbf`, which
        the delta method only approximates). ``"bootstrap"``: percentile interval over
        ``n_bootstrap`` resamples of the lives (with zero failures the exact chi-square
        bound is kept: resamples of no failures carry no interval).
    n_bootstrap
        Number of bootstrap resamples (``ci_method="bootstrap"`` only).
    random_state
        Seed or ``numpy.random.Generator`` for the bootstrap; the only source of randomness.

    Attributes
    ----------
    fitter_ : lifelines fitter or None
        The fitted lifelines ``ExponentialFitter`` / ``WeibullFitter`` / ``LogNormalFitter`` /
        ``LogLogisticFitter``; ``None`` for an exponential fit with zero failures.
    params_ : dict
        Fitted parameters under lifelines' names (exponential: the closed-form ``lambda_``).
    mtbf_h_ : float
        Mean life in hours (the MTBF of a unit replaced on failure). NaN with zero failures;
        ``inf`` for a log-logistic shape ``beta_ <= 1`` (the mean does not exist).
    mtbf_ci_h_ : tuple of float
        ``(lo, hi)`` bounds of the MTBF. Zero failures: ``(one-sided lower bound, inf)``.
    n_units_, n_failures_, exposure_h_ : int, int, float
        Lives, failures and observed unit-hours ``sum(exit_h - entry_h)``.
    log_likelihood_, aic_ : float
        Full left-truncated, right-censored log-likelihood and ``2k - 2 log L`` (as lifelines).
    afr_pct_ : float
        Annualised failure rate in %, ``8766 / mtbf_h_ * 100``: the steady-state failure rate of
        a socket whose unit is replaced on failure (a stationary renewal process fails at
        1/MTBF whatever the shape). For the exponential family this equals
        ``n_failures / exposure_h * 8766 * 100``; for shape != 1 it is not the rate a young or
        ageing fleet sees this year.
    fit_per_1e9h_ : float
        FIT rate, ``1e9 / mtbf_h_`` failures per 10^9 unit-hours.
    b10_h_ : float
        Age in hours by which 10 % of units have failed under the fitted distribution.

    Raises
    ------
    ValueError
        From :meth:`fit`, on invalid lives or hyperparameters, and for a non-exponential family
        with fewer than 2 failures (use ``family="exponential"`` for a chi-square bound).

    See Also
    --------
    fit_lives : every family for every class in one table, with the AIC choice.
    exponential_mtbf : the closed-form exponential estimate and bounds.

    Notes
    -----
    Fewer than 2 failures (exponential family) emits :class:`FewFailuresWarning`: read the
    result as a bound. With zero failures the MLE is infinite, so ``mtbf_h_``, ``afr_pct_``,
    ``fit_per_1e9h_`` and ``b10_h_`` are NaN and ``mtbf_ci_h_[0]`` is the exact one-sided lower
    bound ``2T / chi2(1 - alpha; 2)``; use that bound as a conservative MTBF.

    Bootstrap refits use the same likelihood maximised in numpy (see :func:`fit_lives`), not
    lifelines, so that 500 refits take seconds.

    Examples
    --------
    >>> fitter = MtbfFitter(family="weibull").fit(exit_h, failed, entry_h=entry_h)
    >>> fitter.mtbf_h_, fitter.mtbf_ci_h_
    """

    def __init__(
        self,
        family: str = "weibull",
        alpha: float = 0.05,
        ci_method: str = "delta",
        n_bootstrap: int = 500,
        random_state: int | np.random.Generator | None = None,
    ) -> None:
        self.family = family
        self.alpha = alpha
        self.ci_method = ci_method
        self.n_bootstrap = n_bootstrap
        self.random_state = random_state

    def fit(
        self, durations_h: ArrayLike, failed: ArrayLike, *, entry_h: ArrayLike | None = None
    ) -> MtbfFitter:
        """Fit the family to component lives.

        Parameters
        ----------
        durations_h
            Age in hours at failure or censoring (``exit_h``), one value per life.
        failed
            ``True`` for a failure, ``False`` for a right-censored life.
        entry_h
            Age in hours at which each life entered observation (left truncation); ``None``
            when every unit was observed from new.

        Returns
        -------
        MtbfFitter
            ``self``, with the fitted attributes set.
        """
        family = family_of(check_family(self.family))
        alpha = check_alpha(self.alpha)
        if self.ci_method not in ("delta", "bootstrap"):
            msg = f"ci_method must be 'delta' or 'bootstrap'; got {self.ci_method!r}."
            raise ValueError(msg)
        if self.ci_method == "bootstrap" and int(self.n_bootstrap) < 20:
            msg = f"n_bootstrap must be >= 20 for a percentile interval; got {self.n_bootstrap}."
            raise ValueError(msg)
        lives = check_lifetimes(durations_h, failed, entry_h)
        r, total = lives.n_failures, lives.exposure_h
        if not total > 0:
            msg = "These lives have no time at risk (every exit_h equals its entry_h)."
            raise ValueError(msg)
        if not family.has_shape:  # the exponential: closed form, exact bounds
            self._fit_exponential(family, lives, alpha)
        else:
            if r < MIN_FAILURES:
                msg = (
                    f"A {family.name} fit needs at least {MIN_FAILURES} failures; these lives have "
                    f"{r}. Use family='exponential' for the exact chi-square bound, or pool "
                    "classes / cohorts."
                )
                raise ValueError(msg)
            fast = fit_family_fast(family.name, LogLives(lives))
            start = np.array(list(fast.params.values())) if fast.converged else None
            if not fast.converged:
                warnings.warn(
                    f"The {family.name} likelihood of these lives has no interior maximum (flat or "
                    "singular information, typical of a few failures on late entries); the "
                    "lifelines estimate may sit on a boundary. Prefer family='exponential'.",
                    ConvergenceWarning,
                    stacklevel=2,
                )
            self.fitter_ = _lifelines_fit(family, lives, alpha, start)
            self.params_ = {name: float(getattr(self.fitter_, name)) for name in family.param_names}
            cov = np.asarray(self.fitter_.variance_matrix_, dtype=np.float64)
            self.mtbf_h_, lo, hi = delta_interval(family.name, self.params_, cov, alpha)
            self.log_likelihood_ = float(self.fitter_.log_likelihood_)
            self.aic_ = float(self.fitter_.AIC_)
            self.b10_h_ = family.b10_h(self.params_)
            if self.ci_method == "bootstrap":
                lo, hi = self._bootstrap(family, lives, alpha)
            self.mtbf_ci_h_ = (lo, hi)
        self.n_units_ = lives.n_units
        self.n_failures_ = r
        self.exposure_h_ = total
        self.afr_pct_, self.fit_per_1e9h_ = annual_rates(self.mtbf_h_)
        return self

    def _fit_exponential(self, family: Family, lives: Lifetimes, alpha: float) -> None:
        r, total = lives.n_failures, lives.exposure_h
        mtbf, lo, hi = exponential_mtbf(r, total, alpha=alpha)
        if r < MIN_FAILURES:
            warnings.warn(
                f"Only {r} failure(s) in {total:.4g} unit-hours: the exponential MTBF interval "
                f"({lo:.4g} h, {hi:.4g} h) is the result; read it as a bound.",
                FewFailuresWarning,
                stacklevel=3,
            )
        self.fitter_ = _lifelines_fit(family, lives, alpha, np.array([mtbf])) if r > 0 else None
        self.params_ = dict(zip(family.param_names, [mtbf], strict=True))
        self.mtbf_h_ = mtbf
        if self.ci_method == "bootstrap" and r > 0:
            lo, hi = self._bootstrap(family, lives, alpha)
        self.mtbf_ci_h_ = (lo, hi)
        self.log_likelihood_ = exponential_log_likelihood(r, total)
        self.aic_ = 2.0 - 2.0 * self.log_likelihood_
        self.b10_h_ = family.b10_h(self.params_) if r > 0 else math.nan

    def _bootstrap(self, family: Family, lives: Lifetimes, alpha: float) -> tuple[float, float]:
        rng = np.random.default_rng(self.random_state)
        n = lives.n_units
        means = np.empty(int(self.n_bootstrap))
        for b in range(means.size):
            sample = lives.take(rng.integers(0, n, n))
            r = sample.n_failures
            if not family.has_shape:  # the exponential MLE T / r
                means[b] = sample.exposure_h / r if r > 0 else math.inf
            elif r < MIN_FAILURES:
                means[b] = math.nan
            else:
                fit = fit_family_fast(family.name, LogLives(sample))
                means[b] = family.mean_life_h(fit.params) if fit.converged else math.nan
        n_failed = int(np.count_nonzero(np.isnan(means)))
        if n_failed > 0.01 * means.size:
            warnings.warn(
                f"{n_failed} of {means.size} bootstrap refits failed (too few failures or no "
                "convergence); the interval uses the rest.",
                ConvergenceWarning,
                stacklevel=3,
            )
        means = means[~np.isnan(means)]
        if means.size == 0:
            return math.nan, math.nan
        lo, hi = np.quantile(means, [alpha / 2.0, 1.0 - alpha / 2.0], method="inverted_cdf")
        return float(lo), float(hi)

    def survival_function_at(self, times_h: ArrayLike) -> NDArray[np.float64]:
        """Fitted probability that a new unit survives past each age in ``times_h``.

        Parameters
        ----------
        times_h
            Ages in hours.

        Returns
        -------
        numpy.ndarray
            Survival probabilities, same shape as ``times_h``.
        """
        check_is_fitted(self, "params_")
        return family_of(self.family).survival_function(
            self.params_, np.asarray(times_h, dtype=np.float64)
        )
