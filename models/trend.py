"""Trend tests of repairable systems: whether the failure rate of a node or a fleet changes.

Crow-AMSAA (power-law NHPP, :func:`crow_amsaa`, :func:`crow_amsaa_fleet`), the Laplace test
(:func:`laplace_test`) and the MIL-HDBK-189 test (:func:`mil_hdbk_189_test`); for a fleet of
units watched over different intervals, :func:`exposure_clock` puts the events on the scale of
cumulative unit-hours at risk and :func:`fleet_trend` runs all three. Event frames are as in
:mod:`models.repairable`: one row per failure event with the unit, the event time and the
unit's observation window ``[start, end]`` (hours).
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING

import numpy as np
import polars as pl
from scipy import optimize, stats

from models.parametric import check_alpha
from models.repairable import event_arrays

if TYPE_CHECKING:
    from numpy.typing import ArrayLike, NDArray

__all__ = [
    "CrowAmsaaResult",
    "FleetTrend",
    "LaplaceResult",
    "MilHdbk189Result",
    "crow_amsaa",
    "crow_amsaa_fleet",
    "exposure_clock",
    "fleet_trend",
    "laplace_test",
    "mil_hdbk_189_test",
]


def _trend_verdict(lo: float, hi: float) -> str:
    if hi < 1.0:
        return "improving"
    if lo > 1.0:
        return "degrading"
    return "stable"


# --------------------------------------------------------------------------------------------
# Crow-AMSAA (power-law NHPP)
# --------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class CrowAmsaaResult:
    """Power-law NHPP fit: cumulative expected failures ``lambda_ * t ** beta``.

    Attributes
    ----------
    beta, beta_lo, beta_hi
        MLE of the shape and its ``1 - alpha`` bounds (chi-square, Crow 1974).
    beta_unbiased
        Bias-corrected shape: ``(n - 1) / n * beta`` time truncated, ``(n - 2) / n * beta``
        failure truncated (summed over systems in the fleet version).
    lambda_
        Scale, in failures per hour to the power ``beta``.
    mtbf_instantaneous_h
        Current MTBF at the end of observation, ``1 / (lambda_ beta T^(beta - 1))``.
    n_events, total_time_h, alpha
        Data and level the result rests on (fleet: ``total_time_h`` is summed unit-hours).
    verdict
        ``"improving"`` (beta < 1 at level alpha: ``beta_hi < 1``), ``"degrading"``
        (``beta_lo > 1``) or ``"stable"``.
    """

    beta: float
    beta_lo: float
    beta_hi: float
    beta_unbiased: float
    lambda_: float
    mtbf_instantaneous_h: float
    n_events: int
    total_time_h: float
    alpha: float
    verdict: str

    def to_dict(self) -> dict[str, object]:
        """Return the fields as a plain dict (``lambda_`` kept with its underscore)."""
        return asdict(self)


def _event_times(event_times_h: ArrayLike) -> NDArray[np.float64]:
    try:
        times = np.sort(np.asarray(event_times_h, dtype=np.float64).ravel())
    except (TypeError, ValueError) as exc:
        msg = f"event_times_h must be numeric hours ({exc})."
        raise ValueError(msg) from exc
    if not np.all(np.isfinite(times)):
        msg = "event_times_h has NaN or infinite values; drop them before testing for trend."
        raise ValueError(msg)
    return times


def crow_amsaa(
    event_times_h: ArrayLike,
    total_time_h: float,
    *,
    alpha: float = 0.05,
    time_truncated: bool = True,
) -> CrowAmsaaResult:
    """Crow-AMSAA (power-law NHPP) fit of one system's failure times, with Crow's exact CI.

    Parameters
    ----------
    event_times_h
        Cumulative times of the failures (hours since the start of observation, > 0).
    total_time_h
        End of observation ``T``. For failure-truncated data the observation ends at the last
        failure, which is used as ``T``; ``total_time_h`` must then not precede it.
    alpha
        One minus the confidence level of the shape bounds and the verdict.
    time_truncated
        ``True`` when observation stopped at a fixed time (the usual case for telemetry);
        ``False`` when it stopped at the ``n``-th failure.

    Returns
    -------
    CrowAmsaaResult
        Shape ``beta`` with bounds, scale ``lambda_`` and the verdict.

    Raises
    ------
    ValueError
        On too few events (1 time truncated, 2 failure truncated), event times outside
        ``(0, T]``, or all events at ``T``.

    Notes
    -----
    Time truncated: ``beta = n / sum ln(T / t_i)`` and ``2 n beta_true / beta`` is chi-square
    with ``2n`` degrees of freedom, so ``beta_lo = beta chi2(alpha/2; 2n) / 2n`` and
    ``beta_hi = beta chi2(1 - alpha/2; 2n) / 2n``. Failure truncated: ``T = t_n``, the sum
    runs over ``i < n`` and the degrees of freedom are ``2(n - 1)`` (MIL-HDBK-189C, 5.4).
    ``lambda_ = n / T ** beta``.
    """
    alpha = check_alpha(alpha)
    times = _event_times(event_times_h)
    n = times.size
    if n < (1 if time_truncated else 2):
        msg = (
            f"Crow-AMSAA needs at least {1 if time_truncated else 2} event(s); got {n}. "
            "With no failures there is no trend to estimate."
        )
        raise ValueError(msg)
    if times[0] <= 0:
        msg = "event times must be > 0 h (hours since the start of observation)."
        raise ValueError(msg)
    end = float(total_time_h)
    if not (math.isfinite(end) and end >= times[-1]):
        msg = f"total_time_h ({total_time_h!r}) must be finite and not before the last event."
        raise ValueError(msg)
    if not time_truncated:
        end = float(times[-1])
    log_sum = float(np.sum(np.log(end / times)))
    if log_sum <= 0:
        msg = "every event is at the end of observation; the shape is not identifiable."
        raise ValueError(msg)
    beta = n / log_sum
    dof = 2 * n if time_truncated else 2 * (n - 1)
    lo = beta * float(stats.chi2.ppf(alpha / 2.0, dof)) / (2 * n)
    hi = beta * float(stats.chi2.ppf(1.0 - alpha / 2.0, dof)) / (2 * n)
    lam = n / end**beta
    unbiased = beta * ((n - 1) if time_truncated else (n - 2)) / n
    return CrowAmsaaResult(
        beta=beta,
        beta_lo=lo,
        beta_hi=hi,
        beta_unbiased=unbiased,
        lambda_=lam,
        mtbf_instantaneous_h=end / (n * beta),
        n_events=n,
        total_time_h=end,
        alpha=alpha,
        verdict=_trend_verdict(lo, hi),
    )


def crow_amsaa_fleet(
    events: pl.DataFrame,
    *,
    unit_col: str = "unit_id",
    time_col: str = "time_h",
    start_col: str = "start_h",
    end_col: str = "end_h",
    alpha: float = 0.05,
) -> CrowAmsaaResult:
    """Crow-AMSAA fit pooled over several systems observed over equal or different windows.

    Parameters
    ----------
    events
        One row per failure with the unit, its event time and the unit's observation window
        ``[start, end]``, all in hours of system age (a unit without failures: one row with a
        null event time). Every system follows the same power law ``lambda_ * t ** beta``.
    unit_col, time_col, start_col, end_col
        Column names.
    alpha
        One minus the confidence level.

    Returns
    -------
    CrowAmsaaResult
        Pooled shape and scale; ``mtbf_instantaneous_h`` at the latest window end, per system;
        ``total_time_h`` is the summed observed hours.

    Raises
    ------
    ValueError
        On invalid frames (see :func:`mean_cumulative_function`) or no events.

    Notes
    -----
    The MLE solves (Crow 1975; MIL-HDBK-189C, 5.5)::

        lambda = N / sum_q (T_q^beta - S_q^beta)
        N / beta + sum ln t_iq - N sum_q (T_q^beta ln T_q - S_q^beta ln S_q)
                                 / sum_q (T_q^beta - S_q^beta) = 0

    When every window is ``[0, T]`` this is ``beta = N / sum ln(T / t_iq)`` and the
    chi-square bounds with ``2N`` degrees of freedom are exact. With different windows they
    are not: a window that opens late (left truncation) tells less about the shape, and over
    simulated fleets whose windows open anywhere in the first half of the record the
    chi-square bounds held the true shape only about 80 % of the time. The bounds are then the
    profile likelihood-ratio ones, ``2 (l(beta_hat) - l(beta)) = chi2(1 - alpha; 1)`` with
    ``lambda`` profiled out, ``l(beta) = N ln beta + (beta - 1) sum ln t_iq - N ln sum_q
    (T_q^beta - S_q^beta)``, and the verdict follows them.
    """
    alpha = check_alpha(alpha)
    ev = event_arrays(events, unit_col, time_col, start_col, end_col)
    n = int(ev.event_h.size)
    if n == 0:
        msg = "No failures in events: there is no trend to estimate."
        raise ValueError(msg)
    if np.any(ev.event_h <= 0):
        msg = "event times must be > 0 h of system age."
        raise ValueError(msg)
    scale = float(ev.end_h.max())
    start = ev.start_h / scale
    end = ev.end_h / scale
    log_events = np.log(ev.event_h / scale)
    sum_log = float(log_events.sum())

    def exposure(beta: float) -> tuple[float, float]:
        with np.errstate(divide="ignore", invalid="ignore"):
            s_pow = np.where(start > 0, start**beta, 0.0)
            s_log = np.where(start > 0, s_pow * np.log(np.where(start > 0, start, 1.0)), 0.0)
        e_pow = end**beta
        return float(np.sum(e_pow - s_pow)), float(np.sum(e_pow * np.log(end) - s_log))

    def score(log_beta: float) -> float:
        beta = math.exp(log_beta)
        total, derivative = exposure(beta)
        return n / beta + sum_log - n * derivative / total

    equal_windows = bool(np.all(start == 0) and np.all(end == end[0]))
    if equal_windows:
        log_sum = float(np.sum(np.log(end[0]) - log_events))
        if log_sum <= 0:
            msg = "every event is at the end of observation; the shape is not identifiable."
            raise ValueError(msg)
        beta = n / log_sum
    else:
        try:
            beta = math.exp(optimize.brentq(score, math.log(1e-3), math.log(1e3), xtol=1e-14))
        except ValueError as exc:
            msg = "The Crow-AMSAA likelihood has no maximum for shape in [0.001, 1000]."
            raise ValueError(msg) from exc
    total, _ = exposure(beta)
    # in logs: a steep shape (one failure near the end) overflows scale ** beta
    log_lam = math.log(n / total) - beta * math.log(scale)
    if equal_windows:
        lo = beta * float(stats.chi2.ppf(alpha / 2.0, 2 * n)) / (2 * n)
        hi = beta * float(stats.chi2.ppf(1.0 - alpha / 2.0, 2 * n)) / (2 * n)
    else:

        def profile(b: float) -> float:
            return n * math.log(b) + (b - 1.0) * sum_log - n * math.log(exposure(b)[0])

        drop = float(stats.chi2.ppf(1.0 - alpha, 1)) / 2.0
        top = profile(beta)

        def excess(log_b: float) -> float:
            return top - profile(math.exp(log_b)) - drop

        log_beta = math.log(beta)
        try:
            lo = math.exp(optimize.brentq(excess, log_beta - 20.0, log_beta, xtol=1e-12))
            hi = math.exp(optimize.brentq(excess, log_beta, log_beta + 20.0, xtol=1e-12))
        except ValueError as exc:
            msg = "The Crow-AMSAA profile likelihood gives no finite bounds on the shape."
            raise ValueError(msg) from exc
    t_end = float(ev.end_h.max())
    return CrowAmsaaResult(
        beta=beta,
        beta_lo=lo,
        beta_hi=hi,
        beta_unbiased=beta * (n - 1) / n,
        lambda_=math.exp(log_lam),
        mtbf_instantaneous_h=math.exp(-(log_lam + math.log(beta) + (beta - 1.0) * math.log(t_end))),
        n_events=n,
        total_time_h=float(np.sum(ev.end_h - ev.start_h)),
        alpha=alpha,
        verdict=_trend_verdict(lo, hi),
    )


# --------------------------------------------------------------------------------------------
# Laplace trend test
# --------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class LaplaceResult:
    """Laplace test of a homogeneous Poisson process against a monotone trend.

    Attributes
    ----------
    statistic
        ``U``, standard normal under a constant rate; > 0 means failures come later (rate
        increasing), < 0 earlier (rate decreasing).
    p_value
        Two-sided p-value.
    n_events, total_time_h, alpha
        Data and level.
    verdict
        ``"degrading"`` (``p < alpha`` and ``U > 0``), ``"improving"`` (``p < alpha``,
        ``U < 0``) or ``"stable"``.
    """

    statistic: float
    p_value: float
    n_events: int
    total_time_h: float
    alpha: float
    verdict: str

    def to_dict(self) -> dict[str, object]:
        """Return the fields as a plain dict."""
        return asdict(self)


def laplace_test(
    event_times_h: ArrayLike, total_time_h: float, *, alpha: float = 0.05
) -> LaplaceResult:
    """Laplace trend test for one system observed over ``[0, T]`` (time truncated).

    Parameters
    ----------
    event_times_h
        Failure times in hours since the start of observation.
    total_time_h
        End of observation ``T``.
    alpha
        Level of the two-sided test behind the verdict.

    Returns
    -------
    LaplaceResult
        ``U = (mean(t_i) - T/2) / (T / sqrt(12 n))``, its two-sided normal p-value, verdict.

    Raises
    ------
    ValueError
        With no events, or events outside ``[0, T]``.
    """
    alpha = check_alpha(alpha)
    times = _event_times(event_times_h)
    n = times.size
    end = float(total_time_h)
    if n == 0:
        msg = "The Laplace test needs at least one event."
        raise ValueError(msg)
    if not (math.isfinite(end) and end > 0 and times[0] >= 0 and times[-1] <= end):
        msg = "event times must lie in [0, total_time_h] and total_time_h must be positive."
        raise ValueError(msg)
    u = (float(times.mean()) - end / 2.0) / (end / math.sqrt(12.0 * n))
    p = float(2.0 * stats.norm.sf(abs(u)))
    verdict = "stable" if p >= alpha else ("degrading" if u > 0 else "improving")
    return LaplaceResult(u, p, n, end, alpha, verdict)


# --------------------------------------------------------------------------------------------
# MIL-HDBK-189 trend test
# --------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class MilHdbk189Result:
    """MIL-HDBK-189 test of a homogeneous Poisson process against a power-law trend.

    Attributes
    ----------
    statistic
        ``2 sum ln(T / t_i)``, chi-square with ``dof`` degrees of freedom under a constant rate;
        small values mean failures come late (rate increasing), large values early (decreasing).
    dof
        ``2n`` time truncated, ``2(n - 1)`` failure truncated.
    p_value
        Two-sided p-value.
    n_events, total_time_h, alpha
        Data and level.
    verdict
        ``"degrading"`` (the statistic in the lower ``alpha/2`` tail), ``"improving"`` (upper
        tail) or ``"stable"``.
    """

    statistic: float
    dof: int
    p_value: float
    n_events: int
    total_time_h: float
    alpha: float
    verdict: str

    def to_dict(self) -> dict[str, object]:
        """Return the fields as a plain dict."""
        return asdict(self)


def mil_hdbk_189_test(
    event_times_h: ArrayLike,
    total_time_h: float,
    *,
    alpha: float = 0.05,
    time_truncated: bool = True,
) -> MilHdbk189Result:
    """MIL-HDBK-189 ("Military Handbook") trend test for one system observed from time 0.

    Parameters
    ----------
    event_times_h
        Failure times, hours since the start of observation (> 0).
    total_time_h
        End of observation ``T`` (time truncated); failure truncated data end at the last
        failure, which is used instead.
    alpha
        Level of the two-sided test behind the verdict.
    time_truncated
        ``True`` when observation stopped at a fixed time.

    Returns
    -------
    MilHdbk189Result
        The statistic, its degrees of freedom, the two-sided p-value and the verdict.

    Raises
    ------
    ValueError
        With too few events (1 time truncated, 2 failure truncated), or events outside
        ``(0, T]``.

    Notes
    -----
    Under a homogeneous Poisson process the event times of a time-truncated record are uniform
    on ``(0, T]``, so ``2 sum ln(T / t_i)`` is chi-square with ``2n`` degrees of freedom
    (failure truncated: ``2 sum_{i<n} ln(t_n / t_i)`` with ``2(n - 1)``). It is the test of
    ``beta = 1`` in the power-law (Crow-AMSAA) process, whose time-truncated MLE is
    ``2n / statistic``, and the most powerful against it. MIL-HDBK-189, *Reliability Growth
    Management* (US DoD, 1981; MIL-HDBK-189C, 2011, section 5); NIST/SEMATECH e-Handbook of
    Statistical Methods, section 8.2.3.4 "Trend tests" (the "Military Handbook Test").
    """
    alpha = check_alpha(alpha)
    times = _event_times(event_times_h)
    n = times.size
    if n < (1 if time_truncated else 2):
        msg = (
            f"The MIL-HDBK-189 test needs at least {1 if time_truncated else 2} event(s); got {n}."
        )
        raise ValueError(msg)
    end = float(total_time_h)
    if not (math.isfinite(end) and times[0] > 0 and times[-1] <= end):
        msg = "event times must lie in (0, total_time_h] and total_time_h must be finite."
        raise ValueError(msg)
    if time_truncated:
        statistic, dof = 2.0 * float(np.sum(np.log(end / times))), 2 * n
    else:
        end = float(times[-1])
        statistic, dof = 2.0 * float(np.sum(np.log(end / times[:-1]))), 2 * (n - 1)
    lower = float(stats.chi2.cdf(statistic, dof))
    upper = float(stats.chi2.sf(statistic, dof))
    p = min(1.0, 2.0 * min(lower, upper))
    verdict = "stable"
    if p < alpha:
        verdict = "degrading" if lower < upper else "improving"
    return MilHdbk189Result(statistic, dof, p, n, end, alpha, verdict)


# --------------------------------------------------------------------------------------------
# A fleet of units watched over different intervals
# --------------------------------------------------------------------------------------------
def exposure_clock(
    start_h: ArrayLike, end_h: ArrayLike, event_times_h: ArrayLike
) -> tuple[NDArray[np.float64], float]:
    """Map calendar times to the unit-hours at risk accumulated by then.

    Parameters
    ----------
    start_h, end_h
        At-risk intervals ``[start, end]`` on one calendar clock, one per unit stretch (a unit
        may have several, with gaps while it is down).
    event_times_h
        Calendar times of the events.

    Returns
    -------
    tuple
        ``E(t_i) = sum_j |[start_j, end_j] & [0, t_i]|`` for each event (same order) and the
        total ``E = sum_j (end_j - start_j)``.

    Raises
    ------
    ValueError
        On NaN bounds or an interval that ends before it starts.

    Notes
    -----
    If every unit fails at one constant rate while at risk, the events of the fleet given their
    number are independent draws from the density ``Y(t) / E`` (``Y`` the units at risk at
    ``t``), so ``E(t_i) / E`` are uniform on ``(0, 1)``: the one-system trend tests
    (:func:`laplace_test`, :func:`mil_hdbk_189_test`) apply to ``E(t_i)`` over ``[0, E]``.
    With every unit at risk over the same ``[0, T]`` they reduce to the pooled multi-system
    statistics (``E(t) / E = t / T``).
    """
    start = np.asarray(start_h, dtype=np.float64).ravel()
    end = np.asarray(end_h, dtype=np.float64).ravel()
    events = np.asarray(event_times_h, dtype=np.float64).ravel()
    if start.shape != end.shape:
        msg = f"start_h and end_h differ in length ({start.size} and {end.size})."
        raise ValueError(msg)
    if not (np.all(np.isfinite(start)) and np.all(np.isfinite(end))):
        msg = "at-risk intervals have NaN or infinite bounds; fix or drop them."
        raise ValueError(msg)
    if np.any(end < start):
        msg = f"{int(np.sum(end < start))} at-risk interval(s) end before they start."
        raise ValueError(msg)
    points = np.concatenate([start, end])
    slope = np.concatenate([np.ones(start.size), -np.ones(end.size)])
    order = np.argsort(points, kind="stable")
    x, at_risk = points[order], np.cumsum(slope[order])
    accrued = np.concatenate([[0.0], np.cumsum(at_risk[:-1] * np.diff(x))])
    total = float(np.sum(end - start))
    if x.size == 0:
        return np.zeros(events.size), 0.0
    clock = np.clip(np.interp(events, x, accrued), 0.0, total)
    return clock, total


@dataclass(frozen=True)
class FleetTrend:
    """Trend of a fleet's failures on the calendar, pooled over its units.

    Attributes
    ----------
    laplace, mil_hdbk_189
        The two tests on the exposure clock (:func:`exposure_clock`).
    crow_amsaa
        The power law pooled over the units' at-risk intervals on the calendar
        (:func:`crow_amsaa_fleet`); None when it cannot be fitted (its likelihood has no
        maximum for a shape in [0.001, 1000], or a failure is at time 0).
    verdict
        ``"degrading"`` or ``"improving"`` when both tests reject a constant rate at level
        ``alpha`` in that direction, else ``"homogeneous"``.
    """

    laplace: LaplaceResult
    mil_hdbk_189: MilHdbk189Result
    crow_amsaa: CrowAmsaaResult | None
    verdict: str


def fleet_trend(
    start_h: ArrayLike, end_h: ArrayLike, failed: ArrayLike, *, alpha: float = 0.05
) -> FleetTrend:
    """Test a fleet's failures for a trend on the calendar, pooled over its units.

    Parameters
    ----------
    start_h, end_h
        At-risk intervals on the calendar (hours since the observation window opened), one per
        unit life; a unit renewed after a failure has one per life, with the time it was down
        between them left out.
    failed
        Whether each interval ended in a failure (at ``end_h``).
    alpha
        Level of the tests and of the Crow-AMSAA shape interval.

    Returns
    -------
    FleetTrend
        Laplace and MIL-HDBK-189 on the exposure clock, Crow-AMSAA on the calendar, and the
        verdict (both tests agree on a direction, each at level ``alpha``: a constant rate is
        called a trend with probability at most ``alpha``).

    Raises
    ------
    ValueError
        With no failure, or intervals as :func:`exposure_clock` refuses them.
    """
    alpha = check_alpha(alpha)
    start = np.asarray(start_h, dtype=np.float64).ravel()
    end = np.asarray(end_h, dtype=np.float64).ravel()
    hit = np.asarray(failed, dtype=bool).ravel()
    if not hit.any():
        msg = "No failures: there is no trend to test."
        raise ValueError(msg)
    clock, total = exposure_clock(start, end, end[hit])
    laplace = laplace_test(clock, total, alpha=alpha)
    mil = mil_hdbk_189_test(clock, total, alpha=alpha)
    events = pl.DataFrame(
        {
            "unit_id": np.arange(start.size),
            "time_h": np.where(hit, end, np.nan),
            "start_h": start,
            "end_h": end,
        }
    ).with_columns(pl.col("time_h").fill_nan(None))
    try:
        crow: CrowAmsaaResult | None = crow_amsaa_fleet(events, alpha=alpha)
    except ValueError:
        crow = None
    verdict = "homogeneous"
    if laplace.verdict == mil.verdict and laplace.verdict != "stable":
        verdict = laplace.verdict
    return FleetTrend(laplace, mil, crow, verdict)
