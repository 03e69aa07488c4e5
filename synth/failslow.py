"""Fail-slow episodes of the synthetic fleet and the pace they give a synchronous job.

With ``SynthConfig.slow_rate_per_gpu_hour > 0`` (and ``training_logs`` on) every unit (a GPU, or
a node with ``slow_unit = "node"``) has slow episodes arriving as a Poisson process over the
window at ``slow_rate_per_gpu_hour`` per GPU-hour (a node: that rate times its GPUs), each with a
duration ``D`` (lognormal, ``slow_duration_s = (median, sigma)``, whole seconds, at least 1) and a
slowdown ``S = 1 + X``, ``X`` lognormal (``slow_factor = (median, sigma)``). A synchronous job
runs at the pace of its slowest unit: a step of a job that starts at ``t`` takes
``round(step_ms x M(t))`` milliseconds, ``M(t) = max(1, S of every episode on the job's units
active at t)`` (an episode is active on ``[start, end)``). Checkpoint saves are not slowed.

Ranks: the job's nodes in Slurm's node-list order (host names sorted), ``rank = node_index x
gpus_per_node + gpu``; a node episode is reported on the node's first rank (``gpu = 0``).

A share ``slow_dcgm_share`` of the episodes carries a DCGM signature (a clock-event reason
bitmask drawn from ``slow_dcgm_reasons``, and the SM clock divided by ``S`` on the unit's GPUs
while it lasts, :mod:`synth.dcgm`); the rest are silent. Episodes are drawn from a generator of
their own (``[seed, 0x510F]``): switching fail-slow on changes no other source's draws.

Truth (:func:`truth_block`): ``slow_episodes`` (one row per episode and attempt it touches:
overlaps the attempt's steps, ``[first step start, attempt end)``, of a Slurm job with a
training log), ``slow_jobs`` (per ended job with a log, ``slow_s``: the sum over the steps the
job kept of ``step_s x (M - 1)``, i.e. wall time above the healthy pace, from the integer
milliseconds written), ``slow_job_parts`` (per job ``redone_s``: the same sum over steps that a
failure rolled back, counted in the ledger's ``wasted_s`` and not in ``slow_s``; ``unlogged_s``:
the part of ``slow_s`` in kept steps after the last progress line, which no log line shows),
``slow_fleet`` (episodes in the fleet) and ``slow_laws`` (the knobs and these rules).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from synth.truth import iso

if TYPE_CHECKING:
    from collections.abc import Callable

    from synth.config import SynthConfig
    from synth.fleet import Fleet

_SLOW_STREAM = 0x510F
"""Second seed word of the episodes' own generator."""
STRAGGLER_STREAM = 0x5712
"""Second seed word of each job's straggler-report generator (the third is its job id)."""
SLOW_PRESETS: dict[str, dict[str, Any]] = {
    "published": {
        "slow_rate_per_gpu_hour": 8.0e-3,
        "slow_duration_s": (1470.0, 1.37),
        "slow_factor": (0.1, 1.0),
        "slow_unit": "gpu",
        "slow_dcgm_share": 0.3,
        "training_step_jitter": 0.01,
    },
}
"""Named fail-slow knob sets. ``published``: the duration law is calibrated on Greyhound (ATC '25:
episodes from under a minute to about 10 h: 60 s and 10 h are the law's 1st and 99th
percentiles, median sqrt(60 x 36,000) = 1,470 s, sigma ln(600) / (2 x 2.326) = 1.37), the rate
on ByteDance (OSDI '25: 42.5 % of jobs straggle): 0.008 per GPU-hour slows 42.2 % of the default
fleet's training jobs (seed 0; 42.3 % with seed 1). The slowdown law and the DCGM share are
guesses. ``docs/data_contract.md`` §6.2 gives the calibration and the derived figures."""
VISIBLE_FLOOR = 0.05
"""Slowdowns ``M < 1 + VISIBLE_FLOOR`` are faint: relia's default detection floor
(``slow_theta_min``, ``cfg_params``) tolerates them, so their time is split out of ``slow_s`` as
``slow_job_parts[job].faint_s`` (``slow_s`` itself stays the full excess)."""
SM_CLOCK_MHZ = 1980
"""Busy SM clock of a healthy GPU (H100 SXM's maximum; the Megatron README sample's MxClk)."""
IDLE_CLOCK_MHZ = 345
"""SM clock of an idle GPU."""


