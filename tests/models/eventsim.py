r"""An event-by-event simulation of a training job on a failing fleet, written for the tests.

Issue #13 asks for a reference that shares nothing with the engines it checks: this module reads a
:class:`models.goodput.Scenario` (its fields, ``class_rates()`` and ``unit_groups()``) and imports
nothing else from ``models``. It is a plain event loop over a heap of next failure times, one
Python step per event, written to be read rather than to be fast (a 131,072-GPU, 30-day trial with
~3,000 faults takes about 10 ms; one with a swamped spare pool and 6,500 faults, about 30 ms).

The model
---------
* **Units.** The job holds ``ceil(n_gpus / failure_domain_gpus)`` failure domains. Each class of
  ``scenario.class_rates()`` has one unit per GPU held (``level == "gpu"``) or per node held
  (``ceil(gpus_held / gpus_per_node)``). A unit's lifetimes are Weibull with the class's shape
  :math:`k` and mean ``mtbf_h``, so scale :math:`\eta = \mathrm{MTBF}/\Gamma(1 + 1/k)`. Node
  groups: each group of ``scenario.unit_groups()`` gets ``round(share * units)`` units of every
  class (the last group the remainder), with lifetimes scaled by ``1 / rate_multiplier``.
* **Renewal.** A failed unit is replaced by a new one (age 0) at the fault; the others keep
  their ages. Units fail whatever the job is doing. A fault in any unit is a fault of its domain.
* **Fleet age.** ``"new"``: every first life is a fresh Weibull life. A number of hours
  :math:`a`: the residual life given survival to :math:`a`,
  :math:`t = \eta((a/\eta)^k + E)^{1/k} - a` with :math:`E` a standard exponential.
  ``"steady_state"``: the first failure comes from the equilibrium (forward-recurrence)
  distribution :math:`F_e(t) = \frac{1}{\mu}\int_0^t S(x)\,dx`. With :math:`u = (x/\eta)^k`,
  :math:`\int_0^t S = \frac{\eta}{k}\Gamma(1/k)\,P(1/k, (t/\eta)^k)` and
  :math:`\mu = \eta\Gamma(1 + 1/k) = \frac{\eta}{k}\Gamma(1/k)`, so
  :math:`F_e(t) = P(1/k, (t/\eta)^k)`: the law of :math:`\eta G^{1/k}` with
  :math:`G \sim \mathrm{Gamma}(1/k, 1)`, which is how it is drawn.
  An age mix (``(age_h, share)`` pairs): each population above is split again,
  ``round(share * units)`` units per age (the last age the remainder), each aged as above.
* **Job-level interruptions** (``job_interruptions_per_h``): a Poisson stream of its own,
  independent of the job's size.
* **restart / hot_spare.** The job computes segments of :math:`\tau` (``tau_s``), each followed
  by a checkpoint write of :math:`\delta` (``checkpoint_s``); a segment counts once its checkpoint
  is written. An interruption loses the segment in progress and starts a restart: detection
  (``detect_hang_s`` with probability ``hang_share``, else ``detect_s``), then the hardware:
  ``restart`` reschedules (``reschedule_s`` after detection), ``hot_spare`` waits for a spare
  domain; then ``reload_s + warmup_s``. An interruption during a restart starts it over: a
  hardware fault with its own detection and hardware (the new spare request is the newest, and
  requests are served in order, so it is the last one served); a job-level interruption with
  its own detection but still waiting for the hardware the restart was waiting for. A
  job-level interruption needs no hardware: detection, reload and warm-up.
* **Spare pool** (``hot_spare`` and ``elastic``). It starts with ``hot_spares`` domains. Every
  hardware fault asks for one; its failed domain goes to repair (``repair_h``, or log-normal
  with median ``repair_h`` and log-sd ``repair_sigma``) and then rejoins the pool. A domain back
  from repair goes to the longest-waiting request, else to the pool; with no spares a fault
  waits for the first repaired domain (its own or an earlier fault's).
* **elastic.** As documented in ``models/simulate.py``: a hardware fault stalls every replica
  for its detection time, and its replica group (``max(replica_gpus, failure_domain_gpus)``
  GPUs) is out for detection + spare wait + reload + warm-up, each charged up to the window end
  (a second fault in a group already out is charged again); the rest train on and checkpoints
  cost :math:`\tau/(\tau+\delta)` of throughput. Goodput is
  :math:`(1-\text{down})(1-\text{stall})\,U` with down and stall as fractions of the window
  (each capped at 1). :math:`U` is the share of the window the whole job commits under its
  job-level interruptions alone: whole-job rollbacks, each losing the segment in progress and
  costing detection + reload + warm-up; the stretch still running at the window end counts at
  :math:`\tau/(\tau+\delta)` (so :math:`U = \tau/(\tau+\delta)` without job-level interruptions,
  simulate.py's formula).
* **Goodput** is the committed useful compute, GPU-time, over ``n_gpus`` x the window. For
  restart and hot_spare the segment in progress at the window end is not committed.

Proactive drains (``drain_recall > 0``) are left out: :func:`simulate` refuses them.
"""

