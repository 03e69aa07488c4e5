"""Preset fleets: Llama 3's published interruption mix (``relia synth --preset llama3``).

Llama 3's pre-training (Dubey et al., "The Llama 3 Herd of Models", 2024, §3.3.4 and Table 5)
saw 419 unexpected interruptions in a 54-day snapshot on 16,384 H100 GPUs (2,048 nodes of 8).
:func:`llama3` writes a fleet of that size and length whose per-class rates make the expected
count of every class over 2,048 nodes x 8 GPUs x 54 days equal its published count: every class
is exponential (a Poisson process per unit), so the expectation does not depend on the fleet's
age, and the fleet has no bad units, no batch installed or node removed during the window and
no forced failures (each would move the expectation off the published figure).

Table 5's root causes map to relia's component classes (``sql/seeds/dim_component_class.csv``):

==============================  =====  ================
root cause (Table 5)            count  class
==============================  =====  ================
Faulty GPU                      148    gpu
GPU HBM3 Memory                 72     gpu_memory
Software Bug                    54     software
Network Switch/Cable            35     network
Host Maintenance                32     maintenance
GPU SRAM Memory                 19     gpu_sram
GPU System Processor            17     gsp
NIC                             7      nic
NCCL Watchdog Timeouts          7      nccl
Silent Data Corruption          6      gpu
GPU Thermal Interface + Sensor  6      gpu
SSD                             3      storage
Power Supply                    3      power
Server Chassis                  2      chassis
IO Expansion Board              2      chassis
Dependency                      2      software
CPU                             2      host_cpu
System Memory                   2      host_memory
==============================  =====  ================

Silent data corruption and the thermal interface are failures of the GPU board; the IO
expansion board is part of the server's baseboard; "Dependency" (a failing service the job
depends on) is system software. Host maintenance counts unplanned maintenance only (the table
lists unexpected interruptions).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from synth.config import (
    GPU_CLASSES,
    ClassSpec,
    InterruptionSpec,
    SynthConfig,
    default_classes,
    default_non_hardware,
)

#: Table 5 of the Llama 3 paper: (root cause, interruptions in 54 days, relia class).
LLAMA3_TABLE5: tuple[tuple[str, int, str], ...] = (
    ("Faulty GPU", 148, "gpu"),
    ("GPU HBM3 Memory", 72, "gpu_memory"),
    ("Software Bug", 54, "software"),
    ("Network Switch/Cable", 35, "network"),
    ("Host Maintenance", 32, "maintenance"),
    ("GPU SRAM Memory", 19, "gpu_sram"),
    ("GPU System Processor", 17, "gsp"),
    ("NIC", 7, "nic"),
    ("NCCL Watchdog Timeouts", 7, "nccl"),
    ("Silent Data Corruption", 6, "gpu"),
    ("GPU Thermal Interface + Sensor", 6, "gpu"),
    ("SSD", 3, "storage"),
    ("Power Supply", 3, "power"),
    ("Server Chassis", 2, "chassis"),
    ("IO Expansion Board", 2, "chassis"),
    ("Dependency", 2, "software"),
    ("CPU", 2, "host_cpu"),
    ("System Memory", 2, "host_memory"),
)
LLAMA3_NODES, LLAMA3_GPUS_PER_NODE, LLAMA3_DAYS = 2_048, 8, 54
LLAMA3_SOURCE = (
    "Dubey et al., The Llama 3 Herd of Models (arXiv:2407.21783), Table 5: 419 unexpected "
    "interruptions in a 54-day snapshot of pre-training on 16,384 H100 GPUs"
)
#: Median repair time (hours) of a replacement, for the classes the default fleet lacks.
_REPAIR_MEDIAN_H = {
    "gpu_sram": 48.0,
    "gsp": 48.0,
    "storage": 12.0,
    "host_cpu": 24.0,
    "chassis": 24.0,
}
PRESETS = ("llama3",)


def llama3_counts() -> dict[str, int]:
    """Return the published interruptions per relia class (Table 5 summed by class)."""
    counts: dict[str, int] = {}
    for _, n, cls in LLAMA3_TABLE5:
        counts[cls] = counts.get(cls, 0) + n
    return counts


def llama3(**overrides: Any) -> SynthConfig:
    """Return the Llama 3 fleet: 2,048 nodes x 8 GPUs, 54 days, Table 5's rate per class.

    A GPU-level class with ``n`` published interruptions has an exponential law of mean
    ``2,048 x 8 x 54 x 24 / n`` GPU-hours, a node-level class ``2,048 x 54 x 24 / n``
    node-hours, and a non-hardware class the rate ``n / (2,048 x 54 x 24)`` per node-hour
    (``driver``, not in the table, is off). Fix shares and repair times are the defaults. The
    workload is light (0.02 jobs per node and day, most of them large; one noise line per host
    and day) so that the 16,384-GPU fleet stays cheap to write and ingest.

    Parameters
    ----------
    **overrides
        Any other :class:`SynthConfig` field (``seed``, ``start``, ``node_events``...),
        applied last.
    """
    counts = llama3_counts()
    gpu_h = LLAMA3_NODES * LLAMA3_GPUS_PER_NODE * LLAMA3_DAYS * 24.0
    node_h = LLAMA3_NODES * LLAMA3_DAYS * 24.0
    base = default_classes()
    classes: dict[str, ClassSpec] = {}
    non_hardware: dict[str, InterruptionSpec] = {}
    recovery = default_non_hardware()
    for cls, n in counts.items():
        if cls in recovery:
            non_hardware[cls] = InterruptionSpec(n / node_h, recovery[cls].recovery_median_h)
            continue
        level = "gpu" if cls in GPU_CLASSES else "node"
        repair = base[cls].repair_median_h if cls in base else _REPAIR_MEDIAN_H[cls]
        hours = gpu_h if level == "gpu" else node_h
        classes[cls] = ClassSpec(level, 1.0, hours / n, repair, family="exponential")
    config = SynthConfig(
        nodes=LLAMA3_NODES,
        gpus_per_node=LLAMA3_GPUS_PER_NODE,
        days=LLAMA3_DAYS,
        classes=classes,
        non_hardware=non_hardware,
        bad_unit_share=0.0,
        installed_in_window_share=0.0,
        removed_fraction=0.0,
        n_ambiguous=0,
        jobs_per_node_day=0.02,
        job_size_mix=(0.3, 0.4, 0.3),
        large_job_duration_median_h=24.0,
        noise_lines_per_host_day=1.0,
        preset="llama3",
    )
    return replace(config, **overrides)


def preset(name: str, **overrides: Any) -> SynthConfig:
    """Return the preset fleet ``name`` (one of :data:`PRESETS`) with ``overrides`` applied.

    Raises
    ------
    ValueError
        An unknown preset name.
    """
    if name == "llama3":
        return llama3(**overrides)
    msg = f"unknown preset {name!r}; use one of {', '.join(PRESETS)}."
    raise ValueError(msg)


def preset_truth(config: SynthConfig) -> dict[str, Any] | None:
    """Return the preset's block of the ground truth (None for a fleet without a preset).

    ``name``, ``source``, ``table5`` (root cause, count, class), ``published`` (count per
    class) and ``expected_nominal`` (per class: rate x units x window hours, what the published
    count was turned into; the compensator in ``failure_process`` is slightly lower, for it
    leaves out the units' downtime).
    """
    if config.preset is None:
        return None
    hours = config.days * 24.0
    expected: dict[str, float] = {}
    for name, spec in config.fleet_classes.items():
        units = config.nodes * (config.gpus_per_node if spec.level == "gpu" else 1)
        expected[name] = units * hours / spec.mtbf_h
    return {
        "name": config.preset,
        "source": LLAMA3_SOURCE,
        "table5": [
            {"root_cause": cause, "count": n, "component_class": cls}
            for cause, n, cls in LLAMA3_TABLE5
        ],
        "published": llama3_counts(),
        "expected_nominal": expected,
    }
