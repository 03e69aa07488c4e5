r"""Analytical goodput projection for a large training job on a failing fleet.

A :class:`Scenario` describes the job (GPUs, failure domains, per-class failure rates,
checkpoint and restart costs, spares, recovery strategy, fleet age, proactive drains on a failure
predictor's warnings). :func:`project` turns it into the answer an architect asks for: mean time
to interrupt (MTTI), the checkpoint interval, the effective training time ratio, goodput, and the
GPU-hours and energy lost by cause, with an interval when the rates carry one. :func:`sweep`
evaluates a full factorial grid of what-ifs in one vectorised pass
(:func:`models.ranking.knob_gains` ranks the knobs against a baseline at a target scale);
:func:`drain_sweep` projects the drains at each threshold of a predictor's operating curve.

Equations
---------
Young (1974), first-order optimum compute time between checkpoints of cost :math:`\delta` under
Poisson interrupts with mean :math:`M`:

.. math:: \tau_Y = \sqrt{2 \delta M}

Daly (2006), higher-order optimum (perturbation solution of the complete cost function):

.. math::
    \tau_D = \sqrt{2\delta M}\left[1 + \tfrac13\sqrt{\tfrac{\delta}{2M}}
              + \tfrac19 \tfrac{\delta}{2M}\right] - \delta  \quad (\delta < 2M),
    \qquad \tau_D = M \quad (\delta \ge 2M)

and expected wall time to finish :math:`T_s` of failure-free work with restart time :math:`R`:

.. math:: T_w = M e^{R/M} \left(e^{(\tau+\delta)/M} - 1\right) \frac{T_s}{\tau}

Kokolis et al. (2025), expected effective training time ratio of a job on :math:`N` nodes failing
at :math:`r_f` per node-day, with restart overhead :math:`u_0`, checkpoint interval
:math:`\Delta t_{cp}` and checkpoint write time :math:`w_{cp}`:

.. math::
    E[\mathrm{ETTR}] \approx
    \frac{1 - N r_f \left(u_0 + \Delta t_{cp}/2\right)}{1 + w_{cp} / \Delta t_{cp}}

References
----------
.. [1] J. W. Young, "A first order approximation to the optimum checkpoint interval",
   Communications of the ACM 17(9), 530-531, 1974.
.. [2] J. T. Daly, "A higher order estimate of the optimum checkpoint interval for restart
   dumps", Future Generation Computer Systems 22(3), 303-312, 2006.
.. [3] A. Kokolis et al., "Revisiting Reliability in Large-Scale Machine Learning Research
   Clusters", HPCA 2025, arXiv:2410.21680.
.. [4] A. Grattafiori et al., "The Llama 3 Herd of Models", arXiv:2407.21783, 2024, section 3.3
   (419 unexpected interruptions in 54 days on 16,384 GPUs).
"""

from __future__ import annotations

import dataclasses
import itertools
import math
import warnings
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

import numpy as np
import polars as pl
from scipy import special

from models.exceptions import ApproximationWarning, FewFailuresWarning

if TYPE_CHECKING:
    from collections.abc import Iterable, Sequence

    from numpy.typing import ArrayLike, NDArray

__all__ = [
    "RSC1_NODE_FAILURES_PER_1000_NODE_DAYS",
    "ClassRate",
    "Scenario",
    "age_mix",
    "daly_expected_wall_time_s",
    "daly_interval_s",
    "drain_sweep",
    "ettr_meta",
    "knob_label",
    "project",
    "rates_from_fits",
    "sweep",
    "young_interval_s",
]

#: RSC-1 failures per 1000 node-days (Kokolis et al. 2025); used when no rate is given.
RSC1_NODE_FAILURES_PER_1000_NODE_DAYS = 6.50

SECONDS_PER_HOUR = 3600.0
SECONDS_PER_DAY = 86_400.0
_Z975 = 1.959963984540054  # standard normal 97.5 % quantile
MTBF_CAP_H = 1e12
"""An MTBF sampled from a family with no finite mean (a point mass at infinity) is this many
hours: the class then fails about never within any job."""
_STRATEGIES = ("restart", "hot_spare", "elastic")
_LEVELS = ("gpu", "node")
_FLEET_AGES = ("steady_state", "new")
CATEGORICAL_KNOBS = ("strategy", "fleet_age", "rates", "weibull_shape", "node_groups")
"""Scenario fields :func:`sweep` loops over (the others it evaluates as arrays in one pass)."""
_CATEGORICAL = CATEGORICAL_KNOBS  # the old name, read by tests/hardening/test_scale_out.py
_RENEWAL_GRID = 400  # time steps for the renewal-function quadrature
_PIECES = 32  # geometric time pieces over the job where the fault rate or the spare pool varies
_EXACT_SHARE = 0.01  # an analytical goodput is exact when its error bound is within 1 % of it
_MIN_REPAIR_SIGMA = 0.02  # below: fixed repairs (within 1e-4 goodput; the quadrature's error)
_WAIT_NODES = 16  # hardware-rate nodes of the log-normal wait for MTBF samples
_WAIT_GRID = 256  # points of the spare-wait quadrature when repair times are random
_MIN_INTERVAL_S = 1e-3  # floor on the checkpoint interval: the limit of checkpointing every step


@dataclass(frozen=True)
class ClassRate:
    """Failure rate of one component class, as the MTBF of one unit.

    Parameters
    ----------
    component_class
        Name of the class (``gpu``, ``nic``, ``host_memory``...), for reporting only.
    level
        ``"gpu"`` when the MTBF is per GPU, ``"node"`` when it is per node.
    mtbf_h
        Mean time between failures of one unit, hours (the Weibull mean when ``weibull_shape`` is
        not 1).
    mtbf_lo_h, mtbf_hi_h
        Bounds of the 95 % interval of ``mtbf_h``, hours. :func:`project` samples the MTBF from the
        log-normal whose 2.5 and 97.5 % quantiles are these bounds; a class with either bound
        missing is held at ``mtbf_h``.
    weibull_shape
        Weibull shape of one unit's lifetime; 1 is exponential, below 1 is infant mortality.
    mtbf_mixture
        The sampling distribution of the MTBF as a mixture of split log-normals:
        ``(weight, log_centre, sd_below, sd_above)`` (a model-averaged fit's families with their
        Akaike weights, see :func:`rates_from_fits` and :func:`models.mixture_components`);
        ``log_centre = inf`` is a family with no finite mean, sampled as :data:`MTBF_CAP_H`.
        When given, :func:`project` samples from it instead of the log-normal matched to the
        bounds.
    extrapolated
        The MTBF is mostly an extrapolation beyond the ages observed (from the fit); carried into
        the projection's output.
    """

    component_class: str
    level: str
    mtbf_h: float
    mtbf_lo_h: float | None = None
    mtbf_hi_h: float | None = None
    weibull_shape: float = 1.0
    mtbf_mixture: tuple[tuple[float, float, float, float], ...] = ()
    extrapolated: bool = False

    def __post_init__(self) -> None:
        if self.level not in _LEVELS:
            msg = (
                f"level must be 'gpu' or 'node', got {self.level!r}: "
                "say whether mtbf_h is per GPU or per node."
            )
            raise ValueError(msg)
        if not (math.isfinite(self.mtbf_h) and self.mtbf_h > 0):
            msg = (
                f"mtbf_h of {self.component_class!r} must be a positive number of hours, "
                f"got {self.mtbf_h}."
            )
            raise ValueError(msg)
        if not (math.isfinite(self.weibull_shape) and self.weibull_shape > 0):
            msg = (
                f"weibull_shape of {self.component_class!r} must be positive, "
                f"got {self.weibull_shape}; use 1.0 for exponential."
            )
            raise ValueError(msg)
        lo, hi = self.mtbf_lo_h, self.mtbf_hi_h
        if lo is not None and hi is not None and not 0 < lo <= hi:
            msg = f"{self.component_class!r}: need 0 < mtbf_lo_h <= mtbf_hi_h, got {lo} and {hi}."
            raise ValueError(msg)

    @property
    def has_interval(self) -> bool:
        """Whether the MTBF can be sampled: a mixture, or both bounds finite and positive."""
        if self.mtbf_mixture:
            return True
        lo, hi = self.mtbf_lo_h, self.mtbf_hi_h
        return lo is not None and hi is not None and math.isfinite(hi) and 0 < lo < hi

    def sample_mtbf(self, rng: np.random.Generator, n: int) -> NDArray[np.float64]:
        """``n`` draws of the MTBF from its mixture, its bounds' log-normal, or the point."""
        if self.mtbf_mixture:
            parts = np.array(self.mtbf_mixture, dtype=np.float64)
            pick = rng.choice(parts.shape[0], size=n, p=parts[:, 0] / parts[:, 0].sum())
            centre, below, above = parts[pick, 1], parts[pick, 2], parts[pick, 3]
            z = rng.standard_normal(n)
            finite = np.isfinite(centre)
            draws = np.full(n, MTBF_CAP_H)
            spread = np.where(z < 0, below, above)
            with np.errstate(over="ignore"):
                draws[finite] = np.exp(centre[finite] + spread[finite] * z[finite])
            return np.minimum(draws, MTBF_CAP_H)
        if self.has_interval:
            lo, hi = math.log(self.mtbf_lo_h), math.log(self.mtbf_hi_h)  # type: ignore[arg-type]
            return np.exp(rng.normal((lo + hi) / 2.0, (hi - lo) / (2.0 * _Z975), n))
        return np.full(n, self.mtbf_h)


