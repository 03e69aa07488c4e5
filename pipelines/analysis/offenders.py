"""Repeat offenders: units (GPU slots, nodes) that fail again and again, from the failure process.

The failure process renews a unit after each repair; a unit that fails far more often than its
level's fleet rate (a "bad" GPU that a reset or reseat does not cure) is a repeat offender. The
per-unit counts come from ``rpt_unit_failures``; the test is :func:`models.lemon_nodes` (a Poisson
tail against the level's fleet rate, Bonferroni over the level's units), run per level: GPU slots
against GPU slots, nodes against nodes.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import polars as pl

from pipelines.warehouse import query

if TYPE_CHECKING:
    import duckdb

__all__ = ["OFFENDER_COLUMNS", "read_unit_failures", "repeat_offenders"]

OFFENDER_COLUMNS = (
    "unit_level",
    "unit",
    "n_failures",
    "exposure_h",
    "expected",
    "rate_ratio",
    "p_value",
    "p_adjusted",
    "repeat_offender",
    "classes",
    "n_repeat_7d",
    "min_back_to_fail_h",
)
"""Columns of :func:`repeat_offenders`, in order."""


def read_unit_failures(con: duckdb.DuckDBPyConnection) -> pl.DataFrame:
    """Read ``rpt_unit_failures``: one row per unit with its failures and hours at risk."""
    return query(con, "select * from rpt_unit_failures order by unit_level, unit")


def repeat_offenders(units: pl.DataFrame, *, alpha: float = 0.01) -> pl.DataFrame:
    """Test every unit's failure count against its level's fleet rate.

    Parameters
    ----------
    units
        Rows of ``rpt_unit_failures``: ``unit_level``, ``unit``, ``n_failures``, ``exposure_h``,
        ``classes``, ``n_repeat_7d``, ``min_back_to_fail_h``.
    alpha
        Family-wise level of the flags within a level (the chance that any unit of normal rate
        is flagged).

    Returns
    -------
    polars.DataFrame
        :data:`OFFENDER_COLUMNS`, one row per unit with time at risk, the most improbable
        counts first: ``expected`` (the level's rate x the unit's hours), ``rate_ratio``,
        ``p_value`` (``P(N >= n_failures)``), ``p_adjusted`` (Bonferroni within the level) and
        ``repeat_offender`` (``p_adjusted < alpha``).
    """
    from models import lemon_nodes

    parts = []
    for (level,), part in units.filter(pl.col("exposure_h") > 0).group_by(
        "unit_level", maintain_order=True
    ):
        tested = lemon_nodes(
            part.select(pl.col("unit").alias("unit_id"), "n_failures", "exposure_h"),
            unit_col="unit_id",
            failures_col="n_failures",
            exposure_col="exposure_h",
            alpha=alpha,
        )
        parts.append(
            tested.select(
                pl.lit(level).alias("unit_level"),
                pl.col("unit_id").alias("unit"),
                pl.col("observed").alias("n_failures"),
                "exposure_h",
                "expected",
                "rate_ratio",
                "p_value",
                "p_adjusted",
                pl.col("lemon").alias("repeat_offender"),
            ).join(
                part.select("unit", "classes", "n_repeat_7d", "min_back_to_fail_h"),
                on="unit",
                how="left",
            )
        )
    if not parts:
        return pl.DataFrame(
            schema={
                "unit_level": pl.String,
                "unit": pl.String,
                "n_failures": pl.Int64,
                "exposure_h": pl.Float64,
                "expected": pl.Float64,
                "rate_ratio": pl.Float64,
                "p_value": pl.Float64,
                "p_adjusted": pl.Float64,
                "repeat_offender": pl.Boolean,
                "classes": pl.List(pl.String),
                "n_repeat_7d": pl.Int64,
                "min_back_to_fail_h": pl.Float64,
            }
        )
    return (
        pl.concat(parts, how="vertical_relaxed")
        .sort("p_value", "unit_level", "unit")
        .select(OFFENDER_COLUMNS)
    )
