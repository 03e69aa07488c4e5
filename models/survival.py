"""Lifetime fits per component class: every family for every group, with the AIC choice.

:func:`fit_lives` takes one row per unit life (``entry_h``, ``exit_h``, ``failed``; see
:mod:`models.lifetimes`) and maximises the same left-truncated, right-censored likelihood as
lifelines with the vectorised Newton solver of :mod:`models.mle`. The family formulas (survival,
mean, B10, rates) live in :mod:`models.parametric`, the single-family :class:`MtbfFitter` in
:mod:`models.fitter`, Kaplan-Meier and Nelson-Aalen in :mod:`models.nonparametric`, Cox PH in
:mod:`models.cox`.
"""

from __future__ import annotations

import json
import math
import warnings
from typing import TYPE_CHECKING, Any

import numpy as np
import polars as pl
from scipy import special

from models.exceptions import ConvergenceWarning, FewFailuresWarning
from models.families import FAMILY_REGISTRY, Family, closed_form_family, family_of, weibayes_family
from models.group_summary import FamilyFit, GroupSummary, summarise_group
from models.lifetimes import Lifetimes, LogLives, lives_frame
from models.mle import ParametricFit, fit_family_fast
from models.mtbf_summary import WEIBAYES_MAX_FAILURES, sampled_mean, weibayes
from models.parametric import (
    FAMILIES,
    MIN_FAILURES,
    annual_rates,
    check_alpha,
    check_family,
    delta_interval,
    exponential_log_likelihood,
    exponential_mtbf,
)

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

__all__ = ["fit_lives"]


# --------------------------------------------------------------------------------------------
# Class-level table
# --------------------------------------------------------------------------------------------
_RESULT_COLUMNS: dict[str, pl.DataType | type[pl.DataType]] = {
    "family": pl.String,
    "n_units": pl.Int64,
    "n_failures": pl.Int64,
    "exposure_h": pl.Float64,
    "params_json": pl.String,
    "shape": pl.Float64,
    "log_likelihood": pl.Float64,
    "aic": pl.Float64,
    "mtbf_h": pl.Float64,
    "mtbf_lo_h": pl.Float64,
    "mtbf_hi_h": pl.Float64,
    "afr_pct": pl.Float64,
    "fit_per_1e9h": pl.Float64,
    "b10_h": pl.Float64,
    "chosen": pl.Boolean,
    "method": pl.String,
    "shape_lo": pl.Float64,
    "shape_hi": pl.Float64,
    "aic_weight": pl.Float64,
    "max_age_h": pl.Float64,
    "rmst_h": pl.Float64,
    "extrapolated": pl.Boolean,
    "mtbf_sampled_h": pl.Float64,
    "mtbf_sampled_lo_h": pl.Float64,
    "mtbf_sampled_hi_h": pl.Float64,
    "mtbf_sampled_inf_share": pl.Float64,
    "unit_years": pl.Float64,
    "afr_observed_pct": pl.Float64,
    "afr_observed_lo_pct": pl.Float64,
    "afr_observed_hi_pct": pl.Float64,
    "mtbf_observed_h": pl.Float64,
    "mtbf_observed_lo_h": pl.Float64,
    "mtbf_observed_hi_h": pl.Float64,
    "headline_method": pl.String,
    "headline_mtbf_h": pl.Float64,
    "headline_mtbf_lo_h": pl.Float64,
    "headline_mtbf_hi_h": pl.Float64,
    "headline_rmst_h": pl.Float64,
    "headline_extrapolated": pl.Boolean,
    "lifetime_method": pl.String,
    "lifetime_mtbf_h": pl.Float64,
    "lifetime_mtbf_lo_h": pl.Float64,
    "lifetime_mtbf_hi_h": pl.Float64,
    "lifetime_rmst_h": pl.Float64,
    "lifetime_extrapolated": pl.Boolean,
}


_HEADLINES = ("observed_rate", "lifetime_mean")


def _json(params: dict[str, float]) -> str:
    return json.dumps({k: (v if math.isfinite(v) else None) for k, v in params.items()})


