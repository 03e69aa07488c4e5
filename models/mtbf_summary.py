"""The figures an auditor reads beside a lifetime fit.

Observed rates and the headline, model-averaged lifetime mean, the extrapolation check and
few-failure (Weibayes) bounds.

:func:`models.fit_lives` fits each family by maximum likelihood; this module turns a group's fits
into the numbers a reader sees:

- **Observed rates** (:func:`observed_rates`): failures over unit-years of exposure, with the exact
  (Garwood) Poisson interval of the rate and the chi-square interval of the MTBF. No model.
- **The headline** (:func:`observed_headline`): the rate over the ages observed, as an MTBF
  (exposure / failures) with its exact chi-square interval; with no failure its one-sided lower
  bound. :func:`models.fit_lives` and :func:`models.failure_rates` both take it from here.
- **Model-averaged lifetime mean** (:func:`model_average`, put together per group by
  :func:`models.group_summary.summarise_group`): the families' sampling distributions of
  log(MTBF) mixed with Akaike weights; the bounds are the model-averaged tail-area (MATA-Wald)
  interval of Turek & Fletcher (2012), the point is the mixture's median. A family with an
  infinite mean (log-logistic with shape <= 1) puts its weight at +inf.
- **Extrapolation** (:func:`~models.parametric.restricted_mean`): the share of a family's mean
  that lies beyond the oldest age observed.
- **Weibayes** (:func:`weibayes`): with 1 to 5 failures the Weibull shape is taken as known (the
  class's fleet-wide fit, or given) and the scale has closed-form MLE and likelihood-ratio bounds.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
from scipy import optimize, special, stats

from models.parametric import (
    HOURS_PER_YEAR,
    log_mean_of_theta,
)

if TYPE_CHECKING:
    from collections.abc import Sequence

    from numpy.typing import ArrayLike, NDArray

__all__ = [
    "EXTRAPOLATED_SHARE",
    "HEADLINE_COLUMNS",
    "WEIBAYES_MAX_FAILURES",
    "Headline",
    "ModelAverage",
    "Weibayes",
    "aic_weights",
    "mixture_components",
    "mixture_quantile",
    "model_average",
    "observed_headline",
    "observed_rates",
    "poisson_count_bounds",
    "sampled_mean",
    "weibayes",
]

EXTRAPOLATED_SHARE = 0.5
"""A mean is flagged ``extrapolated`` when more than this share of it lies beyond the oldest age
observed (``1 - restricted_mean / mean``)."""
WEIBAYES_MAX_FAILURES = 5
"""Groups with 1 to this many failures get a Weibayes headline instead of a model average."""


# --------------------------------------------------------------------------------------------
# Observed rates
# --------------------------------------------------------------------------------------------
def poisson_count_bounds(n_failures: int, *, alpha: float = 0.05) -> tuple[float, float]:
    """Exact (Garwood) bounds on the mean of a Poisson count ``r``.

    Parameters
    ----------
    n_failures
        The count ``r``.
    alpha
        One minus the confidence level.

    Returns
    -------
    tuple of float
        ``(chi2(alpha/2; 2r) / 2, chi2(1 - alpha/2; 2r + 2) / 2)`` for ``r >= 1``; for ``r = 0``
        ``(0, chi2(1 - alpha; 2) / 2)``, the one-sided ``1 - alpha`` upper bound (``-ln alpha``).
        Divided by an exposure they bound a rate; an exposure divided by them bounds an MTBF.

    Raises
    ------
    ValueError
        On a negative or non-integer count.
    """
    if n_failures < 0 or int(n_failures) != n_failures:
        msg = f"n_failures must be a non-negative integer; got {n_failures!r}."
        raise ValueError(msg)
    r = int(n_failures)
    if r == 0:
        return 0.0, float(stats.chi2.ppf(1.0 - alpha, 2)) / 2.0
    return (
        float(stats.chi2.ppf(alpha / 2.0, 2 * r)) / 2.0,
        float(stats.chi2.ppf(1.0 - alpha / 2.0, 2 * r + 2)) / 2.0,
    )


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
        ``1 - alpha`` ones, ``chi2(1 - alpha; 2)``, as :func:`models.exponential_mtbf` gives
        (:func:`poisson_count_bounds`).
    """
    r = int(n_failures)
    years = float(exposure_h) / HOURS_PER_YEAR
    lower, upper = poisson_count_bounds(r, alpha=alpha)
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


