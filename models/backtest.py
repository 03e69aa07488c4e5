r"""Back-test of the goodput projection on the fleet's own jobs (issue #16, docs/goodput.md §5).

For each job the projection is made *as of the start of its first attempt*: per component class
the exponential rate is refitted on the unit lives observed before that time (no look-ahead), the
job's expected hardware interruptions follow from its run time and units, and its goodput is
predicted with the same renewal-reward model :func:`models.goodput.project` uses for a
``restart`` job with exponential lifetimes (Daly's expected wall time,
:func:`models.checkpoint.daly_expected_wall_time_s`).
:func:`models.backtest_buckets.backtest_summary` then compares observed with expected per
GPU-size bucket and half of the window.

Everything is vectorised: the as-of rates at all job starts come from sorting the lives and
cumulative sums (:func:`asof_rates`), never from a loop over jobs or lives.

Equations
---------
As-of rate of class :math:`c` at time :math:`t`, lives :math:`i` observed over
:math:`[e_i, x_i]` (calendar time, left-truncated lives from their entry), failed or censored at
:math:`x_i`:

.. math::
    E_c(t) = \sum_i \left(\min(x_i, t) - e_i\right)^+, \qquad
    F_c(t) = \#\{i: \text{failed}, x_i \le t\}, \qquad \hat\lambda_c(t) = F_c(t) / E_c(t)

with exact Poisson (chi-square) bounds :math:`\chi^2_{\alpha/2}(2F)/2E` and
:math:`\chi^2_{1-\alpha/2}(2F+2)/2E`. A job with unit-hours :math:`U_c` of class :math:`c`
(GPU-hours for GPU-level classes, node-hours for node-level ones, summed over its attempts)
expects :math:`\mu = \sum_c U_c \hat\lambda_c = \sum_c w_c F_c`, :math:`w_c = U_c / E_c`: a
weighted sum of Poisson counts, whose interval is Fay and Feuer's gamma interval
(:func:`weighted_poisson_interval`; Garwood's exact interval when one class carries all the weight).

Observed over expected, :math:`O/E`, has the exact (Garwood) interval
:math:`[\chi^2_{\alpha/2}(2O)/2E,\ \chi^2_{1-\alpha/2}(2O+2)/2E]` (:func:`poisson_ratio_interval`).

Predicted wall time of a job with productive (kept) compute :math:`P`, compute :math:`\tau` and
blocking save :math:`\delta` per checkpoint, restart overhead :math:`R` per interruption (detect,
reschedule, reload, warm-up), fixed overhead :math:`U` (start-up and other time) and
interruption rate :math:`\lambda`:

.. math::
    W = U + \frac{P}{\tau}\,\frac{e^{\lambda R}\left(e^{\lambda(\tau+\delta)}-1\right)}{\lambda}

(:math:`U + P(\tau+\delta)/\tau` at :math:`\lambda = 0`): every segment of :math:`\tau+\delta`
is redone after an interruption, and a restart struck by another interruption is redone. The
predicted goodput is :math:`P/W`, the reciprocal of what :func:`models.goodput.project` calls
``daly_wall_time_h`` per unit of work; its interval comes from :math:`\lambda` at the rate bounds.

References
----------
.. [1] J. T. Daly, "A higher order estimate of the optimum checkpoint interval for restart
   dumps", Future Generation Computer Systems 22(3), 303-312, 2006.
.. [2] F. Garwood, "Fiducial limits for the Poisson distribution", Biometrika 28, 437-442, 1936.
.. [3] M. P. Fay and E. J. Feuer, "Confidence intervals for directly standardized rates: a method
   based on the gamma distribution", Statistics in Medicine 16, 791-801, 1997.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import polars as pl
from scipy import stats

from models.checkpoint import daly_expected_wall_time_s

if TYPE_CHECKING:
    from numpy.typing import ArrayLike, NDArray

__all__ = [
    "BACKTEST_PERIODS",
    "DEFAULT_RESTART_S",
    "GPU_BUCKETS",
    "AsofRates",
    "asof_pooled_ratio",
    "asof_rates",
    "backtest_jobs",
    "gpu_bucket",
    "poisson_ratio_interval",
    "predicted_wall_s",
    "weighted_poisson_interval",
]

GPU_BUCKETS = ("1-8", "9-64", "65-512", "513-4096", "4097+")
"""Job-size buckets (GPUs), as in ``rpt_fleet_goodput``; the summary adds ``all``."""
_BUCKET_UPPER = (8, 64, 512, 4096)
BACKTEST_PERIODS = ("all", "first half", "second half")
"""Periods of the summary: the whole window, and its halves by the job's first start."""
_SECONDS_PER_HOUR = 3600.0