def _exponential_fit(family: Family, data: LogLives, alpha: float) -> FamilyFit:
    """Return the closed-form fit of a family with no shape (the exponential: exact bounds)."""
    r, total = data.n_failures, data.exposure_h
    mtbf, lo, hi = exponential_mtbf(r, total, alpha=alpha)
    ll = exponential_log_likelihood(r, total)
    afr, fit = annual_rates(mtbf)
    params = dict(zip(family.param_names, [mtbf], strict=True))
    return FamilyFit(
        family=family.name,
        params_json=_json(params),
        shape=1.0,
        log_likelihood=ll,
        aic=2.0 - 2.0 * ll,
        mtbf_h=mtbf,
        mtbf_lo_h=lo,
        mtbf_hi_h=hi,
        afr_pct=afr,
        fit_per_1e9h=fit,
        b10_h=family.b10_h(params) if r > 0 else math.nan,
        method="chi_square",
        shape_lo=math.nan,
        shape_hi=math.nan,
        params=params,
        mtbf_sampled_h=mtbf,
        mtbf_sampled_lo_h=lo,
        mtbf_sampled_hi_h=hi,
        mtbf_sampled_inf_share=0.0,
    )


def _not_converged_fit(family: Family) -> FamilyFit:
    """Return the row of a family whose fit did not converge: NaN throughout."""
    nan = math.nan
    return FamilyFit(
        family=family.name,
        params_json=_json(dict.fromkeys(family.param_names, nan)),
        shape=nan,
        log_likelihood=nan,
        aic=nan,
        mtbf_h=nan,
        mtbf_lo_h=nan,
        mtbf_hi_h=nan,
        afr_pct=nan,
        fit_per_1e9h=nan,
        b10_h=nan,
        method="mle_delta",
        shape_lo=nan,
        shape_hi=nan,
        params=None,
        mtbf_sampled_h=nan,
        mtbf_sampled_lo_h=nan,
        mtbf_sampled_hi_h=nan,
        mtbf_sampled_inf_share=nan,
    )


def _parametric_fit(fit: ParametricFit, alpha: float) -> FamilyFit:
    family = family_of(fit.family)
    if not fit.converged:
        return _not_converged_fit(family)
    mtbf, lo, hi = delta_interval(family.name, fit.params, fit.cov, alpha)
    shape_param = family.shape_param or ""  # a fitted family has a shape
    shape = fit.params[shape_param]
    # delta method on log shape (the shape is the second lifelines parameter of every family)
    sd_log_shape = math.sqrt(fit.cov[1, 1]) / shape if fit.cov[1, 1] >= 0 else math.nan
    half = float(special.ndtri(1.0 - alpha / 2.0)) * sd_log_shape
    afr, fit_rate = annual_rates(mtbf)
    sampled = sampled_mean(family.name, fit.theta, fit.cov_theta, alpha=alpha)
    return FamilyFit(
        family=family.name,
        params_json=_json(fit.params),
        shape=fit.params[shape_param],
        log_likelihood=fit.log_likelihood,
        aic=fit.aic,
        mtbf_h=mtbf,
        mtbf_lo_h=lo,
        mtbf_hi_h=hi,
        afr_pct=afr,
        fit_per_1e9h=fit_rate,
        b10_h=family.b10_h(fit.params),
        method="mle_delta",
        shape_lo=shape * math.exp(-half),
        shape_hi=shape * math.exp(half),
        params=fit.params,
        mtbf_sampled_h=sampled["mtbf_sampled_h"],
        mtbf_sampled_lo_h=sampled["mtbf_sampled_lo_h"],
        mtbf_sampled_hi_h=sampled["mtbf_sampled_hi_h"],
        mtbf_sampled_inf_share=sampled["mtbf_sampled_inf_share"],
    )


