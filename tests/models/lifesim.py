"""An independent fleet of unit lives for survival tests: any of the four families.

Units are installed up to ``oldest_h`` hours before an observation window (so their lives are
left-truncated at their age when it opens), run through the window and are replaced new on
failure; lives still running at the window's end are right-censored. Written from the laws'
definitions (inverse survival functions), not from ``models`` or the synthetic generator.
"""

from __future__ import annotations

import math

import numpy as np
import polars as pl
from scipy import special


# --------------------------------------------------------------------------------------------
def law(family: str, mean_h: float, spread: float) -> dict[str, float]:
    """Lifelines parameters of ``family`` with mean ``mean_h`` and shape ``spread``."""
    if family == "exponential":
        return {"lambda_": mean_h}
    if family == "weibull":
        return {"lambda_": mean_h / math.gamma(1.0 + 1.0 / spread), "rho_": spread}
    if family == "lognormal":
        return {"mu_": math.log(mean_h) - spread**2 / 2.0, "sigma_": spread}
    x = math.pi / spread
    return {"alpha_": mean_h * math.sin(x) / x, "beta_": spread}


def true_survival(family: str, p: dict[str, float], t: np.ndarray) -> np.ndarray:
    if family == "exponential":
        return np.exp(-t / p["lambda_"])
    if family == "weibull":
        return np.exp(-((t / p["lambda_"]) ** p["rho_"]))
    if family == "lognormal":
        return special.ndtr(-(np.log(t) - p["mu_"]) / p["sigma_"])
    return 1.0 / (1.0 + (t / p["alpha_"]) ** p["beta_"])


def inverse_survival(family: str, p: dict[str, float], s: np.ndarray) -> np.ndarray:
    if family == "exponential":
        return -p["lambda_"] * np.log(s)
    if family == "weibull":
        return p["lambda_"] * (-np.log(s)) ** (1.0 / p["rho_"])
    if family == "lognormal":
        return np.exp(p["mu_"] + p["sigma_"] * special.ndtri(1.0 - s))
    return p["alpha_"] * ((1.0 - s) / s) ** (1.0 / p["beta_"])


def simulate_fleet(
    rng: np.random.Generator,
    family: str,
    p: dict[str, float],
    *,
    n_units: int = 2_048,
    oldest_h: float = 9_600.0,
    window_h: float = 2_160.0,
) -> pl.DataFrame:
    """Units installed up to ``oldest_h`` before a ``window_h`` window, replaced new on failure."""
    age = rng.uniform(0.0, oldest_h, n_units)
    clock = np.zeros(n_units)
    life = inverse_survival(family, p, true_survival(family, p, age) * rng.uniform(size=n_units))
    active = np.ones(n_units, dtype=bool)
    entry, exit_, failed = [], [], []
    while active.any():
        end_age = age + (window_h - clock)
        fails = life < end_age
        entry.append(age[active])
        exit_.append(np.where(fails, life, end_age)[active])
        failed.append(fails[active])
        clock = clock + (life - age)
        active &= fails
        age = np.zeros(n_units)
        life = inverse_survival(family, p, rng.uniform(size=n_units))
    e, x = np.concatenate(entry), np.concatenate(exit_)
    return pl.DataFrame(
        {
            "component_class": "c",
            "entry_h": e,
            "exit_h": np.maximum(x, e + 1e-6),
            "failed": np.concatenate(failed),
        }
    )
