"""The analytical goodput projection's equations, step by step, over a grid of what-ifs.

:func:`project_core` is the body of :func:`models.goodput.project_arrays`: the scenario's
knobs as arrays, the job's pieces in time and the hardware fault rate in each
(:func:`_piece_rates`), the warned and unwarned interruptions (:func:`_interrupts`), the
checkpoint interval (:func:`_checkpoint_interval`), detection and spare waits
(:func:`_spare_waits`), the renewal-reward shares of time of each recovery strategy
(:func:`_elastic_shares`, :func:`_restart_shares`) and the GPU-hours lost by cause
(:func:`_lost_by_cause`). The equations are those :func:`models.goodput.project` documents.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from models.checkpoint import daly_interval_s, ettr_meta, young_interval_s
from models.renewal import (
    RENEWAL_GRID,
    WAIT_NODES,
    expected_failures_at,
    piece_edges,
    scenario_param,
    spare_wait,
    spare_wait_random,
    spare_wait_random_sampled,
)
from models.scenario import (
    CATEGORICAL_KNOBS,
    RSC1_NODE_FAILURES_PER_1000_NODE_DAYS,
    SECONDS_PER_DAY,
    SECONDS_PER_HOUR,
)

if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping, Sequence

    from numpy.typing import ArrayLike, NDArray

    from models.scenario import ClassRate, Scenario

    Array = NDArray[np.float64]

__all__: list[str] = []

_MIN_REPAIR_SIGMA = 0.02  # below: fixed repairs (within 1e-4 goodput; the quadrature's error)
_MIN_INTERVAL_S = 1e-3  # floor on the checkpoint interval: the limit of checkpointing every step


def _mix(weights: Iterable[tuple[Any, Any]]) -> Any:
    """Sum of weight * value pairs (a mixture over detection kinds or interruption kinds)."""
    return sum(w * v for w, v in weights)


@dataclass(frozen=True, slots=True)
class _Job:
    """The GPUs and nodes the job holds (whole failure domains) and its length."""

    n_gpus: Array
    nodes_held: Array
    horizon_h: Array
    horizon_s: Array
    gpus_held: Array


@dataclass(frozen=True, slots=True)
class _PieceRates:
    """The job cut into time pieces and its hardware fault rate in each.

    Where the fault rate changes over the job (a young or aged non-exponential fleet) or the
    spare pool starts full, the equations of :func:`project` hold piece by piece.
    """

    pieces: bool  # more than one piece
    weight: Array  # share of the job's wall time in each piece
    piece_s: Array
    t_mid: Array  # each piece's middle, seconds into the job
    lam_hw: Array  # hardware faults per second, by piece
    hw_total: Array  # expected hardware faults over the job


@dataclass(frozen=True, slots=True)
class _Interrupts:
    """Rates per second, by piece, of what interrupts the job, warned of or not."""

    lam_j: Array  # job-level, never warned of
    lam_uhw: Array  # hardware faults nobody was warned of
    lam_u: Array  # everything that interrupts the job without warning
    lam_alarm: Array  # alarms, true and false
    lam_out: Array  # everything that ends a checkpoint segment
    lam_spare: Array  # everything that takes a spare
    share_hw: Array  # hardware's share of the unwarned interruptions
    share_job: Array


@dataclass(frozen=True, slots=True)
class _Interval:
    """The checkpoint interval: one for the whole job, from its mean unwarned rate."""

    lam_u_mean: Array
    mtti_u_s: Array  # inf when every interruption is warned of
    young: Array
    daly: Array
    tau: Array
    seg: Array  # a checkpoint segment, by piece: the interval and its checkpoint


@dataclass(frozen=True, slots=True)
class _Recovery:
    """Detection and spare waits after each kind of unwarned interruption (a crash, a hang)."""

    detections: list[tuple[Array, Array]]  # (share, detection time in s)
    waits: list[tuple[Array, Array]]  # (mean wait in s, Laplace transform at lam_u)
    reload_warm: Array
    mean_detect: Array
    mean_wait: Array

    def by_kind(self) -> Iterable[tuple[tuple[Array, Array], tuple[Array, Array]]]:
        """Each kind's (share, detection time) with its (mean wait, Laplace transform)."""
        return zip(self.detections, self.waits, strict=True)