@dataclass
class Episodes:
    """The fleet's episodes, sorted by node then start (times in epoch milliseconds)."""

    node: np.ndarray
    gpu: np.ndarray  # -1 for a node episode
    start: np.ndarray
    end: np.ndarray
    factor: np.ndarray
    signature: np.ndarray  # 0: silent

    @property
    def size(self) -> int:
        """Number of episodes."""
        return int(self.node.size)

    def on_node(self, node: int) -> np.ndarray:
        """Return the indices of the episodes of ``node``."""
        a, b = np.searchsorted(self.node, [node, node + 1])
        return np.arange(a, b)


@dataclass
class Pace:
    """The episodes on one attempt's units while its steps run, and the job's pace ``M``.

    ``times`` and ``values``: ``M`` is ``values[i]`` on ``[times[i], times[i + 1])`` and 1 before
    ``times[0]`` and from the last time on. ``rows`` index :class:`Episodes`; ``ranks`` is each
    row's rank in the job; ``hosts`` the job's hosts in rank order.
    """

    times: np.ndarray
    values: np.ndarray
    rows: np.ndarray
    ranks: np.ndarray
    hosts: list[str]
    gpus_per_node: int
    episodes: Episodes

    def m_at(self, t: np.ndarray) -> np.ndarray:
        """``M`` at epoch milliseconds ``t``."""
        i = np.searchsorted(self.times, t, side="right") - 1
        out: np.ndarray = np.where(i >= 0, self.values[np.maximum(i, 0)], 1.0)
        return out

    def rank_factors(self, t: np.ndarray) -> dict[int, np.ndarray]:
        """Per slow rank, its unit's slowdown at each of the times ``t`` (1 when healthy)."""
        out: dict[int, np.ndarray] = {}
        ep = self.episodes
        for row, rank in zip(self.rows.tolist(), self.ranks.tolist(), strict=True):
            active = (t >= ep.start[row]) & (t < ep.end[row])
            s = np.where(active, ep.factor[row], 1.0)
            out[rank] = np.maximum(out[rank], s) if rank in out else s
        return out

    def signature_clocks(self, t: int) -> dict[int, int]:
        """SM clocks (MHz) at ``t`` of the slow ranks whose episode has a DCGM signature."""
        out: dict[int, int] = {}
        ep = self.episodes
        for row, rank in zip(self.rows.tolist(), self.ranks.tolist(), strict=True):
            if ep.signature[row] and ep.start[row] <= t < ep.end[row]:
                clock = round(SM_CLOCK_MHZ / float(ep.factor[row]))
                out[rank] = min(clock, out.get(rank, clock))
        return out


def plan_episodes(config: SynthConfig, fleet: Fleet) -> Episodes:
    """Draw every unit's episodes over the window from the episodes' own generator."""
    rng = np.random.default_rng([config.seed, _SLOW_STREAM])
    g = fleet.gpus_per_node
    per_node = config.slow_unit == "node"
    n_units = fleet.n_nodes * (1 if per_node else g)
    rate = config.slow_rate_per_gpu_hour * (g if per_node else 1)
    counts = rng.poisson(rate * config.days * 24.0, n_units)
    unit = np.repeat(np.arange(n_units, dtype=np.int64), counts)
    n = int(unit.size)
    w0, w1 = config.window_start_s, config.window_end_s
    start = w0 + rng.integers(0, w1 - w0, n)
    med, sigma = config.slow_duration_s
    dur = np.maximum(1, np.round(rng.lognormal(np.log(med), sigma, n))).astype(np.int64)
    fmed, fsigma = config.slow_factor
    factor = 1.0 + rng.lognormal(np.log(fmed), fsigma, n)
    marked = rng.random(n) < config.slow_dcgm_share
    reasons = np.array(config.slow_dcgm_reasons, dtype=np.int64)
    signature = np.where(marked, reasons[rng.integers(0, reasons.size, n)], 0)
    node = unit if per_node else unit // g
    gpu = np.full(n, -1, dtype=np.int64) if per_node else unit % g
    order = np.lexsort((start, node))
    return Episodes(
        node=node[order],
        gpu=gpu[order],
        start=start[order] * 1000,
        end=(start[order] + dur[order]) * 1000,
        factor=factor[order],
        signature=signature[order],
    )