from __future__ import annotations

import heapq
import math
from collections import deque
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from collections.abc import Iterable

    from models.goodput import Scenario

HOUR_S = 3600.0
DAY_S = 86_400.0
_JOB_LEVEL = -1  # heap tag of the job-level interruption stream
_BUFFER = 4096  # random numbers drawn at a time


class _Draws:
    """Scalar random numbers from one generator, drawn in blocks (one numpy call per block)."""

    def __init__(self, rng: np.random.Generator) -> None:
        self.rng = rng
        self.buffers: dict[str, list[float]] = {"exp": [], "unif": [], "norm": []}

    def _next(self, kind: str) -> float:
        buffer = self.buffers[kind]
        if not buffer:
            if kind == "exp":
                block = self.rng.standard_exponential(_BUFFER)
            elif kind == "unif":
                block = self.rng.random(_BUFFER)
            else:
                block = self.rng.standard_normal(_BUFFER)
            buffer.extend(block.tolist())
        return buffer.pop()

    def exp(self) -> float:
        return self._next("exp")

    def unif(self) -> float:
        return self._next("unif")

    def norm(self) -> float:
        return self._next("norm")


def unit_populations(scenario: Scenario) -> list[tuple[int, float, float]]:
    """``(units, shape, scale_s)`` of every (class, node group) population of the job's units."""
    n_domains = math.ceil(scenario.n_gpus / scenario.failure_domain_gpus)
    gpus_held = n_domains * scenario.failure_domain_gpus
    nodes_held = math.ceil(gpus_held / scenario.gpus_per_node)
    groups = scenario.unit_groups()
    out = []
    for rate in scenario.class_rates():
        units = gpus_held if rate.level == "gpu" else nodes_held
        k = rate.weibull_shape
        eta_s = rate.mtbf_h * HOUR_S / math.gamma(1.0 + 1.0 / k)
        counts = [round(share * units) for share, _ in groups[:-1]]
        counts.append(units - sum(counts))
        for count, (_, multiplier) in zip(counts, groups, strict=True):
            if count > 0:
                out.append((count, k, eta_s / multiplier))
    return out


def aged_populations(scenario: Scenario) -> list[tuple[int, float, float, Any]]:
    """``(units, shape, scale_s, fleet_age)`` of every population, split by an age mix."""
    fleet_age = scenario.fleet_age
    if not isinstance(fleet_age, tuple):
        return [(units, k, eta, fleet_age) for units, k, eta in unit_populations(scenario)]
    out = []
    for units, k, eta in unit_populations(scenario):
        counts = [round(share * units) for _, share in fleet_age[:-1]]
        counts.append(units - sum(counts))
        for count, (age_h, _) in zip(counts, fleet_age, strict=True):
            if count > 0:
                out.append((count, k, eta, age_h))
    return out


