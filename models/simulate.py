r"""Monte Carlo of a training job on a fleet with Weibull lifetimes, spares and repair times.

The model, shared by :func:`simulate_job` (vectorised over trials and failures) and
:func:`simulate_job_naive` (one Python step per failure, the baseline and cross-check):

* **Failures.** Every unit (a GPU, or a node, per :class:`~models.goodput.ClassRate`) in the
  failure domains the job holds has Weibull lifetimes with the class's shape and mean; a fault
  in any unit takes its whole domain out. The job's position is renewed at each fault with an
  as-good-as-new unit (a repaired spare or a replacement), whose life is counted from the fault;
  the other units of the domain keep their ages. Units keep failing whatever the job is doing
  (also while it restarts, waits, or while an elastic replica is out), so the job sees the
  superposition of these renewal processes over its ``job_days`` window.
  Ages at job start follow ``fleet_age``: ``"new"`` (age 0), a number of hours, or
  ``"steady_state"``, where the first failure is drawn from the equilibrium (forward-recurrence)
  distribution :math:`F_e(t) = \frac{1}{\mu}\int_0^t S(x)\,dx`, for a Weibull
  :math:`F_e(t) = P\left(1/k, (t/\eta)^k\right)` (regularised lower incomplete gamma). A
  stationary renewal process fails at :math:`n/\mu` whatever the shape.
* **restart / hot_spare.** The job computes in segments of :math:`\tau` then writes a
  checkpoint of :math:`\delta`. A fault throws away the segment in progress and starts a
  restart of length :math:`R_i`; a fault during a restart starts it again. Between faults
  :math:`i` and :math:`i+1` (gap :math:`g`) the job commits
  :math:`\tau\lfloor (g-R_i)^+/(\tau+\delta)\rfloor` of work. ``restart``:
  :math:`R_i` = detect + reschedule + reload + warmup. ``hot_spare``: :math:`R_i` = detect +
  :math:`W_i` + reload + warmup, where the spare comes from a pool of S domains; each failed
  domain rejoins the pool ``repair_h`` (:math:`r`, a fixed time) after its fault, so fault
  :math:`i` gets the spare freed by fault :math:`i-S` (the pool starts full) and waits
  :math:`W_i = (t_{i-S} + r - t_i - d)^+` after detection :math:`d`; with no spares it waits
  for its own repair.
* **elastic.** A fault stalls every replica for the detection time, and its replica group
  (``max(replica_gpus, failure_domain_gpus)`` GPUs) stays out for detect + :math:`W_i` + reload
  + warmup; the rest keep training (a second fault in a group already out is charged again: a
  conservative, second-order effect). Checkpoints are still written but nothing is rolled back.
  Goodput is :math:`(1-\text{down})(1-\text{stall})\,\tau/(\tau+\delta)`.
* **Proactive drains** (``drain_recall`` > 0). Each fault is warned of with probability
  ``drain_recall``; false alarms are a Poisson process at ``drain_recall`` x (mean fault rate) x
  (1 - precision) / precision. An alarm that finds the job computing is a drain: a checkpoint
  of :math:`\delta` saves the compute of the segment in progress (up to :math:`\tau`) and the
  periodic clock starts again after the migration (``drain_migration_s``); an alarm during a
  restart or a drain is handled within it, at no cost. An unwarned fault during the drain's
  checkpoint loses the segment; during the migration it loses nothing. Every event (fault,
  drain or false alarm) takes the next spare from the pool, which gets it back ``repair_h``
  later; only an unwarned fault waits for it (a warned job keeps training on the domain until
  its spare is in, so a drain costs :math:`\delta` plus the migration whatever the pool).
  ``elastic``: a drained replica group leaves without stalling the others (nothing is rolled
  back, no checkpoint is needed) and is out for the migration.

With exponential lifetimes this is the model of :func:`models.goodput.project`, which it must
match within Monte Carlo error (up to the start and end of the window).
"""

from __future__ import annotations

import heapq
import math
from collections import deque
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import polars as pl
from scipy import special

from models.goodput import SECONDS_PER_HOUR, Scenario, _project_arrays

if TYPE_CHECKING:
    from numpy.typing import NDArray

__all__ = ["simulate_job", "simulate_job_naive"]

_EVENTS_PER_CHUNK = 200_000  # events per chunk of trials: bounds memory, keeps arrays in cache
_LOSSES = ("checkpoint", "rework", "restart", "spares_wait", "drain")