def attempt_pace(
    episodes: Episodes, nodes: tuple[int, ...], host_names: list[str], g: int, t0: int, t1: int
) -> Pace | None:
    """Return the pace of an attempt on ``nodes`` with steps in ``[t0, t1)`` (ms; None: healthy)."""
    hosts_of = sorted(nodes, key=lambda n: host_names[n])
    rows: list[int] = []
    ranks: list[int] = []
    for pos, node in enumerate(hosts_of):
        for row in episodes.on_node(node).tolist():
            if episodes.start[row] < t1 and episodes.end[row] > t0:
                rows.append(row)
                ranks.append(pos * g + max(0, int(episodes.gpu[row])))
    if not rows:
        return None
    r = np.array(rows, dtype=np.int64)
    times = np.unique(np.concatenate([episodes.start[r], episodes.end[r]]))
    active = (episodes.start[r][None, :] <= times[:, None]) & (
        episodes.end[r][None, :] > times[:, None]
    )
    values = np.max(np.where(active, episodes.factor[r][None, :], 1.0), axis=1)
    return Pace(
        times=times,
        values=values,
        rows=r,
        ranks=np.array(ranks, dtype=np.int64),
        hosts=[host_names[n] for n in hosts_of],
        gpus_per_node=g,
        episodes=episodes,
    )