@dataclass(frozen=True)
class AsofRates:
    """Exponential rates per class as of given times (rows: times, columns: classes).

    Attributes
    ----------
    failures
        Failures with an exit at or before the time.
    exposure_h
        Unit-hours observed before the time.
    rate_per_h, rate_lo_per_h, rate_hi_per_h
        ``failures / exposure_h`` and its exact Poisson bounds, per unit-hour; NaN where
        nothing was observed yet.
    """

    failures: NDArray[np.int64]
    exposure_h: NDArray[np.float64]
    rate_per_h: NDArray[np.float64]
    rate_lo_per_h: NDArray[np.float64]
    rate_hi_per_h: NDArray[np.float64]


def _chi2_bounds(
    count: NDArray[np.float64], alpha: float
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Garwood's bounds on a Poisson mean from its count: chi2(a/2; 2n)/2, chi2(1-a/2; 2n+2)/2."""
    values, inverse = np.unique(count, return_inverse=True)  # counts repeat: ppf once each
    with np.errstate(invalid="ignore"):
        lo = np.where(values > 0, stats.chi2.ppf(alpha / 2.0, 2.0 * values) / 2.0, 0.0)
        hi = stats.chi2.ppf(1.0 - alpha / 2.0, 2.0 * values + 2.0) / 2.0
    shape = np.shape(count)
    return np.asarray(lo, float)[inverse].reshape(shape), np.asarray(hi, float)[inverse].reshape(
        shape
    )


def asof_rates(
    entry_s: ArrayLike,
    exit_s: ArrayLike,
    failed: ArrayLike,
    class_index: ArrayLike,
    at_s: ArrayLike,
    *,
    n_classes: int,
    alpha: float = 0.05,
) -> AsofRates:
    """Fit each class's exponential rate on the lives observed before each time.

    Parameters
    ----------
    entry_s, exit_s
        Calendar times (seconds, any origin) a life is observed from and to; ``entry <= exit``.
        A life that began before the window enters at the window start (left truncation).
    failed
        Whether the life ended in a failure at ``exit_s`` (else it is censored there).
    class_index
        The life's class, ``0 .. n_classes - 1``.
    at_s
        Times to fit at (for the back-test: each job's first start).
    n_classes
        Number of classes (columns of the result).
    alpha
        ``1 - alpha`` is the coverage of the rate bounds.

    Returns
    -------
    AsofRates
        Arrays of shape ``(len(at_s), n_classes)``: a life counts its time before ``t``
        (clipped at ``t``), a failure counts when its exit is at or before ``t``.

    Raises
    ------
    ValueError
        Arrays of different lengths, an exit before its entry, or a class out of range.
    """
    entry = np.asarray(entry_s, dtype=float)
    exit_ = np.asarray(exit_s, dtype=float)
    dead = np.asarray(failed, dtype=bool)
    cls = np.asarray(class_index, dtype=np.int64)
    at = np.asarray(at_s, dtype=float)
    if not (entry.shape == exit_.shape == dead.shape == cls.shape) or entry.ndim != 1:
        msg = "entry_s, exit_s, failed and class_index must be 1-d arrays of one length"
        raise ValueError(msg)
    if np.any(exit_ < entry):
        msg = "a life exits before its entry: check observed_from_ts <= observed_to_ts"
        raise ValueError(msg)
    if cls.size and (cls.min() < 0 or cls.max() >= n_classes):
        msg = f"class_index must lie in 0..{n_classes - 1}"
        raise ValueError(msg)
    origin = float(entry.min()) if entry.size else 0.0  # sums of epochs lose seconds; shift them
    entry, exit_, at = entry - origin, exit_ - origin, at - origin
    failures = np.zeros((at.size, n_classes), dtype=np.int64)
    exposure_s = np.zeros((at.size, n_classes))
    order = np.argsort(cls, kind="stable")
    bounds = np.searchsorted(cls[order], np.arange(n_classes + 1))
    for c in range(n_classes):  # one pass per class; every time at once
        rows = order[bounds[c] : bounds[c + 1]]
        e, x = np.sort(entry[rows]), np.sort(exit_[rows])
        n_e = np.searchsorted(e, at, side="left")  # lives entered before t
        n_x = np.searchsorted(x, at, side="left")  # lives exited before t
        sum_e = np.concatenate([[0.0], np.cumsum(e)])[n_e]
        sum_x = np.concatenate([[0.0], np.cumsum(x)])[n_x]
        # exited lives give x - e, lives still at risk at t give t - e
        exposure_s[:, c] = np.maximum(sum_x + at * (n_e - n_x) - sum_e, 0.0)
        ends = np.sort(exit_[rows][dead[rows]])
        failures[:, c] = np.searchsorted(ends, at, side="right")
    exposure_h = exposure_s / _SECONDS_PER_HOUR
    f = failures.astype(float)
    lo, hi = _chi2_bounds(f, alpha)
    with np.errstate(invalid="ignore", divide="ignore"):
        seen = exposure_h > 0
        rate = np.where(seen, f / np.where(seen, exposure_h, 1.0), np.nan)
        rate_lo = np.where(seen, lo / np.where(seen, exposure_h, 1.0), np.nan)
        rate_hi = np.where(seen, hi / np.where(seen, exposure_h, 1.0), np.nan)
    return AsofRates(failures, exposure_h, rate, rate_lo, rate_hi)


def weighted_poisson_interval(
    counts: ArrayLike, weights: ArrayLike, *, alpha: float = 0.05
) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.float64]]:
    r"""Estimate and bound :math:`y = \sum_c w_c F_c` for independent Poisson counts :math:`F_c`.

    Fay and Feuer's gamma interval (1997): with :math:`v = \sum_c w_c^2 F_c` and
    :math:`w_M = \max_c w_c`,

    .. math::
        y_{lo} = \frac{v}{2y}\chi^2_{\alpha/2}\!\left(\frac{2y^2}{v}\right), \qquad
        y_{hi} = \frac{v + w_M^2}{2(y + w_M)}
                 \chi^2_{1-\alpha/2}\!\left(\frac{2(y + w_M)^2}{v + w_M^2}\right)

    (:math:`y_{lo} = 0` when :math:`y = 0`). With one class it is Garwood's exact interval
    scaled by the weight; it is conservative in simulations of the original paper.

    Parameters
    ----------
    counts, weights
        Arrays of one shape ``(..., classes)``; weights are non-negative (NaN propagates).
    alpha
        ``1 - alpha`` coverage.

    Returns
    -------
    tuple of numpy.ndarray
        ``(y, y_lo, y_hi)``, each of shape ``(...)``.
    """
    f = np.asarray(counts, dtype=float)
    w = np.asarray(weights, dtype=float)
    y = np.sum(w * f, axis=-1)
    v = np.sum(w * w * f, axis=-1)
    w_max = np.max(w, axis=-1)
    with np.errstate(invalid="ignore", divide="ignore"):
        pos = y > 0
        y_safe, v_safe = np.where(pos, y, 1.0), np.where(pos, v, 1.0)
        lo = np.where(
            pos,
            v_safe / (2.0 * y_safe) * stats.chi2.ppf(alpha / 2.0, 2.0 * y_safe**2 / v_safe),
            0.0,
        )
        lo = np.where(np.isnan(y), np.nan, lo)
        v_hi = v + w_max**2
        y_hi = y + w_max
        hi = np.where(
            v_hi > 0,
            v_hi
            / (2.0 * y_hi)
            * stats.chi2.ppf(1.0 - alpha / 2.0, 2.0 * y_hi**2 / np.where(v_hi > 0, v_hi, 1.0)),
            0.0,
        )
    return y, np.asarray(lo, float), np.asarray(hi, float)