def first_failures_s(
    units: int, shape: float, scale_s: float, fleet_age: str | float, rng: np.random.Generator
) -> np.ndarray:
    """First failure time, seconds from job start, of each of ``units`` units."""
    k, eta = shape, scale_s
    if fleet_age == "new":
        return eta * rng.standard_exponential(units) ** (1.0 / k)
    if fleet_age == "steady_state":
        return eta * rng.gamma(1.0 / k, 1.0, units) ** (1.0 / k)
    age_s = float(fleet_age) * HOUR_S
    return eta * ((age_s / eta) ** k + rng.standard_exponential(units)) ** (1.0 / k) - age_s


class _Job:
    """The job and its spare pool, driven by interruptions in time order."""

    def __init__(
        self, s: Scenario, *, tau_s: float, horizon_s: float, repair_s: Any, hang: Any
    ) -> None:
        self.strategy = s.strategy
        self.horizon_s = horizon_s
        self.tau_s = tau_s
        self.seg_s = tau_s + s.checkpoint_s
        self.detect_s = s.detect_s
        self.detect_hang_s = s.detect_hang_s
        self.reschedule_s = s.reschedule_s
        self.reload_warm_s = s.reload_s + s.warmup_s
        self.frac_group = min(max(s.replica_gpus, s.failure_domain_gpus) / s.n_gpus, 1.0)
        self.repair_s = repair_s  # () -> one repair time, seconds
        self.hang = hang  # () -> whether this interruption is a hang
        # the job: computing from resume_s on (inf while it waits for hardware)
        self.resume_s = 0.0
        self.detect_end_s = 0.0
        self.hardware_ready_s = 0.0
        self.pending: int | None = None  # the spare request the job waits for
        self.committed_s = 0.0  # compute committed by the whole job
        # the spare pool: free domains, repairs under way, requests in order
        self.free = s.hot_spares
        self.returns: list[float] = []  # heap of repair completion times
        self.waiting: deque[int] = deque()
        self.asked_s: list[float] = []  # detection end of each request's fault
        self.served_s: list[float] = []  # when each request got its domain (inf: not yet)
        self.elastic_faults: list[tuple[float, float, int]] = []  # (t, detect, request)
        self.n_faults = 0
        self.n_job_interruptions = 0

    # ---------------------------------------------------------------- spare pool

    def _ask_spare(self, t: float, detect_end_s: float) -> int:
        request = len(self.served_s)
        self.asked_s.append(detect_end_s)
        self.served_s.append(math.inf)
        heapq.heappush(self.returns, t + self.repair_s())  # the failed domain goes to repair
        if self.free > 0:
            self.free -= 1
            self.served_s[request] = t
        else:
            self.waiting.append(request)
        return request

    def _repairs_until(self, t: float) -> None:
        """Hand out every domain back from repair by ``t``, longest-waiting request first."""
        while self.returns and self.returns[0] <= t:
            back = heapq.heappop(self.returns)
            if not self.waiting:
                self.free += 1
                continue
            request = self.waiting.popleft()
            self.served_s[request] = back
            if request == self.pending:
                self.pending = None
                self.hardware_ready_s = back
                self.resume_s = max(self.detect_end_s, back) + self.reload_warm_s

    # ---------------------------------------------------------------- the job

    def _commit_until(self, t: float) -> None:
        """Commit the whole segments computed from the last resume to ``t`` (lose the rest)."""
        if t > self.resume_s:
            self.committed_s += self.tau_s * math.floor((t - self.resume_s) / self.seg_s)

    def interrupt(self, t: float, *, hardware: bool) -> None:
        """A fault of a unit (``hardware``) or a job-level interruption at ``t``."""
        self._repairs_until(t)
        detect_s = self.detect_hang_s if self.hang() else self.detect_s
        detect_end_s = t + detect_s
        if hardware:
            self.n_faults += 1
        else:
            self.n_job_interruptions += 1
        if self.strategy == "elastic" and hardware:
            request = self._ask_spare(t, detect_end_s)
            self.elastic_faults.append((t, detect_s, request))
            return
        self._commit_until(t)
        if not hardware:  # no hardware to replace; still waits for any the restart awaited
            ready_s = self.hardware_ready_s
        elif self.strategy == "restart":
            ready_s = detect_end_s + self.reschedule_s
            self.pending = None
        else:
            request = self._ask_spare(t, detect_end_s)
            ready_s = self.served_s[request]
            self.pending = request if math.isinf(ready_s) else None
        self.detect_end_s = detect_end_s
        self.hardware_ready_s = ready_s
        self.resume_s = max(detect_end_s, ready_s) + self.reload_warm_s

    def finish(self) -> dict[str, float]:
        """Close the window; per-trial goodput and diagnostics."""
        horizon = self.horizon_s
        self._repairs_until(horizon)
        waits = [
            max(min(served, horizon) - min(asked, horizon), 0.0)
            for asked, served in zip(self.asked_s, self.served_s, strict=True)
        ]
        out = {
            "n_faults": float(self.n_faults),
            "n_job_interruptions": float(self.n_job_interruptions),
            "spare_wait_s": sum(waits),
            "n_spare_requests": float(len(waits)),
        }
        if self.strategy != "elastic":
            self._commit_until(horizon)
            return {"goodput": self.committed_s / horizon, **out}
        if horizon > self.resume_s:  # the stretch running at the end, at the checkpointed rate
            self.committed_s += (horizon - self.resume_s) * self.tau_s / self.seg_s
        down = stall = 0.0
        for t, detect_s, request in self.elastic_faults:
            remaining = horizon - t
            wait = max(self.served_s[request] - (t + detect_s), 0.0)
            down += self.frac_group * min(detect_s + wait + self.reload_warm_s, remaining)
            stall += min(detect_s, remaining)
        down = min(down / horizon, 1.0)
        stall = min(stall / horizon, 1.0)
        return {"goodput": (1.0 - down) * (1.0 - stall) * self.committed_s / horizon, **out}