def _weibayes_fit(
    part: pl.DataFrame, shape: tuple[float, str], data: LogLives, alpha: float
) -> FamilyFit:
    """Fit the Weibayes row of a group with 1 to 5 failures.

    A Weibull (:func:`~models.families.weibayes_family`) at a known shape, with
    likelihood-ratio (LR) bounds.
    """
    family = weibayes_family()
    beta, _ = shape
    fit = weibayes(
        part.get_column("exit_h").to_numpy(),
        part.get_column("failed").to_numpy(),
        part.get_column("entry_h").to_numpy(),
        beta,
        alpha=alpha,
    )
    params = dict(zip(family.param_names, [fit.scale_h, beta], strict=True))
    afr, fit_rate = annual_rates(fit.mtbf_h)
    return FamilyFit(
        family=family.name,
        params_json=_json(params),
        shape=beta,
        log_likelihood=fit.log_likelihood,
        aic=2.0 - 2.0 * fit.log_likelihood,
        mtbf_h=fit.mtbf_h,
        mtbf_lo_h=fit.mtbf_lo_h,
        mtbf_hi_h=fit.mtbf_hi_h,
        afr_pct=afr,
        fit_per_1e9h=fit_rate,
        b10_h=family.b10_h(params) if data.n_failures else math.nan,
        method="weibayes_lr",
        shape_lo=math.nan,
        shape_hi=math.nan,
        params=params,
        mtbf_sampled_h=fit.mtbf_h,
        mtbf_sampled_lo_h=fit.mtbf_lo_h,
        mtbf_sampled_hi_h=fit.mtbf_hi_h,
        mtbf_sampled_inf_share=0.0,
    )


def _log_lives(part: pl.DataFrame) -> LogLives:
    """Return the log ages of a group's lives, shared by the families' fits."""
    return LogLives(
        Lifetimes(
            part.get_column("exit_h").to_numpy(),
            part.get_column("failed").to_numpy(),
            part.get_column("entry_h").to_numpy(),
        )
    )


class _WeibayesShapes:
    """The known shape of a Weibayes group: given, else the class's fleet-wide Weibull, else 1.

    ``given`` is one shape for every group or a mapping from the first ``by`` value (the
    component class) to its shape. Without one, a group split by more columns than the class
    takes the Weibull MLE of its whole class (pooled over the other columns) when that class has
    more than ``WEIBAYES_MAX_FAILURES`` failures and the fit converges; otherwise the shape is 1
    (Weibayes is then the exponential with likelihood-ratio bounds).
    """

    def __init__(
        self, frame: pl.DataFrame, by: list[str], given: float | Mapping[str, float] | None
    ) -> None:
        self.frame, self.by, self.given = frame, by, given
        self.pooled: dict[Any, tuple[float, str]] = {}
        self.used: dict[str, str] = {}

    def weibayes_shape(self, key: tuple[Any, ...]) -> tuple[float, str]:
        shape, source = self._shape(key)
        self.used[str(dict(zip(self.by, key, strict=True)))] = f"{shape:.3g} ({source})"
        return shape, source

    def _shape(self, key: tuple[Any, ...]) -> tuple[float, str]:
        if isinstance(self.given, (int, float)):
            return float(self.given), "given"
        if self.given is not None and key and key[0] in self.given:
            return float(self.given[key[0]]), "given"
        if len(self.by) < 2:
            return 1.0, "assumed (no fleet-wide fit)"
        if key[0] not in self.pooled:
            data = _log_lives(self.frame.filter(pl.col(self.by[0]) == key[0]))
            found = (1.0, "assumed (no fleet-wide fit)")
            if data.n_failures > WEIBAYES_MAX_FAILURES:
                family = weibayes_family()
                fit = fit_family_fast(family.name, data)
                if fit.converged:
                    shape = fit.params[family.shape_param or ""]
                    found = (shape, f"fleet-wide {self.by[0]} fit")
            self.pooled[key[0]] = found
        return self.pooled[key[0]]