def poisson_ratio_interval(
    observed: ArrayLike, expected: ArrayLike, *, alpha: float = 0.05
) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.float64]]:
    """Return O/E and its exact (Garwood) Poisson interval, with E taken as known.

    ``lo = chi2(alpha/2; 2O) / 2E`` (0 when O = 0), ``hi = chi2(1 - alpha/2; 2O + 2) / 2E``.

    Parameters
    ----------
    observed
        Observed counts O.
    expected
        Expected counts E (NaN ratios where E <= 0).
    alpha
        ``1 - alpha`` coverage.

    Returns
    -------
    tuple of numpy.ndarray
        ``(ratio, lo, hi)``.
    """
    o = np.asarray(observed, dtype=float)
    e = np.asarray(expected, dtype=float)
    lo, hi = _chi2_bounds(o, alpha)
    with np.errstate(invalid="ignore", divide="ignore"):
        ok = e > 0
        e_safe = np.where(ok, e, 1.0)
        return (
            np.where(ok, o / e_safe, np.nan),
            np.where(ok, lo / e_safe, np.nan),
            np.where(ok, hi / e_safe, np.nan),
        )


def predicted_wall_s(
    productive_s: ArrayLike,
    *,
    interval_s: ArrayLike,
    checkpoint_s: ArrayLike,
    restart_s: ArrayLike,
    overhead_s: ArrayLike,
    rate_per_s: ArrayLike,
    unexposed_s: ArrayLike = 0.0,
) -> NDArray[np.float64]:
    r"""Return the expected wall time of a job that keeps ``productive_s`` of compute.

    :math:`U + T_w (1 + \lambda Q)`, :math:`T_w` Daly's expected wall time
    (:func:`models.checkpoint.daly_expected_wall_time_s`) for the job's own interval, save and
    restart overhead at mean time to interrupt :math:`1/\lambda`; :math:`U + P(\tau+\delta)/\tau`
    when :math:`\lambda = 0`; just :math:`U` when nothing was kept. :math:`Q` is the time per
    interruption the job does not hold its nodes or run (detection after the fault, requeue and
    queue wait): no fault can strike it, so it is added once per interruption, and by Wald's
    identity a job exposed for :math:`T_w` expects :math:`\lambda T_w` interruptions. Daly's
    restart :math:`R` (``restart_s``) is the exposed part: reload and warm-up, which a fault
    during them restarts.

    Parameters
    ----------
    productive_s
        Kept compute :math:`P`, seconds.
    interval_s
        Compute between checkpoints :math:`\tau`, seconds (> 0 where ``productive_s`` > 0).
    checkpoint_s
        Blocking save :math:`\delta`, seconds.
    restart_s
        Overhead per interruption exposed to faults :math:`R` (reload, warm-up), seconds.
    overhead_s
        Time the job spends whatever fails :math:`U` (start-up, other), seconds.
    rate_per_s
        Interruption rate :math:`\lambda` of the job, per second.
    unexposed_s
        Overhead per interruption not exposed to faults :math:`Q` (detection, requeue and queue
        wait), seconds.

    Returns
    -------
    numpy.ndarray
        Expected wall time, seconds; the predicted goodput is ``productive_s`` over it.
    """
    p, tau, d, r, u, lam, q = np.broadcast_arrays(
        *(
            np.asarray(a, dtype=float)
            for a in (
                productive_s,
                interval_s,
                checkpoint_s,
                restart_s,
                overhead_s,
                rate_per_s,
                unexposed_s,
            )
        )
    )
    work = p > 0
    tau_safe = np.where(work & (tau > 0), tau, 1.0)
    failing = lam > 0
    lam_safe = np.where(failing, lam, 1.0)
    daly = np.asarray(
        daly_expected_wall_time_s(
            np.where(work, p, 0.0), d, 1.0 / lam_safe, restart_s=r, interval_s=tau_safe
        ),
        dtype=float,
    )
    fault_free = p * (tau_safe + d) / tau_safe
    wall = np.where(failing, daly * (1.0 + lam * q), fault_free)
    return np.asarray(u + np.where(work, wall, 0.0), dtype=float)


