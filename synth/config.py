"""Configuration of the synthetic fleet: fleet shape, workload knobs and the failure model.

The component classes (laws, fix kinds, non-hardware processes) live in :mod:`synth.classes`
and are re-exported here.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field, replace
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from synth.classes import (
    APPLICATION_XIDS,
    DEFAULT_FIXES,
    DRIVER_XIDS,
    FAILURE_XIDS,
    FAMILIES,
    FIX_KINDS,
    FIX_REPAIR_MEDIAN_H,
    GPU_CLASSES,
    LLAMA3_NODE_H,
    MIN_REPAIR_S,
    NODE_CLASSES,
    NON_HARDWARE_CLASSES,
    RECOVER,
    WARNING_XIDS,
    XID_CLASS,
    ClassSpec,
    InterruptionSpec,
    check_fixes,
    default_classes,
    default_non_hardware,
)

if TYPE_CHECKING:
    from collections.abc import Mapping

__all__ = [
    "APPLICATION_XIDS",
    "DEFAULT_FIXES",
    "DRIVER_XIDS",
    "FAILURE_XIDS",
    "FAMILIES",
    "FIX_KINDS",
    "FIX_REPAIR_MEDIAN_H",
    "GPU_CLASSES",
    "LLAMA3_NODE_H",
    "MIN_REPAIR_S",
    "NODE_CLASSES",
    "NON_HARDWARE_CLASSES",
    "RECOVER",
    "WARNING_XIDS",
    "XID_CLASS",
    "ClassSpec",
    "InterruptionSpec",
    "SynthConfig",
    "default_classes",
    "default_non_hardware",
]


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
        120 days before the window) this gives roughly 250 hardware failures in the window
        (about 20 of them of bad units), spread over every class (gpu_memory, with infant
        mortality, the most), about a third of them replacements, and some 25 non-hardware
        interruptions (seed 0: 252 failures, 83 replacements, 22 interruptions).

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

        Each failure is fixed by one of ``replace`` (a repair ticket, a new serial in the later
        nvidia-smi snapshots), ``reset`` (a GPU reset), ``reboot`` (a node reboot) or
        ``reseat`` (the part re-seated, the node powered off); every fix renews the unit (as
        good as new), only ``replace`` writes a ticket. Default shares
        (:data:`DEFAULT_FIXES`; :meth:`with_fixes`, ``relia synth --fixes``):

        ============  =======  =====  ======  ======
        class         replace  reset  reboot  reseat
        ============  =======  =====  ======  ======
        gpu           0.30     0.40   0.25    0.05
        gpu_memory    0.25     0.60   0.15    0
        nvlink        0.25     0.45   0.15    0.15
        pcie          0.30     0      0.40    0.30
        gpu_sram      0.20     0.60   0.20    0
        gsp           0.10     0.50   0.40    0
        nic           0.40     0      0.30    0.30
        power         0.60     0      0.10    0.30
        host_memory   0.50     0      0.40    0.10
        storage       0.50     0      0.40    0.10
        host_cpu      0.30     0      0.70    0
        chassis       0.40     0      0.40    0.20
        ============  =======  =====  ======  ======

        A GPU that stopped (Xid 62, uncorrectable ECC with a row remap pending, NVLink, GSP
        timeouts) is most often brought back by a reset (NVIDIA's resolution buckets
        RESET_GPU); one fallen off the bus needs the node rebooted (RESTART_BM) or re-seated;
        node parts (PSU, DIMM, SSD) are replaced more often. Over the default fleet's mix about
        30 % of failures replace a part.
    fix_repair_median_h
        Median repair time (hours) of ``reset`` (0.25), ``reboot`` (1) and ``reseat`` (4);
        lognormal with ``repair_sigma``, at least 2 min, 15 min and 1 h.
    bad_unit_share, bad_unit_factor
        Each unit installed with the fleet is a bad unit (a repeat offender) with probability
        ``bad_unit_share`` (default 0.03): every hazard of it is ``bad_unit_factor`` (default
        10) times its class's, through every reset, reboot or reseat, until a replacement (or a
        planned one) puts a normal unit in.
    non_hardware
        Non-hardware interruptions (:class:`InterruptionSpec` per class ``software``,
        ``driver``, ``nccl``, ``network``, ``maintenance``): a Poisson process per node that
        stops the job on the node (sacct ``FAILED``; unplanned maintenance ``NODE_FAIL``),
        drains it with a reason an operator or a health check writes, and resumes it after the
        recovery. Defaults: :func:`default_non_hardware` (Llama 3's per-node rates, about 30
        interruptions in the default fleet). ``{}`` switches them off.
    installed_in_window_share
        Share of nodes (the batch ``b3``) installed during the window (default 0.04).
    smi_text_share, smi_no_serial_share
        Share of nodes whose inventory snapshots are ``nvidia-smi -q`` text dumps
        (``<host>__<stamp>Z.txt``) instead of the query CSV, and share of GPU boards that print
        no serial (``[N/A]`` in the CSV, ``N/A`` in a dump; repair tickets still name the
        board's serial). Both default to 0 (every snapshot a CSV with serials, files unchanged);
        drawn from a generator of their own, so turning them on changes no other file.
    sacct_format, sacct_json_version
        The shape of every daily sacct dump (:mod:`synth.sacct_variants`): None (default) the
        reference ``--parsable2`` dumps with every third one in a site's ``;`` format;
        ``"no_jobidraw"`` ``--parsable2`` without the JobIDRaw column (array tasks known only as
        ``<id>_<task>``); ``"json"`` ``sacct --json`` documents ``sacct_<day>.json`` in the shape of
        data_parser ``sacct_json_version`` (``"v0.0.37"``: Slurm 21.08/22.05, ``"v0.0.39"``:
        23.02/23.11, ``"v0.0.41"`` (default): 24.05/24.11). Both also print the pending remainder
        of arrays (``<id>_[4-7]``, ``PENDING``) in each day's dump. The truth then holds
        ``slurm_dumps`` (what was written, the keys the warehouse gives the jobs).
    sacct_het_share
        Share of the multi-node Slurm jobs that ran once, uninterrupted, written as heterogeneous
        jobs of two components (``<id>+0``, ``<id>+1``; listed in ``slurm_dumps.het_jobs``).
        Default 0. Neither knob moves any other draw.
    preset
        The preset this config came from (:mod:`synth.presets`, e.g. ``"llama3"``; None for
        none): the ground truth then adds the preset's published figures.
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
    elastic_torch
        The torch version the agent logs are written as: None (default) draws, per run, the
        torch 2.0-2.2 ``[time] logger: [LEVEL]`` or the torchelastic 0.2 ``[LEVEL] time logger:``
        prefix; ``"1.12"`` writes torch 1.10-1.13 under Python's default format
        (``INFO:<logger>:<message>``, no time) with ``Received 15 death signal``; ``"2.5"`` the
        torch >= 2.5 wording (``Closing process N via signal SIGTERM``, ``Received 15 death
        signal``) in the ``[time] logger: [LEVEL]`` prefix. The truth names it
        (``elastic_torch``); it appears in ``params`` only when set.
    node_events
        Write Slurm node events (``sacctmgr show event --parsable2``): down/drain intervals for
        every failure and interruption, planned replacement, reseat and diagnosis
        (:mod:`synth.node_events`). Default on: slurmctld records them by itself on every real
        Slurm cluster, and they are the telemetry of node-level failures.
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
    training_step_jitter
        With ``training_logs`` on: the sigma of a lognormal multiplicative noise (median 1) on
        every step of the Slurm jobs' logs, drawn per step from each attempt's own generator
        (``[seed, 0x717E, job id, attempt]``): a step takes ``max(1, round(step_ms x M x J))``
        ms. Real step times jitter; the truth's ledger follows the jittered timeline, its
        ``slow_s`` stays ``step_ms x (M - 1)`` per step (the step without its noise). Default 0
        (exact steps).
    training_log_only_jobs
        With ``training_logs`` on: write this many more training logs whose jobs have no
        scheduler record (:mod:`synth.training_logonly`): even ones a requeued job's
        ``slurm-<id>.out``, odd ones an appended output holding two jobs; the truth's
        ``log_only_jobs`` says which. Default 0 (none).
    slow_rate_per_gpu_hour
        Fail-slow episodes (:mod:`synth.failslow`): their arrival rate per GPU-hour, a Poisson
        process per unit over the window. 0 (default) writes none; a positive rate needs
        ``training_logs`` on (the step timelines carry the slowdown). With ``slow_unit = "node"``
        a node's rate is this rate times ``gpus_per_node``.
    slow_duration_s
        ``(median, sigma)`` of the lognormal episode duration (seconds; rounded to whole
        seconds, at least 1).
    slow_factor
        ``(median, sigma)`` of the lognormal law of ``S - 1``, ``S`` the episode's slowdown of
        its unit's compute (a step started while the unit is slow takes ``S`` times as long).
    slow_unit
        ``"gpu"`` (default: one GPU is slow) or ``"node"`` (every GPU of a node).
    slow_dcgm_share
        Share of episodes that leave a DCGM signature: clock-event reason bits drawn from
        ``slow_dcgm_reasons`` and the SM clock divided by ``S`` on the slow GPU(s) while the
        episode lasts; the others are silent. The DCGM clock fields
        (``DCGM_FI_DEV_SM_CLOCK``, ``DCGM_FI_DEV_CLOCK_THROTTLE_REASONS``) are written whenever
        fail-slow is on and DCGM is written.
    slow_dcgm_reasons
        Bitmasks a signature is drawn from (uniformly): 0x4 SW power cap, 0x8 HW slowdown,
        0x40 HW thermal, 0x80 HW power brake, 0x88 HW slowdown with power brake.
    straggler_lines
        None (default), ``"megatron"`` (Megatron-Core ``StragglerDetector`` lines after every
        progress line of a Megatron log) or ``"nvrx"`` (NVIDIA resiliency extension reports
        every ``straggler_report_s`` seconds of a Megatron log); torchtitan logs get none.
    straggler_report_s
        Seconds between NVRx reports (NeMo's default 300).
    slow_preset
        The named fail-slow knob set the config came from (:data:`synth.failslow.SLOW_PRESETS`,
        ``"published"``), or None; the truth's ``slow_laws`` names it.
    hazard_change_at_frac, hazard_change_factor
        From ``W0 + hazard_change_at_frac * days`` on, every class's failure hazard is multiplied
        by ``hazard_change_factor`` (exactly, for every family, by inverting the changed
        cumulative hazard of each latent lifetime). None (default) changes nothing.

    With ``k8s_share = elastic_share = 0``, ``node_events`` off, ``dcgm_interval_s`` and
    ``precursor_share`` None, ``training_logs`` off, ``hazard_change_at_frac`` None, every fix
    ``replace`` (``with_fixes({"all": {"replace": 1.0}})``), ``bad_unit_share = 0`` and
    ``non_hardware = {}``, ``slow_rate_per_gpu_hour = 0`` the generator writes the same bytes as it
    did before those existed.
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
    elastic_torch: str | None = None
    node_events: bool = True
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
    training_log_only_jobs: int = 0
    training_step_jitter: float = 0.0
    slow_rate_per_gpu_hour: float = 0.0
    slow_duration_s: tuple[float, float] = (1470.0, 1.37)
    slow_factor: tuple[float, float] = (0.1, 1.0)
    slow_unit: str = "gpu"
    slow_dcgm_share: float = 0.0
    slow_dcgm_reasons: tuple[int, ...] = (0x4, 0x8, 0x40, 0x80, 0x88)
    straggler_lines: str | None = None
    straggler_report_s: int = 300
    slow_preset: str | None = None
    hazard_change_at_frac: float | None = None
    hazard_change_factor: float = 1.0
    fix_repair_median_h: dict[str, float] = field(default_factory=lambda: dict(FIX_REPAIR_MEDIAN_H))
    bad_unit_share: float = 0.03
    bad_unit_factor: float = 10.0
    non_hardware: dict[str, InterruptionSpec] = field(default_factory=default_non_hardware)
    installed_in_window_share: float = 0.04
    preset: str | None = None
    smi_text_share: float = 0.0
    smi_no_serial_share: float = 0.0
    sacct_format: str | None = None
    sacct_json_version: str = "v0.0.41"
    sacct_het_share: float = 0.0

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

    @property
    def fleet_classes(self) -> dict[str, ClassSpec]:
        """Every class the fleet simulates: the hardware ones, then the non-hardware ones.

        The hardware ``classes``, then each non-hardware class with a positive rate as a
        node-level exponential (:meth:`InterruptionSpec.as_class`).
        """
        extra = {n: s.as_class() for n, s in self.non_hardware.items() if s.rate_per_node_h > 0}
        return {**self.classes, **extra}

    def fixes_of(self, name: str) -> dict[str, float]:
        """Shares of the fix kinds of class ``name`` (``{"recover": 1.0}`` for a non-hardware one).

        The class's own ``fixes``, else :data:`DEFAULT_FIXES`, else ``replace`` only.
        """
        if name in self.non_hardware:
            return {RECOVER: 1.0}
        spec = self.classes[name]
        if spec.fixes is not None:
            return dict(spec.fixes)
        return dict(DEFAULT_FIXES.get(name, {"replace": 1.0}))

    def with_fixes(self, fixes: Mapping[str, Mapping[str, float]]) -> SynthConfig:
        """Return this config with other fix shares for the named classes.

        Parameters
        ----------
        fixes
            ``{class: {fix: share}}`` with fixes ``replace``, ``reset``, ``reboot``, ``reseat``
            (shares summing to 1; no ``reset`` at node level). The key ``"all"`` names every
            hardware class (a class named beside it wins); a GPU reset given to ``all`` goes to
            ``reboot`` at node level.

        Raises
        ------
        ValueError
            An unknown class or fix, or shares that do not sum to 1.
        """
        chosen: dict[str, Mapping[str, float]] = {}
        if "all" in fixes:
            for name, spec in self.classes.items():
                every = dict(fixes["all"])
                if spec.level == "node" and every.get("reset"):
                    every["reboot"] = every.get("reboot", 0.0) + every.pop("reset")
                chosen[name] = every
        for name, shares in fixes.items():
            if name == "all":
                continue
            if name not in self.classes:
                msg = (
                    f"unknown hardware class {name!r}; use one of {', '.join(self.classes)} "
                    "or 'all'."
                )
                raise ValueError(msg)
            chosen[name] = dict(shares)
        classes = {
            name: replace(spec, fixes=chosen[name]) if name in chosen else spec
            for name, spec in self.classes.items()
        }
        return replace(self, classes=classes)

    def with_non_hardware(self, rates_per_node_h: Mapping[str, float]) -> SynthConfig:
        """Return this config with other rates (per node-hour) for the named non-hardware classes.

        A class not configured yet takes the default recovery of :func:`default_non_hardware`;
        a rate of 0 switches a class off.

        Raises
        ------
        ValueError
            An unknown class (the message lists ``software, driver, nccl, network,
            maintenance``) or a negative rate.
        """
        defaults = default_non_hardware()
        specs = dict(self.non_hardware)
        for name, rate in rates_per_node_h.items():
            if name not in NON_HARDWARE_CLASSES:
                msg = (
                    f"unknown non-hardware class {name!r}; use one of "
                    f"{', '.join(NON_HARDWARE_CLASSES)}."
                )
                raise ValueError(msg)
            recovery = specs.get(name, defaults[name]).recovery_median_h
            specs[name] = InterruptionSpec(float(rate), recovery)
        return replace(self, non_hardware=specs)

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
        if not self.training_log_only_jobs:
            params.pop("training_log_only_jobs")
        if not self.training_step_jitter:
            params.pop("training_step_jitter")
        if not self.training_logs:
            for name in _TRAINING:
                params.pop(name)
        else:
            for name in _TRAINING[1:]:
                params[name] = list(params[name])
        if self.hazard_change_at_frac is None:
            for name in _HAZARD_CHANGE:
                params.pop(name)
        if not self.slow_rate_per_gpu_hour:
            for name in SLOW_KNOBS:
                params.pop(name)
        else:
            for name in ("slow_duration_s", "slow_factor", "slow_dcgm_reasons"):
                params[name] = list(params[name])
        if self.preset is None:
            params.pop("preset")
        if not (self.smi_text_share or self.smi_no_serial_share):
            for name in _SMI_FORMATS:
                params.pop(name)
        if self.elastic_torch is None:
            params.pop("elastic_torch")
        if self.sacct_format is None and not self.sacct_het_share:
            for name in _SACCT_SHAPES:
                params.pop(name)
        elif self.sacct_format != "json":
            params.pop("sacct_json_version")
        params["start"] = self.start.strftime("%Y-%m-%dT%H:%M:%SZ")
        params["job_size_mix"] = list(self.job_size_mix)
        params["classes"] = {
            name: _class_params(spec, self.fixes_of(name)) for name, spec in self.classes.items()
        }
        return params


def _class_params(spec: ClassSpec, fixes: dict[str, float]) -> dict[str, Any]:
    """Return a class's law for ``params``.

    Weibull classes as always; others add family and params; every class its fix shares.
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
    out["fixes"] = fixes
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
ELASTIC_TORCH_VERSIONS = (None, "1.12", "2.5")
"""Torch versions the agent logs can be written as (:attr:`SynthConfig.elastic_torch`)."""
_HAZARD_CHANGE = ("hazard_change_at_frac", "hazard_change_factor")
SLOW_KNOBS = (
    "slow_rate_per_gpu_hour",
    "slow_duration_s",
    "slow_factor",
    "slow_unit",
    "slow_dcgm_share",
    "slow_dcgm_reasons",
    "straggler_lines",
    "straggler_report_s",
    "slow_preset",
)
"""The fail-slow knobs (:mod:`synth.failslow`); in ``params`` only when the rate is positive."""
STRAGGLER_LINES = (None, "megatron", "nvrx")
"""Straggler reports the Megatron logs can carry (:attr:`SynthConfig.straggler_lines`)."""
_SMI_FORMATS = ("smi_text_share", "smi_no_serial_share")
_SACCT_SHAPES = ("sacct_format", "sacct_json_version", "sacct_het_share")
SACCT_FORMATS = (None, "no_jobidraw", "json")
"""Shapes the sacct dumps can be written in (:attr:`SynthConfig.sacct_format`)."""
SACCT_JSON_VERSIONS = ("v0.0.37", "v0.0.39", "v0.0.41")
"""data_parser versions of the ``json`` dumps (:attr:`SynthConfig.sacct_json_version`)."""


