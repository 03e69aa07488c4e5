"""Non-parametric estimates of component lives: Kaplan-Meier survival, Nelson-Aalen hazard.

Both take the lives as :func:`~models.lifetimes.check_lifetimes` does, with left truncation
(a unit joins the risk set only at its entry age).
"""

from __future__ import annotations

import warnings
from typing import TYPE_CHECKING, Any

import numpy as np
import polars as pl
from lifelines import KaplanMeierFitter, NelsonAalenFitter

from models.fitter import reemit_warnings
from models.lifetimes import Lifetimes, check_lifetimes
from models.parametric import check_alpha

if TYPE_CHECKING:
    from numpy.typing import ArrayLike, NDArray

__all__ = ["kaplan_meier", "nelson_aalen"]


# --------------------------------------------------------------------------------------------
# Non-parametric estimates
# --------------------------------------------------------------------------------------------
def _nonparametric(
    fitter: Any, durations_h: ArrayLike, failed: ArrayLike, entry_h: ArrayLike | None
) -> tuple[Any, Lifetimes]:
    lives = check_lifetimes(durations_h, failed, entry_h)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        fitter.fit(lives.exit_h, lives.failed, entry=lives.entry_h if lives.truncated else None)
    reemit_warnings(caught, f"lifelines {type(fitter).__name__}")
    return fitter, lives


def _at_risk(fitter: Any, timeline: NDArray[np.float64]) -> NDArray[np.int64]:
    table = fitter.event_table
    at_risk: NDArray[np.int64] = (
        table["at_risk"].reindex(timeline, method="ffill").fillna(0).to_numpy(dtype=np.int64)
    )
    return at_risk


def kaplan_meier(
    durations_h: ArrayLike,
    failed: ArrayLike,
    *,
    entry_h: ArrayLike | None = None,
    alpha: float = 0.05,
) -> pl.DataFrame:
    """Kaplan-Meier survival curve of component lives, with left truncation.

    Parameters
    ----------
    durations_h
        Age in hours at failure or censoring.
    failed
        ``True`` for a failure, ``False`` for a censored life.
    entry_h
        Age in hours at the start of observation (``None``: all observed from new). A unit
        joins the risk set only at its entry age.
    alpha
        One minus the confidence level of the pointwise band.

    Returns
    -------
    polars.DataFrame
        ``timeline_h`` (age, h), ``survival``, ``lo``, ``hi`` (lifelines' exponential Greenwood
        band), ``at_risk`` (units at risk just before each age).

    Notes
    -----
    With left truncation and few units at risk at young ages the curve can drop steeply
    early on; read it from the age where ``at_risk`` is large.
    """
    alpha = check_alpha(alpha)
    kmf, _ = _nonparametric(KaplanMeierFitter(alpha=alpha), durations_h, failed, entry_h)
    timeline = kmf.timeline.astype(np.float64)
    band = kmf.confidence_interval_survival_function_.to_numpy()
    return pl.DataFrame(
        {
            "timeline_h": timeline,
            "survival": kmf.survival_function_.iloc[:, 0].to_numpy(),
            "lo": band[:, 0],
            "hi": band[:, 1],
            "at_risk": _at_risk(kmf, timeline),
        }
    )


def nelson_aalen(
    durations_h: ArrayLike,
    failed: ArrayLike,
    *,
    entry_h: ArrayLike | None = None,
    alpha: float = 0.05,
) -> pl.DataFrame:
    """Nelson-Aalen cumulative hazard of component lives, with left truncation.

    Parameters
    ----------
    durations_h
        Age in hours at failure or censoring.
    failed
        ``True`` for a failure, ``False`` for a censored life.
    entry_h
        Age in hours at the start of observation (``None``: all observed from new).
    alpha
        One minus the confidence level of the pointwise band.

    Returns
    -------
    polars.DataFrame
        ``timeline_h`` (age, h), ``cumulative_hazard``, ``lo``, ``hi``, ``at_risk``.
    """
    alpha = check_alpha(alpha)
    naf, _ = _nonparametric(NelsonAalenFitter(alpha=alpha), durations_h, failed, entry_h)
    timeline = naf.timeline.astype(np.float64)
    band = naf.confidence_interval_cumulative_hazard_.to_numpy()
    return pl.DataFrame(
        {
            "timeline_h": timeline,
            "cumulative_hazard": naf.cumulative_hazard_.iloc[:, 0].to_numpy(),
            "lo": band[:, 0],
            "hi": band[:, 1],
            "at_risk": _at_risk(naf, timeline),
        }
    )
