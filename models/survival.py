"""Lifetime fits per component class: parametric MTBF with intervals, Kaplan-Meier, Cox PH.

Every function takes component lives: one row per unit life, in hours, with ``entry_h`` the age
at which observation began (left truncation, ``0`` for a unit observed from new), ``exit_h`` the
age at failure or censoring and ``failed`` (``False`` = right-censored). Lives that began before
the observation window are kept with their entry age, never dropped.

Parametric families (lifelines parameter names):

=============  =========================  ===============================================
family         parameters                 survival function
=============  =========================  ===============================================
exponential    ``lambda_`` (mean, h)      ``exp(-t / lambda_)``
weibull        ``lambda_`` (h), ``rho_``  ``exp(-(t / lambda_) ** rho_)``
lognormal      ``mu_``, ``sigma_``        ``1 - Phi((log t - mu_) / sigma_)``
loglogistic    ``alpha_`` (h), ``beta_``  ``1 / (1 + (t / alpha_) ** beta_)``
=============  =========================  ===============================================

The class-level table (:func:`fit_lives`) maximises the same left-truncated, right-censored
likelihood as lifelines with a vectorised Newton solver in numpy (analytic gradient and Hessian),
because lifelines' Nelder-Mead start plus autograd takes seconds per family on 10^5 lives.
:class:`MtbfFitter` wraps the lifelines fitter itself; the tests check both agree.
"""

from __future__ import annotations

import json
import math
import warnings
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd
import polars as pl
from lifelines import (
    CoxPHFitter,
    ExponentialFitter,
    KaplanMeierFitter,
    LogLogisticFitter,
    LogNormalFitter,
    NelsonAalenFitter,
    WeibullFitter,
)
from lifelines import exceptions as lifelines_exceptions
from scipy import special, stats
from sklearn.base import BaseEstimator
from sklearn.utils.validation import check_is_fitted

from models.exceptions import ConvergenceWarning, FewFailuresWarning
from models.mtbf_summary import (
    WEIBAYES_MAX_FAILURES,
    sampled_mean,
    summarise_group,
    survival_function,
    weibayes,
)

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping, Sequence

    from numpy.typing import ArrayLike, NDArray

    _Terms = tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.float64]]
    _TermFn = Callable[[NDArray[np.float64]], _Terms]
    _ValueFn = Callable[[NDArray[np.float64]], NDArray[np.float64]]

__all__ = [
    "FAMILIES",
    "HOURS_PER_YEAR",
    "Lifetimes",
    "MtbfFitter",
    "check_lifetimes",
    "cox_ph",
    "exponential_mtbf",
    "fit_lives",
    "kaplan_meier",
    "nelson_aalen",
]

FAMILIES: tuple[str, ...] = ("exponential", "weibull", "lognormal", "loglogistic")
"""Parametric lifetime families, in the order :func:`fit_lives` reports them."""

HOURS_PER_YEAR = 8766.0
"""Hours in a mean Julian year (365.25 days), the base of the annualised failure rate."""

_B10_SURVIVAL = 0.9
_MIN_FAILURES = 2
_COX_AUTO_ROWS = 5_000
_COX_AUTO_BINS = 200
_LIFELINES_FITTERS: dict[str, type[Any]] = {
    "exponential": ExponentialFitter,
    "weibull": WeibullFitter,
    "lognormal": LogNormalFitter,
    "loglogistic": LogLogisticFitter,
}
_PARAM_NAMES: dict[str, tuple[str, ...]] = {
    "exponential": ("lambda_",),
    "weibull": ("lambda_", "rho_"),
    "lognormal": ("mu_", "sigma_"),
    "loglogistic": ("alpha_", "beta_"),
}
_SHAPE_PARAM = {"weibull": "rho_", "lognormal": "sigma_", "loglogistic": "beta_"}


# --------------------------------------------------------------------------------------------
# Input checks
# --------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Lifetimes:
    """Validated lives: float ``exit_h`` and ``entry_h``, boolean ``failed``, equal lengths."""

    exit_h: NDArray[np.float64]
    failed: NDArray[np.bool_]
    entry_h: NDArray[np.float64]

    @property
    def n_units(self) -> int:
        """Number of lives."""
        return int(self.exit_h.size)

    @property
    def n_failures(self) -> int:
        """Number of lives that ended in a failure."""
        return int(np.count_nonzero(self.failed))

    @property
    def exposure_h(self) -> float:
        """Observed unit-hours, ``sum(exit_h - entry_h)``."""
        return float(np.sum(self.exit_h - self.entry_h))

    @property
    def truncated(self) -> bool:
        """Whether any life entered observation after age 0."""
        return bool(np.any(self.entry_h > 0))

    def take(self, index: NDArray[np.intp]) -> Lifetimes:
        """Return the lives at ``index`` (used for bootstrap resamples)."""
        return Lifetimes(self.exit_h[index], self.failed[index], self.entry_h[index])