@dataclass(frozen=True)
class _Class:
    units: int
    shape: float
    scale_s: float


@dataclass(frozen=True)
class _Plan:
    """A scenario resolved to the constants the simulation needs, in seconds."""

    horizon_s: float
    n_gpus: float
    classes: tuple[_Class, ...]
    fleet_age: str | float  # "steady_state", "new" or an age in seconds
    tau_s: float
    delta_s: float
    strategy: str
    detect_s: float
    reload_warm_s: float
    restart_s: float
    repair_s: float
    spares: int
    frac_group: float
    gpu_power_w: float
    pue: float
    expected_failures: float
    fleet_age_assumption: str
    drain_recall: float
    false_alarm_rate_s: float
    drain_s: float


def _plan(s: Scenario) -> _Plan:
    core = _project_arrays(s)
    n_domains = math.ceil(s.n_gpus / s.failure_domain_gpus)
    gpus_held = n_domains * s.failure_domain_gpus
    nodes_held = math.ceil(gpus_held / s.gpus_per_node)
    classes = tuple(
        _Class(
            units=gpus_held if r.level == "gpu" else nodes_held,
            shape=r.weibull_shape,
            scale_s=r.mtbf_h * SECONDS_PER_HOUR / math.gamma(1.0 + 1.0 / r.weibull_shape),
        )
        for r in s.class_rates()
    )
    if s.fleet_age == "steady_state":
        age: str | float = "steady_state"
        text = (
            "steady state: each unit's first failure drawn from the equilibrium "
            "(forward-recurrence) distribution, then renewed with a new unit at each failure"
        )
    elif s.fleet_age == "new":
        age = "new"
        text = (
            "new fleet: every unit at age 0 at job start, renewed with a new unit at each failure"
        )
    else:
        age = float(s.fleet_age) * SECONDS_PER_HOUR
        text = (
            f"aged fleet: every unit {float(s.fleet_age):g} h old at job start, renewed with a new "
            "unit at each failure"
        )
    return _Plan(
        horizon_s=s.job_days * 86_400.0,
        n_gpus=float(s.n_gpus),
        classes=classes,
        fleet_age=age,
        tau_s=float(core["checkpoint_interval_min"]) * 60.0,
        delta_s=float(s.checkpoint_s),
        strategy=s.strategy,
        detect_s=float(s.detect_s),
        reload_warm_s=float(s.reload_s + s.warmup_s),
        restart_s=float(s.detect_s + s.reschedule_s + s.reload_s + s.warmup_s),
        repair_s=float(s.repair_h) * SECONDS_PER_HOUR,
        spares=int(s.hot_spares),
        frac_group=min(max(s.replica_gpus, s.failure_domain_gpus) / s.n_gpus, 1.0),
        gpu_power_w=float(s.gpu_power_w),
        pue=float(s.pue),
        expected_failures=float(core["expected_interruptions"]),
        fleet_age_assumption=text,
        drain_recall=float(s.drain_recall),
        false_alarm_rate_s=float(core["expected_false_alarms"]) / (s.job_days * 86_400.0),
        drain_s=float(s.checkpoint_s + s.drain_migration_s),
    )


# --------------------------------------------------------------------------- failure times


def _window_probability(c: _Class, fleet_age: str | float, horizon_s: float) -> float:
    """Probability that a unit's first failure falls in the job window [0, horizon)."""
    k, eta = c.shape, c.scale_s
    if fleet_age == "steady_state":  # F_e(T) = P(1/k, (T/eta)^k)
        return float(special.gammainc(1.0 / k, (horizon_s / eta) ** k))
    if fleet_age == "new":
        return -math.expm1(-((horizon_s / eta) ** k))
    age = float(fleet_age)
    return -math.expm1(-(((age + horizon_s) / eta) ** k - (age / eta) ** k))


