"""Standard laws of log life: smallest extreme value, normal and logistic.

With ``u = ln t`` and ``z = (u - mu) / sigma``, the exponential and Weibull (smallest extreme
value), log-normal (normal) and log-logistic (logistic) lives are log-location-scale:
``log f(t) = g_f(z) - log sigma - u`` and ``log S(t) = g_s(z)``. A :class:`Law` holds what the
code needs of the standard law of ``z``: ``(g, g', g'')`` of ``g_f`` and ``g_s`` for the Newton
solver of :mod:`models.mle`, their values alone, ``(log S, log F)`` exact in each tail for
:mod:`models.gof`, and the probability-paper coordinate that makes its CDF a straight line.
The families of :mod:`models.families` each name their law.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
from scipy import special

if TYPE_CHECKING:
    from collections.abc import Callable

    from numpy.typing import NDArray

    Terms = tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.float64]]
    TermFn = Callable[[NDArray[np.float64]], Terms]
    ValueFn = Callable[[NDArray[np.float64]], NDArray[np.float64]]
    PairFn = Callable[[NDArray[np.float64]], tuple[NDArray[np.float64], NDArray[np.float64]]]

__all__: list[str] = []  # read by models.families and models.mle


# With u = log t and z = (u - mu) / sigma, Weibull, log-normal and log-logistic lives are
# log-location-scale: log f(t) = g_f(z) - log sigma - u and log S(t) = g_s(z), where g_f, g_s
# are the log density / log survival of the standard minimum-extreme-value, normal and logistic
# distributions. Each helper returns (g, g', g'') on an array of z.
_HALF_LOG_2PI = 0.5 * math.log(2.0 * math.pi)


def _gumbel_f(z: NDArray[np.float64]) -> Terms:
    ez = np.exp(z)
    return z - ez, 1.0 - ez, -ez


def _gumbel_s(z: NDArray[np.float64]) -> Terms:
    ez = -np.exp(z)
    return ez, ez, ez


def _normal_f(z: NDArray[np.float64]) -> Terms:
    return -0.5 * z * z - _HALF_LOG_2PI, -z, np.full_like(z, -1.0)


def _normal_s(z: NDArray[np.float64]) -> Terms:
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


def _logistic_f(z: NDArray[np.float64]) -> Terms:
    softplus, p = _logistic_parts(z)
    return z - 2.0 * softplus, 1.0 - 2.0 * p, -2.0 * p * (1.0 - p)


def _logistic_s(z: NDArray[np.float64]) -> Terms:
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
    g: NDArray[np.float64] = np.log(special.ndtr(-z))
    tail = z > 5.0
    if tail.any():
        g[tail] = special.log_ndtr(-z[tail])
    return g


def _logistic_f_value(z: NDArray[np.float64]) -> NDArray[np.float64]:
    return z - 2.0 * np.logaddexp(0.0, z)


def _logistic_s_value(z: NDArray[np.float64]) -> NDArray[np.float64]:
    return -np.logaddexp(0.0, z)


def _gumbel_sf_cdf(z: NDArray[np.float64]) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    ez = np.exp(z)
    return -ez, np.log(-np.expm1(-ez))


def _normal_sf_cdf(z: NDArray[np.float64]) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    return special.log_ndtr(-z), special.log_ndtr(z)


def _logistic_sf_cdf(z: NDArray[np.float64]) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    return -np.logaddexp(0.0, z), -np.logaddexp(0.0, -z)


def _gumbel_paper(log_s: NDArray[np.float64]) -> NDArray[np.float64]:
    return np.log(-log_s)


def _normal_paper(log_s: NDArray[np.float64]) -> NDArray[np.float64]:
    paper_y: NDArray[np.float64] = -special.ndtri(np.exp(log_s))
    return paper_y


def _logistic_paper(log_s: NDArray[np.float64]) -> NDArray[np.float64]:
    return np.log(np.expm1(-log_s))


@dataclass(frozen=True)
class Law:
    """The standard law of ``z = (ln T - mu) / sigma`` of a log-location-scale family.

    Attributes
    ----------
    name
        The law's name.
    density_terms, survival_terms
        ``(g, g', g'')`` of the log density ``g_f`` and the log survival ``g_s`` at ``z``.
    log_density, log_survival
        ``g_f(z)`` and ``g_s(z)`` alone (cheaper: the solver's line search).
    log_sf_cdf
        ``(log S(z), log F(z))``, each exact in its tail.
    paper_y
        The probability-paper coordinate of ``log S``: a straight line in ``z`` for this law.
    """

    name: str
    density_terms: TermFn
    survival_terms: TermFn
    log_density: ValueFn
    log_survival: ValueFn
    log_sf_cdf: PairFn
    paper_y: ValueFn


SMALLEST_EXTREME_VALUE = Law(
    "smallest extreme value",
    _gumbel_f,
    _gumbel_s,
    _gumbel_f_value,
    _gumbel_s_value,
    _gumbel_sf_cdf,
    _gumbel_paper,
)
"""``S(z) = exp(-e^z)``: ``ln T`` of the exponential and the Weibull; paper ``ln(-ln S)``."""
NORMAL = Law(
    "normal",
    _normal_f,
    _normal_s,
    _normal_f_value,
    _normal_s_value,
    _normal_sf_cdf,
    _normal_paper,
)
"""``S(z) = 1 - Phi(z)``: ``ln T`` of the log-normal; paper ``Phi^-1(F)``."""
LOGISTIC = Law(
    "logistic",
    _logistic_f,
    _logistic_s,
    _logistic_f_value,
    _logistic_s_value,
    _logistic_sf_cdf,
    _logistic_paper,
)
"""``S(z) = 1 / (1 + e^z)``: ``ln T`` of the log-logistic; paper ``ln(F / S)``."""
