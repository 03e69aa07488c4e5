"""The naive reference simulator: the Monte Carlo of :mod:`models.simulate`, step by step.

:func:`simulate_job_naive` shares no sampling code with :func:`models.simulate.simulate_job`
(only the :class:`~models.simulate_plan.Plan` and the summary), which makes it the baseline of
the benchmarks and the cross-check of the vectorised simulator.
"""

from __future__ import annotations

import heapq
import math
from collections import deque
from typing import TYPE_CHECKING

import numpy as np

from models.simulate_plan import Plan, SimulationSummary, UnitClass, build_plan, trial_summary

if TYPE_CHECKING:
    from numpy.typing import NDArray

    from models.scenario import Scenario

__all__ = ["simulate_job_naive"]


def _all_first_failures(
    c: UnitClass, fleet_age: str | float, rng: np.random.Generator
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
    aged: NDArray[np.float64] = (
        eta * ((age / eta) ** k + rng.standard_exponential(c.units)) ** (1.0 / k) - age
    )
    return aged


_FALSE_ALARM, _JOB, _BACK = -1, -2, -3  # heap tags of events that are not a class's fault


class _NaiveTimeline:
    """A job that every acting event throws back to its last checkpoint, closed stretch by stretch.

    ``claimed`` maps each spare claim to when it was served (absent: not yet, so not before the
    event being handled); an event's restart needs the claim the job still lacks, if any.
    """

    def __init__(self, plan: Plan, claimed: dict[int, float]) -> None:
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


def _first_events(plan: Plan, rng: np.random.Generator) -> list[tuple[float, int]]:
    """Return the heap of the window's first events: faults, false alarms, job-level ones."""
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
    return heap


class _SparePool:
    """The spare pool: free domains, open claims (oldest first), when each claim was served."""

    def __init__(self, spares: int) -> None:
        self.free = spares
        self.claims: deque[int] = deque()
        self.claimed: dict[int, float] = {}
        self.n_claims = 0

    def repaired(self, t: float) -> None:
        """Give a repaired domain to the oldest open claim, else back to the pool."""
        if self.claims:
            self.claimed[self.claims.popleft()] = t
        else:
            self.free += 1

    def take(self, t: float) -> int:
        """Claim a spare at ``t``: served now if one is free, else when one comes back."""
        claim = self.n_claims
        self.n_claims += 1
        if self.free:
            self.free -= 1
            self.claimed[claim] = t
        else:
            self.claims.append(claim)
        return claim


def _detection_s(plan: Plan, rng: np.random.Generator) -> float:
    """Draw an unwarned interruption's detection time: a hang's or a crash's."""
    if 0 < plan.hang_share < 1:
        return plan.detect_hang_s if rng.random() < plan.hang_share else plan.detect_s
    return plan.detect_hang_s if plan.hang_share >= 1 else plan.detect_s


def _renewed_and_warned(
    plan: Plan, heap: list[tuple[float, int]], index: int, t: float, rng: np.random.Generator
) -> bool:
    """Schedule the failed unit's next fault; draw whether this one was warned of."""
    c = plan.classes[index]
    renewed = t + c.scale_s * rng.standard_exponential() ** (1.0 / c.shape)
    if renewed < plan.horizon_s:
        heapq.heappush(heap, (renewed, index))
    return bool(plan.drain_recall > 0 and rng.random() < plan.drain_recall)


def _take_spare(
    plan: Plan,
    pool: _SparePool,
    heap: list[tuple[float, int]],
    t: float,
    rng: np.random.Generator,
) -> int:
    """Claim a spare for the domain struck at ``t`` and schedule that domain's repair."""
    claim = pool.take(t)
    repair = plan.repair_s
    if plan.repair_sigma > 0:
        repair *= math.exp(plan.repair_sigma * rng.standard_normal())
    if t + repair < plan.horizon_s:
        heapq.heappush(heap, (t + repair, _BACK))
    return claim


class _ElasticTally:
    """Elastic: the groups' faults (settled at the end), detection stalls and migrations."""

    def __init__(self, plan: Plan) -> None:
        self.plan = plan
        self.faults: list[tuple[float, float, int]] = []
        self.stall = self.moving = 0.0

    def add(self, t: float, *, alarm: bool, detect: float, claim: int) -> None:
        """Count a fault (its group is out until its spare is in) or a drain (a migration)."""
        remaining = self.plan.horizon_s - t
        if alarm:  # the group leaves without stalling the others, moves onto its spare
            self.moving += min(self.plan.drain_s - self.plan.delta_s, remaining)
        else:
            self.faults.append((t, detect, claim))
            self.stall += min(detect, remaining)

    def fractions(self, claimed: dict[int, float], rollbacks: _NaiveTimeline) -> dict[str, float]:
        """Return the goodput and loss fractions, with the job-level rollbacks' timeline."""
        plan, horizon = self.plan, self.plan.horizon_s
        down = down_wait = 0.0
        for t, detect, claim in self.faults:
            remaining = horizon - t
            w = max(claimed.get(claim, math.inf) - t - detect, 0.0)
            down += min(detect + w + plan.reload_warm_s, remaining)
            down_wait += min(max(remaining - detect, 0.0), w)
        down_f = min(plan.frac_group * (down + self.moving) / horizon, 1.0)
        wait_f = min(plan.frac_group * down_wait / horizon, down_f)
        drain_f = min(plan.frac_group * self.moving / horizon, down_f - wait_f)
        stall_f = min(self.stall / horizon, 1.0)
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
        if plan.job_rate_s <= 0:
            return out
        # whole-job rollbacks: own timeline, elastic rate while computing
        rolled = rollbacks.fractions()
        computing = rolled["goodput"] + rolled["checkpoint"]
        return {
            "goodput": rolled["goodput"] * running,
            "checkpoint": rolled["checkpoint"] * running,
            "rework": rolled["rework"],
            "restart": rolled["restart"] + computing * out["restart"],
            "spares_wait": computing * out["spares_wait"],
            "drain": computing * out["drain"],
        }


def _naive_trial(plan: Plan, rng: np.random.Generator) -> dict[str, float]:
    heap = _first_events(plan, rng)
    pool = _SparePool(plan.spares)
    needed: int | None = None  # the claim the job waits for before it can run again
    job = _NaiveTimeline(plan, pool.claimed)
    rollbacks = _NaiveTimeline(plan, {})  # elastic: the job-level interruptions alone
    elastic = _ElasticTally(plan)
    n_fail = n_jobs = n_drains = 0
    while heap:
        t, index = heapq.heappop(heap)
        if index == _BACK:  # a repaired domain
            pool.repaired(t)
            continue
        detect = _detection_s(plan, rng)
        if index == _JOB:
            n_jobs += 1
            if plan.strategy == "elastic":
                rollbacks.start(t, alarm=False, detect=detect, fixed=plan.reload_warm_s, claim=None)
            else:
                job.start(t, alarm=False, detect=detect, fixed=plan.reload_warm_s, claim=needed)
            continue
        alarm = index == _FALSE_ALARM
        if not alarm:
            alarm = _renewed_and_warned(plan, heap, index, t, rng)
            n_fail += 1
        # a drain takes a spare too, but trains until it is in
        claim = _take_spare(plan, pool, heap, t, rng) if plan.strategy != "restart" else None
        if plan.strategy == "elastic":
            assert claim is not None
            elastic.add(t, alarm=alarm, detect=detect, claim=claim)
            if alarm:
                n_drains += 1
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
    return elastic.fractions(pool.claimed, rollbacks) | counts


def simulate_job_naive(
    scenario: Scenario,
    *,
    n_trials: int = 100,
    random_state: int | np.random.Generator | None = None,
) -> SimulationSummary:
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
    SimulationSummary
        As :func:`simulate_job` gives it, with ``method="naive"``.
    """
    if n_trials < 1:
        msg = f"n_trials must be at least 1, got {n_trials}."
        raise ValueError(msg)
    plan = build_plan(scenario)
    rng = np.random.default_rng(random_state)
    rows = [_naive_trial(plan, rng) for _ in range(n_trials)]
    per_trial = {key: np.array([row[key] for row in rows]) for key in rows[0]}
    return trial_summary(plan, per_trial, "naive")