def _check_config(config: SynthConfig) -> None:
    if config.nodes < 1:
        msg = f"nodes must be at least 1, got {config.nodes}; pass nodes=1 or more."
        raise ValueError(msg)
    if config.elastic_torch not in ELASTIC_TORCH_VERSIONS:
        msg = f"elastic_torch must be None, '1.12' or '2.5', got {config.elastic_torch!r}."
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
    _check_classes(config)
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
    _check_telemetry(config)
    _check_training(config)
    _check_slow(config)
    _check_failure_model(config)


def _check_classes(config: SynthConfig) -> None:
    """Check the hardware classes: known at their level, positive laws, one GPU class at least."""
    if not config.classes:
        msg = "classes is empty; pass at least one ClassSpec or use default_classes()."
        raise ValueError(msg)
    clash = sorted(set(config.classes) & set(NON_HARDWARE_CLASSES))
    if clash:
        msg = (
            f"{clash[0]!r} is a non-hardware class: give its rate in non_hardware "
            "(InterruptionSpec), not in classes."
        )
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


def _check_telemetry(config: SynthConfig) -> None:
    """Check the Kubernetes and torchrun shares, the DCGM interval and the precursors."""
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


def _check_failure_model(config: SynthConfig) -> None:
    """Fix shares of every class, bad units, non-hardware classes and the late batch."""
    for name, spec in config.classes.items():
        check_fixes(spec.level, config.fixes_of(name))
    unknown = sorted(set(config.fix_repair_median_h) ^ set(FIX_REPAIR_MEDIAN_H))
    medians = list(config.fix_repair_median_h.values())
    if unknown or min(medians) <= 0:
        msg = (
            f"fix_repair_median_h needs a positive median for each of reset, reboot and reseat "
            f"(hours), got {config.fix_repair_median_h}."
        )
        raise ValueError(msg)
    if not 0 <= config.bad_unit_share < 1 or not config.bad_unit_factor >= 1:
        msg = (
            f"bad_unit_share must be in [0, 1) and bad_unit_factor at least 1, got "
            f"{config.bad_unit_share} and {config.bad_unit_factor}."
        )
        raise ValueError(msg)
    for name in config.non_hardware:
        if name not in NON_HARDWARE_CLASSES:
            msg = (
                f"unknown non-hardware class {name!r}; use one of "
                f"{', '.join(NON_HARDWARE_CLASSES)}."
            )
            raise ValueError(msg)
    if config.preset not in (None, "llama3"):
        msg = f"unknown preset {config.preset!r}; use 'llama3' or None."
        raise ValueError(msg)
    if not 0 <= config.installed_in_window_share <= 0.5:
        msg = (
            f"installed_in_window_share must be in [0, 0.5], got "
            f"{config.installed_in_window_share}."
        )
        raise ValueError(msg)
    for name in (*_SMI_FORMATS, "sacct_het_share"):
        if not 0 <= getattr(config, name) <= 1:
            msg = f"{name} must be in [0, 1], got {getattr(config, name)}."
            raise ValueError(msg)
    if config.sacct_format not in SACCT_FORMATS:
        msg = f"sacct_format must be None, 'no_jobidraw' or 'json', got {config.sacct_format!r}."
        raise ValueError(msg)
    if config.sacct_json_version not in SACCT_JSON_VERSIONS:
        msg = (
            f"sacct_json_version must be one of {', '.join(SACCT_JSON_VERSIONS)}, got "
            f"{config.sacct_json_version!r}."
        )
        raise ValueError(msg)


