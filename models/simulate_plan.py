"""A :class:`~models.scenario.Scenario` resolved for the Monte Carlo of :mod:`models.simulate`.

:func:`build_plan` turns a scenario into a :class:`Plan` (every constant the simulation needs, in
seconds, with the fleet's units split into :class:`UnitClass` es by node group and age);
:func:`failure_matrix` draws the hardware fault times of every trial; :func:`trial_summary` turns
per-trial results into the dict :func:`models.simulate.simulate_job` and
:func:`models.simulate_naive.simulate_job_naive` return. The model is described in
:mod:`models.simulate`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, fields
from typing import TYPE_CHECKING, Any

import numpy as np
from scipy import special

from models.goodput import project_arrays
from models.scenario import SECONDS_PER_HOUR, Scenario

if TYPE_CHECKING:
    from collections.abc import Sequence

    import polars as pl
    from numpy.typing import NDArray

# the rest is shared by models.simulate and models.simulate_naive only
__all__ = ["SimulationSummary"]

_LOSSES = ("checkpoint", "rework", "restart", "spares_wait", "drain")
_SLOW_TRIALS = ("slow_share", "n_evictions", "slow", "eviction")
_SLOW_FIELDS = (
    "goodput_fail_stop",
    "slow_share",
    "slow_share_se",
    "evictions",
    "lost_gpu_h_slow",
    "lost_gpu_h_eviction",
)


@dataclass(frozen=True)
class UnitClass:
    units: int
    shape: float
    scale_s: float
    age: str | float  # "steady_state", "new" or the units' age at job start, seconds


@dataclass(frozen=True)
class Plan:
    """A scenario resolved to the constants the simulation needs, in seconds."""

    horizon_s: float
    n_gpus: float
    classes: tuple[UnitClass, ...]
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
    """Split the units of one class into groups ``(share, value)``.

    ``value`` is a node group's rate multiplier or an age; each group gets
    ``round(share * units)`` units, the last the rest.
    """
    out = []
    left = units
    for share, multiplier in groups[:-1]:
        n = min(round(share * units), left)
        out.append((n, multiplier))
        left -= n
    out.append((left, groups[-1][1]))
    return out


def build_plan(s: Scenario) -> Plan:
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
                    classes.append(UnitClass(n_aged, r.weibull_shape, scale_s, age))
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
    return Plan(
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


def _window_probability(c: UnitClass, fleet_age: str | float, horizon_s: float) -> float:
    """Probability that a unit's first failure falls in the job window [0, horizon)."""
    k, eta = c.shape, c.scale_s
    if fleet_age == "steady_state":  # F_e(T) = P(1/k, (T/eta)^k)
        return float(special.gammainc(1.0 / k, (horizon_s / eta) ** k))
    if fleet_age == "new":
        return -math.expm1(-((horizon_s / eta) ** k))
    age = float(fleet_age)
    return -math.expm1(-(((age + horizon_s) / eta) ** k - (age / eta) ** k))


