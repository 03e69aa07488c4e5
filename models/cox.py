"""Cox proportional hazards: hazard ratios of cohort covariates on component lives."""

from __future__ import annotations

import math
import warnings
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd
import polars as pl
from lifelines import CoxPHFitter
from scipy import special

from models.fitter import reemit_warnings
from models.lifetimes import check_lifetimes
from models.parametric import check_alpha

if TYPE_CHECKING:
    from collections.abc import Sequence

    from numpy.typing import NDArray

__all__ = ["cox_ph"]

_COX_AUTO_ROWS = 5_000
_COX_AUTO_BINS = 200


# --------------------------------------------------------------------------------------------
# Cox proportional hazards
# --------------------------------------------------------------------------------------------
def _nice_resolution(span_h: float, bins: int) -> float:
    """Smallest 1, 2 or 5 x 10^k hours that cuts ``span_h`` into at most ``bins`` steps."""
    raw = max(span_h / bins, 1e-9)
    exponent = math.floor(math.log10(raw))
    for mantissa in (1.0, 2.0, 5.0, 10.0):
        value = mantissa * 10.0**exponent
        if value >= raw * (1 - 1e-12):
            return value
    return 10.0 ** (exponent + 1)


def _design(
    frame: pl.DataFrame, covariates: Sequence[str]
) -> tuple[dict[str, NDArray[np.float64]], list[tuple[str, str | None]]]:
    """Numeric design columns and, per column, (label, reference level or None)."""
    design: dict[str, NDArray[np.float64]] = {}
    labels: list[tuple[str, str | None]] = []
    for name in covariates:
        column = frame.get_column(name)
        if column.null_count():
            msg = f"Covariate {name!r} has {column.null_count()} null(s); fill or drop them first."
            raise ValueError(msg)
        dtype = column.dtype
        if dtype.is_numeric():
            design[f"x{len(design)}"] = column.cast(pl.Float64).to_numpy()
            labels.append((name, None))
            continue
        if isinstance(dtype, pl.Enum):
            present = set(column.unique().cast(pl.String).to_list())
            levels = [c for c in dtype.categories.to_list() if c in present]
            values = column.cast(pl.String)
        else:
            values = column.cast(pl.String)
            levels = sorted(values.unique().to_list())
        if len(levels) < 2:
            msg = f"Covariate {name!r} has a single level {levels}; drop it from covariates."
            raise ValueError(msg)
        for level in levels[1:]:
            design[f"x{len(design)}"] = (values == level).cast(pl.Float64).to_numpy()
            labels.append((f"{name}={level}", f"{name}={levels[0]}"))
    return design, labels


def _cox_ages(
    frame: pl.DataFrame, time_resolution_h: float | None
) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.bool_], float | None]:
    """Return exit and entry ages (on the time grid, if any), failed, and the grid used."""
    checked = check_lifetimes(
        frame.get_column("exit_h").to_numpy(),
        frame.get_column("failed").to_numpy(),
        frame.get_column("entry_h").to_numpy(),
    )
    exit_h, entry = checked.exit_h, checked.entry_h
    n_flat = int(np.count_nonzero(exit_h <= entry))
    if n_flat:
        msg = (
            f"{n_flat} life/lives have exit_h <= entry_h (no time at risk); Cox needs a positive "
            "length: drop them or check their ages."
        )
        raise ValueError(msg)
    resolution = time_resolution_h
    if resolution is None and checked.truncated and checked.n_units > _COX_AUTO_ROWS:
        resolution = _nice_resolution(float(exit_h.max()), _COX_AUTO_BINS)
    if resolution is not None:
        if not resolution > 0:
            msg = f"time_resolution_h must be positive hours; got {resolution!r}."
            raise ValueError(msg)
        exit_h = np.ceil(exit_h / resolution) * resolution
        entry = np.floor(entry / resolution) * resolution
    return exit_h, entry, checked.failed, resolution


