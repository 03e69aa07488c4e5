"""Synthetic GPU fleet with known ground truth (``relia synth``).

The generator simulates per-class lifetimes (Weibull by default; exponential, log-normal or
log-logistic through ``SynthConfig.with_families``) with renewals on every GPU slot and node-level
unit: each failure is fixed by a replacement, a GPU reset, a node reboot or a reseat (only a
replacement writes a repair ticket and a new serial), a few bad units fail again and again until
replaced, and software, driver, NCCL, fabric and unplanned-maintenance faults interrupt jobs per
node. A Slurm workload's attempts are interrupted by all of them; the generator writes the
telemetry a real cluster would leave behind (sacct, kernel logs with Xid bursts, Slurm node
events, nvidia-smi snapshots, fleet CSV, repair tickets) plus ``ground_truth.json``: the failure
process per class (``failure_process``, with its compensator) and the replacement lives the data
contract's §5 rules cut from tickets. :func:`llama3` is Llama 3's published fleet.

Examples
--------
>>> from pathlib import Path
>>> from synth import SynthConfig, synthesize
>>> truth = synthesize(Path("landing"), SynthConfig(nodes=16, days=14))  # doctest: +SKIP
>>> truth["failure_process"]["gpu_memory"]["n_failures"]  # doctest: +SKIP
"""

from __future__ import annotations

from synth.config import (
    FAMILIES,
    ClassSpec,
    InterruptionSpec,
    SynthConfig,
    default_classes,
    default_non_hardware,
)
from synth.core import simulate, synthesize
from synth.presets import llama3, preset

__all__ = [
    "FAMILIES",
    "ClassSpec",
    "InterruptionSpec",
    "SynthConfig",
    "default_classes",
    "default_non_hardware",
    "llama3",
    "preset",
    "simulate",
    "synthesize",
]
