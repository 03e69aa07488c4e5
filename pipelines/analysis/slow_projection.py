"""The rank-pace model fitted on the warehouse's own slow episodes: expected slowdown against N.

:func:`project_measured_slow` reads the slow episodes (``int_slow_episodes``) of the jobs whose
slow time is measured (``fct_job_goodput.slow_measured``), fits the per-unit laws
(:func:`models.fit_slow_laws`: episodes blamed on a GPU, else on a node) with the GPU- or
node-hours those jobs ran steps as exposure, and projects ``slowdown(N)`` with its bootstrap
interval (:func:`models.slowdown_curve`). The weekly report plots it beside the measured
slowdown per job-size bucket.

Decisions where the contract is silent:

* **Exposure** is the time the jobs ran steps, ``productive_s + slow_s`` (where an episode can be
  seen), times their GPUs (``unit="gpu"``) or nodes (``"node"``); ``job_hours`` (for the
  unattributed episodes' job-level rate) is the same time per job.
* **Censored**: an episode that ends at its attempt's last progress line (``int_step_pace``) was
  cut by the attempt's end.
* An episode with no duration (it starts at its attempt's first line, no line before it) or a
  slowdown of 1 or less cannot enter the laws: it is counted in ``n_skipped``, never dropped
  silently.
* With no episode blamed on a unit (attribution not made, or no per-rank or DCGM evidence) there
  is no per-unit fit: the result says what is missing and what would supply it. Unattributed
  episodes beside blamed ones make the curve a lower bound (``lower_bound``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import duckdb

    from models import SlowProjection

__all__ = ["SLOW_FIT_SUPPLY", "MeasuredSlowFit", "project_measured_slow", "projection_sizes"]

SLOW_FIT_SUPPLY = (
    "per-rank straggler reports (Megatron-LM --log-straggler, NVIDIA resiliency extension) or "
    "DCGM SM clocks and throttle reasons on the jobs' nodes would supply the blame"
)
"""What supplies the attribution a per-unit fit needs, in words."""

_EPISODES = """
with ends as (
    select job_id_raw, attempt, max(ts) as attempt_end_ts
    from int_step_pace
    group by job_id_raw, attempt
)
select
    e.start_ts,
    e.end_ts,
    e.slowdown,
    e.blamed_host,
    e.blamed_gpu,
    e.attribution,
    coalesce(e.end_ts >= ends.attempt_end_ts, true) as censored
from int_slow_episodes as e
inner join fct_job_goodput as j
    on e.job_id_raw = j.job_id_raw and j.slow_measured and j.n_gpus > 0
left join ends on e.job_id_raw = ends.job_id_raw and e.attempt = ends.attempt
"""
_EXPOSURE = """
select
    sum(n_gpus * (productive_s + slow_s)) / 3600.0 as gpu_hours,
    sum(n_nodes * (productive_s + slow_s)) / 3600.0 as node_hours,
    sum(productive_s + slow_s) / 3600.0 as job_hours,
    coalesce(round(median(n_gpus / nullif(n_nodes, 0))), 8) as gpus_per_node,
    max(n_gpus) as max_gpus
