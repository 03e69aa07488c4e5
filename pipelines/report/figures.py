"""The report's figures: matplotlib (Agg, no pyplot state) PNGs as data URIs or files.

Every ``*_figure`` function is pure: frames of :class:`~pipelines.report.containers.ReportData`
in, a :class:`matplotlib.figure.Figure` out (None when there is nothing to plot).
"""

from __future__ import annotations

import base64
import io
import math
import re
from typing import TYPE_CHECKING, Any

from pipelines.report.failslow import fail_slow_figure
from pipelines.report.format import fmt_sig
from pipelines.report.goodput import realised_figures
from pipelines.report.period import MIN_AT_RISK
from pipelines.runtime.settings import read_lock_timeout_s

if TYPE_CHECKING:
    from collections.abc import Callable
    from pathlib import Path

    import polars as pl
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

    from pipelines.report.containers import (
        ClassProbabilityPlots,
        ReportData,
        SurvivalCurve,
    )
    from pipelines.report.period import ReportPeriod

DPI = 110
COLORS = {
    "week": "#c2410c",
    "trailing": "#64748b",
    "bar": "#94a3b8",
    "line": "#1d4ed8",
    "band": "#93c5fd",
    "fit": "#c2410c",
    "grid": "#e2e8f0",
}


# --------------------------------------------------------------------------------------------
# Figures (matplotlib without pyplot: no global state, safe in threads and flows)
# --------------------------------------------------------------------------------------------
def _figure(width: float, height: float) -> Figure:
    from matplotlib.figure import Figure

    fig = Figure(figsize=(width, height), layout="constrained")
    fig.set_facecolor("white")
    return fig


def _style(ax: Any) -> None:
    ax.grid(True, color=COLORS["grid"], linewidth=0.8)
    ax.set_axisbelow(True)
    for side in ("top", "right"):
        ax.spines[side].set_visible(False)


def png_data_uri(fig: Figure) -> str:
    """Encode a figure as a ``data:image/png;base64,...`` URI."""
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=DPI, metadata={"Software": None})
    return "data:image/png;base64," + base64.b64encode(buffer.getvalue()).decode("ascii")


def class_failures_figure(classes: pl.DataFrame, *, week: str, n_trailing: int) -> Figure | None:
    """Draw grouped bars per class: failures this week and the trailing weekly mean."""
    import numpy as np
    import polars as pl

    shown = classes.filter((pl.col("failures_to_date") > 0) | (pl.col("failures_week") > 0)).sort(
        "failures_to_date"
    )
    if shown.height == 0:
        return None
    fig = _figure(7.5, 0.32 * shown.height + 1.0)
    ax = fig.add_subplot()
    y = np.arange(shown.height)
    ax.barh(
        y + 0.2,
        shown.get_column("failures_week"),
        height=0.4,
        color=COLORS["week"],
        label=f"{week}",
    )
    if n_trailing:
        label = f"mean of the {n_trailing} weeks before"
        ax.barh(
            y - 0.2,
            shown.get_column("failures_trailing_mean"),
            height=0.4,
            color=COLORS["trailing"],
            label=label,
        )
    ax.set_yticks(y, shown.get_column("component_class").to_list())
    ax.set_xlabel("failures per week")
    ax.legend(loc="lower right", frameon=False)
    _style(ax)
    return fig


def weekly_figure(weekly: pl.DataFrame) -> Figure | None:
    """Failures per ISO week over the window; the report week and trailing weeks stand out."""
    if weekly.height == 0:
        return None
    fig = _figure(7.5, 2.6)
    ax = fig.add_subplot()
    colors = [
        COLORS["week"]
        if r["is_report_week"]
        else COLORS["trailing"]
        if r["is_trailing"]
        else COLORS["bar"]
        for r in weekly.iter_rows(named=True)
    ]
    x = list(range(weekly.height))
    bars = ax.bar(x, weekly.get_column("n_failures"), color=colors)
    for bar, full in zip(bars, weekly.get_column("full_week"), strict=True):
        if not full:
            bar.set_hatch("///")
            bar.set_alpha(0.6)
    labels = [w.split("-")[1] for w in weekly.get_column("week")]
    ax.set_xticks(x, labels, fontsize=8)
    ax.set_ylabel("failures")
    ax.set_title(
        "failures per ISO week (hatched: week cut by the window edge)", fontsize=9, loc="left"
    )
    _style(ax)
    return fig


