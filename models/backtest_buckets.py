r"""Back-test roll-up per GPU-size bucket and half of the window (docs/goodput.md §5).

:func:`backtest_summary` sums :func:`models.backtest_jobs` rows per bucket and period: observed
and expected hardware interruptions with O/E and its exact Poisson (Garwood) interval, which
takes the expected count as known, and, when given the lives the rates were fitted on, an
interval that also carries the as-of fits' own error (:func:`oe_interval_with_fit`).

Why the second interval: the expected count of a job starting early in the window rests on the
few failures seen by then, and every job starting then shares them. On fleets simulated from the
model's own assumptions the Garwood interval of the first half covers 1 about 85 % of the time
instead of 95 %, the other about 93 % (150 fleets; tests/models/test_backtest.py); over the whole
window 93 % and 97 %. Neither counts the failures a fit has not seen yet (a few failures early in
the window say little about their own variance).

Equations
---------
The expected count of a group of jobs is a weighted sum over the failures :math:`i` (class
:math:`c_i`, time :math:`x_i`) the as-of fits used,

.. math::
    \hat E = \sum_j \sum_c \frac{U_{jc}}{E_c(t_j)} F_c(t_j) = \sum_i w_i, \qquad
    w_i = \sum_{j:\, t_j \ge x_i} \frac{U_{j c_i}}{E_{c_i}(t_j)}

with variance :math:`v = \sum_i w_i^2` when each failure is a Poisson count. As for Fay and
Feuer's gamma interval, :math:`\hat E` is taken as :math:`k` times a Poisson count of
:math:`n_E = \hat E^2 / v` (:math:`k = v / \hat E`); then :math:`O` given :math:`O + n_E` is
binomial with :math:`p = \rho k / (1 + \rho k)`, :math:`\rho` the true O/E, and the
Clopper-Pearson bounds of :math:`p`,
:math:`p_{lo} = B^{-1}_{\alpha/2}(O, n_E + 1)`, :math:`p_{hi} = B^{-1}_{1-\alpha/2}(O + 1, n_E)`,
give :math:`\rho = p / ((1 - p) k)`. As :math:`n_E \to \infty` this is Garwood's interval.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import polars as pl
from scipy import stats

from models.backtest import (
    BACKTEST_PERIODS,
    GPU_BUCKETS,
    AsofRates,
    asof_rates,
    poisson_ratio_interval,
)

if TYPE_CHECKING:
    from collections.abc import Sequence

    from numpy.typing import ArrayLike, NDArray

__all__ = [
    "CLASS_SUMMARY_COLUMNS",
    "SUMMARY_COLUMNS",
    "backtest_class_summary",
    "backtest_summary",
    "expected_variance",
    "oe_interval_with_fit",
]

SUMMARY_COLUMNS = (
    *("bucket", "period", "n_jobs", "n_estimated", "gpu_hours", "interruptions_observed"),
    *("interruptions_unattributed", "interruptions_other", "interruptions_expected"),
    *("interruptions_expected_sd", "oe_ratio", "oe_lo", "oe_hi", "oe_fit_lo", "oe_fit_hi"),
    *("goodput_measured", "goodput_predicted", "goodput_predicted_lo", "goodput_predicted_hi"),
)
"""Columns of :func:`backtest_summary`, in order."""
CLASS_SUMMARY_COLUMNS = (
    *("component_class", "unit_level", "bucket", "n_jobs", "interruptions_observed"),
    *("interruptions_expected", "interruptions_expected_sd", "oe_ratio", "oe_lo", "oe_hi"),
    *("oe_fit_lo", "oe_fit_hi"),
)
"""Columns of :func:`backtest_class_summary`, in order."""
_SECONDS_PER_HOUR = 3600.0


def expected_variance(
    job_start_s: ArrayLike, weights: ArrayLike, failure_s: Sequence[ArrayLike]
) -> tuple[float, float]:
    r"""Return a group's expected count :math:`\sum_i w_i` and its variance :math:`\sum_i w_i^2`.

    Parameters
    ----------
    job_start_s
        The jobs' as-of times.
    weights
        ``(jobs, classes)``: each job's unit-hours of a class over the class's as-of exposure.
    failure_s
        Per class, the failure times of the lives (a failure at or before a job's start counts).

    Returns
    -------
    tuple of float
        ``(expected, variance)``.
    """
    t = np.asarray(job_start_s, dtype=float)
    w = np.asarray(weights, dtype=float).reshape(t.size, -1)
    order = np.argsort(t, kind="stable")
    t_sorted = t[order]
    total, variance = 0.0, 0.0
    for c, times in enumerate(failure_s):
        suffix = np.concatenate([np.cumsum(w[order, c][::-1])[::-1], [0.0]])
        per_failure = suffix[np.searchsorted(t_sorted, np.asarray(times, float), side="left")]
        total += float(per_failure.sum())
        variance += float(np.sum(per_failure**2))
    return total, variance


def oe_interval_with_fit(
    observed: ArrayLike, expected: ArrayLike, variance: ArrayLike, *, alpha: float = 0.05
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Bound O/E when the expected count is itself an estimate with the given variance.

    The conditional binomial interval of the module's equations; Garwood's interval when the
    variance is 0 relative to the expected count.

    Parameters
    ----------
    observed
        Observed counts O.
    expected
        Expected counts (NaN bounds where <= 0).
    variance
        Variance of each expected count.
    alpha
        ``1 - alpha`` coverage.

    Returns
    -------
    tuple of numpy.ndarray
        ``(lo, hi)``.
    """
    o = np.asarray(observed, dtype=float)
    e = np.asarray(expected, dtype=float)
    v = np.asarray(variance, dtype=float)
    ok = (e > 0) & (v > 0)
    e_safe, v_safe = np.where(ok, e, 1.0), np.where(ok, v, 1.0)
    n_e = e_safe**2 / v_safe
    k = v_safe / e_safe
    with np.errstate(invalid="ignore", divide="ignore"):
        p_lo = np.where(o > 0, stats.beta.ppf(alpha / 2.0, np.maximum(o, 1.0), n_e + 1.0), 0.0)
        p_hi = stats.beta.ppf(1.0 - alpha / 2.0, o + 1.0, n_e)
        lo = p_lo / ((1.0 - p_lo) * k)
        hi = np.where(p_hi < 1.0, p_hi / ((1.0 - p_hi) * k), np.inf)
    _, g_lo, g_hi = poisson_ratio_interval(o, e, alpha=alpha)
    known = (e > 0) & (v <= 0)  # nothing estimated: Garwood's exact interval
    return (
        np.where(ok, lo, np.where(known, g_lo, np.nan)),
        np.where(ok, hi, np.where(known, g_hi, np.nan)),
    )


def _fit_weights(
    rows: pl.DataFrame, lives: pl.DataFrame
) -> tuple[NDArray[np.float64], list[NDArray[np.float64]]]:
    """Each job's unit-hours over the as-of exposure per class, and each class's failure times."""
    weights, times, _ = _class_weights(rows, lives)
    return weights, times


def _class_weights(
    rows: pl.DataFrame, lives: pl.DataFrame
) -> tuple[NDArray[np.float64], list[NDArray[np.float64]], AsofRates]:
    """:func:`_fit_weights` and the as-of rates (columns: classes in sorted order)."""
    levels = (
        lives.group_by("component_class").agg(pl.col("unit_level").first()).sort("component_class")
    )
    classes = levels["component_class"].to_list()
    index = lives["component_class"].replace_strict(
        {c: i for i, c in enumerate(classes)}, return_dtype=pl.Int64
    )
    start = rows["first_start_s"].cast(pl.Float64).to_numpy()
    rates = asof_rates(
        lives["entry_s"].cast(pl.Float64).to_numpy(),
        lives["exit_s"].cast(pl.Float64).to_numpy(),
        lives["failed"].cast(pl.Boolean).to_numpy(),
        index.to_numpy(),
        start,
        n_classes=len(classes),
    )
    on_gpu = (levels["unit_level"] == "gpu").to_numpy()
    unit_h = np.where(
        on_gpu[None, :],
        rows["gpu_run_h"].cast(pl.Float64).to_numpy()[:, None],
        rows["node_run_h"].cast(pl.Float64).to_numpy()[:, None],
    )
    with np.errstate(invalid="ignore", divide="ignore"):
        weights = np.where(unit_h > 0, unit_h / rates.exposure_h, 0.0)
    failed = lives.with_columns(index.alias("_c")).filter(pl.col("failed"))
    times = [
        failed.filter(pl.col("_c") == c)["exit_s"].cast(pl.Float64).to_numpy()
        for c in range(len(classes))
    ]
    return np.where(np.isfinite(weights), weights, 0.0), times, rates


def backtest_summary(
    job_rows: pl.DataFrame,
    lives: pl.DataFrame | None = None,
    *,
    window_start_s: float,
    window_end_s: float,
    alpha: float = 0.05,
) -> pl.DataFrame:
    """Sum the back-test per GPU-size bucket (and ``all``) and period of the window.

    Parameters
    ----------
    job_rows
        What :func:`models.backtest_jobs` returns; jobs without history are left out.
    lives
        The lives the rates were fitted on (as for :func:`models.backtest_jobs`); with them the
        rows also carry ``interruptions_expected_sd``, ``oe_fit_lo`` and ``oe_fit_hi``.
    window_start_s, window_end_s
        The observation window (epoch seconds); its midpoint splits ``first half`` from
        ``second half`` by the job's first start.
    alpha
        ``1 - alpha`` coverage of the O/E intervals.

    Returns
    -------
    polars.DataFrame
        :data:`SUMMARY_COLUMNS`, one row per ``bucket`` (:data:`models.GPU_BUCKETS` and
        ``all``) and ``period`` (:data:`models.BACKTEST_PERIODS`) with jobs: ``n_jobs``,
        ``n_estimated`` (estimated ledgers), ``gpu_hours``, the interruptions observed,
        unattributed, other and expected, ``oe_ratio`` with ``oe_lo`` / ``oe_hi`` (exact
        Poisson, E taken as known) and ``oe_fit_lo`` / ``oe_fit_hi`` (with the fits' error),
        and ``goodput_measured`` / ``goodput_predicted`` (``_lo``, ``_hi``), each GPU-hour
        weighted: ``sum(productive x gpus) / sum(wall x gpus)`` with the measured or the
        predicted wall.
    """
    rows = job_rows.filter(pl.col("has_history"))
    mid = (window_start_s + window_end_s) / 2.0
    start = rows["first_start_s"].cast(pl.Float64).to_numpy()
    bucket = rows["bucket"].to_numpy()
    gpus = rows["n_gpus"].cast(pl.Float64).to_numpy()
    good = rows["productive_s"].cast(pl.Float64).to_numpy() * gpus
    estimated = (
        rows["estimated"].fill_null(False).to_numpy()
        if "estimated" in rows.columns
        else np.zeros(rows.height, dtype=bool)
    )

    def column(name: str) -> NDArray[np.float64]:
        return np.asarray(np.nan_to_num(rows[name].cast(pl.Float64).to_numpy(), nan=0.0), float)

    sums = {
        name: column(name)
        for name in (
            *("interruptions_observed", "interruptions_unattributed", "interruptions_other"),
            "interruptions_expected",
        )
    }
    walls = {
        name: rows[name].cast(pl.Float64).to_numpy() * gpus
        for name in ("wall_s", "predicted_wall_s", "predicted_wall_lo_s", "predicted_wall_hi_s")
    }
    fit = _fit_weights(rows, lives) if lives is not None and rows.height else None
    out: list[dict[str, object]] = []
    for b in (*GPU_BUCKETS, "all"):
        for period in BACKTEST_PERIODS:
            mask = np.ones(rows.height, dtype=bool) if b == "all" else bucket == b
            if period != "all":
                mask &= (start < mid) if period == "first half" else (start >= mid)
            if not mask.any():
                continue
            row: dict[str, object] = {
                "bucket": b,
                "period": period,
                "n_jobs": int(mask.sum()),
                "n_estimated": int(estimated[mask].sum()),
                "gpu_hours": float(np.nansum(walls["wall_s"][mask]) / _SECONDS_PER_HOUR),
                **{k: float(v[mask].sum()) for k, v in sums.items()},
                "interruptions_expected_sd": None,
            }
            for key, wall in (
                ("goodput_measured", "wall_s"),
                ("goodput_predicted", "predicted_wall_s"),
                ("goodput_predicted_lo", "predicted_wall_hi_s"),  # more faults: lower goodput
                ("goodput_predicted_hi", "predicted_wall_lo_s"),
            ):
                row[key] = float(np.sum(good[mask]) / np.sum(walls[wall][mask]))
            if fit is not None:
                _, variance = expected_variance(start[mask], fit[0][mask], fit[1])
                row["interruptions_expected_sd"] = float(np.sqrt(variance))
            out.append(row)
    schema: dict[str, pl.DataType] = {c: pl.Float64() for c in SUMMARY_COLUMNS}
    schema.update(bucket=pl.String(), period=pl.String(), n_jobs=pl.Int64(), n_estimated=pl.Int64())
    frame = pl.DataFrame(out, schema=schema, orient="row")
    return (
        _with_oe(frame, alpha)
        .with_columns(
            pl.col("interruptions_observed", "interruptions_unattributed", "interruptions_other")
            .round()
            .cast(pl.Int64),
        )
        .select(SUMMARY_COLUMNS)
        .with_columns(pl.col(pl.Float64).fill_nan(None))
    )


def _with_oe(frame: pl.DataFrame, alpha: float) -> pl.DataFrame:
    """Add O/E with its exact Poisson interval and the interval that also carries the fit's sd."""
    observed = frame["interruptions_observed"].to_numpy().astype(float)
    expected = frame["interruptions_expected"].to_numpy()
    ratio, lo, hi = poisson_ratio_interval(observed, expected, alpha=alpha)
    sd = frame["interruptions_expected_sd"].fill_null(np.nan).to_numpy()
    fit_lo, fit_hi = oe_interval_with_fit(observed, expected, sd**2, alpha=alpha)
    return frame.with_columns(
        pl.Series("oe_ratio", ratio),
        pl.Series("oe_lo", lo),
        pl.Series("oe_hi", hi),
        pl.Series("oe_fit_lo", fit_lo),
        pl.Series("oe_fit_hi", fit_hi),
    )


def backtest_class_summary(
    job_rows: pl.DataFrame,
    lives: pl.DataFrame,
    observed: pl.DataFrame,
    *,
    alpha: float = 0.05,
) -> pl.DataFrame:
    r"""Observed against expected interruptions per component class and GPU-size bucket.

    The class dimension of :func:`backtest_summary` over the whole window: for class :math:`c`
    and a group of jobs, :math:`E_c = \sum_j U_{jc} F_c(t_j) / E_c(t_j)` (the as-of fit of
    :func:`models.backtest_jobs`, each job's unit-hours of that class times the class's rate as
    of its first start), :math:`O_c` the job's interruptions attributed to :math:`c`; the
    expected counts of all classes add up to the bucket's ``interruptions_expected``, and the
    observed ones to its ``interruptions_observed`` when ``observed`` counts the same
    interruptions.

    Parameters
    ----------
    job_rows
        What :func:`models.backtest_jobs` returns; jobs without history are left out.
    lives
        The lives the rates were fitted on (as for :func:`models.backtest_jobs`).
    observed
        ``job_id_raw``, ``component_class``, ``n``: each job's interruptions of a class (classes
        not among the lives' are ignored).
    alpha
        ``1 - alpha`` coverage of the O/E intervals.

    Returns
    -------
    polars.DataFrame
        :data:`CLASS_SUMMARY_COLUMNS`, one row per class of the lives (sorted) and bucket
        (:data:`models.GPU_BUCKETS` with jobs, then ``all``): ``n_jobs``, the interruptions
        observed and expected with the expected count's sd from the as-of fits' failures,
        ``oe_ratio`` with Garwood's ``oe_lo`` / ``oe_hi`` (E as known; NaN where nothing was
        expected) and ``oe_fit_lo`` / ``oe_fit_hi`` (with the fits' error).
    """
    rows = job_rows.filter(pl.col("has_history"))
    schema: dict[str, pl.DataType] = {c: pl.Float64() for c in CLASS_SUMMARY_COLUMNS}
    schema.update(
        component_class=pl.String(),
        unit_level=pl.String(),
        bucket=pl.String(),
        n_jobs=pl.Int64(),
        interruptions_observed=pl.Int64(),
    )
    if rows.height == 0 or lives.height == 0:
        return pl.DataFrame(schema=schema)
    weights, times, rates = _class_weights(rows, lives)
    levels = (
        lives.group_by("component_class").agg(pl.col("unit_level").first()).sort("component_class")
    )
    classes = levels["component_class"].to_list()
    expected = weights * rates.failures  # (jobs, classes): w_jc F_c(t_j)
    index = {job: i for i, job in enumerate(rows["job_id_raw"].to_list())}
    counts = np.zeros((rows.height, len(classes)))
    column = {c: i for i, c in enumerate(classes)}
    for job, cls, n in observed.select("job_id_raw", "component_class", "n").iter_rows():
        if job in index and cls in column:
            counts[index[job], column[cls]] += float(n)
    start = rows["first_start_s"].cast(pl.Float64).to_numpy()
    bucket = rows["bucket"].to_numpy()
    out: list[dict[str, object]] = []
    for c, (name, level) in enumerate(levels.iter_rows()):
        for b in (*GPU_BUCKETS, "all"):
            mask = np.ones(rows.height, dtype=bool) if b == "all" else bucket == b
            if not mask.any():
                continue
            _, variance = expected_variance(start[mask], weights[mask, c : c + 1], [times[c]])
            out.append(
                {
                    "component_class": name,
                    "unit_level": level,
                    "bucket": b,
                    "n_jobs": int(mask.sum()),
                    "interruptions_observed": round(float(counts[mask, c].sum())),
                    "interruptions_expected": float(expected[mask, c].sum()),
                    "interruptions_expected_sd": float(np.sqrt(variance)),
                }
            )
    frame = pl.DataFrame(out, schema=schema, orient="row")
    return (
        _with_oe(frame, alpha)
        .select(CLASS_SUMMARY_COLUMNS)
        .with_columns(pl.col(pl.Float64).fill_nan(None))
    )
