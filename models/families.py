"""The survival families, one class each, and the registry the generic code asks.

=============  =========================  ===============================================
family         parameters (lifelines)     survival function
=============  =========================  ===============================================
exponential    ``lambda_`` (mean, h)      ``exp(-t / lambda_)``
weibull        ``lambda_`` (h), ``rho_``  ``exp(-(t / lambda_) ** rho_)``
lognormal      ``mu_``, ``sigma_``        ``1 - Phi((log t - mu_) / sigma_)``
loglogistic    ``alpha_`` (h), ``beta_``  ``1 / (1 + (t / alpha_) ** beta_)``
=============  =========================  ===============================================

A :class:`Family` knows its name, its parameters under lifelines' names (and which is the
shape), its lifelines fitter, its closed forms (survival, mean and its gradient, B10, restricted
mean), its log-location-scale form (``ln T = mu + sigma z`` with ``z`` of a standard
:class:`~models.laws.Law`) and what the rest of the code decides by it: whether it is fitted in
closed form (no shape: the exponential, with exact chi-square bounds), which fit starts the
others, which is fitted by Weibayes for few failures, and the shape a projection (Weibull
renewals) keeps. Fitting (:mod:`models.survival`, :mod:`models.fitter`, :mod:`models.mle`),
the checks (:mod:`models.gof`), the model average (:mod:`models.mtbf_summary`) and the rates
(:mod:`models.rates`) ask the family, never its name. Adding a family is one new class here and
its entry in :data:`FAMILY_REGISTRY` (whose names are :data:`models.FAMILIES`).
"""

from __future__ import annotations

import itertools
import math
from abc import ABC, abstractmethod
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np
from scipy import integrate, special

from models.laws import LOGISTIC, NORMAL, SMALLEST_EXTREME_VALUE

if TYPE_CHECKING:
    from collections.abc import Mapping

    from numpy.typing import NDArray

    from models.laws import Law

__all__ = [
    "B10_SURVIVAL",
    "FAMILY_REGISTRY",
    "Exponential",
    "Family",
    "LogLogistic",
    "LogNormal",
    "ShapeFamily",
    "Weibull",
    "closed_form_family",
    "family_of",
    "renewal_family",
    "weibayes_family",
]

B10_SURVIVAL = 0.9
"""Survival probability at the B10 life (10 % of units failed)."""


