"""Look at the fit: probability plots and an Anderson-Darling statistic per family.

Both start from the product-limit (Kaplan-Meier) estimate of the lives, with left truncation:
a unit joins the risk set at its entry age ``entry_h`` and leaves it at ``exit_h``, so at a
failure age ``t`` the units at risk are those with ``entry_h < t <= exit_h``, as in lifelines'
estimate (a zero-length life, ``entry_h == exit_h``, counts at its own age).

Anchoring (left truncation)
---------------------------
With late entry the product limit from the smallest entry age ``tau`` estimates the conditional
survival ``S(t) / S(tau)``, not ``S(t)``: lives that failed before anyone watched them are never
seen. When the risk set empties between two age ranges (a fleet of two installation batches, say,
watched at ages 0-90 d and 300-390 d), the product limit says nothing about the gap either. So the
lives are cut into *segments*, maximal age ranges ``(a_k, b_k]`` with at least one unit at risk,
and in each segment the product limit ``S_k(t)`` (which estimates ``S(t) / S(a_k)``) is
anchored at the fitted family's survival to the segment start:

    ``F_hat(t) = 1 - S_fit(a_k) * S_k(t)``                (unconditional; probability plots)
    ``F_hat_c(t) = 1 - S_fit(a_k) / S_fit(tau) * S_k(t)``  (given survival to ``tau``; AD)

With every unit observed from new, ``tau = a_0 = 0``, ``S_fit(0) = 1`` and there is one segment:
the plain Kaplan-Meier estimate, no anchoring at all.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import polars as pl
from scipy import stats

from models.families import family_of
from models.lifetimes import Lifetimes, LogLives, check_lifetimes
from models.mle import fit_family_fast
from models.parametric import (
    MIN_FAILURES,
    check_alpha,
    check_family,
    location_scale,
    location_scale_cov,
    log_sf_cdf,
    log_sf_cdf_standard,
    log_survival,
)

if TYPE_CHECKING:
    from collections.abc import Mapping

    from numpy.typing import ArrayLike, NDArray

__all__ = [
    "PAPERS",
    "ProbabilityPlot",
    "goodness_of_fit",
    "goodness_of_fit_families",
    "paper_transform",
    "probability_plot",
]

PAPERS: tuple[str, ...] = ("weibull", "lognormal")
"""Probability papers: ``x = ln t`` and ``y = ln(-ln(1 - F))`` (Weibull) or ``Phi^-1(F)``.

