"""Configuration of the synthetic fleet: component classes, fleet shape and workload knobs."""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field, replace
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping

#: GPU-level classes: every GPU slot carries one competing latent lifetime per class.
GPU_CLASSES: tuple[str, ...] = ("gpu", "gpu_memory", "nvlink", "pcie")
#: Node-level classes the generator knows how to emit (no Xid; NODE_FAIL in Slurm).
NODE_CLASSES: tuple[str, ...] = ("nic", "power", "host_memory")
#: Xid codes a failure of each GPU-level class prints (data contract §4).
FAILURE_XIDS: dict[str, tuple[int, ...]] = {
    "gpu": (62,),
    "gpu_memory": (48, 95),
    "nvlink": (74,),
    "pcie": (79,),
}
#: Every Xid code that ends a unit's life, with its class.
XID_CLASS: dict[int, str] = {code: cls for cls, codes in FAILURE_XIDS.items() for code in codes}
WARNING_XIDS: tuple[int, ...] = (63, 92)
APPLICATION_XIDS: tuple[int, ...] = (13, 31, 43)


#: Lifetime families a class can be drawn from, with lifelines' parameter names.
FAMILIES: tuple[str, ...] = ("weibull", "exponential", "lognormal", "loglogistic")


@dataclass(frozen=True)
class ClassSpec:
    """Lifetime law and repair time of one component class.

    Parameters
    ----------
    level
        ``"gpu"`` (one unit per GPU slot) or ``"node"`` (one unit per node).
    shape
        The family's shape: Weibull ``k`` (below 1: infant mortality; above 1: wear-out),
        log-normal ``sigma``, log-logistic ``beta`` (above 1, else the mean is infinite); 1 for
        the exponential, which has none.
    scale_h
        The family's scale in hours: Weibull ``lambda``, exponential mean, log-normal median
        (``mu = ln scale_h``), log-logistic ``alpha`` (also the median).
    repair_median_h
        Median of the lognormal time from failure (ticket opened) to the new unit's installation
        (ticket closed), in hours.
    family
        ``"weibull"`` (default), ``"exponential"``, ``"lognormal"`` or ``"loglogistic"``, with
        the parameters of lifelines' ``WeibullFitter`` (``lambda_, rho_``),
        ``ExponentialFitter`` (``lambda_`` = the mean), ``LogNormalFitter`` (``mu_, sigma_``)
        and ``LogLogisticFitter`` (``alpha_, beta_``); see :meth:`params`. To change a class's
        family at the same mean and median, use :meth:`as_family` or
        :meth:`SynthConfig.with_families`.

    Raises
    ------
    ValueError
        An unknown family, an exponential with a shape other than 1, or a log-logistic with
        ``shape <= 1`` (no finite mean).
    """

    level: str
    shape: float
    scale_h: float
    repair_median_h: float
    family: str = "weibull"

    def __post_init__(self) -> None:
        """Refuse a family the generator cannot draw, or one without a finite mean."""
        if self.family not in FAMILIES:
            msg = f"unknown lifetime family {self.family!r}; use one of {', '.join(FAMILIES)}."
            raise ValueError(msg)
        if self.family == "exponential" and self.shape != 1.0:
            msg = f"the exponential has no shape; pass shape=1.0, got {self.shape}."
            raise ValueError(msg)
        if self.family == "loglogistic" and self.shape <= 1.0:
            msg = (
                f"a log-logistic with shape (beta) {self.shape} <= 1 has no finite mean (MTBF); "
                "pass a shape above 1."
            )
            raise ValueError(msg)

    @property
    def mtbf_h(self) -> float:
        """Mean of the lifetime, hours.

        Weibull ``scale_h * gamma(1 + 1/shape)``; exponential ``scale_h``; log-normal
        ``scale_h * exp(shape**2 / 2)``; log-logistic ``scale_h * (pi/shape) / sin(pi/shape)``.
        """
        k, scale = self.shape, self.scale_h
        if self.family == "weibull":
            return scale * math.gamma(1.0 + 1.0 / k)
        if self.family == "exponential":
            return scale
        if self.family == "lognormal":
            return scale * math.exp(k * k / 2.0)
        return scale * _loglogistic_ratio(k)

    @property
    def median_h(self) -> float:
        """Median of the lifetime, hours (``scale_h`` for log-normal and log-logistic)."""
        if self.family == "weibull":
            return float(self.scale_h * math.log(2.0) ** (1.0 / self.shape))
        if self.family == "exponential":
            return self.scale_h * math.log(2.0)
        return self.scale_h

    def params(self) -> dict[str, float]:
        """Return the law's parameters under lifelines' names (hours).

        ``weibull``: ``lambda_``, ``rho_``; ``exponential``: ``lambda_`` (the mean);
        ``lognormal``: ``mu_``, ``sigma_``; ``loglogistic``: ``alpha_``, ``beta_``.
        """
        if self.family == "weibull":
            return {"lambda_": self.scale_h, "rho_": self.shape}
        if self.family == "exponential":
            return {"lambda_": self.scale_h}
        if self.family == "lognormal":
            return {"mu_": math.log(self.scale_h), "sigma_": self.shape}
        return {"alpha_": self.scale_h, "beta_": self.shape}

    def as_family(self, family: str) -> ClassSpec:
        """Return this class drawn from ``family``, with the same mean and (but exponential) median.

        ============  ===========================================================
        family        parameters from this law's mean ``m`` and median ``q``
        ============  ===========================================================
        weibull       ``k`` solves ``gamma(1 + 1/k) / ln(2)**(1/k) = m/q``;
                      ``lambda = q / ln(2)**(1/k)``
        exponential   mean ``m`` (its median is ``m ln 2``, not ``q``)
        lognormal     ``sigma = sqrt(2 ln(m/q))``, ``mu = ln q``
        loglogistic   ``b > 1`` solves ``(pi/b) / sin(pi/b) = m/q``; ``alpha = q``
        ============  ===========================================================

        Raises
        ------
        ValueError
            An unknown family, or a target other than the exponential when this law's mean is
            not above its median (a Weibull with shape above about 3.44): the log-normal and
            the log-logistic always have ``m > q``.
        """
        if family not in FAMILIES:
            msg = f"unknown lifetime family {family!r}; use one of {', '.join(FAMILIES)}."
            raise ValueError(msg)
        if family == self.family:
            return self
        mean, median = self.mtbf_h, self.median_h
        if family == "exponential":
            return replace(self, shape=1.0, scale_h=mean, family=family)
        ratio = mean / median
        if not ratio > 1.0 + 1e-12:
            msg = (
                f"a {self.family} law with mean {mean:.6g} h not above its median {median:.6g} h "
                f"has no {family} of the same mean and median; keep it or use exponential."
            )
            raise ValueError(msg)
        if family == "lognormal":
            sigma = math.sqrt(2.0 * math.log(ratio))
            return replace(self, shape=sigma, scale_h=median, family=family)
        if family == "loglogistic":
            beta = math.pi / _solve_increasing(lambda x: x / math.sin(x), ratio, 0.0, math.pi)
            return replace(self, shape=beta, scale_h=median, family=family)
        # the ratio falls below 1 for 1/k < 0.2 (its minimum is near 0.13), then rises
        k = 1.0 / _solve_increasing(_weibull_ratio_of_inverse_shape, ratio, 0.2, 50.0)
        return replace(self, shape=k, scale_h=median / math.log(2.0) ** (1.0 / k), family=family)