@dataclass(frozen=True, slots=True)
class _Shares:
    """One strategy's shares of wall time by use, by piece, with its restart and drain rates."""

    goodput: Array
    checkpoint: Array
    wait: Array
    drain: Array
    restart: Array
    rework: Array
    mean_restart_s: Array
    drains_per_s: Array


@dataclass(frozen=True, slots=True)
class CoreArrays:
    """:func:`models.goodput.project_arrays`'s outputs before the error bound, with its parts."""

    outputs: dict[str, Array]
    pieces: bool  # integrated over time pieces: a coarser cut gives the discretisation error
    contention: Array  # share of the job in waits for a spare that a further fault interrupts
    edge_effect: Array  # the window's edges, in absolute goodput


def _class_mtbfs(
    s: Scenario,
    over: Mapping[str, ArrayLike],
    p: Mapping[str, Array],
    mtbf_override: Sequence[NDArray[np.float64]] | None,
) -> list[Array]:
    """Each class rate's MTBF in hours, as arrays over the grid (RSC-1's rate when none given)."""
    if mtbf_override is not None:
        return [np.asarray(m, float) for m in mtbf_override]
    if not s.rates and "node_failures_per_1000_node_days" in over:
        per_1000 = np.where(
            np.isnan(p["node_failures_per_1000_node_days"]),
            RSC1_NODE_FAILURES_PER_1000_NODE_DAYS,
            p["node_failures_per_1000_node_days"],
        )
        return [24_000.0 / per_1000]
    return [np.asarray(r.mtbf_h, float) for r in s.class_rates()]


def _job(p: Mapping[str, Array]) -> _Job:
    n_gpus = p["n_gpus"]
    domain = p["failure_domain_gpus"]
    n_domains = np.ceil(n_gpus / domain)
    gpus_held = n_domains * domain
    nodes_held = np.ceil(gpus_held / p["gpus_per_node"])
    horizon_h = p["job_days"] * 24.0
    return _Job(n_gpus, nodes_held, horizon_h, horizon_h * SECONDS_PER_HOUR, gpus_held)


def _piece_rates(
    s: Scenario, rates: Sequence[ClassRate], mtbfs: Sequence[Array], job: _Job, *, fine: bool
) -> _PieceRates:
    """Cut the job into pieces and add up every class's expected faults by each piece's edge."""
    constant_rate = s.fleet_age == "steady_state" or all(r.weibull_shape == 1.0 for r in rates)
    pieces = not constant_rate or s.strategy != "restart"
    edges = piece_edges(fine) if pieces else np.asarray([0, RENEWAL_GRID])
    frac = edges / RENEWAL_GRID
    weight = np.diff(frac)
    count: Any = 0.0  # expected hardware faults by each edge
    for r, mtbf in zip(rates, mtbfs, strict=True):
        units = job.gpus_held if r.level == "gpu" else job.nodes_held
        for share, multiplier in s.unit_groups():
            by_edge = expected_failures_at(
                mtbf / multiplier, r.weibull_shape, job.horizon_h, s.fleet_age, edges
            )
            count = count + (units * share)[..., None] * by_edge
    count = np.asarray(count, float)
    piece_s = job.horizon_s[..., None] * weight
    t_mid = job.horizon_s[..., None] * (frac[:-1] + frac[1:]) / 2.0
    lam_hw = np.diff(count, axis=-1) / piece_s
    return _PieceRates(pieces, weight, piece_s, t_mid, lam_hw, count[..., -1])


def _interrupts(q: Mapping[str, Array], lam_hw: Array) -> _Interrupts:
    """Split the hardware faults into warned and unwarned ones and add the job-level ones."""
    recall, precision = q["drain_recall"], q["drain_precision"]
    lam_j = q["job_interruptions_per_h"] / SECONDS_PER_HOUR
    lam_uhw = (1.0 - recall) * lam_hw
    lam_u = lam_uhw + lam_j
    lam_alarm = recall * lam_hw / precision
    lam_out = lam_u + lam_alarm
    lam_spare = lam_uhw + lam_alarm
    with np.errstate(divide="ignore", invalid="ignore"):
        share_hw = np.where(lam_u > 0, lam_uhw / lam_u, 1.0)
    return _Interrupts(
        lam_j, lam_uhw, lam_u, lam_alarm, lam_out, lam_spare, share_hw, 1.0 - share_hw
    )


