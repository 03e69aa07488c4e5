"""Per-class failure rates (:class:`~models.scenario.ClassRate`) from a fit or rates table.

:func:`rates_from_fits` reads a :func:`models.fit_lives` table (or an older table of chosen
rows); :func:`rates_from_failure_rates` reads a :func:`models.failure_rates` table. Both project
from the headline, the interruption rate over the ages observed with its exact interval.
"""

from __future__ import annotations

import math
import warnings
from typing import Any

import polars as pl

from models.exceptions import ApproximationWarning, FewFailuresWarning
from models.families import FAMILY_REGISTRY, renewal_family
from models.scenario import MTBF_CAP_H, ClassRate

__all__ = ["rates_from_failure_rates", "rates_from_fits"]

_BOUND_METHODS = ("chi_square_bound", "chi_square")
"""Headline methods with no point: no failure, a one-sided lower bound (``chi_square`` in runs
stored before the headline became the observed rate)."""


def rates_from_fits(fit_results: pl.DataFrame, *, at_ages: bool = False) -> tuple[ClassRate, ...]:
    """Turn the rows of a fit table into per-class rates.

    A table from :func:`models.fit_lives` (it has ``headline_mtbf_h`` and ``aic_weight``) is
    read per class, all families together; it projects the interruption rate the fleet showed:

    - by default the rate is the class's headline (:func:`models.observed_headline`): the MTBF
      over the ages observed, exposure / failures, with its exact chi-square interval as the
      bounds (so :func:`~models.goodput.project` samples a log-normal whose 2.5 and 97.5 %
      quantiles are the exact Poisson bounds of the rate), shape 1 (a constant rate) and no
      family mixture;
    - ``at_ages=True`` (a projection at given unit ages: ``fleet_age`` ``"new"``, hours or an
      age mix) takes the class's Weibull row (the maximum-likelihood fit, or Weibayes for 1 to
      5 failures). At its maximum the expected failures it gives over the ages observed,
      ``sum(H(exit) - H(entry))``, equal the failures seen, so it is the Weibull with that
      shape whose hazard over the observed ages matches the observed rate; its bounds scale
      that rate by the headline's exact bounds at the same shape (the mean moves as the rate
      to the power ``-1/shape``). A class with no Weibull row (the family left out) is the
      headline at shape 1. ``extrapolated`` is then the class's ``lifetime_extrapolated``
      (most of the Weibull's mean lies beyond the oldest age observed);
    - a class with no failure is projected at its chi-square lower bound (with a warning), as
      below; ``unit_level`` ``none`` projects at node level.

    A stored run from before the headline became the observed rate projects from its stored
    headline and bounds as they are (no mixture).

    Any other table is read the older way, from its chosen rows:

    Parameters
    ----------
    fit_results
        One row per component class, with columns ``component_class``, ``unit_level``
        (``gpu`` / ``node``; ``none`` counts as ``node``), ``mtbf_h``, ``mtbf_lo_h``,
        ``mtbf_hi_h`` (hours; null, NaN or inf where there is none), ``shape`` (Weibull
        shape) and ``family``. When the table also has ``chosen`` (as ``fit_lives`` returns
        it), only the chosen rows are used.

    Returns
    -------
    tuple of ClassRate
        A projection simulates Weibull renewals: a family's
        :meth:`~models.families.Family.renewal_shape` gives the shape kept (the Weibull's own,
        the exponential's 1); every other family is projected as exponential with the same MTBF.

    Raises
    ------
    ValueError
        A column is missing, or a row has neither an MTBF nor a lower bound.

    Warns
    -----
    ApproximationWarning
        A family other than exponential or Weibull was replaced by an exponential.
    FewFailuresWarning
        A class with no point MTBF (no failures) was projected at its lower bound.
    """
    required = (
        "component_class",
        "unit_level",
        "mtbf_h",
        "mtbf_lo_h",
        "mtbf_hi_h",
        "shape",
        "family",
    )
    missing = [c for c in required if c not in fit_results.columns]
    if missing:
        msg = f"fit_results lacks columns {missing}; pass the fit table with {list(required)}."
        raise ValueError(msg)
    if {"headline_mtbf_h", "aic_weight", "headline_method"} <= set(fit_results.columns):
        return _rates_from_headlines(fit_results, at_ages=at_ages)
    if "chosen" in fit_results.columns:
        fit_results = fit_results.filter(pl.col("chosen"))
    out = []
    approximated, bounded = [], []
    for row in fit_results.select(required).iter_rows(named=True):
        name = str(row["component_class"])
        family = str(row["family"] or "exponential").lower()
        known = FAMILY_REGISTRY.get(family)
        renewal_shape = known.renewal_shape(row["shape"]) if known is not None else None
        if renewal_shape is None:
            approximated.append(f"{name} ({family})")
        shape = 1.0 if renewal_shape is None else renewal_shape
        lo = _finite_or_none(row["mtbf_lo_h"])
        hi = _finite_or_none(row["mtbf_hi_h"])
        mtbf = _finite_or_none(row["mtbf_h"])
        if mtbf is None:
            if lo is None:
                msg = f"{name!r} has neither mtbf_h nor mtbf_lo_h; drop the row or give a bound."
                raise ValueError(msg)
            mtbf = lo
            bounded.append(name)
        out.append(ClassRate(name, _level(row["unit_level"]), mtbf, lo, hi, shape))
    if approximated:
        warnings.warn(
            f"projected as exponential with the fitted MTBF: {', '.join(approximated)}",
            ApproximationWarning,
            stacklevel=2,
        )
    _warn_bounded(bounded, stacklevel=3)
    return tuple(out)


