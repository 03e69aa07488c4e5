"""The report section "Fail-slow beside fail-stop" (docs/goodput.md §7).

:func:`read_fail_slow` reads the badput split by cause from ``rpt_fleet_goodput`` (fail-stop:
work redone and restarts; fail-slow: time above the healthy pace, over the jobs whose slow time
is measured) by job-size bucket and by ISO week, the slow-measured coverage, the measured
slowdown per job-size bucket from ``fct_job_goodput``, the repeatedly slow units of
``rpt_slow_units`` (shown beside the lemon nodes), and the rank-pace projection fitted on the
warehouse's episodes (:func:`pipelines.analysis.slow_projection.project_measured_slow`).
:func:`fail_slow_figure` plots the slowdown against job size, measured and projected.

Decisions where the contract is silent:

* **Measured slowdown** of a job: its running time over its healthy running time,
  ``1 / (1 - share)`` with ``share = slow_s / (productive_s + slow_s)`` (the rank-pace model's
  ``share``: the part of the running time lost to the slow pace). Per bucket: the mean share of
  its slow-measured jobs with a Student-t 95 % interval (none for one job), as a slowdown;
  plotted at the geometric mean of the jobs' GPUs.
* Without a slow-measured job the plot is replaced by one line saying so; with measured jobs
  but no per-unit fit, the measured points are plotted and one line says why there is no
  projection.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

from pipelines.analysis.goodput_summary import GPU_BUCKETS, fleet_rows, missing_goodput_views
from pipelines.analysis.goodput_summary import slow_missing as roll_up_missing
from pipelines.report.period import query

if TYPE_CHECKING:
    from collections.abc import Mapping

    import duckdb
    from matplotlib.figure import Figure

    from pipelines.analysis.slow_projection import MeasuredSlowFit
    from pipelines.report.containers import FailSlow

__all__ = ["fail_slow_figure", "measured_slowdown", "read_fail_slow", "slow_units"]

MAX_UNITS = 20
"""Repeatedly slow units listed (most GPU-hours first)."""
NO_STEP_TIMES = "training logs with per-step times (Megatron-LM, torchtitan) would supply it"
_BUCKET = """
case
    when n_gpus <= 8 then '1-8'
    when n_gpus <= 64 then '9-64'
    when n_gpus <= 512 then '65-512'
    when n_gpus <= 4096 then '513-4096'
    else '4097+'
end
"""
_RUNNING = "productive_s + slow_s > 0"
_SHARE = "slow_s / (productive_s + slow_s)"
_MEASURED = f"""
select
    {_BUCKET} as bucket,
    count(*) filter (where {_RUNNING}) as n_jobs,
    count(*) filter (where not ({_RUNNING})) as n_no_steps,
    exp(avg(ln(n_gpus)) filter (where {_RUNNING})) as n_gpus_geomean,
    min(n_gpus) filter (where {_RUNNING}) as min_gpus,
    max(n_gpus) filter (where {_RUNNING}) as max_gpus,
    avg({_SHARE}) filter (where {_RUNNING}) as share_mean,
    stddev_samp({_SHARE}) filter (where {_RUNNING}) as share_sd
from fct_job_goodput
where slow_measured and n_gpus > 0
group by all
"""
_UNITS = """
select host, gpu, unit_level, n_episodes, n_jobs, first_ts, last_ts, slow_s, slow_gpu_hours,
    episode_hours, max_slowdown