def _check(scenario: Scenario, tau_s: float) -> None:
    if scenario.drain_recall > 0:
        msg = "the event simulation leaves proactive drains out; set drain_recall=0."
        raise ValueError(msg)
    if not tau_s > 0:
        msg = f"tau_s must be a positive number of seconds, got {tau_s}."
        raise ValueError(msg)


def _make_job(scenario: Scenario, tau_s: float, hangs: _Draws, repairs: _Draws) -> _Job:
    median_s = scenario.repair_h * HOUR_S
    sigma = scenario.repair_sigma

    def repair_s() -> float:
        return median_s * math.exp(sigma * repairs.norm()) if sigma > 0 else median_s

    def hang() -> bool:
        return scenario.hang_share > 0 and hangs.unif() < scenario.hang_share

    return _Job(
        scenario,
        tau_s=tau_s,
        horizon_s=scenario.job_days * DAY_S,
        repair_s=repair_s,
        hang=hang,
    )


def _trial(scenario: Scenario, tau_s: float, seed: np.random.SeedSequence) -> dict[str, float]:
    """One run of the window. Unit lifetimes, hangs, repairs and job-level interruptions draw
    from four streams of their own, so two scenarios differing in one knob run on the same
    failures (paired trials: the difference has a small standard error)."""
    horizon = scenario.job_days * DAY_S
    fleet, hangs, repairs, job_level = (np.random.default_rng(s) for s in seed.spawn(4))
    draws = _Draws(fleet)
    job_draws = _Draws(job_level)
    job = _make_job(scenario, tau_s, _Draws(hangs), _Draws(repairs))
    populations = aged_populations(scenario)
    heap: list[tuple[float, int]] = []  # (next failure time, population) of every unit that fails
    for index, (units, shape, scale_s, age) in enumerate(populations):
        first = first_failures_s(units, shape, scale_s, age, fleet)
        heap.extend((t, index) for t in first[first < horizon].tolist())
    rate_s = scenario.job_interruptions_per_h / HOUR_S
    if rate_s > 0:
        heap.append((job_draws.exp() / rate_s, _JOB_LEVEL))
    heapq.heapify(heap)
    while heap:
        t, index = heapq.heappop(heap)
        if t >= horizon:
            break
        if index == _JOB_LEVEL:
            heapq.heappush(heap, (t + job_draws.exp() / rate_s, _JOB_LEVEL))
            job.interrupt(t, hardware=False)
            continue
        _, shape, scale_s, _ = populations[index]
        renewed = t + scale_s * draws.exp() ** (1.0 / shape)  # a new unit, age 0
        if renewed < horizon:
            heapq.heappush(heap, (renewed, index))
        job.interrupt(t, hardware=True)
    return job.finish()