HEADLINE_COLUMNS = (
    "headline_method",
    "headline_mtbf_h",
    "headline_mtbf_lo_h",
    "headline_mtbf_hi_h",
    "headline_extrapolated",
)
"""The headline's columns, in :func:`models.fit_lives` and :func:`models.failure_rates` alike."""


@dataclass(frozen=True, slots=True)
class Headline:
    """A class's headline MTBF and how it was reached (:func:`observed_headline`).

    ``extrapolated`` is False for the observed rate (it never rests on ages beyond those
    observed); ``rmst_h`` is NaN: a rate is not a mean that could be restricted.
    """

    method: str
    mtbf_h: float
    mtbf_lo_h: float
    mtbf_hi_h: float
    extrapolated: bool | None = False
    rmst_h: float = math.nan

    def columns(self) -> dict[str, object]:
        """Return the :data:`HEADLINE_COLUMNS` of a table row."""
        return {
            "headline_method": self.method,
            "headline_mtbf_h": self.mtbf_h,
            "headline_mtbf_lo_h": self.mtbf_lo_h,
            "headline_mtbf_hi_h": self.mtbf_hi_h,
            "headline_extrapolated": self.extrapolated,
        }


def observed_headline(n_failures: int, exposure_h: float, *, alpha: float = 0.05) -> Headline:
    """Return the headline MTBF of a class: the rate over the ages observed, exact interval.

    One definition, used by every table that shows a headline (:func:`models.fit_lives`,
    :func:`models.failure_rates`), so they cannot differ.

    Parameters
    ----------
    n_failures
        Failures ``r`` in the exposure.
    exposure_h
        Unit-hours at risk ``T``.
    alpha
        One minus the confidence level.

    Returns
    -------
    Headline
        Its :meth:`Headline.columns` are the :data:`HEADLINE_COLUMNS`:

        - ``r >= 1``: ``headline_method = "observed_rate"``, ``headline_mtbf_h = T / r`` with the
          exact chi-square bounds ``2T / chi2(1 - alpha/2; 2r + 2)`` and ``2T / chi2(alpha/2;
          2r)``: finite, and their ratio hi/lo is the exact Poisson interval's;
        - ``r = 0``: ``headline_method = "chi_square_bound"``, no point (NaN), the one-sided
          ``1 - alpha`` lower bound ``2T / chi2(1 - alpha; 2)`` and an open upper bound (inf);
        - ``headline_extrapolated`` is False: the headline rests on the ages observed only, never
          on a lifetime law beyond them (the lifetime mean's own flag is
          ``lifetime_extrapolated`` in :func:`models.fit_lives`).

    Notes
    -----
    Whatever the lifetime law and the units' ages, the failures of a fleet minus their
    compensator (the expected failures given the at-risk intervals, the sum of the cumulative
    hazard over them) is a martingale whose variance is the compensator's mean, as for a
    Poisson count; so the exact Poisson interval of ``r`` bounds the compensator, and the
    interval above covers exposure / compensator: the mean time between failures at the ages
    the fleet was watched. It is not the mean lifetime (the steady-state renewal MTBF) unless
    the hazard is flat or the ages observed are the steady state's.
    """
    observed = observed_rates(n_failures, exposure_h, alpha=alpha)
    return Headline(
        "observed_rate" if n_failures > 0 else "chi_square_bound",
        observed["mtbf_observed_h"],
        observed["mtbf_observed_lo_h"],
        observed["mtbf_observed_hi_h"],
    )


# --------------------------------------------------------------------------------------------
# Model averaging
# --------------------------------------------------------------------------------------------
def aic_weights(aics: ArrayLike) -> NDArray[np.float64]:
    """Akaike weights ``exp(-dAIC/2) / sum``; NaN or infinite AICs get weight 0."""
    a = np.asarray(aics, dtype=np.float64)
    ok = np.isfinite(a)
    w = np.zeros_like(a)
    if ok.any():
        w[ok] = np.exp(-0.5 * (a[ok] - a[ok].min()))
        w /= w.sum()
    return w


_N_DRAWS = 4_000
_DRAW_SEED = 20_261_125


