"""The job side of the synthetic fleet: Poisson arrivals and a small Slurm-like scheduler.

Jobs take whole nodes. The scheduler is event driven (arrivals, attempt ends, requeues, node
install / failure / repair / drain / removal) with EASY backfill: the first job that does not fit
gets a reservation at the time enough running attempts reach their time limit, and later jobs
start only if their limit ends before it. Failures are known in advance (the hardware is simulated
first), so an attempt's fate is decided when it starts: it completes, times out, is cancelled,
fails on its own, or is killed by the first unit failure on one of its nodes (then requeued).
"""

from __future__ import annotations

import bisect
import heapq
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from synth.fleet import (
    DRAIN_LEAD_S,
    HOUR_S,
    MAX_LIMIT_S,
    PLANNED,
)

if TYPE_CHECKING:
    from synth.config import SynthConfig
    from synth.fleet import Carrier, Fleet

SMALL_LIMIT_S = 48 * HOUR_S
#: Non-hardware interruptions that take the node away (sacct ``NODE_FAIL``); the others stop the
#: job's processes (``FAILED``): a software fault, a driver hang, an NCCL watchdog, a fabric fault.
NODE_FAIL_CLASSES = frozenset({"maintenance"})
#: Attribution interval of the contract (§5) with a margin for clock skew: an application
#: failure is never placed with a unit failure on its nodes this close.
APP_CLEAR_BEFORE_S = 600 + 40
APP_CLEAR_AFTER_S = 300 + 40
NORMAL, CANCEL, APP_FAIL, OOM, TIMEOUT_KIND = range(5)
_KEY = 1 << 40  # node * _KEY + time: one sorted key array answers per-node time queries
_NEVER = np.iinfo(np.int64).max

USERS = (
    "alice",
    "bob",
    "carol",
    "dmitri",
    "erin",
    "farah",
    "gwen",
    "hiro",
    "ines",
    "jonas",
    "kemal",
    "lena",
    "mateo",
    "nadia",
    "omar",
    "priya",
    "quinn",
    "rosa",
    "sven",
    "tariq",
)
ACCOUNTS = ("llm-pretrain", "llm-sft", "vision", "rl", "eval", "infra")
JOB_NAMES = (
    "pretrain_7b",
    "pretrain_70b",
    "sft_chat",
    "eval_harness",
    "rlhf_ppo",
    "data_prep",
    "nccl_tests",
    "vit_train",
    "diffusion_ft",
    "bench_mlperf",
)


@dataclass
class Jobs:
    """Per-job attributes (index = job number)."""

    raw_id: list[int] = field(default_factory=list)
    label: list[str] = field(default_factory=list)
    submit: list[int] = field(default_factory=list)
    n_nodes: list[int] = field(default_factory=list)
    work_s: list[int] = field(default_factory=list)
    limit_s: list[int] = field(default_factory=list)
    kind: list[int] = field(default_factory=list)
    event_at_s: list[int] = field(default_factory=list)
    user: list[int] = field(default_factory=list)
    name: list[str] = field(default_factory=list)
    partition: list[str] = field(default_factory=list)
    carrier: list[int] = field(default_factory=list)

    def add(self, **values: object) -> int:
        """Append one job; returns its index."""
        for key, value in values.items():
            getattr(self, key).append(value)
        return len(self.raw_id) - 1


@dataclass
class Attempt:
    """One allocation of a job (a row of ``sacct``); ``end_s >= W1`` means still running."""

    job: int
    number: int
    submit_s: int
    start_s: int
    end_s: int
    state: str
    exit_code: str
    nodes: tuple[int, ...]
    reason: str
    carrier: bool = False
    fail_node: int = -1  # the node whose unit failure ended the attempt (reason "hw")
    fail_class: int = -1  # the class of that failure (index into ``Fleet.class_names``)