Each is named after the family it linearises (:meth:`~models.families.Family.paper_y`)."""


def paper_transform(probability: ArrayLike, paper: str) -> NDArray[np.float64]:
    """Return the y coordinate of a probability ``F`` on a probability paper.

    ``weibull``: ``ln(-ln(1 - F))``; ``lognormal``: ``Phi^-1(F)``. Both papers use
    ``x = ln t``, so a Weibull (log-normal) CDF is a straight line on its own paper.
    """
    p = np.asarray(probability, dtype=np.float64)
    return _paper_y(np.log1p(-p), paper)


def _paper_y(log_s: NDArray[np.float64], paper: str) -> NDArray[np.float64]:
    """Paper y from ``log S = log(1 - F)``, accurate near ``F = 0`` and ``F = 1``."""
    if paper not in PAPERS:
        msg = f"Unknown paper {paper!r}; choose one of {', '.join(PAPERS)}."
        raise ValueError(msg)
    return family_of(paper).paper_y(log_s)


# --------------------------------------------------------------------------------------------
# Product limit with late entry, by segment
# --------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class _ProductLimit:
    """Kaplan-Meier with left truncation, restarted in each age range with units at risk.

    ``ages`` are the distinct failure ages (sorted); ``segment`` the index of the segment each
    lies in; ``at_risk``/``n_failed`` the risk set and failures there; ``before``/``after`` the
    segment's product limit just before and at each age. ``starts``/``ends`` bound the segments.
    """

    n_units: int
    n_failures: int
    tau_h: float
    starts: NDArray[np.float64]
    ends: NDArray[np.float64]
    ages: NDArray[np.float64]
    segment: NDArray[np.intp]
    at_risk: NDArray[np.int64]
    n_failed: NDArray[np.int64]
    before: NDArray[np.float64]
    after: NDArray[np.float64]

    @classmethod
    def of(cls, lives: Lifetimes) -> _ProductLimit:
        entry = np.sort(lives.entry_h)
        exit_ = np.sort(lives.exit_h)
        # risk-set size on (x, next x): entries at or before x minus exits at or before x
        knots = np.unique(np.concatenate([entry, exit_]))
        count = np.searchsorted(entry, knots, side="right") - np.searchsorted(
            exit_, knots, side="right"
        )
        empty = count[:-1] == 0  # the last knot is the largest exit: always empty after it
        ends = knots[:-1][empty]
        starts = np.concatenate([[entry[0]], entry[np.searchsorted(entry, ends, side="right")]])
        ends = np.concatenate([ends, [knots[-1]]])
        ages, n_failed = np.unique(lives.exit_h[lives.failed], return_counts=True)
        # at risk at t: entry_h < t <= exit_h (as lifelines' estimate counts), and a zero-length
        # life (entry_h == exit_h == t) at its own age
        at_risk = np.searchsorted(entry, ages, side="left") - np.searchsorted(
            exit_, ages, side="left"
        )
        zero = np.sort(lives.exit_h[lives.exit_h == lives.entry_h])
        if zero.size:
            at_risk += np.searchsorted(zero, ages, side="right") - np.searchsorted(
                zero, ages, side="left"
            )
        segment = np.maximum(np.searchsorted(starts, ages, side="right") - 1, 0)
        hazard = n_failed / at_risk
        with np.errstate(divide="ignore"):  # every unit at risk failed: log 0 = -inf
            log_step = np.log1p(-np.minimum(hazard, 1.0))
        after = np.empty_like(hazard)
        for k in np.unique(segment):  # a cumulative product per segment
            inside = segment == k
            after[inside] = np.exp(np.cumsum(log_step[inside]))
        before = np.empty_like(after)
        first = np.ones(ages.size, dtype=bool)
        first[1:] = segment[1:] != segment[:-1]
        before[first] = 1.0
        before[~first] = after[np.flatnonzero(~first) - 1]
        return cls(
            n_units=lives.n_units,
            n_failures=lives.n_failures,
            tau_h=float(entry[0]),
            starts=starts,
            ends=ends,
            ages=ages,
            segment=segment,
            at_risk=at_risk.astype(np.int64),
            n_failed=n_failed.astype(np.int64),
            before=before,
            after=after,
        )

    def anchors(self, family: str, params: Mapping[str, float]) -> NDArray[np.float64]:
        """``log S_fit(a_k)`` at each segment start."""
        return log_survival(family, params, self.starts)

    def anderson_darling(self, family: str, params: Mapping[str, float]) -> float:
        """Return ``n * sum`` of the weighted squared distance over each constant piece.

        See :func:`goodness_of_fit`.
        """
        log_anchor = self.anchors(family, params)
        log_s_tau = float(log_anchor[0])
        lo_t: list[NDArray[np.float64]] = []
        hi_t: list[NDArray[np.float64]] = []
        log_km: list[NDArray[np.float64]] = []  # log S_k on each piece
        tail = False
        for k in range(self.starts.size):
            inside = self.segment == k
            ages = self.ages[inside]
            with np.errstate(divide="ignore"):
                steps = np.log(self.after[inside])
            knots = np.concatenate([[self.starts[k]], ages, [self.ends[k]]])
            lo_t.append(knots[:-1])
            hi_t.append(knots[1:])
            log_km.append(log_anchor[k] - log_s_tau + np.concatenate([[0.0], steps]))
            if k == self.starts.size - 1 and ages.size and self.after[inside][-1] == 0.0:
                tail = True  # everyone left at risk failed: F_hat = 1 up to t = infinity
        log_s_hat = np.concatenate(log_km)  # log(1 - F_hat_c) on each piece
        log_s_lo, log_f_lo = self._conditional(family, params, np.concatenate(lo_t), log_s_tau)
        log_s_hi, log_f_hi = self._conditional(family, params, np.concatenate(hi_t), log_s_tau)
        if tail:
            log_s_hat = np.append(log_s_hat, -np.inf)
            log_s_lo = np.append(log_s_lo, log_s_hi[-1])
            log_f_lo = np.append(log_f_lo, log_f_hi[-1])
            log_s_hi = np.append(log_s_hi, -np.inf)
            log_f_hi = np.append(log_f_hi, 0.0)
        pieces = _pieces(log_s_hat, (log_s_lo, log_f_lo), (log_s_hi, log_f_hi))
        return self.n_units * float(np.sum(pieces))

    def _conditional(
        self,
        family: str,
        params: Mapping[str, float],
        age_h: NDArray[np.float64],
        log_s_tau: float,
    ) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
        """``(log S_c, log F_c)`` given survival to ``tau`` (``F`` itself when ``tau = 0``)."""
        log_s, log_f = log_sf_cdf(family, params, age_h)
        if self.tau_h > 0:
            log_s = log_s - log_s_tau
            with np.errstate(divide="ignore"):
                log_f = np.log(-np.expm1(log_s))
        return log_s, log_f


def _pieces(
    log_s_hat: NDArray[np.float64],
    lo: tuple[NDArray[np.float64], NDArray[np.float64]],
    hi: tuple[NDArray[np.float64], NDArray[np.float64]],
) -> NDArray[np.float64]:
    """``int_a^b (p - u)^2 / (u (1 - u)) du`` for a constant ``p`` on ``u`` in ``[a, b]``.

    ``(p - u)^2 / (u (1 - u)) = p^2 / u + (1 - p)^2 / (1 - u) - 1``, so the integral is
    ``p^2 ln(b / a) - (1 - p)^2 ln((1 - b) / (1 - a)) - (b - a)``. ``log_s_hat`` is
    ``ln(1 - p)``; ``lo`` and ``hi`` are ``(ln(1 - u), ln u)`` at ``a`` and ``b``, so both tails
    keep their precision; ``0 * inf`` terms are 0.
    """
    (log_s_a, log_f_a), (log_s_b, log_f_b) = lo, hi
    with np.errstate(all="ignore"):
        p = -np.expm1(log_s_hat)
        first = np.where(p > 0, p * p * (log_f_b - log_f_a), 0.0)
        second = np.where(p < 1, -((1.0 - p) ** 2) * (log_s_b - log_s_a), 0.0)
        low = log_f_a < -math.log(2.0)  # a < 1/2: take the width from F, else from S
        width = np.where(low, np.exp(log_f_b) - np.exp(log_f_a), np.exp(log_s_a) - np.exp(log_s_b))
    return first + second - width


# --------------------------------------------------------------------------------------------
# Public functions
# --------------------------------------------------------------------------------------------
def _lifetimes(lives: pl.DataFrame | Lifetimes) -> Lifetimes:
    if isinstance(lives, Lifetimes):
        return lives
    missing = [c for c in ("exit_h", "failed") if c not in lives.columns]
    if missing:
        msg = (
            f"lives is missing column(s) {missing}; expected one row per unit life with entry_h "
            "(age when observation began), exit_h and failed."
        )
        raise ValueError(msg)
    return check_lifetimes(
        lives.get_column("exit_h").to_numpy(),
        lives.get_column("failed").cast(pl.Boolean).to_numpy(),
        lives.get_column("entry_h").to_numpy() if "entry_h" in lives.columns else None,
    )


def _check_params(family: str, params: Mapping[str, float]) -> dict[str, float]:
    names = family_of(family).param_names
    missing = [n for n in names if n not in params or params[n] is None]
    if missing:
        msg = (
            f"params of a {family} fit need {list(names)} (lifelines names); missing {missing}. "
            "Use the params_json of a converged fit_lives row."
        )
        raise ValueError(msg)
    return {n: float(params[n]) for n in names}


def goodness_of_fit(
    lives: pl.DataFrame | Lifetimes, family: str, params: Mapping[str, float]
) -> float:
    """Anderson-Darling distance between the lives' product limit and a fitted family.

    Parameters
    ----------
    lives
        One row per unit life with ``entry_h`` (age when observation began, left truncation;
        optional, 0 if absent), ``exit_h`` (age at failure or censoring, h) and ``failed``; or
        validated :class:`~models.lifetimes.Lifetimes`.
    family
        One of :data:`~models.parametric.FAMILIES`.
    params
        The fitted parameters in lifelines' names (a ``params_json`` of :func:`fit_lives`).

    Returns
    -------
    float
        The Anderson-Darling statistic ``A^2`` (lower is a closer fit). NaN when a
        parameter is not finite (a fit that did not converge). It compares families on the same
        lives; its null distribution with censoring, truncation and estimated parameters is not
        the tabulated one, so read no p-value into it.

    Raises
    ------
    ValueError
        On invalid lives, an unknown family or missing parameters.

    Notes
    -----
    The statistic is the Anderson-Darling distance between the fitted CDF and the
    product-limit (Kaplan-Meier) step function, as Minitab scores families in its Distribution
    ID Plot for censored data (Minitab Help, "Methods and formulas for goodness-of-fit measures
    in Distribution ID Plot": a weighted squared distance from the plot points to the fitted
    line, heavier in the tails; Minitab calls the variant on other plotting positions the
    adjusted AD*). It is the Anderson-Darling (1952, Ann. Math. Stat. 23, 193-212; 1954, J. Am.
    Stat. Assoc. 49, 765-769) integral with the empirical CDF replaced by the product limit and
    the range cut to the observed ages, as in the censored statistics of Pettitt and Stephens
    (1976, Biometrika 63, 291-298), here extended to left truncation by conditioning:

    ``A^2 = n * integral (F_hat(t) - F(t))^2 / (F(t) (1 - F(t))) dF(t)``

    with ``n`` the number of lives, ``F`` the fitted CDF conditioned on survival to the smallest
    entry age ``tau`` (``F_c = 1 - S(t) / S(tau)``; ``tau = 0`` without truncation) and
    ``F_hat`` the product limit anchored as the module docstring says. The integral runs over
    the observed ages, segment by segment (from ``tau`` or a segment start to its largest exit
    age; not over gaps with nobody at risk), and on to ``t = infinity`` when the product limit
    reaches 1 (the last lives at risk all failed). ``F_hat`` is a step function, so each piece
    between failure ages has the closed form
    ``p^2 ln(b/a) - (1 - p)^2 ln((1 - b)/(1 - a)) - (b - a)`` for ``F_hat = p`` and
    ``F`` from ``a`` to ``b``; there is no discretisation. For complete data (no truncation, no
    censoring) this is exactly the classical
    ``A^2 = -n - (1/n) sum_i (2i - 1) [ln F(x_(i)) + ln(1 - F(x_(n+1-i)))]``.

    Examples
    --------
    >>> table = fit_lives(lives)
    >>> row = table.filter(pl.col("family") == "weibull").row(0, named=True)
    >>> goodness_of_fit(lives, "weibull", json.loads(row["params_json"]))
    """
    return goodness_of_fit_families(lives, {family: params})[family]


def goodness_of_fit_families(
    lives: pl.DataFrame | Lifetimes, fits: Mapping[str, Mapping[str, float]]
) -> dict[str, float]:
    """:func:`goodness_of_fit` of several fitted families on the same lives.

    The product limit is computed once and scored against each ``family: params`` of ``fits``;
    returns ``{family: A^2}`` (NaN where a parameter is not finite).
    """
    checked = {
        check_family(family): _check_params(family, params) for family, params in fits.items()
    }
    limit = _ProductLimit.of(_lifetimes(lives))
    return {
        family: limit.anderson_darling(family, params)
        if all(math.isfinite(v) for v in params.values())
        else math.nan
        for family, params in checked.items()
    }


@dataclass(frozen=True)
class ProbabilityPlot:
    """A probability plot of lives against a fitted family; see :func:`probability_plot`.

    Attributes
    ----------
    family, paper, alpha
        The fitted family, the paper (``weibull`` or ``lognormal``), one minus the band level.
    params, cov
        Fitted parameters and their covariance, in lifelines' names and order.
    points
        One row per distinct failure age: ``age_h``, ``position`` (plotting position, an
        estimate of the unconditional ``F``), ``x`` (``ln age_h``), ``y`` (paper coordinate of
        ``position``), ``at_risk``, ``n_failed``, ``segment``.
    line
        The fitted CDF over the observed ages: ``age_h``, ``cdf``, ``lo``, ``hi`` (pointwise
        ``1 - alpha`` band), ``x``, ``y``, ``y_lo``, ``y_hi``.
    segments
        Age ranges ``(start_h, end_h)`` with units at risk; the points of each are anchored at
        the fitted survival to its start.
    ad_statistic
        :func:`goodness_of_fit` of ``family`` with ``params``.
    n_units, n_failures
        Lives and failures plotted.
    """

    family: str
    paper: str
    alpha: float
    params: dict[str, float]
    cov: NDArray[np.float64]
    points: pl.DataFrame
    line: pl.DataFrame
    segments: list[tuple[float, float]]
    ad_statistic: float
    n_units: int
    n_failures: int


def _fit(family: str, lives: Lifetimes) -> tuple[dict[str, float], NDArray[np.float64]]:
    """MLE and covariance in lifelines' names (the same fitter as :func:`fit_lives`)."""
    law = family_of(family)
    if not law.has_shape:  # the exponential: T / r, variance lambda^2 / r
        lam = lives.exposure_h / lives.n_failures
        params = dict(zip(law.param_names, [lam], strict=True))
        return params, np.array([[lam * lam / lives.n_failures]])
    fit = fit_family_fast(family, LogLives(lives))
    if not fit.converged:
        msg = (
            f"The {family} fit of these lives did not converge (too few failures at distinct "
            "ages, or all on late entries); plot another family or more lives."
        )
        raise ValueError(msg)
    return dict(fit.params), fit.cov


