"""Component lives: validated arrays, their log ages and the lives frame of a class table.

Every function takes component lives: one row per unit life, in hours, with ``entry_h`` the age
at which observation began (left truncation, ``0`` for a unit observed from new), ``exit_h`` the
age at failure or censoring and ``failed`` (``False`` = right-censored). Lives that began before
the observation window are kept with their entry age, never dropped.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import polars as pl

if TYPE_CHECKING:
    from collections.abc import Sequence

    from numpy.typing import ArrayLike, NDArray

__all__ = ["Lifetimes", "check_lifetimes"]


# --------------------------------------------------------------------------------------------
# Input checks
# --------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Lifetimes:
    """Validated lives: float ``exit_h`` and ``entry_h``, boolean ``failed``, equal lengths."""

    exit_h: NDArray[np.float64]
    failed: NDArray[np.bool_]
    entry_h: NDArray[np.float64]

    @property
    def n_units(self) -> int:
        """Number of lives."""
        return int(self.exit_h.size)

    @property
    def n_failures(self) -> int:
        """Number of lives that ended in a failure."""
        return int(np.count_nonzero(self.failed))

    @property
    def exposure_h(self) -> float:
        """Observed unit-hours, ``sum(exit_h - entry_h)``."""
        return float(np.sum(self.exit_h - self.entry_h))

    @property
    def truncated(self) -> bool:
        """Whether any life entered observation after age 0."""
        return bool(np.any(self.entry_h > 0))

    def take(self, index: NDArray[np.intp]) -> Lifetimes:
        """Return the lives at ``index`` (used for bootstrap resamples)."""
        return Lifetimes(self.exit_h[index], self.failed[index], self.entry_h[index])


def _float_array(values: ArrayLike, name: str) -> NDArray[np.float64]:
    try:
        array = np.asarray(values, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        msg = (
            f"{name} must be numeric hours; got values that do not convert to float ({exc}). "
            "Fill or drop nulls before fitting."
        )
        raise ValueError(msg) from exc
    if array.ndim != 1:
        msg = f"{name} must be one-dimensional (one value per life); got shape {array.shape}."
        raise ValueError(msg)
    return array


def check_lifetimes(
    durations_h: ArrayLike, failed: ArrayLike, entry_h: ArrayLike | None = None
) -> Lifetimes:
    """Validate component lives and return them as arrays.

    Parameters
    ----------
    durations_h
        Age in hours at failure or censoring (``exit_h``), one value per life; must be > 0.
    failed
        ``True`` where the life ended in a failure, ``False`` where it was right-censored.
        Booleans or 0/1.
    entry_h
        Age in hours when observation began (left truncation); ``None`` means every life was
        observed from new (age 0).

    Returns
    -------
    Lifetimes
        ``exit_h``, ``failed`` and ``entry_h`` as numpy arrays.

    Raises
    ------
    ValueError
        On empty input, lengths that differ, NaN or infinite values, negative times, an exit age
        of 0, an exit earlier than the entry, or ``failed`` values other than 0/1. The message
        says how to fix the data.
    """
    exit_h = _float_array(durations_h, "durations_h")
    failed_raw = _float_array(failed, "failed")
    entry = np.zeros_like(exit_h) if entry_h is None else _float_array(entry_h, "entry_h")
    if exit_h.size == 0:
        msg = "No lives to fit: durations_h is empty. Check the class / cohort filter upstream."
        raise ValueError(msg)
    if not exit_h.size == failed_raw.size == entry.size:
        msg = (
            f"Lengths differ: durations_h has {exit_h.size} values, failed {failed_raw.size}, "
            f"entry_h {entry.size}. Pass one value per life in each (same row order)."
        )
        raise ValueError(msg)
    for name, array in (("durations_h", exit_h), ("failed", failed_raw), ("entry_h", entry)):
        n_bad = int(np.count_nonzero(~np.isfinite(array)))
        if n_bad:
            msg = (
                f"{name} has {n_bad} NaN or infinite value(s). Lives still running at the window "
                "end are censored at the window end (failed=False), not left open; drop or fill "
                "missing rows before fitting."
            )
            raise ValueError(msg)
    if not np.all((failed_raw == 0) | (failed_raw == 1)):
        msg = "failed must be boolean (or 0/1): True for a failure, False for a censored life."
        raise ValueError(msg)
    n_negative = int(np.count_nonzero((exit_h < 0) | (entry < 0)))
    if n_negative:
        msg = (
            f"{n_negative} life/lives have a negative entry or exit age. Ages are hours since the "
            "unit's installation; check the clock or the install timestamp."
        )
        raise ValueError(msg)
    n_zero = int(np.count_nonzero(exit_h == 0))
    if n_zero:
        msg = (
            f"{n_zero} life/lives end at age 0 h. A unit dead on arrival has no lifetime to fit: "
            "count it separately, or give it a small positive age (e.g. 0.01 h)."
        )
        raise ValueError(msg)
    n_backwards = int(np.count_nonzero(exit_h < entry))
    if n_backwards:
        msg = (
            f"{n_backwards} life/lives exit before they enter (exit_h < entry_h). Both are ages of "
            "the unit: entry_h = age at the window start, exit_h = age at failure or censoring."
        )
        raise ValueError(msg)
    return Lifetimes(exit_h, failed_raw.astype(bool), entry)


class LogLives:
    """Log ages split by role, computed once per group and shared by every family.

    Parameters
    ----------
    lives
        Validated lives.
    """

    def __init__(self, lives: Lifetimes) -> None:
        log_exit = np.log(lives.exit_h)
        self.u_failed = log_exit[lives.failed]
        self.u_censored = log_exit[~lives.failed]
        entry = lives.entry_h[lives.entry_h > 0]
        self.u_entry = np.log(entry)
        self.n_failures = int(self.u_failed.size)
        self.sum_u_failed = float(self.u_failed.sum())
        self.n_units = lives.n_units
        self.exposure_h = lives.exposure_h


def lives_frame(lives: pl.DataFrame, by: Sequence[str]) -> pl.DataFrame:
    """Return the ``by`` columns, float ``entry_h``/``exit_h`` and boolean ``failed`` of ``lives``.

    Parameters
    ----------
    lives
        One row per unit life.
    by
        Grouping columns to keep.

    Returns
    -------
    polars.DataFrame
        The selected, cast columns.

    Raises
    ------
    ValueError
        On missing columns or invalid lives; the message says how to fix the data.
    """
    required = [*by, "entry_h", "exit_h", "failed"]
    missing = [c for c in required if c not in lives.columns]
    if missing:
        msg = (
            f"lives is missing column(s) {missing}; expected one row per unit life with entry_h, "
            "exit_h, failed (entry_h = 0 for lives observed from new) and the `by` columns."
        )
        raise ValueError(msg)
    frame = lives.select(
        *by,
        pl.col("entry_h").cast(pl.Float64),
        pl.col("exit_h").cast(pl.Float64),
        pl.col("failed"),
    )
    if frame.schema["failed"] != pl.Boolean:
        if not frame.schema["failed"].is_integer():
            msg = f"failed must be Boolean (or 0/1 integers); got {frame.schema['failed']}."
            raise ValueError(msg)
        bad = frame.select((~pl.col("failed").is_in([0, 1])).sum()).item()
        if bad:
            msg = f"failed has {bad} value(s) other than 0/1; use True for a failure."
            raise ValueError(msg)
        frame = frame.with_columns(pl.col("failed").cast(pl.Boolean))
    checks = frame.select(
        pl.any_horizontal(pl.col("entry_h", "exit_h", "failed").is_null()).sum().alias("null"),
        (~pl.col("entry_h").is_finite() | ~pl.col("exit_h").is_finite()).sum().alias("nan"),
        ((pl.col("entry_h") < 0) | (pl.col("exit_h") < 0)).sum().alias("negative"),
        (pl.col("exit_h") == 0).sum().alias("zero"),
        (pl.col("exit_h") < pl.col("entry_h")).sum().alias("backwards"),
    ).row(0, named=True)
    hints = {
        "null": "null entry_h/exit_h/failed: censor open lives at the window end, drop unknowns",
        "nan": "NaN or infinite ages: fix the upstream durations",
        "negative": "negative ages: ages are hours since the unit's install; check the clock",
        "zero": "exit_h = 0: count dead-on-arrival units separately or give a small positive age",
        "backwards": "exit_h < entry_h: both are the unit's ages (entry at the window start)",
    }
    for key, hint in hints.items():
        if checks[key]:
            msg = f"{checks[key]} row(s) with {hint}."
            raise ValueError(msg)
    return frame
