"""Per-rank straggler reports in the synthetic Megatron logs (``SynthConfig.straggler_lines``).

Formats, as the real samples in ``tests/pipelines/sources/samples/failslow/`` print them:

- ``"megatron"``: Megatron-Core ``StragglerDetector.report()`` (``--log-straggler``,
  ``megatron/core/utils.py``; ``megatron_core_straggler_readme.log``), after every progress
  line, through Python logging (``INFO:megatron.core.utils:``)::

    INFO:megatron.core.utils:[2024-03-14 23:07:56] | MnRtt/Rnk: 3453.08ms/8 | MxRtt/Rnk: ...

  with ``Pwr`` in milliwatts labelled ``W`` (NVML's unit), ``Tmp`` °C, ``Utl`` %, ``Clk`` MHz
  as integers, ``Rtt`` / ``DRtt`` ms and ``Etpt`` TF with two decimals, then (``mmcnt`` 4) the
  ``^^^^ Bottom 4 Ranks with lowest  Etpt(TF): v/r, ...`` and ``^^^^ Top    4 ...`` lines.
- ``"nvrx"``: the NVIDIA resiliency extension's report as NeMo / Megatron-Bridge print it
  (``nvrx_megatron_bridge_docs_512_ranks.log``) every ``straggler_report_s`` seconds, and a
  ``STRAGGLER DETECTION WARNING`` line (``nvrx_megatron_bridge_docs_warnings.log``) for ranks
  scoring under 0.7.

The model: a rank's traced time per iteration (``Rtt``) is ``0.93 x step_ms`` times the mean
slowdown of its own unit over the interval (healthy ranks within +0.4 % noise, a slow rank above
every healthy one: it is always ``MxRtt`` and ``MnEtpt``); ``Etpt`` is the job's TFLOP/s per GPU
scaled by ``base / Rtt``; a slow rank whose episode has a DCGM signature reports its clock
divided by ``S``. NVRx scores: healthy ranks 0.96-1.00 (relative) and 0.97-1.00 (individual),
a slow rank that noise divided by its mean slowdown over the report window (``~ 1/S`` against
the median). Jobs over 64 ranks draw the healthy figures for 64 ranks picked at random.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from synth.failslow import SM_CLOCK_MHZ

if TYPE_CHECKING:
    from synth.failslow import Pace

LOGGER = "INFO:megatron.core.utils:"
MMCNT = 4
NVRX_THRESHOLD = 0.7
_SAMPLED = 64


def slow_means(pace: Pace | None, starts: np.ndarray) -> dict[int, float]:
    """Per slow rank, its mean slowdown over the steps starting at ``starts`` (only ranks > 1)."""
    if pace is None or starts.size == 0:
        return {}
    out = {}
    for rank, s in pace.rank_factors(starts).items():
        mean = float(s.mean())
        if mean > 1.0:
            out[rank] = mean
    return out


def _ranks(rng: np.random.Generator, world: int, slow: dict[int, float]) -> np.ndarray:
    """Return the ranks a report shows: every rank, or 64 at random plus the slow ones, sorted."""
    if world <= _SAMPLED:
        return np.arange(world, dtype=np.int64)
    picked = rng.choice(world, _SAMPLED, replace=False)
    return np.unique(np.concatenate([picked, np.array(list(slow), dtype=np.int64)]))


def _pair(tag: str, values: np.ndarray, ranks: np.ndarray, fmt: str) -> str:
    lo, hi = int(np.argmin(values)), int(np.argmax(values))
    return (
        f"Mn{tag}/Rnk: {fmt.format(values[lo])}/{ranks[lo]} | "
        f"Mx{tag}/Rnk: {fmt.format(values[hi])}/{ranks[hi]}"
    )


def megatron_report(
    rng: np.random.Generator,
    when: str,
    world: int,
    step_ms: float,
    tflops: float,
    slow: dict[int, float],
    clocks: dict[int, int],
) -> list[str]:
    """One ``StragglerDetector`` report: the min/max line and the bottom/top Etpt lines.

    ``slow``: slow ranks' mean slowdown over the interval; ``clocks``: SM clocks of slow ranks
    whose episode shows in DCGM.
    """
    ranks = _ranks(rng, world, slow)
    n = ranks.size
    base = 0.93 * step_ms
    rtt = base * (1 + 0.004 * rng.random(n))
    clk = rng.choice([1950, 1965, SM_CLOCK_MHZ], n)
    for i, r in enumerate(ranks.tolist()):
        if r in slow:
            rtt[i] = base * slow[r] * 1.004
        if r in clocks:
            clk[i] = clocks[r]
    etpt = tflops * base / rtt
    power = rng.integers(600_000, 690_000, n)
    temp = rng.integers(50, 67, n)
    util = rng.integers(97, 101, n)
    drtt = rng.uniform(1.0, 40.0, n)
    fields = [
        _pair("Rtt", rtt, ranks, "{:.2f}ms"),
        _pair("Pwr", power, ranks, "{:d}W"),
        _pair("Tmp", temp, ranks, "{:d}C"),
        _pair("Utl", util, ranks, "{:d}%"),
        _pair("Clk", clk, ranks, "{:d}MHz"),
        _pair("DRtt", drtt, ranks, "{:.2f}ms"),
        _pair("Etpt", etpt, ranks, "{:.2f}TF"),
    ]
    lines = [f"{LOGGER}[{when}] | " + " | ".join(fields)]
    if 1 < MMCNT < n:
        order = np.argsort(etpt, kind="stable")
        bottom = "".join(f" {etpt[i]:.2f}/{ranks[i]}," for i in order[:MMCNT])
        top = "".join(f" {etpt[i]:.2f}/{ranks[i]}," for i in order[n - MMCNT :])
        lines.append(f"{LOGGER}^^^^ Bottom {MMCNT} Ranks with lowest  Etpt(TF):{bottom}")
        lines.append(f"{LOGGER}^^^^ Top    {MMCNT} Ranks with highest Etpt(TF):{top}")
    return lines


def _nvrx_section(
    title: str, world: int, ranks: np.ndarray, score: np.ndarray, hosts: list[str], g: int
) -> list[str]:
    k = min(5, ranks.size)
    worst = np.argsort(score, kind="stable")[:k]
    best = np.argsort(-score, kind="stable")[:k]
    lines = [f"GPU {title} performance:", f" Worst performing {k}/{world} ranks:"]
    lines += [f"  Rank={ranks[i]} Node={hosts[ranks[i] // g]} Score={score[i]:.2f}" for i in worst]
    lines.append(f" Best performing {k}/{world} ranks:")
    lines += [f"  Rank={ranks[i]} Node={hosts[ranks[i] // g]} Score={score[i]:.2f}" for i in best]
    return lines


def nvrx_report(
    rng: np.random.Generator, world: int, hosts: list[str], g: int, slow: dict[int, float]
) -> list[str]:
    """One NVRx report (relative and individual scores) and its warnings."""
    ranks = _ranks(rng, world, slow)
    n = ranks.size
    relative = np.round(rng.uniform(0.96, 1.0, n), 2)
    individual = np.round(rng.uniform(0.97, 1.0, n), 2)
    for i, r in enumerate(ranks.tolist()):
        if r in slow:
            relative[i] = round(float(relative[i]) / slow[r], 2)
            individual[i] = round(float(individual[i]) / slow[r], 2)
    lines = _nvrx_section("relative", world, ranks, relative, hosts, g)
    lines.append("")
    lines += _nvrx_section("individual", world, ranks, individual, hosts, g)
    lines += ["", f" Straggler report processing time: {rng.uniform(0.01, 0.09):.3f} sec."]
    for score, text in (
        (relative, "Some GPUs have worse relative performance."),
        (individual, "Some GPUs performance dropped."),
    ):
        order = np.argsort(score, kind="stable")
        low = [int(ranks[i]) for i in order if score[i] < NVRX_THRESHOLD]
        if low:
            lines.append(f"STRAGGLER DETECTION WARNING: {text} Affected ranks: {low}")
    return lines