def asof_pooled_ratio(
    event_s: ArrayLike, numerator: ArrayLike, denominator: ArrayLike, at_s: ArrayLike
) -> NDArray[np.float64]:
    """Return ``sum(numerator) / sum(denominator)`` over events at or before each time.

    The fleet mean of earlier jobs (e.g. restart overhead per interruption over the jobs that had
    ended by a job's start); NaN where the denominator is still 0.

    Parameters
    ----------
    event_s
        When each event became known (seconds).
    numerator, denominator
        Per event.
    at_s
        Times to pool at.

    Returns
    -------
    numpy.ndarray
        One ratio per time.
    """
    t = np.asarray(event_s, dtype=float)
    order = np.argsort(t, kind="stable")
    num = np.concatenate([[0.0], np.cumsum(np.asarray(numerator, float)[order])])
    den = np.concatenate([[0.0], np.cumsum(np.asarray(denominator, float)[order])])
    k = np.searchsorted(t[order], np.asarray(at_s, dtype=float), side="right")
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(den[k] > 0, num[k] / np.where(den[k] > 0, den[k], 1.0), np.nan)


def gpu_bucket(n_gpus: ArrayLike) -> NDArray[np.object_]:
    """Return each job's GPU-size bucket label (``1-8``, ``9-64``, ... ``4097+``) from its GPUs."""
    g = np.asarray(n_gpus, dtype=float)
    labels = np.asarray(GPU_BUCKETS, dtype=object)
    return np.asarray(labels[np.searchsorted(_BUCKET_UPPER, g, side="left")], dtype=object)


