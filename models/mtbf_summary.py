"""The figures an auditor reads beside a lifetime fit: observed rates, model-averaged MTBF, the
extrapolation check and few-failure (Weibayes) bounds.

:func:`models.fit_lives` fits each family by maximum likelihood; this module turns a group's fits
into the headline numbers:

- **Observed rates** (:func:`observed_rates`): failures over unit-years of exposure, with the exact
  (Garwood) Poisson interval of the rate and the chi-square interval of the MTBF. No model.
- **Model-averaged MTBF** (:func:`model_average`): the families' sampling distributions of
  log(MTBF) mixed with Akaike weights; the bounds are the model-averaged tail-area (MATA-Wald)
  interval of Turek & Fletcher (2012), the point is the mixture's median. A family with an
  infinite mean (log-logistic with shape <= 1) puts its weight at +inf.
- **Extrapolation** (:func:`restricted_mean`): the share of a family's mean that lies beyond the
  oldest age observed.
- **Weibayes** (:func:`weibayes`): with 1 to 5 failures the Weibull shape is taken as known (the
  class's fleet-wide fit, or given) and the scale has closed-form MLE and likelihood-ratio bounds.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
from scipy import integrate, optimize, special, stats

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

    from numpy.typing import NDArray

__all__ = [
    "EXTRAPOLATED_SHARE",
    "WEIBAYES_MAX_FAILURES",
    "ModelAverage",
    "Weibayes",
    "aic_weights",
    "model_average",
    "observed_rates",
    "restricted_mean",
    "summarise_group",
    "survival",
    "weibayes",
]

HOURS_PER_YEAR = 8766.0
EXTRAPOLATED_SHARE = 0.5
"""A mean is flagged ``extrapolated`` when more than this share of it lies beyond the oldest age
observed (``1 - restricted_mean / mean``)."""
WEIBAYES_MAX_FAILURES = 5
"""Groups with 1 to this many failures get a Weibayes headline instead of a model average."""


# --------------------------------------------------------------------------------------------
# Observed rates
# --------------------------------------------------------------------------------------------
def observed_rates(n_failures: int, exposure_h: float, *, alpha: float = 0.05) -> dict[str, float]:
    """Failures per unit-year and exposure per failure, with exact intervals; no model.

    Parameters
    ----------
    n_failures
        Failures ``r`` in the exposure.
    exposure_h
        Unit-hours at risk ``T`` (``sum(exit_h - entry_h)``).
    alpha
        One minus the confidence level.

    Returns
    -------
    dict
        ``unit_years`` (``T / 8766``); ``afr_observed_pct`` = ``100 r / unit_years`` with the exact
        Poisson (Garwood) bounds ``afr_observed_lo_pct`` = ``100 chi2(alpha/2; 2r) / (2 years)``
        (0 when ``r = 0``) and ``afr_observed_hi_pct`` = ``100 chi2(1 - alpha/2; 2r + 2) /
        (2 years)``; ``mtbf_observed_h`` = ``T / r`` (NaN when ``r = 0``) with the chi-square bounds
        ``2T / chi2(1 - alpha/2; 2r + 2)`` and ``2T / chi2(alpha/2; 2r)`` (the reciprocals of the
        AFR bounds). With ``r = 0`` the upper AFR bound and the lower MTBF bound are the one-sided
        ``1 - alpha`` ones, ``chi2(1 - alpha; 2)``, as :func:`models.exponential_mtbf` gives.
    """
    r = int(n_failures)
    years = float(exposure_h) / HOURS_PER_YEAR
    if r == 0:
        upper = float(stats.chi2.ppf(1.0 - alpha, 2)) / 2.0
        lower = 0.0
    else:
        upper = float(stats.chi2.ppf(1.0 - alpha / 2.0, 2 * r + 2)) / 2.0
        lower = float(stats.chi2.ppf(alpha / 2.0, 2 * r)) / 2.0
    with np.errstate(divide="ignore"):
        return {
            "unit_years": years,
            "afr_observed_pct": 100.0 * r / years,
            "afr_observed_lo_pct": 100.0 * lower / years,
            "afr_observed_hi_pct": 100.0 * upper / years,
            "mtbf_observed_h": float(exposure_h) / r if r else math.nan,
            "mtbf_observed_lo_h": float(exposure_h) / upper,
            "mtbf_observed_hi_h": float(exposure_h) / lower if lower > 0 else math.inf,
        }


# --------------------------------------------------------------------------------------------
# Survival functions and restricted means
# --------------------------------------------------------------------------------------------
def survival(
    family: str, params: Mapping[str, float], t: NDArray[np.float64]
) -> NDArray[np.float64]:
    """Survival function of a family at ages ``t`` (lifelines parameter names)."""
    t = np.asarray(t, dtype=np.float64)
    with np.errstate(divide="ignore", over="ignore"):
        if family == "exponential":
            return np.exp(-t / params["lambda_"])
        if family == "weibull":
            return np.exp(-((t / params["lambda_"]) ** params["rho_"]))
        if family == "lognormal":
            return special.ndtr(-(np.log(t) - params["mu_"]) / params["sigma_"])
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


# --------------------------------------------------------------------------------------------
# Model averaging
# --------------------------------------------------------------------------------------------
def aic_weights(aics: Sequence[float]) -> NDArray[np.float64]:
    """Akaike weights ``exp(-dAIC/2) / sum``; NaN or infinite AICs get weight 0."""
    a = np.asarray(aics, dtype=np.float64)
    ok = np.isfinite(a)
    w = np.zeros_like(a)
    if ok.any():
        w[ok] = np.exp(-0.5 * (a[ok] - a[ok].min()))
        w /= w.sum()
    return w


@dataclass(frozen=True)
class ModelAverage:
    """A model-averaged MTBF: the mixture median and its MATA-Wald bounds, hours."""

    mtbf_h: float
    lo_h: float
    hi_h: float
    weights: tuple[float, ...]


def model_average(
    mtbf_h: Sequence[float],
    lo_h: Sequence[float],
    hi_h: Sequence[float],
    aics: Sequence[float],
    *,
    alpha: float = 0.05,
) -> ModelAverage:
    """Model-averaged MTBF over families: AIC weights, MATA-Wald interval on log(MTBF).

    Each family ``i`` with a finite MTBF and finite bounds contributes the normal sampling
    distribution of ``log MTBF`` its own interval implies: centre ``log m_i``, standard deviation
    ``(log hi_i - log lo_i) / (2 z)`` (``z = Phi^-1(1 - alpha/2)``). A family whose mean is
    infinite (a log-logistic with shape <= 1, ``m_i = inf``) contributes a point mass at ``+inf``.
    With Akaike weights ``w_i``, the bounds solve ``sum_i w_i Phi((log L - log m_i)/s_i) =
    alpha/2`` and ``= 1 - alpha/2`` (the model-averaged tail-area Wald interval, Turek & Fletcher,
    *Comput. Stat. Data Anal.* 56 (2012) 2809); the point is the mixture's median (the same
    equation at 1/2). The upper bound is ``inf`` when more than ``alpha/2`` of the weight is at
    ``+inf``. A family with a NaN AIC (not converged) or a finite mean without finite bounds gets
    weight 0, and the weights are renormalised over the rest.

    Returns
    -------
    ModelAverage
        ``mtbf_h``, ``lo_h``, ``hi_h`` and the weights used (aligned with the inputs).
    """
    m = np.asarray(mtbf_h, dtype=np.float64)
    lo = np.asarray(lo_h, dtype=np.float64)
    hi = np.asarray(hi_h, dtype=np.float64)
    infinite = np.isposinf(m)
    finite = np.isfinite(m) & (m > 0) & np.isfinite(lo) & (lo > 0) & np.isfinite(hi) & (hi > lo)
    aic = np.where(finite | infinite, np.asarray(aics, dtype=np.float64), np.nan)
    w = aic_weights(aic)
    if not w.any():
        return ModelAverage(math.nan, math.nan, math.nan, tuple(w.tolist()))
    z = float(special.ndtri(1.0 - alpha / 2.0))
    centre = np.log(m[finite])
    spread = (np.log(hi[finite]) - np.log(lo[finite])) / (2.0 * z)
    wf = w[finite]
    mass_inf = float(w[infinite].sum())

    def quantile(p: float) -> float:
        if p >= 1.0 - mass_inf:
            return math.inf
        if np.all(spread == 0):  # point masses only: a weighted quantile
            order = np.argsort(centre)
            cum = np.cumsum(wf[order])
            return float(math.exp(centre[order][np.searchsorted(cum, p)]))

        def cdf(x: float) -> float:
            return float((wf * special.ndtr((x - centre) / spread)).sum()) - p

        a = float((centre - 12.0 * spread).min())
        b = float((centre + 12.0 * spread).max())
        return float(math.exp(optimize.brentq(cdf, a, b, xtol=1e-12, rtol=1e-14)))

    return ModelAverage(
        quantile(0.5), quantile(alpha / 2.0), quantile(1.0 - alpha / 2.0), tuple(w.tolist())
    )


# --------------------------------------------------------------------------------------------
# Weibayes
# --------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Weibayes:
    """A Weibayes fit: the scale and mean with likelihood-ratio bounds, at a known shape."""

    shape: float
    scale_h: float
    scale_lo_h: float
    scale_hi_h: float
    mtbf_h: float
    mtbf_lo_h: float
    mtbf_hi_h: float
    log_likelihood: float


def weibayes(
    exit_h: NDArray[np.float64],
    failed: NDArray[np.bool_],
    entry_h: NDArray[np.float64],
    shape: float,
    *,
    alpha: float = 0.05,
) -> Weibayes:
    """Weibull scale at a known shape ``beta``, with likelihood-ratio bounds (1+ failures).

    With the shape fixed, ``x = t^beta`` turns the Weibull into an exponential of mean
    ``theta = eta^beta``, so the left-truncated, right-censored log-likelihood is
    ``l(theta) = -r log theta - T_beta / theta + const`` with ``T_beta = sum(exit^beta -
    entry^beta)`` and ``r`` failures. The MLE is ``theta = T_beta / r`` (Abernethy's Weibayes,
    *The New Weibull Handbook* ch. 6), and the likelihood-ratio bounds solve
    ``2 (l(theta_hat) - l(theta)) = chi2(1 - alpha; 1)`` on either side. Scale and mean
    (``eta Gamma(1 + 1/beta)``) bounds follow monotonically.

    Raises
    ------
    ValueError
        With no failure (use the chi-square bound) or a shape that is not positive.
    """
    r = int(np.count_nonzero(failed))
    if r == 0:
        msg = "Weibayes needs at least one failure; with none, use the chi-square bound."
        raise ValueError(msg)
    if not (math.isfinite(shape) and shape > 0):
        msg = f"Weibayes needs a positive Weibull shape, got {shape!r}."
        raise ValueError(msg)
    beta = float(shape)
    t_beta = float(np.sum(np.asarray(exit_h) ** beta - np.asarray(entry_h) ** beta))
    theta = t_beta / r
    # in v = log(theta / theta_hat): 2 (l_hat - l) = 2 r (v + e^-v - 1), so the bounds are the
    # roots of v + e^-v - 1 = c / (2 r); beta-free and exact.
    c = float(stats.chi2.ppf(1.0 - alpha, 1)) / (2.0 * r)

    def excess(v: float) -> float:
        return v + math.exp(-v) - 1.0 - c

    v_hi = optimize.brentq(excess, 0.0, 50.0, xtol=1e-14)
    v_lo = optimize.brentq(excess, -50.0, 0.0, xtol=1e-14)
    theta_lo, theta_hi = theta * math.exp(v_lo), theta * math.exp(v_hi)
    gamma = math.exp(special.gammaln(1.0 + 1.0 / beta))
    scale = theta ** (1.0 / beta)
    lo, hi = theta_lo ** (1.0 / beta), theta_hi ** (1.0 / beta)
    u_failed = np.log(np.asarray(exit_h)[np.asarray(failed)])
    ll = (
        r * math.log(beta)
        + (beta - 1.0) * float(u_failed.sum())
        - r * math.log(theta)
        - t_beta / theta
    )
    return Weibayes(beta, scale, lo, hi, scale * gamma, lo * gamma, hi * gamma, ll)


# --------------------------------------------------------------------------------------------
# One group's headline
# --------------------------------------------------------------------------------------------
def _mean_of(row: dict[str, Any]) -> float:
    return float(row["mtbf_h"]) if row["mtbf_h"] is not None else math.nan


def summarise_group(
    rows: list[dict[str, Any]],
    *,
    n_failures: int,
    exposure_h: float,
    max_age_h: float,
    alpha: float,
) -> None:
    """Add the extrapolation check, observed rates and the headline to a group's family rows.

    Every row gets ``max_age_h`` (the oldest age observed in the group), ``rmst_h`` (its family's
    mean restricted to that age), ``extrapolated`` (more than :data:`EXTRAPOLATED_SHARE` of the
    family's mean lies beyond that age) and ``aic_weight``; every row repeats the group's
    observed rates (:func:`observed_rates`) and its headline:

    - no failure: ``chi_square``, the exponential row (no point, a one-sided lower bound);
    - 1 to :data:`WEIBAYES_MAX_FAILURES` failures: ``weibayes_lr``, the chosen Weibayes row;
    - more: ``model_average``, :func:`model_average` of the families' rows; its
      ``headline_extrapolated`` compares the weighted restricted means with the weighted means
      (``1 - sum w rmst / sum w mean``; an infinite mean with weight counts as extrapolated).
    """
    observed = observed_rates(n_failures, exposure_h, alpha=alpha)
    for row in rows:
        params = row.pop("_params")
        mean = _mean_of(row)
        if params is None or not math.isfinite(max_age_h) or math.isnan(mean):
            rmst, beyond = math.nan, None
        else:
            rmst = restricted_mean(row["family"], params, max_age_h)
            beyond = bool(math.isinf(mean) or 1.0 - rmst / mean > EXTRAPOLATED_SHARE)
        row |= {"max_age_h": max_age_h, "rmst_h": rmst, "extrapolated": beyond} | observed
    weights = aic_weights([r["aic"] for r in rows])
    if n_failures == 0:
        head = next(r for r in rows if r["chosen"])
        headline = {
            "headline_method": "chi_square",
            "headline_mtbf_h": head["mtbf_h"],
            "headline_mtbf_lo_h": head["mtbf_lo_h"],
            "headline_mtbf_hi_h": head["mtbf_hi_h"],
            "headline_rmst_h": math.nan,
            "headline_extrapolated": None,
        }
    elif n_failures <= WEIBAYES_MAX_FAILURES:
        head = next(r for r in rows if r["chosen"])
        headline = {
            "headline_method": head["method"],
            "headline_mtbf_h": head["mtbf_h"],
            "headline_mtbf_lo_h": head["mtbf_lo_h"],
            "headline_mtbf_hi_h": head["mtbf_hi_h"],
            "headline_rmst_h": head["rmst_h"],
            "headline_extrapolated": head["extrapolated"],
        }
    else:
        averaged = model_average(
            [_mean_of(r) for r in rows],
            [r["mtbf_lo_h"] for r in rows],
            [r["mtbf_hi_h"] for r in rows],
            [r["aic"] for r in rows],
            alpha=alpha,
        )
        weights = np.asarray(averaged.weights)
        used = weights > 0
        means = np.array([_mean_of(r) for r in rows])[used]
        rmsts = np.array([r["rmst_h"] for r in rows])[used]
        w = weights[used]
        mean_avg = float((w * means).sum()) if used.any() else math.nan
        rmst_avg = float((w * rmsts).sum()) if used.any() else math.nan
        headline = {
            "headline_method": "model_average",
            "headline_mtbf_h": averaged.mtbf_h,
            "headline_mtbf_lo_h": averaged.lo_h,
            "headline_mtbf_hi_h": averaged.hi_h,
            "headline_rmst_h": rmst_avg,
            "headline_extrapolated": (
                bool(math.isinf(mean_avg) or 1.0 - rmst_avg / mean_avg > EXTRAPOLATED_SHARE)
                if used.any()
                else None
            ),
        }
    for row, weight in zip(rows, weights, strict=True):
        row |= {"aic_weight": float(weight)} | headline