def _checkpoint_interval(
    p: Mapping[str, Array], q: Mapping[str, Array], job: _Job, hw_total: Array
) -> _Interval:
    """Daly's interval at the job's mean unwarned rate, or the one given."""
    lam_u_mean = (1.0 - p["drain_recall"]) * hw_total / job.horizon_s + p[
        "job_interruptions_per_h"
    ] / (SECONDS_PER_HOUR)
    delta = p["checkpoint_s"]
    with np.errstate(divide="ignore", invalid="ignore"):
        mtti_u_s = 1.0 / lam_u_mean
        young = np.asarray(young_interval_s(delta, mtti_u_s))
        daly = np.asarray(daly_interval_s(delta, mtti_u_s))
    tau = np.where(np.isnan(p["checkpoint_interval_s"]), daly, p["checkpoint_interval_s"])
    # no unwarned fault: no periodic checkpoint
    tau = np.where(np.isfinite(tau), tau, job.horizon_s)
    tau = np.maximum(tau, _MIN_INTERVAL_S)  # a free checkpoint (delta = 0) gives Daly's tau = 0
    seg = tau[..., None] + q["checkpoint_s"]
    return _Interval(lam_u_mean, mtti_u_s, young, daly, tau, seg)


def _spare_waits(
    s: Scenario,
    p: Mapping[str, Array],
    q: Mapping[str, Array],
    pr: _PieceRates,
    rates: _Interrupts,
) -> _Recovery:
    """Return detection (a crash after detect_s, a hang after detect_hang_s) and spare waits."""
    detections = [(1.0 - q["hang_share"], q["detect_s"]), (q["hang_share"], q["detect_hang_s"])]
    reload_warm = q["reload_s"] + q["warmup_s"]
    repair_s = q["repair_h"] * SECONDS_PER_HOUR
    random_repair = bool(np.any(p["repair_sigma"] >= _MIN_REPAIR_SIGMA))
    lam_spare, lam_u = rates.lam_spare, rates.lam_u
    waits = []
    for _, d in detections:
        c = np.maximum(repair_s - d, 0.0)  # from detection until the domain's own repair is done
        fixed = spare_wait(q["hot_spares"], c, lam_spare, lam_u, pr.t_mid)
        if random_repair and s.strategy != "restart":  # below sigma 0.02: the fixed answer
            sigma = np.maximum(q["repair_sigma"], _MIN_REPAIR_SIGMA)
            one_scenario = all(np.ndim(v) == 0 for v in p.values())
            if one_scenario and pr.lam_hw.ndim == 2 and pr.lam_hw.shape[0] > WAIT_NODES:
                rand = spare_wait_random_sampled(q, d, repair_s, sigma, pr.lam_hw, pr.t_mid)
            else:
                rand = spare_wait_random(
                    q["hot_spares"], d, repair_s, sigma, lam_spare, lam_u, pr.t_mid
                )
            spread = q["repair_sigma"] >= _MIN_REPAIR_SIGMA
            fixed = (np.where(spread, rand[0], fixed[0]), np.where(spread, rand[1], fixed[1]))
        mean_w, laplace = (np.nan_to_num(v, nan=0.0) for v in fixed)
        laplace = np.where(lam_spare > 0, laplace, 1.0)
        waits.append((np.where(lam_spare > 0, mean_w, 0.0), laplace))
    mean_detect = _mix(detections)
    mean_wait = _mix((w, wt[0]) for (w, _), wt in zip(detections, waits, strict=True))
    return _Recovery(detections, waits, reload_warm, mean_detect, mean_wait)


