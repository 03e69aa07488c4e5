"""Latent lifetimes of the synthetic fleet's units: draws, hazards, bad units, hazard changes.

Pure functions of numpy arrays (hours), shared by :mod:`synth.fleet` (the renewal simulation)
and :mod:`synth.truth` (the compensator).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
from scipy import special

if TYPE_CHECKING:
    from synth.config import SynthConfig

DAY_S = 86_400
#: Spawn key of the generator's auxiliary streams (fix kinds, bad units), apart from the root's
#: children so that the streams every earlier version drew stay as they were.
_AUX_KEY = 25


def lifetimes_h(
    rng: np.random.Generator,
    families: list[str],
    shapes: np.ndarray,
    scales: np.ndarray,
    m: int,
) -> np.ndarray:
    """``m`` rows of latent lifetimes (hours), one column per competing class.

    All-Weibull columns draw with ``rng.weibull`` as the generator always has (same seed, same
    bytes). Any other family switches every column to the inverse CDF of one uniform ``u``:
    Weibull ``scale * (-ln(1-u))**(1/shape)``, exponential ``-scale * ln(1-u)``, log-normal
    ``scale * exp(shape * Phi^-1(u))``, log-logistic ``scale * (u / (1-u))**(1/shape)``.
    """
    if all(f == "weibull" for f in families):
        weibull: np.ndarray = rng.weibull(shapes, size=(m, shapes.size)) * scales
        return weibull
    u = rng.random((m, shapes.size))
    draws = np.empty_like(u)
    for j, family in enumerate(families):
        col = u[:, j]
        if family == "weibull":
            draws[:, j] = (-np.log1p(-col)) ** (1.0 / shapes[j])
        elif family == "exponential":
            draws[:, j] = -np.log1p(-col)
        elif family == "lognormal":
            draws[:, j] = np.exp(shapes[j] * special.ndtri(col))
        else:
            draws[:, j] = (col / (1.0 - col)) ** (1.0 / shapes[j])
    scaled: np.ndarray = draws * scales
    return scaled


def hazard_change(config: SynthConfig) -> tuple[int | None, float]:
    """Return the time the hazards change (None: never) and their factor."""
    frac, factor = config.hazard_change_at_frac, config.hazard_change_factor
    if frac is None or factor == 1.0:
        return None, 1.0
    return config.window_start_s + round(frac * config.days * DAY_S), factor


def cum_hazard(family: str, x: np.ndarray, shape: float, scale: float) -> np.ndarray:
    """Cumulative hazard ``H(x) = -ln S(x)`` of a family at ages ``x`` (hours)."""
    z = np.maximum(x, 0.0) / scale
    if family == "weibull":
        out: np.ndarray = z**shape
    elif family == "exponential":
        out = z
    elif family == "lognormal":
        with np.errstate(divide="ignore"):
            out = -special.log_ndtr(-np.log(z) / shape)
    else:
        out = np.log1p(z**shape)
    return out


def inv_cum_hazard(family: str, h: np.ndarray, shape: float, scale: float) -> np.ndarray:
    """Age (hours) at which a family's cumulative hazard reaches ``h``."""
    if family == "weibull":
        out: np.ndarray = scale * h ** (1.0 / shape)
    elif family == "exponential":
        out = scale * h
    elif family == "lognormal":
        out = scale * np.exp(-shape * special.ndtri(np.exp(-h)))
    else:
        out = scale * np.expm1(h) ** (1.0 / shape)
    return out


def hazard_changed(
    draws: np.ndarray,
    families: list[str],
    shapes: np.ndarray,
    scales: np.ndarray,
    since_h: np.ndarray,
    factor: float,
) -> np.ndarray:
    """Latent lifetimes under hazards multiplied by ``factor`` from age ``since_h`` on.

    A draw ``x`` of the unchanged law has cumulative hazard ``E = H(x)`` (a unit exponential);
    under the changed law the life ends where ``H(a) + factor * (H(x') - H(a)) = E``, with ``a``
    the age at the change (0 when the life starts after it), so draws before ``a`` are kept and
    later ones solve ``x' = H^-1(H(a) + (E - H(a)) / factor)``: exact for every family.
    """
    out = draws.copy()
    a = np.maximum(since_h, 0.0)
    for j, family in enumerate(families):
        x = draws[:, j]
        late = x > a
        if not late.any():
            continue
        h_a = cum_hazard(family, a[late], shapes[j], scales[j])
        h_x = cum_hazard(family, x[late], shapes[j], scales[j])
        out[late, j] = inv_cum_hazard(family, h_a + (h_x - h_a) / factor, shapes[j], scales[j])
    return out


def aux_rng(config: SynthConfig, k: int) -> np.random.Generator:
    """Auxiliary stream ``k`` of the seed (0: fix kinds, 1: bad units, 2: forced chains' fixes).

    Drawn apart from the root's children, so switching fix kinds or bad units on leaves every
    other stream as it was.
    """
    return np.random.default_rng(np.random.SeedSequence(config.seed, spawn_key=(_AUX_KEY, k)))


def bad_lifetimes(
    draws: np.ndarray,
    families: list[str],
    shapes: np.ndarray,
    scales: np.ndarray,
    factor: float,
) -> np.ndarray:
    """Latent lifetimes of a bad unit: every hazard ``factor`` times its class's.

    A draw ``x`` of the class's law has cumulative hazard ``E = H(x)`` (a unit exponential);
    under ``factor * h`` the life ends where ``factor * H(x') = E``: ``x' = H^-1(H(x) / factor)``
    (for a Weibull ``x * factor**(-1/shape)``), exact for every family.
    """
    out = draws.copy()
    for j, family in enumerate(families):
        h = cum_hazard(family, draws[:, j], shapes[j], scales[j])
        out[:, j] = inv_cum_hazard(family, h / factor, shapes[j], scales[j])
    return out