def fit_lives(
    lives: pl.DataFrame,
    *,
    by: Sequence[str] = ("component_class",),
    families: Sequence[str] = FAMILIES,
    alpha: float = 0.05,
    weibayes_shape: float | Mapping[str, float] | None = None,
    headline: str = "observed_rate",
) -> pl.DataFrame:
    """Fit every family to the lives of every group and mark the AIC choice.

    Parameters
    ----------
    lives
        One row per unit life with the ``by`` columns, ``entry_h`` (age at the start of
        observation; left truncation), ``exit_h`` (age at failure or censoring) and ``failed``.
        Other columns are ignored (and not copied).
    by
        Grouping columns, e.g. ``("component_class",)`` or ``("component_class", "batch")``.
    families
        Families to fit, a subset of :data:`FAMILIES`.
    alpha
        One minus the confidence level of the MTBF bounds.
    weibayes_shape
        The known Weibull shape of groups with 1 to 5 failures: one for every group, or per
        class (the first ``by`` value); default: the class's fleet-wide fit for cohorts, else 1.
    headline
        ``"observed_rate"`` (the default, for failure processes): the headline is the rate over
        the ages observed (:func:`models.observed_headline`). ``"lifetime_mean"``: the headline
        columns repeat the lifetime mean's (``headline_method`` = ``lifetime_method`` ...), for
        durations whose mean is the quantity asked for, such as repair times (an MTTR), where
        the exact chi-square interval of the count would assume exponential durations.

    Returns
    -------
    polars.DataFrame
        One row per group x family, groups in order of first appearance:

        - the ``by`` columns, ``family``;
        - ``n_units``, ``n_failures``, ``exposure_h`` (unit-hours, ``sum(exit_h - entry_h)``);
        - ``params_json``: the fitted parameters as JSON under lifelines' names;
        - ``shape``: Weibull ``rho_``, log-normal ``sigma_``, log-logistic ``beta_``,
          exponential 1.0;
        - ``log_likelihood``, ``aic`` (as lifelines computes them, so comparable across families);
        - ``mtbf_h``, ``mtbf_lo_h``, ``mtbf_hi_h``: mean life and its bounds (exponential: exact
          chi-square; others: delta method on log MTBF);
        - ``afr_pct`` (``8766 / mtbf_h * 100``, steady-state renewal rate), ``fit_per_1e9h``
          (``1e9 / mtbf_h``), ``b10_h`` (age by which 10 % fail);
        - ``chosen``: the lowest-AIC family of the group (Weibayes for 1 to 5 failures);
        - ``aic_weight``, ``max_age_h``, ``rmst_h``, ``extrapolated``, ``mtbf_sampled_*``,
          the observed rates (``unit_years``, ``afr_observed_*``, ``mtbf_observed_*``) and the
          group's figures repeated on each of its rows (see
          :func:`models.group_summary.summarise_group`):
        - the **headline** (``headline_method``, ``headline_mtbf_h``, ``headline_mtbf_lo_h``,
          ``headline_mtbf_hi_h``, ``headline_extrapolated``): the rate over the ages observed,
          exposure / failures with its exact chi-square interval (``observed_rate``), or with
          no failure the one-sided lower bound (``chi_square_bound``); computed by
          :func:`models.observed_headline`, as :func:`models.failure_rates` computes it;
          ``headline_extrapolated`` is False (it never rests on ages beyond those observed);
          ``headline_rmst_h`` is NaN (kept for stored runs). With ``headline="lifetime_mean"``
          they are the lifetime mean's columns below;
        - the **lifetime mean** beside it (``lifetime_method``: ``model_average`` of the
          families for 6+ failures, ``weibayes_lr`` for 1 to 5, ``chi_square`` for none;
          ``lifetime_mtbf_h``, ``lifetime_mtbf_lo_h``, ``lifetime_mtbf_hi_h``,
          ``lifetime_rmst_h``, ``lifetime_extrapolated``: more than half of that mean lies
          beyond the oldest age observed).

    Raises
    ------
    ValueError
        On missing columns, unknown families or invalid lives (nulls, NaN, negative ages, exit
        before entry).

    Warns
    -----
    FewFailuresWarning
        Once, naming the groups with fewer than 2 failures. Such a group gets a single
        exponential row (its chi-square bound; with 0 failures ``mtbf_h`` is NaN and
        ``mtbf_lo_h`` the one-sided lower bound), ``chosen=True``.
    ConvergenceWarning
        When a family's fit does not converge; that row holds NaN and is never chosen.

    Notes
    -----
    The exponential row is closed form from the sufficient statistics ``(r, T)``; the other
    families maximise the exact left-truncated, right-censored likelihood
    ``sum_failed log h(t) - sum (H(exit) - H(entry))`` with Newton steps on (log scale,
    log shape) using analytic derivatives, and their covariance is the inverse observed
    information, mapped to lifelines' parameters. Log ages are computed once per group and
    shared by the families. The MLEs match lifelines' fitters (which minimise the same
    likelihood) and an independent ``scipy.optimize`` fit; see ``tests/models``.

    Examples
    --------
    >>> table = fit_lives(lives, by=("component_class",))
    >>> table.filter(pl.col("chosen")).select("component_class", "family", "mtbf_h")
    """
    alpha = check_alpha(alpha)
    by, wanted = _checked_options(by, families, headline)
    frame = lives_frame(lives, by)
    schema = {c: lives.schema[c] for c in by} | _RESULT_COLUMNS
    if frame.height == 0:
        return pl.DataFrame(schema=schema)
    parts = frame.partition_by(by, as_dict=True, maintain_order=True) if by else {(): frame}
    columns: dict[str, list[Any]] = {name: [] for name in schema}
    notes = _GroupNotes(by, _WeibayesShapes(frame, by, weibayes_shape))
    for key, part in parts.items():
        data = _log_lives(part)
        if not data.exposure_h > 0:
            msg = (
                f"Group {dict(zip(by, key, strict=True))} has no time at risk (every exit_h "
                "equals its entry_h); drop it or check its ages."
            )
            raise ValueError(msg)
        fits = _group_fits(key, part, data, wanted, notes, alpha)
        chosen = _chosen(fits, data.n_failures)
        summary = summarise_group(
            fits,
            chosen,
            n_failures=data.n_failures,
            exposure_h=data.exposure_h,
            max_age_h=float(part.get_column("exit_h").max()),  # type: ignore[arg-type]
            alpha=alpha,
        )
        group: dict[str, object] = {"n_units": data.n_units, "n_failures": data.n_failures}
        group |= {"exposure_h": data.exposure_h} | summary.observed
        group |= _headline_columns(summary, headline) | summary.lifetime.columns()
        for fit, is_chosen, check in zip(fits, chosen, summary.checks, strict=True):
            row = fit.as_row() | {"chosen": is_chosen} | check.columns() | group
            for c, value in zip(by, key, strict=True):
                columns[c].append(value)
            for name in _RESULT_COLUMNS:
                columns[name].append(row[name])
    notes.warn()
    return pl.DataFrame(columns, schema=schema)