def _loglogistic_ratio(beta: float) -> float:
    """Mean over median of a log-logistic: ``(pi/beta) / sin(pi/beta)`` (``beta > 1``)."""
    x = math.pi / beta
    return x / math.sin(x)


def _weibull_ratio_of_inverse_shape(u: float) -> float:
    """Mean over median of a Weibull of shape ``1/u``: ``gamma(1 + u) / ln(2)**u``."""
    return float(math.gamma(1.0 + u) / math.log(2.0) ** u)


def _solve_increasing(f: Callable[[float], float], target: float, lo: float, hi: float) -> float:
    """``x`` in ``(lo, hi)`` with ``f(x) = target`` for ``f`` increasing there (bisection)."""
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        if f(mid) < target:
            lo = mid
        else:
            hi = mid
    return 0.5 * (lo + hi)


def default_classes() -> dict[str, ClassSpec]:
    """Return the default per-class lifetime laws.

    See :class:`SynthConfig` for the resulting counts.
    """
    return {
        "gpu": ClassSpec("gpu", 1.2, 75_000.0, 48.0),
        "gpu_memory": ClassSpec("gpu", 0.7, 140_000.0, 48.0),
        "nvlink": ClassSpec("gpu", 1.1, 105_000.0, 24.0),
        "pcie": ClassSpec("gpu", 1.3, 100_000.0, 12.0),
        "nic": ClassSpec("node", 1.0, 25_000.0, 6.0),
        "power": ClassSpec("node", 1.5, 30_000.0, 8.0),
        "host_memory": ClassSpec("node", 1.2, 30_000.0, 12.0),
    }


