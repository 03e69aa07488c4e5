"""Interruption rates per component class: the fleet's failure process, counted, not modelled.

:func:`failure_rates` takes the unit lives of the failure process (times between failures of
each unit, renewed after each repair; see ``fct_component_lives`` in the data contract) and
returns one row per class (x cohort): the failures, the exposure in unit-hours, node-days and
GPU-hours, the interruption rate on each scale with its exact Poisson interval, the observed
MTBF with its chi-square interval, the headline (:func:`models.observed_headline`, the same
function :func:`models.fit_lives` uses) and the recurrence view on the calendar
(:func:`models.fleet_trend`: Laplace, MIL-HDBK-189, Crow-AMSAA, a verdict).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import polars as pl

from models.lifetimes import Lifetimes, lives_frame
from models.mtbf_summary import observed_headline, observed_rates, poisson_count_bounds
from models.parametric import check_alpha
from models.trend import fleet_trend

if TYPE_CHECKING:
    from collections.abc import Sequence

__all__ = ["FAILURE_RATE_COLUMNS", "UNIT_LEVELS", "failure_rates"]

UNIT_LEVELS = ("gpu", "node", "none")
"""Unit levels a life may carry; ``none`` (a class with no hardware unit of its own, such as a
driver or fabric fault) is counted at node level, as the lives are cut."""

FAILURE_RATE_COLUMNS: dict[str, pl.DataType | type[pl.DataType]] = {
    "unit_level": pl.String,
    "n_units": pl.Int64,
    "n_lives": pl.Int64,
    "n_nodes": pl.Int64,
    "n_failures": pl.Int64,
    "exposure_h": pl.Float64,
    "gpus_per_node": pl.Float64,
    "node_days": pl.Float64,
    "gpu_hours": pl.Float64,
    "rate_per_h": pl.Float64,
    "rate_lo_per_h": pl.Float64,
    "rate_hi_per_h": pl.Float64,
    "rate_per_1000_node_days": pl.Float64,
    "rate_lo_per_1000_node_days": pl.Float64,
    "rate_hi_per_1000_node_days": pl.Float64,
    "rate_per_1e6_gpu_h": pl.Float64,
    "rate_lo_per_1e6_gpu_h": pl.Float64,
    "rate_hi_per_1e6_gpu_h": pl.Float64,
    "mtbf_observed_h": pl.Float64,
    "mtbf_observed_lo_h": pl.Float64,
    "mtbf_observed_hi_h": pl.Float64,
    "headline_method": pl.String,
    "headline_mtbf_h": pl.Float64,
    "headline_mtbf_lo_h": pl.Float64,
    "headline_mtbf_hi_h": pl.Float64,
    "headline_extrapolated": pl.Boolean,
    "laplace_u": pl.Float64,
    "laplace_p": pl.Float64,
    "mil_hdbk_189_chi2": pl.Float64,
    "mil_hdbk_189_dof": pl.Int64,
    "mil_hdbk_189_p": pl.Float64,
    "crow_amsaa_beta": pl.Float64,
    "crow_amsaa_beta_lo": pl.Float64,
    "crow_amsaa_beta_hi": pl.Float64,
    "trend_verdict": pl.String,
}
"""Columns of :func:`failure_rates` after the ``by`` columns, with their types."""

_WINDOW = ("window_entry_h", "window_exit_h")
_TREND_NULL: dict[str, object] = {
    "laplace_u": None,
    "laplace_p": None,
    "mil_hdbk_189_chi2": None,
    "mil_hdbk_189_dof": None,
    "mil_hdbk_189_p": None,
    "crow_amsaa_beta": None,
    "crow_amsaa_beta_lo": None,
    "crow_amsaa_beta_hi": None,
    "trend_verdict": None,
}


def _checked(lives: pl.DataFrame, by: list[str]) -> tuple[pl.DataFrame, bool]:
    """Validate the lives; return the columns used, levels folded to gpu / node, and windowed."""
    if "component_class" not in by:
        msg = f"by must include 'component_class' (cohort columns come after it); got {by}."
        raise ValueError(msg)
    keys = [*by, *(c for c in ("unit_level", "node", "slot") if c not in by)]
    frame = lives_frame(lives, keys)  # the columns, ages and failed flags, checked
    present = [c for c in _WINDOW if c in lives.columns]
    if len(present) == 1:
        msg = (
            f"lives has {present[0]} without its pair; give both window_entry_h and "
            "window_exit_h (hours since the window opened) or neither."
        )
        raise ValueError(msg)
    windowed = len(present) == 2
    if windowed:
        frame = frame.with_columns(lives.select(pl.col(c).cast(pl.Float64) for c in _WINDOW))
        bad = frame.select(
            pl.any_horizontal(pl.col(*_WINDOW).is_null() | ~pl.col(*_WINDOW).is_finite()).sum()
        ).item()
        if bad:
            msg = (
                f"{bad} row(s) with a null or NaN window_entry_h / window_exit_h; every life "
                "needs its calendar interval (drop both columns to skip the trend tests)."
            )
            raise ValueError(msg)
        backwards = frame.select((pl.col("window_exit_h") < pl.col("window_entry_h")).sum())
        if backwards.item():
            msg = f"{backwards.item()} row(s) with window_exit_h before window_entry_h."
            raise ValueError(msg)
    nulls = frame.select(pl.col("unit_level", "node", "slot").null_count()).row(0, named=True)
    for column, n in nulls.items():
        if n:
            msg = f"{n} row(s) with a null {column}; every life names its unit (node and slot)."
            raise ValueError(msg)
    levels = set(frame.get_column("unit_level").unique().to_list())
    unknown = sorted(levels - set(UNIT_LEVELS))
    if unknown:
        msg = f"unit_level {unknown} is not one of {list(UNIT_LEVELS)}."
        raise ValueError(msg)
    frame = frame.with_columns(
        pl.when(pl.col("unit_level") == "none")
        .then(pl.lit("node"))
        .otherwise(pl.col("unit_level"))
        .alias("unit_level")
    )
    mixed = (
        frame.group_by(by).agg(pl.col("unit_level").n_unique().alias("n")).filter(pl.col("n") > 1)
    )
    if mixed.height:
        msg = (
            f"{mixed.height} group(s) mix GPU- and node-level units, e.g. "
            f"{mixed.drop('n').row(0, named=True)}; a class counts one kind of unit."
        )
        raise ValueError(msg)
    return frame, windowed


def _gpus_per_node(frame: pl.DataFrame, cohorts: list[str]) -> dict[tuple[Any, ...], float]:
    """GPU units per node of each cohort's GPU-level lives: distinct (node, slot) / nodes."""
    gpu = frame.filter(pl.col("unit_level") == "gpu")
    parts = gpu.partition_by(cohorts, as_dict=True) if cohorts else {(): gpu}
    return {
        tuple(key): part.select(pl.struct("node", "slot").n_unique()).item()
        / part.get_column("node").n_unique()
        for key, part in parts.items()
        if part.height
    }


