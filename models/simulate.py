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


def _spare_waits(plan: _Plan, fail: NDArray[np.float64]) -> NDArray[np.float64]:
    """Wait for a spare after each fault: fault i gets the spare freed by fault i - S."""
    n, width = fail.shape
    s = plan.spares
    if s == 0:
        token = fail + plan.repair_s
    elif s >= width:
        token = np.zeros_like(fail)
    else:
        token = np.concatenate([np.zeros((n, s)), fail[:, : width - s] + plan.repair_s], axis=1)
    return np.where(np.isfinite(fail), np.maximum(token - fail - plan.detect_s, 0.0), 0.0)


def _account(plan: _Plan, fail: NDArray[np.float64]) -> dict[str, NDArray[np.float64]]:
    """Per-trial goodput, interruptions and loss fractions from sorted failure times."""
    horizon = plan.horizon_s
    tau, delta = plan.tau_s, plan.delta_s
    seg = tau + delta
    detect = plan.detect_s
    n = fail.shape[0]
    valid = np.isfinite(fail)
    count = valid.sum(axis=1).astype(float)
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
    mean_count = float(count.mean())
    lost = {
        key: float(per_trial[key].mean()) * gpu_h
        for key in ("checkpoint", "rework", "restart", "spares_wait")
    }
    lost_total = (1.0 - float(goodput.mean())) * gpu_h
    trials = pl.DataFrame(
        {
            "trial": np.arange(n),
            "goodput": goodput,
            "n_interruptions": count.astype(np.int64),
            **{
                f"lost_frac_{key}": per_trial[key]
                for key in ("checkpoint", "rework", "restart", "spares_wait")
            },
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
        in the window) with ``interruptions_se``; ``mtti_h`` with ``mtti_h_se`` (delta method);
        ``checkpoint_interval_min``; ``lost_gpu_h_checkpoint`` / ``_rework`` / ``_restart`` /
        ``_spares_wait`` / ``_total``; ``energy_lost_mwh``; ``fleet_age_assumption``; and
        ``trials``, a polars frame with one row per trial.

    Notes
    -----
    Per class, the number of units whose first failure falls in the window is binomial and
    their times come from the conditional inverse CDF (steady state: exact rejection from the
    uniform, with a squeeze); renewals are drawn one generation at a time for all trials at
    once. Restarts, spare waits and committed work are then computed
    with array operations on the (trials x failures) matrix, in chunks of trials that bound
    memory. The module docstring states the job model.
    """
    if n_trials < 1:
        msg = f"n_trials must be at least 1, got {n_trials}."
        raise ValueError(msg)
    plan = _plan(scenario)
    rng = np.random.default_rng(random_state)
    chunk = int(min(n_trials, max(1, _EVENTS_PER_CHUNK // (plan.expected_failures * 1.2 + 10))))
    parts = []
    for start in range(0, n_trials, chunk):
        size = min(chunk, n_trials - start)
        parts.append(_account(plan, _failure_matrix(plan, size, rng)))
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
    heapq.heapify(heap)
    tau, delta = plan.tau_s, plan.delta_s
    seg = tau + delta
    detect = plan.detect_s
    spares: deque[float] = deque([0.0] * plan.spares)
    n_fail = 0
    committed = checkpoint = rework = restart = waiting = 0.0
    down = down_wait = stall = 0.0
    last_t, last_r, last_w = 0.0, 0.0, 0.0

    def close(end: float) -> None:
        nonlocal committed, checkpoint, rework, restart, waiting
        gap = end - last_t
        w = min(max(gap - detect, 0.0), last_w)
        restart += min(gap, last_r) - w
        waiting += w
        if gap > last_r:
            compute = gap - last_r
            k = math.floor(compute / seg)
            committed += k * tau
            checkpoint += k * delta
            rework += compute - k * seg

    while heap:
        t, index = heapq.heappop(heap)
        c = plan.classes[index]
        renewed = t + c.scale_s * rng.standard_exponential() ** (1.0 / c.shape)
        if renewed < horizon:
            heapq.heappush(heap, (renewed, index))
        n_fail += 1
        w = 0.0
        if plan.strategy != "restart":
            spares.append(t + plan.repair_s)
            w = max(spares.popleft() - t - detect, 0.0)
        if plan.strategy == "elastic":
            remaining = horizon - t
            down += plan.frac_group * min(detect + w + plan.reload_warm_s, remaining)
            down_wait += plan.frac_group * min(max(remaining - detect, 0.0), w)
            stall += min(detect, remaining)
            continue
        close(t)
        last_t = t
        last_w = w
        last_r = plan.restart_s if plan.strategy == "restart" else detect + w + plan.reload_warm_s
    if plan.strategy == "elastic":
        down_f = min(down / horizon, 1.0)
        wait_f = min(down_wait / horizon, down_f)
        stall_f = min(stall / horizon, 1.0)
        running = (1.0 - down_f) * (1.0 - stall_f)
        return {
            "goodput": running * tau / seg,
            "n_interruptions": float(n_fail),
            "checkpoint": running * delta / seg,
            "rework": 0.0,
            "restart": down_f - wait_f + (1.0 - down_f) * stall_f,
            "spares_wait": wait_f,
        }
    close(horizon)
    return {
        "goodput": committed / horizon,
        "n_interruptions": float(n_fail),
        "checkpoint": checkpoint / horizon,
        "rework": rework / horizon,
        "restart": restart / horizon,
        "spares_wait": waiting / horizon,
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
