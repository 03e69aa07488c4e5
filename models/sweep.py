"""What-if grids over a :class:`~models.scenario.Scenario`.

:func:`sweep` evaluates a full factorial grid of what-ifs in one vectorised pass
(:func:`models.ranking.knob_gains` ranks the knobs against a baseline at a target scale);
:func:`knob_label` names a knob value for tables; :func:`drain_sweep` projects the drains at each
threshold of a predictor's operating curve.
"""

from __future__ import annotations

import dataclasses
import itertools
from collections.abc import Mapping
from dataclasses import replace
from typing import TYPE_CHECKING, Any

import numpy as np
import polars as pl

from models.goodput import project_arrays_via_seam
from models.scenario import CATEGORICAL_KNOBS, SECONDS_PER_HOUR, Scenario, age_mix

if TYPE_CHECKING:
    from collections.abc import Sequence

    from models.failslow_laws import SlowLaws


__all__ = ["drain_sweep", "knob_label", "sweep"]


def sweep(base: Scenario, grid: Mapping[str, Sequence[Any]]) -> pl.DataFrame:
    """Project every combination of a grid of knob values (full factorial, vectorised).

    Parameters
    ----------
    base
        Scenario supplying every knob not in ``grid``.
    grid
        Scenario field name -> list of values. Numeric knobs are evaluated as arrays in one pass;
        ``strategy``, ``fleet_age``, ``rates``, ``weibull_shape`` and ``node_groups`` loop over
        their (few) values.

    Returns
    -------
    polars.DataFrame
        One row per combination: the grid's columns (categorical knobs labelled by
        :func:`knob_label`) then every numeric output of :func:`~models.goodput.project`
        (``mtti_h``, ``goodput``, ``ettr``, ``lost_gpu_h_*``...).

    Examples
    --------
    >>> df = sweep(Scenario(), {"n_gpus": [8_192, 16_384], "checkpoint_s": [10.0, 60.0]})
    >>> df.height
    4
    """
    fields = {f.name for f in dataclasses.fields(Scenario)}
    unknown = sorted(set(grid) - fields)
    if unknown:
        msg = f"unknown knobs {unknown}; grid keys must be Scenario fields: {sorted(fields)}."
        raise ValueError(msg)
    for key, values in grid.items():
        if len(values) == 0:
            msg = f"grid[{key!r}] is empty; give at least one value."
            raise ValueError(msg)
        for value in values:
            replace(base, **{key: value})  # validates each value with the scenario's own checks
    keys = list(grid)
    categorical = [k for k in keys if k in CATEGORICAL_KNOBS]
    numeric = [k for k in keys if k not in CATEGORICAL_KNOBS]
    shape = tuple(len(grid[k]) for k in numeric)
    index = np.indices(shape).reshape(len(numeric), -1) if numeric else np.zeros((0, 1), int)
    columns: dict[str, Any] = {}
    for row, key in enumerate(numeric):
        values = list(grid[key])
        columns[key] = [values[i] for i in index[row]]
    arrays = {key: np.asarray(columns[key], dtype=object) for key in numeric}
    n_points = index.shape[1]
    frames = []
    for combo in itertools.product(*(grid[k] for k in categorical)):
        scenario = replace(base, **dict(zip(categorical, combo, strict=True)))
        result = project_arrays_via_seam(scenario, arrays)
        data: dict[str, Any] = {}
        for key in keys:
            if key in categorical:
                value = combo[categorical.index(key)]
                data[key] = [knob_label(key, value)] * n_points
            else:
                data[key] = columns[key]
        for key, value in result.items():
            data[key] = np.broadcast_to(value, (n_points,)).copy()
        frame = pl.DataFrame(data, strict=False)
        frames.append(frame.with_columns(pl.col("ettr").fill_nan(None)))  # null: not applicable
    return pl.concat(frames, how="vertical_relaxed")


def knob_label(knob: str, value: Any) -> Any:
    """Format a knob value as a ``relia project`` option value, for tables and plots.

    ``rates`` as its class names; ``weibull_shape`` as ``0.7`` or ``gpu=0.7,nic=1.2`` (``fits``
    for none: each class keeps its own); ``node_groups`` as ``0.1:3,0.05:10`` (``none``); an
    age mix (``fleet_age``) as ``0h:0.5,8760h:0.5`` (age in hours : share); ``slow_laws``
    as ``gpu:1e-05/h`` (unit and episode rate, one per law; ``none``). Other knobs as
    ``str(value)``.
    """
    if knob == "rates":
        return ",".join(r.component_class for r in value) or "default"
    if knob == "weibull_shape":
        if value is None:
            return "fits"
        if isinstance(value, Mapping):
            value = sorted(value.items())
        if isinstance(value, (tuple, list)):
            return ",".join(f"{k}={float(v):g}" for k, v in value)
        return f"{float(value):g}"
    if knob == "node_groups":
        return ",".join(f"{float(s):g}:{float(m):g}" for s, m in value) or "none"
    if knob == "slow_laws":
        return ",".join(_slow_label(law) for law in value) or "none"
    if knob == "fleet_age" and isinstance(value, (tuple, list)):
        pairs = age_mix(value)
        return ",".join(f"{age:g}h:{share:g}" for age, share in pairs)
    return str(value)