def probability_plot(
    lives: pl.DataFrame | Lifetimes,
    family: str,
    *,
    paper: str = "weibull",
    alpha: float = 0.05,
    n_grid: int = 100,
) -> ProbabilityPlot:
    """Return plotting positions, fitted CDF and its band on Weibull or log-normal paper.

    Parameters
    ----------
    lives
        One row per unit life with ``entry_h`` (left truncation; optional), ``exit_h`` (h) and
        ``failed``; or validated :class:`~models.lifetimes.Lifetimes`.
    family
        The family to fit and draw (one of :data:`~models.parametric.FAMILIES`); it is a straight
        line on its own paper.
    paper
        ``"weibull"``: ``x = ln t``, ``y = ln(-ln(1 - F))``; ``"lognormal"``: ``x = ln t``,
        ``y = Phi^-1(F)``.
    alpha
        One minus the level of the pointwise band.
    n_grid
        Ages at which the line is evaluated (log-spaced over the observed ages).

    Returns
    -------
    ProbabilityPlot
        Points, line, band, segments and the AD statistic.

    Raises
    ------
    ValueError
        On invalid lives, fewer than 2 failures, an unknown family or paper, or a fit that does
        not converge.

    Notes
    -----
    The family is fitted by maximum likelihood (left-truncated, right-censored) with the fitter
    of :func:`fit_lives`. Plotting positions: the product limit with late entry, per segment
    of ages with units at risk, anchored at the fitted survival to the segment start (module
    docstring; with every unit observed from new this is the plain Kaplan-Meier estimate). At a
    failure age the position is the midpoint of the jump, ``(F_hat(t-) + F_hat(t)) / 2``
    (Meeker and Escobar, 1998, *Statistical Methods for Reliability Data*, section 6.4): with
    complete data that is Hazen's ``(i - 0.5) / n``, and the last failure stays off infinity.

    The band: ``ln T`` is location-scale, ``F(t) = G(z)`` with ``z = (ln t - mu) / sigma``;
    ``Var z`` by the delta method on the covariance of ``(mu, sigma)`` (the inverse observed
    information mapped from lifelines' parameters), then ``G(z -+ q se z)`` with ``q`` the
    normal ``1 - alpha/2`` quantile (Meeker and Escobar, section 8.4.3). The exponential fixes
    ``sigma = 1``, so ``Var z = Var(ln lambda_) = 1 / r`` for ``r`` failures.
    """
    family = check_family(family)
    alpha = check_alpha(alpha)
    if paper not in PAPERS:
        msg = f"Unknown paper {paper!r}; choose one of {', '.join(PAPERS)}."
        raise ValueError(msg)
    checked = _lifetimes(lives)
    if checked.n_failures < MIN_FAILURES:
        msg = (
            f"A probability plot needs at least {MIN_FAILURES} failures; these lives have "
            f"{checked.n_failures}. Pool more lives (a longer window or a coarser class)."
        )
        raise ValueError(msg)
    params, cov = _fit(family, checked)
    limit = _ProductLimit.of(checked)
    log_anchor = limit.anchors(family, params)[limit.segment]
    with np.errstate(divide="ignore"):
        log_mid = log_anchor + np.log(0.5 * (limit.before + limit.after))
    points = pl.DataFrame(
        {
            "age_h": limit.ages,
            "position": -np.expm1(log_mid),
            "x": np.log(limit.ages),
            "y": _paper_y(log_mid, paper),
            "at_risk": limit.at_risk,
            "n_failed": limit.n_failed,
            "segment": limit.segment.astype(np.int64),
        }
    )
    # the observed ages: from just below the first failure to the largest exit
    age = np.geomspace(0.8 * float(limit.ages[0]), float(checked.exit_h.max()), n_grid)
    mu, sigma = location_scale(family, params)
    cov_ms = location_scale_cov(family, params, cov)
    z = (np.log(age) - mu) / sigma
    grad = np.stack([-np.ones_like(z) / sigma, -z / sigma])  # dz/dmu, dz/dsigma
    se = np.sqrt(np.einsum("in,ij,jn->n", grad, cov_ms, grad))
    q = float(stats.norm.ppf(1.0 - alpha / 2.0))
    log_s = log_sf_cdf_standard(family, z)[0]
    log_s_lo = log_sf_cdf_standard(family, z - q * se)[0]  # smaller z: smaller F
    log_s_hi = log_sf_cdf_standard(family, z + q * se)[0]
    line = pl.DataFrame(
        {
            "age_h": age,
            "cdf": -np.expm1(log_s),
            "lo": -np.expm1(log_s_lo),
            "hi": -np.expm1(log_s_hi),
            "x": np.log(age),
            "y": _paper_y(log_s, paper),
            "y_lo": _paper_y(log_s_lo, paper),
            "y_hi": _paper_y(log_s_hi, paper),
        }
    )
    return ProbabilityPlot(
        family=family,
        paper=paper,
        alpha=alpha,
        params=params,
        cov=np.asarray(cov, dtype=np.float64),
        points=points,
        line=line,
        segments=[(float(a), float(b)) for a, b in zip(limit.starts, limit.ends, strict=True)],
        ad_statistic=limit.anderson_darling(family, params),
        n_units=checked.n_units,
        n_failures=checked.n_failures,
    )
