"""The lifetime families: one home for their survival, mean, quantile and rate formulas.

Parametric families (lifelines parameter names):

=============  =========================  ===============================================
family         parameters                 survival function
=============  =========================  ===============================================
exponential    ``lambda_`` (mean, h)      ``exp(-t / lambda_)``
weibull        ``lambda_`` (h), ``rho_``  ``exp(-(t / lambda_) ** rho_)``
lognormal      ``mu_``, ``sigma_``        ``1 - Phi((log t - mu_) / sigma_)``
loglogistic    ``alpha_`` (h), ``beta_``  ``1 / (1 + (t / alpha_) ** beta_)``
=============  =========================  ===============================================

Everything here is a closed form (or a one-dimensional quadrature) of fitted parameters: the
survival function and its log-location-scale form, the mean life and its delta-method interval,
the B10 life, the restricted mean, the exact exponential bounds and the annualised rates. The
fitters (:mod:`models.mle`, :mod:`models.fitter`, :mod:`models.survival`) and the checks
(:mod:`models.gof`, :mod:`models.mtbf_summary`) read them from here.
"""

from __future__ import annotations

import itertools
import math
from typing import TYPE_CHECKING

import numpy as np
from scipy import integrate, special, stats

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

FAMILIES: tuple[str, ...] = ("exponential", "weibull", "lognormal", "loglogistic")
"""Parametric lifetime families, in the order :func:`~models.survival.fit_lives` reports them."""

HOURS_PER_YEAR = 8766.0
"""Hours in a mean Julian year (365.25 days), the base of the annualised failure rate."""

B10_SURVIVAL = 0.9
"""Survival probability at the B10 life (10 % of units failed)."""
MIN_FAILURES = 2
"""Fewest failures a two-parameter family is fitted to by maximum likelihood."""
PARAM_NAMES: dict[str, tuple[str, ...]] = {
    "exponential": ("lambda_",),
    "weibull": ("lambda_", "rho_"),
    "lognormal": ("mu_", "sigma_"),
    "loglogistic": ("alpha_", "beta_"),
}
"""Each family's parameters under lifelines' names, in lifelines' order."""
SHAPE_PARAM = {"weibull": "rho_", "lognormal": "sigma_", "loglogistic": "beta_"}
"""The shape parameter of each two-parameter family."""


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
        Fitted parameters under lifelines' names (:data:`PARAM_NAMES`).

    Returns
    -------
    float
        Mean life in hours; ``inf`` for a log-logistic shape ``beta_ <= 1``.
    """
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


def log_mean_gradient(family: str, params: dict[str, float]) -> NDArray[np.float64]:
    """Gradient of log(mean life) with respect to the lifelines parameters, in their order.

    Parameters
    ----------
    family
        One of :data:`FAMILIES`.
    params
        Fitted parameters under lifelines' names (:data:`PARAM_NAMES`).

    Returns
    -------
    numpy.ndarray
        One derivative per parameter of :data:`PARAM_NAMES`.
    """
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


def b10_h(family: str, params: dict[str, float]) -> float:
    """Age by which 10 % of units have failed under the fitted distribution (B10 life).

    Parameters
    ----------
    family
        One of :data:`FAMILIES`.
    params
        Fitted parameters under lifelines' names (:data:`PARAM_NAMES`).

    Returns
    -------
    float
        The B10 life in hours.
    """
    q = 1.0 - B10_SURVIVAL
    if family == "exponential":
        return -params["lambda_"] * math.log(B10_SURVIVAL)
    if family == "weibull":
        b10: float = params["lambda_"] * (-math.log(B10_SURVIVAL)) ** (1.0 / params["rho_"])
        return b10
    if family == "lognormal":
        with np.errstate(over="ignore"):
            return float(np.exp(params["mu_"] + params["sigma_"] * float(special.ndtri(q))))
    b10 = params["alpha_"] * (q / B10_SURVIVAL) ** (1.0 / params["beta_"])
    return b10


def delta_interval(
    family: str, params: dict[str, float], cov: NDArray[np.float64], alpha: float
) -> tuple[float, float, float]:
    """MTBF and its delta-method interval on log(MTBF) from the parameter covariance.

    Parameters
    ----------
    family
        One of :data:`FAMILIES`.
    params
        Fitted parameters under lifelines' names (:data:`PARAM_NAMES`).
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

    The one implementation of the table in this module's docstring;
    ``MtbfFitter.survival_function_at`` and the report's fitted curves use it.

    Parameters
    ----------
    family
        One of :data:`FAMILIES`.
    params
        Fitted parameters under lifelines' names (:data:`PARAM_NAMES`).
    t
        Ages in hours.

    Returns
    -------
    numpy.ndarray
        ``S(t)``, same shape as ``t``.
    """
    t = np.asarray(t, dtype=np.float64)
    with np.errstate(divide="ignore", over="ignore"):
        if family == "exponential":
            return np.exp(-t / params["lambda_"])
        if family == "weibull":
            return np.exp(-((t / params["lambda_"]) ** params["rho_"]))
        if family == "lognormal":
            survival: NDArray[np.float64] = special.ndtr(
                -(np.log(t) - params["mu_"]) / params["sigma_"]
            )
            return survival
        return 1.0 / (1.0 + (t / params["alpha_"]) ** params["beta_"])


def restricted_mean(family: str, params: Mapping[str, float], tau_h: float) -> float:
    """Mean life restricted to ``tau_h``: ``E[min(T, tau)] = integral_0^tau S(t) dt``, hours.

    Closed forms for the exponential (``lambda (1 - e^{-tau/lambda})``), Weibull
    (``lambda Gamma(1 + 1/rho) P(1/rho, (tau/lambda)^rho)``, with ``P`` the regularised lower
    incomplete gamma) and log-normal (``e^{mu + sigma^2/2} Phi((ln tau - mu - sigma^2)/sigma) +
    tau (1 - Phi((ln tau - mu)/sigma))``); adaptive quadrature on a log-age scale for the
    log-logistic.
    """
    tau = float(tau_h)
    if not tau > 0:
        return 0.0
    if family == "exponential":
        lam = params["lambda_"]
        return float(lam * -math.expm1(-tau / lam))
    if family == "weibull":
        lam, rho = params["lambda_"], params["rho_"]
        a = 1.0 / rho
        return float(
            lam * math.exp(special.gammaln(1.0 + a)) * special.gammainc(a, (tau / lam) ** rho)
        )
    if family == "lognormal":
        mu, sigma = params["mu_"], params["sigma_"]
        z = (math.log(tau) - mu) / sigma
        return float(
            math.exp(mu + 0.5 * sigma**2 + special.log_ndtr(z - sigma)) + tau * special.ndtr(-z)
        )
    # log-logistic: integral over u = ln t of S(e^u) e^u, split at the scale
    alpha, beta = params["alpha_"], params["beta_"]

    def integrand(u: float) -> float:
        return math.exp(u - math.log1p(math.exp(min(beta * (u - math.log(alpha)), 700.0))))

    low = math.log(tau) - 60.0
    edges = sorted({low, min(math.log(alpha), math.log(tau)), math.log(tau)})
    total = 0.0
    for a, b in itertools.pairwise(edges):
        if b > a:
            total += integrate.quad(integrand, a, b, epsabs=0.0, epsrel=1e-12, limit=200)[0]
    return total


def log_mean_of_theta(
    family: str, mu: NDArray[np.float64], sigma: NDArray[np.float64]
) -> NDArray[np.float64]:
    """log(mean life) of a log-location-scale family at (mu, sigma); +inf where it has none.

    Parameters
    ----------
    family
        ``"weibull"``, ``"lognormal"`` or ``"loglogistic"``.
    mu, sigma
        Location and scale of ``ln T`` (arrays of equal shape).

    Returns
    -------
    numpy.ndarray
        log(mean life in hours) per element.
    """
    if family == "weibull":
        log_mean: NDArray[np.float64] = mu + special.gammaln(1.0 + sigma)
        return log_mean
    if family == "lognormal":
        return mu + 0.5 * sigma**2
    x = math.pi * sigma  # log-logistic: mean alpha * x / sin(x), finite for sigma < 1
    with np.errstate(all="ignore"):
        out = mu + np.log(x / np.sin(x))
    return np.where(sigma < 1.0, out, np.inf)


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
        Fitted parameters under lifelines' names (:data:`PARAM_NAMES`).

    Returns
    -------
    tuple of float
        Location and scale of log life (the exponential has ``sigma = 1``).
    """
    if family == "exponential":
        return math.log(params["lambda_"]), 1.0
    if family == "weibull":
        return math.log(params["lambda_"]), 1.0 / params["rho_"]
    if family == "lognormal":
        return float(params["mu_"]), float(params["sigma_"])
    return math.log(params["alpha_"]), 1.0 / params["beta_"]


