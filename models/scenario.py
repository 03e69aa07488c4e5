"""Inputs and result of a goodput projection (ClassRate, Scenario, Projection).

A :class:`Scenario` describes the job (GPUs, failure domains, per-class failure rates,
checkpoint and restart costs, spares, recovery strategy, fleet age, proactive drains on a failure
predictor's warnings); :func:`models.goodput.project` turns it into a :class:`Projection`.
:func:`age_mix` validates a fleet-age mix. The unit constants shared by the projection modules
(``SECONDS_PER_HOUR``, ``SECONDS_PER_DAY``, ``MTBF_CAP_H``, ``CATEGORICAL_KNOBS``) live here.
:data:`KNOBS` is the knob table, read from the Scenario fields' metadata.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field, fields, replace
from typing import TYPE_CHECKING, Any, Literal, NotRequired, TypedDict

import numpy as np

from models.failslow_laws import SlowLaws

if TYPE_CHECKING:
    from collections.abc import Iterable
    from dataclasses import Field

    from numpy.typing import NDArray

__all__ = [
    "FAIL_SLOW_KNOBS",
    "KNOBS",
    "RSC1_NODE_FAILURES_PER_1000_NODE_DAYS",
    "ClassRate",
    "Knob",
    "Projection",
    "Scenario",
    "age_mix",
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
_EVICTIONS = ("restart", "hot_spare", "planned")
KnobKind = Literal[
    "int",
    "float",
    "optional_float",
    "text",
    "rates",
    "fleet_age",
    "weibull_shape",
    "node_groups",
    "slow_laws",
]
"""How a knob's value is written and read (:func:`pipelines.analysis.knobs.knob_value` parses
each kind): a whole number, a number, a number or None, a word, or one of the structured knobs."""


@dataclass(frozen=True, slots=True)
class _KnobSpec:
    """A :class:`Scenario` field's row of the knob table, as the field's metadata holds it."""

    kind: KnobKind
    unit: str
    option: str | None  # "" for ``--`` and the name with dashes
    categorical: bool
    bound: Literal["positive", "non_negative"] | None


def _knob(
    kind: KnobKind,
    unit: str,
    *,
    option: str | None = "",
    categorical: bool = False,
    bound: Literal["positive", "non_negative"] | None = None,
) -> dict[str, _KnobSpec]:
    """Return the metadata of a :class:`Scenario` field: its row of the knob table (:class:`Knob`).

    ``option`` is the ``relia project`` option, ``""`` for ``--`` and the name with dashes,
    None for a knob with no option.
    """
    return {"knob": _KnobSpec(kind, unit, option, categorical, bound)}


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
        Bounds of the 95 % interval of ``mtbf_h``, hours. :func:`~models.goodput.project` samples
        the MTBF from the log-normal whose 2.5 and 97.5 % quantiles are these bounds; a class with
        either bound missing is held at ``mtbf_h``.
    weibull_shape
        Weibull shape of one unit's lifetime; 1 is exponential, below 1 is infant mortality.
    mtbf_mixture
        The sampling distribution of the MTBF as a mixture of split log-normals:
        ``(weight, log_centre, sd_below, sd_above)`` (a model-averaged lifetime mean's families
        with their Akaike weights, see :func:`models.family_mixture` and
        :func:`models.mixture_components`; :func:`~models.rates.rates_from_fits` projects the
        observed rate instead and passes none); ``log_centre = inf`` is a family with no finite
        mean, sampled as :data:`MTBF_CAP_H`. When given, :func:`~models.goodput.project`
        samples from it instead of the log-normal matched to the bounds.
    extrapolated
        The MTBF is mostly an extrapolation beyond the ages observed (from the fit: a Weibull
        fit's mean for a projection at given ages; never the observed rate); carried into the
        projection's output.
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
        """Check the level, MTBF, shape and bounds; a bad one raises ``ValueError``."""
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
            capped: NDArray[np.float64] = np.minimum(draws, MTBF_CAP_H)
            return capped
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
        Per-class failure rates (:class:`ClassRate`); see :func:`~models.rates.rates_from_fits`.
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
    slow_laws
        Fail-slow episodes (:class:`~models.failslow_laws.SlowLaws`, one per kind of unit: GPU
        or node): their rate per unit-hour, duration law and slowdown law. Empty (the default)
        projects fail-stop only; set, the projection runs the job at the pace of its slowest
        unit (:mod:`models.failslow`) and splits the lost GPU-hours by cause.
    straggler_detect_s
        Time from a slow episode's start until it is detected and acted on, seconds; ``None``
        (the default) never evicts a slow unit.
    straggler_tolerance
        ``theta``: an episode slowing its unit by ``1 + theta`` or less is tolerated (never
        evicted), 0 or more.
    straggler_evict
        How a detected slow unit is evicted, priced by :func:`models.failslow.eviction_cost_s`:
        ``"restart"`` (the job restarts without it: reschedule, reload, warm-up and the rollback
        to the last checkpoint), ``"hot_spare"`` (a spare is swapped in: no reschedule) or
        ``"planned"`` (a checkpoint, then a move off the unit as a drain: no rollback).
    straggler_evict_s
        Time from detection until the slow unit is out of the job, seconds; the job runs at the
        slow pace meanwhile.
    """

    n_gpus: int = field(
        default=16_384, metadata=_knob("int", "GPUs", option="--gpus", bound="positive")
    )
    gpus_per_node: int = field(default=8, metadata=_knob("int", "GPUs", bound="positive"))
    failure_domain_gpus: int = field(default=8, metadata=_knob("int", "GPUs", bound="positive"))
    rates: tuple[ClassRate, ...] = field(
        default=(), metadata=_knob("rates", "", option=None, categorical=True)
    )
    node_failures_per_1000_node_days: float | None = field(
        default=None, metadata=_knob("optional_float", "failures per 1000 node-days")
    )
    checkpoint_s: float = field(default=60.0, metadata=_knob("float", "s", bound="non_negative"))
    checkpoint_interval_s: float | None = field(default=None, metadata=_knob("optional_float", "s"))
    detect_s: float = field(default=120.0, metadata=_knob("float", "s", bound="non_negative"))
    reschedule_s: float = field(default=300.0, metadata=_knob("float", "s", bound="non_negative"))
    reload_s: float = field(default=180.0, metadata=_knob("float", "s", bound="non_negative"))
    warmup_s: float = field(default=120.0, metadata=_knob("float", "s", bound="non_negative"))
    hot_spares: int = field(default=0, metadata=_knob("int", "domains", bound="non_negative"))
    repair_h: float = field(default=24.0, metadata=_knob("float", "h", bound="positive"))
    strategy: str = field(default="restart", metadata=_knob("text", "", categorical=True))
    replica_gpus: int = field(default=512, metadata=_knob("int", "GPUs", bound="positive"))
    job_days: float = field(default=30.0, metadata=_knob("float", "days", bound="positive"))
    gpu_power_w: float = field(
        default=700.0, metadata=_knob("float", "W", option=None, bound="positive")
    )
    pue: float = field(default=1.2, metadata=_knob("float", "", option=None))
    fleet_age: str | float | tuple[tuple[float, float], ...] = field(
        default="steady_state", metadata=_knob("fleet_age", "h", categorical=True)
    )
    drain_recall: float = field(default=0.0, metadata=_knob("float", "share"))
    drain_precision: float = field(default=1.0, metadata=_knob("float", "share"))
    drain_migration_s: float = field(
        default=300.0, metadata=_knob("float", "s", bound="non_negative")
    )
    weibull_shape: float | tuple[tuple[str, float], ...] | None = field(
        default=None, metadata=_knob("weibull_shape", "", categorical=True)
    )
    hang_share: float = field(default=0.0, metadata=_knob("float", "share"))
    detect_hang_s: float = field(default=600.0, metadata=_knob("float", "s", bound="non_negative"))
    repair_sigma: float = field(default=0.0, metadata=_knob("float", "", bound="non_negative"))
    job_interruptions_per_h: float = field(
        default=0.0, metadata=_knob("float", "1/h", bound="non_negative")
    )
    node_groups: tuple[tuple[float, float], ...] = field(
        default=(), metadata=_knob("node_groups", "", option="--node-group", categorical=True)
    )
    slow_laws: tuple[SlowLaws, ...] = field(
        default=(), metadata=_knob("slow_laws", "", option=None, categorical=True)
    )
    straggler_detect_s: float | None = field(
        default=None, metadata=_knob("optional_float", "s", categorical=True)
    )
    straggler_tolerance: float = field(
        default=0.05,
        metadata=_knob("float", "share", categorical=True, bound="non_negative"),
    )
    straggler_evict: str = field(default="restart", metadata=_knob("text", "", categorical=True))
    straggler_evict_s: float = field(
        default=0.0, metadata=_knob("float", "s", categorical=True, bound="non_negative")
    )

    def __post_init__(self) -> None:
        """Store mappings and lists as tuples, check every knob; a bad one raises ``ValueError``."""
        self._normalise_groups_and_shapes()
        _check_positive(self, *_POSITIVE)
        _check_non_negative(self, *_NON_NEGATIVE)
        self._check_fail_slow()
        if not (math.isfinite(self.hang_share) and 0 <= self.hang_share <= 1):
            msg = f"hang_share is a share of interruptions, from 0 to 1, got {self.hang_share}."
            raise ValueError(msg)
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
        # a config file may give a mapping or a list where the field declares a tuple
        raw: Any = self.weibull_shape
        shape: float | tuple[tuple[str, float], ...] | None = None
        if isinstance(raw, Mapping):
            shape = tuple(sorted((str(k), float(v)) for k, v in raw.items()))
        elif isinstance(raw, (list, tuple)):
            shape = tuple(sorted((str(k), float(v)) for k, v in raw))
        elif raw is not None:
            shape = float(raw)
        object.__setattr__(self, "weibull_shape", shape)
        values = [v for _, v in shape] if isinstance(shape, tuple) else [shape]
        for v in values:
            if v is not None and not (math.isfinite(v) and v > 0):
                msg = f"weibull_shape must be positive (1 is exponential), got {v}."
                raise ValueError(msg)
        groups = []
        for entry in self.node_groups:
            group, (share, multiplier) = _number_pair(
                entry,
                ("share", "rate_multiplier"),
                "node_groups",
                "{share: 0.1, rate_multiplier: 3} for a bad batch on a tenth of the nodes",
            )
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

    def __repr__(self) -> str:
        """Return the dataclass repr, with the fail-slow knobs only where they are set.

        A fail-stop scenario's repr is what it was before they existed, and so are the Monte
        Carlo seeds :func:`models.mc_sweep.point_seed` hashes from it.
        """
        shown = (
            f"{f.name}={getattr(self, f.name)!r}"
            for f in fields(self)
            if f.name not in FAIL_SLOW_KNOBS or getattr(self, f.name) != f.default
        )
        return f"{type(self).__qualname__}({', '.join(shown)})"

    def _check_fail_slow(self) -> None:
        """Store the slow laws as a tuple and check the straggler knobs."""
        raw: Any = self.slow_laws
        laws = (raw,) if isinstance(raw, SlowLaws) else tuple(raw)
        if not all(isinstance(law, SlowLaws) for law in laws):
            msg = (
                "slow_laws must be SlowLaws (models.failslow_laws), one per kind of unit; "
                "fit them with fit_slow_laws or give {unit, rate_per_unit_h, duration, excess}."
            )
            raise TypeError(msg)
        object.__setattr__(self, "slow_laws", laws)
        detect = self.straggler_detect_s
        if detect is not None and not (math.isfinite(detect) and detect >= 0):
            msg = (
                f"straggler_detect_s must be 0 or more seconds, or None (never evict), "
                f"got {detect}."
            )
            raise ValueError(msg)
        if self.straggler_evict not in _EVICTIONS:
            msg = f"straggler_evict must be one of {_EVICTIONS}, got {self.straggler_evict!r}."
            raise ValueError(msg)

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
        """Return the per-class rates the projection uses.

        The node-rate shortcut is expanded and ``weibull_shape`` applied.
        """
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