def cox_ph(
    lives: pl.DataFrame,
    covariates: list[str],
    *,
    alpha: float = 0.05,
    time_resolution_h: float | None = None,
) -> pl.DataFrame:
    """Hazard ratios of cohort covariates from a Cox proportional-hazards fit.

    Parameters
    ----------
    lives
        One row per unit life: ``entry_h``, ``exit_h``, ``failed`` and the covariate columns.
    covariates
        Columns to model. Numeric columns enter as they are (hazard ratio per unit). String,
        categorical, enum and boolean columns are one-hot encoded; the first level is the
        reference (the first category of an ``Enum``, else the first in sorted order).
    alpha
        One minus the confidence level of the hazard-ratio bounds.
    time_resolution_h
        Round ages to this grid (entry down, exit up, so every life keeps a positive length;
        events in the same step become ties, handled by Efron's method). ``None``: automatic.
        When any life is left-truncated and there are more than 5,000 lives, the grid is the
        smallest 1/2/5 x 10^k hours giving at most 200 steps over the oldest exit age, because
        lifelines' ``CoxPHFitter(entry_col=...)`` costs rows x distinct event times per Newton
        step (over 10 minutes for 100k lives with continuous ages, about a second on a grid).
        Otherwise ages are used as given.

    Returns
    -------
    polars.DataFrame
        One row per design column: ``covariate`` (``name`` or ``name=level``), ``reference``
        (``name=first level``, null for numeric), ``hazard_ratio``, ``hr_lo``, ``hr_hi``,
        ``p_value`` (Wald test of ratio 1) and ``time_resolution_h`` (the grid used, null
        when ages were used as given).

    Raises
    ------
    ValueError
        On missing columns, invalid lives, a life with ``exit_h <= entry_h``, null covariates
        or a categorical covariate with a single level.

    Warns
    -----
    ConvergenceWarning
        When lifelines reports a convergence or variance problem (e.g. a near-constant column).
    """
    alpha = check_alpha(alpha)
    covariates = list(covariates)
    if not covariates:
        msg = "covariates is empty; name at least one column such as 'batch'."
        raise ValueError(msg)
    needed = ["entry_h", "exit_h", "failed", *covariates]
    missing = [c for c in needed if c not in lives.columns]
    if missing:
        msg = f"lives is missing column(s) {missing}."
        raise ValueError(msg)
    frame = lives.select(needed)
    exit_h, entry, failed, resolution = _cox_ages(frame, time_resolution_h)
    design, labels = _design(frame, covariates)
    data = pd.DataFrame({"exit_h": exit_h, "failed": failed, **design})
    truncated = bool(np.any(entry > 0))
    if truncated:
        data["entry_h"] = entry
    cph = CoxPHFitter(alpha=alpha)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        cph.fit(
            data,
            duration_col="exit_h",
            event_col="failed",
            entry_col="entry_h" if truncated else None,
        )
    reemit_warnings(caught, "lifelines CoxPHFitter", stacklevel=3)
    summary = cph.summary.loc[list(design)]
    coef = summary["coef"].to_numpy()
    se = summary["se(coef)"].to_numpy()
    z = float(special.ndtri(1.0 - alpha / 2.0))
    with np.errstate(over="ignore"):  # complete separation: the ratio is unbounded (inf)
        ratios = np.exp(coef), np.exp(coef - z * se), np.exp(coef + z * se)
    return pl.DataFrame(
        {
            "covariate": [label for label, _ in labels],
            "reference": [ref for _, ref in labels],
            "hazard_ratio": ratios[0],
            "hr_lo": ratios[1],
            "hr_hi": ratios[2],
            "p_value": summary["p"].to_numpy(),
            "time_resolution_h": [resolution] * len(labels),
        },
        schema={
            "covariate": pl.String,
            "reference": pl.String,
            "hazard_ratio": pl.Float64,
            "hr_lo": pl.Float64,
            "hr_hi": pl.Float64,
            "p_value": pl.Float64,
            "time_resolution_h": pl.Float64,
        },
    )
