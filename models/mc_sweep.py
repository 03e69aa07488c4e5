r"""What-if grids evaluated by Monte Carlo: every point, or where the analysis is not exact enough.

:func:`simulate_sweep` gives the table of :func:`models.sweep.sweep` (same rows, same order,
same columns) with the points evaluated by :func:`models.simulate.simulate_job`, plus
``goodput_se`` (the Monte Carlo standard error of goodput), ``n_trials`` and ``method``
(``"monte_carlo"`` or ``"analytical"``). :func:`auto_sweep` is the what-if default: the
analytical sweep, except at points where the projection states an error bound
(``goodput_error_bound``, absolute goodput) larger than ``max_rel_error`` of the point's goodput;
those are simulated on their own.

Each point draws from its own random stream, seeded from ``random_state`` and the point's
resolved :class:`~models.scenario.Scenario` (a hash of its ``repr``), never from its position: a
grid cut into slices (for a task runner), evaluated in any order, gives the same table, and the
same scenario gets the same draws in any grid it appears in.
"""

from __future__ import annotations

import hashlib
import itertools
import math
from dataclasses import replace
from typing import TYPE_CHECKING, Any

import numpy as np
import polars as pl

from models.scenario import CATEGORICAL_KNOBS, Scenario
from models.simulate import simulate_job
from models.sweep import sweep

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

    from numpy.typing import ArrayLike

__all__ = ["auto_sweep", "point_seed", "simulate_sweep", "switch_flagged"]

METHODS = ("analytical", "monte_carlo")
AUTO_TRIALS = 1000
"""Trials per point when :func:`auto_sweep` switches a point to Monte Carlo on its own."""
AUTO_MAX_POINTS = 200
"""Points :func:`auto_sweep` simulates on its own at most (about 20 s at 100k GPUs)."""

# simulated figures that replace the analytical column of the same name (simulate_job's keys)
_SIMULATED = {"interruptions": "expected_interruptions", "drains": "expected_drains"}


def point_seed(scenario: Scenario, random_state: int) -> np.random.SeedSequence:
    """Return the random stream of one grid point: ``random_state`` and a hash of the scenario.

    Parameters
    ----------
    scenario
        The point, fully resolved (base knobs with the grid's values applied).
    random_state
        Non-negative whole number shared by the whole sweep.

    Returns
    -------
    numpy.random.SeedSequence
        The same for the same scenario and ``random_state``, in any process and any order.
    """
    digest = hashlib.blake2b(repr(scenario).encode(), digest_size=16).digest()
    words = np.frombuffer(digest, dtype=np.uint32).tolist()
    return np.random.SeedSequence([int(random_state), *words])


def _sweep_seed(random_state: int | np.random.Generator | None) -> int:
    """One whole number for the sweep: given, drawn from a generator, or fresh entropy."""
    if isinstance(random_state, np.random.Generator):
        return int(random_state.integers(2**63))
    if random_state is None:
        return int(np.random.SeedSequence().entropy) % 2**63  # type: ignore[arg-type]
    if int(random_state) < 0:
        msg = f"random_state must be a non-negative whole number, got {random_state}."
        raise ValueError(msg)
    return int(random_state)


def grid_points(grid: Mapping[str, Sequence[Any]]) -> list[dict[str, Any]]:
    """List the knob values of every point of a full-factorial grid, in the row order of ``sweep``.

    :func:`models.sweep.sweep` loops over its categorical knobs (grid order, the first
    slowest) and inside that over the numeric ones (grid order, the first slowest).
    """
    keys = list(grid)
    categorical = [k for k in keys if k in CATEGORICAL_KNOBS]
    numeric = [k for k in keys if k not in CATEGORICAL_KNOBS]
    points = []
    for combo in itertools.product(*(grid[k] for k in categorical)):
        for values in itertools.product(*(grid[k] for k in numeric)):
            point = dict(zip(categorical, combo, strict=True))
            point.update(zip(numeric, values, strict=True))
            points.append({k: point[k] for k in keys})
    return points


def _check_order(table: pl.DataFrame, points: list[dict[str, Any]]) -> None:
    """Fail loudly if ``sweep``'s row order ever stops being the one :func:`grid_points` gives."""
    for key in points[0] if points else ():
        if key in CATEGORICAL_KNOBS or key not in table.columns:
            continue
        expected = [p[key] for p in points]
        got = table[key].to_list()
        if got != expected:
            msg = (
                f"models.sweep's rows are no longer in grid order for {key!r}; "
                "update models.mc_sweep.grid_points to match it."
            )
            raise RuntimeError(msg)


