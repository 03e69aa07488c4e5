r"""Fit the rank-pace model's laws from measured slow episodes.

:func:`fit_slow_laws` reads a table of episodes (the columns of the warehouse's
``int_slow_episodes``) and the unit-hours observed, and returns a :class:`SlowFit`: the episode
rate per unit-hour with its exact Poisson (Garwood) interval, log-normal laws of the duration
(right-censored where an attempt's end cut the episode) and of ``S - 1`` by maximum likelihood,
and bootstrap replicates of the three that :func:`models.failslow.slowdown_curve` carries into
``slowdown(N)``'s interval.

Only episodes blamed on a unit enter the per-unit laws. The others are fitted at job level
(:class:`JobLevelSlow`) and reported apart: most straggling in published fleets does not come
from a faulty unit (ByteDance, OSDI '25: 1.7 %), so the per-unit model projects a lower bound
on the total fail-slow time whenever unattributed episodes exist.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import polars as pl

from models.failslow_laws import LogNormalLaw, SlowLaws
from models.lifetimes import LogLives, check_lifetimes
from models.mle import fit_family_fast
from models.mtbf_summary import poisson_count_bounds

if TYPE_CHECKING:
    from numpy.typing import NDArray

__all__ = ["JobLevelSlow", "SlowFit", "fit_slow_laws"]

_REQUIRED = ("start_ts", "end_ts", "slowdown")
_BLAME = {"gpu": "blamed_gpu", "node": "blamed_host"}
_MIN_COMPLETE = 2  # complete (uncensored) episodes a log-normal fit needs


@dataclass(frozen=True, slots=True)
class _Episodes:
    """Durations (s), excess slowdowns ``S - 1`` and censoring of a set of episodes."""

    duration_s: NDArray[np.float64]
    excess: NDArray[np.float64]
    censored: NDArray[np.bool_]

    @property
    def n(self) -> int:
        return int(self.duration_s.size)

    def take(self, index: NDArray[np.intp]) -> _Episodes:
        return _Episodes(self.duration_s[index], self.excess[index], self.censored[index])


@dataclass(frozen=True, slots=True)
class JobLevelSlow:
    """Episodes blamed on no unit, fitted per job-hour and reported apart.

    Attributes
    ----------
    n_episodes, n_censored
        Unattributed episodes, and those an attempt's end cut short.
    job_hours
        Job wall-clock hours observed, when given.
    rate_per_job_h, rate_lo_per_job_h, rate_hi_per_job_h
        Episodes per job-hour with the exact Poisson interval (None without ``job_hours``).
    duration_s, excess
        Log-normal laws of their duration (s) and of ``S - 1``; None with fewer than two
        complete episodes.
    """

    n_episodes: int
    n_censored: int
    job_hours: float | None
    rate_per_job_h: float | None
    rate_lo_per_job_h: float | None
    rate_hi_per_job_h: float | None
    duration_s: LogNormalLaw | None
    excess: LogNormalLaw | None


@dataclass(frozen=True, slots=True)
class SlowFit:
    """The per-unit fail-slow laws fitted from measured episodes (:func:`fit_slow_laws`).

    Attributes
    ----------
    laws
        The point estimate: rate per unit-hour, log-normal duration (s) and ``S - 1`` laws.
    n_episodes, n_censored
        Episodes blamed on a unit, and those an attempt's end cut short (right-censored).
    unit_hours
        Unit-hours (GPU- or node-hours) observed.
    rate_lo_per_unit_h, rate_hi_per_unit_h
        Exact Poisson (Garwood) ``1 - alpha`` interval of the rate; for no episode, 0 and the
        one-sided upper bound.
    alpha
        One minus the intervals' level.
    replicates
        Bootstrap replicates of the laws (rate from a Poisson count around the one seen, laws
        refitted on episodes drawn with replacement); a replicate whose duration fit fails
        (fewer than two complete episodes drawn) is left out and counted in ``n_boot_failed``.
    n_boot_failed
        Bootstrap draws left out.
    unattributed
        The episodes blamed on no unit, fitted at job level; None when there are none.
    lower_bound
        Whether unattributed episodes exist, so that the per-unit projection is a lower bound on
        the total fail-slow time.
    """

    laws: SlowLaws
    n_episodes: int
    n_censored: int
    unit_hours: float
    rate_lo_per_unit_h: float
    rate_hi_per_unit_h: float
    alpha: float
    replicates: tuple[SlowLaws, ...]
    n_boot_failed: int
    unattributed: JobLevelSlow | None
    lower_bound: bool


def _episodes(frame: pl.DataFrame) -> _Episodes:
    """Durations, excess slowdowns and censoring of the rows, checked."""
    duration = (
        frame.select((pl.col("end_ts") - pl.col("start_ts")).dt.total_microseconds() / 1e6)
        .to_series()
        .to_numpy()
        .astype(np.float64)
    )
    excess = frame["slowdown"].cast(pl.Float64).to_numpy() - 1.0
    if "censored" in frame.columns:
        cut = frame["censored"].cast(pl.Boolean)
    elif "attempt_end_ts" in frame.columns:
        cut = frame.select(pl.col("end_ts") >= pl.col("attempt_end_ts")).to_series()
    else:
        cut = pl.Series(np.zeros(duration.size, dtype=bool))
    if cut.null_count():
        msg = "censored (or attempt_end_ts) has nulls: say for every episode whether it was cut."
        raise ValueError(msg)
    bad_d = int(np.count_nonzero(~np.isfinite(duration) | (duration <= 0)))
    if bad_d:
        msg = (
            f"{bad_d} episode(s) with a null, zero or negative duration (end_ts - start_ts); "
            "an episode starts at the last healthy line and ends at its last slow line: fix "
            "or drop them."
        )
        raise ValueError(msg)
    bad_s = int(np.count_nonzero(~np.isfinite(excess) | (excess <= 0)))
    if bad_s:
        msg = (
            f"{bad_s} episode(s) with a null slowdown or one of 1 or less; an episode is slower "
            "than its baseline (slowdown > 1): fix or drop them."
        )
        raise ValueError(msg)
    return _Episodes(duration, excess, cut.to_numpy().astype(bool))


def _duration_law(e: _Episodes) -> LogNormalLaw | None:
    """Log-normal MLE of the durations, right-censored where cut; None if it cannot be fitted."""
    complete = ~e.censored
    if int(np.count_nonzero(complete)) < _MIN_COMPLETE:
        return None
    if not e.censored.any():
        logs = np.log(e.duration_s)
        return LogNormalLaw(float(np.exp(logs.mean())), float(logs.std()))
    fit = fit_family_fast("lognormal", LogLives(check_lifetimes(e.duration_s, complete)))
    if not fit.converged:
        return None
    return LogNormalLaw(math.exp(fit.params["mu_"]), fit.params["sigma_"])


def _excess_law(e: _Episodes) -> LogNormalLaw | None:
    """Log-normal MLE of ``S - 1`` (never censored: the slowdown is measured while slow)."""
    if e.n < _MIN_COMPLETE:
        return None
    logs = np.log(e.excess)
    return LogNormalLaw(float(np.exp(logs.mean())), float(logs.std()))


def _check_exposure(name: str, hours: float | None) -> None:
    if hours is not None and not (math.isfinite(hours) and hours > 0):
        msg = f"{name} must be a positive number of hours observed, got {hours}."
        raise ValueError(msg)


def _rate_bounds(n: int, hours: float, alpha: float) -> tuple[float, float]:
    lo, hi = poisson_count_bounds(n, alpha=alpha)
    return lo / hours, hi / hours


def _job_level(e: _Episodes, job_hours: float | None, alpha: float) -> JobLevelSlow:
    """Fit the unattributed episodes at job level."""
    rate: float | None = None
    lo: float | None = None
    hi: float | None = None
    if job_hours is not None:
        rate = e.n / job_hours
        lo, hi = _rate_bounds(e.n, job_hours, alpha)
    return JobLevelSlow(
        n_episodes=e.n,
        n_censored=int(np.count_nonzero(e.censored)),
        job_hours=job_hours,
        rate_per_job_h=rate,
        rate_lo_per_job_h=lo,
        rate_hi_per_job_h=hi,
        duration_s=_duration_law(e),
        excess=_excess_law(e),
    )


def _bootstrap(
    e: _Episodes, unit_hours: float, unit: str, n_boot: int, rng: np.random.Generator
) -> tuple[tuple[SlowLaws, ...], int]:
    """Replicates of the laws: a Poisson count for the rate, a resample for the two laws."""
    out = []
    for _ in range(n_boot):
        rate = float(rng.poisson(e.n)) / unit_hours
        sample = e.take(rng.integers(0, e.n, e.n))
        duration, excess = _duration_law(sample), _excess_law(sample)
        if duration is not None and excess is not None:
            out.append(SlowLaws(rate, duration, excess, unit))
    return tuple(out), n_boot - len(out)


def fit_slow_laws(
    episodes: pl.DataFrame,
    *,
    unit_hours: float,
    unit: str = "gpu",
    job_hours: float | None = None,
    n_boot: int = 200,
    alpha: float = 0.05,
    random_state: int | np.random.Generator | None = None,
) -> SlowFit:
    """Fit the per-unit episode rate, duration law and slowdown law from measured episodes.

    Parameters
    ----------
    episodes
        One row per slow episode, with ``start_ts`` and ``end_ts`` (datetimes) and ``slowdown``
        (the episode's step time over its baseline, above 1), and the blame columns of
        ``int_slow_episodes``: ``blamed_gpu`` (for ``unit="gpu"``) or ``blamed_host`` (for
        ``"node"``), non-null when the episode is blamed on such a unit, and optionally
        ``attribution`` (a row with ``unattributed`` is never blamed). Censoring: a boolean
        ``censored`` column (the attempt ended while the episode was on), else
        ``attempt_end_ts`` (censored when ``end_ts >= attempt_end_ts``), else none is censored.
    unit_hours
        GPU-hours (or node-hours) observed: the exposure of the per-unit rate.
    unit
        ``"gpu"`` or ``"node"``: what one episode slows. With ``"gpu"``, an episode blamed on a
        node but no GPU counts as unattributed.
    job_hours
        Job wall-clock hours observed, for the job-level rate of unattributed episodes.
    n_boot
        Bootstrap replicates (0: none, no interval downstream).
    alpha
        One minus the intervals' level.
    random_state
        Seed or generator of the bootstrap.

    Returns
    -------
    SlowFit
        The laws, the rate's exact interval, the bootstrap replicates and the unattributed
        episodes' job-level fit. **When unattributed episodes exist, the per-unit model is a
        lower bound on the total fail-slow time** (``lower_bound`` says so): those episodes are
        in no unit's rate.

    Raises
    ------
    ValueError
        A column is missing, a duration or slowdown is invalid, the exposure is not positive,
        or fewer than two episodes blamed on a unit are complete (no duration law can be fitted).
    """
    blame = _BLAME.get(unit)
    if blame is None:
        msg = f"unit must be 'gpu' or 'node', got {unit!r}."
        raise ValueError(msg)
    missing = [c for c in (*_REQUIRED, blame) if c not in episodes.columns]
    if missing:
        msg = (
            f"episodes lacks columns {missing}; pass int_slow_episodes' rows "
            f"({[*_REQUIRED, blame]})."
        )
        raise ValueError(msg)
    _check_exposure("unit_hours", unit_hours)
    _check_exposure("job_hours", job_hours)
    blamed = pl.col(blame).is_not_null()
    if "attribution" in episodes.columns:
        blamed = blamed & (pl.col("attribution").fill_null("unattributed") != "unattributed")
    flagged = episodes.with_columns(blamed.alias("_blamed"))
    per_unit = _episodes(flagged.filter(pl.col("_blamed")))
    others = flagged.filter(~pl.col("_blamed"))
    duration, excess = _duration_law(per_unit), _excess_law(per_unit)
    if duration is None or excess is None:
        complete = int(np.count_nonzero(~per_unit.censored))
        msg = (
            f"{per_unit.n} episode(s) blamed on a {unit} ({complete} complete): at least two "
            "complete ones are needed to fit the duration law; observe longer or fit at job level."
        )
        raise ValueError(msg)
    rate = per_unit.n / unit_hours
    lo, hi = _rate_bounds(per_unit.n, unit_hours, alpha)
    rng = np.random.default_rng(random_state)
    replicates, failed = _bootstrap(per_unit, unit_hours, unit, n_boot, rng)
    job_level = _job_level(_episodes(others), job_hours, alpha) if others.height else None
    return SlowFit(
        laws=SlowLaws(rate, duration, excess, unit),
        n_episodes=per_unit.n,
        n_censored=int(np.count_nonzero(per_unit.censored)),
        unit_hours=unit_hours,
        rate_lo_per_unit_h=lo,
        rate_hi_per_unit_h=hi,
        alpha=alpha,
        replicates=replicates,
        n_boot_failed=failed,
        unattributed=job_level,
        lower_bound=job_level is not None,
    )