@dataclass(frozen=True)
class Scenario:
    """A training job on a fleet: every knob of the projection, each with a default and a unit.

    Parameters
    ----------
    n_gpus
        GPUs the job trains on.
    gpus_per_node
        GPUs in one node (the unit of node-level rates).
    failure_domain_gpus
        GPUs that one fault takes out together: a node (8), or an NVLink rack (72). The job holds
        ``ceil(n_gpus / failure_domain_gpus)`` whole domains and a fault anywhere in one counts.
    rates
        Per-class failure rates (:class:`ClassRate`); see :func:`rates_from_fits`.
    node_failures_per_1000_node_days
        Shortcut for one exponential node-level class at this rate. Give ``rates`` or this, not
        both; with neither, Meta's RSC-1 rate of 6.50 is used and the projection says so.
    checkpoint_s
        Blocking time to write one checkpoint, seconds.
    checkpoint_interval_s
        Compute time between checkpoints, seconds; ``None`` uses Daly's optimum for the MTTI.
    detect_s, reschedule_s, reload_s, warmup_s
        Restart phases after a fault, seconds: detecting it, getting replacement hardware from
        the scheduler, reloading the checkpoint, warming up to full speed.
    hot_spares
        Spare failure domains kept hot for the job (strategies ``hot_spare`` and ``elastic``).
    repair_h
        Hours to repair a failed domain and return it to the spare pool.
    strategy
        ``"restart"``: the whole job restarts on hardware from the scheduler (detect, reschedule,
        reload, warm up). ``"hot_spare"``: a spare domain is swapped in (no reschedule); with no
        spare left the job waits for a repair. ``"elastic"``: the data-parallel replica holding
        the fault drops out, the rest stall ``detect_s`` and carry on at reduced throughput; the
        replica rejoins when a spare (or its own repair) is in and it has reloaded and warmed up.
    replica_gpus
        GPUs in one data-parallel replica (``elastic`` only); one of ``replica_gpus`` and
        ``failure_domain_gpus`` must divide the other.
    job_days
        Wall-clock days the job holds its GPUs.
    gpu_power_w
        Power drawn per GPU while allocated, watts (raise it to include the host and network share).
    pue
        Power usage effectiveness of the site (facility energy / IT energy), dimensionless.
    fleet_age
        Ages of the units when the job starts: ``"steady_state"`` (stationary renewal: the fleet
        fails at n/MTBF whatever the shape), ``"new"`` (every unit at age 0), a number of hours
        (every unit that old), or an age mix: ``(age_h, share)`` pairs (or ``{age_h, share}``
        mappings), shares above 0 adding up to 1, stored normalised and sorted by age; that share
        of the job's units (every class, in proportion, whatever their node group) is that old
        at job start, renewed at each failure. Only matters when a Weibull shape is not 1.
    drain_recall
        Share of failures that telemetry warns of in time to drain the failure domain first
        (the recall of the failure predictor at its threshold), 0 to 1; 0 turns drains off.
        A warned failure becomes a planned drain: the job writes a checkpoint
        (``checkpoint_s``) and moves off the domain (``drain_migration_s``), losing no work.
    drain_precision
        Share of the predictor's alarms that are followed by a failure, above 0 and up to 1.
        Every true alarm comes with :math:`(1-p)/p` false ones, each draining a healthy domain
        at the same cost.
    drain_migration_s
        Time to move the job off a drained domain, seconds: a planned restart on a spare, with
        the replacement obtained during the warning's lead time (no detection, no reschedule).
        Every drain takes a hot spare like a fault, but the job keeps training on the warned
        domain until the spare is in. For ``elastic``, the time a drained replica group is out
        (nothing is rolled back, so no checkpoint is written and the others carry on).
    weibull_shape
        Lifetime shape override: ``None`` keeps each class's own ``weibull_shape``; a number sets
        every class's shape (the node-rate shortcut's too); a mapping ``{class: shape}`` (stored
        as sorted pairs) sets the named classes. Each class keeps its MTBF (the Weibull mean).
    hang_share
        Share of unwarned interruptions (hardware faults and job-level ones) that hang the job
        instead of crashing it, 0 to 1: a hang is noticed by the collective watchdog after
        ``detect_hang_s``; a crash after ``detect_s``.
    detect_hang_s
        Time for the watchdog to declare a hang, seconds (PyTorch's NCCL default: 600).
    repair_sigma
        Spread of repair times: 0 means every repair takes ``repair_h``; above 0 repair times
        are log-normal with median ``repair_h`` and this standard deviation of their logarithm.
        A repaired domain returns to the spare pool, and the first domain back goes to the
        longest-waiting fault (the pool starts full with ``hot_spares`` domains).
    job_interruptions_per_h
        Interruptions of the whole job per hour that do not grow with its size (software
        crashes, storage stalls): Poisson, never warned of, each loses the checkpoint segment in
        progress and costs detection, reload and warm-up (a restart in place: no hardware is
        replaced, no rescheduling, no spare). For ``elastic`` too, a whole-job rollback.
    node_groups
        Groups of nodes with their own failure rate: pairs ``(share, rate_multiplier)``; a share
        of the job's units (every class, in proportion) fails ``rate_multiplier`` times as often
        (lifetimes scaled by ``1 / rate_multiplier``, shape kept), e.g. ``((0.1, 3.0),)`` for
        one firmware batch on a tenth of the nodes. Shares add up to at most 1; the rest of the
        units fail at the given rates. Simulations give a group ``round(share * units)`` units.
    """

    n_gpus: int = 16_384
    gpus_per_node: int = 8
    failure_domain_gpus: int = 8
    rates: tuple[ClassRate, ...] = ()
    node_failures_per_1000_node_days: float | None = None
    checkpoint_s: float = 60.0
    checkpoint_interval_s: float | None = None
    detect_s: float = 120.0
    reschedule_s: float = 300.0
    reload_s: float = 180.0
    warmup_s: float = 120.0
    hot_spares: int = 0
    repair_h: float = 24.0
    strategy: str = "restart"
    replica_gpus: int = 512
    job_days: float = 30.0
    gpu_power_w: float = 700.0
    pue: float = 1.2
    fleet_age: str | float | tuple[tuple[float, float], ...] = "steady_state"
    drain_recall: float = 0.0
    drain_precision: float = 1.0
    drain_migration_s: float = 300.0
    weibull_shape: float | tuple[tuple[str, float], ...] | None = None
    hang_share: float = 0.0
    detect_hang_s: float = 600.0
    repair_sigma: float = 0.0
    job_interruptions_per_h: float = 0.0
    node_groups: tuple[tuple[float, float], ...] = ()

    def __post_init__(self) -> None:
        self._normalise_groups_and_shapes()
        _check_non_negative(self, "detect_hang_s", "repair_sigma", "job_interruptions_per_h")
        if not (math.isfinite(self.hang_share) and 0 <= self.hang_share <= 1):
            msg = f"hang_share is a share of interruptions, from 0 to 1, got {self.hang_share}."
            raise ValueError(msg)
        _check_positive(self, "n_gpus", "gpus_per_node", "failure_domain_gpus", "replica_gpus")
        _check_positive(self, "job_days", "repair_h", "gpu_power_w")
        _check_non_negative(self, "checkpoint_s", "detect_s", "reschedule_s", "reload_s")
        _check_non_negative(self, "warmup_s", "hot_spares", "drain_migration_s")
        if not (math.isfinite(self.drain_recall) and 0 <= self.drain_recall <= 1):
            msg = (
                "drain_recall is the share of failures warned in time to drain, from 0 to 1 "
                f"(0 turns drains off), got {self.drain_recall}."
            )
            raise ValueError(msg)
        if not (math.isfinite(self.drain_precision) and 0 < self.drain_precision <= 1):
            msg = (
                "drain_precision is the share of alarms followed by a failure, above 0 and up to "
                f"1, got {self.drain_precision}; at 0 the false-alarm rate is undefined."
            )
            raise ValueError(msg)
        if self.pue < 1:
            msg = f"pue is facility over IT energy and cannot be below 1, got {self.pue}."
            raise ValueError(msg)
        if self.checkpoint_interval_s is not None and not self.checkpoint_interval_s > 0:
            msg = "checkpoint_interval_s must be positive, or None for Daly's optimum."
            raise ValueError(msg)
        if (
            self.failure_domain_gpus % self.gpus_per_node
            and self.gpus_per_node % self.failure_domain_gpus
        ):
            msg = (
                f"failure_domain_gpus={self.failure_domain_gpus} and "
                f"gpus_per_node={self.gpus_per_node}: "
                "one must divide the other (a domain is a whole number of nodes, or part of one)."
            )
            raise ValueError(msg)
        if self.strategy not in _STRATEGIES:
            msg = f"strategy must be one of {_STRATEGIES}, got {self.strategy!r}."
            raise ValueError(msg)
        if self.strategy == "elastic" and (
            self.replica_gpus % self.failure_domain_gpus
            and self.failure_domain_gpus % self.replica_gpus
        ):
            msg = (
                f"replica_gpus={self.replica_gpus} and "
                f"failure_domain_gpus={self.failure_domain_gpus}: "
                "for the elastic strategy one must divide the other."
            )
            raise ValueError(msg)
        if isinstance(self.fleet_age, str):
            if self.fleet_age not in _FLEET_AGES:
                msg = (
                    "fleet_age must be 'steady_state', 'new', an age in hours or an age mix "
                    f"((age_h, share) pairs), got {self.fleet_age!r}."
                )
                raise ValueError(msg)
        elif not isinstance(self.fleet_age, tuple) and not (
            math.isfinite(self.fleet_age) and self.fleet_age >= 0
        ):
            msg = f"fleet_age in hours must be a non-negative number, got {self.fleet_age}."
            raise ValueError(msg)
        if not isinstance(self.rates, tuple) or not all(
            isinstance(r, ClassRate) for r in self.rates
        ):
            msg = "rates must be a tuple of ClassRate; build it with rates_from_fits(fit_results)."
            raise TypeError(msg)
        shortcut = self.node_failures_per_1000_node_days
        if self.rates and shortcut is not None:
            msg = (
                "give rates or node_failures_per_1000_node_days, not both "
                "(set the other to None / ())."
            )
            raise ValueError(msg)
        if shortcut is not None and not (math.isfinite(shortcut) and shortcut > 0):
            msg = f"node_failures_per_1000_node_days must be positive, got {shortcut}."
            raise ValueError(msg)

    def _normalise_groups_and_shapes(self) -> None:
        """Store mappings and lists as sorted tuples (the scenario stays hashable); check them."""
        shape = self.weibull_shape
        if isinstance(shape, Mapping):
            shape = tuple(sorted((str(k), float(v)) for k, v in shape.items()))
        elif isinstance(shape, (list, tuple)):
            shape = tuple(sorted((str(k), float(v)) for k, v in shape))
        elif shape is not None:
            shape = float(shape)
        object.__setattr__(self, "weibull_shape", shape)
        values = [v for _, v in shape] if isinstance(shape, tuple) else [shape]
        for v in values:
            if v is not None and not (math.isfinite(v) and v > 0):
                msg = f"weibull_shape must be positive (1 is exponential), got {v}."
                raise ValueError(msg)
        groups = []
        for entry in self.node_groups:
            group, (share, multiplier) = _number_pair(
                entry, ("share", "rate_multiplier"), "node_groups",
                "{share: 0.1, rate_multiplier: 3} for a bad batch on a tenth of the nodes",
            )  # fmt: skip
            if not (0 < share <= 1 and math.isfinite(multiplier) and multiplier > 0):
                msg = f"node group {group!r}: need 0 < share <= 1 and a positive rate_multiplier."
                raise ValueError(msg)
            groups.append((share, multiplier))
        if sum(share for share, _ in groups) > 1 + 1e-9:
            msg = f"node_groups shares add up to more than 1: {groups}."
            raise ValueError(msg)
        object.__setattr__(self, "node_groups", tuple(groups))
        if isinstance(self.fleet_age, (list, tuple)):
            object.__setattr__(self, "fleet_age", age_mix(self.fleet_age))

    def unit_groups(self) -> tuple[tuple[float, float], ...]:
        """``(share, rate_multiplier)`` of every group of units, the ordinary rest included."""
        rest = 1.0 - sum(share for share, _ in self.node_groups)
        groups = [*self.node_groups, (rest, 1.0)] if rest > 1e-12 else list(self.node_groups)
        return tuple(groups)

    @property
    def rate_source(self) -> str:
        """Where the failure rates come from, in words."""
        if self.rates:
            return "rates: " + ", ".join(r.component_class for r in self.rates)
        if self.node_failures_per_1000_node_days is not None:
            return f"{self.node_failures_per_1000_node_days:g} node failures per 1000 node-days"
        return (
            f"default: Meta RSC-1, {RSC1_NODE_FAILURES_PER_1000_NODE_DAYS:g} node failures per "
            "1000 node-days (Kokolis et al. 2025)"
        )

    def class_rates(self) -> tuple[ClassRate, ...]:
        """Return the per-class rates the projection uses: the node-rate shortcut expanded and
        ``weibull_shape`` applied."""
        if self.rates:
            rates = self.rates
        else:
            per_1000 = self.node_failures_per_1000_node_days
            if per_1000 is None:
                per_1000 = RSC1_NODE_FAILURES_PER_1000_NODE_DAYS
            rates = (ClassRate("node", "node", mtbf_h=1000.0 * 24.0 / per_1000),)
        shape = self.weibull_shape
        if shape is None:
            return rates
        if isinstance(shape, float):
            return tuple(replace(r, weibull_shape=shape) for r in rates)
        by_class = dict(shape)
        unknown = sorted(set(by_class) - {r.component_class for r in rates})
        if unknown:
            msg = (
                f"weibull_shape names classes {unknown} that have no rate; the classes are "
                f"{[r.component_class for r in rates]}."
            )
            raise ValueError(msg)
        return tuple(
            replace(r, weibull_shape=by_class.get(r.component_class, r.weibull_shape))
            for r in rates
        )