class Family(ABC):
    """One lifetime family: its parameters, closed forms and log-location-scale form.

    Parameters are passed as a mapping under lifelines' names (:attr:`param_names`).
    """

    name: ClassVar[str]
    """The family's name in tables, JSON and the command line."""
    param_names: ClassVar[tuple[str, ...]]
    """Its parameters under lifelines' names, in lifelines' order."""
    shape_param: ClassVar[str | None] = None
    """The shape parameter; ``None`` for a one-parameter family fitted in closed form."""
    law: ClassVar[Law]
    """The standard law of ``(ln T - mu) / sigma``."""
    starts_others: ClassVar[bool] = False
    """Its fit starts the solver of the other families (see :func:`models.mle.fit_family_fast`)."""
    weibayes: ClassVar[bool] = False
    """A group with few failures gets this family's row from Weibayes (scale at a known shape)."""
    renewal: ClassVar[bool] = False
    """A projection simulates renewals of this family (:class:`~models.scenario.ClassRate`
    holds its mean and shape); the others are projected as exponential or by their mean."""

    @property
    def has_shape(self) -> bool:
        """Whether the family has a shape parameter (else: closed form, exact bounds)."""
        return self.shape_param is not None

    def __repr__(self) -> str:
        """Return ``Weibull()`` and the like."""
        return f"{type(self).__name__}()"

    @abstractmethod
    def lifelines_fitter(self) -> Any:
        """Return the lifelines fitter class of the family (imported on demand)."""

    @abstractmethod
    def mean_life_h(self, params: Mapping[str, float]) -> float:
        """Mean life in hours (``inf`` where the mean does not exist)."""

    @abstractmethod
    def log_mean_gradient(self, params: Mapping[str, float]) -> NDArray[np.float64]:
        """Gradient of log(mean life) in the lifelines parameters, in their order."""

    @abstractmethod
    def b10_h(self, params: Mapping[str, float]) -> float:
        """Age by which 10 % of units have failed (B10 life), hours."""

    @abstractmethod
    def _survival(self, params: Mapping[str, float], t: NDArray[np.float64]) -> NDArray[np.float64]:
        """``S(t)`` at ages ``t`` (an array; divide and overflow warnings are off)."""

    @abstractmethod
    def _restricted_mean(self, params: Mapping[str, float], tau: float) -> float:
        """``integral_0^tau S(t) dt`` for ``tau > 0``."""

    @abstractmethod
    def location_scale(self, params: Mapping[str, float]) -> tuple[float, float]:
        """``(mu, sigma)`` of ``ln T``."""

    @abstractmethod
    def location_scale_cov(
        self, params: Mapping[str, float], cov: NDArray[np.float64]
    ) -> NDArray[np.float64]:
        """Covariance of ``(mu, sigma)`` from that of the lifelines parameters (delta method)."""

    def renewal_shape(self, shape: float | None) -> float | None:
        """Weibull shape of the renewal process a projection simulates for a fit of this family.

        ``shape`` is the fit's ``shape`` column (1 where it is missing). The renewal family
        keeps it, a family with no shape (the exponential) is shape 1, and ``None`` says the
        family is projected as an exponential with the same mean (an approximation).
        """
        if self.renewal:
            return float(shape) if shape is not None else 1.0
        if not self.has_shape:
            return 1.0
        return None

    def survival_function(
        self, params: Mapping[str, float], t: NDArray[np.float64]
    ) -> NDArray[np.float64]:
        """``S(t)`` at ages ``t`` in hours, same shape as ``t``."""
        t = np.asarray(t, dtype=np.float64)
        with np.errstate(divide="ignore", over="ignore"):
            return self._survival(params, t)

    def restricted_mean(self, params: Mapping[str, float], tau_h: float) -> float:
        """Mean life restricted to ``tau_h``: ``E[min(T, tau)]``, hours (0 for ``tau <= 0``)."""
        tau = float(tau_h)
        if not tau > 0:
            return 0.0
        return self._restricted_mean(params, tau)

    def log_sf_cdf_standard(
        self, z: NDArray[np.float64]
    ) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
        """``(log S, log F)`` of the standard law at ``z``, each exact in its tail."""
        with np.errstate(all="ignore"):
            return self.law.log_sf_cdf(z)

    def paper_y(self, log_s: NDArray[np.float64]) -> NDArray[np.float64]:
        """Coordinate on this family's probability paper (``x = ln t``) of ``log S``."""
        with np.errstate(all="ignore"):
            return self.law.paper_y(log_s)


class ShapeFamily(Family):
    """A two-parameter log-location-scale family, fitted by :func:`models.mle.fit_family_fast`."""

    shape_param: ClassVar[str]

    @abstractmethod
    def from_theta(
        self, theta: NDArray[np.float64]
    ) -> tuple[dict[str, float], NDArray[np.float64]]:
        """Lifelines parameters at ``theta = (mu, log sigma)`` and their Jacobian in ``theta``."""

    @abstractmethod
    def start_sigma(self, sd_log_life: float) -> float:
        """``sigma`` whose law has the standard deviation ``sd_log_life`` of ``ln T``."""

    @abstractmethod
    def log_mean_of_theta(
        self, mu: NDArray[np.float64], sigma: NDArray[np.float64]
    ) -> NDArray[np.float64]:
        """log(mean life) at arrays of ``(mu, sigma)``; ``+inf`` where the mean does not exist."""

    def log_life_median_sd(self, params: Mapping[str, float]) -> tuple[float, float]:
        """Median and standard deviation of ``ln T`` (for the family that starts the others)."""
        msg = f"{self.name} does not start the other families' fits."
        raise NotImplementedError(msg)