def _first_failures_in_window(
    c: _Class, fleet_age: str | float, horizon_s: float, size: int, rng: np.random.Generator
) -> NDArray[np.float64]:
    r"""First failure times of ``size`` units, conditional on falling in [0, horizon).

    New and aged units: inverse of the (residual) Weibull CDF on (0, p). Steady state: the
    equilibrium density is :math:`S(t)/\mu`, so draws uniform on the window accepted with
    probability :math:`S(t)` are exact; acceptance is at least :math:`S(T)`, near 1 when the
    window is short against the unit's life (otherwise the inverse incomplete gamma is used).
    """
    k, eta = c.shape, c.scale_s
    p = _window_probability(c, fleet_age, horizon_s)
    if fleet_age == "steady_state":
        if math.exp(-((horizon_s / eta) ** k)) < 0.5:
            u = rng.random(size) * p
            t = eta * special.gammaincinv(1.0 / k, u) ** (1.0 / k)
        else:
            # S(t) >= S(T) on the window, so u < S(T) accepts without evaluating S(t) (a squeeze)
            floor_s = math.exp(-((horizon_s / eta) ** k))
            t = horizon_s * rng.random(size)
            todo = np.flatnonzero(rng.random(size) >= floor_s)
            while todo.size:
                u = floor_s + (1.0 - floor_s) * rng.random(todo.size)  # u given u >= S(T)
                rejected = u >= np.exp(-((t[todo] / eta) ** k))
                todo = todo[rejected]
                t[todo] = horizon_s * rng.random(todo.size)  # redraw, test again from scratch
                todo = todo[rng.random(todo.size) >= floor_s]
    elif fleet_age == "new":
        t = eta * (-np.log1p(-rng.random(size) * p)) ** (1.0 / k)
    else:
        age = float(fleet_age)
        h_age = (age / eta) ** k
        t = eta * (h_age - np.log1p(-rng.random(size) * p)) ** (1.0 / k) - age
    return np.minimum(np.maximum(t, 0.0), np.nextafter(horizon_s, 0.0))


def _failure_matrix(plan: _Plan, n_trials: int, rng: np.random.Generator) -> NDArray[np.float64]:
    """Failure times of every trial: an (n_trials, max failures) array, sorted, padded with inf.

    Each batch of times (one class's first failures, then one renewal generation at a time) has
    its trial labels in ascending order, so each time's column is its rank within the trial plus
    what earlier batches already filled: no sort of the labels is needed, only of each row.
    """
    horizon = plan.horizon_s
    batches = []
    for c in plan.classes:
        counts = rng.binomial(
            c.units, _window_probability(c, plan.fleet_age, horizon), size=n_trials
        )
        trial = np.repeat(np.arange(n_trials), counts)
        t = _first_failures_in_window(c, plan.fleet_age, horizon, trial.size, rng)
        batches.append((trial, t))
        inv_shape = 1.0 / c.shape
        while t.size:  # renewals, one generation per pass, every trial at once
            t = t + c.scale_s * rng.standard_exponential(t.size) ** inv_shape
            keep = t < horizon
            t, trial = t[keep], trial[keep]
            batches.append((trial, t))
    per_batch = [np.bincount(trial, minlength=n_trials) for trial, _ in batches]
    width = max(int(sum(per_batch).max()) if n_trials else 0, 1)
    matrix = np.full((n_trials, width), np.inf)
    filled = np.zeros(n_trials, dtype=np.int64)
    for (trial, t), counts in zip(batches, per_batch, strict=True):
        if trial.size:
            rank = np.arange(trial.size) - (np.cumsum(counts) - counts)[trial]
            matrix[trial, filled[trial] + rank] = t
            filled += counts
    matrix.sort(axis=1)
    return matrix


# --------------------------------------------------------------------------- accounting


def _alarms(
    plan: _Plan, fail: NDArray[np.float64], rng: np.random.Generator
) -> tuple[NDArray[np.float64], NDArray[np.bool_], NDArray[np.bool_]]:
    """Mark the warned faults and add the false alarms: every event of each trial, sorted.

    Each fault is warned of with probability ``drain_recall``; false alarms are a Poisson
    process at the rate the precision implies. Returns the event times (padded with inf),
    whether each is an alarm (a drain) and whether it is a fault (warned of or not).
    """
    n = fail.shape[0]
    valid = np.isfinite(fail)
    warned = valid & (rng.random(fail.shape) < plan.drain_recall)
    counts = rng.poisson(plan.false_alarm_rate_s * plan.horizon_s, size=n)
    false = np.full((n, int(counts.max()) if n else 0), np.inf)
    trial = np.repeat(np.arange(n), counts)
    rank = np.arange(trial.size) - (np.cumsum(counts) - counts)[trial]
    false[trial, rank] = plan.horizon_s * rng.random(trial.size)
    times = np.concatenate([fail, false], axis=1)
    order = np.argsort(times, axis=1, kind="stable")
    width = max(int(np.isfinite(times).sum(axis=1).max()) if n else 0, 1)
    order = order[:, :width]
    alarm = np.concatenate([warned, np.isfinite(false)], axis=1)
    fault = np.concatenate([valid, np.zeros(false.shape, dtype=bool)], axis=1)
    return (
        np.take_along_axis(times, order, axis=1),
        np.take_along_axis(alarm, order, axis=1),
        np.take_along_axis(fault, order, axis=1),
    )