def make_jobs(
    config: SynthConfig, rng: np.random.Generator, fleet: Fleet, carriers: list[Carrier]
) -> Jobs:
    """Draw the job stream: Poisson arrivals over the window, sizes, work, limits and fates."""
    w0, w1 = config.window_start_s, config.window_end_s
    n_early = int(np.sum(fleet.installed <= w0))
    cap = max(1, max(n_early, 1) // 2)
    n_arrivals = int(rng.poisson(config.jobs_per_node_day * config.nodes * config.days))
    arrivals = np.sort(rng.integers(w0, w1, size=n_arrivals))
    size_kind = rng.choice(3, size=n_arrivals, p=list(config.job_size_mix))
    is_array = rng.random(n_arrivals) < config.p_array
    next_id = 1000 + int(rng.integers(0, 9000))
    jobs = Jobs()
    carrier_submit = [max(w0, c.start_s - int(rng.integers(600, 2 * HOUR_S))) for c in carriers]
    # job ids follow submission order, carriers included
    order = sorted(
        [(int(t), 0, i) for i, t in enumerate(arrivals)]
        + [(t, 1, c) for c, t in enumerate(carrier_submit)]
    )
    for t, is_carrier, i in order:
        user = int(rng.integers(0, len(USERS)))
        if is_carrier:
            carrier = carriers[i]
            work = carrier.hit_s - carrier.start_s + int(rng.integers(6 * HOUR_S, 40 * HOUR_S))
            jobs.add(
                raw_id=next_id,
                label=str(next_id),
                submit=t,
                n_nodes=len(carrier.nodes),
                work_s=work,
                limit_s=MAX_LIMIT_S,
                kind=NORMAL,
                event_at_s=0,
                user=user,
                name="pretrain_70b",
                partition="hero",
                carrier=i,
            )
            next_id += 1
            continue
        if is_array[i]:
            k = int(rng.integers(2, 11))
            for task in range(k):
                label = f"{next_id}_{task}"
                _add_job(config, rng, jobs, t, 1, user=user, raw_id=next_id + task, label=label)
            next_id += k
            continue
        kind = int(size_kind[i])
        if kind == 0:
            size = 1
        elif kind == 1:
            size = int(rng.integers(2, 9))
        else:
            size = int(rng.choice([64, 128, 256]))
        size = min(size, cap)
        names = JOB_NAMES[:2] if kind == 2 else JOB_NAMES
        name = names[int(rng.integers(0, len(names)))]
        _add_job(
            config,
            rng,
            jobs,
            t,
            size,
            large=kind == 2,
            user=user,
            raw_id=next_id,
            label=str(next_id),
            name=name,
        )
        next_id += 1
    return jobs


def _add_job(
    config: SynthConfig,
    rng: np.random.Generator,
    jobs: Jobs,
    submit: int,
    size: int,
    *,
    user: int,
    raw_id: int,
    label: str,
    large: bool = False,
    name: str = "sweep",
) -> None:
    """Draw one job's work, time limit and fate, and append it."""
    p_kind = (config.p_cancel, config.p_app_failure, config.p_oom, config.p_timeout)
    median_h = config.large_job_duration_median_h if large else config.job_duration_median_h
    sigma = 0.9 if large else config.job_duration_sigma
    work = max(60, int(median_h * HOUR_S * np.exp(sigma * rng.standard_normal())))
    max_limit = MAX_LIMIT_S if large else SMALL_LIMIT_S
    u = rng.random()
    kind = NORMAL
    cum = np.cumsum(p_kind)
    for k, edge in enumerate(cum):
        if u < edge:
            kind = k + 1
            break
    if kind == TIMEOUT_KIND:
        limit = max(600, int(work * rng.uniform(0.4, 0.9)) // 600 * 600)
        kind = NORMAL
    elif rng.random() < 0.5:
        limit = max_limit
    else:
        limit = -(-int(work * rng.uniform(1.2, 3.0)) // HOUR_S) * HOUR_S
    limit = min(limit, max_limit)
    event_at = int(rng.uniform(0.02, 0.95) * min(work, limit))
    jobs.add(
        raw_id=raw_id,
        label=label,
        submit=submit,
        n_nodes=size,
        work_s=work,
        limit_s=limit,
        kind=kind,
        event_at_s=max(1, event_at),
        user=user,
        name=name,
        partition="hero" if large else "batch",
        carrier=-1,
    )


# event kinds, in processing order at equal times
_UP, _UNDRAIN, _INSTALL, _END, _DOWN, _DRAIN, _REMOVE, _CARRIER, _ARRIVAL, _REQUEUE = range(10)


class _Scheduler:
    """State of the event loop (nodes, queue, running attempts)."""

    def __init__(
        self,
        config: SynthConfig,
        rng: np.random.Generator,
        fleet: Fleet,
        jobs: Jobs,
        carriers: list[Carrier],
    ) -> None:
        self.config = config
        self.rng = rng
        self.fleet = fleet
        self.jobs = jobs
        self.carriers = carriers
        self.w0, self.w1 = config.window_start_s, config.window_end_s
        n = fleet.n_nodes
        # per-node state in lists (fast scalar access); ``avail`` mirrored in numpy for selection
        self.in_service = [False] * n
        self.down = [0] * n
        self.drain = [0] * n
        self.busy = [-1] * n
        self.limit_end = [_NEVER] * n
        self.up = [False] * n
        self.avail = np.zeros(n, dtype=bool)
        self.n_avail = 0
        self.remaining = list(jobs.work_s)
        self.kind = list(jobs.kind)
        self.n_attempts = [0] * len(jobs.raw_id)
        self.queue: list[tuple[int, int]] = []  # (priority submit, job)
        self.attempts: list[Attempt] = []
        self.requeue_after: dict[int, bool] = {}
        self.resubmit: dict[int, int] = {}
        self.heap: list[tuple[int, int, int, int]] = []
        self.seq = 0
        fail = fleet.failed
        node = fleet.unit_node[fleet.ev_unit[fail]]
        keys = node * _KEY + fleet.ev_open[fail]
        order = np.argsort(keys, kind="stable")
        self.fail_key = keys[order]
        self.fail_cls = fleet.ev_class[fail][order]

    def push(self, t: int, kind: int, arg: int) -> None:
        heapq.heappush(self.heap, (t, kind, self.seq, arg))
        self.seq += 1

    def refresh(self, n: int) -> None:
        ok = self.in_service[n] and self.busy[n] < 0 and self.down[n] == 0 and self.drain[n] == 0
        if ok != self.up[n]:
            self.up[n] = ok
            self.avail[n] = ok
            self.n_avail += 1 if ok else -1

    def seed_events(self) -> None:
        fleet, w1 = self.fleet, self.w1
        for n in range(fleet.n_nodes):
            self.push(int(fleet.installed[n]), _INSTALL, n)
            if fleet.removed[n] >= 0:
                self.push(int(fleet.removed[n]) - DRAIN_LEAD_S, _DRAIN, n)
                self.push(int(fleet.removed[n]), _REMOVE, n)
        ev_node = fleet.unit_node[fleet.ev_unit]
        for n, action, opened, closed in zip(
            ev_node.tolist(),
            fleet.ev_action.tolist(),
            fleet.ev_open.tolist(),
            fleet.ev_close.tolist(),
            strict=True,
        ):
            self.push(opened, _DOWN, n)
            if closed < w1:
                self.push(closed, _UP, n)
            if action == PLANNED:
                self.push(opened - DRAIN_LEAD_S, _DRAIN, n)
                self.push(opened, _UNDRAIN, n)
        for c, carrier in enumerate(self.carriers):
            for n in carrier.nodes:
                self.push(carrier.start_s - DRAIN_LEAD_S, _DRAIN, n)
                self.push(carrier.start_s, _UNDRAIN, n)
            job = self.jobs.carrier.index(c)
            self.push(carrier.start_s, _CARRIER, job)
        for j, (submit, carrier_no) in enumerate(
            zip(self.jobs.submit, self.jobs.carrier, strict=True)
        ):
            if carrier_no < 0:
                self.push(submit, _ARRIVAL, j)

    def run(self) -> list[Attempt]:
        self.seed_events()
        heap = self.heap
        while heap and heap[0][0] < self.w1:
            t = heap[0][0]
            while heap and heap[0][0] == t:
                _, kind, _, arg = heapq.heappop(heap)
                self.handle(t, kind, arg)
            if t >= self.w0:
                self.schedule(t)
        return self.attempts

    def handle(self, t: int, kind: int, arg: int) -> None:
        if kind == _END:
            attempt = self.attempts[arg]
            for n in attempt.nodes:
                self.busy[n] = -1
                self.limit_end[n] = _NEVER
                self.refresh(n)
            if self.requeue_after.pop(arg, False):
                self.push(t + int(self.rng.integers(30, 301)), _REQUEUE, attempt.job)
            return
        if kind in (_ARRIVAL, _REQUEUE):
            bisect.insort(self.queue, (self.jobs.submit[arg], arg))
            if kind == _REQUEUE:
                self.resubmit[arg] = t
            return
        if kind == _CARRIER:
            nodes = self.fleet_carrier_nodes(arg)
            # a reservation: the nodes are idle and healthy (a drain for later work may be on)
            if not all(
                self.in_service[n] and self.busy[n] < 0 and self.down[n] == 0 for n in nodes
            ):
                msg = f"reserved nodes of carrier job {arg} are not free at {t}; please report"
                raise RuntimeError(msg)
            self.start(t, arg, np.array(nodes, dtype=np.int64), carrier=True)
            return
        n = arg
        if kind == _INSTALL:
            self.in_service[n] = True
        elif kind == _REMOVE:
            self.in_service[n] = False
        elif kind == _DOWN:
            self.down[n] += 1
        elif kind == _UP:
            self.down[n] -= 1
        elif kind == _DRAIN:
            self.drain[n] += 1
        elif kind == _UNDRAIN:
            self.drain[n] -= 1
        self.refresh(n)

    def fleet_carrier_nodes(self, job: int) -> tuple[int, ...]:
        return self.carriers[self.jobs.carrier[job]].nodes

    def shadow(self, need: int) -> int:
        """Time by which ``need`` nodes are expected free (limits of running attempts)."""
        missing = need - self.n_avail
        ends = [
            end
            for end, busy, ok, down, drain in zip(
                self.limit_end, self.busy, self.in_service, self.down, self.drain, strict=True
            )
            if busy >= 0 and ok and down == 0 and drain == 0
        ]
        if len(ends) < missing:
            return _NEVER
        return int(np.partition(np.array(ends), missing - 1)[missing - 1])

    def schedule(self, t: int) -> None:
        if self.n_avail == 0 or not self.queue:
            return
        jobs = self.jobs
        shadow: int | None = None
        i = 0
        while i < len(self.queue) and self.n_avail > 0 and i < 256:
            j = self.queue[i][1]
            need = jobs.n_nodes[j]
            if need <= self.n_avail and (shadow is None or t + jobs.limit_s[j] <= shadow):
                idx = np.flatnonzero(self.avail)
                pos = int(self.rng.integers(0, idx.size))
                nodes = np.sort(np.take(idx, np.arange(pos, pos + need), mode="wrap"))
                del self.queue[i]
                self.start(t, j, nodes)
                continue
            if shadow is None:
                shadow = self.shadow(need)
            i += 1

    def first_failure(self, nodes: np.ndarray, t: int) -> tuple[int, int, int]:
        """Return the first unit failure strictly after ``t`` on ``nodes``.

        As ``(time, class, node)``.
        """
        pos = np.searchsorted(self.fail_key, nodes * _KEY + t, side="right")
        pos_ok = pos < self.fail_key.size
        keys = np.where(pos_ok, self.fail_key[np.minimum(pos, self.fail_key.size - 1)], -1)
        same = pos_ok & (keys // _KEY == nodes)
        if not same.any():
            return _NEVER, -1, -1
        cand = np.where(same, keys % _KEY, _NEVER)
        k = int(np.argmin(cand))
        return int(cand[k]), int(self.fail_cls[pos[k]]), int(nodes[k])

    def clear_of_failures(self, nodes: np.ndarray, t: int) -> bool:
        """Return True when no unit failure on ``nodes`` lies near ``t`` (attribution interval)."""
        lo = np.searchsorted(self.fail_key, nodes * _KEY + t - APP_CLEAR_BEFORE_S, side="left")
        hi = np.searchsorted(self.fail_key, nodes * _KEY + t + APP_CLEAR_AFTER_S, side="right")
        return bool(np.all(lo == hi))

    def start(self, t: int, j: int, nodes: np.ndarray, *, carrier: bool = False) -> None:
        jobs, rng = self.jobs, self.rng
        rem, limit = self.remaining[j], jobs.limit_s[j]
        run = min(rem, limit)
        end = t + run
        state, exit_code, reason = (
            ("COMPLETED", "0:0", "complete") if rem <= limit else ("TIMEOUT", "0:0", "timeout")
        )
        done = jobs.work_s[j] - rem
        kind = self.kind[j]
        event_at = jobs.event_at_s[j]
        if kind != NORMAL and done < event_at < done + run:
            t_at = t + event_at - done
            t_event = self.clear_time(nodes, t, end, t_at) if kind in (APP_FAIL, OOM) else t_at
            if t_event is None:
                self.kind[j] = NORMAL
            elif kind == CANCEL:
                uid = 0 if rng.random() < 0.1 else 10001 + jobs.user[j]
                end, state, exit_code, reason = t_event, f"CANCELLED by {uid}", "0:15", "cancel"
            elif kind == APP_FAIL:
                end, state, exit_code, reason = t_event, "FAILED", "1:0", "app"
            else:
                end, state, exit_code, reason = t_event, "OUT_OF_MEMORY", "0:125", "oom"
        t_fail, cls, fail_node = self.first_failure(nodes, t)
        requeue = False
        if t_fail < end:
            fleet = self.fleet
            stops_processes = cls in fleet.gpu_class_idx or (
                not fleet.class_hardware[cls] and fleet.class_names[cls] not in NODE_FAIL_CLASSES
            )
            if stops_processes:
                end = t_fail + int(rng.integers(5, 121))
                state, exit_code = "FAILED", "1:0"
            else:
                end = t_fail + int(rng.integers(60, 301))
                state, exit_code = "NODE_FAIL", "0:0"
            reason = "hw"
            requeue = True
            self.remaining[j] = rem - (t_fail - t)
        else:
            fail_node = cls = -1
            self.remaining[j] = rem - run
        self.n_attempts[j] += 1
        submit = jobs.submit[j] if self.n_attempts[j] == 1 else self.resubmit[j]
        a = len(self.attempts)
        self.attempts.append(
            Attempt(
                job=j,
                number=self.n_attempts[j],
                submit_s=submit,
                start_s=t,
                end_s=end,
                state=state,
                exit_code=exit_code,
                nodes=tuple(int(x) for x in nodes),
                reason=reason,
                carrier=carrier,
                fail_node=fail_node,
                fail_class=cls,
            )
        )
        for n in nodes.tolist():
            self.busy[n] = a
            self.limit_end[n] = t + limit
            self.refresh(n)
        if end < self.w1:
            self.push(end, _END, a)
            if requeue:
                self.requeue_after[a] = True

    def clear_time(self, nodes: np.ndarray, start: int, end: int, t_event: int) -> int | None:
        """``t_event`` if no unit failure is near it on ``nodes``, else another time or None."""
        if self.clear_of_failures(nodes, t_event):
            return t_event
        for _ in range(20):
            if end - start <= 120:
                return None
            t = int(self.rng.integers(start + 60, end))
            if self.clear_of_failures(nodes, t):
                return t
        return None


def schedule_jobs(
    config: SynthConfig,
    rng: np.random.Generator,
    fleet: Fleet,
    jobs: Jobs,
    carriers: list[Carrier],
) -> list[Attempt]:
    """Run the scheduler over the window; returns every attempt in start order."""
    return _Scheduler(config, rng, fleet, jobs, carriers).run()
