r"""Monte Carlo of a training job on a fleet with Weibull lifetimes, spares and repair times.

The model, shared by :func:`simulate_job` (vectorised over trials and failures) and
:func:`simulate_job_naive` (one Python step per failure, the baseline and cross-check):

* **Failures.** Every unit (a GPU, or a node, per :class:`~models.scenario.ClassRate`) in the
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
  stationary renewal process fails at :math:`n/\mu` whatever the shape. The shapes are those of
  ``scenario.class_rates()``, so the ``weibull_shape`` override (fleet wide or per class, each
  class keeping its MTBF) applies as it does in the analysis.
* **Node groups** (``node_groups``). Each group of ``scenario.unit_groups()`` holds
  ``round(share x units)`` units of every class (the last group, normally the ordinary rest,
  takes what is left, so the units add up) whose lifetimes are the class's scaled by
  :math:`1/m` (same shape, MTBF / :math:`m`, the same age for an aged fleet): a group is simply
  a class of its own. A multiplier of 1 changes nothing; one group holding every unit at
  :math:`m` is the fleet with every MTBF divided by :math:`m`.
* **Age mix** (``fleet_age`` as ``(age_h, share)`` pairs). Each node group of each class is
  split again the same way, ``round(share x units)`` per age (the oldest takes the rest): a
  sub-class whose units are all that old at job start.
* **Interruptions.** Hardware faults, plus job-level interruptions (``job_interruptions_per_h``):
  a Poisson process in wall-clock time that does not grow with the job, never warned of. Each
  unwarned interruption (fault or job-level) is a hang with probability ``hang_share``, noticed
  after ``detect_hang_s`` (the collective watchdog), else a crash noticed after ``detect_s``:
  its detection :math:`d_i`.
* **restart / hot_spare.** The job computes in segments of :math:`\tau` then writes a
  checkpoint of :math:`\delta`. An interruption throws away the segment in progress and starts
  a restart of length :math:`R_i`; an interruption during a restart starts it again. Between
  interruptions :math:`i` and :math:`i+1` (gap :math:`g`) the job commits
  :math:`\tau\lfloor (g-R_i)^+/(\tau+\delta)\rfloor` of work. A fault under ``restart``:
  :math:`R_i = d_i` + reschedule + reload + warmup. A fault under ``hot_spare``:
  :math:`R_i = d_i + W_i` + reload + warmup, where :math:`W_i` is the wait for a spare below.
  A job-level interruption restarts in place: :math:`R_i = d_i + W_i` + reload + warmup with no
  reschedule and no spare of its own, but the job still cannot run before the domain of its
  latest fault is in: :math:`W_i` is the wait for that one (0 when it is in, and always under
  ``restart``). With exponential faults this is Daly's renewal reward with the summed rate
  :math:`\lambda` and :math:`e^{-R/M}` replaced by its mean :math:`E[e^{-\lambda R}]` over the
  kinds of interruption and of detection.
* **Spare pool** (``hot_spare``, ``elastic``). The pool starts full with S domains; each failed
  domain goes to repair at its fault and is back after :math:`r_j`: ``repair_h``, or with
  ``repair_sigma`` > 0 a log-normal draw with median ``repair_h`` and log-sd ``repair_sigma``.
  Claims are served first come, first served in the order of the faults (a domain back goes to
  the oldest open claim; the job asks at detection, and a domain back earlier is held for it).
  Claim :math:`i` is then served once :math:`i` domains are available, at
  :math:`a_{(i)}`, the :math:`i`-th smallest of :math:`\{0^{\times S}\} \cup \{t_j + r_j\}`
  (counting: by any time :math:`x`, claims served = min(claims made, domains back)); it waits
  :math:`W_i = (a_{(i)} - t_i - d_i)^+` after detection. The vectorised engine sorts that set
  per trial; with a fixed repair it is already sorted and :math:`a_{(i)} = t_{i-S} + r` (the
  spare freed by fault :math:`i-S`; with no spares, fault :math:`i`'s own repair). With
  random repairs and no spares a fault can get a domain other than its own: the first back.
  Under ``restart`` the scheduler supplies the hardware (the reschedule time) and no pool is
  kept.
* **elastic.** A fault stalls every replica for its detection :math:`d_i`, and its replica group
  (``max(replica_gpus, failure_domain_gpus)`` GPUs) stays out for :math:`d_i + W_i` + reload
  + warmup; the rest keep training (a second fault in a group already out is charged again: a
  conservative, second-order effect). Checkpoints are still written but nothing is rolled back.
  Goodput is :math:`(1-\text{down})(1-\text{stall})\,\tau/(\tau+\delta)`. A job-level
  interruption rolls the whole job back: those interruptions alone make a restart timeline as
  above (:math:`R_i = d_i` + reload + warmup), and the share :math:`c` of the window it spends
  in whole segments runs at the elastic rate; the two are taken as independent, so goodput is
  the timeline's goodput times :math:`(1-\text{down})(1-\text{stall})` and each elastic loss is
  scaled by :math:`c` (at a rate of 0 the timeline is skipped: no window-end segment is lost).
* **Proactive drains** (``drain_recall`` > 0). Each fault is warned of with probability
  ``drain_recall``; false alarms are a Poisson process at ``drain_recall`` x (mean fault rate) x
  (1 - precision) / precision, the mean fault rate being the analytical one. An alarm that finds
  the job computing is a drain: a checkpoint of :math:`\delta` saves the compute of the segment
  in progress (up to :math:`\tau`) and the periodic clock starts again after the migration
  (``drain_migration_s``); an alarm during a restart or a drain is handled within it, at no
  cost. An unwarned interruption during the drain's checkpoint loses the segment; during the
  migration it loses nothing. Every fault (warned or not) and false alarm claims a spare from
  the pool, as above; only an unwarned fault waits for it (a warned job keeps training on the
  domain until its spare is in, so a drain costs :math:`\delta` plus the migration whatever the
  pool). Job-level interruptions are never warned of and never drained. ``elastic``: a drained
  replica group leaves without stalling the others (nothing is rolled back, no checkpoint is
  needed) and is out for the migration.

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

from models.goodput import project_arrays
from models.scenario import SECONDS_PER_HOUR, Scenario

if TYPE_CHECKING:
    from collections.abc import Sequence

    from numpy.typing import NDArray

__all__ = ["simulate_job", "simulate_job_naive"]

_EVENTS_PER_CHUNK = 200_000  # events per chunk of trials: bounds memory, keeps arrays in cache
_LOSSES = ("checkpoint", "rework", "restart", "spares_wait", "drain")


@dataclass(frozen=True)
class _Class:
    units: int
    shape: float
    scale_s: float
    age: str | float  # "steady_state", "new" or the units' age at job start, seconds


@dataclass(frozen=True)
class _Plan:
    """A scenario resolved to the constants the simulation needs, in seconds."""

    horizon_s: float
    n_gpus: float
    classes: tuple[_Class, ...]
    tau_s: float
    delta_s: float
    strategy: str
    detect_s: float
    detect_hang_s: float
    hang_share: float
    reload_warm_s: float
    reschedule_s: float
    repair_s: float
    repair_sigma: float
    spares: int
    frac_group: float
    gpu_power_w: float
    pue: float
    expected_failures: float
    fleet_age_assumption: str
    drain_recall: float
    false_alarm_rate_s: float
    drain_s: float
    job_rate_s: float

    @property
    def hardware_fixed_s(self) -> float:
        """Restart of a hardware fault after detection and any spare wait."""
        extra = self.reschedule_s if self.strategy == "restart" else 0.0
        return extra + self.reload_warm_s


def _group_units(units: int, groups: Sequence[tuple[float, Any]]) -> list[tuple[int, Any]]:
    """Units of one class in each group ``(share, value)`` (a node group's rate multiplier or an
    age): ``round(share * units)``, the last takes the rest."""
    out = []
    left = units
    for share, multiplier in groups[:-1]:
        n = min(round(share * units), left)
        out.append((n, multiplier))
        left -= n
    out.append((left, groups[-1][1]))
    return out


def _plan(s: Scenario) -> _Plan:
    core = project_arrays(s)
    n_domains = math.ceil(s.n_gpus / s.failure_domain_gpus)
    gpus_held = n_domains * s.failure_domain_gpus
    nodes_held = math.ceil(gpus_held / s.gpus_per_node)
    groups = s.unit_groups()
    if isinstance(s.fleet_age, tuple):  # an age mix: a split of every class, like node groups
        ages: tuple[tuple[float, str | float], ...] = tuple(
            (share, age_h * SECONDS_PER_HOUR) for age_h, share in s.fleet_age
        )
    elif s.fleet_age in ("steady_state", "new"):
        ages = ((1.0, str(s.fleet_age)),)
    else:
        ages = ((1.0, float(s.fleet_age) * SECONDS_PER_HOUR),)
    classes = []
    for r in s.class_rates():
        to_scale = SECONDS_PER_HOUR / math.gamma(1.0 + 1.0 / r.weibull_shape)
        units = gpus_held if r.level == "gpu" else nodes_held
        # a node group is a class of its own: same shape, lifetimes scaled by 1 / multiplier;
        # each group is then split by age (the product of the two splits)
        for n, multiplier in _group_units(units, groups):
            for n_aged, age in _group_units(n, ages):
                if n_aged > 0:
                    scale_s = r.mtbf_h / multiplier * to_scale
                    classes.append(_Class(n_aged, r.weibull_shape, scale_s, age))
    # only for sizing chunks of trials: the analytical count of hardware faults (node groups
    # included; the job-level interruptions are added where the chunks are sized)
    hardware_faults = float(core["expected_interruptions"]) - s.job_interruptions_per_h * (
        s.job_days * 24.0
    )
    if s.fleet_age == "steady_state":
        text = (
            "steady state: each unit's first failure drawn from the equilibrium "
            "(forward-recurrence) distribution, then renewed with a new unit at each failure"
        )
    elif s.fleet_age == "new":
        text = (
            "new fleet: every unit at age 0 at job start, renewed with a new unit at each failure"
        )
    elif isinstance(s.fleet_age, tuple):
        mix = ", ".join(f"{share:.3g} at {age_h:g} h" for age_h, share in s.fleet_age)
        text = (
            f"age mix: round(share x units) of every class (and node group) that old at job "
            f"start ({mix}), renewed with a new unit at each failure"
        )
    else:
        text = (
            f"aged fleet: every unit {float(s.fleet_age):g} h old at job start, renewed with a new "
            "unit at each failure"
        )
    return _Plan(
        horizon_s=s.job_days * 86_400.0,
        n_gpus=float(s.n_gpus),
        classes=tuple(classes),
        tau_s=float(core["checkpoint_interval_min"]) * 60.0,
        delta_s=float(s.checkpoint_s),
        strategy=s.strategy,
        detect_s=float(s.detect_s),
        detect_hang_s=float(s.detect_hang_s),
        hang_share=float(s.hang_share),
        reload_warm_s=float(s.reload_s + s.warmup_s),
        reschedule_s=float(s.reschedule_s),
        repair_s=float(s.repair_h) * SECONDS_PER_HOUR,
        repair_sigma=float(s.repair_sigma),
        spares=int(s.hot_spares),
        frac_group=min(max(s.replica_gpus, s.failure_domain_gpus) / s.n_gpus, 1.0),
        gpu_power_w=float(s.gpu_power_w),
        pue=float(s.pue),
        expected_failures=max(hardware_faults, 0.0),
        fleet_age_assumption=text,
        drain_recall=float(s.drain_recall),
        false_alarm_rate_s=float(core["expected_false_alarms"]) / (s.job_days * 86_400.0),
        drain_s=float(s.checkpoint_s + s.drain_migration_s),
        job_rate_s=float(s.job_interruptions_per_h) / SECONDS_PER_HOUR,
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
        counts = rng.binomial(c.units, _window_probability(c, c.age, horizon), size=n_trials)
        trial = np.repeat(np.arange(n_trials), counts)
        t = _first_failures_in_window(c, c.age, horizon, trial.size, rng)
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


def _poisson_times(
    rate_s: float, horizon_s: float, n: int, rng: np.random.Generator
) -> NDArray[np.float64]:
    """Times of a Poisson process on [0, horizon) in each of ``n`` trials, sorted, inf-padded."""
    counts = rng.poisson(rate_s * horizon_s, size=n)
    times = np.full((n, max(int(counts.max()) if n else 0, 1)), np.inf)
    trial = np.repeat(np.arange(n), counts)
    rank = np.arange(trial.size) - (np.cumsum(counts) - counts)[trial]
    times[trial, rank] = horizon_s * rng.random(trial.size)
    times.sort(axis=1)
    return times


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
    false = _poisson_times(plan.false_alarm_rate_s, plan.horizon_s, n, rng)
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


def _detect_times(
    plan: _Plan, shape: tuple[int, ...], rng: np.random.Generator
) -> float | NDArray[np.float64]:
    """Detection time of each interruption: ``detect_hang_s`` for a hang, else ``detect_s``.

    Each is a hang with probability ``hang_share``; at a share of 0 or 1 nothing is drawn, so
    ``hang_share=1`` is the same run as ``detect_s=detect_hang_s``.
    """
    if plan.hang_share <= 0.0:
        return plan.detect_s
    if plan.hang_share >= 1.0:
        return plan.detect_hang_s
    hang = rng.random(shape) < plan.hang_share
    return np.where(hang, plan.detect_hang_s, plan.detect_s)


def _spare_tokens(
    plan: _Plan, times: NDArray[np.float64], rng: np.random.Generator
) -> NDArray[np.float64]:
    r"""When the domain each event takes from the spare pool is back (sorted event times in).

    The pool starts with S domains (back at 0); event :math:`j` sends its domain to repair,
    back at :math:`t_j + r_j`. Claims are served first come, first served in the order of the
    events, and a domain back goes to the oldest open claim, so claim :math:`i` is served when
    :math:`i` domains are back: it gets the :math:`i`-th smallest of
    :math:`\{0^{\times S}\} \cup \{t_j + r_j\}` (a per-trial sort). With a fixed repair
    :math:`r` the returns are already in order and that is the one freed by event :math:`i - S`.
    """
    n, width = times.shape
    s = plan.spares
    if s >= width:
        return np.zeros_like(times)
    if plan.repair_sigma > 0.0:  # log-normal with median repair_h
        repair = plan.repair_s * np.exp(plan.repair_sigma * rng.standard_normal(times.shape))
        back = np.concatenate([np.zeros((n, s)), times + repair], axis=1)
        back.sort(axis=1)  # padding (inf) sorts last: the first `width` are the real returns
        return back[:, :width]
    if s == 0:
        return times + plan.repair_s
    return np.concatenate([np.zeros((n, s)), times[:, : width - s] + plan.repair_s], axis=1)


def _merged(
    first: dict[str, NDArray[Any]], second: dict[str, NDArray[Any]]
) -> dict[str, NDArray[Any]]:
    """Two sets of events of every trial as one, each trial's events sorted by ``t``."""
    both = {key: np.concatenate([first[key], second[key]], axis=1) for key in first}
    t = both["t"]
    width = max(int(np.isfinite(t).sum(axis=1).max()) if t.shape[0] else 0, 1)
    order = np.argsort(t, axis=1, kind="stable")[:, :width]
    return {key: np.take_along_axis(value, order, axis=1) for key, value in both.items()}