class Exponential(Family):
    """Constant hazard ``1 / lambda_``: the MLE ``T / r`` and exact chi-square bounds."""

    name = "exponential"
    param_names = ("lambda_",)
    law = SMALLEST_EXTREME_VALUE

    def lifelines_fitter(self) -> Any:
        """Return lifelines' fitter of this family."""
        from lifelines import ExponentialFitter

        return ExponentialFitter

    def mean_life_h(self, params: Mapping[str, float]) -> float:
        """Mean life in hours."""
        return params["lambda_"]

    def log_mean_gradient(self, params: Mapping[str, float]) -> NDArray[np.float64]:
        """Gradient of log(mean life) in the lifelines parameters."""
        return np.array([1.0 / params["lambda_"]])

    def b10_h(self, params: Mapping[str, float]) -> float:
        """B10 life in hours."""
        return -params["lambda_"] * math.log(B10_SURVIVAL)

    def _survival(self, params: Mapping[str, float], t: NDArray[np.float64]) -> NDArray[np.float64]:
        return np.exp(-t / params["lambda_"])

    def _restricted_mean(self, params: Mapping[str, float], tau: float) -> float:
        lam = params["lambda_"]
        return float(lam * -math.expm1(-tau / lam))

    def location_scale(self, params: Mapping[str, float]) -> tuple[float, float]:
        """``(mu, sigma)`` of ``ln T``."""
        return math.log(params["lambda_"]), 1.0

    def location_scale_cov(
        self, params: Mapping[str, float], cov: NDArray[np.float64]
    ) -> NDArray[np.float64]:
        """Covariance of ``(mu, sigma)`` by the delta method."""
        lam = params["lambda_"]  # sigma is fixed at 1
        return np.array([[cov[0, 0] / lam**2, 0.0], [0.0, 0.0]])


class _ScaleShape(ShapeFamily):
    """A family with a scale in hours and a shape ``1 / sigma`` (Weibull, log-logistic)."""

    scale_param: ClassVar[str]

    def location_scale(self, params: Mapping[str, float]) -> tuple[float, float]:
        return math.log(params[self.scale_param]), 1.0 / params[self.shape_param]

    def location_scale_cov(
        self, params: Mapping[str, float], cov: NDArray[np.float64]
    ) -> NDArray[np.float64]:
        scale, shape = params[self.scale_param], params[self.shape_param]
        jac = np.diag([1.0 / scale, -1.0 / shape**2])
        return jac @ np.asarray(cov, dtype=np.float64) @ jac.T

    def from_theta(
        self, theta: NDArray[np.float64]
    ) -> tuple[dict[str, float], NDArray[np.float64]]:
        with np.errstate(over="ignore"):  # a run-away fit may overflow; the solver flags it
            sigma, scale = float(np.exp(theta[1])), float(np.exp(theta[0]))
        params = {self.scale_param: scale, self.shape_param: 1.0 / sigma}
        return params, np.diag([scale, -1.0 / sigma])


class Weibull(_ScaleShape):
    """``S(t) = exp(-(t / lambda_) ** rho_)``: starts the other fits, Weibayes', projected."""

    name = "weibull"
    param_names = ("lambda_", "rho_")
    scale_param = "lambda_"
    shape_param = "rho_"
    law = SMALLEST_EXTREME_VALUE
    starts_others = True
    weibayes = True
    renewal = True

    def lifelines_fitter(self) -> Any:
        """Return lifelines' fitter of this family."""
        from lifelines import WeibullFitter

        return WeibullFitter

    def mean_life_h(self, params: Mapping[str, float]) -> float:
        """Mean life in hours."""
        rho = params["rho_"]
        with np.errstate(over="ignore"):
            return float(np.exp(np.log(params["lambda_"]) + special.gammaln(1.0 + 1.0 / rho)))

    def log_mean_gradient(self, params: Mapping[str, float]) -> NDArray[np.float64]:
        """Gradient of log(mean life) in the lifelines parameters."""
        rho = params["rho_"]
        return np.array(
            [1.0 / params["lambda_"], -float(special.digamma(1.0 + 1.0 / rho)) / rho**2]
        )

    def b10_h(self, params: Mapping[str, float]) -> float:
        """B10 life in hours."""
        b10: float = params["lambda_"] * (-math.log(B10_SURVIVAL)) ** (1.0 / params["rho_"])
        return b10

    def _survival(self, params: Mapping[str, float], t: NDArray[np.float64]) -> NDArray[np.float64]:
        return np.exp(-((t / params["lambda_"]) ** params["rho_"]))

    def _restricted_mean(self, params: Mapping[str, float], tau: float) -> float:
        lam, rho = params["lambda_"], params["rho_"]
        a = 1.0 / rho
        return float(
            lam * math.exp(special.gammaln(1.0 + a)) * special.gammainc(a, (tau / lam) ** rho)
        )

    def start_sigma(self, sd_log_life: float) -> float:
        """``sigma`` whose law has the standard deviation ``sd_log_life``."""
        return sd_log_life * math.sqrt(6.0) / math.pi

    def log_mean_of_theta(
        self, mu: NDArray[np.float64], sigma: NDArray[np.float64]
    ) -> NDArray[np.float64]:
        """log(mean life) at arrays of ``(mu, sigma)``."""
        log_mean: NDArray[np.float64] = mu + special.gammaln(1.0 + sigma)
        return log_mean

    def log_life_median_sd(self, params: Mapping[str, float]) -> tuple[float, float]:
        """Median and standard deviation of ``ln T``."""
        mu_w = math.log(params["lambda_"])
        sigma_w = 1.0 / params["rho_"]
        median = mu_w + sigma_w * math.log(math.log(2.0))
        # the standard deviation of the smallest extreme value law is pi / sqrt(6)
        return median, sigma_w * math.pi / math.sqrt(6.0)