def simulate(scenario: Scenario, *, tau_s: float, n_trials: int, seed: int) -> dict[str, Any]:
    """Simulate ``n_trials`` independent runs of the job's window, event by event.

    Parameters
    ----------
    scenario
        The job and fleet, read only (fields, ``class_rates()``, ``unit_groups()``).
    tau_s
        Compute time between checkpoints, seconds (the tests pass the projection's own).
    n_trials
        Independent trials.
    seed
        Seed of the trials' random numbers.

    Returns
    -------
    dict
        ``goodput`` (mean over trials) and ``goodput_se`` (its standard error, sd / sqrt(n));
        ``interruptions`` (mean faults plus job-level interruptions in the window) with
        ``interruptions_se``; ``faults`` and ``job_interruptions`` (means); ``spare_wait_s``
        (mean wait for a spare after detection, per spare request, cut at the window end; 0
        without requests); ``goodput_trials`` (one value per trial); ``n_trials``.
    """
    _check(scenario, tau_s)
    if n_trials < 2:
        msg = f"n_trials must be at least 2 for a standard error, got {n_trials}."
        raise ValueError(msg)
    rows = [_trial(scenario, tau_s, s) for s in np.random.SeedSequence(seed).spawn(n_trials)]
    goodput = np.array([row["goodput"] for row in rows])
    count = np.array([row["n_faults"] + row["n_job_interruptions"] for row in rows])
    requests = sum(row["n_spare_requests"] for row in rows)
    root_n = math.sqrt(n_trials)
    return {
        "goodput": float(goodput.mean()),
        "goodput_se": float(goodput.std(ddof=1) / root_n),
        "interruptions": float(count.mean()),
        "interruptions_se": float(count.std(ddof=1) / root_n),
        "faults": float(np.mean([row["n_faults"] for row in rows])),
        "job_interruptions": float(np.mean([row["n_job_interruptions"] for row in rows])),
        "spare_wait_s": sum(row["spare_wait_s"] for row in rows) / requests if requests else 0.0,
        "goodput_trials": goodput,
        "n_trials": n_trials,
    }


def replay(
    scenario: Scenario, *, tau_s: float, events: Iterable[tuple[float, str]]
) -> dict[str, float]:
    """Run the job through a given list of interruptions (for hand-checked traces).

    ``events`` are ``(time_s, kind)`` in time order, ``kind`` one of ``"crash"`` and ``"hang"``
    (hardware faults) and ``"job_crash"`` and ``"job_hang"`` (job-level interruptions). Repairs
    take ``repair_h`` exactly. Returns one trial's goodput and diagnostics, as :func:`simulate`
    averages them.
    """
    _check(scenario, tau_s)
    kinds = {"crash": (True, False), "hang": (True, True)}
    kinds |= {"job_crash": (False, False), "job_hang": (False, True)}
    is_hang = [False]
    job = _Job(
        scenario,
        tau_s=tau_s,
        horizon_s=scenario.job_days * DAY_S,
        repair_s=lambda: scenario.repair_h * HOUR_S,
        hang=lambda: is_hang[0],
    )
    for t, kind in events:
        hardware, is_hang[0] = kinds[kind]
        job.interrupt(t, hardware=hardware)
    return job.finish()