def slow_steps(
    pace: Pace, first: int, end: int, resume: int, step_ms: int, ckpt: int, save_ms: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Lay out steps ``resume + 1, ...`` from ``first`` until ``end`` at the pace ``M``.

    A step that starts at ``t`` takes ``round(step_ms x M(t))`` ms; after every step that is a
    multiple of ``ckpt`` a save blocks for ``save_ms``. Returns the steps, their end times and
    their durations (only steps that end by ``end``).
    """
    laid = lay_steps(pace.times, pace.values, first, end, resume, (step_ms, ckpt, save_ms))
    return laid.steps, laid.ends, laid.durations


@dataclass
class Steps:
    """Steps laid out by :func:`lay_steps`: numbers, end times and durations (ms), and ``M``."""

    steps: np.ndarray
    ends: np.ndarray
    durations: np.ndarray
    factor: np.ndarray  # M at each step's start (1 when healthy)


def lay_steps(
    times: np.ndarray,
    values: np.ndarray,
    first: int,
    end: int,
    resume: int,
    knobs: tuple[int, int, int],
    noise: Callable[[int], np.ndarray] | None = None,
) -> Steps:
    """Lay out steps ``resume + 1, ...`` from ``first`` until ``end`` at the pace ``M``.

    ``M`` is ``values[i]`` on ``[times[i], times[i + 1])`` and 1 elsewhere (:class:`Pace`; empty
    arrays: healthy); ``knobs`` is ``(step_ms, ckpt, save_ms)``. A step that starts at ``t``
    takes ``round(step_ms x M(t))`` ms, times ``J``, the step's draw from ``noise(n)`` (``n``
    draws at a time) when given: ``max(1, round(step_ms x M(t) x J))``. After every step that is
    a multiple of ``ckpt`` a save blocks for ``save_ms``. Only steps that end by ``end`` count.
    """
    step_ms, ckpt, save_ms = knobs
    out: dict[str, list[np.ndarray]] = {"steps": [], "ends": [], "durations": [], "factor": []}
    t, n = first, resume
    while True:
        j = int(np.searchsorted(times, t, side="right")) - 1
        m = float(values[j]) if j >= 0 else 1.0
        to_save = (n // ckpt + 1) * ckpt - n
        change = int(times[j + 1]) if j + 1 < times.size else None  # the pace's next change
        if noise is None:
            d = max(1, round(step_ms * m))
            durs = np.full(to_save, d, dtype=np.int64)
            count = to_save if change is None else min(to_save, -(-(change - t) // d))
            room = (end - t) // d
        else:
            durs = np.maximum(1, np.round(step_ms * m * noise(to_save))).astype(np.int64)
            rel = np.cumsum(durs)
            count = to_save if change is None else int(np.searchsorted(rel - durs, change - t))
            room = int(np.searchsorted(rel, end - t, side="right"))
        take = min(count, room)
        if take > 0:
            out["steps"].append(n + np.arange(1, take + 1, dtype=np.int64))
            out["ends"].append(t + np.cumsum(durs[:take]))
            out["durations"].append(durs[:take])
            out["factor"].append(np.full(take, m))
        if room < count:
            break
        t, n = t + int(durs[:take].sum()), n + take
        if n % ckpt == 0:
            t += save_ms
    empty = np.zeros(0, dtype=np.int64)
    parts = {key: np.concatenate(value) if value else empty for key, value in out.items()}
    return Steps(**parts)


def episode_rows(pace: Pace, job_id: str, attempt: int) -> list[dict[str, Any]]:
    """Return the truth's ``slow_episodes`` rows of one attempt."""
    ep = pace.episodes
    out = []
    for row, rank in zip(pace.rows.tolist(), pace.ranks.tolist(), strict=True):
        gpu = int(ep.gpu[row])
        sig = int(ep.signature[row])
        out.append(
            {
                "job_id": job_id,
                "attempt": attempt,
                "unit": "gpu" if gpu >= 0 else "node",
                "host": pace.hosts[rank // pace.gpus_per_node],
                "gpu": gpu if gpu >= 0 else None,
                "rank": rank,
                "start": iso(int(ep.start[row]) // 1000),
                "end": iso(int(ep.end[row]) // 1000),
                "factor": float(ep.factor[row]),
                "dcgm_signature": sig or None,
            }
        )
    return out


def truth_block(
    config: SynthConfig,
    episodes: Episodes,
    rows: list[dict[str, Any]],
    jobs: dict[str, tuple[int, int, int, int]],
) -> dict[str, Any]:
    """Return the truth's fail-slow keys; ``jobs``: job id -> (kept, redone, unlogged, faint) ms."""
    laws = {name: getattr(config, name) for name in _LAW_KNOBS}
    laws |= {
        "slow_duration_s": list(config.slow_duration_s),
        "slow_factor": list(config.slow_factor),
        "slow_dcgm_reasons": list(config.slow_dcgm_reasons),
        "pace": "a step starting at t takes round(step_ms x M(t)) ms, M(t) = max(1, S of every "
        "episode active on the job's units at t); saves are not slowed",
        "rank_map": "nodes in Slurm node-list order (host names sorted); rank = node_index x "
        "gpus_per_node + gpu; a node episode on the node's first rank",
        "slow_s": "sum over the steps the job kept of step_s x (M - 1), step_s the step time "
        "without jitter; steps rolled back by a failure are in redone_s (and the ledger's "
        "wasted_s), not in slow_s",
        "visible_floor": VISIBLE_FLOOR,
        "faint_s": "the part of slow_s from kept steps shown by a progress line whose M < 1 + "
        "visible_floor: relia's default detection floor (slow_theta_min) tolerates that "
        "slowness, so it measures none of it; slow_s stays the full excess. Disjoint from "
        "unlogged_s (kept steps after the last progress line)",
    }
    return {
        "slow_episodes": rows,
        "slow_jobs": {job: parts[0] / 1000 for job, parts in jobs.items()},
        "slow_job_parts": {
            job: {"redone_s": redone / 1000, "unlogged_s": unlogged / 1000, "faint_s": faint / 1000}
            for job, (_, redone, unlogged, faint) in jobs.items()
        },
        "slow_fleet": {
            "n_episodes": episodes.size,
            "n_dcgm": int(np.count_nonzero(episodes.signature)),
            "n_episodes_touching_jobs": len({(r["host"], r["gpu"], r["start"]) for r in rows}),
        },
        "slow_laws": laws,
    }


_LAW_KNOBS = (
    "slow_rate_per_gpu_hour",
    "training_step_jitter",
    "slow_unit",
    "slow_dcgm_share",
    "straggler_lines",
    "straggler_report_s",
    "slow_preset",
)


def gpu_signature(
    episodes: Episodes, node: int, g: int, times_ms: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Per scrape and GPU of ``node``: the clock divisor ``S`` (1 when none) and the reason bits.

    Only episodes with a DCGM signature count; overlapping ones take the larger ``S`` and the
    union of their bits.
    """
    divisor = np.ones((times_ms.size, g))
    bits = np.zeros((times_ms.size, g), dtype=np.int64)
    for row in episodes.on_node(node).tolist():
        sig = int(episodes.signature[row])
        if not sig:
            continue
        on = (times_ms >= episodes.start[row]) & (times_ms < episodes.end[row])
        cols = range(g) if episodes.gpu[row] < 0 else [int(episodes.gpu[row])]
        for s in cols:
            divisor[on, s] = np.maximum(divisor[on, s], episodes.factor[row])
            bits[on, s] |= sig
    return divisor, bits


def with_slow_preset(config: SynthConfig, name: str, **overrides: Any) -> SynthConfig:
    """Return ``config`` with the fail-slow knob set ``name`` applied, then ``overrides``.

    Raises
    ------
    ValueError
        An unknown preset name.
    """
    from dataclasses import replace

    if name not in SLOW_PRESETS:
        msg = f"unknown slow preset {name!r}; use one of {', '.join(SLOW_PRESETS)}."
        raise ValueError(msg)
    return replace(config, **(SLOW_PRESETS[name] | {"slow_preset": name} | overrides))