def _number_pair(
    entry: Any, keys: tuple[str, str], what: str, example: str
) -> tuple[Any, tuple[float, float]]:
    """An entry of a list of pairs (``node_groups``, an age mix): given as a pair or as a mapping
    with ``keys``; returns the entry as a pair and its two numbers, or a one-line error."""
    if isinstance(entry, Mapping):
        entry = (entry.get(keys[0]), entry.get(keys[1]))
    try:
        first, second = (float(x) for x in entry)
    except (TypeError, ValueError):
        msg = f"{what} entries are ({keys[0]}, {keys[1]}) pairs, got {entry!r}; e.g. {example}."
        raise ValueError(msg) from None
    return entry, (first, second)


def age_mix(value: Iterable[Any]) -> tuple[tuple[float, float], ...]:
    """An age mix as ``Scenario.fleet_age`` stores it: sorted ``(age_h, share)`` pairs.

    ``value`` holds ``(age_h, share)`` pairs or ``{age_h, share}`` mappings; ages are hours, 0
    or more; shares are above 0 and add up to 1 within 1e-6 (then normalised to exactly 1).
    Pairs of the same age are merged.
    """
    shares: dict[float, float] = {}
    for entry in value:
        item, (age, share) = _number_pair(
            entry, ("age_h", "share"), "fleet_age mix",
            "[{age_h: 0, share: 0.5}, {age_h: 8760, share: 0.5}]",
        )  # fmt: skip
        if not (math.isfinite(age) and age >= 0 and math.isfinite(share) and share > 0):
            msg = f"fleet_age mix entry {item!r}: need an age_h >= 0 and a share > 0."
            raise ValueError(msg)
        shares[age] = shares.get(age, 0.0) + share
    total = sum(shares.values())
    if not shares or abs(total - 1.0) > 1e-6:
        msg = (
            f"fleet_age mix shares must add up to 1 (within 1e-6), got {total:.9g} from "
            f"{sorted(shares.items())}."
        )
        raise ValueError(msg)
    return tuple((age, share / total) for age, share in sorted(shares.items()))


def _check_positive(s: Scenario, *names: str) -> None:
    for name in names:
        value = getattr(s, name)
        if not (math.isfinite(value) and value > 0):
            msg = f"{name} must be positive, got {value}."
            raise ValueError(msg)


def _check_non_negative(s: Scenario, *names: str) -> None:
    for name in names:
        value = getattr(s, name)
        if not (math.isfinite(value) and value >= 0):
            msg = f"{name} must be zero or positive, got {value}."
            raise ValueError(msg)


def _scalar_or_array(x: NDArray[np.float64]) -> Any:
    return float(x) if np.ndim(x) == 0 else x


# --------------------------------------------------------------------------- checkpoint equations


def young_interval_s(checkpoint_s: ArrayLike, mtti_s: ArrayLike) -> Any:
    r"""Young's first-order optimum compute time between checkpoints.

    .. math:: \tau_Y = \sqrt{2 \delta M}

    Parameters
    ----------
    checkpoint_s
        Blocking checkpoint write time :math:`\delta`, seconds.
    mtti_s
        Mean time to interrupt of the job :math:`M`, seconds.

    Returns
    -------
    float or numpy.ndarray
        :math:`\tau_Y`, seconds (an array when an argument is one).

    References
    ----------
    J. W. Young, CACM 17(9), 1974.
    """
    d = np.asarray(checkpoint_s, dtype=float)
    m = np.asarray(mtti_s, dtype=float)
    return _scalar_or_array(np.sqrt(2.0 * d * m))


def daly_interval_s(checkpoint_s: ArrayLike, mtti_s: ArrayLike) -> Any:
    r"""Daly's higher-order optimum compute time between checkpoints.

    .. math::
        \tau_D = \sqrt{2\delta M}\left[1 + \tfrac13\sqrt{\tfrac{\delta}{2M}}
                  + \tfrac19\tfrac{\delta}{2M}\right] - \delta \quad (\delta < 2M),
        \qquad \tau_D = M \quad (\delta \ge 2M)

    Parameters
    ----------
    checkpoint_s
        Blocking checkpoint write time :math:`\delta`, seconds.
    mtti_s
        Mean time to interrupt :math:`M`, seconds.

    Returns
    -------
    float or numpy.ndarray
        :math:`\tau_D`, seconds.

    Examples
    --------
    Daly's own figures (:math:`\delta` = 5 min): M = 24 h gives 117 min, 6 h gives 57 min,
    15 min gives 9.1 min.

    >>> round(daly_interval_s(300, 24 * 3600) / 60)
    117

    References
    ----------
    J. T. Daly, FGCS 22(3), 303-312, 2006: the higher-order perturbation solution and its
    :math:`\tau = M` branch.
    """
    d = np.asarray(checkpoint_s, dtype=float)
    m = np.asarray(mtti_s, dtype=float)
    x = d / (2.0 * m)
    tau = np.sqrt(2.0 * d * m) * (1.0 + np.sqrt(x) / 3.0 + x / 9.0) - d
    return _scalar_or_array(np.where(d < 2.0 * m, tau, m))


def daly_expected_wall_time_s(
    solve_s: ArrayLike,
    checkpoint_s: ArrayLike,
    mtti_s: ArrayLike,
    *,
    restart_s: ArrayLike = 0.0,
    interval_s: ArrayLike | None = None,
) -> Any:
    r"""Daly's expected wall time to finish ``solve_s`` of failure-free work.

    .. math:: T_w = M e^{R/M}\left(e^{(\tau+\delta)/M} - 1\right)\frac{T_s}{\tau}

    Exact for Poisson interrupts when failures can also strike during checkpoints and restarts
    (each segment of :math:`\tau + \delta` is redone after a fault, each restart of length
    :math:`R` is retried after a fault).

    Parameters
    ----------
    solve_s
        Failure-free compute time :math:`T_s`, seconds.
    checkpoint_s
        Blocking checkpoint write time :math:`\delta`, seconds.
    mtti_s
        Mean time to interrupt :math:`M`, seconds.
    restart_s
        Restart time :math:`R`, seconds.
    interval_s
        Compute time between checkpoints :math:`\tau`, seconds; ``None`` uses
        :func:`daly_interval_s`.

    Returns
    -------
    float or numpy.ndarray
        :math:`T_w`, seconds (``inf`` when progress is impossible).

    References
    ----------
    J. T. Daly, FGCS 22(3), 2006: expected wall time of the complete cost model.
    """
    ts = np.asarray(solve_s, dtype=float)
    d = np.asarray(checkpoint_s, dtype=float)
    m = np.asarray(mtti_s, dtype=float)
    r = np.asarray(restart_s, dtype=float)
    tau = np.asarray(daly_interval_s(d, m) if interval_s is None else interval_s, dtype=float)
    with np.errstate(over="ignore"):
        tw = m * np.exp(r / m) * np.expm1((tau + d) / m) * ts / tau
    return _scalar_or_array(tw)


def ettr_meta(
    n_nodes: ArrayLike,
    failures_per_node_day: ArrayLike,
    *,
    restart_s: ArrayLike,
    checkpoint_interval_s: ArrayLike,
    checkpoint_s: ArrayLike = 0.0,
    drains_per_node_day: ArrayLike = 0.0,
    drain_s: ArrayLike = 0.0,
    clip: bool = True,
) -> Any:
    r"""Meta's closed-form expected effective training time ratio.

    .. math::
        E[\mathrm{ETTR}] \approx
        \frac{1 - N r_f\left(u_0 + \Delta t_{cp}/2\right)}{1 + w_{cp}/\Delta t_{cp}}

    Each of the :math:`N r_f` interruptions per unit time costs the restart overhead
    :math:`u_0` plus, on average, half a checkpoint interval of lost work; each interval of
    :math:`\Delta t_{cp}` compute also pays a blocking write :math:`w_{cp}`. The paper's queue
    time is not in this expression (the job is assumed to be re-admitted at once). A first-order
    approximation: it is clipped to [0, 1] where :math:`N r_f (u_0 + \Delta t_{cp}/2) > 1`.
    With proactive drains, :math:`r_f` is the rate of the failures nobody was warned of, and
    each of the :math:`N r_d` drains per unit time costs :math:`u_d` more in the numerator.

    Parameters
    ----------
    n_nodes
        Nodes the job runs on, :math:`N`.
    failures_per_node_day
        Failure rate :math:`r_f`, failures per node per day (RSC-1: 6.50e-3).
    restart_s
        Restart overhead :math:`u_0`, seconds.
    checkpoint_interval_s
        Compute time between checkpoints :math:`\Delta t_{cp}`, seconds.
    checkpoint_s
        Blocking checkpoint write time :math:`w_{cp}`, seconds.
    drains_per_node_day
        Proactive drains :math:`r_d` (true and false alarms), per node per day.
    drain_s
        Cost of one drain :math:`u_d` (a checkpoint write and a migration), seconds.

    Returns
    -------
    float or numpy.ndarray
        Expected ETTR in [0, 1].

    References
    ----------
    A. Kokolis et al., HPCA 2025, arXiv:2410.21680, section on the analytical E[ETTR]. With
    RSC-1's rate, a 16,384-GPU job, :math:`u_0` = 5 min and non-blocking checkpoints gives 0.70
    at a 60 min interval and 0.93 at 5 min, the paper's figures.
    """
    rate_s = (
        np.asarray(n_nodes, dtype=float)
        * np.asarray(failures_per_node_day, dtype=float)
        / SECONDS_PER_DAY
    )
    u0 = np.asarray(restart_s, dtype=float)
    dt = np.asarray(checkpoint_interval_s, dtype=float)
    w = np.asarray(checkpoint_s, dtype=float)
    drain_rate_s = (
        np.asarray(n_nodes, dtype=float)
        * np.asarray(drains_per_node_day, dtype=float)
        / SECONDS_PER_DAY
    )
    drain_loss = drain_rate_s * np.asarray(drain_s, dtype=float)
    ettr = (1.0 - rate_s * (u0 + dt / 2.0) - drain_loss) / (1.0 + w / dt)
    return _scalar_or_array(np.clip(ettr, 0.0, 1.0) if clip else ettr)


# --------------------------------------------------------------------------- failure rates


def _weibull_scale_h(mtbf_h: ArrayLike, shape: float) -> NDArray[np.float64]:
    r"""Weibull scale with mean ``mtbf_h``: :math:`\eta = \mathrm{MTBF}/\Gamma(1+1/k)`."""
    return np.asarray(mtbf_h, dtype=float) / math.gamma(1.0 + 1.0 / shape)