def _spare_waits(plan: _Plan, fail: NDArray[np.float64]) -> NDArray[np.float64]:
    """Wait for a spare after each fault: fault i gets the spare freed by fault i - S."""
    return np.where(
        np.isfinite(fail), np.maximum(_spare_tokens(plan, fail) - fail - plan.detect_s, 0.0), 0.0
    )


def _spare_tokens(plan: _Plan, times: NDArray[np.float64]) -> NDArray[np.float64]:
    """When the spare each event takes is free: event i gets the one freed by event i - S."""
    n, width = times.shape
    s = plan.spares
    if s == 0:
        return times + plan.repair_s
    if s >= width:
        return np.zeros_like(times)
    return np.concatenate([np.zeros((n, s)), times[:, : width - s] + plan.repair_s], axis=1)


def _account(plan: _Plan, fail: NDArray[np.float64]) -> dict[str, NDArray[np.float64]]:
    """Per-trial goodput, interruptions and loss fractions from sorted failure times."""
    horizon = plan.horizon_s
    tau, delta = plan.tau_s, plan.delta_s
    seg = tau + delta
    detect = plan.detect_s
    n = fail.shape[0]
    valid = np.isfinite(fail)
    count = valid.sum(axis=1).astype(float)
    no_drains = {"n_drains": np.zeros(n), "drain": np.zeros(n)}
    with np.errstate(invalid="ignore"):
        wait = None if plan.strategy == "restart" else _spare_waits(plan, fail)
        if plan.strategy == "elastic":
            remaining = np.maximum(horizon - fail, 0.0)  # 0 for padding
            out_s = wait + (detect + plan.reload_warm_s)
            down = plan.frac_group * np.minimum(out_s, remaining).sum(axis=1) / horizon
            down = np.minimum(down, 1.0)
            waiting = np.minimum(np.maximum(remaining - detect, 0.0), wait).sum(axis=1)
            waiting = np.minimum(plan.frac_group * waiting / horizon, down)
            stall = np.minimum(np.minimum(remaining, detect).sum(axis=1) / horizon, 1.0)
            running = (1.0 - down) * (1.0 - stall)
            return {
                "goodput": running * tau / seg,
                "n_interruptions": count,
                "checkpoint": running * delta / seg,
                "rework": np.zeros(n),
                "restart": down - waiting + (1.0 - down) * stall,
                "spares_wait": waiting,
                **no_drains,
            }
        # the stretch before the first fault: computing from t = 0, no restart
        first = np.minimum(fail[:, 0], horizon)
        segments = np.floor(first / seg)
        compute = first.copy()
        # the gap after each fault, to the next fault or the end of the window
        gap = np.empty_like(fail)
        gap[:, :-1] = fail[:, 1:]
        gap[:, -1] = horizon
        np.minimum(gap, horizon, out=gap)
        gap -= fail
        np.maximum(gap, 0.0, out=gap)  # padding: -inf -> 0
        restart = plan.restart_s if wait is None else wait + (detect + plan.reload_warm_s)
        busy = gap - restart
        np.maximum(busy, 0.0, out=busy)
        compute += busy.sum(axis=1)
        busy /= seg
        np.floor(busy, out=busy)
        segments += busy.sum(axis=1)
        in_restart = np.minimum(gap, restart).sum(axis=1)
        if wait is None:
            waiting = np.zeros(n)
        else:
            gap -= detect
            np.maximum(gap, 0.0, out=gap)
            waiting = np.minimum(gap, wait).sum(axis=1)
    return {
        "goodput": tau * segments / horizon,
        "n_interruptions": count,
        "checkpoint": delta * segments / horizon,
        "rework": (compute - seg * segments) / horizon,
        "restart": (in_restart - waiting) / horizon,
        "spares_wait": waiting / horizon,
        **no_drains,
    }


