"""Simulated component lives with known truth, shared by the model tests."""

from __future__ import annotations

import math

import numpy as np
import polars as pl
import pytest


def weibull_mean_h(shape: float, scale_h: float) -> float:
    """Mean of a Weibull lifetime: ``scale * gamma(1 + 1/shape)``."""
    return scale_h * math.gamma(1.0 + 1.0 / shape)


def simulate_fleet_lives(
    rng: np.random.Generator,
    n_units: int,
    *,
    shape: float,
    scale_h: float,
    window_h: float,
    oldest_install_h: float,
    hazard_ratio: np.ndarray | None = None,
) -> pl.DataFrame:
    """Lives seen through an observation window ``[0, window_h]`` of calendar time.

    Units are installed uniformly over ``[-oldest_install_h, window_h]`` and draw a Weibull
    life (scaled by ``hazard_ratio`` in proportional hazards when given). A unit that failed
    before the window opened is never seen (left truncation); one installed earlier and still
    alive enters at its age then; one alive at the window end is censored. Units are drawn
    until ``n_units`` are seen.
    """
    frames = []
    seen = 0
    while seen < n_units:
        n = 2 * (n_units - seen) + 16
        install = rng.uniform(-oldest_install_h, window_h, n)
        risk = np.ones(n) if hazard_ratio is None else rng.choice(hazard_ratio, n)
        life = scale_h * (rng.standard_exponential(n) / risk) ** (1.0 / shape)
        visible = install + life > 0
        install, life, risk = install[visible], life[visible], risk[visible]
        entry = np.maximum(0.0, -install)
        horizon = window_h - install
        frames.append(
            pl.DataFrame(
                {
                    "entry_h": entry,
                    "exit_h": np.minimum(life, horizon),
                    "failed": life <= horizon,
                    "risk": risk,
                }
            )
        )
        seen += int(visible.sum())
    return pl.concat(frames).head(n_units).with_row_index("unit_id")


@pytest.fixture
def fleet_lives() -> pl.DataFrame:
    """4,000 gpu lives: Weibull shape 1.5, scale 1,000 h, heavy left truncation."""
    return simulate_fleet_lives(
        np.random.default_rng(0),
        4_000,
        shape=1.5,
        scale_h=1_000.0,
        window_h=1_000.0,
        oldest_install_h=3_000.0,
    )


@pytest.fixture
def simulate_lives():
    """The :func:`simulate_fleet_lives` generator, for tests that need their own truth."""
    return simulate_fleet_lives