@dataclass(frozen=True)
class Knob:
    """One knob of the projection: a :class:`Scenario` field as users set it.

    Parameters
    ----------
    name
        The Scenario field (and the sweep YAML key).
    kind
        How its value is written and read (:data:`KnobKind`).
    default
        The Scenario default.
    unit
        Unit of a number (``s``, ``h``, ``GPUs``, ``share``...); empty when it has none.
    option
        The ``relia project`` option that sets it (``--gpus``), None when the CLI has none.
    categorical
        Whether :func:`~models.sweep.sweep` loops over its values instead of evaluating them as
        an array in one pass (:data:`CATEGORICAL_KNOBS`).
    bound
        ``"positive"`` or ``"non_negative"``: checked as such by :class:`Scenario`; None when the
        knob has its own check (a share, a keyword) or none.
    """

    name: str
    kind: KnobKind
    default: Any
    unit: str
    option: str | None
    categorical: bool
    bound: str | None

    @property
    def parameter(self) -> str | None:
        """The option as a Python parameter name (``--node-group`` -> ``node_group``)."""
        return None if self.option is None else self.option.removeprefix("--").replace("-", "_")


def _knob_row(f: Field[Any]) -> Knob:
    """Return the knob table's row of a :class:`Scenario` field, from its metadata."""
    spec: _KnobSpec = f.metadata["knob"]
    return Knob(
        name=f.name,
        kind=spec.kind,
        default=f.default,
        unit=spec.unit,
        option="--" + f.name.replace("_", "-") if spec.option == "" else spec.option,
        categorical=spec.categorical,
        bound=spec.bound,
    )