def _acting(
    t: NDArray[np.float64],
    end: NDArray[np.float64],
    valid: NDArray[np.bool_],
    alarm: NDArray[np.bool_],
) -> tuple[NDArray[np.bool_], NDArray[np.int64]]:
    """Which events act, and the column of the acting event before each (-1: none).

    Every fault acts; an alarm acts when the job is computing, that is when the last acting
    event's restart or drain (which ends at ``end``) is over. Starting from the faults alone (so
    the first pass already rules out the alarms inside a fault's restart), each pass settles at
    least the next unsettled event of every trial, and a pass that changes nothing is the
    solution.
    """
    n, width = t.shape
    cols = np.arange(width)
    acting = valid & ~alarm
    while True:
        last = np.maximum.accumulate(np.where(acting, cols, -1), axis=1)
        prev = np.concatenate([np.full((n, 1), -1), last[:, :-1]], axis=1)
        prev_end = np.take_along_axis(end, np.maximum(prev, 0), axis=1)
        prev_end[prev < 0] = -np.inf
        settled = valid & (~alarm | (t >= prev_end))
        if np.array_equal(settled, acting):
            return acting, prev
        acting = settled


def _account_drained(
    plan: _Plan,
    t: NDArray[np.float64],
    alarm: NDArray[np.bool_],
    fault: NDArray[np.bool_],
) -> dict[str, NDArray[np.float64]]:
    """Per-trial accounting with proactive drains (the model is in the module docstring).

    ``alarm`` marks the events that are alarms (drains), ``fault`` those that are faults,
    warned of or not.
    """
    horizon = plan.horizon_s
    tau, delta = plan.tau_s, plan.delta_s
    seg = tau + delta
    detect = plan.detect_s
    migration = plan.drain_s - delta
    valid = np.isfinite(t)
    unwarned = valid & ~alarm
    count = fault.sum(axis=1).astype(float)
    with np.errstate(invalid="ignore"):
        # every event takes the next spare; only an unwarned fault waits for it (a drain keeps
        # training on the warned domain until its spare is in); restart uses the scheduler
        if plan.strategy == "restart":
            wait = np.zeros_like(t)
        else:
            wait = np.maximum(_spare_tokens(plan, t) - t - detect, 0.0)
            wait = np.where(unwarned, wait, 0.0)
        if plan.strategy == "elastic":
            # a drained group leaves without stalling the others and moves onto its spare
            remaining = np.maximum(horizon - t, 0.0)  # 0 for padding
            out_s = np.where(alarm, migration, wait + (detect + plan.reload_warm_s))
            down = plan.frac_group * np.minimum(out_s, remaining).sum(axis=1) / horizon
            down = np.minimum(down, 1.0)
            waiting = np.minimum(np.maximum(remaining - detect, 0.0), wait).sum(axis=1)
            waiting = np.minimum(plan.frac_group * waiting / horizon, down)
            moving = np.where(alarm, np.minimum(remaining, migration), 0.0).sum(axis=1)
            moving = np.minimum(plan.frac_group * moving / horizon, down - waiting)
            stall = np.where(alarm, 0.0, np.minimum(remaining, detect)).sum(axis=1)
            stall = np.minimum(stall / horizon, 1.0)
            running = (1.0 - down) * (1.0 - stall)
            return {
                "goodput": running * tau / seg,
                "n_interruptions": count,
                "n_drains": (valid & alarm).sum(axis=1).astype(float),
                "checkpoint": running * delta / seg,
                "rework": np.zeros(t.shape[0]),
                "restart": down - waiting - moving + (1.0 - down) * stall,
                "spares_wait": waiting,
                "drain": moving,
            }
        restart = plan.restart_s if plan.strategy == "restart" else detect + plan.reload_warm_s
        busy = wait + np.where(alarm, plan.drain_s, restart)
        acting, prev = _acting(t, t + busy, valid, alarm)
        # each acting event's gap runs to the next acting event or the end of the window
        later = np.minimum.accumulate(np.where(acting, t, np.inf)[:, ::-1], axis=1)[:, ::-1]
        after = np.full_like(t, horizon)
        after[:, :-1] = np.minimum(later[:, 1:], horizon)
        gap = np.where(acting, after - t, 0.0)
        in_busy = np.minimum(gap, busy)
        compute = np.maximum(gap - busy, 0.0)
        segments = np.floor(compute / seg)
        partial = compute - seg * segments  # compute in the segment the next event interrupts
        first = np.minimum(later[:, 0], horizon)  # the stretch before the first event
        first_segments = np.floor(first / seg)
        partial = np.concatenate([(first - seg * first_segments)[:, None], partial], axis=1)
        # a drain saves the compute of the segment it interrupts if its checkpoint completes
        drains = acting & alarm
        carried = np.take_along_axis(partial, prev + 1, axis=1)
        kept = np.where(drains & (gap >= delta), np.minimum(carried, tau), 0.0).sum(axis=1)
        n_segments = first_segments + segments.sum(axis=1)
        compute_s = first + compute.sum(axis=1)
        waiting = np.where(unwarned, np.minimum(np.maximum(gap - detect, 0.0), wait), 0.0)
        in_restart = np.where(unwarned, in_busy - waiting, 0.0).sum(axis=1)
        drain = np.where(drains, in_busy, 0.0).sum(axis=1)
        waiting = waiting.sum(axis=1)
    return {
        "goodput": (tau * n_segments + kept) / horizon,
        "n_interruptions": count,
        "n_drains": drains.sum(axis=1).astype(float),
        "checkpoint": delta * n_segments / horizon,
        "rework": (compute_s - seg * n_segments - kept) / horizon,
        "restart": in_restart / horizon,
        "spares_wait": waiting / horizon,
        "drain": drain / horizon,
    }