@dataclass(frozen=True)
class SynthConfig:
    """Everything that shapes a synthetic fleet; the same config and seed give the same bytes.

    Parameters
    ----------
    nodes, gpus_per_node
        Fleet size. Nodes are named ``gpu0001``...; GPU slots ``gpu0``... (at most 16 per node).
    days
        Length of the observation window ``[W0, W1)``; ``W0 = start``.
    seed
        Seed of ``numpy.random.default_rng``.
    start
        Window start ``W0``: a timezone-aware UTC datetime at midnight.
    classes
        Per-class lifetime laws (:class:`ClassSpec`). Defaults (shape, scale, median repair):

        ============  =====  =====  ===========  ============
        class         level  shape  scale_h      repair (h)
        ============  =====  =====  ===========  ============
        gpu           gpu    1.2    75,000       48
        gpu_memory    gpu    0.7    140,000      48
        nvlink        gpu    1.1    105,000      24
        pcie          gpu    1.3    100,000      12
        nic           node   1.0    25,000       6
        power         node   1.5    30,000       8
        host_memory   node   1.2    30,000       12
        ============  =====  =====  ===========  ============

        With the default fleet (256 nodes x 8 GPUs, 90 days, batches installed about 400 and
        120 days before the window) this gives roughly 200 failures in the window, spread over
        every class (gpu_memory, with infant mortality, the most).

        Every default law is a Weibull. :meth:`with_families` (``relia synth --family
        CLASS=FAMILY``) draws a class from another family at the same mean (MTBF) and median
        (:meth:`ClassSpec.as_family`); for the defaults that gives:

        ============  ========  ==========  =========  ===========  ===========
        class         mean (h)  median (h)  lognormal  loglogistic  exponential
                                            sigma      beta         mean (h)
        ============  ========  ==========  =========  ===========  ===========
        gpu           70,549    55,261      0.699      2.661        70,549
        gpu_memory    177,215   82,935      1.232      1.595        177,215
        nvlink        101,316   75,246      0.771      2.424        101,316
        pcie          92,358    75,432      0.636      2.910        92,358
        nic           25,000    17,329      0.856      2.200        25,000
        power         27,082    23,497      0.533      3.452        27,082
        host_memory   28,220    22,104      0.699      2.661        28,220
        ============  ========  ==========  =========  ===========  ===========

        The log-normal's ``mu`` and the log-logistic's ``alpha`` are the log of the median and
        the median; the exponential keeps only the mean (its median is ``mean * ln 2``).
    repair_sigma
        Log-scale standard deviation of repair durations (at least 1 h is enforced).
    planned_replace_per_unit_year
        Rate of planned replacements (``planned_replace`` tickets, right-censoring) per unit.
    minor_tickets_per_node_year
        Rate of ``reseat`` / ``no_fault_found`` tickets (they end no life) per node.
    removed_fraction
        Share of nodes decommissioned during the window (at least one when ``nodes >= 8``).
    jobs_per_node_day
        Poisson job arrival rate per node and day.
    job_size_mix
        Probabilities of a 1-node job, a 2-8-node job and a large job (64, 128 or 256 nodes,
        capped at half the fleet so that the scheduler can always place it).
    job_duration_median_h, job_duration_sigma
        Lognormal work of a small job; large jobs use ``large_job_duration_median_h``.
    p_cancel, p_app_failure, p_oom, p_timeout, p_array
        Per-job probabilities of a user cancel, an application failure (``FAILED 1:0``), an
        out-of-memory kill (``OUT_OF_MEMORY 0:125``), a time limit below the work (``TIMEOUT``),
        and of an arrival being a job array of 2-10 one-node tasks.
    n_ambiguous
        Multi-node attempts deliberately hit by two failures of different classes on two of their
        nodes within the attribution interval (``deliberately_ambiguous`` in the truth).
    hostile
        Add malformed lines (counted in ``expected_quarantine``).
    noise_lines_per_host_day
        Unrelated kernel/journal lines per host and day.
    warning_xids_per_gpu_day, app_xids_per_gpu_day
        Rates of warning-only (63, 92) and application (13, 31, 43) Xid bursts per GPU and day.
    skewed_host_fraction, max_skew_s
        Share of hosts whose kernel-log clock is off by a constant up to ``max_skew_s`` seconds.
    k8s_share
        Share of single-run jobs (not arrays, not the deliberately ambiguous ones, never
        cancelled) run under Kubernetes instead of Slurm, as JobSets (even job ids) or Kubeflow
        PyTorchJobs (odd ones): they land as ``kubectl get pods/events -A -o json`` dumps, not in
        sacct. Default 0 (none).
    elastic_share
        Share of multi-node jobs (not arrays, not the ambiguous ones) run under ``torchrun``
        (PyTorch elastic): they land as agent logs, one per run and node. Default 0 (none).
    node_events
        Write Slurm node events (``sacctmgr show event --parsable2``): down/drain intervals for
        every failure, planned replacement, reseat and diagnosis. Default off.
    dcgm_interval_s
        Seconds between DCGM scrapes (dcgm-exporter text, one file per node and day); None
        writes none. At 30 s a 256-node, 90-day fleet would write about 80 GB, so keep it coarse
        (hours) or use ``bench.bench_dcgm`` for volume. Default None.

    precursor_share
        None (default) keeps the built-in DCGM precursors (single-bit ECC errors rise in the 12 h
        before every ``gpu_memory`` failure, NVLink CRC errors before every ``nvlink`` one). A
        share in [0, 1] replaces them by planted precursors (:mod:`synth.precursors`):
        each GPU-level failure gets one with this probability, the others and every node-level
        failure none. The signal follows the class (``gpu_memory``: rising single-bit ECC errors,
        row remaps and warning Xids 63/92; ``nvlink``: NVLink CRC bursts; ``pcie``: PCIe
        replays; ``gpu``: a temperature and power excursion) and ramps up over the lead time. A
        failure whose node is down (another unit in repair) during that time shows none. The
        ground truth marks each failure (``precursor``, ``precursor_lead_h``). 0 gives a fleet
        with background noise and no precursor at all.
    precursor_lead_h
        Lead times (hours from the precursor's onset to the failure) are uniform on this range.
    background_per_gpu_day
        With ``precursor_share`` set: rate of background episodes per GPU and day, falling at
        random and independent of failures, each one signal of the precursors' kinds (an ECC,
        row-remap, NVLink CRC, PCIe replay or temperature burst of 1-4 h, or a warning Xid
        burst) at lower intensity, so that a warning alone does not announce a failure.

    training_logs
        Write a training log (``training/slurm-<JobID>.out``, :mod:`synth.training`) for every
        Slurm job named like a training run and add ``job_goodput`` to the ground truth.
        Default off.
    training_step_s, training_log_interval_steps, training_checkpoint_interval_steps
        Per-job ``(low, high)`` ranges (uniform) of the step time (seconds; whole seconds for
        Megatron jobs, whose lines carry second-precision times), the steps between progress
        lines and the steps between checkpoint saves. The checkpoint interval is rounded up to a
        multiple of the log interval and is at least twice it.
    training_save_s
        Per-job range of the blocking checkpoint save time (seconds).
    training_startup_s, training_load_s, training_warmup_s
        Ranges of the first attempt's start-up (start to the first step), and of a later
        attempt's checkpoint load (start to the load's end) and warm-up (load end to the first
        step); drawn per attempt. Pin a range with ``low == high``.
    hazard_change_at_frac, hazard_change_factor
        From ``W0 + hazard_change_at_frac * days`` on, every class's failure hazard is multiplied
        by ``hazard_change_factor`` (exactly, for every family, by inverting the changed
        cumulative hazard of each latent lifetime). None (default) changes nothing.

    With ``k8s_share = elastic_share = 0``, ``node_events`` off, ``dcgm_interval_s`` and
    ``precursor_share`` None, ``training_logs`` off and ``hazard_change_at_frac`` None the
    generator writes the same bytes as it did before those sources existed.
    """

    nodes: int = 256
    gpus_per_node: int = 8
    days: int = 90
    seed: int = 0
    start: datetime = datetime(2026, 6, 1, tzinfo=UTC)
    classes: dict[str, ClassSpec] = field(default_factory=default_classes)
    repair_sigma: float = 0.5
    planned_replace_per_unit_year: float = 0.03
    minor_tickets_per_node_year: float = 0.2
    removed_fraction: float = 0.01
    jobs_per_node_day: float = 0.25
    job_size_mix: tuple[float, float, float] = (0.6, 0.385, 0.015)
    job_duration_median_h: float = 3.0
    job_duration_sigma: float = 1.2
    large_job_duration_median_h: float = 12.0
    p_cancel: float = 0.05
    p_app_failure: float = 0.03
    p_oom: float = 0.02
    p_timeout: float = 0.03
    p_array: float = 0.01
    n_ambiguous: int = 4
    hostile: bool = True
    noise_lines_per_host_day: float = 8.0
    warning_xids_per_gpu_day: float = 0.002
    app_xids_per_gpu_day: float = 0.001
    skewed_host_fraction: float = 0.3
    max_skew_s: int = 20
    k8s_share: float = 0.0
    elastic_share: float = 0.0
    node_events: bool = False
    dcgm_interval_s: int | None = None
    precursor_share: float | None = None
    precursor_lead_h: tuple[float, float] = (6.0, 20.0)
    background_per_gpu_day: float = 0.05
    training_logs: bool = False
    training_step_s: tuple[float, float] = (1.0, 12.0)
    training_log_interval_steps: tuple[int, int] = (10, 100)
    training_checkpoint_interval_steps: tuple[int, int] = (200, 2000)
    training_save_s: tuple[float, float] = (5.0, 120.0)
    training_startup_s: tuple[float, float] = (60.0, 600.0)
    training_load_s: tuple[float, float] = (20.0, 300.0)
    training_warmup_s: tuple[float, float] = (10.0, 120.0)
    hazard_change_at_frac: float | None = None
    hazard_change_factor: float = 1.0

    def __post_init__(self) -> None:
        """Check the configuration and fail with a hint on what to change."""
        _check_config(self)

    @property
    def window_start_s(self) -> int:
        """``W0`` in epoch seconds."""
        return int(self.start.timestamp())

    @property
    def window_end_s(self) -> int:
        """``W1`` in epoch seconds."""
        return self.window_start_s + self.days * 86_400

    @property
    def more_telemetry(self) -> bool:
        """True when any of the Kubernetes, torchrun, node-event or DCGM sources is on."""
        return bool(
            self.k8s_share or self.elastic_share or self.node_events or self.dcgm_interval_s
        )

    def with_families(self, families: Mapping[str, str]) -> SynthConfig:
        """Return this config with classes drawn from other lifetime families, same mean and median.

        Parameters
        ----------
        families
            ``{class: family}``; the key ``"all"`` names every class (a class named beside it
            wins). Families: ``weibull``, ``exponential``, ``lognormal``, ``loglogistic``. Each
            named class's law is converted by :meth:`ClassSpec.as_family` (the table above).

        Raises
        ------
        ValueError
            An unknown class or family (the message lists the known ones), or a conversion
            :meth:`ClassSpec.as_family` refuses.
        """
        chosen = {name: families["all"] for name in self.classes} if "all" in families else {}
        for name, family in families.items():
            if name == "all":
                continue
            if name not in self.classes:
                msg = f"unknown class {name!r}; use one of {', '.join(self.classes)} or 'all'."
                raise ValueError(msg)
            chosen[name] = family
        classes = dict(self.classes)
        for name, family in chosen.items():
            if family not in FAMILIES:
                msg = f"unknown lifetime family {family!r}; use one of {', '.join(FAMILIES)}."
                raise ValueError(msg)
            classes[name] = classes[name].as_family(family)
        return replace(self, classes=classes)

    def to_params(self) -> dict[str, Any]:
        """Return the configuration as JSON-ready ``params`` for the ground truth.

        The switches of the later sources (``k8s_share``...) appear only when one is on, so a
        configuration without them keeps the params it always had.
        """
        params = asdict(self)
        if not self.more_telemetry:
            for name in _MORE_TELEMETRY:
                params.pop(name)
        if self.precursor_share is None:
            for name in _PRECURSORS:
                params.pop(name)
        else:
            params["precursor_lead_h"] = list(self.precursor_lead_h)
        if not self.training_logs:
            for name in _TRAINING:
                params.pop(name)
        else:
            for name in _TRAINING[1:]:
                params[name] = list(params[name])
        if self.hazard_change_at_frac is None:
            for name in _HAZARD_CHANGE:
                params.pop(name)
        params["start"] = self.start.strftime("%Y-%m-%dT%H:%M:%SZ")
        params["job_size_mix"] = list(self.job_size_mix)
        params["classes"] = {name: _class_params(spec) for name, spec in self.classes.items()}
        return params


