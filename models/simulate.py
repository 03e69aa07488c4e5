r"""Monte Carlo of a training job on a fleet with Weibull lifetimes, spares and repair times.

The model, shared by :func:`simulate_job` (vectorised over trials and failures) and
:func:`~models.simulate_naive.simulate_job_naive` (one Python step per failure, the baseline and
cross-check):

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

* **Fail-slow** (``slow_laws``). Each trial draws its own slow episodes over the job's units
  and scales its productive time by the share the slow pace and the evictions leave
  (:mod:`models.simulate_slow`).

With exponential lifetimes this is the model of :func:`models.goodput.project`, which it must
match within Monte Carlo error (up to the start and end of the window).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from models.simulate_plan import Plan, SimulationSummary, build_plan, failure_matrix, trial_summary
from models.simulate_slow import slow_trials

if TYPE_CHECKING:
    from numpy.typing import NDArray

    from models.scenario import Scenario

__all__ = ["simulate_job"]

_EVENTS_PER_CHUNK = 200_000  # events per chunk of trials: bounds memory, keeps arrays in cache


# --------------------------------------------------------------------------- accounting


def _poisson_times(
    rate_s: float, horizon_s: float, n: int, rng: np.random.Generator
) -> NDArray[np.float64]:
    """Draw times of a Poisson process on [0, horizon) in ``n`` trials, sorted, inf-padded."""
    counts = rng.poisson(rate_s * horizon_s, size=n)
    times = np.full((n, max(int(counts.max()) if n else 0, 1)), np.inf)
    trial = np.repeat(np.arange(n), counts)
    rank = np.arange(trial.size) - (np.cumsum(counts) - counts)[trial]
    times[trial, rank] = horizon_s * rng.random(trial.size)
    times.sort(axis=1)
    return times


def _alarms(
    plan: Plan, fail: NDArray[np.float64], rng: np.random.Generator
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
    plan: Plan, shape: tuple[int, ...], rng: np.random.Generator
) -> float | NDArray[np.float64]:
    """Draw each interruption's detection time: ``detect_hang_s`` for a hang, else ``detect_s``.

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
    plan: Plan, times: NDArray[np.float64], rng: np.random.Generator
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
    plan: Plan,
    t: NDArray[np.float64],
    busy: float | NDArray[np.float64],
    wait: NDArray[np.float64] | None,
    detect: float | NDArray[np.float64],
) -> dict[str, NDArray[np.float64]]:
    r"""Return committed work of a job that each event (sorted ``t``) throws back to its checkpoint.

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
    plan: Plan,
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
    plan: Plan,
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
    plan: Plan, fail: NDArray[np.float64], rng: np.random.Generator
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
        pending = None if token is None else _pending_waits(ev["t"], ev["detect"], ev["token"])
        busy = ev["detect"] + ev["fixed"] + (0.0 if pending is None else pending)
        return _timeline(plan, ev["t"], busy, pending, ev["detect"]) | counts | no_drains


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


def _with_job_events(
    plan: Plan,
    events: dict[str, NDArray[Any]],
    jobs: NDArray[np.float64],
    rng: np.random.Generator,
) -> tuple[NDArray[Any], ...]:
    """Merge the job-level interruptions (restarts in place) into the faults and alarms.

    Returns ``t``, ``alarm``, ``detect``, ``fixed`` and ``token`` in time order per trial.
    """
    job_detect = _detect_times(plan, jobs.shape, rng)
    ev = _merged(
        events,
        {
            "t": jobs,
            "alarm": np.zeros(jobs.shape, dtype=bool),
            "detect": np.broadcast_to(job_detect, jobs.shape),
            "fixed": np.full(jobs.shape, plan.reload_warm_s),
            "token": np.full(jobs.shape, -np.inf),
        },
    )
    return tuple(ev[key] for key in ("t", "alarm", "detect", "fixed", "token"))


def _account_drained(
    plan: Plan,
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
            t, alarm, detect, fixed, token = _with_job_events(
                plan,
                {"t": t, "alarm": alarm, "detect": detect, "fixed": fixed, "token": token},
                jobs,
                rng,
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


def simulate_job(
    scenario: Scenario,
    *,
    n_trials: int = 1000,
    random_state: int | np.random.Generator | None = None,
) -> SimulationSummary:
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
    SimulationSummary
        Goodput with its standard error and trial quantiles, interruptions, job-level
        interruptions and drains with theirs, MTTI, the checkpoint interval, the GPU-hours lost
        by cause, the energy lost, the fleet-age assumption and ``trials``, a polars frame with
        one row per trial (see :class:`~models.simulate_plan.SimulationSummary`).

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
    plan = build_plan(scenario)
    rng = np.random.default_rng(random_state)
    events = plan.expected_failures + (plan.false_alarm_rate_s + plan.job_rate_s) * plan.horizon_s
    chunk = int(min(n_trials, max(1, _EVENTS_PER_CHUNK // (events * 1.2 + 10))))
    parts = []
    for start in range(0, n_trials, chunk):
        size = min(chunk, n_trials - start)
        fail = failure_matrix(plan, size, rng)
        if plan.drain_recall > 0:
            parts.append(_account_drained(plan, *_alarms(plan, fail, rng), rng))
        else:
            parts.append(_account(plan, fail, rng))
    per_trial = {key: np.concatenate([part[key] for part in parts]) for key in parts[0]}
    if scenario.slow_laws:
        per_trial |= slow_trials(scenario, per_trial["goodput"], plan.tau_s, rng)
    return trial_summary(plan, per_trial, "vectorised")