class LogNormal(ShapeFamily):
    """``S(t) = 1 - Phi((ln t - mu_) / sigma_)``."""

    name = "lognormal"
    param_names = ("mu_", "sigma_")
    shape_param = "sigma_"
    law = NORMAL

    def lifelines_fitter(self) -> Any:
        """Return lifelines' fitter of this family."""
        from lifelines import LogNormalFitter

        return LogNormalFitter

    def mean_life_h(self, params: Mapping[str, float]) -> float:
        """Mean life in hours."""
        with np.errstate(over="ignore"):
            return float(np.exp(params["mu_"] + 0.5 * params["sigma_"] ** 2))

    def log_mean_gradient(self, params: Mapping[str, float]) -> NDArray[np.float64]:
        """Gradient of log(mean life) in the lifelines parameters."""
        return np.array([1.0, params["sigma_"]])

    def b10_h(self, params: Mapping[str, float]) -> float:
        """B10 life in hours."""
        q = 1.0 - B10_SURVIVAL
        with np.errstate(over="ignore"):
            return float(np.exp(params["mu_"] + params["sigma_"] * float(special.ndtri(q))))

    def _survival(self, params: Mapping[str, float], t: NDArray[np.float64]) -> NDArray[np.float64]:
        survival: NDArray[np.float64] = special.ndtr(
            -(np.log(t) - params["mu_"]) / params["sigma_"]
        )
        return survival

    def _restricted_mean(self, params: Mapping[str, float], tau: float) -> float:
        mu, sigma = params["mu_"], params["sigma_"]
        z = (math.log(tau) - mu) / sigma
        return float(
            math.exp(mu + 0.5 * sigma**2 + special.log_ndtr(z - sigma)) + tau * special.ndtr(-z)
        )

    def location_scale(self, params: Mapping[str, float]) -> tuple[float, float]:
        """``(mu, sigma)`` of ``ln T``."""
        return float(params["mu_"]), float(params["sigma_"])

    def location_scale_cov(
        self, params: Mapping[str, float], cov: NDArray[np.float64]
    ) -> NDArray[np.float64]:
        """Covariance of ``(mu, sigma)`` by the delta method."""
        return np.asarray(cov, dtype=np.float64)

    def from_theta(
        self, theta: NDArray[np.float64]
    ) -> tuple[dict[str, float], NDArray[np.float64]]:
        """Lifelines parameters and Jacobian at ``(mu, log sigma)``."""
        with np.errstate(over="ignore"):  # a run-away fit may overflow; the solver flags it
            mu, sigma = float(theta[0]), float(np.exp(theta[1]))
        return {"mu_": mu, "sigma_": sigma}, np.diag([1.0, sigma])

    def start_sigma(self, sd_log_life: float) -> float:
        """``sigma`` whose law has the standard deviation ``sd_log_life``."""
        return sd_log_life

    def log_mean_of_theta(
        self, mu: NDArray[np.float64], sigma: NDArray[np.float64]
    ) -> NDArray[np.float64]:
        """log(mean life) at arrays of ``(mu, sigma)``."""
        return mu + 0.5 * sigma**2


