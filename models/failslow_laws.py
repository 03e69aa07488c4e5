r"""Laws of fail-slow episodes: how long an episode lasts and how slow it makes its unit.

The rank-pace model (:mod:`models.failslow`) needs of an episode law only its survival
function, its mean, its mean limited at a cap (an episode cut short by an eviction), draws, and
the range of its logarithm where the survival function moves from 1 to 0 (the quadrature's
range). :class:`LogNormalLaw` is the default for both the duration ``D`` and the excess slowdown
``S - 1``; with ``sigma = 0`` it is a point mass (a fixed duration or slowdown).
:class:`ParetoLaw` is a heavy-tailed alternative for ``S - 1``. :class:`SlowLaws` holds the
laws of one kind of unit (GPU or node) with its episode rate.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

import numpy as np
from scipy import special

if TYPE_CHECKING:
    from numpy.typing import ArrayLike, NDArray

__all__ = ["EpisodeLaw", "LogNormalLaw", "ParetoLaw", "SlowLaws"]

_LOG_TAIL = 8.3  # standard normal tail beyond 8.3: 5e-17, below double precision next to 1
_PARETO_LOG_TAIL = 37.0  # (x / scale)^-shape < e^-37 = 9e-17 beyond ln(scale) + 37 / shape
_UNITS = ("gpu", "node")


class EpisodeLaw(Protocol):
    """What the rank-pace model needs of the law of a positive random variable ``X``."""

    def sf(self, x: ArrayLike) -> NDArray[np.float64]:
        """``P(X > x)``, elementwise."""
        ...

    def mean(self) -> float:
        """``E[X]`` (``inf`` when it does not exist)."""
        ...

    def limited_mean(self, cap: float) -> float:
        """``E[min(X, cap)]``; ``cap = inf`` gives the mean."""
        ...

    def sample(self, rng: np.random.Generator, n: int) -> NDArray[np.float64]:
        """``n`` independent draws."""
        ...

    def log_range(self) -> tuple[float, float]:
        """Return ``(a, b)``: ``P(X > x)`` is 1 below ``ln x = a`` and 0 above ``b``.

        To double precision; ``a = b`` for a point mass.
        """
        ...


@dataclass(frozen=True, slots=True)
class LogNormalLaw:
    """``ln X`` normal with median ``median`` (``e^mu``) and standard deviation ``sigma``.

    Parameters
    ----------
    median
        The median of ``X`` (seconds for a duration, a plain number for ``S - 1``); above 0.
    sigma
        Standard deviation of ``ln X``, 0 or more; 0 is a point mass at ``median``.
    """

    median: float
    sigma: float

    def __post_init__(self) -> None:
        """Check the median and sigma; a bad one raises ``ValueError``."""
        if not (math.isfinite(self.median) and self.median > 0):
            msg = f"a log-normal law needs a positive finite median, got {self.median}."
            raise ValueError(msg)
        if not (math.isfinite(self.sigma) and self.sigma >= 0):
            msg = f"a log-normal law needs sigma >= 0 (0 is a fixed value), got {self.sigma}."
            raise ValueError(msg)

    @property
    def mu(self) -> float:
        """``E[ln X]``."""
        return math.log(self.median)

    def sf(self, x: ArrayLike) -> NDArray[np.float64]:
        """``P(X > x)``."""
        x = np.asarray(x, dtype=np.float64)
        with np.errstate(divide="ignore"):
            log_x = np.log(np.maximum(x, 0.0))
        if self.sigma == 0.0:
            return np.asarray(log_x < self.mu, dtype=np.float64)
        out: NDArray[np.float64] = special.ndtr(-(log_x - self.mu) / self.sigma)
        return out

    def mean(self) -> float:
        """``E[X] = median * exp(sigma^2 / 2)``."""
        return self.median * math.exp(0.5 * self.sigma**2)

    def limited_mean(self, cap: float) -> float:
        """``E[min(X, cap)] = E[X] Phi(z - sigma) + cap (1 - Phi(z))``.

        With ``z = (ln cap - mu) / sigma``.
        """
        if math.isinf(cap):
            return self.mean()
        if cap <= 0:
            return 0.0
        if self.sigma == 0.0:
            return min(self.median, cap)
        z = (math.log(cap) - self.mu) / self.sigma
        return float(self.mean() * special.ndtr(z - self.sigma) + cap * special.ndtr(-z))

    def sample(self, rng: np.random.Generator, n: int) -> NDArray[np.float64]:
        """``n`` draws."""
        return np.exp(rng.normal(self.mu, self.sigma, n))

    def log_range(self) -> tuple[float, float]:
        """``mu -+ 8.3 sigma``."""
        return self.mu - _LOG_TAIL * self.sigma, self.mu + _LOG_TAIL * self.sigma


@dataclass(frozen=True, slots=True)
class ParetoLaw:
    """``P(X > x) = (x / scale)^-shape`` for ``x >= scale``: a heavy tail (a Pareto type I).

    Parameters
    ----------
    scale
        The smallest value, above 0.
    shape
        The tail index, above 0; the mean is infinite for ``shape <= 1``.
    """

    scale: float
    shape: float

    def __post_init__(self) -> None:
        """Check the scale and shape; a bad one raises ``ValueError``."""
        for name, value in (("scale", self.scale), ("shape", self.shape)):
            if not (math.isfinite(value) and value > 0):
                msg = f"a Pareto law needs a positive finite {name}, got {value}."
                raise ValueError(msg)

    def sf(self, x: ArrayLike) -> NDArray[np.float64]:
        """``P(X > x)``."""
        x = np.asarray(x, dtype=np.float64)
        with np.errstate(divide="ignore", over="ignore"):
            out: NDArray[np.float64] = np.where(
                x < self.scale, 1.0, (np.maximum(x, self.scale) / self.scale) ** -self.shape
            )
        return out

    def mean(self) -> float:
        """``scale * shape / (shape - 1)``, infinite for ``shape <= 1``."""
        return self.limited_mean(math.inf)

    def limited_mean(self, cap: float) -> float:
        """``E[min(X, cap)] = scale + int_scale^cap (x / scale)^-shape dx``."""
        if cap <= self.scale:
            return max(cap, 0.0)
        if math.isinf(cap):
            return math.inf if self.shape <= 1 else self.scale * self.shape / (self.shape - 1)
        if self.shape == 1.0:
            return self.scale * (1.0 + math.log(cap / self.scale))
        ratio = math.pow(cap / self.scale, 1.0 - self.shape)
        return self.scale * (1.0 + (ratio - 1.0) / (1.0 - self.shape))

    def sample(self, rng: np.random.Generator, n: int) -> NDArray[np.float64]:
        """``n`` draws: ``scale * U^(-1/shape)``."""
        return self.scale * (1.0 - rng.random(n)) ** (-1.0 / self.shape)

    def log_range(self) -> tuple[float, float]:
        """``(ln scale, ln scale + 37 / shape)``."""
        return math.log(self.scale), math.log(self.scale) + _PARETO_LOG_TAIL / self.shape


@dataclass(frozen=True, slots=True)
class SlowLaws:
    """Fail-slow episodes of one kind of unit: their rate, duration law and slowdown law.

    Parameters
    ----------
    rate_per_unit_h
        Episodes per unit per wall-clock hour (``lambda``), 0 or more.
    duration_s
        Law of an episode's duration ``D``, seconds.
    excess
        Law of ``S - 1``, where ``S >= 1`` is the factor by which the episode slows its unit
        (a step time ``S`` times the healthy one); ``F_S(x) = F_excess(x - 1)``.
    unit
        ``"gpu"`` (a job of N GPUs has N units) or ``"node"`` (``ceil(N / gpus_per_node)``).
    """

    rate_per_unit_h: float
    duration_s: EpisodeLaw
    excess: EpisodeLaw
    unit: str = "gpu"

    def __post_init__(self) -> None:
        """Check the rate, the unit and the mean duration; a bad one raises ``ValueError``."""
        if not (math.isfinite(self.rate_per_unit_h) and self.rate_per_unit_h >= 0):
            msg = (
                "rate_per_unit_h must be 0 or more episodes per unit-hour, "
                f"got {self.rate_per_unit_h}."
            )
            raise ValueError(msg)
        if self.unit not in _UNITS:
            msg = f"unit must be 'gpu' or 'node', got {self.unit!r}: say what one episode slows."
            raise ValueError(msg)
        if not math.isfinite(self.duration_s.mean()):
            msg = "the duration law needs a finite mean (a slow unit must recover or be evicted)."
            raise ValueError(msg)

    def units(self, n_gpus: ArrayLike, gpus_per_node: int) -> NDArray[np.float64]:
        """Units of this kind in a job of ``n_gpus`` GPUs."""
        n = np.asarray(n_gpus, dtype=np.float64)
        return n if self.unit == "gpu" else np.ceil(n / gpus_per_node)