from rpt_slow_units
order by slow_gpu_hours desc nulls last, slow_s desc, host, gpu nulls first
limit $limit
"""
_PRESENT = (
    "select count(*) from information_schema.columns "
    "where table_schema = current_schema() and table_name = $name and column_name = $column"
)


def _present(con: duckdb.DuckDBPyConnection, name: str, column: str) -> bool:
    """Whether the warehouse has the view or table ``name`` with the column ``column``."""
    return bool(query(con, _PRESENT, {"name": name, "column": column}).item())


# Jinja template rows: a dict is the edge
def measured_slowdown(con: duckdb.DuckDBPyConnection) -> list[dict[str, Any]]:
    """Return the measured slowdown per job-size bucket (small to large), with its interval.

    Each row: ``bucket``, ``n_jobs`` (slow-measured jobs that kept a step), ``n_no_steps``
    (slow-measured jobs that kept none: no running time, not in the mean), ``n_gpus_geomean``,
    ``min_gpus``, ``max_gpus``, ``share_mean`` (and ``share_lo`` / ``share_hi``: Student-t
    95 %, None for one job) and ``slowdown`` / ``slowdown_lo`` / ``slowdown_hi``
    (``1 / (1 - share)``).
    """
    from scipy import stats

    rows = [r for r in query(con, _MEASURED).to_dicts() if r["n_jobs"]]
    for row in rows:
        n, mean, sd = int(row["n_jobs"]), float(row["share_mean"]), row["share_sd"]
        lo = hi = None
        if n > 1 and sd is not None and math.isfinite(sd):
            half = float(stats.t.ppf(0.975, n - 1)) * float(sd) / math.sqrt(n)
            lo, hi = max(0.0, mean - half), min(mean + half, 1.0)
        row |= {
            "share_lo": lo,
            "share_hi": hi,
            "slowdown": _slowdown(mean),
            "slowdown_lo": None if lo is None else _slowdown(lo),
            "slowdown_hi": None if hi is None else _slowdown(hi),
        }
    order = {b: i for i, b in enumerate(GPU_BUCKETS)}
    return sorted(rows, key=lambda r: order.get(str(r["bucket"]), len(order)))


def _slowdown(share: float) -> float:
    return math.inf if share >= 1.0 else 1.0 / (1.0 - share)


# Jinja template rows: a dict is the edge
def slow_units(con: duckdb.DuckDBPyConnection) -> list[dict[str, Any]]:
    """Return the repeatedly slow units (``rpt_slow_units``), most GPU-hours first."""
    if not _present(con, "rpt_slow_units", "slow_gpu_hours"):
        return []
    return query(con, _UNITS, {"limit": MAX_UNITS}).to_dicts()


def _units_missing(fit: MeasuredSlowFit | None, n_measured: int) -> str:
    """One line: why no unit is listed as repeatedly slow, and what would supply one."""
    from pipelines.analysis.slow_projection import SLOW_FIT_SUPPLY

    if not n_measured or fit is None:
        return f"no job has its slow time measured: {NO_STEP_TIMES}"
    if not fit.n_episodes:
        return "no slow episode in the measured jobs' step times"
    if not fit.n_blamed:
        return (
            f"none of the {fit.n_episodes:,} slow episodes is blamed on a node or GPU yet: "
            f"{SLOW_FIT_SUPPLY}"
        )
    return f"no node or GPU has two or more of the {fit.n_blamed:,} blamed slow episodes"


def read_fail_slow(con: duckdb.DuckDBPyConnection, week: str) -> FailSlow:
    """Read the section's rows: the badput split, coverage, measured slowdown, units, projection.

    Parameters
    ----------
    con
        Warehouse connection (read-only is enough).
    week
        The report's ISO week; its ``iso_week`` roll-up row, when there is one, is ``week``.

    Returns
    -------
    FailSlow
        ``missing`` (one line: why there is no fail-slow figure at all, or None), ``all``,
        ``buckets`` and ``weeks`` (``rpt_fleet_goodput`` rows with the fail-slow columns),
        ``week`` (the report week's row or None), ``n_jobs``, ``n_slow_measured``,
        ``n_slow_jobs``, ``measured`` (:func:`measured_slowdown`), ``units``
        (:func:`slow_units`) with ``units_missing`` (one line when there is none), and the
        projection: ``fit`` (:class:`~pipelines.analysis.slow_projection.MeasuredSlowFit`, or
        None without measured jobs).
    """
    fleet = fleet_rows(con) if not missing_goodput_views(con) else []
    whole = next((r for r in fleet if r["dimension"] == "all"), None)
    missing = roll_up_missing(fleet) if whole else "no job in the goodput ledger"
    n_measured = int(whole.get("n_slow_measured") or 0) if whole else 0
    fit = None
    measured: list[dict[str, Any]] = []
    fail_slow_views = _present(con, "fct_job_goodput", "slow_measured") and _present(
        con, "int_slow_episodes", "attribution"
    )
    if missing is None and n_measured and fail_slow_views:
        from pipelines.analysis.slow_projection import project_measured_slow

        measured = measured_slowdown(con)
        fit = project_measured_slow(con)
    units = slow_units(con) if missing is None else []
    return {
        "missing": missing,
        "all": whole,
        "buckets": [r for r in fleet if r["dimension"] == "gpu_bucket"],
        "weeks": [r for r in fleet if r["dimension"] == "iso_week"],
        "week": next(
            (r for r in fleet if r["dimension"] == "iso_week" and r["value"] == week), None
        ),
        "n_jobs": int(whole["n_jobs"] or 0) if whole else 0,
        "n_slow_measured": n_measured,
        "n_slow_jobs": int(whole.get("n_slow_jobs") or 0) if whole else 0,
        "measured": measured,
        "units": units,
        "units_missing": None if units else _units_missing(fit, n_measured),
        "fit": fit,
    }


# --------------------------------------------------------------------------------------------
# The figure
# --------------------------------------------------------------------------------------------
def fail_slow_figure(section: Mapping[str, Any]) -> Figure | None:
    """Plot the slowdown against job size: measured per bucket and projected by the model.

    Measured: per job-size bucket, the mean slowdown of its slow-measured jobs at the geometric
    mean of their GPUs, with the 95 % interval as an error bar and the job count beside it.
    Projected: the rank-pace model fitted on the warehouse's episodes, its expected slowdown
    against N with the bootstrap 95 % band. GPUs on a log axis. None without a measured bucket.
    """
    measured = section.get("measured") or []
    if not measured:
        return None
    import numpy as np
    from matplotlib.figure import Figure
    from matplotlib.ticker import FuncFormatter

    fig = Figure(figsize=(7.5, 3.6), layout="constrained")
    fig.set_facecolor("white")
    ax = fig.subplots()
    fit = section.get("fit")
    curve = getattr(fit, "curve", ()) or ()
    if curve:
        x = np.array([p.n_gpus for p in curve], dtype=float)
        y = np.array([p.slowdown for p in curve])
        lo = np.array([math.nan if p.slowdown_lo is None else p.slowdown_lo for p in curve])
        hi = np.array([math.nan if p.slowdown_hi is None else p.slowdown_hi for p in curve])
        band = np.isfinite(lo) & np.isfinite(hi)
        if band.any():
            ax.fill_between(x, lo, hi, where=band, color="#fed7aa", label="projected 95 %")
        ax.plot(x, y, color="#c2410c", linewidth=1.5, label="projected (rank-pace model)")
    xs = np.array([float(r["n_gpus_geomean"]) for r in measured])
    ys = np.array([float(r["slowdown"]) for r in measured])
    lo_m = np.array([_or(r["slowdown_lo"], float(r["slowdown"])) for r in measured])
    hi_m = np.array([_or(r["slowdown_hi"], float(r["slowdown"])) for r in measured])
    ax.errorbar(
        xs,
        ys,
        yerr=np.clip(np.vstack([ys - lo_m, hi_m - ys]), 0, None),
        fmt="o",
        color="#1d4ed8",
        markersize=5,
        capsize=3,
        linewidth=1,
        label="measured (bucket mean, 95 %)",
    )
    for row, x_, y_ in zip(measured, xs, hi_m, strict=True):
        ax.annotate(
            f"{row['bucket']}: {int(row['n_jobs'])} job{'' if row['n_jobs'] == 1 else 's'}",
            (x_, y_),
            textcoords="offset points",
            xytext=(4, 4),
            fontsize=7,
        )
    ax.set_xscale("log")
    top = max([100_000.0, *(float(p.n_gpus) for p in curve), *(float(v) for v in xs)])
    ax.set_xlim(0.8, top * 1.25)
    ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _pos: f"{v:,.0f}"))
    ax.axhline(1.0, color="#94a3b8", linestyle=":", linewidth=1)
    ax.set_xlabel("GPUs in the job", fontsize=8)
    ax.set_ylabel("slowdown (× the healthy step time)", fontsize=8)
    ax.tick_params(labelsize=8)
    ax.grid(True, color="#e2e8f0", linewidth=0.8)
    ax.set_axisbelow(True)
    for side in ("top", "right"):
        ax.spines[side].set_visible(False)
    ax.legend(fontsize=7, frameon=False, loc="lower left", bbox_to_anchor=(0, 1.0), ncols=3)
    return fig


def _or(value: object, default: float) -> float:
    return float(value) if isinstance(value, int | float) and math.isfinite(value) else default