def survival_figure(curves: list[SurvivalCurve]) -> Figure | None:
    """Kaplan-Meier (with its 95 % band) and the fitted curve, one panel per class."""
    if not curves:
        return None
    import numpy as np
    import polars as pl

    n = len(curves)
    cols = 2 if n > 1 else 1
    rows = math.ceil(n / cols)
    fig = _figure(7.5, 2.9 * rows)
    axes = fig.subplots(rows, cols, squeeze=False)
    for ax, curve in zip(axes.ravel(), curves, strict=False):
        lowest = 1.0
        for index in range(len(curve.segments)):
            km = curve.km.filter(pl.col("segment") == index)
            fitted = curve.fitted.filter(pl.col("segment") == index)
            days = km.get_column("timeline_h").to_numpy() / 24.0
            first = index == 0
            ax.fill_between(
                days,
                km.get_column("lo").to_numpy(),
                km.get_column("hi").to_numpy(),
                step="post",
                color=COLORS["band"],
                alpha=0.5,
                linewidth=0,
                label="95 % band" if first else None,
            )
            ax.step(
                days,
                km.get_column("survival").to_numpy(),
                where="post",
                color=COLORS["line"],
                label="Kaplan-Meier" if first else None,
            )
            fitted_survival = fitted.get_column("survival").to_numpy()
            ax.plot(
                fitted.get_column("age_h").to_numpy() / 24.0,
                fitted_survival,
                color=COLORS["fit"],
                linestyle="--",
                label=f"fitted {curve.family}" if first else None,
            )
            km_lowest = km.get_column("survival").min()
            assert isinstance(km_lowest, float)  # a Kaplan-Meier segment has survival rows
            lowest = min(lowest, km_lowest, float(np.nanmin(fitted_survival)))
        ax.set_title(
            f"{curve.component_class}: {curve.n_failures} failures, {curve.n_units:,} lives",
            fontsize=9,
            loc="left",
        )
        ax.set_xlabel("unit age (days)", fontsize=8)
        whole = len(curve.segments) == 1 and curve.segments[0][0] == 0.0
        ax.set_ylabel("survival" if whole else "survival from range start", fontsize=8)
        ax.set_ylim(max(0.0, lowest - 0.6 * (1.0 - lowest) - 0.005), 1.002)
        ax.tick_params(labelsize=8)
        ax.legend(fontsize=7, frameon=False, loc="lower left")
        _style(ax)
    for ax in axes.ravel()[n:]:
        ax.set_visible(False)
    return fig


def mcf_figure(mcf: pl.DataFrame, period: ReportPeriod) -> Figure | None:
    """Mean cumulative failures per node since the window start, with the report week shaded."""
    if mcf.height == 0:
        return None
    import numpy as np

    fig = _figure(7.5, 3.0)
    ax = fig.add_subplot()
    days = np.concatenate([[0.0], mcf.get_column("time_h").to_numpy() / 24.0])
    values = np.concatenate([[0.0], mcf.get_column("mcf").to_numpy()])
    lo = np.concatenate([[0.0], mcf.get_column("lo").to_numpy()])
    hi = np.concatenate([[0.0], mcf.get_column("hi").to_numpy()])
    start = (period.week_start - period.window_start).total_seconds() / 86400.0
    end = (period.as_of - period.window_start).total_seconds() / 86400.0
    ax.axvspan(max(start, 0.0), end, color=COLORS["week"], alpha=0.12, label=period.week)
    ax.fill_between(
        days, lo, hi, step="post", color=COLORS["band"], alpha=0.5, linewidth=0, label="95 % band"
    )
    ax.step(days, values, where="post", color=COLORS["line"], label="mean cumulative function")
    ax.plot(
        [0.0, end],
        [0.0, values[-1] * end / days[-1] if days[-1] > 0 else 0.0],
        color=COLORS["trailing"],
        linestyle=":",
        label="constant rate",
    )
    ax.set_xlabel(f"days since {period.window_start:%Y-%m-%d}")
    ax.set_ylabel("failures per node")
    ax.legend(fontsize=8, frameon=False, loc="upper left")
    _style(ax)
    return fig


def goodput_figure(curve: pl.DataFrame) -> Figure | None:
    """Projected goodput against job size (log scale) with its 95 % band; targets marked."""
    if curve.height == 0:
        return None
    import numpy as np
    import polars as pl

    fig = _figure(7.5, 3.2)
    ax = fig.add_subplot()
    x = curve.get_column("n_gpus").to_numpy()
    ax.fill_between(
        x,
        100 * curve.get_column("goodput_lo").to_numpy(),
        100 * curve.get_column("goodput_hi").to_numpy(),
        color=COLORS["band"],
        alpha=0.5,
        linewidth=0,
        label="95 % interval (fit uncertainty)",
    )
    ax.plot(
        x,
        100 * curve.get_column("goodput").to_numpy(),
        color=COLORS["line"],
        marker="o",
        markersize=3,
        label="projected goodput",
    )
    for row in curve.filter(pl.col("is_target")).iter_rows(named=True):
        ax.plot(row["n_gpus"], 100 * row["goodput"], "o", color=COLORS["week"], markersize=7)
        ax.annotate(
            f"{row['n_gpus']:,} GPUs: {100 * row['goodput']:.0f} %",
            (row["n_gpus"], 100 * row["goodput"]),
            textcoords="offset points",
            xytext=(6, 6),
            fontsize=8,
        )
    ax.set_xscale("log", base=2)
    targets = curve.filter(pl.col("is_target")).get_column("n_gpus").to_numpy()
    ticks = [
        v
        for v in x
        if v in targets or targets.size == 0 or np.min(np.abs(np.log2(targets / v))) >= 0.5
    ]
    ax.set_xticks(ticks, [f"{int(v):,}" for v in ticks], fontsize=7, rotation=30)
    ax.minorticks_off()
    ax.set_ylim(0, 100)
    ax.set_xlabel("GPUs in the job")
    ax.set_ylabel("goodput (%)")
    ax.legend(fontsize=8, frameon=False, loc="lower left")
    _style(ax)
    return fig


