"""The report section "Realised goodput and how well the model predicted it" (issue #16).

:func:`read_realised_goodput` reads the goodput marts (``rpt_fleet_goodput``,
``fct_job_goodput``, ``rpt_projection_backtest``; docs/goodput.md §3 to §5) through
:mod:`pipelines.analysis.goodput_summary`, the queries ``relia goodput`` prints. A warehouse without
them, or with no ledger row, gives a section that says so; a back-test with no row says it has
not been run yet. :func:`realised_figures` draws the section's two figures (matplotlib, no
pyplot state): realised goodput per GPU bucket with both weightings next to where the
GPU-hours went, and the calibration of the projection (predicted against measured goodput,
observed against expected interruptions).

Decisions where the contract is silent: the section covers every ledger job of the
observation window, not only the report week (a job spans weeks; the week's own row of the
``iso_week`` roll-up is quoted when there is one); an O/E interval entirely above 1 reads
"more than predicted", entirely below 1 "fewer than predicted".
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any, TypeGuard

from pipelines.analysis.goodput_summary import (
    GPU_BUCKETS,
    PERIODS,
    backtest_class_rows,
    backtest_rows,
    fleet_rows,
    missing_goodput_views,
    nothing_expected,
    oe_verdict,
)
from pipelines.report.period import query

if TYPE_CHECKING:
    from collections.abc import Mapping

    import duckdb
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

    from pipelines.report.containers import RealisedGoodput

__all__ = [
    "CATEGORIES",
    "calibration_figure",
    "oe_verdict",
    "read_realised_goodput",
    "realised_figures",
    "realised_goodput_figure",
]

CATEGORIES = (
    ("productive", "productive", "#15803d"),
    ("checkpoint", "checkpoint saves", "#1d4ed8"),
    ("wasted", "work redone", "#c2410c"),
    ("restart", "restarts", "#b91c1c"),
    ("startup", "start-up", "#a16207"),
    ("other", "other", "#94a3b8"),
)
"""Ledger categories (column prefix of the ``*_share`` columns), label and colour, in order."""
_PERIOD_STYLE = {
    "all": ("o", "#0f172a"),
    "first half": ("s", "#64748b"),
    "second half": ("^", "#c2410c"),
}
_ASSUMPTIONS = """
select
    assumed_startup_s,
    assumed_restart_s,
    assumed_checkpoint_interval_s,
    assumed_checkpoint_s,
    count(*) as n_jobs