KNOBS = tuple(_knob_row(f) for f in fields(Scenario))
"""The knob table, one row per :class:`Scenario` field in field order: the one list of knob names,
kinds, defaults, units, ``relia project`` options and bounds that the CLI, the sweep YAML and the
sweeps read."""
CATEGORICAL_KNOBS = tuple(k.name for k in KNOBS if k.categorical)
"""Scenario fields :func:`~models.sweep.sweep` loops over (the others it evaluates as arrays in one
pass)."""
_CATEGORICAL = CATEGORICAL_KNOBS  # the old name, read by tests/hardening/test_scale_out.py
_POSITIVE = tuple(k.name for k in KNOBS if k.bound == "positive")
_NON_NEGATIVE = tuple(k.name for k in KNOBS if k.bound == "non_negative")
FAIL_SLOW_KNOBS = (
    "slow_laws",
    "straggler_detect_s",
    "straggler_tolerance",
    "straggler_evict",
    "straggler_evict_s",
)
"""The fail-slow knobs: at their defaults (no slow laws) every output is the fail-stop one."""


def _number_pair(
    entry: Any, keys: tuple[str, str], what: str, example: str
) -> tuple[Any, tuple[float, float]]:
    """Read an entry of a list of pairs (``node_groups``, an age mix).

    The entry is given as a pair or as a mapping with ``keys``; returns the entry as a pair and
    its two numbers, or raises a one-line error.
    """
    if isinstance(entry, Mapping):
        entry = (entry.get(keys[0]), entry.get(keys[1]))
    try:
        first, second = (float(x) for x in entry)
    except (TypeError, ValueError):
        msg = f"{what} entries are ({keys[0]}, {keys[1]}) pairs, got {entry!r}; e.g. {example}."
        raise ValueError(msg) from None
    return entry, (first, second)