def _renewal_curve(
    shape: float, scale_h: NDArray[np.float64], horizon_h: NDArray[np.float64], age_h: float
) -> NDArray[np.float64]:
    r"""Expected failures of one unit position in [0, t], renewed at each, on a time grid.

    The first life is the residual life of a unit aged ``age_h`` (0 = new); later lives are
    fresh Weibull(``shape``, ``scale_h``). The delayed renewal function solves
    :math:`m_D(t) = G(t) + \int_0^t m_D(t-x)\,dF(x)` (:math:`G` the first life's distribution,
    :math:`F` a fresh one's) by trapezoidal Riemann-Stieltjes steps on the grid
    :math:`t_i = i\,T/n`, :math:`n` = ``_RENEWAL_GRID``. Vectorised over the batch of
    (scale, horizon) pairs; returns an array of shape (pairs, n + 1), :math:`m_D(t_i)`.
    """
    n = _RENEWAL_GRID
    frac = np.linspace(0.0, 1.0, n + 1)
    t = horizon_h[:, None] * frac[None, :]
    eta = scale_h[:, None]
    cdf = -np.expm1(-((t / eta) ** shape))
    if age_h > 0:
        h_age = (age_h / eta) ** shape
        first = -np.expm1(-(((age_h + t) / eta) ** shape - h_age))
    else:
        first = cdf
    d_f = np.diff(cdf, axis=1)
    m = np.zeros_like(cdf)
    half_first = d_f[:, 0] / 2.0
    for i in range(1, n + 1):
        acc = first[:, i] + half_first * m[:, i - 1]
        if i >= 2:
            acc = (
                acc + np.sum(d_f[:, 1:i] * (m[:, i - 2 :: -1] + m[:, i - 1 : 0 : -1]), axis=1) / 2.0
            )
        m[:, i] = acc / (1.0 - half_first)
    return m


def _renewal_count(
    shape: float, scale_h: NDArray[np.float64], horizon_h: NDArray[np.float64], age_h: float
) -> NDArray[np.float64]:
    """Expected failures of one unit position over the horizon (see :func:`_renewal_curve`)."""
    return _renewal_curve(shape, scale_h, horizon_h, age_h)[:, -1]


def _piece_edges(fine: bool) -> NDArray[np.int64]:
    """Grid indices of the time pieces: geometric (finer where a young fleet's rate changes fast).

    ``fine=False`` keeps every other edge: the coarse answer whose distance to the fine one is the
    discretisation part of the error bound.
    """
    inner = np.unique(np.round(np.geomspace(1.0, _RENEWAL_GRID, _PIECES)).astype(np.int64))
    edges = np.concatenate([[0], inner])
    if not fine:
        edges = np.unique(np.concatenate([edges[::2], [_RENEWAL_GRID]]))
    return edges


def _expected_failures_at(
    mtbf_h: NDArray[np.float64],
    shape: float,
    horizon_h: NDArray[np.float64],
    fleet_age: str | float | tuple[tuple[float, float], ...],
    edges: NDArray[np.int64],
) -> NDArray[np.float64]:
    r"""Expected failures of one unit position by each piece edge; shape ``(*points, len(edges))``.

    Steady state (a stationary renewal process) and exponential lifetimes fail at exactly
    :math:`t/\mathrm{MTBF}`; otherwise the (delayed) renewal function of :func:`_renewal_curve`.
    An age mix is the share-weighted sum of the delayed renewal functions at its ages (expected
    counts add over the units, so this is exact).
    """
    if isinstance(fleet_age, tuple):
        return np.asarray(
            sum(
                share * _expected_failures_at(mtbf_h, shape, horizon_h, age, edges)
                for age, share in fleet_age
            ),
            float,
        )
    mtbf_h, horizon_h = np.broadcast_arrays(np.asarray(mtbf_h, float), np.asarray(horizon_h, float))
    frac = edges / _RENEWAL_GRID
    if fleet_age == "steady_state" or shape == 1.0:
        return (horizon_h / mtbf_h)[..., None] * frac
    age = 0.0 if fleet_age == "new" else float(fleet_age)
    pairs = np.stack([mtbf_h.ravel(), horizon_h.ravel()], axis=1)
    unique, inverse = np.unique(pairs, axis=0, return_inverse=True)
    curve = _renewal_curve(shape, _weibull_scale_h(unique[:, 0], shape), unique[:, 1], age)
    return curve[:, edges][inverse.ravel()].reshape(*mtbf_h.shape, len(edges))


def _fleet_age_assumption(
    fleet_age: str | float | tuple[tuple[float, float], ...], rates: Sequence[ClassRate]
) -> str:
    if fleet_age == "steady_state":
        text = (
            "steady state: each unit's first failure drawn from the stationary "
            "(forward-recurrence) distribution, so the fleet fails at n/MTBF whatever the "
            "Weibull shape"
        )
    elif fleet_age == "new":
        text = (
            "new fleet: every unit at age 0 when the job starts, renewed at each failure; the "
            "analytical rate is the renewal function over the job divided by its length"
        )
    elif isinstance(fleet_age, tuple):
        mix = ", ".join(f"{share:.3g} at {age:g} h" for age, share in fleet_age)
        text = (
            f"age mix: shares of the units (every class, in proportion) this old when the job "
            f"starts ({mix}), renewed at each failure; the expected failures are the "
            "share-weighted sum of the delayed renewal functions at each age, integrated piece "
            "by piece over the job"
        )
    else:
        text = (
            f"aged fleet: every unit {float(fleet_age):g} h old when the job starts, renewed at "
            "each failure; the analytical rate is the delayed renewal function over the job "
            "divided by its length"
        )
    if all(r.weibull_shape == 1.0 for r in rates):
        text += "; all lifetimes are exponential, so fleet age does not change the answer"
    return text


# --------------------------------------------------------------------------- the analytical core


def _param(s: Scenario, over: Mapping[str, ArrayLike], name: str) -> NDArray[np.float64]:
    value = over.get(name, getattr(s, name))
    if value is None:
        return np.asarray(np.nan)
    arr = np.asarray(value)
    if arr.dtype == object:
        arr = np.where(np.equal(arr, None), np.nan, arr)
    return arr.astype(float)


