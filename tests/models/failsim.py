"""An independent fleet of failing, repaired units, with the truth the headline must cover.

Nodes of 8 GPU slots are installed at random ages before an observation window. Every unit runs
from its install, fails, is down for a repair and comes back as good as new (a renewal),
whether or not the window has opened. A GPU slot carries the competing GPU-level classes (the
first of their lives to end fails the slot and renews it for all of them); a node carries each
node-level class as its own unit. Lives overlapping the window are cut to it: left-truncated at
the age the unit had when it opened, right-censored when it closes.

The truth of a class is the rate the fleet showed over the ages it was watched: its
compensator, the sum over the at-risk intervals in the window of the cumulative hazard between
the unit's ages at their ends, over the exposure. Written from the laws' definitions (the
inverse survival functions of ``tests.models.lifesim`` and the cumulative hazards below), not
from ``models`` or the synthetic generator.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import polars as pl
from scipy import special

from tests.models.lifesim import inverse_survival, law

GPUS_PER_NODE = 8


def cumulative_hazard(family: str, p: dict[str, float], t: np.ndarray) -> np.ndarray:
    """``-log S(t)`` of a law in lifelines' parameters, computed in log space."""
    if family == "exponential":
        return t / p["lambda_"]
    if family == "weibull":
        return (t / p["lambda_"]) ** p["rho_"]
    if family == "lognormal":
        with np.errstate(divide="ignore"):
            z = (np.log(t) - p["mu_"]) / p["sigma_"]
        return -special.log_ndtr(-z)
    return np.log1p((t / p["alpha_"]) ** p["beta_"])


@dataclass(frozen=True)
class ClassLaw:
    """One class: its level, family (``weibull_dfr`` / ``weibull_ifr`` name the shape side)."""

    name: str
    level: str
    kind: str
    family: str
    params: dict[str, float]


def random_law(
    rng: np.random.Generator, name: str, level: str, kind: str, mean_h: float
) -> ClassLaw:
    """A law of ``kind`` with mean ``mean_h`` and a random shape on that kind's side."""
    spreads = {
        "exponential": (1.0, 1.0),
        "weibull_dfr": (0.5, 0.9),
        "weibull_ifr": (1.2, 3.0),
        "lognormal": (0.5, 2.0),
        "loglogistic": (1.3, 4.0),
    }
    family = "weibull" if kind.startswith("weibull") else kind
    spread = float(rng.uniform(*spreads[kind]))
    return ClassLaw(name, level, kind, family, law(family, mean_h, spread))


def _draw(rng: np.random.Generator, c: ClassLaw, n: int) -> np.ndarray:
    return np.maximum(inverse_survival(c.family, c.params, rng.uniform(size=n)), 1e-9)


def _renewals(
    rng: np.random.Generator,
    start: np.ndarray,
    window_h: float,
    laws: list[ClassLaw],
    repair_h: float,
) -> tuple[np.ndarray, ...]:
    """Every life from install to past the window: unit, calendar start and end, class failed.

    Each unit draws a life per class; the shortest ends the life and names its class (competing
    risks; one class: its own renewal process). Then the unit is down an exponential repair.
    """
    unit = np.arange(start.size)
    clock = start.copy()
    units, begins, ends, classes = [], [], [], []
    while unit.size:
        draws = np.stack([_draw(rng, c, unit.size) for c in laws])
        life = draws.min(axis=0)
        units.append(unit)
        begins.append(clock)
        ends.append(clock + life)
        classes.append(draws.argmin(axis=0))
        clock = clock + life + rng.exponential(repair_h, unit.size)
        going = clock < window_h
        unit, clock = unit[going], clock[going]
    return (
        np.concatenate(units),
        np.concatenate(begins),
        np.concatenate(ends),
        np.concatenate(classes),
    )


@dataclass(frozen=True)
class Fleet:
    """The lives of every class and each class's truth."""

    lives: pl.DataFrame
    truth_mtbf_h: dict[str, float]
    laws: dict[str, ClassLaw]


