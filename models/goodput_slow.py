r"""Fail-slow in the goodput projection: the rank-pace model joined to the fail-stop arrays.

:func:`models.goodput.project_arrays` calls :func:`with_fail_slow` on its outputs; with no
``slow_laws`` in the scenario it returns them untouched. With slow laws it applies
:func:`models.failslow.combine_goodput` elementwise: of the fail-stop model's productive GPU-hours
:math:`P` (``useful_gpu_h``), the eviction stalls take :math:`e = \min(\nu c_e, 1)` and the slow
pace :math:`\mathrm{share}` of the rest, so

.. math::
    G = G_{\mathrm{stop}}(1 - e)(1 - \mathrm{share}),\qquad
    L_{\mathrm{slow}} = P(1 - e)\,\mathrm{share},\qquad L_{\mathrm{evict}} = P e

with :math:`\nu` the evictions per hour of :func:`models.failslow.slowdown_curve` and
:math:`c_e` the cost of one (:func:`models.failslow.eviction_cost_s`: ``straggler_evict``)
at each point's checkpoint interval. The outputs it adds are listed in
:class:`~models.scenario.Projection`.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import numpy as np

from models.scenario import SECONDS_PER_HOUR

if TYPE_CHECKING:
    from collections.abc import Mapping

    from numpy.typing import ArrayLike, NDArray

    from models.failslow import Mitigation
    from models.scenario import Scenario

__all__: list[str] = []

#: The outputs :func:`with_fail_slow` adds (with ``goodput``, ``useful_gpu_h``,
#: ``lost_gpu_h_total`` and ``energy_lost_mwh`` changed to count both causes).
SLOW_KEYS = (
    "goodput_fail_stop",
    "slow_share",
    "slowdown",
    "expected_evictions",
    "lost_gpu_h_fail_stop",
    "lost_gpu_h_fail_slow",
    "lost_gpu_h_slow",
    "lost_gpu_h_eviction",
)


def mitigation(s: Scenario) -> Mitigation:
    """Return the straggler knobs as a :class:`~models.failslow.Mitigation` (no cost yet)."""
    # imported here: a projection without fail-slow never loads the model (scipy, polars)
    from models.failslow import Mitigation

    detect = math.inf if s.straggler_detect_s is None else float(s.straggler_detect_s)
    return Mitigation(detect_s=detect, tolerance=s.straggler_tolerance, evict_s=s.straggler_evict_s)


def _knob(s: Scenario, over: Mapping[str, ArrayLike], name: str) -> NDArray[np.float64]:
    """Return a numeric knob as an array: swept in ``over``, else the scenario's."""
    return np.asarray(over[name] if name in over else getattr(s, name), dtype=np.float64)


def eviction_cost_arrays(
    s: Scenario, over: Mapping[str, ArrayLike], interval_s: NDArray[np.float64]
) -> NDArray[np.float64]:
    """:func:`models.failslow.eviction_cost_s` over arrays of the fail-stop knobs."""
    checkpoint = _knob(s, over, "checkpoint_s")
    if s.straggler_evict == "planned":
        out: NDArray[np.float64] = checkpoint + _knob(s, over, "drain_migration_s")
        return out
    restart = (
        _knob(s, over, "reload_s") + _knob(s, over, "warmup_s") + (interval_s + checkpoint) / 2.0
    )
    if s.straggler_evict == "restart":
        restart = restart + _knob(s, over, "reschedule_s")
    return restart


def _pace(
    s: Scenario, n_gpus: NDArray[np.float64], per_node: NDArray[np.float64]
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Slow share and evictions per hour at each job size (one quadrature per distinct size)."""
    from models.failslow import slowdown_curve

    share = np.empty(n_gpus.shape)
    evictions = np.empty(n_gpus.shape)
    acting = mitigation(s)
    pairs = np.stack([n_gpus.ravel(), per_node.ravel()], axis=1)
    for n, gpn in {(int(a), int(b)) for a, b in pairs}:
        (p,) = slowdown_curve(s.slow_laws, [n], gpus_per_node=gpn, mitigation=acting)
        at = (n_gpus == n) & (per_node == gpn)
        share[at], evictions[at] = p.share, p.evictions_per_h
    return share, evictions


def with_fail_slow(
    s: Scenario, over: Mapping[str, ArrayLike] | None, out: dict[str, Any]
) -> dict[str, Any]:
    """Return ``out`` (:func:`models.goodput.project_arrays`'s outputs) with fail-slow in it.

    Unchanged when the scenario has no ``slow_laws``. Otherwise ``goodput``, ``useful_gpu_h``,
    ``lost_gpu_h_total`` and ``energy_lost_mwh`` count both causes and :data:`SLOW_KEYS` are
    added; every other output (MTTI, intervals, ETTR, the fail-stop losses) stays fail-stop.
    """
    if not s.slow_laws:
        return out
    over = over or {}
    shape = np.broadcast_shapes(
        np.shape(out["goodput"]),
        np.shape(over.get("n_gpus", 0)),
        np.shape(over.get("gpus_per_node", 0)),
    )
    n_gpus = np.broadcast_to(_knob(s, over, "n_gpus"), shape)
    per_node = np.broadcast_to(_knob(s, over, "gpus_per_node"), shape)
    share, per_h = _pace(s, n_gpus, per_node)
    interval_s = np.asarray(out["checkpoint_interval_min"], dtype=np.float64) * 60.0
    cost = eviction_cost_arrays(s, over, interval_s) if s.straggler_detect_s is not None else 0.0
    stalled = np.minimum(per_h * cost / SECONDS_PER_HOUR, 1.0)
    productive = np.asarray(out["useful_gpu_h"], dtype=np.float64)
    fail_stop = np.asarray(out["lost_gpu_h_total"], dtype=np.float64)
    goodput = np.asarray(out["goodput"], dtype=np.float64)
    slow = productive * (1.0 - stalled) * share
    eviction = productive * stalled
    lost = slow + eviction
    hours = _knob(s, over, "job_days") * 24.0
    power = _knob(s, over, "gpu_power_w") * _knob(s, over, "pue") / 1e6
    with np.errstate(divide="ignore"):
        slowdown = np.where(share < 1.0, 1.0 / np.maximum(1.0 - share, 1e-300), math.inf)
    return out | {
        "goodput": goodput * (1.0 - stalled) * (1.0 - share),
        "useful_gpu_h": productive - lost,
        "lost_gpu_h_total": fail_stop + lost,
        "energy_lost_mwh": np.asarray(out["energy_lost_mwh"]) + lost * power,
        "goodput_fail_stop": goodput,
        "slow_share": share,
        "slowdown": slowdown,
        "expected_evictions": per_h * goodput * hours,
        "lost_gpu_h_fail_stop": fail_stop,
        "lost_gpu_h_fail_slow": lost,
        "lost_gpu_h_slow": slow,
        "lost_gpu_h_eviction": eviction,
    }
