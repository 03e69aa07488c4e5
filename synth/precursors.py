"""Planted failure precursors and background noise (``SynthConfig.precursor_share``).

A share of the GPU-level failures get a precursor: from an onset ``lead_h`` hours before the
failure (uniform on ``precursor_lead_h``) a signal rises as the square root of the elapsed
fraction of the lead time (a jump within the first hours, then further growth) to a peak drawn
per failure. The signal follows the failing class:

============  =============================================================================
class         signal (DCGM unless stated)
============  =============================================================================
gpu_memory    single-bit ECC errors, correctable row remaps, and 1-3 warning Xid bursts (63
              row-remap event, 92 excessive SBE interrupts; warning-only in ``dim_xid.csv``) in
              the kernel log, the last one at least ``kernel.QUIET_S`` before the failure
nvlink        NVLink CRC flit errors
pcie          PCIe replays
gpu           a temperature and power excursion
============  =============================================================================

The other failures (and every node-level one) get no precursor. A precursor is planted only when
the node is scraped over its whole lead time (no unit of the node in repair, node installed): a
failure drawn for one whose node is down shows nothing and is recorded as having none.

Background episodes fall on random GPUs at random times, independent of any failure: one signal
of the same kinds (or one warning Xid burst), 1-3 hours long, at a constant level below the
precursors' peaks (as strong as a precursor in its first hour). A lone warning is therefore no proof
of a coming failure.

Draws come from a stream of their own, so the rest of the fleet (lifetimes, jobs, logs) is the
same as without precursors.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from synth import kernel
from synth.config import WARNING_XIDS
from synth.fleet import DAY_S, HOUR_S

if TYPE_CHECKING:
    from synth.config import SynthConfig
    from synth.fleet import Fleet

#: Kinds of DCGM signal; ``xid`` is a warning-Xid burst in the kernel log.
KINDS: tuple[str, ...] = ("sbe", "remap", "crc", "pcie", "temp", "xid")
#: DCGM signals of each failing class's precursor.
SIGNALS: dict[str, tuple[str, ...]] = {
    "gpu_memory": ("sbe", "remap"),
    "nvlink": ("crc",),
    "pcie": ("pcie",),
    "gpu": ("temp", "power"),
    "gpu_sram": ("sbe",),
    "gsp": ("temp",),
}
#: Peak of a precursor per kind: events per hour (temperature in degrees C, power in W).
PEAK: dict[str, tuple[float, float]] = {
    "sbe": (60.0, 400.0),
    "remap": (0.5, 2.0),
    "crc": (200.0, 1_500.0),
    "pcie": (60.0, 400.0),
    "temp": (20.0, 35.0),
    "power": (100.0, 250.0),
}
#: Constant level of a background episode per kind (same units).
BACKGROUND: dict[str, tuple[float, float]] = {
    "sbe": (1.0, 15.0),
    "remap": (0.05, 0.3),
    "crc": (2.0, 40.0),
    "pcie": (1.0, 15.0),
    "temp": (2.0, 8.0),
}
BACKGROUND_H = (1.0, 3.0)


@dataclass
class Precursors:
    """Which failures carry a precursor, and the background episodes.

    Per GPU-level failure (``event`` indexes the fleet's ``ev_*`` arrays): ``planted``, the
    ``onset_s`` (failure time minus lead time), ``lead_h`` and ``level`` (in [0, 1], where the peak
    lies in :data:`PEAK`). Per background episode: ``bg_unit``, ``bg_start``, ``bg_end``,
    ``bg_kind`` (index into :data:`KINDS`) and ``bg_level`` (in [0, 1], into :data:`BACKGROUND`).
    ``rng`` draws the counts when the DCGM scrapes are written.
    """

    event: np.ndarray
    planted: np.ndarray
    drawn: np.ndarray
    onset_s: np.ndarray
    lead_h: np.ndarray
    level: np.ndarray
    bg_unit: np.ndarray
    bg_start: np.ndarray
    bg_end: np.ndarray
    bg_kind: np.ndarray
    bg_level: np.ndarray
    rng: np.random.Generator

    def lookup(self) -> dict[int, tuple[bool, float | None]]:
        """Fleet event index -> (precursor planted, lead time in hours or None)."""
        return {
            int(e): (bool(p), float(round(h, 3)) if p else None)
            for e, p, h in zip(self.event, self.planted, self.lead_h, strict=True)
        }


def plan_precursors(config: SynthConfig, rng: np.random.Generator, fleet: Fleet) -> Precursors:
    """Draw the failures that get a precursor, their lead times and the background episodes."""
    share = config.precursor_share or 0.0
    lo, hi = config.precursor_lead_h
    w0, w1 = config.window_start_s, config.window_end_s
    event = np.flatnonzero(fleet.failed & (fleet.ev_unit < fleet.n_gpu_units))
    drawn = rng.random(event.size) < share
    lead_h = rng.uniform(lo, hi, event.size)
    level = rng.random(event.size)
    failed_at = fleet.ev_open[event]
    onset = failed_at - np.round(lead_h * HOUR_S).astype(np.int64)
    node = fleet.unit_node[fleet.ev_unit[event]]
    ev_node = fleet.unit_node[fleet.ev_unit]
    up = fleet.installed[node] <= onset
    for k in np.flatnonzero(drawn & up).tolist():
        mine = ev_node == node[k]
        overlap = mine & (fleet.ev_open < failed_at[k]) & (fleet.ev_close > onset[k])
        up[k] = not overlap.any()
    # background episodes per GPU slot over its node's service in the window
    g = fleet.gpus_per_node
    service_from = np.maximum(fleet.installed, w0)
    service_to = np.minimum(fleet.node_end(w1), w1)
    days = np.clip(service_to - service_from, 0, None) / DAY_S
    counts = rng.poisson(config.background_per_gpu_day * np.repeat(days, g))
    bg_unit = np.repeat(np.arange(fleet.n_gpu_units), counts)
    bg_node = bg_unit // g
    span = (service_to - service_from)[bg_node]
    bg_start = service_from[bg_node] + (rng.random(bg_unit.size) * span).astype(np.int64)
    bg_len = np.round(rng.uniform(*BACKGROUND_H, bg_unit.size) * HOUR_S).astype(np.int64)
    return Precursors(
        event=event,
        planted=drawn & up,
        drawn=drawn,
        onset_s=onset,
        lead_h=lead_h,
        level=level,
        bg_unit=bg_unit,
        bg_start=bg_start,
        bg_end=bg_start + bg_len,
        bg_kind=rng.integers(0, len(KINDS), bg_unit.size),
        bg_level=rng.random(bg_unit.size),
        rng=rng,
    )


def with_warning_xids(
    config: SynthConfig, fleet: Fleet, xids: kernel.XidLines, plan: Precursors
) -> kernel.XidLines:
    """Return the Xid lines plus the precursors' and background episodes' warning bursts (63, 92).

    Warning lines keep ``kernel.QUIET_S`` away from any failure burst on the same GPU, so every
    failure stays an incident of its own, and only lines printed inside the window are kept.
    """
    rng = plan.rng
    g = fleet.gpus_per_node
    w0, w1 = config.window_start_s, config.window_end_s
    classes = fleet.class_names
    memory = plan.planted & np.array(
        [classes[c] == "gpu_memory" for c in fleet.ev_class[plan.event]], dtype=bool
    )
    units, starts, ends = [], [], []
    for k in np.flatnonzero(memory).tolist():
        last = int(fleet.ev_open[plan.event[k]]) - kernel.QUIET_S - 60
        if last <= plan.onset_s[k]:
            continue
        n = 1 + int(rng.integers(0, 3))
        units += [int(fleet.ev_unit[plan.event[k]])] * n
        starts += [int(plan.onset_s[k])] * n
        ends += [last] * n
    t0 = np.array(
        [int(rng.integers(a, b)) for a, b in zip(starts, ends, strict=True)], dtype=np.int64
    )
    is_xid = plan.bg_kind == KINDS.index("xid")
    unit = np.concatenate([np.array(units, dtype=np.int64), plan.bg_unit[is_xid]])
    t0 = np.concatenate([t0, plan.bg_start[is_xid]])
    code = np.array(WARNING_XIDS)[rng.integers(0, len(WARNING_XIDS), unit.size)]
    node, slot, true_ts, code = kernel.bursts(rng, unit // g, unit % g, t0, code, 3)
    gpu_fail = fleet.failed & (fleet.ev_unit < fleet.n_gpu_units)
    fail_keys = np.sort(fleet.ev_unit[gpu_fail] * (1 << 40) + fleet.ev_open[gpu_fail])
    key = (node * g + slot) * (1 << 40)
    lo = np.searchsorted(fail_keys, key + true_ts - kernel.QUIET_S, side="left")
    hi = np.searchsorted(fail_keys, key + true_ts + kernel.QUIET_S, side="right")
    ts = true_ts + fleet.skew_s[node]
    keep = (lo == hi) & (ts >= w0) & (ts < w1)
    r = rng.integers(0, 2**31, size=int(keep.sum()))
    merged = [
        np.concatenate([old, new[keep]])
        for old, new in (
            (xids.node, node),
            (xids.slot, slot),
            (xids.ts, ts),
            (xids.true_ts, true_ts),
            (xids.code, code),
        )
    ]
    merged.append(np.concatenate([xids.r, r]))
    order = np.lexsort((merged[2], merged[1], merged[0]))
    return kernel.XidLines(*(a[order] for a in merged))


def node_signals(
    plan: Precursors, fleet: Fleet, node: int, times: np.ndarray, step_s: int
) -> dict[str, np.ndarray]:
    """Extra DCGM signal of one node's GPUs at its scrape ``times``: ``(samples, GPUs)`` arrays.

    Counts (``sbe``, ``remap``, ``crc``, ``pcie``: increments per scrape, Poisson around the
    hourly rate times the scrape interval) and offsets (``temp`` in degrees C, ``power`` in W).
    """
    rng = plan.rng
    g = fleet.gpus_per_node
    m = times.size
    step_h = step_s / HOUR_S
    kinds = ("sbe", "remap", "crc", "pcie", "temp", "power")
    rate: dict[str, np.ndarray] = {k: np.zeros((m, g)) for k in kinds}
    classes = fleet.class_names
    units = fleet.ev_unit[plan.event]
    for k in np.flatnonzero(plan.planted & (units // g == node)).tolist():
        s = int(units[k] % g)
        failed_at = int(fleet.ev_open[plan.event[k]])
        onset = int(plan.onset_s[k])
        inside = (times >= onset) & (times < failed_at)
        ramp = np.sqrt((times[inside] - onset) / (failed_at - onset))
        for kind in SIGNALS[classes[int(fleet.ev_class[plan.event[k]])]]:
            low, high = PEAK[kind]
            rate[kind][inside, s] += ramp * (low + plan.level[k] * (high - low))
    for k in np.flatnonzero(plan.bg_unit // g == node).tolist():
        kind = KINDS[int(plan.bg_kind[k])]
        if kind == "xid":
            continue
        s = int(plan.bg_unit[k] % g)
        inside = (times >= plan.bg_start[k]) & (times < plan.bg_end[k])
        low, high = BACKGROUND[kind]
        rate[kind][inside, s] += low + plan.bg_level[k] * (high - low)
    out = {k: rng.poisson(rate[k] * step_h) for k in ("sbe", "remap", "crc", "pcie")}
    out["temp"] = rate["temp"]
    out["power"] = rate["power"]
    return out


def summary(config: SynthConfig, fleet: Fleet, plan: Precursors) -> dict[str, object]:
    """Return the ground-truth summary of the precursors.

    Ground-truth summary: GPU failures in the window with a precursor drawn / planted, and
    background episodes per kind.
    """
    w0, w1 = config.window_start_s, config.window_end_s
    failed_at = fleet.ev_open[plan.event]
    inside = (failed_at > w0) & (failed_at < w1)
    bg_inside = (plan.bg_start >= w0) & (plan.bg_start < w1)
    return {
        "share": config.precursor_share,
        "lead_h": list(config.precursor_lead_h),
        "n_gpu_failures": int(inside.sum()),
        "n_drawn": int((plan.drawn & inside).sum()),
        "n_planted": int((plan.planted & inside).sum()),
        "background_by_kind": {
            kind: int(np.sum(bg_inside & (plan.bg_kind == k))) for k, kind in enumerate(KINDS)
        },
    }