DEFAULT_RESTART_S = 300.0
"""Restart overhead per interruption when no job of the fleet had one (the contract's
``assumed_restart_s`` default)."""

_JOB_COLUMNS = (
    *("job_id_raw", "n_gpus", "first_start_s", "last_end_s", "wall_s", "productive_s"),
    *("overhead_s", "restart_s", "n_interruptions", "checkpoint_interval_s", "checkpoint_cost_s"),
    *("interruptions_observed", "interruptions_unattributed", "interruptions_other"),
)
_ATTEMPT_COLUMNS = ("job_id_raw", "start_s", "end_s", "n_gpus", "n_nodes")
_LIFE_COLUMNS = ("component_class", "unit_level", "entry_s", "exit_s", "failed")


def _require(frame: pl.DataFrame, columns: tuple[str, ...], what: str) -> None:
    missing = [c for c in columns if c not in frame.columns]
    if missing:
        msg = f"{what} lacks columns {missing}: see models.backtest.backtest_jobs for its schema"
        raise ValueError(msg)


def _per_interruption(
    total: NDArray[np.float64],
    n_int: NDArray[np.float64],
    had: NDArray[np.bool_],
    end: NDArray[np.float64],
    start: NDArray[np.float64],
) -> tuple[NDArray[np.float64], NDArray[np.object_]]:
    """Return ``total`` per interruption: the job's own, else the fleet's before it, else all."""
    own = np.where(had, total / np.where(had, n_int, 1.0), np.nan)
    before = asof_pooled_ratio(end, np.where(had, total, 0.0), n_int, start)
    pooled_all = float(total[had].sum() / n_int[had].sum()) if had.any() else np.nan
    each = np.where(had, own, np.where(np.isfinite(before), before, pooled_all))
    source = np.where(
        had, "job", np.where(np.isfinite(before), "fleet_before", "fleet_all")
    ).astype(object)
    return np.asarray(each, dtype=float), source


