"""Synthetic GPU fleet with known ground truth (``relia synth``).

The generator simulates per-class lifetimes (Weibull by default; exponential, log-normal or
log-logistic through ``SynthConfig.with_families``) with renewals on every GPU slot and node-level
unit, a Slurm workload whose attempts those failures interrupt, and writes the telemetry a real
cluster would leave behind (sacct, kernel logs with Xid bursts, nvidia-smi snapshots, fleet CSV,
repair tickets) plus ``ground_truth.json`` computed with the data contract's §5 rules.

Examples
--------
>>> from pathlib import Path
>>> from synth import SynthConfig, synthesize
>>> truth = synthesize(Path("landing"), SynthConfig(nodes=16, days=14))  # doctest: +SKIP
>>> truth["lives_by_class"]["gpu_memory"]["n_failed"]  # doctest: +SKIP
"""

from __future__ import annotations

from synth.config import FAMILIES, ClassSpec, SynthConfig, default_classes
from synth.core import simulate, synthesize

__all__ = ["FAMILIES", "ClassSpec", "SynthConfig", "default_classes", "simulate", "synthesize"]
