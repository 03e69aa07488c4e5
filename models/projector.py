"""Scikit-learn style wrapper: project (and optionally simulate) a scenario from a fit table.

It sits above both :mod:`models.goodput` and :mod:`models.simulate`, which simulate's use of the
analytical core would otherwise make import each other.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

import numpy as np
from sklearn.base import BaseEstimator

from models.goodput import project
from models.rates import rates_from_fits
from models.scenario import Scenario
from models.simulate import simulate_job

if TYPE_CHECKING:
    import polars as pl

__all__ = ["GoodputProjector"]


# sklearn ships no type information, so BaseEstimator is Any to mypy
class GoodputProjector(BaseEstimator):  # type: ignore[misc]
    """Projection (and optionally simulation) of a scenario whose rates come from a fit table.

    Parameters
    ----------
    scenario
        The job and fleet; ``None`` is ``Scenario()``.
    n_samples
        MTBF samples for the projection's interval (see :func:`project`).
    n_trials
        Monte Carlo trials of :func:`models.simulate.simulate_job`; 0 skips the simulation.
    random_state
        Seed or generator for both.

    Attributes
    ----------
    scenario_
        The scenario projected, with ``rates`` from the fit table when one was given.
    projection_
        Output of :func:`project`.
    simulation_
        Output of :func:`models.simulate.simulate_job`, or ``None``.

    Examples
    --------
    >>> GoodputProjector(Scenario(n_gpus=1024)).fit().projection_["mtti_h"] > 10
    True
    """

    def __init__(
        self,
        scenario: Scenario | None = None,
        n_samples: int = 0,
        n_trials: int = 0,
        random_state: int | np.random.Generator | None = None,
    ) -> None:
        self.scenario = scenario
        self.n_samples = n_samples
        self.n_trials = n_trials
        self.random_state = random_state

    def fit(self, fit_results: pl.DataFrame | None = None) -> GoodputProjector:
        """Project the scenario, with ``rates`` taken from ``fit_results`` when given."""
        scenario = Scenario() if self.scenario is None else self.scenario
        if fit_results is not None:
            scenario = replace(
                scenario, rates=rates_from_fits(fit_results), node_failures_per_1000_node_days=None
            )
        rng = np.random.default_rng(self.random_state)
        self.scenario_ = scenario
        self.projection_ = project(scenario, n_samples=self.n_samples, random_state=rng)
        self.simulation_ = None
        if self.n_trials > 0:
            self.simulation_ = simulate_job(scenario, n_trials=self.n_trials, random_state=rng)
        return self