PAPER_LABELS = {"weibull": "Weibull paper", "lognormal": "log-normal paper"}
PAPER_TICKS = (0.001, 0.01, 0.05, 0.1, 0.25, 0.5, 0.75, 0.9, 0.99, 0.999)


def _ad_text(ad: dict[str, float], best: str | None) -> str:
    """``AD exponential 1.2, weibull 0.8*`` on two lines of two families each."""
    shown = [f"{f} {fmt_sig(v)}{'*' if f == best else ''}" for f, v in ad.items()]
    if not shown:
        return "AD: not computed"
    return "AD " + ", ".join(shown[:2]) + (",\n" + ", ".join(shown[2:]) if shown[2:] else "")


def probability_figure(item: ClassProbabilityPlots, paper: str) -> Figure | None:
    """Points (product limit), the paper's own family fitted, its band; AD of every family.

    ``x`` is the age on a log scale (``ln t``); ``y`` is the paper's transform of ``F``
    (``ln(-ln(1 - F))`` or ``Phi^-1(F)``), labelled in percent failed. A family that fits is a
    straight line through the points on its own paper. Points from failures with fewer than
    ``MIN_AT_RISK`` units at risk are hollow: each such failure moves the estimate a lot.
    """
    plot = item.plots.get(paper)
    if plot is None:
        return None
    import polars as pl

    points = plot.points.filter(pl.col("y").is_finite())
    line = plot.line
    fig = _figure(3.7, 3.6)
    ax = fig.add_subplot()
    age_d = line.get_column("age_h").to_numpy() / 24.0
    level = round(100 * (1 - plot.alpha))
    ax.fill_between(
        age_d,
        line.get_column("y_lo").to_numpy(),
        line.get_column("y_hi").to_numpy(),
        color=COLORS["band"],
        alpha=0.5,
        linewidth=0,
        label=f"{level} % band",
    )
    ad = item.ad_statistics.get(plot.family, plot.ad_statistic)
    ax.plot(
        age_d,
        line.get_column("y").to_numpy(),
        color=COLORS["fit"],
        label=f"{plot.family} fit (AD {fmt_sig(ad)})",
    )
    _draw_product_limit(ax, points)
    _paper_axes(ax, points, line, paper)
    finite_ad = {f: v for f, v in item.ad_statistics.items() if math.isfinite(v)}
    best = min(finite_ad, key=finite_ad.__getitem__) if finite_ad else None
    ax.set_title(
        f"{item.component_class}: {PAPER_LABELS[paper]}, {item.n_failures} failures\n"
        f"{_ad_text(finite_ad, best)} (* lowest)",
        fontsize=7.5,
        loc="left",
    )
    ax.set_xlabel("unit age (days, log scale)", fontsize=8)
    ax.set_ylabel("failed by this age", fontsize=8)
    ax.tick_params(which="both", labelsize=7)
    fig.legend(fontsize=7, frameon=False, loc="outside lower center", ncols=2)
    _style(ax)
    return fig


def _draw_product_limit(ax: Axes, points: pl.DataFrame) -> None:
    """Draw the product-limit points, hollow where fewer than ``MIN_AT_RISK`` were at risk."""
    few = points.get_column("at_risk").to_numpy() < MIN_AT_RISK
    point_d = points.get_column("age_h").to_numpy() / 24.0
    point_y = points.get_column("y").to_numpy()
    if not few.all():
        ax.plot(
            point_d[~few],
            point_y[~few],
            "o",
            color=COLORS["line"],
            markersize=3,
            label="product limit",
        )
    if few.any():
        ax.plot(
            point_d[few],
            point_y[few],
            "o",
            markerfacecolor="none",
            markersize=3.5,
            color=COLORS["line"],
            label=f"product limit, < {MIN_AT_RISK} at risk",
        )