def backtest_jobs(
    jobs: pl.DataFrame,
    attempts: pl.DataFrame,
    lives: pl.DataFrame,
    *,
    alpha: float = 0.05,
    default_restart_s: float = DEFAULT_RESTART_S,
) -> pl.DataFrame:
    r"""Project each job as of its first start and set the projection beside what happened.

    Parameters
    ----------
    jobs
        One row per job: ``job_id_raw``, ``n_gpus``, ``first_start_s`` / ``last_end_s`` (epoch
        seconds), ``wall_s``, ``productive_s``, ``overhead_s`` (start-up and other time: paid
        whatever fails), ``restart_s`` (detect + reschedule + reload + warm-up, all attempts;
        optionally ``restart_unexposed_s``, its detect + reschedule part, during which no
        fault can strike the job),
        ``n_interruptions`` (all causes), ``checkpoint_interval_s`` / ``checkpoint_cost_s``
        (compute and blocking save per checkpoint), ``interruptions_observed`` (cause among the
        fitted classes), ``interruptions_unattributed`` (``ambiguous`` / ``unknown``) and
        ``interruptions_other`` (application, software, maintenance...); optionally
        ``slow_s`` (the ledger's fail-slow time, null or absent: 0). Other columns pass
        through.
    attempts
        One row per attempt: ``job_id_raw``, ``start_s``, ``end_s`` (clipped to the window),
        ``n_gpus``, ``n_nodes``.
    lives
        One row per unit life and class: ``component_class``, ``unit_level`` (``gpu`` or
        ``node``), ``entry_s`` / ``exit_s`` (calendar epoch seconds observed), ``failed``.
    alpha
        ``1 - alpha`` coverage of the rate, expected-count and goodput intervals.
    default_restart_s
        Restart overhead per interruption when no job had one.

    Returns
    -------
    polars.DataFrame
        The job rows plus ``bucket``, ``run_h`` (attempt hours; ``gpu_run_h`` / ``node_run_h``
        times GPUs / nodes), ``has_history`` (every class
        the job uses had exposure before its start; otherwise nothing is projected),
        ``rate_per_h`` / ``rate_lo_per_h`` / ``rate_hi_per_h`` (the job's hardware interruption
        rate: units x as-of class rates, run-time weighted over attempts),
        ``job_level_rate_per_h`` (other interruptions per job-hour of the jobs ended before its
        start), ``interruptions_expected`` with ``_lo`` / ``_hi`` (Fay-Feuer),
        ``restart_per_interruption_s`` and ``restart_source`` (``job``, ``fleet_before``,
        ``fleet_all``, ``default``), ``predicted_wall_s`` with ``_lo_s`` / ``_hi_s`` (at the
        lower / upper rate), ``goodput_measured`` (productive / wall) and ``goodput_predicted``
        with ``_lo`` / ``_hi``.

    Notes
    -----
    The goodput prediction charges the job its own overheads (start-up, other time, restart per
    interruption, checkpoint interval and save) and interrupts it at its hardware rate plus the
    fleet's as-of job-level rate (what :class:`~models.scenario.Scenario` calls
    ``job_interruptions_per_h``), a point value; its interval is from the hardware rate bounds
    only. The expected interruptions (O/E) are hardware only.

    Fail-slow is not projected here: the prediction runs the job's compute, ``productive_s +
    slow_s`` (a fault strikes a slow step as well as a fast one), and so carries the measured
    slow time into the predicted wall as it is; both goodputs are ``productive_s`` over their
    wall. The difference between them is the fail-stop model's alone, whether or not the
    ledger takes ``slow_s`` out of ``productive_s``.
    """
    _require(jobs, _JOB_COLUMNS, "jobs")
    _require(attempts, _ATTEMPT_COLUMNS, "attempts")
    _require(lives, _LIFE_COLUMNS, "lives")
    start = jobs["first_start_s"].cast(pl.Float64).to_numpy()
    hours = _run_hours(jobs, attempts)
    hw = _hardware_expected(lives, hours, start, alpha)
    nan = np.full(jobs.height, np.nan)
    # job-level interruptions (causes outside the fitted classes) per job-hour, jobs ended before
    end = jobs["last_end_s"].cast(pl.Float64).to_numpy()
    other = (
        jobs["interruptions_other"].fill_null(0).cast(pl.Float64).to_numpy()
        + jobs["interruptions_unattributed"].fill_null(0).cast(pl.Float64).to_numpy()
    )
    job_rate = np.nan_to_num(asof_pooled_ratio(end, other, hours.run_h, start), nan=0.0)
    restart_each, unexposed_each, source = _restart_per_interruption(
        jobs, end, start, default_restart_s
    )
    productive = jobs["productive_s"].cast(pl.Float64).to_numpy()
    # the compute the job kept, at whatever pace: a fault strikes slow steps too, and a slow
    # step lost is redone slow; the measured slow time is given, not predicted (fail-stop only)
    slow = (
        jobs["slow_s"].fill_null(0).cast(pl.Float64).to_numpy()
        if "slow_s" in jobs.columns
        else np.zeros(jobs.height)
    )
    common = {
        "interval_s": jobs["checkpoint_interval_s"].cast(pl.Float64).to_numpy(),
        "checkpoint_s": jobs["checkpoint_cost_s"].fill_null(0).cast(pl.Float64).to_numpy(),
        "restart_s": restart_each - unexposed_each,
        "unexposed_s": unexposed_each,
        "overhead_s": jobs["overhead_s"].fill_null(0).cast(pl.Float64).to_numpy(),
    }
    walls = [
        predicted_wall_s(productive + slow, rate_per_s=(r + job_rate) / _SECONDS_PER_HOUR, **common)
        for r in hw.per_h
    ]
    walls = [np.where(hw.has_history, w, nan) for w in walls]
    wall = jobs["wall_s"].cast(pl.Float64).to_numpy()
    with np.errstate(invalid="ignore", divide="ignore"):
        goodput = [productive / w for w in walls]
        measured = np.where(wall > 0, productive / np.where(wall > 0, wall, 1.0), np.nan)
    return jobs.with_columns(
        pl.Series("bucket", gpu_bucket(jobs["n_gpus"].fill_null(0).to_numpy()), pl.String),
        pl.Series("run_h", hours.run_h),
        pl.Series("gpu_run_h", hours.gpu_h),
        pl.Series("node_run_h", hours.node_h),
        pl.Series("has_history", hw.has_history),
        pl.Series("rate_per_h", np.where(hw.has_history, hw.per_h[0], nan)),
        pl.Series("rate_lo_per_h", np.where(hw.has_history, hw.per_h[1], nan)),
        pl.Series("rate_hi_per_h", np.where(hw.has_history, hw.per_h[2], nan)),
        pl.Series("job_level_rate_per_h", job_rate),
        pl.Series("interruptions_expected", hw.expected[0]),
        pl.Series("interruptions_expected_lo", hw.expected[1]),
        pl.Series("interruptions_expected_hi", hw.expected[2]),
        pl.Series("restart_per_interruption_s", restart_each),
        pl.Series("restart_source", source, pl.String),
        pl.Series("predicted_wall_s", walls[0]),
        pl.Series("predicted_wall_lo_s", walls[1]),
        pl.Series("predicted_wall_hi_s", walls[2]),
        pl.Series("goodput_measured", measured),
        pl.Series("goodput_predicted", goodput[0]),
        # more failures, longer wall, lower goodput: the upper rate gives the lower bound
        pl.Series("goodput_predicted_lo", goodput[2]),
        pl.Series("goodput_predicted_hi", goodput[1]),
    ).with_columns(pl.col(pl.Float64).fill_nan(None))