def _standard_error(x: NDArray[np.float64]) -> float:
    """Monte Carlo standard error of the mean of ``x``: sd / sqrt(n)."""
    return float(x.std(ddof=1) / math.sqrt(x.size)) if x.size > 1 else math.nan


def _summary(plan: _Plan, per_trial: dict[str, NDArray[np.float64]], method: str) -> dict[str, Any]:
    n = per_trial["goodput"].size
    horizon_h = plan.horizon_s / SECONDS_PER_HOUR
    gpu_h = plan.n_gpus * horizon_h
    goodput = per_trial["goodput"]
    count = per_trial["n_interruptions"]
    drains = per_trial["n_drains"]
    mean_count = float(count.mean())
    lost = {key: float(per_trial[key].mean()) * gpu_h for key in _LOSSES}
    lost_total = (1.0 - float(goodput.mean())) * gpu_h
    trials = pl.DataFrame(
        {
            "trial": np.arange(n),
            "goodput": goodput,
            "n_interruptions": count.astype(np.int64),
            "n_drains": drains.astype(np.int64),
            **{f"lost_frac_{key}": per_trial[key] for key in _LOSSES},
        }
    )
    return {
        "method": method,
        "n_trials": n,
        "strategy": plan.strategy,
        "goodput": float(goodput.mean()),
        "goodput_se": _standard_error(goodput),
        "goodput_lo": float(np.quantile(goodput, 0.025)),
        "goodput_hi": float(np.quantile(goodput, 0.975)),
        "interruptions": mean_count,
        "interruptions_se": _standard_error(count),
        "drains": float(drains.mean()),
        "drains_se": _standard_error(drains),
        "mtti_h": horizon_h / mean_count if mean_count > 0 else math.inf,
        "mtti_h_se": horizon_h * _standard_error(count) / mean_count**2
        if mean_count > 0
        else math.nan,
        "checkpoint_interval_min": plan.tau_s / 60.0,
        **{f"lost_gpu_h_{key}": value for key, value in lost.items()},
        "lost_gpu_h_total": lost_total,
        "energy_lost_mwh": lost_total * plan.gpu_power_w * plan.pue / 1e6,
        "fleet_age_assumption": plan.fleet_age_assumption,
        "trials": trials,
    }


