"""Fast maximum likelihood for the log-location-scale families (Weibull, log-normal, log-logistic).

:func:`fit_family_fast` maximises the left-truncated, right-censored likelihood of one family with
a damped Newton solver in numpy (analytic gradient and Hessian of the family's standard law,
:mod:`models.laws`), because lifelines' Nelder-Mead
start plus autograd takes seconds per family on 10^5 lives. :func:`~models.survival.fit_lives`,
the bootstrap of :class:`~models.fitter.MtbfFitter` and :mod:`models.gof` use it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from models.families import ShapeFamily, family_of

if TYPE_CHECKING:
    from numpy.typing import NDArray

    from models.lifetimes import LogLives

__all__: list[str] = []


class _LogLikelihood:
    """Left-truncated, right-censored log-likelihood of one family, in (mu, log sigma)."""

    def __init__(self, family: ShapeFamily, data: LogLives) -> None:
        self.data = data
        law = family.law
        self.f_terms, self.s_terms = law.density_terms, law.survival_terms
        self.f_value, self.s_value = law.log_density, law.log_survival

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
class ParametricFit:
    """One family's MLE: lifelines-named ``params``, their ``cov``, log-likelihood, status."""

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
    family: ShapeFamily, data: LogLives, reference: ParametricFit | None
) -> NDArray[np.float64]:
    """Return the starting (mu, log sigma): the exponential MLE, or matched to the reference fit.

    The family that starts the others (:attr:`~models.families.Family.starts_others`, the
    Weibull) starts from the exponential MLE; the others from the median and the standard
    deviation of log life under the reference family's converged fit, when there is one.
    """
    mu_exp = math.log(data.exposure_h / max(data.n_failures, 1))
    if family.starts_others or reference is None or not reference.converged:
        return np.array([mu_exp, 0.0])
    shaped = family_of(reference.family)
    if not isinstance(shaped, ShapeFamily):
        return np.array([mu_exp, 0.0])
    median, sd = shaped.log_life_median_sd(reference.params)
    return np.array([median, math.log(family.start_sigma(sd))])


def fit_family_fast(
    family: str, data: LogLives, weibull: ParametricFit | None = None
) -> ParametricFit:
    """Maximum-likelihood fit of one log-location-scale family; params in lifelines names.

    Shared by :func:`~models.survival.fit_lives`, :class:`~models.fitter.MtbfFitter` (start
    point and bootstrap) and :mod:`models.gof` (probability plots and goodness of fit).

    Parameters
    ----------
    family
        The name of a family with a shape (:class:`~models.families.ShapeFamily`).
    data
        The group's log ages (:class:`~models.lifetimes.LogLives`).
    weibull
        A fit of the same lives by the family that starts the others (the Weibull), used to
        start the other families near it.

    Returns
    -------
    ParametricFit
        Parameters, covariance (NaN when the information is singular), log-likelihood and
        whether the solver converged.
    """
    shaped = family_of(family)
    if not isinstance(shaped, ShapeFamily):
        msg = f"{family} has no shape to fit by Newton steps; fit it in closed form."
        raise ValueError(msg)
    objective = _LogLikelihood(shaped, data)
    theta, ll, hess, converged = _newton_maximise(objective, _start_point(shaped, data, weibull))
    if not converged and not shaped.starts_others:
        # second chance from the exponential start
        theta2, ll2, hess2, converged2 = _newton_maximise(
            objective, _start_point(shaped, data, None)
        )
        if converged2 or ll2 > ll:
            theta, ll, hess, converged = theta2, ll2, hess2, converged2
    information = -hess
    eigen = np.linalg.eigvalsh(information) if np.all(np.isfinite(information)) else [0.0, 0.0]
    if eigen[0] > 1e-10 * eigen[-1] > 0:
        cov_theta = np.asarray(np.linalg.inv(information), dtype=np.float64)
    else:
        # flat or singular likelihood (e.g. two failures, both on late entries): the MLE lies
        # on the boundary and the parameters are not identifiable
        cov_theta = np.full((2, 2), np.nan)
        converged = False
    params, jac = shaped.from_theta(theta)  # a run-away fit may overflow; flagged above
    with np.errstate(all="ignore"):
        cov = jac @ cov_theta @ jac.T
    return ParametricFit(family, params, cov, ll, converged, np.asarray(theta), cov_theta)