def _pending_waits(
    t: NDArray[np.float64],
    detect: NDArray[np.float64],
    token: NDArray[np.float64],
) -> NDArray[np.float64]:
    """Wait for a spare after each interruption's detection (``token`` -inf where none is taken).

    The job cannot run before the domain of its latest fault is in; claims are served in order,
    so that is the running maximum of the tokens: a hardware fault waits for its own, a job-level
    interruption for the one its job still lacks (nothing when it is in).
    """
    pending = np.maximum.accumulate(token, axis=1)
    return np.where(np.isfinite(t), np.maximum(pending - t - detect, 0.0), 0.0)


def _timeline(
    plan: _Plan,
    t: NDArray[np.float64],
    busy: float | NDArray[np.float64],
    wait: NDArray[np.float64] | None,
    detect: float | NDArray[np.float64],
) -> dict[str, NDArray[np.float64]]:
    r"""Committed work of a job that every event (sorted ``t``) throws back to its checkpoint.

    Event :math:`i` starts a restart of ``busy`` (ending early at the next event), of which
    ``wait`` is spent waiting for a spare after ``detect``; between restarts the job commits
    :math:`\tau` per whole segment of :math:`\tau + \delta`.
    """
    horizon = plan.horizon_s
    tau, delta = plan.tau_s, plan.delta_s
    seg = tau + delta
    n = t.shape[0]
    # the stretch before the first event: computing from t = 0, no restart
    first = np.minimum(t[:, 0], horizon)
    segments = np.floor(first / seg)
    compute = first.copy()
    # the gap after each event, to the next event or the end of the window
    gap = np.empty_like(t)
    gap[:, :-1] = t[:, 1:]
    gap[:, -1] = horizon
    np.minimum(gap, horizon, out=gap)
    gap -= t
    np.maximum(gap, 0.0, out=gap)  # padding: -inf -> 0
    run = gap - busy
    np.maximum(run, 0.0, out=run)
    compute += run.sum(axis=1)
    run /= seg
    np.floor(run, out=run)
    segments += run.sum(axis=1)
    in_restart = np.minimum(gap, busy).sum(axis=1)
    if wait is None:
        waiting = np.zeros(n)
    else:
        gap -= detect
        np.maximum(gap, 0.0, out=gap)
        waiting = np.minimum(gap, wait).sum(axis=1)
    return {
        "goodput": tau * segments / horizon,
        "checkpoint": delta * segments / horizon,
        "rework": (compute - seg * segments) / horizon,
        "restart": (in_restart - waiting) / horizon,
        "spares_wait": waiting / horizon,
    }