def simulate_job(
    scenario: Scenario,
    *,
    n_trials: int = 1000,
    random_state: int | np.random.Generator | None = None,
) -> dict[str, Any]:
    """Monte Carlo of the training job, vectorised over trials and failures.

    Parameters
    ----------
    scenario
        The job and fleet (see :class:`~models.goodput.Scenario`); a ``None`` checkpoint interval
        is Daly's optimum for the analytical MTTI, as in :func:`~models.goodput.project`.
    n_trials
        Independent runs of the ``job_days`` window.
    random_state
        Seed or generator.

    Returns
    -------
    dict
        ``goodput`` (mean over trials) with ``goodput_se`` (its Monte Carlo standard error) and
        ``goodput_lo`` / ``goodput_hi`` (2.5/97.5 % of trials); ``interruptions`` (mean faults
        in the window, warned of or not) with ``interruptions_se``; ``drains`` (mean drains
        done) with ``drains_se``; ``mtti_h`` with ``mtti_h_se`` (delta method);
        ``checkpoint_interval_min``; ``lost_gpu_h_checkpoint`` / ``_rework`` / ``_restart`` /
        ``_spares_wait`` / ``_drain`` / ``_total``; ``energy_lost_mwh``;
        ``fleet_age_assumption``; and ``trials``, a polars frame with one row per trial.

    Notes
    -----
    Per class, the number of units whose first failure falls in the window is binomial and
    their times come from the conditional inverse CDF (steady state: exact rejection from the
    uniform, with a squeeze); renewals are drawn one generation at a time for all trials at
    once. Restarts, spare waits and committed work are then computed
    with array operations on the (trials x failures) matrix, in chunks of trials that bound
    memory. With drains, the alarms that act (those finding the job computing) are found by a
    fixed-point pass over the matrix, each pass settling at least one more event per trial. The
    module docstring states the job model.
    """
    if n_trials < 1:
        msg = f"n_trials must be at least 1, got {n_trials}."
        raise ValueError(msg)
    plan = _plan(scenario)
    rng = np.random.default_rng(random_state)
    events = plan.expected_failures + plan.false_alarm_rate_s * plan.horizon_s
    chunk = int(min(n_trials, max(1, _EVENTS_PER_CHUNK // (events * 1.2 + 10))))
    parts = []
    for start in range(0, n_trials, chunk):
        size = min(chunk, n_trials - start)
        fail = _failure_matrix(plan, size, rng)
        if plan.drain_recall > 0:
            parts.append(_account_drained(plan, *_alarms(plan, fail, rng)))
        else:
            parts.append(_account(plan, fail))
    per_trial = {key: np.concatenate([part[key] for part in parts]) for key in parts[0]}
    return _summary(plan, per_trial, "vectorised")


# --------------------------------------------------------------------------- naive baseline


def _all_first_failures(
    c: _Class, fleet_age: str | float, rng: np.random.Generator
) -> NDArray[np.float64]:
    r"""First failure time of every unit, drawn directly (no conditioning on the window).

    Steady state uses the length-biased construction: the forward-recurrence time is
    :math:`U \eta G^{1/k}` with :math:`G \sim \mathrm{Gamma}(1 + 1/k)` and :math:`U` uniform.
    """
    k, eta = c.shape, c.scale_s
    if fleet_age == "steady_state":
        return rng.random(c.units) * eta * rng.gamma(1.0 + 1.0 / k, size=c.units) ** (1.0 / k)
    if fleet_age == "new":
        return eta * rng.standard_exponential(c.units) ** (1.0 / k)
    age = float(fleet_age)
    return eta * ((age / eta) ** k + rng.standard_exponential(c.units)) ** (1.0 / k) - age


def _naive_trial(plan: _Plan, rng: np.random.Generator) -> dict[str, float]:
    horizon = plan.horizon_s
    heap: list[tuple[float, int]] = []
    for index, c in enumerate(plan.classes):
        first = _all_first_failures(c, plan.fleet_age, rng)
        heap.extend((float(t), index) for t in first[first < horizon])
    if plan.drain_recall > 0:  # false alarms: index -1, never renewed
        n_false = rng.poisson(plan.false_alarm_rate_s * horizon)
        heap.extend((float(t), -1) for t in horizon * rng.random(n_false))
    heapq.heapify(heap)
    tau, delta = plan.tau_s, plan.delta_s
    seg = tau + delta
    detect = plan.detect_s
    spares: deque[float] = deque([0.0] * plan.spares)
    n_fail = n_drains = 0
    committed = checkpoint = rework = restart = waiting = drain = 0.0
    down = down_wait = stall = moving = 0.0
    migration = plan.drain_s - delta
    last_t, last_busy, last_w = 0.0, 0.0, 0.0
    last_alarm = False
    pending = 0.0  # compute of the segment a drain interrupted, saved if its checkpoint completes

    def close(end: float, *, next_alarm: bool) -> None:
        nonlocal committed, checkpoint, rework, restart, waiting, drain, pending
        gap = end - last_t
        if last_alarm:
            drain += min(gap, last_busy)
            saved = min(pending, tau) if gap >= delta else 0.0
            committed += saved
            rework += pending - saved
        else:
            w = min(max(gap - detect, 0.0), last_w)
            restart += min(gap, last_busy) - w
            waiting += w
        pending = 0.0
        if gap > last_busy:
            compute = gap - last_busy
            k = math.floor(compute / seg)
            committed += k * tau
            checkpoint += k * delta
            if next_alarm:
                pending = compute - k * seg
            else:
                rework += compute - k * seg

    while heap:
        t, index = heapq.heappop(heap)
        alarm = index < 0
        if not alarm:
            c = plan.classes[index]
            renewed = t + c.scale_s * rng.standard_exponential() ** (1.0 / c.shape)
            if renewed < horizon:
                heapq.heappush(heap, (renewed, index))
            n_fail += 1
            alarm = plan.drain_recall > 0 and rng.random() < plan.drain_recall
        w = 0.0
        if plan.strategy != "restart":
            spares.append(t + plan.repair_s)
            token = spares.popleft()  # a drain takes it too, but keeps training until it is in
            w = 0.0 if alarm else max(token - t - detect, 0.0)
        if plan.strategy == "elastic":
            remaining = horizon - t
            if alarm:  # the group leaves without stalling the others, moves onto its spare
                n_drains += 1
                down += plan.frac_group * min(migration, remaining)
                moving += plan.frac_group * min(migration, remaining)
                continue
            down += plan.frac_group * min(detect + w + plan.reload_warm_s, remaining)
            down_wait += plan.frac_group * min(max(remaining - detect, 0.0), w)
            stall += min(detect, remaining)
            continue
        if alarm and t < last_t + last_busy:
            continue  # the job is restarting or draining: the alarm is handled within
        close(t, next_alarm=alarm)
        last_t = t
        last_w = w
        last_alarm = alarm
        if alarm:
            n_drains += 1
            last_busy = plan.drain_s
        elif plan.strategy == "restart":
            last_busy = plan.restart_s
        else:
            last_busy = detect + w + plan.reload_warm_s
    if plan.strategy == "elastic":
        down_f = min(down / horizon, 1.0)
        wait_f = min(down_wait / horizon, down_f)
        stall_f = min(stall / horizon, 1.0)
        running = (1.0 - down_f) * (1.0 - stall_f)
        drain_f = min(moving / horizon, down_f - wait_f)
        return {
            "goodput": running * tau / seg,
            "n_interruptions": float(n_fail),
            "n_drains": float(n_drains),
            "checkpoint": running * delta / seg,
            "rework": 0.0,
            "restart": down_f - wait_f + (1.0 - down_f) * stall_f - drain_f,
            "spares_wait": wait_f,
            "drain": drain_f,
        }
    close(horizon, next_alarm=False)
    return {
        "goodput": committed / horizon,
        "n_interruptions": float(n_fail),
        "n_drains": float(n_drains),
        "checkpoint": checkpoint / horizon,
        "rework": rework / horizon,
        "restart": restart / horizon,
        "spares_wait": waiting / horizon,
        "drain": drain / horizon,
    }


def simulate_job_naive(
    scenario: Scenario,
    *,
    n_trials: int = 100,
    random_state: int | np.random.Generator | None = None,
) -> dict[str, Any]:
    """Run the same Monte Carlo as :func:`simulate_job`, one Python step per failure.

    Draws every unit's first failure directly, keeps the pending failures in a heap, and walks
    them in time order, updating the job's state (restart, spare pool, committed work) at each.
    It shares no sampling code with :func:`simulate_job`, which makes it the cross-check for the
    vectorised version and the baseline of ``bench/bench_simulate.py``.

    Parameters
    ----------
    scenario
        The job and fleet.
    n_trials
        Independent runs of the ``job_days`` window.
    random_state
        Seed or generator.

    Returns
    -------
    dict
        The same keys as :func:`simulate_job`.
    """
    if n_trials < 1:
        msg = f"n_trials must be at least 1, got {n_trials}."
        raise ValueError(msg)
    plan = _plan(scenario)
    rng = np.random.default_rng(random_state)
    rows = [_naive_trial(plan, rng) for _ in range(n_trials)]
    per_trial = {key: np.array([row[key] for row in rows]) for key in rows[0]}
    return _summary(plan, per_trial, "naive")