def _elastic_shares(
    q: Mapping[str, Array], rates: _Interrupts, interval: _Interval, rec: _Recovery
) -> _Shares:
    """Elastic: a replica group leaves on a fault or a drain; job-level faults roll back."""
    lam_uhw, lam_alarm, lam_j = rates.lam_uhw, rates.lam_alarm, rates.lam_j
    migration, seg = q["drain_migration_s"], interval.seg
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        group = np.maximum(q["replica_gpus"], q["failure_domain_gpus"])
        frac_group = np.minimum(group / q["n_gpus"], 1.0)
        down_s = rec.mean_detect + rec.mean_wait + rec.reload_warm
        # a drained group leaves without stalling the others and moves onto a spare
        down = np.minimum(lam_uhw * down_s * frac_group + lam_alarm * migration * frac_group, 1.0)
        stall = np.minimum(lam_uhw * rec.mean_detect, 1.0)
        # job-level interruptions roll the whole job back to its last checkpoint
        survive_rb = _mix((w, np.exp(-lam_j * (d + rec.reload_warm))) for w, d in rec.detections)
        q_j = np.exp(-lam_j * seg)
        cycle_rb = np.where(lam_j > 0, -np.expm1(-lam_j * seg) / (lam_j * survive_rb), seg)
        good_rb = q_j * interval.tau[..., None] / cycle_rb
        ckpt_rb = q_j * q["checkpoint_s"] / cycle_rb
        base = (1.0 - down) * (1.0 - stall)
        goodput = base * good_rb
        wait = np.minimum(lam_uhw * rec.mean_wait * frac_group, down)
        drain = np.minimum(lam_alarm * migration * frac_group, down - wait)
        restart_rb = base * (1.0 - survive_rb)
        return _Shares(
            goodput=goodput,
            checkpoint=base * ckpt_rb,
            wait=wait,
            drain=drain,
            restart=down - wait - drain + (1.0 - down) * stall + restart_rb,
            rework=np.maximum(base * (1.0 - good_rb - ckpt_rb) - restart_rb, 0.0),
            mean_restart_s=down_s + 0.0 * rates.lam_u,
            drains_per_s=lam_alarm + 0.0 * goodput,
        )


def _recovery_survival(
    s: Scenario, q: Mapping[str, Array], rates: _Interrupts, rec: _Recovery
) -> tuple[Array, Array, Array]:
    """Return a recovery's survival, its spare wait's share of time and its mean length.

    For restart and hot spare: the chance of no unwarned fault during a recovery (a hardware
    fault's or a job-level one's), by piece.
    """
    lam_u, share_hw, reload_warm = rates.lam_u, rates.share_hw, rec.reload_warm
    # a job-level interruption restarts in place: detection, reload, warm-up
    survive_job = _mix((w, np.exp(-lam_u * (d + reload_warm))) for w, d in rec.detections)
    if s.strategy == "restart":
        restart_hw = q["reschedule_s"] + reload_warm
        survive_hw = _mix((w, np.exp(-lam_u * (d + restart_hw))) for w, d in rec.detections)
        wait = np.zeros_like(survive_hw)
        mean_hw_s = rec.mean_detect + restart_hw
    else:
        survive_hw = _mix(
            (w, np.exp(-lam_u * (d + reload_warm)) * lap) for (w, d), (_, lap) in rec.by_kind()
        )
        wait = share_hw * _mix(
            (w, np.exp(-lam_u * d) * (1.0 - lap)) for (w, d), (_, lap) in rec.by_kind()
        )
        mean_hw_s = rec.mean_detect + rec.mean_wait + reload_warm
    survive = share_hw * survive_hw + rates.share_job * survive_job
    mean_restart_s = share_hw * mean_hw_s + rates.share_job * (rec.mean_detect + reload_warm)
    return survive, wait, mean_restart_s