def _scaled(count: float, lo: float, hi: float, per: float | None) -> tuple[Any, Any, Any]:
    """Rate, lower and upper bound per ``per`` units of exposure; nulls without an exposure."""
    if per is None or not per > 0:
        return None, None, None
    return count / per, lo / per, hi / per


def failure_rates(
    lives: pl.DataFrame,
    *,
    by: Sequence[str] = ("component_class",),
    alpha: float = 0.05,
) -> pl.DataFrame:
    """Interruption rates per class (x cohort) with exact intervals, the headline and the trend.

    Parameters
    ----------
    lives
        One row per unit life of the failure process, with ``component_class``, ``unit_level``
        (``gpu``, ``node``; ``none`` counts as ``node``), ``node``, ``slot`` (a unit is one
        ``(node, slot)``), ``entry_h`` and ``exit_h`` (the unit's age when its observation
        began and ended, hours), ``failed`` (the life ended in a failure of its class), the
        cohort columns named in ``by``, and optionally ``window_entry_h`` / ``window_exit_h``
        (the same life on the calendar: hours since the observation window opened) for the
        trend tests. Other columns are ignored.
    by
        Grouping columns: ``component_class`` and any cohort columns (``("component_class",
        "batch")``).
    alpha
        One minus the confidence level of every interval and the level of the trend tests.

    Returns
    -------
    polars.DataFrame
        One row per group, in order of first appearance: the ``by`` columns, then
        :data:`FAILURE_RATE_COLUMNS`:

        - ``unit_level`` (``gpu`` or ``node``), ``n_units`` (distinct ``(node, slot)``),
          ``n_lives``, ``n_nodes`` (distinct nodes), ``n_failures`` ``r``;
        - ``exposure_h`` ``T`` = ``sum(exit_h - entry_h)`` (unit-hours in service; time down
          for repair is in no life); ``gpus_per_node``: for a GPU-level class its distinct GPU
          units over its distinct nodes, for a node-level class the same ratio over the GPU-level
          lives of its cohort (null when there are none); ``node_days`` = ``T / 24`` (node level)
          or ``T / gpus_per_node / 24`` (GPU level); ``gpu_hours`` = ``T`` (GPU level) or
          ``T * gpus_per_node`` (node level; null without GPU units);
        - ``rate_per_h`` = ``r / T`` per unit-hour, ``rate_per_1000_node_days``,
          ``rate_per_1e6_gpu_h``, each with ``rate_lo_*`` / ``rate_hi_*``: the exact (Garwood)
          Poisson bounds of ``r`` (:func:`models.poisson_count_bounds`; with ``r = 0`` the lower
          bound is 0 and the upper one-sided at ``1 - alpha``) over the same exposure;
        - ``mtbf_observed_h`` = ``T / r`` per unit with the chi-square bounds ``T / hi`` and
          ``T / lo`` (NaN point and infinite upper bound when ``r = 0``);
        - the headline (:func:`models.observed_headline`): ``headline_method``
          (``observed_rate``, or ``chi_square_bound`` with no failure), ``headline_mtbf_h``,
          ``headline_mtbf_lo_h``, ``headline_mtbf_hi_h`` (the observed MTBF and its interval)
          and ``headline_extrapolated`` (False); :func:`models.fit_lives` carries the same;
        - the recurrence view, pooled over the group's lives on the calendar (null without the
          window columns or with no failure; :func:`models.fleet_trend`): ``laplace_u`` and
          ``laplace_p``, ``mil_hdbk_189_chi2`` / ``_dof`` / ``_p`` (both on the exposure clock,
          :func:`models.exposure_clock`), ``crow_amsaa_beta`` with ``_lo`` / ``_hi`` (power law
          on the calendar; null when it cannot be fitted) and ``trend_verdict``
          (``homogeneous``, ``improving`` or ``degrading``: both tests reject a constant rate
          in that direction at level ``alpha``).

    Raises
    ------
    ValueError
        On missing columns, invalid ages or calendar intervals, an unknown ``unit_level``, a
        group mixing GPU- and node-level units, or a group with no time at risk.

    Notes
    -----
    The rate over the ages observed needs no lifetime law: the failures minus their compensator
    (the expected failures given the at-risk intervals) is a martingale with the variance of a
    Poisson count, so the exact Poisson interval of ``r`` over ``T`` covers the compensator
    over ``T`` whatever the law and the units' ages (see :func:`models.observed_headline`).

    Examples
    --------
    >>> rates = failure_rates(lives)
    >>> rates.select("component_class", "n_failures", "rate_per_1000_node_days")
    """
    alpha = check_alpha(alpha)
    by = list(by)
    frame, windowed = _checked(lives, by)
    cohorts = [c for c in by if c != "component_class"]
    schema = {c: lives.schema[c] for c in by} | FAILURE_RATE_COLUMNS
    if frame.height == 0:
        return pl.DataFrame(schema=schema)
    ratios = _gpus_per_node(frame, cohorts)
    columns: dict[str, list[Any]] = {name: [] for name in schema}
    for key, part in frame.partition_by(by, as_dict=True, maintain_order=True).items():
        group = dict(zip(by, key, strict=True))
        row = group | _group_row(part, group, ratios.get(tuple(group[c] for c in cohorts)), alpha)
        row |= _trend_row(part, alpha) if windowed else _TREND_NULL
        for name in schema:
            columns[name].append(row[name])
    return pl.DataFrame(columns, schema=schema)


