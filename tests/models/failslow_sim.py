"""An independent Monte Carlo of the rank-pace model, written apart from ``models.failslow``.

Slow episodes of every unit of a job form one superposed Poisson stream of rate ``N lambda`` in
wall time. Each trial draws the stream over ``[-warmup, horizon)`` (so the episodes on at time 0
are there too), draws each episode's duration and slowdown with numpy's own samplers, cuts the
acted-on ones at ``detect + evict``, builds the job's pace ``M(t) = max(1, S of the episodes on)``
piecewise over the elementary intervals between episode ends, and integrates ``1 - 1/M`` over
``[0, horizon)``. Nothing here calls the module under test.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

Draw = Callable[[np.random.Generator, int], np.ndarray]


@dataclass(frozen=True)
class McResult:
    """Trial means with their standard errors."""

    share: float
    share_se: float
    tolerated: float  # the part of share while M <= 1 + theta
    tolerated_se: float
    evictions_per_h: float
    evictions_per_h_se: float


def segment_max(n_seg: int, left: np.ndarray, right: np.ndarray, value: np.ndarray) -> np.ndarray:
    """Max of ``value`` over the episodes covering each segment ``[left, right)``, at least 1.

    Offline range-max painting: each range is two overlapping power-of-two blocks, written at
    their level, then pushed down level by level.
    """
    out = np.ones(n_seg)
    keep = right > left
    left, right, value = left[keep], right[keep], value[keep]
    if left.size == 0:
        return out
    level = np.floor(np.log2(right - left)).astype(np.int64)
    table = np.ones((int(level.max()) + 1, n_seg))
    np.maximum.at(table, (level, left), value)
    np.maximum.at(table, (level, right - (1 << level)), value)
    for j in range(table.shape[0] - 1, 0, -1):
        half = 1 << (j - 1)
        np.maximum(table[j - 1], table[j], out=table[j - 1])
        np.maximum(table[j - 1, half:], table[j, : n_seg - half], out=table[j - 1, half:])
    return np.maximum(out, table[0])


def _trial(
    rng: np.random.Generator,
    stream_per_h: float,
    horizon_h: float,
    warmup_h: float,
    draw_duration_h: Draw,
    draw_slowdown: Draw,
    act: tuple[float, float, float] | None,
) -> tuple[float, float, int]:
    """One trial: (share, tolerated share, evictions)."""
    n = rng.poisson(stream_per_h * (horizon_h + warmup_h))
    start = rng.uniform(-warmup_h, horizon_h, n)
    duration = draw_duration_h(rng, n)
    slow = draw_slowdown(rng, n)
    theta = 0.05 if act is None else act[0]
    evictions = 0
    if act is not None:
        _, detect_h, evict_h = act
        acted = slow > 1.0 + theta
        evictions = int(np.count_nonzero(acted & (duration > detect_h) & (start >= 0.0)))
        duration = np.where(acted, np.minimum(duration, detect_h + evict_h), duration)
    end = np.clip(start + duration, 0.0, horizon_h)
    start = np.clip(start, 0.0, horizon_h)
    points = np.unique(np.concatenate([[0.0, horizon_h], start, end]))
    left = np.searchsorted(points, start)
    right = np.searchsorted(points, end)
    pace = segment_max(points.size - 1, left, right, slow)
    length = np.diff(points)
    lost = (1.0 - 1.0 / pace) * length
    tolerated = np.where(pace <= 1.0 + theta, lost, 0.0)
    return float(lost.sum() / horizon_h), float(tolerated.sum() / horizon_h), evictions


def simulate_pace(
    *,
    n_units: int,
    rate_per_unit_h: float,
    draw_duration_h: Draw,
    draw_slowdown: Draw,
    horizon_h: float,
    warmup_h: float,
    n_trials: int,
    seed: int,
    act: tuple[float, float, float] | None = None,
) -> McResult:
    """Monte Carlo of the share of wall time lost to the slow pace, and evictions per hour.

    ``act`` is ``(theta, detect_h, evict_h)``: episodes with ``S > 1 + theta`` end at
    ``detect_h + evict_h`` at the latest; those still on at ``detect_h`` (and started in the
    window) are evictions. Without it, ``theta = 0.05`` only splits the tolerated share.
    """
    rng = np.random.default_rng(seed)
    rows = np.array(
        [
            _trial(
                rng,
                n_units * rate_per_unit_h,
                horizon_h,
                warmup_h,
                draw_duration_h,
                draw_slowdown,
                act,
            )
            for _ in range(n_trials)
        ]
    )
    mean = rows.mean(axis=0)
    se = rows.std(axis=0, ddof=1) / math.sqrt(n_trials)
    return McResult(
        share=float(mean[0]),
        share_se=float(se[0]),
        tolerated=float(mean[1]),
        tolerated_se=float(se[1]),
        evictions_per_h=float(mean[2] / horizon_h),
        evictions_per_h_se=float(se[2] / horizon_h),
    )