def age_mix(value: Iterable[Any]) -> tuple[tuple[float, float], ...]:
    """Return an age mix as ``Scenario.fleet_age`` stores it: sorted ``(age_h, share)`` pairs.

    ``value`` holds ``(age_h, share)`` pairs or ``{age_h, share}`` mappings; ages are hours, 0
    or more; shares are above 0 and add up to 1 within 1e-6 (then normalised to exactly 1).
    Pairs of the same age are merged.
    """
    shares: dict[float, float] = {}
    for entry in value:
        item, (age, share) = _number_pair(
            entry,
            ("age_h", "share"),
            "fleet_age mix",
            "[{age_h: 0, share: 0.5}, {age_h: 8760, share: 0.5}]",
        )
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


class Projection(TypedDict):
    """What :func:`models.goodput.project` returns: a plain dict with these keys.

    ``mtti_h`` (all faults), ``mtti_unpredicted_h`` (unwarned faults only),
    ``expected_interruptions`` (faults, warned of or not), ``expected_drains`` (drains done),
    ``expected_false_alarms``, ``young_interval_min``, ``daly_interval_min`` (both for
    ``mtti_unpredicted_h``), ``checkpoint_interval_min`` (the one used),
    ``mean_restart_min``, ``mean_spare_wait_min`` (after an unwarned fault),
    ``ettr`` (Meta's equation with the mean restart time; for ``elastic``, with a whole-job
    restart; ``None`` where the first-order formula goes negative, see ``ettr_note``),
    ``goodput``, ``daly_wall_time_h`` (wall time to finish ``job_days`` of failure-free work),
    ``useful_gpu_h``, ``lost_gpu_h_checkpoint``, ``lost_gpu_h_rework``, ``lost_gpu_h_restart``,
    ``lost_gpu_h_spares_wait``, ``lost_gpu_h_drain``, ``lost_gpu_h_total``, ``energy_lost_mwh``,
    ``goodput_error_bound`` (absolute), ``analytical_exact``, ``method``, ``ettr_note``,
    ``strategy``, ``rate_source``, ``expected_interruptions_by_class`` (class -> expected
    interruptions over the job with the class's own bounds, :func:`models.expected_by_class`),
    ``fleet_age_assumption``, ``extrapolated_classes``,
    ``extrapolation_note`` (only when some class is extrapolated), ``uncertainty``; with
    sampling also ``*_lo`` / ``*_hi`` for ``mtti_h``, ``ettr``, ``goodput`` and
    ``expected_interruptions``. With ``slow_laws`` (fail-slow, :mod:`models.goodput_slow`),
    ``goodput``, ``useful_gpu_h``, ``lost_gpu_h_total`` and ``energy_lost_mwh`` count fail-stop
    and fail-slow, and these are added: ``goodput_fail_stop`` (fail-stop alone),
    ``slow_share`` (the share of the running time lost to the slowest unit's pace),
    ``slowdown`` (``1 / (1 - slow_share)``), ``expected_evictions`` (of slow units, over the
    job), ``lost_gpu_h_fail_stop``, ``lost_gpu_h_fail_slow`` and its parts ``lost_gpu_h_slow``
    (the slow pace) and ``lost_gpu_h_eviction`` (the evictions' stalls); the goodput interval
    counts both too. Being a ``TypedDict``, it is indexed like any dict.
    """

    mtti_h: float
    mtti_unpredicted_h: float
    expected_interruptions: float
    expected_drains: float
    expected_false_alarms: float
    young_interval_min: float
    daly_interval_min: float
    checkpoint_interval_min: float
    mean_restart_min: float
    mean_spare_wait_min: float
    ettr: float | None
    goodput: float
    daly_wall_time_h: float
    useful_gpu_h: float
    lost_gpu_h_checkpoint: float
    lost_gpu_h_rework: float
    lost_gpu_h_restart: float
    lost_gpu_h_spares_wait: float
    lost_gpu_h_drain: float
    lost_gpu_h_total: float
    energy_lost_mwh: float
    goodput_error_bound: float
    analytical_exact: bool
    method: str
    ettr_note: str
    strategy: str
    rate_source: str
    expected_interruptions_by_class: dict[str, dict[str, Any]]
    fleet_age_assumption: str
    extrapolated_classes: list[str]
    extrapolation_note: NotRequired[str]
    uncertainty: str
    mtti_h_lo: NotRequired[float]
    mtti_h_hi: NotRequired[float]
    ettr_lo: NotRequired[float]
    ettr_hi: NotRequired[float]
    goodput_lo: NotRequired[float]
    goodput_hi: NotRequired[float]
    expected_interruptions_lo: NotRequired[float]
    expected_interruptions_hi: NotRequired[float]
    goodput_fail_stop: NotRequired[float]
    slow_share: NotRequired[float]
    slowdown: NotRequired[float]
    expected_evictions: NotRequired[float]
    lost_gpu_h_fail_stop: NotRequired[float]
    lost_gpu_h_fail_slow: NotRequired[float]
    lost_gpu_h_slow: NotRequired[float]
    lost_gpu_h_eviction: NotRequired[float]