def _checked_options(
    by: Sequence[str], families: Sequence[str], headline: str
) -> tuple[list[str], list[Family]]:
    """Return the grouping columns and the families to fit; raise on an unknown option."""
    if headline not in _HEADLINES:
        msg = f"headline must be one of {list(_HEADLINES)}, got {headline!r}."
        raise ValueError(msg)
    wanted = [family_of(check_family(f)) for f in dict.fromkeys(families)]
    if not wanted:
        msg = "families is empty; pass at least one of " + ", ".join(FAMILY_REGISTRY) + "."
        raise ValueError(msg)
    return list(by), wanted


def _headline_columns(summary: GroupSummary, headline: str) -> dict[str, object]:
    """Return the ``headline_*`` columns: the observed rate's, or the lifetime mean's."""
    if headline == "lifetime_mean":
        return summary.lifetime.columns("headline_")
    return summary.headline.columns() | {"headline_rmst_h": summary.headline.rmst_h}


class _GroupNotes:
    """The groups :func:`fit_lives` warns about: few failures, Weibayes, fits not converged."""

    def __init__(self, by: list[str], shapes: _WeibayesShapes) -> None:
        self.by, self.shapes = by, shapes
        self.few: list[tuple[Any, ...]] = []
        self.weibayes_groups: list[tuple[Any, ...]] = []
        self.not_converged: list[str] = []

    def _shown(self, keys: list[tuple[Any, ...]]) -> str:
        # sorted: the groups arrive in the order of the rows, which a query need not fix
        first = sorted(keys, key=lambda key: tuple(map(str, key)))[:10]
        shown = ", ".join(str(dict(zip(self.by, k, strict=True))) for k in first)
        return shown + (f" and {len(keys) - 10} more" if len(keys) > 10 else "")

    def warn(self) -> None:
        """Warn once for each kind of group noted (at the caller of :func:`fit_lives`)."""
        if self.few:
            warnings.warn(
                f"{len(self.few)} group(s) have fewer than {MIN_FAILURES} failures "
                f"({self._shown(self.few)}): no "
                "family is fitted by maximum likelihood; with none the exponential chi-square "
                "bound is reported, with one a Weibayes row (known shape, likelihood-ratio "
                "bounds); read them as bounds.",
                FewFailuresWarning,
                stacklevel=3,
            )
        if self.weibayes_groups:
            used = sorted(self.shapes.used.items(), key=lambda item: str(item[0]))[:10]
            warnings.warn(
                f"{len(self.weibayes_groups)} group(s) have {MIN_FAILURES} to "
                f"{WEIBAYES_MAX_FAILURES} failures ({self._shown(self.weibayes_groups)}): their "
                "chosen row is Weibayes (a Weibull at a known shape with likelihood-ratio "
                "bounds); the other families' fits are shown, not chosen. "
                "Shapes: " + "; ".join(f"{k}: {v}" for k, v in used) + ".",
                FewFailuresWarning,
                stacklevel=3,
            )
        if self.not_converged:
            warnings.warn(
                "Fit did not converge (row left NaN, never chosen): "
                + "; ".join(self.not_converged),
                ConvergenceWarning,
                stacklevel=3,
            )