def location_scale_cov(
    family: str, params: Mapping[str, float], cov: NDArray[np.float64]
) -> NDArray[np.float64]:
    """Covariance of ``(mu, sigma)`` from the covariance in lifelines' parameters.

    Parameters
    ----------
    family
        One of :data:`FAMILIES`.
    params
        Fitted parameters under lifelines' names (:data:`PARAM_NAMES`).
    cov
        Covariance of ``params`` (lifelines order).

    Returns
    -------
    numpy.ndarray
        The 2 x 2 covariance of :func:`location_scale` (delta method).
    """
    if family == "exponential":  # sigma is fixed at 1
        lam = params["lambda_"]
        return np.array([[cov[0, 0] / lam**2, 0.0], [0.0, 0.0]])
    if family == "lognormal":
        return np.asarray(cov, dtype=np.float64)
    scale, shape = (
        (params["lambda_"], params["rho_"])
        if family == "weibull"
        else (params["alpha_"], params["beta_"])
    )
    jac = np.diag([1.0 / scale, -1.0 / shape**2])
    return jac @ np.asarray(cov, dtype=np.float64) @ jac.T


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
    with np.errstate(all="ignore"):
        if family in ("exponential", "weibull"):
            ez = np.exp(z)
            return -ez, np.log(-np.expm1(-ez))
        if family == "lognormal":
            return special.log_ndtr(-z), special.log_ndtr(z)
        return -np.logaddexp(0.0, z), -np.logaddexp(0.0, -z)


def log_sf_cdf(
    family: str, params: Mapping[str, float], age_h: NDArray[np.float64]
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """``(log S(t), log F(t))`` of a fitted family (``(0, -inf)`` at ``t = 0``).

    Parameters
    ----------
    family
        One of :data:`FAMILIES`.
    params
        Fitted parameters under lifelines' names (:data:`PARAM_NAMES`).
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
        Fitted parameters under lifelines' names (:data:`PARAM_NAMES`).
    age_h
        Ages in hours.

    Returns
    -------
    numpy.ndarray
        Log survival at each age.
    """
    return log_sf_cdf(family, params, age_h)[0]
