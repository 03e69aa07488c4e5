"""Configuration of the synthetic fleet: component classes, fleet shape and workload knobs."""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from typing import Any

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


@dataclass(frozen=True)
class ClassSpec:
    """Lifetime law and repair time of one component class.

    Parameters
    ----------
    level
        ``"gpu"`` (one unit per GPU slot) or ``"node"`` (one unit per node).
    shape
        Weibull shape ``k`` (below 1: infant mortality; above 1: wear-out).
    scale_h
        Weibull scale ``lambda`` in hours.
    repair_median_h
        Median of the lognormal time from failure (ticket opened) to the new unit's installation
        (ticket closed), in hours.
    """

    level: str
    shape: float
    scale_h: float
    repair_median_h: float

    @property
    def mtbf_h(self) -> float:
        """Mean of the Weibull lifetime, ``scale_h * gamma(1 + 1/shape)``."""
        return self.scale_h * math.gamma(1.0 + 1.0 / self.shape)


def default_classes() -> dict[str, ClassSpec]:
    """The default per-class lifetime laws (see :class:`SynthConfig` for the resulting counts)."""
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
        share in [0, 1] replaces them by planted precursors (:mod:`pipelines.synth.precursors`):
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

    With ``k8s_share = elastic_share = 0``, ``node_events`` off, ``dcgm_interval_s`` and
    ``precursor_share`` None the generator writes the same bytes as it did before those sources
    existed.
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

    def to_params(self) -> dict[str, Any]:
        """The configuration as JSON-ready ``params`` for the ground truth.

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
        params["start"] = self.start.strftime("%Y-%m-%dT%H:%M:%SZ")
        params["job_size_mix"] = list(self.job_size_mix)
        params["classes"] = {
            name: {
                "level": spec.level,
                "weibull_shape": spec.shape,
                "weibull_scale_h": spec.scale_h,
                "repair_median_h": spec.repair_median_h,
            }
            for name, spec in self.classes.items()
        }
        return params


_MORE_TELEMETRY = ("k8s_share", "elastic_share", "node_events", "dcgm_interval_s")
_PRECURSORS = ("precursor_share", "precursor_lead_h", "background_per_gpu_day")


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