def _elastic(
    plan: _Plan,
    t: NDArray[np.float64],
    wait: NDArray[np.float64],
    detect: float | NDArray[np.float64],
    alarm: NDArray[np.bool_],
) -> dict[str, NDArray[np.float64]]:
    """Elastic loss fractions: replica groups out, whole-job stalls, drained groups moving."""
    horizon = plan.horizon_s
    tau, delta = plan.tau_s, plan.delta_s
    seg = tau + delta
    migration = plan.drain_s - delta
    remaining = np.maximum(horizon - t, 0.0)  # 0 for padding
    # a drained group leaves without stalling the others and moves onto its spare
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
        "checkpoint": running * delta / seg,
        "rework": np.zeros(t.shape[0]),
        "restart": down - waiting - moving + (1.0 - down) * stall,
        "spares_wait": waiting,
        "drain": moving,
    }


def _with_rollbacks(
    plan: _Plan,
    elastic: dict[str, NDArray[np.float64]],
    jobs: NDArray[np.float64],
    rng: np.random.Generator,
) -> dict[str, NDArray[np.float64]]:
    r"""Elastic training with whole-job rollbacks at the job-level interruptions ``jobs``.

    The rollbacks alone are a restart timeline (restart: detection, reload and warm-up); the
    share of the window it spends in whole segments, :math:`c`, runs at the elastic rate of the
    hardware faults, which are taken as independent of it: goodput is the timeline's goodput
    times :math:`(1-\text{down})(1-\text{stall})`, and each elastic loss is scaled by :math:`c`.
    """
    detect = _detect_times(plan, jobs.shape, rng)
    rolled = _timeline(plan, jobs, detect + plan.reload_warm_s, None, detect)
    computing = rolled["goodput"] + rolled["checkpoint"]
    running = elastic["goodput"] + elastic["checkpoint"]
    return {
        "goodput": rolled["goodput"] * running,
        "checkpoint": rolled["checkpoint"] * running,
        "rework": rolled["rework"],
        "restart": rolled["restart"] + computing * elastic["restart"],
        "spares_wait": computing * elastic["spares_wait"],
        "drain": computing * elastic["drain"],
    }