def _group_fits(
    key: tuple[Any, ...],
    part: pl.DataFrame,
    data: LogLives,
    wanted: Sequence[Family],
    notes: _GroupNotes,
    alpha: float,
) -> list[FamilyFit]:
    """Fit every wanted family to one group (Weibayes for 1 to 5 failures, none below 2)."""
    r = data.n_failures
    if r < MIN_FAILURES:
        notes.few.append(key)
    elif r <= WEIBAYES_MAX_FAILURES:
        notes.weibayes_groups.append(key)
    if r == 0:
        return [_exponential_fit(closed_form_family(), data, alpha)]
    fits: list[FamilyFit] = []
    reference: ParametricFit | None = None  # the fit that starts the others
    for family in wanted:
        if not family.has_shape:
            fits.append(_exponential_fit(family, data, alpha))
        elif r <= WEIBAYES_MAX_FAILURES and family.weibayes:
            fits.append(_weibayes_fit(part, notes.shapes.weibayes_shape(key), data, alpha))
        elif r >= MIN_FAILURES:
            fit = fit_family_fast(family.name, data, reference)
            if family.starts_others:
                reference = fit
            if not fit.converged:
                where = dict(zip(notes.by, key, strict=True))
                notes.not_converged.append(f"{family.name} for {where}")
            fits.append(_parametric_fit(fit, alpha))
    if r <= WEIBAYES_MAX_FAILURES and not any(f.method == "weibayes_lr" for f in fits):
        fits.append(_weibayes_fit(part, notes.shapes.weibayes_shape(key), data, alpha))
    return fits


def _chosen(fits: Sequence[FamilyFit], n_failures: int) -> list[bool]:
    """Flag each group's chosen fit: the only one, the Weibayes one, or the lowest AIC."""
    if n_failures == 0:
        return [True for _ in fits]
    if n_failures <= WEIBAYES_MAX_FAILURES:
        return [f.method == "weibayes_lr" for f in fits]
    aics = np.array([f.aic for f in fits], dtype=np.float64)
    best = int(np.nanargmin(aics)) if np.any(np.isfinite(aics)) else -1
    return [i == best for i in range(len(fits))]