@dataclass(frozen=True, slots=True)
class _RunHours:
    """Each job's hours over its attempts: wall, and times its GPUs and its nodes."""

    run_h: NDArray[np.float64]
    gpu_h: NDArray[np.float64]
    node_h: NDArray[np.float64]


def _run_hours(jobs: pl.DataFrame, attempts: pl.DataFrame) -> _RunHours:
    """Return the unit-hours of each job on GPU-level and node-level classes, over its attempts."""
    index = jobs.select("job_id_raw").with_row_index("_job")
    hours = (
        attempts.join(index, on="job_id_raw", how="inner")
        .with_columns(
            ((pl.col("end_s") - pl.col("start_s")).clip(lower_bound=0) / _SECONDS_PER_HOUR).alias(
                "_run_h"
            )
        )
        .group_by("_job")
        .agg(
            pl.col("_run_h").sum().alias("run_h"),
            (pl.col("_run_h") * pl.col("n_gpus").fill_null(0)).sum().alias("_gpu_h"),
            (pl.col("_run_h") * pl.col("n_nodes").fill_null(0)).sum().alias("_node_h"),
        )
    )
    run_h, gpu_h, node_h = (np.zeros(jobs.height) for _ in range(3))
    k = hours["_job"].to_numpy().astype(np.int64)
    run_h[k] = hours["run_h"].to_numpy()
    gpu_h[k] = hours["_gpu_h"].to_numpy()
    node_h[k] = hours["_node_h"].to_numpy()
    return _RunHours(run_h, gpu_h, node_h)