def sampled_mean(
    family: str,
    theta: NDArray[np.float64] | None,
    cov_theta: NDArray[np.float64] | None,
    *,
    alpha: float = 0.05,
) -> dict[str, float]:
    """Draw the sampling distribution of a family's mean life from its parameters' normal law.

    ``theta = (mu, log sigma)`` and its covariance (the inverse observed information) are drawn
    :data:`_N_DRAWS` times (a fixed seed: the same fit gives the same figures) and each draw's
    mean life computed. Unlike the delta method, the draws keep the skew of the mean in the
    shape: a log-normal's ``exp(mu + sigma^2 / 2)`` or a Weibull's ``Gamma(1 + 1/rho)`` rise
    steeply as the shape parameter moves one way and flatten the other way, so the lower tail of
    an extrapolated mean stays near the data while the upper tail opens. Draws with no finite
    mean (a log-logistic with shape <= 1) are counted in ``mtbf_sampled_inf_share``.

    Returns
    -------
    dict
        ``mtbf_sampled_h`` (median of the finite draws), ``mtbf_sampled_lo_h`` and
        ``mtbf_sampled_hi_h`` (their ``alpha/2`` and ``1 - alpha/2`` quantiles) and
        ``mtbf_sampled_inf_share``; NaN when the covariance is not usable.
    """
    nan = {
        "mtbf_sampled_h": math.nan,
        "mtbf_sampled_lo_h": math.nan,
        "mtbf_sampled_hi_h": math.nan,
        "mtbf_sampled_inf_share": math.nan,
    }
    if theta is None or cov_theta is None or not np.all(np.isfinite(cov_theta)):
        return nan
    rng = np.random.default_rng(_DRAW_SEED)
    try:
        draws = rng.multivariate_normal(theta, cov_theta, size=_N_DRAWS, method="cholesky")
    except np.linalg.LinAlgError:
        return nan
    log_mean = log_mean_of_theta(family, draws[:, 0], np.exp(draws[:, 1]))
    finite = log_mean[np.isfinite(log_mean)]
    share = 1.0 - finite.size / _N_DRAWS
    if finite.size < 10:
        return nan | {"mtbf_sampled_inf_share": share}
    lo, mid, hi = np.quantile(finite, [alpha / 2.0, 0.5, 1.0 - alpha / 2.0])
    with np.errstate(over="ignore"):
        return {
            "mtbf_sampled_h": float(np.exp(mid)),
            "mtbf_sampled_lo_h": float(np.exp(lo)),
            "mtbf_sampled_hi_h": float(np.exp(hi)),
            "mtbf_sampled_inf_share": share,
        }


@dataclass(frozen=True)
class ModelAverage:
    """A model-averaged MTBF: the mixture median and its tail-area bounds, hours."""

    mtbf_h: float
    lo_h: float
    hi_h: float
    weights: tuple[float, ...]
    components: tuple[tuple[float, float, float, float], ...]
    """``(weight, log centre, sd below, sd above)``; an infinite centre is a point at +inf."""


def mixture_components(
    mtbf_h: Sequence[float] | NDArray[np.float64],
    lo_h: Sequence[float] | NDArray[np.float64],
    hi_h: Sequence[float] | NDArray[np.float64],
    weights: Sequence[float] | NDArray[np.float64],
    inf_share: Sequence[float] | None = None,
    *,
    alpha: float = 0.05,
) -> tuple[tuple[float, float, float, float], ...]:
    """Split log-normal components ``(weight, log centre, sd below, sd above)`` of a mixture.

    Family ``i`` with weight ``w_i`` and a share ``p_i`` of its draws at an infinite mean gives
    ``(w_i (1 - p_i), log m_i, (log m_i - log lo_i) / z, (log hi_i - log m_i) / z)`` and, when
    ``p_i > 0``, ``(w_i p_i, inf, 0, 0)``; ``z = Phi^-1(1 - alpha/2)``. A family whose mean is
    infinite (``m_i = inf``) is all at +inf. Families with weight 0, or a finite centre without
    finite bounds, are left out.
    """
    z = float(special.ndtri(1.0 - alpha / 2.0))
    shares = [0.0] * len(mtbf_h) if inf_share is None else list(inf_share)
    out: list[tuple[float, float, float, float]] = []
    for m, lo, hi, w, p in zip(mtbf_h, lo_h, hi_h, weights, shares, strict=True):
        if not w > 0:
            continue
        p = 0.0 if p is None or math.isnan(p) else float(p)
        if math.isinf(m) and m > 0:
            out.append((float(w), math.inf, 0.0, 0.0))
            continue
        if not (m > 0 and lo > 0 and math.isfinite(hi) and lo <= m <= hi and hi > lo):
            continue
        centre = math.log(m)
        out.append(
            (float(w) * (1.0 - p), centre, (centre - math.log(lo)) / z, (math.log(hi) - centre) / z)
        )
        if p > 0:
            out.append((float(w) * p, math.inf, 0.0, 0.0))
    total = sum(c[0] for c in out)
    return tuple((c[0] / total, c[1], c[2], c[3]) for c in out) if total > 0 else ()