def _account(
    plan: _Plan, fail: NDArray[np.float64], rng: np.random.Generator
) -> dict[str, NDArray[np.float64]]:
    """Per-trial goodput, interruptions and loss fractions from sorted failure times."""
    n = fail.shape[0]
    valid = np.isfinite(fail)
    count = valid.sum(axis=1).astype(float)
    with np.errstate(invalid="ignore"):
        detect = _detect_times(plan, fail.shape, rng)
        token = None if plan.strategy == "restart" else _spare_tokens(plan, fail, rng)
        jobs = None
        n_job = np.zeros(n)
        if plan.job_rate_s > 0.0:
            jobs = _poisson_times(plan.job_rate_s, plan.horizon_s, n, rng)
            n_job = np.isfinite(jobs).sum(axis=1).astype(float)
        counts = {
            "n_interruptions": count + n_job,
            "n_job_interruptions": n_job,
            "n_drains": np.zeros(n),
        }
        if plan.strategy == "elastic":
            assert token is not None
            wait = np.where(valid, np.maximum(token - fail - detect, 0.0), 0.0)
            out = _elastic(plan, fail, wait, detect, np.zeros(fail.shape, dtype=bool))
            if jobs is not None:
                out = _with_rollbacks(plan, out, jobs, rng)
            return out | counts
        no_drains = {"drain": np.zeros(n)}
        if jobs is None:
            if token is None:
                return (
                    _timeline(plan, fail, detect + plan.hardware_fixed_s, None, detect)
                    | counts
                    | no_drains
                )
            wait = np.where(valid, np.maximum(token - fail - detect, 0.0), 0.0)
            busy = wait + (detect + plan.hardware_fixed_s)
            return _timeline(plan, fail, busy, wait, detect) | counts | no_drains
        # job-level interruptions: restart in place (no spare, no reschedule) among the faults
        hardware = {
            "t": fail,
            "detect": np.broadcast_to(detect, fail.shape),
            "fixed": np.full(fail.shape, plan.hardware_fixed_s),
            "token": np.full(fail.shape, -np.inf) if token is None else token,
        }
        job_detect = _detect_times(plan, jobs.shape, rng)
        job = {
            "t": jobs,
            "detect": np.broadcast_to(job_detect, jobs.shape),
            "fixed": np.full(jobs.shape, plan.reload_warm_s),
            "token": np.full(jobs.shape, -np.inf),
        }
        ev = _merged(hardware, job)
        wait = None if token is None else _pending_waits(ev["t"], ev["detect"], ev["token"])
        busy = ev["detect"] + ev["fixed"] + (0.0 if wait is None else wait)
        return _timeline(plan, ev["t"], busy, wait, ev["detect"]) | counts | no_drains


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
    rng: np.random.Generator,
) -> dict[str, NDArray[np.float64]]:
    """Per-trial accounting with proactive drains (the model is in the module docstring).

    ``alarm`` marks the events that are alarms (drains), ``fault`` those that are faults,
    warned of or not.
    """
    horizon = plan.horizon_s
    tau, delta = plan.tau_s, plan.delta_s
    seg = tau + delta
    n = t.shape[0]
    valid = np.isfinite(t)
    unwarned = valid & ~alarm
    count = fault.sum(axis=1).astype(float)
    with np.errstate(invalid="ignore"):
        detect = np.broadcast_to(_detect_times(plan, t.shape, rng), t.shape)
        # every event takes the next spare; only an unwarned fault waits for it (a drain keeps
        # training on the warned domain until its spare is in); restart uses the scheduler
        if plan.strategy == "restart":
            token = np.full(t.shape, -np.inf)
        else:
            token = np.where(unwarned, _spare_tokens(plan, t, rng), -np.inf)
        n_job = np.zeros(n)
        jobs = None
        if plan.job_rate_s > 0.0:
            jobs = _poisson_times(plan.job_rate_s, horizon, n, rng)
            n_job = np.isfinite(jobs).sum(axis=1).astype(float)
        counts = {"n_interruptions": count + n_job, "n_job_interruptions": n_job}
        if plan.strategy == "elastic":
            wait = np.where(alarm, 0.0, _pending_waits(t, detect, token))
            out = _elastic(plan, t, wait, detect, alarm)
            if jobs is not None:
                out = _with_rollbacks(plan, out, jobs, rng)
            return out | counts | {"n_drains": (valid & alarm).sum(axis=1).astype(float)}
        fixed = np.full(t.shape, plan.hardware_fixed_s)
        if jobs is not None:  # restarts in place, among the faults and alarms
            job_detect = _detect_times(plan, jobs.shape, rng)
            ev = _merged(
                {"t": t, "alarm": alarm, "detect": detect, "fixed": fixed, "token": token},
                {
                    "t": jobs,
                    "alarm": np.zeros(jobs.shape, dtype=bool),
                    "detect": np.broadcast_to(job_detect, jobs.shape),
                    "fixed": np.full(jobs.shape, plan.reload_warm_s),
                    "token": np.full(jobs.shape, -np.inf),
                },
            )
            t, alarm, detect, fixed, token = (
                ev[key] for key in ("t", "alarm", "detect", "fixed", "token")
            )
            valid = np.isfinite(t)
            unwarned = valid & ~alarm
        wait = np.where(alarm, 0.0, _pending_waits(t, detect, token))
        busy = np.where(alarm, plan.drain_s, wait + detect + fixed)
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
    return counts | {
        "goodput": (tau * n_segments + kept) / horizon,
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
    jobs = per_trial["n_job_interruptions"]
    mean_count = float(count.mean())
    lost = {key: float(per_trial[key].mean()) * gpu_h for key in _LOSSES}
    lost_total = (1.0 - float(goodput.mean())) * gpu_h
    trials = pl.DataFrame(
        {
            "trial": np.arange(n),
            "goodput": goodput,
            "n_interruptions": count.astype(np.int64),
            "n_job_interruptions": jobs.astype(np.int64),
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
        "job_interruptions": float(jobs.mean()),
        "job_interruptions_se": _standard_error(jobs),
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
        The job and fleet (see :class:`~models.scenario.Scenario`); a ``None`` checkpoint interval
        is Daly's optimum for the analytical MTTI, as in :func:`~models.goodput.project`.
    n_trials
        Independent runs of the ``job_days`` window.
    random_state
        Seed or generator.

    Returns
    -------
    dict
        ``goodput`` (mean over trials) with ``goodput_se`` (its Monte Carlo standard error) and
        ``goodput_lo`` / ``goodput_hi`` (2.5/97.5 % of trials); ``interruptions`` (mean
        interruptions in the window: faults, warned of or not, and job-level ones) with
        ``interruptions_se``; ``job_interruptions`` (the job-level ones) with
        ``job_interruptions_se``; ``drains`` (mean drains done) with ``drains_se``; ``mtti_h``
        with ``mtti_h_se`` (delta method);
        ``checkpoint_interval_min``; ``lost_gpu_h_checkpoint`` / ``_rework`` / ``_restart`` /
        ``_spares_wait`` / ``_drain`` / ``_total``; ``energy_lost_mwh``;
        ``fleet_age_assumption``; and ``trials``, a polars frame with one row per trial.

    Notes
    -----
    Per class, the number of units whose first failure falls in the window is binomial and
    their times come from the conditional inverse CDF (steady state: exact rejection from the
    uniform, with a squeeze); renewals are drawn one generation at a time for all trials at
    once; a node group is one more class. Restarts, spare waits and committed work are then
    computed with array operations on the (trials x failures) matrix, in chunks of trials that
    bound memory. Hangs are one uniform draw per interruption (none at a share of 0 or 1);
    random repairs make the spare each claim gets the claim's rank in a per-trial sort of the
    pool's return times; job-level interruptions are Poisson times merged into each trial's
    events by an argsort, and the spare the job still lacks at each is a running maximum of
    the faults' spares. With drains, the alarms that act (those finding the job computing) are
    found by a fixed-point pass over the matrix, each pass settling at least one more event per
    trial. The module docstring states the job model.
    """
    if n_trials < 1:
        msg = f"n_trials must be at least 1, got {n_trials}."
        raise ValueError(msg)
    plan = _plan(scenario)
    rng = np.random.default_rng(random_state)
    events = plan.expected_failures + (plan.false_alarm_rate_s + plan.job_rate_s) * plan.horizon_s
    chunk = int(min(n_trials, max(1, _EVENTS_PER_CHUNK // (events * 1.2 + 10))))
    parts = []
    for start in range(0, n_trials, chunk):
        size = min(chunk, n_trials - start)
        fail = _failure_matrix(plan, size, rng)
        if plan.drain_recall > 0:
            parts.append(_account_drained(plan, *_alarms(plan, fail, rng), rng))
        else:
            parts.append(_account(plan, fail, rng))
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


_FALSE_ALARM, _JOB, _BACK = -1, -2, -3  # heap tags of events that are not a class's fault


class _NaiveTimeline:
    """A job that every acting event throws back to its last checkpoint, closed stretch by stretch.

    ``claimed`` maps each spare claim to when it was served (absent: not yet, so not before the
    event being handled); an event's restart needs the claim the job still lacks, if any.
    """

    def __init__(self, plan: _Plan, claimed: dict[int, float]) -> None:
        self.plan = plan
        self.claimed = claimed
        self.t = 0.0
        self.detect = 0.0
        self.fixed = 0.0
        self.claim: int | None = None
        self.alarm = False
        self.started = False
        self.pending = 0.0  # compute of the segment a drain interrupted, saved if it completes
        self.committed = self.checkpoint = self.rework = 0.0
        self.restart = self.waiting = self.drain = 0.0

    def busy(self) -> tuple[float, float]:
        """Length of the last acting event's restart (or drain), and its wait for a spare."""
        if not self.started:
            return 0.0, 0.0
        if self.alarm:
            return self.plan.drain_s, 0.0
        ready = -math.inf if self.claim is None else self.claimed.get(self.claim, math.inf)
        w = max(ready - self.t - self.detect, 0.0)
        return self.detect + w + self.fixed, w

    def start(
        self, t: float, *, alarm: bool, detect: float, fixed: float, claim: int | None
    ) -> None:
        """Close the stretch up to ``t`` and start the restart or drain of the event at ``t``."""
        self.close(t, next_alarm=alarm)
        self.t, self.alarm, self.detect, self.fixed, self.claim = t, alarm, detect, fixed, claim
        self.started = True

    def close(self, end: float, *, next_alarm: bool) -> None:
        """Account for the stretch from the last event to ``end``: restart, then compute."""
        tau, delta = self.plan.tau_s, self.plan.delta_s
        seg = tau + delta
        gap = end - self.t
        busy, w = self.busy()
        if self.alarm:
            self.drain += min(gap, busy)
            saved = min(self.pending, tau) if gap >= delta else 0.0
            self.committed += saved
            self.rework += self.pending - saved
        else:
            w = min(max(gap - self.detect, 0.0), w)
            self.restart += min(gap, busy) - w
            self.waiting += w
        self.pending = 0.0
        if gap > busy:
            compute = gap - busy
            k = math.floor(compute / seg)
            self.committed += k * tau
            self.checkpoint += k * delta
            if next_alarm:
                self.pending = compute - k * seg
            else:
                self.rework += compute - k * seg

    def fractions(self) -> dict[str, float]:
        """Close the window and return its goodput and loss fractions."""
        self.close(self.plan.horizon_s, next_alarm=False)
        horizon = self.plan.horizon_s
        return {
            "goodput": self.committed / horizon,
            "checkpoint": self.checkpoint / horizon,
            "rework": self.rework / horizon,
            "restart": self.restart / horizon,
            "spares_wait": self.waiting / horizon,
            "drain": self.drain / horizon,
        }


def _naive_trial(plan: _Plan, rng: np.random.Generator) -> dict[str, float]:
    horizon = plan.horizon_s
    heap: list[tuple[float, int]] = []
    for index, c in enumerate(plan.classes):
        first = _all_first_failures(c, c.age, rng)
        heap.extend((float(t), index) for t in first[first < horizon])
    if plan.drain_recall > 0:  # false alarms, never renewed
        n_false = rng.poisson(plan.false_alarm_rate_s * horizon)
        heap.extend((float(t), _FALSE_ALARM) for t in horizon * rng.random(n_false))
    if plan.job_rate_s > 0:  # job-level interruptions
        n_jobs = rng.poisson(plan.job_rate_s * horizon)
        heap.extend((float(t), _JOB) for t in horizon * rng.random(n_jobs))
    heapq.heapify(heap)
    detect_s, migration = plan.detect_s, plan.drain_s - plan.delta_s
    # the spare pool: free domains, open claims (oldest first), when each claim was served
    free = plan.spares
    claims: deque[int] = deque()
    claimed: dict[int, float] = {}
    n_claims = 0
    needed: int | None = None  # the claim the job waits for before it can run again
    job = _NaiveTimeline(plan, claimed)
    rollbacks = _NaiveTimeline(plan, {})  # elastic: the job-level interruptions alone
    elastic_faults: list[tuple[float, float, int]] = []
    n_fail = n_jobs = n_drains = 0
    stall = moving = 0.0

    while heap:
        t, index = heapq.heappop(heap)
        if index == _BACK:  # a repaired domain: to the oldest open claim, else to the pool
            if claims:
                claimed[claims.popleft()] = t
            else:
                free += 1
            continue
        if 0 < plan.hang_share < 1:
            detect = plan.detect_hang_s if rng.random() < plan.hang_share else detect_s
        else:
            detect = plan.detect_hang_s if plan.hang_share >= 1 else detect_s
        if index == _JOB:
            n_jobs += 1
            if plan.strategy == "elastic":
                rollbacks.start(t, alarm=False, detect=detect, fixed=plan.reload_warm_s, claim=None)
            else:
                job.start(t, alarm=False, detect=detect, fixed=plan.reload_warm_s, claim=needed)
            continue
        alarm = index == _FALSE_ALARM
        if not alarm:
            c = plan.classes[index]
            renewed = t + c.scale_s * rng.standard_exponential() ** (1.0 / c.shape)
            if renewed < horizon:
                heapq.heappush(heap, (renewed, index))
            n_fail += 1
            alarm = plan.drain_recall > 0 and rng.random() < plan.drain_recall
        claim = None
        if plan.strategy != "restart":  # a drain takes a spare too, but trains until it is in
            claim = n_claims
            n_claims += 1
            if free:
                free -= 1
                claimed[claim] = t
            else:
                claims.append(claim)
            repair = plan.repair_s
            if plan.repair_sigma > 0:
                repair *= math.exp(plan.repair_sigma * rng.standard_normal())
            if t + repair < horizon:
                heapq.heappush(heap, (t + repair, _BACK))
        if plan.strategy == "elastic":
            if alarm:  # the group leaves without stalling the others, moves onto its spare
                n_drains += 1
                moving += min(migration, horizon - t)
            else:  # its group is out until its spare is in: settled at the end
                assert claim is not None
                elastic_faults.append((t, detect, claim))
                stall += min(detect, horizon - t)
            continue
        if alarm and t < job.t + job.busy()[0]:
            continue  # the job is restarting or draining: the alarm is handled within
        if alarm:
            n_drains += 1
        else:
            needed = claim
        job.start(t, alarm=alarm, detect=detect, fixed=plan.hardware_fixed_s, claim=claim)
    counts = {
        "n_interruptions": float(n_fail + n_jobs),
        "n_job_interruptions": float(n_jobs),
        "n_drains": float(n_drains),
    }
    if plan.strategy != "elastic":
        return job.fractions() | counts
    down = down_wait = 0.0
    for t, detect, claim in elastic_faults:
        remaining = horizon - t
        w = max(claimed.get(claim, math.inf) - t - detect, 0.0)
        down += min(detect + w + plan.reload_warm_s, remaining)
        down_wait += min(max(remaining - detect, 0.0), w)
    down_f = min(plan.frac_group * (down + moving) / horizon, 1.0)
    wait_f = min(plan.frac_group * down_wait / horizon, down_f)
    drain_f = min(plan.frac_group * moving / horizon, down_f - wait_f)
    stall_f = min(stall / horizon, 1.0)
    running = (1.0 - down_f) * (1.0 - stall_f)
    tau, seg = plan.tau_s, plan.tau_s + plan.delta_s
    out = {
        "goodput": running * tau / seg,
        "checkpoint": running * plan.delta_s / seg,
        "rework": 0.0,
        "restart": down_f - wait_f + (1.0 - down_f) * stall_f - drain_f,
        "spares_wait": wait_f,
        "drain": drain_f,
    }
    if plan.job_rate_s > 0:  # whole-job rollbacks: own timeline, elastic rate while computing
        rolled = rollbacks.fractions()
        computing = rolled["goodput"] + rolled["checkpoint"]
        out = {
            "goodput": rolled["goodput"] * running,
            "checkpoint": rolled["checkpoint"] * running,
            "rework": rolled["rework"],
            "restart": rolled["restart"] + computing * out["restart"],
            "spares_wait": computing * out["spares_wait"],
            "drain": computing * out["drain"],
        }
    return out | counts


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