def _restart_shares(
    s: Scenario, q: Mapping[str, Array], rates: _Interrupts, interval: _Interval, rec: _Recovery
) -> _Shares:
    """Restart and hot spare: renewal reward over cycles that each start a fresh segment."""
    lam_u, lam_alarm, lam_out = rates.lam_u, rates.lam_alarm, rates.lam_out
    tau_q, seg = interval.tau[..., None], interval.seg
    drain_s = q["checkpoint_s"] + q["drain_migration_s"]
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        survive, wait, mean_restart_s = _recovery_survival(s, q, rates, rec)
        q_seg = np.exp(-lam_out * seg)  # the segment completes
        # time in a drain, done or cut short by an unwarned fault: E[min(Y, D)]
        drain_busy = np.where(lam_u > 0, -np.expm1(-lam_u * drain_s) / lam_u, drain_s)
        cycle_s = -np.expm1(-lam_out * seg) * (1.0 + lam_alarm * drain_busy)
        cycle_s = np.where(
            lam_out > 0, cycle_s / (lam_out * survive), seg * (1.0 + lam_alarm * drain_busy)
        )
        # work a drain commits: the compute done in the segment, if its checkpoint completes
        with_alarms = lam_alarm > 0
        drained = np.where(
            with_alarms,
            (-np.expm1(-lam_out * tau_q) / np.where(with_alarms, lam_out, 1.0) - tau_q * q_seg)
            * np.exp(-lam_u * q["checkpoint_s"]),
            0.0,
        )
        alarm_share = np.where(lam_out > 0, lam_alarm / lam_out, 0.0)
        goodput = (q_seg * tau_q + alarm_share * drained) / cycle_s
        checkpoint = q_seg * q["checkpoint_s"] / cycle_s
        drains_per_s = lam_alarm * survive / (1.0 + lam_alarm * drain_busy)
        drain = drains_per_s * drain_busy
        in_restart = 1.0 - survive
        return _Shares(
            goodput=goodput,
            checkpoint=checkpoint,
            wait=wait,
            drain=drain,
            restart=in_restart - wait,
            rework=np.maximum(1.0 - goodput - checkpoint - drain - in_restart, 0.0),
            mean_restart_s=mean_restart_s,
            drains_per_s=drains_per_s,
        )


def _over_time(x: Any, pr: _PieceRates, shape: tuple[int, ...]) -> Array:
    """Return the job's average of a per-piece share."""
    share: Array = np.sum(
        np.broadcast_to(x, np.broadcast_shapes(np.shape(x), shape)) * pr.weight, axis=-1
    )
    return share


def _per_fault(x: Any, rate: Any, pr: _PieceRates) -> Array:
    """Return the average of a per-piece value over the faults' times."""
    total = np.sum(rate * pr.weight, axis=-1)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean: Array = np.where(
            total > 0, np.sum(x * rate * pr.weight, axis=-1) / total, np.mean(x + 0.0 * rate, -1)
        )
        return mean


def _meta_ettr(
    s: Scenario,
    p: Mapping[str, Array],
    q: Mapping[str, Array],
    job: _Job,
    pr: _PieceRates,
    rates: _Interrupts,
    interval: _Interval,
    rec: _Recovery,
    mean_restart_t: Array,
) -> Array:
    """Meta's first-order ETTR; for elastic, what a whole-job restart would give."""
    u0 = (
        _per_fault(rec.mean_detect + q["reschedule_s"] + rec.reload_warm, rates.lam_u, pr)
        if s.strategy == "elastic"
        else mean_restart_t
    )
    lam_alarm_mean = np.sum(rates.lam_alarm * pr.weight, axis=-1)
    delta = p["checkpoint_s"]
    return np.asarray(
        ettr_meta(
            job.nodes_held,
            interval.lam_u_mean * SECONDS_PER_DAY / job.nodes_held,
            restart_s=u0,
            checkpoint_interval_s=interval.tau,
            checkpoint_s=delta,
            drains_per_node_day=lam_alarm_mean * SECONDS_PER_DAY / job.nodes_held,
            drain_s=delta + p["drain_migration_s"],
            clip=False,
        )
    )


def _lost_by_cause(
    p: Mapping[str, Array], job: _Job, pr: _PieceRates, shape: tuple[int, ...], shares: _Shares
) -> dict[str, Array]:
    """Return useful and lost GPU-hours by cause, and the energy lost."""
    goodput_t = _over_time(shares.goodput, pr, shape)
    gpu_h = job.n_gpus * job.horizon_h
    lost_total = (1.0 - goodput_t) * gpu_h
    return {
        "useful_gpu_h": goodput_t * gpu_h,
        "lost_gpu_h_checkpoint": _over_time(shares.checkpoint, pr, shape) * gpu_h,
        "lost_gpu_h_rework": _over_time(shares.rework, pr, shape) * gpu_h,
        "lost_gpu_h_restart": _over_time(shares.restart, pr, shape) * gpu_h,
        "lost_gpu_h_spares_wait": _over_time(shares.wait, pr, shape) * gpu_h,
        "lost_gpu_h_drain": _over_time(shares.drain, pr, shape) * gpu_h,
        "lost_gpu_h_total": lost_total,
        "energy_lost_mwh": lost_total * p["gpu_power_w"] * p["pue"] / 1e6,
    }