def _first_failures_in_window(
    c: UnitClass, fleet_age: str | float, horizon_s: float, size: int, rng: np.random.Generator
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
    clipped: NDArray[np.float64] = np.minimum(np.maximum(t, 0.0), np.nextafter(horizon_s, 0.0))
    return clipped


def failure_matrix(plan: Plan, n_trials: int, rng: np.random.Generator) -> NDArray[np.float64]:
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
    # start from zeros: a plan without unit classes has no batches (and no failures)
    per_trial = sum(per_batch, np.zeros(n_trials, dtype=np.int64))
    width = max(int(per_trial.max()) if n_trials else 0, 1)
    matrix = np.full((n_trials, width), np.inf)
    filled = np.zeros(n_trials, dtype=np.int64)
    for (trial, t), counts in zip(batches, per_batch, strict=True):
        if trial.size:
            rank = np.arange(trial.size) - (np.cumsum(counts) - counts)[trial]
            matrix[trial, filled[trial] + rank] = t
            filled += counts
    matrix.sort(axis=1)
    return matrix


def _standard_error(x: NDArray[np.float64]) -> float:
    """Monte Carlo standard error of the mean of ``x``: sd / sqrt(n)."""
    return float(x.std(ddof=1) / math.sqrt(x.size)) if x.size > 1 else math.nan


@dataclass(frozen=True, slots=True)
class SimulationSummary:
    """What a Monte Carlo of the job gives (:func:`models.simulate.simulate_job`).

    ``goodput`` (mean over trials) with ``goodput_se`` (its Monte Carlo standard error) and
    ``goodput_lo`` / ``goodput_hi`` (2.5/97.5 % of trials); ``interruptions`` (mean
    interruptions in the window: faults, warned of or not, and job-level ones) with
    ``interruptions_se``; ``job_interruptions`` (the job-level ones) with
    ``job_interruptions_se``; ``drains`` (mean drains done) with ``drains_se``; ``mtti_h`` with
    ``mtti_h_se`` (delta method); ``checkpoint_interval_min``; ``lost_gpu_h_checkpoint`` /
    ``_rework`` / ``_restart`` / ``_spares_wait`` / ``_drain`` / ``_total``;
    ``energy_lost_mwh``; ``fleet_age_assumption``; and ``trials``, a polars frame with one row
    per trial. ``method`` is ``vectorised`` or ``naive``. With ``slow_laws`` (fail-slow,
    :mod:`models.simulate_slow`) ``goodput`` and the total loss count both causes, and
    ``goodput_fail_stop``, ``slow_share`` with ``slow_share_se``, ``evictions`` (mean per
    trial, while the job computes: a trial's evictions x its fail-stop goodput),
    ``lost_gpu_h_slow`` and ``lost_gpu_h_eviction`` are set (None otherwise), and
    ``trials`` has ``slow_share``, ``n_evictions``, ``slow`` and ``eviction`` (the shares of the
    window each lost) too.
    """

    method: str
    n_trials: int
    strategy: str
    goodput: float
    goodput_se: float
    goodput_lo: float
    goodput_hi: float
    interruptions: float
    interruptions_se: float
    job_interruptions: float
    job_interruptions_se: float
    drains: float
    drains_se: float
    mtti_h: float
    mtti_h_se: float
    checkpoint_interval_min: float
    lost_gpu_h_checkpoint: float
    lost_gpu_h_rework: float
    lost_gpu_h_restart: float
    lost_gpu_h_spares_wait: float
    lost_gpu_h_drain: float
    lost_gpu_h_total: float
    energy_lost_mwh: float
    fleet_age_assumption: str
    trials: pl.DataFrame
    goodput_fail_stop: float | None = None
    slow_share: float | None = None
    slow_share_se: float | None = None
    evictions: float | None = None
    lost_gpu_h_slow: float | None = None
    lost_gpu_h_eviction: float | None = None

    def to_dict(self) -> dict[str, object]:
        """Return the fields as a plain dict, in field order; the fail-slow ones when set."""
        out = {f.name: getattr(self, f.name) for f in fields(self)}
        return {k: v for k, v in out.items() if k not in _SLOW_FIELDS or v is not None}


def trial_summary(
    plan: Plan, per_trial: dict[str, NDArray[np.float64]], method: str
) -> SimulationSummary:
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
    import polars as pl  # only here: a projection without --simulate needs no polars

    trials = pl.DataFrame(
        {
            "trial": np.arange(n),
            "goodput": goodput,
            "n_interruptions": count.astype(np.int64),
            "n_job_interruptions": jobs.astype(np.int64),
            "n_drains": drains.astype(np.int64),
            **{f"lost_frac_{key}": per_trial[key] for key in _LOSSES},
            **{key: per_trial[key] for key in _SLOW_TRIALS if key in per_trial},
        }
    )
    return SimulationSummary(
        method=method,
        n_trials=n,
        strategy=plan.strategy,
        goodput=float(goodput.mean()),
        goodput_se=_standard_error(goodput),
        goodput_lo=float(np.quantile(goodput, 0.025)),
        goodput_hi=float(np.quantile(goodput, 0.975)),
        interruptions=mean_count,
        interruptions_se=_standard_error(count),
        job_interruptions=float(jobs.mean()),
        job_interruptions_se=_standard_error(jobs),
        drains=float(drains.mean()),
        drains_se=_standard_error(drains),
        mtti_h=horizon_h / mean_count if mean_count > 0 else math.inf,
        mtti_h_se=horizon_h * _standard_error(count) / mean_count**2
        if mean_count > 0
        else math.nan,
        checkpoint_interval_min=plan.tau_s / 60.0,
        lost_gpu_h_checkpoint=lost["checkpoint"],
        lost_gpu_h_rework=lost["rework"],
        lost_gpu_h_restart=lost["restart"],
        lost_gpu_h_spares_wait=lost["spares_wait"],
        lost_gpu_h_drain=lost["drain"],
        lost_gpu_h_total=lost_total,
        energy_lost_mwh=lost_total * plan.gpu_power_w * plan.pue / 1e6,
        fleet_age_assumption=plan.fleet_age_assumption,
        trials=trials,
        **_slow_summary(per_trial, gpu_h),
    )


def _slow_summary(per_trial: dict[str, NDArray[np.float64]], gpu_h: float) -> dict[str, float]:
    """Return the fail-slow fields of a summary (none without fail-slow draws)."""
    if "slow_share" not in per_trial:
        return {}
    slow, eviction = per_trial["slow"], per_trial["eviction"]
    fail_stop = per_trial["goodput"] + slow + eviction
    return {
        "goodput_fail_stop": float(fail_stop.mean()),
        "slow_share": float(per_trial["slow_share"].mean()),
        "slow_share_se": _standard_error(per_trial["slow_share"]),
        "evictions": float((per_trial["n_evictions"] * fail_stop).mean()),
        "lost_gpu_h_slow": float(slow.mean()) * gpu_h,
        "lost_gpu_h_eviction": float(eviction.mean()) * gpu_h,
    }