def simulate(
    rng: np.random.Generator,
    gpu_laws: list[ClassLaw],
    node_laws: list[ClassLaw],
    *,
    n_nodes: int,
    oldest_h: float,
    window_h: float = 2_160.0,
    repair_h: float = 24.0,
) -> Fleet:
    """Simulate a fleet and cut its lives to the window ``[0, window_h]``.

    Nodes are installed uniformly over ``[-oldest_h, 0]``; their GPU slots and node-level units
    share the install. Returns the lives in the columns of ``fct_component_lives`` (one row per
    class x unit life: ``component_class``, ``unit_level``, ``node``, ``slot``, ``entry_h``,
    ``exit_h``, ``failed``, ``window_entry_h``, ``window_exit_h``) and per class the true MTBF
    over the ages watched, exposure / compensator.
    """
    install = -rng.uniform(0.0, oldest_h, n_nodes)
    groups: list[tuple[list[ClassLaw], np.ndarray, np.ndarray, list[str]]] = []
    if gpu_laws:
        node_of = np.repeat(np.arange(n_nodes), GPUS_PER_NODE)
        slots = [f"gpu{i}" for i in range(GPUS_PER_NODE)] * n_nodes
        groups.append((gpu_laws, install[node_of], node_of, slots))
    for c in node_laws:
        groups.append(([c], install, np.arange(n_nodes), [c.name] * n_nodes))
    frames, truth = [], {}
    for laws, start, node_of, slots in groups:
        unit, begin, end, failed_class = _renewals(rng, start, window_h, laws, repair_h)
        w_in, w_out = np.maximum(begin, 0.0), np.minimum(end, window_h)
        keep = w_out > w_in
        unit, begin, end, failed_class = unit[keep], begin[keep], end[keep], failed_class[keep]
        w_in, w_out = w_in[keep], w_out[keep]
        entry, exit_ = w_in - begin, w_out - begin
        ended = end <= window_h
        for k, c in enumerate(laws):
            compensator = cumulative_hazard(c.family, c.params, exit_) - cumulative_hazard(
                c.family, c.params, entry
            )
            exposure = float(np.sum(exit_ - entry))
            truth[c.name] = exposure / float(compensator.sum())
            frames.append(
                pl.DataFrame(
                    {
                        "component_class": c.name,
                        "unit_level": c.level,
                        "node": [f"node{n:04d}" for n in node_of[unit]],
                        "slot": [slots[u] for u in unit],
                        "entry_h": entry,
                        "exit_h": exit_,
                        "failed": ended & (failed_class == k),
                        "window_entry_h": w_in,
                        "window_exit_h": w_out,
                    }
                )
            )
    laws_by_name = {c.name: c for c in [*gpu_laws, *node_laws]}
    return Fleet(pl.concat(frames), truth, laws_by_name)


def poisson_bounds(r: int, alpha: float = 0.05) -> tuple[float, float]:
    """Exact Poisson bounds on a mean from a count, by root-finding on the Poisson CDF."""
    from scipy import optimize, stats

    hi = optimize.brentq(
        lambda m: stats.poisson.cdf(r, m) - alpha / 2, 1e-12, 10 * r + 50, xtol=1e-13
    )
    if r == 0:
        return 0.0, hi
    lo = optimize.brentq(
        lambda m: stats.poisson.sf(r - 1, m) - alpha / 2, 1e-12, 10 * r + 50, xtol=1e-13
    )
    return lo, hi


def mean_of(c: ClassLaw) -> float:
    """The law's mean life, from its parameters (for reports)."""
    p = c.params
    if c.family == "exponential":
        return p["lambda_"]
    if c.family == "weibull":
        return p["lambda_"] * math.gamma(1.0 + 1.0 / p["rho_"])
    if c.family == "lognormal":
        return math.exp(p["mu_"] + p["sigma_"] ** 2 / 2.0)
    x = math.pi / p["beta_"]
    return p["alpha_"] * x / math.sin(x)