def _slow_label(law: SlowLaws) -> str:
    """Return a slow law as its unit and episode rate (``gpu:1e-05/h``)."""
    return f"{law.unit}:{law.rate_per_unit_h:g}/h"


def drain_sweep(base: Scenario, curve: pl.DataFrame) -> pl.DataFrame:
    """Project proactive drains at each operating point of a failure predictor.

    Parameters
    ----------
    base
        Scenario supplying every knob but ``drain_recall`` and ``drain_precision`` (its
        ``drain_migration_s`` included). A ``None`` checkpoint interval is re-optimised at each
        threshold for the faults left unwarned.
    curve
        One row per threshold: ``threshold``, ``precision`` (share of alarms followed by a
        failure), ``recall`` (share of failures warned of early enough to drain) and, optionally,
        ``lead_time_h`` (the warning's lead time, hours). Where recall is 0 there are no alarms
        and the precision may be null.

    Returns
    -------
    polars.DataFrame
        One row per row of ``curve``, in its order: ``threshold``, ``precision``, ``recall``
        (and ``lead_time_h``), then every numeric output of :func:`~models.goodput.project` at that
        operating point (as in :func:`sweep`: ``goodput``, ``expected_drains``,
        ``expected_false_alarms``, ``lost_gpu_h_drain``...), then ``goodput_no_drain`` (the
        base scenario without drains), ``goodput_gain`` (goodput minus that, in goodput points)
        and ``useful_gpu_h_gain``. With ``lead_time_h``, also ``lead_time_covers_checkpoint``:
        whether the lead time is at least one checkpoint write (the model assumes it is).

    Raises
    ------
    ValueError
        A column is missing, a recall is not in [0, 1], or a precision is not in (0, 1] where
        the recall is positive.

    See Also
    --------
    sweep : full factorial grids, where ``drain_recall`` and ``drain_precision`` are knobs too.

    Examples
    --------
    >>> curve = pl.DataFrame(
    ...     {"threshold": [0.2, 0.5, 0.8], "precision": [0.3, 0.6, 0.9], "recall": [0.9, 0.6, 0.2]}
    ... )
    >>> drain_sweep(Scenario(), curve)["goodput_gain"].round(3).to_list()
    [0.046, 0.057, 0.021]
    """
    known = ("threshold", "precision", "recall", "lead_time_h")
    missing = [c for c in known[:3] if c not in curve.columns]
    if missing:
        msg = (
            f"curve lacks columns {missing}; pass one row per threshold with "
            "threshold, precision, recall (and optionally lead_time_h)."
        )
        raise ValueError(msg)
    thresholds = curve["threshold"].to_list()
    recall = curve["recall"].cast(pl.Float64).to_numpy()
    precision = curve["precision"].cast(pl.Float64).to_numpy()
    bad = np.flatnonzero(~((recall >= 0) & (recall <= 1)))
    if bad.size:
        msg = (
            f"recall must be between 0 and 1, got {recall[bad[0]]} at threshold "
            f"{thresholds[bad[0]]} ({bad.size} rows); drop or fix those rows."
        )
        raise ValueError(msg)
    precision = np.where(recall > 0, precision, 1.0)  # no true alarms: no alarms at all
    bad = np.flatnonzero(~((precision > 0) & (precision <= 1)))
    if bad.size:
        msg = (
            f"precision must be above 0 and at most 1 where recall is positive, got "
            f"{precision[bad[0]]} at threshold {thresholds[bad[0]]} ({bad.size} rows); at 0 "
            "the false-alarm rate is undefined: drop those rows."
        )
        raise ValueError(msg)
    result = project_arrays_via_seam(base, {"drain_recall": recall, "drain_precision": precision})
    baseline = project_arrays_via_seam(base, {"drain_recall": np.asarray(0.0)})
    n_rows = curve.height
    data: dict[str, Any] = {c: curve[c] for c in known if c in curve.columns}
    for key, value in result.items():
        data[key] = np.broadcast_to(value, (n_rows,)).copy()
    data["goodput_no_drain"] = np.full(n_rows, float(baseline["goodput"]))
    data["goodput_gain"] = data["goodput"] - float(baseline["goodput"])
    data["useful_gpu_h_gain"] = data["useful_gpu_h"] - float(baseline["useful_gpu_h"])
    if "lead_time_h" in curve.columns:
        lead_s = curve["lead_time_h"].cast(pl.Float64) * SECONDS_PER_HOUR
        data["lead_time_covers_checkpoint"] = lead_s >= base.checkpoint_s
    return pl.DataFrame(data).with_columns(pl.col("ettr").fill_nan(None))  # null: not applicable