def _class_params(spec: ClassSpec) -> dict[str, Any]:
    """Return a class's law for ``params``.

    Weibull classes as always; others add family and params.
    """
    out: dict[str, Any] = {
        "level": spec.level,
        "weibull_shape": spec.shape,
        "weibull_scale_h": spec.scale_h,
        "repair_median_h": spec.repair_median_h,
    }
    if spec.family != "weibull":
        out |= {"weibull_shape": None, "weibull_scale_h": None}
        out |= {"family": spec.family, "params": spec.params()}
    return out


_MORE_TELEMETRY = ("k8s_share", "elastic_share", "node_events", "dcgm_interval_s")
_PRECURSORS = ("precursor_share", "precursor_lead_h", "background_per_gpu_day")
_TRAINING = (
    "training_logs",
    "training_step_s",
    "training_log_interval_steps",
    "training_checkpoint_interval_steps",
    "training_save_s",
    "training_startup_s",
    "training_load_s",
    "training_warmup_s",
)
_HAZARD_CHANGE = ("hazard_change_at_frac", "hazard_change_factor")


def _check_config(config: SynthConfig) -> None:
    if config.nodes < 1:
        msg = f"nodes must be at least 1, got {config.nodes}; pass nodes=1 or more."
        raise ValueError(msg)
    if not 1 <= config.gpus_per_node <= 16:
        msg = f"gpus_per_node must be between 1 and 16, got {config.gpus_per_node}."
        raise ValueError(msg)
    if config.days < 1:
        msg = f"days must be at least 1, got {config.days}; the window needs one whole day."
        raise ValueError(msg)
    start = config.start
    if start.tzinfo is None or start.utcoffset() != UTC.utcoffset(None):
        msg = "start must be timezone-aware UTC; pass e.g. datetime(2026, 6, 1, tzinfo=UTC)."
        raise ValueError(msg)
    if (start.hour, start.minute, start.second, start.microsecond) != (0, 0, 0, 0):
        msg = (
            f"start must be a midnight (the window is inferred from snapshots floored to "
            f"midnight), got {start.isoformat()}; pass start.replace(hour=0, minute=0, ...)."
        )
        raise ValueError(msg)
    if not config.classes:
        msg = "classes is empty; pass at least one ClassSpec or use default_classes()."
        raise ValueError(msg)
    for name, spec in config.classes.items():
        if spec.level == "gpu" and name not in GPU_CLASSES:
            msg = f"GPU-level class {name!r} has no Xid code; use one of {', '.join(GPU_CLASSES)}."
            raise ValueError(msg)
        if spec.level == "node" and name not in NODE_CLASSES:
            msg = f"node-level class {name!r} is unknown; use one of {', '.join(NODE_CLASSES)}."
            raise ValueError(msg)
        if spec.level not in ("gpu", "node"):
            msg = f"class {name!r} has level {spec.level!r}; use 'gpu' or 'node'."
            raise ValueError(msg)
        if min(spec.shape, spec.scale_h, spec.repair_median_h) <= 0:
            msg = f"class {name!r} needs positive shape, scale_h and repair_median_h: {spec}."
            raise ValueError(msg)
    if not any(spec.level == "gpu" for spec in config.classes.values()):
        msg = "classes holds no GPU-level class; keep at least one of gpu, gpu_memory, ..."
        raise ValueError(msg)
    mix = config.job_size_mix
    if len(mix) != 3 or min(mix) < 0 or not math.isclose(sum(mix), 1.0, abs_tol=1e-9):
        msg = f"job_size_mix must be three probabilities summing to 1, got {mix}."
        raise ValueError(msg)
    probs = (config.p_cancel, config.p_app_failure, config.p_oom, config.p_timeout)
    if min(probs) < 0 or sum(probs) > 1 or not 0 <= config.p_array <= 1:
        msg = "p_cancel + p_app_failure + p_oom + p_timeout must lie in [0, 1]; lower them."
        raise ValueError(msg)
    if config.n_ambiguous < 0 or config.max_skew_s < 0:
        msg = "n_ambiguous and max_skew_s must not be negative."
        raise ValueError(msg)
    shares = (config.k8s_share, config.elastic_share)
    if min(shares) < 0 or sum(shares) > 1:
        msg = "k8s_share and elastic_share must be shares in [0, 1] summing to 1 at most."
        raise ValueError(msg)
    if config.dcgm_interval_s is not None and not 1 <= config.dcgm_interval_s <= 86_400:
        msg = (
            f"dcgm_interval_s must be between 1 and 86400 seconds (or None for no DCGM), got "
            f"{config.dcgm_interval_s}."
        )
        raise ValueError(msg)
    if config.precursor_share is not None:
        lo, hi = config.precursor_lead_h
        if not 0 <= config.precursor_share <= 1:
            msg = f"precursor_share must be in [0, 1] or None, got {config.precursor_share}."
            raise ValueError(msg)
        if not 1 <= lo <= hi:
            msg = (
                f"precursor_lead_h must be (low, high) hours with 1 <= low <= high, got "
                f"{config.precursor_lead_h}."
            )
            raise ValueError(msg)
        if config.background_per_gpu_day < 0:
            msg = "background_per_gpu_day must not be negative; pass 0 for no background noise."
            raise ValueError(msg)
    _check_training(config)


def _check_training(config: SynthConfig) -> None:
    for name in _TRAINING[1:]:
        lo, hi = getattr(config, name)
        if not 0 < lo <= hi:
            msg = f"{name} must be (low, high) with 0 < low <= high, got {getattr(config, name)}."
            raise ValueError(msg)
    for name in ("training_log_interval_steps", "training_checkpoint_interval_steps"):
        lo, hi = getattr(config, name)
        if int(lo) != lo or int(hi) != hi:
            msg = f"{name} must be whole steps, got {getattr(config, name)}."
            raise ValueError(msg)
    frac = config.hazard_change_at_frac
    if frac is not None and not 0 <= frac <= 1:
        msg = f"hazard_change_at_frac must be in [0, 1] or None, got {frac}."
        raise ValueError(msg)
    if not config.hazard_change_factor > 0:
        msg = f"hazard_change_factor must be positive, got {config.hazard_change_factor}."
        raise ValueError(msg)