from fct_job_goodput
where slow_measured and n_gpus > 0
"""


@dataclass(frozen=True)
class MeasuredSlowFit:
    """What :func:`project_measured_slow` found.

    Attributes
    ----------
    n_episodes
        Slow episodes of the slow-measured jobs.
    n_blamed
        Of those, blamed on a GPU or node (``attribution`` other than ``unattributed``).
    n_skipped
        Episodes with no duration or a slowdown of 1 or less, left out of the fit.
    unit
        ``"gpu"`` or ``"node"``: the unit the laws are per; None without a fit.
    n_fitted, unit_hours, rate_per_unit_h, rate_lo_per_unit_h, rate_hi_per_unit_h
        Episodes in the per-unit laws, their exposure and the rate with its exact 95 % interval.
    lower_bound
        Unattributed episodes exist, so the per-unit curve is a lower bound on fail-slow.
    curve
        One :class:`models.SlowProjection` per size of :func:`projection_sizes`, with its
        bootstrap interval; empty without a fit.
    missing, supply
        Why there is no fit and what would supply one (None with a fit).
    """

    n_episodes: int
    n_blamed: int
    n_skipped: int
    unit: str | None = None
    n_fitted: int = 0
    unit_hours: float | None = None
    rate_per_unit_h: float | None = None
    rate_lo_per_unit_h: float | None = None
    rate_hi_per_unit_h: float | None = None
    lower_bound: bool = False
    curve: tuple[SlowProjection, ...] = ()
    missing: str | None = None
    supply: str | None = None


def projection_sizes(max_gpus: int, *, points_per_decade: int = 8) -> list[int]:
    """Job sizes from 1 GPU to ``max(100_000, max_gpus)``, evenly spaced on a log axis."""
    top = max(100_000, int(max_gpus))
    n = math.ceil(math.log10(top) * points_per_decade)
    sizes = {round(10 ** (math.log10(top) * i / n)) for i in range(n + 1)}
    return sorted(sizes)


def project_measured_slow(
    con: duckdb.DuckDBPyConnection, *, n_boot: int = 200, random_state: int = 0
) -> MeasuredSlowFit:
    """Fit the rank-pace model on the warehouse's slow episodes and project slowdown against N.

    Parameters
    ----------
    con
        Warehouse connection (read-only is enough) with the fail-slow views.
    n_boot
        Bootstrap replicates of the fit (the curve's interval).
    random_state
        Seed of the bootstrap: the same warehouse gives the same curve.

    Returns
    -------
    MeasuredSlowFit
        The fit's figures and curve, or ``missing`` and ``supply`` when no unit has episodes
        enough to fit (fewer than two complete episodes blamed on a GPU or on a node).
    """
    import polars as pl

    from models import fit_slow_laws, slowdown_curve
    from pipelines import warehouse

    episodes = warehouse.query(con, _EPISODES)
    exposure = warehouse.query(con, _EXPOSURE).row(0, named=True)
    blamed = episodes.filter(pl.col("attribution").fill_null("unattributed") != "unattributed")
    valid = (pl.col("end_ts") > pl.col("start_ts")) & (pl.col("slowdown") > 1.0)
    usable = episodes.filter(valid.fill_null(False))
    counts = MeasuredSlowFit(
        n_episodes=episodes.height,
        n_blamed=blamed.height,
        n_skipped=episodes.height - usable.height,
    )
    if not exposure["gpu_hours"]:
        return replace(
            counts,
            missing="no job has its slow time measured",
            supply="training logs with per-step times (Megatron-LM, torchtitan) would supply it",
        )
    fit = None
    for unit, hours in (("gpu", exposure["gpu_hours"]), ("node", exposure["node_hours"])):
        if not hours:
            continue
        try:
            fit = fit_slow_laws(
                usable,
                unit_hours=float(hours),
                unit=unit,
                job_hours=float(exposure["job_hours"]),
                n_boot=n_boot,
                random_state=random_state,
            )
        except ValueError:
            continue
        break
    if fit is None:
        return replace(counts, missing=_why_no_fit(counts), supply=SLOW_FIT_SUPPLY)
    sizes = projection_sizes(int(exposure["max_gpus"] or 1))
    curve = slowdown_curve(fit, sizes, gpus_per_node=int(exposure["gpus_per_node"]))
    return replace(
        counts,
        unit=fit.laws.unit,
        n_fitted=fit.n_episodes,
        unit_hours=fit.unit_hours,
        rate_per_unit_h=fit.laws.rate_per_unit_h,
        rate_lo_per_unit_h=fit.rate_lo_per_unit_h,
        rate_hi_per_unit_h=fit.rate_hi_per_unit_h,
        lower_bound=fit.lower_bound,
        curve=curve,
    )


def _why_no_fit(counts: MeasuredSlowFit) -> str:
    """Say in one clause why no per-unit law could be fitted."""
    n, blamed = counts.n_episodes, counts.n_blamed
    if not n:
        return "no slow episode was found in the measured jobs' step times"
    if not blamed:
        return (
            f"none of the {n:,} slow episode{'' if n == 1 else 's'} is blamed on a GPU or node "
            "(int_slow_episodes.attribution is 'unattributed')"
        )
    return (
        f"{blamed:,} of {n:,} slow episodes are blamed on a unit: a per-unit fit needs two "
        "complete ones on GPUs or on nodes"
    )