def _warn_bounded(names: list[str], *, stacklevel: int) -> None:
    """Say which classes with no point MTBF were projected at their lower bound."""
    if names:
        warnings.warn(
            "no point MTBF, projected at the lower bound (a pessimistic rate): " + ", ".join(names),
            FewFailuresWarning,
            stacklevel=stacklevel + 1,
        )


def _level(value: Any) -> str:
    """Return the ClassRate level; ``none`` (no hardware unit of its own) projects at node."""
    return "node" if value == "none" else str(value)


def _bounded(name: str, level: str, lo_h: Any) -> ClassRate:
    """Return a class with no failure held at its one-sided lower bound (a pessimistic rate)."""
    lo = _finite_or_none(lo_h)
    if lo is None:
        msg = f"{name!r} has neither mtbf_h nor mtbf_lo_h; drop the row or give a bound."
        raise ValueError(msg)
    return ClassRate(name, level, lo, lo, None)


def _headline_rate(name: str, level: str, head: dict[str, Any]) -> ClassRate:
    """Return the class's headline as a constant rate: its MTBF and exact bounds, shape 1."""
    return ClassRate(
        name,
        level,
        min(float(head["headline_mtbf_h"]), MTBF_CAP_H),
        _finite_or_none(head["headline_mtbf_lo_h"]),
        _finite_or_none(head["headline_mtbf_hi_h"]),
    )


def _weibull_rate(name: str, level: str, head: dict[str, Any], w: dict[str, Any]) -> ClassRate:
    """Return the class's Weibull row, with the headline's exact bounds carried at its shape."""
    shape, mean = float(w["shape"]), float(w["mtbf_h"])
    point = float(head["headline_mtbf_h"])
    bounds = []
    for bound in (head["headline_mtbf_lo_h"], head["headline_mtbf_hi_h"]):
        b = _finite_or_none(bound)
        bounds.append(None if b is None else min(mean * (b / point) ** (1.0 / shape), MTBF_CAP_H))
    extrapolated = head.get("lifetime_extrapolated")
    return ClassRate(
        name,
        level,
        min(mean, MTBF_CAP_H),
        bounds[0],
        bounds[1],
        shape,
        extrapolated=bool(extrapolated),
    )


def _rates_from_headlines(fits: pl.DataFrame, *, at_ages: bool) -> tuple[ClassRate, ...]:
    """:func:`rates_from_fits` for a ``fit_lives`` table (see there)."""
    out, bounded = [], []
    for (name,), rows in fits.group_by("component_class", maintain_order=True):
        head = rows.row(0, named=True)
        level = _level(head["unit_level"])
        if head["headline_method"] in _BOUND_METHODS:
            bounded.append(str(name))
            out.append(_bounded(str(name), level, head["headline_mtbf_lo_h"]))
            continue
        weibull = rows.filter(
            (pl.col("family") == renewal_family().name) & pl.col("mtbf_h").is_finite()
        )
        if at_ages and weibull.height:
            out.append(_weibull_rate(str(name), level, head, weibull.row(0, named=True)))
        else:
            out.append(_headline_rate(str(name), level, head))
    _warn_bounded(bounded, stacklevel=4)
    return tuple(out)


def rates_from_failure_rates(rates: pl.DataFrame) -> tuple[ClassRate, ...]:
    """Turn a :func:`models.failure_rates` table into per-class rates for a projection.

    Each class projects its headline: the MTBF over the ages observed with its exact
    chi-square interval as the bounds, at shape 1 (a constant rate), as :func:`rates_from_fits`
    does by default; a class with no failure is held at its one-sided lower bound (with a
    warning). ``unit_level`` ``none`` projects at node level.

    Parameters
    ----------
    rates
        One row per component class with ``component_class``, ``unit_level``,
        ``headline_method``, ``headline_mtbf_h``, ``headline_mtbf_lo_h``,
        ``headline_mtbf_hi_h``. A table split by cohort has one row per class x cohort: pick one
        cohort first.

    Returns
    -------
    tuple of ClassRate
        In the table's order.

    Raises
    ------
    ValueError
        A column is missing, a class has more than one row, or a class with no failure has no
        lower bound.

    Warns
    -----
    FewFailuresWarning
        A class with no failure was projected at its lower bound.
    """
    required = (
        "component_class",
        "unit_level",
        "headline_method",
        "headline_mtbf_h",
        "headline_mtbf_lo_h",
        "headline_mtbf_hi_h",
    )
    missing = [c for c in required if c not in rates.columns]
    if missing:
        msg = f"rates lacks columns {missing}; pass the table models.failure_rates returns."
        raise ValueError(msg)
    repeated = rates.group_by("component_class").len().filter(pl.col("len") > 1)
    if repeated.height:
        msg = (
            f"rates has several rows for {sorted(repeated['component_class'].to_list())} "
            "(one per cohort); filter one cohort, or compute the rates without cohorts."
        )
        raise ValueError(msg)
    out, bounded = [], []
    for row in rates.select(required).iter_rows(named=True):
        name, level = str(row["component_class"]), _level(row["unit_level"])
        if row["headline_method"] in _BOUND_METHODS:
            bounded.append(name)
            out.append(_bounded(name, level, row["headline_mtbf_lo_h"]))
        else:
            out.append(_headline_rate(name, level, row))
    _warn_bounded(bounded, stacklevel=3)
    return tuple(out)


def _finite_or_none(value: Any) -> float | None:
    if value is None:
        return None
    value = float(value)
    return value if math.isfinite(value) else None