def _float_array(values: ArrayLike, name: str) -> NDArray[np.float64]:
    try:
        array = np.asarray(values, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        msg = (
            f"{name} must be numeric hours; got values that do not convert to float ({exc}). "
            "Fill or drop nulls before fitting."
        )
        raise ValueError(msg) from exc
    if array.ndim != 1:
        msg = f"{name} must be one-dimensional (one value per life); got shape {array.shape}."
        raise ValueError(msg)
    return array


def check_lifetimes(
    durations_h: ArrayLike, failed: ArrayLike, entry_h: ArrayLike | None = None
) -> Lifetimes:
    """Validate component lives and return them as arrays.

    Parameters
    ----------
    durations_h
        Age in hours at failure or censoring (``exit_h``), one value per life; must be > 0.
    failed
        ``True`` where the life ended in a failure, ``False`` where it was right-censored.
        Booleans or 0/1.
    entry_h
        Age in hours when observation began (left truncation); ``None`` means every life was
        observed from new (age 0).

    Returns
    -------
    Lifetimes
        ``exit_h``, ``failed`` and ``entry_h`` as numpy arrays.

    Raises
    ------
    ValueError
        On empty input, lengths that differ, NaN or infinite values, negative times, an exit age
        of 0, an exit earlier than the entry, or ``failed`` values other than 0/1. The message
        says how to fix the data.
    """
    exit_h = _float_array(durations_h, "durations_h")
    failed_raw = _float_array(failed, "failed")
    entry = np.zeros_like(exit_h) if entry_h is None else _float_array(entry_h, "entry_h")
    if exit_h.size == 0:
        msg = "No lives to fit: durations_h is empty. Check the class / cohort filter upstream."
        raise ValueError(msg)
    if not exit_h.size == failed_raw.size == entry.size:
        msg = (
            f"Lengths differ: durations_h has {exit_h.size} values, failed {failed_raw.size}, "
            f"entry_h {entry.size}. Pass one value per life in each (same row order)."
        )
        raise ValueError(msg)
    for name, array in (("durations_h", exit_h), ("failed", failed_raw), ("entry_h", entry)):
        n_bad = int(np.count_nonzero(~np.isfinite(array)))
        if n_bad:
            msg = (
                f"{name} has {n_bad} NaN or infinite value(s). Lives still running at the window "
                "end are censored at the window end (failed=False), not left open; drop or fill "
                "missing rows before fitting."
            )
            raise ValueError(msg)
    if not np.all((failed_raw == 0) | (failed_raw == 1)):
        msg = "failed must be boolean (or 0/1): True for a failure, False for a censored life."
        raise ValueError(msg)
    n_negative = int(np.count_nonzero((exit_h < 0) | (entry < 0)))
    if n_negative:
        msg = (
            f"{n_negative} life/lives have a negative entry or exit age. Ages are hours since the "
            "unit's installation; check the clock or the install timestamp."
        )
        raise ValueError(msg)
    n_zero = int(np.count_nonzero(exit_h == 0))
    if n_zero:
        msg = (
            f"{n_zero} life/lives end at age 0 h. A unit dead on arrival has no lifetime to fit: "
            "count it separately, or give it a small positive age (e.g. 0.01 h)."
        )
        raise ValueError(msg)
    n_backwards = int(np.count_nonzero(exit_h < entry))
    if n_backwards:
        msg = (
            f"{n_backwards} life/lives exit before they enter (exit_h < entry_h). Both are ages of "
            "the unit: entry_h = age at the window start, exit_h = age at failure or censoring."
        )
        raise ValueError(msg)
    return Lifetimes(exit_h, failed_raw.astype(bool), entry)


def check_alpha(alpha: float) -> float:
    """``alpha`` as a float when it lies in (0, 1); shared with :mod:`models.gof`."""
    if not 0.0 < alpha < 1.0:
        msg = f"alpha must lie in (0, 1), e.g. 0.05 for 95 % intervals; got {alpha!r}."
        raise ValueError(msg)
    return float(alpha)


def check_family(family: str) -> str:
    """``family`` when it is one of :data:`FAMILIES`; shared with :mod:`models.gof`."""
    if family not in FAMILIES:
        msg = f"Unknown family {family!r}; choose one of {', '.join(FAMILIES)}."
        raise ValueError(msg)
    return family


# --------------------------------------------------------------------------------------------
# Exact exponential bounds
# --------------------------------------------------------------------------------------------
def exponential_mtbf(
    n_failures: int, exposure_h: float, *, alpha: float = 0.05
) -> tuple[float, float, float]:
    """Exponential MTBF with exact time-terminated chi-square bounds.

    Parameters
    ----------
    n_failures
        Number of failures ``r`` observed in the exposure.
    exposure_h
        Total unit-hours observed ``T`` (with left truncation: ``sum(exit_h - entry_h)``).
    alpha
        One minus the confidence level.

    Returns
    -------
    tuple of float
        ``(mtbf_h, lo_h, hi_h)``: the MLE ``T / r`` and the two-sided ``1 - alpha`` bounds
        ``2T / chi2(1 - alpha/2; 2r + 2)`` and ``2T / chi2(alpha/2; 2r)``. With ``r = 0`` the
        point estimate is NaN (there is none), ``lo_h`` is the exact one-sided
        ``1 - alpha`` lower bound ``2T / chi2(1 - alpha; 2)`` and ``hi_h`` is ``inf``.

    Raises
    ------
    ValueError
        On a negative or non-integer count, a non-positive exposure or ``alpha`` outside (0, 1).

    Notes
    -----
    The bounds are the classical ones for a time-terminated test (MIL-HDBK-338B, 8.3.2.5): the
    ``2r + 2`` degrees of freedom of the lower bound account for the failure that might have
    happened just after the window closed.

    Examples
    --------
    >>> mtbf, lo, hi = exponential_mtbf(0, 30_000.0)   # lower bound only: about 10,014 h
    """
    alpha = check_alpha(alpha)
    if n_failures < 0 or int(n_failures) != n_failures:
        msg = f"n_failures must be a non-negative integer; got {n_failures!r}."
        raise ValueError(msg)
    if not (np.isfinite(exposure_h) and exposure_h > 0):
        msg = f"exposure_h must be positive and finite (unit-hours observed); got {exposure_h!r}."
        raise ValueError(msg)
    r = int(n_failures)
    total = float(exposure_h)
    if r == 0:
        return math.nan, 2.0 * total / float(stats.chi2.ppf(1.0 - alpha, 2)), math.inf
    lo = 2.0 * total / float(stats.chi2.ppf(1.0 - alpha / 2.0, 2 * r + 2))
    hi = 2.0 * total / float(stats.chi2.ppf(alpha / 2.0, 2 * r))
    return total / r, lo, hi


def _exponential_log_likelihood(n_failures: int, exposure_h: float) -> float:
    if n_failures == 0:
        return math.nan
    return n_failures * math.log(n_failures / exposure_h) - n_failures


# --------------------------------------------------------------------------------------------
# Summaries from fitted parameters (lifelines names)
# --------------------------------------------------------------------------------------------
def _mean_life_h(family: str, params: dict[str, float]) -> float:
    """Mean of the fitted lifetime distribution (the MTBF of a unit replaced on failure)."""
    with np.errstate(over="ignore"):
        if family == "exponential":
            return params["lambda_"]
        if family == "weibull":
            rho = params["rho_"]
            return float(np.exp(np.log(params["lambda_"]) + special.gammaln(1.0 + 1.0 / rho)))
        if family == "lognormal":
            return float(np.exp(params["mu_"] + 0.5 * params["sigma_"] ** 2))
        beta = params["beta_"]
        if beta <= 1.0:
            return math.inf
        x = math.pi / beta
        return params["alpha_"] * x / math.sin(x)


def _log_mean_gradient(family: str, params: dict[str, float]) -> NDArray[np.float64]:
    """Gradient of log(mean life) with respect to the lifelines parameters, in their order."""
    if family == "exponential":
        return np.array([1.0 / params["lambda_"]])
    if family == "weibull":
        rho = params["rho_"]
        return np.array(
            [1.0 / params["lambda_"], -float(special.digamma(1.0 + 1.0 / rho)) / rho**2]
        )
    if family == "lognormal":
        return np.array([1.0, params["sigma_"]])
    beta = params["beta_"]
    x = math.pi / beta
    return np.array([1.0 / params["alpha_"], (1.0 / x - 1.0 / math.tan(x)) * (-math.pi / beta**2)])


def _b10_h(family: str, params: dict[str, float]) -> float:
    """Age by which 10 % of units have failed under the fitted distribution."""
    q = 1.0 - _B10_SURVIVAL
    if family == "exponential":
        return -params["lambda_"] * math.log(_B10_SURVIVAL)
    if family == "weibull":
        return params["lambda_"] * (-math.log(_B10_SURVIVAL)) ** (1.0 / params["rho_"])
    if family == "lognormal":
        with np.errstate(over="ignore"):
            return float(np.exp(params["mu_"] + params["sigma_"] * float(special.ndtri(q))))
    return params["alpha_"] * (q / _B10_SURVIVAL) ** (1.0 / params["beta_"])


def _delta_interval(
    family: str, params: dict[str, float], cov: NDArray[np.float64], alpha: float
) -> tuple[float, float, float]:
    """MTBF and its delta-method interval on log(MTBF) from the parameter covariance."""
    mtbf = _mean_life_h(family, params)
    if not math.isfinite(mtbf):
        return mtbf, math.nan, math.inf
    grad = _log_mean_gradient(family, params)
    var = float(grad @ cov @ grad)
    if not (math.isfinite(var) and var >= 0):
        return mtbf, math.nan, math.nan
    half = float(special.ndtri(1.0 - alpha / 2.0)) * math.sqrt(var)
    with np.errstate(over="ignore"):
        spread = float(np.exp(half))
    return mtbf, mtbf / spread, mtbf * spread


def _rates(mtbf_h: float) -> tuple[float, float]:
    """Annualised failure rate (%) and FIT (failures per 1e9 h) of a steady-state renewal."""
    if not (math.isfinite(mtbf_h) and mtbf_h > 0):
        return math.nan, math.nan
    return HOURS_PER_YEAR / mtbf_h * 100.0, 1e9 / mtbf_h


# --------------------------------------------------------------------------------------------
# Fast maximum likelihood for the log-location-scale families
# --------------------------------------------------------------------------------------------
# With u = log t and z = (u - mu) / sigma, Weibull, log-normal and log-logistic lives are
# log-location-scale: log f(t) = g_f(z) - log sigma - u and log S(t) = g_s(z), where g_f, g_s
# are the log density / log survival of the standard minimum-extreme-value, normal and logistic
# distributions. Each helper returns (g, g', g'') on an array of z.
_HALF_LOG_2PI = 0.5 * math.log(2.0 * math.pi)


def _gumbel_f(z: NDArray[np.float64]) -> _Terms:
    ez = np.exp(z)
    return z - ez, 1.0 - ez, -ez


def _gumbel_s(z: NDArray[np.float64]) -> _Terms:
    ez = -np.exp(z)
    return ez, ez, ez


def _normal_f(z: NDArray[np.float64]) -> _Terms:
    return -0.5 * z * z - _HALF_LOG_2PI, -z, np.full_like(z, -1.0)


def _normal_s(z: NDArray[np.float64]) -> _Terms:
    g = _normal_s_value(z)
    mills = np.exp(-0.5 * z * z - _HALF_LOG_2PI - g)  # phi(z) / Phi(-z)
    return g, -mills, -mills * (mills - z)


def _logistic_parts(
    z: NDArray[np.float64],
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """``softplus(z) = log(1 + e^z)`` and ``expit(z)`` from a single exponential."""
    e = np.exp(-np.abs(z))
    softplus = np.maximum(z, 0.0) + np.log1p(e)
    p = np.where(z >= 0, 1.0, e) / (1.0 + e)
    return softplus, p


def _logistic_f(z: NDArray[np.float64]) -> _Terms:
    softplus, p = _logistic_parts(z)
    return z - 2.0 * softplus, 1.0 - 2.0 * p, -2.0 * p * (1.0 - p)


def _logistic_s(z: NDArray[np.float64]) -> _Terms:
    softplus, p = _logistic_parts(z)
    return -softplus, -p, -p * (1.0 - p)


def _gumbel_f_value(z: NDArray[np.float64]) -> NDArray[np.float64]:
    return z - np.exp(z)


def _gumbel_s_value(z: NDArray[np.float64]) -> NDArray[np.float64]:
    return -np.exp(z)


def _normal_f_value(z: NDArray[np.float64]) -> NDArray[np.float64]:
    return -0.5 * z * z - _HALF_LOG_2PI


def _normal_s_value(z: NDArray[np.float64]) -> NDArray[np.float64]:
    """``log Phi(-z)``: ``log(ndtr(-z))`` (2x faster) except in the far tail."""
    g = np.log(special.ndtr(-z))
    tail = z > 5.0
    if tail.any():
        g[tail] = special.log_ndtr(-z[tail])
    return g


def _logistic_f_value(z: NDArray[np.float64]) -> NDArray[np.float64]:
    return z - 2.0 * np.logaddexp(0.0, z)


def _logistic_s_value(z: NDArray[np.float64]) -> NDArray[np.float64]:
    return -np.logaddexp(0.0, z)


_STANDARD: dict[str, tuple[_TermFn, _TermFn, _ValueFn, _ValueFn]] = {
    "weibull": (_gumbel_f, _gumbel_s, _gumbel_f_value, _gumbel_s_value),
    "lognormal": (_normal_f, _normal_s, _normal_f_value, _normal_s_value),
    "loglogistic": (_logistic_f, _logistic_s, _logistic_f_value, _logistic_s_value),
}


class LogLives:
    """Log ages split by role, computed once per group and shared by every family."""

    def __init__(self, lives: Lifetimes) -> None:
        log_exit = np.log(lives.exit_h)
        self.u_failed = log_exit[lives.failed]
        self.u_censored = log_exit[~lives.failed]
        entry = lives.entry_h[lives.entry_h > 0]
        self.u_entry = np.log(entry)
        self.n_failures = int(self.u_failed.size)
        self.sum_u_failed = float(self.u_failed.sum())
        self.n_units = lives.n_units
        self.exposure_h = lives.exposure_h


class _LogLikelihood:
    """Left-truncated, right-censored log-likelihood of one family in (mu, log sigma)."""

    def __init__(self, family: str, data: LogLives) -> None:
        self.data = data
        self.f_terms, self.s_terms, self.f_value, self.s_value = _STANDARD[family]

    def value(self, theta: NDArray[np.float64]) -> float:
        mu, log_sigma = float(theta[0]), float(theta[1])
        inv_sigma = math.exp(-log_sigma)
        d = self.data
        with np.errstate(all="ignore"):
            ll = (
                float(self.f_value((d.u_failed - mu) * inv_sigma).sum())
                + float(self.s_value((d.u_censored - mu) * inv_sigma).sum())
                - float(self.s_value((d.u_entry - mu) * inv_sigma).sum())
                - d.n_failures * log_sigma
                - d.sum_u_failed
            )
        return ll if math.isfinite(ll) else -math.inf

    def derivatives(
        self, theta: NDArray[np.float64]
    ) -> tuple[float, NDArray[np.float64], NDArray[np.float64]]:
        mu, log_sigma = float(theta[0]), float(theta[1])
        inv_sigma = math.exp(-log_sigma)
        d = self.data
        ll = -d.n_failures * log_sigma - d.sum_u_failed
        a1 = b1 = a2 = b2 = c2 = 0.0
        with np.errstate(all="ignore"):
            for u, terms, sign in (
                (d.u_failed, self.f_terms, 1.0),
                (d.u_censored, self.s_terms, 1.0),
                (d.u_entry, self.s_terms, -1.0),
            ):
                if u.size == 0:
                    continue
                z = (u - mu) * inv_sigma
                g, g1, g2 = terms(z)
                # elementwise products, not BLAS dot: a threaded ddot stalls on busy machines
                g1z = g1 * z
                g2z = g2 * z
                ll += sign * float(g.sum())
                a1 += sign * float(g1.sum())
                b1 += sign * float(g1z.sum())
                a2 += sign * float(g2.sum())
                b2 += sign * float(g2z.sum())
                g2z *= z
                c2 += sign * float(g2z.sum())
        grad = np.array([-a1 * inv_sigma, -b1 - d.n_failures])
        h_mu_s = (b2 + a1) * inv_sigma
        hess = np.array([[a2 * inv_sigma**2, h_mu_s], [h_mu_s, b1 + c2]])
        if not (math.isfinite(ll) and np.all(np.isfinite(grad)) and np.all(np.isfinite(hess))):
            return -math.inf, grad, hess
        return ll, grad, hess


def _newton_maximise(
    objective: _LogLikelihood, theta0: NDArray[np.float64], *, max_iter: int = 200
) -> tuple[NDArray[np.float64], float, NDArray[np.float64], bool]:
    """Damped Newton ascent with a Levenberg-Marquardt shift where the Hessian is not negative."""
    theta = np.asarray(theta0, dtype=np.float64)
    ll, grad, hess = objective.derivatives(theta)
    if not math.isfinite(ll):
        return theta, ll, hess, False
    eye = np.eye(theta.size)
    for _ in range(max_iter):
        neg_hess = -hess
        shift = 0.0
        scale = max(1.0, float(np.max(np.abs(np.diag(neg_hess)))))
        for _attempt in range(80):
            try:
                factor = np.linalg.cholesky(neg_hess + shift * eye)
                break
            except np.linalg.LinAlgError:
                shift = max(2.0 * shift, 1e-8 * scale)
        else:
            return theta, ll, hess, False
        step = np.linalg.solve(factor.T, np.linalg.solve(factor, grad))
        largest = float(np.max(np.abs(step)))
        if largest > 2.0:  # never move more than e^2 in scale or shape in one step
            step *= 2.0 / largest
            largest = 2.0
        if largest < 1e-10 and shift == 0.0:
            return theta, ll, hess, True
        # The full step is usually accepted: evaluate it with derivatives (one pass over the
        # data serves both the test and the next step); shorter steps test the value only.
        tolerance = 1e-12 * max(1.0, abs(ll))
        candidate = theta + step
        ll_new, grad_new, hess_new = objective.derivatives(candidate)
        t = 1.0
        while not ll_new >= ll - tolerance:
            t *= 0.5
            if t < 1e-12:
                # No ascent along the Newton direction: at the optimum to machine precision?
                return theta, ll, hess, shift == 0.0 and largest < 1e-6
            candidate = theta + t * step
            ll_new = objective.value(candidate)
            if ll_new >= ll - tolerance:
                ll_new, grad_new, hess_new = objective.derivatives(candidate)
        theta, ll, grad, hess = candidate, ll_new, grad_new, hess_new
        if not math.isfinite(ll):
            return theta, ll, hess, False
        if t * largest < 1e-10 and shift == 0.0:
            return theta, ll, hess, True
    return theta, ll, hess, False


@dataclass(frozen=True)
class _ParametricFit:
    family: str
    params: dict[str, float]
    cov: NDArray[np.float64]
    log_likelihood: float
    converged: bool
    theta: NDArray[np.float64] | None = None  # (mu, log sigma) of the log-location-scale form
    cov_theta: NDArray[np.float64] | None = None

    @property
    def aic(self) -> float:
        return 2.0 * len(self.params) - 2.0 * self.log_likelihood


def _start_point(
    family: str, data: LogLives, weibull: _ParametricFit | None
) -> NDArray[np.float64]:
    """Starting (mu, log sigma): the exponential MLE, or a moment-matched Weibull fit."""
    mu_exp = math.log(data.exposure_h / max(data.n_failures, 1))
    if family == "weibull" or weibull is None or not weibull.converged:
        return np.array([mu_exp, 0.0])
    mu_w = math.log(weibull.params["lambda_"])
    sigma_w = 1.0 / weibull.params["rho_"]
    median = mu_w + sigma_w * math.log(math.log(2.0))
    # match the standard deviation of log life: Gumbel pi/sqrt(6), logistic pi/sqrt(3)
    sd = sigma_w * math.pi / math.sqrt(6.0)
    sigma = sd if family == "lognormal" else sd * math.sqrt(3.0) / math.pi
    return np.array([median, math.log(sigma)])


def fit_family_fast(
    family: str, data: LogLives, weibull: _ParametricFit | None = None
) -> _ParametricFit:
    """Maximum-likelihood fit of one log-location-scale family; params in lifelines names.

    Shared with :mod:`models.gof` (probability plots and goodness of fit).
    """
    objective = _LogLikelihood(family, data)
    theta, ll, hess, converged = _newton_maximise(objective, _start_point(family, data, weibull))
    if not converged and family != "weibull":
        # second chance from the exponential start
        theta2, ll2, hess2, converged2 = _newton_maximise(
            objective, _start_point(family, data, None)
        )
        if converged2 or ll2 > ll:
            theta, ll, hess, converged = theta2, ll2, hess2, converged2
    with np.errstate(over="ignore"):  # a run-away fit may overflow; it is flagged below
        mu, sigma, scale = float(theta[0]), float(np.exp(theta[1])), float(np.exp(theta[0]))
    information = -hess
    eigen = np.linalg.eigvalsh(information) if np.all(np.isfinite(information)) else [0.0, 0.0]
    if eigen[0] > 1e-10 * eigen[-1] > 0:
        cov_theta = np.linalg.inv(information)
    else:
        # flat or singular likelihood (e.g. two failures, both on late entries): the MLE lies
        # on the boundary and the parameters are not identifiable
        cov_theta = np.full((2, 2), np.nan)
        converged = False
    if family == "lognormal":
        params = {"mu_": mu, "sigma_": sigma}
        jac = np.diag([1.0, sigma])
    elif family == "weibull":
        params = {"lambda_": scale, "rho_": 1.0 / sigma}
        jac = np.diag([scale, -1.0 / sigma])
    else:
        params = {"alpha_": scale, "beta_": 1.0 / sigma}
        jac = np.diag([scale, -1.0 / sigma])
    with np.errstate(all="ignore"):
        cov = jac @ cov_theta @ jac.T
    return _ParametricFit(family, params, cov, ll, converged, np.asarray(theta), cov_theta)


# --------------------------------------------------------------------------------------------
# MtbfFitter
# --------------------------------------------------------------------------------------------
def _reemit(caught: list[warnings.WarningMessage], where: str, stacklevel: int = 4) -> None:
    """Re-raise warnings caught around a lifelines call: its fit diagnostics as ours.

    ``stacklevel`` counts from here to the caller of the public function.
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
    family: str, lives: Lifetimes, alpha: float, initial_point: NDArray[np.float64] | None
) -> Any:
    fitter = _LIFELINES_FITTERS[family](alpha=alpha)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        fitter.fit(
            lives.exit_h,
            lives.failed,
            entry=lives.entry_h if lives.truncated else None,
            initial_point=initial_point,
        )
    _reemit(caught, f"lifelines {type(fitter).__name__}")
    return fitter


class MtbfFitter(BaseEstimator):
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
        family = check_family(self.family)
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
        if family == "exponential":
            self._fit_exponential(lives, alpha)
        else:
            if r < _MIN_FAILURES:
                msg = (
                    f"A {family} fit needs at least {_MIN_FAILURES} failures; these lives have "
                    f"{r}. Use family='exponential' for the exact chi-square bound, or pool "
                    "classes / cohorts."
                )
                raise ValueError(msg)
            fast = fit_family_fast(family, LogLives(lives))
            start = np.array(list(fast.params.values())) if fast.converged else None
            if not fast.converged:
                warnings.warn(
                    f"The {family} likelihood of these lives has no interior maximum (flat or "
                    "singular information, typical of a few failures on late entries); the "
                    "lifelines estimate may sit on a boundary. Prefer family='exponential'.",
                    ConvergenceWarning,
                    stacklevel=2,
                )
            self.fitter_ = _lifelines_fit(family, lives, alpha, start)
            self.params_ = {
                name: float(getattr(self.fitter_, name)) for name in _PARAM_NAMES[family]
            }
            cov = np.asarray(self.fitter_.variance_matrix_, dtype=np.float64)
            self.mtbf_h_, lo, hi = _delta_interval(family, self.params_, cov, alpha)
            self.log_likelihood_ = float(self.fitter_.log_likelihood_)
            self.aic_ = float(self.fitter_.AIC_)
            self.b10_h_ = _b10_h(family, self.params_)
            if self.ci_method == "bootstrap":
                lo, hi = self._bootstrap(lives, alpha)
            self.mtbf_ci_h_ = (lo, hi)
        self.n_units_ = lives.n_units
        self.n_failures_ = r
        self.exposure_h_ = total
        self.afr_pct_, self.fit_per_1e9h_ = _rates(self.mtbf_h_)
        return self

    def _fit_exponential(self, lives: Lifetimes, alpha: float) -> None:
        r, total = lives.n_failures, lives.exposure_h
        mtbf, lo, hi = exponential_mtbf(r, total, alpha=alpha)
        if r < _MIN_FAILURES:
            warnings.warn(
                f"Only {r} failure(s) in {total:.4g} unit-hours: the exponential MTBF interval "
                f"({lo:.4g} h, {hi:.4g} h) is the result; read it as a bound.",
                FewFailuresWarning,
                stacklevel=3,
            )
        self.fitter_ = (
            _lifelines_fit("exponential", lives, alpha, np.array([mtbf])) if r > 0 else None
        )
        self.params_ = {"lambda_": mtbf}
        self.mtbf_h_ = mtbf
        if self.ci_method == "bootstrap" and r > 0:
            lo, hi = self._bootstrap(lives, alpha)
        self.mtbf_ci_h_ = (lo, hi)
        self.log_likelihood_ = _exponential_log_likelihood(r, total)
        self.aic_ = 2.0 - 2.0 * self.log_likelihood_
        self.b10_h_ = _b10_h("exponential", self.params_) if r > 0 else math.nan

    def _bootstrap(self, lives: Lifetimes, alpha: float) -> tuple[float, float]:
        rng = np.random.default_rng(self.random_state)
        n = lives.n_units
        means = np.empty(int(self.n_bootstrap))
        for b in range(means.size):
            sample = lives.take(rng.integers(0, n, n))
            r = sample.n_failures
            if self.family == "exponential":
                means[b] = sample.exposure_h / r if r > 0 else math.inf
            elif r < _MIN_FAILURES:
                means[b] = math.nan
            else:
                fit = fit_family_fast(self.family, LogLives(sample))
                means[b] = _mean_life_h(self.family, fit.params) if fit.converged else math.nan
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
        return survival_function(self.family, self.params_, np.asarray(times_h, dtype=np.float64))


# --------------------------------------------------------------------------------------------
# Class-level table
# --------------------------------------------------------------------------------------------
_RESULT_COLUMNS: dict[str, pl.DataType | type[pl.DataType]] = {
    "family": pl.String,
    "n_units": pl.Int64,
    "n_failures": pl.Int64,
    "exposure_h": pl.Float64,
    "params_json": pl.String,
    "shape": pl.Float64,
    "log_likelihood": pl.Float64,
    "aic": pl.Float64,
    "mtbf_h": pl.Float64,
    "mtbf_lo_h": pl.Float64,
    "mtbf_hi_h": pl.Float64,
    "afr_pct": pl.Float64,
    "fit_per_1e9h": pl.Float64,
    "b10_h": pl.Float64,
    "chosen": pl.Boolean,
    "method": pl.String,
    "shape_lo": pl.Float64,
    "shape_hi": pl.Float64,
    "aic_weight": pl.Float64,
    "max_age_h": pl.Float64,
    "rmst_h": pl.Float64,
    "extrapolated": pl.Boolean,
    "mtbf_sampled_h": pl.Float64,
    "mtbf_sampled_lo_h": pl.Float64,
    "mtbf_sampled_hi_h": pl.Float64,
    "mtbf_sampled_inf_share": pl.Float64,
    "unit_years": pl.Float64,
    "afr_observed_pct": pl.Float64,
    "afr_observed_lo_pct": pl.Float64,
    "afr_observed_hi_pct": pl.Float64,
    "mtbf_observed_h": pl.Float64,
    "mtbf_observed_lo_h": pl.Float64,
    "mtbf_observed_hi_h": pl.Float64,
    "headline_method": pl.String,
    "headline_mtbf_h": pl.Float64,
    "headline_mtbf_lo_h": pl.Float64,
    "headline_mtbf_hi_h": pl.Float64,
    "headline_rmst_h": pl.Float64,
    "headline_extrapolated": pl.Boolean,
}


def _json(params: dict[str, float]) -> str:
    return json.dumps({k: (v if math.isfinite(v) else None) for k, v in params.items()})


def _exponential_row(data: LogLives, alpha: float) -> dict[str, Any]:
    r, total = data.n_failures, data.exposure_h
    mtbf, lo, hi = exponential_mtbf(r, total, alpha=alpha)
    ll = _exponential_log_likelihood(r, total)
    afr, fit = _rates(mtbf)
    return {
        "family": "exponential",
        "params_json": _json({"lambda_": mtbf}),
        "shape": 1.0,
        "log_likelihood": ll,
        "aic": 2.0 - 2.0 * ll,
        "mtbf_h": mtbf,
        "mtbf_lo_h": lo,
        "mtbf_hi_h": hi,
        "afr_pct": afr,
        "fit_per_1e9h": fit,
        "b10_h": _b10_h("exponential", {"lambda_": mtbf}) if r > 0 else math.nan,
        "method": "chi_square",
        "shape_lo": math.nan,
        "shape_hi": math.nan,
        "_params": {"lambda_": mtbf},
        "mtbf_sampled_h": mtbf,
        "mtbf_sampled_lo_h": lo,
        "mtbf_sampled_hi_h": hi,
        "mtbf_sampled_inf_share": 0.0,
    }


def _parametric_row(fit: _ParametricFit, alpha: float) -> dict[str, Any]:
    family = fit.family
    if not fit.converged:
        nan = math.nan
        return {
            "family": family,
            "params_json": _json(dict.fromkeys(_PARAM_NAMES[family], nan)),
            "shape": nan,
            "log_likelihood": nan,
            "aic": nan,
            "mtbf_h": nan,
            "mtbf_lo_h": nan,
            "mtbf_hi_h": nan,
            "afr_pct": nan,
            "fit_per_1e9h": nan,
            "b10_h": nan,
            "method": "mle_delta",
            "shape_lo": nan,
            "shape_hi": nan,
            "_params": None,
            "mtbf_sampled_h": nan,
            "mtbf_sampled_lo_h": nan,
            "mtbf_sampled_hi_h": nan,
            "mtbf_sampled_inf_share": nan,
        }
    mtbf, lo, hi = _delta_interval(family, fit.params, fit.cov, alpha)
    shape = fit.params[_SHAPE_PARAM[family]]
    # delta method on log shape (the shape is the second lifelines parameter of every family)
    sd_log_shape = math.sqrt(fit.cov[1, 1]) / shape if fit.cov[1, 1] >= 0 else math.nan
    half = float(special.ndtri(1.0 - alpha / 2.0)) * sd_log_shape
    afr, fit_rate = _rates(mtbf)
    return {
        "family": family,
        "params_json": _json(fit.params),
        "shape": fit.params[_SHAPE_PARAM[family]],
        "log_likelihood": fit.log_likelihood,
        "aic": fit.aic,
        "mtbf_h": mtbf,
        "mtbf_lo_h": lo,
        "mtbf_hi_h": hi,
        "afr_pct": afr,
        "fit_per_1e9h": fit_rate,
        "b10_h": _b10_h(family, fit.params),
        "method": "mle_delta",
        "shape_lo": shape * math.exp(-half),
        "shape_hi": shape * math.exp(half),
        "_params": fit.params,
        **sampled_mean(family, fit.theta, fit.cov_theta, alpha=alpha),
    }


def _weibayes_row(
    part: pl.DataFrame, shape: tuple[float, str], data: LogLives, alpha: float
) -> dict[str, Any]:
    """The Weibayes row of a group with 1 to 5 failures: a Weibull at a known shape, LR bounds."""
    beta, _ = shape
    fit = weibayes(
        part.get_column("exit_h").to_numpy(),
        part.get_column("failed").to_numpy(),
        part.get_column("entry_h").to_numpy(),
        beta,
        alpha=alpha,
    )
    params = {"lambda_": fit.scale_h, "rho_": beta}
    afr, fit_rate = _rates(fit.mtbf_h)
    return {
        "family": "weibull",
        "params_json": _json(params),
        "shape": beta,
        "log_likelihood": fit.log_likelihood,
        "aic": 2.0 - 2.0 * fit.log_likelihood,
        "mtbf_h": fit.mtbf_h,
        "mtbf_lo_h": fit.mtbf_lo_h,
        "mtbf_hi_h": fit.mtbf_hi_h,
        "afr_pct": afr,
        "fit_per_1e9h": fit_rate,
        "b10_h": _b10_h("weibull", params) if data.n_failures else math.nan,
        "method": "weibayes_lr",
        "shape_lo": math.nan,
        "shape_hi": math.nan,
        "_params": params,
        "mtbf_sampled_h": fit.mtbf_h,
        "mtbf_sampled_lo_h": fit.mtbf_lo_h,
        "mtbf_sampled_hi_h": fit.mtbf_hi_h,
        "mtbf_sampled_inf_share": 0.0,
    }


class _WeibayesShapes:
    """The known shape of a Weibayes group: given, else the class's fleet-wide Weibull, else 1.

    ``given`` is one shape for every group or a mapping from the first ``by`` value (the
    component class) to its shape. Without one, a group split by more columns than the class
    takes the Weibull MLE of its whole class (pooled over the other columns) when that class has
    more than ``WEIBAYES_MAX_FAILURES`` failures and the fit converges; otherwise the shape is 1
    (Weibayes is then the exponential with likelihood-ratio bounds).
    """

    def __init__(
        self, frame: pl.DataFrame, by: list[str], given: float | Mapping[str, float] | None
    ) -> None:
        self.frame, self.by, self.given = frame, by, given
        self.pooled: dict[Any, tuple[float, str]] = {}
        self.used: dict[str, str] = {}

    def weibayes_shape(self, key: tuple[Any, ...]) -> tuple[float, str]:
        shape, source = self._shape(key)
        self.used[str(dict(zip(self.by, key, strict=True)))] = f"{shape:.3g} ({source})"
        return shape, source

    def _shape(self, key: tuple[Any, ...]) -> tuple[float, str]:
        if isinstance(self.given, (int, float)):
            return float(self.given), "given"
        if self.given is not None and key and key[0] in self.given:
            return float(self.given[key[0]]), "given"
        if len(self.by) < 2:
            return 1.0, "assumed (no fleet-wide fit)"
        if key[0] not in self.pooled:
            part = self.frame.filter(pl.col(self.by[0]) == key[0])
            data = LogLives(
                Lifetimes(
                    part.get_column("exit_h").to_numpy(),
                    part.get_column("failed").to_numpy(),
                    part.get_column("entry_h").to_numpy(),
                )
            )
            found = (1.0, "assumed (no fleet-wide fit)")
            if data.n_failures > WEIBAYES_MAX_FAILURES:
                fit = fit_family_fast("weibull", data)
                if fit.converged:
                    found = (fit.params["rho_"], f"fleet-wide {self.by[0]} fit")
            self.pooled[key[0]] = found
        return self.pooled[key[0]]


def _lives_frame(lives: pl.DataFrame, by: Sequence[str]) -> pl.DataFrame:
    required = [*by, "entry_h", "exit_h", "failed"]
    missing = [c for c in required if c not in lives.columns]
    if missing:
        msg = (
            f"lives is missing column(s) {missing}; expected one row per unit life with entry_h, "
            "exit_h, failed (entry_h = 0 for lives observed from new) and the `by` columns."
        )
        raise ValueError(msg)
    frame = lives.select(
        *by,
        pl.col("entry_h").cast(pl.Float64),
        pl.col("exit_h").cast(pl.Float64),
        pl.col("failed"),
    )
    if frame.schema["failed"] != pl.Boolean:
        if not frame.schema["failed"].is_integer():
            msg = f"failed must be Boolean (or 0/1 integers); got {frame.schema['failed']}."
            raise ValueError(msg)
        bad = frame.select((~pl.col("failed").is_in([0, 1])).sum()).item()
        if bad:
            msg = f"failed has {bad} value(s) other than 0/1; use True for a failure."
            raise ValueError(msg)
        frame = frame.with_columns(pl.col("failed").cast(pl.Boolean))
    checks = frame.select(
        pl.any_horizontal(pl.col("entry_h", "exit_h", "failed").is_null()).sum().alias("null"),
        (~pl.col("entry_h").is_finite() | ~pl.col("exit_h").is_finite()).sum().alias("nan"),
        ((pl.col("entry_h") < 0) | (pl.col("exit_h") < 0)).sum().alias("negative"),
        (pl.col("exit_h") == 0).sum().alias("zero"),
        (pl.col("exit_h") < pl.col("entry_h")).sum().alias("backwards"),
    ).row(0, named=True)
    hints = {
        "null": "null entry_h/exit_h/failed: censor open lives at the window end, drop unknowns",
        "nan": "NaN or infinite ages: fix the upstream durations",
        "negative": "negative ages: ages are hours since the unit's install; check the clock",
        "zero": "exit_h = 0: count dead-on-arrival units separately or give a small positive age",
        "backwards": "exit_h < entry_h: both are the unit's ages (entry at the window start)",
    }
    for key, hint in hints.items():
        if checks[key]:
            msg = f"{checks[key]} row(s) with {hint}."
            raise ValueError(msg)
    return frame


def fit_lives(
    lives: pl.DataFrame,
    *,
    by: Sequence[str] = ("component_class",),
    families: Sequence[str] = FAMILIES,
    alpha: float = 0.05,
    weibayes_shape: float | Mapping[str, float] | None = None,
) -> pl.DataFrame:
    """Fit every family to the lives of every group and mark the AIC choice.

    Parameters
    ----------
    lives
        One row per unit life with the ``by`` columns, ``entry_h`` (age at the start of
        observation; left truncation), ``exit_h`` (age at failure or censoring) and ``failed``.
        Other columns are ignored (and not copied).
    by
        Grouping columns, e.g. ``("component_class",)`` or ``("component_class", "batch")``.
    families
        Families to fit, a subset of :data:`FAMILIES`.
    alpha
        One minus the confidence level of the MTBF bounds.

    Returns
    -------
    polars.DataFrame
        One row per group x family, groups in order of first appearance:

        - the ``by`` columns, ``family``;
        - ``n_units``, ``n_failures``, ``exposure_h`` (unit-hours, ``sum(exit_h - entry_h)``);
        - ``params_json``: the fitted parameters as JSON under lifelines' names;
        - ``shape``: Weibull ``rho_``, log-normal ``sigma_``, log-logistic ``beta_``,
          exponential 1.0;
        - ``log_likelihood``, ``aic`` (as lifelines computes them, so comparable across families);
        - ``mtbf_h``, ``mtbf_lo_h``, ``mtbf_hi_h``: mean life and its bounds (exponential: exact
          chi-square; others: delta method on log MTBF);
        - ``afr_pct`` (``8766 / mtbf_h * 100``, steady-state renewal rate), ``fit_per_1e9h``
          (``1e9 / mtbf_h``), ``b10_h`` (age by which 10 % fail);
        - ``chosen``: the lowest-AIC family of the group.

    Raises
    ------
    ValueError
        On missing columns, unknown families or invalid lives (nulls, NaN, negative ages, exit
        before entry).

    Warns
    -----
    FewFailuresWarning
        Once, naming the groups with fewer than 2 failures. Such a group gets a single
        exponential row (its chi-square bound; with 0 failures ``mtbf_h`` is NaN and
        ``mtbf_lo_h`` the one-sided lower bound), ``chosen=True``.
    ConvergenceWarning
        When a family's fit does not converge; that row holds NaN and is never chosen.

    Notes
    -----
    The exponential row is closed form from the sufficient statistics ``(r, T)``; the other
    families maximise the exact left-truncated, right-censored likelihood
    ``sum_failed log h(t) - sum (H(exit) - H(entry))`` with Newton steps on (log scale,
    log shape) using analytic derivatives, and their covariance is the inverse observed
    information, mapped to lifelines' parameters. Log ages are computed once per group and
    shared by the families. The MLEs match lifelines' fitters (which minimise the same
    likelihood) and an independent ``scipy.optimize`` fit; see ``tests/models``.

    Examples
    --------
    >>> table = fit_lives(lives, by=("component_class",))
    >>> table.filter(pl.col("chosen")).select("component_class", "family", "mtbf_h")
    """
    alpha = check_alpha(alpha)
    by = list(by)
    wanted = [check_family(f) for f in dict.fromkeys(families)]
    if not wanted:
        msg = "families is empty; pass at least one of " + ", ".join(FAMILIES) + "."
        raise ValueError(msg)
    frame = _lives_frame(lives, by)
    schema = {c: lives.schema[c] for c in by} | _RESULT_COLUMNS
    if frame.height == 0:
        return pl.DataFrame(schema=schema)
    parts = frame.partition_by(by, as_dict=True, maintain_order=True) if by else {(): frame}

    columns: dict[str, list[Any]] = {name: [] for name in schema}
    few: list[tuple[Any, ...]] = []
    weibayes_groups: list[tuple[Any, ...]] = []
    not_converged: list[str] = []
    shapes = _WeibayesShapes(frame, by, weibayes_shape)
    for key, part in parts.items():
        data = LogLives(
            Lifetimes(
                part.get_column("exit_h").to_numpy(),
                part.get_column("failed").to_numpy(),
                part.get_column("entry_h").to_numpy(),
            )
        )
        if not data.exposure_h > 0:
            msg = (
                f"Group {dict(zip(by, key, strict=True))} has no time at risk (every exit_h "
                "equals its entry_h); drop it or check its ages."
            )
            raise ValueError(msg)
        rows: list[dict[str, Any]] = []
        r = data.n_failures
        if r < _MIN_FAILURES:
            few.append(key)
        elif r <= WEIBAYES_MAX_FAILURES:
            weibayes_groups.append(key)
        if r == 0:
            rows.append(_exponential_row(data, alpha) | {"chosen": True})
        else:
            weibull: _ParametricFit | None = None
            for family in wanted:
                if family == "exponential":
                    rows.append(_exponential_row(data, alpha))
                    continue
                if r <= WEIBAYES_MAX_FAILURES and family == "weibull":
                    shape = shapes.weibayes_shape(key)
                    rows.append(_weibayes_row(part, shape, data, alpha))
                    continue
                if r < _MIN_FAILURES:
                    continue
                fit = fit_family_fast(family, data, weibull)
                if family == "weibull":
                    weibull = fit
                if not fit.converged:
                    not_converged.append(f"{family} for {dict(zip(by, key, strict=True))}")
                rows.append(_parametric_row(fit, alpha))
            if r <= WEIBAYES_MAX_FAILURES:
                if not any(row["method"] == "weibayes_lr" for row in rows):
                    shape = shapes.weibayes_shape(key)
                    rows.append(_weibayes_row(part, shape, data, alpha))
                for row in rows:
                    row["chosen"] = row["method"] == "weibayes_lr"
            else:
                aics = np.array([row["aic"] for row in rows], dtype=np.float64)
                best = int(np.nanargmin(aics)) if np.any(np.isfinite(aics)) else -1
                for i, row in enumerate(rows):
                    row["chosen"] = i == best
        summarise_group(
            rows,
            n_failures=r,
            exposure_h=data.exposure_h,
            max_age_h=float(part.get_column("exit_h").max()),  # type: ignore[arg-type]
            alpha=alpha,
        )
        for row in rows:
            for c, value in zip(by, key, strict=True):
                columns[c].append(value)
            row |= {
                "n_units": data.n_units,
                "n_failures": data.n_failures,
                "exposure_h": data.exposure_h,
            }
            for name in _RESULT_COLUMNS:
                columns[name].append(row[name])
    if few:
        shown = ", ".join(str(dict(zip(by, k, strict=True))) for k in few[:10])
        more = f" and {len(few) - 10} more" if len(few) > 10 else ""
        warnings.warn(
            f"{len(few)} group(s) have fewer than {_MIN_FAILURES} failures ({shown}{more}): no "
            "family is fitted by maximum likelihood; with none the exponential chi-square bound "
            "is reported, with one a Weibayes row (known shape, likelihood-ratio bounds); read "
            "them as bounds.",
            FewFailuresWarning,
            stacklevel=2,
        )
    if weibayes_groups:
        shown = ", ".join(str(dict(zip(by, k, strict=True))) for k in weibayes_groups[:10])
        more = f" and {len(weibayes_groups) - 10} more" if len(weibayes_groups) > 10 else ""
        warnings.warn(
            f"{len(weibayes_groups)} group(s) have {_MIN_FAILURES} to {WEIBAYES_MAX_FAILURES} "
            f"failures ({shown}{more}): their chosen row is Weibayes (a Weibull at a known shape "
            "with likelihood-ratio bounds); the other families' fits are shown, not chosen. "
            "Shapes: " + "; ".join(f"{k}: {v}" for k, v in list(shapes.used.items())[:10]) + ".",
            FewFailuresWarning,
            stacklevel=2,
        )
    if not_converged:
        warnings.warn(
            "Fit did not converge (row left NaN, never chosen): " + "; ".join(not_converged),
            ConvergenceWarning,
            stacklevel=2,
        )
    return pl.DataFrame(columns, schema=schema)


# --------------------------------------------------------------------------------------------
# Non-parametric estimates
# --------------------------------------------------------------------------------------------
def _nonparametric(
    fitter: Any, durations_h: ArrayLike, failed: ArrayLike, entry_h: ArrayLike | None
) -> tuple[Any, Lifetimes]:
    lives = check_lifetimes(durations_h, failed, entry_h)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        fitter.fit(lives.exit_h, lives.failed, entry=lives.entry_h if lives.truncated else None)
    _reemit(caught, f"lifelines {type(fitter).__name__}")
    return fitter, lives


def _at_risk(fitter: Any, timeline: NDArray[np.float64]) -> NDArray[np.int64]:
    table = fitter.event_table
    return table["at_risk"].reindex(timeline, method="ffill").fillna(0).to_numpy(dtype=np.int64)


def kaplan_meier(
    durations_h: ArrayLike,
    failed: ArrayLike,
    *,
    entry_h: ArrayLike | None = None,
    alpha: float = 0.05,
) -> pl.DataFrame:
    """Kaplan-Meier survival curve of component lives, with left truncation.

    Parameters
    ----------
    durations_h
        Age in hours at failure or censoring.
    failed
        ``True`` for a failure, ``False`` for a censored life.
    entry_h
        Age in hours at the start of observation (``None``: all observed from new). A unit
        joins the risk set only at its entry age.
    alpha
        One minus the confidence level of the pointwise band.

    Returns
    -------
    polars.DataFrame
        ``timeline_h`` (age, h), ``survival``, ``lo``, ``hi`` (lifelines' exponential Greenwood
        band), ``at_risk`` (units at risk just before each age).

    Notes
    -----
    With left truncation and few units at risk at young ages the curve can drop steeply
    early on; read it from the age where ``at_risk`` is large.
    """
    alpha = check_alpha(alpha)
    kmf, _ = _nonparametric(KaplanMeierFitter(alpha=alpha), durations_h, failed, entry_h)
    timeline = kmf.timeline.astype(np.float64)
    band = kmf.confidence_interval_survival_function_.to_numpy()
    return pl.DataFrame(
        {
            "timeline_h": timeline,
            "survival": kmf.survival_function_.iloc[:, 0].to_numpy(),
            "lo": band[:, 0],
            "hi": band[:, 1],
            "at_risk": _at_risk(kmf, timeline),
        }
    )


def nelson_aalen(
    durations_h: ArrayLike,
    failed: ArrayLike,
    *,
    entry_h: ArrayLike | None = None,
    alpha: float = 0.05,
) -> pl.DataFrame:
    """Nelson-Aalen cumulative hazard of component lives, with left truncation.

    Parameters
    ----------
    durations_h
        Age in hours at failure or censoring.
    failed
        ``True`` for a failure, ``False`` for a censored life.
    entry_h
        Age in hours at the start of observation (``None``: all observed from new).
    alpha
        One minus the confidence level of the pointwise band.

    Returns
    -------
    polars.DataFrame
        ``timeline_h`` (age, h), ``cumulative_hazard``, ``lo``, ``hi``, ``at_risk``.
    """
    alpha = check_alpha(alpha)
    naf, _ = _nonparametric(NelsonAalenFitter(alpha=alpha), durations_h, failed, entry_h)
    timeline = naf.timeline.astype(np.float64)
    band = naf.confidence_interval_cumulative_hazard_.to_numpy()
    return pl.DataFrame(
        {
            "timeline_h": timeline,
            "cumulative_hazard": naf.cumulative_hazard_.iloc[:, 0].to_numpy(),
            "lo": band[:, 0],
            "hi": band[:, 1],
            "at_risk": _at_risk(naf, timeline),
        }
    )


# --------------------------------------------------------------------------------------------
# Cox proportional hazards
# --------------------------------------------------------------------------------------------
def _nice_resolution(span_h: float, bins: int) -> float:
    """Smallest 1, 2 or 5 x 10^k hours that cuts ``span_h`` into at most ``bins`` steps."""
    raw = max(span_h / bins, 1e-9)
    exponent = math.floor(math.log10(raw))
    for mantissa in (1.0, 2.0, 5.0, 10.0):
        value = mantissa * 10.0**exponent
        if value >= raw * (1 - 1e-12):
            return value
    return 10.0 ** (exponent + 1)


def _design(
    frame: pl.DataFrame, covariates: Sequence[str]
) -> tuple[dict[str, NDArray[np.float64]], list[tuple[str, str | None]]]:
    """Numeric design columns and, per column, (label, reference level or None)."""
    design: dict[str, NDArray[np.float64]] = {}
    labels: list[tuple[str, str | None]] = []
    for name in covariates:
        column = frame.get_column(name)
        if column.null_count():
            msg = f"Covariate {name!r} has {column.null_count()} null(s); fill or drop them first."
            raise ValueError(msg)
        dtype = column.dtype
        if dtype.is_numeric():
            design[f"x{len(design)}"] = column.cast(pl.Float64).to_numpy()
            labels.append((name, None))
            continue
        if isinstance(dtype, pl.Enum):
            present = set(column.unique().cast(pl.String).to_list())
            levels = [c for c in dtype.categories.to_list() if c in present]
            values = column.cast(pl.String)
        else:
            values = column.cast(pl.String)
            levels = sorted(values.unique().to_list())
        if len(levels) < 2:
            msg = f"Covariate {name!r} has a single level {levels}; drop it from covariates."
            raise ValueError(msg)
        for level in levels[1:]:
            design[f"x{len(design)}"] = (values == level).cast(pl.Float64).to_numpy()
            labels.append((f"{name}={level}", f"{name}={levels[0]}"))
    return design, labels


def cox_ph(
    lives: pl.DataFrame,
    covariates: list[str],
    *,
    alpha: float = 0.05,
    time_resolution_h: float | None = None,
) -> pl.DataFrame:
    """Hazard ratios of cohort covariates from a Cox proportional-hazards fit.

    Parameters
    ----------
    lives
        One row per unit life: ``entry_h``, ``exit_h``, ``failed`` and the covariate columns.
    covariates
        Columns to model. Numeric columns enter as they are (hazard ratio per unit). String,
        categorical, enum and boolean columns are one-hot encoded; the first level is the
        reference (the first category of an ``Enum``, else the first in sorted order).
    alpha
        One minus the confidence level of the hazard-ratio bounds.
    time_resolution_h
        Round ages to this grid (entry down, exit up, so every life keeps a positive length;
        events in the same step become ties, handled by Efron's method). ``None``: automatic.
        When any life is left-truncated and there are more than 5,000 lives, the grid is the
        smallest 1/2/5 x 10^k hours giving at most 200 steps over the oldest exit age, because
        lifelines' ``CoxPHFitter(entry_col=...)`` costs rows x distinct event times per Newton
        step (over 10 minutes for 100k lives with continuous ages, about a second on a grid).
        Otherwise ages are used as given.

    Returns
    -------
    polars.DataFrame
        One row per design column: ``covariate`` (``name`` or ``name=level``), ``reference``
        (``name=first level``, null for numeric), ``hazard_ratio``, ``hr_lo``, ``hr_hi``,
        ``p_value`` (Wald test of ratio 1) and ``time_resolution_h`` (the grid used, null
        when ages were used as given).

    Raises
    ------
    ValueError
        On missing columns, invalid lives, a life with ``exit_h <= entry_h``, null covariates
        or a categorical covariate with a single level.

    Warns
    -----
    ConvergenceWarning
        When lifelines reports a convergence or variance problem (e.g. a near-constant column).
    """
    alpha = check_alpha(alpha)
    covariates = list(covariates)
    if not covariates:
        msg = "covariates is empty; name at least one column such as 'batch'."
        raise ValueError(msg)
    needed = ["entry_h", "exit_h", "failed", *covariates]
    missing = [c for c in needed if c not in lives.columns]
    if missing:
        msg = f"lives is missing column(s) {missing}."
        raise ValueError(msg)
    frame = lives.select(needed)
    checked = check_lifetimes(
        frame.get_column("exit_h").to_numpy(),
        frame.get_column("failed").to_numpy(),
        frame.get_column("entry_h").to_numpy(),
    )
    exit_h, entry = checked.exit_h, checked.entry_h
    n_flat = int(np.count_nonzero(exit_h <= entry))
    if n_flat:
        msg = (
            f"{n_flat} life/lives have exit_h <= entry_h (no time at risk); Cox needs a positive "
            "length: drop them or check their ages."
        )
        raise ValueError(msg)
    resolution = time_resolution_h
    if resolution is None and checked.truncated and checked.n_units > _COX_AUTO_ROWS:
        resolution = _nice_resolution(float(exit_h.max()), _COX_AUTO_BINS)
    if resolution is not None:
        if not resolution > 0:
            msg = f"time_resolution_h must be positive hours; got {resolution!r}."
            raise ValueError(msg)
        exit_h = np.ceil(exit_h / resolution) * resolution
        entry = np.floor(entry / resolution) * resolution
    design, labels = _design(frame, covariates)
    data = pd.DataFrame({"exit_h": exit_h, "failed": checked.failed, **design})
    truncated = bool(np.any(entry > 0))
    if truncated:
        data["entry_h"] = entry
    cph = CoxPHFitter(alpha=alpha)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        cph.fit(
            data,
            duration_col="exit_h",
            event_col="failed",
            entry_col="entry_h" if truncated else None,
        )
    _reemit(caught, "lifelines CoxPHFitter", stacklevel=3)
    summary = cph.summary.loc[list(design)]
    coef = summary["coef"].to_numpy()
    se = summary["se(coef)"].to_numpy()
    z = float(special.ndtri(1.0 - alpha / 2.0))
    with np.errstate(over="ignore"):  # complete separation: the ratio is unbounded (inf)
        ratios = np.exp(coef), np.exp(coef - z * se), np.exp(coef + z * se)
    return pl.DataFrame(
        {
            "covariate": [label for label, _ in labels],
            "reference": [ref for _, ref in labels],
            "hazard_ratio": ratios[0],
            "hr_lo": ratios[1],
            "hr_hi": ratios[2],
            "p_value": summary["p"].to_numpy(),
            "time_resolution_h": [resolution] * len(labels),
        },
        schema={
            "covariate": pl.String,
            "reference": pl.String,
            "hazard_ratio": pl.Float64,
            "hr_lo": pl.Float64,
            "hr_hi": pl.Float64,
            "p_value": pl.Float64,
            "time_resolution_h": pl.Float64,
        },
    )