@dataclass(frozen=True, slots=True)
class _HardwareExpected:
    """Each job's expected hardware interruptions as of its start, and per run hour."""

    has_history: NDArray[np.bool_]  # every class the job uses had exposure before its start
    expected: tuple[NDArray[np.float64], ...]  # point, lower, upper (NaN without history)
    per_h: list[NDArray[np.float64]]  # the same per run hour (0 without run time)


def _hardware_expected(
    lives: pl.DataFrame, hours: _RunHours, start: NDArray[np.float64], alpha: float
) -> _HardwareExpected:
    """Return the units x as-of class rates of each job, with Fay-Feuer bounds."""
    levels = (
        lives.group_by("component_class").agg(pl.col("unit_level").first()).sort("component_class")
    )
    classes = levels["component_class"].to_list()
    class_of = {c: i for i, c in enumerate(classes)}
    on_gpu = (levels["unit_level"] == "gpu").to_numpy()
    rates = asof_rates(
        lives["entry_s"].cast(pl.Float64).to_numpy(),
        lives["exit_s"].cast(pl.Float64).to_numpy(),
        lives["failed"].cast(pl.Boolean).to_numpy(),
        lives["component_class"].replace_strict(class_of, return_dtype=pl.Int64).to_numpy(),
        start,
        n_classes=len(classes),
        alpha=alpha,
    )
    unit_h = np.where(on_gpu[None, :], hours.gpu_h[:, None], hours.node_h[:, None])
    with np.errstate(invalid="ignore", divide="ignore"):
        weights = np.where(unit_h > 0, unit_h / rates.exposure_h, 0.0)
    has_history = np.all(np.isfinite(weights), axis=1) & (len(classes) > 0)
    bounds = weighted_poisson_interval(
        rates.failures, np.where(np.isfinite(weights), weights, 0.0), alpha=alpha
    )
    nan = np.full(start.shape[0], np.nan)
    expected = tuple(np.where(has_history, a, nan) for a in bounds)
    run_h = hours.run_h
    with np.errstate(invalid="ignore", divide="ignore"):
        per_h = [np.where(run_h > 0, a / np.where(run_h > 0, run_h, 1.0), 0.0) for a in expected]
    return _HardwareExpected(has_history, expected, per_h)


def _restart_per_interruption(
    jobs: pl.DataFrame,
    end: NDArray[np.float64],
    start: NDArray[np.float64],
    default_restart_s: float,
) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.object_]]:
    """Return each job's restart overhead per interruption, its unexposed part and its source.

    The job's own, else the fleet's before it, else all; the part the job is not exposed to
    faults (detection, requeue, queue wait) apart.
    """
    n_int = jobs["n_interruptions"].fill_null(0).cast(pl.Float64).to_numpy()
    restart = jobs["restart_s"].fill_null(0).cast(pl.Float64).to_numpy()
    unexposed = (
        jobs["restart_unexposed_s"].fill_null(0).cast(pl.Float64).to_numpy()
        if "restart_unexposed_s" in jobs.columns
        else np.zeros(jobs.height)
    )
    had = n_int > 0
    restart_each, source = _per_interruption(restart, n_int, had, end, start)
    unexposed_each, _ = _per_interruption(np.minimum(unexposed, restart), n_int, had, end, start)
    source[~np.isfinite(restart_each)] = "default"
    unexposed_each = np.where(np.isfinite(restart_each), unexposed_each, 0.0)
    restart_each = np.where(np.isfinite(restart_each), restart_each, default_restart_s)
    return restart_each, unexposed_each, source