class LogLogistic(_ScaleShape):
    """``S(t) = 1 / (1 + (t / alpha_) ** beta_)``; no finite mean for ``beta_ <= 1``."""

    name = "loglogistic"
    param_names = ("alpha_", "beta_")
    scale_param = "alpha_"
    shape_param = "beta_"
    law = LOGISTIC

    def lifelines_fitter(self) -> Any:
        """Return lifelines' fitter of this family."""
        from lifelines import LogLogisticFitter

        return LogLogisticFitter

    def mean_life_h(self, params: Mapping[str, float]) -> float:
        """Mean life in hours."""
        beta = params["beta_"]
        if beta <= 1.0:
            return math.inf
        x = math.pi / beta
        return params["alpha_"] * x / math.sin(x)

    def log_mean_gradient(self, params: Mapping[str, float]) -> NDArray[np.float64]:
        """Gradient of log(mean life) in the lifelines parameters."""
        beta = params["beta_"]
        x = math.pi / beta
        return np.array(
            [1.0 / params["alpha_"], (1.0 / x - 1.0 / math.tan(x)) * (-math.pi / beta**2)]
        )

    def b10_h(self, params: Mapping[str, float]) -> float:
        """B10 life in hours."""
        q = 1.0 - B10_SURVIVAL
        b10: float = params["alpha_"] * (q / B10_SURVIVAL) ** (1.0 / params["beta_"])
        return b10

    def _survival(self, params: Mapping[str, float], t: NDArray[np.float64]) -> NDArray[np.float64]:
        return 1.0 / (1.0 + (t / params["alpha_"]) ** params["beta_"])

    def _restricted_mean(self, params: Mapping[str, float], tau: float) -> float:
        # integral over u = ln t of S(e^u) e^u, split at the scale
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

    def start_sigma(self, sd_log_life: float) -> float:
        """``sigma`` whose law has the standard deviation ``sd_log_life``."""
        return sd_log_life * math.sqrt(3.0) / math.pi

    def log_mean_of_theta(
        self, mu: NDArray[np.float64], sigma: NDArray[np.float64]
    ) -> NDArray[np.float64]:
        """log(mean life) at arrays of ``(mu, sigma)``."""
        x = math.pi * sigma  # mean alpha * x / sin(x), finite for sigma < 1
        with np.errstate(all="ignore"):
            out = mu + np.log(x / np.sin(x))
        return np.where(sigma < 1.0, out, np.inf)


_REGISTERED: tuple[Family, ...] = (Exponential(), Weibull(), LogNormal(), LogLogistic())
"""One instance of each family class, in the order the tables report them."""
FAMILY_REGISTRY: dict[str, Family] = {family.name: family for family in _REGISTERED}
"""The registered families by name, in the order :func:`~models.survival.fit_lives` reports."""


def family_of(name: str) -> Family:
    """Return the registered family called ``name``.

    Parameters
    ----------
    name
        A family name, one of :data:`FAMILY_REGISTRY`.

    Returns
    -------
    Family
        Its family object.

    Raises
    ------
    ValueError
        When no family of that name is registered.
    """
    family = FAMILY_REGISTRY.get(name)
    if family is None:
        msg = f"Unknown family {name!r}; choose one of {', '.join(FAMILY_REGISTRY)}."
        raise ValueError(msg)
    return family


def weibayes_family() -> Family:
    """Return the family a group with few failures is fitted by Weibayes (the Weibull).

    Returns
    -------
    Family
        The registered family whose :attr:`~Family.weibayes` is true.
    """
    return next(family for family in FAMILY_REGISTRY.values() if family.weibayes)


def closed_form_family() -> Family:
    """Return the family with no shape (the exponential), fitted in closed form.

    A group with no failure gets its row: the exact one-sided chi-square bound.

    Returns
    -------
    Family
        The first registered family whose :attr:`~Family.has_shape` is false.
    """
    return next(family for family in FAMILY_REGISTRY.values() if not family.has_shape)


def renewal_family() -> Family:
    """Return the family whose renewals a projection simulates (the Weibull).

    Returns
    -------
    Family
        The registered family whose :attr:`~Family.renewal` is true.
    """
    return next(family for family in FAMILY_REGISTRY.values() if family.renewal)
