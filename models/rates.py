"""Per-class failure rates (:class:`~models.scenario.ClassRate`) from the rows of a fit table."""

from __future__ import annotations

import math
import warnings
from typing import Any

import polars as pl

from models.exceptions import ApproximationWarning, FewFailuresWarning
from models.scenario import MTBF_CAP_H, ClassRate

__all__ = ["rates_from_fits"]


def rates_from_fits(fit_results: pl.DataFrame, *, at_ages: bool = False) -> tuple[ClassRate, ...]:
    """Turn the rows of a fit table into per-class rates.

    A table from :func:`models.fit_lives` (it has ``headline_mtbf_h`` and ``aic_weight``) is
    read per class, all families together:

    - by default (a steady-state projection, where only the mean matters) the rate is the
      class's headline MTBF and bounds; a model-averaged headline also passes its mixture (each
      family's log-normal sampling distribution with its Akaike weight, a family with no finite
      mean as a point at infinity) so that :func:`~models.goodput.project` samples the model
      uncertainty;
    - ``at_ages=True`` (a projection at given unit ages: ``fleet_age`` ``"new"``, hours or an
      age mix) takes the class's Weibull row (the maximum-likelihood or Weibayes fit): its
      hazard at the ages the data cover is what the data support, and the projection engine
      models Weibull lives natively;
    - ``extrapolated`` is the class's ``headline_extrapolated``; a class with no failure is
      projected at its chi-square lower bound (with a warning), as below.

    Any other table is read the older way, from its chosen rows:

    Parameters
    ----------
    fit_results
        One row per component class, with columns ``component_class``, ``unit_level``
        (``gpu`` / ``node``), ``mtbf_h``, ``mtbf_lo_h``, ``mtbf_hi_h`` (hours; null, NaN or
        inf where there is none), ``shape`` (Weibull shape) and ``family``. When the table
        also has ``chosen`` (as ``fit_lives`` returns it), only the chosen rows are used.

    Returns
    -------
    tuple of ClassRate
        The Weibull shape is kept for ``family == "weibull"``; every other family is projected
        as exponential with the same MTBF.

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
        shape = float(row["shape"]) if family == "weibull" and row["shape"] is not None else 1.0
        if family not in ("weibull", "exponential"):
            approximated.append(f"{name} ({family})")
        lo = _finite_or_none(row["mtbf_lo_h"])
        hi = _finite_or_none(row["mtbf_hi_h"])
        mtbf = _finite_or_none(row["mtbf_h"])
        if mtbf is None:
            if lo is None:
                msg = f"{name!r} has neither mtbf_h nor mtbf_lo_h; drop the row or give a bound."
                raise ValueError(msg)
            mtbf = lo
            bounded.append(name)
        out.append(ClassRate(name, str(row["unit_level"]), mtbf, lo, hi, shape))
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


def _rates_from_headlines(fits: pl.DataFrame, *, at_ages: bool) -> tuple[ClassRate, ...]:
    """:func:`rates_from_fits` for a ``fit_lives`` table (see there)."""
    out, bounded = [], []
    for (name,), rows in fits.group_by("component_class", maintain_order=True):
        head = rows.row(0, named=True)
        method = head["headline_method"]
        level = str(head["unit_level"])
        weibull = rows.filter((pl.col("family") == "weibull") & pl.col("mtbf_h").is_finite())
        extrapolated = bool(head["headline_extrapolated"])
        if method == "chi_square":
            lo = _finite_or_none(head["headline_mtbf_lo_h"])
            if lo is None:
                msg = f"{name!r} has neither mtbf_h nor mtbf_lo_h; drop the row or give a bound."
                raise ValueError(msg)
            bounded.append(str(name))
            out.append(ClassRate(str(name), level, lo, lo, None))
            continue
        if at_ages and weibull.height:
            w = weibull.row(0, named=True)
            out.append(
                ClassRate(
                    str(name),
                    level,
                    float(w["mtbf_h"]),
                    _finite_or_none(w["mtbf_lo_h"]),
                    _finite_or_none(w["mtbf_hi_h"]),
                    float(w["shape"]),
                    extrapolated=extrapolated,
                )
            )
            continue
        mixture: tuple[tuple[float, float, float, float], ...] = ()
        if method == "model_average" and "mtbf_sampled_h" in rows.columns:
            from models.mtbf_summary import family_mixture

            mixture = family_mixture(rows.to_dicts())
        shape = float(weibull["shape"][0]) if weibull.height else 1.0
        out.append(
            ClassRate(
                str(name),
                level,
                min(float(head["headline_mtbf_h"]), MTBF_CAP_H),
                _finite_or_none(head["headline_mtbf_lo_h"]),
                _finite_or_none(head["headline_mtbf_hi_h"]),
                shape,
                mtbf_mixture=mixture,
                extrapolated=extrapolated,
            )
        )
    _warn_bounded(bounded, stacklevel=4)
    return tuple(out)


def _finite_or_none(value: Any) -> float | None:
    if value is None:
        return None
    value = float(value)
    return value if math.isfinite(value) else None