def project_core(
    s: Scenario,
    over: Mapping[str, ArrayLike] | None,
    mtbf_override: Sequence[NDArray[np.float64]] | None,
    *,
    fine: bool,
) -> CoreArrays:
    """Return the projection's outputs over the grid ``over`` spans, and its error bound's parts.

    ``fine=False`` cuts the job into coarser pieces: the distance between the two answers is the
    discretisation part of the error bound (see :func:`models.goodput.project_arrays`).
    """
    over = {} if over is None else over
    p = {
        f.name: scenario_param(s, over, f.name)
        for f in dataclasses.fields(s)
        if f.name not in CATEGORICAL_KNOBS
    }
    rates = s.class_rates()
    mtbfs = _class_mtbfs(s, over, p, mtbf_override)
    job = _job(p)
    pr = _piece_rates(s, rates, mtbfs, job, fine=fine)
    q = {k: v[..., None] for k, v in p.items()}  # knobs, broadcast against the pieces
    lam = _interrupts(q, pr.lam_hw)
    interval = _checkpoint_interval(p, q, job, pr.hw_total)
    rec = _spare_waits(s, p, q, pr, lam)
    if s.strategy == "elastic":
        shares = _elastic_shares(q, lam, interval, rec)
    else:
        shares = _restart_shares(s, q, lam, interval, rec)
    shape = lam.lam_u.shape
    goodput_t = _over_time(shares.goodput, pr, shape)
    mean_restart_t = _per_fault(shares.mean_restart_s, lam.lam_u, pr)
    ettr = _meta_ettr(s, p, q, job, pr, lam, interval, rec, mean_restart_t)
    lam_alarm_mean = np.sum(lam.lam_alarm * pr.weight, axis=-1)
    expected = pr.hw_total + p["job_interruptions_per_h"] * job.horizon_h
    mtti_s = job.horizon_s / expected
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        daly_wall_s = job.horizon_s / goodput_t
    mean_wait = (
        _per_fault(rec.mean_wait, lam.lam_uhw, pr) if s.strategy != "restart" else 0.0 * goodput_t
    )
    outputs = {
        "mtti_h": mtti_s / SECONDS_PER_HOUR,
        "mtti_unpredicted_h": interval.mtti_u_s / SECONDS_PER_HOUR,
        "expected_interruptions": expected,
        "expected_drains": np.sum(shares.drains_per_s * pr.piece_s, axis=-1),
        "expected_false_alarms": lam_alarm_mean * (1.0 - p["drain_precision"]) * job.horizon_s,
        "young_interval_min": interval.young / 60.0,
        "daly_interval_min": interval.daly / 60.0,
        "checkpoint_interval_min": interval.tau / 60.0,
        "mean_restart_min": mean_restart_t / 60.0,
        "mean_spare_wait_min": mean_wait / 60.0,
        "ettr": np.where(ettr >= 0.0, np.minimum(ettr, 1.0), np.nan),
        "goodput": goodput_t,
        "daly_wall_time_h": daly_wall_s / SECONDS_PER_HOUR,
    } | _lost_by_cause(p, job, pr, shape, shares)
    # waits for a spare that a further fault interrupts: their lengths are correlated (the
    # spares come back in order), which the renewal argument treats as independent
    interrupted = 1.0 - _mix((w, lap) for (w, _), (_, lap) in rec.by_kind())
    return CoreArrays(
        outputs=outputs,
        pieces=pr.pieces,
        contention=_over_time(shares.wait * interrupted, pr, shape),
        # the window's edges: the segment in progress at the end is not committed, the first
        # cycle starts fresh; at most about a segment's share of the job
        edge_effect=goodput_t * (interval.tau + p["checkpoint_s"]) / (2.0 * job.horizon_s),
    )
