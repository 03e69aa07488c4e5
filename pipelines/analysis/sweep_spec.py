"""A what-if sweep as written in its YAML (:func:`~pipelines.analysis.project.load_sweep`)."""

from __future__ import annotations

import dataclasses
from typing import Any


@dataclasses.dataclass(frozen=True)
class SweepSpec:
    """A what-if sweep: base knobs, a grid of knob values, a baseline, the scale to rank at."""

    base: dict[str, Any]
    grid: dict[str, list[Any]]
    target_gpus: int
    from_fits: str | None = None
    drain_model: str | None = None
    """A stored failure predictor (``latest`` or a model id): its operating curve is swept."""
    baseline: dict[str, Any] = dataclasses.field(default_factory=dict)
    """The user's system: a value for every grid knob but ``n_gpus`` (default: the first value
    listed). Knobs are ranked by goodput gained over it at ``target_gpus``."""
    n_samples: int = 2000
    """MTBF samples for the gains' intervals (paired; only when rates carry intervals)."""
    simulate: int = 0
    """Monte Carlo trials per grid point (0: analytical, Monte Carlo only where its bound fails)."""
    seed: int = 0
    """Seed of the simulated points (each point's stream also depends on the point)."""
    rate_process: str | None = None
    """With ``from_fits``: ``failure`` (the default: ``latest`` is the newest failure-process
    run) or ``replacement`` (replacement lifetimes; see
    :func:`pipelines.analysis.project_inputs.fit_rates`)."""
