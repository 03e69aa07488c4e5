r"""Monte Carlo of fail-slow in a trial of the job: its own draws, none of the quadrature.

Per trial and per kind of unit (:class:`~models.failslow_laws.SlowLaws`), slow episodes arrive
as one Poisson stream of rate ``units x rate_per_unit_h`` over ``[-H, H)`` (``H`` the job's
window; the first ``H`` lets the stream reach its steady state, as the model's is), each with a
duration ``D`` and an excess ``S - 1`` drawn from the laws. An episode with ``S > 1 + theta``
(``straggler_tolerance``) is cut to ``min(D, detect + evict_s)`` when the job acts
(``straggler_detect_s`` set); one still on at its detection (``D > detect``, detected within the
window) is an eviction, which stalls the job ``c_e`` (``straggler_evict``, priced as the
projection prices it). The job's pace at an instant is the largest ``S`` of the episodes on then
(1 with none): it is read at ``K`` instants evenly spaced over the window with a random offset
per trial, an unbiased estimate of the trial's slow share ``mean(1 - 1/M)``. The trial's
productive share of its window (the fail-stop goodput) is then scaled by
``(1 - e)(1 - share)``, ``e`` the share of the window in eviction stalls: the fail-slow draws
are independent of the fail-stop ones, as the analytical model takes them.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import numpy as np

from models.goodput_slow import eviction_cost_arrays

if TYPE_CHECKING:
    from numpy.typing import NDArray

    from models.scenario import Scenario

__all__: list[str] = []

_INSTANTS = 256  # instants per trial at which the pace is read
_CELLS = 2_000_000  # instants x episodes compared at once


def _pace_at(
    t: NDArray[np.float64],
    start: NDArray[np.float64],
    end: NDArray[np.float64],
    slowdown: NDArray[np.float64],
) -> NDArray[np.float64]:
    """Return the largest slowdown of the episodes on at each instant (1 with none)."""
    out = np.ones(t.size)
    step = max(1, _CELLS // max(start.size, 1))
    for i in range(0, t.size, step):
        now = t[i : i + step, None]
        on = (start[None, :] <= now) & (now < end[None, :])
        out[i : i + step] = np.where(on, slowdown[None, :], 1.0).max(axis=1, initial=1.0)
    return out


def _trial(
    s: Scenario, rng: np.random.Generator, horizon_s: float, cost_s: float
) -> tuple[float, float, float]:
    """One trial: (slow share, share of the window in eviction stalls, evictions)."""
    detect = math.inf if s.straggler_detect_s is None else float(s.straggler_detect_s)
    cut = detect + s.straggler_evict_s
    starts, ends, slows = [], [], []
    evictions = 0
    for law in s.slow_laws:
        units = s.n_gpus if law.unit == "gpu" else math.ceil(s.n_gpus / s.gpus_per_node)
        count = rng.poisson(units * law.rate_per_unit_h * 2.0 * horizon_s / 3600.0)
        start = rng.uniform(-horizon_s, horizon_s, count)
        duration = law.duration_s.sample(rng, count)
        slowdown = 1.0 + law.excess.sample(rng, count)
        acted = slowdown > 1.0 + s.straggler_tolerance
        if math.isfinite(detect):
            seen = start + detect
            evicted = acted & (duration > detect) & (seen >= 0.0) & (seen < horizon_s)
            evictions += int(evicted.sum())
            duration = np.where(acted, np.minimum(duration, cut), duration)
        keep = start + duration > 0.0
        starts.append(start[keep])
        ends.append((start + duration)[keep])
        slows.append(slowdown[keep])
    t = (np.arange(_INSTANTS) + rng.random()) * horizon_s / _INSTANTS
    pace = _pace_at(t, np.concatenate(starts), np.concatenate(ends), np.concatenate(slows))
    stalled = min(evictions * cost_s / horizon_s, 1.0)
    return float(np.mean(1.0 - 1.0 / pace)), stalled, float(evictions)


def slow_trials(
    s: Scenario, goodput: NDArray[np.float64], tau_s: float, rng: np.random.Generator
) -> dict[str, NDArray[np.float64]]:
    """Fail-slow for each trial, given the trials' fail-stop goodputs.

    Returns ``goodput`` (both causes), ``slow`` and ``eviction`` (shares of the window lost to
    each), ``slow_share`` and ``n_evictions``, one value per trial.
    """
    horizon_s = s.job_days * 86_400.0
    cost_s = float(eviction_cost_arrays(s, {}, np.asarray(tau_s)))
    draws = np.array([_trial(s, rng, horizon_s, cost_s) for _ in range(goodput.size)])
    share, stalled, evictions = draws[:, 0], draws[:, 1], draws[:, 2]
    return {
        "goodput": goodput * (1.0 - stalled) * (1.0 - share),
        "slow": goodput * (1.0 - stalled) * share,
        "eviction": goodput * stalled,
        "slow_share": share,
        "n_evictions": evictions,
    }