def _spare_wait(
    spares: NDArray[np.float64],
    c: NDArray[np.float64],
    rate_out: NDArray[np.float64],
    rate_u: NDArray[np.float64],
    window: NDArray[np.float64] | None = None,
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    r"""Mean and Laplace transform of an unwarned fault's wait for a hot spare (fixed repairs).

    Every event that takes a domain out of the job (a fault, a drain, a false alarm: rate
    :math:`\Lambda`) takes a spare, which rejoins the pool a repair later. An unwarned fault
    waits :math:`W = (c - \Gamma_S)^+` after its detection, with :math:`\Gamma_S \sim
    \mathrm{Gamma}(S, \Lambda)` the time back to the S-th previous event; the pool starts full,
    so only events since the job began count: a fault ``window`` :math:`w` after the start
    waits only if :math:`\Gamma_S \le w`. With :math:`m = \min(c, w)`:

    .. math::
        E[W] = c\,P(S, \Lambda m) - \frac{S}{\Lambda} P(S + 1, \Lambda m), \qquad
        E[e^{-aW}] = Q(S, \Lambda m)
            + e^{-ac - (\Lambda - a)m}\frac{(\Lambda m)^S}{S!}\,M(1, S + 1, (\Lambda - a)m)

    with :math:`P`, :math:`Q` the regularised incomplete gammas, :math:`M` Kummer's function
    and :math:`a` the rate of unwarned interruptions. With no drains (:math:`a = \Lambda`,
    :math:`m = c`) the transform is :math:`P(\mathrm{Poisson}(\Lambda c) \le S)`. Where
    :math:`(\Lambda - a)m > S` the last term is evaluated as
    :math:`e^{-ac}(\Lambda/(\Lambda - a))^S P(S, (\Lambda - a)m)` in logs. ``window`` None is
    the steady state (:math:`m = c`).
    """
    m = c if window is None else np.minimum(c, window)
    x = rate_out * m
    y = (rate_out - rate_u) * m  # the alarms' share of x
    pos = np.maximum(spares, 1.0)  # S = 0 is handled apart
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        mean = c * special.gammainc(pos, x) - spares / rate_out * special.gammainc(pos + 1.0, x)
        log_pmf = special.xlogy(pos, x) - rate_u * c - y - special.gammaln(pos + 1.0)
        small = np.exp(log_pmf) * special.hyp1f1(1.0, pos + 1.0, np.minimum(y, pos))
        large = np.exp(
            -rate_u * c
            + pos * (np.log(rate_out) - np.log(rate_out - rate_u))
            + np.log(special.gammainc(pos, y))
        )
        laplace = special.gammaincc(pos, x) + np.where(y > pos, large, small)
    mean = np.where(spares > 0, np.maximum(mean, 0.0), c)
    laplace = np.where(spares > 0, laplace, np.exp(-rate_u * c))
    return mean, laplace


def _lognormal_partial_integrals(
    y: NDArray[np.float64], mu: NDArray[np.float64], sigma: NDArray[np.float64]
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    r""":math:`F(y)` and :math:`J(y) = \int_0^y F(v)\,dv` of a log-normal repair time.

    :math:`J(y) = yF(y) - e^{\mu + \sigma^2/2}\,\Phi((\ln y - \mu - \sigma^2)/\sigma)`.
    """
    with np.errstate(divide="ignore"):
        log_y = np.log(np.maximum(y, 0.0))
    cdf = special.ndtr((log_y - mu) / sigma)
    partial = y * cdf - np.exp(mu + sigma**2 / 2.0) * special.ndtr((log_y - mu - sigma**2) / sigma)
    return cdf, np.maximum(partial, 0.0)


def _spare_wait_random(
    spares: NDArray[np.float64],
    detect: NDArray[np.float64],
    repair_median_s: NDArray[np.float64],
    sigma: NDArray[np.float64],
    rate_out: NDArray[np.float64],
    rate_u: NDArray[np.float64],
    window: NDArray[np.float64],
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    r"""Mean and Laplace transform of the wait for a spare when repair times are log-normal.

    The pool starts with :math:`S` domains; each event taking a domain out (rate
    :math:`\Lambda`, Poisson) takes one and sends a domain to repair; the first domain back
    goes to the longest-waiting request. So the :math:`i`-th request is served by the
    :math:`i`-th return, counting the :math:`S` spares as returned at the start. A fault at
    time :math:`t` (``window``) after the start, detected :math:`d` later, waits more than
    :math:`w` iff, at :math:`x = t + d + w`, fewer than :math:`i` domains are back, which is

    .. math:: N - L - B \ge S

    with :math:`N \sim \mathrm{Poisson}(\Lambda\int_{d+w}^{t+d+w} \bar F_r)` the earlier
    events still in repair, :math:`L \sim \mathrm{Poisson}(\Lambda\int_0^{d+w} F_r)` the
    later events already back and :math:`B \sim \mathrm{Bernoulli}(F_r(d + w))` the fault's own
    domain back (independent: thinned Poisson processes on disjoint intervals, an
    :math:`M/G/\infty` argument). Then :math:`E[W] = \int_0^\infty P(W > w)\,dw` and
    :math:`E[e^{-aW}] = 1 - a\int_0^\infty e^{-aw} P(W > w)\,dw`, by trapezoids on
    ``_WAIT_GRID`` points up to the repair time's 1 - 1e-6 quantile. With a fixed repair time
    this is :func:`_spare_wait`.
    """
    shape = np.broadcast_shapes(
        np.shape(spares), np.shape(detect), np.shape(repair_median_s), np.shape(sigma),
        np.shape(rate_out), np.shape(rate_u), np.shape(window),
    )  # fmt: skip
    spares, detect, median, sigma, rate_out, rate_u, window = (
        np.broadcast_to(np.asarray(v, float), shape)[..., None]
        for v in (spares, detect, repair_median_s, sigma, rate_out, rate_u, window)
    )
    mu = np.log(median)
    # the wait changes fastest while repairs come back (between the repair time's 1e-6 and
    # 1 - 1e-6 quantiles, less detection: a dense linear grid) and e^{-aw} decays on 1/a (a
    # geometric grid from a second to the last repair resolves both)
    lo = np.maximum(median * np.exp(-4.76 * sigma) - detect, 0.0)
    hi = np.maximum(median * np.exp(4.76 * sigma) - detect, lo + 1.0)
    half = _WAIT_GRID // 2
    dense = lo + (hi - lo) * np.linspace(0.0, 1.0, half)
    wide = np.exp(np.log(hi) * np.linspace(0.0, 1.0, half - 1))  # 1 s .. hi
    lead = np.broadcast_shapes(dense.shape[:-1], wide.shape[:-1])
    w = np.sort(
        np.concatenate(
            [
                np.zeros((*lead, 1)),
                np.broadcast_to(wide, (*lead, wide.shape[-1])),
                np.broadcast_to(dense, (*lead, dense.shape[-1])),
            ],
            axis=-1,
        ),
        axis=-1,
    )
    own, j_near = _lognormal_partial_integrals(detect + w, mu, sigma)
    _, j_far = _lognormal_partial_integrals(window + detect + w, mu, sigma)
    # integral of the survival function over [d + w, t + d + w]: window - (J(far) - J(near))
    mean_n = rate_out * np.maximum(window - (j_far - j_near), 0.0)
    mean_l = rate_out * j_near
    # P(N - L >= k) = sum_n P(N = n) P(L <= n - k), N summed far into its tail
    # (only n >= k can count, so the sum starts at the fewest spares asked about)
    reach = float(np.max(mean_n + 12.0 * np.sqrt(mean_n) + 30.0 + spares, initial=30.0))
    ns = np.arange(float(np.min(spares)), np.ceil(reach) + 1.0)
    log_pn = special.xlogy(ns, mean_n[..., None]) - mean_n[..., None] - special.gammaln(ns + 1.0)
    p_n = np.exp(log_pn)

    ls = np.arange(len(ns), dtype=float)
    log_pl = special.xlogy(ls, mean_l[..., None]) - mean_l[..., None] - special.gammaln(ls + 1.0)
    cdf_l = np.cumsum(np.exp(log_pl), axis=-1)  # P(L <= l) for l = 0 .. len(ns) - 1

    def at_least(k: NDArray[np.float64]) -> NDArray[np.float64]:
        room = (ns - k[..., None]).astype(np.int64)  # L may be at most this
        below = np.take_along_axis(cdf_l, np.clip(room, 0, len(ns) - 1), axis=-1)
        return np.sum(p_n * np.where(room >= 0, below, 0.0), axis=-1)

    p_wait = own * at_least(spares + 1.0) + (1.0 - own) * at_least(spares)
    mean = np.trapezoid(p_wait, w, axis=-1)
    laplace = 1.0 - rate_u[..., 0] * np.trapezoid(np.exp(-rate_u * w) * p_wait, w, axis=-1)
    return mean, np.clip(laplace, 0.0, 1.0)


def _spare_wait_random_sampled(
    q: Mapping[str, NDArray[np.float64]],
    detect: NDArray[np.float64],
    repair_s: NDArray[np.float64],
    sigma: NDArray[np.float64],
    lam_hw: NDArray[np.float64],
    t_mid: NDArray[np.float64],
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """:func:`_spare_wait_random` for MTBF samples (rows of ``lam_hw``, one scenario otherwise).

    Every knob but the hardware fault rate is the same for all samples, and the spare and
    unwarned rates are affine in it, so each piece's wait is a function of that one rate: it is
    computed on ``_WAIT_NODES`` geometric nodes spanning the samples' rates and interpolated
    in the log of the rate (linear interpolation of smooth functions on nodes a few percent
    apart).
    """
    lo = np.maximum(np.min(lam_hw, axis=0), 1e-300)
    hi = np.maximum(np.max(lam_hw, axis=0), lo * (1.0 + 1e-9))
    frac = np.linspace(0.0, 1.0, _WAIT_NODES)[:, None]
    nodes = np.exp(np.log(lo) + (np.log(hi) - np.log(lo)) * frac)  # (nodes, pieces)
    # the rates are affine in the hardware rate (drains and job-level rates are not sampled)
    recall, precision = float(q["drain_recall"].flat[0]), float(q["drain_precision"].flat[0])
    job_rate = float(q["job_interruptions_per_h"].flat[0]) / SECONDS_PER_HOUR
    mean, laplace = _spare_wait_random(
        q["hot_spares"].flat[0], detect.flat[0], repair_s.flat[0], sigma.flat[0],
        (1.0 - recall + recall / precision) * nodes, (1.0 - recall) * nodes + job_rate,
        np.broadcast_to(t_mid, lam_hw.shape)[0],
    )  # fmt: skip
    x = np.log(np.maximum(lam_hw, 1e-300))
    log_nodes = np.log(nodes)
    out_m = np.empty_like(lam_hw)
    out_l = np.empty_like(lam_hw)
    for k in range(lam_hw.shape[1]):
        out_m[:, k] = np.interp(x[:, k], log_nodes[:, k], mean[:, k])
        out_l[:, k] = np.interp(x[:, k], log_nodes[:, k], laplace[:, k])
    return out_m, out_l


def project_arrays(
    s: Scenario,
    over: Mapping[str, ArrayLike] | None = None,
    mtbf_override: Sequence[NDArray[np.float64]] | None = None,
) -> dict[str, NDArray[np.float64]]:
    """Vectorised analytical projection; ``over`` maps numeric Scenario fields to arrays.

    The core :func:`project` and :func:`sweep` share with :mod:`models.simulate` and
    :mod:`models.ranking`: a dict of arrays, one entry per output, no validation or rounding.

    ``goodput_error_bound`` (absolute goodput) adds three parts. Discretisation: where the answer
    is integrated over time pieces (a fault rate that changes over the job, or a spare pool that
    starts full), the distance between the answers on the pieces and on every other piece. The
    window's edges: half a checkpoint segment's share of the job. Contention for spares: the
    renewal argument draws each wait for a spare afresh, but a fault that strikes during a wait
    only moves its end to the next spare back (the waits are correlated); the share of the job
    in such interrupted waits, times goodput, bounds it (measured against the Monte Carlo of
    :mod:`models.simulate`: errors of 0.2-20 % of goodput where a quarter or more of the
    waits are interrupted, a few tenths of a percent where none are).
    """
    fine = _project_core(s, over, mtbf_override, fine=True)
    edge = fine.pop("_edge_effect")
    contention = fine.pop("_contention")
    if fine.pop("_pieces") and mtbf_override is None:  # samples for an interval need no bound
        coarse = _project_core(s, over, mtbf_override, fine=False)
        discretisation = np.abs(fine["goodput"] - coarse["goodput"])
    else:
        discretisation = np.zeros_like(fine["goodput"])
    fine["goodput_error_bound"] = discretisation + edge + contention * fine["goodput"]
    return fine


_project_arrays = project_arrays
"""The name :func:`project`, :func:`sweep` and :func:`drain_sweep` call: the seam tests patch
(``monkeypatch.setattr(models.goodput, "_project_arrays", ...)``) to widen error bounds."""


def _mix(weights: Sequence[tuple[Any, Any]]) -> Any:
    """Sum of weight * value pairs (a mixture over detection kinds or interruption kinds)."""
    return sum(w * v for w, v in weights)


def _project_core(
    s: Scenario,
    over: Mapping[str, ArrayLike] | None,
    mtbf_override: Sequence[NDArray[np.float64]] | None,
    *,
    fine: bool,
) -> dict[str, Any]:
    over = {} if over is None else over
    p = {
        f.name: _param(s, over, f.name)
        for f in dataclasses.fields(s)
        if f.name not in CATEGORICAL_KNOBS
    }
    rates = s.class_rates()
    if mtbf_override is not None:
        mtbfs = [np.asarray(m, float) for m in mtbf_override]
    elif not s.rates and "node_failures_per_1000_node_days" in over:
        per_1000 = np.where(
            np.isnan(p["node_failures_per_1000_node_days"]),
            RSC1_NODE_FAILURES_PER_1000_NODE_DAYS,
            p["node_failures_per_1000_node_days"],
        )
        mtbfs = [24_000.0 / per_1000]
    else:
        mtbfs = [np.asarray(r.mtbf_h, float) for r in rates]

    n_gpus = p["n_gpus"]
    domain = p["failure_domain_gpus"]
    n_domains = np.ceil(n_gpus / domain)
    gpus_held = n_domains * domain
    nodes_held = np.ceil(gpus_held / p["gpus_per_node"])
    horizon_h = p["job_days"] * 24.0
    horizon_s = horizon_h * SECONDS_PER_HOUR

    # time pieces: where the fault rate changes over the job (a young or aged non-exponential
    # fleet) or the spare pool starts full, the equations below hold piece by piece
    constant_rate = s.fleet_age == "steady_state" or all(r.weibull_shape == 1.0 for r in rates)
    pieces = not constant_rate or s.strategy != "restart"
    edges = _piece_edges(fine) if pieces else np.asarray([0, _RENEWAL_GRID])
    frac = edges / _RENEWAL_GRID
    weight = np.diff(frac)  # share of the job's wall time in each piece
    count: Any = 0.0  # expected hardware faults by each edge
    for r, mtbf in zip(rates, mtbfs, strict=True):
        units = gpus_held if r.level == "gpu" else nodes_held
        for share, multiplier in s.unit_groups():
            by_edge = _expected_failures_at(
                mtbf / multiplier, r.weibull_shape, horizon_h, s.fleet_age, edges
            )
            count = count + (units * share)[..., None] * by_edge
    count = np.asarray(count, float)
    piece_s = horizon_s[..., None] * weight
    t_mid = horizon_s[..., None] * (frac[:-1] + frac[1:]) / 2.0
    lam_hw = np.diff(count, axis=-1) / piece_s  # hardware faults per second, by piece
    hw_total = count[..., -1]
    q = {k: v[..., None] for k, v in p.items()}  # knobs, broadcast against the pieces

    recall, precision = q["drain_recall"], q["drain_precision"]
    lam_j = q["job_interruptions_per_h"] / SECONDS_PER_HOUR  # job-level, never warned of
    lam_uhw = (1.0 - recall) * lam_hw  # hardware faults nobody was warned of
    lam_u = lam_uhw + lam_j  # everything that interrupts the job without warning
    lam_alarm = recall * lam_hw / precision  # alarms, true and false
    lam_out = lam_u + lam_alarm  # everything that ends a checkpoint segment
    lam_spare = lam_uhw + lam_alarm  # everything that takes a spare
    with np.errstate(divide="ignore", invalid="ignore"):
        share_hw = np.where(lam_u > 0, lam_uhw / lam_u, 1.0)
    share_job = 1.0 - share_hw

    # the checkpoint interval: one for the whole job, from its mean unwarned interruption rate
    lam_u_mean = (1.0 - p["drain_recall"]) * hw_total / horizon_s + p["job_interruptions_per_h"] / (
        SECONDS_PER_HOUR
    )
    delta = p["checkpoint_s"]
    migration = q["drain_migration_s"]
    drain_s = q["checkpoint_s"] + migration
    with np.errstate(divide="ignore", invalid="ignore"):
        mtti_u_s = 1.0 / lam_u_mean  # inf when every interruption is warned of
        young = np.asarray(young_interval_s(delta, mtti_u_s))
        daly = np.asarray(daly_interval_s(delta, mtti_u_s))
    tau = np.where(np.isnan(p["checkpoint_interval_s"]), daly, p["checkpoint_interval_s"])
    tau = np.where(np.isfinite(tau), tau, horizon_s)  # no unwarned fault: no periodic checkpoint
    tau = np.maximum(tau, _MIN_INTERVAL_S)  # a free checkpoint (delta = 0) gives Daly's tau = 0
    tau_q = tau[..., None]
    seg = tau_q + q["checkpoint_s"]

    # detection: a crash after detect_s, a hang after detect_hang_s
    detections = [(1.0 - q["hang_share"], q["detect_s"]), (q["hang_share"], q["detect_hang_s"])]
    reload_warm = q["reload_s"] + q["warmup_s"]
    repair_s = q["repair_h"] * SECONDS_PER_HOUR
    random_repair = bool(np.any(p["repair_sigma"] >= _MIN_REPAIR_SIGMA))
    waits = []  # (mean wait, Laplace transform at lam_u) after each kind of detection
    for _, d in detections:
        c = np.maximum(repair_s - d, 0.0)  # from detection until the domain's own repair is done
        fixed = _spare_wait(q["hot_spares"], c, lam_spare, lam_u, t_mid)
        if random_repair and s.strategy != "restart":  # below sigma 0.02: the fixed answer
            sigma = np.maximum(q["repair_sigma"], _MIN_REPAIR_SIGMA)
            one_scenario = all(np.ndim(v) == 0 for v in p.values())
            if one_scenario and lam_hw.ndim == 2 and lam_hw.shape[0] > _WAIT_NODES:
                rand = _spare_wait_random_sampled(q, d, repair_s, sigma, lam_hw, t_mid)
            else:
                rand = _spare_wait_random(
                    q["hot_spares"], d, repair_s, sigma, lam_spare, lam_u, t_mid
                )
            spread = q["repair_sigma"] >= _MIN_REPAIR_SIGMA
            fixed = tuple(np.where(spread, rv, fv) for rv, fv in zip(rand, fixed, strict=True))
        mean_w, laplace = (np.nan_to_num(v, nan=0.0) for v in fixed)
        laplace = np.where(lam_spare > 0, laplace, 1.0)
        waits.append((np.where(lam_spare > 0, mean_w, 0.0), laplace))
    mean_detect = _mix(detections)
    mean_wait = _mix((w, wt[0]) for (w, _), wt in zip(detections, waits, strict=True))

    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        # a job-level interruption restarts in place: detection, reload, warm-up
        survive_job = _mix((w, np.exp(-lam_u * (d + reload_warm))) for w, d in detections)
        if s.strategy == "elastic":
            group = np.maximum(q["replica_gpus"], q["failure_domain_gpus"])
            frac_group = np.minimum(group / q["n_gpus"], 1.0)
            down_s = mean_detect + mean_wait + reload_warm
            # a drained group leaves without stalling the others and moves onto a spare
            down = np.minimum(
                lam_uhw * down_s * frac_group + lam_alarm * migration * frac_group, 1.0
            )
            stall = np.minimum(lam_uhw * mean_detect, 1.0)
            # job-level interruptions roll the whole job back to its last checkpoint
            survive_rb = _mix((w, np.exp(-lam_j * (d + reload_warm))) for w, d in detections)
            q_j = np.exp(-lam_j * seg)
            cycle_rb = np.where(lam_j > 0, -np.expm1(-lam_j * seg) / (lam_j * survive_rb), seg)
            good_rb = q_j * tau_q / cycle_rb
            ckpt_rb = q_j * q["checkpoint_s"] / cycle_rb
            base = (1.0 - down) * (1.0 - stall)
            goodput = base * good_rb
            checkpoint = base * ckpt_rb
            wait = np.minimum(lam_uhw * mean_wait * frac_group, down)
            drain = np.minimum(lam_alarm * migration * frac_group, down - wait)
            restart_rb = base * (1.0 - survive_rb)
            restart = down - wait - drain + (1.0 - down) * stall + restart_rb
            rework = np.maximum(base * (1.0 - good_rb - ckpt_rb) - restart_rb, 0.0)
            mean_restart_s = down_s + 0.0 * lam_u
            drains_per_s = lam_alarm + 0.0 * goodput
        else:
            if s.strategy == "restart":
                restart_hw = q["reschedule_s"] + reload_warm
                survive_hw = _mix((w, np.exp(-lam_u * (d + restart_hw))) for w, d in detections)
                wait = np.zeros_like(survive_hw)
                mean_hw_s = mean_detect + restart_hw
            else:
                survive_hw = _mix(
                    (w, np.exp(-lam_u * (d + reload_warm)) * lap)
                    for (w, d), (_, lap) in zip(detections, waits, strict=True)
                )
                wait = share_hw * _mix(
                    (w, np.exp(-lam_u * d) * (1.0 - lap))
                    for (w, d), (_, lap) in zip(detections, waits, strict=True)
                )
                mean_hw_s = mean_detect + mean_wait + reload_warm
            survive = share_hw * survive_hw + share_job * survive_job
            mean_restart_s = share_hw * mean_hw_s + share_job * (mean_detect + reload_warm)
            # renewal reward over cycles that each start a fresh checkpoint segment
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
            restart = in_restart - wait
            rework = np.maximum(1.0 - goodput - checkpoint - drain - in_restart, 0.0)

    def over_time(x: Any) -> NDArray[np.float64]:  # the job's average of a per-piece share
        return np.sum(
            np.broadcast_to(x, np.broadcast_shapes(np.shape(x), lam_u.shape)) * weight, axis=-1
        )

    def per_fault(x: Any, rate: Any) -> NDArray[np.float64]:  # average over the faults' times
        total = np.sum(rate * weight, axis=-1)
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.where(
                total > 0, np.sum(x * rate * weight, axis=-1) / total, np.mean(x + 0.0 * rate, -1)
            )

    goodput_t = over_time(goodput)
    mean_restart_t = per_fault(mean_restart_s, lam_u)
    lam_alarm_mean = np.sum(lam_alarm * weight, axis=-1)
    expected = hw_total + p["job_interruptions_per_h"] * horizon_h
    mtti_s = horizon_s / expected
    # Meta's equation models a whole-job restart: for elastic it is what that restart would give
    u0 = (
        per_fault(mean_detect + q["reschedule_s"] + reload_warm, lam_u)
        if s.strategy == "elastic"
        else mean_restart_t
    )
    ettr = np.asarray(
        ettr_meta(
            nodes_held,
            lam_u_mean * SECONDS_PER_DAY / nodes_held,
            restart_s=u0,
            checkpoint_interval_s=tau,
            checkpoint_s=delta,
            drains_per_node_day=lam_alarm_mean * SECONDS_PER_DAY / nodes_held,
            drain_s=delta + p["drain_migration_s"],
            clip=False,
        )
    )
    gpu_h = n_gpus * horizon_h
    lost_total = (1.0 - goodput_t) * gpu_h
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        daly_wall_s = horizon_s / goodput_t
    return {
        "mtti_h": mtti_s / SECONDS_PER_HOUR,
        "mtti_unpredicted_h": mtti_u_s / SECONDS_PER_HOUR,
        "expected_interruptions": expected,
        "expected_drains": np.sum(drains_per_s * piece_s, axis=-1),
        "expected_false_alarms": lam_alarm_mean * (1.0 - p["drain_precision"]) * horizon_s,
        "young_interval_min": young / 60.0,
        "daly_interval_min": daly / 60.0,
        "checkpoint_interval_min": tau / 60.0,
        "mean_restart_min": mean_restart_t / 60.0,
        "mean_spare_wait_min": (
            per_fault(mean_wait, lam_uhw) if s.strategy != "restart" else 0.0 * goodput_t
        )
        / 60.0,
        "ettr": np.where(ettr >= 0.0, np.minimum(ettr, 1.0), np.nan),
        "goodput": goodput_t,
        "daly_wall_time_h": daly_wall_s / SECONDS_PER_HOUR,
        "useful_gpu_h": goodput_t * gpu_h,
        "lost_gpu_h_checkpoint": over_time(checkpoint) * gpu_h,
        "lost_gpu_h_rework": over_time(rework) * gpu_h,
        "lost_gpu_h_restart": over_time(restart) * gpu_h,
        "lost_gpu_h_spares_wait": over_time(wait) * gpu_h,
        "lost_gpu_h_drain": over_time(drain) * gpu_h,
        "lost_gpu_h_total": lost_total,
        "energy_lost_mwh": lost_total * p["gpu_power_w"] * p["pue"] / 1e6,
        "_pieces": pieces,
        # waits for a spare that a further fault interrupts: their lengths are correlated (the
        # spares come back in order), which the renewal argument treats as independent
        "_contention": over_time(
            wait
            * (1.0 - _mix((w, lap) for (w, _), (_, lap) in zip(detections, waits, strict=True)))
        ),
        # the window's edges: the segment in progress at the end is not committed, the first
        # cycle starts fresh; at most about a segment's share of the job
        "_edge_effect": goodput_t * (tau + delta) / (2.0 * horizon_s),
    }


def project(
    scenario: Scenario,
    *,
    n_samples: int = 0,
    random_state: int | np.random.Generator | None = None,
) -> dict[str, Any]:
    r"""Project MTTI, checkpoint interval, ETTR, goodput and losses for a scenario.

    Goodput is the fraction of the job's GPU-hours that advance training. For ``restart`` and
    ``hot_spare`` it is the renewal-reward ratio of the Daly model, exact for Poisson interrupts:

    .. math:: G = \frac{\tau\,E[e^{-R/M}]}{M\left(e^{(\tau+\delta)/M}-1\right)}

    For ``hot_spare`` the wait for a spare is :math:`W=(c-\Gamma_S)^+`, with :math:`c` the repair
    time less detection and :math:`\Gamma_S` the time since the S-th previous fault (spares return
    in failure order), which gives :math:`E[e^{-W/M}] = P(\mathrm{Poisson}(c/M)\le S)`. For
    ``elastic``, :math:`G = (1-\lambda D g/n)(1-\lambda d)\,\tau/(\tau+\delta)` with
    :math:`D` the time a replica group of :math:`g` GPUs is out and :math:`d` the detection stall.

    **Proactive drains** (``drain_recall`` :math:`\rho > 0`, ``drain_precision`` :math:`p`).
    Faults arrive at :math:`\lambda = 1/M`: unwarned ones at :math:`\lambda_u = (1-\rho)\lambda`,
    alarms (true and false) at :math:`\lambda_a = \rho\lambda/p`. An alarm while the job
    computes is a drain: the job writes a checkpoint (:math:`\delta`), which saves the compute of
    the segment in progress (up to :math:`\tau`) and restarts the periodic clock, then migrates
    (:math:`m`, ``drain_migration_s``); an alarm during a restart or a drain is handled within it.
    An unwarned fault during the drain's checkpoint loses the segment, one during the migration
    does not. Only unwarned faults lose work, so Young's and Daly's intervals use
    :math:`M_u = 1/\lambda_u` (with :math:`\rho = 1`, no periodic checkpoint in the job). Every
    fault, drain and false alarm takes a hot spare (so the spares' :math:`\Gamma_S` runs at
    :math:`\Lambda = \lambda_u + \lambda_a`), but only unwarned faults wait for one: a warned
    job keeps training on the domain until its spare is in (the lead time is assumed to cover
    that wait). Over cycles that each start a fresh segment, with
    :math:`q = e^{-\Lambda(\tau+\delta)}`, :math:`D = \delta + m`,
    :math:`b = (1-e^{-\lambda_u D})/\lambda_u` (time in a drain) and
    :math:`S = E[e^{-\lambda_u R}]`:

    .. math::
        G = \frac{S\Lambda\left[q\tau + \frac{\lambda_a}{\Lambda} e^{-\lambda_u\delta}
            \left(\frac{1-e^{-\Lambda\tau}}{\Lambda} - q\tau\right)\right]}
            {(1-q)(1+\lambda_a b)}

    the formula above when :math:`\rho = 0`, with :math:`\lambda_a S/(1+\lambda_a b)` drains
    per unit time, each in progress for :math:`b`. For ``elastic`` nothing is rolled back: a
    drained replica group leaves without stalling the others and is out for :math:`m`, so
    the groups are out :math:`\lambda_u D g/n + \lambda_a m g/n` of the time and the stall is
    :math:`\lambda_u d`.

    Parameters
    ----------
    scenario
        The job and fleet.
    n_samples
        When positive and some rates carry an MTBF interval, sample every such class's MTBF this
        many times from the log-normal matched to its 95 % interval and report 2.5/97.5 %
        quantiles; the checkpoint interval stays the one chosen for the point estimate.
    random_state
        Seed or generator for the sampling.

    Returns
    -------
    dict
        ``mtti_h`` (all faults), ``mtti_unpredicted_h`` (unwarned faults only),
        ``expected_interruptions`` (faults, warned of or not), ``expected_drains`` (drains done),
        ``expected_false_alarms``, ``young_interval_min``, ``daly_interval_min`` (both for
        ``mtti_unpredicted_h``), ``checkpoint_interval_min`` (the one used),
        ``mean_restart_min``, ``mean_spare_wait_min`` (after an unwarned fault),
        ``ettr`` (Meta's equation with the mean restart time; for ``elastic``, with a whole-job
        restart), ``goodput``, ``daly_wall_time_h`` (wall time to finish
        ``job_days`` of failure-free work), ``useful_gpu_h``, ``lost_gpu_h_checkpoint``,
        ``lost_gpu_h_rework``, ``lost_gpu_h_restart``, ``lost_gpu_h_spares_wait``,
        ``lost_gpu_h_drain``, ``lost_gpu_h_total``, ``energy_lost_mwh``,
        ``goodput_error_bound``, ``analytical_exact``, ``method``, ``ettr_note``, ``strategy``,
        ``rate_source``, ``fleet_age_assumption``, ``uncertainty``; with sampling also
        ``*_lo`` / ``*_hi`` for ``mtti_h``, ``ettr``, ``goodput`` and ``expected_interruptions``.

    Notes
    -----
    **Time-varying rates and a pool that starts full.** With Weibull shapes other than 1 and a
    fleet that is not in steady state, the superposed fault intensity of the units at their ages
    changes over the job (infant mortality early for shape < 1, wear-out late for shape > 1).
    The job is cut into pieces (geometric in time, finer at the start); each piece's rate is
    the increase of the delayed renewal function over it, and the equations above hold within
    each piece; goodput and losses are their time-weighted sum. The checkpoint interval is one
    for the whole job: Daly's at the job's mean unwarned rate (or the one given). The spare pool
    starts full: a fault at time :math:`t` into the job waits only when :math:`S` events took
    spares since the start within its lookback (see :func:`_spare_wait`); for ``hot_spare`` and
    ``elastic`` the same pieces carry this. Random (log-normal) repair times use
    :func:`_spare_wait_random`.

    **Interruption kinds.** A share ``hang_share`` of unwarned interruptions is detected after
    ``detect_hang_s``, the rest after ``detect_s``: every restart term above is the mixture.
    Job-level interruptions (``job_interruptions_per_h``) add to the unwarned rate; they restart
    in place (detection, reload, warm-up) and take no spare. ``node_groups`` add the fault
    rates of their units with lifetimes scaled by the multiplier.

    **Error bound.** ``goodput_error_bound`` (absolute) says how far the analytical answer can
    be from the event-level model (see :func:`project_arrays`); ``analytical_exact`` is true
    when it is within 1 % of goodput, and ``relia whatif`` evaluates the other points by Monte
    Carlo. Meta's ETTR is ``None`` where its first-order formula goes negative, with the reason
    in ``ettr_note``.

    Examples
    --------
    >>> out = project(Scenario(n_gpus=16_384, node_failures_per_1000_node_days=6.5))
    >>> round(out["mtti_h"], 1)
    1.8
    """
    core = _project_arrays(scenario)
    out: dict[str, Any] = {k: float(v) for k, v in core.items()}
    rates = scenario.class_rates()
    out["strategy"] = scenario.strategy
    out["rate_source"] = scenario.rate_source
    out["fleet_age_assumption"] = _fleet_age_assumption(scenario.fleet_age, rates)
    out["extrapolated_classes"] = [r.component_class for r in rates if r.extrapolated]
    if out["extrapolated_classes"]:
        out["extrapolation_note"] = (
            "most of the fitted mean life of "
            + ", ".join(out["extrapolated_classes"])
            + " lies beyond the oldest age observed: "
            + (
                "a steady-state projection rests on it; project at the fleet's ages "
                "(fleet_age) to use the hazard the data cover"
                if scenario.fleet_age == "steady_state"
                else "the projection uses the Weibull fit's hazard at the given ages"
            )
        )
    out["uncertainty"] = "none requested"
    out["ettr_note"] = _ettr_note(out)
    if math.isnan(out["ettr"]):
        out["ettr"] = None
    bound = out["goodput_error_bound"]
    out["method"] = "analytical"
    out["analytical_exact"] = bool(bound <= _EXACT_SHARE * out["goodput"])
    if n_samples > 0:
        with_interval = [r for r in rates if r.has_interval]
        if not with_interval:
            out["uncertainty"] = "none: no rate carries an MTBF interval"
            return out
        rng = np.random.default_rng(random_state)
        samples = [r.sample_mtbf(rng, n_samples) for r in rates]
        tau_s = out["checkpoint_interval_min"] * 60.0
        sampled = _project_arrays(scenario, {"checkpoint_interval_s": tau_s}, mtbf_override=samples)
        for key in ("mtti_h", "ettr", "goodput", "expected_interruptions"):
            lo_q, hi_q = np.quantile(np.broadcast_to(sampled[key], (n_samples,)), [0.025, 0.975])
            out[f"{key}_lo"], out[f"{key}_hi"] = float(lo_q), float(hi_q)
        names = ", ".join(r.component_class for r in with_interval)
        mixed = [r.component_class for r in with_interval if r.mtbf_mixture]
        out["uncertainty"] = (
            f"{n_samples} samples of the MTBF of {names} from log-normals matched to their 95 % "
            "intervals"
            + (
                f" (model-averaged mixtures of the fitted families for {', '.join(mixed)})"
                if mixed
                else ""
            )
            + "; 2.5/97.5 % quantiles"
        )
    return out


def _ettr_note(out: Mapping[str, Any]) -> str:
    """Why Meta's ETTR is or is not given (it is a first-order formula that goes negative)."""
    if not math.isnan(out["ettr"]):
        return "Meta's first-order E[ETTR] (Kokolis et al. 2025) with the mean restart time"
    per_interval = out["checkpoint_interval_min"] / 60.0 / out["mtti_unpredicted_h"]
    return (
        "not applicable at this scale: Meta's first-order E[ETTR] goes negative when "
        "interruptions x (restart + half a checkpoint interval) exceed the job's time "
        f"({per_interval:.2g} interruptions per checkpoint interval, mean time to interrupt "
        f"{out['mtti_unpredicted_h'] * 60:.3g} min); use goodput"
    )


# --------------------------------------------------------------------------- fit results -> rates


def rates_from_fits(fit_results: pl.DataFrame, *, at_ages: bool = False) -> tuple[ClassRate, ...]:
    """Turn the rows of a fit table into per-class rates.

    A table from :func:`models.fit_lives` (it has ``headline_mtbf_h`` and ``aic_weight``) is
    read per class, all families together:

    - by default (a steady-state projection, where only the mean matters) the rate is the
      class's headline MTBF and bounds; a model-averaged headline also passes its mixture (each
      family's log-normal sampling distribution with its Akaike weight, a family with no finite
      mean as a point at infinity) so that :func:`project` samples the model uncertainty;
    - ``at_ages=True`` (a projection at given unit ages: ``fleet_age`` ``"new"``, hours or an
      age mix) takes the class's Weibull row (the maximum-likelihood or Weibayes fit): its
      hazard at the ages the data cover is what the data support, and the projection engine
      models Weibull lives natively;
    - ``extrapolated`` is the class's ``headline_extrapolated``; a class with no failure is
      projected at its chi-square lower bound (with a warning), as below.

    Any other table is read the older way, from its chosen rows:

    Parameters
    ----------
    fit_results
        One row per component class, with columns ``component_class``, ``unit_level``
        (``gpu`` / ``node``), ``mtbf_h``, ``mtbf_lo_h``, ``mtbf_hi_h`` (hours; null, NaN or
        inf where there is none), ``shape`` (Weibull shape) and ``family``. When the table
        also has ``chosen`` (as ``fit_lives`` returns it), only the chosen rows are used.

    Returns
    -------
    tuple of ClassRate
        The Weibull shape is kept for ``family == "weibull"``; every other family is projected
        as exponential with the same MTBF.

    Raises
    ------
    ValueError
        A column is missing, or a row has neither an MTBF nor a lower bound.

    Warns
    -----
    ApproximationWarning
        A family other than exponential or Weibull was replaced by an exponential.
    FewFailuresWarning
        A class with no point MTBF (no failures) was projected at its lower bound.
    """
    required = (
        "component_class",
        "unit_level",
        "mtbf_h",
        "mtbf_lo_h",
        "mtbf_hi_h",
        "shape",
        "family",
    )
    missing = [c for c in required if c not in fit_results.columns]
    if missing:
        msg = f"fit_results lacks columns {missing}; pass the fit table with {list(required)}."
        raise ValueError(msg)
    if {"headline_mtbf_h", "aic_weight", "headline_method"} <= set(fit_results.columns):
        return _rates_from_headlines(fit_results, at_ages=at_ages)
    if "chosen" in fit_results.columns:
        fit_results = fit_results.filter(pl.col("chosen"))
    out = []
    approximated, bounded = [], []
    for row in fit_results.select(required).iter_rows(named=True):
        name = str(row["component_class"])
        family = str(row["family"] or "exponential").lower()
        shape = float(row["shape"]) if family == "weibull" and row["shape"] is not None else 1.0
        if family not in ("weibull", "exponential"):
            approximated.append(f"{name} ({family})")
        lo = _finite_or_none(row["mtbf_lo_h"])
        hi = _finite_or_none(row["mtbf_hi_h"])
        mtbf = _finite_or_none(row["mtbf_h"])
        if mtbf is None:
            if lo is None:
                msg = f"{name!r} has neither mtbf_h nor mtbf_lo_h; drop the row or give a bound."
                raise ValueError(msg)
            mtbf = lo
            bounded.append(name)
        out.append(ClassRate(name, str(row["unit_level"]), mtbf, lo, hi, shape))
    if approximated:
        warnings.warn(
            f"projected as exponential with the fitted MTBF: {', '.join(approximated)}",
            ApproximationWarning,
            stacklevel=2,
        )
    _warn_bounded(bounded, stacklevel=3)
    return tuple(out)


def _warn_bounded(names: list[str], *, stacklevel: int) -> None:
    """Say which classes with no point MTBF were projected at their lower bound."""
    if names:
        warnings.warn(
            "no point MTBF, projected at the lower bound (a pessimistic rate): " + ", ".join(names),
            FewFailuresWarning,
            stacklevel=stacklevel + 1,
        )


def _rates_from_headlines(fits: pl.DataFrame, *, at_ages: bool) -> tuple[ClassRate, ...]:
    """:func:`rates_from_fits` for a ``fit_lives`` table (see there)."""
    out, bounded = [], []
    for (name,), rows in fits.group_by("component_class", maintain_order=True):
        head = rows.row(0, named=True)
        method = head["headline_method"]
        level = str(head["unit_level"])
        weibull = rows.filter((pl.col("family") == "weibull") & pl.col("mtbf_h").is_finite())
        extrapolated = bool(head["headline_extrapolated"])
        if method == "chi_square":
            lo = _finite_or_none(head["headline_mtbf_lo_h"])
            if lo is None:
                msg = f"{name!r} has neither mtbf_h nor mtbf_lo_h; drop the row or give a bound."
                raise ValueError(msg)
            bounded.append(str(name))
            out.append(ClassRate(str(name), level, lo, lo, None))
            continue
        if at_ages and weibull.height:
            w = weibull.row(0, named=True)
            out.append(
                ClassRate(
                    str(name),
                    level,
                    float(w["mtbf_h"]),
                    _finite_or_none(w["mtbf_lo_h"]),
                    _finite_or_none(w["mtbf_hi_h"]),
                    float(w["shape"]),
                    extrapolated=extrapolated,
                )
            )
            continue
        mixture: tuple[tuple[float, float, float, float], ...] = ()
        if method == "model_average" and "mtbf_sampled_h" in rows.columns:
            from models.mtbf_summary import family_mixture

            mixture = family_mixture(rows.to_dicts())
        shape = float(weibull["shape"][0]) if weibull.height else 1.0
        out.append(
            ClassRate(
                str(name),
                level,
                min(float(head["headline_mtbf_h"]), MTBF_CAP_H),
                _finite_or_none(head["headline_mtbf_lo_h"]),
                _finite_or_none(head["headline_mtbf_hi_h"]),
                shape,
                mtbf_mixture=mixture,
                extrapolated=extrapolated,
            )
        )
    _warn_bounded(bounded, stacklevel=4)
    return tuple(out)


def _finite_or_none(value: Any) -> float | None:
    if value is None:
        return None
    value = float(value)
    return value if math.isfinite(value) else None


# --------------------------------------------------------------------------- what-if grids


def sweep(base: Scenario, grid: Mapping[str, Sequence[Any]]) -> pl.DataFrame:
    """Project every combination of a grid of knob values (full factorial, vectorised).

    Parameters
    ----------
    base
        Scenario supplying every knob not in ``grid``.
    grid
        Scenario field name -> list of values. Numeric knobs are evaluated as arrays in one pass;
        ``strategy``, ``fleet_age``, ``rates``, ``weibull_shape`` and ``node_groups`` loop over
        their (few) values.

    Returns
    -------
    polars.DataFrame
        One row per combination: the grid's columns (categorical knobs labelled by
        :func:`knob_label`) then every numeric output of :func:`project` (``mtti_h``,
        ``goodput``, ``ettr``, ``lost_gpu_h_*``...).

    Examples
    --------
    >>> df = sweep(Scenario(), {"n_gpus": [8_192, 16_384], "checkpoint_s": [10.0, 60.0]})
    >>> df.height
    4
    """
    fields = {f.name for f in dataclasses.fields(Scenario)}
    unknown = sorted(set(grid) - fields)
    if unknown:
        msg = f"unknown knobs {unknown}; grid keys must be Scenario fields: {sorted(fields)}."
        raise ValueError(msg)
    for key, values in grid.items():
        if len(values) == 0:
            msg = f"grid[{key!r}] is empty; give at least one value."
            raise ValueError(msg)
        for value in values:
            replace(base, **{key: value})  # validates each value with the scenario's own checks
    keys = list(grid)
    categorical = [k for k in keys if k in CATEGORICAL_KNOBS]
    numeric = [k for k in keys if k not in CATEGORICAL_KNOBS]
    shape = tuple(len(grid[k]) for k in numeric)
    index = np.indices(shape).reshape(len(numeric), -1) if numeric else np.zeros((0, 1), int)
    columns: dict[str, Any] = {}
    for row, key in enumerate(numeric):
        values = list(grid[key])
        columns[key] = [values[i] for i in index[row]]
    arrays = {key: np.asarray(columns[key], dtype=object) for key in numeric}
    n_points = index.shape[1]
    frames = []
    for combo in itertools.product(*(grid[k] for k in categorical)):
        scenario = replace(base, **dict(zip(categorical, combo, strict=True)))
        result = _project_arrays(scenario, arrays)
        data: dict[str, Any] = {}
        for key in keys:
            if key in categorical:
                value = combo[categorical.index(key)]
                data[key] = [knob_label(key, value)] * n_points
            else:
                data[key] = columns[key]
        for key, value in result.items():
            data[key] = np.broadcast_to(value, (n_points,)).copy()
        frame = pl.DataFrame(data, strict=False)
        frames.append(frame.with_columns(pl.col("ettr").fill_nan(None)))  # null: not applicable
    return pl.concat(frames, how="vertical_relaxed")


def knob_label(knob: str, value: Any) -> Any:
    """A knob value as a ``relia project`` option value, for tables and plots.

    ``rates`` as its class names; ``weibull_shape`` as ``0.7`` or ``gpu=0.7,nic=1.2`` (``fits``
    for none: each class keeps its own); ``node_groups`` as ``0.1:3,0.05:10`` (``none``); an
    age mix (``fleet_age``) as ``0h:0.5,8760h:0.5`` (age in hours : share). Other
    knobs as ``str(value)``.
    """
    if knob == "rates":
        return ",".join(r.component_class for r in value) or "default"
    if knob == "weibull_shape":
        if value is None:
            return "fits"
        if isinstance(value, Mapping):
            value = sorted(value.items())
        if isinstance(value, (tuple, list)):
            return ",".join(f"{k}={float(v):g}" for k, v in value)
        return f"{float(value):g}"
    if knob == "node_groups":
        return ",".join(f"{float(s):g}:{float(m):g}" for s, m in value) or "none"
    if knob == "fleet_age" and isinstance(value, (tuple, list)):
        pairs = age_mix(value)
        return ",".join(f"{age:g}h:{share:g}" for age, share in pairs)
    return str(value)


def drain_sweep(base: Scenario, curve: pl.DataFrame) -> pl.DataFrame:
    """Project proactive drains at each operating point of a failure predictor.

    Parameters
    ----------
    base
        Scenario supplying every knob but ``drain_recall`` and ``drain_precision`` (its
        ``drain_migration_s`` included). A ``None`` checkpoint interval is re-optimised at each
        threshold for the faults left unwarned.
    curve
        One row per threshold: ``threshold``, ``precision`` (share of alarms followed by a
        failure), ``recall`` (share of failures warned of early enough to drain) and, optionally,
        ``lead_time_h`` (the warning's lead time, hours). Where recall is 0 there are no alarms
        and the precision may be null.

    Returns
    -------
    polars.DataFrame
        One row per row of ``curve``, in its order: ``threshold``, ``precision``, ``recall``
        (and ``lead_time_h``), then every numeric output of :func:`project` at that operating
        point (as in :func:`sweep`: ``goodput``, ``expected_drains``,
        ``expected_false_alarms``, ``lost_gpu_h_drain``...), then ``goodput_no_drain`` (the
        base scenario without drains), ``goodput_gain`` (goodput minus that, in goodput points)
        and ``useful_gpu_h_gain``. With ``lead_time_h``, also ``lead_time_covers_checkpoint``:
        whether the lead time is at least one checkpoint write (the model assumes it is).

    Raises
    ------
    ValueError
        A column is missing, a recall is not in [0, 1], or a precision is not in (0, 1] where
        the recall is positive.

    See Also
    --------
    sweep : full factorial grids, where ``drain_recall`` and ``drain_precision`` are knobs too.

    Examples
    --------
    >>> curve = pl.DataFrame(
    ...     {"threshold": [0.2, 0.5, 0.8], "precision": [0.3, 0.6, 0.9], "recall": [0.9, 0.6, 0.2]}
    ... )
    >>> drain_sweep(Scenario(), curve)["goodput_gain"].round(3).to_list()
    [0.046, 0.057, 0.021]
    """
    known = ("threshold", "precision", "recall", "lead_time_h")
    missing = [c for c in known[:3] if c not in curve.columns]
    if missing:
        msg = (
            f"curve lacks columns {missing}; pass one row per threshold with "
            "threshold, precision, recall (and optionally lead_time_h)."
        )
        raise ValueError(msg)
    thresholds = curve["threshold"].to_list()
    recall = curve["recall"].cast(pl.Float64).to_numpy()
    precision = curve["precision"].cast(pl.Float64).to_numpy()
    bad = np.flatnonzero(~((recall >= 0) & (recall <= 1)))
    if bad.size:
        msg = (
            f"recall must be between 0 and 1, got {recall[bad[0]]} at threshold "
            f"{thresholds[bad[0]]} ({bad.size} rows); drop or fix those rows."
        )
        raise ValueError(msg)
    precision = np.where(recall > 0, precision, 1.0)  # no true alarms: no alarms at all
    bad = np.flatnonzero(~((precision > 0) & (precision <= 1)))
    if bad.size:
        msg = (
            f"precision must be above 0 and at most 1 where recall is positive, got "
            f"{precision[bad[0]]} at threshold {thresholds[bad[0]]} ({bad.size} rows); at 0 "
            "the false-alarm rate is undefined: drop those rows."
        )
        raise ValueError(msg)
    result = _project_arrays(base, {"drain_recall": recall, "drain_precision": precision})
    baseline = _project_arrays(base, {"drain_recall": np.asarray(0.0)})
    n_rows = curve.height
    data: dict[str, Any] = {c: curve[c] for c in known if c in curve.columns}
    for key, value in result.items():
        data[key] = np.broadcast_to(value, (n_rows,)).copy()
    data["goodput_no_drain"] = np.full(n_rows, float(baseline["goodput"]))
    data["goodput_gain"] = data["goodput"] - float(baseline["goodput"])
    data["useful_gpu_h_gain"] = data["useful_gpu_h"] - float(baseline["useful_gpu_h"])
    if "lead_time_h" in curve.columns:
        lead_s = curve["lead_time_h"].cast(pl.Float64) * SECONDS_PER_HOUR
        data["lead_time_covers_checkpoint"] = lead_s >= base.checkpoint_s
    return pl.DataFrame(data).with_columns(pl.col("ettr").fill_nan(None))  # null: not applicable
