"""Closed forms of the lifetime families by name, and the exact exponential bounds.

The formulas themselves live in one class per family (:mod:`models.families`: survival, mean,
B10, restricted mean, log-location-scale form); the functions here take a family *name* and
ask its :class:`~models.families.Family`, for callers that hold names (tables, JSON, the
report). Here too: the argument checks, the exact exponential MTBF bounds, the delta-method
interval of the mean and the annualised rates. The fitters (:mod:`models.mle`,
:mod:`models.fitter`, :mod:`models.survival`) and the checks (:mod:`models.gof`,
:mod:`models.mtbf_summary`) read them from here.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import numpy as np
from scipy import special, stats

from models.families import FAMILY_REGISTRY, ShapeFamily, family_of

if TYPE_CHECKING:
    from collections.abc import Mapping

    from numpy.typing import NDArray

__all__ = [
    "FAMILIES",
    "HOURS_PER_YEAR",
    "exponential_mtbf",
    "restricted_mean",
    "survival_function",
]

FAMILIES: tuple[str, ...] = tuple(FAMILY_REGISTRY)
"""Names of the registered families (:data:`models.families.FAMILY_REGISTRY`), in the order
:func:`~models.survival.fit_lives` reports them."""

HOURS_PER_YEAR = 8766.0
"""Hours in a mean Julian year (365.25 days), the base of the annualised failure rate."""

MIN_FAILURES = 2
"""Fewest failures a two-parameter family is fitted to by maximum likelihood."""


# --------------------------------------------------------------------------------------------
# Argument checks
# --------------------------------------------------------------------------------------------
def check_alpha(alpha: float) -> float:
    """``alpha`` as a float when it lies in (0, 1).

    Parameters
    ----------
    alpha
        One minus the confidence level.

    Returns
    -------
    float
        ``alpha``.

    Raises
    ------
    ValueError
        When ``alpha`` is outside (0, 1).
    """
    if not 0.0 < alpha < 1.0:
        msg = f"alpha must lie in (0, 1), e.g. 0.05 for 95 % intervals; got {alpha!r}."
        raise ValueError(msg)
    return float(alpha)


def check_family(family: str) -> str:
    """``family`` when it is one of :data:`FAMILIES`.

    Parameters
    ----------
    family
        A family name.

    Returns
    -------
    str
        ``family``.

    Raises
    ------
    ValueError
        When ``family`` is not one of :data:`FAMILIES`.
    """
    family_of(family)
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


def exponential_log_likelihood(n_failures: int, exposure_h: float) -> float:
    """Maximised exponential log-likelihood ``r log(r / T) - r`` of ``r`` failures in ``T`` h.

    Parameters
    ----------
    n_failures
        Failures ``r``.
    exposure_h
        Unit-hours observed ``T``.

    Returns
    -------
    float
        The log-likelihood at the MLE; NaN with zero failures (there is no MLE).
    """
    if n_failures == 0:
        return math.nan
    return n_failures * math.log(n_failures / exposure_h) - n_failures


# --------------------------------------------------------------------------------------------
# Summaries from fitted parameters (lifelines names)
# --------------------------------------------------------------------------------------------
def mean_life_h(family: str, params: dict[str, float]) -> float:
    """Mean of the fitted lifetime distribution (the MTBF of a unit replaced on failure).

    Parameters
    ----------
    family
        One of :data:`FAMILIES`.
    params
        Fitted parameters under lifelines' names (:attr:`~models.families.Family.param_names`).

    Returns
    -------
    float
        Mean life in hours; ``inf`` for a log-logistic shape ``beta_ <= 1``.
    """
    return family_of(family).mean_life_h(params)


def log_mean_gradient(family: str, params: dict[str, float]) -> NDArray[np.float64]:
    """Gradient of log(mean life) with respect to the lifelines parameters, in their order.

    Parameters
    ----------
    family
        One of :data:`FAMILIES`.
    params
        Fitted parameters under lifelines' names (:attr:`~models.families.Family.param_names`).

    Returns
    -------
    numpy.ndarray
        One derivative per parameter, in lifelines' order.
    """
    return family_of(family).log_mean_gradient(params)


def b10_h(family: str, params: dict[str, float]) -> float:
    """Age by which 10 % of units have failed under the fitted distribution (B10 life).

    Parameters
    ----------
    family
        One of :data:`FAMILIES`.
    params
        Fitted parameters under lifelines' names (:attr:`~models.families.Family.param_names`).

    Returns
    -------
    float
        The B10 life in hours.
    """
    return family_of(family).b10_h(params)


def delta_interval(
    family: str, params: dict[str, float], cov: NDArray[np.float64], alpha: float
) -> tuple[float, float, float]:
    """MTBF and its delta-method interval on log(MTBF) from the parameter covariance.

    Parameters
    ----------
    family
        One of :data:`FAMILIES`.
    params
        Fitted parameters under lifelines' names (:attr:`~models.families.Family.param_names`).
    cov
        Covariance of ``params`` (lifelines order).
    alpha
        One minus the confidence level.

    Returns
    -------
    tuple of float
        ``(mtbf_h, lo_h, hi_h)``; NaN bounds when the variance is not usable, ``(inf, nan, inf)``
        when the mean does not exist.
    """
    mtbf = mean_life_h(family, params)
    if not math.isfinite(mtbf):
        return mtbf, math.nan, math.inf
    grad = log_mean_gradient(family, params)
    var = float(grad @ cov @ grad)
    if not (math.isfinite(var) and var >= 0):
        return mtbf, math.nan, math.nan
    half = float(special.ndtri(1.0 - alpha / 2.0)) * math.sqrt(var)
    with np.errstate(over="ignore"):
        spread = float(np.exp(half))
    return mtbf, mtbf / spread, mtbf * spread


def annual_rates(mtbf_h: float) -> tuple[float, float]:
    """Annualised failure rate (%) and FIT (failures per 1e9 h) of a steady-state renewal.

    Parameters
    ----------
    mtbf_h
        Mean life in hours.

    Returns
    -------
    tuple of float
        ``(HOURS_PER_YEAR / mtbf_h * 100, 1e9 / mtbf_h)``; NaN for a non-positive or
        non-finite MTBF.
    """
    if not (math.isfinite(mtbf_h) and mtbf_h > 0):
        return math.nan, math.nan
    return HOURS_PER_YEAR / mtbf_h * 100.0, 1e9 / mtbf_h


# --------------------------------------------------------------------------------------------
# Survival functions and restricted means
# --------------------------------------------------------------------------------------------
def survival_function(
    family: str, params: Mapping[str, float], t: NDArray[np.float64]
) -> NDArray[np.float64]:
    """Survival function of a family at ages ``t`` (lifelines parameter names).

    The family's :meth:`~models.families.Family.survival_function`;
    ``MtbfFitter.survival_function_at`` and the report's fitted curves use it.

    Parameters
    ----------
    family
        One of :data:`FAMILIES`.
    params
        Fitted parameters under lifelines' names (:attr:`~models.families.Family.param_names`).
    t
        Ages in hours.

    Returns
    -------
    numpy.ndarray
        ``S(t)``, same shape as ``t``.
    """
    return family_of(family).survival_function(params, t)


def restricted_mean(family: str, params: Mapping[str, float], tau_h: float) -> float:
    """Mean life restricted to ``tau_h``: ``E[min(T, tau)] = integral_0^tau S(t) dt``, hours.

    Closed forms for the exponential (``lambda (1 - e^{-tau/lambda})``), Weibull
    (``lambda Gamma(1 + 1/rho) P(1/rho, (tau/lambda)^rho)``, with ``P`` the regularised lower
    incomplete gamma) and log-normal (``e^{mu + sigma^2/2} Phi((ln tau - mu - sigma^2)/sigma) +
    tau (1 - Phi((ln tau - mu)/sigma))``); adaptive quadrature on a log-age scale for the
    log-logistic.
    """
    return family_of(family).restricted_mean(params, tau_h)


def log_mean_of_theta(
    family: str, mu: NDArray[np.float64], sigma: NDArray[np.float64]
) -> NDArray[np.float64]:
    """log(mean life) of a log-location-scale family at (mu, sigma); +inf where it has none.

    Parameters
    ----------
    family
        A family with a shape (:class:`~models.families.ShapeFamily`).
    mu, sigma
        Location and scale of ``ln T`` (arrays of equal shape).

    Returns
    -------
    numpy.ndarray
        log(mean life in hours) per element.
    """
    shaped = family_of(family)
    if not isinstance(shaped, ShapeFamily):
        msg = f"{family} has no shape, so no (mu, sigma) law of its mean; pass a family with one."
        raise ValueError(msg)
    return shaped.log_mean_of_theta(mu, sigma)


# --------------------------------------------------------------------------------------------
# Families as log-location-scale laws: log S(t) = g((ln t - mu) / sigma)
# --------------------------------------------------------------------------------------------
def location_scale(family: str, params: Mapping[str, float]) -> tuple[float, float]:
    """``(mu, sigma)`` of ``ln T`` from lifelines' parameters.

    Parameters
    ----------
    family
        One of :data:`FAMILIES`.
    params
        Fitted parameters under lifelines' names (:attr:`~models.families.Family.param_names`).

    Returns
    -------
    tuple of float
        Location and scale of log life (the exponential has ``sigma = 1``).
    """
    return family_of(family).location_scale(params)


def location_scale_cov(
    family: str, params: Mapping[str, float], cov: NDArray[np.float64]
) -> NDArray[np.float64]:
    """Covariance of ``(mu, sigma)`` from the covariance in lifelines' parameters.

    Parameters
    ----------
    family
        One of :data:`FAMILIES`.
    params
        Fitted parameters under lifelines' names (:attr:`~models.families.Family.param_names`).
    cov
        Covariance of ``params`` (lifelines order).

    Returns
    -------
    numpy.ndarray
        The 2 x 2 covariance of :func:`location_scale` (delta method).
    """
    return family_of(family).location_scale_cov(params, cov)


def log_sf_cdf_standard(
    family: str, z: NDArray[np.float64]
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """``(log S, log F)`` of the standard law of ``(ln T - mu) / sigma``, each exact in its tail.

    Smallest extreme value (exponential, Weibull): ``S = exp(-e^z)``; normal (log-normal);
    logistic (log-logistic): ``S = 1 / (1 + e^z)``.

    Parameters
    ----------
    family
        One of :data:`FAMILIES`.
    z
        Standardised log ages.

    Returns
    -------
    tuple of numpy.ndarray
        ``(log S(z), log F(z))``.
    """
    return family_of(family).log_sf_cdf_standard(z)


def log_sf_cdf(
    family: str, params: Mapping[str, float], age_h: NDArray[np.float64]
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """``(log S(t), log F(t))`` of a fitted family (``(0, -inf)`` at ``t = 0``).

    Parameters
    ----------
    family
        One of :data:`FAMILIES`.
    params
        Fitted parameters under lifelines' names (:attr:`~models.families.Family.param_names`).
    age_h
        Ages in hours.

    Returns
    -------
    tuple of numpy.ndarray
        Log survival and log distribution function, each exact in its tail.
    """
    mu, sigma = location_scale(family, params)
    age = np.asarray(age_h, dtype=np.float64)
    log_s = np.zeros_like(age)
    log_f = np.full_like(age, -np.inf)
    positive = age > 0
    with np.errstate(all="ignore"):
        z = (np.log(age[positive]) - mu) / sigma
    log_s[positive], log_f[positive] = log_sf_cdf_standard(family, z)
    return log_s, log_f


def log_survival(
    family: str, params: Mapping[str, float], age_h: NDArray[np.float64]
) -> NDArray[np.float64]:
    """``log S(t)`` of a fitted family (``0`` at ``t = 0``).

    Parameters
    ----------
    family
        One of :data:`FAMILIES`.
    params
        Fitted parameters under lifelines' names (:attr:`~models.families.Family.param_names`).
    age_h
        Ages in hours.

    Returns
    -------
    numpy.ndarray
        Log survival at each age.
    """
    return log_sf_cdf(family, params, age_h)[0]