def _check_training(config: SynthConfig) -> None:
    n = config.training_log_only_jobs
    if n < 0 or (n and not config.training_logs):
        msg = f"training_log_only_jobs must be >= 0 and needs training_logs on, got {n}."
        raise ValueError(msg)
    jitter = config.training_step_jitter
    if not 0 <= jitter <= 0.5 or (jitter and not config.training_logs):
        msg = (
            "training_step_jitter must be in [0, 0.5] (the sigma of a step's lognormal noise, "
            f"e.g. 0.01) and needs training_logs on, got {jitter}."
        )
        raise ValueError(msg)
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


def _check_slow(config: SynthConfig) -> None:
    """Check the fail-slow knobs: a rate with training logs, positive laws, shares, a known unit."""
    rate = config.slow_rate_per_gpu_hour
    if not rate >= 0:
        msg = f"slow_rate_per_gpu_hour must be >= 0 (0: no fail-slow), got {rate}."
        raise ValueError(msg)
    if rate and not config.training_logs:
        msg = "slow_rate_per_gpu_hour needs training_logs on: the slowdown lives in the step times."
        raise ValueError(msg)
    for name in ("slow_duration_s", "slow_factor"):
        law = getattr(config, name)
        if len(law) != 2 or not (law[0] > 0 and law[1] >= 0):
            msg = f"{name} must be (median, sigma) with median > 0 and sigma >= 0, got {law}."
            raise ValueError(msg)
    if config.slow_unit not in ("gpu", "node"):
        msg = f"slow_unit must be 'gpu' or 'node', got {config.slow_unit!r}."
        raise ValueError(msg)
    if not 0 <= config.slow_dcgm_share <= 1:
        msg = f"slow_dcgm_share must be in [0, 1], got {config.slow_dcgm_share}."
        raise ValueError(msg)
    reasons = config.slow_dcgm_reasons
    if not reasons or min(reasons) < 1 or max(reasons) >= 1 << 16:
        msg = f"slow_dcgm_reasons must be non-empty bitmasks (e.g. 0x8, 0x40), got {reasons}."
        raise ValueError(msg)
    if config.straggler_lines not in STRAGGLER_LINES:
        msg = f"straggler_lines must be None, 'megatron' or 'nvrx', got {config.straggler_lines!r}."
        raise ValueError(msg)
    if config.straggler_report_s < 1:
        msg = f"straggler_report_s must be at least 1 second, got {config.straggler_report_s}."
        raise ValueError(msg)
    off = [n for n in ("slow_dcgm_share", "straggler_lines", "slow_preset") if getattr(config, n)]
    if off and not rate:
        msg = f"{off[0]} needs slow_rate_per_gpu_hour > 0 (fail-slow is off)."
        raise ValueError(msg)