def _paper_axes(ax: Axes, points: pl.DataFrame, line: pl.DataFrame, paper: str) -> None:
    """Set the log age axis and the paper's y axis (ticks in percent failed) around the data."""
    import numpy as np
    from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter

    from models import paper_transform

    ax.set_xscale("log")
    ax.xaxis.set_major_locator(LogLocator(base=10.0, subs=(1.0, 2.0, 5.0)))
    ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _pos: f"{v:g}"))
    ax.xaxis.set_minor_formatter(NullFormatter())
    y_points = points.get_column("y").to_numpy()
    y_line = line.get_column("y").to_numpy()
    finite = y_line[np.isfinite(y_line)]
    low = min(float(y_points.min()), float(finite[0])) if finite.size else float(y_points.min())
    high = max(float(y_points.max()), float(finite[-1])) if finite.size else float(y_points.max())
    margin = 0.08 * max(high - low, 0.5)
    ax.set_ylim(low - margin, high + margin)
    ticks = np.array(PAPER_TICKS)
    tick_y = paper_transform(ticks, paper)
    inside = (tick_y >= low - margin) & (tick_y <= high + margin)
    ax.set_yticks(tick_y[inside], [f"{100 * t:g} %" for t in ticks[inside]])


def probability_figures(items: list[ClassProbabilityPlots]) -> dict[tuple[str, str], Figure]:
    """``(class, paper) -> figure`` for every class and paper with a plot."""
    figures = {}
    for item in items:
        for paper in item.plots:
            fig = probability_figure(item, paper)
            if fig is not None:
                figures[item.component_class, paper] = fig
    return figures


def probability_figure_key(component_class: str, paper: str) -> str:
    """Return the :func:`report_figures` key of a probability plot."""
    return f"probability:{component_class}:{paper}"


def plot_file_name(component_class: str, paper: str) -> str:
    """``<class>_<paper>.png``, with characters unsafe in a file name replaced by ``_``."""
    safe = re.sub(r"[^A-Za-z0-9_.-]", "_", component_class).lstrip(".") or "class"
    return f"{safe}_{paper}.png"


def write_probability_plots(items: list[ClassProbabilityPlots], out_dir: Path) -> list[Path]:
    """Write one PNG per class and paper into ``out_dir`` (created); returns the paths."""
    out_dir.mkdir(parents=True, exist_ok=True)
    written = []
    for (component_class, paper), fig in probability_figures(items).items():
        path = out_dir / plot_file_name(component_class, paper)
        fig.savefig(path, format="png", dpi=DPI, metadata={"Software": None})
        written.append(path)
    return written


def write_fit_plots(
    db_path: Path,
    results: pl.DataFrame,
    out_dir: Path,
    *,
    lives: str = "fct_component_lives",
    dataset: str | None = None,
    alpha: float = 0.05,
) -> list[Path]:
    """Probability plots of a fit run's classes, read from the warehouse, written as PNGs.

    Reads the lives the run was fitted on (``lives`` view, ``dataset``), takes each family's AD
    statistic from ``results`` (its ``cohort = 'all'`` rows; a fit split by cohort is refitted
    per class) and writes ``<class>_weibull.png`` and ``<class>_lognormal.png`` per class with
    at least ``MIN_PLOT_FAILURES`` failures.
    """
    from pipelines import warehouse
    from pipelines.analysis.fit import read_lives
    from pipelines.report.curves import probability_plots

    with warehouse.connect(db_path, read_only=True, lock_timeout_s=read_lock_timeout_s()) as con:
        frame = read_lives(con, view=lives, dataset=dataset)
    return write_probability_plots(probability_plots(frame, results, alpha=alpha), out_dir)


def report_figures(data: ReportData) -> dict[str, str]:
    """Every figure of the report as a PNG data URI (missing key: nothing to plot)."""
    makers: dict[str, Callable[[], Figure | None]] = {
        "class_failures": lambda: class_failures_figure(
            data.classes, week=data.period.week, n_trailing=data.period.n_trailing_weeks
        ),
        "weekly": lambda: weekly_figure(data.weekly_failures),
        "survival": lambda: survival_figure(data.survival),
        "mcf": lambda: mcf_figure(data.mcf, data.period),
        "goodput": lambda: goodput_figure(data.goodput_curve),
    }
    figures = {}
    for name, make in makers.items():
        fig = make()
        if fig is not None:
            figures[name] = png_data_uri(fig)
    for (component_class, paper), fig in probability_figures(data.probability).items():
        figures[probability_figure_key(component_class, paper)] = png_data_uri(fig)
    # ``realised`` is new (issue #16): a caller's stand-in for ReportData may lack it
    realised = realised_figures(getattr(data, "realised", {}))
    figures |= {name: png_data_uri(fig) for name, fig in realised.items()}
    failslow = fail_slow_figure(getattr(data, "failslow", None) or {})
    if failslow is not None:
        figures["failslow"] = png_data_uri(failslow)
    return figures