def _group_row(
    part: pl.DataFrame, group: dict[str, Any], cohort_ratio: float | None, alpha: float
) -> dict[str, object]:
    """Return the counts, exposures, rates and headline of one group."""
    level = str(part.get_column("unit_level")[0])
    lives = Lifetimes(  # the counts and exposure fit_lives takes, to the last bit
        part.get_column("exit_h").to_numpy(),
        part.get_column("failed").to_numpy(),
        part.get_column("entry_h").to_numpy(),
    )
    r, exposure = lives.n_failures, lives.exposure_h
    if not exposure > 0:
        msg = (
            f"Group {group} has no time at risk (every exit_h equals its entry_h); drop it or "
            "check its ages."
        )
        raise ValueError(msg)
    n_units = part.select(pl.struct("node", "slot").n_unique()).item()
    n_nodes = part.get_column("node").n_unique()
    ratio: float | None
    gpu_hours: float | None
    if level == "gpu":
        ratio = n_units / n_nodes
        node_days = exposure / ratio / 24.0
        gpu_hours = exposure
    else:
        ratio = cohort_ratio
        node_days = exposure / 24.0
        gpu_hours = exposure * ratio if ratio is not None else None
    lo, hi = poisson_count_bounds(r, alpha=alpha)
    per_h = _scaled(r, lo, hi, exposure)
    per_node_days = _scaled(r, lo, hi, node_days / 1_000.0)
    per_gpu_h = _scaled(r, lo, hi, None if gpu_hours is None else gpu_hours / 1e6)
    observed = observed_rates(r, exposure, alpha=alpha)
    return {
        "unit_level": level,
        "n_units": n_units,
        "n_lives": part.height,
        "n_nodes": n_nodes,
        "n_failures": r,
        "exposure_h": exposure,
        "gpus_per_node": ratio,
        "node_days": node_days,
        "gpu_hours": gpu_hours,
        "rate_per_h": per_h[0],
        "rate_lo_per_h": per_h[1],
        "rate_hi_per_h": per_h[2],
        "rate_per_1000_node_days": per_node_days[0],
        "rate_lo_per_1000_node_days": per_node_days[1],
        "rate_hi_per_1000_node_days": per_node_days[2],
        "rate_per_1e6_gpu_h": per_gpu_h[0],
        "rate_lo_per_1e6_gpu_h": per_gpu_h[1],
        "rate_hi_per_1e6_gpu_h": per_gpu_h[2],
        "mtbf_observed_h": observed["mtbf_observed_h"],
        "mtbf_observed_lo_h": observed["mtbf_observed_lo_h"],
        "mtbf_observed_hi_h": observed["mtbf_observed_hi_h"],
    } | observed_headline(r, exposure, alpha=alpha).columns()


def _trend_row(part: pl.DataFrame, alpha: float) -> dict[str, object]:
    """Return the recurrence view of one group on the calendar; nulls with no failure."""
    failed = part.get_column("failed").to_numpy()
    if not failed.any():
        return _TREND_NULL
    trend = fleet_trend(
        part.get_column("window_entry_h").to_numpy(),
        part.get_column("window_exit_h").to_numpy(),
        failed,
        alpha=alpha,
    )
    crow = trend.crow_amsaa
    return {
        "laplace_u": trend.laplace.statistic,
        "laplace_p": trend.laplace.p_value,
        "mil_hdbk_189_chi2": trend.mil_hdbk_189.statistic,
        "mil_hdbk_189_dof": trend.mil_hdbk_189.dof,
        "mil_hdbk_189_p": trend.mil_hdbk_189.p_value,
        "crow_amsaa_beta": None if crow is None else crow.beta,
        "crow_amsaa_beta_lo": None if crow is None else crow.beta_lo,
        "crow_amsaa_beta_hi": None if crow is None else crow.beta_hi,
        "trend_verdict": trend.verdict,
    }