def _simulated_row(
    scenario: Scenario, n_trials: int, seed: np.random.SeedSequence
) -> dict[str, float]:
    """Return the columns one Monte Carlo evaluation replaces, for one point."""
    sim = simulate_job(scenario, n_trials=n_trials, random_state=np.random.default_rng(seed))
    out = {
        _SIMULATED.get(key, key): float(value)
        for key, value in sim.to_dict().items()
        if isinstance(value, int | float) and not isinstance(value, bool)
    }
    gpu_h = scenario.n_gpus * scenario.job_days * 24.0
    out["useful_gpu_h"] = out["goodput"] * gpu_h
    out["daly_wall_time_h"] = (
        scenario.job_days * 24.0 / out["goodput"] if out["goodput"] > 0 else math.inf
    )
    return out


def simulate_sweep(
    base: Scenario,
    grid: Mapping[str, Sequence[Any]],
    *,
    n_trials: int = AUTO_TRIALS,
    random_state: int | np.random.Generator | None = 0,
    rows: ArrayLike | None = None,
) -> pl.DataFrame:
    """Evaluate a what-if grid by Monte Carlo, point by point, in the table shape of ``sweep``.

    Parameters
    ----------
    base
        Scenario supplying every knob not in ``grid``.
    grid
        Scenario field name -> list of values, as for :func:`models.sweep.sweep`.
    n_trials
        Monte Carlo trials per point (the standard error shrinks like ``1 / sqrt(n_trials)``).
    random_state
        Seed of the sweep (a non-negative whole number, a generator to draw one from, or None
        for fresh entropy); each point's stream is :func:`point_seed` of it and the point.
    rows
        Which points to simulate: a boolean mask or indices into the table's rows; None
        simulates every point. The others keep their analytical values.

    Returns
    -------
    polars.DataFrame
        The rows and columns of ``sweep(base, grid)``, then ``goodput_se`` (null where
        analytical), ``n_trials`` (0 where analytical) and ``method``. At simulated points the
        figures the simulation measures replace the analytical ones: ``goodput``, ``mtti_h``,
        ``expected_interruptions``, ``expected_drains``, ``useful_gpu_h``,
        ``daly_wall_time_h`` (job length / goodput), ``lost_gpu_h_*`` and ``energy_lost_mwh``;
        the checkpoint interval is the one the simulation used (the analytical choice), and
        the rest (Young and Daly intervals, ETTR, mean restart and spare wait, false alarms)
        stay analytical.

    Raises
    ------
    ValueError
        For fewer than one trial, a negative seed, or a knob value the scenario rejects.

    Examples
    --------
    >>> df = simulate_sweep(Scenario(), {"n_gpus": [1_024, 16_384]}, n_trials=50)
    >>> df["method"].to_list()
    ['monte_carlo', 'monte_carlo']
    """
    if n_trials < 1:
        msg = f"n_trials must be at least 1, got {n_trials}; use models.sweep for no simulation."
        raise ValueError(msg)
    seed = _sweep_seed(random_state)
    table = sweep(base, grid)
    points = grid_points(grid)
    _check_order(table, points)
    chosen = np.ones(table.height, dtype=bool)
    if rows is not None:
        picked = np.asarray(rows)
        chosen = picked.copy() if picked.dtype == bool else np.isin(np.arange(table.height), picked)
    updates: dict[str, list[float | None]] = {}
    se: list[float | None] = [None] * table.height
    method = np.where(chosen, METHODS[1], METHODS[0]).astype(object)
    for i in np.flatnonzero(chosen):
        try:
            scenario = replace(base, **points[i])
        except ValueError as error:  # a combination the scenario refuses (each value alone is
            # valid): the analytical sweep projects it anyway; say why it was not simulated
            chosen[i] = False
            method[i] = f"{METHODS[0]}: not simulated, {error}"
            continue
        sim = _simulated_row(scenario, n_trials, point_seed(scenario, seed))
        for key, value in sim.items():
            if key in table.columns:
                updates.setdefault(key, [None] * table.height)[i] = value
        se[i] = sim["goodput_se"]
    table = table.with_columns(
        pl.Series(key, values, dtype=pl.Float64).fill_null(table[key].cast(pl.Float64))
        for key, values in updates.items()
    )
    return table.with_columns(
        goodput_se=pl.Series(se, dtype=pl.Float64),
        n_trials=pl.Series(np.where(chosen, n_trials, 0), dtype=pl.Int64),
        method=pl.Series(method.tolist(), dtype=pl.String),
    )