from fct_job_goodput
where estimated
group by all
order by n_jobs desc
"""


_UNTIED = """
select tie, count(*) as n_logs
from rpt_training_log_ties
where tie in ('ambiguous', 'none')
group by tie
"""


def _finite(value: object) -> TypeGuard[float]:
    return isinstance(value, int | float) and math.isfinite(value)


def read_realised_goodput(con: duckdb.DuckDBPyConnection, week: str) -> RealisedGoodput:
    """Read the section's rows from the goodput marts.

    Parameters
    ----------
    con
        Warehouse connection (read-only is enough).
    week
        The report's ISO week; its ``iso_week`` roll-up row, when there is one, is ``week``.

    Returns
    -------
    RealisedGoodput
        ``missing`` (goodput marts the warehouse lacks), ``has_ledger``, ``has_backtest``;
        ``all`` (the fleet row, or None), ``buckets`` (``gpu_bucket`` rows, small to large),
        ``week`` (the report week's row, or None), ``n_jobs``, ``n_measured``, ``n_estimated``,
        ``assumptions`` (the assumed values of estimated ledgers and how many jobs use each set),
        ``untied`` (training logs not used: ``ambiguous`` and ``none`` counts) and
        ``backtest`` (rows of :func:`pipelines.analysis.goodput_summary.backtest_rows`, each with
        its ``verdict`` from :func:`oe_verdict`), ``backtest_classes`` (the same run per component
        class over all its jobs, :func:`pipelines.analysis.goodput_summary.backtest_class_rows`,
        classes that observed or expected an interruption), and ``backtest_missing`` (``{"missing",
        "supply"}`` when no back-test is stored because the warehouse lacks unit lives or
        finished jobs; else None). Goodput and shares are fractions.
    """
    missing = missing_goodput_views(con)
    has_views = not {"fct_job_goodput", "rpt_fleet_goodput"} & set(missing)
    fleet = fleet_rows(con) if has_views else []
    overall = next((r for r in fleet if r["dimension"] == "all"), None)
    n_jobs = int(overall["n_jobs"] or 0) if overall else 0
    n_estimated = int(overall["n_estimated"] or 0) if overall else 0
    assumptions = query(con, _ASSUMPTIONS).to_dicts() if n_estimated else []
    untied = {"ambiguous": 0, "none": 0}
    if has_views:
        untied |= {r["tie"]: int(r["n_logs"]) for r in query(con, _UNTIED).to_dicts()}
    backtest = []
    by_class: list[dict[str, Any]] = []
    if "rpt_projection_backtest" not in missing:
        backtest = backtest_rows(con)
        # the classes with something to compare over all the jobs (the table's rows)
        by_class = [
            r
            for r in backtest_class_rows(con)
            if r["bucket"] == "all" and (r["interruptions_observed"] or not nothing_expected(r))
        ]
    lack = None
    if not backtest and not missing:
        from pipelines.analysis.backtest import missing_inputs

        lack = missing_inputs(con)
    return {
        "backtest_missing": None
        if lack is None
        else {"missing": lack.missing, "supply": lack.supply},
        "missing": missing,
        "has_ledger": n_jobs > 0,
        "has_backtest": bool(backtest),
        "all": overall,
        "buckets": [r for r in fleet if r["dimension"] == "gpu_bucket"],
        "week": next(
            (r for r in fleet if r["dimension"] == "iso_week" and r["value"] == week), None
        ),
        "n_jobs": n_jobs,
        "n_measured": int(overall["n_measured"] or 0) if overall else 0,
        "n_estimated": n_estimated,
        "assumptions": assumptions,
        "untied": untied,
        "backtest": backtest,
        "backtest_classes": by_class if backtest else [],
    }


# --------------------------------------------------------------------------------------------
# Figures
# --------------------------------------------------------------------------------------------
def _figure(width: float, height: float) -> Figure:
    from matplotlib.figure import Figure

    fig = Figure(figsize=(width, height), layout="constrained")
    fig.set_facecolor("white")
    return fig


def _style(ax: Any) -> None:
    ax.grid(True, color="#e2e8f0", linewidth=0.8)
    ax.set_axisbelow(True)
    for side in ("top", "right"):
        ax.spines[side].set_visible(False)


def _value(row: dict[str, Any], column: str) -> float:
    value = row.get(column)
    return float(value) if _finite(value) else math.nan


# the figures read a section (RealisedGoodput), or the part a stand-in for ReportData gives
def realised_goodput_figure(section: Mapping[str, Any]) -> Figure | None:
    """Draw goodput per GPU bucket (GPU-hour and job weighted) and where the GPU-hours went.

    Left: per bucket (and the fleet), goodput weighted by GPU-hours next to goodput weighted
    by job count. Right: each bucket's GPU-hours as stacked shares of the ledger categories.
    None when the ledger has no row.
    """
    rows = [*section.get("buckets", [])]
    if section.get("all") is not None:
        rows.append(section["all"])
    if not section.get("has_ledger") or not rows:
        return None
    import numpy as np

    labels = [f"{r['value']} GPUs" if r["dimension"] == "gpu_bucket" else "fleet" for r in rows]
    y = np.arange(len(rows))[::-1]  # the first bucket on top, the fleet at the bottom
    fig = _figure(7.5, 0.42 * len(rows) + 1.4)
    left, right = fig.subplots(1, 2, sharey=True)
    gpu_h = [100 * _value(r, "goodput_gpu_hours") for r in rows]
    jobs = [100 * _value(r, "goodput_jobs") for r in rows]
    left.barh(y + 0.2, gpu_h, height=0.4, color="#1d4ed8", label="weighted by GPU-hours")
    left.barh(y - 0.2, jobs, height=0.4, color="#94a3b8", label="weighted by jobs")
    left.set_yticks(y, labels, fontsize=8)
    left.set_xlim(0, 100)
    left.set_xlabel("realised goodput (%)", fontsize=8)
    left.legend(fontsize=7, frameon=False, loc="lower left", bbox_to_anchor=(0, 1.0), ncols=2)
    start = np.zeros(len(rows))
    for column, label, color in CATEGORIES:
        share = np.array([100 * _value(r, f"{column}_share") for r in rows])
        share = np.nan_to_num(share)
        right.barh(y, share, left=start, height=0.6, color=color, label=label)
        start += share
    right.set_xlim(0, 100)
    right.set_xlabel("share of GPU-hours (%)", fontsize=8)
    right.legend(fontsize=7, frameon=False, loc="lower left", bbox_to_anchor=(0, 1.0), ncols=3)
    for ax in (left, right):
        ax.tick_params(labelsize=8)
        _style(ax)
    return fig


def calibration_figure(section: Mapping[str, Any]) -> Figure | None:
    """Draw the back-test's calibration: predicted against measured goodput, and O/E against 1.

    Left: per bucket and period, the predicted goodput (with its interval as an error bar)
    against the measured one, and the line ``y = x``. Right: observed over expected
    interruptions per bucket and period with the exact Poisson interval, and the line at 1; a
    bound beyond the plot (or open) is drawn to the edge with an arrow head, and a row with
    nothing expected (no ratio) is left out. Both goodput axes span the values drawn, with a
    margin of 15 % of their range (at least 2 points), inside 0 to 100 %. None when the
    back-test has no row.
    """
    rows = section.get("backtest", [])
    if not rows:
        return None

    fig = _figure(7.5, 3.4)
    left, right = fig.subplots(1, 2)
    buckets = [b for b in (*GPU_BUCKETS, "all") if any(r["bucket"] == b for r in rows)]
    buckets += sorted({str(r["bucket"]) for r in rows} - set(buckets))
    left.plot([0, 100], [0, 100], color="#94a3b8", linestyle=":", linewidth=1, label="y = x")
    top = 2.0
    for row in rows:
        hi = row.get("oe_hi")
        if _finite(hi):
            top = max(top, min(float(hi), 4.0))
    offsets = {period: 0.22 * (i - 1) for i, period in enumerate(PERIODS)}
    for period in [*PERIODS, *sorted({str(r["period"]) for r in rows} - set(PERIODS))]:
        marker, color = _PERIOD_STYLE.get(period, ("D", "#7c3aed"))
        chosen = [r for r in rows if r["period"] == period]
        if not chosen:
            continue
        _draw_goodput_points(left, chosen, period, marker, color)
        # a row with nothing expected has no ratio: it is in the table, not on the plot
        ratios = [r for r in chosen if _finite(r.get("oe_ratio"))]
        if ratios:
            x = [buckets.index(str(r["bucket"])) + offsets.get(period, 0.0) for r in ratios]
            _draw_oe_points(right, ratios, x, top, period, marker, color)
    drawn = [
        100 * _value(r, c)
        for r in rows
        for c in (
            "goodput_measured",
            "goodput_predicted",
            "goodput_predicted_lo",
            "goodput_predicted_hi",
        )
    ]
    finite = [v for v in drawn if math.isfinite(v)] or [0.0, 100.0]
    pad = 0.15 * max(max(finite) - min(finite), 2.0)
    limits = (max(0.0, min(finite) - pad), min(100.0, max(finite) + pad))
    left.set_xlim(*limits)
    left.set_ylim(*limits)
    left.set_xlabel("measured goodput (%)", fontsize=8)
    left.set_ylabel("predicted goodput (%)", fontsize=8)
    left.set_title("goodput, GPU-hour weighted", fontsize=9, loc="left")
    left.legend(fontsize=7, frameon=False, loc="upper left")
    right.axhline(1.0, color="#94a3b8", linestyle=":", linewidth=1)
    right.set_xticks(range(len(buckets)), buckets, fontsize=7, rotation=20)
    right.set_xlim(-0.6, len(buckets) - 0.4)
    right.set_ylim(0, top * 1.05)
    right.set_ylabel("observed / expected interruptions", fontsize=8)
    right.set_title("O/E with its 95 % interval", fontsize=9, loc="left")
    for ax in (left, right):
        ax.tick_params(labelsize=7)
        _style(ax)
    return fig


def _draw_goodput_points(
    ax: Axes, chosen: list[dict[str, Any]], period: str, marker: str, color: str
) -> None:
    """Draw a period's predicted against measured goodput, bucket names on the ``all`` ones."""
    import numpy as np

    measured = np.array([100 * _value(r, "goodput_measured") for r in chosen])
    predicted = np.array([100 * _value(r, "goodput_predicted") for r in chosen])
    lo = np.array([100 * _value(r, "goodput_predicted_lo") for r in chosen])
    hi = np.array([100 * _value(r, "goodput_predicted_hi") for r in chosen])
    yerr = np.vstack([np.nan_to_num(predicted - lo), np.nan_to_num(hi - predicted)])
    ax.errorbar(
        measured,
        predicted,
        yerr=np.clip(yerr, 0, None),
        fmt=marker,
        color=color,
        markersize=4,
        capsize=2,
        linewidth=1,
        label=period,
    )
    if period == "all":
        for r, x, v in zip(chosen, measured, predicted, strict=True):
            if math.isfinite(x) and math.isfinite(v):
                ax.annotate(
                    str(r["bucket"]),
                    (x, v),
                    textcoords="offset points",
                    xytext=(4, -9),
                    fontsize=6.5,
                )


def _draw_oe_points(
    ax: Axes,
    ratios: list[dict[str, Any]],
    positions: list[float],
    top: float,
    period: str,
    marker: str,
    color: str,
) -> None:
    """Draw a period's O/E ratios with their intervals, a bound past ``top`` as an arrow head."""
    import numpy as np

    x = np.array(positions)
    shown = np.array([_value(r, "oe_ratio") for r in ratios])
    oe_lo = np.array([_value(r, "oe_lo") for r in ratios])
    oe_hi = np.array([_value(r, "oe_hi") for r in ratios])
    cut = ~np.isfinite(oe_hi) | (oe_hi > top)
    upper = np.where(cut, top, oe_hi)
    lower = np.where(np.isfinite(oe_lo), oe_lo, 0.0)
    ax.errorbar(
        x,
        shown,
        yerr=np.clip(np.vstack([shown - lower, upper - shown]), 0, None),
        fmt=marker,
        color=color,
        markersize=4,
        capsize=2,
        linewidth=1,
        label=period,
    )
    if cut.any():
        ax.plot(x[cut], np.full(int(cut.sum()), top), "^", color=color, markersize=4)


def realised_figures(section: Mapping[str, Any]) -> dict[str, Figure]:
    """Return the section's figures by name (``realised_goodput``, ``calibration``).

    A figure with nothing to plot is left out.
    """
    made = {
        "realised_goodput": realised_goodput_figure(section),
        "calibration": calibration_figure(section),
    }
    return {name: fig for name, fig in made.items() if fig is not None}