def mixture_quantile(components: Sequence[tuple[float, float, float, float]], p: float) -> float:
    """Return the ``p`` quantile of a split log-normal mixture (``inf`` past its finite mass)."""
    finite = [c for c in components if math.isfinite(c[1])]
    mass_inf = sum(c[0] for c in components if not math.isfinite(c[1]))
    if not components or p >= 1.0 - mass_inf:
        return math.inf if components else math.nan
    w = np.array([c[0] for c in finite])
    centre = np.array([c[1] for c in finite])
    below = np.array([c[2] for c in finite])
    above = np.array([c[3] for c in finite])

    def cdf(x: float) -> float:
        d = x - centre
        with np.errstate(divide="ignore", invalid="ignore"):
            zs = np.where(d < 0, d / below, d / above)
        zs = np.where(np.isnan(zs), 0.0, zs)  # a zero spread at its own centre
        return float((w * special.ndtr(zs)).sum()) - p

    a = float((centre - 12.0 * below).min()) - 1e-9
    b = float((centre + 12.0 * above).max()) + 1e-9
    return float(math.exp(optimize.brentq(cdf, a, b, xtol=1e-12, rtol=1e-14)))


def model_average(
    mtbf_h: Sequence[float],
    lo_h: Sequence[float],
    hi_h: Sequence[float],
    aics: Sequence[float],
    *,
    inf_share: Sequence[float] | None = None,
    alpha: float = 0.05,
) -> ModelAverage:
    """Model-averaged MTBF over families: Akaike weights, tail-area interval on log(MTBF).

    Each family contributes the sampling distribution of its mean that ``(mtbf_h, lo_h, hi_h)``
    describe (its median and ``1 - alpha`` quantiles, see :func:`sampled_mean`): a split normal
    on ``log MTBF`` (:func:`mixture_components`), plus a point at ``+inf`` for the share of it
    with no finite mean. With Akaike weights ``w_i`` the bounds solve
    ``sum_i w_i F_i(L) = alpha/2`` and ``= 1 - alpha/2``: the model-averaged tail-area (MATA)
    interval of Turek & Fletcher, *Comput. Stat. Data Anal.* 56 (2012) 2809, with each
    family's own skewed interval in place of a symmetric Wald one. The point is the mixture's
    median. The upper bound is ``inf`` when more than ``alpha/2`` of the mass is at ``+inf``.
    A family with a NaN AIC (not converged) or no finite interval gets weight 0 and the weights
    are renormalised over the rest.
    """
    m = np.asarray(mtbf_h, dtype=np.float64)
    lo = np.asarray(lo_h, dtype=np.float64)
    hi = np.asarray(hi_h, dtype=np.float64)
    usable = np.isposinf(m) | (
        np.isfinite(m) & (m > 0) & np.isfinite(lo) & (lo > 0) & np.isfinite(hi) & (hi > lo)
    )
    w = aic_weights(np.where(usable, np.asarray(aics, dtype=np.float64), np.nan))
    components = mixture_components(m, lo, hi, w, inf_share, alpha=alpha)
    if not components:
        return ModelAverage(math.nan, math.nan, math.nan, tuple(w.tolist()), ())
    return ModelAverage(
        mixture_quantile(components, 0.5),
        mixture_quantile(components, alpha / 2.0),
        mixture_quantile(components, 1.0 - alpha / 2.0),
        tuple(w.tolist()),
        components,
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