def auto_sweep(
    base: Scenario,
    grid: Mapping[str, Sequence[Any]],
    *,
    simulate: int = 0,
    random_state: int | np.random.Generator | None = 0,
    auto_trials: int = AUTO_TRIALS,
    max_rel_error: float = 0.01,
    max_points: int = AUTO_MAX_POINTS,
) -> pl.DataFrame:
    """Build the what-if table: analytical where the projection is exact enough, else Monte Carlo.

    Parameters
    ----------
    base, grid
        As for :func:`models.sweep.sweep`.
    simulate
        Trials per point to evaluate *every* point by Monte Carlo; 0 for the automatic choice.
    random_state
        Seed of the simulated points (see :func:`simulate_sweep`).
    auto_trials
        Trials per point for the points switched to Monte Carlo automatically.
    max_rel_error
        A point whose ``goodput_error_bound`` (the projection's own bound, absolute goodput,
        when it states one) exceeds this share of its goodput is simulated.
    max_points
        At most this many points are simulated on their own (those with the largest bound
        relative to goodput first); 0 simulates none and only labels them (a slice of a grid
        cut for a task runner: the whole grid's choice is made once, by
        :func:`switch_flagged`, on the assembled table).

    Returns
    -------
    polars.DataFrame
        The table of :func:`simulate_sweep`: ``sweep``'s columns, ``goodput_se``, ``n_trials``
        and ``method``: ``"analytical"``, ``"monte_carlo"``, or for a flagged point left
        analytical, ``"analytical: ..."`` with the reason.
    """
    if simulate > 0:
        return simulate_sweep(base, grid, n_trials=simulate, random_state=random_state)
    return switch_flagged(
        sweep(base, grid),
        base,
        grid,
        random_state=random_state,
        auto_trials=auto_trials,
        max_rel_error=max_rel_error,
        max_points=max_points,
    )


def switch_flagged(
    table: pl.DataFrame,
    base: Scenario,
    grid: Mapping[str, Sequence[Any]],
    *,
    random_state: int | np.random.Generator | None = 0,
    auto_trials: int = AUTO_TRIALS,
    max_rel_error: float = 0.01,
    max_points: int = AUTO_MAX_POINTS,
) -> pl.DataFrame:
    """Simulate the points of an analytical ``sweep(base, grid)`` table whose bound is too wide.

    See :func:`auto_sweep` for the parameters. A table that already has ``method`` (from
    slices) is re-decided from its analytical columns; simulated rows are kept as they are.
    """
    if "method" in table.columns and (table["method"] == METHODS[1]).any():
        return table  # a simulated table (every point): nothing to switch
    table = table.drop([c for c in ("goodput_se", "n_trials", "method") if c in table.columns])
    flagged = np.zeros(table.height, dtype=bool)
    relative = np.zeros(table.height)
    if "goodput_error_bound" in table.columns:
        bound = table["goodput_error_bound"].cast(pl.Float64).fill_nan(None)
        goodput = table["goodput"].cast(pl.Float64).abs()
        flagged = (bound > max_rel_error * goodput).fill_null(False).to_numpy()
        relative = (bound / goodput).fill_nan(None).fill_null(np.inf).to_numpy()
    # the widest bounds first; ties in grid order, so the choice is the same however it is cut
    order = [i for i in np.argsort(-relative, kind="stable") if flagged[i]]
    chosen = np.zeros(table.height, dtype=bool)
    chosen[order[:max_points]] = True
    if chosen.any():
        out = simulate_sweep(
            base, grid, n_trials=auto_trials, random_state=random_state, rows=chosen
        )
    else:
        out = table.with_columns(
            goodput_se=pl.lit(None, dtype=pl.Float64),
            n_trials=pl.lit(0, dtype=pl.Int64),
            method=pl.lit(METHODS[0], dtype=pl.String),
        )
    left = flagged & ~chosen
    if left.any():
        why = (
            f"{METHODS[0]}: error bound above {max_rel_error:.0%} of goodput, not simulated "
            f"(only the {max_points} widest are on their own; use --simulate)"
        )
        out = out.with_columns(
            method=pl.when(pl.Series(left)).then(pl.lit(why)).otherwise(pl.col("method"))
        )
    return out
