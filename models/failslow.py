r"""The rank-pace model of fail-slow: a synchronous job runs at the pace of its slowest unit.

Each unit (a GPU or a node, :class:`~models.failslow_laws.SlowLaws`) has slow episodes arriving in
wall-clock time at rate :math:`\lambda` per hour, each lasting :math:`D \sim F_D` and slowing the
unit by :math:`S \sim F_S`, :math:`S \ge 1`, independent of :math:`D`. A job of :math:`N` units
runs at pace :math:`M(t) = \max(1, S \text{ of every episode on at } t)`. The episodes on at a
random instant are the occupants of an :math:`M/G/\infty` queue fed by :math:`N` superposed
Poisson streams: a Poisson number with mean :math:`m = N\lambda E[D]`, each with its own
:math:`S`, so that :math:`P(M \le x) = \exp(-m(1 - F_S(x)))` for :math:`x \ge 1` (exact for that
stream, whether or not a unit's episodes overlap). Work per wall time is :math:`E[1/M]`, and as
:math:`1/M = 1 - \int_1^M x^{-2}dx`,

.. math::
    \mathrm{share}(N) = \int_1^\infty x^{-2}\left(1 - e^{-N\lambda E[D](1 - F_S(x))}\right)dx,
    \qquad \mathrm{slowdown}(N) = \frac{1}{1 - \mathrm{share}(N)}

(:func:`slow_share`), one quadrature per :math:`N`. A fixed :math:`S = s` gives
:math:`(1 - e^{-m})(1 - 1/s)`: the job saturates at the slowest plausible unit; a small
:math:`m` gives :math:`m E[1 - 1/S]`, linear in :math:`N`.

**Mitigation** (:class:`Mitigation`). An episode with :math:`S > 1 + \theta` (the tolerance) is
detected after :math:`\tau_d` and its unit is out of the job :math:`\tau_e` later, so it lasts
:math:`D' = \min(D, \tau_d + \tau_e)`; the formula keeps its form with
:math:`N\lambda E[D'; S > x]` in place of :math:`N\lambda E[D](1 - F_S(x))`. Every episode still
on at detection (:math:`D > \tau_d`) costs one eviction of :math:`c_e` seconds of the job's wall
time (a restart with its rollback, a hot-spare swap, or a planned move:
:func:`eviction_cost_s`), at :math:`\nu = N\lambda P(S > 1+\theta) P(D > \tau_d)` per hour. The
job is stalled :math:`e = \nu c_e` of the time and runs at pace :math:`M` the rest, so it works
:math:`(1 - e)(1 - \mathrm{share})` of the time: the stalls are taken as independent of the pace
(an error of the order of :math:`e \times \mathrm{share}`).

:func:`project_slow` and :func:`slowdown_curve` return :class:`SlowProjection`\ s, with an
interval when the laws come from :func:`~models.failslow_fit.fit_slow_laws` (its bootstrap);
:func:`combine_goodput` joins one to a fail-stop :func:`~models.goodput.project` result.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from itertools import pairwise
from typing import TYPE_CHECKING

import numpy as np
from scipy import special

from models.failslow_fit import SlowFit
from models.failslow_laws import SlowLaws
from models.scenario import SECONDS_PER_HOUR

if TYPE_CHECKING:
    from collections.abc import Sequence

    from numpy.typing import ArrayLike, NDArray

    from models.scenario import Projection, Scenario

__all__ = [
    "CombinedGoodput",
    "LostGpuHours",
    "Mitigation",
    "SlowCause",
    "SlowProjection",
    "combine_goodput",
    "eviction_cost_s",
    "project_slow",
    "slow_share",
    "slowdown_curve",
]

_PANEL = 0.25  # widest quadrature panel, in ln(S - 1)
_MIN_PANELS = 8  # panels between two edges at least (a narrow law has a narrow range)
_GAUSS_X, _GAUSS_W = np.polynomial.legendre.leggauss(16)
_EVICTION_KINDS = ("restart", "hot_spare", "planned")


@dataclass(frozen=True, slots=True)
class Mitigation:
    """What is done about slow units: detect, tolerate, evict.

    Parameters
    ----------
    detect_s
        Time from an episode's start until it is detected (``straggler_detect_s``), seconds;
        ``inf`` (the default) never acts.
    tolerance
        ``theta``: an episode with ``S <= 1 + theta`` is never acted on; also the line between
        the tolerated and the actionable slow time in :attr:`SlowProjection.by_cause`.
    evict_s
        Time from detection until the slow unit is out of the job, seconds (``tau_e``); the job
        runs at the slow pace meanwhile.
    eviction_cost_s
        Wall time of the job lost per eviction, seconds (``c_e``): see :func:`eviction_cost_s`.
    """

    detect_s: float = math.inf
    tolerance: float = 0.05
    evict_s: float = 0.0
    eviction_cost_s: float = 0.0

    def __post_init__(self) -> None:
        """Check the knobs; a bad one raises ``ValueError``."""
        if math.isnan(self.detect_s) or self.detect_s < 0:
            msg = f"detect_s must be 0 or more seconds (inf: never act), got {self.detect_s}."
            raise ValueError(msg)
        for name in ("tolerance", "evict_s", "eviction_cost_s"):
            value = getattr(self, name)
            if not (math.isfinite(value) and value >= 0):
                msg = f"{name} must be a finite number, 0 or more, got {value}."
                raise ValueError(msg)

    @property
    def acts(self) -> bool:
        """Whether slow units are ever evicted."""
        return math.isfinite(self.detect_s)

    @property
    def cut_s(self) -> float:
        """How long an acted-on episode lasts at most: ``detect_s + evict_s``."""
        return self.detect_s + self.evict_s


@dataclass(frozen=True, slots=True)
class SlowCause:
    """One cause of fail-slow lost time, in hours per wall-clock hour of the job."""

    cause: str
    h_per_h: float


@dataclass(frozen=True, slots=True)
class SlowProjection:
    """The rank-pace model's answer for a job of ``n_gpus`` GPUs.

    Attributes
    ----------
    n_gpus
        GPUs of the job.
    mean_slow_units
        Episodes on at a random instant (``m``; after eviction cut them short).
    share
        ``E[1 - 1/M]``: the share of the running time lost to the slow pace.
    slowdown
        ``1 / (1 - share)``: the job's expected slowdown (its step time over the healthy one).
    share_tolerated
        The part of ``share`` while the pace is within the tolerance (no episode to act on).
    evictions_per_h
        Evictions per wall-clock hour.
    slow_h_per_h, eviction_h_per_h, lost_h_per_h
        Hours lost per wall-clock hour to the slow pace (``share`` of the time not stalled),
        to eviction stalls, and both.
    by_cause
        ``lost_h_per_h`` split: ``slow_tolerated``, ``slow_above_tolerance``, ``eviction``.
    share_lo, share_hi, slowdown_lo, slowdown_hi, lost_lo, lost_hi
        Bootstrap interval (the fit's level) when the laws were fitted, else None.
    """

    n_gpus: int
    mean_slow_units: float
    share: float
    slowdown: float
    share_tolerated: float
    evictions_per_h: float
    slow_h_per_h: float
    eviction_h_per_h: float
    lost_h_per_h: float
    by_cause: tuple[SlowCause, ...]
    share_lo: float | None = None
    share_hi: float | None = None
    slowdown_lo: float | None = None
    slowdown_hi: float | None = None
    lost_lo: float | None = None
    lost_hi: float | None = None


@dataclass(frozen=True, slots=True)
class _Pace:
    """The rank-pace model over an array of job sizes."""

    m: NDArray[np.float64]  # mean episodes on at a random instant
    share: NDArray[np.float64]
    share_above: NDArray[np.float64]  # the part with an episode above the tolerance on
    evictions_per_h: NDArray[np.float64]
    stalled: NDArray[np.float64]  # share of wall time in eviction stalls

    @property
    def lost(self) -> NDArray[np.float64]:
        """Hours lost per wall hour: the stalls, and the slow pace the rest of the time."""
        out: NDArray[np.float64] = self.stalled + (1.0 - self.stalled) * self.share
        return out


def _as_laws(laws: SlowLaws | Sequence[SlowLaws]) -> tuple[SlowLaws, ...]:
    """One kind of unit or several (GPU and node episodes together), as a tuple."""
    out = (laws,) if isinstance(laws, SlowLaws) else tuple(laws)
    if not out or not all(isinstance(law, SlowLaws) for law in out):
        msg = "laws must be a SlowLaws or a non-empty sequence of them (one per kind of unit)."
        raise TypeError(msg)
    return out


def _nodes(
    laws: Sequence[SlowLaws], log_theta: float
) -> tuple[float, NDArray[np.float64], NDArray[np.float64]]:
    """Gauss-Legendre nodes and weights in ``u = ln(S - 1)`` over the laws' ranges.

    Panels break at every law's range ends and at ``ln theta``, where the integrand has a kink
    or, for a point mass, a step; returns the lowest edge too (below it every ``F_S`` is 0).
    """
    edges = {e for law in laws for e in law.excess.log_range()}
    if math.isfinite(log_theta):
        edges.add(log_theta)
    ordered = sorted(edges)
    u_parts, w_parts = [np.empty(0)], [np.empty(0)]
    for a, b in pairwise(ordered):
        n = max(_MIN_PANELS, math.ceil((b - a) / _PANEL))
        cuts = np.linspace(a, b, n + 1)
        half = np.diff(cuts)[:, None] / 2.0
        u_parts.append(((cuts[:-1, None] + half) + half * _GAUSS_X).ravel())
        w_parts.append((half * _GAUSS_W).ravel())
    return ordered[0], np.concatenate(u_parts), np.concatenate(w_parts)


def _occupancy(
    laws: Sequence[SlowLaws],
    units: Sequence[NDArray[np.float64]],
    excess: NDArray[np.float64],
    mitigation: Mitigation,
) -> NDArray[np.float64]:
    """``N lambda E[D'; S - 1 > excess]``: mean episodes on with a slowdown above ``1 + excess``.

    Shape ``units + excess``: job sizes along the first axis, the points along the last.
    """
    total = np.zeros((units[0].size, excess.size))
    for law, n in zip(laws, units, strict=True):
        rate_s = n[:, None] * law.rate_per_unit_h / SECONDS_PER_HOUR
        sf = law.excess.sf(excess)[None, :]
        sf_theta = float(law.excess.sf(mitigation.tolerance))
        cut = mitigation.cut_s if mitigation.acts else math.inf
        full_s, cut_s = law.duration_s.mean(), law.duration_s.limited_mean(cut)
        total += rate_s * (
            full_s * np.maximum(sf - sf_theta, 0.0) + cut_s * np.minimum(sf, sf_theta)
        )
    return total


def _pace(
    laws: Sequence[SlowLaws], n_gpus: ArrayLike, gpus_per_node: int, mitigation: Mitigation
) -> _Pace:
    """Evaluate the quadrature for every job size (see the module's equations)."""
    sizes = np.atleast_1d(np.asarray(n_gpus, dtype=np.float64))
    units = [law.units(sizes, gpus_per_node) for law in laws]
    theta = mitigation.tolerance
    log_theta = math.log(theta) if theta > 0 else -math.inf
    lo, u, w = _nodes(laws, log_theta)
    weight = w * special.expit(u) * special.expit(-u)  # x^-2 dx with x = 1 + e^u
    p_above = -np.expm1(-_occupancy(laws, units, np.exp(u), mitigation))
    m = _occupancy(laws, units, np.zeros(1), mitigation)[:, 0]
    below = -np.expm1(-m) * special.expit(lo)  # F_S(x) = 0 below the lowest edge
    share = below + p_above @ weight
    if math.isfinite(log_theta):
        m_theta = _occupancy(laws, units, np.array([theta]), mitigation)[:, 0]
        upper = u > log_theta
        share_above = (1.0 - 1.0 / (1.0 + theta)) * -np.expm1(-m_theta)
        share_above = share_above + p_above[:, upper] @ weight[upper]
    else:
        share_above = share
    evictions = np.zeros_like(share)
    if mitigation.acts:
        for law, n in zip(laws, units, strict=True):
            acted = float(law.excess.sf(theta)) * float(law.duration_s.sf(mitigation.detect_s))
            evictions = evictions + n * law.rate_per_unit_h * acted
    stalled = np.minimum(evictions * mitigation.eviction_cost_s / SECONDS_PER_HOUR, 1.0)
    share = np.clip(share, 0.0, 1.0)
    return _Pace(m, share, np.clip(share_above, 0.0, share), evictions, stalled)


def slow_share(
    laws: SlowLaws | Sequence[SlowLaws],
    n_gpus: ArrayLike,
    *,
    gpus_per_node: int = 8,
    mitigation: Mitigation | None = None,
) -> NDArray[np.float64]:
    r"""``share(N)``: the share of a job's running time lost to its slowest unit's pace.

    Parameters
    ----------
    laws
        The episode laws of one kind of unit, or of several (GPU and node episodes together:
        their occupancies add).
    n_gpus
        Job sizes, GPUs (a number or an array).
    gpus_per_node
        GPUs per node, for node-level laws.
    mitigation
        Detection, tolerance and eviction; None never acts.

    Returns
    -------
    numpy.ndarray
        ``E[1 - 1/M]`` for each size, the shape of ``n_gpus``. The integral
        :math:`\int_1^\infty x^{-2} (1 - e^{-m(x)}) dx` is taken in :math:`u = \ln(x - 1)`
        by 16-point Gauss-Legendre panels no wider than 0.25, broken where a law's survival
        function leaves 1 or reaches 0 and at :math:`\ln\theta`; below the lowest break it is
        exact.
    """
    pace = _pace(_as_laws(laws), n_gpus, gpus_per_node, mitigation or Mitigation())
    out: NDArray[np.float64] = pace.share.reshape(np.shape(n_gpus))
    return out


def _projections(n_gpus: Sequence[int], point: _Pace) -> list[SlowProjection]:
    """One :class:`SlowProjection` per job size from the point laws' arrays."""
    out = []
    for i, n in enumerate(n_gpus):
        share, stalled = float(point.share[i]), float(point.stalled[i])
        running = 1.0 - stalled
        tolerated = share - float(point.share_above[i])
        out.append(
            SlowProjection(
                n_gpus=int(n),
                mean_slow_units=float(point.m[i]),
                share=share,
                slowdown=math.inf if share >= 1.0 else 1.0 / (1.0 - share),
                share_tolerated=tolerated,
                evictions_per_h=float(point.evictions_per_h[i]),
                slow_h_per_h=running * share,
                eviction_h_per_h=stalled,
                lost_h_per_h=float(point.lost[i]),
                by_cause=(
                    SlowCause("slow_tolerated", running * tolerated),
                    SlowCause("slow_above_tolerance", running * float(point.share_above[i])),
                    SlowCause("eviction", stalled),
                ),
            )
        )
    return out


def slowdown_curve(
    laws: SlowLaws | Sequence[SlowLaws] | SlowFit,
    n_gpus: Sequence[int],
    *,
    gpus_per_node: int = 8,
    mitigation: Mitigation | None = None,
) -> tuple[SlowProjection, ...]:
    """Project fail-slow for each job size; with fitted laws, with bootstrap intervals.

    Parameters
    ----------
    laws
        Given laws (one kind of unit or several), or a :class:`~models.failslow_fit.SlowFit`:
        its point laws, and each of its bootstrap replicates for the interval (the
        ``alpha / 2`` and ``1 - alpha / 2`` quantiles of share, slowdown and lost time).
    n_gpus
        Job sizes, GPUs.
    gpus_per_node
        GPUs per node, for node-level laws.
    mitigation
        Detection, tolerance and eviction; None never acts (tolerance 0.05 for the split).

    Returns
    -------
    tuple of SlowProjection
        One per size, in order.
    """
    mitigation = mitigation or Mitigation()
    sizes = [int(n) for n in n_gpus]
    if not sizes or min(sizes) < 1:
        msg = f"n_gpus must be job sizes of 1 GPU or more, got {list(n_gpus)}."
        raise ValueError(msg)
    fit = laws if isinstance(laws, SlowFit) else None
    point_laws = _as_laws(laws.laws if isinstance(laws, SlowFit) else laws)
    out = _projections(sizes, _pace(point_laws, sizes, gpus_per_node, mitigation))
    if fit is None or not fit.replicates:
        return tuple(out)
    reps = [_pace(_as_laws(r), sizes, gpus_per_node, mitigation) for r in fit.replicates]
    shares = np.stack([r.share for r in reps])
    lost = np.stack([r.lost for r in reps])
    q = [fit.alpha / 2.0, 1.0 - fit.alpha / 2.0]
    s_lo, s_hi = np.quantile(shares, q, axis=0)
    l_lo, l_hi = np.quantile(lost, q, axis=0)
    with np.errstate(divide="ignore"):
        d_lo, d_hi = 1.0 / (1.0 - s_lo), 1.0 / (1.0 - s_hi)
    return tuple(
        _with_interval(p, s_lo[i], s_hi[i], d_lo[i], d_hi[i], l_lo[i], l_hi[i])
        for i, p in enumerate(out)
    )


def _with_interval(p: SlowProjection, *bounds: float) -> SlowProjection:
    """``p`` with its share, slowdown and lost-time bounds."""
    s_lo, s_hi, d_lo, d_hi, l_lo, l_hi = (float(b) for b in bounds)
    return replace(
        p,
        share_lo=s_lo,
        share_hi=s_hi,
        slowdown_lo=d_lo,
        slowdown_hi=d_hi,
        lost_lo=l_lo,
        lost_hi=l_hi,
    )


def project_slow(
    laws: SlowLaws | Sequence[SlowLaws] | SlowFit,
    n_gpus: int,
    *,
    gpus_per_node: int = 8,
    mitigation: Mitigation | None = None,
) -> SlowProjection:
    """Project fail-slow for one job size (:func:`slowdown_curve` at one size)."""
    return slowdown_curve(laws, [n_gpus], gpus_per_node=gpus_per_node, mitigation=mitigation)[0]


def eviction_cost_s(scenario: Scenario, projection: Projection, *, how: str = "restart") -> float:
    """Return the job's wall time lost per eviction of a slow unit, from fail-stop knobs.

    Parameters
    ----------
    scenario
        The fail-stop scenario (its restart, checkpoint and drain knobs).
    projection
        Its projection (the checkpoint interval in use).
    how
        ``"restart"``: the job restarts without the unit: reschedule, reload and warm-up, plus
        the rollback to the last checkpoint, half a checkpoint segment
        (``(interval + checkpoint_s) / 2``) on average. ``"hot_spare"``: a spare is swapped in
        (no reschedule): reload, warm-up and the rollback. ``"planned"``: the job checkpoints
        first and moves off the unit, as a drain: ``checkpoint_s + drain_migration_s``, no
        rollback. Detection is not counted: the job runs (slowly) until the eviction.

    Returns
    -------
    float
        Seconds, the :attr:`Mitigation.eviction_cost_s` to use.
    """
    if how not in _EVICTION_KINDS:
        msg = f"how must be one of {_EVICTION_KINDS}, got {how!r}."
        raise ValueError(msg)
    if how == "planned":
        return scenario.checkpoint_s + scenario.drain_migration_s
    rollback = (projection["checkpoint_interval_min"] * 60.0 + scenario.checkpoint_s) / 2.0
    restart = scenario.reload_s + scenario.warmup_s + rollback
    return restart + (scenario.reschedule_s if how == "restart" else 0.0)


@dataclass(frozen=True, slots=True)
class LostGpuHours:
    """GPU-hours lost to one cause; ``kind`` is ``fail_stop`` or ``fail_slow``."""

    cause: str
    kind: str
    gpu_h: float


@dataclass(frozen=True, slots=True)
class CombinedGoodput:
    """Fail-stop and fail-slow in one goodput (:func:`combine_goodput`).

    Attributes
    ----------
    goodput
        Useful GPU-hours over the job's GPU-hours, both causes counted.
    goodput_fail_stop
        The fail-stop projection's goodput alone.
    gpu_h, useful_gpu_h
        The job's GPU-hours, and those that advance training.
    lost_gpu_h_fail_stop, lost_gpu_h_fail_slow, lost_gpu_h_total
        Lost GPU-hours by kind, and their sum (``gpu_h - useful_gpu_h``).
    by_cause
        Every cause: the fail-stop ones (checkpoint, rework, restart, spares_wait, drain) and
        the fail-slow ones of :attr:`SlowProjection.by_cause`.
    goodput_lo, goodput_hi
        With a fitted fail-slow projection: its interval carried at the fail-stop point.
    """

    goodput: float
    goodput_fail_stop: float
    gpu_h: float
    useful_gpu_h: float
    lost_gpu_h_fail_stop: float
    lost_gpu_h_fail_slow: float
    lost_gpu_h_total: float
    by_cause: tuple[LostGpuHours, ...]
    goodput_lo: float | None = None
    goodput_hi: float | None = None


def combine_goodput(projection: Projection, slow: SlowProjection) -> CombinedGoodput:
    """Join a fail-stop projection and a fail-slow one for the same job into one goodput.

    The fail-stop model's productive GPU-hours (``useful_gpu_h``) are the time the job computes;
    of that, the eviction stalls take ``eviction_h_per_h`` and the slow pace ``share`` of the
    rest, so useful time is scaled by ``(1 - e)(1 - share)`` and the difference is lost to
    fail-slow, split by cause. The fail-stop losses are kept as they are (slow episodes during a
    restart or a wait cost nothing more); evictions are counted apart from the fail-stop
    restarts and take no spare from the fail-stop model's pool.

    Parameters
    ----------
    projection
        :func:`models.goodput.project`'s result for the job.
    slow
        :func:`project_slow`'s result for the same job size (the projection does not carry the
        size: the caller matches them).

    Returns
    -------
    CombinedGoodput
        Goodput and lost GPU-hours by kind and cause.
    """
    productive = float(projection["useful_gpu_h"])
    gpu_h = productive + float(projection["lost_gpu_h_total"])
    fail_stop = tuple(
        LostGpuHours(cause, "fail_stop", float(value))
        for cause, value in (
            ("checkpoint", projection["lost_gpu_h_checkpoint"]),
            ("rework", projection["lost_gpu_h_rework"]),
            ("restart", projection["lost_gpu_h_restart"]),
            ("spares_wait", projection["lost_gpu_h_spares_wait"]),
            ("drain", projection["lost_gpu_h_drain"]),
        )
    )
    fail_slow = tuple(
        LostGpuHours(c.cause, "fail_slow", productive * c.h_per_h) for c in slow.by_cause
    )
    useful = productive * (1.0 - slow.lost_h_per_h)
    bounds: list[float | None] = [None, None]
    if slow.lost_lo is not None and slow.lost_hi is not None and gpu_h > 0:
        bounds = [
            productive * (1.0 - slow.lost_hi) / gpu_h,
            productive * (1.0 - slow.lost_lo) / gpu_h,
        ]
    return CombinedGoodput(
        goodput=useful / gpu_h if gpu_h > 0 else math.nan,
        goodput_fail_stop=float(projection["goodput"]),
        gpu_h=gpu_h,
        useful_gpu_h=useful,
        lost_gpu_h_fail_stop=gpu_h - productive,
        lost_gpu_h_fail_slow=productive - useful,
        lost_gpu_h_total=gpu_h - useful,
        by_cause=fail_stop + fail_slow,
        goodput_lo=bounds[0],
        goodput_hi=bounds[1],
    )
